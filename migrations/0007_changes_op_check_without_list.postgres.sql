-- PostgreSQL evaluates `op IN (...)` without the temporary table SQLite
-- builds for it: nothing to change here.
SELECT 1;

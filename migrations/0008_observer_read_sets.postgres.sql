-- PostgreSQL keeps its reads one row a key: it stores a whole group of
-- reads in one statement already.
SELECT 1;

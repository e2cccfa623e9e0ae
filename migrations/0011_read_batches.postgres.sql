-- PostgreSQL keeps its reads one row a key.
SELECT 1;

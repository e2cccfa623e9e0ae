-- The statements of the ordered transaction that commits one
-- POST /truck/orders on PostgreSQL, in the server's order, with values of
-- the same shape (bench/cluster.py runs it with pgbench -M prepared on a
-- database the server migrated). The server sends BEGIN and the locking
-- SELECT in one round trip; pgbench sends them as two: five commands here
-- for the server's four round trips.
\set quantity random(1, 5)
BEGIN;
SELECT seq, version FROM observable_clock WHERE id = 1 FOR UPDATE \gset
\set s1 :seq + 1
\set s2 :seq + 2
\set v :version + 1
INSERT INTO orders (id, position, donut_id, quantity) VALUES ('pgbench-' || :s1::text, :s1, '0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001', :quantity);
WITH appended AS (INSERT INTO changes (seq, txn, path, op, old, new, keys, implied_reads) SELECT * FROM unnest(ARRAY[:s1, :s2]::bigint[], ARRAY[:s1, :s1]::bigint[], ARRAY['/truck/orders', '/truck/orderCount']::text[], ARRAY['insert', 'set']::text[], ARRAY[NULL, :seq::text]::text[], ARRAY['{"id":"pgbench-' || :s1::text || '","donutId":"0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001","quantity":1}', :s1::text]::text[], ARRAY['/truck/orders', '/truck/orderCount']::text[], ARRAY['', '']::text[])), journaled AS (INSERT INTO observable_journal (version, ordinal, kind, tbl, id, parent, first, last, body) SELECT :v, e.ordinal - 1, e.kind, e.tbl, e.id, e.parent, e.first, e.last, e.body FROM unnest(ARRAY['i', 'c']::text[], ARRAY[1, -1]::int[], ARRAY['pgbench-' || :s1::text, '']::text[], ARRAY[NULL, NULL]::text[], ARRAY[:s1, :s1]::bigint[], ARRAY[0, :s2]::bigint[], ARRAY['["0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001",1]', NULL]::text[]) WITH ORDINALITY AS e (kind, tbl, id, parent, first, last, body, ordinal)), moved AS (UPDATE observable_clock SET seq = :s2, version = :v WHERE id = 1) SELECT pg_notify('observable_pgbench', :v::text);
COMMIT;

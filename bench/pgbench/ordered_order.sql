-- The statements of the ordered transaction that commits one
-- POST /truck/orders on PostgreSQL, in the server's order, with values of
-- the same shape (bench/cluster.py runs it with pgbench -M prepared on a
-- database the server migrated). Each line is one round trip.
\set quantity random(1, 5)
BEGIN;
SELECT seq, version FROM observable_clock WHERE id = 1 FOR UPDATE \gset
\set s1 :seq + 1
\set s2 :seq + 2
\set v :version + 1
INSERT INTO orders (id, position, donut_id, quantity) VALUES ('pgbench-' || :s1::text, :s1, '0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001', :quantity);
INSERT INTO changes (seq, txn, path, op, old, new, keys, implied_reads) VALUES (:s1, :s1, '/truck/orders', 'insert', NULL, '{"id":"pgbench-' || :s1::text || '","donutId":"0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001","quantity":1}', '/truck/orders', '');
INSERT INTO changes (seq, txn, path, op, old, new, keys, implied_reads) VALUES (:s2, :s1, '/truck/orderCount', 'set', :seq::text, :s1::text, '/truck/orderCount', '');
INSERT INTO observable_journal (version, ordinal, kind, tbl, id, parent, first, last, body) VALUES (:v, 0, 'insert', 3, 'pgbench-' || :s1::text, NULL, :s1, 0, '["0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001",1]');
INSERT INTO observable_journal (version, ordinal, kind, tbl, id, parent, first, last, body) VALUES (:v, 1, 'changes', 0, '', NULL, :s1, :s2, NULL);
UPDATE observable_clock SET seq = :s2, version = :v WHERE id = 1;
SELECT pg_notify('observable_pgbench', :v::text);
COMMIT;

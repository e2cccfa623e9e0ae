-- The check on `op` was `op IN ('set', 'insert', 'remove')`. SQLite
-- evaluates an IN list of three or more constants through a temporary
-- B-tree that it builds again for every row inserted: a third of the cost
-- of a change. The same rule as comparisons costs nothing. SQLite cannot
-- change a check in place, so the log is copied into a new table.
CREATE TABLE changes_new (
    seq INTEGER PRIMARY KEY,          -- global, strictly increasing
    txn INTEGER NOT NULL,             -- seq of the first change of its transaction
    path TEXT NOT NULL,
    op TEXT NOT NULL CHECK (op = 'set' OR op = 'insert' OR op = 'remove'),
    old TEXT,                         -- JSON text
    new TEXT,                         -- JSON text
    keys TEXT NOT NULL,               -- property keys whose readers receive it, one per line
    implied_reads TEXT NOT NULL DEFAULT ''  -- keys read by receiving it, one per line
);
INSERT INTO changes_new (seq, txn, path, op, old, new, keys, implied_reads)
    SELECT seq, txn, path, op, old, new, keys, implied_reads FROM changes;
DROP TABLE changes;
ALTER TABLE changes_new RENAME TO changes;

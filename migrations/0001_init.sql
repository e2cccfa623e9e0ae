-- The change log, observers and their reads. The models' tables are not
-- made here: the server makes them from the models' declarations
-- (Sources/ModelStore/Declaration/Schema.swift), with their first rows.

CREATE TABLE changes (
    seq INTEGER PRIMARY KEY,          -- global, strictly increasing
    txn INTEGER NOT NULL,             -- seq of the first change of its transaction
    path TEXT NOT NULL,
    op TEXT NOT NULL CHECK (op IN ('set', 'insert', 'remove')),
    old TEXT,                         -- JSON text
    new TEXT,                         -- JSON text
    keys TEXT NOT NULL,               -- property keys whose readers receive it, one per line
    implied_reads TEXT NOT NULL DEFAULT ''  -- keys read by receiving it, one per line
);

CREATE TABLE observers (
    id TEXT PRIMARY KEY,
    cursor INTEGER NOT NULL,
    ttl_seconds INTEGER NOT NULL,
    last_used REAL NOT NULL           -- seconds since 1970
);

CREATE TABLE observer_reads (
    observer_id TEXT NOT NULL REFERENCES observers (id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    read_seq INTEGER NOT NULL,        -- changes after this seq are delivered
    PRIMARY KEY (observer_id, path)
) WITHOUT ROWID;

CREATE INDEX observer_reads_by_path ON observer_reads (path, read_seq);

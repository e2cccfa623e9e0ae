-- PostgreSQL's 0001_init.sql: the same tables, in its types (BIGINT seqs,
-- DOUBLE PRECISION times, no WITHOUT ROWID).

CREATE TABLE changes (
    seq BIGINT PRIMARY KEY,           -- global, strictly increasing
    txn BIGINT NOT NULL,              -- seq of the first change of its transaction
    path TEXT NOT NULL,
    op TEXT NOT NULL CHECK (op IN ('set', 'insert', 'remove')),
    old TEXT,                         -- JSON text
    new TEXT,                         -- JSON text
    keys TEXT NOT NULL,               -- property keys whose readers receive it, one per line
    implied_reads TEXT NOT NULL DEFAULT ''  -- keys read by receiving it, one per line
);

CREATE TABLE observers (
    id TEXT PRIMARY KEY,
    cursor BIGINT NOT NULL,
    ttl_seconds INTEGER NOT NULL,
    last_used DOUBLE PRECISION NOT NULL           -- seconds since 1970
);

CREATE TABLE observer_reads (
    observer_id TEXT NOT NULL REFERENCES observers (id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    read_seq BIGINT NOT NULL,         -- changes after this seq are delivered
    PRIMARY KEY (observer_id, path)
);

CREATE INDEX observer_reads_by_path ON observer_reads (path, read_seq);

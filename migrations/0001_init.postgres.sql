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

CREATE TABLE truck (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    name TEXT NOT NULL
);

CREATE TABLE donuts (
    id TEXT PRIMARY KEY,
    position BIGINT NOT NULL UNIQUE,  -- creation order
    name TEXT NOT NULL,
    dough TEXT NOT NULL,
    glaze TEXT,
    topping TEXT
);

CREATE TABLE orders (
    id TEXT PRIMARY KEY,
    position BIGINT NOT NULL UNIQUE,  -- creation order
    donut_id TEXT NOT NULL,
    quantity INTEGER NOT NULL CHECK (quantity BETWEEN 1 AND 1000)
);

CREATE TABLE account (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    user_name TEXT
);

INSERT INTO truck (id, name) VALUES (1, 'Food Truck');
INSERT INTO account (id, user_name) VALUES (1, NULL);

INSERT INTO donuts (id, position, name, dough, glaze, topping) VALUES
    ('0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001', 1, 'Glazed', 'plain', 'sugar', NULL),
    ('0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0002', 2, 'Chocolate Frosted', 'chocolate', 'chocolate', 'sprinkles'),
    ('0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0003', 3, 'Strawberry Sprinkle', 'plain', 'strawberry', 'sprinkles'),
    ('0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0004', 4, 'Maple Bar', 'plain', 'maple', NULL);

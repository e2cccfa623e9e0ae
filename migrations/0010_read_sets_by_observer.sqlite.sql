-- An observer's reads are kept in the order of its id, which is
-- time-ordered: a new observer's reads go at the end of one B-tree, where
-- they went to a table and to its index by observer. Without foreign keys:
-- checking them cost as much as writing the row. The server deletes an
-- observer's reads with the observer, and at start those of observers no
-- longer there (a read stored after its observer was deleted).
CREATE TABLE observer_read_sets_new (
    observer_id TEXT NOT NULL,
    read_seq INTEGER NOT NULL,        -- changes after this seq are delivered
    shape_id INTEGER NOT NULL,        -- the keys read (read_shapes)
    PRIMARY KEY (observer_id, read_seq, shape_id)
) WITHOUT ROWID;
INSERT OR IGNORE INTO observer_read_sets_new (observer_id, read_seq, shape_id)
    SELECT observer_id, read_seq, shape_id FROM observer_read_sets;
DROP TABLE observer_read_sets;
ALTER TABLE observer_read_sets_new RENAME TO observer_read_sets;

-- Many observers read the same keys (a first read of /truck is sixteen of
-- them): each set of keys is stored once, and a read names it. A read was
-- a row of some 330 bytes, written to the log and then to the file; it is
-- now its observer, its seq and a number.
CREATE TABLE read_shapes (
    id INTEGER PRIMARY KEY,
    paths TEXT NOT NULL UNIQUE        -- the keys, one per line
);
INSERT INTO read_shapes (paths) SELECT DISTINCT paths FROM observer_read_sets ORDER BY rowid;
CREATE TABLE observer_read_sets_by_shape (
    observer_id TEXT NOT NULL REFERENCES observers (id) ON DELETE CASCADE,
    read_seq INTEGER NOT NULL,        -- changes after this seq are delivered
    shape_id INTEGER NOT NULL REFERENCES read_shapes (id)
);
INSERT INTO observer_read_sets_by_shape (observer_id, read_seq, shape_id)
    SELECT r.observer_id, r.read_seq, s.id FROM observer_read_sets r JOIN read_shapes s ON s.paths = r.paths ORDER BY r.rowid;
DROP TABLE observer_read_sets;
ALTER TABLE observer_read_sets_by_shape RENAME TO observer_read_sets;
CREATE INDEX observer_read_sets_by_observer ON observer_read_sets (observer_id);

-- An observer's reads are stored one row a read: the keys it read at one
-- `seq`, one per line, instead of one row a key. A first read of /truck
-- wrote sixteen rows; it now writes one (and its entry in the index by
-- observer), which is what lets new observers read at the speed of reads.
CREATE TABLE observer_read_sets (
    observer_id TEXT NOT NULL REFERENCES observers (id) ON DELETE CASCADE,
    read_seq INTEGER NOT NULL,        -- changes after this seq are delivered
    paths TEXT NOT NULL               -- the keys read, one per line
);
CREATE INDEX observer_read_sets_by_observer ON observer_read_sets (observer_id);
INSERT INTO observer_read_sets (observer_id, read_seq, paths)
    SELECT observer_id, read_seq, group_concat(path, char(10)) FROM observer_reads GROUP BY observer_id, read_seq;
DROP TABLE observer_reads;

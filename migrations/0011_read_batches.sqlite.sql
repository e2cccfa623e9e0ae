-- Reads folded from the read journal are kept a batch to a row: one blob
-- of entries (observer, seq, set of keys) for each fold of a few thousand
-- reads, where a row for each read cost more than everything else a first
-- read costs. A batch is never updated: an entry counts while its observer
-- is there and the batch is not older than the observer's last clear
-- (`reads_from`, the id the next batch would get at that clear). The
-- server rewrites the batches once many of their entries no longer count.
CREATE TABLE observer_read_batches (
    id INTEGER PRIMARY KEY AUTOINCREMENT,   -- never reused: `reads_from` compares with it
    reads BLOB NOT NULL
);
ALTER TABLE observers ADD COLUMN reads_from INTEGER NOT NULL DEFAULT 0;

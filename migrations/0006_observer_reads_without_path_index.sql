-- Reads implied by an insert are now written for the receivers the
-- observation registry names, not found by path in this table: the index
-- only cost every implied read a second B-tree insert.
DROP INDEX observer_reads_by_path;

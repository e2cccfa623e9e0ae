-- SQLite saves cursors with the housekeeping, in place: nothing to change.
SELECT 1;

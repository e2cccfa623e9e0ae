-- The dot grid: ragged rows of dots, each with two animation flags.
-- Rows and columns are 0-based and dense; rows only grow.

CREATE TABLE dots (
    id TEXT PRIMARY KEY,
    grid_row INTEGER NOT NULL CHECK (grid_row >= 0),
    grid_col INTEGER NOT NULL CHECK (grid_col >= 0),
    is_tap_animated INTEGER NOT NULL DEFAULT 0 CHECK (is_tap_animated IN (0, 1)),
    is_random_animated INTEGER NOT NULL DEFAULT 0 CHECK (is_random_animated IN (0, 1)),
    UNIQUE (grid_row, grid_col)
);

-- The default grid: rows of 3, 2 and 4 dots.
INSERT INTO dots (id, grid_row, grid_col) VALUES
    ('6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0001', 0, 0),
    ('6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0002', 0, 1),
    ('6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0003', 0, 2),
    ('6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0101', 1, 0),
    ('6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0102', 1, 1),
    ('6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0201', 2, 0),
    ('6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0202', 2, 1),
    ('6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0203', 2, 2),
    ('6a1f3c2e-0b7d-4e59-8c21-3f4e5d6c0204', 2, 3);

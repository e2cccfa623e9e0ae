-- Jobs with progress: advanced by the server (step, interval_ms) or by
-- clients reporting progress (both NULL).

CREATE TABLE jobs (
    id TEXT PRIMARY KEY,
    position INTEGER NOT NULL UNIQUE,          -- creation order
    current INTEGER NOT NULL CHECK (current >= 0),
    total INTEGER NOT NULL CHECK (total BETWEEN 1 AND 1000000000),
    step INTEGER CHECK (step >= 1),
    interval_ms INTEGER CHECK (interval_ms BETWEEN 10 AND 3600000),
    CHECK (current <= total),
    CHECK ((step IS NULL) = (interval_ms IS NULL))
);

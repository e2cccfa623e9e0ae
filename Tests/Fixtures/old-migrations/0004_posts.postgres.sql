-- PostgreSQL's 0004_posts.sql: a height is a DOUBLE PRECISION (REAL is a
-- 4-byte float there).

CREATE TABLE posts (
    id TEXT PRIMARY KEY,
    position INTEGER NOT NULL UNIQUE,  -- creation order
    image_url TEXT NOT NULL,
    height DOUBLE PRECISION NOT NULL CHECK (height > 0)
);

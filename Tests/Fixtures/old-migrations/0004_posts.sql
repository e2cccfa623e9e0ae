-- Staggered posts: images with a height, listed in creation order.

CREATE TABLE posts (
    id TEXT PRIMARY KEY,
    position INTEGER NOT NULL UNIQUE,  -- creation order
    image_url TEXT NOT NULL,
    height REAL NOT NULL CHECK (height > 0)
);

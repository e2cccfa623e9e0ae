-- Memory games and their cards.

CREATE TABLE games (
    id TEXT PRIMARY KEY,
    position INTEGER NOT NULL UNIQUE           -- creation order
);

CREATE TABLE cards (
    id TEXT PRIMARY KEY,
    game_id TEXT NOT NULL REFERENCES games (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,                 -- place on the table, 0-based
    content TEXT NOT NULL,
    is_face_up INTEGER NOT NULL DEFAULT 0 CHECK (is_face_up IN (0, 1)),
    is_matched INTEGER NOT NULL DEFAULT 0 CHECK (is_matched IN (0, 1)),
    UNIQUE (game_id, position)
);

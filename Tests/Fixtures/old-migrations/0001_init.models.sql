-- What 0001_init.sql made beyond what it makes now: the FoodTruck and
-- Account models' tables and their first rows.

CREATE TABLE truck (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    name TEXT NOT NULL
);

CREATE TABLE donuts (
    id TEXT PRIMARY KEY,
    position INTEGER NOT NULL UNIQUE,  -- creation order
    name TEXT NOT NULL,
    dough TEXT NOT NULL,
    glaze TEXT,
    topping TEXT
);

CREATE TABLE orders (
    id TEXT PRIMARY KEY,
    position INTEGER NOT NULL UNIQUE,  -- creation order
    donut_id TEXT NOT NULL,
    quantity INTEGER NOT NULL CHECK (quantity BETWEEN 1 AND 1000)
);

CREATE TABLE account (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    user_name TEXT
);

INSERT INTO truck (id, name) VALUES (1, 'Food Truck');
INSERT INTO account (id, user_name) VALUES (1, NULL);

INSERT INTO donuts (id, position, name, dough, glaze, topping) VALUES
    ('0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001', 1, 'Glazed', 'plain', 'sugar', NULL),
    ('0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0002', 2, 'Chocolate Frosted', 'chocolate', 'chocolate', 'sprinkles'),
    ('0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0003', 3, 'Strawberry Sprinkle', 'plain', 'strawberry', 'sprinkles'),
    ('0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0004', 4, 'Maple Bar', 'plain', 'maple', NULL);

-- The database's history id (see pgstore's history.go), made once, here:
-- every cursor the change feed gives carries it, and a cursor of another
-- database is refused. A copy of the database (pg_dump and pg_restore, a
-- point-in-time recovery) keeps it; what tells such a copy's cursors from
-- the lost ones is that a cursor is accepted only at a change the log
-- holds. random() is not a secret's source, and need not be: the id only
-- tells databases apart.
CREATE TABLE plant_history (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    id  bigint  NOT NULL CHECK (id > 0)
);

INSERT INTO plant_history (id) VALUES ((random() * 4611686018427387903)::bigint + 1);

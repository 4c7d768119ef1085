-- The plants table. The id is the client's and the primary key; a tag is
-- optional (NULL), and an empty tag is a tag. (tag, id) serves the tag
-- filter of GET /plants in id order: the list seeks to its cursor in the
-- index instead of scanning and sorting.
CREATE TABLE plants (
    id   bigint PRIMARY KEY,
    name text   NOT NULL,
    tag  text
);

CREATE INDEX plants_tag_id ON plants (tag, id);

-- pgbench script: the create statement of create.sql holding :n plants
-- (pgbench -D n=16 ...), as the store's create lanes send it for creates
-- that queued while a statement ran. Its rows/s (tps times n) beside
-- create.sql's says what sharing a statement and a commit saves the
-- database per create, for a given number of plants per statement.
\set id random(1, 9000000000)
WITH created AS (INSERT INTO plants (id, name, tag)
SELECT * FROM unnest(ARRAY(SELECT :id::bigint * 1000 + g FROM generate_series(1, :n::int) g), array_fill('plant'::text, ARRAY[:n::int]), array_fill('fern'::text, ARRAY[:n::int]))
ON CONFLICT (id) DO NOTHING
RETURNING id, name, tag), head AS (INSERT INTO plant_heads (plant_id, tx)
SELECT id, pg_current_xact_id() FROM created
ON CONFLICT (plant_id) DO UPDATE SET tx = greatest(plant_heads.tx, excluded.tx)
RETURNING plant_id, tx), logged AS (INSERT INTO plant_changes (tx, version, kind, plant_id, name, tag)
SELECT head.tx, nextval('plant_versions'), 1, id, name, tag FROM created JOIN head ON head.plant_id = id
RETURNING plant_id, kind, version, at)
SELECT plant_id, version, at FROM logged;

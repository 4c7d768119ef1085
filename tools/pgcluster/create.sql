-- pgbench script: the statement one POST /plants sends the postgres store
-- when it runs alone (no webhook endpoint, as under compare.sh): the plant
-- row, the plant's head and its change-log row, in one statement and one
-- commit, exactly as the store writes it (seen with log_statement = all).
-- Beside insert.sql it is the database doing the same work as a create.
\set id random(1, 9000000000000)
WITH created AS (INSERT INTO plants (id, name, tag)
SELECT * FROM unnest(ARRAY[:id]::bigint[], '{plant}'::text[], '{fern}'::text[])
ON CONFLICT (id) DO NOTHING
RETURNING id, name, tag), head AS (INSERT INTO plant_heads (plant_id, tx)
SELECT id, pg_current_xact_id() FROM created
ON CONFLICT (plant_id) DO UPDATE SET tx = greatest(plant_heads.tx, excluded.tx)
RETURNING plant_id, tx), logged AS (INSERT INTO plant_changes (tx, version, kind, plant_id, name, tag)
SELECT head.tx, nextval('plant_versions'), 1, id, name, tag FROM created JOIN head ON head.plant_id = id
RETURNING plant_id, kind, version, at)
SELECT plant_id, version, at FROM logged;

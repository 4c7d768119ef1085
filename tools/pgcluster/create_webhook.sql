-- pgbench script: create.sql's statement as the store sends it with one
-- webhook endpoint configured: the plant, its head, its change-log row and
-- the endpoint's delivery row (written already claimed by its writer, for
-- a 30 s lease), in one statement and one commit (seen with
-- log_statement = all).
\set id random(1, 9000000000000)
WITH created AS (INSERT INTO plants (id, name, tag)
SELECT * FROM unnest(ARRAY[:id]::bigint[], '{plant}'::text[], '{fern}'::text[])
ON CONFLICT (id) DO NOTHING
RETURNING id, name, tag), head AS (INSERT INTO plant_heads (plant_id, tx)
SELECT id, pg_current_xact_id() FROM created
ON CONFLICT (plant_id) DO UPDATE SET tx = greatest(plant_heads.tx, excluded.tx)
RETURNING plant_id, tx), logged AS (INSERT INTO plant_changes (tx, version, kind, plant_id, name, tag)
SELECT head.tx, nextval('plant_versions'), 1, id, name, tag FROM created JOIN head ON head.plant_id = id
RETURNING plant_id, kind, version, at), hook AS (INSERT INTO webhook_deliveries (id, endpoint, body, traceparent, attempts, next_attempt_at, created_at, kind, version)
SELECT e.id, e.endpoint, e.body, e.traceparent, e.leased::int,
       CASE WHEN e.leased THEN now() + make_interval(secs => 30) ELSE now() END, logged.at, logged.kind, logged.version
FROM unnest(ARRAY[:id]::bigint[], ARRAY['msg_' || :id]::text[], '{local}'::text[], ARRAY[convert_to('{"id":' || :id || ',"name":"plant","tag":"fern"}', 'UTF8')]::bytea[], '{""}'::text[], '{t}'::bool[])
     AS e(plant, id, endpoint, body, traceparent, leased)
JOIN logged ON logged.plant_id = e.plant)
SELECT plant_id, version, at FROM logged;

-- pgbench script: the single-row insert that POST /plants amounts to, with a
-- random id per transaction, as the floor for the postgres store.
\set id random(1, 9000000000000)
INSERT INTO plants (id, name, tag) VALUES (:id, 'plant', 'fern') ON CONFLICT DO NOTHING;

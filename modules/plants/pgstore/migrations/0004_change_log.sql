-- Every change of a plant, logged in the change's own statement (a
-- data-modifying CTE), whether or not webhooks are configured: the change
-- feed follows this table. version comes from one sequence shared by every
-- replica, drawn after the plant's row was written, so that of two changes
-- of one plant the later has the greater version. tx is the writing
-- transaction's id: the feed shows a change only once every transaction
-- older than it has ended (tx < the snapshot's xmin), so that no change
-- appears behind a cursor already given out. The sequence belongs to the
-- version column: dropping the log drops it, and a TRUNCATE ... RESTART
-- IDENTITY of the log restarts it.
CREATE SEQUENCE plant_versions;

CREATE TABLE plant_changes (
    version  bigint      PRIMARY KEY,
    tx       xid8        NOT NULL DEFAULT pg_current_xact_id(),
    kind     smallint    NOT NULL,
    plant_id bigint      NOT NULL,
    name     text,
    tag      text,
    at       timestamptz NOT NULL DEFAULT now()
);

ALTER SEQUENCE plant_versions OWNED BY plant_changes.version;

-- The feed's order, and the pruning's.
CREATE INDEX plant_changes_tx_version ON plant_changes (tx, version);
CREATE INDEX plant_changes_at ON plant_changes (at);

-- The newest pruned change's cursor: a follower at or before it has missed
-- changes. At most one row, none until the first prune.
CREATE TABLE plant_changes_pruned (
    one     boolean PRIMARY KEY DEFAULT true CHECK (one),
    tx      xid8    NOT NULL,
    version bigint  NOT NULL
);

-- A delivered event is kept (for a replay) until it is pruned, marked by
-- delivered_at. kind and version are the change's; the rows written before
-- this migration announced creates, whose versions were never recorded.
ALTER TABLE webhook_deliveries
    ADD COLUMN kind         smallint NOT NULL DEFAULT 1,
    ADD COLUMN version      bigint   NOT NULL DEFAULT 0,
    ADD COLUMN delivered_at timestamptz;

-- The claim reads only what is still to deliver.
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint, next_attempt_at)
    WHERE dead_at IS NULL AND delivered_at IS NULL;

-- A replay reads an endpoint's delivered events from a time on; the
-- pruning, everyone's before a time.
CREATE INDEX webhook_deliveries_delivered ON webhook_deliveries (endpoint, created_at, version)
    WHERE delivered_at IS NOT NULL;
CREATE INDEX webhook_deliveries_prune ON webhook_deliveries (created_at)
    WHERE delivered_at IS NOT NULL;

-- Dead letters, listed oldest first and counted: a few rows of a table that
-- now keeps every delivered event for the retention, found without reading
-- the others.
CREATE INDEX webhook_deliveries_dead ON webhook_deliveries (dead_at, id)
    WHERE dead_at IS NOT NULL;

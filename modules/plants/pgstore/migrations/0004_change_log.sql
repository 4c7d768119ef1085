-- Every change of a plant, logged in the change's own statement (a
-- data-modifying CTE), whether or not webhooks are configured: the change
-- feed follows this table, in (tx, version) order, its one index. version
-- comes from one sequence shared by every replica, drawn after the plant's
-- row was written, so that of two changes of one plant the later has the
-- greater version. tx orders the feed: the feed shows a change only once
-- every transaction with an id up to its tx has ended (tx below the
-- snapshot's xmin), so that no change appears behind a cursor already
-- given out. It is the writing transaction's id, or the plant's previous
-- change's tx if greater (plant_heads): a transaction that took its id
-- before waiting for another change of the same plant commits after it,
-- and its change must come after it too. The sequence belongs to the
-- version column: dropping the log drops it, and a TRUNCATE ... RESTART
-- IDENTITY of the log restarts it.
CREATE SEQUENCE plant_versions;

CREATE TABLE plant_changes (
    version  bigint      NOT NULL,
    tx       xid8        NOT NULL,
    kind     smallint    NOT NULL,
    plant_id bigint      NOT NULL,
    name     text,
    tag      text,
    at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tx, version)
);

ALTER SEQUENCE plant_versions OWNED BY plant_changes.version;

-- Each plant's latest change's tx, written by every change of the plant in
-- its statement (an upsert, which waits for a concurrent change of the
-- plant and then reads what it committed, where a query would read its
-- statement's older snapshot), kept after a delete for a create of the same
-- id. A row whose tx is below every running transaction's id tells no
-- future change anything: the pruner removes it.
CREATE TABLE plant_heads (
    plant_id bigint PRIMARY KEY,
    tx       xid8   NOT NULL
);

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

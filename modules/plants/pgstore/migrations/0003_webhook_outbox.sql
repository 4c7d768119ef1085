-- The webhook outbox (modules/webhooks): one row per event and endpoint,
-- inserted in the transaction that inserts the plant, so that an event
-- exists exactly when its plant was stored. id is the event's webhook-id;
-- body the exact bytes sent and signed. next_attempt_at is also the lease:
-- a replica that claims a row pushes it past the attempt's end, so no
-- other replica takes it meanwhile, and a killed replica's row is due
-- again once that time passes. attempts, raised by every claim, fences a
-- replica whose lease ran out: its late update names an attempt that is
-- no longer the row's. A dead letter keeps its row, with dead_at set.
CREATE TABLE webhook_deliveries (
    id              text        PRIMARY KEY,
    endpoint        text        NOT NULL,
    body            bytea       NOT NULL,
    traceparent     text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text        NOT NULL DEFAULT '',
    dead_at         timestamptz
);

-- The claim: an endpoint's due rows, soonest first.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint, next_attempt_at)
    WHERE dead_at IS NULL;

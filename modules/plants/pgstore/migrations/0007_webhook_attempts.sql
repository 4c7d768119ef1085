-- Every webhook attempt on record (modules/outbox's Attempts): one row per
-- attempt, inserted by the statement that records the delivery's state
-- after it (delivered, retried, dead), so the record never tells of an
-- attempt the state does not reflect. seq orders the record and pages its
-- listings; number is the delivery's attempt number, counted from 1 again
-- after a redelivery or a replay, so it is not a key. status is 0 when the
-- attempt got no answer, and error then says why. answer holds the
-- answer's first bytes as text (at most 1 KiB, valid UTF-8). Rows older than
-- the change log's retention are pruned with the delivered events.
CREATE TABLE webhook_attempts (
    seq        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message    text        NOT NULL,
    endpoint   text        NOT NULL,
    number     integer     NOT NULL,
    at         timestamptz NOT NULL,
    status     integer     NOT NULL,
    error      text        NOT NULL DEFAULT '',
    latency_us bigint      NOT NULL,
    answer     text        NOT NULL DEFAULT ''
);

-- An endpoint's attempts, newest first; a message's attempts. The prune
-- finds the old rows through a BRIN index on at: rows arrive in about the
-- order of their times, so block ranges summarize them well, and a BRIN
-- costs an insert almost nothing where a B-tree would be a third index to
-- write with every attempt on the delivery path.
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint, seq);
CREATE INDEX webhook_attempts_message ON webhook_attempts (message, seq);
CREATE INDEX webhook_attempts_at ON webhook_attempts USING brin (at);

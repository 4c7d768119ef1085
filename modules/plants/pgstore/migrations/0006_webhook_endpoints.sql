-- The webhook endpoints made through the API (modules/webhooks): each
-- as its JSON document (endpointstore.Marshal), its revision beside it
-- for the compare-and-set of a write. The document holds the endpoint's
-- signing secrets: signing needs them, so they are kept as given, and the
-- database's access is what guards them (as it guards the plants).
CREATE TABLE webhook_endpoints (
    id       text   PRIMARY KEY,
    revision bigint NOT NULL CHECK (revision > 0),
    doc      jsonb  NOT NULL
);

-- One row, raised in the transaction of every write of an endpoint:
-- every replica polls it, and reads the endpoints again when it moved.
CREATE TABLE webhook_endpoints_version (
    one     boolean PRIMARY KEY DEFAULT true CHECK (one),
    version bigint  NOT NULL
);

-- Requests sent with an `Idempotency-Key` (`KeyedRequests`): one row per key (a digest of
-- the user, the route and the key), with the fingerprint of the request that claimed it, the
-- claim's token and time, and the answer once there is one (`status`, `body`; NULL while the
-- request runs). The primary key makes a claim atomic; old rows are pruned by `claimed_at`.
CREATE TABLE keyed_requests (
    record_key  TEXT    NOT NULL PRIMARY KEY,
    fingerprint TEXT    NOT NULL,
    token       TEXT    NOT NULL,
    claimed_at  INTEGER NOT NULL,
    status      INTEGER,
    body        TEXT
) STRICT;

CREATE INDEX keyed_requests_by_claim ON keyed_requests (claimed_at);

-- Requests sent with an `Idempotency-Key` (`KeyedRequests`): one row per key (a digest of
-- the user, the route and the key), with the fingerprint of the request that claimed it, the
-- claim's token and time, and the answer once there is one (`status`, `body`; NULL while the
-- request runs). The primary key makes a claim atomic across nodes; old rows are pruned by
-- `claimed_at`.
CREATE TABLE keyed_requests (
    record_key  CHAR(64)     NOT NULL,
    fingerprint CHAR(64)     NOT NULL,
    token       VARCHAR(160) NOT NULL,
    claimed_at  BIGINT       NOT NULL,
    status      SMALLINT     NULL,
    body        MEDIUMTEXT   NULL,
    PRIMARY KEY (record_key),
    KEY keyed_requests_by_claim (claimed_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

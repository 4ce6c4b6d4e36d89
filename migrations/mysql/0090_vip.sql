-- VIP levels kept by the service (`VipGrants`): per user at most one grant, a level and the
-- instant (ms since the epoch) it stops holding; an expired grant stays until it is replaced
-- or revoked and gives nothing (the service compares the expiry with the time it asks about).
CREATE TABLE vip_grants (
    user_id    VARCHAR(64)      NOT NULL,
    level      TINYINT UNSIGNED NOT NULL,
    expires_at BIGINT           NOT NULL,
    PRIMARY KEY (user_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The VIP level table: one row, its version and the levels' privileges as a JSON array
-- (level 1 first; at most 32 levels of four short fields). A change is one
-- `UPDATE ... WHERE version = <expected>`: of two changes of one version, one finds the row.
CREATE TABLE vip_levels (
    id      TINYINT UNSIGNED NOT NULL,
    version BIGINT           NOT NULL,
    body    TEXT             NOT NULL,
    PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

INSERT INTO vip_levels (id, version, body) VALUES (1, 0, '[]');

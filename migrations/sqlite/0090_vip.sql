-- VIP levels kept by the service (`VipGrants`): per user at most one grant, a level and the
-- instant (ms since the epoch) it stops holding; an expired grant stays until it is replaced
-- or revoked and gives nothing (the service compares the expiry with the time it asks about).
CREATE TABLE vip_grants (
    user_id    TEXT    NOT NULL PRIMARY KEY,
    level      INTEGER NOT NULL CHECK (level BETWEEN 1 AND 32),
    expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- The VIP level table: one row, its version and the levels' privileges as a JSON array
-- (level 1 first). A change is one `UPDATE ... WHERE version = <expected>`: of two changes of
-- one version, one finds the row.
CREATE TABLE vip_levels (
    id      INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL,
    body    TEXT    NOT NULL
) STRICT;

INSERT INTO vip_levels (id, version, body) VALUES (1, 0, '[]');

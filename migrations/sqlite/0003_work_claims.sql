-- Claims on named background work (`WorkClaims`): one row per job name, held by one owner
-- until `claimed_until` (ms since the epoch); the next claimer takes an expired row over.
CREATE TABLE room_work_claims (
    name          TEXT    NOT NULL PRIMARY KEY,
    owner         TEXT    NOT NULL,
    claimed_until INTEGER NOT NULL
) STRICT;

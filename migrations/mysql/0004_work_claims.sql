-- Claims on named background work (`WorkClaims`): one row per job name, held by one worker
-- process until `claimed_until` (ms since the epoch). A worker that crashed stops renewing,
-- and the next claimer takes the row over once the time has passed.
CREATE TABLE room_work_claims (
    name          VARCHAR(64)  NOT NULL,
    owner         VARCHAR(128) NOT NULL,
    claimed_until BIGINT       NOT NULL,
    PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

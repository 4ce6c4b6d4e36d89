-- Robot room configurations (`RobotRooms`): one row per room, the configuration as JSON in
-- `body`. `version` is the condition of every update; `enabled` is in a column of its own for
-- the loops that look for the rooms to run.
CREATE TABLE robot_rooms (
    room_id VARCHAR(64) NOT NULL,
    version BIGINT      NOT NULL,
    enabled BOOLEAN     NOT NULL,
    body    LONGTEXT    NOT NULL,
    PRIMARY KEY (room_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

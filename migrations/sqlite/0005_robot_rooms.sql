-- Robot room configurations (`RobotRooms`): one row per room, the configuration as JSON in
-- `body`. `version` is the condition of every update; `enabled` is in a column of its own for
-- the loops that look for the rooms to run.
CREATE TABLE robot_rooms (
    room_id TEXT    NOT NULL PRIMARY KEY,
    version INTEGER NOT NULL,
    enabled INTEGER NOT NULL,
    body    TEXT    NOT NULL
) STRICT;

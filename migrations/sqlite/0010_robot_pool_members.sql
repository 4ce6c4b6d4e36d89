-- The robots the robot rooms' pools hold (`RobotRooms`): a robot is in at most one pool, a
-- rule the primary key on `robot_id` keeps. The rows are written in the same transaction as
-- their room's configuration, so that of two writes at once claiming a robot, one fails on
-- the key.
CREATE TABLE robot_pool_members (
    robot_id TEXT NOT NULL PRIMARY KEY,
    room_id  TEXT NOT NULL
) STRICT;

CREATE INDEX robot_pool_members_by_room ON robot_pool_members (room_id);

-- The pools stored so far. A robot that two configurations name (written before this rule
-- was the store's) stays in the pool of the first room by room id; the other configuration
-- still names it until it is changed, and any change of it must drop the robot.
INSERT OR IGNORE INTO robot_pool_members (robot_id, room_id)
SELECT robot.value, robot_rooms.room_id
FROM robot_rooms, json_each(robot_rooms.body, '$.robots') AS robot
ORDER BY robot_rooms.room_id;

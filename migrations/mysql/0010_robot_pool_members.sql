-- The robots the robot rooms' pools hold (`RobotRooms`): a robot is in at most one pool, a
-- rule the primary key on `robot_id` keeps. The rows are written in the same transaction as
-- their room's configuration, so that of two writes at once claiming a robot, one fails on
-- the key.
CREATE TABLE robot_pool_members (
    robot_id VARCHAR(64) NOT NULL,
    room_id  VARCHAR(64) NOT NULL,
    PRIMARY KEY (robot_id),
    KEY robot_pool_members_by_room (room_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The pools stored so far. A robot that two configurations name (written before this rule
-- was the store's) stays in the pool of the first room by room id; the other configuration
-- still names it until it is changed, and any change of it must drop the robot.
INSERT IGNORE INTO robot_pool_members (robot_id, room_id)
SELECT robot.robot_id, robot_rooms.room_id
FROM robot_rooms,
     JSON_TABLE(robot_rooms.body, '$.robots[*]' COLUMNS (robot_id VARCHAR(64) PATH '$')) AS robot
ORDER BY robot_rooms.room_id;

-- The rooms users follow (`RoomFollows`): one row per (user, room). `seq` orders a user's
-- follows (newest first) and is the cursor of their pages.
CREATE TABLE room_follows (
    seq         BIGINT      NOT NULL AUTO_INCREMENT,
    user_id     VARCHAR(64) NOT NULL,
    room_id     VARCHAR(64) NOT NULL,
    followed_at BIGINT      NOT NULL,
    PRIMARY KEY (seq),
    UNIQUE KEY room_follows_by_user_room (user_id, room_id),
    KEY room_follows_by_user (user_id, seq),
    KEY room_follows_by_room (room_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- How many rooms each user follows: the row a follow and an unfollow lock first and change in
-- their transaction, so that follows of one user run one at a time and the maximum holds.
CREATE TABLE room_follow_counts (
    user_id VARCHAR(64) NOT NULL,
    follows INT         NOT NULL,
    PRIMARY KEY (user_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The rooms users follow (`RoomFollows`): one row per (user, room). `seq` orders a user's
-- follows (newest first) and is the cursor of their pages. The maximum a user may follow is
-- checked by the one writer in the transaction that inserts the follow.
CREATE TABLE room_follows (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id     TEXT    NOT NULL,
    room_id     TEXT    NOT NULL,
    followed_at INTEGER NOT NULL,
    UNIQUE (user_id, room_id)
) STRICT;

CREATE INDEX room_follows_by_user ON room_follows (user_id, seq);
CREATE INDEX room_follows_by_room ON room_follows (room_id);

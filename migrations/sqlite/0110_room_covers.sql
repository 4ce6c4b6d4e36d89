-- Cover claims (`RoomDirectory::claim_cover`): one open room at a time may show a cover
-- picture, and the key on the cover is what makes it so: of two rooms claiming one cover at
-- once, one inserts the row and the other finds it. A claim whose room closed or shows another
-- cover since is taken over by a compare and set on its holder; times are ms since the epoch.
CREATE TABLE room_covers (
    cover_url  TEXT    NOT NULL PRIMARY KEY,
    room_id    TEXT    NOT NULL,
    claimed_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- Rooms open before this showed their covers unclaimed: each cover goes to one of them (the
-- first by room id), so that no other room takes a cover an open room shows.
INSERT INTO room_covers (cover_url, room_id, claimed_at)
SELECT cover_url, room_id, 0 FROM room_summaries
WHERE open = 1 AND cover_url IS NOT NULL AND cover_url <> ''
ORDER BY room_id
ON CONFLICT (cover_url) DO NOTHING;

-- Cover claims (`RoomDirectory::claim_cover`): one open room at a time may show a cover
-- picture, and the key on the cover is what makes it so: of two rooms claiming one cover at
-- once, one inserts the row and the other finds it. A claim whose room closed or shows another
-- cover since is taken over by a compare and set on its holder; times are ms since the epoch.
-- Covers compare byte for byte (a URL's path is case-sensitive), at most 2,048 bytes.
CREATE TABLE room_covers (
    cover_url  VARBINARY(2048) NOT NULL,
    room_id    VARCHAR(64)     NOT NULL,
    claimed_at BIGINT          NOT NULL,
    PRIMARY KEY (cover_url)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Rooms open before this showed their covers unclaimed: each cover goes to one of them (the
-- first by room id), so that no other room takes a cover an open room shows.
INSERT INTO room_covers (cover_url, room_id, claimed_at)
SELECT CAST(cover_url AS BINARY), room_id, 0 FROM room_summaries
WHERE open = 1 AND cover_url IS NOT NULL AND cover_url <> ''
    AND LENGTH(CAST(cover_url AS BINARY)) <= 2048
ORDER BY room_id
ON DUPLICATE KEY UPDATE room_id = room_covers.room_id;

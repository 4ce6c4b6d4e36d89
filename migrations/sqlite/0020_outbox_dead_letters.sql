-- Outbox rows the broker refused for good (too large, invalid), set aside by the publisher so
-- that their room's later rows go on (`Outbox::dead_letter`), with the broker's reason. An
-- admin lists them and replays one: it goes back to `room_outbox`, pending, under its own id.
CREATE TABLE room_outbox_dead (
    id       INTEGER NOT NULL PRIMARY KEY,
    room_id  TEXT    NOT NULL,
    seq      INTEGER NOT NULL,
    envelope BLOB    NOT NULL,
    reason   TEXT    NOT NULL,
    dead_at  INTEGER NOT NULL
) STRICT;

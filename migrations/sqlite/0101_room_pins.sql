-- Pins (`RoomPins`): rooms a platform admin places at a position of one room list for a time
-- window. The list is a tab (`hot`, `new`, `region`, `country`) and its scope (the region or
-- country; '' for a tab of the whole app); times are ms since the epoch. Ended pins stay until
-- they are deleted, so the live ones are found through `ends_at`: the index reads only the
-- pins that have not ended, which the store then orders by start (there are few of them,
-- while ended pins pile up behind).
CREATE TABLE room_pins (
    pin_id     TEXT    NOT NULL PRIMARY KEY,
    room_id    TEXT    NOT NULL,
    tab        TEXT    NOT NULL,
    scope      TEXT    NOT NULL,
    position   INTEGER NOT NULL,
    starts_at  INTEGER NOT NULL,
    ends_at    INTEGER NOT NULL,
    created_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX room_pins_by_end ON room_pins (ends_at, starts_at);

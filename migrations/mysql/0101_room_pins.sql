-- Pins (`RoomPins`): rooms a platform admin places at a position of one room list for a time
-- window. The list is a tab (`hot`, `new`, `region`, `country`) and its scope (the region or
-- country; '' for a tab of the whole app); times are ms since the epoch. Ended pins stay until
-- they are deleted, so the live ones are found through `ends_at`: the index reads only the
-- pins that have not ended, which the store then orders by start (there are few of them,
-- while ended pins pile up behind).
CREATE TABLE room_pins (
    pin_id     VARCHAR(64)  NOT NULL,
    room_id    VARCHAR(64)  NOT NULL,
    tab        VARCHAR(16)  NOT NULL,
    scope      VARCHAR(64)  NOT NULL,
    position   INT UNSIGNED NOT NULL,
    starts_at  BIGINT       NOT NULL,
    ends_at    BIGINT       NOT NULL,
    created_at BIGINT       NOT NULL,
    PRIMARY KEY (pin_id),
    KEY room_pins_by_end (ends_at, starts_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Outbox rows the broker refused for good (too large, invalid), set aside by the publisher so
-- that their room's later rows go on (`Outbox::dead_letter`), with the broker's reason. An
-- admin lists them and replays one: it goes back to `room_outbox`, pending, under its own id.
CREATE TABLE room_outbox_dead (
    id       BIGINT      NOT NULL,
    room_id  VARCHAR(64) NOT NULL,
    seq      BIGINT      NOT NULL,
    envelope LONGBLOB    NOT NULL,
    reason   TEXT        NOT NULL,
    dead_at  BIGINT      NOT NULL,
    PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

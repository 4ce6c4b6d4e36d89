-- Leaderboards (`Boards`): the coin value of applied gifts ranked by sender, by receiver and by
-- room, for the whole app and for each room, by day, week and month, counted from applied gifts
-- by a consumer of the durable facts.
--
-- One row per entry of a board. A board is (period, number, kind, room_id): `period` 1 a day
-- (days since 1970-01-01), 2 a week (weeks, Monday first, since the week of 1970-01-01), 3 a
-- month (months since January 1970), in the billing time zone, `number` the period's number;
-- `kind` 1 senders, 2 receivers, 3 rooms; `room_id` the room's id, or '' for the whole app (a
-- board of rooms is only of the whole app). `subject` is the user's id, or the room's on a
-- board of rooms; `reached_at` the commit of the latest gift counted in `score` (ms since
-- 1970-01-01 UTC). The key leads with the period so that old periods are pruned along it;
-- `board_entries_rank` holds each board in rank order: highest score, then earliest
-- `reached_at`, then subject.
CREATE TABLE board_entries (
    period     TINYINT     NOT NULL,
    number     BIGINT      NOT NULL,
    kind       TINYINT     NOT NULL,
    room_id    VARCHAR(64) NOT NULL,
    subject    VARCHAR(64) NOT NULL,
    score      BIGINT      NOT NULL,
    reached_at BIGINT      NOT NULL,
    PRIMARY KEY (period, number, kind, room_id, subject),
    KEY board_entries_rank (period, number, kind, room_id, score DESC, reached_at, subject),
    CONSTRAINT board_entries_period CHECK (period IN (1, 2, 3)),
    CONSTRAINT board_entries_kind CHECK (kind IN (1, 2, 3)),
    CONSTRAINT board_entries_rooms_of_the_app CHECK (kind <> 3 OR room_id = ''),
    CONSTRAINT board_entries_not_negative CHECK (score >= 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The key of each gift counted on the boards: its room and its fact's position (`seq`) in the
-- room's history, so that a gift handed over again, in any order, counts nothing. `day` is the
-- UTC day of its fact (days since 1970-01-01): keys are forgotten a day at a time, along
-- `board_keys_day`, once no consumer can be handed their facts again. Of two counts of one
-- gift at once, one inserts its key; the other fails on it, is tried again, and finds it.
CREATE TABLE board_keys (
    room_id VARCHAR(64) NOT NULL,
    seq     BIGINT      NOT NULL,
    day     BIGINT      NOT NULL,
    PRIMARY KEY (room_id, seq),
    KEY board_keys_day (day),
    CONSTRAINT board_keys_not_negative CHECK (seq >= 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Leaderboards (`Boards`): the coin value of applied gifts ranked by sender, by receiver and
-- by room, for the whole app and for each room, by day, week and month, counted by a consumer
-- of the durable facts.
--
-- One row per entry of a board. A board is its period (`BoardPeriod::code`: 1 a day, days
-- since 1970-01-01; 2 a week, weeks, Monday first, since the week of 1970-01-01; 3 a month,
-- months since January 1970; in the billing time zone) and that period's `number`, its kind
-- (`BoardKind::code`: 1 senders, 2 receivers, 3 rooms) and its room (`room_id`, '' for the
-- whole app; a board of rooms is only of the whole app). `subject` is the user's id, or the
-- room's on a board of rooms; `reached_at` is when the score was reached (ms since the epoch,
-- the commit of the latest gift counted in it). The key leads with the period so that old
-- periods are pruned as a range of it.
CREATE TABLE board_entries (
    period     INTEGER NOT NULL CHECK (period BETWEEN 1 AND 3),
    number     INTEGER NOT NULL,
    kind       INTEGER NOT NULL CHECK (kind BETWEEN 1 AND 3),
    room_id    TEXT    NOT NULL,
    subject    TEXT    NOT NULL,
    score      INTEGER NOT NULL CHECK (score >= 0),
    reached_at INTEGER NOT NULL,
    PRIMARY KEY (period, number, kind, room_id, subject),
    CHECK (kind <> 3 OR room_id = '')
) STRICT, WITHOUT ROWID;

-- Each board's entries in rank order (highest score first, then the earliest reached, then
-- the smallest subject id): a page or a standing seeks ranges of it, unsorted.
CREATE INDEX board_entries_by_rank
ON board_entries (period, number, kind, room_id, score DESC, reached_at, subject);

-- The key of each gift counted: its room and its fact's position in the room's history
-- (`BoardGift::seq`). Facts of a room can come out of order (a broker's retry, a dead letter
-- replayed), so a gift is counted once by its own key, not past a mark of the room's. `day`
-- is the UTC day of its fact (`BoardGift::key_day`, days since 1970-01-01): keys are forgotten
-- a day at a time once no consumer can be handed their facts again.
CREATE TABLE board_keys (
    room_id TEXT    NOT NULL,
    seq     INTEGER NOT NULL CHECK (seq >= 0),
    day     INTEGER NOT NULL,
    PRIMARY KEY (room_id, seq)
) STRICT, WITHOUT ROWID;

-- The keys by day (and, after it, their primary key): the oldest are pruned as a range of it.
CREATE INDEX board_keys_by_day ON board_keys (day);

-- What the room lists show of a room and rank it by, kept in its summary: its region, cover,
-- seats taken and creation time, and its recent heat (thousandths of a heat point, decayed by
-- the lists' half-life) as of the instant beside it (ms since the epoch). Every commit writes
-- them; a row written before keeps these defaults until its room's next commit.
--
-- The lists' refresher pages through every open room by room id. The primary key walks
-- closed rooms too, and closed rooms pile up; `room_summaries_open_by_id` reaches the open
-- ones only, in room id order. A commit rewrites its entry only when the room opens or closes.
ALTER TABLE room_summaries
    ADD COLUMN region            VARCHAR(32)  NOT NULL DEFAULT '',
    ADD COLUMN cover_url         TEXT         NULL,
    ADD COLUMN seats_taken       INT UNSIGNED NOT NULL DEFAULT 0,
    ADD COLUMN created_at        BIGINT       NOT NULL DEFAULT 0,
    ADD COLUMN recent_heat_milli BIGINT       NOT NULL DEFAULT 0,
    ADD COLUMN recent_heat_at    BIGINT       NOT NULL DEFAULT 0,
    ADD KEY room_summaries_open_by_id (open, room_id);

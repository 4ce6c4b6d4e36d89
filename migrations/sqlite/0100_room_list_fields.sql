-- What the room lists show of a room and rank it by, kept in its summary: its region, cover,
-- seats taken and creation time, and its recent heat (thousandths of a heat point, decayed by
-- the lists' half-life) as of the instant beside it (ms since the epoch). Every commit writes
-- them; a row written before keeps these defaults until its room's next commit.
ALTER TABLE room_summaries ADD COLUMN region TEXT NOT NULL DEFAULT '';
ALTER TABLE room_summaries ADD COLUMN cover_url TEXT;
ALTER TABLE room_summaries ADD COLUMN seats_taken INTEGER NOT NULL DEFAULT 0;
ALTER TABLE room_summaries ADD COLUMN created_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE room_summaries ADD COLUMN recent_heat_milli INTEGER NOT NULL DEFAULT 0;
ALTER TABLE room_summaries ADD COLUMN recent_heat_at INTEGER NOT NULL DEFAULT 0;

-- The lists' refresher pages through every open room by room id. The primary key's index
-- walks closed rooms too, and closed rooms pile up; this one holds the open rooms only.
CREATE INDEX room_summaries_open_by_id ON room_summaries (room_id) WHERE open = 1;

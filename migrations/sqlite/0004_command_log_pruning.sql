-- Pruning the command log (`CellStore::prune_log`). The pass walks the commands that expired
-- (applied before the cut-off) oldest first, through `room_commands_by_age`, to find the
-- rooms with something to prune; in each room it reads and deletes commands from the front,
-- by seq, through `room_commands_by_seq`. Events go from the front of each room's log, by the
-- primary key (room_id, seq).
CREATE INDEX room_commands_by_age ON room_commands (applied_at, room_id, command_id);
CREATE INDEX room_commands_by_seq ON room_commands (room_id, first_seq);

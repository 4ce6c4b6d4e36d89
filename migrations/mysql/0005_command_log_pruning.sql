-- Pruning the command log (`CellStore::prune_log`). The pass walks the commands that expired
-- (applied before the cut-off) oldest first, through `room_commands_by_age`, to find the
-- rooms with something to prune; in each room it reads and deletes commands from the front,
-- by seq, through `room_commands_by_seq`. Events go from the front of each room's log, by the
-- primary key (room_id, seq). InnoDB adds both indexes in place, without blocking commits.
ALTER TABLE room_commands
    ADD KEY room_commands_by_age (applied_at, room_id, command_id),
    ADD KEY room_commands_by_seq (room_id, first_seq);

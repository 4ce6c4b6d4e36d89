-- Pruning the command log finds its rooms through the rooms, not through every command.
--
-- The pass looked for rooms with expired commands through `room_commands_by_age`, an index
-- of every command by its applied time. A room's log is pruned from its front only, so what
-- decides whether a room has anything to prune is the applied time of its first command:
-- `room_cells.first_command_at` holds it (NULL while the room's log has no command), set by
-- the commit that writes a command into an empty log (under the cell row's lock) and read
-- again from the log's front by the pass that pruned commands (which takes the same lock).
-- Its index has one entry per room.
ALTER TABLE room_cells
    ADD COLUMN first_command_at BIGINT NULL,
    ADD KEY room_cells_by_first_command (first_command_at, room_id);
UPDATE room_cells AS r
SET first_command_at = (
    SELECT c.applied_at FROM room_commands AS c
    WHERE c.room_id = r.room_id ORDER BY c.first_seq LIMIT 1);
ALTER TABLE room_commands DROP KEY room_commands_by_age;

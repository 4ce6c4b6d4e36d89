-- A smaller footprint per gift: each thing stored once, bodies in a compact binary form.
--
-- The bodies of the log (events, commands and their actors), of the outbox and of gift
-- orders become BLOBs. New rows hold `room_app::stored`'s compact form (a version byte, then
-- the value with one-byte field names and variable-length integers); rows written before
-- keep their JSON text (its bytes are kept as they are), which the adapter still reads (JSON
-- never starts with the version byte), until retention deletes them. A body no longer
-- repeats what its row has in columns: a command's id, an outbox envelope's room, seq and
-- event id, an order's id, room, sender, status and creation time. Orders, kept for good, are
-- converted here: their JSON bodies lose those fields, and the room's refusal moves to a
-- column of its own (the condition of applying an order reads it). MySQL assigns from left to
-- right, so the refusal is read from the body before the body loses it.
ALTER TABLE room_events MODIFY event LONGBLOB NOT NULL;
ALTER TABLE room_commands MODIFY command LONGBLOB NOT NULL, MODIFY actor BLOB NOT NULL;
ALTER TABLE room_outbox MODIFY envelope LONGBLOB NOT NULL;
ALTER TABLE gift_orders ADD COLUMN rejection BLOB NULL;
UPDATE gift_orders
SET rejection = IF(JSON_TYPE(JSON_EXTRACT(body, '$.rejection')) = 'OBJECT',
                   JSON_EXTRACT(body, '$.rejection'), NULL),
    body = JSON_REMOVE(body, '$.order_id', '$.room_id', '$.sender', '$.status', '$.created_at',
                       '$.rejection');
ALTER TABLE gift_orders MODIFY body LONGBLOB NOT NULL;

-- A smaller footprint per gift: each thing stored once, bodies in a compact binary form.
--
-- The bodies of the log (events, commands and their actors), of the outbox and of gift
-- orders become BLOBs. New rows hold `room_app::stored`'s compact form (a version byte, then
-- the value with one-byte field names and variable-length integers); rows written before
-- keep their JSON text, which the adapter still reads (JSON never starts with the version
-- byte), until retention deletes them. A body no longer repeats what its row has in columns:
-- a command's id, an outbox envelope's room, seq and event id, an order's id, room, sender,
-- status and creation time. Orders, kept for good, are converted here: their JSON bodies
-- lose those fields, and the room's refusal moves to a column of its own (the condition of
-- applying an order reads it). The order table loses its rowid: its primary key was a second
-- b-tree holding every order id and sender again.

-- The room's log.
CREATE TABLE room_events_compact (
    room_id     TEXT    NOT NULL REFERENCES room_cells (room_id),
    seq         INTEGER NOT NULL,
    occurred_at INTEGER NOT NULL,
    event       BLOB    NOT NULL,
    PRIMARY KEY (room_id, seq)
) STRICT, WITHOUT ROWID;
INSERT INTO room_events_compact (room_id, seq, occurred_at, event)
SELECT room_id, seq, occurred_at, CAST(event AS BLOB) FROM room_events;
DROP TABLE room_events;
ALTER TABLE room_events_compact RENAME TO room_events;

-- Applied commands.
CREATE TABLE room_commands_compact (
    room_id    TEXT    NOT NULL REFERENCES room_cells (room_id),
    command_id TEXT    NOT NULL,
    command    BLOB    NOT NULL,
    actor      BLOB    NOT NULL,
    applied_at INTEGER NOT NULL,
    first_seq  INTEGER NOT NULL,
    last_seq   INTEGER NOT NULL,
    PRIMARY KEY (room_id, command_id)
) STRICT, WITHOUT ROWID;
INSERT INTO room_commands_compact
    (room_id, command_id, command, actor, applied_at, first_seq, last_seq)
SELECT room_id, command_id, CAST(command AS BLOB), CAST(actor AS BLOB), applied_at, first_seq,
       last_seq
FROM room_commands;
DROP TABLE room_commands;
ALTER TABLE room_commands_compact RENAME TO room_commands;
CREATE INDEX room_commands_by_age ON room_commands (applied_at, room_id, command_id);
CREATE INDEX room_commands_by_seq ON room_commands (room_id, first_seq);

-- The outbox. AUTOINCREMENT as before: its sequence row in sqlite_sequence moves with the
-- table's name, so ids keep rising past every id ever used.
CREATE TABLE room_outbox_compact (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    room_id      TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    envelope     BLOB    NOT NULL,
    delivered_at INTEGER
) STRICT;
INSERT INTO room_outbox_compact (id, room_id, seq, envelope, delivered_at)
SELECT id, room_id, seq, CAST(envelope AS BLOB), delivered_at FROM room_outbox;
INSERT INTO sqlite_sequence (name, seq)
SELECT 'room_outbox_compact', seq FROM sqlite_sequence WHERE name = 'room_outbox'
    AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'room_outbox_compact');
UPDATE sqlite_sequence
SET seq = (SELECT seq FROM sqlite_sequence WHERE name = 'room_outbox')
WHERE name = 'room_outbox_compact'
    AND seq < (SELECT seq FROM sqlite_sequence WHERE name = 'room_outbox');
DROP TABLE room_outbox;
ALTER TABLE room_outbox_compact RENAME TO room_outbox;
CREATE INDEX room_outbox_pending ON room_outbox (id) WHERE delivered_at IS NULL;
CREATE INDEX room_outbox_delivered ON room_outbox (delivered_at) WHERE delivered_at IS NOT NULL;

-- Gift orders.
CREATE TABLE gift_orders_compact (
    sender     TEXT    NOT NULL,
    order_id   TEXT    NOT NULL,
    room_id    TEXT    NOT NULL,
    status     TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    -- The room's refusal (`GiftOrder::rejection`), NULL while there is none.
    rejection  BLOB,
    -- The rest of the order: what no column holds.
    body       BLOB    NOT NULL,
    PRIMARY KEY (order_id, sender)
) STRICT, WITHOUT ROWID;
INSERT INTO gift_orders_compact
    (sender, order_id, room_id, status, created_at, rejection, body)
SELECT sender, order_id, room_id, status, created_at,
       CASE WHEN json_type(body, '$.rejection') = 'object'
            THEN CAST(json_extract(body, '$.rejection') AS BLOB) END,
       CAST(json_remove(body, '$.order_id', '$.room_id', '$.sender', '$.status',
                        '$.created_at', '$.rejection') AS BLOB)
FROM gift_orders;
DROP TABLE gift_orders;
ALTER TABLE gift_orders_compact RENAME TO gift_orders;
CREATE INDEX gift_orders_unfinished ON gift_orders (created_at, order_id, sender)
    WHERE status <> 'COMPLETED' AND status <> 'FAILED' AND status <> 'COMPENSATED';

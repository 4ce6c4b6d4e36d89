-- Gift orders are keyed by sender and order id: order ids are chosen by clients, so two
-- senders may use the same one, and neither can claim or probe the other's. SQLite cannot
-- change a primary key in place: the table is rebuilt, and every stored order moves to its
-- new key (order ids were unique, so no two rows collide). Stored bodies are kept as they
-- are: an order stored without `keys` keeps naming its wallet operations and its room
-- command by its order id alone.
CREATE TABLE gift_orders_by_sender (
    sender     TEXT    NOT NULL,
    order_id   TEXT    NOT NULL,
    room_id    TEXT    NOT NULL,
    status     TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    body       TEXT    NOT NULL,
    -- The order id first: orders of many senders created together (often with rising ids)
    -- land on few index pages, not on one page per sender.
    PRIMARY KEY (order_id, sender)
) STRICT;

INSERT INTO gift_orders_by_sender (sender, order_id, room_id, status, created_at, body)
SELECT sender, order_id, room_id, status, created_at, body FROM gift_orders;

DROP TABLE gift_orders;
ALTER TABLE gift_orders_by_sender RENAME TO gift_orders;

-- The recovery worker's walk: oldest first, ties by order id, then sender.
CREATE INDEX gift_orders_unfinished ON gift_orders (created_at, order_id, sender)
    WHERE status NOT IN ('COMPLETED', 'FAILED', 'COMPENSATED');

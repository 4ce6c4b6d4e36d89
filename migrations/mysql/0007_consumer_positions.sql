-- Where each named in-process consumer of the durable facts stands in the outbox
-- (`ConsumerPositions`), when no broker carries the facts: the id of the `room_outbox` row
-- up to which it has handled every fact. Moved only by compare-and-set. With no broker, an
-- outbox row is done (marked delivered, then deleted by retention) once every consumer's
-- position has passed it.
CREATE TABLE room_consumer_positions (
    name     VARCHAR(64) NOT NULL,
    position BIGINT      NOT NULL,
    PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

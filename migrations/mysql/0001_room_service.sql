-- The room service's tables for the MySQL / MariaDB store (adapters-mysql). Written for
-- MariaDB 10.11 and MySQL 8: InnoDB, utf8mb4, no JSON column type (MySQL rewrites JSON
-- documents, and the stored text must read back as written).
--
-- Ids are VARCHAR(64) (the domain's limit, in characters) in `utf8mb4_bin`, the default
-- collation of every table here: ids compare as exact strings, never case- or
-- accent-insensitively. Domain values (events, commands, actors, snapshots, gift orders,
-- timer commands, outbox envelopes) are JSON text. Times are milliseconds since the Unix
-- epoch; money is BIGINT coins. Tables have no foreign keys: every write to a room's rows
-- happens in a commit that holds the room's cell row locked, which is the integrity the
-- foreign keys of the SQLite schema give, without their extra locks.

-- One row per room ever activated: the fence of the Room Cell (DESIGN section 3). Every
-- commit locks this row and checks `epoch` and `version` first.
CREATE TABLE room_cells (
    room_id    VARCHAR(64)  NOT NULL,
    epoch      BIGINT       NOT NULL CHECK (epoch > 0),
    version    BIGINT       NOT NULL CHECK (version >= 0),
    owner_node VARCHAR(255) NOT NULL,
    PRIMARY KEY (room_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The room's log: events from seq 1 without gaps.
CREATE TABLE room_events (
    room_id     VARCHAR(64) NOT NULL,
    seq         BIGINT      NOT NULL,
    occurred_at BIGINT      NOT NULL,
    event       LONGTEXT    NOT NULL,
    PRIMARY KEY (room_id, seq)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Applied commands, unique per room: the storage backstop of command idempotency.
CREATE TABLE room_commands (
    room_id    VARCHAR(64) NOT NULL,
    command_id VARCHAR(64) NOT NULL,
    command    LONGTEXT    NOT NULL,
    actor      TEXT        NOT NULL,
    applied_at BIGINT      NOT NULL,
    first_seq  BIGINT      NOT NULL,
    last_seq   BIGINT      NOT NULL,
    PRIMARY KEY (room_id, command_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The newest snapshot of each room.
CREATE TABLE room_snapshots (
    room_id  VARCHAR(64) NOT NULL,
    version  BIGINT      NOT NULL,
    snapshot LONGTEXT    NOT NULL,
    PRIMARY KEY (room_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Durable facts for the publisher. One room's rows get rising ids in commit order (its
-- commits are serialized by the cell row lock); rows of different rooms committed at the
-- same time may commit out of id order, which is why the publisher lists by delivery state
-- and never keeps an id cursor.
CREATE TABLE room_outbox (
    id           BIGINT      NOT NULL AUTO_INCREMENT,
    room_id      VARCHAR(64) NOT NULL,
    seq          BIGINT      NOT NULL,
    envelope     LONGTEXT    NOT NULL,
    delivered_at BIGINT      NULL,
    PRIMARY KEY (id),
    KEY room_outbox_by_delivery (delivered_at, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Gift orders: the saga's memory.
CREATE TABLE gift_orders (
    order_id   VARCHAR(64) NOT NULL,
    room_id    VARCHAR(64) NOT NULL,
    sender     VARCHAR(64) NOT NULL,
    status     VARCHAR(16) NOT NULL,
    created_at BIGINT      NOT NULL,
    body       LONGTEXT    NOT NULL,
    PRIMARY KEY (order_id, sender),
    KEY gift_orders_by_age (created_at, order_id, sender)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE gift_catalog (
    gift_id VARCHAR(64) NOT NULL,
    name    TEXT        NOT NULL,
    price   BIGINT      NOT NULL,
    heat    BIGINT      NOT NULL,
    fuel    BIGINT      NOT NULL,
    lucky   BOOLEAN     NOT NULL,
    enabled BOOLEAN     NOT NULL,
    PRIMARY KEY (gift_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Durable timers, armed by commits; re-arming an id replaces it. Timer ids are built from a
-- room id and a suffix, hence longer than an id.
CREATE TABLE room_timers (
    timer_id VARCHAR(255) NOT NULL,
    room_id  VARCHAR(64)  NOT NULL,
    due_at   BIGINT       NOT NULL,
    command  LONGTEXT     NOT NULL,
    PRIMARY KEY (timer_id),
    KEY room_timers_due (due_at, timer_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Credits owed by commits (rocket rewards); `id` keeps them oldest first. Operation ids are
-- built from a room id, a rocket and a user id, hence longer than an id.
CREATE TABLE room_payouts (
    id      BIGINT       NOT NULL AUTO_INCREMENT,
    op_id   VARCHAR(255) NOT NULL,
    kind    VARCHAR(16)  NOT NULL,
    user_id VARCHAR(64)  NOT NULL,
    amount  BIGINT       NOT NULL CHECK (amount >= 0),
    room_id VARCHAR(64)  NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY room_payouts_op (op_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The room directory: short ids, unique both ways, and what the list of rooms shows.
CREATE TABLE room_short_ids (
    short_id INT UNSIGNED NOT NULL,
    room_id  VARCHAR(64)  NOT NULL,
    PRIMARY KEY (short_id),
    UNIQUE KEY room_short_ids_room (room_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE room_summaries (
    room_id VARCHAR(64)  NOT NULL,
    owner   VARCHAR(64)  NOT NULL,
    name    TEXT         NOT NULL,
    open    BOOLEAN      NOT NULL,
    heat    BIGINT       NOT NULL,
    online  INT UNSIGNED NOT NULL,
    locked  BOOLEAN      NOT NULL,
    version BIGINT       NOT NULL,
    PRIMARY KEY (room_id),
    KEY room_summaries_open_by_heat (open, heat DESC, room_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

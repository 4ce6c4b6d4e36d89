-- The room service's tables for the embedded SQLite store (adapters-sqlite).
--
-- Domain values (events, commands, actors, snapshots, gift orders, timer commands, outbox
-- envelopes) are stored as JSON text. The columns that queries filter, sort or join on are
-- real columns with indexes. Times are milliseconds since the Unix epoch.

-- One row per room ever activated: the fence of the Room Cell (DESIGN section 3). Every
-- commit is conditional on `epoch` and `version`.
CREATE TABLE room_cells (
    room_id    TEXT    NOT NULL PRIMARY KEY,
    epoch      INTEGER NOT NULL,
    version    INTEGER NOT NULL,
    owner_node TEXT    NOT NULL
) STRICT;

-- The room's log: events from seq 1 without gaps.
CREATE TABLE room_events (
    room_id     TEXT    NOT NULL REFERENCES room_cells (room_id),
    seq         INTEGER NOT NULL,
    occurred_at INTEGER NOT NULL,
    event       TEXT    NOT NULL,
    PRIMARY KEY (room_id, seq)
) STRICT, WITHOUT ROWID;

-- Applied commands, unique per room: the storage backstop of command idempotency.
CREATE TABLE room_commands (
    room_id    TEXT    NOT NULL REFERENCES room_cells (room_id),
    command_id TEXT    NOT NULL,
    command    TEXT    NOT NULL,
    actor      TEXT    NOT NULL,
    applied_at INTEGER NOT NULL,
    first_seq  INTEGER NOT NULL,
    last_seq   INTEGER NOT NULL,
    PRIMARY KEY (room_id, command_id)
) STRICT, WITHOUT ROWID;

-- The newest snapshot of each room.
CREATE TABLE room_snapshots (
    room_id  TEXT    NOT NULL PRIMARY KEY,
    version  INTEGER NOT NULL,
    snapshot TEXT    NOT NULL
) STRICT;

-- Durable facts for the publisher. AUTOINCREMENT: ids keep rising even after the newest rows
-- were deleted, so `id` order is commit order.
CREATE TABLE room_outbox (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    room_id      TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    envelope     TEXT    NOT NULL,
    delivered_at INTEGER
) STRICT;
CREATE INDEX room_outbox_pending ON room_outbox (id) WHERE delivered_at IS NULL;
CREATE INDEX room_outbox_delivered ON room_outbox (delivered_at) WHERE delivered_at IS NOT NULL;

-- Gift orders: the saga's memory.
CREATE TABLE gift_orders (
    order_id   TEXT    NOT NULL PRIMARY KEY,
    room_id    TEXT    NOT NULL,
    sender     TEXT    NOT NULL,
    status     TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    body       TEXT    NOT NULL
) STRICT;
CREATE INDEX gift_orders_unfinished ON gift_orders (created_at, order_id)
    WHERE status NOT IN ('COMPLETED', 'FAILED', 'COMPENSATED');

-- The wallet ledger: balances, and one entry per operation. (op_id, kind) is the idempotency
-- key; a voided debit is a 'debit' entry in state 'void' without user or amount.
CREATE TABLE wallet_accounts (
    user_id TEXT    NOT NULL PRIMARY KEY,
    balance INTEGER NOT NULL CHECK (balance >= 0)
) STRICT;
CREATE TABLE wallet_entries (
    op_id         TEXT    NOT NULL,
    kind          TEXT    NOT NULL
        CHECK (kind IN ('debit', 'credit_admin', 'refund', 'lucky_reward', 'rocket_reward')),
    state         TEXT    NOT NULL CHECK (state IN ('done', 'void')),
    user_id       TEXT    REFERENCES wallet_accounts (user_id),
    amount        INTEGER CHECK (amount >= 0),
    balance_after INTEGER,
    PRIMARY KEY (op_id, kind),
    CHECK ((state = 'done') = (user_id IS NOT NULL AND amount IS NOT NULL
                               AND balance_after IS NOT NULL))
) STRICT, WITHOUT ROWID;

-- Balances move only through entries: a done entry applies itself to its account (opening it
-- if needed) in the statement that inserts it. The CHECK on the balance is the last guard
-- against an overdraft.
CREATE TRIGGER wallet_entries_apply AFTER INSERT ON wallet_entries WHEN NEW.state = 'done'
BEGIN
    INSERT INTO wallet_accounts (user_id, balance) VALUES (NEW.user_id, 0)
    ON CONFLICT (user_id) DO NOTHING;
    UPDATE wallet_accounts
    SET balance = balance + CASE NEW.kind WHEN 'debit' THEN -NEW.amount ELSE NEW.amount END
    WHERE user_id = NEW.user_id;
END;

CREATE TABLE gift_catalog (
    gift_id TEXT    NOT NULL PRIMARY KEY,
    name    TEXT    NOT NULL,
    price   INTEGER NOT NULL,
    heat    INTEGER NOT NULL,
    fuel    INTEGER NOT NULL,
    lucky   INTEGER NOT NULL,
    enabled INTEGER NOT NULL
) STRICT;

-- Durable timers, armed by commits; re-arming an id replaces it.
CREATE TABLE room_timers (
    timer_id TEXT    NOT NULL PRIMARY KEY,
    room_id  TEXT    NOT NULL,
    due_at   INTEGER NOT NULL,
    command  TEXT    NOT NULL
) STRICT;
CREATE INDEX room_timers_due ON room_timers (due_at, timer_id);

-- Credits owed by commits (rocket rewards); `id` keeps them oldest first.
CREATE TABLE room_payouts (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    op_id   TEXT    NOT NULL UNIQUE,
    kind    TEXT    NOT NULL,
    user_id TEXT    NOT NULL,
    amount  INTEGER NOT NULL,
    room_id TEXT    NOT NULL
) STRICT;

-- The room directory: short ids, unique both ways, and what the list of rooms shows.
CREATE TABLE room_short_ids (
    short_id INTEGER NOT NULL PRIMARY KEY CHECK (short_id BETWEEN 0 AND 4294967295),
    room_id  TEXT    NOT NULL UNIQUE
) STRICT;
CREATE TABLE room_summaries (
    room_id TEXT    NOT NULL PRIMARY KEY,
    owner   TEXT    NOT NULL,
    name    TEXT    NOT NULL,
    open    INTEGER NOT NULL,
    heat    INTEGER NOT NULL,
    online  INTEGER NOT NULL,
    locked  INTEGER NOT NULL,
    version INTEGER NOT NULL
) STRICT;
CREATE INDEX room_summaries_open_by_heat ON room_summaries (heat DESC, room_id) WHERE open = 1;

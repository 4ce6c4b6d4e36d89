-- Gift value and room turnover (`GiftTallies`), counted from applied gifts by a consumer of
-- the durable facts.
--
-- A gift is counted once by its order: `gift_tally_orders` keeps the key of each order
-- counted, under the UTC day of its fact (`key_day`, days since 1970-01-01) so that keys are
-- forgotten a day at a time once no consumer can be handed their facts again.
CREATE TABLE gift_tally_orders (
    key_day  INTEGER NOT NULL,
    sender   TEXT    NOT NULL,
    order_id TEXT    NOT NULL,
    PRIMARY KEY (key_day, sender, order_id)
) STRICT, WITHOUT ROWID;

-- What each user sent and received, by period: 0 all time (number 0), 1 a day (days since
-- 1970-01-01), 2 a week (weeks, Monday first, since the week of 1970-01-01), 3 a month
-- (months since January 1970), in the billing time zone.
CREATE TABLE gift_values (
    user_id  TEXT    NOT NULL,
    period   INTEGER NOT NULL CHECK (period BETWEEN 0 AND 3),
    number   INTEGER NOT NULL,
    sent     INTEGER NOT NULL CHECK (sent >= 0),
    received INTEGER NOT NULL CHECK (received >= 0),
    PRIMARY KEY (user_id, period, number)
) STRICT, WITHOUT ROWID;

-- Each room's turnover of each day, and its settlements. A turnover is pending (the partial
-- index's condition) until it has a settlement, which is paid (`owed` 0), and nothing was
-- counted beyond what that settled on (`settled_turnover`). A settlement
-- is recorded first (`settlements` one more, what it `owed`), then paid, then marked paid
-- (`owed` back to 0). `reward` is every reward recorded for the day; `owner`, `share_bp`,
-- `billing_version` and `settled_at` are the latest settlement's (NULL before the first).
CREATE TABLE room_turnovers (
    day              INTEGER NOT NULL,
    room_id          TEXT    NOT NULL,
    turnover         INTEGER NOT NULL CHECK (turnover >= 0),
    gifts            INTEGER NOT NULL CHECK (gifts >= 0),
    settlements      INTEGER NOT NULL DEFAULT 0 CHECK (settlements >= 0),
    settled_turnover INTEGER NOT NULL DEFAULT 0,
    owed             INTEGER NOT NULL DEFAULT 0 CHECK (owed >= 0),
    reward           INTEGER NOT NULL DEFAULT 0 CHECK (reward >= 0),
    owner            TEXT,
    share_bp         INTEGER,
    billing_version  INTEGER,
    settled_at       INTEGER,
    PRIMARY KEY (day, room_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX room_turnovers_pending ON room_turnovers (day, room_id)
WHERE settlements = 0 OR turnover > settled_turnover OR owed > 0;

-- Income gets a part of its own for the owner's reward of a closed day's turnover: part 4
-- (1 the recipient's, 2 the owner's, 3 the agency's). SQLite cannot change a column's check,
-- so the table is rebuilt with the same rows.
CREATE TABLE income_credits_0120 (
    user_id   TEXT    NOT NULL,
    id        INTEGER NOT NULL,
    order_id  TEXT    NOT NULL,
    sender    TEXT    NOT NULL,
    recipient TEXT    NOT NULL,
    part      INTEGER NOT NULL CHECK (part BETWEEN 1 AND 4),
    amount    INTEGER NOT NULL CHECK (amount >= 0),
    PRIMARY KEY (user_id, id)
) STRICT, WITHOUT ROWID;

INSERT INTO income_credits_0120 (user_id, id, order_id, sender, recipient, part, amount)
SELECT user_id, id, order_id, sender, recipient, part, amount FROM income_credits;

DROP TABLE income_credits;

ALTER TABLE income_credits_0120 RENAME TO income_credits;

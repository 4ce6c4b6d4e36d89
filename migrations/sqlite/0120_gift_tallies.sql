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
    period   INTEGER NOT NULL CHECK (period IN (0, 1, 2, 3)),
    number   INTEGER NOT NULL,
    sent     INTEGER NOT NULL CHECK (sent >= 0),
    received INTEGER NOT NULL CHECK (received >= 0),
    PRIMARY KEY (user_id, period, number)
) STRICT, WITHOUT ROWID;

-- Each room's turnover of each day, and its settlement once the day closed (the columns
-- after `gifts`, all NULL until then).
CREATE TABLE room_turnovers (
    day             INTEGER NOT NULL,
    room_id         TEXT    NOT NULL,
    turnover        INTEGER NOT NULL CHECK (turnover >= 0),
    gifts           INTEGER NOT NULL CHECK (gifts >= 0),
    settled_at      INTEGER,
    owner           TEXT,
    share_bp        INTEGER,
    reward          INTEGER,
    billing_version INTEGER,
    PRIMARY KEY (day, room_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX room_turnovers_unsettled ON room_turnovers (day, room_id)
WHERE settled_at IS NULL;

-- Income gets a part of its own for the owner's reward of a closed day's turnover: part 4
-- (1 the recipient's, 2 the owner's, 3 the agency's). SQLite cannot change a column's check,
-- so the table is rebuilt with the same rows.
CREATE TABLE income_credits_0120 (
    user_id   TEXT    NOT NULL,
    id        INTEGER NOT NULL,
    order_id  TEXT    NOT NULL,
    sender    TEXT    NOT NULL,
    recipient TEXT    NOT NULL,
    part      INTEGER NOT NULL CHECK (part IN (1, 2, 3, 4)),
    amount    INTEGER NOT NULL CHECK (amount >= 0),
    PRIMARY KEY (user_id, id)
) STRICT, WITHOUT ROWID;

INSERT INTO income_credits_0120 (user_id, id, order_id, sender, recipient, part, amount)
SELECT user_id, id, order_id, sender, recipient, part, amount FROM income_credits;

DROP TABLE income_credits;

ALTER TABLE income_credits_0120 RENAME TO income_credits;

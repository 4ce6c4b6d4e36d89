-- Gift value and room turnover (`GiftTallies`), counted from applied gifts by a consumer of
-- the durable facts.
--
-- A gift is counted once by its order: `gift_tally_orders` keeps the key of each order
-- counted, under the UTC day of its fact (`key_day`, days since 1970-01-01) so that keys are
-- forgotten a day at a time once no consumer can be handed their facts again. Of two counts
-- of one order at once, one inserts its key and the other finds it.
CREATE TABLE gift_tally_orders (
    key_day  INT         NOT NULL,
    sender   VARCHAR(64) NOT NULL,
    order_id VARCHAR(64) NOT NULL,
    PRIMARY KEY (key_day, sender, order_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- What each user sent and received, by period: 0 all time (number 0), 1 a day (days since
-- 1970-01-01), 2 a week (weeks, Monday first, since the week of 1970-01-01), 3 a month
-- (months since January 1970), in the billing time zone.
CREATE TABLE gift_values (
    user_id  VARCHAR(64) NOT NULL,
    period   TINYINT     NOT NULL,
    number   INT         NOT NULL,
    sent     BIGINT      NOT NULL,
    received BIGINT      NOT NULL,
    PRIMARY KEY (user_id, period, number),
    CONSTRAINT gift_values_period CHECK (period IN (0, 1, 2, 3)),
    CONSTRAINT gift_values_not_negative CHECK (sent >= 0 AND received >= 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Each room's turnover of each day, and its settlements. A turnover is `pending` (a column the
-- server computes) until it has a settlement, which is paid (`owed` 0), and nothing was
-- counted beyond what that settled on (`settled_turnover`). A settlement
-- is recorded first (`settlements` one more, what it `owed`), then paid, then marked paid
-- (`owed` back to 0). `reward` is every reward recorded for the day; `owner`, `share_bp`,
-- `billing_version` and `settled_at` are the latest settlement's (NULL before the first).
CREATE TABLE room_turnovers (
    day              INT         NOT NULL,
    room_id          VARCHAR(64) NOT NULL,
    turnover         BIGINT      NOT NULL,
    gifts            BIGINT      NOT NULL,
    settlements      INT         NOT NULL DEFAULT 0,
    settled_turnover BIGINT      NOT NULL DEFAULT 0,
    owed             BIGINT      NOT NULL DEFAULT 0,
    reward           BIGINT      NOT NULL DEFAULT 0,
    owner            VARCHAR(64) NULL,
    share_bp         INT         NULL,
    billing_version  BIGINT      NULL,
    settled_at       BIGINT      NULL,
    pending          TINYINT AS (settlements = 0 OR turnover > settled_turnover OR owed > 0)
                     STORED,
    PRIMARY KEY (day, room_id),
    KEY room_turnovers_pending (pending, day, room_id),
    CONSTRAINT room_turnovers_not_negative
        CHECK (turnover >= 0 AND gifts >= 0 AND settlements >= 0 AND owed >= 0 AND reward >= 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Income gets a part of its own for the owner's reward of a closed day's turnover: part 4
-- (1 the recipient's, 2 the owner's, 3 the agency's).
ALTER TABLE income_credits
    DROP CONSTRAINT income_credits_part,
    ADD CONSTRAINT income_credits_part CHECK (part IN (1, 2, 3, 4));

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

-- Each room's turnover of each day, and its settlement once the day closed (the columns
-- after `gifts`, all NULL until then).
CREATE TABLE room_turnovers (
    day             INT         NOT NULL,
    room_id         VARCHAR(64) NOT NULL,
    turnover        BIGINT      NOT NULL,
    gifts           BIGINT      NOT NULL,
    settled_at      BIGINT      NULL,
    owner           VARCHAR(64) NULL,
    share_bp        INT         NULL,
    reward          BIGINT      NULL,
    billing_version BIGINT      NULL,
    PRIMARY KEY (day, room_id),
    KEY room_turnovers_unsettled (settled_at, day, room_id),
    CONSTRAINT room_turnovers_not_negative CHECK (turnover >= 0 AND gifts >= 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Income gets a part of its own for the owner's reward of a closed day's turnover: part 4
-- (1 the recipient's, 2 the owner's, 3 the agency's).
ALTER TABLE income_credits DROP CONSTRAINT income_credits_part;

ALTER TABLE income_credits
    ADD CONSTRAINT income_credits_part CHECK (part IN (1, 2, 3, 4));

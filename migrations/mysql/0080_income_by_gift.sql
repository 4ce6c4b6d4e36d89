-- Income stored by gift (`IncomeLedger`): half the rows and no secondary index.
--
-- Before, each credited part was a row of `income_entries` with the gift's fields (room, gift,
-- billing version, time) in every row, a unique index of its key (sender, order id,
-- recipient, part) and an index by user. Now a gift's fields are stored once, in
-- `income_gifts` (one row per order of a sender), with the keys of the parts credited
-- (`parts`, one `part recipient` a line). Each credited part is one row of `income_credits`,
-- keyed by (user, position): a user's page is one range of it. Positions come from the one
-- row of `income_sequence`, which every credit locks first (`SELECT ... FOR UPDATE`): credits
-- run one at a time, so one that reads an order's row sees every part credited before it.
CREATE TABLE income_gifts (
    order_id        VARCHAR(64) NOT NULL,
    sender          VARCHAR(64) NOT NULL,
    room_id         VARCHAR(64) NOT NULL,
    gift_id         VARCHAR(64) NOT NULL,
    billing_version BIGINT      NOT NULL,
    credited_at     BIGINT      NOT NULL,
    parts           TEXT        NOT NULL,
    PRIMARY KEY (order_id, sender)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- `part`: 1 the recipient's, 2 the owner's, 3 the agency's.
CREATE TABLE income_credits (
    user_id   VARCHAR(64) NOT NULL,
    id        BIGINT      NOT NULL,
    order_id  VARCHAR(64) NOT NULL,
    sender    VARCHAR(64) NOT NULL,
    recipient VARCHAR(64) NOT NULL,
    part      TINYINT     NOT NULL,
    amount    BIGINT      NOT NULL,
    PRIMARY KEY (user_id, id),
    CONSTRAINT income_credits_part CHECK (part IN (1, 2, 3)),
    CONSTRAINT income_credits_amount_not_negative CHECK (amount >= 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE income_sequence (
    one     TINYINT NOT NULL,
    last_id BIGINT  NOT NULL,
    PRIMARY KEY (one),
    CONSTRAINT income_sequence_one_row CHECK (one = 1)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

INSERT INTO income_gifts
    (order_id, sender, room_id, gift_id, billing_version, credited_at, parts)
SELECT order_id, sender, MIN(room_id), MIN(gift_id), MIN(billing_version), MIN(credited_at),
       GROUP_CONCAT(CONCAT(part, ' ', recipient) ORDER BY part, recipient SEPARATOR '\n')
FROM income_entries
GROUP BY order_id, sender;

INSERT INTO income_credits (user_id, id, order_id, sender, recipient, part, amount)
SELECT user_id, id, order_id, sender, recipient,
       CASE part WHEN 'recipient' THEN 1 WHEN 'owner' THEN 2 ELSE 3 END, amount
FROM income_entries;

INSERT INTO income_sequence (one, last_id)
SELECT 1, COALESCE(MAX(id), 0) FROM income_entries;

DROP TABLE income_entries;

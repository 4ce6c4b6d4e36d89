-- Income (`IncomeLedger`): what gifts paid people, a balance of its own per user, apart from
-- coins. One entry per (sender, order id, recipient, part), the idempotency key: crediting an
-- entry whose key is taken changes nothing (the insert waits for a concurrent writer of the
-- key and then finds it taken). An entry and its balance change are written in one
-- transaction. `id` pages a user's entries newest first.
CREATE TABLE income_accounts (
    user_id VARCHAR(64) NOT NULL,
    balance BIGINT      NOT NULL,
    PRIMARY KEY (user_id),
    CONSTRAINT income_accounts_balance_not_negative CHECK (balance >= 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE income_entries (
    id              BIGINT      NOT NULL AUTO_INCREMENT,
    sender          VARCHAR(64) NOT NULL,
    order_id        VARCHAR(64) NOT NULL,
    recipient       VARCHAR(64) NOT NULL,
    part            VARCHAR(16) NOT NULL,
    user_id         VARCHAR(64) NOT NULL,
    amount          BIGINT      NOT NULL,
    room_id         VARCHAR(64) NOT NULL,
    gift_id         VARCHAR(64) NOT NULL,
    billing_version BIGINT      NOT NULL,
    credited_at     BIGINT      NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY income_entries_key (sender, order_id, recipient, part),
    KEY income_entries_by_user (user_id, id),
    CONSTRAINT income_entries_part CHECK (part IN ('recipient', 'owner', 'agency')),
    CONSTRAINT income_entries_amount_not_negative CHECK (amount >= 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

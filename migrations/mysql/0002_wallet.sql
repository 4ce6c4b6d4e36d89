-- The wallet ledger (adapters-mysql `wallet.rs`): balances, and one entry per operation.
--
-- Money is BIGINT coins. A balance can never go below zero: the debit takes coins with an
-- UPDATE whose WHERE clause demands the funds, and the CHECK below refuses any other
-- statement that would overdraw an account (MariaDB enforces CHECK since 10.2, MySQL since
-- 8.0.16). Operation ids are built from ids (an order id and a sender, a room, a rocket and a
-- user), hence longer than an id, like the op ids of room_payouts.

CREATE TABLE wallet_accounts (
    user_id VARCHAR(64) NOT NULL,
    balance BIGINT      NOT NULL,
    PRIMARY KEY (user_id),
    CONSTRAINT wallet_accounts_balance_not_negative CHECK (balance >= 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- (kind, op_id) is the idempotency key: a debit, an admin credit, a refund, a lucky reward and
-- a rocket reward of one op id are five operations. An entry records the operation's first
-- answer (`balance_after`); a voided debit is a 'debit' entry in state 'void' without user,
-- amount or answer, so a late debit with its id finds the key taken.
CREATE TABLE wallet_entries (
    kind          VARCHAR(16)  NOT NULL,
    op_id         VARCHAR(255) NOT NULL,
    state         VARCHAR(8)   NOT NULL,
    user_id       VARCHAR(64)  NULL,
    amount        BIGINT       NULL,
    balance_after BIGINT       NULL,
    PRIMARY KEY (kind, op_id),
    CONSTRAINT wallet_entries_kind
        CHECK (kind IN ('debit', 'credit_admin', 'refund', 'lucky_reward', 'rocket_reward')),
    CONSTRAINT wallet_entries_state CHECK (state IN ('done', 'void')),
    CONSTRAINT wallet_entries_amount_not_negative CHECK (amount >= 0),
    CONSTRAINT wallet_entries_balance_after_not_negative CHECK (balance_after >= 0),
    CONSTRAINT wallet_entries_done_has_an_answer
        CHECK ((state = 'done') = (user_id IS NOT NULL AND amount IS NOT NULL
                                   AND balance_after IS NOT NULL)),
    CONSTRAINT wallet_entries_void_is_a_debit CHECK (state = 'done' OR kind = 'debit')
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

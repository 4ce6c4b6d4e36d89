-- The leaderboards' rewards (`BoardRewards`): the reward tables by version, as operators change
-- them, and each closed period's payouts, recorded once and then marked paid; and the wallet
-- credit they are paid with.

-- The reward tables, one row per version, never changed once written; the newest is current.
-- A new version is inserted only when the newest stored one is still the version before it
-- (an INSERT ... SELECT whose condition reads the newest row), and the primary key refuses a
-- second row of one version: of two nodes that change the tables at once, one wins. `body` is
-- the whole `RewardTables` as JSON.
CREATE TABLE board_reward_tables (
    version BIGINT     NOT NULL,
    body    MEDIUMTEXT NOT NULL,
    PRIMARY KEY (version),
    CONSTRAINT board_reward_tables_version_positive CHECK (version >= 1)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- One row per board period whose payouts were recorded, also when it paid nobody: its key
-- refuses a second record (of two records of one period at once, the second waits on the
-- first's key and then finds it taken). A board is keyed as in `board_entries` (migration
-- 0130): its period (1 a day, 2 a week, 3 a month) and that period's `number`, its kind
-- (1 senders, 2 receivers, 3 rooms) and its room ('' for the whole app; a board of rooms is
-- only of the whole app). `recorded_at` is when the payouts were recorded (ms since
-- 1970-01-01 UTC).
CREATE TABLE board_reward_periods (
    period      TINYINT     NOT NULL,
    number      BIGINT      NOT NULL,
    kind        TINYINT     NOT NULL,
    room_id     VARCHAR(64) NOT NULL,
    recorded_at BIGINT      NOT NULL,
    PRIMARY KEY (period, number, kind, room_id),
    CONSTRAINT board_reward_periods_period CHECK (period IN (1, 2, 3)),
    CONSTRAINT board_reward_periods_kind CHECK (kind IN (1, 2, 3)),
    CONSTRAINT board_reward_periods_rooms_of_the_app CHECK (kind <> 3 OR room_id = '')
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- One row per rank a recorded period pays, keyed by its board (as its period's row) and rank
-- (`payout_rank`: RANK is a reserved word of MySQL 8): who held the rank (`subject`: a user's
-- id, or a room's on a board of rooms) with what score, who is paid (`user_id`: the user, or
-- the room's owner), how many coins, under which version of the reward tables, and when it was
-- paid (`paid_at`, NULL while it is owed). `recorded_at` repeats its period's, so that the
-- payouts owed are listed in order off one index of this table, without a join or a sort.
--
-- `owed_since` is `recorded_at` while the payout is owed and NULL once it is paid, computed by
-- the server on every write (as `gift_orders.pending_at`, migration 0003): its index holds the
-- paid payouts under NULL, before every time, and the owed ones in the order they are paid
-- (recorded earliest first, then by period, number, kind, room and rank), so a page of them
-- is the start of the range `owed_since IS NOT NULL` and never walks the paid ones. STORED
-- rather than VIRTUAL: the value sits in the row, and nothing depends on how either server
-- maintains an index over a virtual column.
CREATE TABLE board_payouts (
    period          TINYINT      NOT NULL,
    number          BIGINT       NOT NULL,
    kind            TINYINT      NOT NULL,
    room_id         VARCHAR(64)  NOT NULL,
    payout_rank     INT UNSIGNED NOT NULL,
    subject         VARCHAR(64)  NOT NULL,
    score           BIGINT       NOT NULL,
    user_id         VARCHAR(64)  NOT NULL,
    coins           BIGINT       NOT NULL,
    rewards_version BIGINT       NOT NULL,
    recorded_at     BIGINT       NOT NULL,
    paid_at         BIGINT       NULL,
    owed_since      BIGINT AS (IF(paid_at IS NULL, recorded_at, NULL)) STORED,
    PRIMARY KEY (period, number, kind, room_id, payout_rank),
    KEY board_payouts_owed (owed_since, period, number, kind, room_id, payout_rank),
    CONSTRAINT board_payouts_rank_positive CHECK (payout_rank >= 1),
    CONSTRAINT board_payouts_coins_positive CHECK (coins > 0),
    CONSTRAINT board_payouts_rewards_version CHECK (rewards_version >= 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The ledger's entries gain the kind 'board_reward' (`CreditKind::BoardReward`, a board's
-- reward credited by the reward pass), as migration 0120 gave income a part of its own.
-- MariaDB adds a CHECK only by copying the table (ALGORITHM=COPY, LOCK=SHARED: writes to the
-- wallet wait until the copy ends): on a large ledger, migrate in a quiet hour.
ALTER TABLE wallet_entries
    DROP CONSTRAINT wallet_entries_kind,
    ADD CONSTRAINT wallet_entries_kind
        CHECK (kind IN ('debit', 'credit_admin', 'refund', 'lucky_reward', 'rocket_reward',
                        'board_reward'));

-- The leaderboards' rewards (`BoardRewards`): the reward tables by version, as operators change
-- them, and each closed period's payouts, recorded once and then marked paid; and the wallet
-- credit they are paid with.

-- The reward tables, one row per version, never changed once written; the newest is current.
-- A new version is written only when the newest stored one is still the version before it
-- (the single writer checks and inserts in one statement; the primary key refuses a second
-- row of one version). `body` is the whole `RewardTables` as JSON.
CREATE TABLE board_reward_tables (
    version INTEGER NOT NULL PRIMARY KEY,
    body    TEXT    NOT NULL,
    CHECK (version >= 1)
) STRICT;

-- One row per board period whose payouts were recorded, also when it paid nobody: its key
-- refuses a second record. A board is keyed as in `board_entries` (migration 0130): its
-- period (`BoardPeriod::code`) and that period's `number`, its kind (`BoardKind::code`) and
-- its room ('' for the whole app; a board of rooms is only of the whole app). `recorded_at`
-- is when the payouts were recorded (ms since the epoch).
CREATE TABLE board_reward_periods (
    period      INTEGER NOT NULL CHECK (period BETWEEN 1 AND 3),
    number      INTEGER NOT NULL,
    kind        INTEGER NOT NULL CHECK (kind BETWEEN 1 AND 3),
    room_id     TEXT    NOT NULL,
    recorded_at INTEGER NOT NULL,
    PRIMARY KEY (period, number, kind, room_id),
    CHECK (kind <> 3 OR room_id = '')
) STRICT, WITHOUT ROWID;

-- One row per rank a recorded period pays: who held the rank (`subject`: a user's id, or a
-- room's on a board of rooms) with what score, who is paid (`user_id`: the user, or the
-- room's owner), how many coins, under which version of the reward tables, and when it was
-- paid (`paid_at`, NULL while it is owed). `recorded_at` repeats its period's, so that the
-- unpaid payouts are listed in order off one index.
CREATE TABLE board_payouts (
    period          INTEGER NOT NULL,
    number          INTEGER NOT NULL,
    kind            INTEGER NOT NULL,
    room_id         TEXT    NOT NULL,
    rank            INTEGER NOT NULL CHECK (rank BETWEEN 1 AND 4294967295),
    subject         TEXT    NOT NULL,
    score           INTEGER NOT NULL,
    user_id         TEXT    NOT NULL,
    coins           INTEGER NOT NULL CHECK (coins > 0),
    rewards_version INTEGER NOT NULL CHECK (rewards_version >= 0),
    recorded_at     INTEGER NOT NULL,
    paid_at         INTEGER,
    PRIMARY KEY (period, number, kind, room_id, rank),
    FOREIGN KEY (period, number, kind, room_id)
        REFERENCES board_reward_periods (period, number, kind, room_id)
) STRICT, WITHOUT ROWID;

-- The payouts still owed, in the order they are paid (recorded earliest first, then by
-- period, number, kind, room and rank): a page of them reads the start of this index,
-- unsorted, and a payout marked paid leaves it.
CREATE INDEX board_payouts_unpaid
ON board_payouts (recorded_at, period, number, kind, room_id, rank) WHERE paid_at IS NULL;

-- The ledger's entries gain the kind 'board_reward' (`CreditKind::BoardReward`). SQLite cannot
-- change a CHECK in place, so the table is rebuilt as migration 0006 made it (entries copied
-- as they are, conditions as comparisons rather than IN lists) and its trigger made again.
CREATE TABLE wallet_entries_next (
    op_id         TEXT    NOT NULL,
    kind          TEXT    NOT NULL
        CHECK (kind = 'debit' OR kind = 'credit_admin' OR kind = 'refund'
               OR kind = 'lucky_reward' OR kind = 'rocket_reward' OR kind = 'board_reward'),
    state         TEXT    NOT NULL CHECK (state = 'done' OR state = 'void'),
    user_id       TEXT    REFERENCES wallet_accounts (user_id),
    amount        INTEGER CHECK (amount >= 0),
    balance_after INTEGER,
    PRIMARY KEY (op_id, kind),
    CHECK ((state = 'done') = (user_id IS NOT NULL AND amount IS NOT NULL
                               AND balance_after IS NOT NULL))
) STRICT, WITHOUT ROWID;

INSERT INTO wallet_entries_next (op_id, kind, state, user_id, amount, balance_after)
SELECT op_id, kind, state, user_id, amount, balance_after FROM wallet_entries;

DROP TABLE wallet_entries;
ALTER TABLE wallet_entries_next RENAME TO wallet_entries;

-- As in the first migration: balances move only through entries.
CREATE TRIGGER wallet_entries_apply AFTER INSERT ON wallet_entries WHEN NEW.state = 'done'
BEGIN
    INSERT INTO wallet_accounts (user_id, balance) VALUES (NEW.user_id, 0)
    ON CONFLICT (user_id) DO NOTHING;
    UPDATE wallet_accounts
    SET balance = balance + CASE NEW.kind WHEN 'debit' THEN -NEW.amount ELSE NEW.amount END
    WHERE user_id = NEW.user_id;
END;

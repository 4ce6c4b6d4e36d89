-- Conditions that SQLite checks on every write of a gift, as comparisons instead of IN lists:
-- SQLite builds an IN list of three or more values into a temporary b-tree each time it
-- evaluates it (opening, filling and closing it), and these run several times per gift.
-- Nothing else changes: the same rows are indexed and the same values allowed.

-- The unfinished orders' index: its condition is evaluated on every insert and update of an
-- order, for the old row and the new. The recovery query names the same three comparisons,
-- so the planner still uses the index.
DROP INDEX gift_orders_unfinished;
CREATE INDEX gift_orders_unfinished ON gift_orders (created_at, order_id, sender)
    WHERE status <> 'COMPLETED' AND status <> 'FAILED' AND status <> 'COMPENSATED';

-- The ledger's entries: the kind's CHECK runs on every entry. SQLite cannot change a CHECK in
-- place, so the table is rebuilt (entries copied as they are) and its trigger made again.
CREATE TABLE wallet_entries_checked (
    op_id         TEXT    NOT NULL,
    kind          TEXT    NOT NULL
        CHECK (kind = 'debit' OR kind = 'credit_admin' OR kind = 'refund'
               OR kind = 'lucky_reward' OR kind = 'rocket_reward'),
    state         TEXT    NOT NULL CHECK (state = 'done' OR state = 'void'),
    user_id       TEXT    REFERENCES wallet_accounts (user_id),
    amount        INTEGER CHECK (amount >= 0),
    balance_after INTEGER,
    PRIMARY KEY (op_id, kind),
    CHECK ((state = 'done') = (user_id IS NOT NULL AND amount IS NOT NULL
                               AND balance_after IS NOT NULL))
) STRICT, WITHOUT ROWID;

INSERT INTO wallet_entries_checked (op_id, kind, state, user_id, amount, balance_after)
SELECT op_id, kind, state, user_id, amount, balance_after FROM wallet_entries;

DROP TABLE wallet_entries;
ALTER TABLE wallet_entries_checked RENAME TO wallet_entries;

-- As in the first migration: balances move only through entries.
CREATE TRIGGER wallet_entries_apply AFTER INSERT ON wallet_entries WHEN NEW.state = 'done'
BEGIN
    INSERT INTO wallet_accounts (user_id, balance) VALUES (NEW.user_id, 0)
    ON CONFLICT (user_id) DO NOTHING;
    UPDATE wallet_accounts
    SET balance = balance + CASE NEW.kind WHEN 'debit' THEN -NEW.amount ELSE NEW.amount END
    WHERE user_id = NEW.user_id;
END;

-- Income (`IncomeLedger`): what gifts paid people, a balance of its own per user, apart from
-- coins. One entry per (sender, order id, recipient, part), the idempotency key: crediting an
-- entry whose key is taken changes nothing. An entry and its balance change are written in
-- one transaction. `id` rises with every entry and pages a user's entries newest first.
CREATE TABLE income_accounts (
    user_id TEXT    NOT NULL PRIMARY KEY,
    balance INTEGER NOT NULL CHECK (balance >= 0)
) STRICT;

CREATE TABLE income_entries (
    id              INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    sender          TEXT    NOT NULL,
    order_id        TEXT    NOT NULL,
    recipient       TEXT    NOT NULL,
    part            TEXT    NOT NULL CHECK (part IN ('recipient', 'owner', 'agency')),
    user_id         TEXT    NOT NULL,
    amount          INTEGER NOT NULL CHECK (amount >= 0),
    room_id         TEXT    NOT NULL,
    gift_id         TEXT    NOT NULL,
    billing_version INTEGER NOT NULL,
    credited_at     INTEGER NOT NULL,
    UNIQUE (sender, order_id, recipient, part)
) STRICT;

CREATE INDEX income_entries_by_user ON income_entries (user_id, id);

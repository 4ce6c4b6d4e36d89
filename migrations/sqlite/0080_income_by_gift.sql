-- Income stored by gift (`IncomeLedger`): half the rows and indexes a paid gift wrote.
--
-- Before, each credited part was a row of `income_entries` with the gift's fields (room, gift,
-- billing version, time) in every row, a unique index of its key (sender, order id,
-- recipient, part) and an index by user: three B-tree entries a part, each holding the ids.
-- Now a gift's fields are stored once, in `income_gifts` (one row per order of a sender),
-- with the keys of the parts credited (`parts`, one `part recipient` a line): the single
-- writer reads that row to skip the parts credited already, so the key needs no index of
-- its own. Each credited part is one row of `income_credits`, keyed by (user, position): a
-- user's page is one range of it. Positions come from `income_sequence`, the last one given.
CREATE TABLE income_gifts (
    order_id        TEXT    NOT NULL,
    sender          TEXT    NOT NULL,
    room_id         TEXT    NOT NULL,
    gift_id         TEXT    NOT NULL,
    billing_version INTEGER NOT NULL,
    credited_at     INTEGER NOT NULL,
    parts           TEXT    NOT NULL,
    PRIMARY KEY (order_id, sender)
) STRICT, WITHOUT ROWID;

-- `part`: 1 the recipient's, 2 the owner's, 3 the agency's.
CREATE TABLE income_credits (
    user_id   TEXT    NOT NULL,
    id        INTEGER NOT NULL,
    order_id  TEXT    NOT NULL,
    sender    TEXT    NOT NULL,
    recipient TEXT    NOT NULL,
    part      INTEGER NOT NULL CHECK (part IN (1, 2, 3)),
    amount    INTEGER NOT NULL CHECK (amount >= 0),
    PRIMARY KEY (user_id, id)
) STRICT, WITHOUT ROWID;

CREATE TABLE income_sequence (
    one     INTEGER NOT NULL PRIMARY KEY CHECK (one = 1),
    last_id INTEGER NOT NULL
) STRICT;

INSERT INTO income_gifts
    (order_id, sender, room_id, gift_id, billing_version, credited_at, parts)
SELECT order_id, sender, MIN(room_id), MIN(gift_id), MIN(billing_version), MIN(credited_at),
       group_concat(part || ' ' || recipient, char(10))
FROM income_entries
GROUP BY order_id, sender;

INSERT INTO income_credits (user_id, id, order_id, sender, recipient, part, amount)
SELECT user_id, id, order_id, sender, recipient,
       CASE part WHEN 'recipient' THEN 1 WHEN 'owner' THEN 2 ELSE 3 END, amount
FROM income_entries;

INSERT INTO income_sequence (one, last_id)
SELECT 1, COALESCE(MAX(id), 0) FROM income_entries;

DROP TABLE income_entries;

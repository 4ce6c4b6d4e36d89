-- The recovery worker's query (`GiftOrders::list_unfinished`) reads unfinished orders only,
-- oldest first. `pending_at` is an order's creation time while it is unfinished and NULL once
-- it is COMPLETED, FAILED or COMPENSATED, computed by the server on every write: its index
-- holds finished orders under NULL, before every time, so a range of times starts at the
-- oldest unfinished order and never walks the finished ones (the SQLite schema's partial
-- index `gift_orders_unfinished` does the same). STORED rather than VIRTUAL: the value sits in
-- the row, and nothing depends on how either server maintains an index over a virtual column.
-- The index by creation time of every order served that query alone and goes.
ALTER TABLE gift_orders
    ADD COLUMN pending_at BIGINT
        AS (IF(status IN ('COMPLETED', 'FAILED', 'COMPENSATED'), NULL, created_at)) STORED,
    ADD KEY gift_orders_unfinished (pending_at, order_id, sender),
    DROP KEY gift_orders_by_age;

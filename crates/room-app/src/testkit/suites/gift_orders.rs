//! The conformance suite of [`GiftOrders`]: idempotent creation, updates conditional on the
//! stored status, and the recovery worker's list of unfinished orders.

use std::future::Future;
use std::sync::Arc;

use room_domain::{Coins, GiftOrder, GiftScope, OrderKeys, OrderStatus, UserId};

use super::fixtures::{at, expect_err, ok, order, order_id, order_in, order_of, room, same, user};
use crate::Error;
use crate::ports::{GiftOrders, OrderCursor};

/// Runs every [`GiftOrders`] check, each against a fresh store from `fresh`.
pub async fn gift_orders_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: GiftOrders + 'static,
{
    create_or_get_is_idempotent(fresh().await).await;
    one_order_id_of_two_senders_is_two_orders(fresh().await).await;
    an_order_stored_before_sender_scoping_reads_back(fresh().await).await;
    every_field_round_trips(fresh().await).await;
    update_is_conditional_on_status(fresh().await).await;
    list_unfinished_filters_and_orders(fresh().await).await;
    list_unfinished_pages_by_cursor(fresh().await).await;
    list_unfinished_pages_through_one_order_id_of_many_senders(fresh().await).await;
}

fn alice() -> UserId {
    user("alice")
}

async fn create_or_get_is_idempotent<S: GiftOrders>(store: Arc<S>) {
    let a = room("room-a");
    same(
        ok(
            GiftOrders::get(&*store, &alice(), &order_id("o-1")).await,
            "get",
        ),
        None,
        "an unknown order is absent",
    );
    let first = order("o-1", &a, at(0));
    same(
        ok(store.create_or_get(&first).await, "create_or_get"),
        (first.clone(), true),
        "the first call creates",
    );
    let mut other_body = order("o-1", &room("room-b"), at(50));
    other_body.count = 9;
    same(
        ok(store.create_or_get(&other_body).await, "create_or_get"),
        (first.clone(), false),
        "a repeated id returns the stored order and false",
    );
    same(
        ok(
            GiftOrders::get(&*store, &alice(), &order_id("o-1")).await,
            "get",
        ),
        Some(first),
        "the stored order is unchanged",
    );
}

async fn one_order_id_of_two_senders_is_two_orders<S: GiftOrders>(store: Arc<S>) {
    let a = room("room-a");
    let alices = order_of("alice", "o-1", &a, at(0));
    let mut bobs = order_of("bob", "o-1", &a, at(0));
    bobs.recipients = vec![user("alice")];
    same(
        ok(store.create_or_get(&alices).await, "create_or_get"),
        (alices.clone(), true),
        "alice's order is created",
    );
    same(
        ok(
            GiftOrders::get(&*store, &user("bob"), &order_id("o-1")).await,
            "get",
        ),
        None,
        "another sender's order id is not bob's",
    );
    same(
        ok(store.create_or_get(&bobs).await, "create_or_get"),
        (bobs.clone(), true),
        "bob's order with the same id is another order",
    );
    let debited = order_in(&bobs, OrderStatus::Debited);
    ok(store.update(&debited, OrderStatus::Pending).await, "update");
    same(
        ok(
            GiftOrders::get(&*store, &user("bob"), &order_id("o-1")).await,
            "get",
        ),
        Some(debited),
        "bob's order moved on",
    );
    same(
        ok(
            GiftOrders::get(&*store, &alice(), &order_id("o-1")).await,
            "get",
        ),
        Some(alices.clone()),
        "alice's order did not",
    );
    let failed = order_in(&alices, OrderStatus::Failed);
    ok(
        store.update(&failed, OrderStatus::Pending).await,
        "alice's update expects her order's status, not bob's",
    );
    let listed = ok(
        store.list_unfinished(at(10), None, 10).await,
        "list_unfinished",
    );
    same(
        listed.iter().map(|o| o.sender.clone()).collect::<Vec<_>>(),
        vec![user("bob")],
        "each sender's order is listed on its own",
    );
}

async fn an_order_stored_before_sender_scoping_reads_back<S: GiftOrders>(store: Arc<S>) {
    let mut old = order("o-old", &room("room-a"), at(0));
    old.keys = OrderKeys::OrderId;
    ok(store.create_or_get(&old).await, "create_or_get");
    same(
        ok(
            GiftOrders::get(&*store, &alice(), &old.order_id).await,
            "get",
        ),
        Some(old),
        "an order named by its order id alone keeps its keys",
    );
}

async fn every_field_round_trips<S: GiftOrders>(store: Arc<S>) {
    let a = room("room-a");
    for (i, status) in [
        OrderStatus::Pending,
        OrderStatus::Debited,
        OrderStatus::Applied,
        OrderStatus::Completed,
        OrderStatus::Failed,
        OrderStatus::Compensated,
    ]
    .into_iter()
    .enumerate()
    {
        let o = order_in(&order(&format!("o-{i}"), &a, at(i as i64)), status);
        ok(store.create_or_get(&o).await, "create_or_get");
        same(
            ok(GiftOrders::get(&*store, &alice(), &o.order_id).await, "get"),
            Some(o),
            "an order reads back with every field",
        );
    }
    // A batch gift: its scope when placed; whom it reached and its partial refund once
    // applied, kept by an update too.
    let mut batch = order("batch", &a, at(10));
    batch.scope = Some(GiftScope::AllRoom);
    ok(store.create_or_get(&batch).await, "create_or_get");
    same(
        ok(
            GiftOrders::get(&*store, &alice(), &batch.order_id).await,
            "get",
        ),
        Some(batch.clone()),
        "a batch order reads back with its scope",
    );
    let mut applied = order_in(&batch, OrderStatus::Applied);
    applied.reached = Some(vec![batch.recipients[1].clone()]);
    applied.partial_refund = Coins(30);
    ok(store.update(&applied, OrderStatus::Pending).await, "update");
    same(
        ok(
            GiftOrders::get(&*store, &alice(), &batch.order_id).await,
            "get",
        ),
        Some(applied.clone()),
        "an applied batch order reads back with whom it reached and its refund",
    );
    let mut refunded = applied.clone();
    refunded.partial_refunded = true;
    refunded.status = OrderStatus::Completed;
    ok(
        store.update(&refunded, OrderStatus::Applied).await,
        "update",
    );
    same(
        ok(
            GiftOrders::get(&*store, &alice(), &batch.order_id).await,
            "get",
        ),
        Some(refunded),
        "a refunded batch order reads back",
    );
}

async fn update_is_conditional_on_status<S: GiftOrders>(store: Arc<S>) {
    let a = room("room-a");
    let pending = order("o-1", &a, at(0));
    ok(store.create_or_get(&pending).await, "create_or_get");
    let debited = order_in(&pending, OrderStatus::Debited);
    ok(
        store.update(&debited, OrderStatus::Pending).await,
        "update from the expected status",
    );
    same(
        ok(
            GiftOrders::get(&*store, &alice(), &pending.order_id).await,
            "get",
        ),
        Some(debited.clone()),
        "the update replaced the order",
    );
    let failed = order_in(&pending, OrderStatus::Failed);
    expect_err!(
        store.update(&failed, OrderStatus::Pending).await,
        Error::Conflict(_),
        "an update expecting a status the order left"
    );
    same(
        ok(
            GiftOrders::get(&*store, &alice(), &pending.order_id).await,
            "get",
        ),
        Some(debited),
        "a conflicting update changes nothing",
    );
    expect_err!(
        store
            .update(&order("o-none", &a, at(0)), OrderStatus::Pending)
            .await,
        Error::NotFound(_),
        "an update of an order that does not exist"
    );
    same(
        ok(
            GiftOrders::get(&*store, &alice(), &order_id("o-none")).await,
            "get",
        ),
        None,
        "a failed update does not create the order",
    );
}

async fn list_unfinished_filters_and_orders<S: GiftOrders>(store: Arc<S>) {
    let a = room("room-a");
    let make = |id: &str, ms: i64, status: OrderStatus| -> GiftOrder {
        order_in(&order(id, &a, at(ms)), status)
    };
    let orders = [
        make("o-late", 900, OrderStatus::Pending),
        make("o-done", 100, OrderStatus::Completed),
        make("o-failed", 110, OrderStatus::Failed),
        make("o-comp", 120, OrderStatus::Compensated),
        make("o-applied", 300, OrderStatus::Applied),
        make("o-b", 200, OrderStatus::Pending),
        make("o-a", 200, OrderStatus::Debited),
        make("o-first", 50, OrderStatus::Pending),
        make("o-edge", 500, OrderStatus::Pending),
    ];
    for o in &orders {
        ok(store.create_or_get(o).await, "create_or_get");
    }
    let listed = ok(
        store.list_unfinished(at(500), None, 100).await,
        "list_unfinished",
    );
    let names: Vec<&str> = listed.iter().map(|o| o.order_id.as_str()).collect();
    same(
        names,
        vec!["o-first", "o-a", "o-b", "o-applied"],
        "unfinished orders created before the cut-off, oldest first (ties by id)",
    );
    same(
        listed[0].clone(),
        orders[7].clone(),
        "listed orders are whole",
    );
    let limited = ok(
        store.list_unfinished(at(500), None, 2).await,
        "list_unfinished",
    );
    same(
        limited
            .iter()
            .map(|o| o.order_id.as_str())
            .collect::<Vec<_>>(),
        vec!["o-first", "o-a"],
        "limit keeps the oldest",
    );
    same(
        ok(
            store.list_unfinished(at(50), None, 100).await,
            "list_unfinished",
        ),
        Vec::new(),
        "nothing created before the oldest order",
    );
    // An order that moves to a terminal status leaves the list.
    let done = order_in(&orders[7], OrderStatus::Completed);
    ok(store.update(&done, OrderStatus::Pending).await, "update");
    let names: Vec<String> = ok(
        store.list_unfinished(at(10_000), None, 100).await,
        "list_unfinished",
    )
    .iter()
    .map(|o| o.order_id.to_string())
    .collect();
    same(
        names,
        vec!["o-a", "o-b", "o-applied", "o-edge", "o-late"]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>(),
        "a finished order is no longer listed",
    );
}

async fn list_unfinished_pages_by_cursor<S: GiftOrders>(store: Arc<S>) {
    let a = room("room-a");
    // Eleven unfinished orders, several created in the same millisecond (their ids break the
    // tie), among finished ones and one created after the cut-off.
    let mut expected = Vec::new();
    for (i, ms) in [0, 10, 10, 10, 20, 30, 30, 40, 50, 60, 60]
        .into_iter()
        .enumerate()
    {
        let id = format!("o-{}", 20 - i);
        let status = [
            OrderStatus::Pending,
            OrderStatus::Debited,
            OrderStatus::Applied,
        ][i % 3];
        let o = order_in(&order(&id, &a, at(ms)), status);
        ok(store.create_or_get(&o).await, "create_or_get");
        expected.push(o);
    }
    for (i, ms) in [0, 10, 30, 60].into_iter().enumerate() {
        let done = order_in(
            &order(&format!("done-{i}"), &a, at(ms)),
            OrderStatus::Completed,
        );
        ok(store.create_or_get(&done).await, "create_or_get");
    }
    ok(
        store.create_or_get(&order("o-late", &a, at(1_000))).await,
        "create_or_get",
    );
    expected.sort_by_key(OrderCursor::of);

    let mut seen: Vec<GiftOrder> = Vec::new();
    let mut after = None;
    let mut pages = 0;
    loop {
        let page = ok(
            store.list_unfinished(at(500), after.clone(), 4).await,
            "list_unfinished",
        );
        pages += 1;
        assert!(pages <= 4, "paging never ends");
        assert!(page.len() <= 4, "a page holds at most the limit");
        if pages == 1 {
            // An order of the first page finishes before the next page is read: the cursor,
            // not an offset, says where the next page starts, so nothing is skipped.
            let finished = order_in(&page[1], OrderStatus::Completed);
            ok(store.update(&finished, page[1].status).await, "update");
        }
        let full = page.len() == 4;
        after = page.last().map(OrderCursor::of);
        seen.extend(page);
        if !full {
            break;
        }
    }
    same(pages, 3, "eleven orders in pages of four");
    same(
        seen,
        expected,
        "paging lists every unfinished order exactly once, in cursor order",
    );
    same(
        ok(
            store.list_unfinished(at(500), after, 4).await,
            "list_unfinished",
        ),
        Vec::new(),
        "nothing after the last order",
    );
    // A cursor need not name a stored order: no order is `o-185`, which sorts between `o-18`
    // and `o-19` (both created at 10).
    let between = OrderCursor {
        created_at: at(10),
        order_id: order_id("o-185"),
        sender: alice(),
    };
    let names: Vec<String> = ok(
        store.list_unfinished(at(500), Some(between), 3).await,
        "list_unfinished",
    )
    .iter()
    .map(|o| o.order_id.to_string())
    .collect();
    same(
        names,
        vec!["o-19".to_owned(), "o-16".to_owned(), "o-14".to_owned()],
        "a page starts right after the cursor",
    );
}

async fn list_unfinished_pages_through_one_order_id_of_many_senders<S: GiftOrders>(store: Arc<S>) {
    let a = room("room-a");
    // Seven senders use the same order id in the same millisecond: the sender breaks the tie.
    let mut expected = Vec::new();
    for name in ["gus", "bob", "fay", "alice", "eve", "carl", "dan"] {
        let mut o = order_of(name, "o-same", &a, at(10));
        o.recipients = vec![user("zed")];
        ok(store.create_or_get(&o).await, "create_or_get");
        expected.push(o);
    }
    expected.sort_by_key(OrderCursor::of);
    let mut seen: Vec<GiftOrder> = Vec::new();
    let mut after = None;
    for _ in 0..4 {
        let page = ok(
            store.list_unfinished(at(500), after.clone(), 3).await,
            "list_unfinished",
        );
        let full = page.len() == 3;
        after = page.last().map(OrderCursor::of);
        seen.extend(page);
        if !full {
            break;
        }
    }
    same(
        seen.iter()
            .map(|o| o.sender.to_string())
            .collect::<Vec<_>>(),
        vec!["alice", "bob", "carl", "dan", "eve", "fay", "gus"]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>(),
        "orders with one id and creation time are listed once each, by sender",
    );
    same(seen, expected, "every order is listed whole");
}

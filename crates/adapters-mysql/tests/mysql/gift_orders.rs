//! Gift orders on MySQL: unfinished orders are read through an index of their own, the one
//! the recovery worker's query takes.

use room_app::ports::GiftOrders;
use room_domain::{
    ApplyGift, Coins, GiftId, GiftOrder, GiftSnapshot, OrderId, OrderStatus, Timestamp,
};
use sqlx::{AssertSqlSafe, Executor};

use crate::fixtures::{T0, fixture, room, user};

fn gift_order(sender: &str, id: &str, created_at: i64) -> GiftOrder {
    let apply = ApplyGift {
        order_id: OrderId::new(id).expect("valid order id"),
        sender: user(sender),
        recipients: vec![user("bob")],
        gift: GiftSnapshot {
            gift_id: GiftId::new("rose").expect("valid gift id"),
            price: Coins(10),
            heat: 10,
            fuel: 5,
            lucky: false,
            billing_version: None,
        },
        count: 1,
        lucky_draw: 0,
        scope: None,
    };
    GiftOrder::new(room("room-a"), &apply, Timestamp(T0.0 + created_at)).expect("total fits")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_orders_are_read_through_their_own_index() {
    let Some(f) = fixture("mysql::unfinished_index", |_| {}).await else {
        return;
    };
    let orders: Vec<GiftOrder> = (0..6)
        .map(|i| gift_order("alice", &format!("o-{i}"), i))
        .collect();
    for order in &orders {
        f.store.create_or_get(order).await.unwrap();
    }
    // Every status the saga writes, the last three finished.
    let statuses = [
        OrderStatus::Pending,
        OrderStatus::Debited,
        OrderStatus::Applied,
        OrderStatus::Completed,
        OrderStatus::Failed,
        OrderStatus::Compensated,
    ];
    for (order, status) in orders.iter().zip(statuses) {
        let mut moved = order.clone();
        moved.status = status;
        f.store.update(&moved, OrderStatus::Pending).await.unwrap();
    }

    let mut conn = f.database.connect().await;
    let pending_at: Vec<(String, Option<i64>)> =
        sqlx::query_as("SELECT order_id, pending_at FROM gift_orders ORDER BY order_id")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    let expected: Vec<(String, Option<i64>)> = orders
        .iter()
        .zip(statuses)
        .map(|(order, status)| {
            let at = (!status.is_terminal()).then_some(order.created_at.as_millis());
            (order.order_id.to_string(), at)
        })
        .collect();
    assert_eq!(
        pending_at, expected,
        "pending_at is the creation time of unfinished orders only"
    );

    let listed = f
        .store
        .list_unfinished(Timestamp(T0.0 + 100), None, 10)
        .await
        .unwrap();
    let listed: Vec<&str> = listed.iter().map(|o| o.order_id.as_str()).collect();
    assert_eq!(listed, ["o-0", "o-1", "o-2"]);

    // The range the recovery worker asks for is read from the index of unfinished orders,
    // not from the table's rows of every order: with many finished orders (the usual table),
    // the planner takes the index.
    let finished: Vec<String> = (0..2_000)
        .map(|i| format!("('f-{i}', 'room-a', 'alice', 'COMPLETED', {i}, '{{}}')"))
        .collect();
    conn.execute(AssertSqlSafe(format!(
        "INSERT INTO gift_orders (order_id, room_id, sender, status, created_at, body) VALUES {}",
        finished.join(", ")
    )))
    .await
    .unwrap();
    conn.execute("ANALYZE TABLE gift_orders").await.unwrap();
    let plan: String = sqlx::query_scalar(
        "EXPLAIN FORMAT=JSON SELECT body FROM gift_orders
         WHERE pending_at >= 0 AND pending_at < 9223372036854775807
         ORDER BY pending_at, order_id, sender LIMIT 10",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert!(
        plan.contains(r#""key": "gift_orders_unfinished""#),
        "the query uses the index: {plan}"
    );
}

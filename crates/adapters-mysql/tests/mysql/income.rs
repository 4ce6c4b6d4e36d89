//! The income ledger on two nodes of one database: the parts of gift orders credited at once by
//! both, in opposite orders, are each credited once, and the balances and the ledger agree.

use std::sync::Arc;

use adapters_mysql::{MySqlSettings, MySqlStore};
use room_app::ports::{IncomeEntry, IncomeLedger};
use room_domain::{Coins, GiftId, IncomePart, OrderId, RoomId, Timestamp};

use crate::fixtures::{fixture, user};

/// The recipient's and the owner's parts of `order`, to alice and bob, and olga (the owner).
fn entries(order: &str) -> Vec<IncomeEntry> {
    let mut entries = Vec::new();
    for recipient in ["alice", "bob"] {
        for (part, to, amount) in [
            (IncomePart::Recipient, recipient, 50),
            (IncomePart::Owner, "olga", 10),
        ] {
            entries.push(IncomeEntry {
                sender: user("carol"),
                order_id: OrderId::new(order).unwrap(),
                recipient: user(recipient),
                part,
                user: user(to),
                amount: Coins(amount),
                room_id: RoomId::new("r1").unwrap(),
                gift_id: GiftId::new("rose").unwrap(),
                billing_version: 1,
                at: Timestamp(1_764_460_800_000),
            });
        }
    }
    entries
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parts_credited_at_once_on_two_nodes_are_credited_once() {
    let Some(f) = fixture("mysql::income_two_nodes", |_| {}).await else {
        return;
    };
    let mut settings = MySqlSettings::new(f.database.url.clone());
    settings.max_connections = 4;
    let second = Arc::new(MySqlStore::open(&settings).await.unwrap());
    let nodes = [f.store.clone(), second];
    const ORDERS: usize = 20;
    let start = Arc::new(tokio::sync::Barrier::new(ORDERS * 4));
    let mut tasks = Vec::new();
    for order in 0..ORDERS {
        // Each order credited four times at once: twice on each node, once in each order.
        for attempt in 0..4 {
            let (store, start) = (nodes[attempt % 2].clone(), start.clone());
            let mut batch = entries(&format!("o-{order}"));
            if attempt >= 2 {
                batch.reverse();
            }
            tasks.push(tokio::spawn(async move {
                start.wait().await;
                store.credit_income(&batch).await
            }));
        }
    }
    let mut credited = 0;
    for task in tasks {
        credited += task.await.unwrap().expect("every credit gets its answer");
    }
    assert_eq!(
        credited,
        ORDERS as u32 * 4,
        "each entry credited once in all"
    );
    let orders = i64::try_from(ORDERS).unwrap();
    for (name, balance) in [("alice", 50), ("bob", 50), ("olga", 20)] {
        assert_eq!(
            nodes[1].income_balance(&user(name)).await.unwrap(),
            Coins(balance * orders),
            "{name}"
        );
    }
    let mut conn = f.database.connect().await;
    let (sum, count): (i64, i64) = sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(amount), 0) AS SIGNED), COUNT(*) FROM income_entries",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        (sum, count),
        (120 * orders, 4 * orders),
        "one entry per key"
    );
}

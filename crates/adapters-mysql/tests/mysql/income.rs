//! The income ledger on two nodes of one database: the parts of gift orders credited at once by
//! both, in opposite orders, are each credited once, and the balances and the ledger agree.

use std::sync::Arc;

use adapters_mysql::{MySqlSettings, MySqlStore};
use room_app::ports::{IncomeEntry, IncomeLedger};
use room_domain::{Coins, GiftId, IncomePart, OrderId, RoomId, Timestamp};

use crate::fixtures::{fixture, schema_before, user};

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
                gift_id: Some(GiftId::new("rose").unwrap()),
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
        "SELECT CAST(COALESCE(SUM(amount), 0) AS SIGNED), COUNT(*) FROM income_credits",
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

/// A database whose income was credited as a row per part (every migration before 0080)
/// upgraded by `migrate`: every entry, its position and every balance read back as they were;
/// a new credit takes positions after the old ones and skips the parts credited before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn income_credited_before_it_was_stored_by_gift_reads_back_after_the_upgrade() {
    let Some(server) = room_testkit::mysql::MySqlServer::from_env("mysql::income_upgrade").await
    else {
        return;
    };
    let database = server.database().await;
    let mut conn = database.connect().await;
    schema_before(&mut conn, 80).await;
    let part = |order: &str, recipient: &str, part: IncomePart, to: &str, amount: i64| {
        let mut entry = entries(order)[0].clone();
        entry.recipient = user(recipient);
        entry.part = part;
        entry.user = user(to);
        entry.amount = Coins(amount);
        entry
    };
    // As the previous release wrote them: two orders, three parts, ids 1, 2 and 4.
    let old = [
        (1, part("o-1", "alice", IncomePart::Recipient, "alice", 50)),
        (2, part("o-1", "alice", IncomePart::Owner, "olga", 10)),
        (4, part("o-2", "bob", IncomePart::Agency, "agency-1", 20)),
    ];
    for (id, e) in &old {
        sqlx::query(
            "INSERT INTO income_entries
             (id, sender, order_id, recipient, part, user_id, amount, room_id, gift_id,
              billing_version, credited_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(id)
        .bind(e.sender.as_str())
        .bind(e.order_id.as_str())
        .bind(e.recipient.as_str())
        .bind(e.part.as_str())
        .bind(e.user.as_str())
        .bind(e.amount.0)
        .bind(e.room_id.as_str())
        .bind(e.gift_id.as_ref().map_or("", |g| g.as_str()))
        .bind(1_i64)
        .bind(e.at.as_millis())
        .execute(&mut conn)
        .await
        .unwrap();
    }
    for (who, balance) in [("alice", 50), ("olga", 10), ("agency-1", 20)] {
        sqlx::query("INSERT INTO income_accounts (user_id, balance) VALUES (?, ?)")
            .bind(who)
            .bind(balance)
            .execute(&mut conn)
            .await
            .unwrap();
    }
    let settings = MySqlSettings::new(database.url.clone());
    MySqlStore::migrate(&settings).await.unwrap();
    let store = MySqlStore::open(&settings).await.unwrap();
    for (id, e) in &old {
        let listed = store.list_income(&e.user, None, 10).await.unwrap();
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert_eq!((listed[0].id, &listed[0].entry), (*id, e));
    }
    let owner_of_o2 = part("o-2", "bob", IncomePart::Owner, "olga", 5);
    let again = [old[1].1.clone(), owner_of_o2.clone()];
    assert_eq!(store.credit_income(&again).await.unwrap(), 1);
    let olga = store.list_income(&user("olga"), None, 10).await.unwrap();
    assert_eq!(olga.len(), 2);
    assert_eq!((olga[0].id, &olga[0].entry), (5, &owner_of_o2));
    for (who, balance) in [("alice", 50), ("olga", 15), ("agency-1", 20), ("bob", 0)] {
        assert_eq!(
            store.income_balance(&user(who)).await.unwrap(),
            Coins(balance),
            "{who}"
        );
    } // Migration 0120: a room's turnover reward (part 4, without a gift) credits after it.
    let reward = IncomeEntry {
        sender: user("room-a"),
        order_id: OrderId::new("sys-turnover-2025-11-30").unwrap(),
        recipient: user("olga"),
        part: IncomePart::Turnover,
        user: user("olga"),
        amount: Coins(7),
        room_id: RoomId::new("r1").unwrap(),
        gift_id: None,
        billing_version: 1,
        at: Timestamp(1_764_460_800_000),
    };
    assert_eq!(
        store
            .credit_income(std::slice::from_ref(&reward))
            .await
            .unwrap(),
        1
    );
    let newest = store.list_income(&user("olga"), None, 1).await.unwrap();
    assert_eq!(newest[0].entry, reward);
    assert_eq!(
        store.income_balance(&user("olga")).await.unwrap(),
        Coins(22)
    );
}

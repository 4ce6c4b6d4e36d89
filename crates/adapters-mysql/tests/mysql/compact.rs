//! A database written by the previous release (every migration before the compact bodies,
//! rows as JSON text) upgraded by `migrate`: old rows read back as written, the orders lose
//! the fields their columns hold and keep their refusal in its column, new rows go in
//! compact beside them, and each room knows its log's first command time.

use adapters_mysql::{Error, MySqlSettings, MySqlStore};
use room_app::ports::{Activation, CellStore, GiftOrders, Outbox, StoredEvent};
use room_domain::{
    Actor, ApplyGift, Coins, Command, CommandId, CommandKind, Event, EventEnvelope, GiftId,
    GiftOrder, GiftSnapshot, OrderId, OrderStatus, Rejection,
};
use room_testkit::mysql::MySqlServer;
use sqlx::{AssertSqlSafe, Connection};

use crate::fixtures::{T0, batch, room, schema_before, user};

/// `value` as JSON text, as the previous release stored it.
fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap()
}

fn order(id: &str) -> GiftOrder {
    let apply = ApplyGift {
        order_id: OrderId::new(id).unwrap(),
        sender: user("alice"),
        recipients: vec![user("bob")],
        gift: GiftSnapshot {
            gift_id: GiftId::new("rose").unwrap(),
            price: Coins(10),
            heat: 10,
            fuel: 10,
            lucky: false,
            billing_version: None,
        },
        count: 2,
        lucky_draw: 5,
        scope: None,
    };
    GiftOrder::new(room("room-a"), &apply, T0).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_written_before_the_compact_bodies_read_back_after_the_upgrade() {
    let Some(server) = MySqlServer::from_env("mysql::compact_upgrade").await else {
        return;
    };
    let database = server.database().await;
    let mut conn = database.connect().await;
    schema_before(&mut conn, 30).await;

    let a = room("room-a");
    let event = Event::RoomHeatChanged { heat: 7, delta: 7 };
    let command_id = CommandId::new("c-old").unwrap();
    let command = Command::new(
        command_id.clone(),
        CommandKind::SetChatEnabled { enabled: false },
    );
    let actor = Actor::user(user("owner"));
    let envelope = EventEnvelope::new(a.clone(), 1, T0, &event);
    let pending = order("o-pending");
    let mut refused = order("o-refused");
    refused.status = OrderStatus::Debited;
    refused.rejection = Some(Rejection::RoomClosed);
    for statement in [
        "INSERT INTO room_cells (room_id, epoch, version, owner_node) VALUES ('room-a', 1, 1, 'n')"
            .to_owned(),
        format!(
            "INSERT INTO room_events (room_id, seq, occurred_at, event) VALUES ('room-a', 1, {}, '{}')",
            T0.as_millis(),
            json(&event)
        ),
        format!(
            "INSERT INTO room_commands
                 (room_id, command_id, command, actor, applied_at, first_seq, last_seq)
             VALUES ('room-a', 'c-old', '{}', '{}', {}, 1, 1)",
            json(&command),
            json(&actor),
            T0.as_millis()
        ),
        format!(
            "INSERT INTO room_outbox (id, room_id, seq, envelope) VALUES (1, 'room-a', 1, '{}')",
            json(&envelope)
        ),
    ] {
        sqlx::query(AssertSqlSafe(statement))
            .execute(&mut conn)
            .await
            .unwrap();
    }
    for old in [&pending, &refused] {
        sqlx::query(
            "INSERT INTO gift_orders (order_id, room_id, sender, status, created_at, body)
             VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(old.order_id.as_str())
        .bind(old.room_id.as_str())
        .bind(old.sender.as_str())
        .bind(old.status.as_str())
        .bind(old.created_at.as_millis())
        .bind(serde_json::to_string(old).unwrap())
        .execute(&mut conn)
        .await
        .unwrap();
    }

    let settings = MySqlSettings::new(database.url.clone());
    MySqlStore::migrate(&settings).await.unwrap();
    let store = MySqlStore::open(&settings).await.unwrap();
    assert_eq!(
        store.list_events(&a, 0, 10).await.unwrap(),
        vec![StoredEvent {
            seq: 1,
            occurred_at: T0,
            event: event.clone()
        }]
    );
    let record = store.get_command(&a, &command_id).await.unwrap().unwrap();
    assert_eq!((record.command, record.actor), (command, actor));
    let listed = Outbox::list_pending(&store, 0, &[], 10).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].id, &listed[0].envelope), (1, &envelope));
    for old in [&pending, &refused] {
        assert_eq!(
            GiftOrders::get(&store, &old.sender, &old.order_id)
                .await
                .unwrap()
                .as_ref(),
            Some(old)
        );
    }
    // The refusal moved to its column: the refused order no longer awaits its room.
    let activation = Activation {
        epoch: 1,
        version: 1,
    };
    let mut applied = refused.clone();
    applied.status = OrderStatus::Applied;
    applied.rejection = None;
    let mut next = batch(&a, activation, 1, "c-new");
    next.orders = vec![applied];
    assert!(matches!(
        store.commit(&next).await,
        Err(Error::OrderSettled(_))
    ));

    // New rows beside the old ones.
    let mut next = batch(&a, activation, 1, "c-new");
    let mut debited = pending.clone();
    debited.status = OrderStatus::Applied;
    next.orders = vec![debited.clone()];
    store.commit(&next).await.unwrap();
    let events = store.list_events(&a, 0, 10).await.unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(events[1], next.events[0]);
    let listed = Outbox::list_pending(&store, 0, &[], 10).await.unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[1].envelope, next.outbox[0]);
    assert_eq!(
        GiftOrders::get(&store, &debited.sender, &debited.order_id)
            .await
            .unwrap(),
        Some(debited)
    );
    store.close().await;

    let bodies: Vec<(String, Vec<u8>)> =
        sqlx::query_as("SELECT order_id, body FROM gift_orders ORDER BY order_id")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    for (order_id, body) in bodies {
        if room_app::stored::is_compact(&body) {
            assert_eq!(order_id, "o-pending", "the order written since");
            continue;
        }
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        for column in [
            "order_id",
            "room_id",
            "sender",
            "status",
            "created_at",
            "rejection",
        ] {
            assert!(body.get(column).is_none(), "{order_id}: {column} in {body}");
        }
    }
    let compact: i64 =
        sqlx::query_scalar("SELECT count(*) FROM room_events WHERE LEFT(event, 1) = X'02'")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert_eq!(
        compact, 1,
        "the new event is compact (version 2), the old one JSON"
    );
    // The pruning pass finds the room through its first command's time (migration 0031).
    let first: Option<i64> =
        sqlx::query_scalar("SELECT first_command_at FROM room_cells WHERE room_id = 'room-a'")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert_eq!(first, Some(T0.as_millis()));
    let _ = conn.close().await;
}

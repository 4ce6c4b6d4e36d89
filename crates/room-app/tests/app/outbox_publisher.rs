//! The outbox publisher against a broker that fails one room: that room holds back only
//! itself (the others flow past more than a batch of its rows), and a row the broker refuses
//! for good is set aside as a dead letter, which a replay puts back.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{
    ClockRef, EventPublisher, EventPublisherRef, Outbox, OutboxMessage, OutboxRef, Published,
};
use room_app::workers::{self, OutboxPublisherState};
use room_domain::RoomId;

use crate::support::{World, rid};

/// A broker that takes every message but those of the rooms in `down` (their partition's
/// leader is down: a retryable failure) and the events in `refused` (refused for good), and
/// leaves out every later message of a room after one it did not take, as Kafka's publisher
/// does.
#[derive(Default)]
struct Broker {
    down: Mutex<HashSet<RoomId>>,
    refused: Mutex<HashSet<String>>,
    /// Messages sent to it, by room.
    sent: Mutex<Vec<RoomId>>,
}

#[async_trait]
impl EventPublisher for Broker {
    async fn publish(&self, messages: &[OutboxMessage]) -> Published {
        let (down, refused) = (self.down.lock().unwrap(), self.refused.lock().unwrap());
        let mut published = Published::default();
        let mut stopped = HashSet::new();
        for message in messages {
            let room = &message.envelope.room_id;
            self.sent.lock().unwrap().push(room.clone());
            if stopped.contains(room) {
                continue;
            }
            if down.contains(room) {
                stopped.insert(room.clone());
                published
                    .error
                    .get_or_insert(Error::Unavailable(format!("the leader of {room} is down")));
            } else if refused.contains(&message.envelope.event_id) {
                stopped.insert(room.clone());
                published
                    .refused
                    .push((message.id, "MessageSizeTooLarge".to_owned()));
            } else {
                published.delivered.push(message.id);
            }
        }
        published
    }
}

struct Setup {
    outbox: OutboxRef,
    clock: ClockRef,
    broker: Arc<Broker>,
    publisher: EventPublisherRef,
}

/// Room `bad` with many facts (more than three batches of 3), committed before room `good`'s.
async fn setup() -> Setup {
    let world = World::new().await;
    let members: Vec<String> = (0..12).map(|i| format!("m{i}")).collect();
    let members: Vec<&str> = members.iter().map(String::as_str).collect();
    world.open_room("bad", "alice", &members).await;
    world.open_room("good", "bob", &["carol", "dave"]).await;
    let broker = Arc::new(Broker::default());
    Setup {
        outbox: world.store.clone(),
        clock: world.clock.clone(),
        publisher: broker.clone(),
        broker,
    }
}

async fn pending_rooms(outbox: &OutboxRef) -> Vec<RoomId> {
    Outbox::list_pending(&**outbox, 0, &[], 1_000)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.envelope.room_id)
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_failing_room_holds_back_only_itself() {
    let Setup {
        outbox,
        clock,
        broker,
        publisher,
    } = setup().await;
    let bad = rid("bad");
    let bad_rows = pending_rooms(&outbox)
        .await
        .iter()
        .filter(|r| **r == bad)
        .count();
    assert!(
        bad_rows > 9,
        "more than three batches of the bad room: {bad_rows}"
    );
    broker.down.lock().unwrap().insert(bad.clone());

    let mut state = OutboxPublisherState::default();
    let done = workers::publish_outbox_with(&mut state, &outbox, &publisher, &clock, 3, 10).await;
    assert!(done.unwrap() > 0, "the good room's rows went out");
    let pending = pending_rooms(&outbox).await;
    assert_eq!(pending.len(), bad_rows, "only the failing room's rows wait");
    assert!(pending.iter().all(|room| *room == bad));

    // Held back for a while: the next pass does not try it again at once.
    let tried = broker.sent.lock().unwrap().len();
    let again = workers::publish_outbox_with(&mut state, &outbox, &publisher, &clock, 3, 10).await;
    assert_eq!(again.unwrap(), 0);
    assert_eq!(
        broker.sent.lock().unwrap().len(),
        tried,
        "the held room is not sent"
    );

    // Its partition is back: after the hold, its rows go out in order.
    broker.down.lock().unwrap().clear();
    tokio::time::advance(Duration::from_secs(1)).await;
    let mut delivered = 0;
    for _ in 0..10 {
        delivered += workers::publish_outbox_with(&mut state, &outbox, &publisher, &clock, 3, 10)
            .await
            .unwrap();
    }
    assert_eq!(delivered as usize, bad_rows);
    assert!(pending_rooms(&outbox).await.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_row_refused_for_good_becomes_a_dead_letter_that_a_replay_puts_back() {
    let Setup {
        outbox,
        clock,
        broker,
        publisher,
    } = setup().await;
    let first_bad = Outbox::list_pending(&*outbox, 0, &[], 1_000)
        .await
        .unwrap()
        .into_iter()
        .find(|m| m.envelope.room_id == rid("bad"))
        .unwrap();
    broker
        .refused
        .lock()
        .unwrap()
        .insert(first_bad.envelope.event_id.clone());

    let mut state = OutboxPublisherState::default();
    for _ in 0..10 {
        workers::publish_outbox_with(&mut state, &outbox, &publisher, &clock, 3, 10)
            .await
            .unwrap();
    }
    assert!(
        pending_rooms(&outbox).await.is_empty(),
        "the room's later rows went out without the refused one"
    );
    let dead = outbox.list_dead_letters(0, 10).await.unwrap();
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].id, first_bad.id);
    assert_eq!(dead[0].envelope, first_bad.envelope);
    assert_eq!(dead[0].reason, "MessageSizeTooLarge");

    // Fixed (the broker's limit raised): the replayed row goes out.
    broker.refused.lock().unwrap().clear();
    assert!(outbox.replay_dead_letter(first_bad.id).await.unwrap());
    let done = workers::publish_outbox_with(&mut state, &outbox, &publisher, &clock, 3, 10)
        .await
        .unwrap();
    assert_eq!(done, 1);
    assert!(pending_rooms(&outbox).await.is_empty());
    assert!(outbox.list_dead_letters(0, 10).await.unwrap().is_empty());
}

//! The messenger's unit tests: the buckets, a room's queue (order, shedding, coalescing,
//! packing), and the dispatcher driven through a sender that needs no HTTP, in tokio's
//! paused time.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use room_app::ports::{DisplayMessage, Messenger};
use room_domain::{Event, EventEnvelope, ImPriority, RoomId, Timestamp};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::bucket::Bucket;
use super::item::Item;
use super::pack::PackLimits;
use super::room::Room;
use super::send::GroupSender;
use super::stats::Stats;
use super::{DispatcherHandle, ImMessenger};
use crate::{DisplaySettings, GroupMessage, ImError, SendOutcome, group_id};

fn item(seq: u64, priority: ImPriority, key: Option<&'static str>) -> Item {
    let room = RoomId::new("r").unwrap();
    let event = Event::RoomHeatChanged {
        heat: seq as i64,
        delta: 1,
    };
    Item {
        envelope: EventEnvelope::new(room, seq, Timestamp(0), &event),
        priority,
        key,
        published: Instant::now(),
    }
}

fn limits(max_bytes: usize) -> PackLimits {
    PackLimits {
        max_bytes,
        max_age: Duration::from_secs(60),
    }
}

fn room() -> Room {
    Room::new(&RoomId::new("r").unwrap(), 30.0, 5.0, Instant::now())
}

/// A sender that needs no HTTP: it answers after `latency` (tokio time), records what
/// it sent, panics for groups in `panics` (once each) and answers 10010 for groups in
/// `missing`.
#[derive(Default)]
struct TestSender {
    latency: Duration,
    sent: std::sync::Mutex<Vec<(Instant, String, usize)>>,
    attempts: AtomicU64,
    missing: std::sync::Mutex<std::collections::HashSet<String>>,
    panics: std::sync::Mutex<std::collections::HashSet<String>>,
}

#[async_trait]
impl GroupSender for TestSender {
    async fn send(&self, group_id: &str, message: &GroupMessage) -> crate::Result<SendOutcome> {
        self.attempts.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(self.latency).await;
        if self.panics.lock().unwrap().remove(group_id) {
            panic!("a send that panics");
        }
        if self.missing.lock().unwrap().contains(group_id) {
            return Err(ImError::from_code(10010, "no such group"));
        }
        let data: serde_json::Value = serde_json::from_str(&message.data).unwrap();
        let events = data["events"].as_array().unwrap().len();
        self.sent
            .lock()
            .unwrap()
            .push((Instant::now(), group_id.to_owned(), events));
        Ok(SendOutcome::Sent {
            msg_seq: 1,
            msg_time: 0,
        })
    }
}

impl TestSender {
    fn events_sent(&self) -> usize {
        self.sent.lock().unwrap().iter().map(|s| s.2).sum()
    }
}

fn start(
    sender: &Arc<TestSender>,
    adjust: impl FnOnce(&mut DisplaySettings),
) -> (ImMessenger, DispatcherHandle, CancellationToken) {
    let mut settings = DisplaySettings::default();
    adjust(&mut settings);
    let cancel = CancellationToken::new();
    let (messenger, handle) = ImMessenger::start_with(sender.clone(), &settings, cancel.clone());
    (messenger, handle, cancel)
}

fn shown(room: &RoomId, seq: u64) -> DisplayMessage {
    let event = Event::RoomUserLeft {
        user: room_domain::UserId::new(format!("u-{seq}")).unwrap(),
        reason: room_domain::LeaveReason::Left,
        robot: false,
    };
    DisplayMessage {
        envelope: EventEnvelope::new(room.clone(), seq, Timestamp(0), &event),
        priority: ImPriority::Normal,
        coalesce_key: None,
    }
}

fn shown_many(room: &RoomId, seqs: std::ops::RangeInclusive<u64>) -> Vec<DisplayMessage> {
    seqs.map(|seq| shown(room, seq)).collect()
}

/// Lets tokio time run (auto-advancing under `pause`) until `done` holds, for at most a
/// minute of that time.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "no {what} within a minute");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_bucket_gives_its_burst_then_its_rate() {
    let start = Instant::now();
    let mut bucket = Bucket::full(10.0, 3.0, start);
    for _ in 0..3 {
        assert_eq!(bucket.wait(Instant::now()), None);
        bucket.take();
    }
    assert_eq!(
        bucket.wait(Instant::now()),
        Some(Duration::from_millis(100))
    );
    tokio::time::advance(Duration::from_millis(50)).await;
    assert_eq!(bucket.wait(Instant::now()), Some(Duration::from_millis(50)));
    tokio::time::advance(Duration::from_millis(50)).await;
    assert_eq!(bucket.wait(Instant::now()), None);
    bucket.take();
    // A long quiet spell saves up the burst, no more.
    tokio::time::advance(Duration::from_secs(10)).await;
    assert!(bucket.is_full(Instant::now()));
    for _ in 0..3 {
        assert_eq!(bucket.wait(Instant::now()), None);
        bucket.take();
    }
    assert!(bucket.wait(Instant::now()).is_some());
}

#[tokio::test(start_paused = true)]
async fn the_app_bucket_paces_sends_across_rooms_in_turn() {
    let sender = Arc::new(TestSender::default());
    let (messenger, _handle, _cancel) = start(&sender, |s| {
        s.app_rate_per_sec = 20.0;
        s.app_burst = 2.0;
    });
    let rooms: Vec<RoomId> = (0..60)
        .map(|i| RoomId::new(format!("r{i:02}")).unwrap())
        .collect();
    let start = Instant::now();
    for room in &rooms {
        messenger.publish(room, vec![shown(room, 1)]).await;
    }
    until("every room's message", || {
        sender.sent.lock().unwrap().len() == 60
    })
    .await;
    let sent = sender.sent.lock().unwrap().clone();
    // Never more than the burst plus the rate times the time so far.
    for (n, (at, _, _)) in sent.iter().enumerate() {
        let elapsed = at.duration_since(start).as_secs_f64();
        assert!(
            (n + 1) as f64 <= 2.0 + 20.0 * elapsed + 1e-6,
            "send {n} at {elapsed:.3} s"
        );
    }
    // ... and the rooms went in the order they became ready, none skipped.
    let order: Vec<String> = sent.iter().map(|s| s.1.clone()).collect();
    let expected: Vec<String> = rooms.iter().map(group_id).collect();
    assert_eq!(order, expected);
    let last = sent[59].0.duration_since(start);
    assert!(last <= Duration::from_millis(2_950 + 50), "{last:?}");
    assert!(last >= Duration::from_millis(2_900), "{last:?}");
}

#[tokio::test(start_paused = true)]
async fn beyond_the_node_cap_new_events_are_dropped() {
    let sender = Arc::new(TestSender {
        latency: Duration::from_secs(5),
        ..TestSender::default()
    });
    let (messenger, _handle, _cancel) = start(&sender, |s| s.max_held_events = 10);
    let (a, b) = (RoomId::new("a").unwrap(), RoomId::new("b").unwrap());
    // The first event leaves at once; the room's next 15 wait behind it, 10 of them held.
    messenger.publish(&a, vec![shown(&a, 1)]).await;
    until("the first send", || {
        sender.attempts.load(Ordering::Relaxed) == 1
    })
    .await;
    messenger.publish(&a, shown_many(&a, 2..=16)).await;
    until("the node cap", || messenger.stats().dropped_node_full == 5).await;
    // Another room finds the node full too.
    messenger.publish(&b, shown_many(&b, 1..=3)).await;
    until("the node cap", || messenger.stats().dropped_node_full == 8).await;
    until("the held events", || sender.events_sent() == 11).await;
    // Room is made again as the held ones leave.
    messenger.publish(&b, shown_many(&b, 4..=5)).await;
    until("room b's events", || sender.events_sent() == 13).await;
    assert_eq!(messenger.stats().dropped_node_full, 8);
}

#[tokio::test(start_paused = true)]
async fn events_too_old_when_their_turn_comes_are_dropped() {
    let sender = Arc::new(TestSender {
        latency: Duration::from_secs(2),
        ..TestSender::default()
    });
    let (messenger, _handle, _cancel) = start(&sender, |s| s.max_age_ms = 1_000);
    let r = RoomId::new("slow").unwrap();
    messenger.publish(&r, vec![shown(&r, 1)]).await;
    until("the first send", || {
        sender.attempts.load(Ordering::Relaxed) == 1
    })
    .await;
    // These wait 2 s behind the first: past their 1 s.
    messenger.publish(&r, shown_many(&r, 2..=6)).await;
    until("the drop", || messenger.stats().dropped_too_old == 5).await;
    assert_eq!(sender.events_sent(), 1);
    // Fresh ones still go.
    messenger.publish(&r, shown_many(&r, 7..=8)).await;
    until("the fresh events", || sender.events_sent() == 3).await;
    assert_eq!(messenger.stats().dropped_too_old, 5);
}

#[tokio::test(start_paused = true)]
async fn a_send_that_panics_frees_its_room() {
    let sender = Arc::new(TestSender::default());
    let r = RoomId::new("fragile").unwrap();
    sender.panics.lock().unwrap().insert(group_id(&r));
    let (messenger, _handle, _cancel) = start(&sender, |_| {});
    messenger.publish(&r, shown_many(&r, 1..=2)).await;
    until("the failed send", || {
        messenger.stats().dropped_send_failed == 2
    })
    .await;
    messenger.publish(&r, vec![shown(&r, 3)]).await;
    until("the next send", || sender.events_sent() == 1).await;
}

#[tokio::test(start_paused = true)]
async fn a_missing_group_is_retried_with_a_doubling_wait_then_given_up() {
    let sender = Arc::new(TestSender::default());
    let r = RoomId::new("nogroup").unwrap();
    sender.missing.lock().unwrap().insert(group_id(&r));
    let (messenger, _handle, _cancel) = start(&sender, |_| {});
    let start = Instant::now();
    messenger.publish(&r, shown_many(&r, 1..=3)).await;
    until("the give-up", || messenger.stats().dropped_no_group == 3).await;
    // Tried at 0, 1, 3, 7 s and at the 15 s limit.
    assert_eq!(sender.attempts.load(Ordering::Relaxed), 5);
    let gave_up = start.elapsed();
    assert!(gave_up >= Duration::from_secs(15), "{gave_up:?}");
    assert!(gave_up < Duration::from_secs(16), "{gave_up:?}");
    // Once the group exists, the room's display goes again.
    sender.missing.lock().unwrap().clear();
    messenger.publish(&r, vec![shown(&r, 4)]).await;
    until("the next send", || sender.events_sent() == 1).await;
}

#[tokio::test(start_paused = true)]
async fn quiet_rooms_are_swept_during_a_flood() {
    let sender = Arc::new(TestSender {
        latency: Duration::from_millis(5),
        ..TestSender::default()
    });
    let (messenger, _handle, _cancel) = start(&sender, |_| {});
    let messenger = Arc::new(messenger);
    for i in 0..20 {
        let room = RoomId::new(format!("quiet-{i}")).unwrap();
        messenger.publish(&room, vec![shown(&room, 1)]).await;
    }
    until("the quiet rooms' sends", || sender.events_sent() == 20).await;
    let hot = RoomId::new("hot").unwrap();
    let flood = {
        let messenger = messenger.clone();
        tokio::spawn(async move {
            for seq in 1.. {
                messenger.publish(&hot, vec![shown(&hot, seq)]).await;
                tokio::task::yield_now().await;
                if seq % 4 == 0 {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        })
    };
    until("the sweep", || {
        messenger.stats.rooms.load(Ordering::Relaxed) == 1
    })
    .await;
    flood.abort();
}

#[test]
fn the_queue_stays_in_seq_order() {
    let mut room = room();
    for seq in [1, 2, 5, 3, 4] {
        room.enqueue(item(seq, ImPriority::Normal, None));
    }
    let seqs: Vec<u64> = room.queue.iter().map(Item::seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5]);
}

#[test]
fn shedding_takes_low_then_normal_then_high_oldest_first() {
    let stats = Stats::default();
    let mut room = room();
    let priorities = [
        ImPriority::High,
        ImPriority::Low,
        ImPriority::Normal,
        ImPriority::Low,
        ImPriority::Normal,
        ImPriority::High,
    ];
    for (seq, priority) in priorities.into_iter().enumerate() {
        room.enqueue(item(seq as u64, priority, None));
    }
    room.shed(3, &stats);
    let left: Vec<u64> = room.queue.iter().map(Item::seq).collect();
    // Both Lows (1, 3) and the older Normal (2) go.
    assert_eq!(left, [0, 4, 5]);
    let snapshot = stats.snapshot();
    assert_eq!(
        (snapshot.shed_low, snapshot.shed_normal, snapshot.shed_high),
        (2, 1, 0)
    );
    room.shed(1, &stats);
    assert_eq!(room.queue.iter().map(Item::seq).collect::<Vec<_>>(), [5]);
    assert_eq!(stats.snapshot().shed_high, 1);
}

#[test]
fn a_flushed_value_replaces_its_keys_older_queued_value() {
    let stats = Stats::default();
    let mut room = room();
    let now = Instant::now();
    room.hold(item(1, ImPriority::Low, Some("heat")), "heat", now, &stats);
    room.flush_due(now, &stats);
    room.enqueue(item(2, ImPriority::High, None));
    room.hold(item(3, ImPriority::Low, Some("heat")), "heat", now, &stats);
    room.hold(item(4, ImPriority::Low, Some("heat")), "heat", now, &stats);
    room.flush_due(now, &stats);
    let seqs: Vec<u64> = room.queue.iter().map(Item::seq).collect();
    assert_eq!(seqs, [2, 4]);
    assert_eq!(stats.snapshot().coalesced, 2);
}

#[test]
fn a_pack_is_valid_json_within_the_size() {
    let stats = Stats::default();
    let mut room = room();
    for seq in 1..=200 {
        room.enqueue(item(seq, ImPriority::Normal, None));
    }
    let id = RoomId::new("r").unwrap();
    let pack = room
        .pack(&id, limits(2048), Instant::now(), &stats)
        .unwrap();
    let message = GroupMessage::new(pack.data.clone());
    assert!(message.body_bytes() <= 2048);
    let data: serde_json::Value = serde_json::from_str(&pack.data).unwrap();
    let events = data["events"].as_array().unwrap();
    assert_eq!(data["room_id"], "r");
    assert_eq!(events.len(), pack.published.len());
    assert_eq!(room.queue.len(), 200 - events.len());
    // One more event would not have fit.
    let mut bigger = room_for_size_check(events.len() + 1);
    let more = bigger
        .pack(&id, limits(usize::MAX), Instant::now(), &stats)
        .unwrap();
    assert!(GroupMessage::new(more.data).body_bytes() > 2048);
}

fn room_for_size_check(events: usize) -> Room {
    let mut room = room();
    for seq in 1..=events as u64 {
        room.enqueue(item(seq, ImPriority::Normal, None));
    }
    room
}

#[test]
fn an_event_too_large_alone_is_dropped() {
    let stats = Stats::default();
    let mut room = room();
    room.enqueue(item(1, ImPriority::High, None));
    let id = RoomId::new("r").unwrap();
    assert!(room.pack(&id, limits(50), Instant::now(), &stats).is_none());
    assert!(room.queue.is_empty());
    assert_eq!(stats.snapshot().dropped_too_large, 1);
}

#[test]
fn a_pack_splits_into_two_halves_in_order_each_with_its_own_priority() {
    let stats = Stats::default();
    let mut room = room();
    for seq in 1..=5 {
        let priority = if seq == 5 {
            ImPriority::High
        } else {
            ImPriority::Low
        };
        room.enqueue(item(seq, priority, None));
    }
    let id = RoomId::new("r").unwrap();
    let pack = room
        .pack(&id, limits(usize::MAX), Instant::now(), &stats)
        .unwrap();
    assert_eq!(pack.priority, ImPriority::High);
    let seqs = |data: &str| -> Vec<u64> {
        let data: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!(data["room_id"], "r");
        data["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["seq"].as_u64().unwrap())
            .collect()
    };
    let Ok((first, second)) = pack.split(&id) else {
        panic!("five events split");
    };
    assert_eq!(seqs(&first.data), [1, 2]);
    assert_eq!(seqs(&second.data), [3, 4, 5]);
    assert_eq!(
        (first.priority, second.priority),
        (ImPriority::Low, ImPriority::High)
    );
    assert_eq!(first.published.len() + second.published.len(), 5);
    // Down to one event, which does not split.
    let Ok((one, _)) = first.split(&id) else {
        panic!("two events split");
    };
    assert_eq!(seqs(&one.data), [1]);
    let Err(one) = one.split(&id) else {
        panic!("one event does not split");
    };
    assert_eq!(one.published.len(), 1);
}

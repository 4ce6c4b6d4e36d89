//! [`ImMessenger`] against the fake Tencent IM: a room's events arrive in order, coalescible
//! ones only as their newest value, several to a message within 12 KB; a room over its budget
//! sheds Low before Normal before High; a room whose group appears late still gets its first
//! events; a room sent 1,000 gifts a second gets every gift into its group without
//! Tencent dropping a message; and a burst of gifts gets through Tencent's size limit, which
//! counts the whole request, a message refused as too long going again in halves. Rates are tested under paused time in the messenger's unit
//! tests, not here against the wall clock.

mod support {
    pub mod events;
    pub mod poll;
}

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use adapters_tencent_im::{
    DispatcherHandle, DisplaySettings, FakeIm, FakeMessage, GroupMessage, ImClient, ImMessenger,
    MAX_MSG_BODY_BYTES, MAX_MSG_BYTES, group_id,
};
use room_app::ports::Messenger;
use room_domain::{ImPriority, RoomId};
use serde_json::Value;
use support::events::{display, display_as, fuel, gift, heat, left, profile, rank, room};
use support::poll;
use tokio_util::sync::CancellationToken;

struct Setup {
    fake: FakeIm,
    messenger: Arc<ImMessenger>,
    handle: Option<DispatcherHandle>,
    cancel: CancellationToken,
}

impl Setup {
    async fn new(rooms: &[&RoomId], adjust: impl FnOnce(&mut DisplaySettings)) -> Setup {
        let fake = FakeIm::start().await;
        for room in rooms {
            fake.add_group(&group_id(room));
        }
        let mut settings = DisplaySettings::default();
        adjust(&mut settings);
        let client = ImClient::new(&fake.settings()).unwrap();
        let cancel = CancellationToken::new();
        let (messenger, handle) = ImMessenger::start(client, &settings, cancel.clone());
        Setup {
            fake,
            messenger: Arc::new(messenger),
            handle: Some(handle),
            cancel,
        }
    }

    /// Every event the room's group received, in order.
    fn events(&self, room: &RoomId) -> Vec<Value> {
        self.fake
            .messages(&group_id(room))
            .iter()
            .flat_map(FakeMessage::events)
            .collect()
    }

    fn event_count(&self, room: &RoomId) -> usize {
        self.events(room).len()
    }

    async fn stop(&mut self) {
        self.cancel.cancel();
        if let Some(handle) = self.handle.take() {
            handle.stopped().await;
        }
    }
}

fn seqs(events: &[Value]) -> Vec<u64> {
    events.iter().map(|e| e["seq"].as_u64().unwrap()).collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_rooms_events_arrive_in_seq_order() {
    let rooms = [room("r1"), room("r2"), room("r3")];
    let setup = Setup::new(&rooms.iter().collect::<Vec<_>>(), |_| {}).await;
    for seq in 1..=200 {
        for room in &rooms {
            setup
                .messenger
                .publish(room, vec![display(room, seq, left(seq))])
                .await;
        }
        if seq % 20 == 0 {
            tokio::task::yield_now().await;
        }
    }
    poll::until("every event", || {
        rooms.iter().all(|r| setup.event_count(r) == 200)
    })
    .await;
    for room in &rooms {
        let events = setup.events(room);
        assert_eq!(seqs(&events), (1..=200).collect::<Vec<_>>(), "{room}");
        assert!(events.iter().all(|e| e["room_id"] == room.as_str()));
        let data = &setup.fake.messages(&group_id(room))[0].data;
        assert_eq!(data["room_id"], room.as_str());
    }
    // The stats count a message once its answer is back, after the fake stored it.
    poll::until("the stats", || setup.messenger.stats().events_sent == 600).await;
    let stats = setup.messenger.stats();
    assert_eq!(stats.messages_sent as usize, setup.fake.total_messages());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coalescing_keeps_only_the_newest_fuel() {
    let r = room("rocket");
    let setup = Setup::new(&[&r], |s| s.coalesce_ms = 300).await;
    // One commit: the dispatcher takes all 100 in at once, whatever the machine's speed.
    let batch: Vec<_> = (1..=100)
        .map(|seq| display(&r, seq, fuel(seq as i64 * 10)))
        .collect();
    setup.messenger.publish(&r, batch).await;
    poll::until("the newest fuel", || {
        setup
            .events(&r)
            .iter()
            .any(|e| e["payload"]["fuel"] == 1_000)
    })
    .await;
    let events = setup.events(&r);
    let fuels = of_type(&events, "RoomRocketFuelChanged");
    assert_eq!(fuels.len(), 1, "{fuels:?}");
    assert_eq!(fuels[0]["seq"], 100);
    assert_eq!(setup.messenger.stats().coalesced, 99);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_events_are_packed_into_messages_within_12_kb() {
    let r = room("busy");
    let setup = Setup::new(&[&r], |s| {
        s.room_rate_per_sec = 4.0;
        s.room_burst = 1.0;
    })
    .await;
    // The first event takes the room's only token; the rest wait and go together.
    setup
        .messenger
        .publish(&r, vec![display(&r, 1, left(1))])
        .await;
    let mut batch = Vec::new();
    for seq in 2..=80 {
        let event = if seq == 40 { gift(seq) } else { left(seq) };
        batch.push(display(&r, seq, event));
    }
    setup.messenger.publish(&r, batch).await;
    poll::until("every event", || setup.event_count(&r) == 80).await;

    let messages = setup.fake.messages(&group_id(&r));
    assert!(
        messages.len() < 10,
        "{} messages for 80 events",
        messages.len()
    );
    assert!(messages.iter().all(|m| m.body_bytes <= MAX_MSG_BODY_BYTES));
    assert!(messages.iter().any(|m| m.events().len() > 10));
    assert_eq!(seqs(&setup.events(&r)), (1..=80).collect::<Vec<_>>());
    // A message's priority is the highest of its events.
    for message in &messages {
        let has_gift = message.events().iter().any(|e| e["type"] == "RoomGiftSent");
        let expected = if has_gift { "High" } else { "Normal" };
        assert_eq!(message.priority.as_deref(), Some(expected));
    }
    assert_eq!(
        setup
            .fake
            .requests()
            .iter()
            .filter(|r| r.error_code != Some(0))
            .count(),
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_events_are_split_across_messages_and_oversized_ones_dropped() {
    let r = room("notices");
    let setup = Setup::new(&[&r], |s| {
        s.room_rate_per_sec = 10.0;
        s.room_burst = 1.0;
    })
    .await;
    // Ten notices of 3 KB, and at seq 6 one of 13 KB, too large for any message.
    let batch: Vec<_> = (1..=11)
        .map(|seq| display(&r, seq, profile(if seq == 6 { 13_000 } else { 3_000 })))
        .collect();
    setup.messenger.publish(&r, batch).await;
    poll::until("the ten notices", || setup.event_count(&r) == 10).await;
    let messages = setup.fake.messages(&group_id(&r));
    assert!(
        messages.len() >= 3,
        "3 KB events, 12 KB messages: {}",
        messages.len()
    );
    assert!(messages.iter().all(|m| m.body_bytes <= MAX_MSG_BODY_BYTES));
    let expected: Vec<u64> = (1..=11).filter(|s| *s != 6).collect();
    assert_eq!(seqs(&setup.events(&r)), expected);
    let stats = setup.messenger.stats();
    assert_eq!(stats.dropped_too_large, 1);
}

/// How many `send_group_msg` calls the fake refused with `code`.
fn refused_with(fake: &FakeIm, code: i64) -> usize {
    fake.requests()
        .iter()
        .filter(|r| r.command == "send_group_msg" && r.error_code == Some(code))
        .count()
}

/// 300 commits at once, each a gift (High) with its heat, rank and fuel.
async fn gift_burst(setup: &Setup, r: &RoomId, gifts: u64) {
    for n in 0..gifts {
        let base = n * 4;
        setup
            .messenger
            .publish(
                r,
                vec![
                    display(r, base + 1, gift(n)),
                    display(r, base + 2, heat(n as i64 * 10)),
                    display(r, base + 3, rank(n)),
                    display(r, base + 4, fuel(n as i64 * 10)),
                ],
            )
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_300_gift_burst_into_one_room_gets_every_gift_through_tencents_size_limit() {
    let r = room("burst");
    let mut setup = Setup::new(&[&r], |_| {}).await;
    let gifts = 300u64;
    gift_burst(&setup, &r, gifts).await;
    poll::until("every gift", || {
        of_type(&setup.events(&r), "RoomGiftSent").len() == gifts as usize
    })
    .await;
    setup.stop().await;
    let events = setup.events(&r);
    let gift_seqs: Vec<u64> = of_type(&events, "RoomGiftSent")
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(gift_seqs, (0..gifts).map(|n| n * 4 + 1).collect::<Vec<_>>());
    let sends: Vec<_> = setup
        .fake
        .requests()
        .into_iter()
        .filter(|q| q.command == "send_group_msg")
        .collect();
    // The packs were full ones, yet the whole requests stayed within Tencent's limit.
    assert!(sends.iter().any(|q| q.body.len() > 10 * 1024));
    assert!(sends.iter().all(|q| q.body.len() <= MAX_MSG_BYTES));
    assert_eq!(refused_with(&setup.fake, 80002), 0);
    let stats = setup.messenger.stats();
    assert_eq!(stats.dropped_send_failed + stats.dropped_too_large, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_refused_as_too_long_is_split_and_sent_again() {
    let r = room("split");
    // Packs filled to the whole limit: with the rest of the request, Tencent refuses them.
    let mut setup = Setup::new(&[&r], |s| s.max_message_bytes = MAX_MSG_BYTES).await;
    let gifts = 300u64;
    gift_burst(&setup, &r, gifts).await;
    // A notice too long for a request on its own, though its `MsgBody` is within the packing
    // size: refused, it cannot be split, and is dropped.
    let notice = gifts * 4 + 1;
    let body_bytes = |notice_bytes: usize| {
        let envelope = display(&r, notice, profile(notice_bytes)).envelope;
        let data = serde_json::json!({"room_id": r.as_str(), "events": [envelope]});
        GroupMessage::new(data.to_string()).body_bytes()
    };
    // `MsgBody` 10 bytes under the limit: the rest of the request takes it over.
    let notice_bytes = MAX_MSG_BYTES - 10 - body_bytes(0);
    assert_eq!(body_bytes(notice_bytes), MAX_MSG_BYTES - 10);
    setup
        .messenger
        .publish(&r, vec![display(&r, notice, profile(notice_bytes))])
        .await;
    poll::until("every gift and the notice's end", || {
        of_type(&setup.events(&r), "RoomGiftSent").len() == gifts as usize
            && setup.messenger.stats().dropped_too_large == 1
    })
    .await;
    setup.stop().await;
    assert!(refused_with(&setup.fake, 80002) > 0, "no pack was refused");
    let events = setup.events(&r);
    let gift_seqs: Vec<u64> = of_type(&events, "RoomGiftSent")
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(gift_seqs, (0..gifts).map(|n| n * 4 + 1).collect::<Vec<_>>());
    // Halves go in order: the room's events stay in seq order.
    let all = seqs(&events);
    assert!(all.windows(2).all(|w| w[0] < w[1]), "{all:?}");
    assert!(!all.contains(&notice));
    let stats = setup.messenger.stats();
    assert_eq!(stats.dropped_too_large, 1);
    assert_eq!(stats.dropped_send_failed, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_over_its_budget_sheds_low_then_normal_then_high() {
    let (a, b) = (room("shed-a"), room("shed-b"));
    let setup = Setup::new(&[&a, &b], |s| {
        s.room_rate_per_sec = 1.0;
        s.room_burst = 1.0;
        s.room_queue_max = 20;
    })
    .await;
    // 15 Low, 10 Normal, 10 High interleaved, in one commit: 15 too many, all of them Low.
    let mut batch = Vec::new();
    for seq in 1..=35u64 {
        let message = match seq % 7 {
            0 | 3 => display_as(&a, seq, gift(seq), ImPriority::High),
            1 | 5 => display_as(&a, seq, left(seq), ImPriority::Normal),
            _ => display_as(&a, seq, heat(seq as i64), ImPriority::Low),
        };
        batch.push(message);
    }
    let count = |batch: &[room_app::ports::DisplayMessage], p| {
        batch.iter().filter(|m| m.priority == p).count()
    };
    assert_eq!(
        (
            count(&batch, ImPriority::Low),
            count(&batch, ImPriority::Normal),
            count(&batch, ImPriority::High)
        ),
        (15, 10, 10)
    );
    setup.messenger.publish(&a, batch).await;
    poll::until("room a's 20 events", || setup.event_count(&a) == 20).await;
    let events = setup.events(&a);
    assert_eq!(of_type(&events, "RoomHeatChanged").len(), 0);
    assert_eq!(of_type(&events, "RoomUserLeft").len(), 10);
    assert_eq!(of_type(&events, "RoomGiftSent").len(), 10);
    let stats = setup.messenger.stats();
    assert_eq!(
        (stats.shed_low, stats.shed_normal, stats.shed_high),
        (15, 0, 0)
    );

    // 10 Low, 20 Normal, 10 High: 20 too many, so every Low and the 10 oldest Normal go.
    let mut batch = Vec::new();
    for seq in 1..=40u64 {
        let message = match seq % 4 {
            0 => display_as(&b, seq, gift(seq), ImPriority::High),
            1 | 2 => display_as(&b, seq, left(seq), ImPriority::Normal),
            _ => display_as(&b, seq, heat(seq as i64), ImPriority::Low),
        };
        batch.push(message);
    }
    let newest_normal: Vec<u64> = batch
        .iter()
        .filter(|m| m.priority == ImPriority::Normal)
        .map(|m| m.envelope.seq)
        .skip(10)
        .collect();
    setup.messenger.publish(&b, batch).await;
    poll::until("room b's 20 events", || setup.event_count(&b) == 20).await;
    let events = setup.events(&b);
    assert_eq!(of_type(&events, "RoomGiftSent").len(), 10);
    let normal: Vec<u64> = of_type(&events, "RoomUserLeft")
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(normal, newest_normal);
    let stats = setup.messenger.stats();
    assert_eq!(
        (stats.shed_low, stats.shed_normal, stats.shed_high),
        (25, 10, 0)
    );
    assert_eq!(stats.dropped_shed, 35);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_sent_1000_gifts_a_second_gets_every_gift_without_a_tencent_drop() {
    let r = room("hot");
    let setup = Setup::new(&[&r], |_| {}).await;
    let gifts = 3_000u64;
    let mut seq = 0;
    let mut ticker = tokio::time::interval(Duration::from_millis(10));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    // 10 commits per 10 ms, each a gift with its heat, rank and fuel: 1,000 gifts a second.
    for n in 0..gifts {
        if n % 10 == 0 {
            ticker.tick().await;
        }
        let base = seq;
        seq += 4;
        setup
            .messenger
            .publish(
                &r,
                vec![
                    display(&r, base + 1, gift(n)),
                    display(&r, base + 2, heat(n as i64 * 10)),
                    display(&r, base + 3, rank(n)),
                    display(&r, base + 4, fuel(n as i64 * 10)),
                ],
            )
            .await;
    }
    poll::until("every gift", || {
        of_type(&setup.events(&r), "RoomGiftSent").len() == gifts as usize
    })
    .await;
    let group = group_id(&r);
    assert_eq!(
        setup.fake.dropped_count(&group),
        0,
        "Tencent dropped messages"
    );
    let events = setup.events(&r);
    let gift_seqs: Vec<u64> = of_type(&events, "RoomGiftSent")
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(gift_seqs, (0..gifts).map(|n| n * 4 + 1).collect::<Vec<_>>());
    // The newest fuel arrives too.
    poll::until("the newest fuel", || {
        setup
            .events(&r)
            .iter()
            .any(|e| e["type"] == "RoomRocketFuelChanged" && e["seq"] == seq)
    })
    .await;
    let stats = setup.messenger.stats();
    assert_eq!(stats.shed_high, 0);
    assert_eq!(stats.dropped_by_im, 0);
    // How many messages a second that took is the bench's figure, not an assertion here.
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_created_a_moment_after_the_first_publish_gets_the_first_events() {
    let r = room("late");
    let setup = Setup::new(&[], |_| {}).await;
    let group = group_id(&r);
    let batch: Vec<_> = (1..=5).map(|seq| display(&r, seq, left(seq))).collect();
    setup.messenger.publish(&r, batch).await;
    poll::until("the refusal", || {
        setup
            .fake
            .requests()
            .iter()
            .any(|q| q.command == "send_group_msg" && q.error_code == Some(10010))
    })
    .await;
    // The group's creation lands after the first send; events keep coming meanwhile.
    setup.fake.add_group(&group);
    setup
        .messenger
        .publish(&r, vec![display(&r, 6, left(6))])
        .await;
    poll::until("every event", || setup.event_count(&r) == 6).await;
    assert_eq!(seqs(&setup.events(&r)), (1..=6).collect::<Vec<_>>());
    let stats = setup.messenger.stats();
    assert_eq!(stats.dropped_no_group, 0);
    assert_eq!(stats.dropped_send_failed, 0);
    // The messenger never creates groups itself.
    assert_eq!(setup.fake.request_count("create_group"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_sends_what_is_queued() {
    let r = room("closing");
    let mut setup = Setup::new(&[&r], |s| s.coalesce_ms = 60_000).await;
    let batch: Vec<_> = (1..=50).map(|seq| display(&r, seq, left(seq))).collect();
    setup.messenger.publish(&r, batch).await;
    setup
        .messenger
        .publish(&r, vec![display(&r, 51, fuel(77))])
        .await;
    setup.stop().await;
    let events = setup.events(&r);
    assert_eq!(seqs(&events), (1..=51).collect::<Vec<_>>());
    assert_eq!(setup.messenger.stats().dropped_shutdown, 0);
    // After the stop, publishing drops (counted) instead of failing.
    setup
        .messenger
        .publish(&r, vec![display(&r, 52, left(52))])
        .await;
    assert_eq!(setup.messenger.stats().dropped_shutdown, 1);
}

#[tokio::test(flavor = "current_thread")]
async fn a_full_node_queue_drops_without_blocking() {
    let r = room("full");
    let setup = Setup::new(&[&r], |s| s.queue_capacity = 2).await;
    // On one thread the dispatcher cannot run between these publishes.
    for seq in 1..=5 {
        setup
            .messenger
            .publish(&r, vec![display(&r, seq, left(seq))])
            .await;
    }
    assert_eq!(setup.messenger.stats().dropped_queue_full, 3);
    poll::until("the two queued", || setup.event_count(&r) == 2).await;
    let by_seq: HashMap<u64, usize> = seqs(&setup.events(&r))
        .into_iter()
        .map(|s| (s, 1))
        .collect();
    assert!(by_seq.contains_key(&1) && by_seq.contains_key(&2));
}

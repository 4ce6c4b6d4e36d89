//! The conformance suite of [`RoomPins`]: pins of every kind of list stored and read back
//! whole, an id taken once (the first pin kept), pages in pin id order, and the live pins:
//! those not ended, earliest start first, at most [`MAX_LIVE_PINS`].

use std::future::Future;
use std::sync::Arc;

use room_domain::Timestamp;

use super::fixtures::{at, expect_err, ok, room, same};
use crate::Error;
use crate::ports::{MAX_LIVE_PINS, MAX_PIN_PAGE, MAX_PIN_POSITION, PinnedList, RoomPin, RoomPins};

/// How many creates [`create_all`] runs at once.
const CONCURRENT_CREATES: usize = 64;

/// Runs every check of [`RoomPins`], each against a fresh store from `fresh`.
pub async fn room_pins_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: RoomPins + 'static,
{
    every_kind_of_list_round_trips(fresh().await).await;
    an_id_is_taken_once(fresh().await).await;
    pages_come_in_pin_id_order(fresh().await).await;
    live_pins_are_those_not_ended_earliest_start_first(fresh().await).await;
    live_pins_and_pages_are_capped(fresh().await).await;
}

fn pin(id: &str, list: PinnedList, starts_at: Timestamp, ends_at: Timestamp) -> RoomPin {
    RoomPin {
        pin_id: id.to_owned(),
        room_id: room(&format!("room-{id}")),
        list,
        position: 1,
        starts_at,
        ends_at,
        created_at: at(0),
    }
}

fn ids(pins: &[RoomPin]) -> Vec<&str> {
    pins.iter().map(|pin| pin.pin_id.as_str()).collect()
}

/// Creates every pin, [`CONCURRENT_CREATES`] at a time (a store that batches writes gets
/// batches to write).
async fn create_all<S: RoomPins + 'static>(store: &Arc<S>, pins: Vec<RoomPin>) {
    let mut pins = pins.into_iter().peekable();
    while pins.peek().is_some() {
        let mut creates = tokio::task::JoinSet::new();
        for pin in pins.by_ref().take(CONCURRENT_CREATES) {
            let store = store.clone();
            creates.spawn(async move { store.create(&pin).await });
        }
        while let Some(created) = creates.join_next().await {
            ok(created.expect("a create task ends"), "create");
        }
    }
}

async fn every_kind_of_list_round_trips<S: RoomPins>(store: Arc<S>) {
    same(
        ok(store.get("nowhere").await, "get"),
        None,
        "a pin never made is absent",
    );
    let lists = [
        PinnedList::Hot,
        PinnedList::New,
        PinnedList::Region("mena".to_owned()),
        PinnedList::Country("SA".to_owned()),
    ];
    for (n, list) in lists.into_iter().enumerate() {
        let id = format!("pin-{}", list.tab());
        let made = RoomPin {
            position: MAX_PIN_POSITION - n as u32,
            created_at: at(7),
            ..pin(&id, list.clone(), at(1_000), at(86_400_000))
        };
        ok(store.create(&made).await, "create");
        same(
            ok(store.get(&id).await, "get"),
            Some(made.clone()),
            &format!("a pin of {list:?} reads back whole"),
        );
        same(
            ok(store.delete(&id).await, "delete"),
            true,
            &format!("deleting the pin of {list:?} finds it"),
        );
        same(
            ok(store.get(&id).await, "get"),
            None,
            &format!("the pin of {list:?} is gone once deleted"),
        );
        same(
            ok(store.delete(&id).await, "delete"),
            false,
            &format!("deleting the pin of {list:?} again finds none"),
        );
    }
    same(
        ok(store.list(None, MAX_PIN_PAGE).await, "list"),
        Vec::new(),
        "every pin deleted: none listed",
    );
}

async fn an_id_is_taken_once<S: RoomPins>(store: Arc<S>) {
    let first = pin("pin-1", PinnedList::Hot, at(10), at(20));
    ok(store.create(&first).await, "create");
    let second = RoomPin {
        room_id: room("another-room"),
        position: 5,
        created_at: at(9),
        ..pin(
            "pin-1",
            PinnedList::Country("EG".to_owned()),
            at(30),
            at(40),
        )
    };
    expect_err!(
        store.create(&second).await,
        Error::AlreadyExists(_),
        "a second pin of the same id"
    );
    expect_err!(
        store.create(&first).await,
        Error::AlreadyExists(_),
        "the same pin again"
    );
    same(
        ok(store.get("pin-1").await, "get"),
        Some(first.clone()),
        "the first pin is kept",
    );
    same(
        ok(store.list(None, MAX_PIN_PAGE).await, "list"),
        vec![first.clone()],
        "one pin stored",
    );
    same(
        ok(store.list_live(at(0)).await, "list_live"),
        vec![first],
        "the refused pin does not show either",
    );
}

async fn pages_come_in_pin_id_order<S: RoomPins + 'static>(store: Arc<S>) {
    // Made out of id order, some ended and some not: a page holds them all, by id.
    let made = ["pin-3", "pin-1", "pin-5", "pin-2", "pin-4"];
    for (n, id) in made.iter().enumerate() {
        let ends_at = at(if n % 2 == 0 { 100 } else { 10_000 });
        ok(
            store
                .create(&pin(id, PinnedList::New, at(50 - n as i64), ends_at))
                .await,
            "create",
        );
    }
    let page = |after: Option<&str>, limit: u32| {
        let store = store.clone();
        let after = after.map(str::to_owned);
        async move { ok(store.list(after, limit).await, "list") }
    };
    same(
        ids(&page(None, MAX_PIN_PAGE).await),
        vec!["pin-1", "pin-2", "pin-3", "pin-4", "pin-5"],
        "every pin, ended ones too, in pin id order",
    );
    same(
        ids(&page(None, 2).await),
        vec!["pin-1", "pin-2"],
        "the first page",
    );
    same(
        ids(&page(Some("pin-2"), 2).await),
        vec!["pin-3", "pin-4"],
        "the page after the first",
    );
    same(
        ids(&page(Some("pin-4"), 2).await),
        vec!["pin-5"],
        "the last page is short",
    );
    same(
        ids(&page(Some("pin-5"), 2).await),
        Vec::<&str>::new(),
        "nothing after the last pin",
    );
    same(
        ids(&page(Some("pin-25"), 2).await),
        vec!["pin-3", "pin-4"],
        "after an id that is no pin's: the pins whose ids come after it",
    );
    same(
        ids(&page(None, 0).await),
        Vec::<&str>::new(),
        "a page of none",
    );
    let full = page(Some("pin-3"), 1).await;
    same(
        full,
        vec![pin("pin-4", PinnedList::New, at(46), at(100))],
        "a listed pin is whole",
    );
}

async fn live_pins_are_those_not_ended_earliest_start_first<S: RoomPins>(store: Arc<S>) {
    let now = at(1_000);
    let region = || PinnedList::Region("mena".to_owned());
    let made = [
        pin("ended", PinnedList::Hot, at(0), at(500)),
        pin("ends-now", PinnedList::Hot, at(0), now),
        pin("ends-after-now", PinnedList::New, at(900), at(1_001)),
        pin("showing", region(), at(100), at(5_000)),
        // Two that start at once: by pin id, whatever the order they were made in.
        pin(
            "tie-b",
            PinnedList::Country("SA".to_owned()),
            at(950),
            at(5_000),
        ),
        pin("tie-a", PinnedList::Hot, at(950), at(5_000)),
        pin("starts-now", region(), now, at(2_000)),
        pin("starts-later", region(), at(3_000), at(4_000)),
    ];
    for made in &made {
        ok(store.create(made).await, "create");
    }
    let live = ok(store.list_live(now).await, "list_live");
    same(
        ids(&live),
        vec![
            "showing",
            "ends-after-now",
            "tie-a",
            "tie-b",
            "starts-now",
            "starts-later",
        ],
        "the pins not ended at now (one ending at now is gone, one starting later is kept), \
         earliest start first, ties by pin id",
    );
    same(
        live.iter().find(|pin| pin.pin_id == "showing").cloned(),
        Some(made[3].clone()),
        "a live pin is whole",
    );
    same(
        ids(&ok(store.list_live(at(4_000)).await, "list_live")),
        vec!["showing", "tie-a", "tie-b"],
        "later, fewer are live",
    );
    same(
        ids(&ok(store.list_live(at(5_000)).await, "list_live")),
        Vec::<&str>::new(),
        "once every pin ended, none",
    );
}

async fn live_pins_and_pages_are_capped<S: RoomPins + 'static>(store: Arc<S>) {
    let now = at(10_000_000);
    let count = MAX_LIVE_PINS as i64 + 5;
    // Ids run against starts (`live-0000` starts last), so the earliest starts are not the
    // first ids; ended pins start earliest of all, and show nowhere but in pages.
    let mut pins: Vec<RoomPin> = (0..count)
        .map(|n| {
            pin(
                &format!("live-{n:04}"),
                PinnedList::Hot,
                at(1_000 + count - n),
                at(20_000_000),
            )
        })
        .collect();
    pins.extend((0..5).map(|n| pin(&format!("ended-{n}"), PinnedList::New, at(n), at(500))));
    create_all(&store, pins).await;

    let live = ok(store.list_live(now).await, "list_live");
    same(
        live.len(),
        MAX_LIVE_PINS as usize,
        "at most MAX_LIVE_PINS live pins",
    );
    let expected: Vec<String> = (5..count).rev().map(|n| format!("live-{n:04}")).collect();
    same(
        ids(&live),
        expected.iter().map(String::as_str).collect(),
        "the earliest-starting live pins are kept, earliest first",
    );

    let first = ok(store.list(None, u32::MAX).await, "list");
    same(
        first.len(),
        MAX_PIN_PAGE as usize,
        "a page holds at most MAX_PIN_PAGE pins, whatever it asks",
    );
    let mut expected: Vec<String> = (0..5).map(|n| format!("ended-{n}")).collect();
    expected.extend((0..MAX_PIN_PAGE as i64 - 5).map(|n| format!("live-{n:04}")));
    same(
        ids(&first),
        expected.iter().map(String::as_str).collect(),
        "the first page is the first pin ids",
    );
    let next = ok(
        store
            .list(first.last().map(|pin| pin.pin_id.clone()), MAX_PIN_PAGE + 1)
            .await,
        "list",
    );
    same(
        next.len(),
        MAX_PIN_PAGE as usize,
        "the next page is capped too",
    );
    same(
        next.first().map(|pin| pin.pin_id.as_str()),
        Some("live-0195"),
        "the next page goes on from the last id",
    );
}

//! Gift value and turnover: what the tally consumer counts from the facts (once, in the
//! periods of the billing time zone, never robot gifts), and the settlement of closed days'
//! turnovers (the owner's reward credited as income once, after the delay).

use std::collections::BTreeMap;
use std::sync::Arc;

use room_app::InMemoryStore;
use room_app::consumers::FactHandler;
use room_app::gift_value::{Settler, TallyConsumer, gift_value, room_turnover};
use room_app::ports::{
    BillingPolicies, GiftTallies, GiftTalliesRef, IncomeLedger, IncomeLedgerRef, MockGiftTallies,
    MockIncomeLedger, TurnoverSettlement, ValueTotals,
};
use room_domain::{
    BillingPolicy, BillingShares, Coins, DayKey, EventEnvelope, IncomePart, Periods, RoomId,
    Timestamp,
};

use super::income::{directory, gift_fact, uid};

/// 2025-11-30T00:00:00Z, the instant of [`gift_fact`]'s facts.
const T0: i64 = 1_764_460_800_000;
const HOUR: i64 = 3_600_000;

fn room() -> RoomId {
    RoomId::new("r1").unwrap()
}

/// `fact` committed at `at` instead, under order `order`.
fn at(fact: &EventEnvelope, order: &str, at: i64) -> EventEnvelope {
    let mut event = fact.event.clone();
    if let room_domain::Event::RoomGiftSent(gift) = &mut event {
        gift.order_id = room_domain::OrderId::new(order).unwrap();
    }
    EventEnvelope::new(fact.room_id.clone(), fact.seq, Timestamp(at), &event)
}

#[tokio::test]
async fn paid_gifts_count_once_in_the_periods_of_the_billing_zone() {
    let store = Arc::new(InMemoryStore::new());
    let tallies: GiftTalliesRef = store.clone();
    // In +08:00, T0 (midnight UTC) is 08:00 of 2025-11-30; 17:00 UTC is the next local day.
    let consumer = TallyConsumer::new(tallies.clone(), 8 * 3600);
    let fact = gift_fact(&["alice", "bob"], Some(1), false);
    let later = at(&fact, "o-2", T0 + 17 * HOUR);
    let robot = gift_fact(&["alice"], None, true);
    consumer.handle(&fact).await.unwrap();
    consumer.handle(&fact).await.unwrap();
    consumer.handle(&robot).await.unwrap();
    assert!(
        consumer
            .handle_all(&[fact.clone(), later.clone(), robot.clone()])
            .await
            .unwrap()
            .is_ok()
    );
    let day = |text: &str| DayKey::parse(text).unwrap();
    let carol = gift_value(
        &tallies,
        &uid("carol"),
        Some(day("2025-11-30")),
        Timestamp(0),
        0,
    )
    .await
    .unwrap();
    // Two orders of 4 roses of 25 coins to two recipients: 200 each.
    assert_eq!(
        carol.values.lifetime,
        ValueTotals {
            sent: Coins(400),
            received: Coins::ZERO
        }
    );
    assert_eq!(carol.values.day.sent, Coins(200), "the first order's day");
    assert_eq!(carol.values.month.sent, Coins(200), "November");
    let next = gift_value(
        &tallies,
        &uid("alice"),
        Some(day("2025-12-01")),
        Timestamp(0),
        0,
    )
    .await
    .unwrap();
    assert_eq!(
        next.values.day.received,
        Coins(100),
        "the second order, next local day"
    );
    assert_eq!(
        next.values.week.received,
        Coins(100),
        "a Monday starts a new week"
    );
    assert_eq!(
        next.values.month.received,
        Coins(100),
        "and December a new month"
    );
    assert_eq!(next.values.lifetime.received, Coins(200));
    // Today, when no day is given, is the day of `now` in the zone.
    let today = gift_value(
        &tallies,
        &uid("alice"),
        None,
        Timestamp(T0 + 17 * HOUR),
        8 * 3600,
    )
    .await
    .unwrap();
    assert_eq!(today.periods, Periods::of_day(day("2025-12-01")));
    // The room's turnovers, by local day.
    let first = room_turnover(&tallies, &room(), day("2025-11-30"))
        .await
        .unwrap();
    assert_eq!((first.turnover, first.gifts), (Coins(200), 1));
    let none = room_turnover(&tallies, &room(), day("2025-11-29"))
        .await
        .unwrap();
    assert_eq!(
        (none.turnover, none.gifts, none.settlement),
        (Coins::ZERO, 0, None)
    );
}

#[tokio::test]
async fn a_run_of_facts_is_one_count_and_a_refused_value_is_not_retried() {
    let mut tallies = MockGiftTallies::new();
    tallies
        .expect_count_gifts()
        .times(1)
        .withf(|gifts| gifts.len() == 3)
        .returning(|gifts| Ok(u32::try_from(gifts.len()).unwrap()));
    let consumer = TallyConsumer::new(Arc::new(tallies), 0);
    let facts: Vec<EventEnvelope> = (0..3)
        .map(|i| at(&gift_fact(&["alice"], None, false), &format!("o-{i}"), T0))
        .collect();
    assert!(consumer.handle_all(&facts).await.unwrap().is_ok());

    let mut refusing = MockGiftTallies::new();
    refusing
        .expect_count_gifts()
        .returning(|_| Err(room_app::Error::Invalid("overflow".into())));
    let consumer = TallyConsumer::new(Arc::new(refusing), 0);
    let error = consumer.handle(&facts[0]).await.unwrap_err();
    assert!(!error.is_retryable(), "an overflow no retry mends");

    let mut down = MockGiftTallies::new();
    down.expect_count_gifts()
        .returning(|_| Err(room_app::Error::Unavailable("down".into())));
    let consumer = TallyConsumer::new(Arc::new(down), 0);
    assert!(consumer.handle(&facts[0]).await.unwrap_err().is_retryable());
}

async fn billing_store(turnover_bp: u32) -> Arc<InMemoryStore> {
    let store = Arc::new(InMemoryStore::new());
    store
        .put_policy(&BillingPolicy {
            version: 1,
            shares: BillingShares::default(),
            overrides: BTreeMap::new(),
            turnover_bp,
        })
        .await
        .unwrap();
    store
}

fn settler(store: &Arc<InMemoryStore>, income: IncomeLedgerRef) -> Settler {
    Settler {
        tallies: store.clone(),
        income,
        directory: directory(),
        policies: store.clone(),
        utc_offset_secs: 0,
        delay_secs: 600,
        resume: std::sync::Mutex::new(None),
    }
}

#[tokio::test]
async fn a_closed_day_pays_its_owner_once_after_the_delay() {
    let store = billing_store(250).await;
    let consumer = TallyConsumer::new(store.clone(), 0);
    // 1,000 coins of turnover on 2025-11-30 (UTC), 100 on the next day.
    for i in 0..5 {
        let fact = at(
            &gift_fact(&["alice", "bob"], None, false),
            &format!("o-{i}"),
            T0 + HOUR,
        );
        consumer.handle(&fact).await.unwrap();
    }
    let next_day = at(&gift_fact(&["alice"], None, false), "o-9", T0 + 25 * HOUR);
    consumer.handle(&next_day).await.unwrap();
    let settler = settler(&store, store.clone());
    let midnight = T0 + 24 * HOUR;
    assert_eq!(
        settler
            .settle_turnovers(Timestamp(midnight + 599_000), 100)
            .await
            .unwrap(),
        0,
        "not before the delay"
    );
    assert_eq!(
        settler
            .settle_turnovers(Timestamp(midnight + 600_000), 100)
            .await
            .unwrap(),
        1,
        "the closed day, not the open one"
    );
    assert_eq!(
        settler
            .settle_turnovers(Timestamp(midnight + 700_000), 100)
            .await
            .unwrap(),
        0,
        "settled once"
    );
    assert_eq!(store.income_balance(&uid("olga")).await.unwrap(), Coins(25));
    let entries = store.list_income(&uid("olga"), None, 10).await.unwrap();
    assert_eq!(entries.len(), 1);
    let reward = &entries[0].entry;
    assert_eq!(reward.part, IncomePart::Turnover);
    assert_eq!(
        (reward.order_id.as_str(), reward.gift_id.clone()),
        ("sys-turnover-2025-11-30", None)
    );
    let turnover = store
        .room_turnover(&room(), DayKey::parse("2025-11-30").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        turnover.settlement,
        Some(TurnoverSettlement {
            owner: uid("olga"),
            share_bp: 250,
            reward: Coins(25),
            billing_version: 1,
            settled_at: Timestamp(midnight + 600_000),
        })
    );
}

#[tokio::test]
async fn a_pass_stopped_anywhere_pays_what_it_recorded_once() {
    let store = billing_store(1_000).await;
    let consumer = TallyConsumer::new(store.clone(), 0);
    consumer
        .handle(&at(&gift_fact(&["alice"], None, false), "o-1", T0))
        .await
        .unwrap();
    let after = Timestamp(T0 + 25 * HOUR);
    // Stopped after recording the settlement, before the credit: the ledger is down.
    let mut down = MockIncomeLedger::new();
    down.expect_credit_income()
        .returning(|_| Err(room_app::Error::Unavailable("down".into())));
    let stopped = settler(&store, Arc::new(down));
    assert_eq!(
        stopped.settle_turnovers(after, 100).await.unwrap(),
        0,
        "passed over"
    );
    let recorded = store
        .room_turnover(&room(), DayKey::parse("2025-11-30").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((recorded.settlements, recorded.owed), (1, Coins(10)));
    // Stopped after the credit, before it was marked paid.
    let unmarked = Settler {
        tallies: Arc::new(NoMark(store.clone())),
        ..settler(&store, store.clone())
    };
    assert_eq!(
        unmarked.settle_turnovers(after, 100).await.unwrap(),
        0,
        "passed over"
    );
    assert_eq!(store.income_balance(&uid("olga")).await.unwrap(), Coins(10));
    // The next pass credits nothing more and marks it paid.
    let settler = settler(&store, store.clone());
    assert_eq!(settler.settle_turnovers(after, 100).await.unwrap(), 1);
    assert_eq!(store.income_balance(&uid("olga")).await.unwrap(), Coins(10));
    assert_eq!(
        settler.settle_turnovers(after, 100).await.unwrap(),
        0,
        "nothing pending"
    );
}

#[tokio::test]
async fn a_gift_counted_after_its_day_was_settled_is_paid_by_a_second_settlement() {
    let store = billing_store(1_000).await;
    let consumer = TallyConsumer::new(store.clone(), 0);
    consumer
        .handle(&at(&gift_fact(&["alice"], None, false), "o-1", T0))
        .await
        .unwrap();
    let settler = settler(&store, store.clone());
    let after = Timestamp(T0 + 25 * HOUR);
    assert_eq!(settler.settle_turnovers(after, 100).await.unwrap(), 1);
    assert_eq!(store.income_balance(&uid("olga")).await.unwrap(), Coins(10));
    // The consumer was behind: a gift of the settled day is counted after its settlement.
    consumer
        .handle(&at(
            &gift_fact(&["alice", "bob"], None, false),
            "o-2",
            T0 + HOUR,
        ))
        .await
        .unwrap();
    assert_eq!(settler.settle_turnovers(after, 100).await.unwrap(), 1);
    // 300 coins of turnover at 10 %: 30 in all, 20 of it by the second settlement.
    assert_eq!(store.income_balance(&uid("olga")).await.unwrap(), Coins(30));
    let entries = store.list_income(&uid("olga"), None, 10).await.unwrap();
    let orders: Vec<&str> = entries.iter().map(|e| e.entry.order_id.as_str()).collect();
    assert_eq!(
        orders,
        ["sys-turnover-2025-11-30-2", "sys-turnover-2025-11-30"]
    );
    let turnover = store
        .room_turnover(&room(), DayKey::parse("2025-11-30").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            turnover.settlements,
            turnover.settled_turnover,
            turnover.owed
        ),
        (2, Coins(300), Coins::ZERO)
    );
    assert_eq!(turnover.settlement.map(|s| s.reward), Some(Coins(30)));
    assert_eq!(settler.settle_turnovers(after, 100).await.unwrap(), 0);
}

#[tokio::test]
async fn a_turnover_that_fails_is_passed_over_and_the_others_settle() {
    let store = billing_store(1_000).await;
    let consumer = TallyConsumer::new(store.clone(), 0);
    // r1 has an owner (the directory's mock); eleven rooms before it in the order have no
    // summary: more than a pass's ten pages of one.
    for i in 0..11 {
        let mut orphan = gift_fact(&["alice"], None, false);
        orphan.room_id = RoomId::new(format!("q{i:02}")).unwrap();
        consumer
            .handle(&at(&orphan, &format!("o-q{i}"), T0))
            .await
            .unwrap();
    }
    consumer
        .handle(&at(&gift_fact(&["alice"], None, false), "o-1", T0))
        .await
        .unwrap();
    let mut directory = room_app::ports::MockRoomDirectory::new();
    directory.expect_get_summary().returning(|room_id| {
        Ok((!room_id.as_str().starts_with('q')).then(|| super::income::summary_of(room_id)))
    });
    let settler = Settler {
        directory: Arc::new(directory),
        ..settler(&store, store.clone())
    };
    let after = Timestamp(T0 + 25 * HOUR);
    assert_eq!(
        settler.settle_turnovers(after, 1).await.unwrap(),
        0,
        "ten pages of one, each failing"
    );
    assert_eq!(
        settler.settle_turnovers(after, 1).await.unwrap(),
        1,
        "the next pass goes on from there: r1 settles past the eleventh"
    );
    assert_eq!(store.income_balance(&uid("olga")).await.unwrap(), Coins(10));
    // Read to the end, the next pass starts from the first again (they still fail).
    assert_eq!(settler.settle_turnovers(after, 100).await.unwrap(), 0);
}

#[tokio::test]
async fn a_zero_share_settles_without_a_credit() {
    let store = billing_store(0).await;
    let consumer = TallyConsumer::new(store.clone(), 0);
    consumer
        .handle(&at(&gift_fact(&["alice"], None, false), "o-1", T0))
        .await
        .unwrap();
    let mut income = MockIncomeLedger::new();
    income.expect_credit_income().never();
    let settler = settler(&store, Arc::new(income));
    assert_eq!(
        settler
            .settle_turnovers(Timestamp(T0 + 25 * HOUR), 100)
            .await
            .unwrap(),
        1
    );
    let turnover = store
        .room_turnover(&room(), DayKey::parse("2025-11-30").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(turnover.settlement.map(|s| s.reward), Some(Coins::ZERO));
}

/// The store's tallies, except that marking a settlement paid fails.
struct NoMark(Arc<InMemoryStore>);

#[async_trait::async_trait]
impl GiftTallies for NoMark {
    async fn count_gifts(&self, tallies: &[room_app::ports::GiftTally]) -> room_app::Result<u32> {
        self.0.count_gifts(tallies).await
    }
    async fn gift_values(
        &self,
        user: &room_domain::UserId,
        periods: &Periods,
    ) -> room_app::Result<room_app::ports::GiftValues> {
        self.0.gift_values(user, periods).await
    }
    async fn room_turnover(
        &self,
        room: &RoomId,
        day: DayKey,
    ) -> room_app::Result<Option<room_app::ports::RoomTurnover>> {
        self.0.room_turnover(room, day).await
    }
    async fn unsettled_turnovers(
        &self,
        before: DayKey,
        after: Option<(DayKey, RoomId)>,
        limit: u32,
    ) -> room_app::Result<Vec<room_app::ports::RoomTurnover>> {
        self.0.unsettled_turnovers(before, after, limit).await
    }
    async fn record_settlement(
        &self,
        room: &RoomId,
        day: DayKey,
        settlements: u32,
        settled_turnover: Coins,
        owed: Coins,
        settlement: &TurnoverSettlement,
    ) -> room_app::Result<bool> {
        self.0
            .record_settlement(room, day, settlements, settled_turnover, owed, settlement)
            .await
    }
    async fn mark_settlement_paid(
        &self,
        _room: &RoomId,
        _day: DayKey,
        _settlements: u32,
    ) -> room_app::Result<()> {
        Err(room_app::Error::Unavailable("the store went away".into()))
    }
    async fn prune_counted(&self, before: DayKey, limit: u32) -> room_app::Result<u64> {
        self.0.prune_counted(before, limit).await
    }
}

//! The income consumer on its own: what one `RoomGiftSent` fact credits (each recipient's
//! parts, the owner's, an agency's when the recipient has one), what it leaves alone (robot
//! gifts, other facts), and which failures it asks to be retried.

use std::collections::BTreeMap;
use std::sync::Arc;

use room_app::consumers::FactHandler;
use room_app::income::IncomeConsumer;
use room_app::ports::{
    AgenciesRef, BillingPolicies, IncomeLedger, IncomeLedgerRef, MockAgencies, MockIncomeLedger,
    MockRoomDirectory, NoAgencies, RoomDirectoryRef, RoomSummary,
};
use room_app::{Error, InMemoryStore};
use room_domain::{
    BillingPolicy, BillingShares, Coins, Event, EventEnvelope, GiftId, GiftSent, IncomePart,
    OrderId, RoomId, Timestamp, UserId,
};

pub(crate) fn uid(name: &str) -> UserId {
    UserId::new(name).unwrap()
}

fn room() -> RoomId {
    RoomId::new("r1").unwrap()
}

/// `room_id`'s summary: owned by olga.
pub(crate) fn summary_of(room_id: &RoomId) -> RoomSummary {
    RoomSummary {
        room_id: room_id.clone(),
        owner: uid("olga"),
        name: "r".into(),
        open: true,
        heat: 0,
        online: 0,
        locked: false,
        version: 1,
        region: "eu-west".into(),
        cover_url: None,
        seats_taken: 0,
        created_at: Timestamp(0),
        recent_heat_milli: 0,
        recent_heat_at: Timestamp(0),
    }
}

/// A directory whose rooms are owned by olga.
pub(crate) fn directory() -> RoomDirectoryRef {
    let mut directory = MockRoomDirectory::new();
    directory
        .expect_get_summary()
        .returning(|room_id| Ok(Some(summary_of(room_id))));
    Arc::new(directory)
}

/// Carol's order o-1: 4 roses of 25 coins to each of `recipients`.
pub(crate) fn gift_fact(recipients: &[&str], version: Option<u64>, robot: bool) -> EventEnvelope {
    let recipients: Vec<UserId> = recipients.iter().map(|name| uid(name)).collect();
    let total = 100 * i64::try_from(recipients.len()).unwrap();
    EventEnvelope::new(
        room(),
        7,
        Timestamp(1_764_460_800_000),
        &Event::RoomGiftSent(GiftSent {
            order_id: OrderId::new("o-1").unwrap(),
            sender: uid("carol"),
            recipients,
            gift_id: GiftId::new("rose").unwrap(),
            count: 4,
            unit_price: Coins(25),
            total_value: Coins(total),
            heat_added: total,
            fuel_added: total,
            lucky: None,
            robot,
            billing_version: version,
            sender_nickname: None,
            sender_avatar_url: None,
        }),
    )
}

/// A store with version 1 (50 % / 10 % / 20 %) and version 2 (30 % / 0 % / 0 %).
async fn store() -> Arc<InMemoryStore> {
    let store = Arc::new(InMemoryStore::new());
    for (version, recipient_bp, owner_bp, agency_bp) in [(1, 5_000, 1_000, 2_000), (2, 3_000, 0, 0)]
    {
        store
            .put_policy(&BillingPolicy {
                version,
                shares: BillingShares {
                    recipient_bp,
                    owner_bp,
                    agency_bp,
                },
                overrides: BTreeMap::new(),
                turnover_bp: 0,
            })
            .await
            .unwrap();
    }
    store
}

fn consumer(store: &Arc<InMemoryStore>, agencies: AgenciesRef) -> IncomeConsumer {
    IncomeConsumer::new(store.clone(), store.clone(), directory(), agencies)
}

async fn balance(store: &InMemoryStore, name: &str) -> Coins {
    store.income_balance(&uid(name)).await.unwrap()
}

#[tokio::test]
async fn a_gift_pays_each_recipient_the_owner_and_an_agency_once() {
    let store = store().await;
    // Bob belongs to agency "agency-1"; dave to none.
    let mut agencies = MockAgencies::new();
    agencies
        .expect_agency_of()
        .returning(|user| Ok((user.as_str() == "bob").then(|| uid("agency-1"))));
    let consumer = consumer(&store, Arc::new(agencies));
    let fact = gift_fact(&["bob", "dave"], Some(1), false);
    for _ in 0..3 {
        consumer.handle(&fact).await.unwrap();
    }
    assert_eq!(balance(&store, "bob").await, Coins(50));
    assert_eq!(balance(&store, "dave").await, Coins(50));
    assert_eq!(balance(&store, "olga").await, Coins(20), "10 % of each");
    assert_eq!(
        balance(&store, "agency-1").await,
        Coins(20),
        "bob's agency; dave's agency share is the platform's"
    );
    let parts: Vec<IncomePart> = store
        .list_income(&uid("olga"), None, 10)
        .await
        .unwrap()
        .iter()
        .map(|record| record.entry.part)
        .collect();
    assert_eq!(parts, [IncomePart::Owner, IncomePart::Owner]);
}

#[tokio::test]
async fn a_gift_is_billed_under_its_orders_version_and_an_old_fact_under_the_first() {
    let store = store().await;
    let consumer = consumer(&store, Arc::new(NoAgencies));
    consumer
        .handle(&gift_fact(&["bob"], Some(2), false))
        .await
        .unwrap();
    assert_eq!(balance(&store, "bob").await, Coins(30));
    assert_eq!(balance(&store, "olga").await, Coins::ZERO);
    // Another order without a version (a fact from before billing): version 1.
    let mut old = gift_fact(&["dave"], None, false);
    if let Event::RoomGiftSent(gift) = &mut old.event {
        gift.order_id = OrderId::new("o-old").unwrap();
    }
    consumer.handle(&old).await.unwrap();
    assert_eq!(balance(&store, "dave").await, Coins(50));
    assert_eq!(balance(&store, "olga").await, Coins(10));
}

#[tokio::test]
async fn robot_gifts_and_other_facts_pay_nothing() {
    let store = store().await;
    let consumer = consumer(&store, Arc::new(NoAgencies));
    consumer
        .handle(&gift_fact(&["bob"], None, true))
        .await
        .unwrap();
    let other = EventEnvelope::new(
        room(),
        8,
        Timestamp(1_764_460_800_000),
        &Event::RoomClosed { by: None },
    );
    consumer.handle(&other).await.unwrap();
    assert_eq!(balance(&store, "bob").await, Coins::ZERO);
    assert_eq!(balance(&store, "olga").await, Coins::ZERO);
}

#[tokio::test]
async fn what_a_retry_can_mend_is_retried() {
    let store = store().await;
    // A version never stored: retried (never paid as nothing).
    let consumer = consumer(&store, Arc::new(NoAgencies));
    let error = consumer
        .handle(&gift_fact(&["bob"], Some(9), false))
        .await
        .unwrap_err();
    assert!(error.is_retryable(), "{error}");
    // A room whose summary is not there yet: retried.
    let mut empty = MockRoomDirectory::new();
    empty.expect_get_summary().returning(|_| Ok(None));
    let consumer = IncomeConsumer::new(
        store.clone(),
        store.clone(),
        Arc::new(empty),
        Arc::new(NoAgencies),
    );
    let error = consumer
        .handle(&gift_fact(&["bob"], Some(1), false))
        .await
        .unwrap_err();
    assert!(error.is_retryable(), "{error}");
    // The ledger unavailable: retried; a credit it refuses for good: passed over.
    for (refusal, retryable) in [
        (Error::Unavailable("down".into()), true),
        (Error::Invalid("balance overflow".into()), false),
    ] {
        let mut ledger = MockIncomeLedger::new();
        ledger
            .expect_credit_income()
            .returning(move |_| Err(refusal.clone()));
        let ledger: IncomeLedgerRef = Arc::new(ledger);
        let consumer =
            IncomeConsumer::new(store.clone(), ledger, directory(), Arc::new(NoAgencies));
        let error = consumer
            .handle(&gift_fact(&["bob"], Some(1), false))
            .await
            .unwrap_err();
        assert_eq!(error.is_retryable(), retryable, "{error}");
    }
    assert_eq!(balance(&store, "bob").await, Coins::ZERO);
}

#[tokio::test]
async fn an_agency_is_the_one_the_user_directory_names_when_income_is_credited() {
    use room_app::income::DirectoryAgencies;
    use room_app::ports::{Change, ProfilePatch, UserDirectory};
    let store = store().await;
    let agency = |name: &str| ProfilePatch {
        agency: Change::Set(name.into()),
        ..ProfilePatch::default()
    };
    store
        .upsert_profile(&uid("bob"), &agency("agency-1"))
        .await
        .unwrap();
    let consumer = consumer(&store, Arc::new(DirectoryAgencies(store.clone())));
    consumer
        .handle(&gift_fact(&["bob", "dave"], Some(1), false))
        .await
        .unwrap();
    assert_eq!(balance(&store, "agency-1").await, Coins(20), "bob's agency");
    assert_eq!(balance(&store, "bob").await, Coins(50));

    // Bob moves to another agency: the next gift pays that one; the first stays paid.
    store
        .upsert_profile(&uid("bob"), &agency("agency-2"))
        .await
        .unwrap();
    let mut next = gift_fact(&["bob"], Some(1), false);
    if let Event::RoomGiftSent(gift) = &mut next.event {
        gift.order_id = OrderId::new("o-2").unwrap();
    }
    consumer.handle(&next).await.unwrap();
    assert_eq!(balance(&store, "agency-2").await, Coins(20));
    assert_eq!(balance(&store, "agency-1").await, Coins(20));
}

/// Carol's order `order` (fact `seq` of room r1): 4 roses of 25 coins to each of `recipients`.
fn order_fact(order: &str, seq: u64, recipients: &[&str]) -> EventEnvelope {
    let fact = gift_fact(recipients, Some(1), false);
    let Event::RoomGiftSent(mut gift) = fact.event else {
        unreachable!("a gift fact")
    };
    gift.order_id = OrderId::new(order).unwrap();
    EventEnvelope::new(room(), seq, fact.occurred_at, &Event::RoomGiftSent(gift))
}

#[tokio::test]
async fn a_run_of_gifts_is_credited_in_one_ledger_call_reading_each_owner_and_agency_once() {
    let facts: Vec<EventEnvelope> = (0..20)
        .map(|i| order_fact(&format!("o-{i}"), 10 + i, &["bob", "dave"]))
        .collect();

    // One at a time and as one run: the same balances and entries.
    let one_by_one = store().await;
    let each = consumer(&one_by_one, Arc::new(NoAgencies));
    for fact in &facts {
        each.handle(fact).await.unwrap();
    }
    let together = store().await;
    let run = consumer(&together, Arc::new(NoAgencies));
    run.handle_all(&facts).await.unwrap().unwrap();
    run.handle_all(&facts).await.unwrap().unwrap();
    for name in ["bob", "dave", "olga"] {
        assert_eq!(
            balance(&together, name).await,
            balance(&one_by_one, name).await,
            "{name}"
        );
    }
    assert_eq!(balance(&together, "bob").await, Coins(20 * 50));
    let listed = |store: Arc<InMemoryStore>| async move {
        let mut entries: Vec<_> = store
            .list_income(&uid("olga"), None, 200)
            .await
            .unwrap()
            .into_iter()
            .map(|record| record.entry)
            .collect();
        entries.sort_by(|a, b| a.key().cmp(&b.key()));
        entries
    };
    assert_eq!(listed(together).await, listed(one_by_one).await);

    // The reads and calls of one run: the room's owner once, each recipient's agency once,
    // and 80 entries (bob's, dave's and olga's two of each gift) in one ledger call.
    let mut directory = MockRoomDirectory::new();
    directory
        .expect_get_summary()
        .times(1)
        .returning(|room_id| Ok(Some(summary_of(room_id))));
    let mut agencies = MockAgencies::new();
    agencies.expect_agency_of().times(2).returning(|_| Ok(None));
    let mut ledger = MockIncomeLedger::new();
    ledger
        .expect_credit_income()
        .times(1)
        .withf(|entries| entries.len() == 80)
        .returning(|entries| Ok(u32::try_from(entries.len()).unwrap()));
    let policies = store().await;
    let consumer = IncomeConsumer::new(
        policies,
        Arc::new(ledger),
        Arc::new(directory),
        Arc::new(agencies),
    );
    consumer.handle_all(&facts).await.unwrap().unwrap();
}

#[tokio::test]
async fn a_run_over_the_ledger_calls_limit_is_credited_in_several_calls() {
    // 40 gifts to 2 recipients: 160 entries, in calls of at most 100.
    let facts: Vec<EventEnvelope> = (0..40)
        .map(|i| order_fact(&format!("o-{i}"), 10 + i, &["bob", "dave"]))
        .collect();
    let mut ledger = MockIncomeLedger::new();
    ledger
        .expect_credit_income()
        .times(2)
        .withf(|entries| entries.len() <= room_app::ports::MAX_INCOME_CREDIT)
        .returning(|entries| Ok(u32::try_from(entries.len()).unwrap()));
    let store = store().await;
    let consumer = IncomeConsumer::new(store, Arc::new(ledger), directory(), Arc::new(NoAgencies));
    consumer.handle_all(&facts).await.unwrap().unwrap();
}

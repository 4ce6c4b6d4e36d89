//! The conformance suite of [`GiftTallies`]: each gift counted once by its order (also when
//! two counts of it run at once), in every period it belongs to; a refused count counts
//! nothing; turnovers pending until a settlement is recorded (once, by compare and set) and
//! marked paid, and pending again when counted further; counted keys pruned by day.

use std::future::Future;
use std::sync::Arc;

use room_domain::{Coins, DayKey, Periods, Timestamp};

use super::fixtures::{T0, expect_err, ok, order_id, room, same, user};
use crate::Error;
use crate::ports::{
    GiftTallies, GiftTally, GiftValues, MAX_TALLY_COUNT, RoomTurnover, TurnoverSettlement,
    ValueTotals,
};

/// Runs every check of [`GiftTallies`], each against a fresh store from `fresh`.
pub async fn gift_tallies_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: GiftTallies + 'static,
{
    gifts_count_once_in_every_period(fresh().await).await;
    a_refused_count_counts_nothing(fresh().await).await;
    concurrent_counts_of_one_gift_count_it_once(fresh().await).await;
    turnovers_are_settled_once(fresh().await).await;
    counted_keys_are_pruned_by_day(fresh().await).await;
}

const DAY_MS: i64 = 86_400_000;

/// A gift of `sender` to `recipients`, `value` each, in `room_id`, `days` after T0's day.
fn tally(
    sender: &str,
    order: &str,
    room_id: &str,
    recipients: &[&str],
    value: i64,
    days: i64,
) -> GiftTally {
    let at = Timestamp(T0.0 + days * DAY_MS + 1_000);
    GiftTally {
        sender: user(sender),
        order_id: order_id(order),
        room_id: room(room_id),
        recipients: recipients.iter().map(|r| user(r)).collect(),
        value_per_recipient: Coins(value),
        at,
        periods: Periods::at(at, 0),
    }
}

fn totals(sent: i64, received: i64) -> ValueTotals {
    ValueTotals {
        sent: Coins(sent),
        received: Coins(received),
    }
}

fn periods(days: i64) -> Periods {
    Periods::at(Timestamp(T0.0 + days * DAY_MS), 0)
}

async fn gifts_count_once_in_every_period<S: GiftTallies>(store: Arc<S>) {
    same(
        ok(
            store.gift_values(&user("alice"), &periods(0)).await,
            "gift_values",
        ),
        GiftValues::default(),
        "a user without gifts has zeros",
    );
    // T0 is Sunday 2025-11-30: day 1 starts the next week and month.
    let gifts = [
        tally("alice", "o1", "r1", &["bob", "carol"], 100, 0),
        tally("alice", "o2", "r1", &["bob"], 30, 0),
        tally("bob", "o1", "r2", &["alice"], 7, 1),
    ];
    same(
        ok(store.count_gifts(&gifts).await, "count_gifts"),
        3,
        "three gifts counted",
    );
    same(
        ok(store.count_gifts(&gifts).await, "count_gifts again"),
        0,
        "a repeat counts nothing",
    );
    same(
        ok(
            store
                .count_gifts(&[gifts[1].clone(), gifts[1].clone()])
                .await,
            "count_gifts of one order twice",
        ),
        0,
        "one order given twice in a call is still counted once",
    );
    same(
        ok(
            store.gift_values(&user("alice"), &periods(0)).await,
            "gift_values",
        ),
        GiftValues {
            lifetime: totals(230, 7),
            day: totals(230, 0),
            week: totals(230, 0),
            month: totals(230, 0),
        },
        "alice's values on day 0",
    );
    same(
        ok(
            store.gift_values(&user("alice"), &periods(1)).await,
            "gift_values",
        ),
        GiftValues {
            lifetime: totals(230, 7),
            day: totals(0, 7),
            week: totals(0, 7),
            month: totals(0, 7),
        },
        "alice's values on day 1, the next week and month",
    );
    same(
        ok(
            store.gift_values(&user("bob"), &periods(0)).await,
            "gift_values",
        ),
        GiftValues {
            lifetime: totals(7, 130),
            day: totals(0, 130),
            week: totals(0, 130),
            month: totals(0, 130),
        },
        "bob's values on day 0",
    );
    let turnover = ok(
        store.room_turnover(&room("r1"), periods(0).day).await,
        "room_turnover",
    )
    .expect("r1 has a turnover on day 0");
    same(
        (turnover.turnover, turnover.gifts, turnover.settlement),
        (Coins(230), 2, None),
        "r1's turnover of day 0",
    );
    same(
        ok(
            store.room_turnover(&room("r1"), periods(1).day).await,
            "room_turnover",
        ),
        None,
        "no turnover on a day without gifts",
    );
    // Keys are by sender and order: bob's order o1 is not alice's.
    same(
        ok(
            store.room_turnover(&room("r2"), periods(1).day).await,
            "room_turnover",
        )
        .map(|t| t.turnover),
        Some(Coins(7)),
        "r2's turnover of day 1",
    );
}

async fn a_refused_count_counts_nothing<S: GiftTallies>(store: Arc<S>) {
    ok(
        store
            .count_gifts(&[tally("alice", "o1", "r1", &["bob"], i64::MAX - 10, 0)])
            .await,
        "count a large gift",
    );
    expect_err!(
        store
            .count_gifts(&[
                tally("carol", "o1", "r2", &["dave"], 5, 0),
                tally("alice", "o2", "r1", &["bob"], 11, 0),
            ])
            .await,
        Error::Invalid(_),
        "a value past the largest amount is refused"
    );
    expect_err!(
        store
            .count_gifts(&[tally(
                "carol",
                "o2",
                "r2",
                &["dave", "erin"],
                i64::MAX / 2 + 1,
                0
            )])
            .await,
        Error::Invalid(_),
        "a total past the largest amount is refused"
    );
    expect_err!(
        store
            .count_gifts(&[tally("carol", "o3", "r2", &["dave"], -1, 0)])
            .await,
        Error::Invalid(_),
        "a negative value is refused"
    );
    let many: Vec<GiftTally> = (0..=MAX_TALLY_COUNT)
        .map(|i| tally("carol", &format!("m{i}"), "r2", &["dave"], 1, 0))
        .collect();
    expect_err!(
        store.count_gifts(&many).await,
        Error::Invalid(_),
        "more gifts than a count takes"
    );
    same(
        ok(
            store.gift_values(&user("dave"), &periods(0)).await,
            "gift_values",
        ),
        GiftValues::default(),
        "nothing of a refused count was counted",
    );
    same(
        ok(
            store.room_turnover(&room("r2"), periods(0).day).await,
            "room_turnover",
        ),
        None,
        "no turnover from a refused count",
    );
    same(
        ok(
            store
                .count_gifts(&[tally("carol", "o1", "r2", &["dave"], 5, 0)])
                .await,
            "count again",
        ),
        1,
        "a gift of a refused count is counted by a later one",
    );
}

async fn concurrent_counts_of_one_gift_count_it_once<S: GiftTallies + 'static>(store: Arc<S>) {
    for round in 0..10 {
        let gifts: Vec<GiftTally> = (0..5)
            .map(|i| {
                tally(
                    &format!("s{i}"),
                    &format!("o{round}"),
                    "r1",
                    &["bob"],
                    10,
                    0,
                )
            })
            .collect();
        let racers: Vec<_> = (0..2)
            .map(|_| {
                let (store, gifts) = (store.clone(), gifts.clone());
                tokio::spawn(async move { store.count_gifts(&gifts).await })
            })
            .collect();
        let mut counted = 0;
        for racer in racers {
            counted += ok(racer.await.expect("the racer ran"), "a racing count");
        }
        same(
            counted,
            5,
            "two counts of five gifts at once count each once",
        );
    }
    same(
        ok(
            store.gift_values(&user("bob"), &periods(0)).await,
            "gift_values",
        )
        .lifetime,
        totals(0, 500),
        "bob received each gift once",
    );
    same(
        ok(
            store.room_turnover(&room("r1"), periods(0).day).await,
            "room_turnover",
        )
        .map(|t| (t.turnover, t.gifts)),
        Some((Coins(500), 50)),
        "the turnover counts each gift once",
    );
}

fn settlement(owner: &str, reward: i64) -> TurnoverSettlement {
    TurnoverSettlement {
        owner: user(owner),
        share_bp: 100,
        reward: Coins(reward),
        billing_version: 2,
        settled_at: Timestamp(T0.0 + 3 * DAY_MS),
    }
}

fn listed(turnovers: Vec<RoomTurnover>) -> Vec<(DayKey, String, Coins)> {
    turnovers
        .into_iter()
        .map(|t| (t.day, t.room_id.as_str().to_owned(), t.turnover))
        .collect()
}

async fn turnovers_are_settled_once<S: GiftTallies>(store: Arc<S>) {
    ok(
        store
            .count_gifts(&[
                tally("alice", "o1", "r2", &["bob"], 100, 0),
                tally("alice", "o2", "r1", &["bob"], 200, 0),
                tally("alice", "o3", "r1", &["bob"], 300, 1),
                tally("alice", "o4", "r1", &["bob"], 400, 2),
            ])
            .await,
        "count",
    );
    let day = |days: i64| periods(days).day;
    same(
        listed(ok(
            store.unsettled_turnovers(day(2), None, 100).await,
            "pending",
        )),
        vec![
            (day(0), "r1".to_owned(), Coins(200)),
            (day(0), "r2".to_owned(), Coins(100)),
            (day(1), "r1".to_owned(), Coins(300)),
        ],
        "days before day 2, by day then room",
    );
    same(
        listed(ok(
            store.unsettled_turnovers(day(2), None, 1).await,
            "pending",
        )),
        vec![(day(0), "r1".to_owned(), Coins(200))],
        "at most the limit",
    );
    same(
        listed(ok(
            store
                .unsettled_turnovers(day(2), Some((day(0), room("r1"))), 100)
                .await,
            "pending",
        )),
        vec![
            (day(0), "r2".to_owned(), Coins(100)),
            (day(1), "r1".to_owned(), Coins(300)),
        ],
        "after a cursor",
    );
    // Settlement 1 of r1's day 0, owing 2.
    same(
        ok(
            store
                .record_settlement(
                    &room("r1"),
                    day(0),
                    0,
                    Coins(200),
                    Coins(2),
                    &settlement("olga", 2),
                )
                .await,
            "record",
        ),
        true,
        "the first settlement is recorded",
    );
    same(
        ok(
            store
                .record_settlement(
                    &room("r1"),
                    day(0),
                    0,
                    Coins(200),
                    Coins(9),
                    &settlement("other", 9),
                )
                .await,
            "record again",
        ),
        false,
        "a second record of settlement 1 is not",
    );
    same(
        ok(
            store
                .record_settlement(
                    &room("r1"),
                    day(0),
                    1,
                    Coins(200),
                    Coins(9),
                    &settlement("other", 9),
                )
                .await,
            "record the next",
        ),
        false,
        "nor the next while the first owes",
    );
    let recorded = ok(
        store.room_turnover(&room("r1"), day(0)).await,
        "room_turnover",
    )
    .expect("r1's day 0");
    same(
        (
            recorded.settlements,
            recorded.settled_turnover,
            recorded.owed,
            recorded.settlement.clone(),
        ),
        (1, Coins(200), Coins(2), Some(settlement("olga", 2))),
        "the first settlement stands, owing",
    );
    same(
        listed(ok(
            store.unsettled_turnovers(day(1), None, 100).await,
            "pending",
        ))
        .len(),
        2,
        "owing, it is still pending",
    );
    ok(
        store.mark_settlement_paid(&room("r1"), day(0), 7).await,
        "mark another settlement",
    );
    same(
        ok(
            store.room_turnover(&room("r1"), day(0)).await,
            "room_turnover",
        )
        .map(|t| t.owed),
        Some(Coins(2)),
        "marking another settlement changes nothing",
    );
    ok(
        store.mark_settlement_paid(&room("r1"), day(0), 1).await,
        "mark paid",
    );
    same(
        listed(ok(
            store.unsettled_turnovers(day(1), None, 100).await,
            "pending",
        )),
        vec![(day(0), "r2".to_owned(), Coins(100))],
        "paid, it is no longer pending",
    );
    // A gift counted after the settlement makes it pending again.
    ok(
        store
            .count_gifts(&[tally("carol", "o9", "r1", &["bob"], 50, 0)])
            .await,
        "count a late gift",
    );
    let late = ok(
        store.unsettled_turnovers(day(1), None, 100).await,
        "pending",
    );
    same(
        late.iter()
            .map(|t| {
                (
                    t.room_id.as_str().to_owned(),
                    t.turnover,
                    t.settled_turnover,
                    t.settlements,
                )
            })
            .collect::<Vec<_>>(),
        vec![
            ("r1".to_owned(), Coins(250), Coins(200), 1),
            ("r2".to_owned(), Coins(100), Coins::ZERO, 0),
        ],
        "a late gift makes the settled day pending again",
    );
    same(
        ok(
            store
                .record_settlement(
                    &room("r1"),
                    day(0),
                    1,
                    Coins(250),
                    Coins(0),
                    &settlement("olga", 2),
                )
                .await,
            "record settlement 2",
        ),
        true,
        "the second settlement is recorded",
    );
    same(
        listed(ok(
            store.unsettled_turnovers(day(1), None, 100).await,
            "pending",
        )),
        vec![(day(0), "r2".to_owned(), Coins(100))],
        "settled on the whole turnover and owing nothing, it is not pending, marked or not",
    );
    ok(
        store.mark_settlement_paid(&room("r1"), day(0), 2).await,
        "mark paid",
    );
    ok(
        store
            .count_gifts(&[tally("carol", "o10", "r1", &["bob"], 0, 0)])
            .await,
        "count a gift of no value",
    );
    same(
        listed(ok(
            store.unsettled_turnovers(day(1), None, 100).await,
            "pending",
        )),
        vec![(day(0), "r2".to_owned(), Coins(100))],
        "a gift that adds nothing leaves it settled",
    );
    same(
        ok(
            store.room_turnover(&room("r1"), day(0)).await,
            "room_turnover",
        )
        .map(|t| (t.settlements, t.settled_turnover, t.owed)),
        Some((2, Coins(250), Coins::ZERO)),
        "settled on the whole turnover",
    );
    expect_err!(
        store
            .record_settlement(
                &room("r3"),
                day(0),
                0,
                Coins(1),
                Coins(1),
                &settlement("olga", 1)
            )
            .await,
        Error::NotFound(_),
        "a turnover never counted cannot be settled"
    );
}

async fn counted_keys_are_pruned_by_day<S: GiftTallies>(store: Arc<S>) {
    let gifts = [
        tally("alice", "o1", "r1", &["bob"], 1, 0),
        tally("alice", "o2", "r1", &["bob"], 1, 0),
        tally("alice", "o3", "r1", &["bob"], 1, 1),
    ];
    ok(store.count_gifts(&gifts).await, "count");
    let day = |days: i64| -> DayKey { Timestamp(T0.0 + days * DAY_MS).day_key(0) };
    same(
        ok(store.prune_counted(day(1), 1).await, "prune"),
        1,
        "at most the limit",
    );
    same(
        ok(store.prune_counted(day(1), 100).await, "prune"),
        1,
        "the rest of the keys of day 0",
    );
    same(
        ok(store.prune_counted(day(1), 100).await, "prune"),
        0,
        "none left before day 1",
    );
    same(
        ok(store.count_gifts(&gifts[2..]).await, "count"),
        0,
        "a key of day 1 is kept",
    );
    same(
        ok(store.count_gifts(&gifts[..1]).await, "count"),
        1,
        "a forgotten key counts again",
    );
}

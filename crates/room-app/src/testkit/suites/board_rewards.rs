//! The conformance suite of [`BoardRewards`]: reward tables stored by compare-and-set on the
//! version (one of two racing puts wins); a period's payouts recorded once, whole (also when
//! two records race), refused whole when bad, listed unpaid in order until each is marked
//! paid.

use std::future::Future;
use std::sync::Arc;

use room_domain::{Coins, Periods, Timestamp};

use super::fixtures::{T0, at, expect_err, ok, room, same, user};
use crate::Error;
use crate::ports::{
    BoardId, BoardKind, BoardPayout, BoardPeriod, BoardRewards, MAX_PAYOUT_PAGE, RewardTable,
    RewardTables,
};

/// Runs every check of [`BoardRewards`], each against a fresh store from `fresh`.
pub async fn board_rewards_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: BoardRewards + 'static,
{
    tables_are_versioned_by_compare_and_set(fresh().await).await;
    payouts_are_recorded_once_and_whole(fresh().await).await;
    racing_records_record_once(fresh().await).await;
    unpaid_payouts_are_listed_until_paid(fresh().await).await;
}

const DAY_MS: i64 = 86_400_000;

fn board(kind: BoardKind, period: BoardPeriod, days: i64) -> BoardId {
    BoardId::new(
        kind,
        None,
        period,
        &Periods::at(Timestamp(T0.0 + days * DAY_MS), 0),
    )
}

fn tables(version: u64, coins: &[i64]) -> RewardTables {
    RewardTables {
        version,
        tables: vec![
            RewardTable {
                board: BoardKind::Senders,
                period: BoardPeriod::Week,
                ranks: coins.iter().map(|c| Coins(*c)).collect(),
            },
            RewardTable {
                board: BoardKind::Rooms,
                period: BoardPeriod::Day,
                ranks: vec![Coins(5)],
            },
        ],
    }
}

fn payout(rank: u32, subject: &str, coins: i64) -> BoardPayout {
    BoardPayout {
        rank,
        subject: subject.to_owned(),
        score: Coins(1_000 / i64::from(rank.max(1))),
        user: user(subject),
        coins: Coins(coins),
        rewards_version: 3,
        paid_at: None,
    }
}

async fn tables_are_versioned_by_compare_and_set<S: BoardRewards + 'static>(store: Arc<S>) {
    same(
        ok(store.current_board_rewards().await, "current"),
        None,
        "nothing stored",
    );
    expect_err!(
        store.put_board_rewards(&tables(0, &[1])).await,
        Error::Invalid(_),
        "version 0"
    );
    expect_err!(
        store.put_board_rewards(&tables(2, &[1])).await,
        Error::Conflict(_),
        "version 2 first"
    );
    ok(
        store.put_board_rewards(&tables(1, &[100, 50])).await,
        "put 1",
    );
    same(
        ok(store.current_board_rewards().await, "current"),
        Some(tables(1, &[100, 50])),
        "version 1 read back whole",
    );
    expect_err!(
        store.put_board_rewards(&tables(1, &[7])).await,
        Error::Conflict(_),
        "version 1 again"
    );
    // Two puts of version 2 at once: one wins.
    let (ten, twenty) = (tables(2, &[10]), tables(2, &[20]));
    let (a, b) = tokio::join!(
        store.put_board_rewards(&ten),
        store.put_board_rewards(&twenty)
    );
    let won = [a.is_ok(), b.is_ok()];
    same(won.iter().filter(|won| **won).count(), 1, "one put wins");
    let current = ok(store.current_board_rewards().await, "current").expect("stored");
    same(current.version, 2, "the winner is current");
    let expected = if won[0] { [10] } else { [20] };
    same(
        current.tables[0].ranks.clone(),
        vec![Coins(expected[0])],
        "the winner's tables",
    );
    let empty = RewardTables {
        version: 3,
        tables: vec![],
    };
    ok(store.put_board_rewards(&empty).await, "put empty");
    same(
        ok(store.current_board_rewards().await, "current"),
        Some(empty),
        "no table pays",
    );
}

async fn payouts_are_recorded_once_and_whole<S: BoardRewards>(store: Arc<S>) {
    let week = board(BoardKind::Senders, BoardPeriod::Week, 0);
    same(
        ok(store.board_payouts(&week).await, "board_payouts"),
        None,
        "nothing recorded",
    );
    let bad = [
        vec![payout(1, "alice", 10), payout(1, "bob", 5)],
        vec![payout(0, "alice", 10)],
        vec![payout(1, "alice", 10), payout(2, "bob", 0)],
        vec![payout(1, "alice", -1)],
    ];
    for bad in &bad {
        expect_err!(
            store.record_board_payouts(&week, bad, at(1)).await,
            Error::Invalid(_),
            "a rank twice, rank 0, nothing or less paid"
        );
    }
    let in_a_room = BoardId {
        room: Some(room("r1")),
        ..board(BoardKind::Rooms, BoardPeriod::Day, 0)
    };
    expect_err!(
        store.record_board_payouts(&in_a_room, &[], at(1)).await,
        Error::Invalid(_),
        "rooms ranked in a room"
    );
    same(
        ok(store.board_payouts(&week).await, "board_payouts"),
        None,
        "refusals record nothing",
    );
    let payouts = vec![payout(2, "bob", 50), payout(1, "alice", 100)];
    same(
        ok(
            store.record_board_payouts(&week, &payouts, at(2)).await,
            "record",
        ),
        true,
        "recorded",
    );
    same(
        ok(
            store
                .record_board_payouts(&week, &[payout(1, "mallory", 999)], at(3))
                .await,
            "record again",
        ),
        false,
        "a period records once",
    );
    same(
        ok(store.board_payouts(&week).await, "board_payouts"),
        Some(vec![payout(1, "alice", 100), payout(2, "bob", 50)]),
        "by rank, unpaid, as first recorded",
    );
    // A period that paid nobody is recorded too.
    let day = board(BoardKind::Rooms, BoardPeriod::Day, 0);
    same(
        ok(
            store.record_board_payouts(&day, &[], at(4)).await,
            "record none",
        ),
        true,
        "recorded empty",
    );
    same(
        ok(store.board_payouts(&day).await, "board_payouts"),
        Some(vec![]),
        "an empty record",
    );
    same(
        ok(
            store
                .record_board_payouts(&day, &[payout(1, "r1", 5)], at(5))
                .await,
            "record after empty",
        ),
        false,
        "an empty record is a record",
    );
}

async fn racing_records_record_once<S: BoardRewards + 'static>(store: Arc<S>) {
    let month = board(BoardKind::Receivers, BoardPeriod::Month, 0);
    let first = vec![payout(1, "alice", 100), payout(2, "bob", 50)];
    let second = vec![payout(1, "carol", 100)];
    let (a, b) = tokio::join!(
        store.record_board_payouts(&month, &first, at(1)),
        store.record_board_payouts(&month, &second, at(1))
    );
    let (a, b) = (ok(a, "first record"), ok(b, "second record"));
    same(a ^ b, true, "exactly one records");
    same(
        ok(store.board_payouts(&month).await, "board_payouts"),
        Some(if a { first } else { second }),
        "the winner's payouts, whole",
    );
}

async fn unpaid_payouts_are_listed_until_paid<S: BoardRewards>(store: Arc<S>) {
    let later = board(BoardKind::Senders, BoardPeriod::Day, 1);
    let earlier = board(BoardKind::Receivers, BoardPeriod::Day, 0);
    ok(
        store
            .record_board_payouts(
                &later,
                &[payout(1, "alice", 10), payout(2, "bob", 5)],
                at(20),
            )
            .await,
        "record later",
    );
    ok(
        store
            .record_board_payouts(&earlier, &[payout(1, "carol", 7)], at(10))
            .await,
        "record earlier",
    );
    let listed = |unpaid: Vec<(BoardId, BoardPayout)>| -> Vec<(BoardId, u32)> {
        unpaid
            .into_iter()
            .map(|(board, payout)| (board, payout.rank))
            .collect()
    };
    same(
        listed(ok(store.unpaid_board_payouts(10).await, "unpaid")),
        vec![(earlier.clone(), 1), (later.clone(), 1), (later.clone(), 2)],
        "recorded earliest first, then by rank",
    );
    same(
        ok(store.unpaid_board_payouts(1).await, "unpaid").len(),
        1,
        "at most the limit",
    );
    ok(
        store.mark_board_payout_paid(&later, 1, at(30)).await,
        "mark paid",
    );
    ok(
        store.mark_board_payout_paid(&later, 1, at(40)).await,
        "mark paid again",
    );
    ok(
        store.mark_board_payout_paid(&later, 9, at(40)).await,
        "mark a rank never recorded",
    );
    same(
        listed(ok(store.unpaid_board_payouts(10).await, "unpaid")),
        vec![(earlier.clone(), 1), (later.clone(), 2)],
        "a paid payout leaves the list",
    );
    let mut paid = payout(1, "alice", 10);
    paid.paid_at = Some(at(30));
    same(
        ok(store.board_payouts(&later).await, "board_payouts"),
        Some(vec![paid, payout(2, "bob", 5)]),
        "paid at the first mark",
    );
    ok(
        store.mark_board_payout_paid(&later, 2, at(50)).await,
        "mark",
    );
    ok(
        store.mark_board_payout_paid(&earlier, 1, at(50)).await,
        "mark",
    );
    same(
        ok(store.unpaid_board_payouts(MAX_PAYOUT_PAGE).await, "unpaid"),
        vec![],
        "all paid",
    );
}

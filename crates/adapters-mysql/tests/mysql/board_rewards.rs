//! The leaderboards' rewards on MySQL: the payouts owed are read off an index of their own that
//! holds them in the order they are paid (`owed_since`, the recording time of the payouts
//! owed only), and of the records of one period at once on two nodes, exactly one records.

use std::sync::Arc;

use adapters_mysql::{MySqlSettings, MySqlStore};
use room_app::ports::{BoardId, BoardKind, BoardPayout, BoardPeriod, BoardRewards};
use room_domain::{Coins, Timestamp};
use sqlx::{AssertSqlSafe, Executor};

use crate::fixtures::{T0, fixture, user};

fn day(number: i64) -> BoardId {
    BoardId {
        kind: BoardKind::Senders,
        room: None,
        period: BoardPeriod::Day,
        number,
    }
}

fn payout(rank: u32, who: &str) -> BoardPayout {
    BoardPayout {
        rank,
        subject: who.to_owned(),
        score: Coins(1_000),
        user: user(who),
        coins: Coins(10),
        rewards_version: 1,
        paid_at: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owed_payouts_are_read_off_their_own_index() {
    let Some(f) = fixture("mysql::board_payouts_owed", |_| {}).await else {
        return;
    };
    // Two periods recorded, the later one first; one payout of the earlier paid.
    let (earlier, later) = (day(20_000), day(20_001));
    let at = |ms: i64| Timestamp(T0.0 + ms);
    assert!(
        f.store
            .record_board_payouts(&later, &[payout(1, "alice"), payout(2, "bob")], at(20))
            .await
            .unwrap()
    );
    assert!(
        f.store
            .record_board_payouts(&earlier, &[payout(2, "dave"), payout(1, "carol")], at(10))
            .await
            .unwrap()
    );
    f.store
        .mark_board_payout_paid(&earlier, 2, at(30))
        .await
        .unwrap();

    let mut conn = f.database.connect().await;
    let rows: Vec<(i64, u32, Option<i64>, Option<i64>)> = sqlx::query_as(
        "SELECT number, payout_rank, paid_at, owed_since FROM board_payouts
         ORDER BY number, payout_rank",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        rows,
        [
            (20_000, 1, None, Some(at(10).as_millis())),
            (20_000, 2, Some(at(30).as_millis()), None),
            (20_001, 1, None, Some(at(20).as_millis())),
            (20_001, 2, None, Some(at(20).as_millis())),
        ],
        "owed_since is the recording time of the payouts owed only"
    );
    let owed: Vec<(i64, u32)> = f
        .store
        .unpaid_board_payouts(10)
        .await
        .unwrap()
        .into_iter()
        .map(|(board, payout)| (board.number, payout.rank))
        .collect();
    assert_eq!(owed, [(20_000, 1), (20_001, 1), (20_001, 2)]);

    // With many paid payouts (the usual table), the page is the start of the index's range of
    // the payouts owed: neither a scan of the table nor a sort.
    let paid: Vec<String> = (0..2_000)
        .map(|i| {
            format!(
                "(1, {}, 1, '', {}, 'u', 1, 'u', 1, 1, {i}, {i})",
                i / 100,
                i % 100 + 1
            )
        })
        .collect();
    conn.execute(AssertSqlSafe(format!(
        "INSERT INTO board_payouts (period, number, kind, room_id, payout_rank, subject, score,
             user_id, coins, rewards_version, recorded_at, paid_at)
         VALUES {}",
        paid.join(", ")
    )))
    .await
    .unwrap();
    conn.execute("ANALYZE TABLE board_payouts").await.unwrap();
    let plan: String = sqlx::query_scalar(
        "EXPLAIN FORMAT=JSON SELECT period, number, kind, room_id, payout_rank, subject, score,
             user_id, coins, rewards_version, paid_at
         FROM board_payouts
         WHERE owed_since IS NOT NULL
         ORDER BY owed_since, period, number, kind, room_id, payout_rank
         LIMIT 10",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert!(
        plan.contains(r#""key": "board_payouts_owed""#),
        "the query uses the index: {plan}"
    );
    assert!(!plan.contains("filesort"), "the index is in order: {plan}");
    assert_eq!(f.store.unpaid_board_payouts(10).await.unwrap().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn records_of_one_period_at_once_on_two_nodes_record_once() {
    let Some(f) = fixture("mysql::board_payouts_race", |_| {}).await else {
        return;
    };
    let mut settings = MySqlSettings::new(f.database.url.clone());
    settings.max_connections = 4;
    let second = Arc::new(MySqlStore::open(&settings).await.unwrap());
    let nodes = [f.store.clone(), second];
    const ROUNDS: i64 = 10;
    const RECORDS: usize = 8;
    for round in 0..ROUNDS {
        let board = day(round);
        let start = Arc::new(tokio::sync::Barrier::new(RECORDS));
        let mut tasks = Vec::new();
        for i in 0..RECORDS {
            let (store, board, start) = (nodes[i % 2].clone(), board.clone(), start.clone());
            // Every fourth record pays nobody: its period's row alone, outside a transaction.
            let payouts: Vec<BoardPayout> = if i % 4 == 3 {
                Vec::new()
            } else {
                (1..=3)
                    .map(|rank| payout(rank, &format!("u-{i}")))
                    .collect()
            };
            tasks.push(tokio::spawn(async move {
                start.wait().await;
                let recorded = store
                    .record_board_payouts(&board, &payouts, Timestamp(T0.0 + round))
                    .await;
                (payouts, recorded)
            }));
        }
        let mut winners = Vec::new();
        for task in tasks {
            let (payouts, recorded) = task.await.unwrap();
            if recorded.expect("every record gets its answer") {
                winners.push(payouts);
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: one record wins");
        assert_eq!(
            nodes[1].board_payouts(&board).await.unwrap(),
            Some(winners.pop().unwrap()),
            "round {round}: the winner's payouts, whole"
        );
    }
}

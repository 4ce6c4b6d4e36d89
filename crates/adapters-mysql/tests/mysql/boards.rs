//! The leaderboards' counts on MySQL: of counts of overlapping gifts at once on two nodes,
//! each in its own order (out of the rooms' positions), each gift is counted by exactly one,
//! and every entry holds each gift once.

use std::collections::BTreeSet;
use std::sync::Arc;

use adapters_mysql::{MySqlSettings, MySqlStore};
use room_app::ports::{BoardEntry, BoardGift, BoardId, BoardKind, BoardPeriod, Boards};
use room_domain::{Coins, Periods, Timestamp};

use crate::fixtures::{T0, fixture, room, user};

const DAY_MS: i64 = 86_400_000;

/// The gift at position `seq` of room `room_no` of day `day` (the rooms of each day are new):
/// `seq` coins from alice to bob.
fn gift(day: i64, room_no: u64, seq: u64) -> BoardGift {
    let at = Timestamp(T0.0 + day * DAY_MS + seq as i64);
    BoardGift {
        room_id: room(&format!("d{day}r{room_no}")),
        seq,
        sender: user("alice"),
        recipients: vec![user("bob")],
        value_per_recipient: Coins(seq as i64),
        at,
        periods: Periods::at(at, 0),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn overlapping_counts_at_once_on_two_nodes_count_each_gift_once() {
    let Some(f) = fixture("mysql::board_counts_race", |_| {}).await else {
        return;
    };
    let mut settings = MySqlSettings::new(f.database.url.clone());
    settings.max_connections = 4;
    let second = Arc::new(MySqlStore::open(&settings).await.unwrap());
    let nodes = [f.store.clone(), second];
    const ROUNDS: i64 = 6;
    const COUNTS: usize = 4;
    for day in 0..ROUNDS {
        let start = Arc::new(tokio::sync::Barrier::new(COUNTS));
        let mut tasks = Vec::new();
        let mut keys = BTreeSet::new();
        for count in 0..COUNTS {
            // Each count takes two thirds of the gifts of three rooms, the thirds shifted from
            // one count to the next, in an order of its own.
            let mut gifts: Vec<BoardGift> = (0..3)
                .flat_map(|room_no| (1..=30).map(move |seq| (room_no, seq)))
                .filter(|(_, seq)| !(seq + count as u64).is_multiple_of(3))
                .map(|(room_no, seq)| gift(day, room_no, seq))
                .collect();
            gifts.rotate_left(count * 7);
            if count % 2 == 1 {
                gifts.reverse();
            }
            keys.extend(gifts.iter().map(|g| (g.room_id.clone(), g.seq)));
            let (store, start) = (nodes[count % 2].clone(), start.clone());
            tasks.push(tokio::spawn(async move {
                start.wait().await;
                store.add_to_boards(&gifts).await
            }));
        }
        let mut counted = 0;
        for task in tasks {
            counted += task.await.unwrap().expect("every count gets its answer");
        }
        assert_eq!(
            counted as usize,
            keys.len(),
            "day {day}: each gift counted by exactly one count"
        );
        let value: i64 = keys.iter().map(|(_, seq)| *seq as i64).sum();
        let latest = keys.iter().map(|(_, seq)| *seq as i64).max().unwrap();
        let board = BoardId::new(
            BoardKind::Receivers,
            None,
            BoardPeriod::Day,
            &Periods::at(Timestamp(T0.0 + day * DAY_MS), 0),
        );
        assert_eq!(
            nodes[1].board_page(&board, None, 10).await.unwrap(),
            [BoardEntry {
                subject: "bob".into(),
                score: Coins(value),
                reached_at: Timestamp(T0.0 + day * DAY_MS + latest),
            }],
            "day {day}: each gift once on the app's board"
        );
    }
}

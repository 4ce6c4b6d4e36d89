//! The conformance suite of [`Boards`]: each gift counted once by its room's position (also
//! when two counts of it run at once), on every board and in every period it belongs to; a
//! refused count counts nothing; ranks ordered by score, then the instant it was reached, then
//! the subject, and pages that follow that order; boards replaced whole; old periods pruned.

use std::future::Future;
use std::sync::Arc;

use room_domain::{Coins, Periods, Timestamp};

use super::fixtures::{T0, expect_err, ok, room, same, user};
use crate::Error;
use crate::ports::{
    BoardEntry, BoardGift, BoardId, BoardKind, BoardPeriod, BoardStanding, Boards, MAX_BOARD_GIFTS,
    MAX_BOARD_PAGE,
};

/// Runs every check of [`Boards`], each against a fresh store from `fresh`.
pub async fn boards_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: Boards + 'static,
{
    gifts_count_on_every_board(fresh().await).await;
    gifts_count_once_by_position(fresh().await).await;
    keys_are_pruned_by_day(fresh().await).await;
    a_refused_count_counts_nothing(fresh().await).await;
    concurrent_counts_of_one_gift_count_it_once(fresh().await).await;
    ties_rank_by_instant_then_subject_and_pages_follow(fresh().await).await;
    boards_are_replaced_whole(fresh().await).await;
    old_periods_are_pruned(fresh().await).await;
}

const DAY_MS: i64 = 86_400_000;

/// A gift at position `seq` of `room_id`, `value` to each of `recipients`, `ms` after the
/// start of the day `days` after T0's.
fn gift(
    room_id: &str,
    seq: u64,
    sender: &str,
    recipients: &[&str],
    value: i64,
    days: i64,
    ms: i64,
) -> BoardGift {
    let at = Timestamp(T0.0 + days * DAY_MS + ms);
    BoardGift {
        room_id: room(room_id),
        seq,
        sender: user(sender),
        recipients: recipients.iter().map(|r| user(r)).collect(),
        value_per_recipient: Coins(value),
        at,
        periods: Periods::at(at, 0),
    }
}

fn board(kind: BoardKind, room_id: Option<&str>, period: BoardPeriod, days: i64) -> BoardId {
    BoardId::new(
        kind,
        room_id.map(room),
        period,
        &Periods::at(Timestamp(T0.0 + days * DAY_MS), 0),
    )
}

fn entry(subject: &str, score: i64, at_ms: i64) -> BoardEntry {
    BoardEntry {
        subject: subject.to_owned(),
        score: Coins(score),
        reached_at: Timestamp(T0.0 + at_ms),
    }
}

async fn page<S: Boards>(store: &S, board: &BoardId) -> Vec<BoardEntry> {
    ok(
        store.board_page(board, None, MAX_BOARD_PAGE).await,
        "board_page",
    )
}

async fn gifts_count_on_every_board<S: Boards>(store: Arc<S>) {
    use BoardKind::{Receivers, Rooms, Senders};
    use BoardPeriod::{Day, Month, Week};
    same(
        page(&*store, &board(Senders, None, Day, 0)).await,
        vec![],
        "an empty board",
    );
    // T0 is Sunday 2025-11-30: day 1 starts the next week and month.
    let gifts = [
        gift("r1", 1, "alice", &["bob", "carol"], 100, 0, 1_000),
        gift("r1", 2, "alice", &["bob"], 30, 0, 2_000),
        gift("r2", 1, "bob", &["alice"], 7, 1, 3_000),
        gift("r2", 2, "carol", &["alice"], 5, 1, 4_000),
    ];
    same(
        ok(store.add_to_boards(&gifts).await, "add_to_boards"),
        4,
        "every gift counted",
    );
    for period in [Day, Week, Month] {
        same(
            page(&*store, &board(Senders, None, period, 0)).await,
            vec![entry("alice", 230, 2_000)],
            "the app's senders of day 0's periods",
        );
        same(
            page(&*store, &board(Receivers, None, period, 0)).await,
            vec![entry("bob", 130, 2_000), entry("carol", 100, 1_000)],
            "the app's receivers of day 0's periods",
        );
        same(
            page(&*store, &board(Rooms, None, period, 0)).await,
            vec![entry("r1", 230, 2_000)],
            "the app's rooms of day 0's periods",
        );
        same(
            page(&*store, &board(Senders, Some("r1"), period, 0)).await,
            vec![entry("alice", 230, 2_000)],
            "r1's senders",
        );
        same(
            page(&*store, &board(Receivers, Some("r1"), period, 0)).await,
            vec![entry("bob", 130, 2_000), entry("carol", 100, 1_000)],
            "r1's receivers",
        );
        same(
            page(&*store, &board(Senders, Some("r2"), period, 0)).await,
            vec![],
            "r2 had no gift on day 0",
        );
        // Day 1 is in the next week and month.
        let day1 = DAY_MS;
        same(
            page(&*store, &board(Senders, None, period, 1)).await,
            vec![
                entry("bob", 7, day1 + 3_000),
                entry("carol", 5, day1 + 4_000),
            ],
            "the app's senders of day 1's periods",
        );
        same(
            page(&*store, &board(Receivers, Some("r2"), period, 1)).await,
            vec![entry("alice", 12, day1 + 4_000)],
            "r2's receivers of day 1's periods",
        );
        same(
            page(&*store, &board(Rooms, None, period, 1)).await,
            vec![entry("r2", 12, day1 + 4_000)],
            "the app's rooms of day 1's periods",
        );
    }
    same(
        ok(
            store
                .board_standing(&board(Receivers, None, Week, 0), "carol")
                .await,
            "board_standing",
        ),
        Some(BoardStanding {
            rank: 2,
            entry: entry("carol", 100, 1_000),
        }),
        "carol's standing",
    );
    same(
        ok(
            store
                .board_standing(&board(Receivers, None, Week, 0), "dave")
                .await,
            "board_standing",
        ),
        None,
        "no standing without an entry",
    );
    same(
        ok(
            store
                .board_standing(&board(Senders, None, Day, 1), "alice")
                .await,
            "board_standing",
        ),
        None,
        "alice sent nothing on day 1",
    );
}

async fn gifts_count_once_by_position<S: Boards>(store: Arc<S>) {
    let day = board(BoardKind::Senders, None, BoardPeriod::Day, 0);
    let first = [
        gift("r1", 1, "alice", &["bob"], 10, 0, 1_000),
        gift("r1", 2, "alice", &["bob"], 20, 0, 2_000),
    ];
    same(ok(store.add_to_boards(&first).await, "add"), 2, "counted");
    same(
        ok(store.add_to_boards(&first).await, "add again"),
        0,
        "a repeat counts nothing",
    );
    // Facts may come out of order (a broker's retry, a dead letter replayed): a position
    // not counted yet counts, before or after the others; one counted, or given twice in the
    // call, does not.
    let mixed = [
        gift("r1", 2, "alice", &["bob"], 20, 0, 2_000),
        gift("r1", 5, "alice", &["bob"], 50, 0, 5_000),
        gift("r1", 3, "alice", &["bob"], 30, 0, 3_000),
        gift("r1", 5, "alice", &["bob"], 50, 0, 5_000),
        gift("r2", 1, "alice", &["bob"], 1, 0, 4_000),
    ];
    same(
        ok(store.add_to_boards(&mixed).await, "add mixed"),
        3,
        "every key not counted before, once",
    );
    let late = [gift("r1", 4, "alice", &["bob"], 40, 0, 4_500)];
    same(
        ok(store.add_to_boards(&late).await, "add late"),
        1,
        "a position below the room's highest counts",
    );
    same(
        page(&*store, &day).await,
        vec![entry("alice", 151, 5_000)],
        "each gift once",
    );
    same(
        ok(store.add_to_boards(&[]).await, "add nothing"),
        0,
        "an empty count",
    );
    // A free gift keeps its key and adds no entry.
    let free = [gift("r3", 1, "zoe", &["bob"], 0, 0, 6_000)];
    same(
        ok(store.add_to_boards(&free).await, "add free"),
        1,
        "counted",
    );
    same(
        page(&*store, &day).await,
        vec![entry("alice", 151, 5_000)],
        "no entry for no value",
    );
    same(
        ok(store.add_to_boards(&free).await, "add free again"),
        0,
        "a free gift's key is kept",
    );
    same(
        ok(store.board_standing(&day, "zoe").await, "standing"),
        None,
        "the free gift's sender is not on the board",
    );
}

async fn a_refused_count_counts_nothing<S: Boards>(store: Arc<S>) {
    let day = board(BoardKind::Senders, None, BoardPeriod::Day, 0);
    let negative = [
        gift("r1", 1, "alice", &["bob"], 10, 0, 1_000),
        gift("r1", 2, "alice", &["bob"], -1, 0, 2_000),
    ];
    expect_err!(
        store.add_to_boards(&negative).await,
        Error::Invalid(_),
        "a negative value"
    );
    let too_many: Vec<BoardGift> = (1..=MAX_BOARD_GIFTS as u64 + 1)
        .map(|seq| gift("r1", seq, "alice", &["bob"], 1, 0, 1_000))
        .collect();
    expect_err!(
        store.add_to_boards(&too_many).await,
        Error::Invalid(_),
        "too many gifts"
    );
    let wide = [gift(
        "r1",
        1,
        "alice",
        &["bob", "carol"],
        i64::MAX / 2 + 1,
        0,
        1_000,
    )];
    expect_err!(
        store.add_to_boards(&wide).await,
        Error::Invalid(_),
        "a total past the largest amount"
    );
    same(page(&*store, &day).await, vec![], "nothing counted");
    // A score that would pass the largest amount once added to what is on the board.
    let big = [gift("r1", 1, "alice", &["bob"], i64::MAX - 5, 0, 1_000)];
    same(ok(store.add_to_boards(&big).await, "add big"), 1, "counted");
    let past = [
        gift("r2", 1, "carol", &["dave"], 1, 0, 2_000),
        gift("r1", 2, "alice", &["bob"], 6, 0, 3_000),
    ];
    expect_err!(
        store.add_to_boards(&past).await,
        Error::Invalid(_),
        "a score past the largest amount"
    );
    same(
        page(&*store, &day).await,
        vec![entry("alice", i64::MAX - 5, 1_000)],
        "the refused count counted nothing",
    );
    // Nor did it move the positions: the same gifts, within bounds, count.
    let fine = [
        gift("r2", 1, "carol", &["dave"], 1, 0, 2_000),
        gift("r1", 2, "alice", &["bob"], 5, 0, 3_000),
    ];
    same(ok(store.add_to_boards(&fine).await, "add"), 2, "counted");
    same(
        page(&*store, &day).await,
        vec![entry("alice", i64::MAX, 3_000), entry("carol", 1, 2_000)],
        "counted after the refusal",
    );
}

async fn concurrent_counts_of_one_gift_count_it_once<S: Boards + 'static>(store: Arc<S>) {
    let gifts: Vec<BoardGift> = (1..=20)
        .map(|seq| gift("r1", seq, "alice", &["bob"], 3, 0, seq as i64))
        .collect();
    let (a, b) = tokio::join!(store.add_to_boards(&gifts), store.add_to_boards(&gifts));
    let counted = ok(a, "first count") + ok(b, "second count");
    same(counted, 20, "each gift counted by one of the two");
    same(
        page(
            &*store,
            &board(BoardKind::Receivers, Some("r1"), BoardPeriod::Month, 0),
        )
        .await,
        vec![entry("bob", 60, 20)],
        "each gift once",
    );
}

async fn ties_rank_by_instant_then_subject_and_pages_follow<S: Boards>(store: Arc<S>) {
    let week = board(BoardKind::Senders, None, BoardPeriod::Week, 0);
    // T0 is a Sunday: the week of day 0 began six days before it.
    let gifts = [
        gift("r1", 1, "erin", &["x"], 50, -6, 0),
        gift("r1", 2, "dave", &["x"], 50, -5, 0),
        gift("r1", 3, "carol", &["x"], 50, -5, 0),
        gift("r1", 4, "bob", &["x"], 80, -4, 0),
        gift("r1", 5, "alice", &["x"], 10, -3, 0),
        gift("r1", 6, "erin", &["x"], 30, -2, 0),
    ];
    ok(store.add_to_boards(&gifts).await, "add");
    let expected = vec![
        entry("bob", 80, -4 * DAY_MS),
        entry("erin", 80, -2 * DAY_MS),
        entry("carol", 50, -5 * DAY_MS),
        entry("dave", 50, -5 * DAY_MS),
        entry("alice", 10, -3 * DAY_MS),
    ];
    same(page(&*store, &week).await, expected.clone(), "rank order");
    let mut read = Vec::new();
    let mut after = None;
    loop {
        let page = ok(store.board_page(&week, after.clone(), 2).await, "page");
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 2, "a page holds at most its limit");
        after = page.last().cloned();
        read.extend(page);
    }
    same(read, expected.clone(), "pages follow the rank order");
    // A cursor whose entry has left the board still places the next page.
    let gone = entry("carrie", 50, -5 * DAY_MS);
    same(
        ok(store.board_page(&week, Some(gone), 10).await, "page"),
        expected[3..].to_vec(),
        "after an entry no longer on the board",
    );
    for (rank, expected) in expected.iter().enumerate() {
        same(
            ok(
                store.board_standing(&week, &expected.subject).await,
                "standing",
            ),
            Some(BoardStanding {
                rank: rank as u64 + 1,
                entry: expected.clone(),
            }),
            "each standing",
        );
    }
    let many: Vec<BoardGift> = (0..MAX_BOARD_PAGE + 5)
        .map(|i| {
            let sender = format!("u{i:03}");
            gift("r9", u64::from(i) + 1, &sender, &["x"], 1, 0, 1)
        })
        .collect();
    ok(store.add_to_boards(&many).await, "add many");
    let day = board(BoardKind::Senders, Some("r9"), BoardPeriod::Day, 0);
    same(
        ok(store.board_page(&day, None, u32::MAX).await, "page").len(),
        MAX_BOARD_PAGE as usize,
        "a page holds at most MAX_BOARD_PAGE",
    );
}

async fn boards_are_replaced_whole<S: Boards>(store: Arc<S>) {
    let day = board(BoardKind::Receivers, None, BoardPeriod::Day, 0);
    let other = board(BoardKind::Receivers, None, BoardPeriod::Week, 0);
    ok(
        store
            .add_to_boards(&[gift("r1", 1, "alice", &["bob"], 10, 0, 1_000)])
            .await,
        "add",
    );
    let rebuilt = vec![entry("carol", 40, 500), entry("bob", 9, 700)];
    ok(store.replace_board(&day, &rebuilt).await, "replace_board");
    same(page(&*store, &day).await, rebuilt.clone(), "replaced whole");
    same(
        page(&*store, &other).await,
        vec![entry("bob", 10, 1_000)],
        "other boards untouched",
    );
    expect_err!(
        store
            .replace_board(&day, &[entry("dave", 1, 1), entry("dave", 2, 1)])
            .await,
        Error::Invalid(_),
        "a subject twice"
    );
    expect_err!(
        store.replace_board(&day, &[entry("dave", -1, 1)]).await,
        Error::Invalid(_),
        "a negative score"
    );
    let rooms_in_a_room = BoardId {
        room: Some(room("r1")),
        ..board(BoardKind::Rooms, None, BoardPeriod::Day, 0)
    };
    expect_err!(
        store.replace_board(&rooms_in_a_room, &[]).await,
        Error::Invalid(_),
        "rooms ranked in a room"
    );
    same(
        page(&*store, &day).await,
        rebuilt,
        "refusals change nothing",
    );
    // The positions counted stay: the gift replaced away does not count again.
    same(
        ok(
            store
                .add_to_boards(&[gift("r1", 1, "alice", &["bob"], 10, 0, 1_000)])
                .await,
            "add again",
        ),
        0,
        "positions survive a replace",
    );
    ok(store.replace_board(&day, &[]).await, "replace with nothing");
    same(page(&*store, &day).await, vec![], "emptied");
}

async fn old_periods_are_pruned<S: Boards>(store: Arc<S>) {
    let gifts: Vec<BoardGift> = (0..4)
        .map(|days| gift("r1", days as u64 + 1, "alice", &["bob"], 1, days, 0))
        .collect();
    ok(store.add_to_boards(&gifts).await, "add");
    let day = |days| board(BoardKind::Senders, None, BoardPeriod::Day, days);
    let before = day(2).number;
    // Each day holds 5 entries (two senders' boards, two receivers', the rooms').
    let first = ok(
        store.prune_boards(BoardPeriod::Day, before, 3).await,
        "prune_boards",
    );
    same(first, 3, "at most the limit");
    let mut total = first;
    loop {
        let deleted = ok(
            store.prune_boards(BoardPeriod::Day, before, 3).await,
            "prune_boards",
        );
        if deleted == 0 {
            break;
        }
        total += deleted;
    }
    same(total, 10, "days 0 and 1 pruned whole");
    same(page(&*store, &day(0)).await, vec![], "day 0 gone");
    same(page(&*store, &day(1)).await, vec![], "day 1 gone");
    same(
        page(&*store, &day(2)).await,
        vec![entry("alice", 1, 2 * DAY_MS)],
        "day 2 kept",
    );
    same(
        page(
            &*store,
            &board(BoardKind::Senders, None, BoardPeriod::Month, 1),
        )
        .await,
        vec![entry("alice", 3, 3 * DAY_MS)],
        "other periods kept",
    );
}

async fn keys_are_pruned_by_day<S: Boards>(store: Arc<S>) {
    let gifts: Vec<BoardGift> = (0..3)
        .map(|days| gift("r1", days as u64 + 1, "alice", &["bob"], 1, days, 0))
        .collect();
    ok(store.add_to_boards(&gifts).await, "add");
    let day2 = Timestamp(T0.0 + 2 * DAY_MS).day_key(0);
    let first = ok(store.prune_board_keys(day2, 1).await, "prune_board_keys");
    same(first, 1, "at most the limit");
    let second = ok(store.prune_board_keys(day2, 10).await, "prune_board_keys");
    same(second, 1, "days 0 and 1 only");
    same(
        ok(store.prune_board_keys(day2, 10).await, "prune_board_keys"),
        0,
        "nothing more",
    );
    // The keys of days 0 and 1 are forgotten (their gifts would count again); day 2's stays.
    same(
        ok(store.add_to_boards(&gifts).await, "add again"),
        2,
        "forgotten keys count again",
    );
    let month = board(BoardKind::Senders, None, BoardPeriod::Month, 2);
    same(
        page(&*store, &month).await,
        vec![entry("alice", 3, 2 * DAY_MS)],
        "December: day 1's gift counted again, day 2's once",
    );
}

//! Leaderboards: what the board consumer counts from the facts (once, in the periods of the
//! billing time zone, never robot gifts), pages and standings, a rebuild from the facts, and
//! the pruning of old periods.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use proptest::prelude::*;
use room_app::InMemoryStore;
use room_app::boards::{
    BoardConsumer, BoardCursor, BoardRetention, FactLog, board_at, board_from_facts, prune_boards,
    read_board, rebuild_board, whole_board,
};
use room_app::consumers::FactHandler;
use room_app::ports::{BoardEntry, BoardId, BoardKind, BoardPeriod, BoardsRef, Clock, OutboxRef};
use room_domain::{
    Coins, DayKey, Event, EventEnvelope, GiftId, GiftSent, OrderId, Periods, RoomId, Timestamp,
    UserId,
};

use super::support::{World, gift, uid};

/// 2025-11-30T00:00:00Z, a Sunday.
const T0: i64 = 1_764_460_800_000;
const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;
/// +08:00, the billing zone of these tests.
const ZONE: i32 = 8 * 3600;

/// A paid (or robot) gift fact at position `seq` of `room`.
fn fact(
    room: &str,
    seq: u64,
    sender: &str,
    recipients: &[&str],
    value: i64,
    at: i64,
    robot: bool,
) -> EventEnvelope {
    let recipients: Vec<UserId> = recipients.iter().map(|name| uid(name)).collect();
    let total = value * i64::try_from(recipients.len()).unwrap();
    EventEnvelope::new(
        RoomId::new(room).unwrap(),
        seq,
        Timestamp(at),
        &Event::RoomGiftSent(GiftSent {
            order_id: OrderId::new(format!("o-{room}-{seq}")).unwrap(),
            sender: uid(sender),
            recipients,
            gift_id: GiftId::new("rose").unwrap(),
            count: 1,
            unit_price: Coins(value),
            total_value: Coins(total),
            heat_added: total,
            fuel_added: if robot { 0 } else { total },
            lucky: None,
            robot,
            billing_version: None,
            sender_nickname: None,
            sender_avatar_url: None,
        }),
    )
}

fn entry(subject: &str, score: i64, at: i64) -> BoardEntry {
    BoardEntry {
        subject: subject.to_owned(),
        score: Coins(score),
        reached_at: Timestamp(at),
    }
}

fn day(text: &str) -> DayKey {
    DayKey::parse(text).unwrap()
}

fn board(kind: BoardKind, room: Option<&str>, period: BoardPeriod, on: &str) -> BoardId {
    board_at(
        kind,
        room.map(|room| RoomId::new(room).unwrap()),
        period,
        Some(day(on)),
        Timestamp(0),
        ZONE,
    )
    .unwrap()
}

#[tokio::test]
async fn period_edges_follow_the_billing_zone() {
    let store = Arc::new(InMemoryStore::new());
    let boards: BoardsRef = store.clone();
    let consumer = BoardConsumer::new(boards.clone(), ZONE);
    // Local (+08:00) instants: 2025-12-31 is a Wednesday; 2026-01-04 a Sunday; 2026-01-05 a
    // Monday. 16:00Z is local midnight.
    let local = |text: &str, ms_before_midnight: i64| day(text).start(ZONE).0 - ms_before_midnight;
    let facts = [
        // 2025-12-31 23:59:59.999 and 2026-01-01 00:00 (a day, a month and a year apart; the
        // same week).
        fact(
            "r1",
            1,
            "alice",
            &["bob"],
            10,
            local("2026-01-01", 1),
            false,
        ),
        fact(
            "r1",
            2,
            "alice",
            &["bob"],
            20,
            local("2026-01-01", 0),
            false,
        ),
        // Sunday 23:59:59.999 and Monday 00:00 (a week apart).
        fact(
            "r1",
            3,
            "alice",
            &["bob"],
            40,
            local("2026-01-05", 1),
            false,
        ),
        fact(
            "r1",
            4,
            "alice",
            &["bob"],
            80,
            local("2026-01-05", 0),
            false,
        ),
        // A robot gift counts nowhere.
        fact(
            "r1",
            5,
            "alice",
            &["bob"],
            1_000,
            local("2026-01-05", 0),
            true,
        ),
    ];
    assert!(consumer.handle_all(&facts).await.unwrap().is_ok());
    let score = |board: BoardId| {
        let boards = boards.clone();
        async move {
            whole_board(&boards, &board)
                .await
                .unwrap()
                .iter()
                .map(|entry| entry.score.0)
                .collect::<Vec<_>>()
        }
    };
    use BoardKind::Senders;
    use BoardPeriod::{Day, Month, Week};
    assert_eq!(score(board(Senders, None, Day, "2025-12-31")).await, [10]);
    assert_eq!(score(board(Senders, None, Day, "2026-01-01")).await, [20]);
    assert_eq!(score(board(Senders, None, Month, "2025-12-01")).await, [10]);
    assert_eq!(
        score(board(Senders, None, Month, "2026-01-31")).await,
        [140]
    );
    // The week of Monday 2025-12-29 holds the first three; Monday 2026-01-05 starts another.
    assert_eq!(score(board(Senders, None, Week, "2025-12-29")).await, [70]);
    assert_eq!(score(board(Senders, None, Week, "2026-01-04")).await, [70]);
    assert_eq!(score(board(Senders, None, Week, "2026-01-05")).await, [80]);
    assert_eq!(
        score(board(Senders, Some("r1"), Day, "2026-01-05")).await,
        [80]
    );
}

#[tokio::test]
async fn boards_follow_the_gifts_of_a_room_and_a_rebuild_equals_them() {
    let world = World::new().await;
    let room = world.open_room("r1", "alice", &["bob", "carol"]).await;
    world.fund("alice", 10_000).await;
    world.fund("bob", 10_000).await;
    let saga = world.saga();
    saga.send(gift(&room, "alice", "o-1", "rose", 2, &["bob", "carol"]))
        .await
        .unwrap();
    saga.send(gift(&room, "bob", "o-1", "rose", 3, &["carol"]))
        .await
        .unwrap();
    saga.send(gift(&room, "alice", "o-2", "rose", 1, &["bob"]))
        .await
        .unwrap();
    let outbox: OutboxRef = world.store.clone();
    let facts: Vec<EventEnvelope> = outbox
        .list_after(0, 10_000)
        .await
        .unwrap()
        .into_iter()
        .map(|row| row.envelope)
        .collect();
    let boards: BoardsRef = world.store.clone();
    let consumer = BoardConsumer::new(boards.clone(), ZONE);
    // Handed over twice, as after a restart: counted once.
    for _ in 0..2 {
        assert!(consumer.handle_all(&facts).await.unwrap().is_ok());
        for fact in &facts {
            consumer.handle(fact).await.unwrap();
        }
    }
    let now = world.clock.now();
    let at =
        |kind, room: Option<RoomId>, period| board_at(kind, room, period, None, now, ZONE).unwrap();
    let gifts = boards
        .board_page(
            &at(BoardKind::Senders, Some(room.clone()), BoardPeriod::Week),
            None,
            10,
        )
        .await
        .unwrap();
    let unit = super::support::catalog()
        .into_iter()
        .find(|gift| gift.gift_id.as_str() == "rose")
        .unwrap()
        .price
        .0;
    let scores: Vec<(String, i64)> = gifts
        .iter()
        .map(|entry| (entry.subject.clone(), entry.score.0))
        .collect();
    assert_eq!(
        scores,
        [("alice".to_owned(), 5 * unit), ("bob".to_owned(), 3 * unit)]
    );
    // Pages of one entry walk the receivers in rank order, with their ranks.
    let receivers = at(BoardKind::Receivers, None, BoardPeriod::Month);
    let mut cursor: Option<BoardCursor> = None;
    let mut walked = Vec::new();
    loop {
        let page = read_board(&boards, receivers.clone(), cursor.clone(), 1)
            .await
            .unwrap();
        walked.extend(
            page.entries
                .iter()
                .map(|ranked| (ranked.rank, ranked.entry.subject.clone())),
        );
        // The cursor survives its text.
        cursor = page
            .next
            .map(|next| BoardCursor::parse(&next.encode()).unwrap());
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(walked, [(1, "carol".to_owned()), (2, "bob".to_owned())]);
    // A rebuild from the facts equals every live board.
    let log = FactLog {
        outbox: outbox.clone(),
        kept_since: Timestamp(now.0 - 40 * DAY),
        consumer: None,
    };
    for kind in BoardKind::ALL {
        for period in BoardPeriod::ALL {
            let rooms = if kind == BoardKind::Rooms {
                vec![None]
            } else {
                vec![None, Some(room.clone())]
            };
            for board_room in rooms {
                let board = at(kind, board_room, period);
                let rebuilt = rebuild_board(&log, &boards, board.clone(), ZONE, false, now)
                    .await
                    .unwrap();
                assert!(rebuilt.equal(), "{board:?}: {rebuilt:?}");
                assert!(!rebuilt.live.is_empty(), "{board:?}");
                assert!(!rebuilt.applied);
            }
        }
    }
    // A board gone wrong is put right by a rebuild, once its day has closed and no fact of it
    // is on its way.
    let senders = at(BoardKind::Senders, None, BoardPeriod::Day);
    let right = whole_board(&boards, &senders).await.unwrap();
    boards
        .replace_board(&senders, &[entry("mallory", 1, 0)])
        .await
        .unwrap();
    let closed = Timestamp(room_app::boards::end_day(&senders).start(ZONE).0 + 1);
    let refused = |result: room_app::Result<room_app::boards::Rebuilt>| {
        matches!(result, Err(room_app::Error::Invalid(_)))
    };
    assert!(refused(
        rebuild_board(&log, &boards, senders.clone(), ZONE, true, now).await
    ));
    assert!(refused(
        rebuild_board(&log, &boards, senders.clone(), ZONE, true, closed).await
    ));
    outbox.mark_passed(i64::MAX, now, 10_000).await.unwrap();
    let rebuilt = rebuild_board(&log, &boards, senders.clone(), ZONE, true, closed)
        .await
        .unwrap();
    assert!(!rebuilt.equal() && rebuilt.applied);
    assert_eq!(whole_board(&boards, &senders).await.unwrap(), right);
    // A period older than the outbox keeps its facts is refused.
    let kept = FactLog {
        outbox: outbox.clone(),
        kept_since: now,
        consumer: None,
    };
    assert!(refused(
        rebuild_board(&kept, &boards, senders.clone(), ZONE, false, now).await
    ));
    // Rooms ranked in one room are no board.
    assert!(
        board_at(
            BoardKind::Rooms,
            Some(room.clone()),
            BoardPeriod::Day,
            None,
            now,
            ZONE
        )
        .is_err()
    );
}

#[tokio::test]
async fn old_periods_are_pruned_and_the_retained_stay() {
    let store = Arc::new(InMemoryStore::new());
    let boards: BoardsRef = store.clone();
    let consumer = BoardConsumer::new(boards.clone(), 0);
    let facts: Vec<EventEnvelope> = (0..40)
        .map(|n| {
            fact(
                "r1",
                n + 1,
                "alice",
                &["bob"],
                1,
                T0 + n as i64 * DAY,
                false,
            )
        })
        .collect();
    for chunk in facts.chunks(7) {
        assert!(consumer.handle_all(chunk).await.unwrap().is_ok());
    }
    let now = Timestamp(T0 + 39 * DAY);
    let retention = BoardRetention {
        days: 7,
        weeks: 2,
        months: 1,
        key_days: 7,
    };
    let deleted = prune_boards(&boards, retention, now, 0, 3).await.unwrap();
    let pages = |period, back: i64| {
        let boards = boards.clone();
        async move {
            let day = Timestamp(T0 + (39 - back) * DAY).day_key(0);
            let board = board_at(BoardKind::Senders, None, period, Some(day), now, 0).unwrap();
            whole_board(&boards, &board).await.unwrap().len()
        }
    };
    assert_eq!(
        pages(BoardPeriod::Day, 6).await,
        1,
        "the 7th day back stays"
    );
    assert_eq!(
        pages(BoardPeriod::Day, 7).await,
        0,
        "the 8th day back is gone"
    );
    assert_eq!(pages(BoardPeriod::Week, 7).await, 1, "last week stays");
    assert_eq!(
        pages(BoardPeriod::Week, 14).await,
        0,
        "the week before is gone"
    );
    assert_eq!(pages(BoardPeriod::Month, 0).await, 1, "this month stays");
    assert_eq!(pages(BoardPeriod::Month, 39).await, 0, "last month is gone");
    // 32 days × 5 entries, 3 or 4 weeks × 5, one month × 5.
    assert!(deleted >= 32 * 5, "{deleted}");
}

/// One step of a history: a gift applied (a fact), refused (no fact) or sent by a robot (a
/// fact that counts nowhere), and whether the consumer is handed the facts so far again.
#[derive(Debug, Clone)]
struct Step {
    room: usize,
    sender: usize,
    recipients: Vec<usize>,
    value: i64,
    /// Milliseconds since the step before.
    gap: i64,
    outcome: u8,
    redeliver: bool,
}

fn step() -> impl Strategy<Value = Step> {
    (
        0..3usize,
        0..4usize,
        proptest::sample::subsequence(vec![0usize, 1, 2, 3], 1..=3),
        0..1_000i64,
        prop_oneof![Just(0i64), 0..HOUR, Just(DAY - 1), 0..9 * DAY],
        0..3u8,
        proptest::bool::weighted(0.1),
    )
        .prop_map(
            |(room, sender, recipients, value, gap, outcome, redeliver)| Step {
                room,
                sender,
                recipients,
                value,
                gap,
                outcome,
                redeliver,
            },
        )
}

const USERS: [&str; 4] = ["u0", "u1", "u2", "u3"];

/// The boards computed directly from the applied gifts: (board, subject) → (score, latest).
fn direct(steps: &[(Step, i64)]) -> BTreeMap<BoardId, BTreeMap<String, (i64, i64)>> {
    let mut boards: BTreeMap<BoardId, BTreeMap<String, (i64, i64)>> = BTreeMap::new();
    // Free gifts (value 0) count nowhere either.
    for (step, at) in steps
        .iter()
        .filter(|(step, _)| step.outcome == 0 && step.value > 0)
    {
        let periods = Periods::at(Timestamp(*at), ZONE);
        let room = RoomId::new(format!("r{}", step.room)).unwrap();
        let total = step.value * step.recipients.len() as i64;
        for period in BoardPeriod::ALL {
            let mut add = |kind, in_room: bool, subject: String, value: i64| {
                let board = BoardId::new(kind, in_room.then(|| room.clone()), period, &periods);
                let entry = boards
                    .entry(board)
                    .or_default()
                    .entry(subject)
                    .or_insert((0, *at));
                entry.0 += value;
                entry.1 = entry.1.max(*at);
            };
            for in_room in [false, true] {
                add(
                    BoardKind::Senders,
                    in_room,
                    USERS[step.sender].into(),
                    total,
                );
                for recipient in &step.recipients {
                    add(
                        BoardKind::Receivers,
                        in_room,
                        USERS[*recipient].into(),
                        step.value,
                    );
                }
            }
            add(BoardKind::Rooms, false, room.to_string(), total);
        }
    }
    boards
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// For any history of applied, refused and robot gifts across periods, handed over in
    /// runs and partly again, every board equals the sums computed directly from the applied
    /// gifts, and a rebuild from the facts equals the live board.
    #[test]
    fn every_board_equals_the_sums_of_its_gifts(
        steps in proptest::collection::vec(step(), 1..60),
        run in 1..8usize,
        order in proptest::collection::vec(0..4u8, 60),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            let boards: BoardsRef = Arc::new(InMemoryStore::new());
            let consumer = BoardConsumer::new(boards.clone(), ZONE);
            let mut at = T0 - 3 * DAY;
            let mut seqs = [0u64; 3];
            let mut timed = Vec::new();
            let mut facts = Vec::new();
            for step in &steps {
                at += step.gap;
                timed.push((step.clone(), at));
                if step.outcome == 1 {
                    continue; // refused: no fact
                }
                seqs[step.room] += 1;
                let recipients: Vec<&str> =
                    step.recipients.iter().map(|r| USERS[*r]).collect();
                facts.push((
                    fact(
                        &format!("r{}", step.room),
                        seqs[step.room],
                        USERS[step.sender],
                        &recipients,
                        step.value,
                        at,
                        step.outcome == 2,
                    ),
                    step.redeliver,
                ));
            }
            let envelopes: Vec<EventEnvelope> =
                facts.iter().map(|(fact, _)| fact.clone()).collect();
            // Handed over out of order, within a room too (a broker's retry, a replayed dead
            // letter): each fact moves back by up to three places.
            let mut delivered: Vec<(usize, EventEnvelope, bool)> = facts
                .iter()
                .enumerate()
                .map(|(i, (fact, again))| (i + usize::from(order[i % order.len()]), fact.clone(), *again))
                .collect();
            delivered.sort_by_key(|(place, _, _)| *place);
            let (delivered, again): (Vec<EventEnvelope>, Vec<bool>) =
                delivered.into_iter().map(|(_, fact, again)| (fact, again)).unzip();
            for (i, chunk) in delivered.chunks(run).enumerate() {
                assert!(consumer.handle_all(chunk).await.unwrap().is_ok());
                if again[i * run] {
                    // Handed over again from the start, as after a rebalance.
                    let through = (i + 1) * run;
                    assert!(consumer
                        .handle_all(&delivered[..through.min(delivered.len())])
                        .await
                        .unwrap()
                        .is_ok());
                }
            }
            let expected = direct(&timed);
            // Every board any step could touch, empty ones included.
            let mut ids: BTreeSet<BoardId> = expected.keys().cloned().collect();
            for (_, at) in &timed {
                let periods = Periods::at(Timestamp(*at), ZONE);
                for period in BoardPeriod::ALL {
                    for kind in BoardKind::ALL {
                        ids.insert(BoardId::new(kind, None, period, &periods));
                    }
                    for room in 0..3 {
                        let room = RoomId::new(format!("r{room}")).unwrap();
                        for kind in [BoardKind::Senders, BoardKind::Receivers] {
                            ids.insert(BoardId::new(kind, Some(room.clone()), period, &periods));
                        }
                    }
                }
            }
            for board in ids {
                let mut want: Vec<BoardEntry> = expected
                    .get(&board)
                    .map(|subjects| {
                        subjects
                            .iter()
                            .map(|(subject, (score, at))| entry(subject, *score, *at))
                            .collect()
                    })
                    .unwrap_or_default();
                want.sort_by(|a, b| {
                    b.score
                        .cmp(&a.score)
                        .then(a.reached_at.cmp(&b.reached_at))
                        .then(a.subject.cmp(&b.subject))
                });
                let live = whole_board(&boards, &board).await.unwrap();
                assert_eq!(&live, &want, "{board:?}");
                let rebuilt = board_from_facts(&envelopes, &board, ZONE).unwrap();
                assert_eq!(rebuilt, live, "rebuilt {board:?}");
            }
        });
    }
}

/// A wallet whose `fail`-th credit from now fails: before it moves coins (`after` false), or
/// after (`after` true: the process died once the credit committed).
struct FlakyWallet {
    inner: Arc<InMemoryStore>,
    credits: std::sync::atomic::AtomicUsize,
    fail: usize,
    after: bool,
}

#[async_trait::async_trait]
impl room_app::ports::Wallet for FlakyWallet {
    async fn debit(&self, op_id: &str, user: &UserId, amount: Coins) -> room_app::Result<Coins> {
        self.inner.debit(op_id, user, amount).await
    }

    async fn credit(
        &self,
        op_id: &str,
        kind: room_app::ports::CreditKind,
        user: &UserId,
        amount: Coins,
    ) -> room_app::Result<Coins> {
        let n = self
            .credits
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        let crash = || room_app::Error::Unavailable("the process died".into());
        if n == self.fail && !self.after {
            return Err(crash());
        }
        let balance = self.inner.credit(op_id, kind, user, amount).await?;
        if n == self.fail {
            return Err(crash());
        }
        Ok(balance)
    }

    async fn settle_debit(&self, op_id: &str) -> room_app::Result<room_app::ports::DebitStatus> {
        self.inner.settle_debit(op_id).await
    }

    async fn balance(&self, user: &UserId) -> room_app::Result<Coins> {
        self.inner.balance(user).await
    }
}

#[tokio::test]
async fn closed_periods_pay_their_ranks_once_through_crashes() {
    use room_app::boards::rewards::{RewardPayer, change_board_rewards, seed_board_rewards};
    use room_app::ports::{BoardRewardsRef, RewardTable};

    let world = World::new().await;
    let room = world.open_room("r1", "alice", &["bob", "carol"]).await;
    for name in ["alice", "bob", "carol"] {
        world.fund(name, 10_000).await;
    }
    let saga = world.saga();
    for (sender, order, count) in [
        ("alice", "o-1", 30),
        ("bob", "o-1", 20),
        ("carol", "o-1", 10),
    ] {
        let to = if sender == "alice" { "bob" } else { "alice" };
        saga.send(gift(&room, sender, order, "rose", count, &[to]))
            .await
            .unwrap();
    }
    let boards: BoardsRef = world.store.clone();
    let outbox: OutboxRef = world.store.clone();
    let facts: Vec<EventEnvelope> = outbox
        .list_after(0, 10_000)
        .await
        .unwrap()
        .into_iter()
        .map(|row| row.envelope)
        .collect();
    assert!(
        BoardConsumer::new(boards.clone(), ZONE)
            .handle_all(&facts)
            .await
            .unwrap()
            .is_ok()
    );
    let rewards: BoardRewardsRef = world.store.clone();
    let table = |board, period, ranks: &[i64]| RewardTable {
        board,
        period,
        ranks: ranks.iter().map(|coins| Coins(*coins)).collect(),
    };
    seed_board_rewards(
        &rewards,
        &[table(BoardKind::Senders, BoardPeriod::Day, &[100, 50])],
    )
    .await
    .unwrap();
    // Tables change by compare-and-set on the version, and bad ones are refused.
    assert!(matches!(
        change_board_rewards(&rewards, 0, vec![]).await,
        Err(room_app::Error::Conflict(_))
    ));
    assert!(matches!(
        change_board_rewards(
            &rewards,
            1,
            vec![table(BoardKind::Senders, BoardPeriod::Day, &[-1])]
        )
        .await,
        Err(room_app::Error::Invalid(_))
    ));
    let current = change_board_rewards(
        &rewards,
        1,
        vec![
            table(BoardKind::Senders, BoardPeriod::Day, &[100, 50]),
            table(BoardKind::Rooms, BoardPeriod::Day, &[30, 20]),
        ],
    )
    .await
    .unwrap();
    assert_eq!(current.version, 2);
    let before: Vec<i64> = {
        let mut balances = Vec::new();
        for name in ["alice", "bob", "carol"] {
            balances.push(world.balance(name).await.0);
        }
        balances
    };
    let payer = |fail, after| RewardPayer {
        boards: boards.clone(),
        rewards: rewards.clone(),
        wallet: Arc::new(FlakyWallet {
            inner: world.store.clone(),
            credits: Default::default(),
            fail,
            after,
        }),
        directory: world.store.clone(),
        outbox: world.store.clone(),
        consumer: Some((world.store.clone() as _, "boards".to_owned())),
        utc_offset_secs: ZONE,
        delay_secs: 600,
    };
    let now = world.clock.now();
    let today = board_at(BoardKind::Senders, None, BoardPeriod::Day, None, now, ZONE).unwrap();
    // Before the day closes, and until the delay after, nothing is recorded.
    let closes = room_app::boards::end_day(&today).start(ZONE).0;
    for at in [now.0, closes + 599_000] {
        assert_eq!(payer(0, false).pay(Timestamp(at), 100).await.unwrap(), 0);
        assert_eq!(rewards.board_payouts(&today).await.unwrap(), None);
    }
    // While a fact of the day is still on its way (undelivered in the outbox), the day waits.
    let after_delay = Timestamp(closes + 600_000);
    assert_eq!(payer(0, false).pay(after_delay, 100).await.unwrap(), 0);
    assert_eq!(rewards.board_payouts(&today).await.unwrap(), None);
    // The rows count as delivered (as when a broker took them), but the board consumer has
    // not read them: the day still waits.
    outbox
        .mark_passed(i64::MAX, Timestamp(closes), 10_000)
        .await
        .unwrap();
    assert_eq!(payer(0, false).pay(after_delay, 100).await.unwrap(), 0);
    assert_eq!(rewards.board_payouts(&today).await.unwrap(), None);
    // The board consumer has passed every row.
    let last = outbox
        .list_after(0, 10_000)
        .await
        .unwrap()
        .last()
        .unwrap()
        .id;
    let positions: room_app::ports::ConsumerPositionsRef = world.store.clone();
    assert!(
        positions
            .advance_position("boards", None, last)
            .await
            .unwrap()
    );
    // The first pass pays rank 1 of the senders, dies after crediting rank 2 (the process
    // died once the credit committed), and pays the room's rank 1.
    assert_eq!(payer(2, true).pay(after_delay, 100).await.unwrap(), 2);
    let recorded = rewards.board_payouts(&today).await.unwrap().unwrap();
    let owed: Vec<(u32, String, i64, bool)> = recorded
        .iter()
        .map(|p| (p.rank, p.subject.clone(), p.coins.0, p.paid_at.is_some()))
        .collect();
    assert_eq!(
        owed,
        [(1, "alice".into(), 100, true), (2, "bob".into(), 50, false)]
    );
    // The next pass fails bob's credit before it moves coins; the one after pays it again,
    // and the wallet moves it once.
    assert_eq!(payer(1, false).pay(after_delay, 100).await.unwrap(), 0);
    assert_eq!(payer(0, false).pay(after_delay, 100).await.unwrap(), 1);
    assert_eq!(payer(0, false).pay(after_delay, 100).await.unwrap(), 0);
    assert!(rewards.unpaid_board_payouts(100).await.unwrap().is_empty());
    let rooms = BoardId {
        kind: BoardKind::Rooms,
        ..today.clone()
    };
    let room_payouts = rewards.board_payouts(&rooms).await.unwrap().unwrap();
    assert_eq!(
        room_payouts.len(),
        1,
        "one room on the board: {room_payouts:?}"
    );
    assert_eq!(
        room_payouts[0].user,
        uid("alice"),
        "the room's owner is paid"
    );
    assert_eq!(room_payouts[0].rewards_version, 2);
    let mut after = Vec::new();
    for name in ["alice", "bob", "carol"] {
        after.push(world.balance(name).await.0);
    }
    assert_eq!(
        after,
        [before[0] + 100 + 30, before[1] + 50, before[2]],
        "each rank paid exactly once"
    );
    // A later pass records nothing again for the same day.
    assert_eq!(
        payer(0, false)
            .pay(Timestamp(closes + 3_600_000), 100)
            .await
            .unwrap(),
        0
    );
}

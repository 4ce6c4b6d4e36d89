//! The leaderboards' rewards: the reward tables seeded from the configuration and changed by
//! operators ([`change_board_rewards`]), and the pass that pays each closed period's top ranks
//! ([`RewardPayer`]).
//!
//! A board of the whole app with a reward table pays once its period has closed, `delay_secs`
//! more have passed, and no fact of the period is still on its way: the oldest undelivered
//! outbox row is of a later instant, and without a broker so is the next row the board
//! consumer has to read (with Kafka a row is delivered once it is published, so the board
//! consumer's own lag on the topic must stay below `delay_secs`, which its
//! `room_facts_lag_seconds` shows). The pass then reads the board's top ranks, records what each rank is owed (the user, or on the
//! board of rooms the room's owner, and the coins of the table current then) in one step that
//! succeeds once per board and period, then credits each recorded payout through the wallet
//! (a [`CreditKind::BoardReward`] credit whose operation id names the board, the period and
//! the rank, so a credit repeated after a crash moves no more coins) and marks it paid. A pass
//! stopped anywhere pays what was recorded, once, when it runs again; a payout the wallet
//! refuses stays owed, is counted, and does not hold back the others.
//!
//! Metrics: `room_board_rewards_recorded_total` (payouts recorded),
//! `room_board_rewards_waiting_total` (closed periods a pass left for later: facts of theirs
//! still on their way),
//! `room_board_rewards_paid_total` and `room_board_reward_coins_total` (payouts credited and
//! their coins), `room_board_reward_failures_total` (payouts or periods a pass passed over).

use room_domain::{Periods, RoomId, Timestamp};

use super::{end_day, first_day, in_flight, whole_board_top};
use crate::error::{Error, Result};
use crate::ids::SYSTEM_ID_PREFIX;
use crate::ports::{
    BoardId, BoardKind, BoardPayout, BoardRewardsRef, BoardsRef, ConsumerPositionsRef, CreditKind,
    OutboxRef, RewardTable, RewardTables, RoomDirectoryRef, WalletRef,
};

/// The tables stored as version 1 when the store has none: `tables` (the configuration's)
/// unless another process stored a version first. Returns the current tables. Refuses
/// invalid `tables` ([`Error::Invalid`]).
pub async fn seed_board_rewards(
    store: &BoardRewardsRef,
    tables: &[RewardTable],
) -> Result<RewardTables> {
    if let Some(current) = store.current_board_rewards().await? {
        return Ok(current);
    }
    let first = RewardTables {
        version: 1,
        tables: tables.to_vec(),
    };
    if let Some(problem) = first.problem() {
        return Err(Error::Invalid(format!("board rewards: {problem}")));
    }
    match store.put_board_rewards(&first).await {
        Ok(()) => Ok(first),
        Err(Error::Conflict(_)) => store
            .current_board_rewards()
            .await?
            .ok_or_else(|| Error::Conflict("the board rewards vanished".into())),
        Err(other) => Err(other),
    }
}

/// Stores `tables` as the next version if the current one is still `expected_version` (0:
/// none stored): [`Error::Conflict`] otherwise, [`Error::Invalid`] for tables
/// [`RewardTables::problem`] refuses. Returns the tables stored. Periods that closed before
/// are paid by the tables current when their payouts are recorded.
pub async fn change_board_rewards(
    store: &BoardRewardsRef,
    expected_version: u64,
    tables: Vec<RewardTable>,
) -> Result<RewardTables> {
    let version = expected_version
        .checked_add(1)
        .ok_or_else(|| Error::Invalid(format!("expected_version {expected_version}")))?;
    let tables = RewardTables { version, tables };
    if let Some(problem) = tables.problem() {
        return Err(Error::Invalid(problem));
    }
    store
        .put_board_rewards(&tables)
        .await
        .map_err(|error| match error {
            Error::Conflict(_) => Error::Conflict(format!(
                "the board rewards are no longer at version {expected_version}"
            )),
            other => other,
        })?;
    Ok(tables)
}

/// The wallet operation id that pays `rank` of `board`'s period:
/// `sys-board-{board}-{period}-{first day}-{rank}` (`sys-board-senders-week-2026-11-30-1`). A
/// client's id never starts with `sys-`.
pub fn reward_op_id(board: &BoardId, rank: u32) -> String {
    format!(
        "{SYSTEM_ID_PREFIX}board-{}-{}-{}-{rank}",
        board.kind.as_str(),
        board.period.as_str(),
        first_day(board)
    )
}

/// What a reward pass reads and writes.
pub struct RewardPayer {
    /// The boards.
    pub boards: BoardsRef,
    /// The reward tables and payouts.
    pub rewards: BoardRewardsRef,
    /// Where rewards are credited.
    pub wallet: WalletRef,
    /// Each room's owner (its summary), for the board of rooms.
    pub directory: RoomDirectoryRef,
    /// The outbox, whose oldest undelivered fact says whether a period may still be counted.
    pub outbox: OutboxRef,
    /// Where the board consumer stands in the outbox, and its name, when it reads the facts
    /// from the outbox (no broker): a period waits until the consumer has passed its facts,
    /// also when it starts afresh behind rows delivered long ago.
    pub consumer: Option<(ConsumerPositionsRef, String)>,
    /// The billing time zone, seconds east of UTC.
    pub utc_offset_secs: i32,
    /// How long after a period closes it pays, in seconds.
    pub delay_secs: u32,
}

/// How many closed periods of each table a pass looks at: the latest one that may pay and the
/// one before, so a pass down for less than a period misses none.
const CLOSED_PERIODS: i64 = 2;

impl RewardPayer {
    /// Records the payouts of the periods that closed `delay_secs` before `now`, then pays at
    /// most `limit` owed payouts; returns how many were paid.
    pub async fn pay(&self, now: Timestamp, limit: u32) -> Result<u64> {
        let Some(tables) = self.rewards.current_board_rewards().await? else {
            return Ok(0);
        };
        // Facts committed before this instant may still be on their way to the boards.
        let in_flight = in_flight(&self.outbox, self.consumer.as_ref()).await?;
        for table in &tables.tables {
            if let Err(error) = self.record_closed(&tables, table, now, in_flight).await {
                metrics::counter!("room_board_reward_failures_total").increment(1);
                tracing::warn!(
                    board = table.board.as_str(),
                    period = table.period.as_str(),
                    %error,
                    "a closed period's rewards cannot be recorded now; tried again next pass"
                );
            }
        }
        self.pay_owed(now, limit).await
    }

    /// The boards of `table` whose period closed `delay_secs` before `now`, the latest
    /// [`CLOSED_PERIODS`].
    fn closed(&self, table: &RewardTable, now: Timestamp) -> Vec<BoardId> {
        let ready = Timestamp(now.0 - i64::from(self.delay_secs) * 1_000);
        let current = BoardId::new(
            table.board,
            None,
            table.period,
            &Periods::at(ready, self.utc_offset_secs),
        );
        (1..=CLOSED_PERIODS)
            .rev()
            .map(|back| BoardId {
                number: current.number - back,
                ..current.clone()
            })
            .filter(|board| end_day(board).start(self.utc_offset_secs) <= ready)
            .collect()
    }

    async fn record_closed(
        &self,
        tables: &RewardTables,
        table: &RewardTable,
        now: Timestamp,
        in_flight: Option<Timestamp>,
    ) -> Result<()> {
        for board in self.closed(table, now) {
            let end = end_day(&board).start(self.utc_offset_secs);
            if in_flight.is_some_and(|oldest| oldest < end) {
                // A fact of the period may not be counted yet: the next pass looks again.
                metrics::counter!("room_board_rewards_waiting_total").increment(1);
                continue;
            }
            if self.rewards.board_payouts(&board).await?.is_some() {
                continue;
            }
            let top = whole_board_top(&self.boards, &board, table.ranks.len()).await?;
            let mut payouts = Vec::new();
            for (entry, (coins, rank)) in top.into_iter().zip(table.ranks.iter().zip(1u32..)) {
                if coins.0 <= 0 {
                    continue;
                }
                let Some(user) = self.payee(board.kind, &entry.subject).await? else {
                    metrics::counter!("room_board_reward_failures_total").increment(1);
                    tracing::warn!(subject = %entry.subject, rank, "a board's winner has no owner to pay; passed over");
                    continue;
                };
                payouts.push(BoardPayout {
                    rank,
                    subject: entry.subject,
                    score: entry.score,
                    user,
                    coins: *coins,
                    rewards_version: tables.version,
                    paid_at: None,
                });
            }
            if self
                .rewards
                .record_board_payouts(&board, &payouts, now)
                .await?
            {
                metrics::counter!("room_board_rewards_recorded_total")
                    .increment(payouts.len() as u64);
            }
        }
        Ok(())
    }

    /// Who a winner of a `kind` board is paid: the user, or the room's owner.
    async fn payee(&self, kind: BoardKind, subject: &str) -> Result<Option<room_domain::UserId>> {
        if kind != BoardKind::Rooms {
            return room_domain::UserId::new(subject)
                .map(Some)
                .map_err(Error::corrupt);
        }
        let room = RoomId::new(subject).map_err(Error::corrupt)?;
        Ok(self
            .directory
            .get_summary(&room)
            .await?
            .map(|summary| summary.owner))
    }

    async fn pay_owed(&self, now: Timestamp, limit: u32) -> Result<u64> {
        let owed = self.rewards.unpaid_board_payouts(limit).await?;
        let mut paid = 0;
        for (board, payout) in owed {
            let op_id = reward_op_id(&board, payout.rank);
            let credited = self
                .wallet
                .credit(&op_id, CreditKind::BoardReward, &payout.user, payout.coins)
                .await;
            let marked = match credited {
                Ok(_) => {
                    self.rewards
                        .mark_board_payout_paid(&board, payout.rank, now)
                        .await
                }
                Err(error) => Err(error),
            };
            match marked {
                Ok(()) => {
                    paid += 1;
                    metrics::counter!("room_board_rewards_paid_total").increment(1);
                    metrics::counter!("room_board_reward_coins_total")
                        .increment(u64::try_from(payout.coins.0).unwrap_or(0));
                }
                Err(error) => {
                    metrics::counter!("room_board_reward_failures_total").increment(1);
                    tracing::warn!(%op_id, %error, "a board reward cannot be paid now; tried again next pass");
                }
            }
        }
        Ok(paid)
    }
}

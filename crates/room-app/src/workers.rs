//! Background work: firing durable timers into their rooms, evicting members whose heartbeat
//! stopped, paying out rocket rewards, recovering unfinished gift orders, publishing the
//! outbox to the broker and deleting what it delivered long ago, and pruning the room logs
//! behind their snapshots. Each pass is a function returning what it did; [`run_every`] loops
//! one until cancelled, and [`run_claimed`] does so only while this process holds the pass's
//! [`WorkClaims`](crate::ports::WorkClaims) claim, so that the processes sharing a store
//! never run one pass at once.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::time::Duration;

use room_domain::{CommandKind, Rejection, RoomId, Timestamp};
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::ports::{
    CellStoreRef, ClockRef, EventPublisherRef, OutboxMessage, OutboxRef, PayoutsRef, Published,
    StaleMember, TimersRef, WorkClaimsRef,
};
use crate::service::RoomService;

/// Counts an item a pass left to the node that runs its room.
fn left_to_owner(worker: &'static str) {
    metrics::counter!("room_background_left_to_owner_total", "worker" => worker).increment(1);
}

/// Counts an item a pass could not settle now (its room unreachable, a retryable error): it
/// stays for a later pass, and this pass goes on past it.
fn skipped(worker: &'static str) {
    metrics::counter!("room_background_skipped_total", "worker" => worker).increment(1);
}

/// What became of one item of a pass.
enum Outcome {
    /// Done with (fired, evicted, dropped as stale).
    Done,
    /// Left for a later pass without a fault: another live node runs its room, or the room
    /// finds it not due yet.
    Left,
}

/// Fires every timer due now into its room's cell, until `limit` fired; a timer of a room
/// another live node runs is left to that node's pass. A timer whose command the room refuses
/// (stale: another seat session, a re-armed rocket) is dropped; one that hit an error (its
/// room unreachable: a dead node's lease not yet expired; a retryable error; a fault of the
/// service), or that the room finds not due yet (its clock behind this one's), stays for the
/// next pass, and this pass pages on past it (`room_background_skipped_total{worker="timers"}`),
/// so timers that keep failing never hold back the others, however many they are. Returns
/// how many fired.
pub async fn fire_due_timers(service: &RoomService, timers: &TimersRef, limit: u32) -> Result<u64> {
    let now = service.ports().clock.now();
    let limit = limit.max(1);
    let mut fired = 0;
    let mut after = None;
    'pages: loop {
        let page = timers.list_due(now, after.take(), limit).await?;
        let more = page.len() == limit as usize;
        for timer in page {
            after = Some(timer.cursor());
            match fire_timer(service, timers, &timer).await {
                Ok(Outcome::Done) => {
                    fired += 1;
                    if fired == u64::from(limit) {
                        break 'pages;
                    }
                }
                Ok(Outcome::Left) => {}
                Err(error) => {
                    skipped("timers");
                    tracing::debug!(timer = %timer.timer_id, error = %error, "timer deferred");
                }
            }
        }
        if !more {
            break;
        }
    }
    metrics::counter!("room_timers_fired_total").increment(fired);
    Ok(fired)
}

/// Fires one timer; an error leaves it armed.
async fn fire_timer(
    service: &RoomService,
    timers: &TimersRef,
    timer: &crate::ports::Timer,
) -> Result<Outcome> {
    if service.runtime().leaves_to_owner(&timer.room_id).await? {
        left_to_owner("timers");
        return Ok(Outcome::Left);
    }
    match service
        .system_command(&timer.room_id, timer.command.clone())
        .await
    {
        Err(Error::Rejected(
            Rejection::RocketNotReady { .. } | Rejection::PublishDeadlineAhead { .. },
        )) => {
            // Dropping it would strand an ignited rocket (its rewards unpaid) or leave a
            // silent user on the seat for good.
            metrics::counter!("room_timers_early_total").increment(1);
            tracing::debug!(timer = %timer.timer_id, "the room's clock is behind: timer kept");
            Ok(Outcome::Left)
        }
        Ok(_) | Err(Error::Rejected(_)) => {
            timers.delete(&timer.timer_id, timer.due_at).await?;
            Ok(Outcome::Done)
        }
        Err(error) if error.is_retryable() => Err(error),
        Err(error @ (Error::Internal(_) | Error::Corrupt(_))) => {
            // A fault of the service: keep the timer (a rocket's launch owes payouts) for a
            // person, and for the pass after the fix.
            metrics::counter!("room_timer_faults_total").increment(1);
            tracing::error!(timer = %timer.timer_id, error = %error, "timer failed; kept");
            Err(error)
        }
        Err(error) => {
            tracing::error!(timer = %timer.timer_id, error = %error, "timer failed; dropping it");
            timers.delete(&timer.timer_id, timer.due_at).await?;
            Ok(Outcome::Left)
        }
    }
}

/// Evicts members whose last heartbeat is older than `timeout`, until `limit` left, but those
/// of rooms another live node runs (that node's pass evicts them). A member whose eviction
/// failed (their room unreachable, a retryable error) stays for the next pass, and this pass
/// pages on past them (`room_background_skipped_total{worker="presence"}`). Returns how many
/// left.
///
/// Each eviction is conditional on the heartbeat the listing saw: presence forgets the member
/// only if that is still their last heartbeat (one that came since keeps them), and the room
/// evicts them only if they joined before it (one who left and came back since stays).
pub async fn evict_stale_members(
    service: &RoomService,
    timeout: Duration,
    limit: u32,
) -> Result<u64> {
    let ports = service.ports();
    let now = ports.clock.now();
    let cutoff = Timestamp(now.0 - i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX));
    let limit = limit.max(1);
    let mut evicted = 0;
    let mut after = None;
    'pages: loop {
        let page = ports
            .presence
            .list_stale(cutoff, after.take(), limit)
            .await?;
        let more = page.len() == limit as usize;
        for stale in page {
            after = Some(stale.cursor());
            match evict(service, stale).await {
                Ok(Outcome::Done) => {
                    evicted += 1;
                    if evicted == u64::from(limit) {
                        break 'pages;
                    }
                }
                Ok(Outcome::Left) => {}
                Err(error) => {
                    skipped("presence");
                    tracing::debug!(error = %error, "eviction deferred");
                }
            }
        }
        if !more {
            break;
        }
    }
    metrics::counter!("room_presence_evicted_total").increment(evicted);
    Ok(evicted)
}

/// Evicts one stale member; an error leaves them in presence as last seen.
async fn evict(service: &RoomService, stale: StaleMember) -> Result<Outcome> {
    let ports = service.ports();
    let StaleMember {
        room_id,
        user,
        seen,
    } = stale;
    if service.runtime().leaves_to_owner(&room_id).await? {
        left_to_owner("presence");
        return Ok(Outcome::Left);
    }
    // From here on the member counts as gone: a heartbeat that comes later finds them
    // evicted, as one that comes after the eviction would.
    if !ports.presence.remove_if_seen(&room_id, &user, seen).await? {
        metrics::counter!("room_presence_eviction_skipped_total").increment(1);
        return Ok(Outcome::Left);
    }
    let evict = CommandKind::Evict {
        user: user.clone(),
        seen: Some(seen),
    };
    match service.system_command(&room_id, evict).await {
        Ok(_) => {
            // A join of the same room racing the eviction may have set the record again:
            // the room follows the record (clearing it if the eviction took the user out).
            if let Err(error) = service.settle(&room_id, &user, None).await {
                tracing::debug!(room_id = %room_id, error = %error, "a room was not settled after an eviction");
            }
            Ok(Outcome::Done)
        }
        Err(Error::Rejected(Rejection::RoomNotFound | Rejection::RoomClosed)) => Ok(Outcome::Done),
        Err(error) => {
            // Put the member back as last seen, for the next pass (unless they have come
            // back meanwhile).
            ports.presence.restore(&room_id, &user, seen).await?;
            tracing::debug!(room_id = %room_id, "eviction deferred");
            Err(error)
        }
    }
}

/// Credits owed rewards (idempotent by their operation ids), oldest first, and forgets them
/// once paid; at most `limit` payments per pass.
///
/// A credit the wallet definitely refuses (a balance that would overflow) stays owed: it is
/// logged as an error and counted under `room_payouts_refused_total`, and the pass goes on
/// past it, paging on after the last refused one, so refused rewards never hold back the
/// others however many they are. A retryable failure (the wallet unavailable) ends the
/// pass; the next one tries again.
pub async fn pay_out(service: &RoomService, payouts: &PayoutsRef, limit: u32) -> Result<u64> {
    let wallet = &service.ports().wallet;
    let limit = limit.max(1);
    let (mut paid, mut refused) = (0, 0);
    let mut after: Option<String> = None;
    let mut outcome = Ok(());
    'pages: loop {
        let page = payouts.list_pending(after.clone(), limit).await?;
        let more = page.len() == limit as usize;
        for payout in page {
            match wallet
                .credit(&payout.op_id, payout.kind, &payout.user, payout.amount)
                .await
            {
                Ok(_) => {
                    payouts.delete(&payout.op_id).await?;
                    paid += 1;
                    if paid == u64::from(limit) {
                        break 'pages;
                    }
                }
                Err(error) if error.is_retryable() => {
                    outcome = Err(error);
                    break 'pages;
                }
                Err(error) => {
                    tracing::error!(
                        op_id = %payout.op_id,
                        user = %payout.user,
                        amount = payout.amount.0,
                        error = %error,
                        "the wallet refused a reward payout; it stays owed"
                    );
                    refused += 1;
                    after = Some(payout.op_id);
                }
            }
        }
        if !more {
            break;
        }
    }
    metrics::counter!("room_payouts_total").increment(paid);
    metrics::counter!("room_payouts_refused_total").increment(refused);
    outcome.map(|()| paid)
}

/// Settles gift orders unfinished for longer than `older_than` by the store's clock
/// (`store_clock`, the same for every process: a node whose own clock runs ahead must not
/// take young orders for old ones), reading them `limit` at a time; one pass reaches every
/// such order. Returns how many reached a final state.
pub async fn recover_gifts(
    service: &RoomService,
    store_clock: &WorkClaimsRef,
    older_than: Duration,
    limit: u32,
) -> Result<u64> {
    let now = store_clock.now().await?;
    let before = Timestamp(now.0 - i64::try_from(older_than.as_millis()).unwrap_or(i64::MAX));
    let report = service.gifts().recover(before, limit).await?;
    Ok(report.settled)
}

/// Runs `pass` every `period` until `cancel` fires; logs failures and counts them under
/// `room_worker_errors_total{worker}`.
pub async fn run_every<F, Fut>(
    name: &'static str,
    period: Duration,
    cancel: CancellationToken,
    mut pass: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<u64>>,
{
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = ticker.tick() => {}
        }
        match pass().await {
            Ok(n) if n > 0 => tracing::debug!(worker = name, done = n, "worker pass"),
            Ok(_) => {}
            Err(error) => {
                metrics::counter!("room_worker_errors_total", "worker" => name).increment(1);
                tracing::warn!(worker = name, error = %error, "worker pass failed");
            }
        }
    }
}

/// What the outbox publisher keeps from one pass to the next ([`publish_outbox_with`]): the
/// rooms it holds back after a failure.
#[derive(Debug, Default)]
pub struct OutboxPublisherState {
    /// Room -> until when its rows are held back, and that hold's length (doubled, up to
    /// [`MAX_ROOM_HOLD`], by each failure in a row).
    held: HashMap<RoomId, (tokio::time::Instant, Duration)>,
}

impl OutboxPublisherState {
    /// Holds the rows of `room_id` back after a failure: first for [`FIRST_ROOM_HOLD`], twice
    /// as long after each failure in a row.
    fn hold(&mut self, room_id: &RoomId, now: tokio::time::Instant) {
        let length = self
            .held
            .get(room_id)
            .map_or(FIRST_ROOM_HOLD, |(_, length)| {
                (*length * 2).min(MAX_ROOM_HOLD)
            });
        self.held.insert(room_id.clone(), (now + length, length));
    }
}

/// How long the outbox publisher first holds back a room whose row failed.
pub const FIRST_ROOM_HOLD: Duration = Duration::from_millis(250);
/// The longest the outbox publisher holds back a room whose rows keep failing.
pub const MAX_ROOM_HOLD: Duration = Duration::from_secs(30);
/// The most rooms a pass skips in the store's query; rows of further held rooms are read and
/// passed over.
const MAX_SKIPPED_ROOMS: usize = 256;

/// [`publish_outbox_with`] from a fresh state: one pass as the first of a process.
pub async fn publish_outbox(
    outbox: &OutboxRef,
    publisher: &EventPublisherRef,
    clock: &ClockRef,
    batch: u32,
    max_batches: u32,
) -> Result<u64> {
    let mut state = OutboxPublisherState::default();
    publish_outbox_with(&mut state, outbox, publisher, clock, batch, max_batches).await
}

/// Publishes undelivered outbox rows to the broker, oldest first, `batch` at a time, and marks
/// each row the broker acknowledged delivered; at most `max_batches` batches per pass, so that
/// a pass ends (and its claim is renewed) while a backlog drains. Returns how many rows were
/// delivered or set aside as dead letters.
///
/// A failing room holds back only itself: a room whose row the broker did not take (its
/// partition's leader down) is skipped for the rest of the pass and held back for a while
/// after ([`FIRST_ROOM_HOLD`], doubling up to [`MAX_ROOM_HOLD`] while it keeps failing), and
/// the pass reads on past its rows (the store leaves them out), so the other rooms keep
/// flowing however many rows it has. Each room's rows still go out in order: a pass starts
/// from the oldest row and skips a room from its first row not taken. A row the broker
/// refuses for good (too large, invalid) is set aside as a dead letter with the broker's
/// reason ([`Outbox::dead_letter`], logged as an error and counted in
/// `room_outbox_dead_letters_total`), and its room goes on without it from the next pass; an
/// admin lists and replays dead letters. A pass that moved no row and met a failure ends with
/// it, so the caller backs off.
///
/// Metrics: `room_outbox_delivered_total`, `room_outbox_dead_letters_total`,
/// `room_outbox_rooms_held` (rooms held back after the pass), `room_outbox_lag_seconds` (the
/// age of the oldest undelivered row, from its commit, when the pass began) and
/// `room_outbox_delivery_seconds` (commit to acknowledgement, per row).
///
/// [`Outbox::dead_letter`]: crate::ports::Outbox::dead_letter
pub async fn publish_outbox_with(
    state: &mut OutboxPublisherState,
    outbox: &OutboxRef,
    publisher: &EventPublisherRef,
    clock: &ClockRef,
    batch: u32,
    max_batches: u32,
) -> Result<u64> {
    let batch = batch.max(1);
    let started = tokio::time::Instant::now();
    // Forget the holds that ended long ago (rooms that went quiet): the table stays small.
    state
        .held
        .retain(|_, (until, length)| *until + *length > started);
    // Rooms this pass leaves alone: those held back, and those that fail during it.
    let mut skipped: HashSet<RoomId> = state
        .held
        .iter()
        .filter(|(_, (until, _))| *until > started)
        .map(|(room, _)| room.clone())
        .collect();
    // The lag counts the held rooms' rows too: the first page tells it when none is held.
    if !skipped.is_empty() {
        let oldest = outbox.list_pending(0, &[], 1).await?;
        record_outbox_lag(oldest.first(), clock);
    }
    let mut after = 0;
    let mut done = 0u64;
    let mut failure = None;
    for _ in 0..max_batches.max(1) {
        let skip: Vec<RoomId> = skipped.iter().take(MAX_SKIPPED_ROOMS).cloned().collect();
        let pending = outbox.list_pending(after, &skip, batch).await?;
        if after == 0 && skip.is_empty() {
            record_outbox_lag(pending.first(), clock);
        }
        let Some(last) = pending.last() else {
            break;
        };
        let full = pending.len() == batch as usize;
        after = last.id;
        let sendable: Vec<OutboxMessage> = pending
            .into_iter()
            .filter(|m| !skipped.contains(&m.envelope.room_id))
            .collect();
        if !sendable.is_empty() {
            let published = publisher.publish(&sendable).await;
            let settled = settle_published(state, outbox, clock, &sendable, &published).await?;
            done += settled.done;
            skipped.extend(settled.left_behind);
            if let Some(error) = published.error {
                failure.get_or_insert(error);
            }
        }
        if !full {
            break;
        }
    }
    let now = tokio::time::Instant::now();
    let held = state
        .held
        .values()
        .filter(|(until, _)| *until > now)
        .count();
    metrics::gauge!("room_outbox_rooms_held").set(held as f64);
    match failure {
        Some(error) if done == 0 => Err(error),
        _ => Ok(done),
    }
}

/// Sets `room_outbox_lag_seconds` to the age of `oldest`, the oldest undelivered row (0 when
/// there is none).
fn record_outbox_lag(oldest: Option<&OutboxMessage>, clock: &ClockRef) {
    let now = clock.now();
    let lag = oldest.map_or(0, |oldest| (now.0 - oldest.envelope.occurred_at.0).max(0));
    metrics::gauge!("room_outbox_lag_seconds").set(lag as f64 / 1000.0);
}

/// What [`settle_published`] found.
struct Settled {
    /// Rows delivered or set aside.
    done: u64,
    /// Rooms with rows not taken: the rest of the pass leaves them alone.
    left_behind: Vec<RoomId>,
}

/// Records what the broker made of `sent`: marks the acknowledged rows delivered, sets the
/// refused ones aside as dead letters, and holds back the rooms whose rows it did not take
/// for another reason.
async fn settle_published(
    state: &mut OutboxPublisherState,
    outbox: &OutboxRef,
    clock: &ClockRef,
    sent: &[OutboxMessage],
    published: &Published,
) -> Result<Settled> {
    let mut done = 0u64;
    if !published.delivered.is_empty() {
        let acked = clock.now();
        outbox.mark_delivered(&published.delivered, acked).await?;
        let by_id: HashMap<i64, Timestamp> = sent
            .iter()
            .map(|m| (m.id, m.envelope.occurred_at))
            .collect();
        for id in &published.delivered {
            if let Some(at) = by_id.get(id) {
                metrics::histogram!("room_outbox_delivery_seconds")
                    .record((acked.0 - at.0).max(0) as f64 / 1000.0);
            }
        }
        done += published.delivered.len() as u64;
        metrics::counter!("room_outbox_delivered_total")
            .increment(published.delivered.len() as u64);
    }
    let mut refused_rooms = HashSet::new();
    for (id, reason) in &published.refused {
        let Some(message) = sent.iter().find(|m| m.id == *id) else {
            continue;
        };
        refused_rooms.insert(&message.envelope.room_id);
        if outbox.dead_letter(*id, reason, clock.now()).await? {
            done += 1;
            metrics::counter!("room_outbox_dead_letters_total").increment(1);
            tracing::error!(
                outbox_id = id,
                room_id = %message.envelope.room_id,
                event_id = %message.envelope.event_id,
                reason = %reason,
                "the broker refused a durable fact for good; set aside as a dead letter"
            );
        }
    }
    let delivered: HashSet<i64> = published.delivered.iter().copied().collect();
    let now = tokio::time::Instant::now();
    let mut failed: HashSet<&RoomId> = HashSet::new();
    for message in sent {
        let room = &message.envelope.room_id;
        if !delivered.contains(&message.id) && !refused_rooms.contains(room) {
            failed.insert(room);
        }
    }
    for message in sent {
        let room = &message.envelope.room_id;
        if delivered.contains(&message.id) && !failed.contains(room) {
            state.held.remove(room);
        }
    }
    for room in &failed {
        state.hold(room, now);
    }
    let left_behind = failed.into_iter().chain(refused_rooms).cloned().collect();
    Ok(Settled { done, left_behind })
}

/// Deletes the records of keyed requests claimed more than `retention` ago, `batch` per call
/// and at most `max_batches` calls per pass. Returns how many went.
///
/// Metric: `room_keyed_requests_pruned_total` (records).
pub async fn prune_keyed_requests(
    records: &crate::ports::KeyedRequestsRef,
    clock: &ClockRef,
    retention: Duration,
    batch: u32,
    max_batches: u32,
) -> Result<u64> {
    let before = cutoff(clock, retention);
    in_batches(
        "room_keyed_requests_pruned_total",
        batch,
        max_batches,
        |batch| records.prune(before, batch),
    )
    .await
}

/// Forgets the keys of gifts counted ([`GiftTallies::prune_counted`]) whose UTC day is more
/// than `days` days before today, `batch` per call and at most `max_batches` calls per pass.
/// Returns how many went.
///
/// Metric: `room_gift_tally_keys_pruned_total` (keys).
///
/// [`GiftTallies::prune_counted`]: crate::ports::GiftTallies::prune_counted
pub async fn prune_tally_keys(
    tallies: &crate::ports::GiftTalliesRef,
    clock: &ClockRef,
    days: u32,
    batch: u32,
    max_batches: u32,
) -> Result<u64> {
    let today = clock.now().day_key(0);
    let before = room_domain::DayKey(today.0 - i64::from(days));
    in_batches(
        "room_gift_tally_keys_pruned_total",
        batch,
        max_batches,
        |batch| tallies.prune_counted(before, batch),
    )
    .await
}

/// Deletes outbox rows delivered more than `retention` ago, `batch` rows per statement and at
/// most `max_batches` statements per pass, so that no statement holds the table long; rows
/// not yet delivered are never deleted. Returns how many went.
pub async fn prune_outbox(
    outbox: &OutboxRef,
    clock: &ClockRef,
    retention: Duration,
    batch: u32,
    max_batches: u32,
) -> Result<u64> {
    let before = cutoff(clock, retention);
    in_batches("room_outbox_pruned_total", batch, max_batches, |batch| {
        outbox.delete_delivered_before(before, batch)
    })
    .await
}

/// Deletes the events and commands of room logs that lie behind both the room's newest
/// snapshot and `retention` (the rule of [`CellStore::prune_log`]), `batch` rows per call and
/// at most `max_batches` calls per pass, so that no call holds the log long. `retention` must
/// be longer than any client retries a command: a repeat of a command id older than that may
/// be applied again. Returns how many rows (events and commands) went.
///
/// Metric: `room_log_pruned_total` (rows).
///
/// [`CellStore::prune_log`]: crate::ports::CellStore::prune_log
pub async fn prune_log(
    cells: &CellStoreRef,
    clock: &ClockRef,
    retention: Duration,
    batch: u32,
    max_batches: u32,
) -> Result<u64> {
    let older_than = cutoff(clock, retention);
    in_batches("room_log_pruned_total", batch, max_batches, |batch| {
        cells.prune_log(older_than, batch)
    })
    .await
}

/// The time `retention` before now.
fn cutoff(clock: &ClockRef, retention: Duration) -> Timestamp {
    let retention = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
    Timestamp(clock.now().0.saturating_sub(retention))
}

/// Runs `delete` (one bounded delete of at most `batch` rows) up to `max_batches` times, until
/// a call deletes fewer than `batch`; counts each call's rows in the counter `metric` as it
/// goes, so a failing call keeps the count of those before it. Returns how many went.
pub(crate) async fn in_batches<F, Fut>(
    metric: &'static str,
    batch: u32,
    max_batches: u32,
    mut delete: F,
) -> Result<u64>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<u64>>,
{
    let batch = batch.max(1);
    let mut deleted = 0;
    for _ in 0..max_batches.max(1) {
        let gone = delete(batch).await?;
        deleted += gone;
        metrics::counter!(metric).increment(gone);
        if gone < u64::from(batch) {
            break;
        }
    }
    Ok(deleted)
}

/// Whose claim a [`run_claimed`] loop takes, and for how long.
#[derive(Clone)]
pub struct Claim {
    /// The claims store the processes share.
    pub claims: WorkClaimsRef,
    /// This process (the node id).
    pub owner: String,
    /// How long a claim holds without renewal, by the store's clock: a crashed holder's work
    /// waits this long.
    pub ttl: Duration,
}

impl Claim {
    async fn take(&self, name: &str) -> Result<bool> {
        self.claims.claim(name, &self.owner, self.ttl).await
    }

    /// Claims or renews `name`; answers whether this process holds it now, and records when it
    /// asked in `renewed` when it does. `held` is whether it held the claim before, for the log
    /// and the `room_worker_claimed` gauge.
    async fn renew(
        &self,
        name: &'static str,
        held: bool,
        renewed: &mut tokio::time::Instant,
    ) -> bool {
        let asked = tokio::time::Instant::now();
        let now_held = match self.take(name).await {
            Ok(now_held) => now_held,
            Err(error) => {
                tracing::warn!(worker = name, error = %error, "cannot claim work");
                false
            }
        };
        if now_held != held {
            tracing::info!(worker = name, held = now_held, "work claim changed");
        }
        if now_held {
            *renewed = asked;
        }
        metrics::gauge!("room_worker_claimed", "worker" => name).set(if now_held {
            1.0
        } else {
            0.0
        });
        now_held
    }
}

/// Like [`run_every`], but passes run only while this process holds `name` through `claim`
/// (renewed once a third of its TTL has passed, also while a long pass runs; asked for every
/// tenth of the TTL while another process holds it). A pass during which the claim is lost,
/// or `cancel` fires, is dropped at once, so two processes never run one pass at the same
/// time; the claim is released when `cancel` fires. A pass that fails waits for the next tick
/// doubled, up to 32 periods (a broker or database outage is not hammered), and the first
/// pass that succeeds resets the wait. A pass that did work runs again at once, so a backlog
/// drains at full speed.
///
/// Metrics, by `worker` = `name`: `room_worker_claimed` (1 while held), `room_worker_errors_total`.
pub async fn run_claimed<F, Fut>(
    name: &'static str,
    period: Duration,
    claim: Claim,
    cancel: CancellationToken,
    mut pass: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<u64>>,
{
    // The claim is renewed once a third of its life has passed, not before every pass (a
    // drained outbox is looked at every few milliseconds), and while a long pass runs; a
    // process without it asks again every tenth of its life.
    let renew_after = claim.ttl / 3;
    let mut renewed = tokio::time::Instant::now();
    let mut wait = Duration::ZERO;
    let mut held = false;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep(wait) => {}
        }
        if !held || renewed.elapsed() >= renew_after {
            held = claim.renew(name, held, &mut renewed).await;
        }
        if !held {
            wait = period.max(claim.ttl / 10);
            continue;
        }
        // The pass runs while the claim is renewed beside it; a claim lost meanwhile, or a
        // stop, drops the pass where it is (what it did stays done; the next holder goes on).
        let run = pass();
        tokio::pin!(run);
        let outcome = loop {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => break None,
                outcome = &mut run => break Some(outcome),
                _ = tokio::time::sleep_until(renewed + renew_after) => {
                    held = claim.renew(name, held, &mut renewed).await;
                    if !held {
                        tracing::warn!(worker = name, "work claim lost during a pass; pass dropped");
                        break None;
                    }
                }
            }
        };
        match outcome {
            None => wait = period,
            Some(Ok(done)) => {
                wait = if done > 0 { Duration::ZERO } else { period };
            }
            Some(Err(error)) => {
                metrics::counter!("room_worker_errors_total", "worker" => name).increment(1);
                tracing::warn!(worker = name, error = %error, "worker pass failed");
                wait = (wait * 2).clamp(period, period * 32);
            }
        }
    }
    if held && let Err(error) = claim.claims.release(name, &claim.owner).await {
        tracing::warn!(worker = name, error = %error, "cannot release the work claim");
    }
    metrics::gauge!("room_worker_claimed", "worker" => name).set(0.0);
}

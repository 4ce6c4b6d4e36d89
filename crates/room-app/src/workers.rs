//! Background work: firing durable timers into their rooms, evicting members whose heartbeat
//! stopped, paying out rocket rewards, and recovering unfinished gift orders. Each pass is a
//! function returning what it did; [`run_every`] loops one until cancelled.

use std::future::Future;
use std::time::Duration;

use room_domain::{CommandKind, Rejection};
use tokio_util::sync::CancellationToken;

use crate::ports::{PayoutsRef, StaleMember, TimersRef};
use crate::service::RoomService;
use crate::{Error, Result};

/// Counts an item a pass left to the node that runs its room.
fn left_to_owner(worker: &'static str) {
    metrics::counter!("room_background_left_to_owner_total", "worker" => worker).increment(1);
}

/// Fires every timer due now into its room's cell, at most `limit` per pass; a timer of a room
/// another live node runs is left to that node's pass. A timer whose command the room refuses (stale: another seat session, a re-armed rocket) is dropped; one
/// that hit a retryable error, or that the room finds not due yet (its clock behind this
/// one's), stays for the next pass. Returns how many fired.
pub async fn fire_due_timers(service: &RoomService, timers: &TimersRef, limit: u32) -> Result<u64> {
    let now = service.ports().clock.now();
    let mut fired = 0;
    for timer in timers.list_due(now, limit).await? {
        if service.runtime().owned_elsewhere(&timer.room_id).await? {
            left_to_owner("timers");
            continue;
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
            }
            Ok(_) | Err(Error::Rejected(_)) => {
                timers.delete(&timer.timer_id, timer.due_at).await?;
                fired += 1;
            }
            Err(error) if error.is_retryable() => {
                tracing::debug!(timer = %timer.timer_id, error = %error, "timer deferred");
            }
            Err(error @ (Error::Internal(_) | Error::Corrupt(_))) => {
                // A fault of the service: keep the timer (a rocket's launch owes payouts) for a
                // person, and for the pass after the fix.
                metrics::counter!("room_timer_faults_total").increment(1);
                tracing::error!(timer = %timer.timer_id, error = %error, "timer failed; kept");
            }
            Err(error) => {
                tracing::error!(timer = %timer.timer_id, error = %error, "timer failed; dropping it");
                timers.delete(&timer.timer_id, timer.due_at).await?;
            }
        }
    }
    metrics::counter!("room_timers_fired_total").increment(fired);
    Ok(fired)
}

/// Evicts members whose last heartbeat is older than `timeout`, but those of rooms another
/// live node runs (that node's pass evicts them). Returns how many left.
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
    let cutoff =
        room_domain::Timestamp(now.0 - i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX));
    let mut evicted = 0;
    for stale in ports.presence.list_stale(cutoff, limit).await? {
        let StaleMember {
            room_id,
            user,
            seen,
        } = stale;
        if service.runtime().owned_elsewhere(&room_id).await? {
            left_to_owner("presence");
            continue;
        }
        // From here on the member counts as gone: a heartbeat that comes later finds them
        // evicted, as one that comes after the eviction would.
        if !ports.presence.remove_if_seen(&room_id, &user, seen).await? {
            metrics::counter!("room_presence_eviction_skipped_total").increment(1);
            continue;
        }
        let evict = CommandKind::Evict {
            user: user.clone(),
            seen: Some(seen),
        };
        match service.system_command(&room_id, evict).await {
            Ok(_) | Err(Error::Rejected(Rejection::RoomNotFound | Rejection::RoomClosed)) => {
                evicted += 1;
            }
            Err(error) => {
                // Put the member back as last seen, for the next pass (unless they have
                // come back meanwhile).
                ports.presence.restore(&room_id, &user, seen).await?;
                tracing::debug!(room_id = %room_id, error = %error, "eviction deferred");
            }
        }
    }
    metrics::counter!("room_presence_evicted_total").increment(evicted);
    Ok(evicted)
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

/// Settles gift orders unfinished for longer than `older_than`, reading them `limit` at a
/// time; one pass reaches every such order. Returns how many reached a final state.
pub async fn recover_gifts(service: &RoomService, older_than: Duration, limit: u32) -> Result<u64> {
    let now = service.ports().clock.now();
    let before =
        room_domain::Timestamp(now.0 - i64::try_from(older_than.as_millis()).unwrap_or(i64::MAX));
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

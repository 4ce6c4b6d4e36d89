//! [`ImMessenger`]: display events after commit, to each room's Tencent IM group, within the
//! group's 40 messages/s. This file holds the port and the dispatcher's handle; the
//! dispatcher and the concerns it is made of live beside it:
//!
//! - `dispatcher`: the one task per node that serves the rooms, in turn, within the budgets;
//! - `room`: the queue per room; `coalesce`, `shed` and `pack`: what is done to that queue
//!   (newest value per key, the bound by priority, several events to a message);
//! - `bucket`: the rate budgets, per room and per node;
//! - `send`: where messages go and what a send reports back;
//! - `item` and `stats`: the values that move through, and the counters.

use std::sync::Arc;

use async_trait::async_trait;
use room_app::ports::{DisplayMessage, Messenger};
use room_domain::RoomId;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::{DisplaySettings, ImClient};

mod bucket;
mod coalesce;
mod dispatcher;
mod item;
mod pack;
mod room;
mod send;
mod shed;
mod stats;
#[cfg(test)]
mod tests;

use dispatcher::Dispatcher;
use item::Batch;
use send::GroupSender;
pub use stats::DisplayStats;
use stats::{DropReason, Stats};

/// The display messenger of a node: display events after commit, to each room's Tencent IM
/// group, within the group's 40 messages/s.
///
/// [`Messenger::publish`] only `try_send`s the commit's events into one bounded queue per node
/// and returns: a full queue drops the commit's events (counted), it never blocks a command.
/// One dispatcher task keeps, per room:
/// - the events waiting, in seq order, each with its priority;
/// - the newest event of each coalescing key (fuel, heat, rank): an event with a key waits up
///   to [`DisplaySettings::coalesce_ms`] for newer ones and only the newest is sent (it also
///   rides along earlier in a message that has room to spare);
/// - a token bucket of [`DisplaySettings::room_rate_per_sec`] messages per second with a burst
///   of [`DisplaySettings::room_burst`], so the group never sees more than their sum in any
///   second (30 + 5 by default, below Tencent's 40);
/// - a bound of [`DisplaySettings::room_queue_max`] waiting events: beyond it the oldest Low
///   events are shed first, then Normal, then High (counted by priority).
///
/// Across rooms, the node keeps:
/// - a token bucket of [`DisplaySettings::app_rate_per_sec`] `send_group_msg` calls per second
///   with a burst of [`DisplaySettings::app_burst`]: Tencent allows an app 200 calls a second
///   of each command, shared by every node. A room that is ready to send but finds no token
///   (or no free slot) joins one waiting line and is served in turn, first come first served;
/// - a bound of [`DisplaySettings::max_held_events`] events held across rooms (queued, held
///   for coalescing or waiting for a group): beyond it, new events are dropped whatever their
///   priority (`node_full`). Shedding by priority is the per-room bound's job; this one only
///   keeps a flood over many rooms from taking the node's memory;
/// - an age limit, [`DisplaySettings::max_age_ms`]: an event older than it when its turn to be
///   packed comes is dropped (`too_old`): late display is worse than none.
///
/// A message refused because the room's group does not exist yet (10010 / 10015: the group is
/// created asynchronously, after the room's durable facts) is kept and sent again after 1 s,
/// 2 s, 4 s, ..., for at most [`DisplaySettings::no_group_retry_ms`], then dropped
/// (`no_group`); the room's later events wait behind it, and a warning is logged once per
/// room. The messenger never creates groups.
///
/// Each send packs as many of a room's waiting events as fit into ONE `send_group_msg`: one
/// `TIMCustomElem` whose `Data` is `{"room_id":..,"events":[envelope, ...]}` (envelopes in seq
/// order, each with its room id and seq), its `MsgBody` within
/// [`DisplaySettings::max_message_bytes`], its `MsgPriority` the highest of its events. An
/// event too large for a message on its own is dropped (counted). A message Tencent refuses
/// as too long (80002: it counts the whole request) is split in two and each half sent again
/// before the room's queue, down to a single event, which alone is dropped (`too_large`,
/// with a warning). A room has one send in
/// flight at a time, so its messages leave in order; rooms send concurrently, up to
/// [`DisplaySettings::max_in_flight`].
///
/// Metrics: `room_im_display_messages_total` and `room_im_display_events_total` (sent),
/// `room_im_display_dropped_total{reason}` (events; `reason`: `queue_full`, `node_full`,
/// `shed`, `too_large`, `too_old`, `no_group`, `im_dropped` (Tencent's `MsgDropReason`),
/// `send_failed` (refused, failed after its retries, or the send task failed), `shutdown`),
/// `room_im_display_shed_total{priority}`, `room_im_display_coalesced_total`,
/// `room_im_display_lag_seconds` (from `publish` to Tencent's answer, per event),
/// `room_im_display_queue_depth` (events waiting in the dispatcher),
/// `room_im_display_rooms` and `room_im_display_splits_total` (messages refused as too long
/// and sent again in halves).
///
/// Cheap to share behind an `Arc`.
pub struct ImMessenger {
    queue: mpsc::Sender<Batch>,
    stats: Arc<Stats>,
}

impl std::fmt::Debug for ImMessenger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImMessenger")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

/// The dispatcher task of an [`ImMessenger`]: wait for it after cancelling its token.
#[derive(Debug)]
pub struct DispatcherHandle {
    task: tokio::task::JoinHandle<()>,
    stats: Arc<Stats>,
}

impl DispatcherHandle {
    /// Waits until the dispatcher has stopped: after its token is cancelled, it sends what is
    /// queued for at most [`DisplaySettings::drain_ms`], then drops the rest (counted).
    pub async fn stopped(self) {
        if let Err(error) = self.task.await {
            tracing::error!(error = %error, "the IM display dispatcher failed");
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> DisplayStats {
        self.stats.snapshot()
    }
}

impl ImMessenger {
    /// Starts the dispatcher, which sends through `client` until `cancel` is cancelled; the
    /// handle tells when it has stopped. Call within a tokio runtime.
    pub fn start(
        client: ImClient,
        settings: &DisplaySettings,
        cancel: CancellationToken,
    ) -> (ImMessenger, DispatcherHandle) {
        ImMessenger::start_with(Arc::new(client), settings, cancel)
    }

    /// [`ImMessenger::start`] with any [`GroupSender`] (tests use one that needs no HTTP).
    fn start_with(
        sender: Arc<dyn GroupSender>,
        settings: &DisplaySettings,
        cancel: CancellationToken,
    ) -> (ImMessenger, DispatcherHandle) {
        let stats = Arc::new(Stats::default());
        let (queue, pending) = mpsc::channel(settings.queue_capacity.max(1));
        let dispatcher = Dispatcher::new(sender, settings, stats.clone());
        let task = tokio::spawn(dispatcher.run(pending, cancel));
        (
            ImMessenger {
                queue,
                stats: stats.clone(),
            },
            DispatcherHandle { task, stats },
        )
    }

    /// The counters so far.
    pub fn stats(&self) -> DisplayStats {
        self.stats.snapshot()
    }
}

#[async_trait]
impl Messenger for ImMessenger {
    async fn publish(&self, room_id: &RoomId, messages: Vec<DisplayMessage>) {
        if messages.is_empty() {
            return;
        }
        let batch = Batch {
            room_id: room_id.clone(),
            messages,
            at: Instant::now(),
        };
        match self.queue.try_send(batch) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(batch)) => {
                self.stats
                    .dropped(DropReason::QueueFull, batch.messages.len());
            }
            Err(mpsc::error::TrySendError::Closed(batch)) => {
                self.stats
                    .dropped(DropReason::Shutdown, batch.messages.len());
            }
        }
    }
}

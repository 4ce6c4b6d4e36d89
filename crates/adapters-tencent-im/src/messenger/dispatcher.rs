//! The dispatcher: the one task of a node that takes the queued commits in and sends each
//! room's messages within the room's bucket and the node's, serving rooms that wait for a
//! slot or a token in the order they became ready; it parks messages whose group does not
//! exist yet for a retry, forgets idle rooms, and drains what is left on shutdown.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use room_domain::RoomId;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::bucket::{Bucket, burst_of, rate_or};
use super::item::{Batch, Item, Pack};
use super::pack::PackLimits;
use super::room::{NoGroupRetry, Parked, Room};
use super::send::{GroupSender, InFlight, SendDone};
use super::stats::{DropReason, Stats};
use crate::error::CODE_TOO_LONG;
use crate::{DisplaySettings, GroupMessage, ImError, SendOutcome};

/// How often idle rooms are forgotten.
const SWEEP_EVERY: Duration = Duration::from_secs(5);
/// The first wait before a message refused for a missing group is sent again; it doubles.
const NO_GROUP_FIRST_RETRY: Duration = Duration::from_secs(1);
/// Messages above this size get one warning per node: older Tencent documents cap a message
/// at 8 KB, current ones at 12 KB.
const LARGE_MESSAGE_BYTES: usize = 8 * 1024;
/// How often the gauges are refreshed at most.
const GAUGE_EVERY: Duration = Duration::from_millis(250);
/// Batches taken from the queue per wake of the dispatcher, before it looks at its timers and
/// finished sends again.
const BATCHES_PER_TURN: usize = 256;

pub(super) struct Tuning {
    pub(super) rate: f64,
    pub(super) burst: f64,
    pub(super) room_queue_max: usize,
    pub(super) coalesce: Duration,
    pub(super) max_in_flight: usize,
    pub(super) limits: PackLimits,
    pub(super) max_held: usize,
    pub(super) no_group_retry: Duration,
    pub(super) drain: Duration,
}

pub(super) struct Dispatcher {
    pub(super) sender: Arc<dyn GroupSender>,
    pub(super) tuning: Tuning,
    pub(super) stats: Arc<Stats>,
    pub(super) rooms: HashMap<RoomId, Room>,
    /// Room wake-ups (tokens back, held events due, a parked message's retry), earliest
    /// first; stale ones are skipped.
    pub(super) wakeups: BinaryHeap<Reverse<(Instant, RoomId)>>,
    /// Rooms ready to send but for a free slot or an app token, in the order they became
    /// ready.
    pub(super) line: VecDeque<RoomId>,
    /// When the app bucket has a token again for the line, if the line waits for one.
    pub(super) line_wake: Option<Instant>,
    /// The node's `send_group_msg` budget (the app's is shared by every node).
    pub(super) app: Bucket,
    pub(super) sends: JoinSet<SendDone>,
    pub(super) in_flight: HashMap<tokio::task::Id, InFlight>,
    /// Events waiting across rooms.
    pub(super) waiting: usize,
    pub(super) sweep_at: Instant,
    pub(super) gauges_at: Instant,
    pub(super) warned_large: bool,
}

impl Dispatcher {
    pub(super) fn new(
        sender: Arc<dyn GroupSender>,
        settings: &DisplaySettings,
        stats: Arc<Stats>,
    ) -> Self {
        let defaults = DisplaySettings::default();
        let now = Instant::now();
        let app_rate = rate_or(settings.app_rate_per_sec, defaults.app_rate_per_sec);
        Dispatcher {
            sender,
            tuning: Tuning {
                rate: rate_or(settings.room_rate_per_sec, defaults.room_rate_per_sec),
                burst: burst_of(settings.room_burst),
                room_queue_max: settings.room_queue_max.max(1),
                coalesce: Duration::from_millis(settings.coalesce_ms),
                max_in_flight: settings.max_in_flight.max(1),
                limits: PackLimits {
                    max_bytes: settings.max_message_bytes,
                    max_age: Duration::from_millis(settings.max_age_ms),
                },
                max_held: settings.max_held_events.max(1),
                no_group_retry: Duration::from_millis(settings.no_group_retry_ms),
                drain: Duration::from_millis(settings.drain_ms),
            },
            stats,
            rooms: HashMap::new(),
            wakeups: BinaryHeap::new(),
            line: VecDeque::new(),
            line_wake: None,
            app: Bucket::full(app_rate, burst_of(settings.app_burst), now),
            sends: JoinSet::new(),
            in_flight: HashMap::new(),
            waiting: 0,
            sweep_at: now + SWEEP_EVERY,
            gauges_at: now,
            warned_large: false,
        }
    }

    /// The earliest of the rooms' wake-ups, the line's and the sweep.
    pub(super) fn next_timer(&self) -> Instant {
        let mut at = self.sweep_at;
        if let Some(Reverse((room_at, _))) = self.wakeups.peek() {
            at = at.min(*room_at);
        }
        if let Some(line_at) = self.line_wake {
            at = at.min(line_at);
        }
        at
    }

    pub(super) async fn run(
        mut self,
        mut pending: mpsc::Receiver<Batch>,
        cancel: CancellationToken,
    ) {
        let timer = tokio::time::sleep_until(self.next_timer());
        tokio::pin!(timer);
        let mut timer_at = self.next_timer();
        // One waiter for the whole run: a new one per turn would register with the token
        // each time.
        let cancelled = cancel.cancelled();
        tokio::pin!(cancelled);
        loop {
            let next = self.next_timer();
            if next != timer_at {
                timer.as_mut().reset(next);
                timer_at = next;
            }
            tokio::select! {
                biased;
                () = &mut cancelled => break,
                Some(done) = self.sends.join_next_with_id(), if !self.sends.is_empty() => {
                    self.finished(done);
                }
                () = &mut timer => self.timers(Instant::now()),
                batch = pending.recv() => {
                    let Some(batch) = batch else { break };
                    let now = Instant::now();
                    self.accept(batch, now);
                    for _ in 1..BATCHES_PER_TURN {
                        match pending.try_recv() {
                            Ok(batch) => self.accept(batch, now),
                            Err(_) => break,
                        }
                    }
                }
            }
            // Checked every turn, whichever branch ran: under a steady flood the timer
            // branch may not be the one that runs for a long while.
            let now = Instant::now();
            if now >= self.sweep_at {
                self.sweep(now);
            }
            self.refresh_gauges(false);
        }
        self.drain(pending).await;
        self.refresh_gauges(true);
    }

    /// What is due at `now`: rooms' wake-ups, the line, the sweep.
    pub(super) fn timers(&mut self, now: Instant) {
        self.wake(now);
        if self.line_wake.is_some_and(|at| at <= now) {
            self.line_wake = None;
            self.serve_line(now);
        }
        if now >= self.sweep_at {
            self.sweep(now);
        }
    }

    /// Takes in one commit's events and sends what the room can send now.
    pub(super) fn accept(&mut self, batch: Batch, now: Instant) {
        let Batch {
            room_id,
            messages,
            at,
        } = batch;
        let tuning = &self.tuning;
        let room = self
            .rooms
            .entry(room_id.clone())
            .or_insert_with(|| Room::new(&room_id, tuning.rate, tuning.burst, now));
        let before = room.size();
        let mut refused = 0;
        for message in messages {
            let adds = message.coalesce_key.is_none_or(|key| !room.holds(key));
            if adds && self.waiting + (room.size() - before) >= tuning.max_held {
                refused += 1;
                continue;
            }
            let item = Item {
                envelope: message.envelope,
                priority: message.priority,
                key: message.coalesce_key,
                published: at,
            };
            match message.coalesce_key {
                Some(key) => room.hold(item, key, now + tuning.coalesce, &self.stats),
                None => room.enqueue(item),
            }
        }
        room.shed(tuning.room_queue_max, &self.stats);
        self.waiting = self.waiting + room.size() - before;
        self.stats.dropped(DropReason::NodeFull, refused);
        self.serve(&room_id, now, false);
    }

    /// Moves the room's due events to its queue, and starts its next send if it has no send
    /// in flight, a token, and the line lets it: a free slot and an app token, and no room
    /// ahead of it (unless `from_line`: it is the one at the front). Else it arranges to be
    /// called again when it may.
    pub(super) fn serve(&mut self, room_id: &RoomId, now: Instant, from_line: bool) {
        let Some(room) = self.rooms.get_mut(room_id) else {
            return;
        };
        let before = room.size();
        room.flush_due(now, &self.stats);
        let mut wake = room.next_due();
        let mut earliest = |at: Instant| wake = Some(wake.map_or(at, |w| w.min(at)));
        let has_work = room.parked.is_some() || !room.halves.is_empty() || !room.queue.is_empty();
        if !room.in_flight && !room.waiting_slot && has_work {
            let parked_at = room.parked.as_ref().map(|p| p.retry.at);
            if let Some(at) = parked_at.filter(|at| *at > now) {
                earliest(at);
            } else if let Some(wait) = room.bucket.wait(now) {
                earliest(now + wait);
            } else if (!from_line && !self.line.is_empty())
                || self.sends.len() >= self.tuning.max_in_flight
                || self.app.wait(now).is_some()
            {
                room.waiting_slot = true;
                self.line.push_back(room_id.clone());
                if self.line_wake.is_none() {
                    self.line_wake = self.app.wait(now).map(|wait| now + wait);
                }
            } else {
                let next = match room.parked.take() {
                    Some(parked) => Some((parked.pack, Some(parked.retry))),
                    None => match room.halves.pop_front() {
                        Some(half) => Some((half, None)),
                        None => room
                            .pack(room_id, self.tuning.limits, now, &self.stats)
                            .map(|pack| (pack, None)),
                    },
                };
                if let Some((pack, retry)) = next {
                    room.bucket.take();
                    self.app.take();
                    room.in_flight = true;
                    // Held events may have left with the pack.
                    wake = room.next_due();
                    let events = pack.published.len();
                    let message = GroupMessage::new(pack.data).with_priority(pack.priority);
                    if !self.warned_large && message.body_bytes() > LARGE_MESSAGE_BYTES {
                        self.warned_large = true;
                        tracing::warn!(
                            bytes = message.body_bytes(),
                            "an IM display message is over 8 KB; Tencent's older limit \
                             (lower im.display.max_message_bytes if clients miss messages)"
                        );
                    }
                    let sender = self.sender.clone();
                    let group_id = room.group_id.clone();
                    let (priority, published, parts) = (pack.priority, pack.published, pack.parts);
                    let task = self.sends.spawn(async move {
                        let outcome = sender.send(&group_id, &message).await;
                        SendDone {
                            outcome,
                            pack: Pack {
                                data: message.data,
                                priority,
                                published,
                                parts,
                            },
                            retry,
                        }
                    });
                    self.in_flight.insert(
                        task.id(),
                        InFlight {
                            room_id: room_id.clone(),
                            events,
                        },
                    );
                }
            }
        }
        let after = room.size();
        if let Some(at) = wake
            && room.wake_at.is_none_or(|current| at < current)
        {
            room.wake_at = Some(at);
            self.wakeups.push(Reverse((at, room_id.clone())));
        }
        self.waiting = self.waiting + after - before;
    }

    /// Serves the rooms in the line, in order, while slots and app tokens last.
    pub(super) fn serve_line(&mut self, now: Instant) {
        while !self.line.is_empty() && self.sends.len() < self.tuning.max_in_flight {
            if let Some(wait) = self.app.wait(now) {
                self.line_wake = Some(now + wait);
                return;
            }
            let Some(room_id) = self.line.pop_front() else {
                break;
            };
            if let Some(room) = self.rooms.get_mut(&room_id) {
                room.waiting_slot = false;
            }
            self.serve(&room_id, now, true);
        }
        if self.line.is_empty() {
            self.line_wake = None;
        }
    }

    /// Serves the rooms whose wake-up has come.
    pub(super) fn wake(&mut self, now: Instant) {
        while let Some(Reverse((at, _))) = self.wakeups.peek() {
            if *at > now {
                break;
            }
            let Some(Reverse((at, room_id))) = self.wakeups.pop() else {
                break;
            };
            let Some(room) = self.rooms.get_mut(&room_id) else {
                continue;
            };
            if room.wake_at != Some(at) {
                // A stale wake-up: an earlier one replaced it.
                continue;
            }
            room.wake_at = None;
            self.serve(&room_id, now, false);
        }
    }

    /// Records a finished (or failed) send task, then serves the line and its room.
    pub(super) fn finished(
        &mut self,
        joined: Result<(tokio::task::Id, SendDone), tokio::task::JoinError>,
    ) {
        let (id, done) = match joined {
            Ok((id, done)) => (id, Ok(done)),
            Err(error) => (error.id(), Err(error)),
        };
        let Some(InFlight { room_id, events }) = self.in_flight.remove(&id) else {
            return;
        };
        let now = Instant::now();
        match done {
            Ok(done) => self.record(&room_id, done, now),
            Err(error) => {
                // A panic (or an abort) must not leave the room marked in flight forever.
                tracing::error!(room_id = %room_id, error = %error, events, "an IM display send failed to run");
                self.stats.dropped(DropReason::SendFailed, events);
            }
        }
        if let Some(room) = self.rooms.get_mut(&room_id) {
            room.in_flight = false;
        }
        // Rooms in the line go first; the room that just sent queues behind them if the
        // slots or tokens are taken, so busy rooms cannot starve the others.
        self.serve_line(now);
        self.serve(&room_id, now, false);
    }

    /// Counts what a send did; a message refused for a missing group is parked for a retry,
    /// one refused as too long is split.
    pub(super) fn record(&mut self, room_id: &RoomId, done: SendDone, now: Instant) {
        let events = done.pack.published.len();
        match &done.outcome {
            Ok(SendOutcome::Sent { .. }) => {
                self.stats.messages_sent.fetch_add(1, Ordering::Relaxed);
                self.stats
                    .events_sent
                    .fetch_add(events as u64, Ordering::Relaxed);
                metrics::counter!("room_im_display_messages_total").increment(1);
                metrics::counter!("room_im_display_events_total").increment(events as u64);
                let lag = metrics::histogram!("room_im_display_lag_seconds");
                for at in &done.pack.published {
                    lag.record(now.saturating_duration_since(*at).as_secs_f64());
                }
            }
            Ok(SendOutcome::Dropped { reason }) => {
                tracing::debug!(
                    room_id = %room_id, reason, events,
                    "Tencent IM dropped a display message"
                );
                self.stats.dropped(DropReason::ByIm, events);
            }
            Err(ImError::NoSuchGroup { .. }) => self.park(room_id, done, now),
            Err(ImError::Rejected { code, .. }) if *code == CODE_TOO_LONG => {
                self.split(room_id, done);
            }
            Err(error) => {
                if error.is_retryable() {
                    tracing::debug!(
                        room_id = %room_id, error = %error, events,
                        "a display message was not sent"
                    );
                } else {
                    tracing::warn!(
                        room_id = %room_id, error = %error, events,
                        "a display message was refused"
                    );
                }
                self.stats.dropped(DropReason::SendFailed, events);
            }
        }
    }

    /// Keeps a message its group refused as missing, to send again later, or drops it once
    /// [`Tuning::no_group_retry`] has passed since the first refusal.
    pub(super) fn park(&mut self, room_id: &RoomId, done: SendDone, now: Instant) {
        let events = done.pack.published.len();
        let since = done.retry.map_or(now, |r| r.since);
        let Some(room) = self.rooms.get_mut(room_id) else {
            self.stats.dropped(DropReason::NoGroup, events);
            return;
        };
        if !room.warned_no_group {
            room.warned_no_group = true;
            tracing::warn!(
                room_id = %room_id,
                "the room's IM group does not exist (yet); holding its display for a while"
            );
        }
        let limit = since + self.tuning.no_group_retry;
        if now >= limit {
            tracing::debug!(room_id = %room_id, events, "the room's IM group never appeared");
            self.stats.dropped(DropReason::NoGroup, events);
            return;
        }
        let delay = done
            .retry
            .map_or(NO_GROUP_FIRST_RETRY, |r| r.delay.saturating_mul(2));
        room.parked = Some(Parked {
            pack: done.pack,
            retry: NoGroupRetry {
                since,
                delay,
                at: (now + delay).min(limit),
            },
        });
        self.waiting += events;
    }

    /// Splits a message Tencent refused as too long in two, to send each half again before
    /// the room's queue (a half refused again is split again); a single event too long on its
    /// own is dropped.
    pub(super) fn split(&mut self, room_id: &RoomId, done: SendDone) {
        let events = done.pack.published.len();
        let Some(room) = self.rooms.get_mut(room_id) else {
            self.stats.dropped(DropReason::TooLarge, events);
            return;
        };
        match done.pack.split(room_id) {
            Ok((first, second)) => {
                tracing::debug!(
                    room_id = %room_id, events,
                    "Tencent IM refused a display message as too long; sending it in halves"
                );
                metrics::counter!("room_im_display_splits_total").increment(1);
                room.halves.push_front(second);
                room.halves.push_front(first);
                self.waiting += events;
            }
            Err(pack) => {
                tracing::warn!(
                    room_id = %room_id,
                    bytes = pack.data.len(),
                    "a display event is too long for an IM message on its own; dropped"
                );
                self.stats.dropped(DropReason::TooLarge, events);
            }
        }
    }

    /// Forgets rooms with nothing waiting or in flight whose bucket is full again.
    pub(super) fn sweep(&mut self, now: Instant) {
        self.sweep_at = now + SWEEP_EVERY;
        self.rooms.retain(|_, room| {
            room.in_flight || room.waiting_slot || room.size() > 0 || !room.bucket.is_full(now)
        });
        self.stats
            .rooms
            .store(self.rooms.len() as u64, Ordering::Relaxed);
    }

    pub(super) fn refresh_gauges(&mut self, now_anyway: bool) {
        let now = Instant::now();
        if !now_anyway && now.duration_since(self.gauges_at) < GAUGE_EVERY {
            return;
        }
        self.gauges_at = now;
        metrics::gauge!("room_im_display_queue_depth").set(self.waiting as f64);
        metrics::gauge!("room_im_display_rooms").set(self.rooms.len() as f64);
        self.stats
            .rooms
            .store(self.rooms.len() as u64, Ordering::Relaxed);
    }

    /// After cancellation: takes what was queued, sends it (held events and parked messages
    /// at once) for at most the drain time, then drops the rest.
    pub(super) async fn drain(&mut self, mut pending: mpsc::Receiver<Batch>) {
        pending.close();
        let now = Instant::now();
        while let Ok(batch) = pending.try_recv() {
            self.accept(batch, now);
        }
        for room in self.rooms.values_mut() {
            for held in &mut room.held {
                held.due = now;
            }
            if let Some(parked) = &mut room.parked {
                parked.retry.at = now;
            }
        }
        let rooms: Vec<RoomId> = self.rooms.keys().cloned().collect();
        for room_id in &rooms {
            self.serve(room_id, now, false);
        }
        let deadline = now + self.tuning.drain;
        loop {
            if self.waiting == 0 && self.sends.is_empty() {
                break;
            }
            let woken = self.next_timer().min(deadline);
            tokio::select! {
                biased;
                () = tokio::time::sleep_until(deadline) => break,
                Some(done) = self.sends.join_next_with_id(), if !self.sends.is_empty() => {
                    self.finished(done);
                }
                () = tokio::time::sleep_until(woken) => self.timers(Instant::now()),
            }
        }
        // What could not be sent in time.
        self.sends.abort_all();
        while self.sends.join_next().await.is_some() {}
        let in_flight: usize = self.in_flight.drain().map(|(_, f)| f.events).sum();
        let left: usize = self.rooms.values().map(Room::size).sum();
        self.stats.dropped(DropReason::Shutdown, left + in_flight);
        self.waiting = 0;
    }
}

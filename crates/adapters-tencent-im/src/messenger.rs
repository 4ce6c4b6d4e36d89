//! [`ImMessenger`]: display events after commit, to each room's Tencent IM group, within the
//! group's 40 messages/s: the node queue, the dispatcher and its per-room state.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use room_app::ports::{DisplayMessage, Messenger};
use room_domain::{EventEnvelope, ImPriority, RoomId};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::client::custom_body_bytes;
use crate::{DisplaySettings, GroupMessage, ImClient, SendOutcome, group_id};

/// How often idle rooms are forgotten.
const SWEEP_EVERY: Duration = Duration::from_secs(5);
/// How often the gauges are refreshed at most.
const GAUGE_EVERY: Duration = Duration::from_millis(250);
/// Batches taken from the queue per wake of the dispatcher, before it looks at its timers and
/// finished sends again.
const BATCHES_PER_TURN: usize = 256;

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
/// Each send packs as many of a room's waiting events as fit into ONE `send_group_msg`: one
/// `TIMCustomElem` whose `Data` is `{"room_id":..,"events":[envelope, ...]}` (envelopes in seq
/// order, each with its room id and seq), its `MsgBody` within
/// [`DisplaySettings::max_message_bytes`], its `MsgPriority` the highest of its events. An
/// event too large for a message on its own is dropped (counted). A room has one send in
/// flight at a time, so its messages leave in order; rooms send concurrently, up to
/// [`DisplaySettings::max_in_flight`].
///
/// Metrics: `room_im_display_messages_total` and `room_im_display_events_total` (sent),
/// `room_im_display_dropped_total{reason}` (events; `reason`: `queue_full`, `shed`,
/// `too_large`, `im_dropped` (Tencent's `MsgDropReason`), `send_failed`, `shutdown`),
/// `room_im_display_shed_total{priority}`, `room_im_display_coalesced_total`,
/// `room_im_display_lag_seconds` (from `publish` to Tencent's answer, per event),
/// `room_im_display_queue_depth` (events waiting in the dispatcher) and
/// `room_im_display_rooms`.
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

/// What the messenger did so far (the same figures as its metrics).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DisplayStats {
    /// Messages Tencent took and delivered.
    pub messages_sent: u64,
    /// Events in those messages.
    pub events_sent: u64,
    /// Events dropped because the node's queue was full.
    pub dropped_queue_full: u64,
    /// Events shed by a room's bound (the sum of the three `shed_*`).
    pub dropped_shed: u64,
    /// Events too large for a message on their own.
    pub dropped_too_large: u64,
    /// Events in messages Tencent took but dropped (`MsgDropReason`).
    pub dropped_by_im: u64,
    /// Events in messages whose send failed after its retries.
    pub dropped_send_failed: u64,
    /// Events still waiting when the dispatcher stopped.
    pub dropped_shutdown: u64,
    /// Low events shed.
    pub shed_low: u64,
    /// Normal events shed.
    pub shed_normal: u64,
    /// High events shed.
    pub shed_high: u64,
    /// Events replaced by a newer one of the same room and coalescing key.
    pub coalesced: u64,
}

#[derive(Debug, Default)]
struct Stats {
    messages_sent: AtomicU64,
    events_sent: AtomicU64,
    dropped_queue_full: AtomicU64,
    dropped_too_large: AtomicU64,
    dropped_by_im: AtomicU64,
    dropped_send_failed: AtomicU64,
    dropped_shutdown: AtomicU64,
    shed: [AtomicU64; 3],
    coalesced: AtomicU64,
}

/// Why events were dropped: the `reason` label.
#[derive(Debug, Clone, Copy)]
enum Drop {
    QueueFull,
    TooLarge,
    ByIm,
    SendFailed,
    Shutdown,
}

impl Stats {
    fn dropped(&self, why: Drop, events: usize) {
        if events == 0 {
            return;
        }
        let (counter, reason) = match why {
            Drop::QueueFull => (&self.dropped_queue_full, "queue_full"),
            Drop::TooLarge => (&self.dropped_too_large, "too_large"),
            Drop::ByIm => (&self.dropped_by_im, "im_dropped"),
            Drop::SendFailed => (&self.dropped_send_failed, "send_failed"),
            Drop::Shutdown => (&self.dropped_shutdown, "shutdown"),
        };
        counter.fetch_add(events as u64, Ordering::Relaxed);
        metrics::counter!("room_im_display_dropped_total", "reason" => reason)
            .increment(events as u64);
    }

    fn shed(&self, priority: ImPriority, events: usize) {
        if events == 0 {
            return;
        }
        self.shed[rank(priority)].fetch_add(events as u64, Ordering::Relaxed);
        metrics::counter!("room_im_display_shed_total", "priority" => priority_label(priority))
            .increment(events as u64);
        metrics::counter!("room_im_display_dropped_total", "reason" => "shed")
            .increment(events as u64);
    }

    fn coalesced(&self) {
        self.coalesced.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("room_im_display_coalesced_total").increment(1);
    }

    fn snapshot(&self) -> DisplayStats {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let shed = [get(&self.shed[0]), get(&self.shed[1]), get(&self.shed[2])];
        DisplayStats {
            messages_sent: get(&self.messages_sent),
            events_sent: get(&self.events_sent),
            dropped_queue_full: get(&self.dropped_queue_full),
            dropped_shed: shed.iter().sum(),
            dropped_too_large: get(&self.dropped_too_large),
            dropped_by_im: get(&self.dropped_by_im),
            dropped_send_failed: get(&self.dropped_send_failed),
            dropped_shutdown: get(&self.dropped_shutdown),
            shed_low: shed[0],
            shed_normal: shed[1],
            shed_high: shed[2],
            coalesced: get(&self.coalesced),
        }
    }
}

fn rank(priority: ImPriority) -> usize {
    match priority {
        ImPriority::Low => 0,
        ImPriority::Normal => 1,
        ImPriority::High => 2,
    }
}

fn priority_label(priority: ImPriority) -> &'static str {
    match priority {
        ImPriority::Low => "low",
        ImPriority::Normal => "normal",
        ImPriority::High => "high",
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
        let stats = Arc::new(Stats::default());
        let (queue, pending) = mpsc::channel(settings.queue_capacity.max(1));
        let dispatcher = Dispatcher::new(client, settings, stats.clone());
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
                self.stats.dropped(Drop::QueueFull, batch.messages.len());
            }
            Err(mpsc::error::TrySendError::Closed(batch)) => {
                self.stats.dropped(Drop::Shutdown, batch.messages.len());
            }
        }
    }
}

/// One commit's display events, as `publish` queues them.
struct Batch {
    room_id: RoomId,
    messages: Vec<DisplayMessage>,
    at: Instant,
}

/// An event waiting to be sent.
struct Item {
    envelope: EventEnvelope,
    priority: ImPriority,
    key: Option<&'static str>,
    published: Instant,
}

impl Item {
    fn seq(&self) -> u64 {
        self.envelope.seq
    }
}

/// The newest event of one coalescing key of a room.
struct Held {
    key: &'static str,
    /// The newest event not yet moved to the queue.
    item: Option<Item>,
    /// When `item` moves to the queue.
    due: Instant,
    /// The seq of this key's event in the queue, if one is there unsent: a newer one replaces
    /// it when it moves there.
    queued_seq: Option<u64>,
}

/// What the dispatcher keeps of one room.
struct Room {
    group_id: Arc<str>,
    /// Events waiting, by seq.
    queue: VecDeque<Item>,
    held: Vec<Held>,
    tokens: f64,
    refilled: Instant,
    in_flight: bool,
    /// Whether the room is in the dispatcher's list of rooms waiting for a send slot.
    waiting_slot: bool,
    /// The earliest wake-up the dispatcher has for the room.
    wake_at: Option<Instant>,
}

impl Room {
    fn new(room_id: &RoomId, burst: f64, now: Instant) -> Self {
        Room {
            group_id: group_id(room_id).into(),
            queue: VecDeque::new(),
            held: Vec::new(),
            tokens: burst,
            refilled: now,
            in_flight: false,
            waiting_slot: false,
            wake_at: None,
        }
    }

    /// Events waiting (queued or held).
    fn size(&self) -> usize {
        self.queue.len() + self.held.iter().filter(|h| h.item.is_some()).count()
    }

    fn refill(&mut self, now: Instant, rate: f64, burst: f64) {
        let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.tokens = (self.tokens + elapsed * rate).min(burst);
        self.refilled = now;
    }

    /// Puts `item` in the queue at its seq's place (the end, nearly always).
    fn enqueue(&mut self, item: Item) {
        if self
            .queue
            .back()
            .is_none_or(|last| last.seq() <= item.seq())
        {
            self.queue.push_back(item);
        } else {
            let at = self.queue.partition_point(|q| q.seq() <= item.seq());
            self.queue.insert(at, item);
        }
    }

    /// Holds a coalescible event, replacing an older one of its key.
    fn hold(&mut self, item: Item, key: &'static str, due: Instant, stats: &Stats) {
        match self.held.iter_mut().find(|h| h.key == key) {
            Some(held) => match &held.item {
                Some(current) if current.seq() > item.seq() => stats.coalesced(),
                Some(_) => {
                    stats.coalesced();
                    held.item = Some(item);
                }
                None => {
                    held.item = Some(item);
                    held.due = due;
                }
            },
            None => self.held.push(Held {
                key,
                item: Some(item),
                due,
                queued_seq: None,
            }),
        }
    }

    /// Moves held events due by `now` into the queue, each replacing its key's older event
    /// still queued.
    fn flush_due(&mut self, now: Instant, stats: &Stats) {
        for index in 0..self.held.len() {
            let held = &mut self.held[index];
            if held.due > now {
                continue;
            }
            let Some(item) = held.item.take() else {
                continue;
            };
            let older = held.queued_seq.replace(item.seq());
            if let Some(older) = older {
                let at = self.queue.partition_point(|q| q.seq() < older);
                if self
                    .queue
                    .get(at)
                    .is_some_and(|q| q.seq() == older && q.key.is_some())
                {
                    self.queue.remove(at);
                    stats.coalesced();
                }
            }
            self.enqueue(item);
        }
    }

    /// The earliest time a held event is due.
    fn next_due(&self) -> Option<Instant> {
        self.held
            .iter()
            .filter(|h| h.item.is_some())
            .map(|h| h.due)
            .min()
    }

    /// Sheds events beyond `max`: the oldest Low first, then Normal, then High.
    fn shed(&mut self, max: usize, stats: &Stats) {
        let mut excess = self.queue.len().saturating_sub(max);
        for priority in [ImPriority::Low, ImPriority::Normal, ImPriority::High] {
            if excess == 0 {
                return;
            }
            let mut removed = 0;
            let held = &mut self.held;
            self.queue.retain(|item| {
                if removed == excess || item.priority != priority {
                    return true;
                }
                removed += 1;
                if let Some(key) = item.key {
                    forget_queued(held, key, item.seq());
                }
                false
            });
            stats.shed(priority, removed);
            excess -= removed;
        }
    }

    /// Takes the events of the next message: from the front of the queue, then held ones if
    /// the queue is empty, as many as fit in `max_bytes`. `None` when nothing fits.
    fn pack(&mut self, room_id: &RoomId, max_bytes: usize, stats: &Stats) -> Option<Pack> {
        let mut data = String::with_capacity(1024);
        data.push_str(r#"{"room_id":"#);
        push_json(&mut data, room_id);
        data.push_str(r#","events":["#);
        let mut builder = PackBuilder {
            escaped: escaped_len(&data) + "]}".len(),
            events: Vec::new(),
            max_bytes,
        };
        while let Some(front) = self.queue.front() {
            match builder.offer(front) {
                Offer::Fits(json) => {
                    let item = self.queue.pop_front().expect("the front was just seen");
                    if let Some(key) = item.key {
                        forget_queued(&mut self.held, key, item.seq());
                    }
                    builder.take(item, json);
                }
                Offer::Full => break,
                Offer::TooLarge => {
                    let item = self.queue.pop_front().expect("the front was just seen");
                    if let Some(key) = item.key {
                        forget_queued(&mut self.held, key, item.seq());
                    }
                    tracing::warn!(
                        room_id = %room_id,
                        seq = item.seq(),
                        kind = item.envelope.event.type_name(),
                        "a display event is too large for an IM message; dropped"
                    );
                    stats.dropped(Drop::TooLarge, 1);
                }
            }
        }
        if self.queue.is_empty() {
            // A message is leaving anyway: held events that fit ride along now instead of
            // costing a message of their own later.
            for held in &mut self.held {
                let Some(item) = held.item.as_ref() else {
                    continue;
                };
                match builder.offer(item) {
                    Offer::Fits(json) => {
                        let item = held.item.take().expect("just seen");
                        builder.take(item, json);
                    }
                    Offer::Full => break,
                    Offer::TooLarge => {
                        held.item = None;
                        stats.dropped(Drop::TooLarge, 1);
                    }
                }
            }
        }
        if builder.events.is_empty() {
            return None;
        }
        // Held events that rode along may be older than queued ones.
        builder.events.sort_by_key(|e| e.0);
        let mut priority = ImPriority::Low;
        let mut published = Vec::with_capacity(builder.events.len());
        for (index, (_, json, item_priority, at)) in builder.events.iter().enumerate() {
            if index > 0 {
                data.push(',');
            }
            data.push_str(json);
            priority = priority.max(*item_priority);
            published.push(*at);
        }
        data.push_str("]}");
        Some(Pack {
            data,
            priority,
            published,
        })
    }
}

/// Clears a key's note of a queued event that left the queue.
fn forget_queued(held: &mut [Held], key: &'static str, seq: u64) {
    if let Some(h) = held
        .iter_mut()
        .find(|h| h.key == key && h.queued_seq == Some(seq))
    {
        h.queued_seq = None;
    }
}

struct PackBuilder {
    /// The escaped size of `Data` so far, with its closing `]}`.
    escaped: usize,
    /// Seq, envelope JSON, priority and publish time of each event taken.
    events: Vec<(u64, String, ImPriority, Instant)>,
    max_bytes: usize,
}

enum Offer {
    Fits(String),
    Full,
    TooLarge,
}

impl PackBuilder {
    fn offer(&self, item: &Item) -> Offer {
        let json = match serde_json::to_string(&item.envelope) {
            Ok(json) => json,
            // Envelopes always serialize; one that did not could not be sent anyway.
            Err(_) => return Offer::TooLarge,
        };
        let comma = usize::from(!self.events.is_empty());
        let cost = escaped_len(&json) + comma;
        if custom_body_bytes(self.escaped + cost) <= self.max_bytes {
            Offer::Fits(json)
        } else if self.events.is_empty() {
            Offer::TooLarge
        } else {
            Offer::Full
        }
    }

    fn take(&mut self, item: Item, json: String) {
        self.escaped += escaped_len(&json) + usize::from(!self.events.is_empty());
        self.events
            .push((item.seq(), json, item.priority, item.published));
    }
}

/// The length of `json` once escaped as the content of a JSON string. JSON that serde_json
/// wrote has no raw control characters, so only `"` and `\` grow (by one byte each).
fn escaped_len(json: &str) -> usize {
    json.len() + json.bytes().filter(|b| matches!(b, b'"' | b'\\')).count()
}

fn push_json(out: &mut String, room_id: &RoomId) {
    // A room id serializes as a JSON string; that cannot fail.
    if let Ok(json) = serde_json::to_string(room_id) {
        out.push_str(&json);
    }
}

/// One message's content.
struct Pack {
    data: String,
    priority: ImPriority,
    /// When each of its events was published.
    published: Vec<Instant>,
}

/// What a finished send reports back.
struct SendDone {
    room_id: RoomId,
    outcome: crate::Result<SendOutcome>,
    published: Vec<Instant>,
}

struct Tuning {
    rate: f64,
    burst: f64,
    room_queue_max: usize,
    coalesce: Duration,
    max_in_flight: usize,
    max_bytes: usize,
    drain: Duration,
}

struct Dispatcher {
    client: ImClient,
    tuning: Tuning,
    stats: Arc<Stats>,
    rooms: HashMap<RoomId, Room>,
    /// Room wake-ups (tokens back, held events due), earliest first; stale ones are skipped.
    wakeups: BinaryHeap<Reverse<(Instant, RoomId)>>,
    /// Rooms ready to send but for a free slot, in the order they became ready.
    waiting_slot: VecDeque<RoomId>,
    sends: JoinSet<SendDone>,
    /// Events waiting across rooms.
    waiting: usize,
    gauges_at: Instant,
}

impl Dispatcher {
    fn new(client: ImClient, settings: &DisplaySettings, stats: Arc<Stats>) -> Self {
        let rate = if settings.room_rate_per_sec.is_finite() && settings.room_rate_per_sec > 0.0 {
            settings.room_rate_per_sec
        } else {
            DisplaySettings::default().room_rate_per_sec
        };
        let burst = if settings.room_burst.is_finite() {
            settings.room_burst.max(1.0)
        } else {
            1.0
        };
        Dispatcher {
            client,
            tuning: Tuning {
                rate,
                burst,
                room_queue_max: settings.room_queue_max.max(1),
                coalesce: Duration::from_millis(settings.coalesce_ms),
                max_in_flight: settings.max_in_flight.max(1),
                max_bytes: settings.max_message_bytes,
                drain: Duration::from_millis(settings.drain_ms),
            },
            stats,
            rooms: HashMap::new(),
            wakeups: BinaryHeap::new(),
            waiting_slot: VecDeque::new(),
            sends: JoinSet::new(),
            waiting: 0,
            gauges_at: Instant::now(),
        }
    }

    async fn run(mut self, mut pending: mpsc::Receiver<Batch>, cancel: CancellationToken) {
        let mut sweep = tokio::time::interval(SWEEP_EVERY);
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let timer = tokio::time::sleep(Duration::ZERO);
        tokio::pin!(timer);
        let mut timer_at: Option<Instant> = None;
        // One waiter for the whole run: a new one per turn would register with the token
        // each time.
        let cancelled = cancel.cancelled();
        tokio::pin!(cancelled);
        loop {
            let next_wake = self.wakeups.peek().map(|Reverse((at, _))| *at);
            if next_wake != timer_at {
                if let Some(at) = next_wake {
                    timer.as_mut().reset(at);
                }
                timer_at = next_wake;
            }
            tokio::select! {
                biased;
                () = &mut cancelled => break,
                Some(done) = self.sends.join_next(), if !self.sends.is_empty() => {
                    self.finished(done);
                }
                () = &mut timer, if timer_at.is_some() => {
                    timer_at = None;
                    self.wake(Instant::now());
                }
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
                _ = sweep.tick() => self.sweep(Instant::now()),
            }
            self.refresh_gauges(false);
        }
        self.drain(pending).await;
        self.refresh_gauges(true);
    }

    /// Takes in one commit's events and sends what the room can send now.
    fn accept(&mut self, batch: Batch, now: Instant) {
        let Batch {
            room_id,
            messages,
            at,
        } = batch;
        let tuning = &self.tuning;
        let room = self
            .rooms
            .entry(room_id.clone())
            .or_insert_with(|| Room::new(&room_id, tuning.burst, now));
        let before = room.size();
        for message in messages {
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
        self.serve(&room_id, now);
    }

    /// Moves the room's due events to its queue, and starts its next send if it has no send
    /// in flight, a token and a free slot; else arranges to be called again when it may.
    fn serve(&mut self, room_id: &RoomId, now: Instant) {
        let Some(room) = self.rooms.get_mut(room_id) else {
            return;
        };
        let before = room.size();
        room.flush_due(now, &self.stats);
        let mut wake = room.next_due();
        if !room.in_flight && !room.queue.is_empty() {
            room.refill(now, self.tuning.rate, self.tuning.burst);
            if room.tokens < 1.0 {
                let wait = Duration::from_secs_f64((1.0 - room.tokens) / self.tuning.rate);
                wake = Some(wake.map_or(now + wait, |w| w.min(now + wait)));
            } else if self.sends.len() >= self.tuning.max_in_flight {
                if !room.waiting_slot {
                    room.waiting_slot = true;
                    self.waiting_slot.push_back(room_id.clone());
                }
            } else if let Some(pack) = room.pack(room_id, self.tuning.max_bytes, &self.stats) {
                room.tokens -= 1.0;
                room.in_flight = true;
                // Held events may have left with the pack.
                wake = room.next_due();
                let client = self.client.clone();
                let group_id = room.group_id.clone();
                let room_id = room_id.clone();
                self.sends.spawn(async move {
                    let message = GroupMessage::new(pack.data).with_priority(pack.priority);
                    let outcome = client.send_group_msg(&group_id, &message).await;
                    SendDone {
                        room_id,
                        outcome,
                        published: pack.published,
                    }
                });
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

    /// Serves the rooms whose wake-up has come.
    fn wake(&mut self, now: Instant) {
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
            self.serve(&room_id, now);
        }
    }

    /// Records a finished send, then serves its room and the rooms waiting for a slot.
    fn finished(&mut self, done: Result<SendDone, tokio::task::JoinError>) {
        let done = match done {
            Ok(done) => done,
            Err(error) => {
                // Sends do not panic; one that did leaves its room marked in flight, and the
                // room's events wait until the dispatcher restarts.
                tracing::error!(error = %error, "an IM display send failed to run");
                return;
            }
        };
        let now = Instant::now();
        let events = done.published.len();
        match &done.outcome {
            Ok(SendOutcome::Sent { .. }) => {
                self.stats.messages_sent.fetch_add(1, Ordering::Relaxed);
                self.stats
                    .events_sent
                    .fetch_add(events as u64, Ordering::Relaxed);
                metrics::counter!("room_im_display_messages_total").increment(1);
                metrics::counter!("room_im_display_events_total").increment(events as u64);
                let lag = metrics::histogram!("room_im_display_lag_seconds");
                for at in &done.published {
                    lag.record(now.saturating_duration_since(*at).as_secs_f64());
                }
            }
            Ok(SendOutcome::Dropped { reason }) => {
                tracing::debug!(
                    room_id = %done.room_id, reason, events,
                    "Tencent IM dropped a display message"
                );
                self.stats.dropped(Drop::ByIm, events);
            }
            Err(error) => {
                if error.is_retryable() {
                    tracing::debug!(
                        room_id = %done.room_id, error = %error, events,
                        "a display message was not sent"
                    );
                } else {
                    tracing::warn!(
                        room_id = %done.room_id, error = %error, events,
                        "a display message was refused"
                    );
                }
                self.stats.dropped(Drop::SendFailed, events);
            }
        }
        if let Some(room) = self.rooms.get_mut(&done.room_id) {
            room.in_flight = false;
        }
        // Rooms that waited for a slot go first; the room that just sent queues behind them
        // if the slots are taken, so busy rooms cannot starve the others.
        while self.sends.len() < self.tuning.max_in_flight {
            let Some(room_id) = self.waiting_slot.pop_front() else {
                break;
            };
            if let Some(room) = self.rooms.get_mut(&room_id) {
                room.waiting_slot = false;
            }
            self.serve(&room_id, now);
        }
        self.serve(&done.room_id, now);
    }

    /// Forgets rooms with nothing waiting or in flight whose bucket is full again.
    fn sweep(&mut self, now: Instant) {
        let Tuning { rate, burst, .. } = self.tuning;
        self.rooms.retain(|_, room| {
            if room.in_flight || room.waiting_slot || room.size() > 0 {
                return true;
            }
            room.refill(now, rate, burst);
            room.tokens < burst
        });
    }

    fn refresh_gauges(&mut self, now_anyway: bool) {
        let now = Instant::now();
        if !now_anyway && now.duration_since(self.gauges_at) < GAUGE_EVERY {
            return;
        }
        self.gauges_at = now;
        metrics::gauge!("room_im_display_queue_depth").set(self.waiting as f64);
        metrics::gauge!("room_im_display_rooms").set(self.rooms.len() as f64);
    }

    /// After cancellation: takes what was queued, sends it (held events at once) for at most
    /// the drain time, then drops the rest.
    async fn drain(&mut self, mut pending: mpsc::Receiver<Batch>) {
        pending.close();
        let now = Instant::now();
        while let Ok(batch) = pending.try_recv() {
            self.accept(batch, now);
        }
        for room in self.rooms.values_mut() {
            for held in &mut room.held {
                held.due = now;
            }
        }
        let rooms: Vec<RoomId> = self.rooms.keys().cloned().collect();
        for room_id in &rooms {
            self.serve(room_id, now);
        }
        let deadline = now + self.tuning.drain;
        loop {
            if self.waiting == 0 && self.sends.is_empty() {
                break;
            }
            let next_wake = self.wakeups.peek().map(|Reverse((at, _))| *at);
            let woken = next_wake.unwrap_or(deadline);
            tokio::select! {
                biased;
                () = tokio::time::sleep_until(deadline) => break,
                Some(done) = self.sends.join_next(), if !self.sends.is_empty() => {
                    self.finished(done);
                }
                () = tokio::time::sleep_until(woken), if next_wake.is_some() => {
                    self.wake(Instant::now());
                }
            }
        }
        // What could not be sent in time.
        self.sends.abort_all();
        while self.sends.join_next().await.is_some() {}
        let left: usize = self.rooms.values().map(Room::size).sum();
        self.stats.dropped(Drop::Shutdown, left);
        self.waiting = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use room_domain::{Event, Timestamp};

    fn item(seq: u64, priority: ImPriority, key: Option<&'static str>) -> Item {
        let room = RoomId::new("r").unwrap();
        let event = Event::RoomHeatChanged {
            heat: seq as i64,
            delta: 1,
        };
        Item {
            envelope: EventEnvelope::new(room, seq, Timestamp(0), &event),
            priority,
            key,
            published: Instant::now(),
        }
    }

    fn room() -> Room {
        Room::new(&RoomId::new("r").unwrap(), 5.0, Instant::now())
    }

    #[test]
    fn the_queue_stays_in_seq_order() {
        let mut room = room();
        for seq in [1, 2, 5, 3, 4] {
            room.enqueue(item(seq, ImPriority::Normal, None));
        }
        let seqs: Vec<u64> = room.queue.iter().map(Item::seq).collect();
        assert_eq!(seqs, [1, 2, 3, 4, 5]);
    }

    #[test]
    fn shedding_takes_low_then_normal_then_high_oldest_first() {
        let stats = Stats::default();
        let mut room = room();
        let priorities = [
            ImPriority::High,
            ImPriority::Low,
            ImPriority::Normal,
            ImPriority::Low,
            ImPriority::Normal,
            ImPriority::High,
        ];
        for (seq, priority) in priorities.into_iter().enumerate() {
            room.enqueue(item(seq as u64, priority, None));
        }
        room.shed(3, &stats);
        let left: Vec<u64> = room.queue.iter().map(Item::seq).collect();
        // Both Lows (1, 3) and the older Normal (2) go.
        assert_eq!(left, [0, 4, 5]);
        let snapshot = stats.snapshot();
        assert_eq!(
            (snapshot.shed_low, snapshot.shed_normal, snapshot.shed_high),
            (2, 1, 0)
        );
        room.shed(1, &stats);
        assert_eq!(room.queue.iter().map(Item::seq).collect::<Vec<_>>(), [5]);
        assert_eq!(stats.snapshot().shed_high, 1);
    }

    #[test]
    fn a_flushed_value_replaces_its_keys_older_queued_value() {
        let stats = Stats::default();
        let mut room = room();
        let now = Instant::now();
        room.hold(item(1, ImPriority::Low, Some("heat")), "heat", now, &stats);
        room.flush_due(now, &stats);
        room.enqueue(item(2, ImPriority::High, None));
        room.hold(item(3, ImPriority::Low, Some("heat")), "heat", now, &stats);
        room.hold(item(4, ImPriority::Low, Some("heat")), "heat", now, &stats);
        room.flush_due(now, &stats);
        let seqs: Vec<u64> = room.queue.iter().map(Item::seq).collect();
        assert_eq!(seqs, [2, 4]);
        assert_eq!(stats.snapshot().coalesced, 2);
    }

    #[test]
    fn a_pack_is_valid_json_within_the_size() {
        let stats = Stats::default();
        let mut room = room();
        for seq in 1..=200 {
            room.enqueue(item(seq, ImPriority::Normal, None));
        }
        let id = RoomId::new("r").unwrap();
        let pack = room.pack(&id, 2048, &stats).unwrap();
        let message = GroupMessage::new(pack.data.clone());
        assert!(message.body_bytes() <= 2048);
        let data: serde_json::Value = serde_json::from_str(&pack.data).unwrap();
        let events = data["events"].as_array().unwrap();
        assert_eq!(data["room_id"], "r");
        assert_eq!(events.len(), pack.published.len());
        assert_eq!(room.queue.len(), 200 - events.len());
        // One more event would not have fit.
        let mut bigger = room_for_size_check(events.len() + 1);
        let more = bigger.pack(&id, usize::MAX, &stats).unwrap();
        assert!(GroupMessage::new(more.data).body_bytes() > 2048);
    }

    fn room_for_size_check(events: usize) -> Room {
        let mut room = room();
        for seq in 1..=events as u64 {
            room.enqueue(item(seq, ImPriority::Normal, None));
        }
        room
    }

    #[test]
    fn an_event_too_large_alone_is_dropped() {
        let stats = Stats::default();
        let mut room = room();
        room.enqueue(item(1, ImPriority::High, None));
        let id = RoomId::new("r").unwrap();
        assert!(room.pack(&id, 50, &stats).is_none());
        assert!(room.queue.is_empty());
        assert_eq!(stats.snapshot().dropped_too_large, 1);
    }
}

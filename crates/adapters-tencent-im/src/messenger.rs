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
use crate::{DisplaySettings, GroupMessage, ImClient, ImError, SendOutcome, group_id};

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
/// event too large for a message on its own is dropped (counted). A room has one send in
/// flight at a time, so its messages leave in order; rooms send concurrently, up to
/// [`DisplaySettings::max_in_flight`].
///
/// Metrics: `room_im_display_messages_total` and `room_im_display_events_total` (sent),
/// `room_im_display_dropped_total{reason}` (events; `reason`: `queue_full`, `node_full`,
/// `shed`, `too_large`, `too_old`, `no_group`, `im_dropped` (Tencent's `MsgDropReason`),
/// `send_failed` (refused, failed after its retries, or the send task failed), `shutdown`),
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
    /// Events dropped because the node held [`DisplaySettings::max_held_events`] already.
    pub dropped_node_full: u64,
    /// Events older than [`DisplaySettings::max_age_ms`] when their turn came.
    pub dropped_too_old: u64,
    /// Events whose room's group still did not exist after
    /// [`DisplaySettings::no_group_retry_ms`].
    pub dropped_no_group: u64,
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
    dropped_node_full: AtomicU64,
    dropped_too_old: AtomicU64,
    dropped_no_group: AtomicU64,
    dropped_too_large: AtomicU64,
    dropped_by_im: AtomicU64,
    dropped_send_failed: AtomicU64,
    dropped_shutdown: AtomicU64,
    shed: [AtomicU64; 3],
    coalesced: AtomicU64,
    /// Rooms the dispatcher keeps (the `room_im_display_rooms` gauge), for tests.
    rooms: AtomicU64,
}

/// Why events were dropped: the `reason` label.
#[derive(Debug, Clone, Copy)]
enum DropReason {
    QueueFull,
    NodeFull,
    TooOld,
    NoGroup,
    TooLarge,
    ByIm,
    SendFailed,
    Shutdown,
}

impl Stats {
    fn dropped(&self, why: DropReason, events: usize) {
        if events == 0 {
            return;
        }
        let (counter, reason) = match why {
            DropReason::QueueFull => (&self.dropped_queue_full, "queue_full"),
            DropReason::NodeFull => (&self.dropped_node_full, "node_full"),
            DropReason::TooOld => (&self.dropped_too_old, "too_old"),
            DropReason::NoGroup => (&self.dropped_no_group, "no_group"),
            DropReason::TooLarge => (&self.dropped_too_large, "too_large"),
            DropReason::ByIm => (&self.dropped_by_im, "im_dropped"),
            DropReason::SendFailed => (&self.dropped_send_failed, "send_failed"),
            DropReason::Shutdown => (&self.dropped_shutdown, "shutdown"),
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
            dropped_node_full: get(&self.dropped_node_full),
            dropped_too_old: get(&self.dropped_too_old),
            dropped_no_group: get(&self.dropped_no_group),
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

/// Where the dispatcher's messages go: the [`ImClient`] in production.
#[async_trait]
trait GroupSender: Send + Sync + 'static {
    async fn send(&self, group_id: &str, message: &GroupMessage) -> crate::Result<SendOutcome>;
}

#[async_trait]
impl GroupSender for ImClient {
    async fn send(&self, group_id: &str, message: &GroupMessage) -> crate::Result<SendOutcome> {
        self.send_group_msg(group_id, message).await
    }
}

/// A token bucket: `rate` tokens a second, at most `burst` saved up. Time is tokio's, so
/// tests drive it with `tokio::time::pause()`.
#[derive(Debug, Clone)]
struct Bucket {
    tokens: f64,
    refilled: Instant,
    rate: f64,
    burst: f64,
}

impl Bucket {
    /// A full bucket.
    fn full(rate: f64, burst: f64, now: Instant) -> Self {
        Bucket {
            tokens: burst,
            refilled: now,
            rate,
            burst,
        }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.refilled = now;
    }

    /// `None` when a token is there; else how long until one is.
    fn wait(&mut self, now: Instant) -> Option<Duration> {
        self.refill(now);
        if self.tokens >= 1.0 {
            None
        } else {
            // At least a millisecond: a wait that rounds to nothing would spin.
            let wait = Duration::from_secs_f64((1.0 - self.tokens) / self.rate);
            Some(wait.max(Duration::from_millis(1)))
        }
    }

    /// Takes a token; call after [`Bucket::wait`] said one is there.
    fn take(&mut self) {
        self.tokens -= 1.0;
    }

    fn is_full(&mut self, now: Instant) -> bool {
        self.refill(now);
        self.tokens >= self.burst
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

/// A message refused because its group did not exist, kept to be sent again.
struct Parked {
    pack: Pack,
    retry: NoGroupRetry,
}

/// Where a message refused for a missing group is in its retries.
#[derive(Debug, Clone, Copy)]
struct NoGroupRetry {
    /// The first refusal.
    since: Instant,
    /// The last wait.
    delay: Duration,
    /// When it goes again.
    at: Instant,
}

/// What the dispatcher keeps of one room.
struct Room {
    group_id: Arc<str>,
    /// Events waiting, by seq.
    queue: VecDeque<Item>,
    held: Vec<Held>,
    bucket: Bucket,
    in_flight: bool,
    /// A message waiting for the room's group to exist; it goes before the queue.
    parked: Option<Parked>,
    /// Whether the missing group was logged already.
    warned_no_group: bool,
    /// Whether the room is in the dispatcher's list of rooms waiting for a send slot.
    waiting_slot: bool,
    /// The earliest wake-up the dispatcher has for the room.
    wake_at: Option<Instant>,
}

impl Room {
    fn new(room_id: &RoomId, rate: f64, burst: f64, now: Instant) -> Self {
        Room {
            group_id: group_id(room_id).into(),
            queue: VecDeque::new(),
            held: Vec::new(),
            bucket: Bucket::full(rate, burst, now),
            in_flight: false,
            parked: None,
            warned_no_group: false,
            waiting_slot: false,
            wake_at: None,
        }
    }

    /// Events waiting (queued, held, or parked for a missing group).
    fn size(&self) -> usize {
        self.queue.len()
            + self.held.iter().filter(|h| h.item.is_some()).count()
            + self.parked.as_ref().map_or(0, |p| p.pack.published.len())
    }

    /// Whether a held event of `key` is waiting (a new one replaces it instead of adding one).
    fn holds(&self, key: &'static str) -> bool {
        self.held.iter().any(|h| h.key == key && h.item.is_some())
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
    /// the queue is empty, as many as fit in `max_bytes`; events published more than
    /// `max_age` before `now` are dropped instead. `None` when nothing is left to send.
    fn pack(
        &mut self,
        room_id: &RoomId,
        limits: PackLimits,
        now: Instant,
        stats: &Stats,
    ) -> Option<Pack> {
        let too_old = |item: &Item| now.saturating_duration_since(item.published) > limits.max_age;
        let mut old = 0;
        let mut data = String::with_capacity(1024);
        data.push_str(r#"{"room_id":"#);
        push_json(&mut data, room_id);
        data.push_str(r#","events":["#);
        let mut builder = PackBuilder {
            escaped: escaped_len(&data) + "]}".len(),
            events: Vec::new(),
            max_bytes: limits.max_bytes,
        };
        while let Some(front) = self.queue.front() {
            if too_old(front) {
                let item = self.queue.pop_front().expect("the front was just seen");
                if let Some(key) = item.key {
                    forget_queued(&mut self.held, key, item.seq());
                }
                old += 1;
                continue;
            }
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
                    stats.dropped(DropReason::TooLarge, 1);
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
                if too_old(item) {
                    held.item = None;
                    old += 1;
                    continue;
                }
                match builder.offer(item) {
                    Offer::Fits(json) => {
                        let item = held.item.take().expect("just seen");
                        builder.take(item, json);
                    }
                    Offer::Full => break,
                    Offer::TooLarge => {
                        held.item = None;
                        stats.dropped(DropReason::TooLarge, 1);
                    }
                }
            }
        }
        stats.dropped(DropReason::TooOld, old);
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

/// What one message may carry.
#[derive(Debug, Clone, Copy)]
struct PackLimits {
    max_bytes: usize,
    max_age: Duration,
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
    outcome: crate::Result<SendOutcome>,
    pack: Pack,
    /// Its retries so far after refusals for a missing group.
    retry: Option<NoGroupRetry>,
}

/// A send in flight: its room and how many events it carries (to count them if its task
/// fails).
struct InFlight {
    room_id: RoomId,
    events: usize,
}

struct Tuning {
    rate: f64,
    burst: f64,
    room_queue_max: usize,
    coalesce: Duration,
    max_in_flight: usize,
    limits: PackLimits,
    max_held: usize,
    no_group_retry: Duration,
    drain: Duration,
}

/// A positive finite rate, or `fallback`.
fn rate_or(rate: f64, fallback: f64) -> f64 {
    if rate.is_finite() && rate > 0.0 {
        rate
    } else {
        fallback
    }
}

/// A burst of at least one token.
fn burst_of(burst: f64) -> f64 {
    if burst.is_finite() {
        burst.max(1.0)
    } else {
        1.0
    }
}

struct Dispatcher {
    sender: Arc<dyn GroupSender>,
    tuning: Tuning,
    stats: Arc<Stats>,
    rooms: HashMap<RoomId, Room>,
    /// Room wake-ups (tokens back, held events due, a parked message's retry), earliest
    /// first; stale ones are skipped.
    wakeups: BinaryHeap<Reverse<(Instant, RoomId)>>,
    /// Rooms ready to send but for a free slot or an app token, in the order they became
    /// ready.
    line: VecDeque<RoomId>,
    /// When the app bucket has a token again for the line, if the line waits for one.
    line_wake: Option<Instant>,
    /// The node's `send_group_msg` budget (the app's is shared by every node).
    app: Bucket,
    sends: JoinSet<SendDone>,
    in_flight: HashMap<tokio::task::Id, InFlight>,
    /// Events waiting across rooms.
    waiting: usize,
    sweep_at: Instant,
    gauges_at: Instant,
    warned_large: bool,
}

impl Dispatcher {
    fn new(sender: Arc<dyn GroupSender>, settings: &DisplaySettings, stats: Arc<Stats>) -> Self {
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
    fn next_timer(&self) -> Instant {
        let mut at = self.sweep_at;
        if let Some(Reverse((room_at, _))) = self.wakeups.peek() {
            at = at.min(*room_at);
        }
        if let Some(line_at) = self.line_wake {
            at = at.min(line_at);
        }
        at
    }

    async fn run(mut self, mut pending: mpsc::Receiver<Batch>, cancel: CancellationToken) {
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
    fn timers(&mut self, now: Instant) {
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
    fn serve(&mut self, room_id: &RoomId, now: Instant, from_line: bool) {
        let Some(room) = self.rooms.get_mut(room_id) else {
            return;
        };
        let before = room.size();
        room.flush_due(now, &self.stats);
        let mut wake = room.next_due();
        let mut earliest = |at: Instant| wake = Some(wake.map_or(at, |w| w.min(at)));
        let has_work = room.parked.is_some() || !room.queue.is_empty();
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
                    None => room
                        .pack(room_id, self.tuning.limits, now, &self.stats)
                        .map(|pack| (pack, None)),
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
                    let (priority, published) = (pack.priority, pack.published);
                    let task = self.sends.spawn(async move {
                        let outcome = sender.send(&group_id, &message).await;
                        SendDone {
                            outcome,
                            pack: Pack {
                                data: message.data,
                                priority,
                                published,
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
    fn serve_line(&mut self, now: Instant) {
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
            self.serve(&room_id, now, false);
        }
    }

    /// Records a finished (or failed) send task, then serves the line and its room.
    fn finished(&mut self, joined: Result<(tokio::task::Id, SendDone), tokio::task::JoinError>) {
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

    /// Counts what a send did; a message refused for a missing group is parked for a retry.
    fn record(&mut self, room_id: &RoomId, done: SendDone, now: Instant) {
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
    fn park(&mut self, room_id: &RoomId, done: SendDone, now: Instant) {
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

    /// Forgets rooms with nothing waiting or in flight whose bucket is full again.
    fn sweep(&mut self, now: Instant) {
        self.sweep_at = now + SWEEP_EVERY;
        self.rooms.retain(|_, room| {
            room.in_flight || room.waiting_slot || room.size() > 0 || !room.bucket.is_full(now)
        });
        self.stats
            .rooms
            .store(self.rooms.len() as u64, Ordering::Relaxed);
    }

    fn refresh_gauges(&mut self, now_anyway: bool) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use room_domain::{Event, Timestamp};
    use std::sync::atomic::AtomicU64;

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

    fn limits(max_bytes: usize) -> PackLimits {
        PackLimits {
            max_bytes,
            max_age: Duration::from_secs(60),
        }
    }

    fn room() -> Room {
        Room::new(&RoomId::new("r").unwrap(), 30.0, 5.0, Instant::now())
    }

    /// A sender that needs no HTTP: it answers after `latency` (tokio time), records what
    /// it sent, panics for groups in `panics` (once each) and answers 10010 for groups in
    /// `missing`.
    #[derive(Default)]
    struct TestSender {
        latency: Duration,
        sent: std::sync::Mutex<Vec<(Instant, String, usize)>>,
        attempts: AtomicU64,
        missing: std::sync::Mutex<std::collections::HashSet<String>>,
        panics: std::sync::Mutex<std::collections::HashSet<String>>,
    }

    #[async_trait]
    impl GroupSender for TestSender {
        async fn send(&self, group_id: &str, message: &GroupMessage) -> crate::Result<SendOutcome> {
            self.attempts.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(self.latency).await;
            if self.panics.lock().unwrap().remove(group_id) {
                panic!("a send that panics");
            }
            if self.missing.lock().unwrap().contains(group_id) {
                return Err(ImError::from_code(10010, "no such group"));
            }
            let data: serde_json::Value = serde_json::from_str(&message.data).unwrap();
            let events = data["events"].as_array().unwrap().len();
            self.sent
                .lock()
                .unwrap()
                .push((Instant::now(), group_id.to_owned(), events));
            Ok(SendOutcome::Sent {
                msg_seq: 1,
                msg_time: 0,
            })
        }
    }

    impl TestSender {
        fn events_sent(&self) -> usize {
            self.sent.lock().unwrap().iter().map(|s| s.2).sum()
        }
    }

    fn start(
        sender: &Arc<TestSender>,
        adjust: impl FnOnce(&mut DisplaySettings),
    ) -> (ImMessenger, DispatcherHandle, CancellationToken) {
        let mut settings = DisplaySettings::default();
        adjust(&mut settings);
        let cancel = CancellationToken::new();
        let (messenger, handle) =
            ImMessenger::start_with(sender.clone(), &settings, cancel.clone());
        (messenger, handle, cancel)
    }

    fn shown(room: &RoomId, seq: u64) -> DisplayMessage {
        let event = Event::RoomUserLeft {
            user: room_domain::UserId::new(format!("u-{seq}")).unwrap(),
            reason: room_domain::LeaveReason::Left,
            robot: false,
        };
        DisplayMessage {
            envelope: EventEnvelope::new(room.clone(), seq, Timestamp(0), &event),
            priority: ImPriority::Normal,
            coalesce_key: None,
        }
    }

    fn shown_many(room: &RoomId, seqs: std::ops::RangeInclusive<u64>) -> Vec<DisplayMessage> {
        seqs.map(|seq| shown(room, seq)).collect()
    }

    /// Lets tokio time run (auto-advancing under `pause`) until `done` holds, for at most a
    /// minute of that time.
    async fn until(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done() {
            assert!(Instant::now() < deadline, "no {what} within a minute");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_bucket_gives_its_burst_then_its_rate() {
        let start = Instant::now();
        let mut bucket = Bucket::full(10.0, 3.0, start);
        for _ in 0..3 {
            assert_eq!(bucket.wait(Instant::now()), None);
            bucket.take();
        }
        assert_eq!(
            bucket.wait(Instant::now()),
            Some(Duration::from_millis(100))
        );
        tokio::time::advance(Duration::from_millis(50)).await;
        assert_eq!(bucket.wait(Instant::now()), Some(Duration::from_millis(50)));
        tokio::time::advance(Duration::from_millis(50)).await;
        assert_eq!(bucket.wait(Instant::now()), None);
        bucket.take();
        // A long quiet spell saves up the burst, no more.
        tokio::time::advance(Duration::from_secs(10)).await;
        assert!(bucket.is_full(Instant::now()));
        for _ in 0..3 {
            assert_eq!(bucket.wait(Instant::now()), None);
            bucket.take();
        }
        assert!(bucket.wait(Instant::now()).is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn the_app_bucket_paces_sends_across_rooms_in_turn() {
        let sender = Arc::new(TestSender::default());
        let (messenger, _handle, _cancel) = start(&sender, |s| {
            s.app_rate_per_sec = 20.0;
            s.app_burst = 2.0;
        });
        let rooms: Vec<RoomId> = (0..60)
            .map(|i| RoomId::new(format!("r{i:02}")).unwrap())
            .collect();
        let start = Instant::now();
        for room in &rooms {
            messenger.publish(room, vec![shown(room, 1)]).await;
        }
        until("every room's message", || {
            sender.sent.lock().unwrap().len() == 60
        })
        .await;
        let sent = sender.sent.lock().unwrap().clone();
        // Never more than the burst plus the rate times the time so far.
        for (n, (at, _, _)) in sent.iter().enumerate() {
            let elapsed = at.duration_since(start).as_secs_f64();
            assert!(
                (n + 1) as f64 <= 2.0 + 20.0 * elapsed + 1e-6,
                "send {n} at {elapsed:.3} s"
            );
        }
        // ... and the rooms went in the order they became ready, none skipped.
        let order: Vec<String> = sent.iter().map(|s| s.1.clone()).collect();
        let expected: Vec<String> = rooms.iter().map(group_id).collect();
        assert_eq!(order, expected);
        let last = sent[59].0.duration_since(start);
        assert!(last <= Duration::from_millis(2_950 + 50), "{last:?}");
        assert!(last >= Duration::from_millis(2_900), "{last:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn beyond_the_node_cap_new_events_are_dropped() {
        let sender = Arc::new(TestSender {
            latency: Duration::from_secs(5),
            ..TestSender::default()
        });
        let (messenger, _handle, _cancel) = start(&sender, |s| s.max_held_events = 10);
        let (a, b) = (RoomId::new("a").unwrap(), RoomId::new("b").unwrap());
        // The first event leaves at once; the room's next 15 wait behind it, 10 of them held.
        messenger.publish(&a, vec![shown(&a, 1)]).await;
        until("the first send", || {
            sender.attempts.load(Ordering::Relaxed) == 1
        })
        .await;
        messenger.publish(&a, shown_many(&a, 2..=16)).await;
        until("the node cap", || messenger.stats().dropped_node_full == 5).await;
        // Another room finds the node full too.
        messenger.publish(&b, shown_many(&b, 1..=3)).await;
        until("the node cap", || messenger.stats().dropped_node_full == 8).await;
        until("the held events", || sender.events_sent() == 11).await;
        // Room is made again as the held ones leave.
        messenger.publish(&b, shown_many(&b, 4..=5)).await;
        until("room b's events", || sender.events_sent() == 13).await;
        assert_eq!(messenger.stats().dropped_node_full, 8);
    }

    #[tokio::test(start_paused = true)]
    async fn events_too_old_when_their_turn_comes_are_dropped() {
        let sender = Arc::new(TestSender {
            latency: Duration::from_secs(2),
            ..TestSender::default()
        });
        let (messenger, _handle, _cancel) = start(&sender, |s| s.max_age_ms = 1_000);
        let r = RoomId::new("slow").unwrap();
        messenger.publish(&r, vec![shown(&r, 1)]).await;
        until("the first send", || {
            sender.attempts.load(Ordering::Relaxed) == 1
        })
        .await;
        // These wait 2 s behind the first: past their 1 s.
        messenger.publish(&r, shown_many(&r, 2..=6)).await;
        until("the drop", || messenger.stats().dropped_too_old == 5).await;
        assert_eq!(sender.events_sent(), 1);
        // Fresh ones still go.
        messenger.publish(&r, shown_many(&r, 7..=8)).await;
        until("the fresh events", || sender.events_sent() == 3).await;
        assert_eq!(messenger.stats().dropped_too_old, 5);
    }

    #[tokio::test(start_paused = true)]
    async fn a_send_that_panics_frees_its_room() {
        let sender = Arc::new(TestSender::default());
        let r = RoomId::new("fragile").unwrap();
        sender.panics.lock().unwrap().insert(group_id(&r));
        let (messenger, _handle, _cancel) = start(&sender, |_| {});
        messenger.publish(&r, shown_many(&r, 1..=2)).await;
        until("the failed send", || {
            messenger.stats().dropped_send_failed == 2
        })
        .await;
        messenger.publish(&r, vec![shown(&r, 3)]).await;
        until("the next send", || sender.events_sent() == 1).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_missing_group_is_retried_with_a_doubling_wait_then_given_up() {
        let sender = Arc::new(TestSender::default());
        let r = RoomId::new("nogroup").unwrap();
        sender.missing.lock().unwrap().insert(group_id(&r));
        let (messenger, _handle, _cancel) = start(&sender, |_| {});
        let start = Instant::now();
        messenger.publish(&r, shown_many(&r, 1..=3)).await;
        until("the give-up", || messenger.stats().dropped_no_group == 3).await;
        // Tried at 0, 1, 3, 7 s and at the 15 s limit.
        assert_eq!(sender.attempts.load(Ordering::Relaxed), 5);
        let gave_up = start.elapsed();
        assert!(gave_up >= Duration::from_secs(15), "{gave_up:?}");
        assert!(gave_up < Duration::from_secs(16), "{gave_up:?}");
        // Once the group exists, the room's display goes again.
        sender.missing.lock().unwrap().clear();
        messenger.publish(&r, vec![shown(&r, 4)]).await;
        until("the next send", || sender.events_sent() == 1).await;
    }

    #[tokio::test(start_paused = true)]
    async fn quiet_rooms_are_swept_during_a_flood() {
        let sender = Arc::new(TestSender {
            latency: Duration::from_millis(5),
            ..TestSender::default()
        });
        let (messenger, _handle, _cancel) = start(&sender, |_| {});
        let messenger = Arc::new(messenger);
        for i in 0..20 {
            let room = RoomId::new(format!("quiet-{i}")).unwrap();
            messenger.publish(&room, vec![shown(&room, 1)]).await;
        }
        until("the quiet rooms' sends", || sender.events_sent() == 20).await;
        let hot = RoomId::new("hot").unwrap();
        let flood = {
            let messenger = messenger.clone();
            tokio::spawn(async move {
                for seq in 1.. {
                    messenger.publish(&hot, vec![shown(&hot, seq)]).await;
                    tokio::task::yield_now().await;
                    if seq % 4 == 0 {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                }
            })
        };
        until("the sweep", || {
            messenger.stats.rooms.load(Ordering::Relaxed) == 1
        })
        .await;
        flood.abort();
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
        let pack = room
            .pack(&id, limits(2048), Instant::now(), &stats)
            .unwrap();
        let message = GroupMessage::new(pack.data.clone());
        assert!(message.body_bytes() <= 2048);
        let data: serde_json::Value = serde_json::from_str(&pack.data).unwrap();
        let events = data["events"].as_array().unwrap();
        assert_eq!(data["room_id"], "r");
        assert_eq!(events.len(), pack.published.len());
        assert_eq!(room.queue.len(), 200 - events.len());
        // One more event would not have fit.
        let mut bigger = room_for_size_check(events.len() + 1);
        let more = bigger
            .pack(&id, limits(usize::MAX), Instant::now(), &stats)
            .unwrap();
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
        assert!(room.pack(&id, limits(50), Instant::now(), &stats).is_none());
        assert!(room.queue.is_empty());
        assert_eq!(stats.snapshot().dropped_too_large, 1);
    }
}

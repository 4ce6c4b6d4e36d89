//! Packing: as many of a room's waiting events as fit go into one `send_group_msg`, as one
//! custom element whose `Data` is `{"room_id":..,"events":[envelope, ...]}` within the
//! message size; events too old, or too large for a message on their own, are dropped.

use std::time::Duration;

use room_domain::{ImPriority, RoomId};
use tokio::time::Instant;

use super::coalesce::forget_queued;
use super::item::{Item, Pack};
use super::room::Room;
use super::stats::{DropReason, Stats};
use crate::client::custom_body_bytes;

impl Room {
    /// Takes the events of the next message: from the front of the queue, then held ones if
    /// the queue is empty, as many as fit in `max_bytes`; events published more than
    /// `max_age` before `now` are dropped instead. `None` when nothing is left to send.
    pub(super) fn pack(
        &mut self,
        room_id: &RoomId,
        limits: PackLimits,
        now: Instant,
        stats: &Stats,
    ) -> Option<Pack> {
        let too_old = |item: &Item| now.saturating_duration_since(item.published) > limits.max_age;
        let mut old = 0;
        let mut head = String::with_capacity(64);
        head.push_str(r#"{"room_id":"#);
        push_json(&mut head, room_id);
        head.push_str(r#","events":["#);
        let mut builder = PackBuilder {
            escaped: escaped_len(&head) + "]}".len(),
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
        let events = builder
            .events
            .into_iter()
            .map(|(_, json, priority, at)| (json, priority, at))
            .collect();
        Some(Pack::new(room_id, events))
    }
}

impl Pack {
    /// The message carrying `events` (envelope JSON, priority, publish time), in order: its
    /// `MsgPriority` is the highest of theirs.
    pub(super) fn new(room_id: &RoomId, events: Vec<(String, ImPriority, Instant)>) -> Pack {
        let mut data = String::with_capacity(
            64 + events
                .iter()
                .map(|(json, _, _)| json.len() + 1)
                .sum::<usize>(),
        );
        data.push_str(r#"{"room_id":"#);
        push_json(&mut data, room_id);
        data.push_str(r#","events":["#);
        let mut priority = ImPriority::Low;
        let mut published = Vec::with_capacity(events.len());
        let mut parts = Vec::with_capacity(events.len());
        for (index, (json, item_priority, at)) in events.into_iter().enumerate() {
            if index > 0 {
                data.push(',');
            }
            data.push_str(&json);
            priority = priority.max(item_priority);
            published.push(at);
            parts.push((json, item_priority));
        }
        data.push_str("]}");
        Pack {
            data,
            priority,
            published,
            parts,
        }
    }

    /// The message's two halves, in order, each with its own events' priority; the message
    /// itself back when it carries a single event.
    pub(super) fn split(self, room_id: &RoomId) -> Result<(Pack, Pack), Pack> {
        if self.parts.len() < 2 {
            return Err(self);
        }
        let mut events: Vec<_> = self
            .parts
            .into_iter()
            .zip(self.published)
            .map(|((json, priority), at)| (json, priority, at))
            .collect();
        let second = events.split_off(events.len() / 2);
        Ok((Pack::new(room_id, events), Pack::new(room_id, second)))
    }
}

/// What one message may carry.
#[derive(Debug, Clone, Copy)]
pub(super) struct PackLimits {
    pub(super) max_bytes: usize,
    pub(super) max_age: Duration,
}

pub(super) struct PackBuilder {
    /// The escaped size of `Data` so far, with its closing `]}`.
    pub(super) escaped: usize,
    /// Seq, envelope JSON, priority and publish time of each event taken.
    pub(super) events: Vec<(u64, String, ImPriority, Instant)>,
    pub(super) max_bytes: usize,
}

pub(super) enum Offer {
    Fits(String),
    Full,
    TooLarge,
}

impl PackBuilder {
    pub(super) fn offer(&self, item: &Item) -> Offer {
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

    pub(super) fn take(&mut self, item: Item, json: String) {
        self.escaped += escaped_len(&json) + usize::from(!self.events.is_empty());
        self.events
            .push((item.seq(), json, item.priority, item.published));
    }
}

/// The length of `json` once escaped as the content of a JSON string. JSON that serde_json
/// wrote has no raw control characters, so only `"` and `\` grow (by one byte each).
pub(super) fn escaped_len(json: &str) -> usize {
    json.len() + json.bytes().filter(|b| matches!(b, b'"' | b'\\')).count()
}

pub(super) fn push_json(out: &mut String, room_id: &RoomId) {
    // A room id serializes as a JSON string; that cannot fail.
    if let Ok(json) = serde_json::to_string(room_id) {
        out.push_str(&json);
    }
}

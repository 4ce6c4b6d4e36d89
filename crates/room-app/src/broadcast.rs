//! Big-gift broadcasts: a paid gift worth at least a configured value is also shown in the
//! hottest open rooms of the sender's region, as a `RoomGiftBroadcast` display event (the
//! room's event stream and IM group; not a fact, so nothing counts it twice).
//!
//! It is a consumer of the durable facts ([`GiftBroadcaster`], a
//! [`FactHandler`]): it reads each applied gift after its room committed it, never inside the
//! commit. Display is best effort, and budgeted like other IM traffic: at most
//! [`BroadcastConfig::per_minute`] broadcasts a minute per consuming process (a token
//! bucket; the rest are dropped and counted), each to at most [`BroadcastConfig::max_rooms`]
//! rooms, and none for a gift older than [`BroadcastConfig::max_age`] (a consumer catching up
//! after a stop shows no stale banners). A room is sent the broadcast under a command id made
//! from the fact's id, so a fact handed over twice shows once in each room.
//!
//! The sender's region is their profile's (`PUT /v1/admin/users/{user_id}`), else the region
//! of the room the gift was sent in. Rooms are read hottest first from the directory, at most
//! [`BroadcastConfig::scan_rooms`] of them; rooms nobody is in and the gift's own room are
//! left out. The budget is spent only once a broadcast has rooms to go to.
//!
//! Metrics: `room_gift_broadcasts_total{outcome}` (`sent`: a broadcast reached a room;
//! `failed`: it reached none; `over_budget`, `stale`, `no_rooms`) and `room_gift_broadcast_rooms_total{outcome}` (`shown`,
//! `failed`: rooms reached or not).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use room_domain::{
    Actor, Command, CommandId, CommandKind, Event, EventEnvelope, GiftBroadcast, GiftSent, RoomId,
    Timestamp,
};
use tokio::task::JoinSet;

use crate::consumers::{FactError, FactHandler};
use crate::digest::{hex, length_prefixed_sha256};
use crate::ids::SYSTEM_ID_PREFIX;
use crate::service::RoomService;

/// Rooms a broadcast is sent to at once.
const FAN_OUT: usize = 16;

/// Rooms read from the directory at a time.
const PAGE: u32 = 500;

/// What a big gift is, and how far and how often it is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BroadcastConfig {
    /// A gift whose total value is at least this many coins is broadcast; 0 turns broadcasts
    /// off.
    pub min_value: i64,
    /// Most rooms one broadcast is shown in.
    pub max_rooms: u32,
    /// Most open rooms read (hottest first) to find them.
    pub scan_rooms: u32,
    /// Most broadcasts a minute (a token bucket of this size, refilled over a minute).
    pub per_minute: u32,
    /// A gift older than this when its fact is read is not broadcast.
    pub max_age: Duration,
}

impl Default for BroadcastConfig {
    fn default() -> Self {
        BroadcastConfig {
            min_value: 0,
            max_rooms: 50,
            scan_rooms: 2_000,
            per_minute: 6,
            max_age: Duration::from_secs(60),
        }
    }
}

impl BroadcastConfig {
    /// Whether broadcasts are on.
    pub fn is_enabled(&self) -> bool {
        self.min_value > 0
    }
}

/// The consumer that broadcasts big gifts (see the module).
pub struct GiftBroadcaster {
    service: Arc<RoomService>,
    config: BroadcastConfig,
    /// Tokens left and when they were counted.
    bucket: Mutex<(f64, Timestamp)>,
}

impl GiftBroadcaster {
    /// A broadcaster sending through `service` under `config`, its budget full.
    pub fn new(service: Arc<RoomService>, config: BroadcastConfig) -> Self {
        let now = service.ports().clock.now();
        GiftBroadcaster {
            service,
            config,
            bucket: Mutex::new((f64::from(config.per_minute), now)),
        }
    }

    /// Whether the budget has a broadcast left at `now`; with `take`, takes it.
    fn budget(&self, now: Timestamp, take: bool) -> bool {
        let mut bucket = self.bucket.lock().unwrap_or_else(|e| e.into_inner());
        let size = f64::from(self.config.per_minute);
        let elapsed_ms = now.0.saturating_sub(bucket.1.0).max(0) as f64;
        let tokens = (bucket.0 + elapsed_ms * size / 60_000.0).min(size);
        *bucket = (tokens, now);
        if tokens < 1.0 {
            return false;
        }
        if take {
            bucket.0 = tokens - 1.0;
        }
        true
    }

    /// The region the gift is shown in: the sender's, else its room's.
    async fn region_of(&self, gift: &GiftSent, room_id: &RoomId) -> Option<String> {
        let ports = self.service.ports();
        if let Ok(Some(profile)) = ports.users.get_profile(&gift.sender).await
            && let Some(region) = profile.region.filter(|region| !region.is_empty())
        {
            return Some(region);
        }
        match ports.directory.get_summary(room_id).await {
            Ok(Some(summary)) if !summary.region.is_empty() => Some(summary.region),
            _ => None,
        }
    }

    /// The hottest open rooms of `region` but `origin`, at most `max_rooms`.
    async fn rooms_of(&self, region: &str, origin: &RoomId) -> crate::Result<Vec<RoomId>> {
        let directory = &self.service.ports().directory;
        let mut rooms = Vec::new();
        let mut cursor = None;
        let mut read = 0u32;
        while read < self.config.scan_rooms && rooms.len() < self.config.max_rooms as usize {
            let limit = PAGE.min(self.config.scan_rooms - read);
            let page = directory.list_open_by_heat(cursor.take(), limit).await?;
            read += u32::try_from(page.len()).unwrap_or(u32::MAX);
            let full = page.len() == limit as usize;
            cursor = page.last().map(|room| (room.heat, room.room_id.clone()));
            rooms.extend(
                page.into_iter()
                    .filter(|room| {
                        room.open
                            && room.online > 0
                            && room.region == region
                            && room.room_id != *origin
                    })
                    .map(|room| room.room_id),
            );
            if !full {
                break;
            }
        }
        rooms.truncate(self.config.max_rooms as usize);
        Ok(rooms)
    }
}

fn count(outcome: &'static str) {
    metrics::counter!("room_gift_broadcasts_total", "outcome" => outcome).increment(1);
}

#[async_trait]
impl FactHandler for GiftBroadcaster {
    async fn handle(&self, envelope: &EventEnvelope) -> Result<(), FactError> {
        let Event::RoomGiftSent(gift) = &envelope.event else {
            return Ok(());
        };
        if !self.config.is_enabled() || gift.robot || gift.total_value.0 < self.config.min_value {
            return Ok(());
        }
        let now = self.service.ports().clock.now();
        let max_age_ms = i64::try_from(self.config.max_age.as_millis()).unwrap_or(i64::MAX);
        if now.0.saturating_sub(envelope.occurred_at.0) > max_age_ms {
            count("stale");
            return Ok(());
        }
        // Nothing is read for a broadcast the budget has no room for.
        if !self.budget(now, false) {
            count("over_budget");
            return Ok(());
        }
        let origin = &envelope.room_id;
        let Some(region) = self.region_of(gift, origin).await else {
            count("no_rooms");
            return Ok(());
        };
        let rooms = self
            .rooms_of(&region, origin)
            .await
            .map_err(FactError::retryable)?;
        if rooms.is_empty() {
            count("no_rooms");
            return Ok(());
        }
        // The budget is spent on broadcasts that have rooms to go to, once they are known (a
        // directory that cannot be read now, retried, spends nothing).
        if !self.budget(now, true) {
            count("over_budget");
            return Ok(());
        }
        // A system id (no client's command can take it), the same for every hand-over of
        // this fact.
        let digest = length_prefixed_sha256([envelope.event_id.as_bytes()]);
        let command_id = CommandId::new(format!("{SYSTEM_ID_PREFIX}bc-{}", hex(&digest[..16])))
            .map_err(FactError::permanent)?;
        let kind = CommandKind::ShowGiftBroadcast(GiftBroadcast {
            from_room: origin.clone(),
            sender: gift.sender.clone(),
            sender_nickname: gift.sender_nickname.clone(),
            sender_avatar_url: gift.sender_avatar_url.clone(),
            gift_id: gift.gift_id.clone(),
            count: gift.count,
            total_value: gift.total_value,
        });
        let mut sending = JoinSet::new();
        let mut reached = 0u32;
        for room_id in rooms {
            while sending.len() >= FAN_OUT {
                reached += u32::from(shown(sending.join_next().await));
            }
            let service = self.service.clone();
            let command = Command::new(command_id.clone(), kind.clone());
            sending.spawn(async move {
                service
                    .runtime()
                    .execute(&room_id, command, Actor::System, None)
                    .await
                    .is_ok()
            });
        }
        while let Some(done) = sending.join_next().await {
            reached += u32::from(shown(Some(done)));
        }
        count(if reached > 0 { "sent" } else { "failed" });
        Ok(())
    }
}

/// Counts what came of one room's broadcast; whether the room shows it.
fn shown(done: Option<Result<bool, tokio::task::JoinError>>) -> bool {
    let (outcome, shown) = match done {
        None => return false,
        Some(Ok(true)) => ("shown", true),
        Some(_) => ("failed", false),
    };
    metrics::counter!("room_gift_broadcast_rooms_total", "outcome" => outcome).increment(1);
    shown
}

//! The pure model of one voice-chat room: its state, the commands it takes, the events it
//! records, its rules, and the gift saga that moves money between a wallet and a room.
//!
//! Nothing here does I/O, reads a clock or draws a random number: time, the acting user and
//! random values come in through [`Ctx`]. A room changes only by
//! [`decide`]`(&state, &command, &ctx) -> Result<Vec<Event>, Rejection>` followed by
//! [`evolve`]`(&mut state, &event)` for each event, so replaying a room's events onto
//! [`RoomState::new`] rebuilds the same state.
//!
//! # Reading our events from another service
//!
//! The room service publishes durable events to the Kafka topic `room.events.v1`, keyed by
//! room id, as JSON [`EventEnvelope`]s. Depend on this crate alone to read them:
//!
//! ```
//! use room_domain::{Event, EventEnvelope, EVENT_SCHEMA_VERSION};
//!
//! let message = r#"{
//!     "event_id": "room-1:42", "room_id": "room-1", "seq": 42, "v": 1,
//!     "occurred_at": 1764460800000,
//!     "type": "RoomGiftSent",
//!     "payload": {
//!         "order_id": "o-1", "sender": "alice", "recipients": ["bob"], "gift_id": "rose",
//!         "count": 3, "unit_price": 10, "total_value": 30, "heat_added": 30,
//!         "fuel_added": 30, "lucky": null
//!     }
//! }"#;
//! let envelope: EventEnvelope = serde_json::from_str(message)?;
//! assert_eq!(envelope.v, EVENT_SCHEMA_VERSION);
//! match &envelope.event {
//!     Event::RoomGiftSent(gift) => {
//!         // Deduplicate by `event_id`: delivery is at least once.
//!         assert_eq!(envelope.event_id, "room-1:42");
//!         assert_eq!(gift.total_value.0, 30);
//!         assert_eq!(gift.value_per_recipient().0, 30);
//!     }
//!     Event::RoomMicChanged { seat, change } => { let _ = (seat, change); }
//!     // The enum is non-exhaustive: new event types may appear; skip what you do not know.
//!     _ => {}
//! }
//! # Ok::<(), serde_json::Error>(())
//! ```
//!
//! A consumer that must survive event types newer than its copy of this crate should first
//! read the envelope's `type` (also in the Kafka header `event_type`) and skip unknown ones.
//!
//! # Running a room
//!
//! ```
//! use room_domain::{
//!     decide, evolve, Actor, Command, CommandId, CommandKind, Ctx, RoomId, RoomRules, RoomState,
//!     Timestamp, UserId,
//! };
//!
//! let rules = RoomRules::default();
//! let owner = Actor::user(UserId::new("alice").unwrap());
//! let ctx = Ctx { now: Timestamp(1_764_460_800_000), actor: &owner, random: 7, rules: &rules };
//! let mut state = RoomState::new(RoomId::new("room-1").unwrap());
//! let create = Command::new(
//!     CommandId::new("c-1").unwrap(),
//!     CommandKind::CreateRoom { name: "Night talk".into(), seat_count: None, region: "sg".into() },
//! );
//! for event in decide(&state, &create, &ctx).unwrap() {
//!     evolve(&mut state, &event);
//! }
//! assert_eq!(state.profile.name, "Night talk");
//! assert_eq!(state.seats.len(), 8);
//! ```

mod actor;
mod billing;
mod command;
mod decide;
mod display;
mod event;
mod evolve;
mod ids;
mod image_url;
mod money;
mod rejection;
mod rules;
mod saga;
mod snapshot;
mod state;
mod time;
mod vip;

pub use actor::{Actor, UserActor};
pub use billing::{
    BASIS_POINTS, BillingError, BillingPolicy, BillingShares, FIRST_BILLING_VERSION, IncomePart,
    MAX_BILLING_OVERRIDES, Split, SplitError,
};
pub use command::check_system_message;
pub use command::{
    ApplyGift, COMMAND_SCHEMA_VERSION, Command, CommandKind, Ctx, GiftSnapshot, RTC_CLOCK_SKEW_MS,
    RobotGift,
};
pub use decide::decide;
pub use display::UserDisplay;
pub use event::{
    Delivery, EVENT_SCHEMA_VERSION, Event, EventEnvelope, GiftBroadcast, GiftSent, ImPriority,
    LeaveReason, LuckyOutcome, MicChange, MicDownReason, RocketReward,
};
pub use evolve::{evolve, evolve_all};
pub use ids::{
    CommandId, GiftId, IdError, MAX_ID_CHARS, OrderId, RocketId, RoomId, SeatIndex, SeatSessionId,
    UserId,
};
pub use image_url::{IMAGE_URL_PATTERN, MAX_IMAGE_URL_BYTES, check_image_url};
pub use money::Coins;
pub use rejection::{Field, Rejection, RejectionKind};
pub use rules::{
    LuckyEntry, LuckyTable, MAX_BATCH_RECIPIENTS, MAX_GIFT_COUNT, MAX_INVITES, MAX_RECIPIENTS,
    MAX_ROCKET_COUNTDOWN_SECS, MAX_ROCKET_LEVELS, MAX_ROCKET_WINNERS, MAX_SEATS, RocketLevel,
    RocketPrize, RocketSettings, RoomRules, RulesError, validate_rocket_levels,
};
pub use saga::{
    FailReason, GiftOrder, InvalidTransition, OrderKeys, OrderStatus, SagaOutcome, SagaStep,
};
pub use snapshot::{SNAPSHOT_SCHEMA_VERSION, Snapshot, SnapshotVersionError};
pub use state::{
    Contribution, GiftScope, LAUNCH_WAIT_MS, Member, Occupant, PasswordHash, Rocket, RocketStatus,
    Role, RoomProfile, RoomResource, RoomSettings, RoomState, RoomStatus, Seat, SeatHold,
};
pub use time::{DayKey, MonthKey, Periods, Timestamp, WeekKey, parse_utc_offset};
pub use vip::{
    MAX_VIP_ASSET_ID_CHARS, MAX_VIP_BACKGROUNDS, MAX_VIP_LEVELS, VipPrivileges, VipStanding,
    background_allowed, background_key, check_vip_levels, first_level_listing,
};

/// The domain's result type: a command either yields events or is refused.
pub type Result<T, E = Rejection> = std::result::Result<T, E>;

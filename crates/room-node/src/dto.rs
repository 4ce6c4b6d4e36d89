//! The JSON bodies of the API: requests as clients send them (ids as plain strings, validated
//! in the handlers so that a bad one gets the `INVALID_ID` code) and responses built from the
//! use cases' types. Times are milliseconds since the Unix epoch; coins are integers.

use std::borrow::Cow;

use room_app::ports::{CatalogGift, RobotRoomConfig, RoomSummary};
use room_app::{BannedUser, GiftReceipt, OnlineUser, RankEntry, RoomView};
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Schema, Type};
use utoipa::{PartialSchema, ToSchema};

use crate::error::ErrorBody;

// The characters the server refuses, spelled as regular expression ranges that ECMA-262 and
// the common generators read alike (`\uXXXX` escapes, no `\s`, whose meaning varies).
// Control characters (`char::is_control`):
//   \u0000-\u001f \u007f-\u009f
// Whitespace besides those (`char::is_whitespace`):
//   \u0020 \u00a0 \u1680 \u2000-\u200a \u2028 \u2029 \u202f \u205f \u3000
// Bidirectional embeddings, overrides and isolates, refused in texts people read:
//   \u202a-\u202e \u2066-\u2069

/// String schemas that say in the OpenAPI document exactly what the server enforces on a
/// string (`room_domain`'s id rule, the room's text rules), so that generated clients and
/// fuzzers send what the server takes.
macro_rules! string_schema {
    ($(#[$meta:meta])* $name:ident, $description:literal, $min:expr, $max:expr, $pattern:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .description(Some($description))
                    .min_length($min)
                    .max_length(Some($max))
                    .pattern(Some($pattern))
                    .into()
            }
        }

        impl ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }
        }
    };
}

string_schema!(
    /// The schema of every id (room, user, gift, order, operation): `room_domain`'s rule.
    Id,
    "1 to 64 printable characters of the Basic Multilingual Plane: no whitespace, no control, \
     format, bidirectional or other invisible character, no `/`.",
    Some(1),
    room_domain::MAX_ID_CHARS,
    r"^[\u0021-\u002e\u0030-\u007e\u00a1-\u00ac\u00ae-\u034e\u0350-\u05ff\u0606-\u061b\u061d-\u06dc\u06de-\u070e\u0710-\u088f\u0892-\u08e1\u08e3-\u115e\u1161-\u167f\u1681-\u17b3\u17b6-\u180a\u1810-\u1fff\u2010-\u2027\u2030-\u205e\u2070-\u2fff\u3001-\u3163\u3165-\ud7ff\ue000-\ufdcf\ufdf0-\ufdff\ufe10-\ufefe\uff00-\uff9f\uffa1-\uffef\ufffc-\ufffd]+$"
);

string_schema!(
    /// The schema of a gift order id: an [`Id`] that does not start with `sys-` (reserved for
    /// the ids the service makes up).
    OrderIdSchema,
    "The client's idempotency key, the sender's own: an id (1 to 64 printable characters of the \
     Basic Multilingual Plane: no whitespace, no control, format, bidirectional or other \
     invisible character, no `/`) not starting with `sys-` (reserved).",
    Some(1),
    room_domain::MAX_ID_CHARS,
    r"^(?!sys-)[\u0021-\u002e\u0030-\u007e\u00a1-\u00ac\u00ae-\u034e\u0350-\u05ff\u0606-\u061b\u061d-\u06dc\u06de-\u070e\u0710-\u088f\u0892-\u08e1\u08e3-\u115e\u1161-\u167f\u1681-\u17b3\u17b6-\u180a\u1810-\u1fff\u2010-\u2027\u2030-\u205e\u2070-\u2fff\u3001-\u3163\u3165-\ud7ff\ue000-\ufdcf\ufdf0-\ufdff\ufe10-\ufefe\uff00-\uff9f\uffa1-\uffef\ufffc-\ufffd]+$"
);

string_schema!(
    /// The schema of a room name.
    RoomName,
    "1 to 30 characters with at least one that is not whitespace (the name is trimmed), \
     no control character, no bidirectional embedding, override or isolate.",
    Some(1),
    room_domain::Field::Name.max_chars() as usize,
    r"^[^\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]*[^\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202a-\u202f\u205f\u2066-\u2069\u3000][^\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]*$"
);

string_schema!(
    /// The schema of a room's notice board.
    Notice,
    "Up to 500 characters; line breaks and tabs are allowed, other control characters and \
     bidirectional embeddings, overrides and isolates are not.",
    None,
    room_domain::Field::Notice.max_chars() as usize,
    r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]*$"
);

string_schema!(
    /// The schema of an image URL.
    ImageUrl,
    "Up to 512 characters, no control character, no bidirectional embedding, override or \
     isolate; `\"\"` removes the image.",
    None,
    room_domain::Field::CoverUrl.max_chars() as usize,
    r"^[^\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]*$"
);

string_schema!(
    /// The schema of a region code.
    Region,
    "Up to 32 characters, no control character, no bidirectional embedding, override or \
     isolate.",
    None,
    room_domain::Field::Region.max_chars() as usize,
    r"^[^\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]*$"
);

string_schema!(
    /// The schema of a catalog gift's display name.
    GiftName,
    "1 to 64 characters with at least one that is not whitespace.",
    Some(1),
    room_app::ports::MAX_GIFT_NAME_CHARS,
    r"[^\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
);

/// `POST /v1/rooms`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRoomRequest {
    /// 1 to 30 characters.
    #[schema(value_type = RoomName, example = "Night talk")]
    pub name: String,
    /// Mic seats, 1 to 20 (default 8).
    #[serde(default, deserialize_with = "whole::option_i64")]
    #[schema(minimum = 1, maximum = 20)]
    pub seat_count: Option<i64>,
    /// Region code, up to 32 characters.
    #[schema(value_type = Option<Region>)]
    pub region: Option<String>,
}

/// Integers of request bodies as JSON Schema counts them: `3` and `3.0` are the same
/// integer there, so both are taken; `3.5` is refused, and so is a value outside the field's
/// range, with a message in JSON's terms.
mod whole {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer};

    fn number<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i128, D::Error> {
        let number = serde_json::Number::deserialize(deserializer)?;
        if let Some(value) = number.as_i64() {
            return Ok(i128::from(value));
        }
        if let Some(value) = number.as_u64() {
            return Ok(i128::from(value));
        }
        match number.as_f64() {
            // Within ±2^63 a float's integer value converts exactly.
            Some(value) if value.fract() == 0.0 && value.abs() < 9.2e18 => Ok(value as i128),
            _ => Err(D::Error::custom(format!(
                "invalid value: {number}, expected a whole number"
            ))),
        }
    }

    fn within<E: serde::de::Error, T: TryFrom<i128>>(value: i128, range: &str) -> Result<T, E> {
        T::try_from(value).map_err(|_| {
            E::custom(format!(
                "invalid value: {value}, expected a whole number from {range}"
            ))
        })
    }

    /// An `i64`.
    pub fn i64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
        within(
            number(deserializer)?,
            "-9223372036854775808 to 9223372036854775807",
        )
    }

    /// An optional `i64`.
    pub fn option_i64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
        let Some(value) = Option::<serde_json::Number>::deserialize(deserializer)? else {
            return Ok(None);
        };
        i64(value).map(Some).map_err(D::Error::custom)
    }

    /// A `u32`.
    pub fn u32<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
        within(number(deserializer)?, "0 to 4294967295")
    }

    /// A list of `u32`s.
    pub fn u32_list<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u32>, D::Error> {
        Vec::<serde_json::Number>::deserialize(deserializer)?
            .into_iter()
            .map(|value| u32(value).map_err(D::Error::custom))
            .collect()
    }

    /// An optional list of `u32`s.
    pub fn option_u32_list<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Vec<u32>>, D::Error> {
        let Some(values) = Option::<Vec<serde_json::Number>>::deserialize(deserializer)? else {
            return Ok(None);
        };
        values
            .into_iter()
            .map(|value| u32(value).map_err(D::Error::custom))
            .collect::<Result<_, _>>()
            .map(Some)
    }

    /// An optional `u32`.
    pub fn option_u32<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u32>, D::Error> {
        let Some(value) = Option::<serde_json::Number>::deserialize(deserializer)? else {
            return Ok(None);
        };
        u32(value).map(Some).map_err(D::Error::custom)
    }
}

/// The schema of a gift's recipients: 1 to 20 distinct user ids.
#[derive(Debug, Clone, Copy)]
pub struct Recipients;

impl PartialSchema for Recipients {
    fn schema() -> RefOr<Schema> {
        ArrayBuilder::new()
            .items(Id::schema())
            .min_items(Some(1))
            .max_items(Some(room_domain::MAX_RECIPIENTS as usize))
            .unique_items(true)
            .description(Some("1 to 20 distinct members of the room"))
            .into()
    }
}

impl ToSchema for Recipients {}

/// `PATCH /v1/rooms/{room_id}`: absent fields stay as they are.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchRoomRequest {
    /// New name (1 to 30 characters).
    #[schema(value_type = Option<RoomName>)]
    pub name: Option<String>,
    /// New notice board text.
    #[schema(value_type = Option<Notice>)]
    pub notice: Option<String>,
    /// New cover image URL; `""` removes it.
    #[schema(value_type = Option<ImageUrl>)]
    pub cover_url: Option<String>,
    /// New background image URL; `""` removes it.
    #[schema(value_type = Option<ImageUrl>)]
    pub background_url: Option<String>,
    /// Public chat on or off.
    pub chat_enabled: Option<bool>,
    /// A string (1 to 64 characters) locks the room with that password; `null` unlocks it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 64)]
    pub password: Option<Option<String>>,
}

/// Tells an explicit `null` (`Some(None)`) from an absent field (`None`).
fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// `POST /v1/rooms/{room_id}/join` (the body may be left out).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JoinRequest {
    /// The password of a locked room, up to 64 characters.
    #[schema(max_length = 64)]
    pub password: Option<String>,
}

/// `POST /v1/rooms/{room_id}/seats/{seat}/lock`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LockSeatRequest {
    /// Lock (frees the seat) or unlock.
    pub locked: bool,
}

/// `POST /v1/rooms/{room_id}/seats/{seat}/mute`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MuteSeatRequest {
    /// Mute or unmute.
    pub muted: bool,
}

/// `POST /v1/rooms/{room_id}/kick`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KickRequest {
    /// Who.
    #[schema(value_type = Id)]
    pub user_id: String,
    /// Also ban them for this many seconds (0: no ban).
    #[serde(default, deserialize_with = "whole::option_u32")]
    #[schema(format = Int64, minimum = 0, maximum = 4_294_967_295_i64)]
    pub ban_seconds: Option<u32>,
}

/// `POST /v1/rooms/{room_id}/unban`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UnbanRequest {
    /// Who.
    #[schema(value_type = Id)]
    pub user_id: String,
}

/// `POST /v1/rooms/{room_id}/mute`: mute a member on the public screen.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatMuteRequest {
    /// Who.
    #[schema(value_type = Id)]
    pub user_id: String,
    /// For how long; 0 unmutes.
    #[serde(deserialize_with = "whole::u32")]
    #[schema(format = Int64, minimum = 0, maximum = 4_294_967_295_i64)]
    pub seconds: u32,
}

/// `POST /v1/rooms/{room_id}/gifts`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendGiftRequest {
    /// The client's idempotency key (1 to 64 characters): a repeat with the same id gets the
    /// same answer and is debited once.
    #[schema(value_type = OrderIdSchema, example = "9f1c2e4a-order-1")]
    pub order_id: String,
    /// The catalog gift.
    #[schema(value_type = Id, example = "rose")]
    pub gift_id: String,
    /// Units per recipient, 1 to 9999.
    #[serde(deserialize_with = "whole::i64")]
    #[schema(example = 3, minimum = 1, maximum = 9999)]
    pub count: i64,
    /// 1 to 20 distinct members of the room.
    #[schema(value_type = Recipients)]
    pub recipients: Vec<String>,
}

/// The answer to a gift: the same for every repeat of one `order_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct GiftResponse {
    /// The order.
    pub order_id: String,
    /// `COMPLETED` on success; `FAILED` (nothing debited) or `COMPENSATED` (debited, refused by
    /// the room, refunded) in the body of an error answer.
    #[schema(example = "COMPLETED")]
    pub status: String,
    /// The sender's balance after the order, lucky reward and refund included.
    pub coin_balance_after: i64,
    /// The draw of a lucky gift.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lucky: Option<LuckyResponse>,
}

/// What a lucky gift won.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct LuckyResponse {
    /// The drawn multiplier of the order's value.
    pub multiplier: u32,
    /// Coins won (already in `coin_balance_after`).
    pub reward: i64,
}

impl From<&GiftReceipt> for GiftResponse {
    fn from(receipt: &GiftReceipt) -> Self {
        GiftResponse {
            order_id: receipt.order_id.to_string(),
            status: receipt.status.as_str().to_owned(),
            coin_balance_after: receipt.coin_balance_after.0,
            lucky: receipt.lucky.map(|lucky| LuckyResponse {
                multiplier: lucky.multiplier,
                reward: lucky.reward.0,
            }),
        }
    }
}

/// The answer to a gift order that did not go through (`FAILED` or `COMPENSATED`): the usual
/// error plus the order. Repeats of the order get the same answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GiftErrorResponse {
    /// Why: `INSUFFICIENT_COINS`, `ORDER_FAILED`, `GIFT_PENDING`, or the room's refusal
    /// (`NOT_A_MEMBER`, `ROOM_CLOSED`, ...).
    pub error: ErrorBody,
    /// The order, when one was stored: `FAILED` (nothing debited), `COMPENSATED` (debited,
    /// refused by the room, refunded), or not settled yet (`GIFT_PENDING`). Absent when the
    /// request was refused before any coin moved (bad input, unknown gift, closed room, a
    /// recipient who is not in the room): no order exists then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<GiftResponse>,
}

/// A room as clients see it (never its password).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RoomResponse {
    /// The room id.
    pub room_id: String,
    /// The short numeric id people read out to each other (6 to 8 digits).
    pub short_id: Option<u32>,
    /// `open` or `closed`.
    #[schema(example = "open")]
    pub status: String,
    /// The owner.
    pub owner: Option<String>,
    /// Name.
    pub name: String,
    /// Notice board.
    pub notice: String,
    /// Cover image.
    pub cover_url: Option<String>,
    /// Background image.
    pub background_url: Option<String>,
    /// Whether public chat is on.
    pub chat_enabled: bool,
    /// Whether joining needs a password.
    pub locked: bool,
    /// Region code.
    pub region: String,
    /// The mic seats, from 0.
    pub seats: Vec<SeatResponse>,
    /// Members present.
    pub online_count: u32,
    /// Appointed admins.
    pub admins: Vec<String>,
    /// Popularity.
    pub heat: i64,
    /// The room rocket.
    pub rocket: RocketResponse,
    /// The room's version: rises with every change.
    pub version: u64,
}

/// A mic seat.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SeatResponse {
    /// Its index, from 0.
    pub index: u8,
    /// Who sits on it.
    pub user_id: Option<String>,
    /// Locked seats cannot be taken.
    pub locked: bool,
    /// Muted.
    pub muted: bool,
    /// Whether RTC confirmed the holder's audio.
    pub publishing: bool,
}

/// The room rocket.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RocketResponse {
    /// Level, from 1.
    pub level: u32,
    /// Fuel gathered at this level.
    pub fuel: i64,
    /// Fuel the level needs to ignite.
    pub threshold: i64,
    /// `idle`, `ignited` or `launched`.
    pub status: String,
    /// When an ignited rocket launches.
    pub launch_at: Option<i64>,
}

fn enum_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => String::new(),
    }
}

impl From<RoomView> for RoomResponse {
    fn from(view: RoomView) -> Self {
        RoomResponse {
            room_id: view.room_id.to_string(),
            short_id: view.short_id,
            status: enum_name(&view.status),
            owner: view.owner.map(|u| u.to_string()),
            name: view.name,
            notice: view.notice,
            cover_url: view.cover_url,
            background_url: view.background_url,
            chat_enabled: view.chat_enabled,
            locked: view.locked,
            region: view.region,
            seats: view
                .seats
                .into_iter()
                .map(|seat| SeatResponse {
                    index: seat.index.0,
                    user_id: seat.user.map(|u| u.to_string()),
                    locked: seat.locked,
                    muted: seat.muted,
                    publishing: seat.publishing,
                })
                .collect(),
            online_count: view.online_count,
            admins: view.admins.iter().map(ToString::to_string).collect(),
            heat: view.heat,
            rocket: RocketResponse {
                level: view.rocket.level,
                fuel: view.rocket.fuel,
                threshold: view.rocket.threshold,
                status: view.rocket.status.to_owned(),
                launch_at: view.rocket.launch_at.map(|t| t.0),
            },
            version: view.version,
        }
    }
}

/// One room of the list.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RoomListItem {
    /// The room id.
    pub room_id: String,
    /// The owner.
    pub owner: String,
    /// Name.
    pub name: String,
    /// Popularity.
    pub heat: i64,
    /// Members present.
    pub online_count: u32,
    /// Whether joining needs a password.
    pub locked: bool,
}

impl From<RoomSummary> for RoomListItem {
    fn from(summary: RoomSummary) -> Self {
        RoomListItem {
            room_id: summary.room_id.to_string(),
            owner: summary.owner.to_string(),
            name: summary.name,
            heat: summary.heat,
            online_count: summary.online,
            locked: summary.locked,
        }
    }
}

/// `GET /v1/rooms`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RoomListResponse {
    /// Open rooms, hottest first.
    pub rooms: Vec<RoomListItem>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// A member present in a room.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OnlineUserResponse {
    /// Who.
    pub user_id: String,
    /// `owner`, `admin` or `member`.
    pub role: String,
    /// VIP level.
    pub vip_level: u8,
    /// When they joined.
    pub joined_at: i64,
}

impl From<OnlineUser> for OnlineUserResponse {
    fn from(user: OnlineUser) -> Self {
        OnlineUserResponse {
            role: enum_name(&user.role),
            user_id: user.user_id.to_string(),
            vip_level: user.vip_level,
            joined_at: user.joined_at.0,
        }
    }
}

/// `GET /v1/rooms/{room_id}/online-users`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OnlineUsersResponse {
    /// Members, by user id.
    pub users: Vec<OnlineUserResponse>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// A ban in force.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BannedUserResponse {
    /// Who.
    pub user_id: String,
    /// Until when.
    pub until: i64,
}

impl From<BannedUser> for BannedUserResponse {
    fn from(ban: BannedUser) -> Self {
        BannedUserResponse {
            user_id: ban.user_id.to_string(),
            until: ban.until.0,
        }
    }
}

/// `GET /v1/rooms/{room_id}/banned-users`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BannedUsersResponse {
    /// Bans in force.
    pub users: Vec<BannedUserResponse>,
}

/// One line of a contribution rank.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RankEntryResponse {
    /// Who.
    pub user_id: String,
    /// Coins given in the period.
    pub coins: i64,
}

impl From<RankEntry> for RankEntryResponse {
    fn from(entry: RankEntry) -> Self {
        RankEntryResponse {
            user_id: entry.user_id.to_string(),
            coins: entry.coins.0,
        }
    }
}

/// `GET /v1/rooms/{room_id}/contribution-rank`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RankResponse {
    /// `day` or `week`.
    pub period: String,
    /// Top givers, most coins first.
    pub entries: Vec<RankEntryResponse>,
}

/// A catalog gift.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GiftCatalogEntry {
    /// The gift id.
    pub gift_id: String,
    /// Display name.
    pub name: String,
    /// Coins per unit.
    pub price: i64,
    /// Heat per unit and recipient.
    pub heat: i64,
    /// Rocket fuel per unit and recipient.
    pub fuel: i64,
    /// Whether sending it draws a lucky reward.
    pub lucky: bool,
    /// Whether it can be sent.
    pub enabled: bool,
}

impl From<CatalogGift> for GiftCatalogEntry {
    fn from(gift: CatalogGift) -> Self {
        GiftCatalogEntry {
            gift_id: gift.gift_id.to_string(),
            name: gift.name,
            price: gift.price.0,
            heat: gift.heat,
            fuel: gift.fuel,
            lucky: gift.lucky,
            enabled: gift.enabled,
        }
    }
}

/// `GET /v1/gifts`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GiftCatalogResponse {
    /// Every gift, by id.
    pub gifts: Vec<GiftCatalogEntry>,
}

/// `PUT /v1/admin/gifts/{gift_id}`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutGiftRequest {
    /// Display name, 1 to 64 characters.
    #[schema(value_type = GiftName)]
    pub name: String,
    /// Coins per unit, 0 to 10^9.
    #[serde(deserialize_with = "whole::i64")]
    #[schema(minimum = 0, maximum = 1_000_000_000)]
    pub price: i64,
    /// Heat per unit and recipient, 0 to 10^9.
    #[serde(default, deserialize_with = "whole::i64")]
    #[schema(minimum = 0, maximum = 1_000_000_000)]
    pub heat: i64,
    /// Rocket fuel per unit and recipient, 0 to 10^9.
    #[serde(default, deserialize_with = "whole::i64")]
    #[schema(minimum = 0, maximum = 1_000_000_000)]
    pub fuel: i64,
    /// Lucky gift.
    #[serde(default)]
    pub lucky: bool,
    /// Can be sent (default true).
    #[serde(default = "default_true")]
    pub enabled: bool,
}

fn default_true() -> bool {
    true
}

/// `GET /v1/me/wallet`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WalletResponse {
    /// Whose.
    pub user_id: String,
    /// Coins.
    pub balance: i64,
}

/// `GET /v1/me/current-room`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CurrentRoomResponse {
    /// The room the user is in, if any.
    pub room_id: Option<String>,
}

/// `GET /v1/me/im-credentials`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ImCredentialsResponse {
    /// The Tencent IM (and TRTC) application.
    pub sdk_app_id: u64,
    /// The caller's IM account: their user id.
    pub user_id: String,
    /// The caller's UserSig.
    pub user_sig: String,
    /// When the UserSig expires (ms since the epoch); fetch a new one before.
    pub expires_at: i64,
}

/// `POST /v1/admin/wallets/{user_id}/credit`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreditRequest {
    /// Idempotency key (1 to 64 characters): a repeat credits once and gets the same balance.
    #[schema(value_type = Id)]
    pub op_id: String,
    /// Coins to add, 1 to 10^12.
    #[serde(deserialize_with = "whole::i64")]
    #[schema(minimum = 1, maximum = 1_000_000_000_000_i64)]
    pub amount: i64,
}

/// The answer to a credit.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CreditResponse {
    /// Whose.
    pub user_id: String,
    /// The operation.
    pub op_id: String,
    /// The balance right after this credit.
    pub balance: i64,
}

/// The schema of a robot pool: 1 to 200 distinct robot user ids.
#[derive(Debug, Clone, Copy)]
pub struct RobotPool;

impl PartialSchema for RobotPool {
    fn schema() -> RefOr<Schema> {
        ArrayBuilder::new()
            .items(Id::schema())
            .min_items(Some(1))
            .max_items(Some(room_app::ports::MAX_ROBOTS))
            .unique_items(true)
            .description(Some(
                "1 to 200 distinct robot user ids, each starting with the configured robot \
                 prefix (`[robots] id_prefix`, default `robot-`); the first owns the room",
            ))
            .into()
    }
}

impl ToSchema for RobotPool {}

/// The schema of a robot room's audience: 24 numbers, one for each hour of the day.
#[derive(Debug, Clone, Copy)]
pub struct Audience;

impl PartialSchema for Audience {
    fn schema() -> RefOr<Schema> {
        ArrayBuilder::new()
            .items(
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .minimum(Some(0))
                    .maximum(Some(room_app::ports::MAX_ROBOTS as u32)),
            )
            .min_items(Some(24))
            .max_items(Some(24))
            .description(Some(
                "Target robot listeners for each hour of the day (UTC, hour 0 first), each \
                 from 0 to the pool's size",
            ))
            .into()
    }
}

impl ToSchema for Audience {}

/// A robot room's profile, as the room API has it.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RobotProfileRequest {
    /// The room's name, 1 to 30 characters.
    #[schema(value_type = RoomName, example = "Late night songs")]
    pub name: String,
    /// The notice board (default empty).
    #[serde(default)]
    #[schema(value_type = Option<Notice>)]
    pub notice: Option<String>,
    /// The cover image URL; `""` or absent: none.
    #[schema(value_type = Option<ImageUrl>)]
    pub cover_url: Option<String>,
}

/// A change to a robot room's profile: absent fields stay.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchRobotProfileRequest {
    /// New name, 1 to 30 characters.
    #[schema(value_type = Option<RoomName>)]
    pub name: Option<String>,
    /// New notice board text.
    #[schema(value_type = Option<Notice>)]
    pub notice: Option<String>,
    /// New cover image URL; `""` removes it.
    #[schema(value_type = Option<ImageUrl>)]
    pub cover_url: Option<String>,
}

/// One gift of a robot room's gift mix.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GiftShareRequest {
    /// A catalog gift.
    #[schema(value_type = Id, example = "rose")]
    pub gift_id: String,
    /// Its weight among the mix, 1 to 10,000.
    #[serde(deserialize_with = "whole::u32")]
    #[schema(minimum = 1, maximum = 10_000)]
    pub weight: u32,
}

/// `POST /v1/admin/robot-rooms`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRobotRoomRequest {
    /// What the room shows.
    pub profile: RobotProfileRequest,
    /// The room's mic seats, 1 to 20 (default 8); fixed once created.
    #[serde(default, deserialize_with = "whole::option_i64")]
    #[schema(minimum = 1, maximum = 20)]
    pub seat_count: Option<i64>,
    /// The room's region code, up to 32 characters.
    #[schema(value_type = Option<Region>)]
    pub region: Option<String>,
    /// The robot pool.
    #[schema(value_type = RobotPool)]
    pub robots: Vec<String>,
    /// Target robot listeners for each hour of the day (UTC).
    #[serde(deserialize_with = "whole::u32_list")]
    #[schema(value_type = Audience)]
    pub audience: Vec<u32>,
    /// Target seats robots occupy, 0 to the seat count less one (robots never take the last
    /// free seat) and at most the pool's size.
    #[serde(deserialize_with = "whole::i64")]
    #[schema(minimum = 0, maximum = 19)]
    pub seats: i64,
    /// Robot gifts per minute, 0 to 600.
    #[serde(deserialize_with = "whole::u32")]
    #[schema(minimum = 0, maximum = 600)]
    pub gift_rate_per_minute: u32,
    /// 1 to 20 distinct catalog gifts with their weights.
    #[schema(min_items = 1, max_items = 20)]
    pub gift_mix: Vec<GiftShareRequest>,
    /// Whether the room is run (default true).
    #[serde(default = "default_true")]
    pub enabled: bool,
}

/// `PATCH /v1/admin/robot-rooms/{room_id}`: absent fields stay; the result is checked as a
/// whole.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchRobotRoomRequest {
    /// Profile changes.
    pub profile: Option<PatchRobotProfileRequest>,
    /// A new robot pool (the room's owner stays who it is).
    #[schema(value_type = Option<RobotPool>)]
    pub robots: Option<Vec<String>>,
    /// New hourly audience targets.
    #[serde(default, deserialize_with = "whole::option_u32_list")]
    #[schema(value_type = Option<Audience>)]
    pub audience: Option<Vec<u32>>,
    /// New seat target.
    #[serde(default, deserialize_with = "whole::option_i64")]
    #[schema(minimum = 0, maximum = 19)]
    pub seats: Option<i64>,
    /// New gift rate.
    #[serde(default, deserialize_with = "whole::option_u32")]
    #[schema(minimum = 0, maximum = 600)]
    pub gift_rate_per_minute: Option<u32>,
    /// A new gift mix.
    #[schema(min_items = 1, max_items = 20)]
    pub gift_mix: Option<Vec<GiftShareRequest>>,
    /// Run the room or not.
    pub enabled: Option<bool>,
    /// The version the change is based on, from 1 (0 is refused with 400
    /// `INVALID_ROBOT_ROOM`): given, the change is refused with 409 `ROBOT_ROOM_CHANGED` when
    /// the configuration has moved on, unless the configuration already says what the change
    /// asks for (a repeat of it): that answers 200 with the configuration.
    #[schema(minimum = 1)]
    pub version: Option<u64>,
}

/// A robot room's profile.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RobotProfileResponse {
    /// Name.
    pub name: String,
    /// Notice board.
    pub notice: String,
    /// Cover image.
    pub cover_url: Option<String>,
}

/// One gift of a gift mix.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GiftShareResponse {
    /// The catalog gift.
    pub gift_id: String,
    /// Its weight.
    pub weight: u32,
}

/// A robot room's configuration.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RobotRoomResponse {
    /// The room.
    pub room_id: String,
    /// What the room shows.
    pub profile: RobotProfileResponse,
    /// The room's mic seats.
    pub seat_count: u8,
    /// The robot pool.
    pub robots: Vec<String>,
    /// Target robot listeners for each hour of the day (UTC).
    pub audience: Vec<u32>,
    /// Target seats robots occupy.
    pub seats: u8,
    /// Robot gifts per minute.
    pub gift_rate_per_minute: u32,
    /// Which gifts robots send, with their weights.
    pub gift_mix: Vec<GiftShareResponse>,
    /// Whether the room is run.
    pub enabled: bool,
    /// Rises with every change, from 1.
    pub version: u64,
    /// When it was created.
    pub created_at: i64,
    /// When it was last changed.
    pub updated_at: i64,
    /// The id of the node running the room (`local` for an embedded node), or null when no
    /// node runs it.
    pub running_on: Option<String>,
}

impl RobotRoomResponse {
    /// The configuration as the API shows it, with the node running it.
    pub fn new(config: RobotRoomConfig, running_on: Option<String>) -> Self {
        RobotRoomResponse {
            room_id: config.room_id.to_string(),
            profile: RobotProfileResponse {
                name: config.profile.name,
                notice: config.profile.notice,
                cover_url: config.profile.cover_url,
            },
            seat_count: config.seat_count,
            robots: config.robots.iter().map(ToString::to_string).collect(),
            audience: config.audience,
            seats: config.seats,
            gift_rate_per_minute: config.gift_rate_per_minute,
            gift_mix: config
                .gift_mix
                .into_iter()
                .map(|share| GiftShareResponse {
                    gift_id: share.gift_id.to_string(),
                    weight: share.weight,
                })
                .collect(),
            enabled: config.enabled,
            version: config.version,
            created_at: config.created_at.0,
            updated_at: config.updated_at.0,
            running_on,
        }
    }
}

/// `GET /v1/admin/robot-rooms`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RobotRoomListResponse {
    /// Robot rooms, by room id.
    pub robot_rooms: Vec<RobotRoomResponse>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// One event of a Server-Sent Events stream, as a client reads it: the schema of the event
/// stream's answer.
#[derive(Debug, Clone, ToSchema)]
#[expect(
    dead_code,
    reason = "only its schema is used: the stream's events are written by axum's `Sse`"
)]
pub struct StreamEvent {
    /// `subscribed`, a room event's type (`RoomGiftSent`, `RoomMicChanged`, ...) or `lagged`.
    pub event: String,
    /// JSON: `{"room_id","version"}` for `subscribed`, the event's envelope for a room event,
    /// `{"missed"}` for `lagged`.
    pub data: String,
    /// The room event's `seq`; absent on `subscribed` and `lagged`.
    pub id: Option<String>,
}

/// The answer to TRTC.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RtcAck {
    /// 0: handled (or ignored).
    pub code: i32,
}

/// `GET /healthz` and `GET /readyz`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HealthResponse {
    /// `ok`, `starting` or `stopping`.
    pub status: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern_of<S: PartialSchema>() -> regex::Regex {
        let RefOr::T(Schema::Object(object)) = S::schema() else {
            panic!("an object schema");
        };
        regex::Regex::new(object.pattern.as_deref().expect("a pattern")).expect("a valid regex")
    }

    #[test]
    fn the_id_pattern_takes_exactly_the_characters_the_domain_takes() {
        let pattern = pattern_of::<Id>();
        let mut checked = 0;
        for c in (0..=0x10_FFFF).filter_map(char::from_u32) {
            let id = c.to_string();
            assert_eq!(
                pattern.is_match(&id),
                room_domain::UserId::new(&id).is_ok(),
                "U+{:04X}",
                u32::from(c)
            );
            checked += 1;
        }
        assert!(checked > 1_000_000);
    }
}

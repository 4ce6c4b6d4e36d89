//! The JSON bodies of the API: requests as clients send them (ids as plain strings, validated
//! in the handlers so that a bad one gets the `INVALID_ID` code) and responses built from the
//! use cases' types. Times are milliseconds since the Unix epoch; coins are integers.

use room_app::ports::{CatalogGift, RoomSummary};
use room_app::{BannedUser, GiftReceipt, OnlineUser, RankEntry, RoomView};
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;

use crate::error::ErrorBody;

/// `POST /v1/rooms`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRoomRequest {
    /// 1 to 30 characters.
    #[schema(example = "Night talk")]
    pub name: String,
    /// Mic seats, 1 to 20 (default 8).
    pub seat_count: Option<i64>,
    /// Region code, up to 32 characters.
    pub region: Option<String>,
}

/// `PATCH /v1/rooms/{room_id}`: absent fields stay as they are.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchRoomRequest {
    /// New name (1 to 30 characters).
    pub name: Option<String>,
    /// New notice board text.
    pub notice: Option<String>,
    /// New cover image URL; `""` removes it.
    pub cover_url: Option<String>,
    /// New background image URL; `""` removes it.
    pub background_url: Option<String>,
    /// Public chat on or off.
    pub chat_enabled: Option<bool>,
    /// A string (1 to 64 characters) locks the room with that password; `null` unlocks it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
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
    /// The password of a locked room.
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
    pub user_id: String,
    /// Also ban them for this many seconds.
    pub ban_seconds: Option<u32>,
}

/// `POST /v1/rooms/{room_id}/unban`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UnbanRequest {
    /// Who.
    pub user_id: String,
}

/// `POST /v1/rooms/{room_id}/mute`: mute a member on the public screen.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatMuteRequest {
    /// Who.
    pub user_id: String,
    /// For how long; 0 unmutes.
    pub seconds: u32,
}

/// `POST /v1/rooms/{room_id}/gifts`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendGiftRequest {
    /// The client's idempotency key (1 to 64 characters): a repeat with the same id gets the
    /// same answer and is debited once.
    #[schema(example = "9f1c2e4a-order-1", min_length = 1, max_length = 64)]
    pub order_id: String,
    /// The catalog gift.
    #[schema(example = "rose", min_length = 1, max_length = 64)]
    pub gift_id: String,
    /// Units per recipient, 1 to 9999.
    #[schema(example = 3, minimum = 1, maximum = 9999)]
    pub count: i64,
    /// 1 to 20 distinct members of the room.
    #[schema(min_items = 1, max_items = 20)]
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
    /// Why: `INSUFFICIENT_COINS`, or the room's refusal (`NOT_A_MEMBER`, `ROOM_CLOSED`, ...).
    pub error: ErrorBody,
    /// The order as it ended.
    pub order: GiftResponse,
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
    pub name: String,
    /// Coins per unit (not negative).
    pub price: i64,
    /// Heat per unit and recipient (not negative).
    #[serde(default)]
    pub heat: i64,
    /// Rocket fuel per unit and recipient (not negative).
    #[serde(default)]
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

/// `POST /v1/admin/wallets/{user_id}/credit`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreditRequest {
    /// Idempotency key (1 to 64 characters): a repeat credits once and gets the same balance.
    #[schema(min_length = 1, max_length = 64)]
    pub op_id: String,
    /// Coins to add (positive).
    #[schema(minimum = 1)]
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

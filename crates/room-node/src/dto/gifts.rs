//! The bodies of the gift routes: sending a gift and its answers, the catalog, and a platform
//! admin's change to a catalog gift.

use room_app::GiftReceipt;
use room_app::ports::CatalogGift;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::fields::{default_true, whole};
use super::schema::{GiftName, Id, OrderIdSchema, Recipients};
use crate::error::ErrorBody;

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
    /// 1 to 20 distinct members of the room, or a batch gift's scope:
    /// `{"scope": "all_mic"}`, `{"scope": "all_room"}`.
    #[schema(value_type = Recipients)]
    pub recipients: RecipientsField,
}

/// Whom a gift is for: listed members, or a batch gift's scope.
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "serde_json::Value")]
pub enum RecipientsField {
    /// Listed members.
    Listed(Vec<String>),
    /// A batch gift.
    Scope(ScopeField),
}

impl TryFrom<serde_json::Value> for RecipientsField {
    type Error = String;

    /// A list of ids or a scope object, each with its own error (an untagged enum would only
    /// say that neither matched).
    fn try_from(value: serde_json::Value) -> Result<Self, String> {
        match value {
            serde_json::Value::Array(_) => serde_json::from_value(value)
                .map(RecipientsField::Listed)
                .map_err(|e| format!("recipients: {e}")),
            serde_json::Value::Object(_) => serde_json::from_value(value)
                .map(RecipientsField::Scope)
                .map_err(|e| format!("recipients: {e}")),
            _ => Err(
                "recipients must be a list of user ids, or {\"scope\": \"all_mic\"} or \
                 {\"scope\": \"all_room\"}"
                    .to_owned(),
            ),
        }
    }
}

/// `{"scope": "all_mic" | "all_room"}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeField {
    /// The scope.
    pub scope: room_domain::GiftScope,
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
    /// Whom the gift reached, once the room applied it: the recipients, or whom a batch
    /// gift's scope named as the room applied it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recipients: Option<Vec<String>>,
    /// Coins refunded because a batch gift reached fewer members than it was paid for
    /// (already in `coin_balance_after`).
    #[serde(skip_serializing_if = "is_zero")]
    #[schema(minimum = 1)]
    pub refunded: i64,
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
            recipients: receipt
                .recipients
                .as_ref()
                .map(|users| users.iter().map(ToString::to_string).collect()),
            refunded: receipt.refunded.0,
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

/// Whether `value` is zero (left out of the answer then).
fn is_zero(value: &i64) -> bool {
    *value == 0
}

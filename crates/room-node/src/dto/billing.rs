//! The bodies of the billing routes: the billing policy, and a user's income.

use std::collections::BTreeMap;

use room_app::ports::IncomeRecord;
use room_domain::{BillingPolicy, BillingShares};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::fields::whole;

/// Shares of a gift's value, in basis points (10,000 = the whole value): each 0 to 10,000,
/// their sum at most 10,000. The platform keeps the rest.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BillingSharesBody {
    /// The recipient's income.
    #[serde(deserialize_with = "whole::u32")]
    #[schema(minimum = 0, maximum = 10_000)]
    pub recipient_bp: u32,
    /// The room owner's share.
    #[serde(deserialize_with = "whole::u32")]
    #[schema(minimum = 0, maximum = 10_000)]
    pub owner_bp: u32,
    /// The share of the recipient's agency (the platform's when the recipient has none).
    #[serde(deserialize_with = "whole::u32")]
    #[schema(minimum = 0, maximum = 10_000)]
    pub agency_bp: u32,
}

impl From<BillingShares> for BillingSharesBody {
    fn from(shares: BillingShares) -> Self {
        BillingSharesBody {
            recipient_bp: shares.recipient_bp,
            owner_bp: shares.owner_bp,
            agency_bp: shares.agency_bp,
        }
    }
}

impl From<BillingSharesBody> for BillingShares {
    fn from(body: BillingSharesBody) -> Self {
        BillingShares {
            recipient_bp: body.recipient_bp,
            owner_bp: body.owner_bp,
            agency_bp: body.agency_bp,
        }
    }
}

/// `GET /v1/admin/billing`: the current billing policy.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BillingPolicyResponse {
    /// The version: 1 for the first policy, one more for each change. Gift orders record the
    /// version they were placed under and are billed under it.
    pub version: u64,
    /// The recipient's income of every gift without an override, in basis points.
    pub recipient_bp: u32,
    /// The room owner's share, in basis points.
    pub owner_bp: u32,
    /// The agency's share, in basis points.
    pub agency_bp: u32,
    /// Shares of particular gifts, by gift id.
    pub overrides: BTreeMap<String, BillingSharesBody>,
    /// The room owner's reward for each closed day's turnover of their room (the coin value
    /// of the gifts applied in it that day), in basis points, credited as income; 0 pays none.
    pub turnover_bp: u32,
}

impl From<BillingPolicy> for BillingPolicyResponse {
    fn from(policy: BillingPolicy) -> Self {
        BillingPolicyResponse {
            version: policy.version,
            recipient_bp: policy.shares.recipient_bp,
            owner_bp: policy.shares.owner_bp,
            agency_bp: policy.shares.agency_bp,
            overrides: policy
                .overrides
                .into_iter()
                .map(|(gift, shares)| (gift.to_string(), shares.into()))
                .collect(),
            turnover_bp: policy.turnover_bp,
        }
    }
}

/// `PUT /v1/admin/billing`: a new version of the billing policy.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutBillingRequest {
    /// The version this change replaces, as `GET` answered it: the change is stored as the
    /// next version only if it is still current (else 409 `BILLING_VERSION_STALE`).
    #[serde(deserialize_with = "whole::u64")]
    #[schema(minimum = 0)]
    pub expected_version: u64,
    /// The recipient's income, in basis points.
    #[serde(deserialize_with = "whole::u32")]
    #[schema(minimum = 0, maximum = 10_000)]
    pub recipient_bp: u32,
    /// The room owner's share, in basis points.
    #[serde(deserialize_with = "whole::u32")]
    #[schema(minimum = 0, maximum = 10_000)]
    pub owner_bp: u32,
    /// The agency's share, in basis points.
    #[serde(deserialize_with = "whole::u32")]
    #[schema(minimum = 0, maximum = 10_000)]
    pub agency_bp: u32,
    /// Shares of particular gifts, by gift id, at most 1,000; none when absent.
    #[serde(default)]
    pub overrides: BTreeMap<String, BillingSharesBody>,
    /// The room owner's reward for each closed day's turnover of their room, in basis points;
    /// the current version's when absent. A day is settled under the version current when it
    /// is settled.
    #[serde(default, deserialize_with = "whole::option_u32")]
    #[schema(minimum = 0, maximum = 10_000)]
    pub turnover_bp: Option<u32>,
}

/// One income entry: a part of a gift's value credited to the user.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct IncomeEntryResponse {
    /// The entry's position in the ledger (digits).
    pub id: String,
    /// Which part: `recipient` (the user received the gift), `owner` (a gift in the user's
    /// room), `agency` (a gift to one of the agency's users), `turnover` (the owner's reward
    /// for a closed day's turnover of their room: its `sender` is the room's id, its
    /// `order_id` `sys-turnover-YYYY-MM-DD`, and it has no `gift_id`).
    pub part: String,
    /// Income credited.
    pub amount: i64,
    /// Who sent the gift.
    pub sender: String,
    /// The sender's order.
    pub order_id: String,
    /// Who received the gift.
    pub recipient: String,
    /// The room.
    pub room_id: String,
    /// The gift; absent for a `turnover` reward.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gift_id: Option<String>,
    /// The billing policy version that split it.
    pub billing_version: u64,
    /// When the gift was applied (ms since the epoch).
    pub credited_at: i64,
}

impl From<IncomeRecord> for IncomeEntryResponse {
    fn from(record: IncomeRecord) -> Self {
        let entry = record.entry;
        IncomeEntryResponse {
            id: record.id.to_string(),
            part: entry.part.as_str().to_owned(),
            amount: entry.amount.0,
            sender: entry.sender.to_string(),
            order_id: entry.order_id.to_string(),
            recipient: entry.recipient.to_string(),
            room_id: entry.room_id.to_string(),
            gift_id: entry.gift_id.map(|gift| gift.to_string()),
            billing_version: entry.billing_version,
            credited_at: entry.at.0,
        }
    }
}

/// `GET /v1/me/income`, `GET /v1/admin/users/{user_id}/income`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct IncomeResponse {
    /// Whose.
    pub user_id: String,
    /// The income balance (not coins: it cannot be spent on gifts).
    pub balance: i64,
    /// Ledger entries, newest first.
    pub entries: Vec<IncomeEntryResponse>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

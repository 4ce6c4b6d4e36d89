//! Income ([`IncomeLedger`]): what gifts paid people, a balance of its own per user.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{Coins, GiftId, IncomePart, OrderId, RoomId, Timestamp, UserId};
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// The most entries one [`IncomeLedger::credit_income`] call takes: the parts of one gift
/// order (three per recipient, at most the rules' 20 recipients) fit with room to spare.
pub const MAX_INCOME_CREDIT: usize = 100;

/// The most entries one [`IncomeLedger::list_income`] answers, whatever `limit` asks.
pub const MAX_INCOME_PAGE: u32 = 200;

/// One part of a gift's value credited to one user, or a room owner's reward for a day's
/// turnover ([`IncomePart::Turnover`]): that one is keyed by the room's id as its sender and
/// `sys-turnover-YYYY-MM-DD` (the day; `sys-` ids are never a client's order) as its order id, with the owner as recipient, so that each
/// room and day pays once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncomeEntry {
    /// The gift's sender (a turnover reward: the room's id).
    pub sender: UserId,
    /// The sender's order (a turnover reward: `sys-turnover-YYYY-MM-DD`).
    pub order_id: OrderId,
    /// The recipient whose value this part is of.
    pub recipient: UserId,
    /// Which part ([`IncomePart::Platform`] is never credited).
    pub part: IncomePart,
    /// Who is credited: the recipient, the room's owner or the recipient's agency.
    pub user: UserId,
    /// How much (never negative).
    pub amount: Coins,
    /// The room the gift was sent in.
    pub room_id: RoomId,
    /// The gift; none for a [`IncomePart::Turnover`] reward.
    pub gift_id: Option<GiftId>,
    /// The billing policy version the gift was billed under.
    pub billing_version: u64,
    /// When the gift was applied.
    pub at: Timestamp,
}

impl IncomeEntry {
    /// The entry's idempotency key: (sender, order id, recipient, part).
    pub fn key(&self) -> (&UserId, &OrderId, &UserId, IncomePart) {
        (&self.sender, &self.order_id, &self.recipient, self.part)
    }
}

/// A credited entry and its position in the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncomeRecord {
    /// The position: greater for every later entry; pages [`IncomeLedger::list_income`].
    pub id: i64,
    /// The entry.
    pub entry: IncomeEntry,
}

/// Income balances and their ledger. Income is not coins: it cannot be spent on gifts.
/// Each entry is credited at most once, by its key (sender, order id, recipient, part). The
/// entries of one order (sender, order id) are parts of one gift: they are stored with the
/// gift's fields (room, gift, billing version, time) of the order's first credited entry,
/// which later parts keep.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait IncomeLedger: Send + Sync {
    /// Credits every entry whose key was not credited yet, atomically (all of them or none);
    /// returns how many it credited. An entry whose key is taken changes nothing (the first
    /// credit stands), so a repeat of a call credits nothing, and of two calls with the same
    /// entries at once, each entry is credited once. A negative amount, an entry of the
    /// platform's part, a balance that would pass `i64::MAX` or more than
    /// [`MAX_INCOME_CREDIT`] entries: [`Error::Invalid`](crate::Error::Invalid), and
    /// nothing is credited.
    async fn credit_income(&self, entries: &[IncomeEntry]) -> Result<u32>;
    /// The income balance of `user` (zero for a user never credited).
    async fn income_balance(&self, user: &UserId) -> Result<Coins>;
    /// The entries credited to `user`, newest first: those before position `before` when it
    /// is given, at most `limit` (and at most [`MAX_INCOME_PAGE`]).
    async fn list_income(
        &self,
        user: &UserId,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<IncomeRecord>>;
}

/// Shared handle to [`IncomeLedger`].
pub type IncomeLedgerRef = Arc<dyn IncomeLedger>;

/// The checks every store makes before crediting `entries` ([`IncomeLedger::credit_income`]).
pub fn check_income_entries(entries: &[IncomeEntry]) -> Result<()> {
    if entries.len() > MAX_INCOME_CREDIT {
        return Err(crate::Error::Invalid(format!(
            "{} income entries in one credit: at most {MAX_INCOME_CREDIT}",
            entries.len()
        )));
    }
    for entry in entries {
        if entry.amount.is_negative() {
            return Err(crate::Error::Invalid(format!(
                "negative income {} for {}",
                entry.amount, entry.user
            )));
        }
        if entry.part == IncomePart::Platform {
            return Err(crate::Error::Invalid(
                "the platform's part is not credited as income".into(),
            ));
        }
    }
    Ok(())
}

/// The user directory's answer to whose agency a user belongs to, for the agency's share of
/// the gifts the user receives.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait Agencies: Send + Sync {
    /// The agency `user` belongs to, as the user id its share is credited to; `None` when
    /// the user has none (the agency's share then goes to the platform).
    async fn agency_of(&self, user: &UserId) -> Result<Option<UserId>>;
}

/// Shared handle to [`Agencies`].
pub type AgenciesRef = Arc<dyn Agencies>;

/// [`Agencies`] where no user belongs to an agency: every agency share goes to the platform.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoAgencies;

#[async_trait]
impl Agencies for NoAgencies {
    async fn agency_of(&self, _user: &UserId) -> Result<Option<UserId>> {
        Ok(None)
    }
}

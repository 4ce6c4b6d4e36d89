//! Gifts pay their recipients: the billing policy's versions as operators change them, the
//! consumer of the durable facts that credits each applied gift's parts as income
//! ([`IncomeConsumer`]), and the reading of a user's income.
//!
//! Every paid `RoomGiftSent` fact is split per recipient under the billing policy version its
//! order was placed under ([`GiftSent::billed_under`]): the recipient's part to the recipient,
//! the owner's part to the room's owner (from the room directory's summary), the agency's part
//! to the recipient's agency ([`Agencies`]; none: the platform's), and the platform keeps the
//! rest. The parts of one gift are credited in one call, idempotent by (sender, order id,
//! recipient, part): a fact handled twice, by two nodes or after a restart, credits once.
//! A run of facts from the outbox is credited together ([`FactHandler::handle_all`]): the
//! gifts of many facts in one ledger call.
//! Robot gifts pay nothing; a FAILED or COMPENSATED order has no fact, so it pays nothing.
//!
//! Metrics: the consumers' own (`room_facts_*{consumer}`), and `room_income_entries_total`
//! (entries newly credited; a repeat adds nothing).

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use room_domain::{
    BillingPolicy, BillingShares, Coins, Event, EventEnvelope, GiftId, GiftSent, IncomePart,
    RoomId, UserId,
};

use crate::consumers::{FactError, FactHandler};
use crate::error::{Error, Result};
use crate::ports::{
    Agencies, AgenciesRef, BillingPoliciesRef, IncomeEntry, IncomeLedgerRef, IncomeRecord,
    MAX_INCOME_CREDIT, RoomDirectoryRef, UserDirectoryRef,
};

/// The policy stored as version 1 when the store has none: `default` (its shares and
/// overrides; its version is ignored) unless another process stored one first. Returns the
/// current policy. Refuses an invalid `default` ([`Error::Invalid`]).
pub async fn seed_billing(
    policies: &BillingPoliciesRef,
    default: &BillingPolicy,
) -> Result<BillingPolicy> {
    if let Some(current) = policies.current_policy().await? {
        return Ok(current);
    }
    let first = BillingPolicy {
        version: room_domain::FIRST_BILLING_VERSION,
        ..default.clone()
    };
    first
        .validate()
        .map_err(|e| Error::Invalid(format!("billing policy: {e}")))?;
    match policies.put_policy(&first).await {
        Ok(()) => Ok(first),
        Err(Error::Conflict(_)) => policies
            .current_policy()
            .await?
            .ok_or_else(|| Error::Conflict("the billing policy vanished".into())),
        Err(other) => Err(other),
    }
}

/// Stores a new version of the billing policy with these shares, overrides and turnover
/// share, if the
/// current version is still `expected_version` (0: none stored): [`Error::Conflict`]
/// otherwise, [`Error::Invalid`] for a policy [`BillingPolicy::validate`] refuses. Returns
/// the policy stored.
pub async fn change_billing(
    policies: &BillingPoliciesRef,
    expected_version: u64,
    shares: BillingShares,
    overrides: std::collections::BTreeMap<GiftId, BillingShares>,
    turnover_bp: u32,
) -> Result<BillingPolicy> {
    let version = expected_version
        .checked_add(1)
        .ok_or_else(|| Error::Invalid(format!("expected_version {expected_version}")))?;
    let policy = BillingPolicy {
        version,
        shares,
        overrides,
        turnover_bp,
    };
    policy
        .validate()
        .map_err(|e| Error::Invalid(format!("billing policy: {e}")))?;
    policies
        .put_policy(&policy)
        .await
        .map_err(|error| match error {
            Error::Conflict(_) => Error::Conflict(format!(
                "the billing policy is no longer at version {expected_version}"
            )),
            other => other,
        })?;
    Ok(policy)
}

/// A user's income: the balance and a page of the ledger, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncomePage {
    /// The income balance.
    pub balance: Coins,
    /// The entries of the page, newest first.
    pub entries: Vec<IncomeRecord>,
    /// The cursor of the next page, when the page is full (there may be more).
    pub next_cursor: Option<i64>,
}

/// `user`'s income balance and at most `limit` ledger entries, newest first, before the
/// entry `cursor` names (from the newest without one).
pub async fn income_page(
    income: &IncomeLedgerRef,
    user: &UserId,
    cursor: Option<i64>,
    limit: u32,
) -> Result<IncomePage> {
    let balance = income.income_balance(user).await?;
    let entries = income.list_income(user, cursor, limit).await?;
    let next_cursor = (limit > 0 && entries.len() == limit as usize)
        .then(|| entries.last().map(|record| record.id))
        .flatten();
    Ok(IncomePage {
        balance,
        entries,
        next_cursor,
    })
}

/// The entries paid for one applied gift: each recipient's value split under `policy`, its
/// parts above zero paid to the recipient, `owner` and the recipient's agency (`agencies`, in
/// the recipients' order).
pub fn gift_income(
    envelope: &EventEnvelope,
    gift: &GiftSent,
    policy: &BillingPolicy,
    owner: &UserId,
    agencies: &[Option<UserId>],
) -> std::result::Result<Vec<IncomeEntry>, room_domain::SplitError> {
    let mut entries = Vec::with_capacity(gift.recipients.len() * 3);
    for (recipient, agency) in gift.recipients.iter().zip(agencies) {
        let split = policy.split_gift(gift, agency.is_some())?;
        for (part, amount) in split.paid_parts() {
            let user = match (part, agency) {
                (IncomePart::Recipient, _) => recipient,
                (IncomePart::Owner, _) => owner,
                (IncomePart::Agency, Some(agency)) => agency,
                _ => continue,
            };
            if amount > Coins::ZERO {
                entries.push(IncomeEntry {
                    sender: gift.sender.clone(),
                    order_id: gift.order_id.clone(),
                    recipient: recipient.clone(),
                    part,
                    user: user.clone(),
                    amount,
                    room_id: envelope.room_id.clone(),
                    gift_id: Some(gift.gift_id.clone()),
                    billing_version: policy.version,
                    at: envelope.occurred_at,
                });
            }
        }
    }
    Ok(entries)
}

/// The users' agencies as the user directory has them ([`UserProfile::agency`]): an agency is
/// credited its share under the user id equal to its agency id. Read from the store when the
/// consumer credits a gift (not through a node's profile cache), so a recipient's agency is
/// the one the directory names when their income is credited, a moment after the gift.
///
/// [`UserProfile::agency`]: crate::ports::UserProfile::agency
pub struct DirectoryAgencies(pub UserDirectoryRef);

#[async_trait]
impl Agencies for DirectoryAgencies {
    async fn agency_of(&self, user: &UserId) -> Result<Option<UserId>> {
        let Some(agency) = self
            .0
            .get_profile(user)
            .await?
            .and_then(|profile| profile.agency)
        else {
            return Ok(None);
        };
        // The directory keeps agency ids to the id rule; one that breaks it is stored data
        // gone wrong, not a share to give away.
        UserId::new(&agency)
            .map(Some)
            .map_err(|error| Error::corrupt(format!("agency {agency:?} of {user}: {error}")))
    }
}

/// The consumer of the durable facts that credits each paid gift's parts as income.
pub struct IncomeConsumer {
    policies: BillingPoliciesRef,
    income: IncomeLedgerRef,
    directory: RoomDirectoryRef,
    agencies: AgenciesRef,
    /// Policy versions read: a version never changes once stored.
    versions: Mutex<HashMap<u64, BillingPolicy>>,
}

impl IncomeConsumer {
    /// The consumer over the policy store, the ledger, the room directory (whose summaries
    /// name each room's owner) and the users' agencies.
    pub fn new(
        policies: BillingPoliciesRef,
        income: IncomeLedgerRef,
        directory: RoomDirectoryRef,
        agencies: AgenciesRef,
    ) -> Self {
        IncomeConsumer {
            policies,
            income,
            directory,
            agencies,
            versions: Mutex::new(HashMap::new()),
        }
    }

    async fn policy(&self, version: u64) -> std::result::Result<BillingPolicy, FactError> {
        if let Some(policy) = self
            .versions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&version)
        {
            return Ok(policy.clone());
        }
        let policy = self
            .policies
            .get_policy(version)
            .await
            .map_err(FactError::retryable)?
            // Version 1 is stored at start-up and versions are never deleted: a missing one
            // is a store behind or a bug, never a reason to pay nothing.
            .ok_or_else(|| {
                FactError::retryable(format!("billing policy version {version} is not stored"))
            })?;
        self.versions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(version, policy.clone());
        Ok(policy)
    }
}

/// What the facts of one run read once: room owners and recipients' agencies.
#[derive(Default)]
struct Reads {
    owners: HashMap<RoomId, UserId>,
    agencies: HashMap<UserId, Option<UserId>>,
}

impl IncomeConsumer {
    /// The entries `envelope` pays: none for anything but a paid `RoomGiftSent`.
    async fn entries_of(
        &self,
        envelope: &EventEnvelope,
        reads: &mut Reads,
    ) -> std::result::Result<Vec<IncomeEntry>, FactError> {
        let Event::RoomGiftSent(gift) = &envelope.event else {
            return Ok(Vec::new());
        };
        if gift.robot {
            return Ok(Vec::new());
        }
        let policy = self.policy(gift.billed_under()).await?;
        let owner = match reads.owners.get(&envelope.room_id) {
            Some(owner) => owner.clone(),
            None => {
                // Summaries are written by the commit that created the room and never
                // deleted; a room's owner never changes.
                let owner = self
                    .directory
                    .get_summary(&envelope.room_id)
                    .await
                    .map_err(FactError::retryable)?
                    .ok_or_else(|| {
                        FactError::retryable(format!(
                            "room {} has no summary yet",
                            envelope.room_id
                        ))
                    })?
                    .owner;
                reads.owners.insert(envelope.room_id.clone(), owner.clone());
                owner
            }
        };
        let mut agencies = Vec::with_capacity(gift.recipients.len());
        for recipient in &gift.recipients {
            let agency = match reads.agencies.get(recipient) {
                Some(agency) => agency.clone(),
                None => {
                    let agency = self
                        .agencies
                        .agency_of(recipient)
                        .await
                        .map_err(FactError::retryable)?;
                    reads.agencies.insert(recipient.clone(), agency.clone());
                    agency
                }
            };
            agencies.push(agency);
        }
        gift_income(envelope, gift, &policy, &owner, &agencies).map_err(FactError::permanent)
    }

    /// Credits `entries`, [`MAX_INCOME_CREDIT`] at a time (each call idempotent).
    async fn credit(&self, entries: &[IncomeEntry]) -> std::result::Result<(), FactError> {
        for chunk in entries.chunks(MAX_INCOME_CREDIT) {
            let credited = match self.income.credit_income(chunk).await {
                Ok(credited) => credited,
                // An amount or balance the ledger cannot take: no retry can mend it.
                Err(error @ Error::Invalid(_)) => return Err(FactError::permanent(error)),
                // Storage errors: the fact comes again.
                Err(error) => return Err(FactError::retryable(error)),
            };
            metrics::counter!("room_income_entries_total").increment(u64::from(credited));
        }
        Ok(())
    }
}

#[async_trait]
impl FactHandler for IncomeConsumer {
    async fn handle(&self, envelope: &EventEnvelope) -> std::result::Result<(), FactError> {
        let entries = self.entries_of(envelope, &mut Reads::default()).await?;
        self.credit(&entries).await
    }

    /// The run's gifts credited together: each room's owner and each recipient's agency read
    /// once for the run, and one ledger call for up to [`MAX_INCOME_CREDIT`] entries (on
    /// MySQL and SQLite one transaction), instead of one a gift.
    async fn handle_all(
        &self,
        envelopes: &[EventEnvelope],
    ) -> Option<std::result::Result<(), FactError>> {
        let mut reads = Reads::default();
        let mut entries = Vec::new();
        for envelope in envelopes {
            match self.entries_of(envelope, &mut reads).await {
                Ok(more) => entries.extend(more),
                Err(error) => return Some(Err(error)),
            }
        }
        Some(self.credit(&entries).await)
    }
}

//! Billing: how a paid gift's value is split between the people it pays and the platform.
//!
//! A [`BillingPolicy`] gives, in basis points (1/100 of a percent; 10,000 is the whole value),
//! the recipient's income share, the room owner's share and the agency's share, with optional
//! overrides per gift (lucky gifts typically pay less). The platform keeps the rest.
//! [`BillingPolicy::split`] cuts one recipient's value (`unit_price × count`) into a [`Split`]
//! with integer arithmetic only: each share is rounded down, the parts add up exactly to the
//! value, and every rounding remainder goes to the platform. A recipient without an agency
//! pays the agency's share to the platform; a robot's free gift pays nothing.
//!
//! Policies are versioned: a gift order records the version current when it was placed, and
//! is billed under that version ([`GiftSent::billing_version`]; a fact written before
//! versions existed bills under [`FIRST_BILLING_VERSION`]).
//!
//! ```
//! use room_domain::{BillingPolicy, BillingShares, Coins, GiftId};
//!
//! let policy = BillingPolicy {
//!     version: 1,
//!     shares: BillingShares { recipient_bp: 5_000, owner_bp: 1_000, agency_bp: 500 },
//!     overrides: Default::default(),
//!     turnover_bp: 0,
//! };
//! policy.validate().unwrap();
//! let split = policy.split(&GiftId::new("rose").unwrap(), Coins(33), false).unwrap();
//! assert_eq!((split.recipient, split.owner, split.agency), (Coins(16), Coins(3), Coins(0)));
//! assert_eq!(split.platform, Coins(14)); // 33 - 16 - 3: the agency share and the remainders
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::event::GiftSent;
use crate::ids::GiftId;
use crate::money::Coins;

/// The whole value, in basis points.
pub const BASIS_POINTS: u32 = 10_000;

/// The version every policy store starts from, and the one a gift fact without a
/// `billing_version` (written before billing existed) is billed under.
pub const FIRST_BILLING_VERSION: u64 = 1;

/// The most per-gift overrides one policy may hold.
pub const MAX_BILLING_OVERRIDES: usize = 1_000;

/// The shares of a gift's value that are paid out, in basis points of the value; the
/// platform keeps the rest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BillingShares {
    /// The recipient's income.
    pub recipient_bp: u32,
    /// The room owner's share.
    pub owner_bp: u32,
    /// The share of the recipient's agency (the platform's when the recipient has none).
    pub agency_bp: u32,
}

impl BillingShares {
    /// Checks each share within `0..=10000` and their sum within 10,000; `gift` names the
    /// override checked, if any.
    fn validate(&self, gift: Option<&GiftId>) -> Result<(), BillingError> {
        for (part, bp) in [
            (IncomePart::Recipient, self.recipient_bp),
            (IncomePart::Owner, self.owner_bp),
            (IncomePart::Agency, self.agency_bp),
        ] {
            if bp > BASIS_POINTS {
                return Err(BillingError::ShareOutOfRange {
                    gift: gift.cloned(),
                    part,
                    bp,
                });
            }
        }
        let sum =
            u64::from(self.recipient_bp) + u64::from(self.owner_bp) + u64::from(self.agency_bp);
        if sum > u64::from(BASIS_POINTS) {
            return Err(BillingError::SharesExceedWhole {
                gift: gift.cloned(),
                sum,
            });
        }
        Ok(())
    }
}

/// A version of the billing policy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BillingPolicy {
    /// The version: 1 for the first policy, one more for each change.
    pub version: u64,
    /// The shares of every gift without an override.
    pub shares: BillingShares,
    /// Shares of particular gifts, replacing [`shares`](Self::shares) for them.
    #[serde(default)]
    pub overrides: BTreeMap<GiftId, BillingShares>,
    /// The room owner's reward for a closed day's turnover of their room (the coin value of
    /// the gifts applied in it that day), in basis points ([`turnover_reward`]); 0 pays none.
    /// A policy stored before this share existed has none.
    ///
    /// [`turnover_reward`]: Self::turnover_reward
    #[serde(default, skip_serializing_if = "is_zero")]
    pub turnover_bp: u32,
}

fn is_zero(bp: &u32) -> bool {
    *bp == 0
}

/// Why a billing policy is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BillingError {
    /// A share is above 10,000 basis points.
    #[error("{part} share {bp} bp{}: a share is 0 to 10000 basis points", on_gift(.gift))]
    ShareOutOfRange {
        /// The override, if the share is one.
        gift: Option<GiftId>,
        /// Which share.
        part: IncomePart,
        /// Its basis points.
        bp: u32,
    },
    /// The shares add up to more than the whole value.
    #[error("the shares add up to {sum} bp{}: at most 10000", on_gift(.gift))]
    SharesExceedWhole {
        /// The override, if the shares are one.
        gift: Option<GiftId>,
        /// Their sum.
        sum: u64,
    },
    /// Too many per-gift overrides.
    #[error("{count} gift overrides: at most {MAX_BILLING_OVERRIDES}")]
    TooManyOverrides {
        /// How many there are.
        count: usize,
    },
}

fn on_gift(gift: &Option<GiftId>) -> String {
    gift.as_ref()
        .map(|gift| format!(" in the override of gift {gift}"))
        .unwrap_or_default()
}

/// Why a value cannot be split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    /// The value is below zero.
    #[error("a negative value {0} cannot be split")]
    NegativeValue(Coins),
    /// The policy is invalid ([`BillingPolicy::validate`]).
    #[error("the billing policy is invalid")]
    InvalidPolicy,
    /// `unit_price × count` does not fit.
    #[error("the gift's value overflows")]
    Overflow,
}

/// One part of a split value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IncomePart {
    /// The recipient's income.
    Recipient,
    /// The room owner's share.
    Owner,
    /// The recipient's agency's share.
    Agency,
    /// What the platform keeps.
    Platform,
    /// A room owner's reward for a closed day's turnover of their room
    /// ([`BillingPolicy::turnover_reward`]): not a part of one gift.
    Turnover,
}

impl IncomePart {
    /// The part as stored and sent: `"recipient"`, `"owner"`, `"agency"`, `"platform"`,
    /// `"turnover"`.
    pub fn as_str(self) -> &'static str {
        match self {
            IncomePart::Recipient => "recipient",
            IncomePart::Owner => "owner",
            IncomePart::Agency => "agency",
            IncomePart::Platform => "platform",
            IncomePart::Turnover => "turnover",
        }
    }

    /// The part named `name` ([`as_str`](Self::as_str)).
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "recipient" => IncomePart::Recipient,
            "owner" => IncomePart::Owner,
            "agency" => IncomePart::Agency,
            "platform" => IncomePart::Platform,
            "turnover" => IncomePart::Turnover,
            _ => return None,
        })
    }
}

impl std::fmt::Display for IncomePart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One recipient's value cut into its parts; they add up exactly to the value, none is
/// negative.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Split {
    /// The recipient's income.
    pub recipient: Coins,
    /// The room owner's share.
    pub owner: Coins,
    /// The agency's share (zero without an agency).
    pub agency: Coins,
    /// What the platform keeps: its share, the agency's share without an agency, and every
    /// rounding remainder.
    pub platform: Coins,
}

impl Split {
    /// The parts paid to people (all but the platform's), in [`IncomePart`] order.
    pub fn paid_parts(&self) -> [(IncomePart, Coins); 3] {
        [
            (IncomePart::Recipient, self.recipient),
            (IncomePart::Owner, self.owner),
            (IncomePart::Agency, self.agency),
        ]
    }

    /// The sum of the parts paid to people.
    pub fn paid(&self) -> Coins {
        // Each part is at most the value, and they add up to it: no overflow.
        Coins(self.recipient.0 + self.owner.0 + self.agency.0)
    }
}

impl GiftSent {
    /// The billing policy version this gift is billed under: its own, or
    /// [`FIRST_BILLING_VERSION`] for a fact written before billing.
    pub fn billed_under(&self) -> u64 {
        self.billing_version.unwrap_or(FIRST_BILLING_VERSION)
    }
}

/// `value × bp / 10000`, rounded down; `None` when `bp` is above the whole.
fn share(value: i64, bp: u32) -> Option<i64> {
    if bp > BASIS_POINTS {
        return None;
    }
    let part = i128::from(value).checked_mul(i128::from(bp))? / i128::from(BASIS_POINTS);
    i64::try_from(part).ok()
}

impl BillingPolicy {
    /// Checks every share within `0..=10000` basis points and the shares of the default and
    /// of each override adding up to at most 10,000, and at most [`MAX_BILLING_OVERRIDES`]
    /// overrides.
    pub fn validate(&self) -> Result<(), BillingError> {
        if self.overrides.len() > MAX_BILLING_OVERRIDES {
            return Err(BillingError::TooManyOverrides {
                count: self.overrides.len(),
            });
        }
        self.shares.validate(None)?;
        for (gift, shares) in &self.overrides {
            shares.validate(Some(gift))?;
        }
        if self.turnover_bp > BASIS_POINTS {
            return Err(BillingError::ShareOutOfRange {
                gift: None,
                part: IncomePart::Turnover,
                bp: self.turnover_bp,
            });
        }
        Ok(())
    }

    /// The room owner's reward for a day's `turnover`: `turnover × turnover_bp / 10000`,
    /// rounded down; zero for a negative turnover or a share above the whole.
    pub fn turnover_reward(&self, turnover: Coins) -> Coins {
        if turnover.is_negative() {
            return Coins::ZERO;
        }
        Coins(share(turnover.0, self.turnover_bp).unwrap_or_default())
    }

    /// The shares of `gift`: its override, else the default.
    pub fn shares_for(&self, gift: &GiftId) -> &BillingShares {
        self.overrides.get(gift).unwrap_or(&self.shares)
    }

    /// Splits one recipient's `value` of `gift` under this policy: each share rounded down,
    /// the agency's share the platform's when `has_agency` is false, and the platform taking
    /// the rest. The parts add up exactly to `value` and none is negative.
    pub fn split(
        &self,
        gift: &GiftId,
        value: Coins,
        has_agency: bool,
    ) -> Result<Split, SplitError> {
        if value.is_negative() {
            return Err(SplitError::NegativeValue(value));
        }
        let shares = self.shares_for(gift);
        shares
            .validate(None)
            .map_err(|_| SplitError::InvalidPolicy)?;
        let part = |bp| share(value.0, bp).map(Coins).ok_or(SplitError::Overflow);
        let recipient = part(shares.recipient_bp)?;
        let owner = part(shares.owner_bp)?;
        let agency = if has_agency {
            part(shares.agency_bp)?
        } else {
            Coins::ZERO
        };
        // The shares add up to at most the whole, so each rounded-down part and their sum are
        // at most the value: the platform's rest is never negative.
        let platform = value
            .checked_sub(recipient)
            .and_then(|rest| rest.checked_sub(owner))
            .and_then(|rest| rest.checked_sub(agency))
            .filter(|rest| !rest.is_negative())
            .ok_or(SplitError::Overflow)?;
        Ok(Split {
            recipient,
            owner,
            agency,
            platform,
        })
    }

    /// Splits what each recipient of `gift` received (`unit_price × count`): a robot's free
    /// gift pays nothing (every part zero).
    pub fn split_gift(&self, gift: &GiftSent, has_agency: bool) -> Result<Split, SplitError> {
        if gift.robot {
            return Ok(Split::default());
        }
        let value = gift
            .unit_price
            .checked_mul(i64::from(gift.count))
            .ok_or(SplitError::Overflow)?;
        self.split(&gift.gift_id, value, has_agency)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(recipient_bp: u32, owner_bp: u32, agency_bp: u32) -> BillingPolicy {
        BillingPolicy {
            version: 1,
            shares: BillingShares {
                recipient_bp,
                owner_bp,
                agency_bp,
            },
            overrides: BTreeMap::new(),
            turnover_bp: 0,
        }
    }

    fn gift(id: &str) -> GiftId {
        GiftId::new(id).unwrap()
    }

    #[test]
    fn remainders_go_to_the_platform() {
        let split = policy(3_333, 3_333, 3_333)
            .split(&gift("rose"), Coins(10), true)
            .unwrap();
        assert_eq!(
            (split.recipient, split.owner, split.agency, split.platform),
            (Coins(3), Coins(3), Coins(3), Coins(1))
        );
    }

    #[test]
    fn without_an_agency_its_share_is_the_platforms() {
        let split = policy(5_000, 1_000, 2_000)
            .split(&gift("rose"), Coins(100), false)
            .unwrap();
        assert_eq!(split.agency, Coins::ZERO);
        assert_eq!(split.platform, Coins(40));
    }

    #[test]
    fn an_override_replaces_the_default_shares() {
        let mut policy = policy(5_000, 1_000, 0);
        policy.overrides.insert(
            gift("lucky-clover"),
            BillingShares {
                recipient_bp: 1_000,
                owner_bp: 0,
                agency_bp: 0,
            },
        );
        let lucky = policy
            .split(&gift("lucky-clover"), Coins(100), true)
            .unwrap();
        assert_eq!((lucky.recipient, lucky.platform), (Coins(10), Coins(90)));
        let rose = policy.split(&gift("rose"), Coins(100), true).unwrap();
        assert_eq!((rose.recipient, rose.owner), (Coins(50), Coins(10)));
    }

    #[test]
    fn the_largest_value_splits_without_overflow() {
        let split = policy(10_000, 0, 0)
            .split(&gift("rose"), Coins(i64::MAX), true)
            .unwrap();
        assert_eq!(split.recipient, Coins(i64::MAX));
        assert_eq!(split.platform, Coins::ZERO);
    }

    #[test]
    fn invalid_policies_and_values_are_refused() {
        assert_eq!(
            policy(10_001, 0, 0).validate(),
            Err(BillingError::ShareOutOfRange {
                gift: None,
                part: IncomePart::Recipient,
                bp: 10_001
            })
        );
        assert_eq!(
            policy(6_000, 3_000, 1_001).validate(),
            Err(BillingError::SharesExceedWhole {
                gift: None,
                sum: 10_001
            })
        );
        let mut over = policy(0, 0, 0);
        over.overrides.insert(
            gift("rose"),
            BillingShares {
                recipient_bp: 0,
                owner_bp: u32::MAX,
                agency_bp: 0,
            },
        );
        let refused = over.validate().unwrap_err();
        assert!(
            refused.to_string().contains("override of gift rose"),
            "{refused}"
        );
        assert_eq!(
            over.split(&gift("rose"), Coins(1), true),
            Err(SplitError::InvalidPolicy)
        );
        assert_eq!(
            policy(1, 0, 0).split(&gift("rose"), Coins(-1), true),
            Err(SplitError::NegativeValue(Coins(-1)))
        );
        policy(10_000, 0, 0).validate().unwrap();
        policy(0, 0, 10_000).validate().unwrap();
    }

    #[test]
    fn the_turnover_reward_is_its_share_rounded_down() {
        let policy = BillingPolicy {
            turnover_bp: 150,
            ..BillingPolicy::default()
        };
        assert_eq!(policy.turnover_reward(Coins(10_000)), Coins(150));
        assert_eq!(policy.turnover_reward(Coins(999)), Coins(14));
        assert_eq!(
            policy.turnover_reward(Coins(i64::MAX)),
            Coins(138_350_580_552_821_637)
        );
        assert_eq!(policy.turnover_reward(Coins(-5)), Coins::ZERO);
        assert_eq!(
            BillingPolicy::default().turnover_reward(Coins(1_000)),
            Coins::ZERO
        );
        let over = BillingPolicy {
            turnover_bp: 10_001,
            ..BillingPolicy::default()
        };
        assert!(matches!(
            over.validate(),
            Err(BillingError::ShareOutOfRange {
                part: IncomePart::Turnover,
                ..
            })
        ));
        // A policy stored before the share existed reads as none, and none is not written.
        let old: BillingPolicy = serde_json::from_str(
            r#"{"version":1,"shares":{"recipient_bp":1,"owner_bp":0,"agency_bp":0}}"#,
        )
        .unwrap();
        assert_eq!(old.turnover_bp, 0);
        assert!(!serde_json::to_string(&old).unwrap().contains("turnover"));
    }

    #[test]
    fn parts_are_named_both_ways() {
        for part in [
            IncomePart::Recipient,
            IncomePart::Owner,
            IncomePart::Agency,
            IncomePart::Platform,
            IncomePart::Turnover,
        ] {
            assert_eq!(IncomePart::parse(part.as_str()), Some(part));
        }
        assert_eq!(IncomePart::parse("coins"), None);
    }
}

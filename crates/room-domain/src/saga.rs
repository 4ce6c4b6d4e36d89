//! The gift saga: one paid gift order across the wallet and the room (DESIGN §5).
//!
//! ```text
//! PENDING --debit ok--> DEBITED --room applies--> APPLIED --refund, reward credited--> COMPLETED
//!    |                     |                     (nothing owed: straight to COMPLETED)
//!    |                     +--room definitely rejects--> (refund) --> COMPENSATED
//!    +--insufficient funds / wallet never debited / rejected before debit--> FAILED
//! ```
//!
//! The orchestrator asks [`GiftOrder::next_step`] what to do, does it, and reports what came of
//! it with [`GiftOrder::record`]. An outcome it cannot know ([`SagaOutcome::Unknown`]: a timeout,
//! a lost ownership, a conflict) changes nothing, so the same step is retried: a pending order
//! never becomes COMPENSATED or FAILED for want of an answer, because a pending order does not
//! prove that the wallet was not debited.
//!
//! A batch gift ([`GiftOrder::scope`]) is debited for whom it named when it was placed; the room
//! gives it to whom its scope names when it applies it, never more. If that is fewer, the
//! difference is owed back: the APPLIED order is refunded it (under the order's refund, which
//! an applied order never otherwise takes) before any lucky reward is credited.

use serde::{Deserialize, Serialize};

use crate::command::{ApplyGift, GiftSnapshot};
use crate::ids::{OrderId, RoomId, UserId};
use crate::money::Coins;
use crate::rejection::Rejection;
use crate::state::GiftScope;
use crate::time::Timestamp;

/// Where an order stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OrderStatus {
    /// Created; the debit may or may not have happened.
    Pending,
    /// The wallet confirmed the debit; the room has not applied it yet (or refused it and the
    /// refund is due).
    Debited,
    /// The room applied it; a lucky reward or a batch gift's partial refund is due.
    Applied,
    /// Done: applied, and any reward and partial refund credited.
    Completed,
    /// Ended without a debit: nothing to undo.
    Failed,
    /// The room refused it and the debit was refunded.
    Compensated,
}

impl OrderStatus {
    /// Whether the order is finished.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            OrderStatus::Completed | OrderStatus::Failed | OrderStatus::Compensated
        )
    }

    /// The status as stored and sent: `"PENDING"`, `"COMPLETED"`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            OrderStatus::Pending => "PENDING",
            OrderStatus::Debited => "DEBITED",
            OrderStatus::Applied => "APPLIED",
            OrderStatus::Completed => "COMPLETED",
            OrderStatus::Failed => "FAILED",
            OrderStatus::Compensated => "COMPENSATED",
        }
    }
}

/// Why an order failed without a debit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum FailReason {
    /// The sender's balance was too low.
    InsufficientFunds {
        /// The balance the wallet reported.
        balance: Coins,
    },
    /// Recovery found that the wallet never debited the order.
    NotDebited,
    /// The room refused the gift before anything was debited.
    Rejected {
        /// The room's verdict.
        rejection: Rejection,
    },
}

/// What the orchestrator must do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SagaStep {
    /// Debit `amount` from the sender, idempotent by [`GiftOrder::wallet_op_id`].
    Debit {
        /// The order's total.
        amount: Coins,
    },
    /// Apply the gift to the room, under a command id derived from the sender and the order
    /// id.
    Apply,
    /// Refund `amount` to the sender, idempotent by [`GiftOrder::wallet_op_id`]: the whole
    /// order after the room refused it, or the part of a batch gift the room could not give.
    Refund {
        /// The order's total, or the part not given.
        amount: Coins,
    },
    /// Credit the lucky reward to the sender, idempotent by [`GiftOrder::wallet_op_id`].
    CreditLuckyReward {
        /// The reward.
        amount: Coins,
    },
    /// Nothing: the order is finished.
    Done,
}

/// What came of a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SagaOutcome {
    /// The wallet debited the order (now or earlier).
    Debited {
        /// The sender's balance after the debit.
        balance_after: Coins,
    },
    /// The wallet refused the debit: not enough coins.
    InsufficientFunds {
        /// The sender's balance.
        balance: Coins,
    },
    /// The wallet has no debit for this order and will not take one later (recovery).
    NotDebited {
        /// The sender's balance when the debit was found missing, kept in the order so every
        /// repeat of it is answered with the same balance.
        balance: Coins,
    },
    /// The room applied the gift.
    Applied {
        /// The lucky reward the room drew (zero for ordinary gifts).
        lucky_reward: Coins,
        /// Whom the gift reached (the order's recipients, unless it is a batch gift).
        recipients: Vec<UserId>,
        /// What the room gave: `price × count × recipients` of those it reached.
        value: Coins,
    },
    /// The room definitely refused the gift.
    Rejected(Rejection),
    /// The wallet refunded the order.
    Refunded {
        /// The sender's balance after the refund.
        balance_after: Coins,
    },
    /// The wallet credited the lucky reward.
    RewardCredited {
        /// The sender's balance after the credit.
        balance_after: Coins,
    },
    /// No answer that proves anything: a timeout, a lost room ownership, a storage conflict.
    Unknown,
}

impl SagaOutcome {
    fn name(&self) -> &'static str {
        match self {
            SagaOutcome::Debited { .. } => "debited",
            SagaOutcome::InsufficientFunds { .. } => "insufficient_funds",
            SagaOutcome::NotDebited { .. } => "not_debited",
            SagaOutcome::Applied { .. } => "applied",
            SagaOutcome::Rejected(_) => "rejected",
            SagaOutcome::Refunded { .. } => "refunded",
            SagaOutcome::RewardCredited { .. } => "reward_credited",
            SagaOutcome::Unknown => "unknown",
        }
    }
}

/// An outcome that cannot follow the order's status: the wallet or the room contradicts what
/// the order recorded. Never retried; it needs a person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("order {order_id}: outcome `{outcome}` cannot follow status {from:?}")]
pub struct InvalidTransition {
    /// The order.
    pub order_id: OrderId,
    /// Its status.
    pub from: OrderStatus,
    /// The outcome reported.
    pub outcome: &'static str,
}

/// How an order names what it is idempotent by: its wallet operations and its room command.
///
/// Order ids are chosen by clients, so they are unique per sender only: an order is the pair
/// (sender, order id), and so is everything derived from it. Orders stored before that rule
/// were named by the order id alone, and keep those names so that their debits, refunds and
/// applied commands are still found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderKeys {
    /// Named by the order id alone: orders stored before the sender scoped them (an order
    /// stored without `keys` is one of these).
    #[default]
    OrderId,
    /// Named by the sender and the order id: every order created now.
    SenderAndOrderId,
}

/// One gift order and its progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GiftOrder {
    /// The order, chosen by the client: unique per sender.
    pub order_id: OrderId,
    /// The room.
    pub room_id: RoomId,
    /// Who pays.
    pub sender: UserId,
    /// Who receives; for a batch gift, whom it named when placed: whom the sender is debited
    /// for.
    pub recipients: Vec<UserId>,
    /// For a batch gift, the scope the room resolves when it applies it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<GiftScope>,
    /// For an applied batch gift, whom it reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reached: Option<Vec<UserId>>,
    /// For an applied batch gift that reached fewer than it was debited for, the coins owed
    /// back; zero otherwise.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub partial_refund: Coins,
    /// Whether the partial refund was credited.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial_refunded: bool,
    /// The gift as priced when ordered.
    pub gift: GiftSnapshot,
    /// Units per recipient.
    pub count: u32,
    /// The lucky draw input, fixed at creation.
    pub lucky_draw: u64,
    /// `price × count × recipients`.
    pub total: Coins,
    /// Where it stands.
    pub status: OrderStatus,
    /// The room's refusal, while a refund is due and after.
    pub rejection: Option<Rejection>,
    /// Why it failed, when FAILED.
    pub fail_reason: Option<FailReason>,
    /// The lucky reward the room drew.
    pub lucky_reward: Coins,
    /// The sender's balance after the latest wallet operation of this order.
    pub balance_after: Option<Coins>,
    /// When the order was created.
    pub created_at: Timestamp,
    /// How its wallet operations and room command are named.
    #[serde(default)]
    pub keys: OrderKeys,
    /// How the sender is shown, as of placing the order: the display of the order's apply
    /// command, which the room's `RoomGiftSent` carries. Absent when they have no display
    /// fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_display: Option<crate::UserDisplay>,
}

impl GiftOrder {
    /// A new PENDING order for `apply`, or `None` if its total overflows.
    pub fn new(room_id: RoomId, apply: &ApplyGift, created_at: Timestamp) -> Option<Self> {
        Some(GiftOrder {
            total: apply.total_value()?,
            order_id: apply.order_id.clone(),
            room_id,
            sender: apply.sender.clone(),
            recipients: apply.recipients.clone(),
            scope: apply.scope,
            reached: None,
            partial_refund: Coins::ZERO,
            partial_refunded: false,
            gift: apply.gift.clone(),
            count: apply.count,
            lucky_draw: apply.lucky_draw,
            status: OrderStatus::Pending,
            rejection: None,
            fail_reason: None,
            lucky_reward: Coins::ZERO,
            balance_after: None,
            created_at,
            keys: OrderKeys::SenderAndOrderId,
            sender_display: None,
        })
    }

    /// The id of the order's wallet operations (its debit, its refund, its lucky reward; the
    /// wallet keys each by id and kind). For a [`OrderKeys::SenderAndOrderId`] order it is the
    /// order id and the sender with a space between them: neither holds whitespace, so the
    /// pair is read back unambiguously, and no id of an [`OrderKeys::OrderId`] order (a bare
    /// order id) can equal it. The order id comes first so that operations created together,
    /// whose order ids clients often draw from a rising counter, sit together in the wallet's
    /// index rather than one place per sender.
    pub fn wallet_op_id(&self) -> String {
        match self.keys {
            OrderKeys::OrderId => self.order_id.to_string(),
            OrderKeys::SenderAndOrderId => format!("{} {}", self.order_id, self.sender),
        }
    }

    /// The room command this order applies.
    pub fn apply_command(&self) -> ApplyGift {
        ApplyGift {
            order_id: self.order_id.clone(),
            sender: self.sender.clone(),
            recipients: self.recipients.clone(),
            gift: self.gift.clone(),
            count: self.count,
            lucky_draw: self.lucky_draw,
            scope: self.scope,
        }
    }

    /// Whom the applied gift reached: the recipients, or for a batch gift whom the room
    /// resolved. `None` until the room applied it.
    pub fn reached(&self) -> Option<&[UserId]> {
        match self.status {
            OrderStatus::Applied | OrderStatus::Completed => {
                Some(self.reached.as_deref().unwrap_or(&self.recipients))
            }
            _ => None,
        }
    }

    /// What the sender paid for what the room gave: the total, less a batch gift's partial
    /// refund.
    pub fn spent(&self) -> Coins {
        Coins(self.total.0 - self.partial_refund.0)
    }

    /// Whether the room may still apply this order, as it stands in storage: it is PENDING
    /// (debited or not), or DEBITED with no refusal recorded. Once a drive recorded the room's
    /// refusal (a refund is due) or the order ended, applying it would move coins twice; every
    /// store refuses a commit that applies such an order.
    pub fn awaits_room(&self) -> bool {
        match self.status {
            OrderStatus::Pending => true,
            OrderStatus::Debited => self.rejection.is_none(),
            _ => false,
        }
    }

    /// What the orchestrator must do next.
    pub fn next_step(&self) -> SagaStep {
        match self.status {
            OrderStatus::Pending => SagaStep::Debit { amount: self.total },
            OrderStatus::Debited if self.rejection.is_some() => {
                SagaStep::Refund { amount: self.total }
            }
            OrderStatus::Debited => SagaStep::Apply,
            OrderStatus::Applied if self.partial_refund_due() => SagaStep::Refund {
                amount: self.partial_refund,
            },
            OrderStatus::Applied => SagaStep::CreditLuckyReward {
                amount: self.lucky_reward,
            },
            OrderStatus::Completed | OrderStatus::Failed | OrderStatus::Compensated => {
                SagaStep::Done
            }
        }
    }

    /// Records what came of a step. Repeating an outcome already recorded is harmless (steps
    /// are retried); an outcome that contradicts the record is an [`InvalidTransition`] and
    /// leaves the order as it was.
    pub fn record(&mut self, outcome: SagaOutcome) -> Result<(), InvalidTransition> {
        use OrderStatus as S;
        use SagaOutcome as O;
        match (self.status, outcome) {
            (_, O::Unknown) => {}
            (S::Pending, O::Debited { balance_after }) => {
                self.status = S::Debited;
                self.balance_after = Some(balance_after);
            }
            (S::Debited | S::Applied | S::Completed | S::Compensated, O::Debited { .. }) => {}
            (S::Pending, O::InsufficientFunds { balance }) => {
                self.fail(FailReason::InsufficientFunds { balance }, Some(balance));
            }
            (S::Pending, O::NotDebited { balance }) => {
                self.fail(FailReason::NotDebited, Some(balance));
            }
            (S::Pending, O::Rejected(rejection)) => {
                self.fail(FailReason::Rejected { rejection }, None);
            }
            (S::Failed, O::InsufficientFunds { .. } | O::NotDebited { .. } | O::Rejected(_)) => {}
            (
                S::Debited,
                O::Applied {
                    lucky_reward,
                    recipients,
                    value,
                },
            ) if self.rejection.is_none() && self.may_have_given(&recipients, value) => {
                self.lucky_reward = lucky_reward;
                if self.scope.is_some() {
                    self.partial_refund = Coins(self.total.0 - value.0);
                    self.reached = Some(recipients);
                }
                self.status = if lucky_reward > Coins::ZERO || self.partial_refund_due() {
                    S::Applied
                } else {
                    S::Completed
                };
            }
            (
                S::Applied | S::Completed,
                O::Applied {
                    lucky_reward,
                    recipients,
                    ..
                },
            ) if lucky_reward == self.lucky_reward
                && self.reached().is_some_and(|r| r == recipients.as_slice()) => {}
            (S::Debited, O::Rejected(rejection)) if self.rejection.is_none() => {
                self.rejection = Some(rejection);
            }
            (S::Debited | S::Compensated, O::Rejected(_)) if self.rejection.is_some() => {}
            (S::Debited, O::Refunded { balance_after }) if self.rejection.is_some() => {
                self.status = S::Compensated;
                self.balance_after = Some(balance_after);
            }
            (S::Compensated, O::Refunded { .. }) => {}
            (S::Applied, O::Refunded { balance_after }) if self.partial_refund_due() => {
                self.partial_refunded = true;
                self.balance_after = Some(balance_after);
                if self.lucky_reward == Coins::ZERO {
                    self.status = S::Completed;
                }
            }
            (S::Applied | S::Completed, O::Refunded { .. }) if self.partial_refunded => {}
            (S::Applied, O::RewardCredited { balance_after }) if !self.partial_refund_due() => {
                self.status = S::Completed;
                self.balance_after = Some(balance_after);
            }
            (S::Completed, O::RewardCredited { .. }) if self.lucky_reward > Coins::ZERO => {}
            (from, outcome) => {
                return Err(InvalidTransition {
                    order_id: self.order_id.clone(),
                    from,
                    outcome: outcome.name(),
                });
            }
        }
        Ok(())
    }

    /// Whether a batch gift's partial refund is owed and not credited yet.
    fn partial_refund_due(&self) -> bool {
        self.partial_refund > Coins::ZERO && !self.partial_refunded
    }

    /// Whether the room may have given this order to `recipients` for `value`: a gift to its
    /// listed recipients at its total, or a batch gift to at most as many as it paid for, at
    /// no more than its total.
    fn may_have_given(&self, recipients: &[UserId], value: Coins) -> bool {
        match self.scope {
            None => recipients == self.recipients.as_slice() && value == self.total,
            Some(_) => {
                !recipients.is_empty()
                    && recipients.len() <= self.recipients.len()
                    && Coins::ZERO <= value
                    && value <= self.total
            }
        }
    }

    fn fail(&mut self, reason: FailReason, balance: Option<Coins>) {
        self.status = OrderStatus::Failed;
        self.fail_reason = Some(reason);
        self.balance_after = balance;
    }
}

/// Whether `coins` is zero (a field left out of JSON then).
fn is_zero(coins: &Coins) -> bool {
    *coins == Coins::ZERO
}

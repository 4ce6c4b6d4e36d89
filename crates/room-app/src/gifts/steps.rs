//! The saga's steps: debit the wallet, apply the gift in the room, refund on a definite
//! rejection, credit a lucky reward; each one idempotent, each outcome stored conditional on
//! the status last stored.

use room_domain::{Actor, Coins, Event, GiftOrder, SagaOutcome, SagaStep};

use super::command::gift_apply_command;
use super::saga::GiftSaga;
use crate::error::{Error, Result};
use crate::ports::{CreditKind, DebitStatus};

impl GiftSaga {
    /// Takes steps until the order is finished or a step's outcome is unknown.
    ///
    /// A debit is not stored in the order: until the room answers, the order stays PENDING
    /// (DESIGN §5), and whoever settles a PENDING order asks the wallet whether the debit
    /// happened. That saves a write transaction per gift. Every other outcome is stored,
    /// conditional on the status last stored.
    pub(super) async fn drive(&self, mut order: GiftOrder) -> Result<GiftOrder> {
        let mut stored = order.status;
        loop {
            let step = order.next_step();
            if step == SagaStep::Done {
                return Ok(order);
            }
            let outcome = match self.take_step(&order, step).await {
                Err(Error::OrderSettled(_)) => {
                    // A drive on another node recorded the room's refusal (or ended the
                    // order) while this one applied it: the room did not apply it, and the
                    // stored order says what comes next.
                    order = self
                        .orders
                        .get(&order.sender, &order.order_id)
                        .await?
                        .ok_or_else(|| Error::corrupt("gift order vanished"))?;
                    stored = order.status;
                    if step == SagaStep::Apply && order.next_step() == SagaStep::Apply {
                        // The room answered a repeat without the gift's event, and no drive
                        // stored what came of it: nothing proves either way yet.
                        return Err(Error::Unavailable(format!(
                            "the outcome of gift order {} is not known yet",
                            order.order_id
                        )));
                    }
                    continue;
                }
                outcome => outcome?,
            };
            let (applied, debited) = (
                matches!(outcome, SagaOutcome::Applied { .. }),
                matches!(outcome, SagaOutcome::Debited { .. }),
            );
            order.record(outcome).map_err(|e| {
                tracing::error!(error = %e, "gift order contradicts the wallet or the room");
                Error::corrupt(e)
            })?;
            if applied {
                // The cell's commit already stored the applied order in the same transaction.
                stored = order.status;
                continue;
            }
            if debited {
                continue;
            }
            match self.orders.update(&order, stored).await {
                Ok(()) => stored = order.status,
                Err(Error::Conflict(_)) => {
                    // A drive on another node moved it on: continue from the stored state
                    // (every step is idempotent).
                    order = self
                        .orders
                        .get(&order.sender, &order.order_id)
                        .await?
                        .ok_or_else(|| Error::corrupt("gift order vanished"))?;
                    stored = order.status;
                }
                Err(error) => return Err(error),
            }
        }
    }

    async fn take_step(&self, order: &GiftOrder, step: SagaStep) -> Result<SagaOutcome> {
        match step {
            SagaStep::Debit { amount } => {
                let op = order.wallet_op_id();
                match self.wallet.debit(&op, &order.sender, amount).await {
                    Ok(balance_after) => Ok(SagaOutcome::Debited { balance_after }),
                    // A refused debit leaves no trace in the wallet; a concurrent drive of the
                    // same order could still debit after a top-up. Void the operation before
                    // the order is FAILED, so the refusal is final.
                    Err(Error::InsufficientFunds { balance }) => {
                        Ok(match self.settle_debit(order, amount).await? {
                            Some(balance_after) => SagaOutcome::Debited { balance_after },
                            None => SagaOutcome::InsufficientFunds { balance },
                        })
                    }
                    // The operation was voided: a drive found it never debited (a refused
                    // debit, or recovery) and failed to store that. It never will be debited:
                    // the order fails now, as recovery would fail it later. (Debited under
                    // this id for another user or amount, the repeat conflicts again.)
                    Err(Error::Conflict(_)) => Ok(match self.settle_debit(order, amount).await? {
                        Some(balance_after) => SagaOutcome::Debited { balance_after },
                        None => SagaOutcome::NotDebited {
                            balance: self.wallet.balance(&order.sender).await?,
                        },
                    }),
                    Err(error) => Err(error),
                }
            }
            SagaStep::Apply => {
                let command = gift_apply_command(order);
                match self
                    .runtime
                    .execute(&order.room_id, command, Actor::System, Some(order.clone()))
                    .await
                {
                    Ok(reply) => {
                        // The gift's own event; a reply from another node holds only it.
                        let sent = reply.events.iter().find_map(|stored| match &stored.event {
                            Event::RoomGiftSent(gift)
                                if gift.order_id == order.order_id
                                    && gift.sender == order.sender =>
                            {
                                Some(gift)
                            }
                            _ => None,
                        });
                        match sent {
                            Some(gift) => Ok(SagaOutcome::Applied {
                                lucky_reward: gift.lucky.map(|l| l.reward).unwrap_or_default(),
                                recipients: gift.recipients.clone(),
                                value: gift.total_value,
                            }),
                            // A repeat whose events the log no longer holds: the commit that
                            // applied it stored the order, which says what came of it.
                            None => Err(Error::OrderSettled(order.order_id.clone())),
                        }
                    }
                    Err(Error::Rejected(rejection)) => Ok(SagaOutcome::Rejected(rejection)),
                    // Timeouts, lost ownership, overload: the gift may or may not be applied.
                    // The order stays DEBITED and is retried; never compensated on this.
                    Err(error) => Err(error),
                }
            }
            SagaStep::Refund { amount } => {
                let balance_after = self.credit_owed(order, CreditKind::Refund, amount).await?;
                metrics::counter!("room_gift_refunds_total").increment(1);
                Ok(SagaOutcome::Refunded { balance_after })
            }
            SagaStep::CreditLuckyReward { amount } => {
                let balance_after = self
                    .credit_owed(order, CreditKind::LuckyReward, amount)
                    .await?;
                Ok(SagaOutcome::RewardCredited { balance_after })
            }
            SagaStep::Done => Err(Error::corrupt("no step to take")),
        }
    }

    /// Settles for good the order's debit of `amount`, whose outcome is unknown: the balance
    /// after it if it happened (repeating it under its operation id moves nothing and answers
    /// the first balance after), `None` if it did not, and now never can (the operation is
    /// void).
    pub(super) async fn settle_debit(
        &self,
        order: &GiftOrder,
        amount: Coins,
    ) -> Result<Option<Coins>> {
        let op = order.wallet_op_id();
        Ok(match self.wallet.settle_debit(&op).await? {
            DebitStatus::Debited => Some(self.wallet.debit(&op, &order.sender, amount).await?),
            DebitStatus::Void => None,
        })
    }

    /// Credits what the order owes its sender (a refund, a lucky reward). The coins moved
    /// already, so the order cannot end without this credit: a refusal from the wallet (a
    /// balance that would overflow) is no answer to the request. It is logged, counted under
    /// `room_gift_credits_refused_total`, and answered as retryable; the order stays where it
    /// is and recovery tries again.
    async fn credit_owed(
        &self,
        order: &GiftOrder,
        kind: CreditKind,
        amount: Coins,
    ) -> Result<Coins> {
        let op = order.wallet_op_id();
        match self.wallet.credit(&op, kind, &order.sender, amount).await {
            Err(error) if !error.is_retryable() => {
                tracing::error!(
                    order_id = %order.order_id,
                    sender = %order.sender,
                    ?kind,
                    amount = amount.0,
                    error = %error,
                    "the wallet refused a credit a gift order owes; it stays owed"
                );
                metrics::counter!("room_gift_credits_refused_total").increment(1);
                Err(Error::Unavailable(format!(
                    "the credit order {op} owes was refused ({error}); it is retried"
                )))
            }
            other => other,
        }
    }
}

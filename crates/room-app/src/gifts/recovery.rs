//! Recovery: the pass that settles the orders a crash (or a retryable failure) left
//! unfinished.

use room_domain::{GiftOrder, OrderStatus, SagaOutcome, SagaStep, Timestamp};

use super::saga::GiftSaga;
use crate::error::{Error, Result};
use crate::ports::OrderCursor;

impl GiftSaga {
    /// Settles orders unfinished since before `before`: a PENDING order is applied if the
    /// wallet debited it and FAILED if not (its operation id is voided so a late debit cannot
    /// land, and the sender's balance at that moment is stored for its answer); a DEBITED one
    /// is applied or, on a definite rejection, refunded; an APPLIED one gets its reward.
    ///
    /// One call walks every unfinished order, oldest first, in pages of `page` orders, so
    /// orders that keep failing (a debit whose outcome the wallet cannot tell yet, a room this
    /// node does not own) never hide newer ones. An error on one order is counted in the report
    /// and the walk goes on; it stops early when the service is shutting down, and ends with an
    /// error only when the orders cannot be listed.
    ///
    /// The gauge `room_gift_orders_overdue` is set to the orders the walk found and left
    /// unfinished (left to their room's owner, deferred or failed): orders older than `before`
    /// that are still not final.
    pub async fn recover(&self, before: Timestamp, page: u32) -> Result<RecoveryReport> {
        let page = page.max(1);
        let mut report = RecoveryReport::default();
        let mut after = None;
        'walk: loop {
            let orders = self.orders.list_unfinished(before, after, page).await?;
            let last_page = orders.len() < page as usize;
            after = orders.last().map(OrderCursor::of);
            for order in orders {
                report.examined += 1;
                // The owner settles its rooms' orders: this node neither takes the room nor
                // races the owner's own pass.
                match self.runtime.leaves_to_owner(&order.room_id).await {
                    Ok(true) => {
                        report.elsewhere += 1;
                        metrics::counter!("room_background_left_to_owner_total", "worker" => "gift_recovery").increment(1);
                        continue;
                    }
                    Ok(false) => {}
                    Err(error) => {
                        tracing::info!(error = %error, "gift recovery will retry");
                        report.deferred += 1;
                        continue;
                    }
                }
                match self.recover_one(order).await {
                    Ok(true) => report.settled += 1,
                    Ok(false) => {}
                    Err(Error::Cancelled) => {
                        // The service is stopping: the rest waits for the next start.
                        report.deferred += 1;
                        break 'walk;
                    }
                    Err(error) if error.is_retryable() => {
                        tracing::info!(error = %error, "gift recovery will retry");
                        report.deferred += 1;
                    }
                    Err(error) => {
                        tracing::error!(error = %error, "gift recovery failed");
                        report.failed += 1;
                    }
                }
            }
            if last_page {
                break;
            }
        }
        metrics::counter!("room_gift_recovered_total").increment(report.settled);
        metrics::gauge!("room_gift_orders_overdue")
            .set(report.examined.saturating_sub(report.settled) as f64);
        Ok(report)
    }

    /// Drives one unfinished order as far as it goes; returns whether it is now finished.
    #[tracing::instrument(skip_all, fields(order_id = %listed.order_id))]
    async fn recover_one(&self, listed: GiftOrder) -> Result<bool> {
        let key = (listed.sender.clone(), listed.order_id.clone());
        let Some(_order_guard) = self.order_locks.lock_bounded(&key).await else {
            // Requests for the order are driving it: the next pass looks again.
            return Err(Error::OrderInProgress(listed.order_id.clone()));
        };
        // The listing may be stale: a request for the order may have moved it on.
        let Some(mut order) = self.orders.get(&listed.sender, &listed.order_id).await? else {
            return Err(Error::corrupt("gift order vanished"));
        };
        if order.status.is_terminal() {
            return Ok(true);
        }
        if order.status == OrderStatus::Pending {
            let SagaStep::Debit { amount } = order.next_step() else {
                return Err(Error::corrupt("a PENDING order owes no debit"));
            };
            let outcome = match self.settle_debit(&order, amount).await? {
                Some(balance_after) => SagaOutcome::Debited { balance_after },
                // Kept in the order, like a refused debit's balance: every repeat of the order
                // is answered with the balance seen when it failed.
                None => SagaOutcome::NotDebited {
                    balance: self.wallet.balance(&order.sender).await?,
                },
            };
            order.record(outcome).map_err(Error::corrupt)?;
            match self.orders.update(&order, OrderStatus::Pending).await {
                Ok(()) => {}
                // A request for the same order moved it on meanwhile: it is that request's.
                Err(Error::Conflict(_)) => return Ok(false),
                Err(error) => return Err(error),
            }
        }
        let turn = self.lucky_turn(&order).await?;
        let driven = self.drive_in_turn(order, turn.as_ref()).await;
        self.end_turn(turn).await;
        Ok(driven?.status.is_terminal())
    }
}

/// What one recovery pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Orders looked at.
    pub examined: u64,
    /// Orders brought to a final state.
    pub settled: u64,
    /// Orders left for the next pass (a retryable error).
    pub deferred: u64,
    /// Orders that need a person (contradicting records).
    pub failed: u64,
    /// Orders of rooms another live node runs, left to that node's recovery.
    pub elsewhere: u64,
}

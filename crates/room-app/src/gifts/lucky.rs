//! Lucky gifts take turns: one sender's lucky gifts are driven one at a time across the
//! cluster, so that each one's balance after follows the one before.

use room_domain::GiftOrder;

use super::saga::GiftSaga;
use crate::error::{Error, Result};

/// How long a lucky gift waits for its sender's lucky gift under way on another node.
pub const LUCKY_TURN_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// A sender's turn to drive a lucky gift: this node's lock of the sender and the
/// cluster-wide one.
pub(super) struct LuckyTurn {
    _local: tokio::sync::OwnedMutexGuard<()>,
    name: String,
    token: String,
}

impl GiftSaga {
    /// Waits for the sender's turn to drive a lucky gift: the lucky gifts of one sender are
    /// driven one at a time, whichever node each lands on, so that each one's balance after
    /// (reward included) follows the one before. Tasks on this node queue in-process; the one
    /// at the head takes the cluster-wide lock ([`Lease::try_lock`](crate::ports::Lease)).
    /// After [`LUCKY_TURN_WAIT`] without it the request is answered as retryable: the order
    /// stays where it is (nothing moved yet for this drive).
    pub(super) async fn lucky_turn(&self, order: &GiftOrder) -> Result<Option<LuckyTurn>> {
        if !order.gift.lucky || order.status.is_terminal() {
            return Ok(None);
        }
        let local = self.lucky_locks.lock(&order.sender).await;
        let name = format!("lucky:{}", order.sender);
        let deadline = tokio::time::Instant::now() + LUCKY_TURN_WAIT;
        let mut pause = std::time::Duration::from_millis(2);
        loop {
            if let Some(token) = self.runtime.lease().try_lock(&name).await? {
                return Ok(Some(LuckyTurn {
                    _local: local,
                    name,
                    token,
                }));
            }
            if tokio::time::Instant::now() + pause > deadline {
                metrics::counter!("room_gift_lucky_turn_timeouts_total").increment(1);
                return Err(Error::Unavailable(format!(
                    "a lucky gift of {} is under way on another node; retry with the same \
                     order_id",
                    order.sender
                )));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(std::time::Duration::from_millis(50));
        }
    }

    /// Drives `order`, within a lucky turn when `turn` is one: then the drive is cut at half
    /// the lock's TTL (the lease TTL), well before the lock can expire and let another drive
    /// of the sender take its turn beside this one. A drive cut short ends nothing: like a
    /// timeout, its outcome is unknown, the order stays where storage has it, and the client
    /// (same `order_id`) or recovery drives it again (`room_gift_lucky_turn_overruns_total`).
    pub(super) async fn drive_in_turn(
        &self,
        order: GiftOrder,
        turn: Option<&LuckyTurn>,
    ) -> Result<GiftOrder> {
        if turn.is_none() {
            return self.drive(order).await;
        }
        let sender = order.sender.clone();
        let bound = self.runtime.lease_ttl() / 2;
        match tokio::time::timeout(bound, self.drive(order)).await {
            Ok(driven) => driven,
            Err(_) => {
                metrics::counter!("room_gift_lucky_turn_overruns_total").increment(1);
                tracing::warn!(sender = %sender, bound = ?bound, "a lucky gift's drive outlasted its turn; cut short");
                Err(Error::Unavailable(format!(
                    "the lucky gift of {sender} took longer than its turn; retry with the same \
                     order_id"
                )))
            }
        }
    }

    /// Ends a turn [`GiftSaga::lucky_turn`] gave. A release that fails leaves the lock to
    /// expire with the lease TTL: the sender's next lucky gift waits until then at most.
    pub(super) async fn end_turn(&self, turn: Option<LuckyTurn>) {
        let Some(turn) = turn else { return };
        if let Err(error) = self.runtime.lease().unlock(&turn.name, &turn.token).await {
            tracing::warn!(%error, lock = %turn.name, "a lucky turn was not released; it expires");
        }
    }
}

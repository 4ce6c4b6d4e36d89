//! The gift saga orchestrator (DESIGN §5): debit the wallet, apply the gift in the room, refund
//! on a definite rejection, credit a lucky reward; and the recovery that settles orders a crash
//! left unfinished.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use room_domain::{
    Actor, ApplyGift, Coins, Command, CommandId, CommandKind, Event, GiftId, GiftOrder,
    LuckyOutcome, OrderId, OrderKeys, OrderStatus, Rejection, RoomId, RoomStatus, SagaOutcome,
    SagaStep, Timestamp, UserId,
};
use serde::Serialize;

use crate::cell::CellRuntime;
use crate::ports::{
    CatalogGift, ClockRef, CreditKind, DebitStatus, GiftCatalogRef, GiftOrdersRef, IdGenRef,
    OrderCursor, WalletRef,
};
use crate::{Error, Result};

/// A client's request to send a gift.
#[derive(Debug, Clone)]
pub struct SendGift {
    /// The room.
    pub room_id: RoomId,
    /// Who pays.
    pub sender: UserId,
    /// The client's idempotency key.
    pub order_id: OrderId,
    /// The catalog gift.
    pub gift_id: GiftId,
    /// Units per recipient.
    pub count: u32,
    /// Who receives.
    pub recipients: Vec<UserId>,
}

/// The answer to a gift request; the same for every repeat of one order id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GiftReceipt {
    /// The order.
    pub order_id: OrderId,
    /// Where it ended (or stands, if still unfinished).
    pub status: OrderStatus,
    /// The sender's balance after the order, lucky reward included.
    pub coin_balance_after: Coins,
    /// The lucky draw, for lucky gifts that were applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lucky: Option<LuckyOutcome>,
    /// Why the room refused it, for FAILED and COMPENSATED orders.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejection: Option<Rejection>,
    /// Why a FAILED order failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fail_reason: Option<room_domain::FailReason>,
}

/// Runs gift orders through the saga.
pub struct GiftSaga {
    runtime: CellRuntime,
    orders: GiftOrdersRef,
    wallet: WalletRef,
    catalog: GiftCatalogRef,
    clock: ClockRef,
    ids: IdGenRef,
    /// Per-user locks serializing lucky gifts of one sender.
    lucky_locks: KeyedLocks<UserId>,
    /// Per-order locks, by sender and order id: the drives of one order on this node (a
    /// client's repeats, recovery) take turns, and each reads the order only once it holds the
    /// lock, so none acts on a state another has moved on (such as applying a gift whose refund
    /// is under way). At most [`ORDER_LOCK_QUEUE`] tasks hold or wait for one order's lock.
    order_locks: KeyedLocks<(UserId, OrderId)>,
    /// Catalog entries read recently: the catalog changes rarely and every gift reads it.
    catalog_cache: Mutex<HashMap<GiftId, (Option<CatalogGift>, std::time::Instant)>>,
    /// Orders that finished on this node lately: a repeat of one is answered from memory,
    /// without a read, a lock or a write.
    finished: Mutex<FinishedOrders>,
}

/// The most finished orders a node remembers for repeats (a few hundred bytes each).
pub const FINISHED_ORDERS_REMEMBERED: usize = 16_384;

/// Finished orders by sender and order id, the oldest forgotten first.
#[derive(Default)]
struct FinishedOrders {
    orders: HashMap<(UserId, OrderId), Arc<GiftOrder>>,
    arrival: std::collections::VecDeque<(UserId, OrderId)>,
}

impl FinishedOrders {
    fn get(&self, sender: &UserId, order_id: &OrderId) -> Option<Arc<GiftOrder>> {
        // The tuple key needs owned parts; ids are reference counted, so this is cheap.
        self.orders
            .get(&(sender.clone(), order_id.clone()))
            .cloned()
    }

    fn remember(&mut self, order: &GiftOrder) {
        let key = (order.sender.clone(), order.order_id.clone());
        if self
            .orders
            .insert(key.clone(), Arc::new(order.clone()))
            .is_none()
        {
            self.arrival.push_back(key);
        }
        while self.arrival.len() > FINISHED_ORDERS_REMEMBERED {
            if let Some(oldest) = self.arrival.pop_front() {
                self.orders.remove(&oldest);
            }
        }
    }
}

/// The most tasks that may hold or wait for the lock of one order on one node. A client that
/// resends one order in a loop cannot queue more: the request beyond is answered
/// [`Error::OrderInProgress`] (retryable), and moves nothing.
pub const ORDER_LOCK_QUEUE: usize = 4;

/// How long a lucky gift waits for its sender's lucky gift under way on another node.
pub const LUCKY_TURN_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// A sender's turn to drive a lucky gift: this node's lock of the sender and the
/// cluster-wide one.
struct LuckyTurn {
    _local: tokio::sync::OwnedMutexGuard<()>,
    name: String,
    token: String,
}

/// How long a cached catalog entry is used. A change made on this node is seen at once
/// ([`GiftSaga::forget_catalog`]); one made on another node within this time.
const CATALOG_CACHE_TTL: std::time::Duration = std::time::Duration::from_secs(5);

impl GiftSaga {
    /// A saga over these ports.
    pub fn new(
        runtime: CellRuntime,
        orders: GiftOrdersRef,
        wallet: WalletRef,
        catalog: GiftCatalogRef,
        clock: ClockRef,
        ids: IdGenRef,
    ) -> Self {
        GiftSaga {
            runtime,
            orders,
            wallet,
            catalog,
            clock,
            ids,
            lucky_locks: KeyedLocks::default(),
            order_locks: KeyedLocks::default(),
            catalog_cache: Mutex::new(HashMap::new()),
            finished: Mutex::new(FinishedOrders::default()),
        }
    }

    /// An enabled catalog gift, from the cache when fresh.
    async fn catalog_gift(&self, gift_id: &GiftId) -> Result<Option<CatalogGift>> {
        let now = std::time::Instant::now();
        {
            let cache = self.catalog_cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((gift, at)) = cache.get(gift_id)
                && now.duration_since(*at) < CATALOG_CACHE_TTL
            {
                return Ok(gift.clone());
            }
        }
        let gift = self.catalog.get(gift_id).await?.filter(|gift| gift.enabled);
        let mut cache = self.catalog_cache.lock().unwrap_or_else(|e| e.into_inner());
        // Ids come from clients: keep the cache from growing with made-up ones.
        if cache.len() >= 4096 {
            cache.clear();
        }
        cache.insert(gift_id.clone(), (gift.clone(), now));
        Ok(gift)
    }

    /// Drops cached catalog entries, after a change to the catalog.
    pub fn forget_catalog(&self) {
        self.catalog_cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Sends a gift: creates the order (or finds it, for a repeat), drives it as far as it
    /// goes, and answers with its state. A retryable error leaves the order for a retry or for
    /// recovery; it never loses or doubles a coin.
    ///
    /// An order is the sender's: another sender's order with the same order id is another
    /// order. A repeat of a finished order is answered from the stored order alone (no write,
    /// no wallet, no room). A repeat of an unfinished one waits for the drive under way on
    /// this node, unless [`ORDER_LOCK_QUEUE`] requests for the order are there already: then
    /// it is answered [`Error::OrderInProgress`].
    #[tracing::instrument(skip_all, fields(room_id = %request.room_id, order_id = %request.order_id), err(level = "debug"))]
    pub async fn send(&self, request: SendGift) -> Result<GiftReceipt> {
        if request
            .order_id
            .as_str()
            .starts_with(crate::SYSTEM_ID_PREFIX)
        {
            // Orders stored before orders were scoped by sender were applied under their order
            // id: it must not claim a system command id. The rule stays, so that the answer to
            // such an id does not change.
            return Err(Error::Invalid(format!(
                "order ids starting with {:?} are reserved",
                crate::SYSTEM_ID_PREFIX
            )));
        }
        let finished = self
            .finished
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&request.sender, &request.order_id);
        if let Some(order) = finished {
            // A finished order never changes: no read, no lock, no write.
            same_request(&order, &request)?;
            return self.receipt(&order).await;
        }
        let key = (request.sender.clone(), request.order_id.clone());
        let Some((_order_guard, waited)) = self.order_locks.lock_bounded(&key).await else {
            metrics::counter!("room_gift_orders_busy_total").increment(1);
            return Err(Error::OrderInProgress(request.order_id.clone()));
        };
        let order = if waited {
            // The request that held the lock may have created the order or moved it on.
            match self.orders.get(&request.sender, &request.order_id).await? {
                Some(order) => {
                    same_request(&order, &request)?;
                    order
                }
                None => self.place(&request).await?,
            }
        } else {
            // Nobody held the lock: the order is most likely new, and a new order costs no
            // read before its create. A repeat of an order this node does not remember (it
            // finished long ago, on another node, or before a restart) is found by the create,
            // which then writes nothing, and the drive goes on from where it stands.
            self.place(&request).await?
        };
        let turn = self.lucky_turn(&order).await?;
        let driven = self.drive(order).await;
        self.end_turn(turn).await;
        let order = driven?;
        if order.status.is_terminal() {
            self.finished
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remember(&order);
        }
        self.receipt(&order).await
    }

    /// The most tasks ever seen holding or waiting for the lock of one order on this node:
    /// never more than [`ORDER_LOCK_QUEUE`].
    pub fn order_lock_queue_peak(&self) -> usize {
        self.order_locks.peak()
    }

    /// Validates the request against the rules, the catalog and the room, then stores a
    /// PENDING order, or finds the stored order of a repeat. A new request the pre-check
    /// refuses is answered with the rejection and stores nothing: no coin moved.
    ///
    /// Called for an order [`GiftSaga::send`] did not find; another node may create it
    /// meanwhile, so the stored order is looked up again when the pre-check refuses (a repeat
    /// of an order that went through must still get its first answer, though the room may
    /// have closed since), and the create finds one it did not make.
    async fn place(&self, request: &SendGift) -> Result<GiftOrder> {
        let checked = match self.catalog_gift(&request.gift_id).await? {
            Some(gift) => {
                let apply = ApplyGift {
                    order_id: request.order_id.clone(),
                    sender: request.sender.clone(),
                    recipients: request.recipients.clone(),
                    gift: gift.snapshot(),
                    count: request.count,
                    lucky_draw: self.ids.random(),
                };
                match self.pre_check(request, &apply).await? {
                    None => Ok(apply),
                    Some(rejection) => Err(Error::Rejected(rejection)),
                }
            }
            None => Err(Error::GiftNotFound(request.gift_id.clone())),
        };
        // A refusal answers only a new order: a repeat of a stored one gets the stored answer,
        // whatever changed since (the room, the sender's presence, the catalog's price).
        let order = checked.and_then(|apply| {
            GiftOrder::new(request.room_id.clone(), &apply, self.clock.now())
                .ok_or(Error::Rejected(Rejection::AmountOverflow))
        });
        let order = match order {
            Ok(order) => order,
            Err(refusal) => {
                return match self.orders.get(&request.sender, &request.order_id).await? {
                    Some(existing) => {
                        same_request(&existing, request)?;
                        Ok(existing)
                    }
                    None => Err(refusal),
                };
            }
        };
        let (stored, created) = self.orders.create_or_get(&order).await?;
        if !created {
            same_request(&stored, request)?;
        }
        metrics::counter!("room_gift_orders_total").increment(u64::from(created));
        Ok(stored)
    }

    /// The checks that need no money to move: gift count and recipients within the rules, the
    /// room open, the sender in it. The recipients' membership is the room's to check when it
    /// applies the gift (they may leave meanwhile: then the order is refunded). It peeks: the
    /// room decides all of it again when it applies the gift, so a batch still being committed
    /// may answer it, and a hot room's gifts do not wait for each other's commits here.
    async fn pre_check(&self, request: &SendGift, apply: &ApplyGift) -> Result<Option<Rejection>> {
        if let Err(rejection) = apply.check_shape(self.runtime.rules()) {
            return Ok(Some(rejection));
        }
        let crate::ports::Membership {
            status,
            member: sender_present,
            ..
        } = self
            .runtime
            .membership(
                &request.room_id,
                &request.sender,
                crate::ports::ReadKind::Newest,
            )
            .await?;
        Ok(match status {
            RoomStatus::Open if !sender_present => Some(Rejection::NotAMember {
                user: request.sender.clone(),
            }),
            RoomStatus::Open => None,
            RoomStatus::Absent => Some(Rejection::RoomNotFound),
            RoomStatus::Closed => Some(Rejection::RoomClosed),
        })
    }

    /// Waits for the sender's turn to drive a lucky gift: the lucky gifts of one sender are
    /// driven one at a time, whichever node each lands on, so that each one's balance after
    /// (reward included) follows the one before. Tasks on this node queue in-process; the one
    /// at the head takes the cluster-wide lock ([`Lease::try_lock`](crate::ports::Lease)).
    /// After [`LUCKY_TURN_WAIT`] without it the request is answered as retryable: the order
    /// stays where it is (nothing moved yet for this drive).
    async fn lucky_turn(&self, order: &GiftOrder) -> Result<Option<LuckyTurn>> {
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

    /// Ends a turn [`GiftSaga::lucky_turn`] gave. A release that fails leaves the lock to
    /// expire with the lease TTL: the sender's next lucky gift waits until then at most.
    async fn end_turn(&self, turn: Option<LuckyTurn>) {
        let Some(turn) = turn else { return };
        if let Err(error) = self.runtime.lease().unlock(&turn.name, &turn.token).await {
            tracing::warn!(%error, lock = %turn.name, "a lucky turn was not released; it expires");
        }
    }

    /// Takes steps until the order is finished or a step's outcome is unknown.
    ///
    /// A debit is not stored in the order: until the room answers, the order stays PENDING
    /// (DESIGN §5), and whoever settles a PENDING order asks the wallet whether the debit
    /// happened. That saves a write transaction per gift. Every other outcome is stored,
    /// conditional on the status last stored.
    async fn drive(&self, mut order: GiftOrder) -> Result<GiftOrder> {
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
                        let lucky_reward = reply
                            .events
                            .iter()
                            .find_map(|stored| match &stored.event {
                                Event::RoomGiftSent(gift) => Some(gift.lucky.map(|l| l.reward)),
                                _ => None,
                            })
                            .flatten()
                            .unwrap_or_default();
                        Ok(SagaOutcome::Applied { lucky_reward })
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
    async fn settle_debit(&self, order: &GiftOrder, amount: Coins) -> Result<Option<Coins>> {
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

    async fn receipt(&self, order: &GiftOrder) -> Result<GiftReceipt> {
        let coin_balance_after = match order.balance_after {
            Some(balance) => balance,
            None => self.wallet.balance(&order.sender).await?,
        };
        let lucky = (order.gift.lucky
            && matches!(order.status, OrderStatus::Applied | OrderStatus::Completed))
        .then(|| LuckyOutcome {
            multiplier: u32::try_from(order.lucky_reward.0 / order.total.0.max(1))
                .unwrap_or(u32::MAX),
            reward: order.lucky_reward,
        });
        let rejection = order
            .rejection
            .clone()
            .or_else(|| match &order.fail_reason {
                Some(room_domain::FailReason::Rejected { rejection }) => Some(rejection.clone()),
                _ => None,
            });
        Ok(GiftReceipt {
            order_id: order.order_id.clone(),
            status: order.status,
            coin_balance_after,
            lucky,
            rejection,
            fail_reason: order.fail_reason.clone(),
        })
    }

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
        let driven = self.drive(order).await;
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

/// The id of the room command that applies `order`.
///
/// An order is its sender's, so its command id derives from the sender and the order id: two
/// senders' orders with one order id are two gifts, in one room too. It is
/// [`crate::SYSTEM_ID_PREFIX`]`gift-`, the order's creation time in milliseconds as 12 hex
/// digits, `-`, and 32 hex digits (128 bits) of the SHA-256 of the sender and the order id:
/// 54 characters, within the id length rule. The time comes first so that a room's commands
/// are stored in about the order they arrive: a hash alone would put each one on a random page
/// of the room's command log, and a group commit would rewrite many pages instead of a few.
/// The stored order keeps its creation time, so every drive of one order names the same
/// command. No other command can take it: clients' order ids may not start with the system
/// prefix, and no system command uses this form. An order stored before
/// ([`OrderKeys::OrderId`]) was applied under its order id, and keeps it, so its stored
/// command still answers its repeats.
pub fn gift_command_id(order: &GiftOrder) -> CommandId {
    match order.keys {
        OrderKeys::OrderId => order.order_id.clone().into(),
        OrderKeys::SenderAndOrderId => {
            // The sender and the order id, each behind its length: independent of how the
            // wallet names the order's operations.
            let digest = crate::digest::length_prefixed_sha256([
                order.sender.as_str().as_bytes(),
                order.order_id.as_str().as_bytes(),
            ]);
            let mut id = String::with_capacity(GIFT_COMMAND_ID_CHARS);
            id.push_str(crate::SYSTEM_ID_PREFIX);
            id.push_str("gift-");
            // Each gift names its command once per drive: hex digits by hand, not through
            // the formatter.
            let time = u64::try_from(order.created_at.0).unwrap_or(0);
            if time < 1 << 48 {
                crate::digest::push_hex(&mut id, &time.to_be_bytes()[2..]);
            } else {
                // Past the year 10889: as many digits as it takes.
                id.push_str(&format!("{time:012x}"));
            }
            id.push('-');
            crate::digest::push_hex(&mut id, &digest[..16]);
            CommandId::new(id).expect("hex digits with a short prefix are a valid id")
        }
    }
}

/// The length of a [`gift_command_id`] of an [`OrderKeys::SenderAndOrderId`] order.
const GIFT_COMMAND_ID_CHARS: usize = crate::SYSTEM_ID_PREFIX.len() + "gift-".len() + 12 + 1 + 32;

/// The command that applies `order` to its room, by the system: its
/// [`gift_command_id`] and its `ApplyGift`. Every drive of the order sends this same command,
/// so the room applies it once.
pub fn gift_apply_command(order: &GiftOrder) -> Command {
    Command::new(
        gift_command_id(order),
        CommandKind::ApplyGift(order.apply_command()),
    )
}

/// A repeated order id must name the same gift request.
fn same_request(order: &GiftOrder, request: &SendGift) -> Result<()> {
    let same = order.room_id == request.room_id
        && order.sender == request.sender
        && order.gift.gift_id == request.gift_id
        && order.count == request.count
        && order.recipients == request.recipients;
    if same {
        Ok(())
    } else {
        Err(Error::OrderIdReused(request.order_id.clone()))
    }
}

/// Async locks by key, created on first use. The map forgets locks nobody holds or waits for
/// once it grows, so made-up keys cannot make it grow without bound.
struct KeyedLocks<K> {
    locks: Mutex<HashMap<K, Arc<tokio::sync::Mutex<()>>>>,
    /// The most tasks seen holding or waiting for one key's lock by [`KeyedLocks::lock_bounded`].
    peak: AtomicUsize,
}

impl<K> Default for KeyedLocks<K> {
    fn default() -> Self {
        KeyedLocks {
            locks: Mutex::new(HashMap::new()),
            peak: AtomicUsize::new(0),
        }
    }
}

impl<K: std::hash::Hash + Eq + Clone> KeyedLocks<K> {
    /// Waits for the lock of `key`.
    async fn lock(&self, key: &K) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = {
            let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
            if locks.len() > 1024 {
                locks.retain(|_, lock| Arc::strong_count(lock) > 1);
            }
            locks.entry(key.clone()).or_default().clone()
        };
        lock.lock_owned().await
    }

    /// Waits for the lock of `key` unless [`ORDER_LOCK_QUEUE`] tasks hold or wait for it
    /// already (`None`). The flag says whether the lock was held when this call came.
    async fn lock_bounded(&self, key: &K) -> Option<(tokio::sync::OwnedMutexGuard<()>, bool)> {
        let lock = {
            let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
            if locks.len() > 1024 {
                locks.retain(|_, lock| Arc::strong_count(lock) > 1);
            }
            let lock = locks.entry(key.clone()).or_default();
            // Every holder and waiter keeps a clone, and clones are made only here, under the
            // map's mutex: the count cannot pass the bound (a guard dropped meanwhile only
            // lowers it).
            let queued = Arc::strong_count(lock) - 1;
            if queued >= ORDER_LOCK_QUEUE {
                return None;
            }
            self.peak.fetch_max(queued + 1, Ordering::Relaxed);
            lock.clone()
        };
        // A hint only: a lock taken in between makes this call wait though it says it did not.
        let held = lock.try_lock().is_err();
        Some((lock.lock_owned().await, held))
    }

    /// The most tasks seen holding or waiting for one key's lock.
    fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }
}

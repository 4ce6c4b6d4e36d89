//! The [`GiftSaga`]: how a gift request becomes an order (checked against the rules, the
//! catalog and the room before anything is stored), is driven once per order at a time on
//! this node, and is answered.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use room_domain::{
    ApplyGift, GiftId, GiftOrder, LuckyOutcome, OrderId, OrderStatus, Rejection, RoomStatus, UserId,
};

use super::finished::FinishedOrders;
use super::locks::KeyedLocks;
use super::request::{GiftReceipt, SendGift, same_request};
use crate::cell::CellRuntime;
use crate::error::{Error, Result};
use crate::ports::{
    BillingPoliciesRef, CatalogGift, ClockRef, GiftCatalogRef, GiftOrdersRef, IdGenRef, WalletRef,
};
use crate::profiles::Profiles;

/// Runs gift orders through the saga.
pub struct GiftSaga {
    pub(super) runtime: CellRuntime,
    pub(super) orders: GiftOrdersRef,
    pub(super) wallet: WalletRef,
    catalog: GiftCatalogRef,
    billing: BillingPoliciesRef,
    clock: ClockRef,
    ids: IdGenRef,
    /// Per-user locks serializing lucky gifts of one sender.
    pub(super) lucky_locks: KeyedLocks<UserId>,
    /// Per-order locks, by sender and order id: the drives of one order on this node (a
    /// client's repeats, recovery) take turns, and each reads the order only once it holds the
    /// lock, so none acts on a state another has moved on (such as applying a gift whose refund
    /// is under way). At most [`ORDER_LOCK_QUEUE`](crate::ORDER_LOCK_QUEUE) tasks hold or
    /// wait for one order's lock.
    pub(super) order_locks: KeyedLocks<(UserId, OrderId)>,
    /// Catalog entries read recently: the catalog changes rarely and every gift reads it.
    catalog_cache: Mutex<HashMap<GiftId, (Option<CatalogGift>, std::time::Instant)>>,
    /// The current billing policy version, read recently: every order records it.
    billing_cache: Mutex<Option<(Option<u64>, std::time::Instant)>>,
    /// Orders that finished on this node lately: a repeat of one is answered from memory,
    /// without a read, a lock or a write.
    finished: Mutex<FinishedOrders>,
    /// Where a new order's sender display comes from (none: orders carry none).
    profiles: Option<Arc<Profiles>>,
}

/// How long a cached catalog entry is used. A change made on this node is seen at once
/// ([`GiftSaga::forget_catalog`]); one made on another node within this time.
const CATALOG_CACHE_TTL: std::time::Duration = std::time::Duration::from_secs(5);

/// How long the cached current billing policy version is used. A change made on this node is
/// seen at once ([`GiftSaga::forget_billing`]); one made on another node within this time: an
/// order placed meanwhile records (and is billed under) the version before it.
const BILLING_CACHE_TTL: std::time::Duration = std::time::Duration::from_secs(5);

impl GiftSaga {
    /// A saga over these ports.
    pub fn new(
        runtime: CellRuntime,
        orders: GiftOrdersRef,
        wallet: WalletRef,
        catalog: GiftCatalogRef,
        billing: BillingPoliciesRef,
        clock: ClockRef,
        ids: IdGenRef,
    ) -> Self {
        GiftSaga {
            runtime,
            orders,
            wallet,
            catalog,
            billing,
            clock,
            ids,
            lucky_locks: KeyedLocks::default(),
            order_locks: KeyedLocks::default(),
            catalog_cache: Mutex::new(HashMap::new()),
            billing_cache: Mutex::new(None),
            finished: Mutex::new(FinishedOrders::default()),
            profiles: None,
        }
    }

    /// Makes new orders carry their sender's display fields from `profiles` (looked up
    /// through its cache when the order is placed, before anything reaches the room).
    pub fn set_profiles(&mut self, profiles: Arc<Profiles>) {
        self.profiles = Some(profiles);
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

    /// The current billing policy version (`None` while no policy is stored), from the cache
    /// when fresh.
    async fn billing_version(&self) -> Result<Option<u64>> {
        let now = std::time::Instant::now();
        if let Some((version, at)) = *self.billing_cache.lock().unwrap_or_else(|e| e.into_inner())
            && now.duration_since(at) < BILLING_CACHE_TTL
        {
            return Ok(version);
        }
        let version = self
            .billing
            .current_policy()
            .await?
            .map(|policy| policy.version);
        *self.billing_cache.lock().unwrap_or_else(|e| e.into_inner()) = Some((version, now));
        Ok(version)
    }

    /// Drops the cached billing policy version, after a change to the policy.
    pub fn forget_billing(&self) {
        *self.billing_cache.lock().unwrap_or_else(|e| e.into_inner()) = None;
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
    /// this node, unless [`ORDER_LOCK_QUEUE`](crate::ORDER_LOCK_QUEUE) requests for the order
    /// are there already: then it is answered [`Error::OrderInProgress`].
    #[tracing::instrument(skip_all, fields(room_id = %request.room_id, order_id = %request.order_id), err(level = "debug"))]
    pub async fn send(&self, request: SendGift) -> Result<GiftReceipt> {
        if request
            .order_id
            .as_str()
            .starts_with(crate::ids::SYSTEM_ID_PREFIX)
        {
            // Orders stored before orders were scoped by sender were applied under their order
            // id: it must not claim a system command id. The rule stays, so that the answer to
            // such an id does not change.
            return Err(Error::Invalid(format!(
                "order ids starting with {:?} are reserved",
                crate::ids::SYSTEM_ID_PREFIX
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
        let driven = self.drive_in_turn(order, turn.as_ref()).await;
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
    /// never more than [`ORDER_LOCK_QUEUE`](crate::ORDER_LOCK_QUEUE).
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
                let mut snapshot = gift.snapshot();
                // The order is billed under the policy current as it is placed.
                snapshot.billing_version = self.billing_version().await?;
                let mut apply = ApplyGift {
                    order_id: request.order_id.clone(),
                    sender: request.sender.clone(),
                    recipients: request.recipients.clone(),
                    gift: snapshot,
                    count: request.count,
                    lucky_draw: self.ids.random(),
                    scope: request.scope,
                };
                match self.pre_check(request, &mut apply).await? {
                    None => Ok(apply),
                    Some(rejection) => Err(Error::Rejected(rejection)),
                }
            }
            None => Err(Error::GiftNotFound(request.gift_id.clone())),
        };
        // A refusal answers only a new order: a repeat of a stored one gets the stored answer,
        // whatever changed since (the room, the sender's presence, the catalog's price).
        let display = match (&checked, &self.profiles) {
            (Ok(_), Some(profiles)) => profiles.display(&request.sender).await,
            _ => None,
        };
        let order = checked.and_then(|apply| {
            GiftOrder::new(request.room_id.clone(), &apply, self.clock.now())
                .map(|order| GiftOrder {
                    sender_display: display,
                    ..order
                })
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
    ///
    /// A batch gift's recipients are resolved here, from the room as it stands: the sender
    /// pays for them.
    async fn pre_check(
        &self,
        request: &SendGift,
        apply: &mut ApplyGift,
    ) -> Result<Option<Rejection>> {
        let rules = self.runtime.rules();
        let (status, sender_present) = match apply.scope {
            None => {
                if let Err(rejection) = apply.check_shape(&rules) {
                    return Ok(Some(rejection));
                }
                let crate::ports::Membership { status, member, .. } = self
                    .runtime
                    .membership(
                        &request.room_id,
                        &request.sender,
                        crate::ports::ReadKind::Newest,
                    )
                    .await?;
                (status, member)
            }
            Some(scope) => {
                if !(1..=rules.max_gift_count).contains(&apply.count) {
                    return Ok(Some(Rejection::InvalidGiftCount {
                        count: apply.count,
                        max: rules.max_gift_count,
                    }));
                }
                let crate::ports::BatchStanding {
                    status,
                    member,
                    recipients,
                } = self
                    .runtime
                    .batch_standing(
                        &request.room_id,
                        &request.sender,
                        scope,
                        rules.max_batch_recipients,
                    )
                    .await?;
                if status == RoomStatus::Open && member {
                    if recipients.is_empty() {
                        return Ok(Some(Rejection::NoRecipients));
                    }
                    apply.recipients = recipients;
                    if let Err(rejection) = apply.check_shape(&rules) {
                        return Ok(Some(rejection));
                    }
                }
                (status, member)
            }
        };
        Ok(match status {
            RoomStatus::Open if !sender_present => Some(Rejection::NotAMember {
                user: request.sender.clone(),
            }),
            RoomStatus::Open => None,
            RoomStatus::Absent => Some(Rejection::RoomNotFound),
            RoomStatus::Closed => Some(Rejection::RoomClosed),
        })
    }

    async fn receipt(&self, order: &GiftOrder) -> Result<GiftReceipt> {
        let coin_balance_after = match order.balance_after {
            Some(balance) => balance,
            None => self.wallet.balance(&order.sender).await?,
        };
        let lucky = (order.gift.lucky
            && matches!(order.status, OrderStatus::Applied | OrderStatus::Completed))
        .then(|| LuckyOutcome {
            multiplier: u32::try_from(order.lucky_reward.0 / order.spent().0.max(1))
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
            recipients: order.reached().map(<[UserId]>::to_vec),
            refunded: if order.partial_refunded {
                order.partial_refund
            } else {
                room_domain::Coins::ZERO
            },
            lucky,
            rejection,
            fail_reason: order.fail_reason.clone(),
        })
    }
}

//! What every test here builds on: a deterministic clock and id generator, a cell store that
//! counts, gates and fails commits on demand, and a [`World`] wiring the real runtime and
//! service over [`InMemoryStore`], with any port swapped for a mock.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;

use async_trait::async_trait;
use room_app::ports::{
    Activation, CatalogGift, CellStore, CellStoreRef, CommandRecord, CommitBatch, CreditKind,
    ForwardedCommand, Forwarder, GiftCatalog, GiftCatalogRef, GiftOrdersRef, IdGen, LeaseRef,
    Membership, Peer, ReadKind, StoredEvent, Wallet, WalletRef,
};
use room_app::testkit::InMemoryStore;
use room_app::{
    BroadcastMessenger, CellConfig, CellDeps, CellRuntime, CommandReply, Error, GiftSaga,
    LocalLease, LocalPasswordAttempts, LocalPresence, RemoteError, Result, RoomService, SendGift,
    ServicePorts,
};
use room_domain::{
    Actor, Coins, Command, CommandId, CommandKind, Event, GiftId, LuckyEntry, LuckyTable, OrderId,
    RocketLevel, RoomId, RoomRules, RoomState, Timestamp, UserId,
};
use room_testkit::ManualClock;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

pub use room_app::testkit::eventually;

/// 2025-11-30T01:00:00Z: far from a day boundary, so no test crosses midnight by accident.
pub const T0: Timestamp = Timestamp(1_764_460_800_000 + 3_600_000);

pub fn uid(name: &str) -> UserId {
    UserId::new(name).expect("valid user id")
}

pub fn rid(name: &str) -> RoomId {
    RoomId::new(name).expect("valid room id")
}

pub fn oid(name: &str) -> OrderId {
    OrderId::new(name).expect("valid order id")
}

pub fn cid(name: &str) -> CommandId {
    CommandId::new(name).expect("valid command id")
}

pub fn user(name: &str) -> Actor {
    Actor::user(uid(name))
}

/// Ids `id-1`, `id-2`, ... (after a prefix, when given) and a fixed sequence of well mixed
/// random values.
#[derive(Debug, Default)]
pub struct TestIds {
    ids: AtomicU64,
    draws: AtomicU64,
    prefix: String,
}

impl TestIds {
    /// Ids `{prefix}id-1`, `{prefix}id-2`, ...: the ids of one node among several, which
    /// must not make the same command ids as the others.
    pub fn with_prefix(prefix: &str) -> Self {
        TestIds {
            prefix: prefix.to_owned(),
            ..TestIds::default()
        }
    }
}

impl IdGen for TestIds {
    fn next_id(&self) -> String {
        let n = self.ids.fetch_add(1, Ordering::SeqCst) + 1;
        format!("{}id-{n}", self.prefix)
    }

    fn random(&self) -> u64 {
        // SplitMix64 over a counter: deterministic, yet every value differs.
        let n = self.draws.fetch_add(1, Ordering::SeqCst);
        let mut z = n.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// The rules of these tests: every lucky draw wins [`LUCKY_MULTIPLIER`] times the order value,
/// and a small rocket (100 fuel, 60 s countdown, 1000 coins for up to 5 winners).
pub fn rules() -> RoomRules {
    let rules = RoomRules {
        rocket_levels: vec![
            RocketLevel {
                fuel: 100,
                countdown_secs: 60,
                reward_pool: Coins(1_000),
                winners: 5,
                reward_cap: None,
            },
            RocketLevel {
                fuel: 1_000,
                countdown_secs: 60,
                reward_pool: Coins(2_000),
                winners: 5,
                reward_cap: None,
            },
        ],
        lucky: LuckyTable {
            entries: vec![LuckyEntry {
                multiplier: LUCKY_MULTIPLIER,
                weight: 1,
            }],
            expected_return_bp: LUCKY_MULTIPLIER * 10_000,
        },
        ..RoomRules::default()
    };
    rules.validate().expect("valid test rules");
    rules
}

/// What every lucky gift of these tests wins, in multiples of its value.
pub const LUCKY_MULTIPLIER: u32 = 3;

pub fn config() -> CellConfig {
    CellConfig {
        node_id: "node-a".into(),
        rules: Arc::new(rules()),
        ..CellConfig::default()
    }
}

/// The catalog of these tests.
pub fn catalog() -> Vec<CatalogGift> {
    let gift =
        |id: &str, price: i64, heat: i64, fuel: i64, lucky: bool, enabled: bool| CatalogGift {
            gift_id: GiftId::new(id).expect("valid gift id"),
            name: id.to_owned(),
            price: Coins(price),
            heat,
            fuel,
            lucky,
            enabled,
        };
    vec![
        gift("rose", 10, 10, 0, false, true),
        gift("clover", 10, 1, 0, true, true),
        gift("booster", 50, 5, 100, false, true),
        gift("gold-bar", i64::MAX / 2, 0, 0, false, true),
        gift("retired", 10, 10, 0, false, false),
    ]
}

/// How [`ProbeStore`] fails the next commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// No fault: the commit goes through (to fail a later one).
    Pass,
    /// Fails with [`Error::Unavailable`] and writes nothing.
    UnavailableBefore,
    /// Fails for good with [`Error::Internal`] (a statement the store refuses) and writes
    /// nothing.
    Refused,
    /// Writes the batch, then fails with [`Error::Unavailable`] (a lost acknowledgement).
    UnavailableAfterWrite,
}

/// A [`CellStore`] that delegates to another and records what the runtime asks of it. Its
/// commits can be held at a gate (until [`ProbeStore::open_gate`]) and failed on demand.
pub struct ProbeStore {
    inner: CellStoreRef,
    commit_calls: AtomicUsize,
    committed: Mutex<Vec<usize>>,
    gate: Mutex<Option<Arc<Semaphore>>>,
    faults: Mutex<VecDeque<Fault>>,
    replays: Mutex<Vec<u64>>,
}

impl ProbeStore {
    pub fn new(inner: CellStoreRef) -> Self {
        ProbeStore {
            inner,
            commit_calls: AtomicUsize::new(0),
            committed: Mutex::new(Vec::new()),
            gate: Mutex::new(None),
            faults: Mutex::new(VecDeque::new()),
            replays: Mutex::new(Vec::new()),
        }
    }

    /// Commits attempted so far (counted when they start, before the gate).
    pub fn commit_calls(&self) -> usize {
        self.commit_calls.load(Ordering::SeqCst)
    }

    /// Commands per commit that reached the store, in order.
    pub fn committed_batches(&self) -> Vec<usize> {
        self.committed.lock().unwrap().clone()
    }

    /// The `after` of every `list_events` call: where each replay started.
    pub fn replays(&self) -> Vec<u64> {
        self.replays.lock().unwrap().clone()
    }

    /// Holds every commit from now on until [`ProbeStore::open_gate`].
    pub fn close_gate(&self) {
        *self.gate.lock().unwrap() = Some(Arc::new(Semaphore::new(0)));
    }

    /// Lets held and future commits through.
    pub fn open_gate(&self) {
        if let Some(gate) = self.gate.lock().unwrap().take() {
            gate.close();
        }
    }

    /// Fails the next commit this way.
    pub fn fail_next_commit(&self, fault: Fault) {
        self.faults.lock().unwrap().push_back(fault);
    }
}

#[async_trait]
impl CellStore for ProbeStore {
    async fn activate(&self, room_id: &RoomId, node: &str) -> Result<Activation> {
        self.inner.activate(room_id, node).await
    }

    async fn commit(&self, batch: &CommitBatch) -> Result<()> {
        self.commit_calls.fetch_add(1, Ordering::SeqCst);
        let gate = self.gate.lock().unwrap().clone();
        if let Some(gate) = gate {
            // Closing the semaphore is what opens the gate.
            let _ = gate.acquire().await;
        }
        let fault = self.faults.lock().unwrap().pop_front();
        if fault == Some(Fault::UnavailableBefore) {
            return Err(Error::Unavailable("injected: commit refused".into()));
        }
        if fault == Some(Fault::Refused) {
            return Err(Error::Internal("injected: statement refused".into()));
        }
        self.inner.commit(batch).await?;
        self.committed.lock().unwrap().push(batch.commands.len());
        if fault == Some(Fault::UnavailableAfterWrite) {
            return Err(Error::Unavailable("injected: acknowledgement lost".into()));
        }
        Ok(())
    }

    async fn list_events(
        &self,
        room_id: &RoomId,
        after: u64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>> {
        self.replays.lock().unwrap().push(after);
        self.inner.list_events(room_id, after, limit).await
    }

    async fn get_command(
        &self,
        room_id: &RoomId,
        command_id: &CommandId,
    ) -> Result<Option<CommandRecord>> {
        self.inner.get_command(room_id, command_id).await
    }

    async fn prune_log(&self, older_than: Timestamp, limit: u32) -> Result<u64> {
        self.inner.prune_log(older_than, limit).await
    }
}

/// The runtime and the service over [`InMemoryStore`] (through a [`ProbeStore`]), with a test
/// clock and ids. The builder swaps in mocks.
pub struct World {
    pub store: Arc<InMemoryStore>,
    pub probe: Arc<ProbeStore>,
    pub clock: Arc<ManualClock>,
    pub ids: Arc<TestIds>,
    pub service: Arc<RoomService>,
    /// What the runtime hands display events to.
    pub messenger: Arc<BroadcastMessenger>,
}

pub struct WorldBuilder {
    store: Arc<InMemoryStore>,
    config: CellConfig,
    cell_store: Option<CellStoreRef>,
    lease: Option<LeaseRef>,
    wallet: Option<WalletRef>,
    orders: Option<GiftOrdersRef>,
    catalog: Option<GiftCatalogRef>,
    directory: Option<room_app::ports::RoomDirectoryRef>,
    presence: Option<room_app::ports::PresenceRef>,
    attempts: Option<room_app::ports::PasswordAttemptsRef>,
    ids: Option<Arc<TestIds>>,
    early: Vec<Arc<room_app::consumers::FactConsumer>>,
}

impl WorldBuilder {
    /// A consumer handed each room's creation fact right after the commit.
    pub fn early(mut self, consumer: Arc<room_app::consumers::FactConsumer>) -> Self {
        self.early.push(consumer);
        self
    }

    /// The id generator (plain `id-1`, `id-2`, ... by default).
    pub fn ids(mut self, ids: Arc<TestIds>) -> Self {
        self.ids = Some(ids);
        self
    }

    pub fn attempts(mut self, attempts: room_app::ports::PasswordAttemptsRef) -> Self {
        self.attempts = Some(attempts);
        self
    }

    pub fn presence(mut self, presence: room_app::ports::PresenceRef) -> Self {
        self.presence = Some(presence);
        self
    }

    pub fn config(mut self, config: CellConfig) -> Self {
        self.config = config;
        self
    }

    /// The cell store under the probe (the in-memory store by default).
    pub fn cell_store(mut self, store: CellStoreRef) -> Self {
        self.cell_store = Some(store);
        self
    }

    pub fn lease(mut self, lease: LeaseRef) -> Self {
        self.lease = Some(lease);
        self
    }

    pub fn wallet(mut self, wallet: WalletRef) -> Self {
        self.wallet = Some(wallet);
        self
    }

    pub fn orders(mut self, orders: GiftOrdersRef) -> Self {
        self.orders = Some(orders);
        self
    }

    /// Shares another world's store (a second node over the same database).
    pub fn store(mut self, store: Arc<InMemoryStore>) -> Self {
        self.store = store;
        self
    }

    pub fn catalog(mut self, catalog: GiftCatalogRef) -> Self {
        self.catalog = Some(catalog);
        self
    }

    /// The room directory of the use cases (the store's by default).
    pub fn directory(mut self, directory: room_app::ports::RoomDirectoryRef) -> Self {
        self.directory = Some(directory);
        self
    }

    pub async fn build(self) -> World {
        let store = self.store;
        for gift in catalog() {
            GiftCatalog::put(&*store, &gift).await.expect("catalog put");
        }
        let clock = ManualClock::at(T0);
        let ids = self.ids.unwrap_or_default();
        let probe = Arc::new(ProbeStore::new(
            self.cell_store.unwrap_or_else(|| store.clone()),
        ));
        let messenger = Arc::new(BroadcastMessenger::new(64));
        let deps = CellDeps {
            store: probe.clone(),
            snapshots: store.clone(),
            lease: self.lease.unwrap_or_else(|| Arc::new(LocalLease)),
            messenger: messenger.clone(),
            clock: clock.clone(),
            ids: ids.clone(),
            directory: store.clone(),
        };
        let runtime = CellRuntime::new(deps, self.config, CancellationToken::new());
        let ports = ServicePorts {
            orders: self.orders.unwrap_or_else(|| store.clone()),
            wallet: self.wallet.unwrap_or_else(|| store.clone()),
            catalog: self.catalog.unwrap_or_else(|| store.clone()),
            billing: store.clone(),
            income: store.clone(),
            tallies: store.clone(),
            boards: store.clone(),
            board_rewards: store.clone(),
            rocket: store.clone(),
            directory: self.directory.unwrap_or_else(|| store.clone()),
            users: store.clone(),
            vip: store.clone(),
            presence: self
                .presence
                .unwrap_or_else(|| Arc::new(LocalPresence::new())),
            attempts: self
                .attempts
                .unwrap_or_else(|| Arc::new(LocalPasswordAttempts::default())),
            clock: clock.clone(),
            ids: ids.clone(),
        };
        World {
            store,
            probe,
            clock,
            ids,
            service: Arc::new(
                self.early
                    .into_iter()
                    .fold(RoomService::new(runtime, ports), |service, consumer| {
                        service.with_early_consumer(consumer)
                    }),
            ),
            messenger,
        }
    }
}

impl World {
    pub fn builder() -> WorldBuilder {
        WorldBuilder {
            store: Arc::new(InMemoryStore::new()),
            config: config(),
            cell_store: None,
            lease: None,
            wallet: None,
            orders: None,
            catalog: None,
            directory: None,
            presence: None,
            attempts: None,
            ids: None,
            early: Vec::new(),
        }
    }

    /// A world with nothing swapped.
    pub async fn new() -> World {
        World::builder().build().await
    }

    pub fn runtime(&self) -> &CellRuntime {
        self.service.runtime()
    }

    pub fn saga(&self) -> &GiftSaga {
        self.service.gifts()
    }

    /// Runs a command under a fresh id.
    pub async fn exec(
        &self,
        room: &RoomId,
        actor: Actor,
        kind: CommandKind,
    ) -> Result<Arc<CommandReply>> {
        let id = cid(&self.ids.next_id());
        self.exec_as(room, id, actor, kind).await
    }

    /// Runs a command under the given id.
    pub async fn exec_as(
        &self,
        room: &RoomId,
        id: CommandId,
        actor: Actor,
        kind: CommandKind,
    ) -> Result<Arc<CommandReply>> {
        self.runtime()
            .execute(room, Command::new(id, kind), actor, None)
            .await
    }

    /// `execute` as a boxed future, for [`start_all`].
    pub fn submit(
        &self,
        room: &RoomId,
        id: &str,
        actor: Actor,
        kind: CommandKind,
    ) -> Boxed<Result<Arc<CommandReply>>> {
        let runtime = self.runtime().clone();
        let room = room.clone();
        let command = Command::new(cid(id), kind);
        Box::pin(async move { runtime.execute(&room, command, actor, None).await })
    }

    /// Creates a room owned by `owner`; the owner and `members` join it.
    pub async fn open_room(&self, room: &str, owner: &str, members: &[&str]) -> RoomId {
        let room = rid(room);
        let create = CommandKind::CreateRoom {
            name: format!("room {room}"),
            seat_count: None,
            region: "sg".into(),
        };
        self.exec(&room, user(owner), create)
            .await
            .expect("room created");
        for name in std::iter::once(&owner).chain(members) {
            self.join(&room, name).await;
        }
        room
    }

    pub async fn join(&self, room: &RoomId, name: &str) {
        self.exec(room, user(name), plain_join())
            .await
            .expect("joined");
    }

    /// Robot `name` joins `room` (as the orchestrator has robots join).
    pub async fn robot_join(&self, room: &RoomId, name: &str) -> Arc<CommandReply> {
        self.service
            .robot_command(room, &uid(name), plain_join())
            .await
            .expect("the robot joins")
    }

    /// A copy of the room's state, read inside its cell.
    pub async fn state(&self, room: &RoomId) -> RoomState {
        self.runtime()
            .query(room, |state| state.clone())
            .await
            .expect("room state")
    }

    /// The room's whole log, from storage.
    pub async fn log(&self, room: &RoomId) -> Vec<StoredEvent> {
        CellStore::list_events(&*self.store, room, 0, 10_000)
            .await
            .expect("room log")
    }

    /// Gives `user` coins as a platform admin would.
    pub async fn fund(&self, name: &str, coins: i64) {
        Wallet::credit(
            &*self.store,
            &format!("fund:{name}"),
            CreditKind::Admin,
            &uid(name),
            Coins(coins),
        )
        .await
        .expect("funded");
    }

    pub async fn balance(&self, name: &str) -> Coins {
        Wallet::balance(&*self.store, &uid(name))
            .await
            .expect("balance")
    }

    pub async fn total_balance(&self, names: &[&str]) -> i64 {
        let mut total = 0;
        for name in names {
            total += self.balance(name).await.0;
        }
        total
    }
}

/// A gift request.
pub fn gift(
    room: &RoomId,
    sender: &str,
    order: &str,
    gift: &str,
    count: u32,
    recipients: &[&str],
) -> SendGift {
    SendGift {
        room_id: room.clone(),
        sender: uid(sender),
        order_id: oid(order),
        gift_id: GiftId::new(gift).expect("valid gift id"),
        count,
        recipients: recipients.iter().map(|name| uid(name)).collect(),
        scope: None,
    }
}

/// A batch gift request: to every seat holder or every member but the sender.
pub fn batch_gift(
    room: &RoomId,
    sender: &str,
    order: &str,
    gift_id: &str,
    count: u32,
    scope: room_domain::GiftScope,
) -> SendGift {
    SendGift {
        scope: Some(scope),
        ..gift(room, sender, order, gift_id, count, &[])
    }
}

/// The gifts the room applied, from its log.
pub fn gifts_in(log: &[StoredEvent]) -> Vec<room_domain::GiftSent> {
    log.iter()
        .filter_map(|stored| match &stored.event {
            Event::RoomGiftSent(gift) => Some(gift.clone()),
            _ => None,
        })
        .collect()
}

pub type Boxed<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Futures polled once each, so that every `execute` among them has queued its request (or
/// been refused) before anything else happens; [`Started::join`] awaits the rest.
pub struct Started<T> {
    slots: Vec<(Boxed<T>, Option<T>)>,
}

/// Polls each future once, in order.
pub async fn start_all<T>(futures: Vec<Boxed<T>>) -> Started<T> {
    let mut slots: Vec<(Boxed<T>, Option<T>)> =
        futures.into_iter().map(|future| (future, None)).collect();
    std::future::poll_fn(|cx| {
        for (future, out) in &mut slots {
            if let Poll::Ready(value) = future.as_mut().poll(cx) {
                *out = Some(value);
            }
        }
        Poll::Ready(())
    })
    .await;
    Started { slots }
}

impl<T> Started<T> {
    /// The answer of future `i` if its first poll already finished it.
    pub fn ready(&self, i: usize) -> Option<&T> {
        self.slots[i].1.as_ref()
    }

    /// Polls the unfinished futures once more.
    pub async fn poll_again(&mut self) {
        std::future::poll_fn(|cx| {
            for (future, out) in &mut self.slots {
                if out.is_none()
                    && let Poll::Ready(value) = future.as_mut().poll(cx)
                {
                    *out = Some(value);
                }
            }
            Poll::Ready(())
        })
        .await;
    }

    pub async fn join(self) -> Vec<T> {
        let mut out = Vec::with_capacity(self.slots.len());
        for (future, done) in self.slots {
            out.push(match done {
                Some(value) => value,
                None => future.await,
            });
        }
        out
    }
}

/// An ordinary user as the service's use cases take them.
pub fn user_actor(name: &str) -> room_domain::UserActor {
    room_domain::UserActor {
        user_id: uid(name),
        vip_level: 0,
        platform_admin: false,
    }
}

/// The nodes of a test by URL. Every request and answer goes through JSON, as over HTTP.
#[derive(Default)]
pub struct Nodes {
    /// Each node's runtime by its URL.
    pub runtimes: Mutex<HashMap<String, CellRuntime>>,
    /// Requests forwarded so far.
    pub calls: AtomicUsize,
}

fn wire<T: serde::Serialize + serde::de::DeserializeOwned>(value: &T) -> T {
    serde_json::from_slice(&serde_json::to_vec(value).unwrap()).unwrap()
}

fn answer<T: serde::Serialize + serde::de::DeserializeOwned>(
    room_id: &RoomId,
    result: Result<T>,
) -> Result<T> {
    result
        .map(|value| wire(&value))
        .map_err(|error| wire(&RemoteError::from(&error)).into_error(room_id))
}

impl Nodes {
    /// The nodes `worlds` (URL, world), each forwarding to the others through them.
    pub fn connect(worlds: &[(&str, &World)]) -> Arc<Nodes> {
        let nodes = Arc::new(Nodes::default());
        for (url, world) in worlds {
            nodes
                .runtimes
                .lock()
                .unwrap()
                .insert((*url).into(), world.runtime().clone());
            world.runtime().forward_with(nodes.clone());
        }
        nodes
    }

    fn runtime(&self, url: &str) -> Result<CellRuntime> {
        self.runtimes
            .lock()
            .unwrap()
            .get(url)
            .cloned()
            .ok_or_else(|| Error::unavailable(format!("no node at {url}")))
    }
}

#[async_trait]
impl Forwarder for Nodes {
    async fn execute(
        &self,
        peer: &Peer,
        room_id: &RoomId,
        command: &ForwardedCommand,
    ) -> Result<CommandReply> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let request = wire(command);
        let runtime = self.runtime(&peer.url)?;
        let reply = runtime
            .execute_local(room_id, request.command, request.actor, request.order)
            .await
            .map(|reply| (*reply).clone());
        answer(room_id, reply)
    }

    async fn read(&self, peer: &Peer, room_id: &RoomId, kind: ReadKind) -> Result<RoomState> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let runtime = self.runtime(&peer.url)?;
        answer(room_id, runtime.read_local(room_id, wire(&kind)).await)
    }

    async fn membership(
        &self,
        peer: &Peer,
        room_id: &RoomId,
        user: &UserId,
        kind: ReadKind,
    ) -> Result<Membership> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let runtime = self.runtime(&peer.url)?;
        answer(
            room_id,
            runtime.membership_local(room_id, user, wire(&kind)).await,
        )
    }
}

/// A join without a password or a lock.
fn plain_join() -> CommandKind {
    CommandKind::Join {
        password_verified: false,
        verified_lock: None,
    }
}

/// A wallet over an in-memory one whose first debit waits at a gate, counting debits, and
/// failing as many refunds as it is told to.
pub struct GatedWallet {
    pub inner: InMemoryStore,
    /// Refund credits still to fail, as unavailable, before any goes through.
    pub failing_refunds: AtomicUsize,
    /// Refund credits that went through.
    pub refunds: AtomicUsize,
    /// Debits asked for so far.
    pub debits: AtomicUsize,
    /// Notified when the first debit reaches the gate.
    pub entered: tokio::sync::Notify,
    /// Opened (notified) to let the first debit through.
    pub gate: tokio::sync::Notify,
}

impl Default for GatedWallet {
    fn default() -> Self {
        Self::new()
    }
}

impl GatedWallet {
    /// A gated wallet in which alice holds `coins`, and a world that pays with it.
    pub async fn world_with(coins: i64) -> (World, Arc<GatedWallet>) {
        let wallet = Arc::new(GatedWallet::new());
        Wallet::credit(
            &*wallet,
            "fund",
            CreditKind::Admin,
            &uid("alice"),
            Coins(coins),
        )
        .await
        .expect("funded");
        let world = World::builder().wallet(wallet.clone()).build().await;
        (world, wallet)
    }

    pub fn new() -> Self {
        GatedWallet {
            inner: InMemoryStore::new(),
            failing_refunds: AtomicUsize::new(0),
            refunds: AtomicUsize::new(0),
            debits: AtomicUsize::new(0),
            entered: tokio::sync::Notify::new(),
            gate: tokio::sync::Notify::new(),
        }
    }
}

#[async_trait]
impl Wallet for GatedWallet {
    async fn debit(&self, op_id: &str, user: &UserId, amount: Coins) -> Result<Coins> {
        if self.debits.fetch_add(1, Ordering::SeqCst) == 0 {
            self.entered.notify_one();
            self.gate.notified().await;
        }
        self.inner.debit(op_id, user, amount).await
    }

    async fn credit(
        &self,
        op_id: &str,
        kind: CreditKind,
        user: &UserId,
        amount: Coins,
    ) -> Result<Coins> {
        if kind == CreditKind::Refund {
            let failing = &self.failing_refunds;
            if failing
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
            {
                return Err(Error::Unavailable("the wallet is away".into()));
            }
            self.refunds.fetch_add(1, Ordering::SeqCst);
        }
        self.inner.credit(op_id, kind, user, amount).await
    }

    async fn settle_debit(&self, op_id: &str) -> Result<room_app::ports::DebitStatus> {
        self.inner.settle_debit(op_id).await
    }

    async fn balance(&self, user: &UserId) -> Result<Coins> {
        Wallet::balance(&self.inner, user).await
    }
}

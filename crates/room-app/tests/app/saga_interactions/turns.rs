//! Concurrent drives of one order take turns: a repeat that arrives during the first drive's
//! debit waits for it and never reaches the wallet.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use room_app::ports::{CreditKind, DebitStatus};
use room_domain::{Coins, OrderStatus};

use crate::support::{World, gift, uid};

/// A wallet over an in-memory one whose first debit waits at a gate, counting debits.
struct GatedWallet {
    inner: room_app::InMemoryStore,
    debits: AtomicUsize,
    entered: tokio::sync::Notify,
    gate: tokio::sync::Notify,
}

#[async_trait::async_trait]
impl room_app::ports::Wallet for GatedWallet {
    async fn debit(
        &self,
        op_id: &str,
        user: &room_domain::UserId,
        amount: Coins,
    ) -> room_app::Result<Coins> {
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
        user: &room_domain::UserId,
        amount: Coins,
    ) -> room_app::Result<Coins> {
        self.inner.credit(op_id, kind, user, amount).await
    }

    async fn settle_debit(&self, op_id: &str) -> room_app::Result<DebitStatus> {
        self.inner.settle_debit(op_id).await
    }

    async fn balance(&self, user: &room_domain::UserId) -> room_app::Result<Coins> {
        room_app::ports::Wallet::balance(&self.inner, user).await
    }
}

// Paused time: the repeat's 100 ms head start ends only once every task is idle, so the
// repeat always reaches the lock (or, without it, the wallet) before the first drive goes on.
#[tokio::test(start_paused = true)]
async fn concurrent_drives_of_one_order_take_turns() {
    let wallet = Arc::new(GatedWallet {
        inner: room_app::InMemoryStore::new(),
        debits: AtomicUsize::new(0),
        entered: tokio::sync::Notify::new(),
        gate: tokio::sync::Notify::new(),
    });
    room_app::ports::Wallet::credit(
        &*wallet,
        "fund",
        CreditKind::Admin,
        &uid("alice"),
        Coins(100),
    )
    .await
    .unwrap();
    let world = World::builder().wallet(wallet.clone()).build().await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let request = gift(&room, "alice", "o-1", "rose", 1, &["bob"]);

    let first = world.saga().send(request.clone());
    let repeat = async {
        wallet.entered.notified().await;
        // The first drive is inside its debit; the repeat arrives now, and it is given time
        // to reach the wallet before the first drive goes on.
        let repeat = world.saga().send(request.clone());
        let release = async {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            wallet.gate.notify_one();
        };
        tokio::join!(repeat, release).0
    };
    let (first, repeat) = tokio::join!(first, repeat);
    let (first, repeat) = (first.unwrap(), repeat.unwrap());
    assert_eq!(first.status, OrderStatus::Completed);
    assert_eq!(repeat, first);
    // The repeat waited for the first drive and found the order finished: it never reached
    // the wallet.
    assert_eq!(wallet.debits.load(Ordering::SeqCst), 1);
    assert_eq!(first.coin_balance_after, Coins(90));
}

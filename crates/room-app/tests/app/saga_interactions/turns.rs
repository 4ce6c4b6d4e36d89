//! Concurrent drives of one order take turns: a repeat that arrives during the first drive's
//! debit waits for it and never reaches the wallet.

use std::sync::atomic::Ordering;

use room_domain::{Coins, OrderStatus};

use crate::support::{GatedWallet, gift};

// Paused time: the repeat's 100 ms head start ends only once every task is idle, so the
// repeat always reaches the lock (or, without it, the wallet) before the first drive goes on.
#[tokio::test(start_paused = true)]
async fn concurrent_drives_of_one_order_take_turns() {
    let (world, wallet) = GatedWallet::world_with(100).await;
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

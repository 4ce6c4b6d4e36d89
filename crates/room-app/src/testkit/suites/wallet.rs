//! The conformance suite of [`Wallet`]: balances, idempotency by operation id, insufficient
//! funds, voided debits, and no overdraft under concurrent debits.

use std::future::Future;
use std::sync::Arc;

use room_domain::{Coins, UserId};

use super::fixtures::{at, expect_err, ok, order_of, room, same, user};
use crate::Error;
use crate::ports::{CreditKind, DebitStatus, Wallet};

/// Runs every [`Wallet`] check, each against a fresh store from `fresh`. The concurrency
/// checks spawn tasks: run the suite on a multi-threaded runtime to make them bite.
pub async fn wallet_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: Wallet + 'static,
{
    credits_and_debits_move_balances(fresh().await).await;
    repeats_return_the_first_answer_and_move_nothing(fresh().await).await;
    insufficient_funds_moves_nothing(fresh().await).await;
    reusing_an_op_id_differently_is_conflict(fresh().await).await;
    kinds_have_separate_op_ids(fresh().await).await;
    one_order_id_of_two_senders_is_two_operations(fresh().await).await;
    settle_debit_reports_or_voids(fresh().await).await;
    negative_amounts_are_invalid(fresh().await).await;
    overflow_is_invalid(fresh().await).await;
    concurrent_debits_never_overdraw(fresh().await).await;
    concurrent_repeats_debit_once(fresh().await).await;
    concurrent_transfers_conserve_coins(fresh().await).await;
}

async fn balance<S: Wallet>(store: &S, who: &UserId) -> i64 {
    ok(store.balance(who).await, "balance").0
}

async fn credits_and_debits_move_balances<S: Wallet>(store: Arc<S>) {
    let alice = user("alice");
    let bob = user("bob");
    same(
        balance(&*store, &alice).await,
        0,
        "an unknown user has zero",
    );
    same(
        ok(
            store
                .credit("top-1", CreditKind::Admin, &alice, Coins(100))
                .await,
            "credit",
        ),
        Coins(100),
        "credit returns the balance after",
    );
    same(
        ok(store.debit("d-1", &alice, Coins(30)).await, "debit"),
        Coins(70),
        "debit returns the balance after",
    );
    same(
        ok(store.debit("d-2", &alice, Coins(70)).await, "debit"),
        Coins(0),
        "a debit may take the whole balance",
    );
    same(
        ok(
            store
                .credit("top-2", CreditKind::Admin, &alice, Coins(5))
                .await,
            "credit",
        ),
        Coins(5),
        "credit after debits",
    );
    same(
        ok(store.debit("d-3", &alice, Coins(0)).await, "debit"),
        Coins(5),
        "a zero debit moves nothing",
    );
    same(balance(&*store, &alice).await, 5, "alice's balance");
    same(balance(&*store, &bob).await, 0, "bob is untouched");
}

async fn repeats_return_the_first_answer_and_move_nothing<S: Wallet>(store: Arc<S>) {
    let alice = user("alice");
    ok(
        store
            .credit("top-1", CreditKind::Admin, &alice, Coins(100))
            .await,
        "credit",
    );
    ok(store.debit("d-1", &alice, Coins(30)).await, "debit");
    ok(
        store
            .credit("top-2", CreditKind::Admin, &alice, Coins(1000))
            .await,
        "credit",
    );
    ok(store.debit("d-2", &alice, Coins(1)).await, "debit");
    same(
        balance(&*store, &alice).await,
        1069,
        "balance before the repeats",
    );
    same(
        ok(
            store.debit("d-1", &alice, Coins(30)).await,
            "repeated debit",
        ),
        Coins(70),
        "a repeated debit returns the first answer",
    );
    same(
        ok(
            store
                .credit("top-1", CreditKind::Admin, &alice, Coins(100))
                .await,
            "repeated credit",
        ),
        Coins(100),
        "a repeated credit returns the first answer",
    );
    same(
        balance(&*store, &alice).await,
        1069,
        "repeats move no coins",
    );
    ok(store.debit("d-3", &alice, Coins(1069)).await, "debit");
    same(
        ok(
            store.debit("d-1", &alice, Coins(30)).await,
            "repeated debit",
        ),
        Coins(70),
        "a debit repeated after the balance fell below its amount returns the first answer",
    );
    same(
        balance(&*store, &alice).await,
        0,
        "the late repeat moved nothing",
    );
}

async fn insufficient_funds_moves_nothing<S: Wallet>(store: Arc<S>) {
    let alice = user("alice");
    ok(
        store
            .credit("top-1", CreditKind::Admin, &alice, Coins(40))
            .await,
        "credit",
    );
    expect_err!(
        store.debit("d-1", &alice, Coins(41)).await,
        Error::InsufficientFunds { balance: Coins(40) },
        "a debit above the balance"
    );
    same(balance(&*store, &alice).await, 40, "nothing moved");
    expect_err!(
        store.debit("d-2", &user("nobody"), Coins(1)).await,
        Error::InsufficientFunds { balance: Coins(0) },
        "a debit from an unknown user"
    );
    same(
        ok(store.settle_debit("d-1").await, "settle_debit"),
        DebitStatus::Void,
        "a refused debit did not happen",
    );
}

async fn reusing_an_op_id_differently_is_conflict<S: Wallet>(store: Arc<S>) {
    let alice = user("alice");
    let bob = user("bob");
    ok(
        store
            .credit("top-a", CreditKind::Admin, &alice, Coins(100))
            .await,
        "credit",
    );
    ok(
        store
            .credit("top-b", CreditKind::Admin, &bob, Coins(100))
            .await,
        "credit",
    );
    ok(store.debit("d-1", &alice, Coins(10)).await, "debit");
    expect_err!(
        store.debit("d-1", &alice, Coins(11)).await,
        Error::Conflict(_),
        "a debit op id reused for another amount"
    );
    expect_err!(
        store.debit("d-1", &bob, Coins(10)).await,
        Error::Conflict(_),
        "a debit op id reused for another user"
    );
    expect_err!(
        store
            .credit("top-a", CreditKind::Admin, &alice, Coins(99))
            .await,
        Error::Conflict(_),
        "a credit op id reused for another amount"
    );
    expect_err!(
        store
            .credit("top-a", CreditKind::Admin, &bob, Coins(100))
            .await,
        Error::Conflict(_),
        "a credit op id reused for another user"
    );
    same(balance(&*store, &alice).await, 90, "alice: nothing moved");
    same(balance(&*store, &bob).await, 100, "bob: nothing moved");
}

async fn kinds_have_separate_op_ids<S: Wallet>(store: Arc<S>) {
    // One gift order id serves as the id of its debit, its refund and its lucky reward.
    let alice = user("alice");
    ok(
        store
            .credit("o-1", CreditKind::Admin, &alice, Coins(100))
            .await,
        "credit",
    );
    same(
        ok(store.debit("o-1", &alice, Coins(30)).await, "debit"),
        Coins(70),
        "a debit with the id of a credit",
    );
    same(
        ok(
            store
                .credit("o-1", CreditKind::Refund, &alice, Coins(30))
                .await,
            "refund",
        ),
        Coins(100),
        "a refund with the id of the debit",
    );
    same(
        ok(
            store
                .credit("o-1", CreditKind::LuckyReward, &alice, Coins(7))
                .await,
            "lucky reward",
        ),
        Coins(107),
        "a lucky reward with the same id",
    );
    same(
        ok(
            store
                .credit("o-1", CreditKind::RocketReward, &alice, Coins(3))
                .await,
            "rocket reward",
        ),
        Coins(110),
        "a rocket reward with the same id",
    );
    same(
        ok(
            store
                .credit("o-1", CreditKind::BoardReward, &alice, Coins(4))
                .await,
            "board reward",
        ),
        Coins(114),
        "a board reward with the same id",
    );
    same(
        ok(
            store
                .credit("o-1", CreditKind::Refund, &alice, Coins(30))
                .await,
            "refund",
        ),
        Coins(100),
        "a repeated refund returns its first answer",
    );
    same(balance(&*store, &alice).await, 114, "each kind moved once");
}

/// Gift orders name their operations with [`GiftOrder::wallet_op_id`]: two senders' orders
/// with one order id debit, refund and reward independently, and voiding one leaves the other.
///
/// [`GiftOrder::wallet_op_id`]: room_domain::GiftOrder::wallet_op_id
async fn one_order_id_of_two_senders_is_two_operations<S: Wallet>(store: Arc<S>) {
    let (alice, bob) = (user("alice"), user("bob"));
    ok(
        store
            .credit("top-a", CreditKind::Admin, &alice, Coins(100))
            .await,
        "credit",
    );
    ok(
        store
            .credit("top-b", CreditKind::Admin, &bob, Coins(100))
            .await,
        "credit",
    );
    let alices = order_of("alice", "o-1", &room("room-a"), at(0)).wallet_op_id();
    let bobs = order_of("bob", "o-1", &room("room-a"), at(0)).wallet_op_id();
    assert_ne!(alices, bobs, "the operation ids differ");
    same(
        ok(store.settle_debit(&bobs).await, "settle_debit"),
        DebitStatus::Void,
        "bob's debit is voided",
    );
    same(
        ok(store.debit(&alices, &alice, Coins(30)).await, "debit"),
        Coins(70),
        "alice's debit is not bob's void one",
    );
    expect_err!(
        store.debit(&bobs, &bob, Coins(30)).await,
        Error::Conflict(_),
        "bob's voided debit stays void"
    );
    same(
        ok(
            store
                .credit(&alices, CreditKind::Refund, &alice, Coins(30))
                .await,
            "credit",
        ),
        Coins(100),
        "alice's refund",
    );
    same(
        ok(
            store
                .credit(&bobs, CreditKind::LuckyReward, &bob, Coins(5))
                .await,
            "credit",
        ),
        Coins(105),
        "bob's reward is not alice's refund",
    );
    same(
        (balance(&*store, &alice).await, balance(&*store, &bob).await),
        (100, 105),
        "each sender's coins moved by their own operations",
    );
}

async fn settle_debit_reports_or_voids<S: Wallet>(store: Arc<S>) {
    let alice = user("alice");
    ok(
        store
            .credit("top-1", CreditKind::Admin, &alice, Coins(50))
            .await,
        "credit",
    );
    ok(store.debit("d-done", &alice, Coins(20)).await, "debit");
    same(
        ok(store.settle_debit("d-done").await, "settle_debit"),
        DebitStatus::Debited,
        "a done debit settles as Debited",
    );
    same(
        ok(store.settle_debit("d-done").await, "settle_debit"),
        DebitStatus::Debited,
        "settling again gives the same answer",
    );
    same(
        ok(store.debit("d-done", &alice, Coins(20)).await, "debit"),
        Coins(30),
        "a settled debit can still be repeated",
    );
    same(
        ok(store.settle_debit("d-never").await, "settle_debit"),
        DebitStatus::Void,
        "an unknown debit settles as Void",
    );
    expect_err!(
        store.debit("d-never", &alice, Coins(20)).await,
        Error::Conflict(_),
        "a debit after its id was voided"
    );
    same(
        balance(&*store, &alice).await,
        30,
        "the late debit moved nothing",
    );
    same(
        ok(store.settle_debit("d-never").await, "settle_debit"),
        DebitStatus::Void,
        "settling a voided id again is Void",
    );
    same(
        ok(store.settle_debit("top-1").await, "settle_debit"),
        DebitStatus::Void,
        "a credit's id is not a debit",
    );
}

async fn negative_amounts_are_invalid<S: Wallet>(store: Arc<S>) {
    let alice = user("alice");
    ok(
        store
            .credit("top-1", CreditKind::Admin, &alice, Coins(50))
            .await,
        "credit",
    );
    expect_err!(
        store.debit("d-neg", &alice, Coins(-5)).await,
        Error::Invalid(_),
        "a negative debit"
    );
    expect_err!(
        store
            .credit("c-neg", CreditKind::Refund, &alice, Coins(-5))
            .await,
        Error::Invalid(_),
        "a negative credit"
    );
    same(balance(&*store, &alice).await, 50, "nothing moved");
    same(
        ok(store.debit("d-neg", &alice, Coins(5)).await, "debit"),
        Coins(45),
        "a refused negative debit does not use up its op id",
    );
}

async fn overflow_is_invalid<S: Wallet>(store: Arc<S>) {
    let alice = user("alice");
    ok(
        store
            .credit("top-1", CreditKind::Admin, &alice, Coins(i64::MAX))
            .await,
        "credit",
    );
    expect_err!(
        store
            .credit("top-2", CreditKind::Admin, &alice, Coins(1))
            .await,
        Error::Invalid(_),
        "a credit past i64::MAX"
    );
    same(balance(&*store, &alice).await, i64::MAX, "nothing moved");
}

async fn concurrent_debits_never_overdraw<S: Wallet + 'static>(store: Arc<S>) {
    let alice = user("alice");
    ok(
        store
            .credit("top-1", CreditKind::Admin, &alice, Coins(30))
            .await,
        "credit",
    );
    let mut tasks = Vec::new();
    for i in 0..50 {
        let store = store.clone();
        let alice = alice.clone();
        tasks.push(tokio::spawn(async move {
            store.debit(&format!("d-{i}"), &alice, Coins(1)).await
        }));
    }
    let mut balances_after = Vec::new();
    let mut refused = 0;
    for task in tasks {
        match task.await.expect("debit task panicked") {
            Ok(after) => balances_after.push(after.0),
            Err(Error::InsufficientFunds { balance }) => {
                assert!(!balance.is_negative(), "a reported balance is negative");
                refused += 1;
            }
            Err(other) => panic!("a concurrent debit must succeed or find funds short: {other:?}"),
        }
    }
    let end = balance(&*store, &alice).await;
    assert!(end >= 0, "concurrent debits drove the balance to {end}");
    same(
        balances_after.len() as i64,
        30 - end,
        "successful debits equal the balance drop",
    );
    same(balances_after.len(), 30, "every coin was debited once");
    same(refused, 20, "the other debits found the funds short");
    balances_after.sort_unstable();
    same(
        balances_after,
        (0..30).collect::<Vec<i64>>(),
        "each successful debit saw its own balance",
    );
}

async fn concurrent_repeats_debit_once<S: Wallet + 'static>(store: Arc<S>) {
    let alice = user("alice");
    ok(
        store
            .credit("top-1", CreditKind::Admin, &alice, Coins(100))
            .await,
        "credit",
    );
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let store = store.clone();
        let alice = alice.clone();
        tasks.push(tokio::spawn(async move {
            store.debit("same-op", &alice, Coins(5)).await
        }));
    }
    for task in tasks {
        same(
            ok(
                task.await.expect("debit task panicked"),
                "a concurrent repeat",
            ),
            Coins(95),
            "every repeat of one debit gets the same answer",
        );
    }
    same(
        balance(&*store, &alice).await,
        95,
        "one debit moved coins once",
    );
}

async fn concurrent_transfers_conserve_coins<S: Wallet + 'static>(store: Arc<S>) {
    // Four users pass coins around; no coin is created or lost, and nobody goes negative.
    let users: Vec<UserId> = (0..4).map(|i| user(&format!("u{i}"))).collect();
    for (i, u) in users.iter().enumerate() {
        ok(
            store
                .credit(&format!("seed-{i}"), CreditKind::Admin, u, Coins(25))
                .await,
            "credit",
        );
    }
    let mut tasks = Vec::new();
    for i in 0..40usize {
        let store = store.clone();
        let from = users[i % 4].clone();
        let to = users[(i + 1) % 4].clone();
        tasks.push(tokio::spawn(async move {
            let op = format!("t-{i}");
            match store.debit(&op, &from, Coins(7)).await {
                Ok(_) => {
                    store.credit(&op, CreditKind::Refund, &to, Coins(7)).await?;
                    Ok(true)
                }
                Err(Error::InsufficientFunds { .. }) => Ok(false),
                Err(other) => Err(other),
            }
        }));
    }
    for task in tasks {
        ok(
            task.await.expect("transfer task panicked"),
            "a concurrent transfer",
        );
    }
    let mut total = 0;
    for u in &users {
        let b = balance(&*store, u).await;
        assert!(b >= 0, "{u} went negative: {b}");
        total += b;
    }
    same(total, 100, "transfers conserve the coins");
}

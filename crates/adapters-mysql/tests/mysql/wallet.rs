//! The wallet on two nodes of one database: concurrent debits and credits never overdraw, one
//! operation id moves coins once, settling a debit another node runs is all or nothing, the
//! schema itself refuses a negative balance, and a ledger written before the kind
//! 'board_reward' (migration 0131) reads back after it.

use std::sync::Arc;

use adapters_mysql::{Error, MySqlSettings, MySqlStore};
use room_app::ports::{CreditKind, DebitStatus, Wallet};
use room_domain::Coins;
use room_testkit::mysql::MySqlServer;
use sqlx::{Executor, MySqlConnection};

use crate::fixtures::{Fixture, fixture, schema_before, user};

/// A second store on the fixture's database: another node of one deployment.
async fn second_node(f: &Fixture) -> Arc<MySqlStore> {
    let mut settings = MySqlSettings::new(f.database.url.clone());
    settings.max_connections = 4;
    Arc::new(
        MySqlStore::open(&settings)
            .await
            .expect("the second store opens"),
    )
}

/// The sum and count of the done debits the ledger holds.
async fn debited(conn: &mut MySqlConnection) -> (i64, i64) {
    sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(amount), 0) AS SIGNED), COUNT(*) FROM wallet_entries
         WHERE kind = 'debit' AND state = 'done'",
    )
    .fetch_one(&mut *conn)
    .await
    .expect("sum the debits")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_debits_and_credits_of_one_user_on_two_nodes_never_overdraw() {
    let Some(f) = fixture("mysql::wallet_concurrent_debits", |_| {}).await else {
        return;
    };
    let nodes = [f.store.clone(), second_node(&f).await];
    let alice = user("alice");
    const START: i64 = 500;
    const CREDITS: i64 = 10;
    const CREDIT: i64 = 20;
    nodes[0]
        .credit("seed", CreditKind::Admin, &alice, Coins(START))
        .await
        .unwrap();

    // 200 debits of 1 to 7 coins (about 800 coins asked, 700 there) and 10 credits, spread
    // over both nodes and started together.
    let start = Arc::new(tokio::sync::Barrier::new(210));
    let mut debits = Vec::new();
    for i in 0..200_i64 {
        let (store, alice, start) = (nodes[i as usize % 2].clone(), alice.clone(), start.clone());
        let amount = i % 7 + 1;
        debits.push(tokio::spawn(async move {
            start.wait().await;
            (
                amount,
                store.debit(&format!("d-{i}"), &alice, Coins(amount)).await,
            )
        }));
    }
    let mut credits = Vec::new();
    for i in 0..CREDITS {
        let (store, alice, start) = (nodes[i as usize % 2].clone(), alice.clone(), start.clone());
        credits.push(tokio::spawn(async move {
            start.wait().await;
            store
                .credit(&format!("c-{i}"), CreditKind::Refund, &alice, Coins(CREDIT))
                .await
        }));
    }
    let (mut taken, mut successes, mut refused) = (0, 0, 0);
    for task in debits {
        match task.await.unwrap() {
            (amount, Ok(after)) => {
                assert!(
                    after.0 >= 0,
                    "a debit answered a negative balance {after:?}"
                );
                taken += amount;
                successes += 1;
            }
            (_, Err(Error::InsufficientFunds { balance })) => {
                assert!(balance.0 >= 0, "a refusal reported a negative balance");
                refused += 1;
            }
            (_, Err(other)) => panic!("a debit must succeed or find the funds short: {other:?}"),
        }
    }
    for task in credits {
        task.await.unwrap().expect("a concurrent credit succeeds");
    }

    let end = nodes[1].balance(&alice).await.unwrap().0;
    assert!(end >= 0, "the balance went to {end}");
    assert_eq!(
        START + CREDITS * CREDIT - taken,
        end,
        "the successful debits are exactly the balance drop"
    );
    assert!(refused > 0, "the debits asked for more than there was");
    let mut conn = f.database.connect().await;
    assert_eq!(
        debited(&mut conn).await,
        (taken, successes),
        "the ledger holds one entry per successful debit"
    );
    // Every transaction takes the account row and then its entry key: no deadlock to retry.
    assert_eq!(
        (nodes[0].lock_retries(), nodes[1].lock_retries()),
        (0, 0),
        "no wallet transaction was a deadlock victim or timed out on a lock"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_op_id_debited_at_once_on_two_nodes_moves_coins_once() {
    let Some(f) = fixture("mysql::wallet_same_op", |_| {}).await else {
        return;
    };
    let nodes = [f.store.clone(), second_node(&f).await];
    // Alice has plenty: a repeat's own debit succeeds and must be rolled back when it finds
    // the entry. Bob has exactly the amount: a repeat finds the funds short and must answer
    // from the entry, not with InsufficientFunds.
    let (alice, bob) = (user("alice"), user("bob"));
    nodes[0]
        .credit("seed-a", CreditKind::Admin, &alice, Coins(100))
        .await
        .unwrap();
    nodes[0]
        .credit("seed-b", CreditKind::Admin, &bob, Coins(5))
        .await
        .unwrap();

    let start = Arc::new(tokio::sync::Barrier::new(40));
    let mut tasks = Vec::new();
    for i in 0..40 {
        let (store, start) = (nodes[i % 2].clone(), start.clone());
        let (who, op) = if i % 4 < 2 {
            (alice.clone(), "gift-a")
        } else {
            (bob.clone(), "gift-b")
        };
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            (who.clone(), store.debit(op, &who, Coins(5)).await)
        }));
    }
    for task in tasks {
        let (who, answer) = task.await.unwrap();
        let expected = if who == alice { 95 } else { 0 };
        assert_eq!(
            answer
                .expect("every attempt of the debit gets its answer")
                .0,
            expected,
            "{who}: every attempt answers the first one's balance"
        );
    }
    assert_eq!(nodes[1].balance(&alice).await.unwrap(), Coins(95));
    assert_eq!(nodes[1].balance(&bob).await.unwrap(), Coins(0));
    let mut conn = f.database.connect().await;
    assert_eq!(debited(&mut conn).await, (10, 2), "one entry per operation");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn settling_a_debit_while_another_node_runs_it_is_all_or_nothing() {
    let Some(f) = fixture("mysql::wallet_settle_race", |_| {}).await else {
        return;
    };
    let nodes = [f.store.clone(), second_node(&f).await];
    let alice = user("alice");
    nodes[0]
        .credit("seed", CreditKind::Admin, &alice, Coins(1_000))
        .await
        .unwrap();
    for round in 0..20 {
        let op = format!("gift-{round}");
        let before = nodes[0].balance(&alice).await.unwrap().0;
        let start = Arc::new(tokio::sync::Barrier::new(5));
        let mut debits = Vec::new();
        for _ in 0..4 {
            let (store, alice, op, start) =
                (nodes[0].clone(), alice.clone(), op.clone(), start.clone());
            debits.push(tokio::spawn(async move {
                start.wait().await;
                store.debit(&op, &alice, Coins(7)).await
            }));
        }
        start.wait().await;
        let settled = nodes[1].settle_debit(&op).await.unwrap();
        let mut answers = Vec::new();
        for task in debits {
            answers.push(task.await.unwrap());
        }
        let after = nodes[0].balance(&alice).await.unwrap().0;
        match settled {
            DebitStatus::Debited => {
                assert_eq!(after, before - 7, "round {round}: debited once");
                assert!(
                    answers
                        .iter()
                        .all(|a| matches!(a, Ok(b) if b.0 == before - 7)),
                    "round {round}: every debit answers the one debit: {answers:?}"
                );
            }
            DebitStatus::Void => {
                assert_eq!(after, before, "round {round}: a void debit moved nothing");
                assert!(
                    answers.iter().all(|a| matches!(a, Err(Error::Conflict(_)))),
                    "round {round}: every debit of a void id fails: {answers:?}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schema_refuses_a_negative_balance_whoever_writes_it() {
    let Some(f) = fixture("mysql::wallet_check", |_| {}).await else {
        return;
    };
    let alice = user("alice");
    f.store
        .credit("seed", CreditKind::Admin, &alice, Coins(10))
        .await
        .unwrap();

    let mut conn = f.database.connect().await;
    for statement in [
        "UPDATE wallet_accounts SET balance = balance - 11 WHERE user_id = 'alice'",
        "INSERT INTO wallet_accounts (user_id, balance) VALUES ('mallory', -1)",
    ] {
        let error = conn
            .execute(statement)
            .await
            .expect_err("the CHECK constraint refuses a negative balance");
        let server = error.as_database_error().expect("a server error");
        assert_eq!(
            server.kind(),
            sqlx::error::ErrorKind::CheckViolation,
            "{statement}: {server}"
        );
        assert!(
            server
                .message()
                .contains("wallet_accounts_balance_not_negative"),
            "{statement}: names the constraint: {server}"
        );
    }
    assert_eq!(f.store.balance(&alice).await.unwrap(), Coins(10));
    assert_eq!(f.store.balance(&user("mallory")).await.unwrap(), Coins(0));
}

/// Asserts that `statement` is refused by the CHECK constraint `wallet_entries_kind`.
async fn refused_kind(conn: &mut MySqlConnection, statement: &str) {
    let error = conn
        .execute(sqlx::AssertSqlSafe(statement))
        .await
        .expect_err("the kind's CHECK refuses it");
    let server = error.as_database_error().expect("a server error");
    assert_eq!(
        server.kind(),
        sqlx::error::ErrorKind::CheckViolation,
        "{statement}: {server}"
    );
    assert!(
        server.message().contains("wallet_entries_kind"),
        "{statement}: names the constraint: {server}"
    );
}

/// A ledger written by the release before migration 0131 (which adds the kind 'board_reward')
/// upgraded by `migrate`: every entry answers a repeat of its operation as it first did, a
/// voided debit stays void, the balance is kept, and board rewards credit beside the old kinds
/// (which the old schema refused), while a kind no store writes is still refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_written_before_board_rewards_read_back_after_the_upgrade() {
    let Some(server) = MySqlServer::from_env("mysql::wallet_upgrade_0131").await else {
        return;
    };
    let database = server.database().await;
    let mut conn = database.connect().await;
    schema_before(&mut conn, 131).await;
    let board_reward = "INSERT INTO wallet_entries
         (kind, op_id, state, user_id, amount, balance_after)
         VALUES ('board_reward', 'o-new', 'done', 'alice', 4, 104)";
    refused_kind(&mut conn, board_reward).await;

    // As the previous release wrote them: alice credited once of each kind and debited, all
    // under one op id, and a voided debit.
    let credits = [
        (CreditKind::Admin, "credit_admin", 100, 100),
        (CreditKind::Refund, "refund", 10, 110),
        (CreditKind::LuckyReward, "lucky_reward", 5, 115),
        (CreditKind::RocketReward, "rocket_reward", 3, 118),
    ];
    for (_, kind, amount, after) in credits {
        sqlx::query(
            "INSERT INTO wallet_entries (kind, op_id, state, user_id, amount, balance_after)
             VALUES (?, 'o-1', 'done', 'alice', ?, ?)",
        )
        .bind(kind)
        .bind(amount)
        .bind(after)
        .execute(&mut conn)
        .await
        .unwrap();
    }
    for statement in [
        "INSERT INTO wallet_entries (kind, op_id, state, user_id, amount, balance_after)
         VALUES ('debit', 'o-1', 'done', 'alice', 18, 100)",
        "INSERT INTO wallet_entries (kind, op_id, state) VALUES ('debit', 'o-void', 'void')",
        "INSERT INTO wallet_accounts (user_id, balance) VALUES ('alice', 100)",
    ] {
        conn.execute(statement).await.unwrap();
    }

    let settings = MySqlSettings::new(database.url.clone());
    MySqlStore::migrate(&settings).await.unwrap();
    let store = MySqlStore::open(&settings).await.unwrap();
    let alice = user("alice");
    assert_eq!(store.balance(&alice).await.unwrap(), Coins(100));
    for (kind, name, amount, after) in credits {
        assert_eq!(
            store
                .credit("o-1", kind, &alice, Coins(amount))
                .await
                .unwrap(),
            Coins(after),
            "a repeated {name} answers as it first did"
        );
    }
    assert_eq!(
        store.debit("o-1", &alice, Coins(18)).await.unwrap(),
        Coins(100),
        "a repeated debit answers as it first did"
    );
    assert!(matches!(
        store.debit("o-void", &alice, Coins(1)).await,
        Err(Error::Conflict(_))
    ));
    assert_eq!(
        store.settle_debit("o-void").await.unwrap(),
        DebitStatus::Void
    );
    assert_eq!(
        store.settle_debit("o-1").await.unwrap(),
        DebitStatus::Debited
    );
    assert_eq!(
        store.balance(&alice).await.unwrap(),
        Coins(100),
        "nothing moved"
    );

    // The new kind, beside the old ones under the same op id.
    for _ in 0..2 {
        assert_eq!(
            store
                .credit("o-1", CreditKind::BoardReward, &alice, Coins(4))
                .await
                .unwrap(),
            Coins(104),
            "a board reward, credited once"
        );
    }
    assert_eq!(store.balance(&alice).await.unwrap(), Coins(104));
    let kinds: Vec<String> =
        sqlx::query_scalar("SELECT kind FROM wallet_entries WHERE op_id = 'o-1' ORDER BY kind")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    assert_eq!(
        kinds,
        [
            "board_reward",
            "credit_admin",
            "debit",
            "lucky_reward",
            "refund",
            "rocket_reward"
        ]
    );
    refused_kind(
        &mut conn,
        "INSERT INTO wallet_entries (kind, op_id, state, user_id, amount, balance_after)
         VALUES ('bonus', 'o-1', 'done', 'alice', 1, 1)",
    )
    .await;
}

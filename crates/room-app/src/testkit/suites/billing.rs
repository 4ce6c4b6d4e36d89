//! The conformance suites of billing's storage: [`BillingPolicies`] (versions set by
//! compare-and-set, one winner of two puts of one version, every version kept) and
//! [`IncomeLedger`] (credits atomic and idempotent by key, also when two run at once; balances
//! checked for overflow; a user's entries newest first in pages).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{BillingPolicy, BillingShares, Coins, IncomePart};

use super::fixtures::{at, expect_err, gift_id, ok, order_id, room, same, user};
use super::versions::{Versioned, one_of_two_puts_of_a_version_wins, versions_follow_each_other};
use crate::ports::{BillingPolicies, IncomeEntry, IncomeLedger, MAX_INCOME_CREDIT};
use crate::{Error, Result};

/// Runs every check of [`BillingPolicies`], each against a fresh store from `fresh`.
pub async fn billing_policies_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: BillingPolicies + 'static,
{
    versions_follow_each_other(Arc::new(Policies(fresh().await))).await;
    one_of_two_puts_of_a_version_wins(Arc::new(Policies(fresh().await))).await;
    older_versions_are_kept(fresh().await).await;
}

/// Runs every check of [`IncomeLedger`], each against a fresh store from `fresh`.
pub async fn income_ledger_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: IncomeLedger + 'static,
{
    credits_are_idempotent_by_key(fresh().await).await;
    a_refused_credit_credits_nothing(fresh().await).await;
    concurrent_credits_of_the_same_entries_credit_once(fresh().await).await;
    entries_page_newest_first(fresh().await).await;
    later_parts_of_an_order_keep_its_gift(fresh().await).await;
    a_turnover_reward_is_credited_once_without_a_gift(fresh().await).await;
}

fn policy(version: u64, recipient_bp: u32) -> BillingPolicy {
    let mut overrides = BTreeMap::new();
    overrides.insert(
        gift_id("lucky-clover"),
        BillingShares {
            recipient_bp: 1_000,
            owner_bp: 0,
            agency_bp: 0,
        },
    );
    BillingPolicy {
        version,
        shares: BillingShares {
            recipient_bp,
            owner_bp: 1_000,
            agency_bp: 500,
        },
        overrides,
        turnover_bp: 0,
    }
}

/// A policy store as the checks of versions see it.
struct Policies<S>(Arc<S>);

#[async_trait]
impl<S: BillingPolicies + 'static> Versioned for Policies<S> {
    type Value = BillingPolicy;

    fn value(version: u64, variant: u8) -> BillingPolicy {
        policy(version, if variant == 0 { 5_000 } else { 6_000 })
    }

    fn version_of(value: &BillingPolicy) -> u64 {
        value.version
    }

    async fn newest(&self) -> Result<Option<BillingPolicy>> {
        self.0.current_policy().await
    }

    async fn put(&self, value: &BillingPolicy) -> Result<()> {
        self.0.put_policy(value).await
    }
}

async fn older_versions_are_kept<S: BillingPolicies>(store: Arc<S>) {
    ok(store.put_policy(&policy(1, 5_000)).await, "put version 1");
    ok(store.put_policy(&policy(2, 6_000)).await, "put version 2");
    same(
        ok(store.get_policy(1).await, "get_policy"),
        Some(policy(1, 5_000)),
        "an older version is kept as it was",
    );
    same(
        ok(store.get_policy(3).await, "get_policy"),
        None,
        "a version never stored",
    );
}

/// The credited parts of one order of `sender` to `recipients`: the recipient's part to
/// each, the owner's part of each to `owner`.
fn entries(sender: &str, order: &str, recipients: &[&str], owner: &str) -> Vec<IncomeEntry> {
    let mut entries = Vec::new();
    for (i, recipient) in recipients.iter().enumerate() {
        for (part, to, amount) in [
            (IncomePart::Recipient, *recipient, 50 + i as i64),
            (IncomePart::Owner, owner, 10),
        ] {
            entries.push(IncomeEntry {
                sender: user(sender),
                order_id: order_id(order),
                recipient: user(recipient),
                part,
                user: user(to),
                amount: Coins(amount),
                room_id: room("room-1"),
                gift_id: Some(gift_id("rose")),
                billing_version: 1,
                at: at(0),
            });
        }
    }
    entries
}

async fn credits_are_idempotent_by_key<S: IncomeLedger>(store: Arc<S>) {
    same(
        ok(store.income_balance(&user("alice")).await, "balance"),
        Coins::ZERO,
        "a user never credited has nothing",
    );
    let first = entries("carol", "o-1", &["alice", "bob"], "olga");
    same(
        ok(store.credit_income(&first).await, "credit"),
        4,
        "four new entries",
    );
    same(
        ok(store.income_balance(&user("alice")).await, "balance"),
        Coins(50),
        "the recipient's part",
    );
    same(
        ok(store.income_balance(&user("bob")).await, "balance"),
        Coins(51),
        "the other recipient's",
    );
    same(
        ok(store.income_balance(&user("olga")).await, "balance"),
        Coins(20),
        "the owner's parts of both",
    );
    same(
        ok(store.credit_income(&first).await, "credit"),
        0,
        "a repeat credits nothing",
    );
    let mut changed = first.clone();
    changed[0].amount = Coins(1_000);
    same(
        ok(store.credit_income(&changed).await, "credit"),
        0,
        "a repeat with another amount credits nothing either: the first stands",
    );
    same(
        ok(store.income_balance(&user("alice")).await, "balance"),
        Coins(50),
        "unchanged by the repeats",
    );
    // The same order id of another sender, and a mix of old and new entries.
    let mut mixed = entries("dave", "o-1", &["alice"], "olga");
    mixed.extend(first[..2].iter().cloned());
    same(
        ok(store.credit_income(&mixed).await, "credit"),
        2,
        "another sender's order is another key; the old entries are skipped",
    );
    same(
        ok(store.income_balance(&user("alice")).await, "balance"),
        Coins(100),
        "credited once more",
    );
    same(
        ok(store.credit_income(&[]).await, "credit"),
        0,
        "nothing to credit",
    );
    let twice = entries("erin", "o-9", &["alice"], "olga");
    let doubled = [twice[0].clone(), twice[0].clone()];
    same(
        ok(store.credit_income(&doubled).await, "credit"),
        1,
        "an entry named twice in one call is credited once",
    );
    same(
        ok(store.income_balance(&user("alice")).await, "balance"),
        Coins(150),
        "once",
    );
}

async fn a_refused_credit_credits_nothing<S: IncomeLedger>(store: Arc<S>) {
    let mut rich = entries("carol", "o-1", &["alice"], "olga");
    rich[0].amount = Coins(i64::MAX);
    ok(store.credit_income(&rich[..1]).await, "credit");
    let mut over = entries("carol", "o-2", &["bob", "alice"], "olga");
    assert!(over[2].user == user("alice") && over[2].part == IncomePart::Recipient);
    over[2].amount = Coins(1);
    expect_err!(
        store.credit_income(&over).await,
        Error::Invalid(_),
        "a balance past i64::MAX is refused"
    );
    same(
        ok(store.income_balance(&user("bob")).await, "balance"),
        Coins::ZERO,
        "and nothing of that call is credited",
    );
    same(
        ok(store.income_balance(&user("olga")).await, "balance"),
        Coins::ZERO,
        "not even the owner's parts",
    );
    same(
        ok(store.income_balance(&user("alice")).await, "balance"),
        Coins(i64::MAX),
        "the full balance stays",
    );
    let mut negative = entries("carol", "o-3", &["bob"], "olga");
    negative[1].amount = Coins(-1);
    expect_err!(
        store.credit_income(&negative).await,
        Error::Invalid(_),
        "a negative amount is refused"
    );
    let mut platform = entries("carol", "o-4", &["bob"], "olga");
    platform[1].part = IncomePart::Platform;
    expect_err!(
        store.credit_income(&platform).await,
        Error::Invalid(_),
        "the platform's part is no income"
    );
    let many: Vec<IncomeEntry> = (0..=MAX_INCOME_CREDIT)
        .map(|i| {
            let mut entry = entries("carol", &format!("o-many-{i}"), &["bob"], "olga")[0].clone();
            entry.amount = Coins(1);
            entry
        })
        .collect();
    expect_err!(
        store.credit_income(&many).await,
        Error::Invalid(_),
        "more entries than one call may take"
    );
    same(
        ok(store.income_balance(&user("bob")).await, "balance"),
        Coins::ZERO,
        "none of the refused calls credited anything",
    );
    same(
        ok(
            store.credit_income(&many[..MAX_INCOME_CREDIT]).await,
            "credit",
        ),
        u32::try_from(MAX_INCOME_CREDIT).unwrap(),
        "as many as one call may take",
    );
}

async fn concurrent_credits_of_the_same_entries_credit_once<S: IncomeLedger + 'static>(
    store: Arc<S>,
) {
    for round in 0..10 {
        let order = format!("o-race-{round}");
        // Two overlapping calls: the same order, once with every part, once with the
        // recipients' parts in the other order.
        let all = entries("carol", &order, &["alice", "bob"], "olga");
        let mut reversed = all.clone();
        reversed.reverse();
        let racers: Vec<_> = [all, reversed]
            .into_iter()
            .map(|batch| {
                let store = store.clone();
                tokio::spawn(async move { store.credit_income(&batch).await })
            })
            .collect();
        let mut credited = 0;
        for racer in racers {
            credited += ok(racer.await.expect("the racer ran"), "credit");
        }
        same(credited, 4, "each of the four entries credited once in all");
    }
    same(
        ok(store.income_balance(&user("alice")).await, "balance"),
        Coins(500),
        "ten rounds of 50",
    );
    same(
        ok(store.income_balance(&user("bob")).await, "balance"),
        Coins(510),
        "ten rounds of 51",
    );
    same(
        ok(store.income_balance(&user("olga")).await, "balance"),
        Coins(200),
        "ten rounds of 2 × 10",
    );
}

async fn entries_page_newest_first<S: IncomeLedger>(store: Arc<S>) {
    same(
        ok(store.list_income(&user("alice"), None, 10).await, "list"),
        Vec::new(),
        "nothing for a user never credited",
    );
    for n in 0..5 {
        ok(
            store
                .credit_income(&entries(
                    "carol",
                    &format!("o-{n}"),
                    &["alice", "bob"],
                    "olga",
                ))
                .await,
            "credit",
        );
    }
    let all = ok(store.list_income(&user("alice"), None, 100).await, "list");
    same(all.len(), 5, "alice's five entries, and only hers");
    assert!(
        all.iter().all(|record| record.entry.user == user("alice")),
        "only alice's entries"
    );
    assert!(
        all.windows(2).all(|w| w[0].id > w[1].id),
        "newest first: {all:?}"
    );
    same(
        all.iter()
            .map(|record| record.entry.order_id.to_string())
            .collect::<Vec<_>>(),
        vec!["o-4", "o-3", "o-2", "o-1", "o-0"]
            .into_iter()
            .map(String::from)
            .collect(),
        "in the order they were credited",
    );
    same(
        all[0].entry.clone(),
        entries("carol", "o-4", &["alice", "bob"], "olga")[0].clone(),
        "an entry reads back as credited",
    );
    let first = ok(store.list_income(&user("alice"), None, 2).await, "list");
    same(first, all[..2].to_vec(), "the first page");
    let second = ok(
        store.list_income(&user("alice"), Some(all[1].id), 2).await,
        "list",
    );
    same(second, all[2..4].to_vec(), "the next page after the cursor");
    let last = ok(
        store.list_income(&user("alice"), Some(all[4].id), 2).await,
        "list",
    );
    same(last, Vec::new(), "nothing after the last");
    same(
        ok(store.list_income(&user("olga"), None, 100).await, "list").len(),
        10,
        "the owner's two parts of each order",
    );
    same(
        ok(store.list_income(&user("alice"), None, 0).await, "list"),
        Vec::new(),
        "limit 0",
    );
}

async fn later_parts_of_an_order_keep_its_gift<S: IncomeLedger>(store: Arc<S>) {
    let first = entries("carol", "o-1", &["alice"], "olga");
    ok(store.credit_income(&first[..1]).await, "credit");
    // The owner's part of the same order, later, naming another room, gift, version and time.
    let mut later = first[1].clone();
    later.room_id = room("room-2");
    later.gift_id = Some(gift_id("lily"));
    later.billing_version = 2;
    later.at = at(5);
    // And the same of a new order, whose two parts disagree with each other.
    let mut other = entries("carol", "o-2", &["alice"], "olga");
    other[1].room_id = room("room-2");
    other[1].at = at(5);
    let mut batch = vec![later];
    batch.extend(other);
    same(
        ok(store.credit_income(&batch).await, "credit"),
        3,
        "three new parts",
    );
    let listed = ok(store.list_income(&user("olga"), None, 10).await, "list");
    for record in &listed {
        let entry = &record.entry;
        same(
            (
                entry.room_id.clone(),
                entry.gift_id.clone(),
                entry.billing_version,
                entry.at,
            ),
            (room("room-1"), Some(gift_id("rose")), 1, at(0)),
            "each part keeps its order's first credited gift",
        );
    }
    same(listed.len(), 2, "olga's parts of both orders");
    same(
        ok(store.income_balance(&user("olga")).await, "balance"),
        Coins(20),
        "both owner's parts",
    );
}

async fn a_turnover_reward_is_credited_once_without_a_gift<S: IncomeLedger>(store: Arc<S>) {
    let reward = IncomeEntry {
        sender: user("room-1"),
        order_id: order_id("sys-turnover-2025-11-30"),
        recipient: user("olga"),
        part: IncomePart::Turnover,
        user: user("olga"),
        amount: Coins(42),
        room_id: room("room-1"),
        gift_id: None,
        billing_version: 2,
        at: at(7),
    };
    ok(
        store
            .credit_income(&entries("carol", "o-1", &["alice"], "olga"))
            .await,
        "credit a gift",
    );
    same(
        ok(
            store.credit_income(std::slice::from_ref(&reward)).await,
            "credit the reward",
        ),
        1,
        "the reward is credited",
    );
    same(
        ok(
            store.credit_income(std::slice::from_ref(&reward)).await,
            "credit it again",
        ),
        0,
        "a repeat credits nothing",
    );
    let listed = ok(store.list_income(&user("olga"), None, 1).await, "list");
    same(
        listed.first().map(|record| record.entry.clone()),
        Some(reward),
        "the newest entry is the reward, without a gift",
    );
    same(
        ok(store.income_balance(&user("olga")).await, "balance"),
        Coins(52),
        "the owner's part and the reward",
    );
}

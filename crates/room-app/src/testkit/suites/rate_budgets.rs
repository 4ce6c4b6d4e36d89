//! The conformance suites of the per-user budgets shared by the nodes. [`RateBudgets`]: a
//! bucket lets its burst through and then refuses with a wait of at most one interval; keys
//! are apart; of takes at once (from several nodes), exactly the burst gets through.
//! [`OpenStreams`](crate::ports::OpenStreams): streams count over the nodes until closed or
//! expired, renewed ones keep counting, and opens at once count no more than the cap.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::fixtures::ok;
use crate::ports::RateBudgets;

/// Runs every [`RateBudgets`] check against stores from `fresh`; `fresh` may answer several
/// clients of one shared store (several nodes), and the checks take from each in turn.
pub async fn rate_budgets_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Vec<Arc<S>>>,
    S: RateBudgets + 'static,
{
    a_bucket_lets_its_burst_through_then_refuses(fresh().await).await;
    takes_at_once_let_exactly_the_burst_through(fresh().await).await;
}

// An interval far longer than a test runs: no request comes back within it.
const INTERVAL: Duration = Duration::from_secs(3_600);

async fn a_bucket_lets_its_burst_through_then_refuses<S: RateBudgets>(nodes: Vec<Arc<S>>) {
    for i in 0..3 {
        let node = &nodes[i % nodes.len()];
        assert_eq!(
            ok(node.take("alice:join", INTERVAL, 3).await, "take"),
            None,
            "request {i} of a burst of 3"
        );
    }
    for node in &nodes {
        let wait = ok(node.take("alice:join", INTERVAL, 3).await, "take")
            .expect("the fourth is refused, on every node");
        assert!(
            wait > Duration::ZERO && wait <= INTERVAL,
            "the wait is at most one interval: {wait:?}"
        );
    }
    assert_eq!(
        ok(nodes[0].take("bob:join", INTERVAL, 3).await, "take"),
        None,
        "another key is another bucket"
    );
    assert_eq!(
        ok(nodes[0].take("alice:gift", INTERVAL, 1).await, "take"),
        None,
        "and so is another class"
    );
}

async fn takes_at_once_let_exactly_the_burst_through<S: RateBudgets + 'static>(nodes: Vec<Arc<S>>) {
    let node = |i: usize| nodes[i % nodes.len()].clone();
    let take = |i: usize| {
        let node = node(i);
        async move { ok(node.take("carol:create", INTERVAL, 4).await, "take") }
    };
    let (a, b, c, d, e, f, g, h) = tokio::join!(
        take(0),
        take(1),
        take(2),
        take(3),
        take(4),
        take(5),
        take(6),
        take(7)
    );
    let through = [a, b, c, d, e, f, g, h]
        .iter()
        .filter(|answer| answer.is_none())
        .count();
    assert_eq!(through, 4, "8 takes at once of a burst of 4");
}

/// Runs every [`OpenStreams`] check against stores from `fresh` (several clients of one store:
/// several nodes, taken in turn).
///
/// [`OpenStreams`]: crate::ports::OpenStreams
pub async fn open_streams_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Vec<Arc<S>>>,
    S: crate::ports::OpenStreams + 'static,
{
    streams_count_over_nodes_until_closed_or_expired(fresh().await).await;
    opens_at_once_count_no_more_than_the_cap(fresh().await).await;
}

async fn streams_count_over_nodes_until_closed_or_expired<S: crate::ports::OpenStreams>(
    nodes: Vec<Arc<S>>,
) {
    use super::fixtures::{at, user};
    let node = |i: usize| &nodes[i % nodes.len()];
    let ttl = Duration::from_secs(30);
    let alice = user("alice");
    for i in 0..2 {
        assert!(
            ok(
                node(i).open(&alice, &format!("s{i}"), 2, at(0), ttl).await,
                "open"
            ),
            "stream {i} of 2"
        );
    }
    assert!(
        !ok(node(2).open(&alice, "s2", 2, at(1_000), ttl).await, "open"),
        "a third over the nodes is refused"
    );
    assert!(
        ok(
            node(0).open(&user("bob"), "s0", 2, at(1_000), ttl).await,
            "open"
        ),
        "another user's streams are theirs"
    );
    ok(node(1).close(&alice, "s1").await, "close");
    assert!(
        ok(node(2).open(&alice, "s2", 2, at(2_000), ttl).await, "open"),
        "a closed stream no longer counts"
    );
    // s0 renewed at 20 s holds until 50 s; s2 opened at 2 s expires at 32 s.
    ok(node(0).renew(&alice, "s0", at(20_000), ttl).await, "renew");
    assert!(
        !ok(node(1).open(&alice, "s3", 2, at(31_000), ttl).await, "open"),
        "both unexpired"
    );
    assert!(
        ok(node(1).open(&alice, "s3", 2, at(33_000), ttl).await, "open"),
        "an entry not renewed (its node died) stops counting once expired"
    );
    assert!(
        !ok(node(2).open(&alice, "s4", 2, at(49_000), ttl).await, "open"),
        "the renewed one still counts"
    );
}

async fn opens_at_once_count_no_more_than_the_cap<S: crate::ports::OpenStreams + 'static>(
    nodes: Vec<Arc<S>>,
) {
    use super::fixtures::{at, user};
    let carol = user("carol");
    let open = |i: usize| {
        let (node, carol) = (nodes[i % nodes.len()].clone(), carol.clone());
        async move {
            ok(
                node.open(&carol, &format!("s{i}"), 3, at(0), Duration::from_secs(30))
                    .await,
                "open",
            )
        }
    };
    let (a, b, c, d, e, f) = tokio::join!(open(0), open(1), open(2), open(3), open(4), open(5));
    let opened = [a, b, c, d, e, f].iter().filter(|opened| **opened).count();
    assert_eq!(opened, 3, "6 opens at once of a cap of 3");
}

//! The conformance suite of [`RateBudgets`]: a bucket lets its burst through and then refuses
//! with a wait of at most one interval; keys are apart; and of takes at once (from several
//! nodes), exactly the burst gets through.

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

//! The conformance suite of [`Lease`]: one holder at a time, renewals only by the holder,
//! expiry, release by the holder only, the holder's registration, contenders racing, and the
//! members of a group finding each other.

use std::future::Future;
use std::time::Duration;

use room_domain::RoomId;

use super::fixtures::{ok, room};
use crate::ports::{LeaseHolder, LeaseRef};
use crate::testkit::{InMemoryLeases, eventually};

/// A lease backend under test: builds the lease of any node over one shared backend (one
/// Redis key prefix, one in-memory table).
pub trait LeaseBackend: Send + Sync {
    /// The lease of node `node_id`, which other nodes reach at `url`.
    fn node(&self, node_id: &str, url: &str) -> LeaseRef;
}

impl LeaseBackend for InMemoryLeases {
    fn node(&self, node_id: &str, url: &str) -> LeaseRef {
        InMemoryLeases::node(self, node_id, url)
    }
}

/// Runs every [`Lease`](crate::ports::Lease) check, each against a fresh backend from
/// `fresh(ttl)`, whose leases and node registrations last `ttl` unless renewed. Expiry is
/// real (tokio) time: the suite takes a few seconds.
pub async fn lease_suite<B, F, Fut>(fresh: F)
where
    F: Fn(Duration) -> Fut,
    Fut: Future<Output = B>,
    B: LeaseBackend,
{
    let long = Duration::from_secs(30);
    one_holder_at_a_time(fresh(long).await).await;
    only_the_holder_renews_or_releases(fresh(long).await).await;
    renew_all_answers_room_by_room(fresh(long).await).await;
    an_expired_lease_goes_to_another_node(fresh(Duration::from_millis(600)).await).await;
    renewals_keep_the_lease(fresh(Duration::from_secs(3)).await).await;
    contenders_racing_get_one_holder(fresh(long).await).await;
    group_members_see_each_other(fresh(long).await).await;
    a_group_member_that_stops_renewing_expires(fresh(Duration::from_millis(600)).await).await;
    a_lock_has_one_holder_until_unlocked(fresh(long).await).await;
    a_lock_whose_holder_vanished_expires(fresh(Duration::from_millis(600)).await).await;
}

async fn a_lock_has_one_holder_until_unlocked(backend: impl LeaseBackend) {
    let (a, b) = (
        backend.node("node-a", "http://a"),
        backend.node("node-b", "http://b"),
    );
    let first = ok(a.try_lock("lucky:alice").await, "try_lock").expect("a free lock is taken");
    assert_eq!(
        ok(b.try_lock("lucky:alice").await, "try_lock"),
        None,
        "another node waits"
    );
    assert_eq!(
        ok(a.try_lock("lucky:alice").await, "try_lock"),
        None,
        "so does another call on the holder's node"
    );
    let other = ok(b.try_lock("lucky:bob").await, "try_lock").expect("locks are apart");
    assert_ne!(first, other, "every holder has its own token");
    ok(b.unlock("lucky:alice", &other).await, "unlock");
    assert_eq!(
        ok(b.try_lock("lucky:alice").await, "try_lock"),
        None,
        "another token does not release the lock"
    );
    ok(a.unlock("lucky:alice", &first).await, "unlock");
    let second = ok(b.try_lock("lucky:alice").await, "try_lock").expect("an unlocked lock");
    assert_ne!(first, second, "a new holder gets a new token");
    ok(a.unlock("lucky:alice", &first).await, "unlock");
    assert_eq!(
        ok(a.try_lock("lucky:alice").await, "try_lock"),
        None,
        "a spent token releases nothing"
    );
    ok(b.unlock("lucky:never-taken", &second).await, "unlock");
}

async fn a_lock_whose_holder_vanished_expires(backend: impl LeaseBackend) {
    let (a, b) = (
        backend.node("node-a", "http://a"),
        backend.node("node-b", "http://b"),
    );
    let stale = ok(a.try_lock("lucky:alice").await, "try_lock").expect("a free lock is taken");
    // Node a never unlocks: within a few TTLs node b gets the lock.
    let taken = std::sync::Arc::new(std::sync::Mutex::new(None));
    eventually("the lock expires", || async {
        let token = ok(b.try_lock("lucky:alice").await, "try_lock");
        let got = token.is_some();
        *taken.lock().unwrap() = token;
        got
    })
    .await;
    ok(a.unlock("lucky:alice", &stale).await, "unlock");
    assert_eq!(
        ok(a.try_lock("lucky:alice").await, "try_lock"),
        None,
        "the late unlock of the first holder leaves the new one's lock"
    );
    let token = taken.lock().unwrap().take().expect("b's token");
    ok(b.unlock("lucky:alice", &token).await, "unlock");
    assert!(ok(a.try_lock("lucky:alice").await, "try_lock").is_some());
}

async fn group_members_see_each_other(backend: impl LeaseBackend) {
    let (a, b, c) = (
        backend.node("node-a", "http://a"),
        backend.node("node-b", "http://b"),
        backend.node("node-c", "http://c"),
    );
    let none: Vec<String> = Vec::new();
    assert_eq!(
        ok(a.join_group("g").await, "join_group"),
        none,
        "alone at first"
    );
    assert_eq!(ok(b.join_group("g").await, "join_group"), vec!["node-a"]);
    assert_eq!(
        ok(c.join_group("other").await, "join_group"),
        none,
        "groups are apart"
    );
    assert_eq!(
        ok(a.join_group("g").await, "join_group"),
        vec!["node-b"],
        "the others only"
    );
    assert_eq!(
        ok(c.join_group("g").await, "join_group"),
        vec!["node-a", "node-b"],
        "sorted"
    );
    ok(b.leave_group("g").await, "leave_group");
    assert_eq!(
        ok(a.join_group("g").await, "join_group"),
        vec!["node-c"],
        "a member that left is gone at once"
    );
    ok(b.leave_group("g").await, "leave_group");
    ok(b.leave_group("never-joined").await, "leave_group");
}

async fn a_group_member_that_stops_renewing_expires(backend: impl LeaseBackend) {
    let (a, b) = (
        backend.node("node-a", "http://a"),
        backend.node("node-b", "http://b"),
    );
    ok(a.join_group("g").await, "join_group");
    assert_eq!(ok(b.join_group("g").await, "join_group"), vec!["node-a"]);
    // b keeps renewing; a does not.
    eventually("a's registration in the group expires", || async {
        ok(b.join_group("g").await, "join_group").is_empty()
    })
    .await;
    assert_eq!(
        ok(a.join_group("g").await, "join_group"),
        vec!["node-b"],
        "b renewed all along"
    );
}

fn holder(node_id: &str, url: &str) -> Option<LeaseHolder> {
    Some(LeaseHolder {
        node_id: node_id.to_owned(),
        url: Some(url.to_owned()),
    })
}

async fn one_holder_at_a_time(backend: impl LeaseBackend) {
    let (a, b) = (
        backend.node("node-a", "http://a"),
        backend.node("node-b", "http://b"),
    );
    let r = room("lease-1");
    assert_eq!(
        ok(a.get_holder(&r).await, "get_holder"),
        None,
        "a free room has no holder"
    );
    assert!(ok(a.acquire(&r).await, "acquire"), "a free room is taken");
    assert!(
        !ok(b.acquire(&r).await, "acquire"),
        "a held room is not taken"
    );
    assert!(
        ok(a.acquire(&r).await, "acquire"),
        "the holder acquires again"
    );
    assert_eq!(
        ok(b.get_holder(&r).await, "get_holder"),
        holder("node-a", "http://a"),
        "any node sees the holder and its address"
    );
    // Another room is independent.
    assert!(ok(b.acquire(&room("lease-2")).await, "acquire"));
}

/// Whether `lease`'s renewal keeps `room` (a keeper tick of that one room).
async fn renews(lease: &LeaseRef, room: &RoomId) -> bool {
    let held = ok(
        lease.renew_all(std::slice::from_ref(room)).await,
        "renew_all",
    );
    assert_eq!(held.len(), 1, "one answer per room");
    held[0]
}

async fn only_the_holder_renews_or_releases(backend: impl LeaseBackend) {
    let (a, b) = (
        backend.node("node-a", "http://a"),
        backend.node("node-b", "http://b"),
    );
    let r = room("lease-1");
    assert!(!renews(&a, &r).await, "a free room is not renewed");
    assert!(ok(a.acquire(&r).await, "acquire"));
    assert!(renews(&a, &r).await, "the holder renews");
    assert!(!renews(&b, &r).await, "another node cannot renew");
    ok(b.release(&r).await, "release");
    assert_eq!(
        ok(a.get_holder(&r).await, "get_holder"),
        holder("node-a", "http://a"),
        "another node's release leaves the lease alone"
    );
    ok(a.release(&r).await, "release");
    assert_eq!(ok(a.get_holder(&r).await, "get_holder"), None, "released");
    assert!(!renews(&a, &r).await, "a released lease is not renewed");
    assert!(
        ok(b.acquire(&r).await, "acquire"),
        "a released room is taken"
    );
    assert!(!renews(&a, &r).await, "the former holder cannot renew");
}

async fn renew_all_answers_room_by_room(backend: impl LeaseBackend) {
    let (a, b) = (
        backend.node("node-a", "http://a"),
        backend.node("node-b", "http://b"),
    );
    let rooms: Vec<RoomId> = (1..=4).map(|i| room(&format!("lease-{i}"))).collect();
    assert!(ok(a.acquire(&rooms[0]).await, "acquire"));
    assert!(ok(a.acquire(&rooms[1]).await, "acquire"));
    assert!(ok(b.acquire(&rooms[2]).await, "acquire"));
    assert_eq!(
        ok(a.renew_all(&rooms).await, "renew_all"),
        vec![true, true, false, false],
        "held, held, another's, free"
    );
    assert_eq!(ok(a.renew_all(&[]).await, "renew_all"), Vec::<bool>::new());
    assert_eq!(
        ok(b.get_holder(&rooms[1]).await, "get_holder"),
        holder("node-a", "http://a")
    );
}

async fn an_expired_lease_goes_to_another_node(backend: impl LeaseBackend) {
    let (a, b) = (
        backend.node("node-a", "http://a"),
        backend.node("node-b", "http://b"),
    );
    let r = room("lease-1");
    assert!(ok(a.acquire(&r).await, "acquire"));
    // Node a stops renewing: within a few TTLs node b gets the room.
    let b2 = b.clone();
    let r2 = r.clone();
    eventually("the expired lease is taken by another node", move || {
        let (b, r) = (b2.clone(), r2.clone());
        async move { ok(b.acquire(&r).await, "acquire") }
    })
    .await;
    assert!(!renews(&a, &r).await, "renewal after expiry fails");
    assert_eq!(
        ok(a.renew_all(std::slice::from_ref(&r)).await, "renew_all"),
        vec![false]
    );
    assert!(
        !ok(a.acquire(&r).await, "acquire"),
        "nor does the former holder take it back"
    );
    assert_eq!(
        ok(a.get_holder(&r).await, "get_holder").map(|h| h.node_id),
        Some("node-b".to_owned())
    );
}

async fn renewals_keep_the_lease(backend: impl LeaseBackend) {
    // TTL 3 s, renewed every 0.4 s for 3.2 s: past its first TTL the lease is still ours. The
    // sleeps let time pass (expiry is the subject); a renewal late by more than 2.6 s would
    // fail the check.
    let (a, b) = (
        backend.node("node-a", "http://a"),
        backend.node("node-b", "http://b"),
    );
    let r = room("lease-1");
    assert!(ok(a.acquire(&r).await, "acquire"));
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(
            ok(a.renew_all(std::slice::from_ref(&r)).await, "renew_all"),
            vec![true]
        );
        assert!(
            !ok(b.acquire(&r).await, "acquire"),
            "a renewed lease stays held"
        );
    }
}

async fn contenders_racing_get_one_holder(backend: impl LeaseBackend) {
    let nodes: Vec<(String, LeaseRef)> = (0..4)
        .map(|i| {
            let id = format!("node-{i}");
            let lease = backend.node(&id, &format!("http://{id}"));
            (id, lease)
        })
        .collect();
    for round in 0..10 {
        let r = room(&format!("race-{round}"));
        let mut tasks = Vec::new();
        for (id, lease) in &nodes {
            for _ in 0..4 {
                let (id, lease, r) = (id.clone(), lease.clone(), r.clone());
                tasks.push(tokio::spawn(async move {
                    (id, ok(lease.acquire(&r).await, "acquire"))
                }));
            }
        }
        let mut winners = Vec::new();
        for task in tasks {
            let (id, won) = task.await.expect("the acquire task");
            if won {
                winners.push(id);
            }
        }
        winners.sort();
        winners.dedup();
        assert_eq!(winners.len(), 1, "one winner per room, got {winners:?}");
        let holder = ok(nodes[0].1.get_holder(&r).await, "get_holder").map(|h| h.node_id);
        assert_eq!(holder.as_ref(), winners.first());
    }
}

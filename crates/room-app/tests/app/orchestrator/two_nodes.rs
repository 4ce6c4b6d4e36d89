//! Orchestrators on two nodes: every room run on exactly one of them, spread over both, and a
//! room whose lease moved stopped on the node that lost it, with nothing more of that node
//! committed.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use room_app::CellConfig;
use room_app::robots::preferred_node;
use room_app::testkit::InMemoryLeases;
use room_domain::{GiftSent, RoomId};

use super::fixtures::{LEASE_TTL, STEP, holder, orchestrator, robot_room, robots_in};
use crate::support::{Nodes, TestIds, World, config, eventually, gifts_in};

/// Two nodes, a and b, over one store and one lease table (leases of 10 s), each reaching
/// the other through an in-process forwarder. Node a's keeper renews every `renew_a` (b's
/// every second); their command ids start `a-` and `b-`.
struct Pair {
    a: World,
    b: World,
    leases: InMemoryLeases,
}

async fn pair(renew_a: Duration) -> Pair {
    let leases = InMemoryLeases::new(LEASE_TTL);
    let node = |id: &str, renew: Duration| CellConfig {
        node_id: id.into(),
        lease_renew_every: renew,
        ..config()
    };
    let a = World::builder()
        .config(node("node-a", renew_a))
        .lease(leases.node("node-a", "http://a"))
        .ids(Arc::new(TestIds::with_prefix("a-")))
        .build()
        .await;
    let b = World::builder()
        .config(node("node-b", Duration::from_secs(1)))
        .store(a.store.clone())
        .lease(leases.node("node-b", "http://b"))
        .ids(Arc::new(TestIds::with_prefix("b-")))
        .build()
        .await;
    Nodes::connect(&[("http://a", &a), ("http://b", &b)]);
    Pair { a, b, leases }
}

/// Creates the robot rooms `names` on a third node over the same store and leases, which
/// then stops, letting every room go: no node holds them.
async fn free_robot_rooms(pair: &Pair, names: &[String]) -> Vec<RoomId> {
    let setup = World::builder()
        .config(CellConfig {
            node_id: "node-setup".into(),
            ..config()
        })
        .store(pair.a.store.clone())
        .lease(pair.leases.node("node-setup", "http://setup"))
        .ids(Arc::new(TestIds::with_prefix("setup-")))
        .build()
        .await;
    let mut rooms = Vec::new();
    for name in names {
        rooms.push(robot_room(&setup, name, true).await);
    }
    setup.runtime().shutdown().await;
    rooms
}

/// Which node's command ids a robot gift carries (`a` or `b`).
fn gift_node(gift: &GiftSent) -> &str {
    gift.order_id.as_str().split('-').next().unwrap_or("")
}

#[tokio::test(start_paused = true)]
async fn ten_robot_rooms_run_each_on_exactly_one_of_two_orchestrators() {
    let pair = pair(Duration::from_secs(1)).await;
    let names: Vec<String> = (0..10).map(|i| format!("robots-{i}")).collect();
    let rooms = free_robot_rooms(&pair, &names).await;
    let Pair { a, b, leases } = &pair;
    let mut on_a = orchestrator(a, leases.node("node-a", "http://a"), "node-a");
    let mut on_b = orchestrator(b, leases.node("node-b", "http://b"), "node-b");

    let never_both = |when: &str| {
        for room in &rooms {
            assert!(
                !(a.runtime().is_active(room) && b.runtime().is_active(room)),
                "{when}: {room} is active on both nodes"
            );
        }
    };
    let mut conflicts = 0;
    for round in 0..8 {
        // Both reach for the rooms at once.
        let (report_a, report_b) = tokio::join!(on_a.reconcile(), on_b.reconcile());
        let (report_a, report_b) = (report_a.unwrap(), report_b.unwrap());
        conflicts += report_a.conflicts + report_b.conflicts;
        never_both(&format!("round {round}"));
        tokio::time::sleep(Duration::from_secs(1)).await;
        never_both(&format!("after round {round}"));
    }
    // One more round each forgets the runtimes that ended.
    on_a.reconcile().await.unwrap();
    on_b.reconcile().await.unwrap();

    let running_a: HashSet<RoomId> = on_a.running().into_iter().collect();
    let running_b: HashSet<RoomId> = on_b.running().into_iter().collect();
    let (node_a, node_b) = (String::from("node-a"), String::from("node-b"));
    for room in &rooms {
        let (here, there, runtime_here, runtime_there) =
            match (running_a.contains(room), running_b.contains(room)) {
                (true, false) => ("node-a", "node-b", a.runtime(), b.runtime()),
                (false, true) => ("node-b", "node-a", b.runtime(), a.runtime()),
                both => panic!("{room} runs on (a, b) = {both:?} (conflicts seen: {conflicts})"),
            };
        assert!(runtime_here.is_active(room), "{room} on {here}");
        assert!(!runtime_there.is_active(room), "{room} also on {there}");
        assert_eq!(holder(leases, room).await.as_deref(), Some(here), "{room}");
        assert_eq!(
            preferred_node(room, &node_a, [&node_b]),
            here,
            "{room} runs on the node it prefers"
        );
    }
    assert!(
        !running_a.is_empty() && !running_b.is_empty(),
        "spread: a runs {running_a:?}, b runs {running_b:?}"
    );

    // Each node's robots play the rooms it runs: their newest gifts carry its ids.
    tokio::time::sleep(Duration::from_secs(10)).await;
    for room in &rooms {
        let gifts = gifts_in(&a.log(room).await);
        let newest = gifts.last().expect("robot gifts");
        let expected = if running_a.contains(room) { "a" } else { "b" };
        assert_eq!(gift_node(newest), expected, "{room}: {newest:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_room_whose_lease_another_node_took_stops_on_the_loser_and_nothing_more_of_it_commits() {
    // Node a's keeper does not renew within the test: its lease on the room runs out.
    let pair = pair(Duration::from_secs(3600)).await;
    let rooms = free_robot_rooms(&pair, &["robots-1".to_owned()]).await;
    let room = &rooms[0];
    let Pair { a, b, leases } = &pair;
    let mut on_a = orchestrator(a, leases.node("node-a", "http://a"), "node-a");
    let mut on_b = orchestrator(b, leases.node("node-b", "http://b"), "node-b");

    assert_eq!(on_a.reconcile().await.unwrap().started, 1);
    tokio::time::sleep(Duration::from_secs(8)).await;
    let a_gifts = |log: &[room_app::ports::StoredEvent]| {
        gifts_in(log).iter().filter(|g| gift_node(g) == "a").count()
    };
    assert!(a_gifts(&a.log(room).await) > 0, "node a's robots give");
    tokio::time::sleep(LEASE_TTL).await;
    assert_eq!(holder(leases, room).await, None, "node a's lease ran out");

    // Node b finds the room free and takes it.
    for _ in 0..4 {
        on_b.reconcile().await.unwrap();
        if !on_b.running().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    assert_eq!(on_b.running(), vec![room.clone()]);
    assert_eq!(holder(leases, room).await.as_deref(), Some("node-b"));
    let a_gifts_at_takeover = a_gifts(&a.log(room).await);

    // Node a's next robot command is fenced: its cell stops, and so does its runtime.
    eventually("node a's cell stops", || async {
        !a.runtime().is_active(room)
    })
    .await;
    tokio::time::sleep(2 * STEP).await;
    let report = on_a.reconcile().await.unwrap();
    assert_eq!(
        (report.started, report.elsewhere),
        (0, 1),
        "node a leaves the room to b: {report:?}"
    );
    assert!(on_a.running().is_empty());
    assert!(b.runtime().is_active(room) && !a.runtime().is_active(room));

    // Node b carries on with the robots node a brought in; node a commits nothing more.
    tokio::time::sleep(Duration::from_secs(20)).await;
    let log = b.log(room).await;
    assert_eq!(
        a_gifts(&log),
        a_gifts_at_takeover,
        "node a committed after losing"
    );
    let gifts = gifts_in(&log);
    let first_b = gifts
        .iter()
        .position(|g| gift_node(g) == "b")
        .expect("node b's robots give");
    assert!(
        gifts[first_b..].iter().all(|g| gift_node(g) == "b"),
        "{:?}",
        gifts[first_b..]
            .iter()
            .map(|g| g.order_id.as_str())
            .collect::<Vec<_>>()
    );
    assert_eq!(robots_in(&b.state(room).await).len(), 3);
}

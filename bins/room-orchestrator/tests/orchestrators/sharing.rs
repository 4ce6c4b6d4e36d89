//! Two orchestrators share ten robot rooms by rendezvous hashing and hold them steadily: every
//! room runs on the node it prefers, the runtime gauges add up, nothing starts, stops or
//! conflicts while settled, and the logs hold no warning or error after start-up.

use std::collections::HashMap;
use std::time::Duration;

use crate::support::{Cluster, Orchestrator, ROOMS, metric};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_orchestrators_share_ten_robot_rooms_steadily() {
    let Some(cluster) = Cluster::start("steady").await else {
        return;
    };
    let ids = cluster.ids();
    let preferred = cluster.preferred(&ids);
    let mut seen: HashMap<String, usize> = HashMap::new();
    let counters = async |node: &Orchestrator| {
        let text = node.metrics().await.expect("the orchestrator answers");
        [
            "room_robot_runtime_starts_total",
            "room_robot_runtime_stops_total",
            "room_robot_ownership_conflicts_total",
        ]
        .map(|name| metric(&text, name, None))
    };
    let mut before = Vec::new();
    for node in &cluster.orchestrators {
        before.push(counters(node).await);
    }
    // About ten seconds.
    let samples = 50;
    for sample in 0..samples {
        let (placement, gauges) = cluster.look(&ids).await;
        for (room, (on, wanted)) in cluster.rooms.iter().zip(placement.iter().zip(&preferred)) {
            assert_eq!(
                on.as_deref(),
                Some(wanted.as_str()),
                "sample {sample}: room {room} runs on {on:?}, not on {wanted} (it prefers it, \
                 and both orchestrators live): {placement:?}"
            );
        }
        let gauges: Vec<f64> = gauges
            .into_iter()
            .map(|g| g.expect("both orchestrators answer"))
            .collect();
        assert_eq!(
            gauges.iter().sum::<f64>(),
            ROOMS as f64,
            "sample {sample}: room_robot_runtimes of {ids:?}: {gauges:?}"
        );
        for (id, gauge) in ids.iter().zip(&gauges) {
            let runs = placement
                .iter()
                .filter(|on| on.as_deref() == Some(id))
                .count();
            assert_eq!(*gauge, runs as f64, "sample {sample}: {id}'s gauge");
            *seen.entry(id.clone()).or_default() += runs;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for id in &ids {
        assert!(seen.get(id).copied().unwrap_or(0) > 0, "{id} ran no room");
    }
    // Nothing moved meanwhile: no runtime started or stopped, no conflict.
    for (node, before) in cluster.orchestrators.iter().zip(before) {
        let after = counters(node).await;
        let runs = preferred.iter().filter(|p| **p == node.id).count() as f64;
        eprintln!(
            "{}: runs {runs}; starts, stops, conflicts: {after:?}",
            node.id
        );
        assert_eq!(
            after, before,
            "{}: runtime starts, stops and conflicts while settled",
            node.id
        );
        assert!(after[0] >= runs, "{}: {after:?} for {runs} rooms", node.id);
    }
    for node in &cluster.orchestrators {
        let problems = node.problems_after_start();
        assert!(
            problems.is_empty(),
            "{} logged after start-up:\n{}",
            node.id,
            problems.join("\n")
        );
    }
    cluster.finish().await;
}

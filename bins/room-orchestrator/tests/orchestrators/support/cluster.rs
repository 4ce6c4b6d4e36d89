//! A settled cluster: a `room-api` node, two orchestrators and ten enabled robot rooms, each
//! running on the orchestrator it prefers; where the rooms run, and the nodes' gauges.

use room_app::robots::preferred_node;
use room_domain::RoomId;
use room_testkit::mysql;

use super::nodes::{Api, Orchestrator};
use super::probes::wait_until;
use super::shared::{API_IDLE_SECS, DEADLINE, ROOMS, Shared, TAKEOVER, Turn, robot_room, shared};

/// A `room-api` node, two orchestrators and ten enabled robot rooms, settled: every room
/// runs on the orchestrator it prefers.
pub(crate) struct Cluster {
    pub(crate) orchestrators: Vec<Orchestrator>,
    pub(crate) api: Api,
    pub(crate) rooms: Vec<String>,
    pub(crate) shared: Shared,
    _database: mysql::TestDatabase,
    _turn: Turn,
}

impl Cluster {
    pub(crate) async fn start(test: &str) -> Option<Cluster> {
        let (shared, database, turn) = shared(test).await?;
        let api = Api::start(&shared, API_IDLE_SECS).await;
        let mut orchestrators = Vec::new();
        for id in ["orch-a", "orch-b"] {
            orchestrators.push(Orchestrator::start(&shared, id).await);
        }
        let mut rooms = Vec::new();
        for i in 0..ROOMS {
            let created = api
                .post("/v1/admin/robot-rooms", "admin", robot_room(i))
                .await;
            rooms.push(created["room_id"].as_str().unwrap().to_owned());
        }
        let cluster = Cluster {
            orchestrators,
            api,
            rooms,
            shared,
            _database: database,
            _turn: turn,
        };
        let ids = cluster.ids();
        let preferred = cluster.preferred(&ids);
        for id in &ids {
            assert!(
                preferred.iter().any(|p| p == id),
                "no room prefers {id} (rename the rooms): {preferred:?}"
            );
        }
        wait_until("the ten rooms run", DEADLINE, || cluster.settled(&ids)).await;
        Some(cluster)
    }

    pub(crate) fn ids(&self) -> Vec<String> {
        self.orchestrators.iter().map(|o| o.id.clone()).collect()
    }

    pub(crate) fn orchestrator(&self, id: &str) -> &Orchestrator {
        self.orchestrators.iter().find(|o| o.id == id).unwrap()
    }

    /// The node each room prefers among `live` (rendezvous hashing, as the orchestrators
    /// compute it).
    pub(crate) fn preferred(&self, live: &[String]) -> Vec<String> {
        self.rooms
            .iter()
            .map(|room| {
                let room = RoomId::new(room.as_str()).unwrap();
                preferred_node(&room, &live[0], live[1..].iter()).to_owned()
            })
            .collect()
    }

    /// One look at the cluster: where each room runs and each live node's runtime gauge.
    pub(crate) async fn look(&self, live: &[String]) -> (Vec<Option<String>>, Vec<Option<f64>>) {
        let placement = self.api.running_on(&self.rooms).await;
        let mut gauges = Vec::new();
        for id in live {
            gauges.push(self.orchestrator(id).runtimes().await);
        }
        (placement, gauges)
    }

    /// Whether every room runs on the node it prefers among `live`, and each live node's
    /// gauge counts the rooms it runs: `Err` says what was seen instead.
    async fn settled(&self, live: &[String]) -> Result<(), String> {
        let preferred = self.preferred(live);
        let (placement, gauges) = self.look(live).await;
        let expected: Vec<Option<String>> = preferred.iter().cloned().map(Some).collect();
        let counts: Vec<Option<f64>> = live
            .iter()
            .map(|id| Some(preferred.iter().filter(|p| *p == id).count() as f64))
            .collect();
        if placement == expected && gauges == counts {
            Ok(())
        } else {
            Err(format!(
                "running_on {placement:?} (preferred {preferred:?}), gauges of {live:?} {gauges:?}"
            ))
        }
    }

    pub(crate) async fn settle(&self, what: &str, live: &[String]) {
        wait_until(what, DEADLINE, || self.settled(live)).await;
    }

    /// The rooms running on `id` now.
    pub(crate) async fn rooms_on(&self, id: &str) -> Vec<String> {
        let placement = self.api.running_on(&self.rooms).await;
        self.rooms
            .iter()
            .zip(placement)
            .filter(|(_, on)| on.as_deref() == Some(id))
            .map(|(room, _)| room.clone())
            .collect()
    }

    /// Waits until every room runs on `id`.
    pub(crate) async fn all_on(&self, what: &str, id: &str) {
        wait_until(what, TAKEOVER, || async {
            let placement = self.api.running_on(&self.rooms).await;
            if placement.iter().all(|on| on.as_deref() == Some(id)) {
                Ok(())
            } else {
                Err(format!("running_on {placement:?}"))
            }
        })
        .await;
    }

    pub(crate) async fn finish(self) {
        let Cluster {
            orchestrators,
            api,
            _database,
            ..
        } = self;
        for node in &orchestrators {
            let problems = node.problems_after_start();
            if !problems.is_empty() {
                eprintln!(
                    "{} logged after start-up:\n{}",
                    node.id,
                    problems.join("\n")
                );
            }
        }
        drop(orchestrators);
        api.stop().await;
    }
}

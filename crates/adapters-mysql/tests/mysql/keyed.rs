//! Keyed requests on MariaDB: two nodes (two stores on one database) admitting the same key at
//! once run it once; the other is told it is in use, then gets the answer.

use std::sync::Arc;
use std::time::Duration;

use adapters_mysql::{MySqlSettings, MySqlStore};
use room_app::IdempotencyKey;
use room_app::keyed::{Admission, KeyedGate, fingerprint};
use room_app::ports::{ClockRef, KeyedAnswer, KeyedRequestsRef};
use room_testkit::ManualClock;

use crate::fixtures::{T0, fixture, user};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_nodes_admitting_one_key_at_once_run_it_once() {
    let Some(f) = fixture("mysql::keyed_two_nodes", |_| {}).await else {
        return;
    };
    let mut settings = MySqlSettings::new(f.database.url.clone());
    settings.max_connections = 4;
    let other = Arc::new(MySqlStore::open(&settings).await.expect("a second node"));
    let clock: ClockRef = ManualClock::at(T0);
    let gates = [
        (f.store.clone() as KeyedRequestsRef, "node-0"),
        (other as KeyedRequestsRef, "node-1"),
    ]
    .map(|(records, node)| KeyedGate::new(records, clock.clone(), node, Duration::from_secs(20)));
    let alice = user("alice");
    let request = fingerprint(
        "POST",
        "/v1/admin/robot-rooms",
        br#"{"robots":["robot-1"]}"#,
    );
    for round in 0..20 {
        let key = IdempotencyKey::new("POST /v1/admin/robot-rooms", &format!("k-{round}")).unwrap();
        let (a, b) = tokio::join!(
            gates[0].admit(&key, &alice, &request),
            gates[1].admit(&key, &alice, &request)
        );
        let (a, b) = (a.unwrap(), b.unwrap());
        let (winner, ticket) = match (a, b) {
            (Admission::Run(ticket), Admission::InUse) => (0, ticket),
            (Admission::InUse, Admission::Run(ticket)) => (1, ticket),
            other => panic!("round {round}: {other:?}"),
        };
        let answer = KeyedAnswer {
            status: 201,
            body: format!("{{\"round\":{round}}}"),
        };
        gates[winner]
            .answered(ticket, Some(answer.clone()))
            .await
            .unwrap();
        for gate in &gates {
            assert_eq!(
                gate.admit(&key, &alice, &request).await.unwrap(),
                Admission::Replay(answer.clone()),
                "round {round}"
            );
        }
    }
}

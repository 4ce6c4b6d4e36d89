//! IM group effects as a consumer of the durable facts, against the fake Tencent IM: a
//! one-node deployment (SQLite) with IM and without Kafka starts, and creates, mutes and
//! destroys the rooms' groups from its own outbox; a new room's group exists when its
//! creation is answered, also while the process that should run the effects is dead (its
//! claim held, or, with Kafka, its consumer group's partitions held by a stuck member); a
//! creation IM failed at once is done again from the durable fact.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use adapters_mq::{EventConsumer, EventConsumerSettings, KafkaPublisher};
use adapters_tencent_im::{FakeIm, Fault, group_id};
use axum::http::StatusCode;
use rdkafka::mocking::MockCluster;
use room_app::ports::{EventPublisher, OutboxMessage};
use room_domain::{Event, EventEnvelope, RoomId, Timestamp};
use room_node::GROUP_EFFECTS_CONSUMER_GROUP;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::{TestApp, eventually};

fn now() -> Timestamp {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis();
    Timestamp(i64::try_from(millis).unwrap())
}

fn group_of(room_id: &str) -> String {
    group_id(&room_id.parse().unwrap())
}

/// A one-node service on SQLite with IM, without Kafka, running its background work; its IM
/// group effects go by `name`.
async fn node_without_kafka(im: &FakeIm, name: &str) -> TestApp {
    let settings = im.settings();
    let name = name.to_owned();
    TestApp::with(move |s| {
        s.im = settings;
        s.workers.im_effects_group = name;
        s.outbox.consume_every_ms = 10;
        assert!(s.kafka.brokers.is_none(), "no broker");
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_kafka_a_node_creates_mutes_and_destroys_im_groups() {
    let im = FakeIm::start().await;
    let app = node_without_kafka(&im, "im-no-kafka").await;
    let room_id = app.create_room("alice").await;
    let group = group_of(&room_id);
    assert!(
        im.group_exists(&group),
        "the group exists when the room's creation is answered"
    );
    app.join(&room_id, "alice").await;
    app.join(&room_id, "bob").await;

    let (status, body) = app
        .post(
            &format!("/v1/rooms/{room_id}/mute"),
            &app.token("alice"),
            json!({ "user_id": "bob", "seconds": 600 }),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    eventually("bob is muted in the room's group", || {
        std::future::ready(im.muted(&group, "bob").is_some_and(|secs| secs > 0))
    })
    .await;
    assert_eq!(im.muted(&group, "alice"), None, "the owner may speak");

    let (status, body) = app
        .post(
            &format!("/v1/rooms/{room_id}/close"),
            &app.token("alice"),
            json!({}),
        )
        .await;
    assert!(status.is_success(), "{status} {body}");
    eventually("the closed room's group is destroyed", || {
        std::future::ready(!im.group_exists(&group))
    })
    .await;
    eventually("the consumer's position passed every fact", || async {
        let outbox = &app.app.storage().outbox;
        let last = outbox
            .list_after(0, 10_000)
            .await
            .unwrap()
            .last()
            .map(|m| m.id);
        app.app
            .storage()
            .positions
            .get_position("im-no-kafka")
            .await
            .unwrap()
            == last
    })
    .await;
    let metrics = app.app.metrics_text();
    assert!(
        metrics.contains("room_facts_handled_total{consumer=\"im-no-kafka\"}"),
        "the consumer's facts are counted: {metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_whose_creation_failed_at_once_is_created_from_the_durable_fact() {
    let im = FakeIm::start().await;
    let app = node_without_kafka(&im, "im-retried").await;
    // The next call, the creation handed over as the room is created, fails.
    im.fail_next(1, Fault::Http(502));
    let room_id = app.create_room("alice").await;
    let group = group_of(&room_id);
    eventually("the consumer creates the group", || {
        std::future::ready(im.group_exists(&group))
    })
    .await;
    assert!(
        im.request_count("create_group") >= 2,
        "created a second time"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_rooms_group_exists_when_answered_though_the_effects_consumer_is_dead() {
    let im = FakeIm::start().await;
    let settings = im.settings();
    let app = TestApp::unstarted(move |s| {
        s.im = settings;
        s.outbox.consume_every_ms = 10;
    })
    .await;
    // A process that died holding the consumer's claim: nobody reads the outbox for an hour.
    let held = app
        .app
        .storage()
        .claims
        .claim(
            &format!("consumer:{GROUP_EFFECTS_CONSUMER_GROUP}"),
            "dead-worker",
            Duration::from_secs(3_600),
        )
        .await
        .unwrap();
    assert!(held);
    app.app.start().await.unwrap();

    let room_id = app.create_room("alice").await;
    assert!(
        im.group_exists(&group_of(&room_id)),
        "the group exists when the creation is answered, whoever reads the facts"
    );
    assert_eq!(
        app.app
            .storage()
            .positions
            .get_position(GROUP_EFFECTS_CONSUMER_GROUP)
            .await
            .unwrap(),
        None,
        "the consumer has read nothing: its claim is held"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_kafka_a_new_rooms_group_exists_though_a_stuck_member_holds_the_partitions() {
    let cluster = MockCluster::new(1).expect("mock cluster");
    let topic = format!("room.events.im-{}", now().0);
    cluster.create_topic(&topic, 3, 1).expect("topic");
    let brokers = cluster.bootstrap_servers();
    let group = format!("im-effects-{}", now().0);

    // A worker running the effects that is stuck: a member of the group that took every
    // partition and hangs on the first fact it reads (as a worker does until the broker's
    // session timeout or poll interval has passed).
    let publisher = KafkaPublisher::connect(&{
        let mut kafka = adapters_mq::KafkaSettings::new(brokers.clone());
        kafka.topic = topic.clone();
        kafka
    })
    .await
    .unwrap();
    let earlier = EventEnvelope::new(
        RoomId::new("earlier-room").unwrap(),
        1,
        now(),
        &Event::RoomChatEnabledChanged {
            enabled: false,
            by: None,
        },
    );
    let published = publisher
        .publish(&[OutboxMessage {
            id: 1,
            envelope: earlier,
        }])
        .await;
    assert!(published.error.is_none(), "{:?}", published.error);
    let mut member = EventConsumerSettings::new(brokers.clone(), &group);
    member.topic = topic.clone();
    let stuck = EventConsumer::subscribe(&member).unwrap();
    let (got, hang) = (
        Arc::new(tokio::sync::Notify::new()),
        CancellationToken::new(),
    );
    tokio::spawn({
        let (got, hang) = (got.clone(), hang.clone());
        async move {
            stuck
                .run(
                    move |_envelope| {
                        got.notify_one();
                        std::future::pending::<Result<(), String>>()
                    },
                    hang,
                )
                .await
        }
    });
    tokio::time::timeout(Duration::from_secs(60), got.notified())
        .await
        .expect("the stuck member holds the partitions");

    let im = FakeIm::start().await;
    let settings = im.settings();
    let app = TestApp::with(move |s| {
        s.im = settings;
        s.kafka.brokers = Some(brokers);
        s.kafka.topic = topic;
        s.workers.im_effects_group = group;
    })
    .await;
    let room_id = app.create_room("alice").await;
    assert!(
        im.group_exists(&group_of(&room_id)),
        "the group exists when the creation is answered, though the group's partitions are held"
    );
}

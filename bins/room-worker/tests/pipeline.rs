//! The outbox's whole way, on the real services: a `room-api` node (in this process, with
//! `workers.in_process` off) on MariaDB (`ROOM_TEST_MYSQL_URL`) and Redis
//! (`ROOM_TEST_REDIS_URL`) commits rooms, joins and gifts; `room-worker` processes publish
//! the outbox to a Kafka broker (`ROOM_TEST_KAFKA_BROKERS`); the consumer helper of
//! `adapters-mq` reads the topic. Every durable fact arrives, in order per room, and the
//! outbox ends delivered — also when the worker publishing it is killed with `kill -9`
//! midway and another takes its claim over. With Tencent IM configured (a fake IM server),
//! the API node creates each room's IM group as it creates the room (the worker again from
//! its creation fact), the worker mutes a member the room muted, mutes the members of a room
//! whose chat is switched off (not its owner), destroys the group of a closed room, and the API
//! node's display reaches the groups: every gift.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use adapters_mq::{EventConsumer, EventConsumerSettings};
use adapters_tencent_im::{FakeIm, group_id};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use room_app::testkit;
use room_domain::{Event, EventEnvelope, UserId};
use room_node::{App, Authenticator, Settings, Storage, StorageSettings};
use room_testkit::{mysql, redis};
use secrecy::SecretString;
use serde_json::{Value, json};
use sqlx::{Connection, MySqlConnection};
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

const SECRET: &str = "pipeline-test-secret-of-at-least-32-bytes";
const INTERNAL_TOKEN: &str = "pipeline-test-internal-token-of-32-bytes";
const DEADLINE: Duration = Duration::from_secs(120);
const PARTITIONS: i32 = 3;

use room_testkit::process::free_port;

/// What the nodes of the test share.
struct Cluster {
    im: FakeIm,
    mysql_url: String,
    redis_url: String,
    prefix: String,
    brokers: String,
    topic: String,
}

impl Cluster {
    /// The settings of the API node: clustered, background work off.
    fn api_settings(&self, port: u16) -> Settings {
        let mut settings = Settings::default();
        settings.http.addr = ([127, 0, 0, 1], port).into();
        settings.storage.url = self.mysql_url.clone();
        settings.storage.max_connections = 4;
        settings.auth.jwt_secret = SecretString::from(SECRET);
        settings.cell.node_id = "api-1".into();
        settings.lease.redis_url = Some(SecretString::from(self.redis_url.clone()));
        settings.lease.key_prefix = self.prefix.clone();
        settings.cluster.advertise_url = Some(format!("http://127.0.0.1:{port}"));
        settings.cluster.internal_token = Some(SecretString::from(INTERNAL_TOKEN));
        settings.workers.in_process = false;
        settings.im = self.im.settings();
        settings
    }

    /// Starts a `room-worker` process and waits until it is ready.
    async fn worker(&self, node_id: &str) -> Child {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_room-worker"))
            .env("ROOM__HTTP__ADDR", format!("127.0.0.1:{port}"))
            .env("ROOM__STORAGE__URL", &self.mysql_url)
            .env("ROOM__STORAGE__MAX_CONNECTIONS", "4")
            .env("ROOM__AUTH__JWT_SECRET", SECRET)
            .env("ROOM__CELL__NODE_ID", node_id)
            .env("ROOM__LEASE__REDIS_URL", &self.redis_url)
            .env("ROOM__LEASE__KEY_PREFIX", &self.prefix)
            .env(
                "ROOM__CLUSTER__ADVERTISE_URL",
                format!("http://127.0.0.1:{port}"),
            )
            .env("ROOM__CLUSTER__INTERNAL_TOKEN", INTERNAL_TOKEN)
            .env("ROOM__KAFKA__BROKERS", &self.brokers)
            .env("ROOM__KAFKA__TOPIC", &self.topic)
            .env("ROOM__IM__BASE_URL", self.im.base_url())
            .env("ROOM__IM__SDK_APP_ID", FakeIm::SDK_APP_ID.to_string())
            .env("ROOM__IM__SECRET_KEY", FakeIm::SECRET_KEY)
            .env("ROOM__IM__ADMIN_ID", FakeIm::ADMIN)
            .env(
                "ROOM__WORKERS__IM_EFFECTS_GROUP",
                format!("{}.im", self.topic),
            )
            // The killed worker's place in the consumer group is given up after 6 s, and a
            // rebalance waits at most 10 s for members that do not answer.
            .env("ROOM__KAFKA__PROPERTIES__SESSION_TIMEOUT_MS", "6000")
            .env("ROOM__KAFKA__PROPERTIES__MAX_POLL_INTERVAL_MS", "10000")
            // A killed worker's claim passes to the next one after two seconds.
            .env("ROOM__WORKERS__CLAIM_TTL_SECS", "2")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start room-worker");
        let http = reqwest::Client::new();
        let deadline = Instant::now() + DEADLINE;
        loop {
            let ready = http
                .get(format!("http://127.0.0.1:{port}/readyz"))
                .send()
                .await;
            if ready.is_ok_and(|r| r.status().is_success()) {
                return child;
            }
            assert!(Instant::now() < deadline, "{node_id} did not become ready");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A name no other run of these tests uses (topics, groups, directories).
fn unique() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{}-{nanos}", std::process::id())
}

/// A node served in this process on a socket, until [`Served::stop`].
struct Served {
    client: Client,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Served {
    async fn start(settings: Settings, port: u16) -> Served {
        let app = App::build(settings).await.expect("the node builds");
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        let stop = CancellationToken::new();
        let task = tokio::spawn({
            let stop = stop.clone();
            app.serve(listener, async move { stop.cancelled().await })
        });
        Served {
            client: Client {
                base: format!("http://127.0.0.1:{port}"),
                http: reqwest::Client::new(),
            },
            stop,
            task,
        }
    }

    async fn stop(self) {
        self.stop.cancel();
        self.task.await.unwrap().expect("the node stopped cleanly");
    }
}

/// A client of the API node.
struct Client {
    base: String,
    http: reqwest::Client,
}

impl Client {
    fn token(&self, user: &str) -> String {
        Authenticator::new(&SecretString::from(SECRET))
            .unwrap()
            .mint(
                &UserId::new(user).unwrap(),
                user == "admin",
                Duration::from_secs(600),
            )
            .unwrap()
    }

    /// Posts until the answer is a success, retrying what the service says is retryable.
    async fn post(&self, path: &str, user: &str, body: Value) -> Value {
        let token = self.token(user);
        let deadline = Instant::now() + DEADLINE;
        loop {
            let response = self
                .http
                .post(format!("{}{path}", self.base))
                .bearer_auth(&token)
                .json(&body)
                .send()
                .await
                .expect("the API node answers");
            let status = response.status();
            let value: Value = response.json().await.unwrap_or(Value::Null);
            if status.is_success() {
                return value;
            }
            assert_eq!(
                value["error"]["retryable"],
                json!(true),
                "POST {path}: {status} {value}"
            );
            assert!(
                Instant::now() < deadline,
                "POST {path} never succeeded: {value}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The consumer helper reading every partition of a topic from the start, collecting what it
/// reads.
struct Reader {
    seen: Arc<Mutex<Vec<EventEnvelope>>>,
    reading: CancellationToken,
    task: tokio::task::JoinHandle<adapters_mq::Result<()>>,
}

impl Reader {
    fn start(brokers: &str, topic: &str, group: &str) -> Reader {
        let mut settings = EventConsumerSettings::new(brokers, group);
        settings.topic = topic.to_owned();
        let consumer = EventConsumer::assign(&settings, &(0..PARTITIONS).collect::<Vec<_>>())
            .expect("a consumer");
        let seen: Arc<Mutex<Vec<EventEnvelope>>> = Arc::default();
        let reading = CancellationToken::new();
        let task = tokio::spawn({
            let (seen, reading) = (seen.clone(), reading.clone());
            async move {
                consumer
                    .run(
                        move |envelope| {
                            seen.lock().unwrap().push(envelope);
                            std::future::ready(Ok::<(), String>(()))
                        },
                        reading,
                    )
                    .await
            }
        });
        Reader {
            seen,
            reading,
            task,
        }
    }

    async fn stop(self) {
        self.reading.cancel();
        self.task.await.unwrap().expect("the consumer ran");
    }
}

async fn create_topic(brokers: &str, topic: &str) {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()
        .expect("an admin client");
    let results = admin
        .create_topics(
            &[NewTopic::new(topic, PARTITIONS, TopicReplication::Fixed(1))],
            &AdminOptions::new().operation_timeout(Some(Duration::from_secs(10))),
        )
        .await
        .expect("create_topics answers");
    for result in results {
        result.expect("the topic is created");
    }
}

/// Waits until IM shows every gift of every room, room 0's sender is muted for its own ten
/// minutes and room 1's sender for chat switched off, and no owner is muted.
async fn wait_for_im(im: &FakeIm, rooms: &[String], gifts: usize) {
    let deadline = Instant::now() + DEADLINE;
    for (r, room_id) in rooms.iter().enumerate() {
        let group = group_id(&room_id.parse().unwrap());
        loop {
            let shown = im
                .messages(&group)
                .iter()
                .flat_map(|m| m.events())
                .filter(|e| e["type"] == json!("RoomGiftSent"))
                .count();
            let muted = im.muted(&group, &format!("sender{r}"));
            assert_eq!(
                im.muted(&group, &format!("owner{r}")),
                None,
                "room {room_id}: the owner may always speak"
            );
            let mute_right = match r {
                0 => muted.is_some_and(|secs| secs <= 600),
                1 => muted.is_some_and(|secs| secs > 600),
                _ => muted.is_none(),
            };
            if shown == gifts && mute_right {
                break;
            }
            if Instant::now() >= deadline {
                let calls: Vec<String> = im
                    .requests()
                    .iter()
                    .filter(|r| r.command != "send_group_msg")
                    .map(|r| {
                        format!(
                            "{} {:?} {}",
                            r.command,
                            r.error_code,
                            String::from_utf8_lossy(&r.body)
                        )
                    })
                    .collect();
                panic!(
                    "room {room_id} (group {group}): {shown} of {gifts} gifts shown in IM, the \
                     sender muted {muted:?}; IM calls but messages: {calls:#?}"
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn count(mysql_url: &str, sql: &'static str) -> usize {
    let mut conn = MySqlConnection::connect(mysql_url).await.unwrap();
    let (count,): (i64,) = sqlx::query_as(sql).fetch_one(&mut conn).await.unwrap();
    let _ = conn.close().await;
    usize::try_from(count).unwrap()
}

async fn undelivered(mysql_url: &str) -> usize {
    count(
        mysql_url,
        "SELECT COUNT(*) FROM room_outbox WHERE delivered_at IS NULL",
    )
    .await
}

async fn outbox_rows(mysql_url: &str) -> usize {
    count(mysql_url, "SELECT COUNT(*) FROM room_outbox").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_durable_fact_reaches_the_consumer_in_room_order_across_a_killed_worker() {
    let Some(brokers) = testkit::service_url("ROOM_TEST_KAFKA_BROKERS") else {
        return;
    };
    let Some(redis_url) = redis::url() else {
        return;
    };
    let Some(server) = mysql::MySqlServer::from_env("pipeline").await else {
        return;
    };
    let database = server.database().await;
    let unique = unique();
    let cluster = Cluster {
        im: FakeIm::start().await,
        mysql_url: database.url.clone(),
        redis_url,
        prefix: format!("{}pipeline:", redis::prefix()),
        brokers: brokers.clone(),
        topic: format!("room.events.test.{unique}"),
    };
    create_topic(&brokers, &cluster.topic).await;
    Storage::migrate(&StorageSettings {
        url: cluster.mysql_url.clone(),
        ..StorageSettings::default()
    })
    .await
    .expect("migrate");

    // The API node, serving on a socket until the test ends.
    let port = free_port();
    let api = Served::start(cluster.api_settings(port), port).await;
    let client = &api.client;

    let reader = Reader::start(&brokers, &cluster.topic, &format!("pipeline-{unique}"));
    let seen = reader.seen.clone();

    let mut worker = cluster.worker("worker-1").await;
    let mut rooms = Vec::new();
    // A user is in one room at a time: each room has an owner and a sender of its own.
    for n in 0..3 {
        let room = client
            .post(
                "/v1/rooms",
                &format!("owner{n}"),
                json!({ "name": format!("Room {n}") }),
            )
            .await;
        let room_id = room["room_id"].as_str().unwrap().to_owned();
        for user in [format!("owner{n}"), format!("sender{n}")] {
            client
                .post(&format!("/v1/rooms/{room_id}/join"), &user, json!({}))
                .await;
        }
        client
            .post(
                &format!("/v1/admin/wallets/sender{n}/credit"),
                "admin",
                json!({ "op_id": format!("pipeline-{n}"), "amount": 100_000 }),
            )
            .await;
        rooms.push(room_id);
    }
    // The API node creates each room's IM group as it creates the room (and the worker again
    // from the room's creation fact); display sent before the group exists is lost, so the
    // gifts wait for it.
    let deadline = Instant::now() + DEADLINE;
    while !rooms
        .iter()
        .all(|room| cluster.im.group_exists(&group_id(&room.parse().unwrap())))
    {
        assert!(
            Instant::now() < deadline,
            "the IM groups were never created"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    const GIFTS_PER_ROOM: usize = 20;
    let send = |half: usize| {
        let (client, rooms) = (&client, rooms.clone());
        async move {
            for (r, room_id) in rooms.iter().enumerate() {
                for n in half * GIFTS_PER_ROOM / 2..(half + 1) * GIFTS_PER_ROOM / 2 {
                    let body = json!({
                        "order_id": format!("order-{n}"),
                        "gift_id": "rose",
                        "count": 1,
                        "recipients": [format!("owner{r}")],
                    });
                    let path = format!("/v1/rooms/{room_id}/gifts");
                    let answer = client.post(&path, &format!("sender{r}"), body).await;
                    assert_eq!(answer["status"], json!("COMPLETED"), "{answer}");
                }
            }
        }
    };
    send(0).await;
    // The first worker dies without a word; the rest is committed while no worker runs.
    worker.start_kill().unwrap();
    worker.wait().await.unwrap();
    send(1).await;
    worker = cluster.worker("worker-2").await;
    // Room 0 mutes its sender's chat for ten minutes; room 1 switches its chat off, which
    // mutes everyone in its group but the owner; room 2 closes.
    client
        .post(
            &format!("/v1/rooms/{}/mute", rooms[0]),
            "owner0",
            json!({ "user_id": "sender0", "seconds": 600 }),
        )
        .await;
    let patch = client
        .http
        .patch(format!("{}/v1/rooms/{}", client.base, rooms[1]))
        .bearer_auth(client.token("owner1"))
        .json(&json!({ "chat_enabled": false }))
        .send()
        .await
        .unwrap();
    assert!(
        patch.status().is_success(),
        "{}",
        patch.text().await.unwrap()
    );
    wait_for_im(&cluster.im, &rooms, GIFTS_PER_ROOM).await;
    for (r, room_id) in rooms.iter().enumerate() {
        let sender = format!("sender{r}");
        client
            .post(&format!("/v1/rooms/{room_id}/leave"), &sender, json!({}))
            .await;
    }
    client
        .post(
            &format!("/v1/rooms/{}/close", rooms[2]),
            "owner2",
            json!({}),
        )
        .await;

    // Every durable fact the commits wrote arrives.
    let written = outbox_rows(&cluster.mysql_url).await;
    let deadline = Instant::now() + DEADLINE;
    loop {
        let count = seen.lock().unwrap().len();
        let left = undelivered(&cluster.mysql_url).await;
        if count >= written && left == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{count} of {written} facts arrived; {left} rows undelivered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    reader.stop().await;

    let seen = seen.lock().unwrap().clone();
    let mut by_room: BTreeMap<String, Vec<EventEnvelope>> = BTreeMap::new();
    for envelope in seen {
        by_room
            .entry(envelope.room_id.to_string())
            .or_default()
            .push(envelope);
    }
    assert_eq!(
        by_room.len(),
        rooms.len(),
        "facts of every room, of no other"
    );
    for (room_id, facts) in &by_room {
        let seqs: Vec<u64> = facts.iter().map(|e| e.seq).collect();
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "room {room_id}: facts in seq order, each once: {seqs:?}"
        );
        let gifts = facts
            .iter()
            .filter(|e| matches!(e.event, Event::RoomGiftSent(_)))
            .count();
        assert_eq!(gifts, GIFTS_PER_ROOM, "room {room_id}: every gift");
        assert!(
            matches!(facts[0].event, Event::RoomCreated { .. }),
            "room {room_id}: its creation first"
        );
        assert!(
            facts
                .iter()
                .any(|e| matches!(e.event, Event::RoomUserLeft { .. })),
            "room {room_id}: a leave is a durable fact"
        );
    }
    let arrived: usize = by_room.values().map(Vec::len).sum();
    assert_eq!(
        arrived, written,
        "each fact once, after the consumer's deduplication"
    );
    let closed = group_id(&rooms[2].parse().unwrap());
    let deadline = Instant::now() + DEADLINE;
    while cluster.im.group_exists(&closed) {
        assert!(
            Instant::now() < deadline,
            "the closed room's group was never destroyed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    worker.start_kill().unwrap();
    let _ = worker.wait().await;
    api.stop().await;
}

/// One embedded node (SQLite, no Redis, no worker) publishes its own outbox: `room-api` runs
/// the publisher in process when Kafka is configured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_node_publishes_its_outbox_itself() {
    let Some(brokers) = testkit::service_url("ROOM_TEST_KAFKA_BROKERS") else {
        return;
    };
    let unique = unique();
    let topic = format!("room.events.embedded.{unique}");
    create_topic(&brokers, &topic).await;
    let dir = std::env::temp_dir().join(format!("room-embedded-{unique}"));
    std::fs::create_dir_all(&dir).unwrap();

    let port = free_port();
    let mut settings = Settings::default();
    settings.http.addr = ([127, 0, 0, 1], port).into();
    settings.storage.url = format!("sqlite://{}", dir.join("room.db").display());
    settings.auth.jwt_secret = SecretString::from(SECRET);
    settings.kafka.brokers = Some(brokers.clone());
    settings.kafka.topic = topic.clone();
    let node = Served::start(settings, port).await;
    let client = &node.client;
    let room = client
        .post("/v1/rooms", "owner", json!({ "name": "Embedded" }))
        .await;
    let room_id = room["room_id"].as_str().unwrap().to_owned();
    client
        .post(&format!("/v1/rooms/{room_id}/join"), "guest", json!({}))
        .await;

    let reader = Reader::start(&brokers, &topic, &format!("embedded-{unique}"));
    let seen = reader.seen.clone();
    let deadline = Instant::now() + DEADLINE;
    loop {
        let types: Vec<&'static str> = seen
            .lock()
            .unwrap()
            .iter()
            .map(|e| e.event.type_name())
            .collect();
        if types.contains(&"RoomCreated") && types.contains(&"RoomUserJoined") {
            assert!(
                seen.lock()
                    .unwrap()
                    .iter()
                    .all(|e| e.room_id.as_str() == room_id),
                "only the room's facts"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the facts never arrived: {types:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    reader.stop().await;
    node.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

//! The conformance suite of [`RobotRooms`]: create refuses a second configuration for a room,
//! update is conditional on the version, list pages by room id and is bounded, delete says
//! whether there was something to delete; a robot is in one pool, claimed with the
//! configuration's write and freed by its change or delete, and of two claims at once
//! exactly one wins.

use std::future::Future;
use std::sync::Arc;

use super::fixtures::{at, expect_err, gift_id, ok, room, same, user};
use crate::Error;
use crate::ports::{GiftShare, MAX_ROBOT_ROOM_PAGE, RobotProfile, RobotRoomConfig, RobotRooms};

fn config(room_id: &str) -> RobotRoomConfig {
    RobotRoomConfig {
        room_id: room(room_id),
        profile: RobotProfile {
            name: format!("Robots of {room_id}"),
            notice: "Always\nopen 🎶".into(),
            cover_url: Some("https://img.example/cover.png".into()),
        },
        seat_count: 8,
        robots: (0..3)
            .map(|i| user(&format!("robot-{room_id}-{i}")))
            .collect(),
        audience: (0..24).map(|hour| hour % 4).collect(),
        seats: 2,
        gift_rate_per_minute: 12,
        gift_mix: vec![
            GiftShare {
                gift_id: gift_id("rose"),
                weight: 10,
            },
            GiftShare {
                gift_id: gift_id("car"),
                weight: 1,
            },
        ],
        enabled: true,
        version: 1,
        created_at: at(0),
        updated_at: at(0),
    }
}

/// Runs every [`RobotRooms`] check, each against a fresh store from `fresh`.
pub async fn robot_rooms_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: RobotRooms + 'static,
{
    create_get_and_delete(fresh().await).await;
    update_is_conditional(fresh().await).await;
    list_pages_by_room_id(fresh().await).await;
    a_robot_is_in_one_pool(fresh().await).await;
    of_two_claims_at_once_one_wins(fresh().await).await;
}

#[track_caller]
fn taken(answer: crate::Result<()>, robot: &str, held_by: &str, what: &str) {
    match answer {
        Err(Error::RobotTaken { robot: r, room_id }) => {
            assert_eq!(
                (r.as_str(), room_id.as_str()),
                (robot, held_by),
                "{what}: the robot and the pool holding it"
            );
        }
        other => panic!("{what}: expected RobotTaken, got {other:?}"),
    }
}

async fn a_robot_is_in_one_pool<S: RobotRooms>(store: Arc<S>) {
    let a = config("room-a");
    ok(store.create(&a).await, "create");
    same(
        ok(
            store
                .list_by_robots(&[
                    user("robot-x"),
                    user("robot-room-a-2"),
                    user("robot-room-a-0"),
                ])
                .await,
            "list_by_robots",
        ),
        vec![
            (user("robot-room-a-2"), room("room-a")),
            (user("robot-room-a-0"), room("room-a")),
        ],
        "the claimed robots of those asked for, in the order asked",
    );
    let mut b = config("room-b");
    b.robots = vec![user("robot-b"), user("robot-room-a-1")];
    taken(
        store.create(&b).await,
        "robot-room-a-1",
        "room-a",
        "a creation claiming a robot of another pool",
    );
    same(
        ok(store.get(&b.room_id).await, "get"),
        None,
        "a refused creation stores no configuration",
    );
    same(
        ok(
            store.list_by_robots(&[user("robot-b")]).await,
            "list_by_robots",
        ),
        Vec::new(),
        "and claims none of its robots",
    );

    // A change frees the robots it drops, keeps those it keeps, and claims the new ones.
    let mut a2 = a.clone();
    a2.version = 2;
    a2.robots = vec![user("robot-room-a-0"), user("robot-a-new")];
    ok(store.update(&a2, 1).await, "update");
    ok(store.create(&b).await, "create once the robot is free");
    let c = config("room-c");
    ok(store.create(&c).await, "create");
    let mut c2 = c.clone();
    c2.version = 2;
    c2.robots.push(user("robot-a-new"));
    taken(
        store.update(&c2, 1).await,
        "robot-a-new",
        "room-a",
        "a change claiming a robot of another pool",
    );
    same(
        ok(store.get(&c.room_id).await, "get"),
        Some(c.clone()),
        "a refused change writes nothing",
    );
    same(
        ok(store.list_by_robots(&c.robots).await, "list_by_robots"),
        c.robots
            .iter()
            .map(|r| (r.clone(), room("room-c")))
            .collect(),
        "and keeps the room's claims",
    );

    // A delete frees every robot of the pool.
    assert!(ok(store.delete(&a.room_id).await, "delete"));
    same(
        ok(store.list_by_robots(&a2.robots).await, "list_by_robots"),
        Vec::new(),
        "a deleted configuration holds no robot",
    );
    ok(store.update(&c2, 1).await, "update once the robot is free");
    same(
        ok(
            store.list_by_robots(&[user("robot-a-new")]).await,
            "list_by_robots",
        ),
        vec![(user("robot-a-new"), room("room-c"))],
        "the change claimed it",
    );
}

async fn of_two_claims_at_once_one_wins<S: RobotRooms>(store: Arc<S>) {
    for round in 0..10 {
        let mut first = config(&format!("room-{round}-x"));
        let mut second = config(&format!("room-{round}-y"));
        let shared = user(&format!("robot-shared-{round}"));
        first.robots.push(shared.clone());
        second.robots.insert(0, shared.clone());
        let (one, two) = tokio::join!(store.create(&first), store.create(&second));
        let won = match (one, two) {
            (Ok(()), Err(Error::RobotTaken { robot, .. }))
            | (Err(Error::RobotTaken { robot, .. }), Ok(())) => {
                assert_eq!(robot, shared, "the shared robot is the one refused");
                usize::from(ok(store.get(&first.room_id).await, "get").is_some())
            }
            other => panic!("two claims of one robot at once: {other:?}"),
        };
        let winner = if won == 1 { &first } else { &second };
        same(
            ok(
                store.list_by_robots(std::slice::from_ref(&shared)).await,
                "list_by_robots",
            ),
            vec![(shared.clone(), winner.room_id.clone())],
            "the robot is in the winner's pool",
        );
    }
}

async fn create_get_and_delete<S: RobotRooms>(store: Arc<S>) {
    let a = config("room-a");
    same(
        ok(store.get(&a.room_id).await, "get"),
        None,
        "an unknown room has no configuration",
    );
    ok(store.create(&a).await, "create");
    same(
        ok(store.get(&a.room_id).await, "get"),
        Some(a.clone()),
        "a stored configuration reads back whole",
    );
    let mut other = config("room-a");
    other.enabled = false;
    other.profile.name = "Another".into();
    expect_err!(
        store.create(&other).await,
        Error::AlreadyExists(_),
        "a second create for the room"
    );
    same(
        ok(store.get(&a.room_id).await, "get"),
        Some(a.clone()),
        "a refused create leaves the stored configuration",
    );
    let mut plain = config("room-b");
    plain.profile.cover_url = None;
    plain.profile.notice = String::new();
    ok(store.create(&plain).await, "create without cover");
    same(
        ok(store.get(&plain.room_id).await, "get"),
        Some(plain.clone()),
        "a configuration without cover or notice reads back whole",
    );
    assert!(
        ok(store.delete(&a.room_id).await, "delete"),
        "deleting a stored configuration says it existed"
    );
    same(
        ok(store.get(&a.room_id).await, "get"),
        None,
        "a deleted configuration is gone",
    );
    assert!(
        !ok(store.delete(&a.room_id).await, "delete"),
        "deleting it again says there was none"
    );
    same(
        ok(store.get(&plain.room_id).await, "get"),
        Some(plain),
        "deleting one room's configuration keeps the others",
    );
    ok(store.create(&a).await, "create after delete");
    same(
        ok(store.get(&a.room_id).await, "get"),
        Some(a),
        "a deleted room's configuration can be created again",
    );
}

async fn update_is_conditional<S: RobotRooms>(store: Arc<S>) {
    let first = config("room-a");
    let mut second = first.clone();
    second.version = 2;
    second.enabled = false;
    second.robots.push(user("robot-new"));
    second.audience = vec![3; 24];
    second.gift_mix.truncate(1);
    second.updated_at = at(5_000);
    expect_err!(
        store.update(&second, 1).await,
        Error::NotFound(_),
        "updating a room without configuration"
    );
    same(
        ok(store.get(&first.room_id).await, "get"),
        None,
        "a refused update creates nothing",
    );
    ok(store.create(&first).await, "create");
    ok(store.update(&second, 1).await, "update");
    same(
        ok(store.get(&first.room_id).await, "get"),
        Some(second.clone()),
        "an update replaces the configuration whole",
    );
    let mut stale = first.clone();
    stale.version = 2;
    stale.profile.name = "Stale".into();
    expect_err!(
        store.update(&stale, 1).await,
        Error::Conflict(_),
        "an update from a version that moved on"
    );
    same(
        ok(store.get(&first.room_id).await, "get"),
        Some(second.clone()),
        "a conflicting update writes nothing",
    );
    let mut third = second.clone();
    third.version = 3;
    third.seats = 0;
    ok(store.update(&third, 2).await, "update from the new version");
    same(
        ok(store.get(&first.room_id).await, "get"),
        Some(third),
        "updates follow one another",
    );
}

async fn list_pages_by_room_id<S: RobotRooms>(store: Arc<S>) {
    same(
        ok(store.list(None, 10).await, "list"),
        Vec::new(),
        "a new store lists nothing",
    );
    let ids = ["room-c", "room-a", "room-e", "room-b", "room-d"];
    for id in ids {
        ok(store.create(&config(id)).await, "create");
    }
    let names = |list: &[RobotRoomConfig]| -> Vec<String> {
        list.iter().map(|c| c.room_id.to_string()).collect()
    };
    let all = ok(store.list(None, 100).await, "list");
    same(
        names(&all),
        ["room-a", "room-b", "room-c", "room-d", "room-e"]
            .map(String::from)
            .to_vec(),
        "every configuration, by room id",
    );
    same(
        all[2].clone(),
        config("room-c"),
        "listed configurations are whole",
    );
    same(
        names(&ok(store.list(Some(room("room-b")), 2).await, "list")),
        ["room-c", "room-d"].map(String::from).to_vec(),
        "after a cursor, at most `limit`",
    );
    same(
        names(&ok(store.list(Some(room("room-bb")), 10).await, "list")),
        ["room-c", "room-d", "room-e"].map(String::from).to_vec(),
        "a cursor need not name a stored room",
    );
    same(
        ok(store.list(Some(room("room-e")), 10).await, "list"),
        Vec::new(),
        "nothing after the last room",
    );
    same(
        ok(store.list(None, 0).await, "list"),
        Vec::new(),
        "a limit of 0 lists nothing",
    );
    let mut paged = Vec::new();
    let mut cursor = None;
    loop {
        let page = ok(store.list(cursor.clone(), 2).await, "list");
        let Some(last) = page.last() else { break };
        cursor = Some(last.room_id.clone());
        paged.extend(page);
        assert!(paged.len() <= all.len(), "paging does not end");
    }
    same(names(&paged), names(&all), "pages add up to the whole list");

    // The bound holds whatever the caller asks.
    for i in 0..MAX_ROBOT_ROOM_PAGE + 5 {
        ok(
            store.create(&config(&format!("room-z{i:04}"))).await,
            "create",
        );
    }
    same(
        ok(store.list(None, u32::MAX).await, "list").len(),
        MAX_ROBOT_ROOM_PAGE as usize,
        "a page holds at most MAX_ROBOT_ROOM_PAGE configurations",
    );
}

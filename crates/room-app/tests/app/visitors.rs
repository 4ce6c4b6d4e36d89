//! Robot visitors ([`Visitors::pass`]): a quiet human room gets listeners up to the threshold,
//! at most `per_room`, that never sit down; they leave once enough people came, or once the
//! last person left; robot rooms, empty rooms and rooms nobody runs get none, and a visitor is
//! in one room at a time.

use room_app::visitors::{VisitorConfig, Visitors};
use room_domain::{Actor, CommandKind, RoomId, UserId};

use crate::support::{World, uid};

fn config() -> VisitorConfig {
    VisitorConfig {
        below: 3,
        per_room: 2,
        pool: 3,
        id_prefix: "robot-".into(),
        scan: 100,
        every: std::time::Duration::from_secs(10),
    }
}

fn visitors() -> Visitors {
    Visitors::new(config())
}

/// The room's robot members, and whether any of them sits.
async fn robots_in(world: &World, room: &RoomId) -> (Vec<UserId>, bool) {
    let state = world.state(room).await;
    let robots: Vec<UserId> = state
        .members
        .iter()
        .filter(|(_, m)| m.robot)
        .map(|(u, _)| u.clone())
        .collect();
    let seated = state
        .seats
        .iter()
        .filter_map(|s| s.occupant.as_ref())
        .any(|o| robots.contains(&o.user));
    (robots, seated)
}

#[tokio::test]
async fn a_quiet_room_gets_listeners_until_people_come_and_they_leave_then() {
    let world = World::new().await;
    let room = world.open_room("quiet", "alice", &[]).await;
    let mut pass = visitors();

    let report = pass.pass(&world.service).await.unwrap();
    assert_eq!((report.joined, report.left), (2, 0), "{report:?}");
    let (robots, seated) = robots_in(&world, &room).await;
    assert_eq!(robots, vec![uid("robot-visitor-0"), uid("robot-visitor-1")]);
    assert!(!seated, "visitors only listen");
    let report = pass.pass(&world.service).await.unwrap();
    assert_eq!((report.joined, report.left), (0, 0), "steady: {report:?}");

    // One more person: one visitor is enough.
    world.join(&room, "bob").await;
    let report = pass.pass(&world.service).await.unwrap();
    assert_eq!((report.joined, report.left), (0, 1), "{report:?}");
    assert_eq!(robots_in(&world, &room).await.0.len(), 1);
    // Three people: the room is lively on its own.
    world.join(&room, "carol").await;
    pass.pass(&world.service).await.unwrap();
    assert!(robots_in(&world, &room).await.0.is_empty());
}

#[tokio::test]
async fn visitors_leave_a_room_its_last_person_left() {
    let world = World::new().await;
    let room = world.open_room("quiet", "alice", &[]).await;
    let mut pass = visitors();
    pass.pass(&world.service).await.unwrap();
    assert_eq!(robots_in(&world, &room).await.0.len(), 2);
    world
        .exec(&room, crate::support::user("alice"), CommandKind::Leave)
        .await
        .unwrap();
    let report = pass.pass(&world.service).await.unwrap();
    assert_eq!(report.left, 2, "{report:?}");
    assert!(robots_in(&world, &room).await.0.is_empty());
}

#[tokio::test]
async fn robot_rooms_and_lively_rooms_get_none_and_a_visitor_is_in_one_room_at_a_time() {
    let world = World::new().await;
    let lively = world.open_room("lively", "dave", &["erin", "frank"]).await;
    let robot_room = world.open_room("robots", "robot-owner", &[]).await;
    let quiet_a = world.open_room("quiet-a", "alice", &[]).await;
    let quiet_b = world.open_room("quiet-b", "bob", &[]).await;
    let mut pass = visitors();
    let report = pass.pass(&world.service).await.unwrap();
    // Three visitors in the pool: two for the first quiet room, one for the other.
    assert_eq!(report.joined, 3, "{report:?}");
    assert!(robots_in(&world, &lively).await.0.is_empty());
    assert!(robots_in(&world, &robot_room).await.0.is_empty());
    let (a, _) = robots_in(&world, &quiet_a).await;
    let (b, _) = robots_in(&world, &quiet_b).await;
    assert_eq!(a.len() + b.len(), 3);
    assert!(a.iter().all(|v| !b.contains(v)), "{a:?} {b:?}");
}

#[tokio::test]
async fn off_with_a_threshold_of_zero_and_a_refused_join_is_passed_over() {
    let world = World::new().await;
    let room = world.open_room("quiet", "alice", &[]).await;
    let mut off = Visitors::new(VisitorConfig {
        below: 0,
        ..config()
    });
    assert_eq!(off.pass(&world.service).await.unwrap().joined, 0);
    assert!(robots_in(&world, &room).await.0.is_empty());

    // The owner banned the first visitor: the room does without it this pass.
    world
        .exec(
            &room,
            Actor::Robot(uid("robot-visitor-0")),
            CommandKind::Join {
                password_verified: false,
                verified_lock: None,
            },
        )
        .await
        .unwrap();
    world
        .exec(
            &room,
            crate::support::user("alice"),
            CommandKind::Kick {
                user: uid("robot-visitor-0"),
                ban_seconds: Some(3600),
            },
        )
        .await
        .unwrap();
    let report = visitors().pass(&world.service).await.unwrap();
    assert_eq!(report.joined, 0, "{report:?}");
}

//! Robot-room administration ([`RobotRoomAdmin`]) over the in-memory store: the rules of a
//! configuration refused with the field named and nothing written, the catalog and the other
//! rooms' pools, a creation repeated under its key (or its content) landing on the same room,
//! a key reused for something else refused as taken, changes conditional on the version and
//! shown in the room, and deletes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use room_app::ports::{GiftShare, RobotRoomConfig, RobotRooms};
use room_app::robot_admin::{
    AdminResult, CreateRobotRoom, ExistsReason, PatchRobotRoom, ProfileInput, ProfilePatch,
    RobotAdminError, RobotRoom,
};
use room_app::testkit::InMemoryStore;
use room_app::{Error, Result, RobotRoomAdmin};
use room_domain::{GiftId, RoomId, RoomStatus, UserId};

use crate::support::{World, rid, uid, user_actor};

const PREFIX: &str = "robot-";

fn admin(world: &World) -> RobotRoomAdmin {
    RobotRoomAdmin::new(world.service.clone(), world.store.clone(), PREFIX)
}

fn share(gift: &str, weight: u32) -> GiftShare {
    GiftShare {
        gift_id: GiftId::new(gift).expect("valid gift id"),
        weight,
    }
}

/// A valid creation of "Night owls" with `robots`, under `key` when given.
fn creation(key: Option<&str>, robots: &[&str]) -> CreateRobotRoom {
    CreateRobotRoom {
        admin: uid("admin"),
        idempotency_key: key.map(str::to_owned),
        profile: ProfileInput {
            name: "  Night owls ".into(),
            notice: None,
            cover_url: Some(String::new()),
        },
        seat_count: None,
        region: "eu".into(),
        robots: robots.iter().map(|robot| uid(robot)).collect(),
        audience: vec![1; 24],
        seats: 1,
        gift_rate_per_minute: 3,
        gift_mix: vec![share("rose", 3), share("booster", 1)],
        enabled: true,
    }
}

/// The field an answer refused as invalid.
#[track_caller]
fn refused_field<T: std::fmt::Debug>(answer: AdminResult<T>) -> String {
    match answer {
        Err(RobotAdminError::Invalid(problem)) => problem.field,
        other => panic!("expected a refusal naming a field, got {other:?}"),
    }
}

async fn stored(world: &World) -> Vec<RobotRoomConfig> {
    RobotRooms::list(&*world.store, None, 500)
        .await
        .expect("configurations")
}

#[tokio::test]
async fn a_creation_makes_the_first_robots_room_and_stores_its_configuration() {
    let world = World::new().await;
    let robot_room = admin(&world)
        .create(creation(Some("k1"), &["robot-0", "robot-1"]))
        .await
        .expect("created");
    let config = &robot_room.config;
    assert_eq!(config.version, 1);
    assert_eq!(
        config.profile.name, "Night owls",
        "the name is kept trimmed"
    );
    assert_eq!(config.profile.cover_url, None, "an empty cover is no cover");
    assert_eq!(config.seat_count, 8, "the rules' default seat count");
    assert_eq!(robot_room.running_on.as_deref(), Some("node-a"));
    assert_eq!(stored(&world).await, vec![config.clone()]);

    let room = world.service.get_room(&config.room_id).await.expect("room");
    assert_eq!(room.status, RoomStatus::Open);
    assert_eq!(room.owner, Some(uid("robot-0")));
    assert_eq!(room.name, "Night owls");
    assert_eq!(room.region, "eu");
    assert_eq!(room.seats.len(), 8);
    assert_eq!(
        admin(&world).get(&config.room_id).await.expect("read"),
        robot_room
    );
}

#[tokio::test]
async fn an_invalid_pool_audience_gift_mix_or_number_is_refused_with_its_field() {
    let world = World::new().await;
    let admin = admin(&world);
    let with = |change: fn(&mut CreateRobotRoom)| {
        let mut request = creation(None, &["robot-0", "robot-1"]);
        change(&mut request);
        request
    };
    let cases: Vec<(CreateRobotRoom, &str)> = vec![
        (with(|r| r.robots.clear()), "robots"),
        (with(|r| r.robots[1] = uid("alice")), "robots[1]"),
        (with(|r| r.robots[1] = uid("robot-0")), "robots[1]"),
        (with(|r| r.robots[0] = uid("robot-visitor-3")), "robots[0]"),
        // Robot ids are the prefix, then ASCII letters, digits, `-`, `_` and `.` only.
        (
            with(|r| r.robots[1] = uid("robot-\u{430}lice")),
            "robots[1]",
        ),
        (with(|r| r.robots[1] = uid("robot-")), "robots[1]"),
        (with(|r| r.robots[1] = uid("robot-a+b")), "robots[1]"),
        (with(|r| r.robots[1] = uid("robot-ｂ")), "robots[1]"),
        (with(|r| r.audience.truncate(23)), "audience"),
        (with(|r| r.audience[7] = 3), "audience[7]"),
        (with(|r| r.gift_mix.clear()), "gift_mix"),
        (with(|r| r.gift_mix[1].weight = 0), "gift_mix[1].weight"),
        (
            with(|r| r.gift_mix[1] = share("rose", 1)),
            "gift_mix[1].gift_id",
        ),
        (with(|r| r.seat_count = Some(21)), "seat_count"),
        (with(|r| r.seat_count = Some(-1)), "seat_count"),
        (with(|r| r.seats = 300), "seats"),
        (with(|r| r.seats = 3), "seats"),
        (
            with(|r| r.gift_rate_per_minute = 601),
            "gift_rate_per_minute",
        ),
        (with(|r| r.region = "x".repeat(33)), "region"),
        (with(|r| r.region = "e\u{202E}u".into()), "region"),
        (with(|r| r.profile.name = "  ".into()), "profile.name"),
    ];
    for (request, field) in cases {
        let answer = admin.create(request.clone()).await;
        assert_eq!(refused_field(answer), field, "{request:?}");
    }
    assert!(stored(&world).await.is_empty(), "nothing was stored");
    assert!(
        world
            .service
            .ports()
            .directory
            .scan_open(None, 100)
            .await
            .expect("rooms")
            .is_empty(),
        "no room was created"
    );
}

#[tokio::test]
async fn robot_ids_of_ascii_letters_digits_and_dashes_dots_underscores_pass() {
    let world = World::new().await;
    let room = admin(&world)
        .create(creation(None, &["robot-Alice_2.b-c", "robot-0"]))
        .await
        .expect("created");
    assert_eq!(room.config.robots[0], uid("robot-Alice_2.b-c"));
}

#[tokio::test]
async fn a_cover_url_that_breaks_the_image_url_rule_is_refused_naming_it() {
    let world = World::new().await;
    let admin = admin(&world);
    for url in [
        "javascript:alert(1)",
        "data:image/png;base64,AAAA",
        "   ",
        "https://img.example/a b.png",
    ] {
        let mut request = creation(None, &["robot-0"]);
        request.profile.cover_url = Some(url.into());
        match admin.create(request).await {
            Err(RobotAdminError::InvalidUrl(problem)) => {
                assert_eq!(problem.field, "profile.cover_url", "{url}")
            }
            other => panic!("{url}: {other:?}"),
        }
    }
    assert!(stored(&world).await.is_empty(), "nothing was stored");
    let room = admin
        .create(creation(None, &["robot-0"]))
        .await
        .expect("created");
    let mut patch = PatchRobotRoom::new(room.config.room_id.clone());
    patch.profile = Some(ProfilePatch {
        cover_url: Some("javascript:alert(1)".into()),
        ..ProfilePatch::default()
    });
    assert!(matches!(
        admin.patch(patch).await,
        Err(RobotAdminError::InvalidUrl(_))
    ));
    assert_eq!(stored(&world).await, vec![room.config]);
}

#[tokio::test]
async fn a_disabled_or_unknown_gift_in_the_mix_is_refused() {
    let world = World::new().await;
    let admin = admin(&world);
    let mut request = creation(None, &["robot-0"]);
    request.gift_mix[1] = share("retired", 1);
    let Err(RobotAdminError::Invalid(problem)) = admin.create(request).await else {
        panic!("a disabled gift passed");
    };
    assert_eq!(problem.field, "gift_mix[1].gift_id");
    assert!(problem.reason.contains("disabled"), "{problem}");

    let mut request = creation(None, &["robot-0"]);
    request.gift_mix[0] = share("tulip", 1);
    let Err(RobotAdminError::Invalid(problem)) = admin.create(request).await else {
        panic!("an unknown gift passed");
    };
    assert_eq!(problem.field, "gift_mix[0].gift_id");
    assert!(
        problem.reason.contains("not in the gift catalog"),
        "{problem}"
    );
    assert!(stored(&world).await.is_empty());

    // A change is checked against the catalog too.
    let room = admin
        .create(creation(None, &["robot-0"]))
        .await
        .expect("created");
    let mut patch = PatchRobotRoom::new(room.config.room_id.clone());
    patch.gift_mix = Some(vec![share("retired", 1)]);
    assert_eq!(
        refused_field(admin.patch(patch).await),
        "gift_mix[0].gift_id"
    );
    assert_eq!(stored(&world).await, vec![room.config]);
}

#[tokio::test]
async fn a_robot_is_in_one_pool_at_a_time() {
    let world = World::new().await;
    let admin = admin(&world);
    let first = admin
        .create(creation(Some("a"), &["robot-0", "robot-1"]))
        .await
        .expect("created");
    let Err(RobotAdminError::Invalid(problem)) = admin
        .create(creation(Some("b"), &["robot-2", "robot-1"]))
        .await
    else {
        panic!("a robot went into two pools");
    };
    assert_eq!(problem.field, "robots[1]");
    assert!(
        problem.reason.contains(first.config.room_id.as_str()),
        "{problem}"
    );
    assert_eq!(stored(&world).await.len(), 1);

    // Its own pool is no conflict for a room's change.
    let mut patch = PatchRobotRoom::new(first.config.room_id.clone());
    patch.robots = Some(vec![uid("robot-0"), uid("robot-1"), uid("robot-2")]);
    let changed = admin.patch(patch).await.expect("changed");
    assert_eq!(changed.config.robots.len(), 3);
}

#[tokio::test]
async fn a_creation_repeated_with_its_key_or_its_content_answers_the_same_room() {
    let world = World::new().await;
    let admin = admin(&world);
    let first = admin
        .create(creation(Some("k"), &["robot-0"]))
        .await
        .expect("created");
    let again = admin
        .create(creation(Some("k"), &["robot-0"]))
        .await
        .expect("repeated");
    assert_eq!(again, first);

    // Without a key, the content names the room.
    let plain = admin
        .create(creation(None, &["robot-1"]))
        .await
        .expect("created");
    assert_ne!(plain.config.room_id, first.config.room_id);
    let plain_again = admin
        .create(creation(None, &["robot-1"]))
        .await
        .expect("repeated");
    assert_eq!(plain_again, plain);
    assert_eq!(stored(&world).await.len(), 2);

    // Another admin's key is another request.
    let mut other = creation(Some("k"), &["robot-0"]);
    other.admin = uid("another-admin");
    let Err(RobotAdminError::Invalid(problem)) = admin.create(other).await else {
        panic!("another admin's key named the same room");
    };
    assert_eq!(problem.field, "robots[0]", "its pool is the first room's");
}

#[tokio::test]
async fn a_key_repeated_with_other_content_is_refused_as_taken_and_writes_nothing() {
    let world = World::new().await;
    let admin = admin(&world);
    let first = admin
        .create(creation(Some("k"), &["robot-0"]))
        .await
        .expect("created");
    let room_id = first.config.room_id.clone();
    let exists = |answer: AdminResult<RobotRoom>| match answer {
        Err(RobotAdminError::Exists {
            room_id: named,
            why,
        }) => {
            assert_eq!(named, room_id);
            why
        }
        other => panic!("expected the key refused as taken, got {other:?}"),
    };

    let mut renamed = creation(Some("k"), &["robot-0"]);
    renamed.profile.name = "Early birds".into();
    assert_eq!(exists(admin.create(renamed).await), ExistsReason::OtherRoom);

    let mut other_region = creation(Some("k"), &["robot-0"]);
    other_region.region = "us".into();
    assert_eq!(
        exists(admin.create(other_region).await),
        ExistsReason::OtherRoom
    );

    let mut louder = creation(Some("k"), &["robot-0"]);
    louder.gift_rate_per_minute = 30;
    assert_eq!(
        exists(admin.create(louder).await),
        ExistsReason::ConfiguredOtherwise
    );

    assert_eq!(stored(&world).await, vec![first.config.clone()]);
    let room = world.service.get_room(&room_id).await.expect("room");
    assert_eq!(room.name, "Night owls");

    // Once its room is closed, the key names nothing anyone can have.
    world
        .service
        .close_room(&user_actor("robot-0"), &room_id, None)
        .await
        .expect("closed");
    assert_eq!(
        exists(admin.create(creation(Some("k"), &["robot-0"])).await),
        ExistsReason::Closed
    );
}

/// Robot room configurations whose next `fail_creates` creations fail as unavailable, and
/// whose reads of the pools may miss every claim.
struct FlakyConfigs {
    inner: Arc<InMemoryStore>,
    fail_creates: AtomicUsize,
    /// Whether [`RobotRooms::list_by_robots`] answers nothing.
    blind_reads: bool,
}

#[async_trait]
impl RobotRooms for FlakyConfigs {
    async fn create(&self, config: &RobotRoomConfig) -> Result<()> {
        let fail = self
            .fail_creates
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if fail {
            return Err(Error::unavailable("injected: configuration store down"));
        }
        RobotRooms::create(&*self.inner, config).await
    }

    async fn get(&self, room_id: &RoomId) -> Result<Option<RobotRoomConfig>> {
        RobotRooms::get(&*self.inner, room_id).await
    }

    async fn list(&self, after: Option<RoomId>, limit: u32) -> Result<Vec<RobotRoomConfig>> {
        RobotRooms::list(&*self.inner, after, limit).await
    }

    async fn list_by_robots(&self, robots: &[UserId]) -> Result<Vec<(UserId, RoomId)>> {
        if self.blind_reads {
            // As a read made before a concurrent claim committed sees it.
            return Ok(Vec::new());
        }
        RobotRooms::list_by_robots(&*self.inner, robots).await
    }

    async fn update(&self, config: &RobotRoomConfig, expected_version: u64) -> Result<()> {
        RobotRooms::update(&*self.inner, config, expected_version).await
    }

    async fn delete(&self, room_id: &RoomId) -> Result<bool> {
        RobotRooms::delete(&*self.inner, room_id).await
    }
}

#[tokio::test]
async fn the_stores_key_refuses_a_robot_a_read_before_its_claim_let_through() {
    let world = World::new().await;
    let configs = Arc::new(FlakyConfigs {
        inner: world.store.clone(),
        fail_creates: AtomicUsize::new(0),
        blind_reads: true,
    });
    let admin = RobotRoomAdmin::new(world.service.clone(), configs, PREFIX);
    let first = admin
        .create(creation(Some("a"), &["robot-0", "robot-1"]))
        .await
        .expect("created");
    let second = admin
        .create(creation(Some("b"), &["robot-2", "robot-1"]))
        .await;
    let Err(RobotAdminError::Invalid(problem)) = second else {
        panic!("a robot claimed twice: {second:?}");
    };
    assert_eq!(problem.field, "robots[1]");
    assert!(
        problem.reason.contains(first.config.room_id.as_str()),
        "{problem}"
    );
    assert_eq!(stored(&world).await, vec![first.config.clone()]);

    // A change is refused by the same key, and writes nothing.
    let other = admin
        .create(creation(Some("c"), &["robot-3"]))
        .await
        .expect("created");
    let mut patch = PatchRobotRoom::new(other.config.room_id.clone());
    patch.robots = Some(vec![uid("robot-3"), uid("robot-0")]);
    assert_eq!(refused_field(admin.patch(patch).await), "robots[1]");
    assert_eq!(
        RobotRooms::get(&*world.store, &other.config.room_id)
            .await
            .expect("read"),
        Some(other.config.clone())
    );
    assert_eq!(
        RobotRooms::list_by_robots(&*world.store, &[uid("robot-0"), uid("robot-3")])
            .await
            .expect("read"),
        vec![
            (uid("robot-0"), first.config.room_id.clone()),
            (uid("robot-3"), other.config.room_id.clone()),
        ]
    );
}

#[tokio::test]
async fn a_creation_whose_configuration_was_not_stored_is_finished_by_its_repeat() {
    let world = World::new().await;
    let configs = Arc::new(FlakyConfigs {
        inner: world.store.clone(),
        fail_creates: AtomicUsize::new(1),
        blind_reads: false,
    });
    let admin = RobotRoomAdmin::new(world.service.clone(), configs, PREFIX);
    let failed = admin.create(creation(Some("k"), &["robot-0"])).await;
    let Err(error @ RobotAdminError::ConfigNotStored(_)) = failed else {
        panic!("expected the configuration not stored, got {failed:?}");
    };
    assert!(error.is_retryable());
    assert!(stored(&world).await.is_empty());

    let finished = admin
        .create(creation(Some("k"), &["robot-0"]))
        .await
        .expect("the repeat finishes the creation");
    assert_eq!(stored(&world).await, vec![finished.config.clone()]);
    assert_eq!(
        world
            .service
            .ports()
            .directory
            .scan_open(None, 100)
            .await
            .expect("rooms")
            .len(),
        1,
        "one room, made once"
    );
}

#[tokio::test]
async fn a_change_is_conditional_on_its_version_and_shown_in_the_room() {
    let world = World::new().await;
    let admin = admin(&world);
    let room_id = admin
        .create(creation(None, &["robot-0"]))
        .await
        .expect("created")
        .config
        .room_id;
    let rename = |version| {
        let mut patch = PatchRobotRoom::new(room_id.clone());
        patch.profile = Some(ProfilePatch {
            name: Some("Early birds".into()),
            notice: Some("Good morning".into()),
            cover_url: None,
        });
        patch.version = version;
        patch
    };
    let changed = admin.patch(rename(Some(1))).await.expect("changed");
    assert_eq!(changed.config.version, 2);
    assert_eq!(changed.config.profile.name, "Early birds");
    let room = world.service.get_room(&room_id).await.expect("room");
    assert_eq!(
        (room.name.as_str(), room.notice.as_str()),
        ("Early birds", "Good morning")
    );

    // A repeat of a change in effect answers the configuration, whatever its version says.
    let repeated = admin.patch(rename(Some(1))).await.expect("in effect");
    assert_eq!(repeated.config, changed.config);

    // Another change from a stale version writes nothing.
    let mut stale = PatchRobotRoom::new(room_id.clone());
    stale.enabled = Some(false);
    stale.version = Some(1);
    assert!(
        matches!(admin.patch(stale).await, Err(RobotAdminError::Changed(ref r)) if *r == room_id)
    );
    let mut zero = PatchRobotRoom::new(room_id.clone());
    zero.version = Some(0);
    assert_eq!(refused_field(admin.patch(zero).await), "version");
    assert_eq!(stored(&world).await, vec![changed.config]);
}

#[tokio::test]
async fn a_closed_room_takes_no_new_profile() {
    let world = World::new().await;
    let admin = admin(&world);
    let room_id = admin
        .create(creation(None, &["robot-0"]))
        .await
        .expect("created")
        .config
        .room_id;
    world
        .service
        .close_room(&user_actor("robot-0"), &room_id, None)
        .await
        .expect("closed");
    let mut rename = PatchRobotRoom::new(room_id.clone());
    rename.profile = Some(ProfilePatch {
        name: Some("Early birds".into()),
        ..ProfilePatch::default()
    });
    assert!(
        matches!(admin.patch(rename).await, Err(RobotAdminError::RoomClosed(ref r)) if *r == room_id)
    );
    let config = admin.get(&room_id).await.expect("read").config;
    assert_eq!(config.version, 1, "nothing was written");

    // What the room does not show may still change.
    let mut quieter = PatchRobotRoom::new(room_id.clone());
    quieter.gift_rate_per_minute = Some(1);
    let changed = admin.patch(quieter).await.expect("changed");
    assert_eq!(changed.config.gift_rate_per_minute, 1);
}

#[tokio::test]
async fn a_missing_configuration_is_not_found() {
    let world = World::new().await;
    let admin = admin(&world);
    let missing = rid("nowhere");
    let not_found = |answer: Option<RobotAdminError>| {
        assert!(
            matches!(answer, Some(RobotAdminError::NotFound(ref r)) if *r == missing),
            "{answer:?}"
        );
    };
    let mut patch = PatchRobotRoom::new(missing.clone());
    patch.enabled = Some(false);
    not_found(admin.patch(patch).await.err());
    not_found(admin.get(&missing).await.err());
    not_found(admin.delete(&missing).await.err());
}

#[tokio::test]
async fn a_delete_leaves_an_ordinary_room_that_the_same_creation_configures_again() {
    let world = World::new().await;
    let admin = admin(&world);
    let first = admin
        .create(creation(Some("k"), &["robot-0"]))
        .await
        .expect("created");
    let room_id = first.config.room_id.clone();
    admin.delete(&room_id).await.expect("deleted");
    assert!(stored(&world).await.is_empty());
    assert!(matches!(
        admin.delete(&room_id).await,
        Err(RobotAdminError::NotFound(_))
    ));
    let room = world
        .service
        .get_room(&room_id)
        .await
        .expect("the room stays");
    assert_eq!(room.status, RoomStatus::Open);

    let again = admin
        .create(creation(Some("k"), &["robot-0"]))
        .await
        .expect("configured again");
    assert_eq!(again.config.room_id, room_id);
    assert_eq!(again.config.version, 1);
}

#[tokio::test]
async fn robot_rooms_are_listed_by_room_id_page_by_page() {
    let world = World::new().await;
    let admin = admin(&world);
    let mut rooms = Vec::new();
    for (key, robot) in [("a", "robot-0"), ("b", "robot-1"), ("c", "robot-2")] {
        let room = admin
            .create(creation(Some(key), &[robot]))
            .await
            .expect("created");
        rooms.push(room);
    }
    rooms.sort_by(|a, b| a.config.room_id.cmp(&b.config.room_id));

    let first = admin.list(None, 2).await.expect("first page");
    assert_eq!(first.robot_rooms, rooms[..2]);
    let cursor = first.next_cursor.expect("a next page");
    assert_eq!(cursor, rooms[1].config.room_id);
    let last = admin.list(Some(cursor), 2).await.expect("last page");
    assert_eq!(last.robot_rooms, rooms[2..]);
    assert_eq!(last.next_cursor, None);
}

#[tokio::test]
async fn a_key_repeated_with_other_content_keeps_the_cover_its_room_shows() {
    let world = World::new().await;
    let admin = admin(&world);
    let cover = "https://img.example/owl.png";
    let mut first = creation(Some("k"), &["robot-0"]);
    first.profile.cover_url = Some(cover.into());
    let created = admin.create(first).await.expect("created");
    let mut renamed = creation(Some("k"), &["robot-0"]);
    renamed.profile.name = "Early birds".into();
    renamed.profile.cover_url = Some(cover.into());
    assert!(matches!(
        admin.create(renamed).await,
        Err(RobotAdminError::Exists { .. })
    ));
    // The first room still holds its cover: another room cannot take it.
    let other = world.open_room("plain", "alice", &[]).await;
    let taken = world
        .service
        .update_room(
            &user_actor("alice"),
            &other,
            room_app::RoomPatch {
                cover_url: Some(cover.into()),
                ..room_app::RoomPatch::default()
            },
            None,
        )
        .await;
    assert!(
        matches!(taken, Err(Error::CoverInUse(_))),
        "{:?} shows it: {taken:?}",
        created.config.room_id
    );
}

//! The room lists over the in-memory stores and a manual clock: recent heat decays between
//! commits and between refreshes, boosts lift rooms, scoped tabs, pins at their window's
//! edges, `following`, and a ranking that is at most one refresh old.

use std::sync::Arc;
use std::time::Duration;

use room_app::InMemoryStore;
use room_app::follows::RoomFollowing;
use room_app::lists::{
    ListCursor, ListDeps, ListQuery, ListsConfig, NewPin, RoomLists, ScoreRules, Tab,
};
use room_app::ports::{Change, PinnedList, ProfilePatch, RoomDirectory, UserDirectory};
use room_domain::{CommandKind, RoomId, Timestamp};

use crate::support::{T0, World, gift, rid, uid, user};

const HALF_LIFE: Duration = Duration::from_secs(1800);

fn lists_of(world: &World, rules: ScoreRules) -> RoomLists {
    let store = world.store.clone();
    RoomLists::new(
        ListDeps {
            directory: store.clone(),
            profiles: world.service.profiles_handle(),
            robots: store.clone(),
            pins: store.clone(),
            // The store's clock is the world's manual one.
            store_clock: Arc::new(InMemoryStore::with_clock(world.clock.clone())),
            clock: world.clock.clone(),
            ids: world.ids.clone(),
            following: Arc::new(RoomFollowing::new(
                store.clone(),
                store,
                world.clock.clone(),
                100,
            )),
            cache: None,
        },
        ListsConfig {
            score: rules,
            ..ListsConfig::default()
        },
    )
}

/// Scores of recent heat alone.
fn no_boosts() -> ScoreRules {
    ScoreRules {
        half_life: HALF_LIFE,
        on_mic_boost: 0.0,
        new_room_boost: 0.0,
        new_room_for: Duration::from_secs(3600),
    }
}

fn query(tab: Tab) -> ListQuery {
    ListQuery {
        tab,
        region: None,
        country: None,
        agency: None,
        limit: 20,
        cursor: None,
    }
}

async fn page_of(lists: &RoomLists, caller: &str, query: &ListQuery) -> Vec<String> {
    lists
        .page(&uid(caller), query)
        .await
        .expect("page")
        .items
        .into_iter()
        .map(|item| {
            let mark = if item.pinned { "*" } else { "" };
            format!("{}{mark}", item.room.room_id)
        })
        .collect()
}

async fn open_in(world: &World, room: &str, owner: &str, region: &str) -> RoomId {
    let room = rid(room);
    world
        .exec(
            &room,
            user(owner),
            CommandKind::CreateRoom {
                name: format!("room {room}"),
                seat_count: None,
                region: region.into(),
            },
        )
        .await
        .expect("room created");
    room
}

#[tokio::test]
async fn recent_heat_decays_so_a_new_small_gift_outranks_an_old_big_one() {
    let world = World::new().await;
    let old = world.open_room("old", "ann", &["bob", "sam"]).await;
    let fresh = world.open_room("fresh", "cat", &["dan", "sam"]).await;
    world.fund("sam", 10_000).await;
    // 10 roses of heat 10 each at T0: 100 points.
    world
        .saga()
        .send(gift(&old, "sam", "o-1", "rose", 10, &["bob"]))
        .await
        .unwrap();
    let summary = world.store.get_summary(&old).await.unwrap().unwrap();
    assert_eq!((summary.heat, summary.recent_heat_milli), (100, 100_000));
    assert_eq!(summary.recent_heat_at, T0);

    // Two hours (four half-lives) later, 3 roses into the other room: 30 points, against
    // the old room's 100 / 16 = 6.25.
    world.clock.set(T0.plus_secs(7200));
    world
        .saga()
        .send(gift(&fresh, "sam", "o-2", "rose", 3, &["dan"]))
        .await
        .unwrap();
    let lists = lists_of(&world, no_boosts());
    lists.refresh().await.unwrap();
    assert_eq!(
        page_of(&lists, "zed", &query(Tab::Hot)).await,
        ["fresh", "old"]
    );
    let page = lists.page(&uid("zed"), &query(Tab::Hot)).await.unwrap();
    assert_eq!(page.items[1].room.score, 6.25);
    assert!(world.state(&old).await.heat > world.state(&fresh).await.heat);

    // A commit of the old room decays its recent heat to the commit's time and adds the new.
    world
        .saga()
        .send(gift(&old, "sam", "o-3", "rose", 1, &["bob"]))
        .await
        .unwrap();
    let summary = world.store.get_summary(&old).await.unwrap().unwrap();
    assert_eq!(summary.recent_heat_milli, 6_250 + 10_000);
    assert_eq!(summary.recent_heat_at, T0.plus_secs(7200));

    // Nothing is written as time passes: another half-life later the lists halve both.
    world.clock.set(T0.plus_secs(9000));
    lists.refresh().await.unwrap();
    let page = lists.page(&uid("zed"), &query(Tab::Hot)).await.unwrap();
    let scores: Vec<f64> = page.items.iter().map(|item| item.room.score).collect();
    assert_eq!(scores, [15.0, 8.125]);
}

#[tokio::test]
async fn the_boosts_lift_a_room_with_someone_on_the_mic_and_a_new_room() {
    let world = World::new().await;
    let quiet = open_in(&world, "quiet", "ann", "eu").await;
    world.clock.set(T0.plus_secs(4000));
    let newer = open_in(&world, "newer", "bob", "eu").await;
    let rules = ScoreRules {
        on_mic_boost: 10.0,
        new_room_boost: 5.0,
        new_room_for: Duration::from_secs(3600),
        ..no_boosts()
    };
    let lists = lists_of(&world, rules);
    lists.refresh().await.unwrap();
    assert_eq!(
        page_of(&lists, "zed", &query(Tab::Hot)).await,
        ["newer", "quiet"]
    );
    // The owner of the older room takes a seat: 10 beats 5.
    world.join(&quiet, "ann").await;
    world
        .exec(
            &quiet,
            user("ann"),
            CommandKind::TakeSeat {
                seat: room_domain::SeatIndex(1),
            },
        )
        .await
        .expect("seat taken");
    lists.refresh().await.unwrap();
    assert_eq!(
        page_of(&lists, "zed", &query(Tab::Hot)).await,
        ["quiet", "newer"]
    );
    let _ = newer;
}

#[tokio::test]
async fn the_ranking_is_at_most_one_refresh_old() {
    let world = World::new().await;
    open_in(&world, "first", "ann", "eu").await;
    let lists = lists_of(&world, no_boosts());
    // No ranking held yet: the first page computes one.
    assert_eq!(page_of(&lists, "zed", &query(Tab::New)).await, ["first"]);
    world.clock.set(T0.plus_secs(1));
    open_in(&world, "second", "bob", "eu").await;
    assert_eq!(
        page_of(&lists, "zed", &query(Tab::New)).await,
        ["first"],
        "read from the ranking held"
    );
    lists.refresh().await.unwrap();
    assert_eq!(
        page_of(&lists, "zed", &query(Tab::New)).await,
        ["second", "first"]
    );
    // A closed room leaves the lists at the next refresh.
    world
        .exec(&rid("second"), user("bob"), CommandKind::CloseRoom)
        .await
        .expect("closed");
    lists.refresh().await.unwrap();
    assert_eq!(page_of(&lists, "zed", &query(Tab::New)).await, ["first"]);
}

#[tokio::test]
async fn region_country_and_agency_tabs_default_to_the_callers_own() {
    let world = World::new().await;
    open_in(&world, "eu-1", "ann", "eu").await;
    open_in(&world, "us-1", "bob", "us").await;
    let set = |country: &str, agency: Option<&str>, region: Option<&str>| ProfilePatch {
        country: Change::Set(country.into()),
        agency: agency.map_or(Change::Keep, |a| Change::Set(a.into())),
        region: region.map_or(Change::Keep, |r| Change::Set(r.into())),
        ..ProfilePatch::default()
    };
    let store = world.store.clone();
    store
        .upsert_profile(&uid("ann"), &set("SA", Some("stars"), None))
        .await
        .unwrap();
    store
        .upsert_profile(&uid("bob"), &set("EG", None, None))
        .await
        .unwrap();
    store
        .upsert_profile(&uid("zed"), &set("EG", Some("stars"), Some("us")))
        .await
        .unwrap();
    let lists = lists_of(&world, no_boosts());
    let scoped = |tab, region: Option<&str>, country: Option<&str>| ListQuery {
        region: region.map(Into::into),
        country: country.map(Into::into),
        ..query(tab)
    };
    assert_eq!(
        page_of(&lists, "zed", &scoped(Tab::Region, Some("eu"), None)).await,
        ["eu-1"]
    );
    assert_eq!(
        page_of(&lists, "zed", &scoped(Tab::Region, None, None)).await,
        ["us-1"]
    );
    assert_eq!(
        page_of(&lists, "zed", &scoped(Tab::Country, None, Some("SA"))).await,
        ["eu-1"]
    );
    assert_eq!(
        page_of(&lists, "zed", &scoped(Tab::Country, None, None)).await,
        ["us-1"]
    );
    assert_eq!(page_of(&lists, "zed", &query(Tab::Agency)).await, ["eu-1"]);
    // A caller without a region, asking for their own: refused, not an empty list.
    let refused = lists.page(&uid("nobody"), &query(Tab::Region)).await;
    assert!(
        matches!(refused, Err(room_app::Error::Invalid(_))),
        "{refused:?}"
    );
}

#[tokio::test]
async fn a_pin_shows_from_its_start_to_its_end_without_a_refresh() {
    let world = World::new().await;
    for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
        let room = open_in(&world, name, &format!("owner-{name}"), "eu").await;
        world.join(&room, &format!("owner-{name}")).await;
        world.join(&room, "sam").await;
        world.fund("sam", 1_000).await;
        world
            .saga()
            .send(gift(
                &room,
                "sam",
                &format!("o-{name}"),
                "rose",
                3 - i as u32,
                &[&format!("owner-{name}")],
            ))
            .await
            .unwrap();
    }
    let lists = lists_of(&world, no_boosts());
    let pin = lists
        .create_pin(NewPin {
            room_id: rid("c"),
            list: PinnedList::Hot,
            position: 1,
            starts_at: Some(T0.plus_secs(10)),
            ends_at: T0.plus_secs(20),
        })
        .await
        .unwrap();
    assert!(pin.pin_id.starts_with('p'));
    lists.refresh().await.unwrap();
    assert_eq!(
        page_of(&lists, "zed", &query(Tab::Hot)).await,
        ["a", "b", "c"]
    );
    world.clock.set(T0.plus_secs(10));
    assert_eq!(
        page_of(&lists, "zed", &query(Tab::Hot)).await,
        ["c*", "a", "b"]
    );
    assert_eq!(page_of(&lists, "zed", &query(Tab::New)).await.len(), 3);
    assert!(
        page_of(&lists, "zed", &query(Tab::New))
            .await
            .iter()
            .all(|n| !n.ends_with('*')),
        "a pin of hot never shows in new"
    );
    world.clock.set(T0.plus_secs(20));
    assert_eq!(
        page_of(&lists, "zed", &query(Tab::Hot)).await,
        ["a", "b", "c"]
    );
    // A pin of a room never created is refused; a pin already ended is refused.
    let unknown = lists
        .create_pin(NewPin {
            room_id: rid("nowhere"),
            list: PinnedList::Hot,
            position: 1,
            starts_at: None,
            ends_at: T0.plus_secs(100),
        })
        .await;
    assert!(
        matches!(unknown, Err(room_app::Error::Rejected(_))),
        "{unknown:?}"
    );
    let ended = lists
        .create_pin(NewPin {
            room_id: rid("a"),
            list: PinnedList::Hot,
            position: 1,
            starts_at: None,
            ends_at: T0.plus_secs(20),
        })
        .await;
    assert!(
        matches!(ended, Err(room_app::Error::Invalid(_))),
        "{ended:?}"
    );
    assert!(lists.delete_pin(&pin.pin_id).await.unwrap());
    assert!(!lists.delete_pin(&pin.pin_id).await.unwrap());
}

#[tokio::test]
async fn following_lists_open_rooms_first_with_their_list_fields() {
    let world = World::new().await;
    open_in(&world, "one", "ann", "eu").await;
    open_in(&world, "two", "bob", "eu").await;
    let lists = lists_of(&world, no_boosts());
    let following = RoomFollowing::new(
        world.store.clone(),
        world.store.clone(),
        world.clock.clone(),
        100,
    );
    following.follow(&uid("zed"), &rid("one")).await.unwrap();
    following.follow(&uid("zed"), &rid("two")).await.unwrap();
    world
        .exec(&rid("one"), user("ann"), CommandKind::CloseRoom)
        .await
        .expect("closed");
    let page = lists
        .page(
            &uid("zed"),
            &ListQuery {
                limit: 1,
                ..query(Tab::Following)
            },
        )
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].room.room_id, rid("two"));
    assert!(page.items[0].open);
    assert_eq!(page.items[0].room.region, "eu");
    let Some(ListCursor::Followed(cursor)) = page.next else {
        panic!("a following cursor: {:?}", page.next);
    };
    let rest = lists
        .page(
            &uid("zed"),
            &ListQuery {
                limit: 1,
                cursor: Some(ListCursor::Followed(cursor)),
                ..query(Tab::Following)
            },
        )
        .await
        .unwrap();
    assert_eq!(rest.items.len(), 1);
    assert_eq!(rest.items[0].room.room_id, rid("one"));
    assert!(
        !rest.items[0].open,
        "a closed room comes last, shown closed"
    );
    let _ = Timestamp(0);
}

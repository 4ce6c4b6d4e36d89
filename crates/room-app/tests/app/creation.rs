//! Room creation through [`room_app::RoomService::create_room`]: a creation the room refuses
//! writes nothing.

use room_app::Error;
use room_app::ports::RoomDirectory;

use crate::support::{World, rid, user_actor};

#[tokio::test]
async fn a_refused_creation_leaves_no_short_id_and_no_cell() {
    let world = World::new().await;
    let alice = user_actor("alice");
    let refusals = [
        ("   ".to_owned(), Some(8), "sg".to_owned()),
        ("x".repeat(1000), None, "sg".to_owned()),
        ("room".to_owned(), Some(0), "sg".to_owned()),
        ("room".to_owned(), None, "r".repeat(1000)),
    ];
    for (name, seats, region) in refusals {
        let refused = world
            .service
            .create_room(&alice, name, seats, region, None)
            .await;
        assert!(matches!(refused, Err(Error::Rejected(_))), "{refused:?}");
    }
    // The test ids make the room ids `rid-1`, `rid-2`, ...: none got a short id or a cell.
    for n in 1..=8 {
        let room = rid(&format!("rid-{n}"));
        assert_eq!(
            world.store.get_short_id(&room).await.unwrap(),
            None,
            "{room}"
        );
    }
    assert_eq!(world.runtime().active_rooms(), 0);

    let created = world
        .service
        .create_room(&alice, "room".into(), None, "sg".into(), None)
        .await
        .expect("a valid creation goes through");
    assert!(created.short_id.is_some());
    assert_eq!(world.runtime().active_rooms(), 1);
}

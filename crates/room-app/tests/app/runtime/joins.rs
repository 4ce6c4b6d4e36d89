//! Joins through the service: wrong passwords locking a user out (never the owner or admins),
//! and the previous room left once the new one let the user in.

use room_app::Error;
use room_domain::{CommandKind, Rejection, RoomId};

use crate::support::{Fault, World, uid, user};

/// A plain user acting through the service.
fn actor(name: &str) -> room_domain::UserActor {
    room_domain::UserActor {
        user_id: uid(name),
        vip_level: 0,
        platform_admin: false,
    }
}

/// Locks `room` with `password`, as its owner `owner`.
async fn lock_room(world: &World, room: &RoomId, owner: &str, password: &str) {
    let patch = room_app::RoomPatch {
        password: Some(Some(password.into())),
        ..room_app::RoomPatch::default()
    };
    world
        .service
        .update_room(&actor(owner), room, patch, None)
        .await
        .unwrap();
}

/// `n` joins of `room` by `name` with `password`, as tasks running at once: each one's first
/// step (reading the room's lock) is answered before any join is decided.
async fn joins_at_once(
    world: &World,
    room: &RoomId,
    name: &str,
    password: &str,
    n: usize,
) -> Vec<room_app::Result<()>> {
    let mut joins = tokio::task::JoinSet::new();
    for _ in 0..n {
        let (service, room) = (world.service.clone(), room.clone());
        let (who, password) = (actor(name), password.to_owned());
        joins.spawn(async move {
            service
                .join(&who, &room, Some(password), None)
                .await
                .map(drop)
        });
    }
    joins.join_all().await
}

/// Wrong passwords lock one user out of one room until the window ends; the right password
/// then lets them in.
#[tokio::test]
async fn wrong_passwords_lock_a_user_out_until_the_window_ends() {
    let world = World::new().await;
    let room = world.open_room("r1", "owner", &[]).await;
    lock_room(&world, &room, "owner", "1234").await;
    let join = |name: &'static str, password: &'static str| {
        let (service, room) = (&world.service, room.clone());
        async move {
            service
                .join(&actor(name), &room, Some(password.to_owned()), None)
                .await
                .map(drop)
        }
    };
    for _ in 0..room_app::MAX_WRONG_PASSWORDS {
        let refused = join("bob", "0000").await;
        assert!(
            matches!(refused, Err(Error::Rejected(Rejection::WrongPassword))),
            "{refused:?}"
        );
    }
    let locked_out = join("bob", "1234").await;
    assert!(
        matches!(locked_out, Err(Error::TooManyAttempts { .. })),
        "{locked_out:?}"
    );
    join("carol", "1234").await.unwrap();
    // The owner needs no password: their joins never count.
    for _ in 0..=room_app::MAX_WRONG_PASSWORDS {
        join("owner", "0000").await.unwrap();
    }

    world
        .clock
        .advance_secs(room_app::PASSWORD_WINDOW_MS / 1000);
    join("bob", "1234").await.unwrap();

    // Guesses sent at once are counted before the room answers any: no more get through.
    let guesses = joins_at_once(&world, &room, "dave", "0000", 20).await;
    let wrong = guesses
        .iter()
        .filter(|r| matches!(r, Err(Error::Rejected(Rejection::WrongPassword))))
        .count();
    assert_eq!(wrong, room_app::MAX_WRONG_PASSWORDS as usize, "{guesses:?}");
    assert!(guesses.iter().all(|r| matches!(
        r,
        Err(Error::Rejected(Rejection::WrongPassword) | Error::TooManyAttempts { .. })
    )));
}

/// bob in room x of alice, about to join room r of dave, where his join of r will commit and
/// his leave of x will meet `leave_fault`.
async fn bob_in_x_moving_to_r(
    leave_fault: Fault,
) -> (World, RoomId, RoomId, room_domain::UserActor) {
    let world = World::new().await;
    let x = world.open_room("x", "alice", &[]).await;
    let r = world.open_room("r", "dave", &[]).await;
    let bob = actor("bob");
    world.service.join(&bob, &x, None, None).await.unwrap();
    world.probe.fail_next_commit(Fault::Pass);
    world.probe.fail_next_commit(leave_fault);
    (world, x, r, bob)
}

/// Joining leaves the previous room once the new one let the user in. When that leave fails
/// (retryably), the join answers so and presence still names the previous room: the
/// client's retry leaves it then, instead of leaving the user in both rooms for good.
#[tokio::test]
async fn a_join_whose_leave_of_the_previous_room_failed_leaves_it_on_retry() {
    let (world, x, r, bob) = bob_in_x_moving_to_r(Fault::UnavailableBefore).await;

    let first = world.service.join(&bob, &r, None, None).await;
    assert!(first.as_ref().is_err_and(Error::is_retryable), "{first:?}");
    let current = world.service.current_room(&uid("bob")).await.unwrap();
    assert_eq!(current, Some(x.clone()));

    world.service.join(&bob, &r, None, None).await.unwrap();
    assert!(!world.state(&x).await.members.contains_key(&uid("bob")));
    assert!(world.state(&r).await.members.contains_key(&uid("bob")));
    let current = world.service.current_room(&uid("bob")).await.unwrap();
    assert_eq!(current, Some(r));
}

/// A previous room that can never be left (the store refuses its commit for good) does not
/// keep the user from joining another: presence lets go of it.
#[tokio::test]
async fn a_previous_room_that_cannot_be_left_does_not_block_joins() {
    let (world, _x, r, bob) = bob_in_x_moving_to_r(Fault::Refused).await;

    world.service.join(&bob, &r, None, None).await.unwrap();
    let current = world.service.current_room(&uid("bob")).await.unwrap();
    assert_eq!(current, Some(r));
}

/// The owner and admins need no password: their joins never count as wrong, not even while
/// they are in flight, so a burst of them is never locked out.
#[tokio::test]
async fn wrong_passwords_never_lock_out_the_owner_or_admins() {
    let world = World::new().await;
    let room = world.open_room("r1", "owner", &["admin"]).await;
    world
        .exec(
            &room,
            user("owner"),
            CommandKind::SetAdmin {
                user: uid("admin"),
                admin: true,
            },
        )
        .await
        .unwrap();
    lock_room(&world, &room, "owner", "1234").await;
    for name in ["owner", "admin"] {
        let burst = 4 * room_app::MAX_WRONG_PASSWORDS as usize;
        for joined in joins_at_once(&world, &room, name, "0000", burst).await {
            assert!(joined.is_ok(), "{name}: {joined:?}");
        }
    }
}

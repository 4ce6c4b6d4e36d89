//! How joins use the [`PasswordAttempts`](room_app::ports::PasswordAttempts) port: what is
//! counted, when an attempt is taken back, and that a lockout is answered before the room is
//! asked (mockall).

use std::sync::Arc;

use mockall::predicate::{always, eq};
use room_app::ports::{Counted, MockPasswordAttempts};
use room_app::{Error, RoomPatch};
use room_domain::{CommandKind, Rejection, RoomId, Timestamp};

use crate::support::{World, rid, uid, user, user_actor};

/// A world over `attempts` with room `r1` of `owner`, locked with password `1234`.
async fn locked_room(attempts: MockPasswordAttempts) -> (World, RoomId) {
    let world = World::builder().attempts(Arc::new(attempts)).build().await;
    let room = world.open_room("r1", "owner", &[]).await;
    let patch = RoomPatch {
        password: Some(Some("1234".into())),
        ..RoomPatch::default()
    };
    world
        .service
        .update_room(&user_actor("owner"), &room, patch, None)
        .await
        .unwrap();
    (world, room)
}

fn counted_for_bob(since: Timestamp) -> Counted {
    Counted {
        user: uid("bob"),
        room: rid("r1"),
        since,
    }
}

#[tokio::test]
async fn a_wrong_password_is_counted_before_the_room_answers_and_stays_counted() {
    let mut attempts = MockPasswordAttempts::new();
    attempts
        .expect_check()
        .with(eq(uid("bob")), eq(rid("r1")), always(), eq(true))
        .times(1)
        .returning(|_, _, now, _| Ok(Some(counted_for_bob(now))));
    attempts.expect_uncount().never();
    let (world, room) = locked_room(attempts).await;

    let joined = world
        .service
        .join(&user_actor("bob"), &room, Some("0000".into()), None)
        .await;
    assert!(
        matches!(joined, Err(Error::Rejected(Rejection::WrongPassword))),
        "{joined:?}"
    );
}

#[tokio::test]
async fn a_right_password_is_checked_but_not_counted() {
    let mut attempts = MockPasswordAttempts::new();
    attempts
        .expect_check()
        .with(eq(uid("bob")), eq(rid("r1")), always(), eq(false))
        .times(1)
        .returning(|_, _, _, _| Ok(None));
    attempts.expect_uncount().never();
    let (world, room) = locked_room(attempts).await;

    world
        .service
        .join(&user_actor("bob"), &room, Some("1234".into()), None)
        .await
        .unwrap();
    assert!(world.state(&room).await.members.contains_key(&uid("bob")));
}

#[tokio::test]
async fn a_locked_out_user_is_refused_before_the_room_is_asked() {
    let retry_at = Timestamp(1);
    let mut attempts = MockPasswordAttempts::new();
    attempts
        .expect_check()
        .times(1)
        .returning(move |_, _, _, _| Err(Error::TooManyAttempts { retry_at }));
    attempts.expect_uncount().never();
    let (world, room) = locked_room(attempts).await;
    let version = world.state(&room).await.version;

    let joined = world
        .service
        .join(&user_actor("bob"), &room, Some("1234".into()), None)
        .await;
    assert!(
        matches!(joined, Err(Error::TooManyAttempts { retry_at: at }) if at == retry_at),
        "{joined:?}"
    );
    assert_eq!(
        world.state(&room).await.version,
        version,
        "the room did not run a join"
    );
}

/// A banned user's wrong password is refused as a ban: the attempt is taken back, once, and
/// a failure to take it back leaves the room's answer as it was.
#[tokio::test]
async fn an_attempt_refused_for_another_reason_is_taken_back_once() {
    let mut attempts = MockPasswordAttempts::new();
    attempts
        .expect_check()
        .times(1)
        .returning(|_, _, now, _| Ok(Some(counted_for_bob(now))));
    attempts
        .expect_uncount()
        .withf(|counted| counted.user == uid("bob") && counted.room == rid("r1"))
        .times(1)
        .returning(|_| Err(Error::Unavailable("attempts backend down".into())));
    let (world, room) = locked_room(attempts).await;
    world
        .exec(
            &room,
            user("owner"),
            CommandKind::Kick {
                user: uid("bob"),
                ban_seconds: Some(600),
            },
        )
        .await
        .unwrap();

    let joined = world
        .service
        .join(&user_actor("bob"), &room, Some("0000".into()), None)
        .await;
    assert!(
        matches!(joined, Err(Error::Rejected(Rejection::Banned { .. }))),
        "{joined:?}"
    );
}

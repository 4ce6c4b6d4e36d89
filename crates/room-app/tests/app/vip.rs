//! VIP levels kept by the service, applied in rooms through the service's use cases: a join
//! takes the level from the grants (not the token) and carries the level's entry effect and
//! vehicle; kicks and mutes by room admins meet the target's shields; a grant that expires
//! mid-session (a fake clock) ends the shields at its instant, with no restart; a revocation
//! through this node counts at once.

use room_app::Error;
use room_app::ports::VipGrants;
use room_domain::{CommandKind, Event, Rejection, RoomId, VipPrivileges};

use crate::support::{T0, World, uid, user, user_actor as actor};

/// The background level 2 makes exclusive.
const GOLD: &str = "https://cdn.example.com/bg/gold.png";

/// A room with its owner and an appointed admin, and the level table: level 1 without
/// privileges, level 2 with both shields, an entry effect and a vehicle.
async fn world_with_levels() -> (World, RoomId) {
    let world = World::new().await;
    world
        .store
        .put_vip_levels(
            0,
            &[
                VipPrivileges::default(),
                VipPrivileges {
                    kick_shield: true,
                    mute_shield: true,
                    entry_effect_id: Some("fx-wings".into()),
                    vehicle_id: Some("car-7".into()),
                    seat_priority: true,
                    backgrounds: vec![GOLD.into()],
                },
            ],
        )
        .await
        .unwrap();
    let room = world.open_room("room-vip", "owner", &["admin"]).await;
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
    (world, room)
}

fn kick(name: &str) -> CommandKind {
    CommandKind::Kick {
        user: uid(name),
        ban_seconds: None,
    }
}

fn mute(name: &str, seconds: u32) -> CommandKind {
    CommandKind::ChatMute {
        user: uid(name),
        seconds,
    }
}

fn is_vip_protected(result: Result<impl std::fmt::Debug, Error>, level: u8) {
    match result {
        Err(Error::Rejected(Rejection::VipProtected { vip_level, .. })) => {
            assert_eq!(vip_level, level);
        }
        other => panic!("expected VIP_PROTECTED, got {other:?}"),
    }
}

#[tokio::test]
async fn a_grant_that_expires_mid_session_ends_the_shields_at_its_instant() {
    let (world, room) = world_with_levels().await;
    // Three seconds of VIP: less than the cache's TTL, so the expiry is decided from the
    // cached grant.
    world
        .store
        .grant_vip(&uid("vera"), 2, T0.plus_secs(3))
        .await
        .unwrap();
    world
        .service
        .join(&actor("vera"), &room, None, None)
        .await
        .unwrap();
    assert_eq!(
        world.state(&room).await.members[&uid("vera")].vip_level,
        2,
        "the level is the service's, not the token's"
    );
    let joined = world
        .log(&room)
        .await
        .into_iter()
        .rev()
        .find_map(|stored| match stored.event {
            Event::RoomUserJoined {
                user,
                entry_effect_id,
                vehicle_id,
                ..
            } if user == uid("vera") => Some((entry_effect_id, vehicle_id)),
            _ => None,
        })
        .expect("vera's join is in the log");
    assert_eq!(
        joined,
        (Some("fx-wings".into()), Some("car-7".into())),
        "RoomUserJoined carries the level's entry effect and vehicle"
    );

    let admin = actor("admin");
    is_vip_protected(
        world
            .service
            .command(&admin, &room, kick("vera"), None)
            .await,
        2,
    );
    is_vip_protected(
        world
            .service
            .command(&admin, &room, mute("vera", 60), None)
            .await,
        2,
    );

    // A millisecond before the expiry the shields still hold; at it, they are gone.
    world
        .clock
        .set(room_domain::Timestamp(T0.plus_secs(3).0 - 1));
    is_vip_protected(
        world
            .service
            .command(&admin, &room, kick("vera"), None)
            .await,
        2,
    );
    world.clock.set(T0.plus_secs(3));
    world
        .service
        .command(&admin, &room, mute("vera", 60), None)
        .await
        .expect("the mute shield ended with the grant");
    world
        .service
        .command(&admin, &room, kick("vera"), None)
        .await
        .expect("the kick shield ended with the grant");
    assert!(!world.state(&room).await.members.contains_key(&uid("vera")));
}

#[tokio::test]
async fn the_owner_is_not_held_back_and_a_revocation_here_counts_at_once() {
    let (world, room) = world_with_levels().await;
    for name in ["vera", "vic"] {
        world
            .store
            .grant_vip(&uid(name), 2, T0.plus_secs(3_600))
            .await
            .unwrap();
        world
            .service
            .join(&actor(name), &room, None, None)
            .await
            .unwrap();
    }
    // The owner mutes and kicks a shielded member.
    world
        .service
        .command(&actor("owner"), &room, mute("vic", 60), None)
        .await
        .expect("the owner mutes a VIP");
    world
        .service
        .command(&actor("owner"), &room, kick("vic"), None)
        .await
        .expect("the owner kicks a VIP");

    let admin = actor("admin");
    is_vip_protected(
        world
            .service
            .command(&admin, &room, kick("vera"), None)
            .await,
        2,
    );
    // Revoked through this node's use case: the cache forgets the grant at once.
    assert!(world.service.vip().revoke(&uid("vera")).await.unwrap());
    world
        .service
        .command(&admin, &room, kick("vera"), None)
        .await
        .expect("no shield once revoked");
}

#[tokio::test]
async fn a_level_without_privileges_and_no_grant_give_nothing() {
    let (world, room) = world_with_levels().await;
    world
        .store
        .grant_vip(&uid("lena"), 1, T0.plus_secs(3_600))
        .await
        .unwrap();
    for name in ["lena", "nobody"] {
        world
            .service
            .join(&actor(name), &room, None, None)
            .await
            .unwrap();
    }
    let state = world.state(&room).await;
    assert_eq!(state.members[&uid("lena")].vip_level, 1);
    assert_eq!(state.members[&uid("nobody")].vip_level, 0);
    for stored in world.log(&room).await {
        if let Event::RoomUserJoined {
            entry_effect_id,
            vehicle_id,
            ..
        } = stored.event
        {
            assert_eq!((entry_effect_id, vehicle_id), (None, None));
        }
    }
    let admin = actor("admin");
    world
        .service
        .command(&admin, &room, mute("lena", 60), None)
        .await
        .expect("level 1 has no shield");
    world
        .service
        .command(&admin, &room, kick("nobody"), None)
        .await
        .expect("no grant, no shield");
}

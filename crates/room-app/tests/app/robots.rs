//! Robots through [`RoomService::robot_command`]: their commands go through the cell into the
//! log as [`Actor::Robot`]; a robot's join and gift are shown but leave no outbox row and no
//! trace in the wallet, while a paid gift in the same room stays money, fuel and outbox.
//!
//! [`RoomService::robot_command`]: room_app::RoomService::robot_command

use room_app::ports::{CellStore, Outbox};
use room_domain::{
    Actor, Coins, CommandKind, Event, GiftId, GiftSnapshot, OrderId, Rejection, RobotGift,
    RocketStatus,
};

use crate::support::{World, gift, uid};

fn pending_types(rows: &[room_app::ports::OutboxMessage]) -> Vec<&'static str> {
    rows.iter()
        .map(|row| row.envelope.event.type_name())
        .collect()
}

#[tokio::test]
async fn a_robot_gift_is_free_and_not_durable_while_a_paid_gift_stays_money() {
    let world = World::new().await;
    let room = world.open_room("robots", "owner", &["alice"]).await;
    world.fund("alice", 1_000).await;
    let bot = uid("bot-1");
    let outbox_at_start = Outbox::list_pending(&*world.store, 0, &[], 10_000)
        .await
        .unwrap()
        .len();

    let joined = world.robot_join(&room, "bot-1").await;
    assert!(
        matches!(&joined.events[..], [stored] if matches!(
            &stored.event,
            Event::RoomUserJoined { user, robot: true, .. } if *user == bot
        )),
        "{joined:?}"
    );
    assert!(world.state(&room).await.members[&bot].robot);

    // A booster carries 100 fuel, a whole level-1 rocket: from a robot, none of it counts.
    let booster = GiftSnapshot {
        gift_id: GiftId::new("booster").unwrap(),
        price: Coins(50),
        heat: 5,
        fuel: 100,
        lucky: false,
        billing_version: None,
    };
    let sent = world
        .service
        .robot_command(
            &room,
            &bot,
            CommandKind::RobotGift(RobotGift {
                gift: booster,
                count: 1,
                recipients: vec![uid("alice")],
            }),
        )
        .await
        .expect("the robot gift is applied");
    let Event::RoomGiftSent(robot_gift) = &sent.events[0].event else {
        panic!("{sent:?}");
    };
    assert!(robot_gift.robot);
    assert_eq!(robot_gift.fuel_added, 0);
    let state = world.state(&room).await;
    assert_eq!(state.heat, 5);
    assert_eq!(state.rocket.fuel, 0);
    assert_eq!(state.rocket.status, RocketStatus::Idle);
    assert!(state.contribution.day.is_empty());

    // Its command is in the log, as the robot's, under the order id its event carries.
    let command_id = room_domain::CommandId::new(robot_gift.order_id.as_str()).unwrap();
    let record = CellStore::get_command(&*world.store, &room, &command_id)
        .await
        .unwrap()
        .expect("the robot gift is in the command log");
    assert_eq!(record.actor, Actor::Robot(bot.clone()));

    // No wallet moved and no outbox row was written for the robot's join or gift.
    assert_eq!(world.balance("bot-1").await, Coins(0));
    assert_eq!(world.balance("alice").await, Coins(1_000));
    let pending = Outbox::list_pending(&*world.store, 0, &[], 10_000)
        .await
        .unwrap();
    assert_eq!(
        pending.len(),
        outbox_at_start,
        "robot events in the outbox: {:?}",
        pending_types(&pending[outbox_at_start..])
    );

    // The robot may not pay (a paid gift comes only with the order that debited it), and a
    // user may not send a robot gift.
    let paid_as_robot = world
        .service
        .robot_command(
            &room,
            &bot,
            CommandKind::ApplyGift(room_domain::ApplyGift {
                order_id: OrderId::new("o-bot").unwrap(),
                sender: bot.clone(),
                recipients: vec![uid("alice")],
                gift: GiftSnapshot {
                    gift_id: GiftId::new("rose").unwrap(),
                    price: Coins(10),
                    heat: 10,
                    fuel: 0,
                    lucky: false,
                    billing_version: None,
                },
                count: 1,
                lucky_draw: 0,
                scope: None,
            }),
        )
        .await;
    assert!(
        matches!(
            paid_as_robot,
            Err(room_app::Error::Rejected(Rejection::Forbidden))
        ),
        "{paid_as_robot:?}"
    );

    // A paid booster in the same room: coins, fuel (the rocket ignites) and a durable row.
    world
        .service
        .send_gift(gift(&room, "alice", "o-1", "booster", 1, &["bot-1"]))
        .await
        .expect("the paid gift is applied");
    assert_eq!(world.balance("alice").await, Coins(950));
    let state = world.state(&room).await;
    assert!(
        matches!(state.rocket.status, RocketStatus::Ignited { .. }),
        "{:?}",
        state.rocket
    );
    assert_eq!(state.contribution.day.get(&uid("alice")), Some(&Coins(50)));
    let pending = Outbox::list_pending(&*world.store, 0, &[], 10_000)
        .await
        .unwrap();
    let gifts: Vec<_> = pending[outbox_at_start..]
        .iter()
        .filter_map(|row| match &row.envelope.event {
            Event::RoomGiftSent(sent) => Some(sent.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(gifts.len(), 1, "{:?}", pending_types(&pending));
    assert_eq!(gifts[0].order_id.as_str(), "o-1");
    assert!(!gifts[0].robot);
}

#[tokio::test]
async fn a_robots_leave_is_marked_and_not_durable() {
    let world = World::new().await;
    let room = world.open_room("robots-leave", "owner", &[]).await;
    let bot = uid("bot-1");
    world.robot_join(&room, "bot-1").await;
    let outbox_before = Outbox::list_pending(&*world.store, 0, &[], 10_000)
        .await
        .unwrap()
        .len();
    let left = world
        .service
        .robot_command(&room, &bot, CommandKind::Leave)
        .await
        .unwrap();
    assert!(
        matches!(&left.events[..], [stored] if matches!(
            stored.event,
            Event::RoomUserLeft { robot: true, .. }
        )),
        "{left:?}"
    );
    let event = &left.events[0].event;
    assert!(event.is_robot() && !event.delivery().durable);
    let outbox_after = Outbox::list_pending(&*world.store, 0, &[], 10_000)
        .await
        .unwrap()
        .len();
    assert_eq!(outbox_after, outbox_before);
    assert!(!world.state(&room).await.members.contains_key(&bot));
}

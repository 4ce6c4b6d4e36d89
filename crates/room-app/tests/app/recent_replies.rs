//! The replies a cell remembers for repeated commands stay within their byte budget, and a
//! repeat whose reply was forgotten still gets its first answer, from the log.

use room_app::CellConfig;
use room_domain::CommandKind;

use crate::support::{World, cid, config, user};

const BUDGET: usize = 16 * 1024;

/// A notice of 500 characters of three bytes each, different for each `n`.
fn long_notice(n: usize) -> CommandKind {
    let mark = char::from_u32(0x4E00 + n as u32).expect("a CJK character");
    CommandKind::UpdateProfile {
        name: None,
        notice: Some(std::iter::repeat_n(mark, 500).collect()),
        cover_url: None,
    }
}

#[tokio::test]
async fn remembered_replies_stay_within_the_byte_budget() {
    let config = CellConfig {
        recent_commands_bytes: BUDGET,
        ..config()
    };
    let world = World::builder().config(config).build().await;
    let room = world.open_room("r1", "alice", &[]).await;

    let mut first = None;
    for n in 0..40 {
        let reply = world
            .exec_as(
                &room,
                cid(&format!("notice-{n}")),
                user("alice"),
                long_notice(n),
            )
            .await
            .expect("notice changed");
        assert_eq!(reply.events.len(), 1);
        first.get_or_insert(reply);
        let recent = world.runtime().recent_replies(&room).await.unwrap();
        assert!(recent.bytes <= BUDGET, "{recent:?} after {n}");
        assert!(recent.count > 0);
    }
    let recent = world.runtime().recent_replies(&room).await.unwrap();
    // 40 replies of more than 1.5 KB each do not fit in 16 KiB: the oldest were forgotten.
    assert!(recent.count < 40, "{recent:?}");

    // The first one is long forgotten; its repeat is answered from the log, changing nothing.
    let version = world.state(&room).await.version;
    let again = world
        .exec_as(&room, cid("notice-0"), user("alice"), long_notice(0))
        .await
        .expect("the first answer");
    assert_eq!(Some(&again), first.as_ref());
    assert_eq!(world.state(&room).await.version, version);
    assert_eq!(world.log(&room).await.len() as u64, version);
}

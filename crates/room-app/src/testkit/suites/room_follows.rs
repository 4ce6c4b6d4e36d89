//! The conformance suite of [`RoomFollows`]: follows and unfollows are idempotent, a follow
//! counts once, pages come newest follow first, and the maximum a user may follow holds when
//! many follows of one user race.

use std::future::Future;
use std::sync::Arc;

use super::fixtures::{at, ok, room, same, user};
use crate::ports::{FollowOutcome, MAX_FOLLOW_PAGE, RoomFollows};

/// Runs every check, each against a fresh store from `fresh`.
pub async fn room_follows_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: RoomFollows + 'static,
{
    follow_and_unfollow_are_idempotent(fresh().await).await;
    pages_come_newest_follow_first(fresh().await).await;
    the_maximum_holds(fresh().await).await;
    the_maximum_holds_when_follows_race(fresh().await).await;
}

async fn follow_and_unfollow_are_idempotent<S: RoomFollows>(store: Arc<S>) {
    let (ann, bob, a) = (user("ann"), user("bob"), room("room-a"));
    same(
        ok(store.follower_count(&a).await, "follower_count"),
        0,
        "a room nobody follows has no followers",
    );
    same(
        ok(store.unfollow(&ann, &a).await, "unfollow"),
        false,
        "unfollowing a room not followed is fine and changes nothing",
    );
    same(
        ok(store.follow(&ann, &a, at(1), 10).await, "follow"),
        FollowOutcome::Followed,
        "the first follow",
    );
    same(
        ok(store.follow(&ann, &a, at(2), 10).await, "follow"),
        FollowOutcome::AlreadyFollowing,
        "following again",
    );
    same(
        ok(store.follower_count(&a).await, "follower_count"),
        1,
        "following twice counts once",
    );
    let listed = ok(store.list_followed(&ann, None, 10).await, "list_followed");
    same(listed.len(), 1, "one follow listed");
    same(listed[0].room_id.clone(), a.clone(), "the room followed");
    same(listed[0].followed_at, at(1), "the time of the first follow");
    same(
        ok(store.is_following(&ann, &a).await, "is_following"),
        true,
        "ann follows the room",
    );
    same(
        ok(store.is_following(&bob, &a).await, "is_following"),
        false,
        "bob does not",
    );
    same(
        ok(store.follow(&bob, &a, at(3), 10).await, "follow"),
        FollowOutcome::Followed,
        "another user follows the room",
    );
    same(
        ok(store.follower_count(&a).await, "follower_count"),
        2,
        "two followers",
    );
    same(
        ok(store.unfollow(&ann, &a).await, "unfollow"),
        true,
        "ann unfollows",
    );
    same(
        ok(store.unfollow(&ann, &a).await, "unfollow"),
        false,
        "unfollowing again changes nothing",
    );
    same(
        ok(store.follower_count(&a).await, "follower_count"),
        1,
        "one follower left",
    );
    same(
        ok(store.is_following(&ann, &a).await, "is_following"),
        false,
        "ann follows it no more",
    );
    same(
        ok(store.list_followed(&ann, None, 10).await, "list_followed"),
        Vec::new(),
        "and lists nothing",
    );
    same(
        ok(store.is_following(&bob, &a).await, "is_following"),
        true,
        "bob still follows it",
    );
}

async fn pages_come_newest_follow_first<S: RoomFollows>(store: Arc<S>) {
    let ann = user("ann");
    let rooms: Vec<_> = (0..5).map(|n| room(&format!("room-{n}"))).collect();
    // Followed in an order that is not the rooms' ids' order.
    for (n, index) in [3usize, 0, 4, 1, 2].into_iter().enumerate() {
        ok(
            store.follow(&ann, &rooms[index], at(n as i64), 10).await,
            "follow",
        );
    }
    ok(
        store.follow(&user("bob"), &rooms[0], at(9), 10).await,
        "follow",
    );
    let first = ok(store.list_followed(&ann, None, 2).await, "list_followed");
    let ids = |page: &[crate::ports::FollowedRoom]| -> Vec<_> {
        page.iter().map(|f| f.room_id.clone()).collect()
    };
    same(
        ids(&first),
        vec![rooms[2].clone(), rooms[1].clone()],
        "the newest follows first, at most the limit",
    );
    let second = ok(
        store.list_followed(&ann, Some(first[1].seq), 2).await,
        "list_followed",
    );
    same(
        ids(&second),
        vec![rooms[4].clone(), rooms[0].clone()],
        "the next page after the cursor",
    );
    let third = ok(
        store.list_followed(&ann, Some(second[1].seq), 2).await,
        "list_followed",
    );
    same(ids(&third), vec![rooms[3].clone()], "the last page");
    same(
        ok(
            store.list_followed(&ann, Some(third[0].seq), 2).await,
            "list_followed",
        ),
        Vec::new(),
        "nothing after the oldest follow",
    );
    same(
        ok(store.list_followed(&ann, None, 0).await, "list_followed"),
        Vec::new(),
        "limit 0 lists nothing",
    );
    ok(store.unfollow(&ann, &rooms[4]).await, "unfollow");
    ok(store.follow(&ann, &rooms[4], at(20), 10).await, "follow");
    same(
        ids(&ok(
            store.list_followed(&ann, None, 1).await,
            "list_followed",
        )),
        vec![rooms[4].clone()],
        "a room followed again is the newest follow",
    );
}

async fn the_maximum_holds<S: RoomFollows>(store: Arc<S>) {
    let ann = user("ann");
    for n in 0..3 {
        same(
            ok(
                store
                    .follow(&ann, &room(&format!("room-{n}")), at(n), 3)
                    .await,
                "follow",
            ),
            FollowOutcome::Followed,
            "under the maximum",
        );
    }
    same(
        ok(
            store.follow(&ann, &room("room-x"), at(5), 3).await,
            "follow",
        ),
        FollowOutcome::LimitReached,
        "at the maximum a new follow is refused",
    );
    same(
        ok(
            store.is_following(&ann, &room("room-x")).await,
            "is_following",
        ),
        false,
        "and not written",
    );
    same(
        ok(
            store.follower_count(&room("room-x")).await,
            "follower_count",
        ),
        0,
        "nor counted",
    );
    same(
        ok(
            store.follow(&ann, &room("room-1"), at(6), 3).await,
            "follow",
        ),
        FollowOutcome::AlreadyFollowing,
        "at the maximum, following a room followed already is still fine",
    );
    same(
        ok(
            store.follow(&user("bob"), &room("room-x"), at(7), 3).await,
            "follow",
        ),
        FollowOutcome::Followed,
        "the maximum is per user",
    );
    ok(store.unfollow(&ann, &room("room-0")).await, "unfollow");
    same(
        ok(
            store.follow(&ann, &room("room-x"), at(8), 3).await,
            "follow",
        ),
        FollowOutcome::Followed,
        "an unfollow makes room for a follow",
    );
    same(
        ok(
            store.list_followed(&ann, None, MAX_FOLLOW_PAGE).await,
            "list_followed",
        )
        .len(),
        3,
        "three follows",
    );
}

async fn the_maximum_holds_when_follows_race<S: RoomFollows + 'static>(store: Arc<S>) {
    let ann = user("ann");
    const MAX: u32 = 5;
    const RACERS: usize = 16;
    let racers: Vec<_> = (0..RACERS)
        .map(|n| {
            let (store, ann) = (store.clone(), ann.clone());
            tokio::spawn(async move {
                store
                    .follow(&ann, &room(&format!("room-{n}")), at(n as i64), MAX)
                    .await
            })
        })
        .collect();
    let mut followed = 0;
    for racer in racers {
        match ok(racer.await.expect("the racer ran"), "follow") {
            FollowOutcome::Followed => followed += 1,
            FollowOutcome::LimitReached => {}
            FollowOutcome::AlreadyFollowing => panic!("every racer follows another room"),
        }
    }
    same(
        followed,
        MAX as usize,
        "exactly the maximum of racing follows win",
    );
    let listed = ok(
        store.list_followed(&ann, None, MAX_FOLLOW_PAGE).await,
        "list_followed",
    );
    same(listed.len(), MAX as usize, "and only those are stored");
    let mut counted = 0;
    for n in 0..RACERS {
        counted += ok(
            store.follower_count(&room(&format!("room-{n}"))).await,
            "follower_count",
        );
    }
    same(counted, u64::from(MAX), "and counted");
    same(
        ok(
            store.follow(&ann, &room("room-late"), at(99), MAX).await,
            "follow",
        ),
        FollowOutcome::LimitReached,
        "a later follow is refused too",
    );
}

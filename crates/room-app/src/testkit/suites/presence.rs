//! The conformance suite of [`Presence`]: one room per user, the previous room a move
//! ([`Presence::move_to`]) answers, restores that never move anyone, removals that leave a
//! later room alone, the compare-and-remove of the eviction pass, stale listings, moves
//! racing, and the compare-and-set of the current-room record, alone and racing.

use std::future::Future;
use std::sync::Arc;

use room_domain::{RoomId, Timestamp, UserId};

use super::fixtures::{at, far_future, ok, room, same, user};
use crate::ports::{Presence, StaleMember};

/// Runs every [`Presence`] check, each against a fresh, empty instance from `fresh`.
/// Instances built by one `fresh` call may share nothing with those of another.
pub async fn presence_suite<P, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<P>>,
    P: Presence + 'static,
{
    move_answers_the_previous_room_only_if_another(fresh().await).await;
    restore_records_only_users_recorded_nowhere(fresh().await).await;
    remove_leaves_a_later_room_alone(fresh().await).await;
    remove_if_seen_removes_only_the_heartbeat_it_saw(fresh().await).await;
    list_stale_respects_before_and_limit(fresh().await).await;
    concurrent_moves_leave_one_current_room(fresh().await).await;
    compare_and_set_changes_only_the_room_expected(fresh().await).await;
    concurrent_compare_and_sets_each_see_the_room_before(fresh().await).await;
}

fn stale(room_id: &str, who: &str, seen: Timestamp) -> StaleMember {
    StaleMember {
        room_id: room(room_id),
        user: user(who),
        seen,
    }
}

/// Everyone listed as stale before `before`, sorted by user (the port promises no order).
async fn all_stale(presence: &dyn Presence, before: Timestamp) -> Vec<StaleMember> {
    let mut listed = ok(presence.list_stale(before, None, 1_000).await, "list_stale");
    listed.sort_by(|a, b| a.user.cmp(&b.user));
    listed
}

async fn current(presence: &dyn Presence, who: &str) -> Option<RoomId> {
    ok(
        presence.get_current_room(&user(who)).await,
        "get_current_room",
    )
}

async fn move_answers_the_previous_room_only_if_another<P: Presence>(presence: Arc<P>) {
    let p: &dyn Presence = &*presence;
    let (bob, r1, r2) = (user("bob"), room("p-1"), room("p-2"));
    same(current(p, "bob").await, None, "an unknown user is nowhere");
    same(
        ok(p.move_to(&r1, &bob, at(0)).await, "move_to"),
        None,
        "a first heartbeat has no previous room",
    );
    same(current(p, "bob").await, Some(r1.clone()), "bob is in p-1");
    same(
        ok(p.move_to(&r1, &bob, at(10)).await, "move_to"),
        None,
        "a heartbeat in the same room has no previous room",
    );
    same(
        ok(p.move_to(&r2, &bob, at(20)).await, "move_to"),
        Some(r1.clone()),
        "a heartbeat in another room answers the room before",
    );
    same(
        current(p, "bob").await,
        Some(r2.clone()),
        "bob moved to p-2",
    );
    same(
        all_stale(p, far_future()).await,
        vec![stale("p-2", "bob", at(20))],
        "one entry per user, with the last heartbeat",
    );
    // Another user is independent.
    same(
        ok(p.move_to(&r1, &user("carol"), at(30)).await, "move_to"),
        None,
        "another user's first heartbeat has no previous room",
    );
    same(current(p, "bob").await, Some(r2), "carol leaves bob alone");
    same(current(p, "carol").await, Some(r1), "carol is in p-1");
}

async fn restore_records_only_users_recorded_nowhere<P: Presence>(presence: Arc<P>) {
    let p: &dyn Presence = &*presence;
    let (r1, r2) = (room("p-1"), room("p-2"));
    ok(p.restore(&r1, &user("bob"), at(5)).await, "restore");
    same(
        current(p, "bob").await,
        Some(r1.clone()),
        "a user recorded nowhere is restored",
    );
    // alice heartbeat in p-2, then p-1 (loaded from storage) restores her: she stays in p-2.
    ok(p.move_to(&r2, &user("alice"), at(10)).await, "move_to");
    ok(p.restore(&r1, &user("alice"), at(20)).await, "restore");
    same(
        current(p, "alice").await,
        Some(r2.clone()),
        "a restore does not move a user recorded elsewhere",
    );
    // carol heartbeat in p-1; a restore of p-1 does not make her heartbeat newer.
    ok(p.move_to(&r1, &user("carol"), at(10)).await, "move_to");
    ok(p.restore(&r1, &user("carol"), at(30)).await, "restore");
    same(
        all_stale(p, far_future()).await,
        vec![
            stale("p-2", "alice", at(10)),
            stale("p-1", "bob", at(5)),
            stale("p-1", "carol", at(10)),
        ],
        "restores leave recorded heartbeats as they were",
    );
    same(
        ok(p.move_to(&r2, &user("bob"), at(40)).await, "move_to"),
        Some(r1),
        "a heartbeat after a restore elsewhere answers the restored room",
    );
}

async fn remove_leaves_a_later_room_alone<P: Presence>(presence: Arc<P>) {
    let p: &dyn Presence = &*presence;
    let (bob, r1, r2) = (user("bob"), room("p-1"), room("p-2"));
    ok(p.remove(&r1, &bob).await, "remove of an unknown user");
    ok(p.move_to(&r1, &bob, at(0)).await, "move_to");
    ok(p.move_to(&r2, &bob, at(10)).await, "move_to");
    ok(p.remove(&r1, &bob).await, "remove");
    same(
        current(p, "bob").await,
        Some(r2.clone()),
        "removing bob from a room he left keeps his later room",
    );
    ok(p.remove(&r2, &bob).await, "remove");
    same(current(p, "bob").await, None, "removed");
    same(
        all_stale(p, far_future()).await,
        Vec::new(),
        "a removed user is not listed",
    );
    same(
        ok(p.move_to(&r1, &bob, at(20)).await, "move_to"),
        None,
        "after a removal, a heartbeat has no previous room",
    );
}

async fn remove_if_seen_removes_only_the_heartbeat_it_saw<P: Presence>(presence: Arc<P>) {
    let p: &dyn Presence = &*presence;
    let (r1, r2) = (room("p-1"), room("p-2"));
    let (bob, carol, dave) = (user("bob"), user("carol"), user("dave"));
    assert!(
        !ok(p.remove_if_seen(&r1, &bob, at(0)).await, "remove_if_seen"),
        "an unknown user is not removed"
    );

    // Unchanged since the listing: removed.
    ok(p.move_to(&r1, &bob, at(0)).await, "move_to");
    assert!(
        ok(p.remove_if_seen(&r1, &bob, at(0)).await, "remove_if_seen"),
        "a user whose last heartbeat is the one seen is removed"
    );
    same(current(p, "bob").await, None, "removed if seen");
    assert!(
        !ok(p.remove_if_seen(&r1, &bob, at(0)).await, "remove_if_seen"),
        "a second removal finds nothing"
    );

    // A newer heartbeat in the same room: kept, as it was.
    ok(p.move_to(&r1, &carol, at(0)).await, "move_to");
    ok(p.move_to(&r1, &carol, at(10)).await, "move_to");
    assert!(
        !ok(p.remove_if_seen(&r1, &carol, at(0)).await, "remove_if_seen"),
        "a newer heartbeat keeps the user"
    );

    // A join elsewhere at the same instant: kept, in the other room.
    ok(p.move_to(&r1, &dave, at(0)).await, "move_to");
    ok(p.move_to(&r2, &dave, at(0)).await, "move_to");
    assert!(
        !ok(p.remove_if_seen(&r1, &dave, at(0)).await, "remove_if_seen"),
        "a join elsewhere keeps the user"
    );
    assert!(
        !ok(p.remove_if_seen(&r2, &dave, at(5)).await, "remove_if_seen"),
        "another heartbeat than the one seen keeps the user"
    );
    same(
        all_stale(p, far_future()).await,
        vec![stale("p-1", "carol", at(10)), stale("p-2", "dave", at(0))],
        "refused removals change nothing",
    );
    same(
        current(p, "dave").await,
        Some(r2.clone()),
        "dave stays in p-2",
    );
    assert!(
        ok(p.remove_if_seen(&r2, &dave, at(0)).await, "remove_if_seen"),
        "the heartbeat seen in the room seen is removed"
    );
    same(current(p, "dave").await, None, "removed if seen");
}

async fn list_stale_respects_before_and_limit<P: Presence>(presence: Arc<P>) {
    let p: &dyn Presence = &*presence;
    same(
        all_stale(p, far_future()).await,
        Vec::new(),
        "an empty table lists no one",
    );
    for i in 0..5 {
        let room_id = room(&format!("p-{}", i % 2));
        ok(
            p.move_to(&room_id, &user(&format!("u{i}")), at(i * 10))
                .await,
            "move_to",
        );
    }
    same(
        all_stale(p, at(30)).await,
        vec![
            stale("p-0", "u0", at(0)),
            stale("p-1", "u1", at(10)),
            stale("p-0", "u2", at(20)),
        ],
        "stale means a last heartbeat strictly before `before`",
    );
    same(
        all_stale(p, at(0)).await,
        Vec::new(),
        "no one was seen before the first heartbeat",
    );
    same(
        ok(p.list_stale(far_future(), None, 0).await, "list_stale"),
        Vec::new(),
        "a limit of 0 lists no one",
    );
    let every = all_stale(p, far_future()).await;
    same(every.len(), 5, "everyone is stale long after");

    // Pages of 2 by cursor, nobody evicted, as the eviction pass goes past members it could
    // not evict: each listed once, oldest first.
    let mut paged: Vec<StaleMember> = Vec::new();
    let mut after = None;
    loop {
        let page = ok(p.list_stale(far_future(), after, 2).await, "list_stale");
        assert!(page.len() <= 2, "a page holds at most `limit`: {page:?}");
        let Some(last) = page.last() else { break };
        after = Some(last.cursor());
        paged.extend(page);
    }
    same(
        paged.iter().map(|m| m.seen).collect::<Vec<_>>(),
        (0..5).map(|i| at(i * 10)).collect::<Vec<_>>(),
        "paging by cursor lists everyone once, oldest first",
    );
    paged.sort_by(|a, b| a.user.cmp(&b.user));
    same(paged, every.clone(), "the same members as one listing");
    // Ties on the heartbeat go by user id.
    for name in ["tie-b", "tie-a", "tie-c"] {
        ok(
            p.move_to(&room("p-tie"), &user(name), at(15)).await,
            "move_to",
        );
    }
    let page = ok(
        p.list_stale(at(16), Some((at(15), user("tie-a"))), 10)
            .await,
        "list_stale",
    );
    same(
        page.iter().map(|m| m.user.to_string()).collect::<Vec<_>>(),
        vec!["tie-b".to_owned(), "tie-c".to_owned()],
        "after a cursor within a tie: the later ids of the tie only",
    );
    for name in ["tie-a", "tie-b", "tie-c"] {
        ok(p.remove(&room("p-tie"), &user(name)).await, "remove");
    }

    // Pages of 2, each evicted before the next is listed, as the eviction pass goes.
    let mut evicted: Vec<StaleMember> = Vec::new();
    for _ in 0..3 {
        let page = ok(p.list_stale(far_future(), None, 2).await, "list_stale");
        assert!(
            !page.is_empty() && page.len() <= 2,
            "a page holds 1 to `limit` users while some are stale: {page:?}"
        );
        for member in page {
            assert!(
                every.contains(&member) && !evicted.contains(&member),
                "a page lists stale users not evicted yet: {member:?}"
            );
            assert!(
                ok(
                    p.remove_if_seen(&member.room_id, &member.user, member.seen)
                        .await,
                    "remove_if_seen"
                ),
                "a listed user is removed by the heartbeat listed"
            );
            evicted.push(member);
        }
    }
    evicted.sort_by(|a, b| a.user.cmp(&b.user));
    same(
        evicted,
        every,
        "paging through the stale users evicts each once",
    );
    same(
        all_stale(p, far_future()).await,
        Vec::new(),
        "no one is left",
    );
}

async fn concurrent_moves_leave_one_current_room<P: Presence + 'static>(presence: Arc<P>) {
    const TASKS: usize = 8;
    const BEATS: i64 = 25;
    let users: Vec<UserId> = (0..3).map(|i| user(&format!("racer-{i}"))).collect();
    let mut tasks = tokio::task::JoinSet::new();
    for task in 0..TASKS {
        for who in &users {
            let (presence, who) = (presence.clone(), who.clone());
            tasks.spawn(async move {
                let room_id = room(&format!("race-{task}"));
                for beat in 0..BEATS {
                    let previous = ok(presence.move_to(&room_id, &who, at(beat)).await, "move_to");
                    assert_ne!(
                        previous.as_ref(),
                        Some(&room_id),
                        "the previous room is another room"
                    );
                }
            });
        }
    }
    while let Some(joined) = tasks.join_next().await {
        joined.expect("a heartbeat task");
    }
    let listed = all_stale(&*presence, far_future()).await;
    same(
        listed.len(),
        users.len(),
        "one entry per user after the race",
    );
    for (member, who) in listed.iter().zip(&users) {
        same(&member.user, who, "each racer is listed once");
        same(
            current(&*presence, who.as_str()).await,
            Some(member.room_id.clone()),
            "the current room is the listed one",
        );
        assert!(
            (0..TASKS).any(|task| member.room_id == room(&format!("race-{task}"))),
            "the current room is one of those heartbeat: {member:?}"
        );
        same(member.seen, at(BEATS - 1), "the last heartbeat is recorded");
    }
}

async fn compare_and_set_changes_only_the_room_expected<P: Presence>(presence: Arc<P>) {
    let p: &dyn Presence = &*presence;
    let (bob, r1, r2) = (user("bob"), room("p-1"), room("p-2"));
    let cas = |expected: Option<&RoomId>, next: Option<&RoomId>, now| {
        p.compare_and_set(&bob, expected.cloned(), next.cloned(), now)
    };
    same(
        ok(cas(Some(&r1), Some(&r2), at(0)).await, "compare_and_set"),
        None,
        "an unknown user is recorded nowhere, so a move from p-1 is refused",
    );
    same(
        current(p, "bob").await,
        None,
        "a refused set changes nothing",
    );
    same(
        ok(cas(None, Some(&r1), at(5)).await, "compare_and_set"),
        None,
        "a user recorded nowhere is set",
    );
    same(current(p, "bob").await, Some(r1.clone()), "bob is in p-1");
    same(
        ok(cas(None, Some(&r2), at(6)).await, "compare_and_set"),
        Some(r1.clone()),
        "a set expecting no room answers the room recorded",
    );
    same(
        ok(cas(Some(&r2), None, at(6)).await, "compare_and_set"),
        Some(r1.clone()),
        "a clear expecting another room answers the room recorded",
    );
    same(
        current(p, "bob").await,
        Some(r1.clone()),
        "refused sets leave p-1",
    );
    same(
        ok(cas(Some(&r1), Some(&r1), at(10)).await, "compare_and_set"),
        Some(r1.clone()),
        "a set to the same room matches",
    );
    same(
        all_stale(p, far_future()).await,
        vec![stale("p-1", "bob", at(10))],
        "a matching set renews the heartbeat",
    );
    same(
        ok(cas(Some(&r1), Some(&r2), at(20)).await, "compare_and_set"),
        Some(r1.clone()),
        "a move from the room recorded answers it",
    );
    same(
        current(p, "bob").await,
        Some(r2.clone()),
        "bob moved to p-2",
    );
    same(
        all_stale(p, far_future()).await,
        vec![stale("p-2", "bob", at(20))],
        "one entry, in the new room, with the time of the move",
    );
    same(
        ok(cas(Some(&r2), None, at(30)).await, "compare_and_set"),
        Some(r2.clone()),
        "a clear of the room recorded answers it",
    );
    same(current(p, "bob").await, None, "cleared");
    same(
        all_stale(p, far_future()).await,
        Vec::new(),
        "a cleared user is not listed",
    );
    same(
        ok(cas(None, None, at(40)).await, "compare_and_set"),
        None,
        "clearing a user recorded nowhere matches and changes nothing",
    );
    same(current(p, "bob").await, None, "still nowhere");
    // The record is the one heartbeats, restores and evictions read and write.
    ok(p.move_to(&r1, &bob, at(50)).await, "move_to");
    same(
        ok(cas(Some(&r1), Some(&r2), at(60)).await, "compare_and_set"),
        Some(r1.clone()),
        "a heartbeat's room is the record",
    );
    assert!(
        !ok(p.remove_if_seen(&r2, &bob, at(50)).await, "remove_if_seen"),
        "an eviction of the heartbeat before the move finds the record changed"
    );
    same(current(p, "bob").await, Some(r2), "the move stands");
}

async fn concurrent_compare_and_sets_each_see_the_room_before<P: Presence + 'static>(
    presence: Arc<P>,
) {
    // Racers move one user from the room they last saw to their own room, retrying with the
    // room answered until their set is made; each made move must answer a distinct room
    // before, so the moves form one chain from "nowhere" to the room recorded at the end.
    const RACERS: usize = 6;
    const MOVES: usize = 10;
    let bob = user("cas-racer");
    let mut tasks = tokio::task::JoinSet::new();
    for racer in 0..RACERS {
        let (presence, bob) = (presence.clone(), bob.clone());
        tasks.spawn(async move {
            let mut made = Vec::new();
            for n in 0..MOVES {
                let to = room(&format!("cas-{racer}-{n}"));
                let mut expected = None;
                loop {
                    let before = ok(
                        presence
                            .compare_and_set(&bob, expected.clone(), Some(to.clone()), at(1))
                            .await,
                        "compare_and_set",
                    );
                    if before == expected {
                        made.push((before, to.clone()));
                        break;
                    }
                    expected = before;
                }
            }
            made
        });
    }
    let mut moves = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        moves.extend(joined.expect("a compare-and-set task"));
    }
    same(moves.len(), RACERS * MOVES, "every move was made once");
    // Follow the chain from nowhere: each room is left by exactly one move.
    let mut from: std::collections::HashMap<Option<RoomId>, RoomId> =
        std::collections::HashMap::new();
    for (before, to) in &moves {
        assert!(
            from.insert(before.clone(), to.clone()).is_none(),
            "two moves answered the same room before ({before:?}): one overwrote the other"
        );
    }
    let mut at_room = None;
    for _ in 0..moves.len() {
        at_room = Some(from[&at_room].clone());
    }
    same(
        current(&*presence, "cas-racer").await,
        at_room,
        "the record is the end of the chain of moves",
    );
}

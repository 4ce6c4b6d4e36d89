//! The conformance suite of [`PasswordAttempts`]: a lockout per user and room after
//! [`MAX_WRONG_PASSWORDS`] wrong ones, until the window that began with the first ends;
//! attempts taken back in their own window only; and guesses racing.

use std::future::Future;
use std::sync::Arc;

use room_domain::{RoomId, Timestamp, UserId};

use super::fixtures::{at, ok, room, same, user};
use crate::ports::{Counted, PasswordAttempts};
use crate::{Error, MAX_WRONG_PASSWORDS, PASSWORD_WINDOW_MS, Result};

/// Runs every [`PasswordAttempts`] check, each against a fresh, empty instance from `fresh`.
/// Instances built by one `fresh` call may share nothing with those of another.
pub async fn password_attempts_suite<A, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<A>>,
    A: PasswordAttempts + 'static,
{
    a_user_is_locked_out_of_one_room_until_the_window_ends(fresh().await).await;
    checks_that_do_not_count_change_nothing(fresh().await).await;
    a_window_begins_with_its_first_wrong_password(fresh().await).await;
    an_attempt_taken_back_frees_its_place_in_its_own_window_only(fresh().await).await;
    guesses_at_once_get_no_more_through(fresh().await).await;
}

/// `check` that must count the attempt.
async fn counted(
    attempts: &dyn PasswordAttempts,
    who: &UserId,
    room_id: &RoomId,
    now: Timestamp,
) -> Counted {
    ok(attempts.check(who, room_id, now, true).await, "check")
        .unwrap_or_else(|| panic!("a counting check at {now:?} returns what it counted"))
}

/// Asserts that `checked` refused with a retry at `retry_at`.
#[track_caller]
fn refused<T: std::fmt::Debug>(checked: Result<T>, retry_at: Timestamp, what: &str) {
    assert!(
        matches!(&checked, Err(Error::TooManyAttempts { retry_at: at }) if *at == retry_at),
        "{what}: expected TooManyAttempts {{ retry_at: {retry_at:?} }}, got {checked:?}"
    );
}

async fn a_user_is_locked_out_of_one_room_until_the_window_ends<A: PasswordAttempts>(
    attempts: Arc<A>,
) {
    let a: &dyn PasswordAttempts = &*attempts;
    let (bob, r1) = (user("bob"), room("a-1"));
    let ends = at(PASSWORD_WINDOW_MS);
    for i in 0..MAX_WRONG_PASSWORDS {
        let c = counted(a, &bob, &r1, at(i64::from(i))).await;
        same(
            c,
            Counted {
                user: bob.clone(),
                room: r1.clone(),
                since: at(0),
            },
            "a counted attempt names its user, room and window",
        );
    }
    refused(
        a.check(&bob, &r1, at(10), false).await,
        ends,
        "past the limit, even the right password is refused",
    );
    refused(
        a.check(&bob, &r1, at(10), true).await,
        ends,
        "past the limit, a wrong password is refused",
    );
    refused(
        a.check(&bob, &r1, at(PASSWORD_WINDOW_MS - 1), false).await,
        ends,
        "refused until the window ends",
    );
    same(
        ok(a.check(&bob, &room("a-2"), at(10), false).await, "check"),
        None,
        "another room is another count",
    );
    let _ = counted(a, &bob, &room("a-2"), at(10)).await;
    let _ = counted(a, &user("carol"), &r1, at(10)).await;
    same(
        ok(a.check(&bob, &r1, ends, false).await, "check"),
        None,
        "the lockout ends with the window",
    );
    same(
        counted(a, &bob, &r1, ends).await.since,
        ends,
        "a wrong password after the window begins a new one",
    );
}

async fn checks_that_do_not_count_change_nothing<A: PasswordAttempts>(attempts: Arc<A>) {
    let a: &dyn PasswordAttempts = &*attempts;
    let (bob, r1) = (user("bob"), room("a-1"));
    for i in 0..2 * MAX_WRONG_PASSWORDS {
        same(
            ok(a.check(&bob, &r1, at(i64::from(i)), false).await, "check"),
            None,
            "a check that does not count returns nothing to take back",
        );
    }
    for _ in 0..MAX_WRONG_PASSWORDS {
        let _ = counted(a, &bob, &r1, at(100)).await;
    }
    refused(
        a.check(&bob, &r1, at(100), false).await,
        at(100 + PASSWORD_WINDOW_MS),
        "only counted attempts count, in a window from the first of them",
    );
}

async fn a_window_begins_with_its_first_wrong_password<A: PasswordAttempts>(attempts: Arc<A>) {
    let a: &dyn PasswordAttempts = &*attempts;
    let (bob, r1) = (user("bob"), room("a-1"));
    let half = PASSWORD_WINDOW_MS / 2;
    let _ = counted(a, &bob, &r1, at(0)).await;
    for _ in 1..MAX_WRONG_PASSWORDS {
        same(
            counted(a, &bob, &r1, at(half)).await.since,
            at(0),
            "later attempts count in the window of the first",
        );
    }
    refused(
        a.check(&bob, &r1, at(half), false).await,
        at(PASSWORD_WINDOW_MS),
        "the lockout lasts until the first attempt's window ends",
    );
    // A check that does not count, after the window, begins no window: the next wrong
    // password does.
    let next = at(PASSWORD_WINDOW_MS + 10);
    same(
        ok(a.check(&bob, &r1, next, false).await, "check"),
        None,
        "free after the window",
    );
    let later = at(PASSWORD_WINDOW_MS + 20);
    for _ in 0..MAX_WRONG_PASSWORDS {
        same(
            counted(a, &bob, &r1, later).await.since,
            later,
            "the new window begins with its first wrong password",
        );
    }
    refused(
        a.check(&bob, &r1, later, false).await,
        Timestamp(later.0 + PASSWORD_WINDOW_MS),
        "locked out again, until the new window ends",
    );
}

async fn an_attempt_taken_back_frees_its_place_in_its_own_window_only<A: PasswordAttempts>(
    attempts: Arc<A>,
) {
    let a: &dyn PasswordAttempts = &*attempts;
    let (bob, r1) = (user("bob"), room("a-1"));
    for _ in 0..MAX_WRONG_PASSWORDS - 1 {
        let _ = counted(a, &bob, &r1, at(0)).await;
    }
    let last = counted(a, &bob, &r1, at(0)).await;
    ok(a.uncount(last).await, "uncount");
    let again = counted(a, &bob, &r1, at(0)).await;
    refused(
        a.check(&bob, &r1, at(0), false).await,
        at(PASSWORD_WINDOW_MS),
        "the place taken back is taken again",
    );
    // The window ends and a new one fills up; the old attempt taken back late does not lower
    // the new count.
    let later = at(PASSWORD_WINDOW_MS);
    for _ in 0..MAX_WRONG_PASSWORDS {
        let _ = counted(a, &bob, &r1, later).await;
    }
    ok(a.uncount(again).await, "uncount of an ended window");
    refused(
        a.check(&bob, &r1, later, false).await,
        at(2 * PASSWORD_WINDOW_MS),
        "an attempt of an ended window is not taken back from a new one",
    );
    // Taking back what was never counted changes nothing.
    ok(
        a.uncount(Counted {
            user: user("carol"),
            room: r1.clone(),
            since: later,
        })
        .await,
        "uncount of an unknown pair",
    );
    same(
        ok(a.check(&user("carol"), &r1, later, false).await, "check"),
        None,
        "an unknown pair stays free",
    );
}

async fn guesses_at_once_get_no_more_through<A: PasswordAttempts + 'static>(attempts: Arc<A>) {
    let (bob, r1) = (user("bob"), room("a-1"));
    let mut guesses = tokio::task::JoinSet::new();
    for _ in 0..4 * MAX_WRONG_PASSWORDS {
        let (attempts, bob, r1) = (attempts.clone(), bob.clone(), r1.clone());
        guesses.spawn(async move { attempts.check(&bob, &r1, at(0), true).await });
    }
    let mut through = 0;
    while let Some(guess) = guesses.join_next().await {
        match guess.expect("a guess task") {
            Ok(Some(_)) => through += 1,
            other => refused(other, at(PASSWORD_WINDOW_MS), "a guess past the limit"),
        }
    }
    same(
        through,
        MAX_WRONG_PASSWORDS,
        "guesses at once: the limit, no more, get through",
    );
}

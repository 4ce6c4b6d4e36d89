//! The conformance suite of [`ListCache`]: the newest generation only, answered to readers
//! that have an older one; older or equal puts refused; bodies over the limit refused with
//! nothing changed; bodies of any bytes kept exactly; and puts racing each other and a reader.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::fixtures::{expect_err, ok, same};
use crate::Error;
use crate::ports::{CachedLists, ListCache, MAX_LIST_CACHE_BYTES};

/// Runs every [`ListCache`] check, each against a fresh, empty cache from `fresh`. Caches
/// built by one `fresh` call may share nothing with those of another.
pub async fn list_cache_suite<C, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<C>>,
    C: ListCache + 'static,
{
    an_empty_cache_answers_nothing(fresh().await).await;
    readers_get_only_lists_newer_than_theirs(fresh().await).await;
    an_older_or_equal_put_is_refused(fresh().await).await;
    generations_compare_exactly_over_the_whole_range(fresh().await).await;
    a_body_over_the_limit_is_invalid_and_changes_nothing(fresh().await).await;
    bodies_round_trip_exactly(fresh().await).await;
    racing_puts_end_with_the_highest_generation(fresh().await).await;
}

/// The body the suite stores as `generation`: recognizably that generation's.
fn body_of(generation: u64) -> Vec<u8> {
    format!("the room lists of generation {generation}").into_bytes()
}

fn lists(generation: u64) -> Option<CachedLists> {
    Some(CachedLists {
        generation,
        body: body_of(generation),
    })
}

async fn stored<C: ListCache>(cache: &C, generation: u64) {
    same(
        ok(cache.put(generation, &body_of(generation)).await, "put"),
        true,
        &format!("generation {generation} is stored"),
    );
}

async fn an_empty_cache_answers_nothing<C: ListCache>(cache: Arc<C>) {
    same(
        ok(cache.get_newer(None).await, "get_newer"),
        None,
        "an empty cache has nothing to answer",
    );
    same(
        ok(cache.get_newer(Some(0)).await, "get_newer"),
        None,
        "an empty cache has nothing newer than generation 0",
    );
}

async fn readers_get_only_lists_newer_than_theirs<C: ListCache>(cache: Arc<C>) {
    stored(&*cache, 5).await;
    same(
        ok(cache.get_newer(None).await, "get_newer"),
        lists(5),
        "a reader without lists gets the stored ones",
    );
    for older in [0, 4] {
        same(
            ok(cache.get_newer(Some(older)).await, "get_newer"),
            lists(5),
            &format!("a reader of generation {older} gets generation 5"),
        );
    }
    for same_or_newer in [5, 6, u64::MAX] {
        same(
            ok(cache.get_newer(Some(same_or_newer)).await, "get_newer"),
            None,
            &format!("a reader of generation {same_or_newer} gets nothing from generation 5"),
        );
    }
    stored(&*cache, 6).await;
    same(
        ok(cache.get_newer(Some(5)).await, "get_newer"),
        lists(6),
        "a newer put replaces the lists readers get",
    );
}

async fn an_older_or_equal_put_is_refused<C: ListCache>(cache: Arc<C>) {
    stored(&*cache, 5).await;
    same(
        ok(cache.put(5, b"other lists of generation 5").await, "put"),
        false,
        "a put of the stored generation is refused",
    );
    same(
        ok(cache.put(3, &body_of(3)).await, "put"),
        false,
        "a put of an older generation is refused",
    );
    same(
        ok(cache.get_newer(None).await, "get_newer"),
        lists(5),
        "refused puts leave the stored lists as they were",
    );
    stored(&*cache, 7).await;
    same(
        ok(cache.get_newer(None).await, "get_newer"),
        lists(7),
        "a newer put after refused ones is stored",
    );
}

async fn generations_compare_exactly_over_the_whole_range<C: ListCache>(cache: Arc<C>) {
    // 9 then 10: more digits is newer (not a text comparison). Around 2^53: a comparison of
    // doubles would see these two as equal.
    let big = 1_u64 << 53;
    for generation in [0, 9, 10, 99, 100, big, big + 1, u64::MAX - 1, u64::MAX] {
        stored(&*cache, generation).await;
        same(
            ok(cache.get_newer(None).await, "get_newer"),
            lists(generation),
            &format!("generation {generation} is what a reader without lists gets"),
        );
    }
    same(
        ok(cache.get_newer(Some(u64::MAX - 1)).await, "get_newer"),
        lists(u64::MAX),
        "generation u64::MAX is newer than u64::MAX - 1",
    );
    same(
        ok(cache.put(big + 1, &body_of(big + 1)).await, "put"),
        false,
        "a put below the largest generation is refused",
    );
    same(
        ok(cache.put(u64::MAX, &body_of(1)).await, "put"),
        false,
        "a put of generation u64::MAX over itself is refused",
    );
    same(
        ok(cache.get_newer(None).await, "get_newer"),
        lists(u64::MAX),
        "the largest generation's lists stay",
    );
}

async fn a_body_over_the_limit_is_invalid_and_changes_nothing<C: ListCache>(cache: Arc<C>) {
    let over = vec![7_u8; MAX_LIST_CACHE_BYTES + 1];
    expect_err!(
        cache.put(1, &over).await,
        Error::Invalid(_),
        "a body over the limit in an empty cache"
    );
    same(
        ok(cache.get_newer(None).await, "get_newer"),
        None,
        "a refused body leaves an empty cache empty",
    );
    stored(&*cache, 2).await;
    expect_err!(
        cache.put(3, &over).await,
        Error::Invalid(_),
        "a body over the limit of a newer generation"
    );
    same(
        ok(cache.get_newer(None).await, "get_newer"),
        lists(2),
        "a refused body leaves the stored lists as they were",
    );
    drop(over);
    let at_limit = vec![9_u8; MAX_LIST_CACHE_BYTES];
    same(
        ok(cache.put(4, &at_limit).await, "put"),
        true,
        "a body of exactly the limit is stored",
    );
    same(
        ok(cache.get_newer(Some(4)).await, "get_newer"),
        None,
        "a reader of the limit-sized generation gets nothing",
    );
    let newer = ok(cache.get_newer(Some(3)).await, "get_newer");
    same(
        newer.map(|l| (l.generation, l.body.len(), l.body.iter().all(|b| *b == 9))),
        Some((4, MAX_LIST_CACHE_BYTES, true)),
        "the limit-sized body comes back whole",
    );
}

async fn bodies_round_trip_exactly<C: ListCache>(cache: Arc<C>) {
    ok(cache.put(1, b"").await, "put");
    same(
        ok(cache.get_newer(None).await, "get_newer"),
        Some(CachedLists {
            generation: 1,
            body: Vec::new(),
        }),
        "an empty body comes back empty",
    );
    // About 1 MiB of every byte value, in an order that does not repeat with a short period,
    // so that a byte lost, added or transcoded anywhere shows.
    let body: Vec<u8> = (0..(1_u32 << 20) + 3)
        .map(|i| (i ^ (i >> 8) ^ (i >> 16)) as u8)
        .collect();
    assert!(
        (0..=255_u8).all(|b| body.contains(&b)),
        "the binary body holds every byte value"
    );
    same(
        ok(cache.put(2, &body).await, "put"),
        true,
        "a binary body is stored",
    );
    let back = ok(cache.get_newer(Some(1)).await, "get_newer");
    assert!(
        back.as_ref()
            .is_some_and(|l| l.generation == 2 && l.body == body),
        "a binary body comes back exactly: got generation {:?}, {:?} bytes",
        back.as_ref().map(|l| l.generation),
        back.as_ref().map(|l| l.body.len())
    );
}

async fn racing_puts_end_with_the_highest_generation<C: ListCache + 'static>(cache: Arc<C>) {
    const PUTS: u64 = 20;
    // A reader polls while the puts race: every answer pairs a generation with its own body,
    // and generations only grow.
    let reader = tokio::spawn({
        let cache = cache.clone();
        async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            let mut seen = None;
            while seen != Some(PUTS) {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "the reader saw generation {PUTS} within 30 s (last: {seen:?})"
                );
                if let Some(found) = ok(cache.get_newer(seen).await, "get_newer") {
                    assert!(
                        found.body == body_of(found.generation),
                        "generation {} came with the body of another generation",
                        found.generation
                    );
                    assert!(
                        seen.is_none_or(|s| found.generation > s),
                        "generation {} after {seen:?}",
                        found.generation
                    );
                    seen = Some(found.generation);
                }
                tokio::task::yield_now().await;
            }
        }
    });
    // Generations 1..=20 in a shuffled order (7 and 20 are coprime).
    let puts: Vec<_> = (0..PUTS)
        .map(|i| (i * 7) % PUTS + 1)
        .map(|generation| {
            let cache = cache.clone();
            tokio::spawn(async move {
                let stored = ok(cache.put(generation, &body_of(generation)).await, "put");
                (generation, stored)
            })
        })
        .collect();
    let mut stored = Vec::new();
    for put in puts {
        let (generation, was_stored) = put.await.expect("a put task panicked");
        if was_stored {
            stored.push(generation);
        }
    }
    assert!(
        stored.contains(&PUTS),
        "nothing as new as generation {PUTS} existed, so its put stored: {stored:?}"
    );
    same(
        ok(cache.get_newer(None).await, "get_newer"),
        lists(PUTS),
        "racing puts end with the highest generation and its body",
    );
    reader.await.expect("the reader panicked");
}

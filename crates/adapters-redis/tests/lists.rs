//! [`RedisListCache`] against the real Redis of `ROOM_TEST_REDIS_URL`: the list cache
//! conformance suite, then what only a shared server shows: nodes on one key prefix read what
//! another stored, the one hash Redis holds, and a hash
//! edited by hand. Each test uses its own key prefix, so tests run in parallel.

use std::sync::Arc;
use std::time::Duration;

use adapters_redis::{RedisListCache, RedisListCacheSettings};
use room_app::ports::{CachedLists, ListCache};
use room_app::testkit;
use room_testkit::redis::{keys, prefix, pttl, raw};

/// A cache under `prefix`, or `None` when the test skips.
async fn cache(prefix: &str) -> Option<RedisListCache> {
    let url = room_testkit::redis::url()?;
    let mut settings = RedisListCacheSettings::new(&url);
    settings.key_prefix = prefix.to_owned();
    // Generous for a busy machine moving 64 MiB bodies.
    settings.op_timeout = Duration::from_secs(30);
    match RedisListCache::connect(&settings).await {
        Ok(cache) => Some(cache),
        Err(error) => {
            testkit::service_unreachable(&url, error);
            None
        }
    }
}

fn lists(generation: u64, body: &[u8]) -> Option<CachedLists> {
    Some(CachedLists {
        generation,
        body: body.to_vec(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_list_cache_passes_the_list_cache_suite() {
    if cache(&prefix()).await.is_none() {
        return;
    }
    testkit::list_cache_suite(|| async {
        Arc::new(cache(&prefix()).await.expect("Redis answered a moment ago"))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nodes_on_one_prefix_read_what_the_refresher_stored_in_one_hash() {
    let prefix = prefix();
    let Some(refresher) = cache(&prefix).await else {
        return;
    };
    let node = cache(&prefix).await.unwrap();
    let elsewhere = cache(&room_testkit::redis::prefix()).await.unwrap();

    assert!(refresher.put(3, b"lists 3").await.unwrap());
    assert_eq!(node.get_newer(None).await.unwrap(), lists(3, b"lists 3"));
    assert_eq!(node.get_newer(Some(3)).await.unwrap(), None);
    assert!(!node.put(2, b"lists 2").await.unwrap(), "a late refresher");
    assert_eq!(
        elsewhere.get_newer(None).await.unwrap(),
        None,
        "another prefix is another cache"
    );

    let mut conn = raw(&room_testkit::redis::url().unwrap()).await;
    let key = format!("{prefix}room:lists");
    assert_eq!(keys(&mut conn, &prefix).await, vec![key.clone()]);
    let (generation, body): (String, Vec<u8>) = redis::cmd("HMGET")
        .arg(&key)
        .arg("generation")
        .arg("body")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        (generation.as_str(), body.as_slice()),
        ("3", &b"lists 3"[..])
    );
    assert_eq!(pttl(&mut conn, &key).await, -1, "the lists do not expire");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hash_edited_by_hand_is_corrupt_not_replaced() {
    let prefix = prefix();
    let Some(cache) = cache(&prefix).await else {
        return;
    };
    let mut conn = raw(&room_testkit::redis::url().unwrap()).await;
    let key = format!("{prefix}room:lists");
    for generation in ["", "07", "1.5", "-1", "x", "123456789012345678901"] {
        let _: () = redis::cmd("HSET")
            .arg(&key)
            .arg("generation")
            .arg(generation)
            .arg("body")
            .arg("b")
            .query_async(&mut conn)
            .await
            .unwrap();
        for error in [
            cache.get_newer(None).await.unwrap_err(),
            cache.put(1, b"one").await.unwrap_err(),
        ] {
            assert!(
                matches!(error, room_app::Error::Corrupt(_)),
                "generation {generation:?}: {error:?}"
            );
        }
    }
    let _: () = redis::cmd("HDEL")
        .arg(&key)
        .arg("body")
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg(&key)
        .arg("generation")
        .arg("5")
        .query_async(&mut conn)
        .await
        .unwrap();
    let error = cache.get_newer(None).await.unwrap_err();
    assert!(matches!(error, room_app::Error::Corrupt(_)), "{error:?}");
    assert_eq!(
        cache.get_newer(Some(5)).await.unwrap(),
        None,
        "a reader with that generation is not sent the missing body"
    );
}

#[tokio::test]
async fn an_unreachable_server_is_unavailable_not_a_hang() {
    let mut settings = RedisListCacheSettings::new("redis://127.0.0.1:1/0");
    settings.op_timeout = Duration::from_millis(500);
    let error = tokio::time::timeout(Duration::from_secs(5), RedisListCache::connect(&settings))
        .await
        .expect("an unreachable server is answered within the call timeout")
        .unwrap_err();
    assert!(error.is_retryable(), "{error:?}");
}

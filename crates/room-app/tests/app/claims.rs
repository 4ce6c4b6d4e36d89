//! [`workers::run_claimed`]: of two processes running one pass under one claim, only the
//! holder runs it; when the holder stops, its claim is released and the other takes over.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use room_app::ports::{Clock, ClockRef, WorkClaimsRef};
use room_app::testkit::eventually;
use room_app::{InMemoryStore, workers};
use room_domain::Timestamp;
use room_testkit::ManualClock;
use tokio_util::sync::CancellationToken;

fn runner(
    claims: &WorkClaimsRef,
    owner: &str,
    passes: Arc<AtomicU64>,
    cancel: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let claim = workers::Claim {
        claims: claims.clone(),
        owner: owner.to_owned(),
        ttl: Duration::from_secs(10),
    };
    tokio::spawn(workers::run_claimed(
        "outbox_publisher",
        Duration::from_millis(5),
        claim,
        cancel,
        move || {
            passes.fetch_add(1, Ordering::SeqCst);
            std::future::ready(Ok(0))
        },
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_process_runs_a_claimed_pass_and_the_other_takes_over_when_it_stops() {
    let claims: WorkClaimsRef = Arc::new(InMemoryStore::new());
    let (a_passes, b_passes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (a_stop, b_stop) = (CancellationToken::new(), CancellationToken::new());
    let a = runner(&claims, "worker-a", a_passes.clone(), a_stop.clone());
    eventually("worker a holds the claim and runs passes", || {
        std::future::ready(a_passes.load(Ordering::SeqCst) >= 20)
    })
    .await;
    let b = runner(&claims, "worker-b", b_passes.clone(), b_stop.clone());
    let before = a_passes.load(Ordering::SeqCst);
    eventually("worker a keeps running passes beside b", || {
        std::future::ready(a_passes.load(Ordering::SeqCst) >= before + 50)
    })
    .await;
    assert_eq!(
        b_passes.load(Ordering::SeqCst),
        0,
        "worker b never runs the pass while a holds the claim"
    );

    a_stop.cancel();
    a.await.unwrap();
    let stopped_at = a_passes.load(Ordering::SeqCst);
    // Released on stop: b takes over at its next ask (every tenth of the TTL, 1 s).
    eventually("worker b takes the released claim over", || {
        std::future::ready(b_passes.load(Ordering::SeqCst) >= 10)
    })
    .await;
    assert_eq!(a_passes.load(Ordering::SeqCst), stopped_at, "a stopped");
    b_stop.cancel();
    b.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_pass_longer_than_the_claim_keeps_it_and_a_stop_drops_the_pass() {
    // The store's clock as tokio's (paused) time moves it.
    let clock: ClockRef = ManualClock::following_tokio(Timestamp(1_700_000_000_000));
    let claims: WorkClaimsRef = Arc::new(InMemoryStore::with_clock(clock.clone()));
    let ttl = Duration::from_secs(3);
    let claim = |owner: &str| workers::Claim {
        claims: claims.clone(),
        owner: owner.to_owned(),
        ttl,
    };
    // Worker a's passes last four TTLs each; b would run the pass as soon as a's claim
    // expired.
    let (a_started, a_finished, b_passes) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let (a_stop, b_stop) = (CancellationToken::new(), CancellationToken::new());
    let a = tokio::spawn(workers::run_claimed(
        "outbox_publisher",
        Duration::from_millis(100),
        claim("worker-a"),
        a_stop.clone(),
        {
            let (started, finished) = (a_started.clone(), a_finished.clone());
            move || {
                let (started, finished) = (started.clone(), finished.clone());
                async move {
                    started.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_secs(12)).await;
                    finished.fetch_add(1, Ordering::SeqCst);
                    Ok(1)
                }
            }
        },
    ));
    eventually("worker a started its pass under the claim", || async {
        a_started.load(Ordering::SeqCst) == 1
    })
    .await;
    let b = tokio::spawn(workers::run_claimed(
        "outbox_publisher",
        Duration::from_millis(100),
        claim("worker-b"),
        b_stop.clone(),
        {
            let passes = b_passes.clone();
            move || {
                passes.fetch_add(1, Ordering::SeqCst);
                std::future::ready(Ok(0))
            }
        },
    ));
    // Paused time jumps ahead whenever every task waits: 30 s of virtual time.
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(
        a_finished.load(Ordering::SeqCst) >= 2,
        "a's long passes ran to their end"
    );
    assert_eq!(
        b_passes.load(Ordering::SeqCst),
        0,
        "a renewed its claim during its passes: b never ran one"
    );

    // A stop drops a's pass in the middle; b takes the released claim over.
    let finished = a_finished.load(Ordering::SeqCst);
    a_stop.cancel();
    a.await.unwrap();
    assert_eq!(
        a_finished.load(Ordering::SeqCst),
        finished,
        "the pass was dropped"
    );
    eventually("b took the claim over", || async {
        b_passes.load(Ordering::SeqCst) > 0
    })
    .await;
    b_stop.cancel();
    b.await.unwrap();
}

/// Claims expire by the store's clock, which every process reads alike: a worker whose own
/// clock runs 30 s ahead of the others' does not take a live claim (it did, when each
/// claimer compared its own clock with the expiry another claimer had written), and takes
/// the claim only once it has expired by the store's clock.
#[tokio::test(start_paused = true)]
async fn a_worker_whose_clock_runs_ahead_does_not_take_a_live_claim() {
    let store_clock = ManualClock::following_tokio(Timestamp(1_700_000_000_000));
    let claims: WorkClaimsRef = Arc::new(InMemoryStore::with_clock(store_clock.clone()));
    let ttl = Duration::from_secs(10);
    let claim = |owner: &str| workers::Claim {
        claims: claims.clone(),
        owner: owner.to_owned(),
        ttl,
    };
    // Worker b's own clock: 30 s ahead of the store's (and of worker a's), three TTLs.
    let b_clock = ManualClock::following_tokio(Timestamp(1_700_000_030_000));
    assert!(b_clock.now().0 - store_clock.now().0 >= 3 * ttl.as_millis() as i64);

    let (a_passes, b_passes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (a_stop, b_stop) = (CancellationToken::new(), CancellationToken::new());
    let counting = |passes: Arc<AtomicU64>| {
        move || {
            passes.fetch_add(1, Ordering::SeqCst);
            std::future::ready(Ok(0))
        }
    };
    let a = tokio::spawn(workers::run_claimed(
        "timers",
        Duration::from_millis(100),
        claim("worker-a"),
        a_stop.clone(),
        counting(a_passes.clone()),
    ));
    eventually("worker a holds the claim", || async {
        a_passes.load(Ordering::SeqCst) > 0
    })
    .await;
    let b = tokio::spawn(workers::run_claimed(
        "timers",
        Duration::from_millis(100),
        claim("worker-b"),
        b_stop.clone(),
        counting(b_passes.clone()),
    ));
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(
        b_passes.load(Ordering::SeqCst),
        0,
        "b never took a's live claim"
    );

    // Worker a dies without releasing its claim: b takes it once it expired.
    a.abort();
    let _ = a.await;
    eventually("b takes the expired claim", || async {
        b_passes.load(Ordering::SeqCst) > 0
    })
    .await;
    b_stop.cancel();
    b.await.unwrap();
}

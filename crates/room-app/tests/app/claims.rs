//! [`workers::run_claimed`]: of two processes running one pass under one claim, only the
//! holder runs it; when the holder stops, its claim is released and the other takes over.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use room_app::ports::{ClockRef, WorkClaimsRef};
use room_app::testkit::eventually;
use room_app::{InMemoryStore, SystemClock, workers};
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
        clock: Arc::new(SystemClock) as ClockRef,
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

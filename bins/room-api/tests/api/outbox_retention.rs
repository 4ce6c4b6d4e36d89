//! The embedded default keeps a bounded outbox: a node without Kafka, run past its retention
//! (a test clock), holds no outbox row older than `outbox.retention_days`, whether no
//! consumer reads the facts (every row is done at once) or the IM group effects do (a row is
//! done once they passed it).

use std::sync::Arc;
use std::time::Duration;

use adapters_tencent_im::FakeIm;
use room_app::ports::{Clock, ClockRef};
use room_domain::Timestamp;
use room_node::Settings;
use room_testkit::ManualClock;

use crate::support::{TestApp, eventually};

const RETENTION_DAYS: u64 = 3;

/// Commits a few durable facts: rooms created, members joined and left.
async fn some_facts(app: &TestApp, tag: &str) {
    for n in 0..3 {
        let room_id = app.create_room(&format!("{tag}-owner-{n}")).await;
        app.join(&room_id, &format!("{tag}-owner-{n}")).await;
        app.join(&room_id, &format!("{tag}-guest-{n}")).await;
    }
}

/// The commit times of every outbox row, oldest id first.
async fn outbox_times(app: &TestApp) -> Vec<Timestamp> {
    app.app
        .storage()
        .outbox
        .list_after(0, 100_000)
        .await
        .unwrap()
        .iter()
        .map(|row| row.envelope.occurred_at)
        .collect()
}

async fn runs_past_its_retention(change: impl FnOnce(&mut Settings)) {
    let clock = ManualClock::at_system_time();
    let app = TestApp::with_clock(
        |s| {
            s.outbox.retention_days = RETENTION_DAYS;
            s.outbox.retention_every_secs = 1;
            s.outbox.consume_every_ms = 10;
            change(s);
        },
        clock.clone() as ClockRef,
    )
    .await;
    some_facts(&app, "before").await;
    let before = outbox_times(&app).await;
    assert!(before.len() >= 9, "durable facts in the outbox: {before:?}");
    // Done (delivered, or passed by every consumer) a moment after their commit, as always
    // but when the clock jumps: retention counts from then.
    eventually("every row is done", || async {
        app.app
            .storage()
            .outbox
            .list_pending(0, &[], 1)
            .await
            .unwrap()
            .is_empty()
    })
    .await;

    clock.advance(Duration::from_secs(RETENTION_DAYS * 86_400 + 120));
    some_facts(&app, "after").await;
    let retention_ms = i64::try_from(RETENTION_DAYS * 86_400_000).unwrap();
    eventually("no outbox row is older than the retention", || async {
        let cutoff = clock.now().0 - retention_ms;
        outbox_times(&app).await.iter().all(|at| at.0 >= cutoff)
    })
    .await;
    let kept = outbox_times(&app).await;
    assert!(
        !kept.is_empty(),
        "the rows committed since are kept (within the retention)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_kafka_or_consumers_no_outbox_row_outlives_the_retention() {
    runs_past_its_retention(|_| {}).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_kafka_rows_the_im_effects_passed_go_after_the_retention() {
    let im = Arc::new(FakeIm::start().await);
    let settings = im.settings();
    runs_past_its_retention(move |s| {
        s.im = settings;
        s.workers.im_effects_group = "im-retention".into();
    })
    .await;
}

//! The node's own consumers of the durable facts ([`room_app::consumers`]) and where they read
//! them: the Kafka topic when `kafka.brokers` is set ([`KafkaFacts`], a consumer group per
//! consumer), the store's outbox otherwise ([`OutboxSource`], a stored position per consumer
//! under a work claim). The consumers: the income consumer, named `workers.income_group`,
//! which credits each paid gift's parts as income ([`IncomeConsumer`]), always; the tally
//! consumer, named `workers.tallies_group`, which counts each paid gift's value for gift value
//! and room turnover ([`TallyConsumer`]), always; the board consumer, named `boards.group`,
//! which counts each paid gift on the leaderboards ([`BoardConsumer`]), always; the big-gift
//! broadcaster, named
//! `broadcast.group` ([`GiftBroadcaster`]), when `broadcast.min_value` is set; and the IM
//! group effects, named `workers.im_effects_group`, when IM is configured.
//!
//! A recipient's agency is the one the user directory names ([`DirectoryAgencies`]; set with
//! `PUT /v1/admin/users/{user_id}`); a recipient without one leaves the agency share to the
//! platform.
//!
//! Without a broker, the outbox's rows are done once every consumer has passed them: the
//! `outbox_passed` pass marks them delivered ([`mark_passed`]) and the retention deletes them
//! after `outbox.retention_days`, so the outbox of a node without Kafka stops growing.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use adapters_mq::KafkaFacts;
use adapters_tencent_im::ImClient;
use anyhow::Context;
use room_app::RoomService;
use room_app::boards::BoardConsumer;
use room_app::broadcast::GiftBroadcaster;
use room_app::consumers::{FactConsumer, FactSourceRef, OutboxSource, mark_passed};
use room_app::gift_value::TallyConsumer;
use room_app::income::{DirectoryAgencies, IncomeConsumer};
use room_app::ports::ClockRef;
use room_app::workers::{self, Claim};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::Settings;
use crate::im::{GroupCreation, GroupEffects};
use crate::storage::Storage;

/// How often, without a broker, the rows every consumer has passed are marked done.
const PASSED_EVERY: Duration = Duration::from_secs(1);

/// The consumer handed each room's creation at once, before it is answered: the IM group's
/// creation, when IM is configured.
pub(crate) fn early_consumer(
    settings: &Settings,
    im: Option<&ImClient>,
    clock: &ClockRef,
) -> anyhow::Result<Option<Arc<FactConsumer>>> {
    let Some(client) = im else {
        return Ok(None);
    };
    let consumer = FactConsumer::new(
        &settings.workers.im_effects_group,
        Arc::new(GroupCreation::new(client.clone())),
        clock.clone(),
    )
    .context("ROOM__WORKERS__IM_EFFECTS_GROUP")?;
    Ok(Some(Arc::new(consumer)))
}

/// The node's consumers of the durable facts: the income, tally and board consumers, the big-gift
/// broadcaster when broadcasts are on, and the IM group effects when IM is configured.
pub(crate) fn consumers(
    settings: &Settings,
    im: Option<&ImClient>,
    service: &Arc<RoomService>,
) -> anyhow::Result<Vec<Arc<FactConsumer>>> {
    let ports = service.ports();
    let income = IncomeConsumer::new(
        ports.billing.clone(),
        ports.income.clone(),
        ports.directory.clone(),
        Arc::new(DirectoryAgencies(ports.users.clone())),
    );
    let mut consumers = vec![Arc::new(
        FactConsumer::new(
            &settings.workers.income_group,
            Arc::new(income),
            ports.clock.clone(),
        )
        .context("ROOM__WORKERS__INCOME_GROUP")?,
    )];
    let tallies = TallyConsumer::new(ports.tallies.clone(), settings.billing.utc_offset_secs()?);
    consumers.push(Arc::new(
        FactConsumer::new(
            &settings.workers.tallies_group,
            Arc::new(tallies),
            ports.clock.clone(),
        )
        .context("ROOM__WORKERS__TALLIES_GROUP")?,
    ));
    let boards = BoardConsumer::new(ports.boards.clone(), settings.billing.utc_offset_secs()?);
    consumers.push(Arc::new(
        FactConsumer::new(
            &settings.boards.group,
            Arc::new(boards),
            ports.clock.clone(),
        )
        .context("ROOM__BOARDS__GROUP")?,
    ));
    let broadcast = settings.broadcast.config();
    if broadcast.is_enabled() {
        consumers.push(Arc::new(
            FactConsumer::new(
                &settings.broadcast.group,
                Arc::new(GiftBroadcaster::new(service.clone(), broadcast)),
                ports.clock.clone(),
            )
            .context("ROOM__BROADCAST__GROUP")?,
        ));
    }
    if let Some(client) = im {
        let effects = GroupEffects::new(client.clone(), service.clone());
        consumers.push(Arc::new(
            FactConsumer::new(
                &settings.workers.im_effects_group,
                Arc::new(effects),
                service.ports().clock.clone(),
            )
            .context("ROOM__WORKERS__IM_EFFECTS_GROUP")?,
        ));
    }
    Ok(consumers)
}

/// Where this node's consumers read the facts: the topic with a broker, else the outbox
/// (read under `claim`).
pub(crate) fn source(
    settings: &Settings,
    storage: &Storage,
    claim: Claim,
) -> anyhow::Result<FactSourceRef> {
    if settings.kafka.is_enabled() {
        return Ok(Arc::new(
            KafkaFacts::new(&settings.kafka).context("cannot read the Kafka topic")?,
        ));
    }
    let outbox = &settings.outbox;
    Ok(Arc::new(OutboxSource::new(
        storage.outbox.clone(),
        storage.positions.clone(),
        claim,
        Duration::from_millis(outbox.consume_every_ms.max(1)),
        outbox.publish_batch,
    )))
}

/// Runs each consumer from `source` until `cancel` fires; a run that fails (the broker
/// refused the client for good) is counted in `room_worker_errors_total{worker="facts"}`,
/// logged and started again after a pause that doubles from 1 s to a minute.
pub(crate) fn spawn_consumers(
    consumers: &[Arc<FactConsumer>],
    source: &FactSourceRef,
    tasks: &TaskTracker,
    cancel: &CancellationToken,
) {
    for consumer in consumers {
        let (consumer, source, cancel) = (consumer.clone(), source.clone(), cancel.clone());
        tasks.spawn(supervised(
            consumer.name().to_owned(),
            cancel.clone(),
            move || {
                let (source, consumer, cancel) =
                    (source.clone(), consumer.clone(), cancel.child_token());
                async move { source.run(consumer, cancel).await }
            },
        ));
    }
}

async fn supervised<F, Fut>(name: String, cancel: CancellationToken, mut run: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = room_app::Result<()>>,
{
    let mut pause = Duration::from_secs(1);
    while !cancel.is_cancelled() {
        if let Err(error) = run().await {
            metrics::counter!("room_worker_errors_total", "worker" => "facts").increment(1);
            tracing::error!(consumer = %name, %error, "a consumer of the durable facts failed; restarting it");
        }
        tokio::select! {
            () = cancel.cancelled() => {}
            () = tokio::time::sleep(pause) => {}
        }
        pause = (pause * 2).min(Duration::from_secs(60));
    }
}

/// Without a broker: the `outbox_passed` pass, under `claim`, marks done the rows every one of
/// `consumers` has passed (every row, with none), for the retention to delete.
pub(crate) fn spawn_passed(
    consumers: &[Arc<FactConsumer>],
    storage: &Storage,
    claim: Claim,
    clock: ClockRef,
    batch: u32,
    tasks: &TaskTracker,
    cancel: &CancellationToken,
) {
    let names: Arc<[String]> = consumers.iter().map(|c| c.name().to_owned()).collect();
    let (outbox, positions) = (storage.outbox.clone(), storage.positions.clone());
    tasks.spawn(workers::run_claimed(
        "outbox_passed",
        PASSED_EVERY,
        claim,
        cancel.child_token(),
        move || {
            let (outbox, positions, names, clock) = (
                outbox.clone(),
                positions.clone(),
                names.clone(),
                clock.clone(),
            );
            async move { mark_passed(&outbox, &positions, &names, &clock, batch, 10).await }
        },
    ));
}

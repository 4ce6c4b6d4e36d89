//! `room-worker`: the background work of a cluster of `room-api` nodes on shared storage
//! (MySQL and Redis) — durable timers, rocket payouts, gift recovery, presence eviction, the
//! outbox publisher and its retention — each pass run by one worker at a time under a claim.
//! It reads the same configuration as `room-api` (`configs/room.toml`, `ROOM__*`), serves
//! health, readiness, metrics and the internal endpoint on `http.addr`, and stops gracefully
//! on SIGINT or SIGTERM. Set `ROOM__WORKERS__IN_PROCESS=false` on the API nodes once workers
//! run.

use anyhow::Context;
use room_node::{Role, Settings};

// The same allocator as room-api: the worker drives cells and JSON like it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    if let Some(argument) = std::env::args().nth(1) {
        anyhow::bail!(
            "room-worker takes no arguments (got {argument:?}): it is configured by \
             configs/room.toml and ROOM__* environment variables"
        );
    }
    let settings = Settings::load_default().context("cannot load the configuration")?;
    room_node::run(settings, Role::Worker)
}

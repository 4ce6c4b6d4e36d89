//! `room-orchestrator`: the robot rooms of a cluster of `room-api` nodes on shared storage
//! (MySQL and Redis). Several run side by side: each robot room runs on the one node that
//! holds its lease, the nodes share the rooms between them, and a node that dies or stalls
//! has its rooms taken over within one lease TTL and one reconcile interval. It reads the
//! same configuration as `room-api` (`configs/room.toml`, `ROOM__*`), serves health,
//! readiness, metrics and the internal endpoint (human commands for its rooms are forwarded
//! there) on `http.addr`, and stops gracefully on SIGINT or SIGTERM.

use anyhow::Context;
use room_node::{Role, Settings};

// The same allocator as room-api: the orchestrator drives cells and JSON like it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    if let Some(argument) = std::env::args().nth(1) {
        anyhow::bail!(
            "room-orchestrator takes no arguments (got {argument:?}): it is configured by \
             configs/room.toml and ROOM__* environment variables"
        );
    }
    let settings = Settings::load_default().context("cannot load the configuration")?;
    room_node::run(settings, Role::Orchestrator)
}

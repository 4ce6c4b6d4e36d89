//! `room-orchestrator` processes on one MariaDB database (`ROOM_TEST_MYSQL_URL`) and the real
//! Redis (`ROOM_TEST_REDIS_URL`), with 3-second leases, a 500 ms reconcile and a 500 ms script
//! step, beside a `room-api` node that creates the robot rooms (`POST /v1/admin/robot-rooms`)
//! and forwards human commands to the orchestrator holding each room:
//!
//! - two orchestrators share ten robot rooms by rendezvous hashing and hold them steadily:
//!   every room runs, on the node it prefers, the runtime gauges add up, and the logs hold no
//!   warning or error after start-up;
//! - `kill -9` of one: its rooms run on the other within a lease TTL and a reconcile;
//! - `SIGSTOP` of one past its lease: its rooms run on the other, every commit of every room
//!   is made by the node that owns the room's epoch (the paused node commits nothing after the
//!   takeover), and once resumed (`SIGCONT`) its runtime gauge comes back to what it runs
//!   (a trigger of the test's own records every change of `room_cells` with the connection
//!   that made it, and the connections are matched to the processes through `/proc`: Linux);
//! - a disabled room's robots leave and stay gone;
//! - a person's paid gift in a robot room, sent through `room-api`, is forwarded to the
//!   orchestrator running the room, debited once and shows in the room.
//!
//! # How the two binaries are reached
//!
//! Cargo gives an integration test the path of its own package's binaries only
//! (`CARGO_BIN_EXE_room-orchestrator`); `room-api` is another package, and `cargo nextest run
//! -p room-orchestrator` does not build it, so a path next to this binary could be missing or,
//! worse, stale. So the orchestrators, the processes these tests kill and pause, are real
//! processes of this package's binary, configured through `ROOM__*` like in production, their
//! logs (stdout and stderr, `RUST_LOG=info`) written to a file each in the test's temporary
//! directory; and the `room-api` node runs inside the test process: the very
//! [`App`](room_node::App) of [`Role::Api`](room_node::Role::Api) that `room-api serve` runs
//! ([`room_node::run`] minus logging and signals), served on a socket of its own, with the
//! settings the environment would give it. The schema is migrated with
//! [`Storage::migrate`](room_node::Storage::migrate), what `room-api migrate` calls. Nothing
//! here needs another binary, and every test builds what it runs.
//!
//! # Where the tests are
//!
//! By family: [`sharing`] (two orchestrators holding their rooms steadily), [`takeover`] (a
//! killed or paused orchestrator's rooms run on the other), [`rooms`] (a disabled robot room,
//! a person's gift in one); [`support`] holds the nodes, the cluster and what they share.

mod rooms;
mod sharing;
mod support;
mod takeover;

//! The Room Cell runtime: one tokio task per active room, the only writer of that room.
//!
//! A cell drains up to `max_batch` queued commands, decides and evolves each in memory, commits
//! them all in ONE storage transaction conditional on its epoch and version (group commit),
//! then answers every caller and hands display events to the messenger. A rejected command
//! costs no write. A failed epoch check or a lost lease stops the cell; its queued commands
//! fail with the retryable [`Error::NotOwner`](crate::Error::NotOwner).
//!
//! The runtime's side, which callers hold: [`runtime`](CellRuntime) (the handle, the cells
//! started on demand, local reads), `forwarding` (rooms another node runs), `held` (one cell
//! held on this node), `keeper` (lease renewals), `missed` (display events read back from the
//! log), over the `registry` of active cells and the `config` they run with.
//!
//! The cell's side, one task per room: `run` (the task's loop and its stop), `mailbox` (the
//! requests and the queue), `active` (the cell's state), `recovery` (activation, reload,
//! snapshots), `plan` (decide and evolve a batch into one commit), `commit` (group commit and
//! its failures), `recent` (the replies remembered for repeats).

mod active;
mod commit;
mod config;
mod forwarding;
mod held;
mod keeper;
mod mailbox;
mod missed;
mod plan;
mod recent;
mod recovery;
mod registry;
mod run;
mod runtime;

pub use config::{CellConfig, CellDeps};
pub use forwarding::MEMBER_HINT_FOR;
pub use held::HeldCell;
pub use keeper::KeeperTick;
pub use mailbox::RecentReplies;
pub use runtime::CellRuntime;

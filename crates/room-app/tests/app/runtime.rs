//! The Room Cell runtime: group commit, idempotency by command id, overload, fencing by epoch
//! and lease, snapshots, and what a rejected command costs.
//!
//! By family: `batches` (group commit, idempotency, overload, rejections, failed commits),
//! `lifecycle` (activation, fencing, leases, idle, shutdown), `snapshots`, `reads` (queries
//! and peeks around a commit in flight) and `joins` (passwords and moving between rooms).

mod batches;
mod fixtures;
mod joins;
mod lifecycle;
mod reads;
mod snapshots;

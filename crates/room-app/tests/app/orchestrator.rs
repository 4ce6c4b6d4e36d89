//! Robot rooms at run time: the script a robot room plays ([`plan_step`]) and what it reads
//! of the room ([`RobotView::of`]); which node a room prefers ([`preferred_node`]); and the
//! [`Orchestrator`] on one node (runtimes started, changed, stopped, their robots gone; a
//! closed room let go for good; a lost lease stopping the runtime; a stopped orchestrator
//! out of the group) and on two (every room run on exactly one node, spread over both, a
//! room whose lease moved stopped on the node that lost it and nothing more of that node
//! committed).
//!
//! Time is tokio's, paused: it moves only when every task waits for a timer, so that robot
//! steps (every 2 s) and lease expiries happen in the same order on every run.

mod fixtures;
mod one_node;
mod placement;
mod script;
mod two_nodes;

//! Integration tests of room-app: the gift saga's interactions with its ports (mockall), its
//! effects on balances and orders (in-memory store), and the Room Cell runtime: group commit,
//! idempotency, overload, fencing, snapshots, timers and payouts, and the log pruned behind
//! snapshots; and robots, whose gifts, joins and leaves are shown but never durable.

mod batch_faults;
mod batch_gifts;
mod boards;
mod claims;
mod consumers;
mod covers;
mod creation;
mod current_room;
mod eviction;
mod forwarding;
mod gift_value;
mod income;
mod invites;
mod keyed;
mod lease;
mod lists;
mod log_pruning;
mod orchestrator;
mod order_identity;
mod outbox_lag;
mod outbox_publisher;
mod password_attempts;
mod recent_replies;
mod robot_admin;
mod robots;
mod rocket_levels;
mod room_feed;
mod rtc_events;
mod runtime;
mod saga_interactions;
mod saga_state;
mod support;
mod system_messages;
mod vip;
mod visitors;
mod workers;

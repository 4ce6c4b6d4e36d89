//! What the conformance suites cannot see of [`MySqlStore`](adapters_mysql::MySqlStore): the
//! rows a fenced commit leaves in the tables, transactions retried after a lock wait timeout,
//! the schema's id rules, migrations as a step of their own (and stores that refuse a schema
//! behind or ahead of them), the wallet's operations racing on two nodes of one database, the
//! schema's own guard against a negative balance, the index the recovery worker's query reads,
//! the leaderboards' counts (overlapping counts racing on two nodes) and their payouts (the
//! index the payouts owed are read along, a period's records racing on two nodes). Each test
//! runs on a database of its own on the server in `ROOM_TEST_MYSQL_URL` (skipped or failed as
//! `room_app::testkit::service_url` says).
//!
//! By family: [`commits`], [`compact`], [`schema`], [`wallet`], [`gift_orders`],
//! [`robot_pools`], [`keyed`], [`vip`], [`summaries`], [`boards`], [`board_rewards`];
//! [`fixtures`] holds what they share.

mod board_rewards;
mod boards;
mod commits;
mod compact;
mod fixtures;
mod gift_orders;
mod income;
mod keyed;
mod robot_pools;
mod schema;
mod summaries;
mod vip;
mod wallet;

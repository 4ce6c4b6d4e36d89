//! The conformance suites: one per storage port, and one each for the state nodes share
//! (lease, presence, password attempts, the room lists' cache). Each takes a factory of fresh,
//! empty instances, runs every check of its port against its own instance, and panics with a
//! message naming the check that failed.
//!
//! A port whose rows are written only by [`CellStore::commit`](crate::ports::CellStore::commit)
//! (outbox, timers, payouts, directory summaries) is tested through commits, so its suite also
//! needs [`CellStore`](crate::ports::CellStore).

mod billing;
mod board_rewards;
mod boards;
mod cell_store;
mod consumer_positions;
mod fixtures;
mod gift_catalog;
mod gift_orders;
mod gift_tallies;
mod keyed_requests;
mod lease;
mod list_cache;
mod outbox;
mod password_attempts;
mod payouts;
mod presence;
mod rate_budgets;
mod robot_rooms;
mod rocket;
mod room_directory;
mod room_follows;
mod room_pins;
mod snapshot_store;
mod timers;
mod user_directory;
mod versions;
mod vip_grants;
mod wallet;
mod work_claims;

pub use billing::{billing_policies_suite, income_ledger_suite};
pub use board_rewards::board_rewards_suite;
pub use boards::boards_suite;
pub use cell_store::cell_store_suite;
pub use consumer_positions::consumer_positions_suite;
pub use gift_catalog::gift_catalog_suite;
pub use gift_orders::gift_orders_suite;
pub use gift_tallies::gift_tallies_suite;
pub use keyed_requests::keyed_requests_suite;
pub use lease::{LeaseBackend, lease_suite};
pub use list_cache::list_cache_suite;
pub use outbox::outbox_suite;
pub use password_attempts::password_attempts_suite;
pub use payouts::payouts_suite;
pub use presence::presence_suite;
pub use rate_budgets::{open_streams_suite, rate_budgets_suite};
pub use robot_rooms::robot_rooms_suite;
pub use rocket::rocket_settings_suite;
pub use room_directory::{covers_claimed_by_the_upgrade, room_directory_suite};
pub use room_follows::room_follows_suite;
pub use room_pins::room_pins_suite;
pub use snapshot_store::snapshot_store_suite;
pub use timers::timers_suite;
pub use user_directory::user_directory_suite;
pub use vip_grants::vip_grants_suite;
pub use wallet::wallet_suite;
pub use work_claims::work_claims_suite;

//! Integration tests of room-api: through the router (`tower::ServiceExt::oneshot`) and
//! through a real socket (`reqwest` against a server on 127.0.0.1:0), each service on its own
//! SQLite file.

mod alert_rules;
mod bad_input;
mod billing;
mod boards;
mod cluster;
mod dead_letters;
mod flow;
mod follows;
mod gifts;
mod idempotency;
mod identity;
mod im;
mod im_effects;
mod limits;
mod lists;
mod mysql;
mod openapi;
mod outbox_retention;
mod profiles;
mod robot_rooms;
mod rocket;
mod rooms;
mod rtc;
mod socket;
mod support;
mod tallies;
mod vip;
mod workers;

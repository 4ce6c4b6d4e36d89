//! The rules of a room: every rejection `decide` gives and every authorization rule, driven
//! through `decide` + `evolve` with the room's invariants checked after each accepted command.
//!
//! One module per rule family; `fixture` drives a room through `decide` and `evolve` and
//! builds the commands the families share.

mod display;
mod fixture;
mod gifts;
mod invites;
mod membership;
mod moderation;
mod rejections;
mod robots;
mod rocket;
mod roles;
mod room;
mod seats;

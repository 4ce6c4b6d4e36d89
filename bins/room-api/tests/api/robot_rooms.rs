//! The robot room admin routes: the round trip, who may call them, every rule of a
//! configuration refused with its code and nothing stored, a retry landing on the same room
//! (and only on a room this admin's request asks for), a change stored before the room shows
//! it, what the OpenAPI document says of them, and `running_on`.
//!
//! By family: [`round_trip`] (the routes, who reaches them, their document), [`rules`] (what a
//! configuration may hold), [`retries`] (a repeated creation), [`changes`] (a change and what
//! the room shows of it), [`running`] (the robot rooms at run time); [`fixtures`] holds what
//! they share.

mod changes;
pub(crate) mod fixtures;
mod retries;
mod round_trip;
mod rules;
mod running;

//! The gift saga's conversations with its ports, checked with mockall: which wallet calls it
//! makes, how often, and which it never makes. The room is a real cell over the in-memory
//! store unless a test swaps the cell store.
//!
//! By family: [`refusals`] (refused before any coin moves), [`debits`] (a debit refused or of
//! unknown outcome), [`commits`] (the room's commit failing), [`credits`] (refunds and lucky
//! rewards), [`recovery`] (what a recovery pass settles), [`turns`] (drives of one order taking
//! turns); [`fixtures`] holds what they share.

mod commits;
mod credits;
mod debits;
mod fixtures;
mod recovery;
mod refusals;
mod turns;

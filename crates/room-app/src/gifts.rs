//! The gift saga orchestrator (DESIGN §5): debit the wallet, apply the gift in the room, refund
//! on a definite rejection, credit a lucky reward; and the recovery that settles orders a crash
//! left unfinished.
//!
//! `saga` takes a request ([`request`](SendGift)) to an order and answers it; `steps` drives
//! an order step by step, `lucky` makes one sender's lucky gifts take turns, `recovery`
//! settles what a crash left unfinished, and `command` names the room command an order
//! applies under. `locks` and `finished` are the saga's memory on this node.

mod command;
mod finished;
mod locks;
mod lucky;
mod recovery;
mod request;
mod saga;
mod steps;

pub use command::{gift_apply_command, gift_command_id};
pub use locks::ORDER_LOCK_QUEUE;
pub use recovery::RecoveryReport;
pub use request::{GiftReceipt, SendGift};
pub use saga::GiftSaga;

//! Sending: where the dispatcher's messages go ([`GroupSender`], the [`ImClient`] in
//! production, a sender without HTTP in tests) and what a send reports back to it.

use async_trait::async_trait;
use room_domain::RoomId;

use super::item::Pack;
use super::room::NoGroupRetry;
use crate::{GroupMessage, ImClient, SendOutcome};

/// Where the dispatcher's messages go: the [`ImClient`] in production.
#[async_trait]
pub(super) trait GroupSender: Send + Sync + 'static {
    async fn send(&self, group_id: &str, message: &GroupMessage) -> crate::Result<SendOutcome>;
}

#[async_trait]
impl GroupSender for ImClient {
    async fn send(&self, group_id: &str, message: &GroupMessage) -> crate::Result<SendOutcome> {
        self.send_group_msg(group_id, message).await
    }
}

/// What a finished send reports back.
pub(super) struct SendDone {
    pub(super) outcome: crate::Result<SendOutcome>,
    pub(super) pack: Pack,
    /// Its retries so far after refusals for a missing group.
    pub(super) retry: Option<NoGroupRetry>,
}

/// A send in flight: its room and how many events it carries (to count them if its task
/// fails).
pub(super) struct InFlight {
    pub(super) room_id: RoomId,
    pub(super) events: usize,
}

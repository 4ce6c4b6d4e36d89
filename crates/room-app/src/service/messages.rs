//! System messages: the platform speaks to one room, to every open room of a region, or to
//! every open room. Each room shows it as a `RoomSystemMessage` display event (SSE and IM)
//! and keeps it in its log and outbox with who sent it.

use room_domain::{Actor, Command, CommandId, CommandKind, Rejection, RoomId, UserActor};
use tokio::task::JoinSet;

use super::idempotency::IdempotencyKey;
use super::room_service::RoomService;
use crate::error::{Error, Result};

/// Whom a system message is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageTarget {
    /// One room.
    Room(RoomId),
    /// Every open room of a region.
    Region(String),
    /// Every open room.
    All,
}

/// What came of a system message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MessageReport {
    /// Rooms that show it.
    pub sent: u32,
    /// Rooms that closed before it reached them.
    pub closed: u32,
    /// Rooms it could not reach now (a room overloaded or moving; logged and counted in
    /// `room_system_messages_total{outcome="failed"}`). Sending the same request again with
    /// the same `Idempotency-Key` reaches them without showing it twice elsewhere.
    pub failed: u32,
}

/// How many rooms a system message is sent to at once.
const FAN_OUT: usize = 16;

/// Rooms read from the directory at a time when a message goes to many.
const SCAN_PAGE: u32 = 1_000;

impl RoomService {
    /// Sends a system message from a platform admin to `target`. One room answers as any
    /// command does (its refusal is the error); a region or every room is sent to open room
    /// by open room, [`FAN_OUT`] at a time, and answered with what came of it. The text is
    /// checked once, before any room.
    pub async fn send_system_message(
        &self,
        actor: &UserActor,
        target: MessageTarget,
        text: String,
        key: Option<&IdempotencyKey>,
    ) -> Result<MessageReport> {
        if !actor.platform_admin {
            return Err(Error::Rejected(Rejection::Forbidden));
        }
        room_domain::check_system_message(&text).map_err(Error::Rejected)?;
        let kind = CommandKind::SystemMessage { text };
        let actor = Actor::User(actor.clone());
        let region = match target {
            MessageTarget::Room(room_id) => {
                self.run_keyed(&room_id, actor, key, "system-message", kind)
                    .await?;
                count("sent", 1);
                return Ok(MessageReport {
                    sent: 1,
                    ..MessageReport::default()
                });
            }
            MessageTarget::Region(region) => Some(region),
            MessageTarget::All => None,
        };
        // Command ids are a room's own: one id serves every room, and a repeat of the request
        // (with its key) is shown once in each.
        let command_id = match (key, actor.user_id()) {
            (Some(key), Some(user)) => key.command_id(user, "system-message")?,
            _ => CommandId::new(self.ports.ids.next_id()).map_err(Error::corrupt)?,
        };
        let mut report = MessageReport::default();
        let mut sending = JoinSet::new();
        let mut after = None;
        loop {
            let page = self
                .ports
                .directory
                .scan_open(after.take(), SCAN_PAGE)
                .await?;
            let full = page.len() == SCAN_PAGE as usize;
            after = page.last().map(|room| room.summary.room_id.clone());
            for room in page {
                if region
                    .as_ref()
                    .is_some_and(|region| *region != room.summary.region)
                {
                    continue;
                }
                while sending.len() >= FAN_OUT {
                    tally(&mut report, sending.join_next().await);
                }
                let (runtime, actor) = (self.runtime.clone(), actor.clone());
                let command = Command::new(command_id.clone(), kind.clone());
                let room_id = room.summary.room_id;
                sending.spawn(async move {
                    let sent = runtime.execute(&room_id, command, actor, None).await;
                    (room_id, sent.map(|_| ()))
                });
            }
            if !full {
                break;
            }
        }
        while let Some(done) = sending.join_next().await {
            tally(&mut report, Some(done));
        }
        Ok(report)
    }
}

/// Counts what came of sending to one room.
fn tally(
    report: &mut MessageReport,
    done: Option<std::result::Result<(RoomId, Result<()>), tokio::task::JoinError>>,
) {
    match done {
        None => {}
        Some(Ok((_, Ok(())))) => {
            report.sent += 1;
            count("sent", 1);
        }
        Some(Ok((_, Err(Error::Rejected(Rejection::RoomClosed | Rejection::RoomNotFound))))) => {
            report.closed += 1;
            count("closed", 1);
        }
        Some(Ok((room_id, Err(error)))) => {
            tracing::warn!(room_id = %room_id, error = %error, "a system message did not reach a room");
            report.failed += 1;
            count("failed", 1);
        }
        Some(Err(error)) => {
            tracing::error!(error = %error, "a system message task failed");
            report.failed += 1;
            count("failed", 1);
        }
    }
}

fn count(outcome: &'static str, n: u64) {
    metrics::counter!("room_system_messages_total", "outcome" => outcome).increment(n);
}

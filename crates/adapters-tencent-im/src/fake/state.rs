//! What a [`FakeIm`](crate::FakeIm) accepts, keeps and records: its configuration, the
//! failures a test scripts, the requests and the messages as tests read them, and the groups
//! and recent messages behind them.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use serde_json::{Map, Value};

use crate::UserSigner;

/// Tencent's limit of messages per group and second.
pub const GROUP_MSGS_PER_SEC: usize = 40;

/// What a [`FakeIm`](crate::FakeIm) accepts.
#[derive(Debug, Clone)]
pub struct FakeImConfig {
    /// The app's SDKAppID.
    pub sdk_app_id: u64,
    /// The app's secret key.
    pub secret_key: String,
    /// The app's admin accounts.
    pub admins: Vec<String>,
    /// Whether the app's plan has ban / unban (else they answer 10007).
    pub ban_permitted: bool,
    /// The window of the per-group cap: a group takes [`GROUP_MSGS_PER_SEC`] messages in any
    /// window this long (Tencent's is 1 s). Tests of the cap itself make it long (60 s, say),
    /// so that every message they send lands in one window and the drops are exact.
    pub cap_window: Duration,
}

/// A scripted failure of one call ([`FakeIm::fail_next`](crate::FakeIm::fail_next)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Answer HTTP 200 with this `ErrorCode`, without doing anything.
    Code(i64),
    /// Answer with this HTTP status (502, say) and a non-JSON body, without doing anything.
    Http(u16),
    /// Do the call, then wait this long before answering (past the client's timeout, say).
    Delay(Duration),
    /// Answer HTTP 200 with a body that is not JSON, without doing anything.
    Malformed,
}

/// A request as the fake received it.
#[derive(Debug, Clone)]
pub struct FakeRequest {
    /// `{service}/{command}`, such as `group_open_http_svc/send_group_msg`.
    pub path: String,
    /// The command alone, such as `send_group_msg`.
    pub command: String,
    /// The `identifier` query parameter.
    pub identifier: Option<String>,
    /// The `usersig` query parameter.
    pub usersig: Option<String>,
    /// The `random` query parameter.
    pub random: Option<String>,
    /// The body as sent.
    pub body: Bytes,
    /// The HTTP status answered.
    pub status: u16,
    /// The `ErrorCode` answered (0: success; none for a non-JSON answer).
    pub error_code: Option<i64>,
    /// When it arrived.
    pub at: Instant,
}

/// A message a group received (or dropped).
#[derive(Debug, Clone)]
pub struct FakeMessage {
    /// The group.
    pub group_id: String,
    /// Its `MsgSeq` (0 for a dropped message).
    pub msg_seq: u64,
    /// Its `Random`.
    pub random: u32,
    /// Its `MsgPriority`, if it had one.
    pub priority: Option<String>,
    /// The `Data` of its first `TIMCustomElem`, decoded as JSON (a JSON string when it is not
    /// JSON; null without a custom element).
    pub data: Value,
    /// The size of its `MsgBody` as JSON.
    pub body_bytes: usize,
    /// When it arrived.
    pub received_at: Instant,
}

impl FakeMessage {
    /// The `events` array of the `Data` document the display messenger sends.
    pub fn events(&self) -> Vec<Value> {
        self.data
            .get("events")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }
}

/// What the fake knows of a group.
#[derive(Debug, Default)]
pub(super) struct Group {
    pub(super) kind: String,
    pub(super) seq: u64,
    pub(super) messages: Vec<Stored>,
    /// Messages dropped for frequency.
    pub(super) dropped: usize,
    /// Arrival times of the messages accepted in the last cap window.
    pub(super) window: VecDeque<Instant>,
    pub(super) muted: HashMap<String, u64>,
    pub(super) banned: HashMap<String, (u64, String)>,
}

/// A message as stored: `Data` is decoded when a test asks.
#[derive(Debug, Clone)]
pub(super) struct Stored {
    pub(super) msg_seq: u64,
    pub(super) random: u32,
    pub(super) priority: Option<String>,
    pub(super) data: Option<String>,
    pub(super) body_bytes: usize,
    pub(super) received_at: Instant,
}

impl Stored {
    pub(super) fn to_message(&self, group_id: &str) -> FakeMessage {
        let data = match &self.data {
            Some(raw) => serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.clone())),
            None => Value::Null,
        };
        FakeMessage {
            group_id: group_id.to_owned(),
            msg_seq: self.msg_seq,
            random: self.random,
            priority: self.priority.clone(),
            data,
            body_bytes: self.body_bytes,
            received_at: self.received_at,
        }
    }
}

/// The answer to a repeated message: the first one's.
#[derive(Debug, Clone)]
pub(super) struct FirstAnswer {
    pub(super) reply: Map<String, Value>,
}

#[derive(Debug, Default)]
pub(super) struct FakeState {
    pub(super) groups: HashMap<String, Group>,
    /// (sender, `MsgBody` JSON, `Random`) of recent messages.
    pub(super) recent: HashMap<(String, String, u32), FirstAnswer>,
    pub(super) recent_order: VecDeque<(Instant, (String, String, u32))>,
    pub(super) duplicates: usize,
    pub(super) requests: Vec<FakeRequest>,
    pub(super) faults: VecDeque<Fault>,
    pub(super) next_group: u64,
}

pub(super) struct Shared {
    pub(super) config: FakeImConfig,
    pub(super) signer: UserSigner,
    pub(super) state: Mutex<FakeState>,
}

impl Shared {
    pub(super) fn state(&self) -> MutexGuard<'_, FakeState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

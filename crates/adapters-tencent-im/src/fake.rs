//! [`FakeIm`] (feature `fake`): a fake Tencent IM on a loopback port, for tests.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use secrecy::SecretString;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::client::{MAX_BAN_MEMBERS, MAX_GROUP_NAME_BYTES, MAX_MSG_BODY_BYTES, MAX_MUTE_MEMBERS};
use crate::{ImSettings, SigError, UserSigner};

/// Tencent's limit of messages per group and second.
pub const GROUP_MSGS_PER_SEC: usize = 40;
/// How long a message's `Random` keeps a repeat out.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(300);
/// The service every group command is under.
const GROUP_SERVICE: &str = "group_open_http_svc";

/// What a [`FakeIm`] accepts.
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

impl Default for FakeImConfig {
    fn default() -> Self {
        FakeImConfig {
            sdk_app_id: FakeIm::SDK_APP_ID,
            secret_key: FakeIm::SECRET_KEY.to_owned(),
            admins: vec![FakeIm::ADMIN.to_owned()],
            ban_permitted: true,
            cap_window: Duration::from_secs(1),
        }
    }
}

/// A scripted failure of one call ([`FakeIm::fail_next`]).
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
struct Group {
    kind: String,
    seq: u64,
    messages: Vec<Stored>,
    /// Messages dropped for frequency.
    dropped: usize,
    /// Arrival times of the messages accepted in the last cap window.
    window: VecDeque<Instant>,
    muted: HashMap<String, u64>,
    banned: HashMap<String, (u64, String)>,
}

/// A message as stored: `Data` is decoded when a test asks.
#[derive(Debug, Clone)]
struct Stored {
    msg_seq: u64,
    random: u32,
    priority: Option<String>,
    data: Option<String>,
    body_bytes: usize,
    received_at: Instant,
}

impl Stored {
    fn to_message(&self, group_id: &str) -> FakeMessage {
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
struct FirstAnswer {
    reply: Map<String, Value>,
}

#[derive(Debug, Default)]
struct FakeState {
    groups: HashMap<String, Group>,
    /// (sender, `MsgBody` JSON, `Random`) of recent messages.
    recent: HashMap<(String, String, u32), FirstAnswer>,
    recent_order: VecDeque<(Instant, (String, String, u32))>,
    duplicates: usize,
    requests: Vec<FakeRequest>,
    faults: VecDeque<Fault>,
    next_group: u64,
}

struct Shared {
    config: FakeImConfig,
    signer: UserSigner,
    state: Mutex<FakeState>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, FakeState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A local server on `127.0.0.1:0` that speaks the part of Tencent IM's REST contract the room
/// service uses, for tests of this crate and of others.
///
/// It checks what Tencent checks: the query parameters (`sdkappid`, `identifier`, `usersig`,
/// `random`, `contenttype=json`), the UserSig exactly (70003 undecodable, 70014 another app,
/// 70009 bad HMAC, 70001 expired, 70013 another account than `identifier`, 60010 not an
/// admin) and the bodies (10004 bad shape, 10010 unknown group, 80002 a `MsgBody` over 12 KB).
/// It answers HTTP 200 with the `ActionStatus` / `ErrorCode` / `ErrorInfo` envelope, numbers
/// each group's messages (`MsgSeq`), drops a repeat of the same sender, `MsgBody` and `Random`
/// within 5 minutes (answering as for the first), and keeps each group to 40 messages in any
/// second ([`FakeImConfig::cap_window`]), answering success with
/// `MsgDropReason: "MsgFreqCtrl"` beyond that. It records every
/// request and every message, and a test can script the next calls to fail
/// ([`FakeIm::fail_next`]).
///
/// It stops when dropped.
pub struct FakeIm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: CancellationToken,
}

impl std::fmt::Debug for FakeIm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeIm")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Drop for FakeIm {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl FakeIm {
    /// The SDKAppID of [`FakeIm::start`].
    pub const SDK_APP_ID: u64 = 1_400_000_000;
    /// The secret key of [`FakeIm::start`].
    pub const SECRET_KEY: &'static str =
        "5bd2850fff3ecb11d7c805251c51ee463a25727bddc2385f3fa8bfee1bb93b5e";
    /// The admin account of [`FakeIm::start`].
    pub const ADMIN: &'static str = "administrator";

    /// Starts a fake of the app [`FakeIm::SDK_APP_ID`] with key [`FakeIm::SECRET_KEY`] and
    /// admin [`FakeIm::ADMIN`].
    pub async fn start() -> FakeIm {
        FakeIm::start_with(FakeImConfig::default()).await
    }

    /// Starts a fake of the app `config` describes.
    pub async fn start_with(config: FakeImConfig) -> FakeIm {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("the fake binds a loopback port");
        let addr = listener
            .local_addr()
            .expect("a bound socket has an address");
        let signer = UserSigner::new(
            config.sdk_app_id,
            SecretString::from(config.secret_key.clone()),
        );
        let shared = Arc::new(Shared {
            config,
            signer,
            state: Mutex::new(FakeState::default()),
        });
        let app = Router::new()
            .route("/v4/{service}/{command}", post(handle))
            .with_state(shared.clone());
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(stopped.cancelled_owned())
                .await;
            if let Err(error) = served {
                tracing::warn!(error = %error, "the fake Tencent IM stopped");
            }
        });
        FakeIm { addr, shared, stop }
    }

    /// `http://127.0.0.1:{port}`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Client settings for this fake, tuned for tests: a 3.5 s request timeout (the least a
    /// node accepts is above Tencent's own 3 s), retries after
    /// 10 ms (at most 50 ms), 10 ms after 70050.
    pub fn settings(&self) -> ImSettings {
        let mut settings = ImSettings::new(
            self.shared.config.sdk_app_id,
            self.shared.config.secret_key.clone(),
        );
        settings.admin_id = self
            .shared
            .config
            .admins
            .first()
            .cloned()
            .unwrap_or_else(|| FakeIm::ADMIN.to_owned());
        settings.base_url = self.base_url();
        settings.request_timeout_ms = 3_500;
        settings.retry_backoff_ms = 10;
        settings.max_backoff_ms = 50;
        settings.bad_sig_wait_ms = 10;
        settings
    }

    /// A signer for the fake's app (to make sigs of one's own).
    pub fn signer(&self) -> UserSigner {
        self.shared.signer.clone()
    }

    /// Has the next `n` calls fail with `fault` (after those scripted before).
    pub fn fail_next(&self, n: usize, fault: Fault) {
        let mut state = self.shared.state();
        state.faults.extend(std::iter::repeat_n(fault, n));
    }

    /// Creates an `AVChatRoom` group as if the admin had (no request is recorded).
    pub fn add_group(&self, group_id: &str) {
        self.shared
            .state()
            .groups
            .entry(group_id.to_owned())
            .or_insert_with(|| Group {
                kind: "AVChatRoom".to_owned(),
                ..Group::default()
            });
    }

    /// Whether the group exists.
    pub fn group_exists(&self, group_id: &str) -> bool {
        self.shared.state().groups.contains_key(group_id)
    }

    /// The messages the group received, in `MsgSeq` order.
    pub fn messages(&self, group_id: &str) -> Vec<FakeMessage> {
        let state = self.shared.state();
        state
            .groups
            .get(group_id)
            .map(|g| g.messages.iter().map(|m| m.to_message(group_id)).collect())
            .unwrap_or_default()
    }

    /// How many messages the group received.
    pub fn message_count(&self, group_id: &str) -> usize {
        self.shared
            .state()
            .groups
            .get(group_id)
            .map_or(0, |g| g.messages.len())
    }

    /// How many messages the group dropped for frequency.
    pub fn dropped_count(&self, group_id: &str) -> usize {
        self.shared
            .state()
            .groups
            .get(group_id)
            .map_or(0, |g| g.dropped)
    }

    /// How many messages every group together received.
    pub fn total_messages(&self) -> usize {
        self.shared
            .state()
            .groups
            .values()
            .map(|g| g.messages.len())
            .sum()
    }

    /// Removes and returns every group's received messages so far (a long run's memory stays
    /// flat; `MsgSeq` numbering goes on).
    pub fn take_messages(&self) -> Vec<FakeMessage> {
        let mut state = self.shared.state();
        let mut taken = Vec::new();
        for (group_id, group) in &mut state.groups {
            taken.extend(group.messages.drain(..).map(|m| m.to_message(group_id)));
        }
        taken
    }

    /// How many repeated messages (same sender, `MsgBody` and `Random`) were answered without
    /// being stored again.
    pub fn duplicates(&self) -> usize {
        self.shared.state().duplicates
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<FakeRequest> {
        self.shared.state().requests.clone()
    }

    /// How many requests named `command` (such as `send_group_msg`) arrived.
    pub fn request_count(&self, command: &str) -> usize {
        self.shared
            .state()
            .requests
            .iter()
            .filter(|r| r.command == command)
            .count()
    }

    /// The member's mute in the group, in seconds, if muted.
    pub fn muted(&self, group_id: &str, member: &str) -> Option<u64> {
        self.shared
            .state()
            .groups
            .get(group_id)
            .and_then(|g| g.muted.get(member).copied())
    }

    /// The member's ban in the group (seconds and description), if banned.
    pub fn banned(&self, group_id: &str, member: &str) -> Option<(u64, String)> {
        self.shared
            .state()
            .groups
            .get(group_id)
            .and_then(|g| g.banned.get(member).cloned())
    }
}

/// The answer to one call: the envelope's code and info, and the fields of a success.
struct Answer {
    code: i64,
    info: String,
    fields: Map<String, Value>,
}

impl Answer {
    fn ok(fields: Map<String, Value>) -> Answer {
        Answer {
            code: 0,
            info: String::new(),
            fields,
        }
    }

    fn fail(code: i64, info: impl Into<String>) -> Answer {
        Answer {
            code,
            info: info.into(),
            fields: Map::new(),
        }
    }

    fn into_json(self) -> Value {
        let mut envelope = self.fields;
        envelope.insert(
            "ActionStatus".to_owned(),
            Value::from(if self.code == 0 { "OK" } else { "FAIL" }),
        );
        envelope.insert("ErrorCode".to_owned(), Value::from(self.code));
        envelope.insert("ErrorInfo".to_owned(), Value::from(self.info));
        Value::Object(envelope)
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    Path((service, command)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
    body: Bytes,
) -> Response {
    let at = Instant::now();
    let fault = shared.state().faults.pop_front();
    let mut request = FakeRequest {
        path: format!("{service}/{command}"),
        command: command.clone(),
        identifier: query.get("identifier").cloned(),
        usersig: query.get("usersig").cloned(),
        random: query.get("random").cloned(),
        body: body.clone(),
        status: 200,
        error_code: None,
        at,
    };
    let (answer, delay) = match fault {
        Some(Fault::Http(status)) => {
            request.status = status;
            shared.state().requests.push(request);
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
            return (status, "<html>bad gateway</html>").into_response();
        }
        Some(Fault::Malformed) => {
            shared.state().requests.push(request);
            return (
                [(header::CONTENT_TYPE, "application/json")],
                "{\"ActionStatus\": \"OK\", \"ErrorCo",
            )
                .into_response();
        }
        Some(Fault::Code(code)) => (Answer::fail(code, "scripted failure"), None),
        Some(Fault::Delay(delay)) => (
            answer(&shared, &service, &command, &query, &body),
            Some(delay),
        ),
        None => (answer(&shared, &service, &command, &query, &body), None),
    };
    request.error_code = Some(answer.code);
    shared.state().requests.push(request);
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    axum::Json(answer.into_json()).into_response()
}

fn answer(
    shared: &Shared,
    service: &str,
    command: &str,
    query: &HashMap<String, String>,
    body: &[u8],
) -> Answer {
    if let Err(refusal) = check_caller(shared, query) {
        return refusal;
    }
    let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(body) else {
        return Answer::fail(60003, "the body is not a JSON object");
    };
    if service != GROUP_SERVICE {
        return Answer::fail(60002, format!("unknown service {service}"));
    }
    let identifier = query.get("identifier").map_or("", String::as_str);
    let mut state = shared.state();
    let result = match command {
        "create_group" => create_group(&mut state, &body),
        "destroy_group" => destroy_group(&mut state, &body),
        "send_group_msg" => send_group_msg(&mut state, identifier, &body, shared.config.cap_window),
        "forbid_send_msg" => forbid_send_msg(&mut state, &body),
        "ban_group_member" if !shared.config.ban_permitted => {
            Err(Answer::fail(10007, "the plan does not include banning"))
        }
        "ban_group_member" => ban_group_member(&mut state, &body, true),
        "unban_group_member" if !shared.config.ban_permitted => {
            Err(Answer::fail(10007, "the plan does not include banning"))
        }
        "unban_group_member" => ban_group_member(&mut state, &body, false),
        other => Err(Answer::fail(60002, format!("unknown command {other}"))),
    };
    result.unwrap_or_else(|refusal| refusal)
}

/// The query parameters and the UserSig, checked as Tencent does.
fn check_caller(shared: &Shared, query: &HashMap<String, String>) -> Result<(), Answer> {
    let param = |name: &str| {
        query
            .get(name)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| Answer::fail(60002, format!("the query parameter {name} is missing")))
    };
    let sdk_app_id = param("sdkappid")?;
    let identifier = param("identifier")?;
    let usersig = param("usersig")?;
    let random = param("random")?;
    if param("contenttype")? != "json" {
        return Err(Answer::fail(60002, "contenttype must be json"));
    }
    if random.parse::<u32>().is_err() {
        return Err(Answer::fail(
            60002,
            "random must be a 32-bit unsigned number",
        ));
    }
    if sdk_app_id.parse::<u64>().ok() != Some(shared.config.sdk_app_id) {
        return Err(Answer::fail(70014, "sdkappid does not match the app"));
    }
    let claims = shared
        .signer
        .verify(usersig, unix_now())
        .map_err(|error| match error {
            SigError::Undecodable => Answer::fail(70003, "the UserSig cannot be decoded"),
            SigError::AppMismatch { .. } => Answer::fail(70014, "the UserSig is for another app"),
            SigError::BadHmac => Answer::fail(70009, "the UserSig does not verify"),
            SigError::Expired { .. } => Answer::fail(70001, "the UserSig expired"),
        })?;
    if claims.identifier != *identifier {
        return Err(Answer::fail(70013, "the UserSig is for another account"));
    }
    if !shared.config.admins.iter().any(|a| a == identifier) {
        return Err(Answer::fail(60010, "the identifier is not an app admin"));
    }
    Ok(())
}

fn bad(info: impl Into<String>) -> Answer {
    Answer::fail(10004, info)
}

fn string_field<'a>(body: &'a Map<String, Value>, name: &str) -> Result<&'a str, Answer> {
    body.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| bad(format!("{name} must be a string")))
}

fn members(body: &Map<String, Value>, max: usize) -> Result<Vec<String>, Answer> {
    let list = body
        .get("Members_Account")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("Members_Account must be an array"))?;
    if list.is_empty() || list.len() > max {
        return Err(bad(format!("Members_Account takes 1 to {max} accounts")));
    }
    list.iter()
        .map(|m| {
            m.as_str()
                .map(str::to_owned)
                .ok_or_else(|| bad("accounts are strings"))
        })
        .collect()
}

fn known_group<'a>(
    state: &'a mut FakeState,
    body: &Map<String, Value>,
) -> Result<(String, &'a mut Group), Answer> {
    let group_id = string_field(body, "GroupId")?.to_owned();
    match state.groups.get_mut(&group_id) {
        Some(group) => Ok((group_id, group)),
        None => Err(Answer::fail(10010, "no such group")),
    }
}

fn create_group(state: &mut FakeState, body: &Map<String, Value>) -> Result<Answer, Answer> {
    let kind = string_field(body, "Type")?;
    if !matches!(
        kind,
        "Public" | "Private" | "ChatRoom" | "AVChatRoom" | "Community" | "Work" | "Meeting"
    ) {
        return Err(bad(format!("unknown group Type {kind}")));
    }
    let name = string_field(body, "Name")?;
    if name.is_empty() || name.len() > MAX_GROUP_NAME_BYTES {
        return Err(bad("Name takes 1 to 30 bytes"));
    }
    if kind == "AVChatRoom" && body.contains_key("MemberList") {
        return Err(Answer::fail(10007, "an AVChatRoom takes no MemberList"));
    }
    let group_id = match body.get("GroupId") {
        None => {
            state.next_group += 1;
            format!("@TGS#{}", state.next_group)
        }
        Some(Value::String(id)) => {
            let valid = !id.is_empty()
                && id.len() < 48
                && id.bytes().all(|b| b.is_ascii_graphic())
                && !id.starts_with("@TGS#");
            if !valid {
                return Err(bad("GroupId must be printable ASCII below 48 bytes"));
            }
            id.clone()
        }
        Some(_) => return Err(bad("GroupId must be a string")),
    };
    if state.groups.contains_key(&group_id) {
        // Every group here was created by the app's admins.
        return Err(Answer::fail(10025, "the group exists and is yours"));
    }
    state.groups.insert(
        group_id.clone(),
        Group {
            kind: kind.to_owned(),
            ..Group::default()
        },
    );
    Ok(Answer::ok(fields([("GroupId", Value::from(group_id))])))
}

fn destroy_group(state: &mut FakeState, body: &Map<String, Value>) -> Result<Answer, Answer> {
    let (group_id, _) = known_group(state, body)?;
    state.groups.remove(&group_id);
    Ok(Answer::ok(Map::new()))
}

fn send_group_msg(
    state: &mut FakeState,
    identifier: &str,
    body: &Map<String, Value>,
    cap_window: Duration,
) -> Result<Answer, Answer> {
    let group_id = string_field(body, "GroupId")?.to_owned();
    let random = body
        .get("Random")
        .and_then(Value::as_u64)
        .and_then(|r| u32::try_from(r).ok())
        .ok_or_else(|| bad("Random must be a 32-bit unsigned number"))?;
    let priority = match body.get("MsgPriority") {
        None => None,
        Some(Value::String(p)) if matches!(p.as_str(), "High" | "Normal" | "Low") => {
            Some(p.clone())
        }
        Some(_) => return Err(bad("MsgPriority is High, Normal or Low")),
    };
    let elements = body
        .get("MsgBody")
        .and_then(Value::as_array)
        .filter(|e| !e.is_empty())
        .ok_or_else(|| bad("MsgBody must be a non-empty array"))?;
    let mut data = None;
    for element in elements {
        let kind = element.get("MsgType").and_then(Value::as_str);
        let content = element
            .get("MsgContent")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("MsgContent must be an object"))?;
        match kind {
            Some("TIMCustomElem") => {
                let element_data = content
                    .get("Data")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("a TIMCustomElem needs Data"))?;
                for optional in ["Desc", "Ext", "Sound"] {
                    if content.get(optional).is_some_and(|v| !v.is_string()) {
                        return Err(bad(format!("{optional} must be a string")));
                    }
                }
                data.get_or_insert_with(|| element_data.to_owned());
            }
            Some("TIMTextElem") => {
                content
                    .get("Text")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("a TIMTextElem needs Text"))?;
            }
            _ => return Err(bad("unknown MsgType")),
        }
    }
    if !state.groups.contains_key(&group_id) {
        return Err(Answer::fail(10010, "no such group"));
    }
    let msg_body = serde_json::to_string(&body["MsgBody"]).unwrap_or_default();
    if msg_body.len() > MAX_MSG_BODY_BYTES {
        return Err(Answer::fail(80002, "the message is too long"));
    }
    let now = Instant::now();
    let sender = body
        .get("From_Account")
        .and_then(Value::as_str)
        .unwrap_or(identifier)
        .to_owned();
    while let Some((at, _)) = state.recent_order.front() {
        if now.duration_since(*at) < DUPLICATE_WINDOW {
            break;
        }
        if let Some((_, key)) = state.recent_order.pop_front() {
            state.recent.remove(&key);
        }
    }
    let key = (sender, msg_body, random);
    if let Some(first) = state.recent.get(&key) {
        let reply = first.reply.clone();
        state.duplicates += 1;
        return Ok(Answer::ok(reply));
    }
    let group = state
        .groups
        .get_mut(&group_id)
        .expect("the group was just found");
    while group
        .window
        .front()
        .is_some_and(|at| now.duration_since(*at) >= cap_window)
    {
        group.window.pop_front();
    }
    let msg_time = unix_now();
    let stored = |msg_seq| Stored {
        msg_seq,
        random,
        priority: priority.clone(),
        data: data.clone(),
        body_bytes: key.1.len(),
        received_at: now,
    };
    let reply = if group.window.len() >= GROUP_MSGS_PER_SEC {
        group.dropped += 1;
        fields([
            ("MsgTime", Value::from(msg_time)),
            ("MsgSeq", Value::from(0)),
            ("MsgDropReason", Value::from("MsgFreqCtrl")),
        ])
    } else {
        group.window.push_back(now);
        group.seq += 1;
        group.messages.push(stored(group.seq));
        fields([
            ("MsgTime", Value::from(msg_time)),
            ("MsgSeq", Value::from(group.seq)),
        ])
    };
    state.recent.insert(
        key.clone(),
        FirstAnswer {
            reply: reply.clone(),
        },
    );
    state.recent_order.push_back((now, key));
    Ok(Answer::ok(reply))
}

fn forbid_send_msg(state: &mut FakeState, body: &Map<String, Value>) -> Result<Answer, Answer> {
    let accounts = members(body, MAX_MUTE_MEMBERS)?;
    let mute_secs = body
        .get("MuteTime")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("MuteTime must be a number of seconds"))?;
    let (_, group) = known_group(state, body)?;
    for account in accounts {
        if mute_secs == 0 {
            group.muted.remove(&account);
        } else {
            group.muted.insert(account, mute_secs);
        }
    }
    Ok(Answer::ok(Map::new()))
}

fn ban_group_member(
    state: &mut FakeState,
    body: &Map<String, Value>,
    ban: bool,
) -> Result<Answer, Answer> {
    let accounts = members(body, MAX_BAN_MEMBERS)?;
    let duration = if ban {
        body.get("Duration")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad("Duration must be a number of seconds"))?
    } else {
        0
    };
    let description = body
        .get("Description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let (_, group) = known_group(state, body)?;
    if group.kind != "AVChatRoom" {
        return Err(bad("only an AVChatRoom bans members"));
    }
    for account in accounts {
        if ban {
            group
                .banned
                .insert(account, (duration, description.clone()));
        } else {
            group.banned.remove(&account);
        }
    }
    Ok(Answer::ok(Map::new()))
}

fn fields<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

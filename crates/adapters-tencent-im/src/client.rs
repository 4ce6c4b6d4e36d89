//! [`ImClient`]: Tencent IM's REST API over keep-alive HTTPS, with the request and answer
//! types of the commands the room service uses.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use room_app::ports::{ClockRef, IdGenRef};
use room_app::{RandomIds, SystemClock};
use room_domain::{ImPriority, Timestamp, UserId};
use secrecy::ExposeSecret;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{CODES_NO_SUCH_GROUP, ErrorClass};
use crate::group::truncate_utf8;
use crate::limits::{MAX_BAN_MEMBERS, MAX_GROUP_NAME_BYTES, MAX_MUTE_MEMBERS};
use crate::{ImError, ImSettings, Result, UserSigner};

/// Tencent's code for "the group exists and is yours already" on `create_group`.
const CODE_GROUP_ALREADY_YOURS: i64 = 10025;
/// Tencent's code for "too many bad sigs: wait a minute".
const CODE_TOO_MANY_BAD_SIGS: i64 = 70050;

/// The REST commands the client makes; their names are the metrics' `command` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Command {
    CreateGroup,
    DestroyGroup,
    SendGroupMsg,
    ForbidSendMsg,
    BanGroupMember,
    UnbanGroupMember,
}

impl Command {
    const ALL: [Command; 6] = [
        Command::CreateGroup,
        Command::DestroyGroup,
        Command::SendGroupMsg,
        Command::ForbidSendMsg,
        Command::BanGroupMember,
        Command::UnbanGroupMember,
    ];

    fn name(self) -> &'static str {
        match self {
            Command::CreateGroup => "create_group",
            Command::DestroyGroup => "destroy_group",
            Command::SendGroupMsg => "send_group_msg",
            Command::ForbidSendMsg => "forbid_send_msg",
            Command::BanGroupMember => "ban_group_member",
            Command::UnbanGroupMember => "unban_group_member",
        }
    }

    fn path(self) -> String {
        format!("v4/group_open_http_svc/{}", self.name())
    }
}

/// A custom message (`TIMCustomElem`) for a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMessage {
    /// `MsgContent.Data`: what clients parse (a JSON document as a string, here).
    pub data: String,
    /// `MsgPriority`: which messages Tencent keeps first when the group's 40/s are exceeded.
    pub priority: Option<ImPriority>,
    /// `Random`: the duplicate filter's key; `None` picks a fresh one for this send (kept
    /// across its retries).
    pub random: Option<u32>,
}

impl GroupMessage {
    /// A message carrying `data` (no `Desc` or `Ext`), a fresh `Random` and no priority.
    pub fn new(data: impl Into<String>) -> Self {
        GroupMessage {
            data: data.into(),
            priority: None,
            random: None,
        }
    }

    /// The same message with `MsgPriority` set.
    pub fn with_priority(mut self, priority: ImPriority) -> Self {
        self.priority = Some(priority);
        self
    }

    /// The size of its `MsgBody` as JSON, which Tencent limits to [`MAX_MSG_BODY_BYTES`](crate::MAX_MSG_BODY_BYTES).
    pub fn body_bytes(&self) -> usize {
        serde_json::to_vec(&self.msg_body())
            .map(|json| json.len())
            .unwrap_or(usize::MAX)
    }

    fn msg_body(&self) -> [Elem<'_>; 1] {
        [Elem {
            msg_type: "TIMCustomElem",
            msg_content: Content { data: &self.data },
        }]
    }
}

/// What became of a message Tencent answered with success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendOutcome {
    /// Stored in the group's history and delivered.
    Sent {
        /// The group's sequence number for it.
        msg_seq: u64,
        /// Tencent's time for it, in Unix seconds.
        msg_time: u64,
    },
    /// Taken but dropped (`MsgDropReason`, such as `MsgFreqCtrl` beyond 40 messages/s): a
    /// drop, not a delivery.
    Dropped {
        /// `MsgDropReason`.
        reason: String,
    },
}

impl SendOutcome {
    /// Whether the message was delivered.
    pub fn is_sent(&self) -> bool {
        matches!(self, SendOutcome::Sent { .. })
    }
}

#[derive(Serialize)]
struct Elem<'a> {
    #[serde(rename = "MsgType")]
    msg_type: &'static str,
    #[serde(rename = "MsgContent")]
    msg_content: Content<'a>,
}

#[derive(Serialize)]
struct Content<'a> {
    #[serde(rename = "Data")]
    data: &'a str,
}

#[derive(Serialize)]
struct SendBody<'a> {
    #[serde(rename = "GroupId")]
    group_id: &'a str,
    #[serde(rename = "Random")]
    random: u32,
    #[serde(rename = "MsgPriority", skip_serializing_if = "Option::is_none")]
    priority: Option<&'static str>,
    #[serde(rename = "MsgBody")]
    msg_body: [Elem<'a>; 1],
}

#[derive(Serialize)]
struct CreateBody<'a> {
    #[serde(rename = "Type")]
    kind: &'static str,
    #[serde(rename = "GroupId")]
    group_id: &'a str,
    #[serde(rename = "Name")]
    name: &'a str,
}

#[derive(Serialize)]
struct GroupBody<'a> {
    #[serde(rename = "GroupId")]
    group_id: &'a str,
}

#[derive(Serialize)]
struct MuteBody<'a> {
    #[serde(rename = "GroupId")]
    group_id: &'a str,
    #[serde(rename = "Members_Account")]
    members: Vec<&'a str>,
    #[serde(rename = "MuteTime")]
    mute_secs: u64,
}

#[derive(Serialize)]
struct BanBody<'a> {
    #[serde(rename = "GroupId")]
    group_id: &'a str,
    #[serde(rename = "Members_Account")]
    members: Vec<&'a str>,
    #[serde(rename = "Duration")]
    duration_secs: u64,
    #[serde(rename = "Description")]
    description: &'a str,
}

#[derive(Serialize)]
struct UnbanBody<'a> {
    #[serde(rename = "GroupId")]
    group_id: &'a str,
    #[serde(rename = "Members_Account")]
    members: Vec<&'a str>,
}

/// A client of Tencent IM's REST API over keep-alive HTTPS (reqwest with rustls).
///
/// Every call is `POST {base}/v4/{service}/{command}?sdkappid=..&identifier=..&usersig=..&
/// random=..&contenttype=json` with a JSON body, made as the app admin with one cached
/// UserSig per client, signed again when less than half its lifetime remains, and at once when
/// Tencent says it expired (70001; then the call is tried once more). Retryable failures
/// ([`ImError::is_retryable`]) are tried again with a doubling, jittered backoff, up to
/// [`ImSettings::max_attempts`]; permanent ones return at once. `random` is fresh for every
/// HTTP request; a message's `Random` is chosen once per [`ImClient::send_group_msg`] and kept
/// across its retries, so Tencent drops the copy of a send that did arrive before a timeout.
///
/// Metrics: `room_im_requests_total{command, outcome}` per HTTP request (`outcome`: `ok` or
/// the error's class: `http_error`, `timeout`, `io_error`, `malformed`, `busy`,
/// `sig_refused`, `not_permitted`, `no_such_group`, `rejected`),
/// `room_im_request_seconds{command}`, and `room_im_msg_dropped_total{reason}` for messages
/// Tencent took but dropped (`reason`: `freq_ctrl` or `other`).
///
/// Every UserSig time (the admin's, and the users' of [`ImClient::sign_user`]) comes from its
/// [`Clock`](room_app::ports::Clock) ([`ImClient::with_clock`]); random values from a
/// [`RandomIds`].
///
/// Cheap to clone: clones share the connection pool and the cached UserSig.
#[derive(Clone)]
pub struct ImClient {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    /// One URL per [`Command`], in [`Command::ALL`] order.
    urls: Vec<reqwest::Url>,
    signer: UserSigner,
    admin_id: String,
    admin_sig_ttl_secs: u64,
    user_sig_ttl_secs: u64,
    timeout: Duration,
    max_attempts: u32,
    backoff: Duration,
    max_backoff: Duration,
    bad_sig_wait: Duration,
    admin_sig: Mutex<Option<CachedSig>>,
    clock: ClockRef,
    ids: IdGenRef,
}

struct CachedSig {
    sig: Arc<str>,
    signed_at: u64,
}

impl std::fmt::Debug for ImClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImClient")
            .field("sdk_app_id", &self.inner.signer.sdk_app_id())
            .field("admin_id", &self.inner.admin_id)
            .field("base_url", &self.inner.urls.first().map(|u| u.origin()))
            .finish_non_exhaustive()
    }
}

impl ImClient {
    /// A client as `settings` say, on the system clock; [`ImError::Config`] without an app id
    /// and key, or with a base URL that is not `http(s)://host[:port]`.
    pub fn new(settings: &ImSettings) -> Result<ImClient> {
        ImClient::with_clock(settings, Arc::new(SystemClock))
    }

    /// [`ImClient::new`] with UserSig times from `clock`.
    pub fn with_clock(settings: &ImSettings, clock: ClockRef) -> Result<ImClient> {
        let (Some(sdk_app_id), Some(secret)) = (settings.sdk_app_id, settings.secret_key.as_ref())
        else {
            return Err(ImError::Config(
                "sdk_app_id and secret_key are required".to_owned(),
            ));
        };
        if secret.expose_secret().is_empty() {
            return Err(ImError::Config("secret_key is empty".to_owned()));
        }
        if settings.admin_id.is_empty() {
            return Err(ImError::Config("admin_id is empty".to_owned()));
        }
        let base = reqwest::Url::parse(&format!("{}/", settings.base_url.trim_end_matches('/')))
            .map_err(|error| ImError::Config(format!("bad base_url: {error}")))?;
        if !matches!(base.scheme(), "http" | "https") || base.host().is_none() {
            return Err(ImError::Config(format!(
                "base_url {} is not http(s)://host",
                settings.base_url
            )));
        }
        let urls = Command::ALL
            .iter()
            .map(|command| base.join(&command.path()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|error| ImError::Config(format!("bad base_url: {error}")))?;
        let timeout = settings.request_timeout();
        let http = reqwest::Client::builder()
            .use_rustls_tls()
            .timeout(timeout)
            .connect_timeout(timeout)
            .pool_idle_timeout(Duration::from_secs(60))
            .pool_max_idle_per_host(settings.pool_max_idle)
            .tcp_keepalive(Duration::from_secs(30))
            .tcp_nodelay(true)
            .build()
            // reqwest says only "builder error"; the reason (a TLS backend that failed to load,
            // say) is in its source chain, which `ImError` (Clone + Eq) keeps as text.
            .map_err(|error| {
                ImError::Config(format!(
                    "cannot build the HTTP client: {}",
                    error_chain(&error)
                ))
            })?;
        Ok(ImClient {
            inner: Arc::new(Inner {
                http,
                urls,
                signer: UserSigner::new(sdk_app_id, secret.clone()),
                admin_id: settings.admin_id.clone(),
                admin_sig_ttl_secs: settings.admin_sig_ttl_secs.max(2),
                user_sig_ttl_secs: settings.user_sig_ttl_secs,
                timeout,
                max_attempts: settings.max_attempts.max(1),
                backoff: Duration::from_millis(settings.retry_backoff_ms),
                max_backoff: Duration::from_millis(settings.max_backoff_ms),
                bad_sig_wait: Duration::from_millis(settings.bad_sig_wait_ms),
                admin_sig: Mutex::new(None),
                clock,
                ids: Arc::new(RandomIds::new()),
            }),
        })
    }

    /// The app's SDKAppID (clients need it beside their UserSig).
    pub fn sdk_app_id(&self) -> u64 {
        self.inner.signer.sdk_app_id()
    }

    /// A UserSig for an app user to log in with, valid for
    /// [`ImSettings::user_sig_ttl_secs`], and when it expires.
    pub fn sign_user(&self, user_id: &UserId) -> (String, Timestamp) {
        let now = self.unix_now();
        let ttl = self.inner.user_sig_ttl_secs;
        let sig = self.inner.signer.sign(user_id.as_str(), ttl, now);
        let expires_at =
            i64::try_from(now.saturating_add(ttl).saturating_mul(1000)).unwrap_or(i64::MAX);
        (sig, Timestamp(expires_at))
    }

    /// Creates the voice room's group (`AVChatRoom`) with id `group_id` (see
    /// [`group_id`](crate::group_id)); `name` is cut to 30 bytes. A group this app already
    /// created with that id (10025) counts as created.
    #[tracing::instrument(skip_all, fields(group_id = %group_id), err)]
    pub async fn create_group(&self, group_id: &str, name: &str) -> Result<()> {
        let mut name = truncate_utf8(name, MAX_GROUP_NAME_BYTES);
        if name.is_empty() {
            // Tencent requires a name.
            name = truncate_utf8(group_id, MAX_GROUP_NAME_BYTES);
        }
        let body = CreateBody {
            kind: "AVChatRoom",
            group_id,
            name,
        };
        match self.call(Command::CreateGroup, &body).await {
            Ok(_) => Ok(()),
            Err(error) if error.code() == Some(CODE_GROUP_ALREADY_YOURS) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Destroys a group; one that does not exist (10010, 10015) counts as destroyed.
    #[tracing::instrument(skip_all, fields(group_id = %group_id), err)]
    pub async fn destroy_group(&self, group_id: &str) -> Result<()> {
        match self
            .call(Command::DestroyGroup, &GroupBody { group_id })
            .await
        {
            Ok(_) => Ok(()),
            Err(error)
                if error
                    .code()
                    .is_some_and(|c| CODES_NO_SUCH_GROUP.contains(&c)) =>
            {
                Ok(())
            }
            Err(error) => Err(error),
        }
    }

    /// Sends a custom message to a group. A retry after a timeout may find that the first
    /// attempt did arrive: it carries the same `Random`, so Tencent drops the copy.
    #[tracing::instrument(level = "debug", skip_all, fields(group_id = %group_id))]
    pub async fn send_group_msg(
        &self,
        group_id: &str,
        message: &GroupMessage,
    ) -> Result<SendOutcome> {
        let body = SendBody {
            group_id,
            random: message.random.unwrap_or_else(|| self.random_u32()),
            priority: message.priority.map(priority_name),
            msg_body: message.msg_body(),
        };
        let reply = self.call(Command::SendGroupMsg, &body).await?;
        if let Some(reason) = reply
            .get("MsgDropReason")
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty())
        {
            let label = if reason == "MsgFreqCtrl" {
                "freq_ctrl"
            } else {
                "other"
            };
            metrics::counter!("room_im_msg_dropped_total", "reason" => label).increment(1);
            return Ok(SendOutcome::Dropped {
                reason: reason.to_owned(),
            });
        }
        Ok(SendOutcome::Sent {
            msg_seq: reply.get("MsgSeq").and_then(Value::as_u64).unwrap_or(0),
            msg_time: reply.get("MsgTime").and_then(Value::as_u64).unwrap_or(0),
        })
    }

    /// Mutes `members` in a group for `mute_secs` seconds (0 unmutes), 500 per call. On an
    /// error, earlier chunks stay applied; the call is idempotent, so repeat it whole.
    #[tracing::instrument(skip_all, fields(group_id = %group_id, members = members.len()), err)]
    pub async fn forbid_send_msg<S: AsRef<str>>(
        &self,
        group_id: &str,
        members: &[S],
        mute_secs: u64,
    ) -> Result<()> {
        for chunk in members.chunks(MAX_MUTE_MEMBERS) {
            let body = MuteBody {
                group_id,
                members: chunk.iter().map(AsRef::as_ref).collect(),
                mute_secs,
            };
            self.call(Command::ForbidSendMsg, &body).await?;
        }
        Ok(())
    }

    /// Bans `members` from an `AVChatRoom` for `duration_secs` seconds, 20 per call.
    /// [`ImError::NotPermitted`] when the app's plan lacks the feature (10007): turn it off.
    /// On an error, earlier chunks stay applied; repeat the call whole.
    #[tracing::instrument(skip_all, fields(group_id = %group_id, members = members.len()), err)]
    pub async fn ban_group_member<S: AsRef<str>>(
        &self,
        group_id: &str,
        members: &[S],
        duration_secs: u64,
        description: &str,
    ) -> Result<()> {
        for chunk in members.chunks(MAX_BAN_MEMBERS) {
            let body = BanBody {
                group_id,
                members: chunk.iter().map(AsRef::as_ref).collect(),
                duration_secs,
                description,
            };
            self.call(Command::BanGroupMember, &body).await?;
        }
        Ok(())
    }

    /// Lifts bans of `members` in an `AVChatRoom`, 20 per call; errors as for
    /// [`ImClient::ban_group_member`].
    #[tracing::instrument(skip_all, fields(group_id = %group_id, members = members.len()), err)]
    pub async fn unban_group_member<S: AsRef<str>>(
        &self,
        group_id: &str,
        members: &[S],
    ) -> Result<()> {
        for chunk in members.chunks(MAX_BAN_MEMBERS) {
            let body = UnbanBody {
                group_id,
                members: chunk.iter().map(AsRef::as_ref).collect(),
            };
            self.call(Command::UnbanGroupMember, &body).await?;
        }
        Ok(())
    }

    /// Makes one call with retries; the answer's envelope fields, on success.
    async fn call(&self, command: Command, body: &impl Serialize) -> Result<Map<String, Value>> {
        let body = serde_json::to_vec(body).expect("request bodies always serialize");
        let mut attempt = 0;
        let mut resigned = false;
        loop {
            attempt += 1;
            let sig = self.admin_sig();
            let started = Instant::now();
            let result = self.request(command, &sig, body.clone()).await;
            metrics::histogram!("room_im_request_seconds", "command" => command.name())
                .record(started.elapsed().as_secs_f64());
            let outcome = match &result {
                Ok(_) => "ok",
                Err(error) => error.label(),
            };
            metrics::counter!(
                "room_im_requests_total",
                "command" => command.name(),
                "outcome" => outcome
            )
            .increment(1);
            let error = match result {
                Ok(reply) => return Ok(reply),
                Err(error) => error,
            };
            match &error {
                ImError::SigRefused { code, .. } if !resigned => {
                    // The one retry after a new sig does not use up the retry budget.
                    resigned = true;
                    attempt -= 1;
                    self.forget_admin_sig(&sig);
                    tracing::warn!(
                        code,
                        command = command.name(),
                        "UserSig refused; signing anew"
                    );
                    if *code == CODE_TOO_MANY_BAD_SIGS {
                        tokio::time::sleep(self.inner.bad_sig_wait).await;
                    }
                }
                ImError::SigRefused { .. } => return Err(error),
                _ if error.is_retryable() && attempt < self.inner.max_attempts => {
                    let wait = self.backoff(attempt);
                    tracing::debug!(
                        error = %error, attempt, wait_ms = wait.as_millis() as u64,
                        command = command.name(), "retrying a Tencent IM call"
                    );
                    tokio::time::sleep(wait).await;
                }
                _ => return Err(error),
            }
        }
    }

    /// One HTTP request.
    async fn request(
        &self,
        command: Command,
        sig: &str,
        body: Vec<u8>,
    ) -> Result<Map<String, Value>> {
        let index = Command::ALL
            .iter()
            .position(|c| *c == command)
            .expect("every command has a URL");
        let mut url = self.inner.urls[index].clone();
        url.query_pairs_mut()
            .append_pair("sdkappid", &self.inner.signer.sdk_app_id().to_string())
            .append_pair("identifier", &self.inner.admin_id)
            .append_pair("usersig", sig)
            .append_pair("random", &self.random_u32().to_string())
            .append_pair("contenttype", "json");
        let response = self
            .inner
            .http
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|error| self.transport_error(&error))?;
        let status = response.status();
        if status != reqwest::StatusCode::OK {
            return Err(ImError::Http {
                status: status.as_u16(),
            });
        }
        let bytes = response
            .bytes()
            .await
            .map_err(|error| self.transport_error(&error))?;
        parse_envelope(command, &bytes)
    }

    fn transport_error(&self, error: &reqwest::Error) -> ImError {
        if error.is_timeout() {
            ImError::Timeout(self.inner.timeout)
        } else {
            ImError::Io(error_chain(error))
        }
    }

    /// The cached admin sig, signed anew when less than half its lifetime remains.
    fn admin_sig(&self) -> Arc<str> {
        let now = self.unix_now();
        let mut cached = self
            .inner
            .admin_sig
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(current) = cached.as_ref()
            && !needs_resign(current.signed_at, self.inner.admin_sig_ttl_secs, now)
        {
            return current.sig.clone();
        }
        let sig: Arc<str> = self
            .inner
            .signer
            .sign(&self.inner.admin_id, self.inner.admin_sig_ttl_secs, now)
            .into();
        *cached = Some(CachedSig {
            sig: sig.clone(),
            signed_at: now,
        });
        sig
    }

    /// Drops the cached sig if it is still `refused`, so the next call signs anew.
    fn forget_admin_sig(&self, refused: &Arc<str>) {
        let mut cached = self
            .inner
            .admin_sig
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if cached
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(&c.sig, refused))
        {
            *cached = None;
        }
    }

    /// The wait after failed attempt `attempt` (from 1): the base backoff doubled per retry,
    /// capped, then jittered down to half so that many clients do not retry in step.
    fn backoff(&self, attempt: u32) -> Duration {
        let doubled = self
            .inner
            .backoff
            .saturating_mul(1 << attempt.saturating_sub(1).min(16))
            .min(self.inner.max_backoff);
        let jitter = f64::from(self.random_u32()) / f64::from(u32::MAX);
        doubled.mul_f64(0.5 + 0.5 * jitter)
    }

    /// The clock's time in Unix seconds (0 before 1970).
    fn unix_now(&self) -> u64 {
        u64::try_from(self.inner.clock.now().0 / 1000).unwrap_or(0)
    }

    /// A random `u32`: both halves of a random `u64`, folded.
    fn random_u32(&self) -> u32 {
        let value = self.inner.ids.random();
        (value ^ (value >> 32)) as u32
    }
}

/// Whether a sig signed at `signed_at` with `ttl` seconds of life must be replaced at `now`:
/// less than half its life remains (or the clock went back).
fn needs_resign(signed_at: u64, ttl: u64, now: u64) -> bool {
    now < signed_at || now - signed_at >= ttl / 2
}

fn parse_envelope(command: Command, bytes: &[u8]) -> Result<Map<String, Value>> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|error| ImError::Malformed(error.to_string()))?;
    let Value::Object(reply) = value else {
        return Err(ImError::Malformed(
            "the answer is not a JSON object".to_owned(),
        ));
    };
    let status = reply.get("ActionStatus").and_then(Value::as_str);
    let code = match (reply.get("ErrorCode"), status) {
        (Some(code), _) => code
            .as_i64()
            .ok_or_else(|| ImError::Malformed(format!("ErrorCode is {code}")))?,
        (None, Some("OK")) => 0,
        (None, _) => {
            return Err(ImError::Malformed(
                "the answer has neither ErrorCode nor ActionStatus OK".to_owned(),
            ));
        }
    };
    if code == 0 {
        if status == Some("FAIL") {
            return Err(ImError::Malformed(
                "ActionStatus FAIL with ErrorCode 0".to_owned(),
            ));
        }
        return Ok(reply);
    }
    let info = reply
        .get("ErrorInfo")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !ErrorClass::is_known(code) {
        tracing::warn!(
            code,
            info,
            command = command.name(),
            "Tencent IM answered an undocumented ErrorCode; treating it as permanent"
        );
    }
    Err(ImError::from_code(code, info))
}

fn priority_name(priority: ImPriority) -> &'static str {
    match priority {
        ImPriority::High => "High",
        ImPriority::Normal => "Normal",
        ImPriority::Low => "Low",
    }
}

/// The size of a `MsgBody` holding one `TIMCustomElem` whose `Data` escapes to
/// `escaped_data_bytes` bytes of JSON string content (no `Desc` or `Ext`).
pub(crate) fn custom_body_bytes(escaped_data_bytes: usize) -> usize {
    static OVERHEAD: OnceLock<usize> = OnceLock::new();
    escaped_data_bytes + *OVERHEAD.get_or_init(|| GroupMessage::new("").body_bytes())
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_admin_sig_is_renewed_once_half_its_life_is_gone() {
        assert!(!needs_resign(1_000, 86_400, 1_000));
        assert!(!needs_resign(1_000, 86_400, 1_000 + 43_199));
        assert!(needs_resign(1_000, 86_400, 1_000 + 43_200));
        assert!(needs_resign(1_000, 86_400, 999), "the clock went back");
    }

    #[test]
    fn envelopes_are_read_by_their_error_code() {
        let ok = parse_envelope(
            Command::SendGroupMsg,
            br#"{"ActionStatus":"OK","ErrorCode":0,"MsgSeq":3}"#,
        )
        .unwrap();
        assert_eq!(ok["MsgSeq"], 3);
        assert!(matches!(
            parse_envelope(
                Command::SendGroupMsg,
                br#"{"ActionStatus":"FAIL","ErrorCode":10002,"ErrorInfo":"busy"}"#
            ),
            Err(ImError::Busy { code: 10002, .. })
        ));
        assert!(matches!(
            parse_envelope(Command::SendGroupMsg, b"<html>bad gateway</html>"),
            Err(ImError::Malformed(_))
        ));
        assert!(matches!(
            parse_envelope(Command::SendGroupMsg, br#"{"ActionStatus":"FAIL"}"#),
            Err(ImError::Malformed(_))
        ));
        assert!(matches!(
            parse_envelope(Command::SendGroupMsg, br#"{"ErrorCode":99999}"#),
            Err(ImError::Rejected { code: 99999, .. })
        ));
    }

    #[test]
    fn the_body_size_formula_matches_serde() {
        let data = r#"{"room_id":"r","events":[{"a":"b\\c"}]}"#;
        let escaped = serde_json::to_string(data).unwrap().len() - 2;
        assert_eq!(
            custom_body_bytes(escaped),
            GroupMessage::new(data).body_bytes()
        );
    }

    #[test]
    fn random_values_differ() {
        let client = ImClient::new(&ImSettings::new(1_400_000_000, "key")).unwrap();
        let values: std::collections::HashSet<u32> =
            (0..1000).map(|_| client.random_u32()).collect();
        assert!(values.len() > 990);
    }
}

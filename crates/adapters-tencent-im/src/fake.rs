//! [`FakeIm`] (feature `fake`): a fake Tencent IM on a loopback port, for tests. This file
//! holds the server and what tests ask it; what it keeps is in `state`, what it answers in
//! `routes`.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::routing::post;
use secrecy::SecretString;
use tokio_util::sync::CancellationToken;

use crate::{ImSettings, UserSigner};

mod routes;
mod state;

pub use state::{FakeImConfig, FakeMessage, FakeRequest, Fault, GROUP_MSGS_PER_SEC};
use state::{FakeState, Group, Shared};

// Here rather than beside the type: the defaults are the fake's own constants.
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

/// A local server on `127.0.0.1:0` that speaks the part of Tencent IM's REST contract the room
/// service uses, for tests of this crate and of others.
///
/// It checks what Tencent checks: the query parameters (`sdkappid`, `identifier`, `usersig`,
/// `random`, `contenttype=json`), the UserSig exactly (70003 undecodable, 70014 another app,
/// 70009 bad HMAC, 70001 expired, 70013 another account than `identifier`, 60010 not an
/// admin) and the bodies (10004 bad shape, 10010 unknown group, 80002 a request over 12 KiB, counted whole as Tencent does).
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
            .route("/v4/{service}/{command}", post(routes::handle))
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

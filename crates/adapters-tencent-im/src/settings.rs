//! [`ImSettings`]: what the adapter reads from the service's configuration, as its `[im]`
//! section (`ROOM__IM__SDK_APP_ID`, `ROOM__IM__SECRET_KEY`, `ROOM__IM__ADMIN_ID`,
//! `ROOM__IM__BASE_URL`, `ROOM__IM__USER_SIG_TTL_SECS`, ...), with the display messenger's
//! tuning under `[im.display]`.

use std::time::Duration;

use secrecy::SecretString;
use serde::Deserialize;

/// Tencent IM's China endpoint; other regions have their own hosts (Singapore
/// `https://adminapisgp.im.qcloud.com`, Frankfurt `https://adminapiger.im.qcloud.com`, ...).
pub const DEFAULT_BASE_URL: &str = "https://console.tim.qq.com";

/// `[im]`: the Tencent IM app and how the client talks to it (`ROOM__IM__SDK_APP_ID`,
/// `ROOM__IM__SECRET_KEY`, `ROOM__IM__ADMIN_ID`, `ROOM__IM__BASE_URL`,
/// `ROOM__IM__USER_SIG_TTL_SECS`, ...), with the display messenger's tuning under
/// `[im.display]` (`ROOM__IM__DISPLAY__ROOM_RATE_PER_SEC`, ...). Unset `sdk_app_id` or
/// `secret_key`: IM is off. `Debug` redacts the secret key.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ImSettings {
    /// The app's SDKAppID (`ROOM__IM__SDK_APP_ID`).
    pub sdk_app_id: Option<u64>,
    /// The app's secret key, as the console shows it (`ROOM__IM__SECRET_KEY`).
    pub secret_key: Option<SecretString>,
    /// The app admin account every REST call is made as (`ROOM__IM__ADMIN_ID`).
    pub admin_id: String,
    /// Scheme and host of the REST API, without a path (`ROOM__IM__BASE_URL`).
    pub base_url: String,
    /// Lifetime of the UserSigs minted for app users, in seconds
    /// (`ROOM__IM__USER_SIG_TTL_SECS`).
    pub user_sig_ttl_secs: u64,
    /// Lifetime of the admin's UserSig, in seconds; the client signs a new one when less than
    /// half of it remains.
    pub admin_sig_ttl_secs: u64,
    /// How long one HTTP request may take, in milliseconds; above Tencent's own 3 s.
    pub request_timeout_ms: u64,
    /// Most attempts of one call that meets retryable failures (at least 1).
    pub max_attempts: u32,
    /// The wait before the first retry, in milliseconds; it doubles with each retry.
    pub retry_backoff_ms: u64,
    /// The longest wait between retries, in milliseconds.
    pub max_backoff_ms: u64,
    /// The wait before the one retry after Tencent's 70050 (too many bad sigs), in
    /// milliseconds; Tencent asks for a minute.
    pub bad_sig_wait_ms: u64,
    /// Most idle keep-alive connections kept per host.
    pub pool_max_idle: usize,
    /// The display messenger.
    pub display: DisplaySettings,
}

impl Default for ImSettings {
    fn default() -> Self {
        ImSettings {
            sdk_app_id: None,
            secret_key: None,
            admin_id: "administrator".to_owned(),
            base_url: DEFAULT_BASE_URL.to_owned(),
            user_sig_ttl_secs: 7 * 24 * 3600,
            admin_sig_ttl_secs: 24 * 3600,
            request_timeout_ms: 5_000,
            max_attempts: 3,
            retry_backoff_ms: 200,
            max_backoff_ms: 2_000,
            bad_sig_wait_ms: 60_000,
            pool_max_idle: 64,
            display: DisplaySettings::default(),
        }
    }
}

impl ImSettings {
    /// Settings for the app `sdk_app_id` with its secret key, the defaults otherwise.
    pub fn new(sdk_app_id: u64, secret_key: impl Into<String>) -> Self {
        ImSettings {
            sdk_app_id: Some(sdk_app_id),
            secret_key: Some(SecretString::from(secret_key.into())),
            ..ImSettings::default()
        }
    }

    /// Whether IM is on: both the app id and the secret key are set.
    pub fn is_configured(&self) -> bool {
        self.sdk_app_id.is_some() && self.secret_key.is_some()
    }

    /// The per-request timeout.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }
}

/// `[im.display]`: the display messenger ([`ImMessenger`](crate::ImMessenger)).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DisplaySettings {
    /// Commits' display batches waiting for the dispatcher, for the whole node; a commit that
    /// finds it full is dropped (counted).
    pub queue_capacity: usize,
    /// Messages per second to one room's group; Tencent drops beyond 40.
    pub room_rate_per_sec: f64,
    /// Messages one room may send at once after a quiet spell. The most one room sends in any
    /// second is `room_burst + room_rate_per_sec`, which must stay below 40.
    pub room_burst: f64,
    /// Events one room may have waiting; beyond it the oldest of the lowest priority present
    /// is shed (Low before Normal before High).
    pub room_queue_max: usize,
    /// How long a coalescible event (fuel, heat, rank) waits for newer values of its key, in
    /// milliseconds; only the newest is sent.
    pub coalesce_ms: u64,
    /// Most sends in flight at once, across rooms (each room has at most one).
    pub max_in_flight: usize,
    /// The most a message's `MsgBody`, as JSON, may take; Tencent refuses beyond 12 KB.
    pub max_message_bytes: usize,
    /// How long a graceful stop keeps sending what is queued, in milliseconds.
    pub drain_ms: u64,
}

impl Default for DisplaySettings {
    fn default() -> Self {
        DisplaySettings {
            queue_capacity: 16_384,
            room_rate_per_sec: 30.0,
            room_burst: 5.0,
            room_queue_max: 3_000,
            coalesce_ms: 200,
            max_in_flight: 64,
            max_message_bytes: crate::MAX_MSG_BODY_BYTES,
            drain_ms: 2_000,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_keep_a_room_below_tencents_cap() {
        let display = DisplaySettings::default();
        assert!(display.room_rate_per_sec + display.room_burst < 40.0);
        assert!(ImSettings::default().request_timeout() > Duration::from_secs(3));
        assert!(!ImSettings::default().is_configured());
    }

    #[test]
    fn debug_redacts_the_secret_key() {
        let settings = ImSettings::new(1_400_000_000, "very-secret-key");
        let shown = format!("{settings:?}");
        assert!(!shown.contains("very-secret-key"), "{shown}");
    }

    #[test]
    fn the_section_deserializes_with_defaults() {
        let settings: ImSettings = serde_json::from_str(
            r#"{"sdk_app_id": 1400000000, "secret_key": "k", "display": {"room_rate_per_sec": 20}}"#,
        )
        .unwrap();
        assert!(settings.is_configured());
        assert_eq!(settings.admin_id, "administrator");
        assert_eq!(settings.display.room_rate_per_sec, 20.0);
        assert_eq!(settings.display.coalesce_ms, 200);
    }
}

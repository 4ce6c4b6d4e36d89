//! [`ImSettings`]: what the adapter reads from the service's configuration, as its `[im]`
//! section (`ROOM__IM__SDK_APP_ID`, `ROOM__IM__SECRET_KEY`, `ROOM__IM__ADMIN_ID`,
//! `ROOM__IM__BASE_URL`, `ROOM__IM__USER_SIG_TTL_SECS`, ...), with the display messenger's
//! tuning under `[im.display]`.

use std::time::Duration;

use secrecy::SecretString;
use serde::{Deserialize, Serialize, Serializer};

/// Tencent IM's China endpoint; other regions have their own hosts (Singapore
/// `https://adminapisgp.im.qcloud.com`, Frankfurt `https://adminapiger.im.qcloud.com`, ...).
pub const DEFAULT_BASE_URL: &str = "https://console.tim.qq.com";

/// `[im]`: the Tencent IM app and how the client talks to it (`ROOM__IM__SDK_APP_ID`,
/// `ROOM__IM__SECRET_KEY`, `ROOM__IM__ADMIN_ID`, `ROOM__IM__BASE_URL`,
/// `ROOM__IM__USER_SIG_TTL_SECS`, ...), with the display messenger's tuning under
/// `[im.display]` (`ROOM__IM__DISPLAY__ROOM_RATE_PER_SEC`, ...). Unset `sdk_app_id` or
/// `secret_key`: IM is off. `Debug` redacts the secret key.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ImSettings {
    /// The app's SDKAppID (`ROOM__IM__SDK_APP_ID`).
    pub sdk_app_id: Option<u64>,
    /// The app's secret key, as the console shows it (`ROOM__IM__SECRET_KEY`). Serialized as
    /// `"[REDACTED]"`.
    #[serde(serialize_with = "redacted")]
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

    /// Refuses settings the adapter cannot work with, naming the setting (as its
    /// `ROOM__IM__...` variable): a room budget that reaches Tencent's 40 messages/s, an app
    /// budget above its 200 calls/s, messages over 12 KB, a request timeout not above
    /// Tencent's own 3 s, zero capacities, a base URL that is not `http(s)://host`.
    pub fn validate(&self) -> Result<(), String> {
        let display = &self.display;
        let positive = |value: f64| value.is_finite() && value > 0.0;
        if !positive(display.room_rate_per_sec) || !positive(display.room_burst) {
            return Err(
                "ROOM__IM__DISPLAY__ROOM_RATE_PER_SEC and ROOM__IM__DISPLAY__ROOM_BURST \
                        must be positive"
                    .to_owned(),
            );
        }
        if display.room_rate_per_sec + display.room_burst >= 40.0 {
            return Err(format!(
                "ROOM__IM__DISPLAY__ROOM_RATE_PER_SEC ({}) + ROOM__IM__DISPLAY__ROOM_BURST ({}) \
                 must stay below Tencent's 40 messages/s per group",
                display.room_rate_per_sec, display.room_burst
            ));
        }
        if !positive(display.app_rate_per_sec) || !positive(display.app_burst) {
            return Err(
                "ROOM__IM__DISPLAY__APP_RATE_PER_SEC and ROOM__IM__DISPLAY__APP_BURST \
                        must be positive"
                    .to_owned(),
            );
        }
        if display.app_rate_per_sec + display.app_burst > 200.0 {
            return Err(format!(
                "ROOM__IM__DISPLAY__APP_RATE_PER_SEC ({}) + ROOM__IM__DISPLAY__APP_BURST ({}) \
                 exceed Tencent's 200 calls/s per app (shared by the nodes: about 150 / nodes)",
                display.app_rate_per_sec, display.app_burst
            ));
        }
        if display.max_message_bytes == 0
            || display.max_message_bytes > crate::limits::MAX_MSG_BODY_BYTES
        {
            return Err(format!(
                "ROOM__IM__DISPLAY__MAX_MESSAGE_BYTES ({}) must be 1 to {} (Tencent's 12 KiB for \
                 the whole request, less the rest of the request)",
                display.max_message_bytes,
                crate::limits::MAX_MSG_BODY_BYTES
            ));
        }
        if self.request_timeout_ms <= 3_000 {
            return Err(format!(
                "ROOM__IM__REQUEST_TIMEOUT_MS ({}) must be above Tencent's own 3000 ms",
                self.request_timeout_ms
            ));
        }
        for (name, value) in [
            ("ROOM__IM__DISPLAY__QUEUE_CAPACITY", display.queue_capacity),
            ("ROOM__IM__DISPLAY__ROOM_QUEUE_MAX", display.room_queue_max),
            ("ROOM__IM__DISPLAY__MAX_IN_FLIGHT", display.max_in_flight),
            (
                "ROOM__IM__DISPLAY__MAX_HELD_EVENTS",
                display.max_held_events,
            ),
            ("ROOM__IM__MAX_ATTEMPTS", self.max_attempts as usize),
        ] {
            if value == 0 {
                return Err(format!("{name} must not be 0"));
            }
        }
        let url = reqwest::Url::parse(&self.base_url)
            .map_err(|error| format!("ROOM__IM__BASE_URL ({}): {error}", self.base_url))?;
        if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
            return Err(format!(
                "ROOM__IM__BASE_URL ({}) must be http(s)://host[:port]",
                self.base_url
            ));
        }
        Ok(())
    }
}

/// Serializes a secret without it: `"[REDACTED]"`, or `null` when unset.
fn redacted<S: Serializer>(
    secret: &Option<SecretString>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match secret {
        Some(_) => serializer.serialize_some("[REDACTED]"),
        None => serializer.serialize_none(),
    }
}

/// `[im.display]`: the display messenger ([`ImMessenger`](crate::ImMessenger)).
#[derive(Debug, Clone, Deserialize, Serialize)]
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
    /// `send_group_msg` calls per second from this node, across rooms
    /// (`ROOM__IM__DISPLAY__APP_RATE_PER_SEC`). Tencent allows the app 200 calls a second of
    /// each command, shared by all the nodes: set it to about 150 divided by the number of
    /// nodes (the rest is headroom for retries and other callers). Default 150 (one node).
    pub app_rate_per_sec: f64,
    /// Calls this node may make at once above [`DisplaySettings::app_rate_per_sec`] after a
    /// quiet spell (`ROOM__IM__DISPLAY__APP_BURST`).
    pub app_burst: f64,
    /// Events held across all rooms at most (queued, held for coalescing, or waiting for
    /// their group): beyond it new events are dropped, whatever their priority
    /// (`ROOM__IM__DISPLAY__MAX_HELD_EVENTS`).
    pub max_held_events: usize,
    /// The oldest an event may be, from `publish`, when its turn to be sent comes; an older
    /// one is dropped, in milliseconds (`ROOM__IM__DISPLAY__MAX_AGE_MS`).
    pub max_age_ms: u64,
    /// How long a message refused because its room's group does not exist yet is kept and
    /// sent again (after 1 s, then 2 s, 4 s, ...), in milliseconds
    /// (`ROOM__IM__DISPLAY__NO_GROUP_RETRY_MS`).
    pub no_group_retry_ms: u64,
    /// The most a message's `MsgBody`, as JSON, may take; Tencent refuses a request beyond
    /// 12 KiB, counted whole, so at most [`MAX_MSG_BODY_BYTES`](crate::MAX_MSG_BODY_BYTES);
    /// 11 KiB by default, a margin under the limit.
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
            app_rate_per_sec: 150.0,
            app_burst: 10.0,
            max_held_events: 200_000,
            max_age_ms: 10_000,
            no_group_retry_ms: 15_000,
            max_message_bytes: crate::limits::DEFAULT_MSG_BODY_BYTES,
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
    fn the_defaults_validate() {
        assert_eq!(ImSettings::default().validate(), Ok(()));
        assert_eq!(ImSettings::new(1_400_000_000, "k").validate(), Ok(()));
    }

    #[test]
    fn validate_refuses_what_tencent_would_refuse_naming_the_setting() {
        let refused = |adjust: fn(&mut ImSettings), names: &str| {
            let mut settings = ImSettings::default();
            adjust(&mut settings);
            let message = settings.validate().unwrap_err();
            assert!(message.contains(names), "{names}: {message}");
        };
        refused(
            |s| s.display.room_rate_per_sec = 35.0,
            "ROOM__IM__DISPLAY__ROOM_BURST",
        );
        refused(
            |s| {
                s.display.room_rate_per_sec = 30.0;
                s.display.room_burst = 10.0;
            },
            "ROOM__IM__DISPLAY__ROOM_RATE_PER_SEC",
        );
        refused(
            |s| s.display.room_rate_per_sec = 0.0,
            "ROOM__IM__DISPLAY__ROOM_RATE_PER_SEC",
        );
        refused(
            |s| s.display.app_rate_per_sec = 195.0,
            "ROOM__IM__DISPLAY__APP_RATE_PER_SEC",
        );
        refused(
            |s| s.display.max_message_bytes = crate::limits::MAX_MSG_BODY_BYTES + 1,
            "ROOM__IM__DISPLAY__MAX_MESSAGE_BYTES",
        );
        refused(
            |s| s.request_timeout_ms = 3_000,
            "ROOM__IM__REQUEST_TIMEOUT_MS",
        );
        refused(
            |s| s.display.queue_capacity = 0,
            "ROOM__IM__DISPLAY__QUEUE_CAPACITY",
        );
        refused(
            |s| s.display.room_queue_max = 0,
            "ROOM__IM__DISPLAY__ROOM_QUEUE_MAX",
        );
        refused(
            |s| s.display.max_in_flight = 0,
            "ROOM__IM__DISPLAY__MAX_IN_FLIGHT",
        );
        refused(
            |s| s.display.max_held_events = 0,
            "ROOM__IM__DISPLAY__MAX_HELD_EVENTS",
        );
        refused(|s| s.max_attempts = 0, "ROOM__IM__MAX_ATTEMPTS");
        refused(
            |s| s.base_url = "ftp://example.com".to_owned(),
            "ROOM__IM__BASE_URL",
        );
        refused(
            |s| s.base_url = "not a url".to_owned(),
            "ROOM__IM__BASE_URL",
        );
        // The edges that pass.
        let mut settings = ImSettings::default();
        settings.display.room_rate_per_sec = 34.0;
        settings.display.max_message_bytes = crate::limits::MAX_MSG_BODY_BYTES;
        settings.request_timeout_ms = 3_001;
        settings.base_url = "http://127.0.0.1:8080".to_owned();
        assert_eq!(settings.validate(), Ok(()));
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

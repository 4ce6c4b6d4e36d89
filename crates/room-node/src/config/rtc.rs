//! `[rtc]`: the TRTC webhook and the replay window of its callbacks.

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use super::redact::optional_secret;
use super::reference::Section;

/// The widest `rtc.callback_window_secs` accepted, a day: wider, a captured callback could be
/// replayed long after its event, which is what the window is there to refuse.
pub const MAX_CALLBACK_WINDOW_SECS: u64 = 24 * 3600;

/// `[rtc]`: the TRTC room and media callbacks.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RtcSettings {
    /// The callback key configured in the TRTC console (`ROOM__RTC__CALLBACK_KEY`). Unset:
    /// every callback is refused with 401.
    #[serde(serialize_with = "optional_secret")]
    pub callback_key: Option<SecretString>,
    /// When set, callbacks must carry this `SdkAppId` header (`ROOM__RTC__SDK_APP_ID`).
    pub sdk_app_id: Option<u64>,
    /// A callback whose times lie further than this many seconds from now, in the past or the
    /// future, is refused as a replay (`ROOM__RTC__CALLBACK_WINDOW_SECS`). TRTC retries for
    /// about a minute, so the window must stay well above that; 1 to
    /// [`MAX_CALLBACK_WINDOW_SECS`], others are refused at start-up.
    pub callback_window_secs: u64,
}

impl Default for RtcSettings {
    fn default() -> Self {
        RtcSettings {
            callback_key: None,
            sdk_app_id: None,
            callback_window_secs: 300,
        }
    }
}

/// What `[rtc]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "rtc",
    about: "The TRTC webhook, `POST /v1/rtc/callbacks`.",
    keys: &[
        (
            "callback_key",
            "The TRTC callback key, which checks each callback's `Sign` header. Unset, every \
             callback is refused (401 `BAD_SIGNATURE`).",
        ),
        (
            "sdk_app_id",
            "When set, callbacks must carry this `SdkAppId` header; unset, it is not checked.",
        ),
        (
            "callback_window_secs",
            "A callback dated further than this many seconds from now, in the past or the future, \
             is refused 401 `CALLBACK_OUT_OF_WINDOW`: the signature never expires, so this stops \
             replays of captured callbacks. TRTC retries for about a minute: keep it well above \
             that. From 1 to 86400; other values stop the start.",
        ),
    ],
};

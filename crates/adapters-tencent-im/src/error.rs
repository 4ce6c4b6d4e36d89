//! [`ImError`]: every way a Tencent IM call fails, and whether a retry can help. Tencent answers
//! HTTP 200 even on failure; its `ErrorCode` is sorted into [`ErrorClass`]es.

use std::time::Duration;

/// What a retry can do about a Tencent `ErrorCode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Busy or failing for now: retry with a backoff.
    Retryable,
    /// The UserSig was refused as expired (70001) or after too many bad ones (70050): sign a
    /// new one, then retry once (after a wait for 70050).
    Resign,
    /// A retry gets the same answer.
    Permanent,
}

/// Tencent's documented codes of each class, as inclusive ranges (most are one code).
const RETRYABLE: &[(i64, i64)] = &[
    (10002, 10002),
    (10006, 10006),
    (10023, 10023),
    (60007, 60008),
    (60011, 60011),
    (60018, 60019),
    (70169, 70169),
    (70202, 70202),
    (70500, 70500),
    (90992, 90992),
    (90994, 90995),
    (91000, 91000),
];
const RESIGN: &[(i64, i64)] = &[(70001, 70001), (70050, 70050)];
/// With the `create_group` answers the client acts on (10021 id taken, 10025 already yours,
/// 10036 / 10058 quota).
const PERMANENT: &[(i64, i64)] = &[
    (10004, 10004),
    (10007, 10007),
    (10010, 10010),
    (10015, 10017),
    (10021, 10021),
    (10025, 10025),
    (10036, 10036),
    (10058, 10058),
    (80001, 80002),
    (60002, 60006),
    (60009, 60010),
    (60012, 60012),
    (60015, 60017),
    (60020, 60021),
    (70003, 70003),
    (70005, 70005),
    (70009, 70009),
    (70013, 70014),
    (70016, 70016),
    (70020, 70020),
    (70107, 70107),
    (70398, 70398),
    (20002, 20002),
];

fn listed(table: &[(i64, i64)], code: i64) -> bool {
    table
        .iter()
        .any(|(low, high)| (*low..=*high).contains(&code))
}

impl ErrorClass {
    /// The class of `code`. Codes not in Tencent's documented lists are permanent; the client
    /// logs them.
    pub fn of(code: i64) -> ErrorClass {
        if listed(RETRYABLE, code) {
            ErrorClass::Retryable
        } else if listed(RESIGN, code) {
            ErrorClass::Resign
        } else {
            ErrorClass::Permanent
        }
    }

    /// Whether `code` is one Tencent documents (an unknown one is worth a log line).
    pub fn is_known(code: i64) -> bool {
        [RETRYABLE, RESIGN, PERMANENT]
            .iter()
            .any(|table| listed(table, code))
    }
}

/// Tencent's "no permission" code: for ban/unban, the plan does not include the feature.
pub const CODE_NOT_PERMITTED: i64 = 10007;
/// Tencent's "no such group" codes.
pub const CODES_NO_SUCH_GROUP: [i64; 2] = [10010, 10015];
/// The `ErrorCode` of a message refused as too long (Tencent counts the whole request).
pub const CODE_TOO_LONG: i64 = 80002;

/// Why a Tencent IM call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImError {
    /// The settings cannot make a client (no app id or key, a bad base URL).
    #[error("Tencent IM is not configured: {0}")]
    Config(String),
    /// The HTTP answer was not 200 (a gateway in front of Tencent failed). Retryable.
    #[error("Tencent IM answered HTTP {status}")]
    Http {
        /// The HTTP status.
        status: u16,
    },
    /// No answer within the request timeout. Retryable; a send may still have happened, which
    /// is why a retried `send_group_msg` keeps its `Random`.
    #[error("Tencent IM did not answer within {0:?}")]
    Timeout(Duration),
    /// The connection failed (refused, reset, DNS, TLS). Retryable.
    #[error("cannot reach Tencent IM: {0}")]
    Io(String),
    /// The answer was not the JSON envelope. Retryable: a proxy's error page looks like this.
    #[error("Tencent IM answered malformed JSON: {0}")]
    Malformed(String),
    /// An `ErrorCode` Tencent documents as temporary (busy, internal error). Retryable.
    #[error("Tencent IM is busy: {code} {info}")]
    Busy {
        /// The `ErrorCode`.
        code: i64,
        /// The `ErrorInfo`.
        info: String,
    },
    /// The UserSig was refused (70001 expired, 70050 too many bad sigs) even after signing a
    /// new one. Retryable later.
    #[error("Tencent IM refused the UserSig: {code} {info}")]
    SigRefused {
        /// The `ErrorCode`.
        code: i64,
        /// The `ErrorInfo`.
        info: String,
    },
    /// 10007: the app's plan does not permit this (ban and unban need a plan that has them).
    /// The caller may turn the feature off.
    #[error("Tencent IM does not permit this on the app's plan: {info}")]
    NotPermitted {
        /// The `ErrorInfo`.
        info: String,
    },
    /// 10010 / 10015: the group does not exist (or was destroyed).
    #[error("no such Tencent IM group: {code} {info}")]
    NoSuchGroup {
        /// The `ErrorCode`.
        code: i64,
        /// The `ErrorInfo`.
        info: String,
    },
    /// Any other `ErrorCode`: a retry gets the same answer.
    #[error("Tencent IM refused: {code} {info}")]
    Rejected {
        /// The `ErrorCode`.
        code: i64,
        /// The `ErrorInfo`.
        info: String,
    },
}

impl ImError {
    /// The error for a failed envelope's `ErrorCode` and `ErrorInfo`.
    pub fn from_code(code: i64, info: impl Into<String>) -> ImError {
        let info = info.into();
        match ErrorClass::of(code) {
            ErrorClass::Retryable => ImError::Busy { code, info },
            ErrorClass::Resign => ImError::SigRefused { code, info },
            ErrorClass::Permanent if code == CODE_NOT_PERMITTED => ImError::NotPermitted { info },
            ErrorClass::Permanent if CODES_NO_SUCH_GROUP.contains(&code) => {
                ImError::NoSuchGroup { code, info }
            }
            ErrorClass::Permanent => ImError::Rejected { code, info },
        }
    }

    /// Whether the same call may succeed later.
    pub fn is_retryable(&self) -> bool {
        match self {
            ImError::Http { .. }
            | ImError::Timeout(_)
            | ImError::Io(_)
            | ImError::Malformed(_)
            | ImError::Busy { .. }
            | ImError::SigRefused { .. } => true,
            ImError::Config(_)
            | ImError::NotPermitted { .. }
            | ImError::NoSuchGroup { .. }
            | ImError::Rejected { .. } => false,
        }
    }

    /// Tencent's `ErrorCode`, when the failure is one.
    pub fn code(&self) -> Option<i64> {
        match self {
            ImError::Busy { code, .. }
            | ImError::SigRefused { code, .. }
            | ImError::NoSuchGroup { code, .. }
            | ImError::Rejected { code, .. } => Some(*code),
            ImError::NotPermitted { .. } => Some(CODE_NOT_PERMITTED),
            ImError::Config(_)
            | ImError::Http { .. }
            | ImError::Timeout(_)
            | ImError::Io(_)
            | ImError::Malformed(_) => None,
        }
    }

    /// A bounded label for metrics.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            ImError::Config(_) => "config",
            ImError::Http { .. } => "http_error",
            ImError::Timeout(_) => "timeout",
            ImError::Io(_) => "io_error",
            ImError::Malformed(_) => "malformed",
            ImError::Busy { .. } => "busy",
            ImError::SigRefused { .. } => "sig_refused",
            ImError::NotPermitted { .. } => "not_permitted",
            ImError::NoSuchGroup { .. } => "no_such_group",
            ImError::Rejected { .. } => "rejected",
        }
    }
}

impl From<ImError> for room_app::Error {
    /// Retryable failures become [`Unavailable`](room_app::Error::Unavailable), a missing
    /// group [`NotFound`](room_app::Error::NotFound), the rest
    /// [`Internal`](room_app::Error::Internal) (a person must look).
    fn from(error: ImError) -> Self {
        match &error {
            _ if error.is_retryable() => room_app::Error::Unavailable(error.to_string()),
            ImError::NoSuchGroup { .. } => room_app::Error::NotFound(error.to_string()),
            _ => room_app::Error::Internal(error.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_code_has_its_class() {
        for code in [
            10002, 10006, 10023, 60007, 60008, 60011, 60018, 60019, 70169, 70202, 70500, 90992,
            90994, 90995, 91000,
        ] {
            assert_eq!(ErrorClass::of(code), ErrorClass::Retryable, "{code}");
            assert!(ImError::from_code(code, "").is_retryable(), "{code}");
        }
        for code in [70001, 70050] {
            assert_eq!(ErrorClass::of(code), ErrorClass::Resign, "{code}");
        }
        for code in [
            10004, 10007, 10010, 10015, 10016, 10017, 80001, 80002, 60002, 60003, 60004, 60005,
            60006, 60009, 60010, 60012, 60015, 60016, 60017, 60020, 60021, 70003, 70005, 70009,
            70013, 70014, 70016, 70020, 70107, 70398, 20002,
        ] {
            assert_eq!(ErrorClass::of(code), ErrorClass::Permanent, "{code}");
            assert!(!ImError::from_code(code, "").is_retryable(), "{code}");
            assert!(ErrorClass::is_known(code), "{code}");
        }
        assert_eq!(ErrorClass::of(12345), ErrorClass::Permanent);
        assert!(!ErrorClass::is_known(12345));
        assert!(ErrorClass::is_known(10002) && ErrorClass::is_known(70050));
    }

    #[test]
    fn the_tables_do_not_overlap() {
        for (table, others) in [
            (RETRYABLE, [RESIGN, PERMANENT]),
            (RESIGN, [RETRYABLE, PERMANENT]),
            (PERMANENT, [RETRYABLE, RESIGN]),
        ] {
            for (low, high) in table {
                assert!(low <= high);
                for code in *low..=*high {
                    assert!(!others.iter().any(|o| listed(o, code)), "{code}");
                }
            }
        }
    }

    #[test]
    fn the_codes_callers_act_on_have_their_own_variants() {
        assert!(matches!(
            ImError::from_code(10007, "no"),
            ImError::NotPermitted { .. }
        ));
        assert!(matches!(
            ImError::from_code(10015, "gone"),
            ImError::NoSuchGroup { code: 10015, .. }
        ));
        assert_eq!(ImError::from_code(10007, "").code(), Some(10007));
    }
}

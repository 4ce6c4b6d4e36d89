//! `[auth]`: the bearer tokens (JWT, HS256) and the bounds on their secret.

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize, Serializer};

use super::redact::REDACTED;
use super::reference::Section;

/// The JWT secret used when none is configured. Anyone can mint tokens with it: the service
/// logs a loud warning when it runs with this value.
pub const DEV_JWT_SECRET: &str = "room-service-development-secret-do-not-use-in-production";

/// `[auth]`: bearer tokens (JWT, HS256).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthSettings {
    /// The HMAC secret of the tokens (`ROOM__AUTH__JWT_SECRET`). Serialized as `null` while it
    /// is the public development secret (which stands for no secret), else redacted.
    #[serde(serialize_with = "jwt_secret")]
    pub jwt_secret: SecretString,
    /// Lifetime of tokens minted by `room-api token`, in seconds.
    pub token_ttl_secs: u64,
    /// When set, tokens must carry this `iss` (`ROOM__AUTH__ISSUER`).
    pub issuer: Option<String>,
    /// When set, tokens must carry this `aud` (`ROOM__AUTH__AUDIENCE`).
    pub audience: Option<String>,
}

impl Default for AuthSettings {
    fn default() -> Self {
        AuthSettings {
            jwt_secret: SecretString::from(DEV_JWT_SECRET),
            token_ttl_secs: 24 * 3600,
            issuer: None,
            audience: None,
        }
    }
}

impl AuthSettings {
    /// Whether the secret is the public development default.
    pub fn uses_dev_secret(&self) -> bool {
        self.jwt_secret.expose_secret() == DEV_JWT_SECRET
    }

    /// The token authority these settings describe.
    pub fn authenticator(&self) -> anyhow::Result<crate::auth::Authenticator> {
        crate::auth::Authenticator::with_claims(
            &self.jwt_secret,
            self.issuer.as_deref(),
            self.audience.as_deref(),
        )
    }
}

/// Serializes the JWT secret without it: `null` for the development secret, else redacted.
fn jwt_secret<S: Serializer>(secret: &SecretString, serializer: S) -> Result<S::Ok, S::Error> {
    if secret.expose_secret() == DEV_JWT_SECRET {
        serializer.serialize_none()
    } else {
        serializer.serialize_some(REDACTED)
    }
}

/// The shortest JWT secret accepted, in bytes: HS256 keys shorter than its 32-byte output can
/// be guessed faster than the hash can be broken.
pub const MIN_JWT_SECRET_BYTES: usize = 32;

/// What `[auth]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "auth",
    about: "The bearer tokens of the API (JWT, HS256).",
    keys: &[
        (
            "jwt_secret",
            "The HS256 secret of the bearer tokens, at least 32 bytes (`openssl rand -base64 32`). \
             Unset, a public development secret is used with a loud warning, and any \
             `ROOM__HTTP__ADDR` but a loopback one stops the start.",
        ),
        (
            "token_ttl_secs",
            "The lifetime of the tokens `room-api token` prints, in seconds.",
        ),
        (
            "issuer",
            "When set, tokens must carry this issuer (`iss`); unset, it is not checked.",
        ),
        (
            "audience",
            "When set, tokens must carry this audience (`aud`); unset, it is not checked.",
        ),
    ],
};

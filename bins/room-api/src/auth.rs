//! Bearer tokens: JWTs signed with HS256. `sub` is the user id, `exp` is required, platform
//! admins carry `"roles":["admin"]`, and an optional `vip` claim gives the user's VIP level.
//!
//! [`Auth`] and [`PlatformAdmin`] are the extractors handlers take.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use axum::extract::{FromRef, FromRequestParts};
use axum::http::header;
use axum::http::request::Parts;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use room_domain::{UserActor, UserId};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;

/// The role that makes a user a platform admin.
pub const ADMIN_ROLE: &str = "admin";

/// The claims of a token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The user id.
    pub sub: String,
    /// Expiry, in seconds since the Unix epoch.
    pub exp: u64,
    /// Roles; `"admin"` makes a platform admin.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
    /// The user's VIP level (0 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vip: Option<u8>,
}

/// Signs and checks tokens with one secret.
pub struct Authenticator {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator").finish_non_exhaustive()
    }
}

impl Authenticator {
    /// An authenticator for HS256 tokens with `secret`.
    pub fn new(secret: &SecretString) -> anyhow::Result<Self> {
        let bytes = secret.expose_secret().as_bytes();
        anyhow::ensure!(!bytes.is_empty(), "the JWT secret must not be empty");
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_required_spec_claims(&["exp", "sub"]);
        validation.validate_exp = true;
        // A token with `nbf` is refused before that time (optional: most tokens have none).
        validation.validate_nbf = true;
        // Clock skew between the issuer and this service, for `exp` and `nbf`.
        validation.leeway = 30;
        Ok(Authenticator {
            encoding: EncodingKey::from_secret(bytes).context("bad JWT secret")?,
            decoding: DecodingKey::from_secret(bytes).context("bad JWT secret")?,
            validation,
        })
    }

    /// A token for `user`, valid for `ttl`.
    pub fn mint(&self, user: &UserId, admin: bool, ttl: Duration) -> anyhow::Result<String> {
        let exp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .saturating_add(ttl)
            .as_secs();
        let claims = Claims {
            sub: user.to_string(),
            exp,
            roles: if admin {
                vec![ADMIN_ROLE.to_owned()]
            } else {
                Vec::new()
            },
            vip: None,
        };
        self.sign(&claims)
    }

    /// Signs arbitrary claims.
    pub fn sign(&self, claims: &Claims) -> anyhow::Result<String> {
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &self.encoding)
            .context("cannot sign the token")
    }

    /// Checks a token and returns who it names.
    pub fn verify(&self, token: &str) -> Result<UserActor, ApiError> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map_err(|error| crate::error::token_refusal(&error))?;
        let claims = data.claims;
        let user_id = UserId::new(&claims.sub)
            .map_err(|error| invalid_token(format!("the token's subject is not valid: {error}")))?;
        Ok(UserActor {
            user_id,
            vip_level: claims.vip.unwrap_or(0),
            platform_admin: claims.roles.iter().any(|role| role == ADMIN_ROLE),
        })
    }
}

fn invalid_token(message: String) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::UNAUTHORIZED,
        "INVALID_TOKEN",
        message,
    )
}

/// Shared handle to the [`Authenticator`].
pub type AuthenticatorRef = Arc<Authenticator>;

/// The signed-in user making the request.
#[derive(Debug, Clone)]
pub struct Auth(pub UserActor);

impl<S> FromRequestParts<S> for Auth
where
    AuthenticatorRef: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let value = parts
            .headers
            .get(header::AUTHORIZATION)
            .ok_or_else(|| ApiError::unauthenticated("missing Authorization: Bearer <token>"))?;
        let value = value
            .to_str()
            .map_err(|_| ApiError::unauthenticated("the Authorization header is not text"))?;
        let token = value
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .filter(|token| !token.is_empty())
            .ok_or_else(|| ApiError::unauthenticated("use Authorization: Bearer <token>"))?;
        let authenticator = AuthenticatorRef::from_ref(state);
        authenticator.verify(token).map(Auth)
    }
}

/// A signed-in platform admin; anyone else is answered 403 `FORBIDDEN`.
#[derive(Debug, Clone)]
pub struct PlatformAdmin(pub UserActor);

impl<S> FromRequestParts<S> for PlatformAdmin
where
    AuthenticatorRef: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Auth(actor) = Auth::from_request_parts(parts, state).await?;
        if !actor.platform_admin {
            return Err(ApiError::forbidden("platform admins only"));
        }
        Ok(PlatformAdmin(actor))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authenticator(secret: &str) -> Authenticator {
        Authenticator::new(&SecretString::from(secret)).unwrap()
    }

    #[test]
    fn minted_tokens_verify() {
        let auth = authenticator("k");
        let alice = UserId::new("alice").unwrap();
        let token = auth.mint(&alice, true, Duration::from_secs(60)).unwrap();
        let actor = auth.verify(&token).unwrap();
        assert_eq!(actor.user_id, alice);
        assert!(actor.platform_admin);
        let token = auth.mint(&alice, false, Duration::from_secs(60)).unwrap();
        assert!(!auth.verify(&token).unwrap().platform_admin);
    }

    #[test]
    fn bad_tokens_are_refused_with_stable_codes() {
        let auth = authenticator("k");
        let alice = UserId::new("alice").unwrap();
        let other = authenticator("other")
            .mint(&alice, false, Duration::from_secs(60))
            .unwrap();
        assert_eq!(auth.verify(&other).unwrap_err().code, "INVALID_TOKEN");
        assert_eq!(auth.verify("garbage").unwrap_err().code, "INVALID_TOKEN");
        let expired = auth
            .sign(&Claims {
                sub: "alice".into(),
                exp: 1_000,
                roles: vec![],
                vip: None,
            })
            .unwrap();
        assert_eq!(auth.verify(&expired).unwrap_err().code, "TOKEN_EXPIRED");
        let long_sub = auth
            .sign(&Claims {
                sub: "x".repeat(65),
                exp: u64::MAX / 2,
                roles: vec![],
                vip: Some(3),
            })
            .unwrap();
        assert_eq!(auth.verify(&long_sub).unwrap_err().code, "INVALID_TOKEN");
    }

    #[test]
    fn tokens_not_valid_yet_are_refused() {
        #[derive(Serialize)]
        struct WithNbf {
            sub: &'static str,
            exp: u64,
            nbf: u64,
        }
        let secret = EncodingKey::from_secret(b"k").unwrap();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let token = |nbf| {
            let claims = WithNbf {
                sub: "a",
                exp: now + 3_600,
                nbf,
            };
            jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &secret).unwrap()
        };
        let auth = authenticator("k");
        assert_eq!(
            auth.verify(&token(now + 600)).unwrap_err().code,
            "INVALID_TOKEN"
        );
        assert!(auth.verify(&token(now - 5)).is_ok());
    }

    #[test]
    fn tokens_without_exp_are_refused() {
        #[derive(Serialize)]
        struct NoExp {
            sub: &'static str,
        }
        let secret = EncodingKey::from_secret(b"k").unwrap();
        let token =
            jsonwebtoken::encode(&Header::new(Algorithm::HS256), &NoExp { sub: "a" }, &secret)
                .unwrap();
        assert_eq!(
            authenticator("k").verify(&token).unwrap_err().code,
            "INVALID_TOKEN"
        );
    }
}

//! Bearer tokens: JWTs signed with HS256. `sub` is the user id, `exp` is required, platform
//! admins carry `"roles":["admin"]`. A `vip` claim, which older issuers wrote, is ignored: the
//! service keeps VIP levels itself (`/v1/admin/users/{user_id}/vip`).
//! When the service is configured with an issuer or an audience, tokens must carry that `iss`
//! or `aud`.
//!
//! [`Auth`] and [`PlatformAdmin`] are the extractors handlers take.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use axum::extract::{FromRef, FromRequestParts};
use axum::http::header;
use axum::http::request::Parts;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use room_domain::{UserActor, UserId};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use crate::error::{ApiCode, ApiError};

/// The role that makes a user a platform admin.
pub const ADMIN_ROLE: &str = "admin";

/// The claims of a token.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The user id.
    pub sub: String,
    /// Expiry, in seconds since the Unix epoch.
    pub exp: u64,
    /// Roles; `"admin"` makes a platform admin.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
    /// The issuer; checked when the service is configured with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iss: Option<String>,
    /// The audience, one or several; checked when the service is configured with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aud: Option<Audience>,
}

/// A token's `aud`: one audience or a list of them, as issuers write it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Audience {
    /// `"aud": "rooms"`.
    One(String),
    /// `"aud": ["rooms", "chat"]`.
    Many(Vec<String>),
}

/// Signs and checks tokens with one secret.
pub struct Authenticator {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    issuer: Option<String>,
    audience: Option<String>,
    /// Subjects with this prefix are refused: robots act through the orchestrator only.
    robot_prefix: Option<String>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator").finish_non_exhaustive()
    }
}

impl Authenticator {
    /// An authenticator for HS256 tokens with `secret`, checking no issuer or audience.
    pub fn new(secret: &SecretString) -> anyhow::Result<Self> {
        Self::with_claims(secret, None, None)
    }

    /// An authenticator for HS256 tokens with `secret`; tokens must carry `iss` = `issuer`
    /// and `aud` = `audience` when those are given, and minted tokens carry them.
    pub fn with_claims(
        secret: &SecretString,
        issuer: Option<&str>,
        audience: Option<&str>,
    ) -> anyhow::Result<Self> {
        let bytes = secret.expose_secret().as_bytes();
        anyhow::ensure!(!bytes.is_empty(), "the JWT secret must not be empty");
        let mut validation = Validation::new(Algorithm::HS256);
        let mut required = vec!["exp", "sub"];
        if let Some(issuer) = issuer {
            validation.set_issuer(&[issuer]);
            required.push("iss");
        }
        // Without a configured audience a token's `aud` is not looked at; with one, it must
        // match.
        validation.validate_aud = audience.is_some();
        if let Some(audience) = audience {
            validation.set_audience(&[audience]);
            required.push("aud");
        }
        validation.set_required_spec_claims(&required);
        validation.validate_exp = true;
        // A token with `nbf` is refused before that time (optional: most tokens have none).
        validation.validate_nbf = true;
        // Clock skew between the issuer and this service, for `exp` and `nbf`.
        validation.leeway = 30;
        Ok(Authenticator {
            encoding: EncodingKey::from_secret(bytes).context("bad JWT secret")?,
            decoding: DecodingKey::from_secret(bytes).context("bad JWT secret")?,
            validation,
            issuer: issuer.map(str::to_owned),
            audience: audience.map(str::to_owned),
            robot_prefix: None,
        })
    }

    /// This authenticator, refusing every token whose subject starts with `prefix` (the
    /// robots' ids, `robots.id_prefix`) with 401 `INVALID_TOKEN`: nobody signs in as a robot.
    pub fn refusing_robots(mut self, prefix: &str) -> Self {
        self.robot_prefix = (!prefix.is_empty()).then(|| prefix.to_owned());
        self
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
            iss: self.issuer.clone(),
            aud: self.audience.clone().map(Audience::One),
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
            .map_err(|error| match error.kind() {
                ErrorKind::ExpiredSignature => {
                    ApiError::of(ApiCode::TokenExpired, "the token has expired")
                }
                kind => invalid_token(token_problem(kind)),
            })?;
        let claims = data.claims;
        // A subject that breaks the id rule (an invisible or bidirectional character, a `/`)
        // could pose as another user: refused like any other bad token.
        let user_id = UserId::new(&claims.sub)
            .map_err(|error| invalid_token(format!("the token's subject is not valid: {error}")))?;
        if let Some(prefix) = &self.robot_prefix
            && user_id.as_str().starts_with(prefix.as_str())
        {
            return Err(invalid_token(format!(
                "the token's subject has the robots' id prefix {prefix:?}: robots do not sign in"
            )));
        }
        Ok(UserActor {
            user_id,
            // The room service looks the level up where it counts (a join, a kick, a mute).
            vip_level: 0,
            platform_admin: claims.roles.iter().any(|role| role == ADMIN_ROLE),
        })
    }
}

/// What is wrong with a token, in the token's own terms (never the JWT library's wording).
fn token_problem(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::InvalidSignature => "the token's signature does not match".into(),
        ErrorKind::InvalidAlgorithm
        | ErrorKind::InvalidAlgorithmName
        | ErrorKind::UnsupportedAlgorithm
        | ErrorKind::MissingAlgorithm => "the token must be signed with HS256".into(),
        ErrorKind::InvalidClaimFormat(claim) => format!("the token's `{claim}` claim is not valid"),
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".into(),
        ErrorKind::InvalidIssuer => "the token's issuer (iss) is not accepted".into(),
        ErrorKind::InvalidAudience => "the token's audience (aud) is not accepted".into(),
        ErrorKind::MissingRequiredClaim(claim) => format!("the token has no `{claim}` claim"),
        ErrorKind::InvalidSubject => "the token's subject (sub) is not valid".into(),
        ErrorKind::Json(_) | ErrorKind::Utf8(_) => {
            "the token's header or claims are not the expected JSON (an HS256 JWT with a \
             string `sub` and a numeric `exp`)"
                .into()
        }
        _ => "the token is not a well-formed JWT (header.claims.signature, base64url)".into(),
    }
}

fn invalid_token(message: String) -> ApiError {
    ApiError::of(ApiCode::InvalidToken, message)
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

    /// Verifies the bearer token once per request: the rate limit, which runs before the
    /// handler, verifies it first, and the handler's extractor finds the result in the
    /// request's extensions (which only the server sets).
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        if let Some(auth) = parts.extensions.get::<Auth>() {
            return Ok(auth.clone());
        }
        let token = bearer_token(parts)?;
        let authenticator = AuthenticatorRef::from_ref(state);
        let auth = authenticator.verify(token).map(Auth)?;
        parts.extensions.insert(auth.clone());
        Ok(auth)
    }
}

/// The token of the request's `Authorization: Bearer <token>` header; 401 `UNAUTHENTICATED`
/// when there is none.
pub fn bearer_token(parts: &Parts) -> Result<&str, ApiError> {
    let value = parts
        .headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| ApiError::unauthenticated("missing Authorization: Bearer <token>"))?;
    let value = value
        .to_str()
        .map_err(|_| ApiError::unauthenticated("the Authorization header is not text"))?;
    value
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
        .filter(|token| !token.is_empty())
        .ok_or_else(|| ApiError::unauthenticated("use Authorization: Bearer <token>"))
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
    fn a_vip_claim_of_an_older_issuer_is_accepted_and_ignored() {
        let auth = authenticator("k");
        let token = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &serde_json::json!({ "sub": "vera", "exp": u64::MAX / 2, "vip": 9 }),
            &EncodingKey::from_secret(b"k").unwrap(),
        )
        .unwrap();
        let actor = auth.verify(&token).unwrap();
        assert_eq!(actor.user_id.as_str(), "vera");
        assert_eq!(
            actor.vip_level, 0,
            "the service, not the token, keeps VIP levels"
        );
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

    #[tokio::test]
    async fn a_request_s_token_is_verified_once() {
        let auth: AuthenticatorRef = Arc::new(authenticator("k"));
        let alice = UserId::new("alice").unwrap();
        let token = auth.mint(&alice, false, Duration::from_secs(60)).unwrap();
        let request = axum::http::Request::get("/v1/me/wallet")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .body(())
            .unwrap();
        let (mut parts, ()) = request.into_parts();
        let Auth(first) = Auth::from_request_parts(&mut parts, &auth).await.unwrap();
        assert_eq!(first.user_id, alice);
        // The second extraction of the same request takes the first one's result: a token
        // that no longer verifies is not read again.
        parts.headers.insert(
            header::AUTHORIZATION,
            axum::http::HeaderValue::from_static("Bearer garbage"),
        );
        let Auth(again) = Auth::from_request_parts(&mut parts, &auth).await.unwrap();
        assert_eq!(again.user_id, alice);
        // Another request verifies its own.
        let request = axum::http::Request::get("/v1/me/wallet")
            .header(header::AUTHORIZATION, "Bearer garbage")
            .body(())
            .unwrap();
        let (mut parts, ()) = request.into_parts();
        let refused = Auth::from_request_parts(&mut parts, &auth)
            .await
            .unwrap_err();
        assert_eq!(refused.code, ApiCode::InvalidToken);
    }

    #[test]
    fn bad_tokens_are_refused_with_stable_codes() {
        let auth = authenticator("k");
        let alice = UserId::new("alice").unwrap();
        let other = authenticator("other")
            .mint(&alice, false, Duration::from_secs(60))
            .unwrap();
        assert_eq!(auth.verify(&other).unwrap_err().code, ApiCode::InvalidToken);
        assert_eq!(
            auth.verify("garbage").unwrap_err().code,
            ApiCode::InvalidToken
        );
        let expired = auth
            .sign(&Claims {
                sub: "alice".into(),
                exp: 1_000,
                roles: vec![],
                iss: None,
                aud: None,
            })
            .unwrap();
        assert_eq!(
            auth.verify(&expired).unwrap_err().code,
            ApiCode::TokenExpired
        );
        let long_sub = auth
            .sign(&Claims {
                sub: "x".repeat(65),
                exp: u64::MAX / 2,
                roles: vec![],
                iss: None,
                aud: None,
            })
            .unwrap();
        assert_eq!(
            auth.verify(&long_sub).unwrap_err().code,
            ApiCode::InvalidToken
        );
        for sub in ["ali\u{200B}ce", "\u{202E}nimda", "a/b", "a\u{2066}b"] {
            let token = auth
                .sign(&Claims {
                    sub: sub.into(),
                    exp: u64::MAX / 2,
                    roles: vec![],
                    iss: None,
                    aud: None,
                })
                .unwrap();
            let error = auth.verify(&token).unwrap_err();
            assert_eq!(
                (error.status.as_u16(), error.code),
                (401, ApiCode::InvalidToken),
                "{sub:?}"
            );
        }
    }

    #[test]
    fn messages_speak_of_the_token_not_the_library() {
        use base64::Engine;
        let auth = authenticator("k");
        // A header naming an algorithm the library does not know ("none").
        let header = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"alg":"none","typ":"JWT"}"#);
        let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"sub":"a","exp":99999999999}"#);
        for token in [format!("{header}.{claims}."), "garbage".to_owned()] {
            let error = auth.verify(&token).unwrap_err();
            assert_eq!(error.code, ApiCode::InvalidToken);
            for internal in ["variant", "expected one of", "Error(", "InvalidToken"] {
                assert!(!error.message.contains(internal), "{}", error.message);
            }
        }
        let other = authenticator("other")
            .mint(&UserId::new("a").unwrap(), false, Duration::from_secs(60))
            .unwrap();
        assert_eq!(
            auth.verify(&other).unwrap_err().message,
            "the token's signature does not match"
        );
    }

    #[test]
    fn issuer_and_audience_are_checked_when_configured() {
        let secret = SecretString::from("k");
        let strict =
            Authenticator::with_claims(&secret, Some("https://id.example"), Some("rooms")).unwrap();
        let alice = UserId::new("alice").unwrap();
        let good = strict.mint(&alice, false, Duration::from_secs(60)).unwrap();
        assert_eq!(strict.verify(&good).unwrap().user_id, alice);
        // A token of the same secret without `iss`/`aud`, or with other values, is refused.
        let plain = authenticator("k")
            .mint(&alice, false, Duration::from_secs(60))
            .unwrap();
        assert_eq!(
            strict.verify(&plain).unwrap_err().code,
            ApiCode::InvalidToken
        );
        let other = Authenticator::with_claims(&secret, Some("https://other"), Some("rooms"))
            .unwrap()
            .mint(&alice, false, Duration::from_secs(60))
            .unwrap();
        let error = strict.verify(&other).unwrap_err();
        assert_eq!(error.message, "the token's issuer (iss) is not accepted");
        let other = Authenticator::with_claims(&secret, Some("https://id.example"), Some("else"))
            .unwrap()
            .mint(&alice, false, Duration::from_secs(60))
            .unwrap();
        let error = strict.verify(&other).unwrap_err();
        assert_eq!(error.message, "the token's audience (aud) is not accepted");
        // Without configuration, `iss` and `aud` are not looked at.
        assert!(authenticator("k").verify(&good).is_ok());
        // An `aud` list passes when it names the audience, and is no obstacle without one.
        let listed = |aud: &[&str]| {
            strict
                .sign(&Claims {
                    sub: "alice".into(),
                    exp: u64::MAX / 2,
                    iss: Some("https://id.example".into()),
                    aud: Some(Audience::Many(
                        aud.iter().map(|a| (*a).to_owned()).collect(),
                    )),
                    ..Claims::default()
                })
                .unwrap()
        };
        assert!(strict.verify(&listed(&["chat", "rooms"])).is_ok());
        assert!(strict.verify(&listed(&["chat"])).is_err());
        assert!(authenticator("k").verify(&listed(&["chat"])).is_ok());
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
            ApiCode::InvalidToken
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
            ApiCode::InvalidToken
        );
    }
}

//! Extractors that answer bad input with [`ApiError`]s in the API's error shape instead of
//! axum's plain-text rejections, and the validation of ids taken from paths and bodies.

use axum::Json;
use axum::body::Bytes;
use axum::extract::path::ErrorKind;
use axum::extract::rejection::{BytesRejection, JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use serde::de::DeserializeOwned;

use crate::error::{ApiCode, ApiError};

/// A JSON body; rejections become `MALFORMED_JSON`, `INVALID_BODY`, `PAYLOAD_TOO_LARGE` or
/// `UNSUPPORTED_MEDIA_TYPE`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if !req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(is_json_content_type)
        {
            return Err(ApiError::from_status(StatusCode::UNSUPPORTED_MEDIA_TYPE));
        }
        let bytes = read_body(req, state).await?;
        let value = Json::<T>::from_bytes(&bytes)
            .map(|Json(value)| ApiJson(value))
            .map_err(json_rejection)?;
        refuse_array(&bytes)?;
        Ok(value)
    }
}

/// Every body is a JSON object; serde would also read a struct from an array of its fields in
/// order (`[null, null]`), which no schema of the API allows.
fn refuse_array(bytes: &[u8]) -> Result<(), ApiError> {
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return Err(ApiError::of(
            ApiCode::InvalidBody,
            "the body does not fit this request: a JSON object is expected, not an array",
        ));
    }
    Ok(())
}

/// How long a request's body may take to arrive, put in the request's extensions by the
/// router: half the request timeout, so that a client that stops sending in the middle of
/// its body gets 408 `BODY_TIMEOUT` (its own doing, not worth a retry) before the request
/// timeout's retryable 503.
#[derive(Debug, Clone, Copy)]
pub struct BodyDeadline(pub std::time::Duration);

/// Without a [`BodyDeadline`] in the request (a router built without one).
const DEFAULT_BODY_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

/// The whole body, within the request's [`BodyDeadline`].
async fn read_body<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    let deadline = req
        .extensions()
        .get::<BodyDeadline>()
        .map_or(DEFAULT_BODY_DEADLINE, |deadline| deadline.0);
    match tokio::time::timeout(deadline, Bytes::from_request(req, state)).await {
        Ok(bytes) => bytes.map_err(bytes_rejection),
        Err(_) => Err(ApiError::of(
            ApiCode::BodyTimeout,
            format!(
                "the request body did not arrive within {} ms",
                deadline.as_millis()
            ),
        )),
    }
}

/// A JSON body that may be left out entirely, or sent as `null` (then `T::default()`).
#[derive(Debug, Clone, Copy, Default)]
pub struct OptionalJson<T>(pub T);

impl<S, T> FromRequest<S> for OptionalJson<T>
where
    T: DeserializeOwned + Default,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let json_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(is_json_content_type);
        let bytes = read_body(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJson(T::default()));
        }
        if json_type != Some(true) {
            return Err(ApiError::from_status(StatusCode::UNSUPPORTED_MEDIA_TYPE));
        }
        // JSON `null` is the same as no body.
        let value = Json::<Option<T>>::from_bytes(&bytes)
            .map(|Json(value)| OptionalJson(value.unwrap_or_default()))
            .map_err(json_rejection)?;
        refuse_array(&bytes)?;
        Ok(value)
    }
}

fn is_json_content_type(value: &str) -> bool {
    let mime = value.split(';').next().unwrap_or("").trim();
    mime.eq_ignore_ascii_case("application/json")
        || (mime.starts_with("application/") && mime.ends_with("+json"))
}

/// Path parameters; a parameter of the wrong type becomes `INVALID_PATH`.
#[derive(Debug, Clone, Copy)]
pub struct ApiPath<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(value)| ApiPath(value))
            .map_err(path_rejection)
    }
}

/// Query parameters; a bad one becomes `INVALID_QUERY`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(value)| ApiQuery(value))
            .map_err(query_rejection)
    }
}

/// A path that does not fit its route's parameters, said in the path's terms.
fn path_rejection(rejection: PathRejection) -> ApiError {
    let message = match &rejection {
        PathRejection::FailedToDeserializePathParams(error) => match error.kind() {
            ErrorKind::InvalidUtf8InPathParam { key } => {
                format!("path parameter `{key}` is not valid UTF-8 once percent-decoded")
            }
            ErrorKind::ParseErrorAtKey { key, value, .. }
            | ErrorKind::DeserializeError { key, value, .. } => {
                format!("path parameter `{key}`: {value:?} is not valid")
            }
            ErrorKind::ParseErrorAtIndex { value, .. } | ErrorKind::ParseError { value, .. } => {
                format!("path parameter {value:?} is not valid")
            }
            _ => "the path does not fit this route".to_owned(),
        },
        _ => "the path does not fit this route".to_owned(),
    };
    ApiError::of(ApiCode::InvalidPath, message)
}

/// A query string that does not fit its route's parameters, said in the query's terms.
fn query_rejection(rejection: QueryRejection) -> ApiError {
    let text = rejection.body_text();
    let detail = text
        .strip_prefix("Failed to deserialize query string: ")
        .unwrap_or("it does not fit this route");
    ApiError::of(
        ApiCode::InvalidQuery,
        format!("the query string is not valid: {}", plain_terms(detail)),
    )
}

/// Maps axum's JSON rejections to API errors.
pub fn json_rejection(rejection: JsonRejection) -> ApiError {
    match rejection {
        JsonRejection::JsonSyntaxError(error) => {
            let text = error.body_text();
            let detail = text
                .strip_prefix("Failed to parse the request body as JSON: ")
                .unwrap_or(&text);
            ApiError::of(
                ApiCode::MalformedJson,
                format!("the body is not valid JSON: {}", plain_terms(detail)),
            )
        }
        JsonRejection::JsonDataError(error) => {
            let text = error.body_text();
            let detail = text
                .strip_prefix("Failed to deserialize the JSON body into the target type: ")
                .unwrap_or(&text);
            ApiError::of(
                ApiCode::InvalidBody,
                format!(
                    "the body does not fit this request: {}",
                    plain_terms(detail)
                ),
            )
        }
        JsonRejection::MissingJsonContentType(_) => {
            ApiError::from_status(StatusCode::UNSUPPORTED_MEDIA_TYPE)
        }
        JsonRejection::BytesRejection(error) => bytes_rejection(error),
        _ => ApiError::of(ApiCode::InvalidBody, "the body cannot be read as JSON"),
    }
}

/// Says a deserializer's complaint in JSON's terms instead of the server's Rust types:
/// "expected struct SendGiftRequest" becomes "expected a JSON object", "expected u32"
/// "expected a whole number from 0 to 4294967295", and so on. Field names, positions and the
/// offending values stay: they are the request's own.
pub fn plain_terms(message: &str) -> String {
    const INTEGERS: [(&str, &str); 8] = [
        ("u8", "a whole number from 0 to 255"),
        ("u16", "a whole number from 0 to 65535"),
        ("u32", "a whole number from 0 to 4294967295"),
        ("u64", "a whole number from 0 to 18446744073709551615"),
        ("i8", "a whole number from -128 to 127"),
        ("i16", "a whole number from -32768 to 32767"),
        ("i32", "a whole number from -2147483648 to 2147483647"),
        (
            "i64",
            "a whole number from -9223372036854775808 to 9223372036854775807",
        ),
    ];
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("expected ") {
        let (before, after) = rest.split_at(at + "expected ".len());
        out.push_str(before);
        let word_end = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let word = &after[..word_end];
        let replacement = match word {
            "struct" | "map" => {
                // `struct Name`: skip the type's name as well.
                let tail = &after[word_end..];
                let name_end =
                    tail.strip_prefix(' ')
                        .filter(|_| word == "struct")
                        .map_or(0, |name| {
                            1 + name
                                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                                .unwrap_or(name.len())
                        });
                rest = &tail[name_end..];
                out.push_str("a JSON object");
                continue;
            }
            "enum" => {
                let tail = &after[word_end..];
                let name_end = tail.strip_prefix(' ').map_or(0, |name| {
                    1 + name
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(name.len())
                });
                rest = &tail[name_end..];
                out.push_str("one of the listed names");
                continue;
            }
            "f32" | "f64" => Some("a number"),
            "a" if after.starts_with("a sequence") => {
                rest = &after["a sequence".len()..];
                out.push_str("a JSON array");
                continue;
            }
            other => INTEGERS
                .iter()
                .find(|(name, _)| *name == other)
                .map(|(_, plain)| *plain),
        };
        match replacement {
            Some(plain) => {
                out.push_str(plain);
                rest = &after[word_end..];
            }
            None => rest = after,
        }
    }
    out.push_str(rest);
    out
}

/// Maps a failure to read the body (too large, broken connection) to an API error.
pub fn bytes_rejection(rejection: BytesRejection) -> ApiError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::from_status(StatusCode::PAYLOAD_TOO_LARGE)
    } else {
        ApiError::of(ApiCode::InvalidBody, "the request body could not be read")
    }
}

/// Validates an id from a path or body: 1 to 64 characters, no whitespace or control
/// characters. A bad one becomes `INVALID_ID`.
pub fn parse_id<T>(field: &str, value: &str) -> Result<T, ApiError>
where
    T: for<'a> TryFrom<&'a str, Error = room_domain::IdError>,
{
    T::try_from(value)
        .map_err(|error| ApiError::of(ApiCode::InvalidId, format!("{field}: {error}")))
}

/// The `Idempotency-Key` header of a mutating request, scoped to the route it came on
/// (method and path template). Absent, the request runs under fresh ids; a key that is not 1
/// to 64 printable ASCII characters becomes 400 `INVALID_IDEMPOTENCY_KEY`.
#[derive(Debug, Clone, Default)]
pub struct IdempotencyKey(pub Option<room_app::IdempotencyKey>);

/// The header an [`IdempotencyKey`] comes in.
pub const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";

impl<S> FromRequestParts<S> for IdempotencyKey
where
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let mut values = parts.headers.get_all(IDEMPOTENCY_KEY_HEADER).iter();
        let Some(value) = values.next() else {
            return Ok(IdempotencyKey(None));
        };
        let invalid = || {
            ApiError::of(
                ApiCode::InvalidIdempotencyKey,
                format!(
                    "Idempotency-Key: one header of 1 to {} printable ASCII characters",
                    room_app::MAX_IDEMPOTENCY_KEY_CHARS
                ),
            )
        };
        if values.next().is_some() {
            return Err(invalid());
        }
        let key = value.to_str().map_err(|_| invalid())?;
        let path = parts
            .extensions
            .get::<axum::extract::MatchedPath>()
            .map_or_else(|| parts.uri.path(), |path| path.as_str());
        let route = format!("{} {path}", parts.method);
        room_app::IdempotencyKey::new(route, key)
            .map(|key| IdempotencyKey(Some(key)))
            .map_err(|_| invalid())
    }
}

impl IdempotencyKey {
    /// The key, if the request has one.
    pub fn get(&self) -> Option<&room_app::IdempotencyKey> {
        self.0.as_ref()
    }
}

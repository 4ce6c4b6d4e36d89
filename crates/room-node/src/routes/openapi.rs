//! The shared parts of the OpenAPI document: the reusable error responses
//! (`components.responses`) and the statuses every operation of a kind can answer, added to
//! each operation after the routes are collected, so that no route can forget one.
//!
//! What each route answers by its own logic (403, 404, 409, 422, a 400 with route-specific
//! codes) stays in its `#[utoipa::path]` attribute; what the layers and extractors answer for
//! every route is added here:
//!
//! - every operation: 503 (`TIMEOUT` from the request timeout, `UNAVAILABLE`, `NOT_OWNER`,
//!   `SHUTTING_DOWN`);
//! - an authenticated operation: 401 (missing or bad token) and 429 (`ROOM_OVERLOADED` and
//!   other limits, with `Retry-After`);
//! - an authenticated operation with a JSON body: 400 (`MALFORMED_JSON`, `INVALID_BODY`), 408
//!   (`BODY_TIMEOUT`), 413 (`PAYLOAD_TOO_LARGE`) and 415 (`UNSUPPORTED_MEDIA_TYPE`). The one
//!   unauthenticated route with a body, the TRTC webhook, reads raw bytes and documents its
//!   own statuses;
//! - an operation with path or query parameters: 400 (`INVALID_ID`, `INVALID_PATH`,
//!   `INVALID_QUERY`, ...).
//!
//! A status the route documents itself is left as the route wrote it.

use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::{Operation, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, Response, ResponseBuilder};

/// A reusable error response: its name in `components.responses`, its status, and what it
/// says.
struct Reusable {
    name: &'static str,
    status: &'static str,
    description: &'static str,
    retry_after: bool,
}

const BAD_REQUEST: Reusable = Reusable {
    name: "BadRequest",
    status: "400",
    description: "Bad input: `INVALID_ID` (an id that breaks the id rule: 1 to 64 printable \
        characters of the Basic Multilingual Plane, no whitespace, control, format, \
        bidirectional or invisible character, no `/`), `INVALID_PATH`, `INVALID_QUERY`, \
        `INVALID_IDEMPOTENCY_KEY`, \
        `MALFORMED_JSON` (the body is not JSON), `INVALID_BODY` (JSON of the wrong shape: a \
        missing or unknown field, a value of the wrong type or out of its type's range), or a \
        code of the route's own",
    retry_after: false,
};
const UNAUTHORIZED: Reusable = Reusable {
    name: "Unauthorized",
    status: "401",
    description: "`UNAUTHENTICATED` (no `Authorization: Bearer <token>`), `INVALID_TOKEN` \
        (not a token of this service, or not valid yet) or `TOKEN_EXPIRED`. Answered with \
        `WWW-Authenticate: Bearer`",
    retry_after: false,
};
const METHOD_NOT_ALLOWED: Reusable = Reusable {
    name: "MethodNotAllowed",
    status: "405",
    description: "`METHOD_NOT_ALLOWED`: the path exists but does not take this method",
    retry_after: false,
};
const REQUEST_TIMEOUT: Reusable = Reusable {
    name: "RequestTimeout",
    status: "408",
    description: "`BODY_TIMEOUT`: the request body stopped arriving (half the request timeout)",
    retry_after: false,
};
const PAYLOAD_TOO_LARGE: Reusable = Reusable {
    name: "PayloadTooLarge",
    status: "413",
    description: "`PAYLOAD_TOO_LARGE`: the request body is larger than 64 KiB",
    retry_after: false,
};
const UNSUPPORTED_MEDIA_TYPE: Reusable = Reusable {
    name: "UnsupportedMediaType",
    status: "415",
    description: "`UNSUPPORTED_MEDIA_TYPE`: the body is not sent as `application/json`",
    retry_after: false,
};
const TOO_MANY_REQUESTS: Reusable = Reusable {
    name: "TooManyRequests",
    status: "429",
    description: "Too many requests, `retryable: true`: `ROOM_OVERLOADED` (the room's queue \
        is full), `RATE_LIMITED` (the caller's rate limit of this kind of request), \
        `TOO_MANY_STREAMS`, `ORDER_IN_PROGRESS` or `TOO_MANY_ATTEMPTS`; retry after \
        `Retry-After` seconds with the same ids",
    retry_after: true,
};
const UNAVAILABLE: Reusable = Reusable {
    name: "Unavailable",
    status: "503",
    description: "Not answered now, `retryable: true`: `TIMEOUT` (the request took longer \
        than the request timeout; it may still have been applied), `UNAVAILABLE` (a backend is \
        down), `NOT_OWNER` (the room is moving) or `SHUTTING_DOWN`; retry after `Retry-After` \
        seconds with the same ids",
    retry_after: true,
};

/// Every reusable response, in `components.responses`.
const REUSABLE: [&Reusable; 8] = [
    &BAD_REQUEST,
    &UNAUTHORIZED,
    &METHOD_NOT_ALLOWED,
    &REQUEST_TIMEOUT,
    &PAYLOAD_TOO_LARGE,
    &UNSUPPORTED_MEDIA_TYPE,
    &TOO_MANY_REQUESTS,
    &UNAVAILABLE,
];

impl Reusable {
    fn response(&self) -> Response {
        let mut response = ResponseBuilder::new()
            .description(self.description)
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("ErrorResponse")))
                    .build(),
            );
        if self.retry_after {
            response = response.header(
                "Retry-After",
                HeaderBuilder::new()
                    .schema(Some(
                        ObjectBuilder::new()
                            .schema_type(Type::Integer)
                            .minimum(Some(0)),
                    ))
                    .description(Some("Seconds to wait before retrying"))
                    .build(),
            );
        }
        response.build()
    }
}

/// Adds the reusable responses and each operation's common statuses to `document`.
pub(super) fn complete(document: &mut OpenApi) {
    let components = document.components.get_or_insert_with(Default::default);
    for reusable in REUSABLE {
        components
            .responses
            .insert(reusable.name.to_owned(), RefOr::T(reusable.response()));
    }
    for (path, item) in document.paths.paths.iter_mut() {
        let writes = [
            ("put", &mut item.put),
            ("post", &mut item.post),
            ("delete", &mut item.delete),
            ("patch", &mut item.patch),
        ];
        for (method, operation) in writes {
            if let Some(operation) = operation {
                let key_use = OWN_KEYS
                    .iter()
                    .find(|(m, route, _)| *m == method && route == path)
                    .map(|(_, _, key_use)| key_use);
                add_idempotency_key(operation, key_use);
                let keyed = match key_use {
                    None => Some("422"),
                    Some(KeyUse::Text(_)) => Some("409"),
                    Some(KeyUse::Own(_)) => None,
                };
                if let Some(reused) = keyed
                    && operation
                        .security
                        .as_ref()
                        .is_some_and(|requirements| !requirements.is_empty())
                {
                    add_key_statuses(operation, reused);
                }
            }
        }
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ];
        for operation in operations.into_iter().flatten() {
            complete_operation(operation);
        }
        if path == "/v1/rooms/{room_id}/events"
            && let Some(operation) = item.get.as_mut()
        {
            add_last_event_id(operation);
        }
    }
}

/// The event stream's `Last-Event-ID` header: optional, any text; a seq from 0 to `i64::MAX`
/// in digits names the last event seen, anything else opens a fresh stream.
fn add_last_event_id(operation: &mut Operation) {
    let parameter = ParameterBuilder::new()
        .name("Last-Event-ID")
        .parameter_in(ParameterIn::Header)
        .required(utoipa::openapi::Required::False)
        .description(Some(
            "The `seq` of the last event a reconnecting watcher got, in ASCII digits (0 to \
             2^63-1): the events after it are sent first, or `resync` when more than the \
             configured bound were missed. Any other value (a sign, a fraction, letters) names \
             no event: the stream opens afresh, as without the header",
        ))
        .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
        .build();
    operation
        .parameters
        .get_or_insert_with(Vec::new)
        .push(RefOr::T(parameter));
}

/// How a mutating route uses its `Idempotency-Key` header, where that is not the default
/// [`add_idempotency_key`] describes.
enum KeyUse {
    /// Checked only: the route is idempotent by what this names.
    Own(&'static str),
    /// The route's own account of what the key does.
    Text(&'static str),
}

/// The mutating routes (method and path template) that use their `Idempotency-Key` their own
/// way: most are idempotent by an id of their own and check the header only.
const OWN_KEYS: [(&str, &str, KeyUse); 15] = [
    (
        "post",
        "/v1/rooms/{room_id}/gifts",
        KeyUse::Own("the body's `order_id`"),
    ),
    (
        "post",
        "/v1/admin/wallets/{user_id}/credit",
        KeyUse::Own("the body's `op_id`"),
    ),
    (
        "put",
        "/v1/admin/gifts/{gift_id}",
        KeyUse::Own("the gift id (a `PUT` of the same gift)"),
    ),
    (
        "put",
        "/v1/admin/users/{user_id}",
        KeyUse::Own("its body (a `PUT` of the same fields writes the same profile)"),
    ),
    (
        "put",
        "/v1/admin/users",
        KeyUse::Own("its body (a repeat of the batch writes the same profiles)"),
    ),
    (
        "put",
        "/v1/admin/users/{user_id}/vip",
        KeyUse::Own("its body (a `PUT` of the same grant writes the same grant)"),
    ),
    (
        "delete",
        "/v1/admin/users/{user_id}/vip",
        KeyUse::Own("nature (revoking a grant that is gone answers the same)"),
    ),
    (
        "put",
        "/v1/admin/vip-levels",
        KeyUse::Own("the body's `expected_version` (a repeat answers 409 `VIP_LEVELS_STALE`)"),
    ),
    (
        "patch",
        "/v1/me/profile",
        KeyUse::Own("its body (a repeat of the change writes the same profile)"),
    ),
    (
        "put",
        "/v1/rooms/{room_id}/follow",
        KeyUse::Own("nature (following twice counts once)"),
    ),
    (
        "delete",
        "/v1/rooms/{room_id}/follow",
        KeyUse::Own("nature (unfollowing a room not followed answers the same)"),
    ),
    (
        "post",
        "/v1/rooms/{room_id}/heartbeat",
        KeyUse::Own("nature (a heartbeat repeats harmlessly)"),
    ),
    (
        "post",
        "/v1/admin/robot-rooms",
        KeyUse::Text(
            "The key is the calling admin's: the same request with it gets the first answer \
             again (`Idempotency-Replayed: true`); another request with it is 409 \
             `ROBOT_ROOM_EXISTS`, and nothing is written; while the first runs, 409 \
             `IDEMPOTENCY_KEY_IN_USE` (retryable). Beneath that record (kept \
             `ROOM__HTTP__IDEMPOTENCY_RETENTION_SECS`), the key names the room, and without \
             the header the request's content does. A key or content whose room was closed \
             answers 409 `ROBOT_ROOM_EXISTS`: send a new key for a new room",
        ),
    ),
    (
        "patch",
        "/v1/admin/robot-rooms/{room_id}",
        KeyUse::Own(
            "its body (a change already in effect answers 200 with the configuration, \
             whatever `version` says)",
        ),
    ),
    (
        "delete",
        "/v1/admin/robot-rooms/{room_id}",
        KeyUse::Own("nature (a repeat answers 404 `ROBOT_ROOM_NOT_FOUND`)"),
    ),
];

/// Every mutating route of a signed-in user takes an `Idempotency-Key` header: a repeat of the
/// same key by the same user on the same route gets the first answer. The routes of
/// [`OWN_KEYS`] use the header their own way, and say how.
fn add_idempotency_key(operation: &mut Operation, key_use: Option<&KeyUse>) {
    let authenticated = operation
        .security
        .as_ref()
        .is_some_and(|requirements| !requirements.is_empty());
    if !authenticated {
        return;
    }
    const CHECK: &str = "1 to 64 printable ASCII characters, no space at either end (else 400 \
                         `INVALID_IDEMPOTENCY_KEY`).";
    let description = match key_use {
        None => format!(
            "{CHECK} The key is the user's, on this route (method and path template): the \
             same request with it (path values and canonical JSON body) gets the first answer \
             again, with `Idempotency-Replayed: true`, and changes nothing more; another \
             request with it is 422 `IDEMPOTENCY_KEY_REUSED`; while the first runs, 409 \
             `IDEMPOTENCY_KEY_IN_USE` (retryable). Answers but 400, 413, 415, 429, 5xx and \
             retryable ones are kept `ROOM__HTTP__IDEMPOTENCY_RETENTION_SECS`"
        ),
        Some(KeyUse::Own(own)) => {
            format!("{CHECK} Checked only: this route is idempotent by {own}, not by this header")
        }
        Some(KeyUse::Text(text)) => format!("{CHECK} {text}"),
    };
    let parameter = ParameterBuilder::new()
        .name("Idempotency-Key")
        .parameter_in(ParameterIn::Header)
        .required(utoipa::openapi::Required::False)
        .description(Some(description))
        .schema(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(room_app::MAX_IDEMPOTENCY_KEY_CHARS))
                .pattern(Some(r"^[!-~]([ -~]*[!-~])?$")),
        ))
        .build();
    operation
        .parameters
        .get_or_insert_with(Vec::new)
        .push(RefOr::T(parameter));
}

/// The statuses of a route's `Idempotency-Key` rule: 409 `IDEMPOTENCY_KEY_IN_USE`, and the
/// reused key's answer under `reused` (422 `IDEMPOTENCY_KEY_REUSED`, or the route's own 409).
/// A status the route documents already gets the codes added to its description.
fn add_key_statuses(operation: &mut Operation, reused: &str) {
    let mut statuses = vec![(
        "409",
        "`IDEMPOTENCY_KEY_IN_USE`: a request with this `Idempotency-Key` is running, \
         `retryable: true`; retry after `Retry-After` seconds",
    )];
    if reused == "422" {
        statuses.push((
            "422",
            "`IDEMPOTENCY_KEY_REUSED`: this `Idempotency-Key` was sent before with another \
             request",
        ));
    }
    for (status, text) in statuses {
        match operation.responses.responses.get_mut(status) {
            Some(RefOr::T(response)) => {
                response.description = format!("{}; or {text}", response.description);
            }
            Some(RefOr::Ref(_)) => {}
            None => {
                let response = ResponseBuilder::new()
                    .description(text)
                    .content(
                        "application/json",
                        ContentBuilder::new()
                            .schema(Some(Ref::from_schema_name("ErrorResponse")))
                            .build(),
                    )
                    .build();
                operation
                    .responses
                    .responses
                    .insert(status.to_owned(), RefOr::T(response));
            }
        }
    }
}

fn complete_operation(operation: &mut Operation) {
    let authenticated = operation
        .security
        .as_ref()
        .is_some_and(|requirements| !requirements.is_empty());
    let has_params = operation.parameters.iter().flatten().any(|parameter| {
        matches!(
            parameter,
            RefOr::T(parameter)
                if matches!(parameter.parameter_in, ParameterIn::Path | ParameterIn::Query)
        )
    });
    let json_body = authenticated && operation.request_body.is_some();
    let mut add = |reusable: &Reusable| {
        operation
            .responses
            .responses
            .entry(reusable.status.to_owned())
            .or_insert_with(|| RefOr::Ref(Ref::from_response_name(reusable.name)));
    };
    if has_params || json_body {
        add(&BAD_REQUEST);
    }
    if authenticated {
        add(&UNAUTHORIZED);
        add(&TOO_MANY_REQUESTS);
    }
    if json_body {
        add(&REQUEST_TIMEOUT);
        add(&PAYLOAD_TOO_LARGE);
        add(&UNSUPPORTED_MEDIA_TYPE);
    }
    add(&UNAVAILABLE);
}

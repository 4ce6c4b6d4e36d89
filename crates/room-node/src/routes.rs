//! The router: every route of the API, its OpenAPI document, and the layers around them
//! (trace, metrics, panic catching, request timeout, body limit, error shape).

mod admin;
mod billing;
mod boards;
mod callbacks;
mod events;
mod follows;
mod gifts;
mod lists;
mod openapi;
mod ops;
mod rocket;
mod rooms;
mod tallies;
mod users;
mod vip;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Json;
use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request};
use axum::http::{Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::config::MAX_BODY_BYTES;
use crate::error::{ApiCode, ApiError, ErrorResponse};
use crate::limits::{RateLimitState, rate_limit};
use crate::state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "room-service",
        description = "The JSON API of the voice-chat room service. Ids are strings of 1 to 64 \
            characters; times are milliseconds since the Unix epoch; coins are integers. Every \
            error is `{\"error\":{\"code\",\"message\",\"retryable\"}}`.",
    ),
    modifiers(&BearerAuth),
    components(schemas(
        ErrorResponse,
        ApiCode,
        rooms::PeriodParam,
        crate::dto::Id,
        crate::dto::OrderIdSchema,
        crate::dto::RoomName,
        crate::dto::Notice,
        crate::dto::Reason,
        crate::dto::MessageText,
        crate::dto::MessageTargetSchema,
        crate::dto::ImageUrl,
        crate::dto::VipBackgroundUrl,
        crate::dto::Region,
        crate::dto::Nickname,
        crate::dto::UserRegion,
        crate::dto::Country,
        crate::dto::GiftName,
        crate::dto::Recipients,
        crate::dto::RobotPool,
        crate::dto::Audience,
    )),
    tags(
        (name = "rooms", description = "Rooms, membership and the event stream"),
        (name = "seats", description = "Mic seats"),
        (name = "moderation", description = "Owner and admin actions"),
        (name = "gifts", description = "Paid gifts and the catalog"),
        (name = "me", description = "The caller"),
        (name = "users", description = "Other people: what the service counts of them"),
        (name = "boards", description = "Leaderboards of senders, receivers and rooms"),
        (name = "admin", description = "Platform admins"),
        (name = "rtc", description = "TRTC webhooks"),
        (name = "ops", description = "Health and metrics"),
    )
)]
struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                Http::builder()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "HS256; `sub` = user id, `exp` required, platform admins carry \
                         `roles: [\"admin\"]`",
                    ))
                    .build(),
            ),
        );
    }
}

/// The routes and their OpenAPI document.
fn api_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(rooms::create_room, lists::list_rooms))
        .routes(routes!(rooms::get_room, rooms::patch_room))
        .routes(routes!(rooms::get_room_by_short_id))
        .routes(routes!(rooms::close_room))
        .routes(routes!(rooms::join_room))
        .routes(routes!(rooms::leave_room))
        .routes(routes!(rooms::heartbeat))
        .routes(routes!(rooms::online_users))
        .routes(routes!(rooms::take_seat))
        .routes(routes!(rooms::leave_seat))
        .routes(routes!(rooms::lock_seat))
        .routes(routes!(rooms::seat_vip))
        .routes(routes!(rooms::invite))
        .routes(routes!(events::my_events))
        .routes(routes!(rooms::mute_seat))
        .routes(routes!(rooms::remove_from_seat))
        .routes(routes!(rooms::kick))
        .routes(routes!(rooms::unban))
        .routes(routes!(rooms::chat_mute))
        .routes(routes!(rooms::banned_users))
        .routes(routes!(rooms::put_admin, rooms::delete_admin))
        .routes(routes!(rooms::contribution_rank))
        .routes(routes!(follows::follow_room, follows::unfollow_room))
        .routes(routes!(follows::followed_rooms))
        .routes(routes!(events::room_events))
        .routes(routes!(gifts::send_gift))
        .routes(routes!(gifts::list_gifts))
        .routes(routes!(gifts::my_wallet))
        .routes(routes!(gifts::my_current_room))
        .routes(routes!(gifts::my_im_credentials))
        .routes(routes!(admin::credit_wallet))
        .routes(routes!(admin::put_gift))
        .routes(routes!(admin::create_robot_room, admin::list_robot_rooms))
        .routes(routes!(
            admin::get_robot_room,
            admin::patch_robot_room,
            admin::delete_robot_room
        ))
        .routes(routes!(users::put_user, users::get_user))
        .routes(routes!(users::put_users))
        .routes(routes!(users::patch_my_profile))
        .routes(routes!(
            vip::put_user_vip,
            vip::get_user_vip,
            vip::delete_user_vip
        ))
        .routes(routes!(vip::get_vip_levels, vip::put_vip_levels))
        .routes(routes!(lists::create_pin, lists::list_pins))
        .routes(routes!(lists::delete_pin))
        .routes(routes!(admin::list_dead_letters))
        .routes(routes!(admin::replay_dead_letter))
        .routes(routes!(admin::revoke_resources))
        .routes(routes!(admin::send_system_message))
        .routes(routes!(billing::get_billing, billing::put_billing))
        .routes(routes!(billing::my_income))
        .routes(routes!(billing::user_income))
        .routes(routes!(tallies::get_gift_value))
        .routes(routes!(tallies::get_turnover))
        .routes(routes!(boards::app_board))
        .routes(routes!(boards::my_app_standing))
        .routes(routes!(boards::room_board))
        .routes(routes!(boards::my_room_standing))
        .routes(routes!(
            boards::get_board_rewards,
            boards::put_board_rewards
        ))
        .routes(routes!(boards::board_payouts))
        .routes(routes!(rocket::get_rocket, rocket::put_rocket))
        .routes(routes!(callbacks::rtc_callback))
        .routes(routes!(ops::healthz))
        .routes(routes!(ops::readyz))
        .routes(routes!(ops::metrics))
}

/// The OpenAPI document of the API.
pub fn openapi() -> utoipa::openapi::OpenApi {
    let mut document = api_routes().into_openapi();
    openapi::complete(&mut document);
    document
}

/// The whole application and its layers: with `public`, the client API and `/openapi.json`;
/// without (a worker), only health, readiness and metrics. The internal endpoint is always
/// there.
pub fn router(state: AppState, request_timeout: Duration, public: bool) -> Router {
    let routes = if public {
        let (routes, mut document) = api_routes().split_for_parts();
        openapi::complete(&mut document);
        let document = Arc::new(document);
        routes.route(
            "/openapi.json",
            axum::routing::get(move || {
                let document = document.clone();
                async move { Json(document.as_ref().clone()) }
            }),
        )
    } else {
        Router::new()
            .route("/healthz", axum::routing::get(ops::healthz))
            .route("/readyz", axum::routing::get(ops::readyz))
            .route("/metrics", axum::routing::get(ops::metrics))
    };
    let routes = routes
        .merge(crate::cluster::internal_routes(state.clone()))
        .fallback(|| async { ApiError::from_status(StatusCode::NOT_FOUND) })
        .method_not_allowed_fallback(|| async {
            ApiError::from_status(StatusCode::METHOD_NOT_ALLOWED)
        })
        .with_state(state.clone());
    // Innermost, where the route is known: the keyed requests' rule, then (outside it) the
    // rate limits.
    let routes = routes.layer(middleware::from_fn_with_state(
        crate::keyed::KeyedState {
            gate: state.keyed.clone(),
            auth: state.auth.clone(),
        },
        crate::keyed::keyed_request,
    ));
    // Its 429s are counted by `record_metrics`. With the limits off, requests do not pass
    // through it at all.
    let routes = match state.limits.clone() {
        Some(limits) => routes.layer(middleware::from_fn_with_state(
            RateLimitState {
                limits,
                auth: state.auth.clone(),
            },
            rate_limit,
        )),
        None => routes,
    };
    routes
        // Layers run bottom-up on the way in: the last added is the outermost.
        .layer(axum::Extension(crate::extract::BodyDeadline(
            request_timeout / 2,
        )))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(RequestBodyLimitLayer::new(MAX_BODY_BYTES))
        // A timed-out request may still be applied (a gift stays idempotent by its order id):
        // answered as retryable, see `normalize_errors`.
        .layer(TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            request_timeout,
        ))
        .layer(CatchPanicLayer::new())
        .layer(middleware::map_response(normalize_errors))
        .layer(middleware::from_fn(record_metrics))
        // Failures are counted by `record_metrics`, and those that are the service's fault
        // logged where they arise (`normalize_errors`, the handlers): a retryable 503 while
        // a room changes owner is no error to log once per request.
        .layer(TraceLayer::new_for_http().on_failure(()))
}

/// Gives every error answer the API's shape: responses made outside the handlers (the body
/// limit's 413, the timeout's bare 503, a caught panic's 500, axum's own rejections) carry no
/// JSON body; they get one here.
async fn normalize_errors(response: Response) -> Response {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if is_json {
        return response;
    }
    if status == StatusCode::SERVICE_UNAVAILABLE {
        // Handlers answer 503 with JSON; a bare 503 is the timeout layer's.
        return ApiError::from_status(StatusCode::GATEWAY_TIMEOUT)
            .with_status(StatusCode::SERVICE_UNAVAILABLE)
            .into_response();
    }
    if status.is_server_error() {
        tracing::error!(status = %status, "internal error answered");
    }
    ApiError::from_status(status).into_response()
}

/// `http_requests_total` and `http_request_duration_seconds`, labelled by method, route
/// template and status (bounded sets: never an id).
async fn record_metrics(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = method_label(request.method());
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |path| path.as_str().to_owned());
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    metrics::counter!("http_requests_total", "method" => method, "route" => route.clone(), "status" => status)
        .increment(1);
    metrics::histogram!("http_request_duration_seconds", "method" => method, "route" => route)
        .record(started.elapsed().as_secs_f64());
    response.into_response()
}

/// The `method` label: a standard method's name, `OTHER` for any other. A client chooses the
/// method freely (any token up to the header size), and every label value is a series kept for
/// the life of the process.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "OTHER",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_lists_every_error_code() {
        let document = serde_json::to_value(openapi()).unwrap();
        let schemas = &document["components"]["schemas"];
        let listed: Vec<&str> = schemas["ApiCode"]["enum"]
            .as_array()
            .expect("ApiCode is an enum")
            .iter()
            .map(|code| code.as_str().expect("a code is a string"))
            .collect();
        let codes: Vec<&str> = ApiCode::ALL.iter().map(|code| code.as_str()).collect();
        assert_eq!(listed, codes);
        for code in ApiCode::ALL {
            let description = schemas["ApiCode"]["description"].as_str().unwrap();
            assert!(description.contains(&format!("`{code}`")), "{code}");
        }
        assert_eq!(
            schemas["ErrorBody"]["properties"]["code"]["$ref"],
            "#/components/schemas/ApiCode"
        );
    }

    /// Codes come from the table: no source file of the crate spells one as a string of its
    /// own (tests aside), so a code cannot be answered that the table (and the OpenAPI
    /// document) lacks.
    #[test]
    fn no_file_spells_a_code_outside_the_table() {
        let spelled = regex::Regex::new(r#""([A-Z][A-Z_]{3,})""#).unwrap();
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut pending = vec![src.clone()];
        let mut files = 0;
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    pending.push(path);
                    continue;
                }
                if path.ends_with("error/code.rs") || path.extension() != Some("rs".as_ref()) {
                    continue;
                }
                files += 1;
                let source = std::fs::read_to_string(&path).unwrap();
                // Tests may spell the codes they expect on the wire.
                let code = source.split("#[cfg(test)]").next().unwrap_or_default();
                for found in spelled.captures_iter(code) {
                    assert!(
                        ApiCode::parse(&found[1]).is_none(),
                        "{} spells {} as a string: use ApiCode",
                        path.display(),
                        &found[1]
                    );
                }
            }
        }
        assert!(files > 20, "read {files} files of {}", src.display());
    }
}

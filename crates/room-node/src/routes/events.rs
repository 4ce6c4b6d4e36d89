//! `GET /v1/rooms/{room_id}/events`: the room's display events as Server-Sent Events — the
//! embedded stand-in for the room's IM group. `GET /v1/me/events`: the display events
//! addressed to the caller (invites), from every room.
//!
//! The stream opens with a `subscribed` event (`{"room_id","version"}`); every later event is
//! named after the room event's type (`RoomGiftSent`, `RoomMicChanged`, ...), has the event's
//! `seq` as its id and the JSON envelope as its data. A watcher that reconnects with
//! `Last-Event-ID: <seq>` first gets the display events it missed (seq after it, up to the
//! version at subscription), read from the room's log, then only newer events; when it missed
//! more than `sse.replay_max` events, or events the log no longer holds (pruned behind a
//! snapshot), it gets a `resync` event (`{"version"}`) instead: read the room again. A watcher that falls behind gets a
//! `lagged` event with the number of events it missed, and the stream ends (reconnect: the
//! membership is checked again). The stream also ends when the watcher leaves or is kicked,
//! when the room closes, and when the service stops.
//!
//! A user holds at most `sse.max_streams_per_user` streams at once; one more is answered 429
//! `TOO_MANY_STREAMS` until one of them ends. A refused call holds nothing: membership is
//! checked before the room's channel is subscribed to, and a room's channel lives only as long
//! as its watchers.

use std::convert::Infallible;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::{Stream, StreamExt, stream};
use room_app::ports::DisplayMessage;
use room_app::room_feed::{CatchUp, RoomFeed, ends_watch, last_seen_of};
use room_app::{RoomWatch, UserWatch};
use room_domain::UserId;
use tokio::sync::broadcast::error::RecvError;

use crate::auth::Auth;
use crate::error::{ApiCode, ApiError, ApiResult, ErrorResponse};
use crate::extract::ApiPath;
use crate::limits::StreamSlot;
use crate::state::AppState;

/// Streams the room's display events to a member.
#[utoipa::path(
    get, path = "/v1/rooms/{room_id}/events", tag = "rooms",
    // The `Last-Event-ID` header is added by `openapi::complete`: an optional header that is
    // never null, which the parameter macro cannot say.
    params(("room_id" = crate::dto::Id, Path, description = "The room id")),
    responses(
        (status = 200, description = "Server-Sent Events: `subscribed` first (`{\"room_id\",\"version\"}`), then, after a `Last-Event-ID`, the missed events or `resync` (`{\"version\"}`: read the room again), then each room event named by its type (`RoomGiftSent`, ...) with the event's `seq` as id and its JSON envelope as data; `lagged` (`{\"missed\"}`) ends a stream that fell behind", content_type = "text/event-stream", body = crate::dto::StreamEvent),
        (status = 400, description = "`INVALID_ID`", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
        (status = 422, description = "`NOT_A_MEMBER`: join the room first", body = ErrorResponse),
        (status = 429, description = "`TOO_MANY_STREAMS` (too many streams open for this user) or `RATE_LIMITED` (opened too fast)", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn room_events(
    State(state): State<AppState>,
    Auth(actor): Auth,
    ApiPath(room_id): ApiPath<String>,
    headers: HeaderMap,
) -> ApiResult<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>> {
    let last_seen = last_event_id(&headers);
    let room_id = state.existing_room(&room_id).await?;
    let feed = RoomFeed::new(
        state.service.clone(),
        state.messenger.clone(),
        state.sse_replay_max,
    );
    // Outsiders are refused before anything is held for them.
    feed.member_version(&room_id, &actor.user_id).await?;
    let slot = state.streams.acquire(&actor.user_id).await.ok_or_else(|| {
        ApiError::of(
            ApiCode::TooManyStreams,
            "this user has as many event streams open as allowed; close one first",
        )
    })?;
    let opened = feed.open(&room_id, &actor.user_id, last_seen).await?;
    metrics::counter!("room_sse_streams_total").increment(1);
    let subscribed = SseEvent::default()
        .event("subscribed")
        .data(serde_json::json!({ "room_id": room_id, "version": opened.version }).to_string());
    let mut first = vec![subscribed];
    match opened.catch_up {
        None => {}
        Some(CatchUp::Missed(missed)) => {
            metrics::counter!("room_sse_replayed_events_total").increment(missed.len() as u64);
            first.extend(missed.iter().map(sse_event));
        }
        Some(CatchUp::Resync) => {
            metrics::counter!("room_sse_resyncs_total").increment(1);
            first.push(
                SseEvent::default()
                    .event("resync")
                    .data(serde_json::json!({ "version": opened.version }).to_string()),
            );
        }
    }
    let watch = Watch {
        receiver: opened.watch,
        user: actor.user_id,
        skip_through: opened.skip_through,
        done: false,
        _slot: slot,
    };
    let events = stream::iter(first.into_iter().map(Ok))
        .chain(stream::unfold(watch, next_event))
        .take_until(state.shutdown.clone().cancelled_owned());
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(state.sse_keep_alive)))
}

/// Streams the display events addressed to the caller, from any room and through any node:
/// invites (`RoomUserInvited`).
#[utoipa::path(
    get, path = "/v1/me/events", tag = "me",
    responses(
        (status = 200, description = "Server-Sent Events: `subscribed` first (`{\"user_id\"}`), then each event addressed to the caller, named by its type (`RoomUserInvited`) with its room event envelope as data (the envelope's `room_id` and `seq` name it in its room); `lagged` (`{\"missed\"}`) ends a stream that fell behind. Nothing is replayed on reconnect: an invite to a seat missed meanwhile shows on its seat in the room (`held_for`); an invite to the room is not shown again.", content_type = "text/event-stream", body = crate::dto::StreamEvent),
        (status = 429, description = "`TOO_MANY_STREAMS` (too many streams open for this user, this one and room streams together) or `RATE_LIMITED` (opened too fast)", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn my_events(
    State(state): State<AppState>,
    Auth(actor): Auth,
) -> ApiResult<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>> {
    let slot = state.streams.acquire(&actor.user_id).await.ok_or_else(|| {
        ApiError::of(
            ApiCode::TooManyStreams,
            "this user has as many event streams open as allowed; close one first",
        )
    })?;
    let watch = state.messenger.subscribe_user(&actor.user_id);
    metrics::counter!("room_user_streams_total").increment(1);
    let subscribed = SseEvent::default()
        .event("subscribed")
        .data(serde_json::json!({ "user_id": actor.user_id }).to_string());
    let stream = UserStream {
        receiver: watch,
        done: false,
        _slot: slot,
    };
    let events = stream::iter([Ok(subscribed)])
        .chain(stream::unfold(stream, next_user_event))
        .take_until(state.shutdown.clone().cancelled_owned());
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(state.sse_keep_alive)))
}

struct UserStream {
    receiver: UserWatch,
    done: bool,
    /// Counts the stream against its user's cap until the stream is dropped.
    _slot: StreamSlot,
}

async fn next_user_event(
    mut stream: UserStream,
) -> Option<(Result<SseEvent, Infallible>, UserStream)> {
    if stream.done {
        return None;
    }
    let event = match stream.receiver.recv().await {
        Ok(message) => envelope_event(&message),
        Err(RecvError::Lagged(missed)) => {
            stream.done = true;
            lagged_event(missed)
        }
        Err(RecvError::Closed) => return None,
    };
    Some((Ok(event), stream))
}

/// The `Last-Event-ID` header: the seq it names ([`last_seen_of`]), or `None` when it is
/// absent or names no seq (a fresh stream, as if absent).
fn last_event_id(headers: &HeaderMap) -> Option<u64> {
    let value = headers.get("last-event-id")?;
    value.to_str().ok().and_then(last_seen_of)
}

/// A room event as the stream sends it.
fn sse_event(message: &DisplayMessage) -> SseEvent {
    envelope_event(message).id(message.envelope.seq.to_string())
}

/// A room event named by its type, with its envelope as data and no id (a user's stream
/// carries several rooms' events, whose seqs are each room's own).
fn envelope_event(message: &DisplayMessage) -> SseEvent {
    let envelope = &message.envelope;
    let data = serde_json::to_string(envelope).unwrap_or_else(|_| "{}".to_owned());
    SseEvent::default()
        .event(envelope.event.type_name())
        .data(data)
}

/// The `lagged` event of a stream that fell `missed` events behind, counted.
fn lagged_event(missed: u64) -> SseEvent {
    metrics::counter!("room_sse_lagged_total").increment(1);
    SseEvent::default()
        .event("lagged")
        .data(serde_json::json!({ "missed": missed }).to_string())
}

struct Watch {
    receiver: RoomWatch,
    user: UserId,
    /// Live events up to this seq were sent from the log already.
    skip_through: u64,
    done: bool,
    /// Counts the stream against its user's cap until the stream is dropped.
    _slot: StreamSlot,
}

async fn next_event(mut watch: Watch) -> Option<(Result<SseEvent, Infallible>, Watch)> {
    if watch.done {
        return None;
    }
    let received = loop {
        match watch.receiver.recv().await {
            Ok(message) if message.envelope.seq <= watch.skip_through => continue,
            other => break other,
        }
    };
    let event = match received {
        Ok(message) => {
            watch.done = ends_watch(&message.envelope.event, &watch.user);
            sse_event(&message)
        }
        Err(RecvError::Lagged(missed)) => {
            // The missed events may include the watcher's own kick: end the stream, so a
            // reconnect checks membership again (a slow reader cannot outlive a kick).
            watch.done = true;
            lagged_event(missed)
        }
        Err(RecvError::Closed) => return None,
    };
    Some((Ok(event), watch))
}

//! `GET /v1/rooms/{room_id}/events`: the room's display events as Server-Sent Events — the
//! embedded stand-in for the room's IM group.
//!
//! The stream opens with a `subscribed` event (`{"room_id","version"}`); every later event is
//! named after the room event's type (`RoomGiftSent`, `RoomMicChanged`, ...), has the event's
//! `seq` as its id and the JSON envelope as its data. A watcher that falls behind gets a
//! `lagged` event with the number of events it missed, and the stream ends (reconnect: the
//! membership is checked again). The stream also ends when the watcher leaves or is kicked,
//! when the room closes, and when the service stops.

use std::convert::Infallible;

use axum::extract::State;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::{Stream, StreamExt, stream};
use room_app::ports::DisplayMessage;
use room_domain::{Event, Rejection, UserId};
use tokio::sync::broadcast::{self, error::RecvError};

use crate::auth::Auth;
use crate::error::{ApiResult, ErrorResponse};
use crate::extract::ApiPath;
use crate::state::AppState;

/// Streams the room's display events to a member.
#[utoipa::path(
    get, path = "/v1/rooms/{room_id}/events", tag = "rooms",
    params(("room_id" = crate::dto::Id, Path, description = "The room id")),
    responses(
        (status = 200, description = "Server-Sent Events: `subscribed` first (`{\"room_id\",\"version\"}`), then each room event named by its type (`RoomGiftSent`, ...) with the event's `seq` as id and its JSON envelope as data; `lagged` (`{\"missed\"}`) ends a stream that fell behind", content_type = "text/event-stream", body = crate::dto::StreamEvent),
        (status = 400, description = "`INVALID_ID`", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
        (status = 422, description = "`NOT_A_MEMBER`: join the room first", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn room_events(
    State(state): State<AppState>,
    Auth(actor): Auth,
    ApiPath(room_id): ApiPath<String>,
) -> ApiResult<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>> {
    let room_id = state.existing_room(&room_id).await?;
    // Subscribe before reading the room, so nothing committed after the check is missed.
    let receiver = state.messenger.subscribe(&room_id);
    let user = actor.user_id.clone();
    let (member, version) = state
        .service
        .runtime()
        .query(&room_id, move |room| {
            (room.members.contains_key(&user), room.version)
        })
        .await?;
    if !member {
        return Err(Rejection::NotAMember {
            user: actor.user_id,
        }
        .into());
    }
    metrics::counter!("room_sse_streams_total").increment(1);
    let subscribed = SseEvent::default()
        .event("subscribed")
        .data(serde_json::json!({ "room_id": room_id, "version": version }).to_string());
    let watch = Watch {
        receiver,
        user: actor.user_id,
        done: false,
    };
    let events = stream::once(async move { Ok(subscribed) })
        .chain(stream::unfold(watch, next_event))
        .take_until(state.shutdown.clone().cancelled_owned());
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(state.sse_keep_alive)))
}

struct Watch {
    receiver: broadcast::Receiver<DisplayMessage>,
    user: UserId,
    done: bool,
}

async fn next_event(mut watch: Watch) -> Option<(Result<SseEvent, Infallible>, Watch)> {
    if watch.done {
        return None;
    }
    let event = match watch.receiver.recv().await {
        Ok(message) => {
            let envelope = &message.envelope;
            watch.done = ends_watch(&envelope.event, &watch.user);
            let data = serde_json::to_string(envelope).unwrap_or_else(|_| "{}".to_owned());
            SseEvent::default()
                .event(envelope.event.type_name())
                .id(envelope.seq.to_string())
                .data(data)
        }
        Err(RecvError::Lagged(missed)) => {
            metrics::counter!("room_sse_lagged_total").increment(1);
            // The missed events may include the watcher's own kick: end the stream, so a
            // reconnect checks membership again (a slow reader cannot outlive a kick).
            watch.done = true;
            SseEvent::default()
                .event("lagged")
                .data(serde_json::json!({ "missed": missed }).to_string())
        }
        Err(RecvError::Closed) => return None,
    };
    Some((Ok(event), watch))
}

/// Whether `event` ends `user`'s watch: they are no longer in the room.
fn ends_watch(event: &Event, user: &UserId) -> bool {
    match event {
        Event::RoomUserLeft { user: who, .. } | Event::RoomUserKicked { user: who, .. } => {
            who == user
        }
        Event::RoomClosed { .. } => true,
        _ => false,
    }
}

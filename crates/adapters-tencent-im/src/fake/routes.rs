//! The REST commands a [`FakeIm`](crate::FakeIm) answers, checked as Tencent checks them:
//! the caller (query parameters and UserSig), then each command's body, then what the command
//! does to the fake's groups, in Tencent's answer envelope. Scripted faults come first.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use super::state::{
    FakeRequest, FakeState, Fault, FirstAnswer, GROUP_MSGS_PER_SEC, Group, Shared, Stored,
};
use crate::SigError;
use crate::limits::{MAX_BAN_MEMBERS, MAX_GROUP_NAME_BYTES, MAX_MSG_BYTES, MAX_MUTE_MEMBERS};

/// How long a message's `Random` keeps a repeat out.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(300);
/// The service every group command is under.
const GROUP_SERVICE: &str = "group_open_http_svc";

/// The answer to one call: the envelope's code and info, and the fields of a success.
struct Answer {
    code: i64,
    info: String,
    fields: Map<String, Value>,
}

impl Answer {
    fn ok(fields: Map<String, Value>) -> Answer {
        Answer {
            code: 0,
            info: String::new(),
            fields,
        }
    }

    fn fail(code: i64, info: impl Into<String>) -> Answer {
        Answer {
            code,
            info: info.into(),
            fields: Map::new(),
        }
    }

    fn into_json(self) -> Value {
        let mut envelope = self.fields;
        envelope.insert(
            "ActionStatus".to_owned(),
            Value::from(if self.code == 0 { "OK" } else { "FAIL" }),
        );
        envelope.insert("ErrorCode".to_owned(), Value::from(self.code));
        envelope.insert("ErrorInfo".to_owned(), Value::from(self.info));
        Value::Object(envelope)
    }
}

pub(super) async fn handle(
    State(shared): State<Arc<Shared>>,
    Path((service, command)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
    body: Bytes,
) -> Response {
    let at = Instant::now();
    let fault = shared.state().faults.pop_front();
    let mut request = FakeRequest {
        path: format!("{service}/{command}"),
        command: command.clone(),
        identifier: query.get("identifier").cloned(),
        usersig: query.get("usersig").cloned(),
        random: query.get("random").cloned(),
        body: body.clone(),
        status: 200,
        error_code: None,
        at,
    };
    let (answer, delay) = match fault {
        Some(Fault::Http(status)) => {
            request.status = status;
            shared.state().requests.push(request);
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
            return (status, "<html>bad gateway</html>").into_response();
        }
        Some(Fault::Malformed) => {
            shared.state().requests.push(request);
            return (
                [(header::CONTENT_TYPE, "application/json")],
                "{\"ActionStatus\": \"OK\", \"ErrorCo",
            )
                .into_response();
        }
        Some(Fault::Code(code)) => (Answer::fail(code, "scripted failure"), None),
        Some(Fault::Delay(delay)) => (
            answer(&shared, &service, &command, &query, &body),
            Some(delay),
        ),
        None => (answer(&shared, &service, &command, &query, &body), None),
    };
    request.error_code = Some(answer.code);
    shared.state().requests.push(request);
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    axum::Json(answer.into_json()).into_response()
}

fn answer(
    shared: &Shared,
    service: &str,
    command: &str,
    query: &HashMap<String, String>,
    body: &[u8],
) -> Answer {
    if let Err(refusal) = check_caller(shared, query) {
        return refusal;
    }
    let request_bytes = body.len();
    let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(body) else {
        return Answer::fail(60003, "the body is not a JSON object");
    };
    if service != GROUP_SERVICE {
        return Answer::fail(60002, format!("unknown service {service}"));
    }
    let identifier = query.get("identifier").map_or("", String::as_str);
    let mut state = shared.state();
    let result = match command {
        "create_group" => create_group(&mut state, &body),
        "destroy_group" => destroy_group(&mut state, &body),
        "send_group_msg" => send_group_msg(
            &mut state,
            identifier,
            &body,
            request_bytes,
            shared.config.cap_window,
        ),
        "forbid_send_msg" => forbid_send_msg(&mut state, &body),
        "ban_group_member" if !shared.config.ban_permitted => {
            Err(Answer::fail(10007, "the plan does not include banning"))
        }
        "ban_group_member" => ban_group_member(&mut state, &body, true),
        "unban_group_member" if !shared.config.ban_permitted => {
            Err(Answer::fail(10007, "the plan does not include banning"))
        }
        "unban_group_member" => ban_group_member(&mut state, &body, false),
        other => Err(Answer::fail(60002, format!("unknown command {other}"))),
    };
    result.unwrap_or_else(|refusal| refusal)
}

/// The query parameters and the UserSig, checked as Tencent does.
fn check_caller(shared: &Shared, query: &HashMap<String, String>) -> Result<(), Answer> {
    let param = |name: &str| {
        query
            .get(name)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| Answer::fail(60002, format!("the query parameter {name} is missing")))
    };
    let sdk_app_id = param("sdkappid")?;
    let identifier = param("identifier")?;
    let usersig = param("usersig")?;
    let random = param("random")?;
    if param("contenttype")? != "json" {
        return Err(Answer::fail(60002, "contenttype must be json"));
    }
    if random.parse::<u32>().is_err() {
        return Err(Answer::fail(
            60002,
            "random must be a 32-bit unsigned number",
        ));
    }
    if sdk_app_id.parse::<u64>().ok() != Some(shared.config.sdk_app_id) {
        return Err(Answer::fail(70014, "sdkappid does not match the app"));
    }
    let claims = shared
        .signer
        .verify(usersig, unix_now())
        .map_err(|error| match error {
            SigError::Undecodable => Answer::fail(70003, "the UserSig cannot be decoded"),
            SigError::AppMismatch { .. } => Answer::fail(70014, "the UserSig is for another app"),
            SigError::BadHmac => Answer::fail(70009, "the UserSig does not verify"),
            SigError::Expired { .. } => Answer::fail(70001, "the UserSig expired"),
        })?;
    if claims.identifier != *identifier {
        return Err(Answer::fail(70013, "the UserSig is for another account"));
    }
    if !shared.config.admins.iter().any(|a| a == identifier) {
        return Err(Answer::fail(60010, "the identifier is not an app admin"));
    }
    Ok(())
}

fn bad(info: impl Into<String>) -> Answer {
    Answer::fail(10004, info)
}

fn string_field<'a>(body: &'a Map<String, Value>, name: &str) -> Result<&'a str, Answer> {
    body.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| bad(format!("{name} must be a string")))
}

fn members(body: &Map<String, Value>, max: usize) -> Result<Vec<String>, Answer> {
    let list = body
        .get("Members_Account")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("Members_Account must be an array"))?;
    if list.is_empty() || list.len() > max {
        return Err(bad(format!("Members_Account takes 1 to {max} accounts")));
    }
    list.iter()
        .map(|m| {
            m.as_str()
                .map(str::to_owned)
                .ok_or_else(|| bad("accounts are strings"))
        })
        .collect()
}

fn known_group<'a>(
    state: &'a mut FakeState,
    body: &Map<String, Value>,
) -> Result<(String, &'a mut Group), Answer> {
    let group_id = string_field(body, "GroupId")?.to_owned();
    match state.groups.get_mut(&group_id) {
        Some(group) => Ok((group_id, group)),
        None => Err(Answer::fail(10010, "no such group")),
    }
}

fn create_group(state: &mut FakeState, body: &Map<String, Value>) -> Result<Answer, Answer> {
    let kind = string_field(body, "Type")?;
    if !matches!(
        kind,
        "Public" | "Private" | "ChatRoom" | "AVChatRoom" | "Community" | "Work" | "Meeting"
    ) {
        return Err(bad(format!("unknown group Type {kind}")));
    }
    let name = string_field(body, "Name")?;
    if name.is_empty() || name.len() > MAX_GROUP_NAME_BYTES {
        return Err(bad("Name takes 1 to 30 bytes"));
    }
    if kind == "AVChatRoom" && body.contains_key("MemberList") {
        return Err(Answer::fail(10007, "an AVChatRoom takes no MemberList"));
    }
    let group_id = match body.get("GroupId") {
        None => {
            state.next_group += 1;
            format!("@TGS#{}", state.next_group)
        }
        Some(Value::String(id)) => {
            let valid = !id.is_empty()
                && id.len() < 48
                && id.bytes().all(|b| b.is_ascii_graphic())
                && !id.starts_with("@TGS#");
            if !valid {
                return Err(bad("GroupId must be printable ASCII below 48 bytes"));
            }
            id.clone()
        }
        Some(_) => return Err(bad("GroupId must be a string")),
    };
    if state.groups.contains_key(&group_id) {
        // Every group here was created by the app's admins.
        return Err(Answer::fail(10025, "the group exists and is yours"));
    }
    state.groups.insert(
        group_id.clone(),
        Group {
            kind: kind.to_owned(),
            ..Group::default()
        },
    );
    Ok(Answer::ok(fields([("GroupId", Value::from(group_id))])))
}

fn destroy_group(state: &mut FakeState, body: &Map<String, Value>) -> Result<Answer, Answer> {
    let (group_id, _) = known_group(state, body)?;
    state.groups.remove(&group_id);
    Ok(Answer::ok(Map::new()))
}

fn send_group_msg(
    state: &mut FakeState,
    identifier: &str,
    body: &Map<String, Value>,
    request_bytes: usize,
    cap_window: Duration,
) -> Result<Answer, Answer> {
    let group_id = string_field(body, "GroupId")?.to_owned();
    let random = body
        .get("Random")
        .and_then(Value::as_u64)
        .and_then(|r| u32::try_from(r).ok())
        .ok_or_else(|| bad("Random must be a 32-bit unsigned number"))?;
    let priority = match body.get("MsgPriority") {
        None => None,
        Some(Value::String(p)) if matches!(p.as_str(), "High" | "Normal" | "Low") => {
            Some(p.clone())
        }
        Some(_) => return Err(bad("MsgPriority is High, Normal or Low")),
    };
    let elements = body
        .get("MsgBody")
        .and_then(Value::as_array)
        .filter(|e| !e.is_empty())
        .ok_or_else(|| bad("MsgBody must be a non-empty array"))?;
    let mut data = None;
    for element in elements {
        let kind = element.get("MsgType").and_then(Value::as_str);
        let content = element
            .get("MsgContent")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("MsgContent must be an object"))?;
        match kind {
            Some("TIMCustomElem") => {
                let element_data = content
                    .get("Data")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("a TIMCustomElem needs Data"))?;
                for optional in ["Desc", "Ext", "Sound"] {
                    if content.get(optional).is_some_and(|v| !v.is_string()) {
                        return Err(bad(format!("{optional} must be a string")));
                    }
                }
                data.get_or_insert_with(|| element_data.to_owned());
            }
            Some("TIMTextElem") => {
                content
                    .get("Text")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("a TIMTextElem needs Text"))?;
            }
            _ => return Err(bad("unknown MsgType")),
        }
    }
    if !state.groups.contains_key(&group_id) {
        return Err(Answer::fail(10010, "no such group"));
    }
    let msg_body = serde_json::to_string(&body["MsgBody"]).unwrap_or_default();
    // Tencent counts the whole request, not only `MsgBody`, against the limit.
    if request_bytes > MAX_MSG_BYTES {
        return Err(Answer::fail(80002, "the message is too long"));
    }
    let now = Instant::now();
    let sender = body
        .get("From_Account")
        .and_then(Value::as_str)
        .unwrap_or(identifier)
        .to_owned();
    while let Some((at, _)) = state.recent_order.front() {
        if now.duration_since(*at) < DUPLICATE_WINDOW {
            break;
        }
        if let Some((_, key)) = state.recent_order.pop_front() {
            state.recent.remove(&key);
        }
    }
    let key = (sender, msg_body, random);
    if let Some(first) = state.recent.get(&key) {
        let reply = first.reply.clone();
        state.duplicates += 1;
        return Ok(Answer::ok(reply));
    }
    let group = state
        .groups
        .get_mut(&group_id)
        .expect("the group was just found");
    while group
        .window
        .front()
        .is_some_and(|at| now.duration_since(*at) >= cap_window)
    {
        group.window.pop_front();
    }
    let msg_time = unix_now();
    let stored = |msg_seq| Stored {
        msg_seq,
        random,
        priority: priority.clone(),
        data: data.clone(),
        body_bytes: key.1.len(),
        received_at: now,
    };
    let reply = if group.window.len() >= GROUP_MSGS_PER_SEC {
        group.dropped += 1;
        fields([
            ("MsgTime", Value::from(msg_time)),
            ("MsgSeq", Value::from(0)),
            ("MsgDropReason", Value::from("MsgFreqCtrl")),
        ])
    } else {
        group.window.push_back(now);
        group.seq += 1;
        group.messages.push(stored(group.seq));
        fields([
            ("MsgTime", Value::from(msg_time)),
            ("MsgSeq", Value::from(group.seq)),
        ])
    };
    state.recent.insert(
        key.clone(),
        FirstAnswer {
            reply: reply.clone(),
        },
    );
    state.recent_order.push_back((now, key));
    Ok(Answer::ok(reply))
}

fn forbid_send_msg(state: &mut FakeState, body: &Map<String, Value>) -> Result<Answer, Answer> {
    let accounts = members(body, MAX_MUTE_MEMBERS)?;
    let mute_secs = body
        .get("MuteTime")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("MuteTime must be a number of seconds"))?;
    let (_, group) = known_group(state, body)?;
    for account in accounts {
        if mute_secs == 0 {
            group.muted.remove(&account);
        } else {
            group.muted.insert(account, mute_secs);
        }
    }
    Ok(Answer::ok(Map::new()))
}

fn ban_group_member(
    state: &mut FakeState,
    body: &Map<String, Value>,
    ban: bool,
) -> Result<Answer, Answer> {
    let accounts = members(body, MAX_BAN_MEMBERS)?;
    let duration = if ban {
        body.get("Duration")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad("Duration must be a number of seconds"))?
    } else {
        0
    };
    let description = body
        .get("Description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let (_, group) = known_group(state, body)?;
    if group.kind != "AVChatRoom" {
        return Err(bad("only an AVChatRoom bans members"));
    }
    for account in accounts {
        if ban {
            group
                .banned
                .insert(account, (duration, description.clone()));
        } else {
            group.banned.remove(&account);
        }
    }
    Ok(Answer::ok(Map::new()))
}

fn fields<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

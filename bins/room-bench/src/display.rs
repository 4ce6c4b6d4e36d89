//! The cost of display fields (`--only display`): the hot room on a server where its owner,
//! its recipient and its 64 senders have profiles (a nickname of 12 characters and an avatar
//! URL of 60), so that each `RoomGiftSent` carries its sender's nickname and avatar (and the
//! gift's command too) and each `RoomUserJoined` its joiner's, against one where nobody has a
//! profile (the fields absent; the node's profile cache is asked all the same, and keeps that
//! there is none), in turns, in one run: on, off, off, on, on, off, each turn on a fresh
//! server. Each turn checks on the room's event stream, before its loop, that the joins and
//! a gift carry the fields on the side on and not on the side off.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::load::{ClosedRun, SENDERS, closed_loop_on, next_order};
use crate::report::report;
use crate::server::Server;
use crate::turns::{in_turns, report_medians};

/// How long the check of a turn's event stream may take.
const SHOWN_WAIT: Duration = Duration::from_secs(10);

/// The users of the hot room [`Server::setup`] makes: its owner, its recipient and its
/// senders.
fn hot_room_users() -> Vec<String> {
    ["owner-0".to_owned(), "recipient-0".to_owned()]
        .into_iter()
        .chain((0..SENDERS).map(|s| format!("sender-{s}")))
        .collect()
}

/// The `n`th user's profile: a nickname of 12 characters, an avatar URL of 60.
fn profile(user: &str, n: usize) -> Value {
    json!({
        "user_id": user,
        "nickname": format!("Bench user{n:02}"),
        "avatar_url": format!("https://cdn.example.com/avatars/{n:04}/3f9c2a7e-large.webp?v=2"),
    })
}

/// Runs the comparison; `start` starts a server on fresh storage with extra environment.
pub async fn display(
    start: impl AsyncFn(&[(&str, &str)]) -> Result<Server>,
    duration: Duration,
) -> Result<()> {
    let (on, off) = in_turns(async |shown, round| {
        let server = start(&[]).await?;
        if shown {
            let users: Vec<Value> = hot_room_users()
                .iter()
                .enumerate()
                .map(|(n, user)| profile(user, n))
                .collect();
            server.put_profiles(&users).await?;
        }
        let setup = server.setup(1, SENDERS).await?;
        let side = if shown { "on" } else { "off" };
        let fields = tokio::time::timeout(SHOWN_WAIT, shown_fields(&server, &setup.rooms[0]))
            .await
            .context("the room's event stream showed no gift")??;
        report(
            &format!("  joins, gift with display fields ({side})"),
            &format!(
                "{} of {}, {}",
                fields.joins_with,
                fields.joins,
                if fields.gift_with { "yes" } else { "no" }
            ),
        );
        let all_or_none = if shown { fields.joins } else { 0 };
        if fields.joins == 0 || fields.joins_with != all_or_none || fields.gift_with != shown {
            bail!(
                "display fields {side}: {} of {} joins, the gift {}",
                fields.joins_with,
                fields.joins,
                if fields.gift_with { "with" } else { "without" }
            );
        }
        let clients = std::slice::from_ref(&server.client);
        let run = closed_loop_on(clients, &[&server], &setup, duration, true).await?;
        report(
            &format!("display fields {side}, round {} (gifts/s)", round + 1),
            &format!("{:.0}", run.rate),
        );
        server.stop().await?;
        Ok(run)
    })
    .await?;
    report_medians(
        "hot room, display fields on against off (median gifts/s)",
        on.iter().map(|run| run.rate),
        off.iter().map(|run| run.rate),
    );
    report_medians(
        "  server CPU per gift, on against off (median us)",
        on.iter().map(|run| run.cpu_per_gift),
        off.iter().map(|run| run.cpu_per_gift),
    );
    let failed = |runs: &[ClosedRun]| runs.iter().map(|run| run.failed).sum::<u64>();
    report(
        "  failed gifts, on / off",
        &format!("{} / {}", failed(&on), failed(&off)),
    );
    Ok(())
}

/// What the hot room's event stream showed of the display fields.
struct Shown {
    /// The joins replayed.
    joins: usize,
    /// Those of them that carry the joiner's nickname and avatar.
    joins_with: usize,
    /// Whether the gift carried its sender's.
    gift_with: bool,
}

/// Opens the hot room's event stream as `sender`, replayed from the room's first event, and
/// sends a gift of `sender`: what the joins replayed and the gift show.
async fn shown_fields(server: &Server, sender: &(String, String, String)) -> Result<Shown> {
    let (room_id, sender_token, _) = sender;
    let mut stream = server
        .client
        .http
        .get(format!("{}/v1/rooms/{room_id}/events", server.client.base))
        .bearer_auth(sender_token)
        .header("last-event-id", "0")
        .send()
        .await?
        .error_for_status()?;
    // Subscribed once it answers: the gift is shown live, after the replay.
    server.client.gift(sender, next_order()).await?;
    let (mut joins, mut joins_with) = (0, 0);
    let mut buffer = Vec::new();
    loop {
        let (event, data) = next_event(&mut stream, &mut buffer).await?;
        if event != "RoomUserJoined" && event != "RoomGiftSent" {
            continue;
        }
        let payload = &serde_json::from_str::<Value>(&data)?["payload"];
        let has = |nickname: &str, avatar: &str| {
            payload[nickname].is_string() && payload[avatar].is_string()
        };
        if event == "RoomGiftSent" {
            return Ok(Shown {
                joins,
                joins_with,
                gift_with: has("sender_nickname", "sender_avatar_url"),
            });
        }
        joins += 1;
        joins_with += usize::from(has("nickname", "avatar_url"));
    }
}

/// The next event of an event stream whose first bytes are in `buffer`: its name and its data
/// (both empty for a comment).
async fn next_event(
    stream: &mut reqwest::Response,
    buffer: &mut Vec<u8>,
) -> Result<(String, String)> {
    loop {
        if let Some(end) = buffer.windows(2).position(|pair| pair == b"\n\n") {
            let block = String::from_utf8(buffer.drain(..end + 2).collect())?;
            let field = |name: &str| {
                block
                    .lines()
                    .find_map(|line| line.strip_prefix(name))
                    .map_or(String::new(), |value| value.trim_start().to_owned())
            };
            return Ok((field("event:"), field("data:")));
        }
        let chunk = stream.chunk().await?.context("the event stream ended")?;
        buffer.extend_from_slice(&chunk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_has_a_nickname_of_12_characters_and_an_avatar_of_60() {
        for n in [0, SENDERS + 1] {
            let profile = profile("sender-0", n);
            assert_eq!(
                profile["nickname"].as_str().map(|s| s.chars().count()),
                Some(12)
            );
            assert_eq!(profile["avatar_url"].as_str().map(str::len), Some(60));
        }
    }
}

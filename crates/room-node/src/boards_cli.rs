//! `room-api boards rebuild`: one board rebuilt from the durable facts the store's outbox
//! holds, compared with the live board, and put in its place when asked.

use anyhow::Context;
use room_app::boards::{FactLog, Rebuilt, board_at, first_day, rebuild_board};
use room_app::ports::{BoardKind, BoardPeriod, Clock};
use room_domain::{DayKey, RoomId, Timestamp};

use crate::config::Settings;
use crate::storage::Storage;

/// What to rebuild.
#[derive(Debug, Clone)]
pub struct RebuildArgs {
    /// `senders`, `receivers` or `rooms`.
    pub board: String,
    /// `day`, `week` or `month`.
    pub period: String,
    /// The room, for a room's board.
    pub room: Option<String>,
    /// A day of the period, `YYYY-MM-DD` in the billing time zone; today when absent.
    pub at: Option<String>,
    /// Replace the live board with the rebuilt one when they differ.
    pub apply: bool,
}

/// Rebuilds the board `args` names from the configured storage's outbox and reports what it
/// found: `Ok(true)` when the rebuilt board equals the live one (or replaced it).
pub async fn rebuild(settings: &Settings, args: &RebuildArgs) -> anyhow::Result<(bool, String)> {
    let kind = BoardKind::parse(&args.board)
        .with_context(|| format!("--board {:?}: senders, receivers or rooms", args.board))?;
    let period = BoardPeriod::parse(&args.period)
        .with_context(|| format!("--period {:?}: day, week or month", args.period))?;
    let room = args
        .room
        .as_deref()
        .map(RoomId::new)
        .transpose()
        .context("bad --room")?;
    let day = args
        .at
        .as_deref()
        .map(|text| DayKey::parse(text).with_context(|| format!("--at {text:?}: YYYY-MM-DD")))
        .transpose()?;
    let offset = settings.billing.utc_offset_secs()?;
    let now = room_app::SystemClock.now();
    let board = board_at(kind, room, period, day, now, offset)?;
    let storage = Storage::open(&settings.storage).await?;
    let log = FactLog {
        outbox: storage.outbox.clone(),
        kept_since: Timestamp(
            now.0
                - i64::try_from(settings.outbox.retention_days)
                    .unwrap_or(i64::MAX / 86_400_000)
                    .saturating_mul(86_400_000),
        ),
        // Without a broker the board consumer reads the outbox under its stored position.
        consumer: (!settings.kafka.is_enabled())
            .then(|| (storage.positions.clone(), settings.boards.group.clone())),
    };
    let rebuilt = rebuild_board(&log, &storage.boards, board, offset, args.apply, now).await;
    storage.close().await;
    let rebuilt = rebuilt?;
    Ok((rebuilt.equal() || rebuilt.applied, report(&rebuilt)))
}

/// What a rebuild found, for the operator.
fn report(rebuilt: &Rebuilt) -> String {
    let board = &rebuilt.board;
    let mut text = format!(
        "board {} of {} for the {} of {}: {} facts read, {} entries rebuilt, {} live\n",
        board.kind.as_str(),
        board
            .room
            .as_ref()
            .map_or("the whole app".to_owned(), |room| format!("room {room}")),
        board.period.as_str(),
        first_day(board),
        rebuilt.facts_read,
        rebuilt.rebuilt.len(),
        rebuilt.live.len(),
    );
    if rebuilt.equal() {
        text.push_str("the live board equals the rebuilt one\n");
        return text;
    }
    let live: std::collections::HashMap<&str, &room_app::ports::BoardEntry> = rebuilt
        .live
        .iter()
        .map(|entry| (entry.subject.as_str(), entry))
        .collect();
    let mut differences = 0;
    for entry in &rebuilt.rebuilt {
        let was = live.get(entry.subject.as_str());
        if was.is_none_or(|was| *was != entry) {
            differences += 1;
            if differences <= 20 {
                text.push_str(&format!(
                    "  {}: live {}, rebuilt {}\n",
                    entry.subject,
                    was.map_or("none".to_owned(), |was| was.score.to_string()),
                    entry.score
                ));
            }
        }
    }
    let rebuilt_subjects: std::collections::HashSet<&str> = rebuilt
        .rebuilt
        .iter()
        .map(|entry| entry.subject.as_str())
        .collect();
    let extra = rebuilt
        .live
        .iter()
        .filter(|entry| !rebuilt_subjects.contains(entry.subject.as_str()))
        .count();
    text.push_str(&format!(
        "{differences} entries differ, {extra} live entries have no fact\n"
    ));
    text.push_str(if rebuilt.applied {
        "the rebuilt board replaced the live one\n"
    } else {
        "the live board differs: run again with --apply to replace it\n"
    });
    text
}

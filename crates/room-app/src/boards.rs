//! Leaderboards: the consumer of the durable facts that counts each applied gift on the
//! boards ([`BoardConsumer`]), the reading of a board by pages and of one subject's standing,
//! a board rebuilt from the facts ([`rebuild_board`]), the pruning of old periods
//! ([`prune_boards`]), and the rewards of closed periods ([`rewards`]).
//!
//! Every paid `RoomGiftSent` fact counts once, by its key (its room and `seq`: a fact handed
//! over again, in whatever order, finds its key counted; keys are forgotten after
//! `billing.tally_keys_days`, longer than a fact can come back), in the
//! day, week and month of its commit in the billing time zone: its total to its sender on the
//! app's and its room's boards of senders and to its room on the app's board of rooms, its
//! value per recipient to each recipient on the app's and its room's boards of receivers.
//! Robot gifts count nowhere; a FAILED or COMPENSATED order has no fact. Boards never touch a
//! room's cell: they are read from the store the consumer writes.
//!
//! Metrics: the consumers' own (`room_facts_*{consumer}`), `room_board_gifts_total` (gifts
//! newly counted; a repeat adds nothing) and `room_boards_pruned_total` (entries of expired
//! periods deleted).

pub mod rewards;

use std::collections::BTreeMap;

use async_trait::async_trait;
use room_domain::{Coins, DayKey, Event, EventEnvelope, Periods, RoomId, Timestamp};

use crate::consumers::{FactError, FactHandler};
use crate::error::{Error, Result};
use crate::ports::{
    BoardEntry, BoardGift, BoardId, BoardKind, BoardPeriod, BoardSums, BoardsRef,
    ConsumerPositionsRef, MAX_BOARD_GIFTS, MAX_BOARD_PAGE, OutboxRef,
};

/// The gift `envelope` counts on the boards, if it is a paid `RoomGiftSent`: in the periods
/// of its commit in the zone `utc_offset_secs` east of UTC.
pub fn board_gift_of(envelope: &EventEnvelope, utc_offset_secs: i32) -> Option<BoardGift> {
    let Event::RoomGiftSent(gift) = &envelope.event else {
        return None;
    };
    if gift.robot {
        return None;
    }
    Some(BoardGift {
        room_id: envelope.room_id.clone(),
        seq: envelope.seq,
        sender: gift.sender.clone(),
        recipients: gift.recipients.clone(),
        value_per_recipient: gift.value_per_recipient(),
        at: envelope.occurred_at,
        periods: Periods::at(envelope.occurred_at, utc_offset_secs),
    })
}

/// The most board entries one count adds to (nine a gift and six a recipient): a store's
/// count is one transaction, and on SQLite one job of the writer every room's commit shares.
pub const MAX_COUNT_ENTRIES: usize = 5_000;

/// `gifts` in runs of at most [`MAX_BOARD_GIFTS`] gifts adding to at most
/// [`MAX_COUNT_ENTRIES`] entries (a gift of more recipients alone).
fn chunks(gifts: &[BoardGift]) -> Vec<&[BoardGift]> {
    let mut runs = Vec::new();
    let (mut start, mut entries) = (0, 0);
    for (i, gift) in gifts.iter().enumerate() {
        let adds = 9 + 6 * gift.recipients.len();
        if i > start && (i - start == MAX_BOARD_GIFTS || entries + adds > MAX_COUNT_ENTRIES) {
            runs.push(&gifts[start..i]);
            (start, entries) = (i, 0);
        }
        entries += adds;
    }
    if start < gifts.len() {
        runs.push(&gifts[start..]);
    }
    runs
}

/// The consumer of the durable facts that counts each paid gift on the boards.
pub struct BoardConsumer {
    boards: BoardsRef,
    utc_offset_secs: i32,
}

impl BoardConsumer {
    /// The consumer over the boards' store, counting in the zone `utc_offset_secs` east of
    /// UTC (the billing time zone).
    pub fn new(boards: BoardsRef, utc_offset_secs: i32) -> Self {
        BoardConsumer {
            boards,
            utc_offset_secs,
        }
    }

    async fn count(&self, gifts: &[BoardGift]) -> std::result::Result<(), FactError> {
        for chunk in chunks(gifts) {
            let counted = match self.boards.add_to_boards(chunk).await {
                Ok(counted) => counted,
                // A value or score the store cannot take: no retry can mend it.
                Err(error @ Error::Invalid(_)) => return Err(FactError::permanent(error)),
                Err(error) => return Err(FactError::retryable(error)),
            };
            metrics::counter!("room_board_gifts_total").increment(u64::from(counted));
        }
        Ok(())
    }
}

#[async_trait]
impl FactHandler for BoardConsumer {
    async fn handle(&self, envelope: &EventEnvelope) -> std::result::Result<(), FactError> {
        match board_gift_of(envelope, self.utc_offset_secs) {
            Some(gift) => self.count(&[gift]).await,
            None => Ok(()),
        }
    }

    /// The run's gifts counted together: one store call (one transaction) for up to
    /// [`MAX_BOARD_GIFTS`] gifts.
    async fn handle_all(
        &self,
        envelopes: &[EventEnvelope],
    ) -> Option<std::result::Result<(), FactError>> {
        let gifts: Vec<BoardGift> = envelopes
            .iter()
            .filter_map(|envelope| board_gift_of(envelope, self.utc_offset_secs))
            .collect();
        Some(self.count(&gifts).await)
    }
}

/// The board of `kind` in `room` (`None`: the whole app) and `period` that holds `day`, or
/// today at `now` in the zone `utc_offset_secs` east of UTC when no day is given.
/// [`Error::Invalid`] for rooms ranked within one room.
pub fn board_at(
    kind: BoardKind,
    room: Option<RoomId>,
    period: BoardPeriod,
    day: Option<DayKey>,
    now: Timestamp,
    utc_offset_secs: i32,
) -> Result<BoardId> {
    let periods = match day {
        Some(day) => Periods::of_day(day),
        None => Periods::at(now, utc_offset_secs),
    };
    let board = BoardId::new(kind, room, period, &periods);
    board.check()?;
    Ok(board)
}

/// The first day of `board`'s period.
pub fn first_day(board: &BoardId) -> DayKey {
    match board.period {
        BoardPeriod::Day => DayKey(board.number),
        BoardPeriod::Week => room_domain::WeekKey(board.number).monday(),
        BoardPeriod::Month => room_domain::MonthKey(board.number).first_day(),
    }
}

/// The day after the last of `board`'s period.
pub fn end_day(board: &BoardId) -> DayKey {
    match board.period {
        BoardPeriod::Day => DayKey(board.number + 1),
        BoardPeriod::Week => DayKey(first_day(board).0 + 7),
        BoardPeriod::Month => room_domain::MonthKey(board.number + 1).first_day(),
    }
}

/// An entry with its rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankedEntry {
    /// From 1.
    pub rank: u64,
    /// The entry.
    pub entry: BoardEntry,
}

/// Where the next page of a board starts: after the last entry of a page, whose rank it
/// carries. Written `rank.score.reached_at.hex(subject)` in the API: digits, `-` and `.`
/// only, so it needs no escaping in a query string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardCursor {
    /// The rank of [`last`](Self::last).
    pub rank: u64,
    /// The last entry of the page before.
    pub last: BoardEntry,
}

impl BoardCursor {
    /// The cursor as the API writes it.
    pub fn encode(&self) -> String {
        let hex: String = self
            .last
            .subject
            .bytes()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        format!(
            "{}.{}.{}.{hex}",
            self.rank, self.last.score.0, self.last.reached_at.0
        )
    }

    /// The cursor `text` writes, or `None` when it is no cursor.
    pub fn parse(text: &str) -> Option<BoardCursor> {
        let mut parts = text.splitn(4, '.');
        let rank: u64 = parts.next()?.parse().ok()?;
        let score: i64 = parts.next()?.parse().ok()?;
        let reached_at: i64 = parts.next()?.parse().ok()?;
        let hex = parts.next()?.as_bytes();
        if rank == 0 || score < 0 || hex.is_empty() || hex.len() % 2 != 0 {
            return None;
        }
        let bytes = hex
            .chunks(2)
            .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
            .collect::<Option<Vec<u8>>>()?;
        let subject = String::from_utf8(bytes).ok()?;
        // A user's or a room's id: both follow the id rule.
        room_domain::UserId::new(&subject).ok()?;
        Some(BoardCursor {
            rank,
            last: BoardEntry {
                subject: subject.to_owned(),
                score: Coins(score),
                reached_at: Timestamp(reached_at),
            },
        })
    }
}

/// One page of a board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardPage {
    /// The board.
    pub board: BoardId,
    /// Its entries, ranked.
    pub entries: Vec<RankedEntry>,
    /// Where the next page starts, when this one was full.
    pub next: Option<BoardCursor>,
}

/// A page of `board`: at most `limit` entries (and at most [`MAX_BOARD_PAGE`]) after
/// `cursor`.
pub async fn read_board(
    boards: &BoardsRef,
    board: BoardId,
    cursor: Option<BoardCursor>,
    limit: u32,
) -> Result<BoardPage> {
    let limit = limit.clamp(1, MAX_BOARD_PAGE);
    // A forged cursor may carry any rank: ranks saturate rather than overflow.
    let first_rank = cursor
        .as_ref()
        .map_or(1, |cursor| cursor.rank.saturating_add(1));
    let entries = boards
        .board_page(&board, cursor.map(|cursor| cursor.last), limit)
        .await?;
    let entries: Vec<RankedEntry> = entries
        .into_iter()
        .zip(0u64..)
        .map(|(entry, i)| RankedEntry {
            rank: first_rank.saturating_add(i),
            entry,
        })
        .collect();
    let next = (entries.len() == limit as usize)
        .then(|| entries.last())
        .flatten()
        .map(|last| BoardCursor {
            rank: last.rank,
            last: last.entry.clone(),
        });
    Ok(BoardPage {
        board,
        entries,
        next,
    })
}

/// The entries of `board` computed directly from `facts` (each gift once by its room and
/// position), in rank order: what the board holds when every fact of its period was counted.
pub fn board_from_facts<'a>(
    facts: impl IntoIterator<Item = &'a EventEnvelope>,
    board: &BoardId,
    utc_offset_secs: i32,
) -> Result<Vec<BoardEntry>> {
    let mut seen = std::collections::HashSet::new();
    let mut scores: BTreeMap<String, (i64, Timestamp)> = BTreeMap::new();
    for envelope in facts {
        let Some(gift) = board_gift_of(envelope, utc_offset_secs) else {
            continue;
        };
        if !seen.insert((gift.room_id.clone(), gift.seq)) {
            continue;
        }
        let mut sums = BoardSums::default();
        sums.add(&gift)?;
        for ((id, subject), (score, at)) in sums.entries {
            if id != *board {
                continue;
            }
            let entry = scores.entry(subject).or_insert((0, at));
            entry.0 = entry
                .0
                .checked_add(score)
                .ok_or_else(|| Error::Invalid("board score overflow".into()))?;
            entry.1 = entry.1.max(at);
        }
    }
    let mut entries: Vec<BoardEntry> = scores
        .into_iter()
        .map(|(subject, (score, reached_at))| BoardEntry {
            subject,
            score: Coins(score),
            reached_at,
        })
        .collect();
    entries.sort_by(BoardEntry::rank_order);
    Ok(entries)
}

/// Every entry of `board`, in rank order, read page by page.
pub async fn whole_board(boards: &BoardsRef, board: &BoardId) -> Result<Vec<BoardEntry>> {
    let mut entries: Vec<BoardEntry> = Vec::new();
    loop {
        let page = boards
            .board_page(board, entries.last().cloned(), MAX_BOARD_PAGE)
            .await?;
        let full = page.len() == MAX_BOARD_PAGE as usize;
        entries.extend(page);
        if !full {
            return Ok(entries);
        }
    }
}

/// The top `count` entries of `board` (fewer when it has fewer), in rank order.
pub async fn whole_board_top(
    boards: &BoardsRef,
    board: &BoardId,
    count: usize,
) -> Result<Vec<BoardEntry>> {
    let mut entries: Vec<BoardEntry> = Vec::new();
    while entries.len() < count {
        let want = u32::try_from(count - entries.len())
            .unwrap_or(MAX_BOARD_PAGE)
            .min(MAX_BOARD_PAGE);
        let page = boards
            .board_page(board, entries.last().cloned(), want)
            .await?;
        let full = page.len() == want as usize;
        entries.extend(page);
        if !full {
            break;
        }
    }
    Ok(entries)
}

/// What a rebuild of one board found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rebuilt {
    /// The board.
    pub board: BoardId,
    /// How many facts were read.
    pub facts_read: u64,
    /// The board computed from the facts, in rank order.
    pub rebuilt: Vec<BoardEntry>,
    /// The board as it was before the rebuild, in rank order.
    pub live: Vec<BoardEntry>,
    /// Whether the rebuilt board replaced the live one.
    pub applied: bool,
}

impl Rebuilt {
    /// Whether the rebuilt board equals the live one.
    pub fn equal(&self) -> bool {
        self.rebuilt == self.live
    }
}

/// How many outbox rows a rebuild reads at a time.
const REBUILD_PAGE: u32 = 1_000;

/// The commit instant of the oldest fact that may still be on its way to the boards: the
/// oldest undelivered outbox row's and, when the board consumer reads the outbox (`consumer`:
/// where it stands, by name), the next row it has to read; `None` when every fact is
/// counted (or delivered to a broker).
pub async fn in_flight(
    outbox: &OutboxRef,
    consumer: Option<&(ConsumerPositionsRef, String)>,
) -> Result<Option<Timestamp>> {
    let mut oldest = outbox
        .list_pending(0, &[], 1)
        .await?
        .first()
        .map(|row| row.envelope.occurred_at);
    if let Some((positions, name)) = consumer {
        let position = positions.get_position(name).await?.unwrap_or(0);
        if let Some(row) = outbox.list_after(position, 1).await?.first() {
            let at = row.envelope.occurred_at;
            oldest = Some(oldest.map_or(at, |oldest| oldest.min(at)));
        }
    }
    Ok(oldest)
}

/// Where a rebuild reads the facts, and how long they are kept.
pub struct FactLog {
    /// The store's outbox: every fact, delivered or not, until retention deletes it.
    pub outbox: OutboxRef,
    /// The instant before which the outbox may have deleted facts: now less
    /// `outbox.retention_days` (a delivered row is deleted that long after its delivery, and
    /// a fact is delivered after it is committed).
    pub kept_since: Timestamp,
    /// Where the board consumer stands in the outbox, and its name, when it reads the facts
    /// from there (no broker).
    pub consumer: Option<(ConsumerPositionsRef, String)>,
}

/// Rebuilds `board` from the durable facts the store's outbox still holds, compares it with
/// the live board, and replaces the live one when `apply` is set.
///
/// Refuses ([`Error::Invalid`]) a period that began before `log.kept_since` (the outbox may
/// no longer hold its facts) and, with `apply`, a period not closed at `now` or with a fact
/// still on its way (an undelivered outbox row committed before its end): the board consumer
/// may not have counted every fact of it yet, and a replaced board would count those twice.
pub async fn rebuild_board(
    log: &FactLog,
    boards: &BoardsRef,
    board: BoardId,
    utc_offset_secs: i32,
    apply: bool,
    now: Timestamp,
) -> Result<Rebuilt> {
    board.check()?;
    let start = first_day(&board).start(utc_offset_secs);
    let end = end_day(&board).start(utc_offset_secs);
    if start < log.kept_since {
        return Err(Error::Invalid(format!(
            "the {} of {} began before the outbox's retention ({} ms): its facts may be gone",
            board.period.as_str(),
            first_day(&board),
            log.kept_since.0
        )));
    }
    if apply {
        if end > now {
            return Err(Error::Invalid(format!(
                "the {} of {} has not closed: only a closed period's board is replaced",
                board.period.as_str(),
                first_day(&board)
            )));
        }
        if in_flight(&log.outbox, log.consumer.as_ref())
            .await?
            .is_some_and(|oldest| oldest < end)
        {
            return Err(Error::Invalid(format!(
                "a fact committed before the {} ended is still on its way to the boards: try \
                 again once the outbox has drained and the board consumer has caught up",
                board.period.as_str()
            )));
        }
    }
    let mut facts = Vec::new();
    let mut after = 0;
    let mut read = 0u64;
    loop {
        let rows = log.outbox.list_after(after, REBUILD_PAGE).await?;
        let Some(last) = rows.last() else { break };
        after = last.id;
        read += rows.len() as u64;
        facts.extend(rows.into_iter().map(|row| row.envelope).filter(|envelope| {
            envelope.occurred_at >= start
                && envelope.occurred_at < end
                && matches!(envelope.event, Event::RoomGiftSent(_))
        }));
    }
    let rebuilt = board_from_facts(&facts, &board, utc_offset_secs)?;
    let live = whole_board(boards, &board).await?;
    let applied = apply && rebuilt != live;
    if applied {
        boards.replace_board(&board, &rebuilt).await?;
    }
    Ok(Rebuilt {
        board,
        facts_read: read,
        rebuilt,
        live,
        applied,
    })
}

/// How long closed boards stay readable, in periods of each kind (the current one
/// included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoardRetention {
    /// Days.
    pub days: u32,
    /// Weeks.
    pub weeks: u32,
    /// Months.
    pub months: u32,
    /// UTC days the keys of counted gifts are kept (a fact older than this is never handed
    /// over again).
    pub key_days: u32,
}

/// Deletes, `limit` entries a call, the entries of boards older than `retention` allows at
/// `now` in the zone `utc_offset_secs` east of UTC, and the keys of gifts counted more than
/// `retention.key_days` UTC days before; returns how many entries and keys.
pub async fn prune_boards(
    boards: &BoardsRef,
    retention: BoardRetention,
    now: Timestamp,
    utc_offset_secs: i32,
    limit: u32,
) -> Result<u64> {
    let periods = Periods::at(now, utc_offset_secs);
    let mut deleted = 0;
    for (period, keep) in [
        (BoardPeriod::Day, retention.days),
        (BoardPeriod::Week, retention.weeks),
        (BoardPeriod::Month, retention.months),
    ] {
        let before = period.number(&periods) - i64::from(keep.max(1)) + 1;
        loop {
            let done = boards.prune_boards(period, before, limit.max(1)).await?;
            deleted += done;
            if done < u64::from(limit.max(1)) {
                break;
            }
        }
    }
    metrics::counter!("room_boards_pruned_total").increment(deleted);
    let before = DayKey(now.day_key(0).0 - i64::from(retention.key_days.max(1)));
    let mut keys = 0;
    loop {
        let done = boards.prune_board_keys(before, limit.max(1)).await?;
        keys += done;
        if done < u64::from(limit.max(1)) {
            break;
        }
    }
    Ok(deleted + keys)
}

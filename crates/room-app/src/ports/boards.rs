//! Leaderboards ([`Boards`]): the coin value of applied gifts ranked by sender, by receiver
//! and by room, for the whole app and for each room, by day, week and month.
//!
//! A board is one [`BoardId`]: what it ranks ([`BoardKind`]), where (the whole app, or one
//! room), and one period ([`BoardPeriod`] and its number). Its entries are ordered by score
//! (highest first), then by when the score was reached (earliest first: who got there first
//! ranks higher), then by subject id, so that the order is total and stable between pages.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{Coins, DayKey, Periods, RoomId, Timestamp, UserId};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The most gifts one [`Boards::add_to_boards`] call takes.
pub const MAX_BOARD_GIFTS: usize = 500;

/// The most entries one [`Boards::board_page`] answers, whatever `limit` asks.
pub const MAX_BOARD_PAGE: u32 = 100;

/// The most entries [`Boards::board_standing`] counts above a subject: a rank costs at most
/// this many index entries to count.
pub const MAX_COUNTED_RANK: u64 = 100_000;

/// What a board ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoardKind {
    /// Users by the value of the gifts they sent (contribution).
    Senders,
    /// Users by the value they received (charm).
    Receivers,
    /// Rooms by the value of the gifts sent in them; only for the whole app.
    Rooms,
}

impl BoardKind {
    /// Every kind.
    pub const ALL: [BoardKind; 3] = [BoardKind::Senders, BoardKind::Receivers, BoardKind::Rooms];

    /// The kind's name in paths and configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            BoardKind::Senders => "senders",
            BoardKind::Receivers => "receivers",
            BoardKind::Rooms => "rooms",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<BoardKind> {
        BoardKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
    }

    /// The code stores keep the kind under.
    pub fn code(self) -> u8 {
        match self {
            BoardKind::Senders => 1,
            BoardKind::Receivers => 2,
            BoardKind::Rooms => 3,
        }
    }

    /// The kind stored under `code`.
    pub fn from_code(code: i64) -> Option<BoardKind> {
        BoardKind::ALL
            .into_iter()
            .find(|kind| i64::from(kind.code()) == code)
    }
}

/// The period a board covers, in the billing time zone (a week starts on Monday).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoardPeriod {
    /// One day.
    Day,
    /// One week, Monday to Sunday.
    Week,
    /// One calendar month.
    Month,
}

impl BoardPeriod {
    /// Every period.
    pub const ALL: [BoardPeriod; 3] = [BoardPeriod::Day, BoardPeriod::Week, BoardPeriod::Month];

    /// The period's name in queries and configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            BoardPeriod::Day => "day",
            BoardPeriod::Week => "week",
            BoardPeriod::Month => "month",
        }
    }

    /// The period named `name`.
    pub fn parse(name: &str) -> Option<BoardPeriod> {
        BoardPeriod::ALL
            .into_iter()
            .find(|period| period.as_str() == name)
    }

    /// The code stores keep the period under.
    pub fn code(self) -> u8 {
        match self {
            BoardPeriod::Day => 1,
            BoardPeriod::Week => 2,
            BoardPeriod::Month => 3,
        }
    }

    /// The period stored under `code`.
    pub fn from_code(code: i64) -> Option<BoardPeriod> {
        BoardPeriod::ALL
            .into_iter()
            .find(|period| i64::from(period.code()) == code)
    }

    /// The number of this period among `periods` (a [`DayKey`](room_domain::DayKey),
    /// [`WeekKey`](room_domain::WeekKey) or [`MonthKey`](room_domain::MonthKey)).
    pub fn number(self, periods: &Periods) -> i64 {
        match self {
            BoardPeriod::Day => periods.day.0,
            BoardPeriod::Week => periods.week.0,
            BoardPeriod::Month => periods.month.0,
        }
    }
}

/// One board: what it ranks, where, and in which period.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BoardId {
    /// What it ranks.
    pub kind: BoardKind,
    /// The room it is of; `None` for the whole app. A [`BoardKind::Rooms`] board is only of
    /// the whole app.
    pub room: Option<RoomId>,
    /// Its period.
    pub period: BoardPeriod,
    /// The period's number ([`BoardPeriod::number`]).
    pub number: i64,
}

impl BoardId {
    /// The board of `kind` in `room` (`None`: the whole app) for the `period` of `periods`.
    pub fn new(
        kind: BoardKind,
        room: Option<RoomId>,
        period: BoardPeriod,
        periods: &Periods,
    ) -> BoardId {
        BoardId {
            kind,
            room,
            period,
            number: period.number(periods),
        }
    }

    /// [`Error::Invalid`] for a board no gift ever fills: rooms ranked within one room.
    pub fn check(&self) -> Result<()> {
        if self.kind == BoardKind::Rooms && self.room.is_some() {
            return Err(Error::Invalid("a room has no board of rooms".into()));
        }
        Ok(())
    }

    /// The room id stores keep the board under: the room's, or empty for the whole app.
    pub fn room_key(&self) -> &str {
        self.room.as_ref().map_or("", |room| room.as_str())
    }

    /// The board a store keeps under these codes ([`BoardKind::code`], [`room_key`],
    /// [`BoardPeriod::code`]) and period number; [`Error::Corrupt`] for codes or a room id no
    /// board has.
    ///
    /// [`room_key`]: Self::room_key
    pub fn from_stored(kind: i64, room_key: &str, period: i64, number: i64) -> Result<BoardId> {
        Ok(BoardId {
            kind: BoardKind::from_code(kind)
                .ok_or_else(|| Error::corrupt(format!("stored board kind {kind}")))?,
            room: if room_key.is_empty() {
                None
            } else {
                Some(
                    RoomId::new(room_key)
                        .map_err(|e| Error::corrupt(format!("stored board room_id: {e}")))?,
                )
            },
            period: BoardPeriod::from_code(period)
                .ok_or_else(|| Error::corrupt(format!("stored board period {period}")))?,
            number,
        })
    }
}

/// One entry of a board: a user (or a room, on a board of rooms), its score, and when it was
/// reached.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BoardEntry {
    /// The user's id, or the room's on a board of rooms.
    pub subject: String,
    /// The coin value counted in the board's period.
    pub score: Coins,
    /// When the score was reached: the commit of the latest gift counted in it.
    pub reached_at: Timestamp,
}

impl BoardEntry {
    /// Whether `self` ranks above `other`: a higher score, then an earlier `reached_at`, then
    /// a smaller subject id.
    pub fn ranks_above(&self, other: &BoardEntry) -> bool {
        self.rank_order(other) == std::cmp::Ordering::Less
    }

    /// The boards' order: `Less` when `self` ranks above `other`.
    pub fn rank_order(&self, other: &BoardEntry) -> std::cmp::Ordering {
        other
            .score
            .cmp(&self.score)
            .then(self.reached_at.cmp(&other.reached_at))
            .then_with(|| self.subject.cmp(&other.subject))
    }
}

/// A subject's place on a board.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoardStanding {
    /// Its rank, from 1: one more than the entries that rank above it, counted up to
    /// [`MAX_COUNTED_RANK`].
    pub rank: u64,
    /// Its entry.
    pub entry: BoardEntry,
}

impl BoardStanding {
    /// The standing of `entry` with `above` entries counted above it (at most
    /// [`MAX_COUNTED_RANK`]).
    pub fn new(above: u64, entry: BoardEntry) -> BoardStanding {
        BoardStanding {
            rank: above.min(MAX_COUNTED_RANK) + 1,
            entry,
        }
    }

    /// Whether the subject ranks beyond [`MAX_COUNTED_RANK`], and `rank` says only that.
    pub fn beyond(&self) -> bool {
        self.rank > MAX_COUNTED_RANK
    }
}

/// One applied gift, as the boards count it: once, by its place in its room's facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoardGift {
    /// The room it was sent in.
    pub room_id: RoomId,
    /// Its fact's position in the room's history: with the room, the gift's key, so that a
    /// fact handed over again, in any order, counts nothing.
    pub seq: u64,
    /// Who sent it.
    pub sender: UserId,
    /// Who received it, each [`value_per_recipient`](Self::value_per_recipient).
    pub recipients: Vec<UserId>,
    /// Coins each recipient received (never negative).
    pub value_per_recipient: Coins,
    /// When it was applied: its fact's commit.
    pub at: Timestamp,
    /// The day, week and month it counts in (in the billing time zone).
    pub periods: Periods,
}

impl BoardGift {
    /// The UTC day the gift's key is kept under until [`Boards::prune_board_keys`] forgets
    /// it: it depends on the fact alone, not on the configured time zone.
    pub fn key_day(&self) -> DayKey {
        self.at.day_key(0)
    }

    /// What the sender gave: the value per recipient times the recipients, `None` past
    /// `i64::MAX`.
    pub fn total(&self) -> Option<Coins> {
        let recipients = i64::try_from(self.recipients.len()).ok()?;
        self.value_per_recipient
            .0
            .checked_mul(recipients)
            .map(Coins)
    }
}

/// The boards of applied gifts: each gift counted once by its key (room, position), and the
/// boards read by rank.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait Boards: Send + Sync {
    /// Counts every gift whose key (room, position) was not counted yet, atomically (all of
    /// them or none), and returns how many it counted; a key given twice in one call counts
    /// once. A gift counted adds, in each of its day, week and month:
    /// - its total to its sender on the app's and its room's boards of senders,
    /// - its value per recipient to each recipient on the app's and its room's boards of
    ///   receivers,
    /// - its total to its room on the app's board of rooms;
    ///
    /// and each entry it adds to was reached at the latest of its `reached_at` and the gift's
    /// instant. A gift of no value adds no entry (its key is still kept). A repeat of a call
    /// counts nothing, whatever order its gifts come in; of two calls with one gift at once,
    /// one counts it. A negative value, a total or score past `i64::MAX`, or more than
    /// [`MAX_BOARD_GIFTS`] gifts: [`Error::Invalid`], and nothing is counted.
    async fn add_to_boards(&self, gifts: &[BoardGift]) -> Result<u32>;
    /// The entries of `board` in rank order, after `after` when it is given (the last entry
    /// of the previous page; it need not be on the board any more), at most `limit` (and at
    /// most [`MAX_BOARD_PAGE`]). A page costs its own entries to read, however many entries
    /// share the cursor's score.
    async fn board_page(
        &self,
        board: &BoardId,
        after: Option<BoardEntry>,
        limit: u32,
    ) -> Result<Vec<BoardEntry>>;
    /// `subject`'s rank and entry on `board`, or `None` when it has none. The rank counts at
    /// most [`MAX_COUNTED_RANK`] entries above: a subject further down is answered
    /// `MAX_COUNTED_RANK + 1` ([`BoardStanding::beyond`]).
    async fn board_standing(&self, board: &BoardId, subject: &str)
    -> Result<Option<BoardStanding>>;
    /// Replaces every entry of `board` with `entries` at once (a board rebuilt from the
    /// facts); the keys counted stay. [`Error::Invalid`] for a negative score or a
    /// subject given twice, and nothing changes.
    async fn replace_board(&self, board: &BoardId, entries: &[BoardEntry]) -> Result<()>;
    /// Deletes the entries of `period`'s boards numbered before `before`, at most `limit` of
    /// them; returns how many.
    async fn prune_boards(&self, period: BoardPeriod, before: i64, limit: u32) -> Result<u64>;
    /// Forgets the keys of gifts whose [`BoardGift::key_day`] is before `before`, at most
    /// `limit` of them; returns how many. A gift whose key is forgotten would be counted
    /// again: only keys older than any fact a consumer can still be handed go.
    async fn prune_board_keys(&self, before: DayKey, limit: u32) -> Result<u64>;
}

/// Shared handle to [`Boards`].
pub type BoardsRef = Arc<dyn Boards>;

/// The checks every store makes before counting `gifts` ([`Boards::add_to_boards`]).
pub fn check_board_gifts(gifts: &[BoardGift]) -> Result<()> {
    if gifts.len() > MAX_BOARD_GIFTS {
        return Err(Error::Invalid(format!(
            "{} gifts in one count: at most {MAX_BOARD_GIFTS}",
            gifts.len()
        )));
    }
    for gift in gifts {
        if gift.value_per_recipient.is_negative() {
            return Err(Error::Invalid(format!(
                "negative gift value {} at {}:{}",
                gift.value_per_recipient, gift.room_id, gift.seq
            )));
        }
        if gift.total().is_none() {
            return Err(Error::Invalid(format!(
                "the value of the gift at {}:{} passes the largest amount",
                gift.room_id, gift.seq
            )));
        }
    }
    Ok(())
}

/// The checks every store makes before [`Boards::replace_board`].
pub fn check_board_entries(board: &BoardId, entries: &[BoardEntry]) -> Result<()> {
    board.check()?;
    let mut seen = std::collections::HashSet::with_capacity(entries.len());
    for entry in entries {
        if entry.score.is_negative() {
            return Err(Error::Invalid(format!(
                "negative score {} of {}",
                entry.score, entry.subject
            )));
        }
        if !seen.insert(entry.subject.as_str()) {
            return Err(Error::Invalid(format!("{} given twice", entry.subject)));
        }
    }
    Ok(())
}

/// What one count adds, gathered so that a store writes each entry once and checks each sum
/// before it writes anything.
#[derive(Debug, Default)]
pub struct BoardSums {
    /// Added to entries: (board, subject) → (score, latest instant).
    pub entries: BTreeMap<(BoardId, String), (i64, Timestamp)>,
    /// The keys of the gifts counted: (room, position) → the key's UTC day.
    pub keys: BTreeMap<(RoomId, u64), DayKey>,
}

impl BoardSums {
    /// Adds what `gift` adds; [`Error::Invalid`] when a sum passes `i64::MAX`. A gift of no
    /// value (a free gift) keeps its key but adds no entry: a board ranks coins.
    pub fn add(&mut self, gift: &BoardGift) -> Result<()> {
        let overflow = || {
            Error::Invalid(format!(
                "board score overflow at {}:{}",
                gift.room_id, gift.seq
            ))
        };
        let total = gift.total().ok_or_else(overflow)?.0;
        let each = gift.value_per_recipient.0;
        let room = Some(gift.room_id.clone());
        let periods = if total > 0 {
            &BoardPeriod::ALL[..]
        } else {
            &[]
        };
        for &period in periods {
            let board = |kind, room: &Option<RoomId>| {
                BoardId::new(kind, room.clone(), period, &gift.periods)
            };
            let mut adds = vec![
                (
                    board(BoardKind::Senders, &None),
                    gift.sender.to_string(),
                    total,
                ),
                (
                    board(BoardKind::Senders, &room),
                    gift.sender.to_string(),
                    total,
                ),
                (
                    board(BoardKind::Rooms, &None),
                    gift.room_id.to_string(),
                    total,
                ),
            ];
            for recipient in &gift.recipients {
                adds.push((
                    board(BoardKind::Receivers, &None),
                    recipient.to_string(),
                    each,
                ));
                adds.push((
                    board(BoardKind::Receivers, &room),
                    recipient.to_string(),
                    each,
                ));
            }
            for (board, subject, value) in adds {
                let entry = self.entries.entry((board, subject)).or_insert((0, gift.at));
                entry.0 = entry.0.checked_add(value).ok_or_else(overflow)?;
                entry.1 = entry.1.max(gift.at);
            }
        }
        self.keys
            .insert((gift.room_id.clone(), gift.seq), gift.key_day());
        Ok(())
    }

    /// What `gifts` add, each counted unless `counted(room, position)` says its key was
    /// counted before, or an earlier gift of `gifts` has its key: the gifts it counts, and
    /// the sums.
    pub fn of(
        gifts: &[BoardGift],
        mut counted: impl FnMut(&RoomId, u64) -> Result<bool>,
    ) -> Result<(u32, BoardSums)> {
        let mut sums = BoardSums::default();
        let mut fresh = 0;
        for gift in gifts {
            if sums.keys.contains_key(&(gift.room_id.clone(), gift.seq))
                || counted(&gift.room_id, gift.seq)?
            {
                continue;
            }
            sums.add(gift)?;
            fresh += 1;
        }
        let counted = fresh;
        Ok((counted, sums))
    }
}

//! Time as the domain sees it: instants handed in by the caller, and the day and week keys
//! that reset the rocket and the contribution ranks.

use std::fmt;

use serde::{Deserialize, Serialize};

const MS_PER_DAY: i64 = 86_400_000;

/// An instant, in milliseconds since the Unix epoch (UTC). The domain never reads a clock:
/// every instant comes in through [`Ctx`](crate::Ctx) or a command.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The instant `secs` seconds later, saturating at the far future.
    pub fn plus_secs(self, secs: u32) -> Timestamp {
        Timestamp(self.0.saturating_add(i64::from(secs) * 1000))
    }

    /// The instant as milliseconds since the epoch.
    pub fn as_millis(self) -> i64 {
        self.0
    }

    /// The number of the day that contains this instant, for days that begin at midnight of
    /// the zone `utc_offset_secs` east of UTC (day 0 holds 1970-01-01 in that zone).
    pub fn day_key(self, utc_offset_secs: i32) -> DayKey {
        let local = self.0.saturating_add(i64::from(utc_offset_secs) * 1000);
        DayKey(local.div_euclid(MS_PER_DAY))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ms", self.0)
    }
}

/// A local calendar day, numbered from 1970-01-01.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct DayKey(pub i64);

impl DayKey {
    /// The week (Monday to Sunday) that contains this day. 1970-01-01 was a Thursday, so week
    /// 0 runs from Monday 1969-12-29 to Sunday 1970-01-04.
    pub fn week(self) -> WeekKey {
        WeekKey((self.0 + 3).div_euclid(7))
    }

    /// The instant this day begins, in the zone `utc_offset_secs` east of UTC.
    pub fn start(self, utc_offset_secs: i32) -> Timestamp {
        Timestamp(self.0 * MS_PER_DAY - i64::from(utc_offset_secs) * 1000)
    }
}

/// A local calendar week, Monday to Sunday, numbered from the week of 1970-01-01.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct WeekKey(pub i64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_boundary_follows_the_offset() {
        // A UTC midnight (2025-11-30T00:00:00Z).
        let midnight_utc = Timestamp(1_764_460_800_000);
        let day = midnight_utc.day_key(0);
        assert_eq!(Timestamp(midnight_utc.0 - 1).day_key(0).0, day.0 - 1);
        // In UTC+8 that instant is 08:00 of the same day; 16:00Z is the next local day.
        assert_eq!(midnight_utc.day_key(8 * 3600), day);
        assert_eq!(
            midnight_utc.plus_secs(16 * 3600).day_key(8 * 3600).0,
            day.0 + 1
        );
        assert_eq!(day.start(0), midnight_utc);
        assert_eq!(
            DayKey(day.0 + 1).start(8 * 3600),
            midnight_utc.plus_secs(16 * 3600)
        );
    }

    #[test]
    fn weeks_start_on_monday() {
        // 1970-01-05 (day 4) was a Monday; 1970-01-04 (day 3) a Sunday.
        assert_eq!(DayKey(3).week(), WeekKey(0));
        assert_eq!(DayKey(4).week(), WeekKey(1));
        assert_eq!(DayKey(10).week(), WeekKey(1));
        assert_eq!(DayKey(11).week(), WeekKey(2));
        assert_eq!(DayKey(-4).week(), WeekKey(-1));
    }
}

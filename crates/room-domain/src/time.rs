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

impl WeekKey {
    /// The week's first day, its Monday.
    pub fn monday(self) -> DayKey {
        DayKey(self.0 * 7 - 3)
    }
}

/// A local calendar month, numbered from January 1970 (month 0).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct MonthKey(pub i64);

impl MonthKey {
    /// The month's year and month number (1 to 12).
    pub fn year_month(self) -> (i64, u32) {
        let year = 1970 + self.0.div_euclid(12);
        // In 1..=12 by the Euclidean remainder.
        let month = u32::try_from(self.0.rem_euclid(12) + 1).unwrap_or(1);
        (year, month)
    }

    /// The month's first day.
    pub fn first_day(self) -> DayKey {
        let (year, month) = self.year_month();
        DayKey::from_civil(year, month, 1).unwrap_or_default()
    }
}

impl fmt::Display for MonthKey {
    /// `YYYY-MM`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (year, month) = self.year_month();
        write!(f, "{year:04}-{month:02}")
    }
}

/// The years a calendar date may name: wide enough for any instant a [`Timestamp`] of this
/// service holds, narrow enough that no arithmetic on them overflows.
const YEARS: std::ops::RangeInclusive<i64> = 1..=9999;

impl DayKey {
    /// The day of the calendar date `year`-`month`-`day` (proleptic Gregorian), if it is one
    /// (years 1 to 9999).
    pub fn from_civil(year: i64, month: u32, day: u32) -> Option<DayKey> {
        if !YEARS.contains(&year) || !(1..=12).contains(&month) || day == 0 {
            return None;
        }
        if day > days_in_month(year, month) {
            return None;
        }
        // Days from 1970-01-01, counting years from March so that the leap day ends a year.
        let (y, m) = if month <= 2 {
            (year - 1, i64::from(month) + 9)
        } else {
            (year, i64::from(month) - 3)
        };
        let era = y.div_euclid(400);
        let year_of_era = y - era * 400;
        let day_of_year = (153 * m + 2) / 5 + i64::from(day) - 1;
        let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
        Some(DayKey(era * 146_097 + day_of_era - 719_468))
    }

    /// The day's calendar date: year, month (1 to 12), day of the month (1 to 31).
    pub fn civil(self) -> (i64, u32, u32) {
        let z = self.0 + 719_468;
        let era = z.div_euclid(146_097);
        let day_of_era = z - era * 146_097;
        let year_of_era =
            (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
        let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
        let mp = (5 * day_of_year + 2) / 153;
        let day = day_of_year - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = year_of_era + era * 400 + i64::from(month <= 2);
        // Both in range by construction.
        (
            year,
            u32::try_from(month).unwrap_or(1),
            u32::try_from(day).unwrap_or(1),
        )
    }

    /// The month that contains this day.
    pub fn month(self) -> MonthKey {
        let (year, month, _) = self.civil();
        MonthKey((year - 1970) * 12 + i64::from(month) - 1)
    }

    /// The day written `YYYY-MM-DD`, if it is a calendar date of years 1 to 9999.
    pub fn parse(text: &str) -> Option<DayKey> {
        let bytes = text.as_bytes();
        if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
            return None;
        }
        let digits = |range: std::ops::Range<usize>| -> Option<u32> {
            let part = text.get(range)?;
            if !part.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            part.parse().ok()
        };
        DayKey::from_civil(i64::from(digits(0..4)?), digits(5..7)?, digits(8..10)?)
    }
}

impl fmt::Display for DayKey {
    /// `YYYY-MM-DD`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (year, month, day) = self.civil();
        write!(f, "{year:04}-{month:02}-{day:02}")
    }
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The offset of a time zone written `+HH:MM` or `-HH:MM` (`Z` for UTC), in seconds east of
/// UTC, if it is one of at most 14 hours.
pub fn parse_utc_offset(text: &str) -> Option<i32> {
    if text == "Z" {
        return Some(0);
    }
    let bytes = text.as_bytes();
    if bytes.len() != 6 || bytes[3] != b':' {
        return None;
    }
    let sign = match bytes[0] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let number = |part: &str| -> Option<i32> {
        if part.len() == 2 && part.bytes().all(|b| b.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    let (hours, minutes) = (number(text.get(1..3)?)?, number(text.get(4..6)?)?);
    if minutes >= 60 {
        return None;
    }
    let secs = hours * 3600 + minutes * 60;
    (secs <= 14 * 3600).then_some(sign * secs)
}

/// The day, week and month that hold an instant, in one time zone: the periods by which gift
/// values and turnover are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Periods {
    /// The day.
    pub day: DayKey,
    /// The week (Monday to Sunday) of [`day`](Self::day).
    pub week: WeekKey,
    /// The month of [`day`](Self::day).
    pub month: MonthKey,
}

impl Periods {
    /// The periods of `day`.
    pub fn of_day(day: DayKey) -> Periods {
        Periods {
            day,
            week: day.week(),
            month: day.month(),
        }
    }

    /// The periods that hold `at` in the zone `utc_offset_secs` east of UTC.
    pub fn at(at: Timestamp, utc_offset_secs: i32) -> Periods {
        Periods::of_day(at.day_key(utc_offset_secs))
    }
}

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
    fn calendar_dates_round_trip_through_day_numbers() {
        assert_eq!(DayKey::from_civil(1970, 1, 1), Some(DayKey(0)));
        assert_eq!(DayKey(0).civil(), (1970, 1, 1));
        assert_eq!(DayKey(-1).civil(), (1969, 12, 31));
        // 2000 was a leap year, 1900 and 2100 were not.
        assert!(DayKey::from_civil(2000, 2, 29).is_some());
        assert_eq!(DayKey::from_civil(1900, 2, 29), None);
        assert_eq!(DayKey::from_civil(2100, 2, 29), None);
        assert_eq!(DayKey::from_civil(2026, 4, 31), None);
        assert_eq!(DayKey::from_civil(2026, 13, 1), None);
        assert_eq!(DayKey::from_civil(0, 1, 1), None);
        // Every day of years 1 to 9999 round-trips, and consecutive dates are consecutive days.
        let first = DayKey::from_civil(1, 1, 1).unwrap();
        let last = DayKey::from_civil(9999, 12, 31).unwrap();
        let mut previous: Option<(i64, u32, u32)> = None;
        for n in first.0..=last.0 {
            let (y, m, d) = DayKey(n).civil();
            assert_eq!(DayKey::from_civil(y, m, d), Some(DayKey(n)));
            if let Some((py, pm, pd)) = previous {
                assert!((y, m, d) > (py, pm, pd));
            }
            previous = Some((y, m, d));
        }
    }

    #[test]
    fn days_are_written_and_read_as_iso_dates() {
        let day = DayKey::parse("2026-12-05").unwrap();
        assert_eq!(day.to_string(), "2026-12-05");
        assert_eq!(day.month().to_string(), "2026-12");
        assert_eq!(day.week().monday().to_string(), "2026-11-30");
        assert_eq!(DayKey::parse("2026-11-30").unwrap().week(), day.week());
        assert_eq!(
            DayKey::parse("2026-11-29").unwrap().week().0,
            day.week().0 - 1
        );
        for bad in [
            "2026-12-5",
            "2026/12/05",
            "+026-12-05",
            "2026-02-30",
            "",
            "2026-12-05 ",
        ] {
            assert_eq!(DayKey::parse(bad), None, "{bad}");
        }
        assert_eq!(MonthKey(0).to_string(), "1970-01");
        assert_eq!(MonthKey(-1).to_string(), "1969-12");
        assert_eq!(
            DayKey::parse("2024-01-01")
                .unwrap()
                .month()
                .first_day()
                .to_string(),
            "2024-01-01"
        );
    }

    #[test]
    fn periods_follow_the_zone_at_their_edges() {
        let offset = 8 * 3600;
        // 2026-12-31T23:59:59.999+08:00 and the next millisecond, the first of January.
        let last = DayKey::parse("2026-12-31").unwrap().start(offset).0 + 86_400_000 - 1;
        let before = Periods::at(Timestamp(last), offset);
        let after = Periods::at(Timestamp(last + 1), offset);
        assert_eq!(before.day.to_string(), "2026-12-31");
        assert_eq!(after.day.to_string(), "2027-01-01");
        assert_eq!(before.month.to_string(), "2026-12");
        assert_eq!(after.month.to_string(), "2027-01");
        // 2027-01-01 is a Friday: the same week as 2026-12-28, a Monday.
        assert_eq!(after.week.monday().to_string(), "2026-12-28");
        assert_eq!(before.week, after.week);
    }

    #[test]
    fn offsets_are_read_as_written() {
        assert_eq!(parse_utc_offset("+08:00"), Some(28_800));
        assert_eq!(parse_utc_offset("-05:30"), Some(-19_800));
        assert_eq!(parse_utc_offset("Z"), Some(0));
        assert_eq!(parse_utc_offset("+14:00"), Some(50_400));
        for bad in ["+14:01", "08:00", "+8:00", "+08:60", "+08-00", "", "+0800"] {
            assert_eq!(parse_utc_offset(bad), None, "{bad}");
        }
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

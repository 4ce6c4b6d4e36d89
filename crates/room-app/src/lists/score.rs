//! A room's list score: its recent heat (each gift's heat decayed by a half-life since it
//! came) plus the configured boosts. Decay is arithmetic on two numbers a room's commit keeps
//! ([`RoomSummary::recent_heat_milli`] and [`RoomSummary::recent_heat_at`]); nothing is
//! rewritten on a timer.

use std::time::Duration;

use room_domain::Timestamp;

use crate::ports::RoomSummary;

/// How rooms are scored: the heat's half-life and the boosts, in heat points.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreRules {
    /// The time after which a gift's heat counts half.
    pub half_life: Duration,
    /// Added to the score of a room with someone on a seat.
    pub on_mic_boost: f64,
    /// Added to the score of a room created less than [`ScoreRules::new_room_for`] ago.
    pub new_room_boost: f64,
    /// How long a room counts as new.
    pub new_room_for: Duration,
}

impl Default for ScoreRules {
    fn default() -> Self {
        ScoreRules {
            half_life: Duration::from_secs(1800),
            on_mic_boost: 100.0,
            new_room_boost: 100.0,
            new_room_for: Duration::from_secs(3600),
        }
    }
}

/// The factor by which heat decays from `from` to `to` under `half_life`: 1 when `to` is
/// not after `from`, halving every `half_life`.
pub fn decay_factor(from: Timestamp, to: Timestamp, half_life: Duration) -> f64 {
    let elapsed_ms = to.0.saturating_sub(from.0).max(0) as f64;
    let half_life_ms = (half_life.as_millis() as f64).max(1.0);
    (-elapsed_ms / half_life_ms).exp2()
}

/// The recent heat, in thousandths of a point, after `added` heat points came at `now` to a
/// room whose recent heat was `milli` as of `at`: the old value decayed to `now`, plus the new
/// heat. Heat taken away (a negative `added`) never takes it below zero.
pub fn add_heat(milli: i64, at: Timestamp, now: Timestamp, added: i64, half_life: Duration) -> i64 {
    let decayed = milli as f64 * decay_factor(at, now, half_life);
    let sum = decayed + added as f64 * 1000.0;
    if sum <= 0.0 {
        0
    } else if sum >= i64::MAX as f64 {
        i64::MAX
    } else {
        sum.round() as i64
    }
}

impl ScoreRules {
    /// The recent heat of `room` at `now`, in heat points.
    pub fn recent_heat(&self, room: &RoomSummary, now: Timestamp) -> f64 {
        room.recent_heat_milli as f64 / 1000.0
            * decay_factor(room.recent_heat_at, now, self.half_life)
    }

    /// The `hot` score of `room` at `now`: its recent heat plus its boosts.
    pub fn score(&self, room: &RoomSummary, now: Timestamp) -> f64 {
        let mut score = self.recent_heat(room, now);
        if room.seats_taken > 0 {
            score += self.on_mic_boost;
        }
        let age_ms = now.0.saturating_sub(room.created_at.0);
        if room.created_at.0 > 0 && (age_ms as u128) < self.new_room_for.as_millis() {
            score += self.new_room_boost;
        }
        score
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn heat_halves_every_half_life_and_adds_up() {
        let t0 = Timestamp(1_000_000);
        let milli = add_heat(0, t0, t0, 100, HOUR);
        assert_eq!(milli, 100_000);
        let one_later = Timestamp(t0.0 + 3_600_000);
        assert_eq!(add_heat(milli, t0, one_later, 0, HOUR), 50_000);
        assert_eq!(add_heat(milli, t0, one_later, 10, HOUR), 60_000);
        let two_later = Timestamp(t0.0 + 7_200_000);
        assert_eq!(add_heat(milli, t0, two_later, 0, HOUR), 25_000);
        // A clock that went back decays nothing.
        assert_eq!(
            add_heat(milli, t0, Timestamp(t0.0 - 5_000), 0, HOUR),
            100_000
        );
        assert_eq!(add_heat(milli, t0, t0, -500, HOUR), 0, "never below zero");
    }

    fn summary(seats_taken: u32, created_at: i64, milli: i64, at: i64) -> RoomSummary {
        RoomSummary {
            room_id: room_domain::RoomId::new("r").unwrap(),
            owner: room_domain::UserId::new("o").unwrap(),
            name: "r".into(),
            open: true,
            heat: 0,
            online: 0,
            locked: false,
            version: 1,
            region: String::new(),
            cover_url: None,
            seats_taken,
            created_at: Timestamp(created_at),
            recent_heat_milli: milli,
            recent_heat_at: Timestamp(at),
        }
    }

    #[test]
    fn the_score_is_recent_heat_plus_boosts() {
        let rules = ScoreRules {
            half_life: HOUR,
            on_mic_boost: 7.0,
            new_room_boost: 50.0,
            new_room_for: HOUR,
        };
        let t = 10 * 3_600_000;
        // 80 points an hour ago: 40 now.
        assert_eq!(
            rules.score(&summary(0, 1, 80_000, t - 3_600_000), Timestamp(t)),
            40.0
        );
        assert_eq!(
            rules.score(&summary(2, 1, 80_000, t - 3_600_000), Timestamp(t)),
            47.0
        );
        // New for an hour after its creation, then not.
        assert_eq!(rules.score(&summary(0, t - 1, 0, t), Timestamp(t)), 50.0);
        assert_eq!(
            rules.score(&summary(0, t - 3_600_000, 0, t), Timestamp(t)),
            0.0
        );
        // A room summarised before its creation time was kept is not new.
        assert_eq!(rules.score(&summary(0, 0, 0, t), Timestamp(t)), 0.0);
    }
}

//! Two sides of a comparison measured in one run, taking turns, the side that goes first
//! changing every round (on, off, off, on, on, off): the host's drift over the run, and the
//! first turn's warm-up, fall on both sides alike.

use anyhow::Result;

use crate::report::report;
use crate::stats::median;

/// How many turns each side gets.
pub const ROUNDS: usize = 3;

/// Runs `turn(on, round)` for both sides in each of [`ROUNDS`] rounds, the side on first in
/// even rounds and second in odd ones; answers what the turns of each side answered, the side
/// on's first.
pub async fn in_turns<T>(
    mut turn: impl AsyncFnMut(bool, usize) -> Result<T>,
) -> Result<(Vec<T>, Vec<T>)> {
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let order = if round % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for side in order {
            let figures = turn(side, round).await?;
            if side {
                on.push(figures);
            } else {
                off.push(figures);
            }
        }
    }
    Ok((on, off))
}

/// Reports the median of the side on against the side off's, and how far it is above (or
/// below) it.
pub fn report_medians(
    what: &str,
    on: impl IntoIterator<Item = f64>,
    off: impl IntoIterator<Item = f64>,
) {
    let on = median(&mut on.into_iter().collect::<Vec<_>>());
    let off = median(&mut off.into_iter().collect::<Vec<_>>());
    report(
        what,
        &format!(
            "{on:.0} against {off:.0} ({:+.1} %)",
            (on / off.max(1.0) - 1.0) * 100.0
        ),
    );
}

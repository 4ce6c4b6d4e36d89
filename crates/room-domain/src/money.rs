//! Money: whole coins in an `i64`, with checked arithmetic only.

use std::fmt;
use std::iter::Sum;

use serde::{Deserialize, Serialize};

/// An amount of coins. Arithmetic is checked: an overflow is `None`, which the domain turns
/// into a rejection, never a wrap.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Coins(pub i64);

impl Coins {
    /// No coins.
    pub const ZERO: Coins = Coins(0);

    /// `self + other`, or `None` on overflow.
    pub fn checked_add(self, other: Coins) -> Option<Coins> {
        self.0.checked_add(other.0).map(Coins)
    }

    /// `self - other`, or `None` on overflow.
    pub fn checked_sub(self, other: Coins) -> Option<Coins> {
        self.0.checked_sub(other.0).map(Coins)
    }

    /// `self * factor`, or `None` on overflow.
    pub fn checked_mul(self, factor: i64) -> Option<Coins> {
        self.0.checked_mul(factor).map(Coins)
    }

    /// Whether the amount is below zero.
    pub fn is_negative(self) -> bool {
        self.0 < 0
    }
}

impl fmt::Display for Coins {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Sums with `i64` semantics; for amounts already known to fit (a checked total was computed
/// before). Panics on overflow in debug builds like any integer sum.
impl Sum for Coins {
    fn sum<I: Iterator<Item = Coins>>(iter: I) -> Coins {
        Coins(iter.map(|c| c.0).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_is_checked() {
        assert_eq!(Coins(2).checked_add(Coins(3)), Some(Coins(5)));
        assert_eq!(Coins(i64::MAX).checked_add(Coins(1)), None);
        assert_eq!(Coins(i64::MIN).checked_sub(Coins(1)), None);
        assert_eq!(Coins(i64::MAX / 2 + 1).checked_mul(2), None);
        assert_eq!(Coins(7).checked_mul(3), Some(Coins(21)));
        assert!(Coins(-1).is_negative());
    }
}

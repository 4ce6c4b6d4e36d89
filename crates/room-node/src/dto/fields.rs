//! How the request bodies' fields are read beyond serde's defaults: integers as JSON Schema
//! counts them ([`whole`]), an explicit `null` told from an absent field ([`present`]), and
//! the `true` default of switches.

use serde::{Deserialize, Deserializer};

/// Integers of request bodies as JSON Schema counts them: `3` and `3.0` are the same
/// integer there, so both are taken; `3.5` is refused, and so is a value outside the field's
/// range, with a message in JSON's terms.
pub(super) mod whole {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer};

    fn number<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i128, D::Error> {
        let number = serde_json::Number::deserialize(deserializer)?;
        if let Some(value) = number.as_i64() {
            return Ok(i128::from(value));
        }
        if let Some(value) = number.as_u64() {
            return Ok(i128::from(value));
        }
        match number.as_f64() {
            // Within ±2^63 a float's integer value converts exactly.
            Some(value) if value.fract() == 0.0 && value.abs() < 9.2e18 => Ok(value as i128),
            _ => Err(D::Error::custom(format!(
                "invalid value: {number}, expected a whole number"
            ))),
        }
    }

    fn within<E: serde::de::Error, T: TryFrom<i128>>(value: i128, range: &str) -> Result<T, E> {
        T::try_from(value).map_err(|_| {
            E::custom(format!(
                "invalid value: {value}, expected a whole number from {range}"
            ))
        })
    }

    /// An `i64`.
    pub fn i64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
        within(
            number(deserializer)?,
            "-9223372036854775808 to 9223372036854775807",
        )
    }

    /// An optional `i64`.
    pub fn option_i64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
        let Some(value) = Option::<serde_json::Number>::deserialize(deserializer)? else {
            return Ok(None);
        };
        i64(value).map(Some).map_err(D::Error::custom)
    }

    /// A `u64`.
    pub fn u64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
        within(number(deserializer)?, "0 to 18446744073709551615")
    }

    /// A `u32`.
    pub fn u32<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
        within(number(deserializer)?, "0 to 4294967295")
    }

    /// A list of `u32`s.
    pub fn u32_list<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u32>, D::Error> {
        Vec::<serde_json::Number>::deserialize(deserializer)?
            .into_iter()
            .map(|value| u32(value).map_err(D::Error::custom))
            .collect()
    }

    /// An optional list of `u32`s.
    pub fn option_u32_list<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Vec<u32>>, D::Error> {
        let Some(values) = Option::<Vec<serde_json::Number>>::deserialize(deserializer)? else {
            return Ok(None);
        };
        values
            .into_iter()
            .map(|value| u32(value).map_err(D::Error::custom))
            .collect::<Result<_, _>>()
            .map(Some)
    }

    /// An optional `u32`.
    pub fn option_u32<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u32>, D::Error> {
        let Some(value) = Option::<serde_json::Number>::deserialize(deserializer)? else {
            return Ok(None);
        };
        u32(value).map(Some).map_err(D::Error::custom)
    }
}

/// Tells an explicit `null` (`Some(None)`) from an absent field (`None`).
pub(super) fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// The default of switches that are on unless a request says otherwise.
pub(super) fn default_true() -> bool {
    true
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    struct Version {
        #[serde(deserialize_with = "super::whole::u64")]
        expected_version: u64,
    }

    fn version(body: &str) -> Result<u64, String> {
        serde_json::from_str::<Version>(body)
            .map(|v| v.expected_version)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn whole_numbers_written_as_floats_are_taken_exactly() {
        assert_eq!(version(r#"{"expected_version": 3.0}"#), Ok(3));
        // Below 2^53 every whole number is a float exactly: read as the nearest float, it is
        // itself (a reading one step off made it 2154026680007015.25, refused).
        assert_eq!(
            version(r#"{"expected_version": 2154026680007015.0}"#),
            Ok(2_154_026_680_007_015)
        );
        assert_eq!(
            version(r#"{"expected_version": 9007199254740991.0}"#),
            Ok(9_007_199_254_740_991)
        );
        assert!(version(r#"{"expected_version": 3.5}"#).is_err());
        assert!(version(r#"{"expected_version": -1}"#).is_err());
    }
}

//! The rocket's levels at run time: the first version seeded from the configured rules, the
//! next ones stored by operators ([`change_rocket`]), and each node's cells taking the newest
//! version ([`refresh_rocket`]) from their next batch, without a restart. A room fuels and
//! ignites by the levels current when it does; a rocket counting down launches with the prize
//! it ignited with ([`RoomRocketIgnited`](room_domain::Event::RoomRocketIgnited)), never with
//! one changed in the middle of its countdown.

use room_domain::{FIRST_BILLING_VERSION, RocketLevel, RocketSettings, validate_rocket_levels};

use crate::cell::CellRuntime;
use crate::error::{Error, Result};
use crate::ports::RocketSettingsStoreRef;

/// The levels stored as version 1 when the store has none: `levels` (the configured rules')
/// unless another process stored a version first. Returns the current settings; stored ones
/// that fail validation (written by hand, or by another release) are [`Error::Corrupt`].
pub async fn seed_rocket(
    store: &RocketSettingsStoreRef,
    levels: &[RocketLevel],
) -> Result<RocketSettings> {
    if let Some(current) = store.current_rocket().await? {
        validate_rocket_levels(&current.levels).map_err(|e| {
            Error::corrupt(format!(
                "stored rocket settings version {}: {e}",
                current.version
            ))
        })?;
        return Ok(current);
    }
    let first = RocketSettings {
        version: FIRST_BILLING_VERSION,
        levels: levels.to_vec(),
    };
    validate_rocket_levels(&first.levels)
        .map_err(|e| Error::Invalid(format!("rocket levels: {e}")))?;
    match store.put_rocket(&first).await {
        Ok(()) => Ok(first),
        Err(Error::Conflict(_)) => store
            .current_rocket()
            .await?
            .ok_or_else(|| Error::Conflict("the rocket settings vanished".into())),
        Err(other) => Err(other),
    }
}

/// Stores `levels` as the next version if the current one is still `expected_version`:
/// [`Error::Conflict`] otherwise, [`Error::Invalid`] for levels
/// [`validate_rocket_levels`] refuses. Returns the settings stored.
pub async fn change_rocket(
    store: &RocketSettingsStoreRef,
    expected_version: u64,
    levels: Vec<RocketLevel>,
) -> Result<RocketSettings> {
    let version = expected_version
        .checked_add(1)
        .ok_or_else(|| Error::Invalid(format!("expected_version {expected_version}")))?;
    validate_rocket_levels(&levels).map_err(|e| Error::Invalid(format!("rocket levels: {e}")))?;
    let settings = RocketSettings { version, levels };
    store
        .put_rocket(&settings)
        .await
        .map_err(|error| match error {
            Error::Conflict(_) => Error::Conflict(format!(
                "the rocket settings are no longer at version {expected_version}"
            )),
            other => other,
        })?;
    Ok(settings)
}

/// Has `runtime`'s cells take the newest stored version of the levels, if it is newer than
/// theirs; returns 1 when they took one, else 0. A stored version that fails validation (written
/// by another release, or by hand) is refused ([`Error::Corrupt`]) and the cells keep theirs.
pub async fn refresh_rocket(store: &RocketSettingsStoreRef, runtime: &CellRuntime) -> Result<u64> {
    let Some(current) = store.current_rocket().await? else {
        return Ok(0);
    };
    if current.version <= runtime.rocket_version() {
        return Ok(0);
    }
    validate_rocket_levels(&current.levels).map_err(|e| {
        Error::corrupt(format!(
            "stored rocket settings version {}: {e}",
            current.version
        ))
    })?;
    if runtime.set_rocket(&current) {
        tracing::info!(
            version = current.version,
            "the rooms take new rocket levels"
        );
        metrics::gauge!("room_rocket_settings_version").set(current.version as f64);
        return Ok(1);
    }
    Ok(0)
}

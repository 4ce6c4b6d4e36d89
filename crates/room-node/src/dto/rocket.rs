//! The bodies of the rocket settings routes.

use room_domain::{Coins, RocketLevel, RocketSettings};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::fields::whole;

/// One level of the room rocket.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RocketLevelBody {
    /// Fuel (the coin value of paid gifts) that ignites this level; more than the level
    /// before's.
    #[serde(deserialize_with = "whole::i64")]
    #[schema(minimum = 1)]
    pub fuel: i64,
    /// Seconds from ignition to launch.
    #[serde(deserialize_with = "whole::u32")]
    #[schema(minimum = 0, maximum = 3_600)]
    pub countdown_secs: u32,
    /// Coins shared among the winners at launch.
    #[serde(deserialize_with = "whole::i64")]
    #[schema(minimum = 0)]
    pub reward_pool: i64,
    /// How many members present at launch share the pool (fewer if fewer are present); at
    /// least 1 when the pool is not empty.
    #[serde(deserialize_with = "whole::u32")]
    #[schema(minimum = 0, maximum = 10_000)]
    pub winners: u32,
    /// The most one winner is given at one launch; none when absent.
    #[serde(
        default,
        deserialize_with = "whole::option_i64",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(minimum = 1)]
    pub reward_cap: Option<i64>,
}

impl From<RocketLevel> for RocketLevelBody {
    fn from(level: RocketLevel) -> Self {
        RocketLevelBody {
            fuel: level.fuel,
            countdown_secs: level.countdown_secs,
            reward_pool: level.reward_pool.0,
            winners: level.winners,
            reward_cap: level.reward_cap.map(|cap| cap.0),
        }
    }
}

impl From<RocketLevelBody> for RocketLevel {
    fn from(body: RocketLevelBody) -> Self {
        RocketLevel {
            fuel: body.fuel,
            countdown_secs: body.countdown_secs,
            reward_pool: Coins(body.reward_pool),
            winners: body.winners,
            reward_cap: body.reward_cap.map(Coins),
        }
    }
}

/// `GET /v1/admin/rocket`: the rocket's current levels.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RocketSettingsResponse {
    /// The version: 1 for the levels first configured, one more for each change.
    pub version: u64,
    /// The levels, from level 1 upwards.
    pub levels: Vec<RocketLevelBody>,
}

impl From<RocketSettings> for RocketSettingsResponse {
    fn from(settings: RocketSettings) -> Self {
        RocketSettingsResponse {
            version: settings.version,
            levels: settings.levels.into_iter().map(Into::into).collect(),
        }
    }
}

/// `PUT /v1/admin/rocket`: the next version of the rocket's levels.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutRocketRequest {
    /// The version this change replaces, as `GET` answered it: stored as the next version only
    /// if it is still current (else 409 `ROCKET_VERSION_STALE`).
    #[serde(deserialize_with = "whole::u64")]
    #[schema(minimum = 0)]
    pub expected_version: u64,
    /// The levels, from level 1 upwards: 1 to 50, fuel rising.
    #[schema(min_items = 1, max_items = 50)]
    pub levels: Vec<RocketLevelBody>,
}

//! Who acts on a room: a signed-in user, the service itself, or a robot. `decide` is given the
//! actor with each command (through [`Ctx`](crate::Ctx)), and the room's state asks it whether
//! a join needs the password.

use serde::{Deserialize, Serialize};

use crate::ids::UserId;

/// A signed-in user acting on a room.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserActor {
    /// Who.
    pub user_id: UserId,
    /// Their VIP level.
    pub vip_level: u8,
    /// Whether they are a platform admin (may close any room and moderate anyone but owners).
    pub platform_admin: bool,
}

/// Who issues a command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Actor {
    /// A user through the API.
    User(UserActor),
    /// The service itself: timers, presence, RTC callbacks, the gift saga.
    System,
    /// A robot, driven by the robot orchestrator: a user marked as a robot in its
    /// configuration, never a client of the API. It acts as an ordinary member (VIP level 0,
    /// not a platform admin); its joins and leaves are marked as a robot's, and it alone may
    /// send [`CommandKind::RobotGift`], and never a paid [`CommandKind::ApplyGift`]. Stored as
    /// `{"kind": "robot", "user_id": "..."}`.
    ///
    /// [`CommandKind::RobotGift`]: crate::CommandKind::RobotGift
    /// [`CommandKind::ApplyGift`]: crate::CommandKind::ApplyGift
    #[serde(with = "robot_actor")]
    Robot(UserId),
}

/// The JSON of [`Actor::Robot`]: an object with the robot's `user_id` beside the `kind` tag
/// (an internally tagged variant cannot hold a bare string).
mod robot_actor {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::ids::UserId;

    #[derive(Serialize)]
    struct RobotRef<'a> {
        user_id: &'a UserId,
    }

    #[derive(Deserialize)]
    struct Robot {
        user_id: UserId,
    }

    pub(super) fn serialize<S: Serializer>(
        user_id: &UserId,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        RobotRef { user_id }.serialize(serializer)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<UserId, D::Error> {
        Robot::deserialize(deserializer).map(|robot| robot.user_id)
    }
}

impl Actor {
    /// An ordinary user with VIP level 0.
    pub fn user(user_id: UserId) -> Self {
        Actor::User(UserActor {
            user_id,
            vip_level: 0,
            platform_admin: false,
        })
    }

    /// The acting user's (or robot's) id, unless the system acts.
    pub fn user_id(&self) -> Option<&UserId> {
        match self {
            Actor::User(user) => Some(&user.user_id),
            Actor::Robot(robot) => Some(robot),
            Actor::System => None,
        }
    }

    /// Whether a robot acts.
    pub fn is_robot(&self) -> bool {
        matches!(self, Actor::Robot(_))
    }
}

//! [`RobotAdminError`]: why a robot-room administration was refused, or at which step it
//! failed.

use room_domain::RoomId;

use crate::Error;
use crate::ports::RobotRoomProblem;

/// Why a creation's key or content cannot name the room it asks for: the room it names is
/// not that room, or no longer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExistsReason {
    /// A concurrent repeat created the room first (long ago by the command log's measure), or
    /// it was closed meanwhile.
    CreatedOrClosedMeanwhile,
    /// The room was closed while its profile was being applied.
    ClosedMeanwhile,
    /// The room has another name, seat count, region or owner than the request.
    OtherRoom,
    /// The room is closed.
    Closed,
    /// The room has a robot configuration that says something else.
    ConfiguredOtherwise,
}

impl std::fmt::Display for ExistsReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ExistsReason::CreatedOrClosedMeanwhile => "was created or closed meanwhile",
            ExistsReason::ClosedMeanwhile => "was closed meanwhile",
            ExistsReason::OtherRoom => "has another name, seat count, region or owner",
            ExistsReason::Closed => "is closed",
            ExistsReason::ConfiguredOtherwise => "is a robot room configured otherwise",
        })
    }
}

/// Why a robot-room administration did not do what it was asked. The refusals
/// ([`Invalid`](Self::Invalid), [`InvalidUrl`](Self::InvalidUrl), [`NotFound`](Self::NotFound), [`Exists`](Self::Exists),
/// [`Changed`](Self::Changed), [`RoomClosed`](Self::RoomClosed)) are definite; the failures
/// carry the port's or the room's [`Error`] as their source, and say how far the request got.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RobotAdminError {
    /// A rule of the configuration is broken: the field and the rule. Nothing was written.
    #[error("invalid robot room: {0}")]
    Invalid(#[from] RobotRoomProblem),
    /// The profile's cover URL breaks the image URL rule
    /// ([`check_image_url`](room_domain::check_image_url)): the field and the rule. Nothing was
    /// written.
    #[error("{0}")]
    InvalidUrl(RobotRoomProblem),
    /// The room has no robot room configuration.
    #[error("room {0} has no robot room configuration")]
    NotFound(RoomId),
    /// A creation's key or content names `room_id`, which is not the room it asks for.
    /// Nothing was written.
    #[error("this key or content was used before for room {room_id}, which {why}")]
    Exists {
        /// The room the key or content names.
        room_id: RoomId,
        /// Why that room is not the one asked for.
        why: ExistsReason,
    },
    /// A change based on a version the configuration is not at, or that lost a race to
    /// another change. Nothing was written.
    #[error("robot room {0} changed meanwhile: read it again")]
    Changed(RoomId),
    /// The profile would change, but the room is closed.
    #[error("room {0} is closed: its profile cannot change")]
    RoomClosed(RoomId),
    /// A creation made its room, but storing its configuration failed: the same request
    /// again finishes it.
    #[error("the room was created but its robot configuration is not stored yet")]
    ConfigNotStored(#[source] Error),
    /// A change stored the configuration, but the room does not show its profile yet: the
    /// same request again finishes it.
    #[error("the configuration is stored but the room does not show its profile yet")]
    ProfileNotShown(#[source] Error),
    /// A port or the room failed (or refused) before the request was done.
    #[error(transparent)]
    Service(#[from] Error),
}

impl RobotAdminError {
    /// Whether the same request may succeed later: only for failures whose cause is
    /// retryable ([`Error::is_retryable`]).
    pub fn is_retryable(&self) -> bool {
        match self {
            RobotAdminError::ConfigNotStored(error)
            | RobotAdminError::ProfileNotShown(error)
            | RobotAdminError::Service(error) => error.is_retryable(),
            _ => false,
        }
    }
}

//! Why a room refuses a command. A rejection is a definite answer of the room: the gift saga
//! refunds on it, and nothing was written.

use serde::{Deserialize, Serialize};

use crate::ids::{SeatIndex, UserId};
use crate::time::Timestamp;

/// A text field of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    /// The room name.
    Name,
    /// The notice board.
    Notice,
    /// The cover image URL.
    CoverUrl,
    /// The background image URL.
    BackgroundUrl,
    /// The region code.
    Region,
    /// Why an operator acted (a resource revoke).
    Reason,
    /// A system message's text.
    Message,
}

impl Field {
    /// The field's name in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Field::Name => "name",
            Field::Notice => "notice",
            Field::CoverUrl => "cover_url",
            Field::BackgroundUrl => "background_url",
            Field::Region => "region",
            Field::Reason => "reason",
            Field::Message => "text",
        }
    }

    /// The most characters the field may hold: 30 for the name, 500 for the notice, 2,048
    /// for an image URL (ASCII, so as many bytes: [`MAX_IMAGE_URL_BYTES`]), 32 for the region.
    ///
    /// [`MAX_IMAGE_URL_BYTES`]: crate::MAX_IMAGE_URL_BYTES
    pub const fn max_chars(self) -> u32 {
        match self {
            Field::Name => 30,
            Field::Notice => 500,
            Field::CoverUrl | Field::BackgroundUrl => 2048,
            Field::Region => 32,
            Field::Reason => 200,
            Field::Message => 500,
        }
    }

    /// Checks `text` against the rule of a text field: at most [`Field::max_chars`] characters, none
    /// of them a control character (but a line break or tab in the notice) or a
    /// bidirectional embedding, override or isolate (U+202A to U+202E, U+2066 to U+2069):
    /// people read these texts, and such characters make them show something else. Image
    /// URLs have a rule of their own: [`check_image_url`](crate::check_image_url).
    pub fn check(self, text: &str) -> Result<(), Rejection> {
        let max = self.max_chars();
        if text.len() > max as usize && text.chars().count() > max as usize {
            return Err(Rejection::FieldTooLong { field: self, max });
        }
        let refused = |c: char| {
            let line_break =
                matches!(c, '\n' | '\r' | '\t') && matches!(self, Field::Notice | Field::Message);
            (c.is_control() && !line_break)
                || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
        };
        match text.chars().find(|c| refused(*c)) {
            Some(c) => Err(Rejection::FieldInvalidCharacter {
                field: self,
                character: u32::from(c),
            }),
            None => Ok(()),
        }
    }
}

/// Why the room refused a command. Each variant has a stable [`Rejection::code`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "code", rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum Rejection {
    /// The room does not exist.
    #[error("the room does not exist")]
    RoomNotFound,
    /// `CreateRoom` for a room that exists.
    #[error("the room already exists")]
    RoomAlreadyExists,
    /// The room is closed.
    #[error("the room is closed")]
    RoomClosed,
    /// The room has as many members as it may.
    #[error("the room is full ({max} members)")]
    RoomFull {
        /// The limit.
        max: u32,
    },
    /// The actor's role does not allow this command.
    #[error("not allowed")]
    Forbidden,
    /// The user is not in the room.
    #[error("{user} is not in the room")]
    NotAMember {
        /// Who.
        user: UserId,
    },
    /// The user is banned from the room.
    #[error("{user} is banned until {until}")]
    Banned {
        /// Who.
        user: UserId,
        /// Until when.
        until: Timestamp,
    },
    /// The room is locked and the password did not match.
    #[error("wrong room password")]
    WrongPassword,
    /// The target outranks the actor (the owner, another admin, or oneself).
    #[error("{target} cannot be moderated by this user")]
    CannotModerate {
        /// Who was targeted.
        target: UserId,
    },
    /// The target's VIP level protects them from this act of a room admin: a kick (or ban),
    /// or a chat mute, as their level's privileges say.
    #[error("{target} is protected by VIP level {vip_level}")]
    VipProtected {
        /// Who was targeted.
        target: UserId,
        /// Their VIP level.
        vip_level: u8,
    },
    /// Unban of a user who is not banned.
    #[error("{user} is not banned")]
    NotBanned {
        /// Who.
        user: UserId,
    },
    /// The room already has as many admins as it may.
    #[error("the room already has {max} admins")]
    TooManyAdmins {
        /// The limit.
        max: u32,
    },
    /// No such seat in this room.
    #[error("seat {seat} does not exist (the room has {seat_count} seats)")]
    InvalidSeat {
        /// The seat asked for.
        seat: SeatIndex,
        /// Seats the room has.
        seat_count: u8,
    },
    /// The seat is taken by someone else.
    #[error("seat {seat} is occupied")]
    SeatOccupied {
        /// The seat.
        seat: SeatIndex,
    },
    /// The seat is locked.
    #[error("seat {seat} is locked")]
    SeatLocked {
        /// The seat.
        seat: SeatIndex,
    },
    /// The seat is held for an invited user until their invite expires.
    #[error("seat {seat} is held for an invited user")]
    SeatHeld {
        /// The seat.
        seat: SeatIndex,
    },
    /// The seat is reserved for VIP, and the user's level does not give seat priority.
    #[error("seat {seat} is reserved for VIP")]
    VipSeat {
        /// The seat.
        seat: SeatIndex,
    },
    /// The background is exclusive to a VIP level the user does not have.
    #[error("this background is exclusive to a VIP level the user does not have")]
    VipBackground,
    /// The room has as many open invites as it may.
    #[error("the room has {max} open invites, as many as it may")]
    TooManyInvites {
        /// The limit.
        max: u32,
    },
    /// The seat is empty.
    #[error("seat {seat} is empty")]
    SeatEmpty {
        /// The seat.
        seat: SeatIndex,
    },
    /// The user does not sit on that seat (or on any seat).
    #[error("{user} is not on the seat")]
    NotOnSeat {
        /// Who.
        user: UserId,
    },
    /// Only a moderator may unmute a seat a moderator muted.
    #[error("seat {seat} was muted by a moderator")]
    SeatMutedByModerator {
        /// The seat.
        seat: SeatIndex,
    },
    /// A timer fired for a state that has since moved on (another seat session, another
    /// rocket, a reset day).
    #[error("the timer no longer applies")]
    StaleTimer,
    /// A launch before the rocket's launch time.
    #[error("the rocket launches at {launch_at}")]
    RocketNotReady {
        /// The launch time.
        launch_at: Timestamp,
    },
    /// A mic publish timeout before the seat's publish deadline (a clock behind the one
    /// that fired it): the timer is still to come, not stale.
    #[error("the publish deadline is {deadline}")]
    PublishDeadlineAhead {
        /// The seat session's publish deadline.
        deadline: Timestamp,
    },
    /// A text field is empty where it must not be.
    #[error("{} must not be empty", field.as_str())]
    FieldEmpty {
        /// The field.
        field: Field,
    },
    /// A text field is too long.
    #[error("{} must be at most {max} characters", field.as_str())]
    FieldTooLong {
        /// The field.
        field: Field,
        /// The limit in characters.
        max: u32,
    },
    /// A text field holds a character it must not: a control character (a line break is
    /// allowed in the notice only) or a bidirectional override, which would let a name show
    /// other text than it holds.
    #[error("{} must not contain U+{character:04X}", field.as_str())]
    FieldInvalidCharacter {
        /// The field.
        field: Field,
        /// The first character refused, as its code point.
        character: u32,
    },
    /// An image URL that is not an absolute `http` or `https` URL of the plain shape the rule
    /// asks for, or is longer than 2,048 bytes ([`check_image_url`](crate::check_image_url)).
    #[error(
        "{} must be an absolute http or https URL of at most 2048 bytes: a host name, an optional \
         port, then printable ASCII without spaces",
        field.as_str()
    )]
    InvalidUrl {
        /// The field.
        field: Field,
    },
    /// A seat count outside 1..=20.
    #[error("seat count {seat_count} is outside 1..=20")]
    InvalidSeatCount {
        /// What was asked for.
        seat_count: u8,
    },
    /// A gift count outside the allowed range.
    #[error("gift count {count} is outside 1..={max}")]
    InvalidGiftCount {
        /// What was asked for.
        count: u32,
        /// The limit.
        max: u32,
    },
    /// No recipients, or more than allowed.
    #[error("{count} recipients is outside 1..={max}")]
    InvalidRecipientCount {
        /// How many were named.
        count: u32,
        /// The limit.
        max: u32,
    },
    /// A recipient named twice.
    #[error("{user} is named twice as a recipient")]
    DuplicateRecipient {
        /// Who.
        user: UserId,
    },
    /// A gift with a negative price, heat or fuel.
    #[error("the gift has a negative price, heat or fuel")]
    InvalidGift,
    /// An amount does not fit in 64 bits.
    #[error("the amount overflows")]
    AmountOverflow,
    /// The sender names themselves as a recipient of their own gift.
    #[error("a gift cannot be sent to its sender")]
    SelfGift,
    /// A robot gift from an actor that is not a robot, or a paid gift from a robot: robots
    /// give only free robot gifts, and only robots do.
    #[error("only robots send robot gifts, and robots send no other")]
    NotARobot,
    /// A resource revoke that names no resource, or one twice.
    #[error("name 1 to 4 distinct resources to revoke")]
    InvalidResources,
    /// A batch gift (`all_mic`, `all_room`) whose scope names nobody but the sender.
    #[error("nobody but the sender is there to receive the gift")]
    NoRecipients,
}

impl Rejection {
    /// The stable code of this rejection, as the API sends it (`"ROOM_CLOSED"`).
    pub fn code(&self) -> &'static str {
        match self {
            Rejection::RoomNotFound => "ROOM_NOT_FOUND",
            Rejection::RoomAlreadyExists => "ROOM_ALREADY_EXISTS",
            Rejection::RoomClosed => "ROOM_CLOSED",
            Rejection::RoomFull { .. } => "ROOM_FULL",
            Rejection::Forbidden => "FORBIDDEN",
            Rejection::NotAMember { .. } => "NOT_A_MEMBER",
            Rejection::Banned { .. } => "BANNED",
            Rejection::WrongPassword => "WRONG_PASSWORD",
            Rejection::CannotModerate { .. } => "CANNOT_MODERATE",
            Rejection::VipProtected { .. } => "VIP_PROTECTED",
            Rejection::NotBanned { .. } => "NOT_BANNED",
            Rejection::TooManyAdmins { .. } => "TOO_MANY_ADMINS",
            Rejection::InvalidSeat { .. } => "INVALID_SEAT",
            Rejection::SeatOccupied { .. } => "SEAT_OCCUPIED",
            Rejection::SeatLocked { .. } => "SEAT_LOCKED",
            Rejection::SeatHeld { .. } => "SEAT_HELD",
            Rejection::VipSeat { .. } => "VIP_SEAT",
            Rejection::VipBackground => "VIP_BACKGROUND",
            Rejection::TooManyInvites { .. } => "TOO_MANY_INVITES",
            Rejection::SeatEmpty { .. } => "SEAT_EMPTY",
            Rejection::NotOnSeat { .. } => "NOT_ON_SEAT",
            Rejection::SeatMutedByModerator { .. } => "SEAT_MUTED_BY_MODERATOR",
            Rejection::StaleTimer => "STALE_TIMER",
            Rejection::RocketNotReady { .. } => "ROCKET_NOT_READY",
            Rejection::PublishDeadlineAhead { .. } => "PUBLISH_DEADLINE_AHEAD",
            Rejection::FieldEmpty { .. } => "FIELD_EMPTY",
            Rejection::FieldTooLong { .. } => "FIELD_TOO_LONG",
            Rejection::FieldInvalidCharacter { .. } => "FIELD_INVALID_CHARACTER",
            Rejection::InvalidUrl { .. } => "INVALID_URL",
            Rejection::InvalidSeatCount { .. } => "INVALID_SEAT_COUNT",
            Rejection::InvalidGiftCount { .. } => "INVALID_GIFT_COUNT",
            Rejection::InvalidRecipientCount { .. } => "INVALID_RECIPIENT_COUNT",
            Rejection::DuplicateRecipient { .. } => "DUPLICATE_RECIPIENT",
            Rejection::InvalidGift => "INVALID_GIFT",
            Rejection::AmountOverflow => "AMOUNT_OVERFLOW",
            Rejection::SelfGift => "SELF_GIFT",
            Rejection::NotARobot => "NOT_A_ROBOT",
            Rejection::NoRecipients => "NO_RECIPIENTS",
            Rejection::InvalidResources => "INVALID_RESOURCES",
        }
    }

    /// The kind of refusal, for mapping to a transport status.
    pub fn kind(&self) -> RejectionKind {
        match self {
            Rejection::RoomNotFound => RejectionKind::NotFound,
            Rejection::Forbidden
            | Rejection::CannotModerate { .. }
            | Rejection::VipProtected { .. }
            | Rejection::VipSeat { .. }
            | Rejection::VipBackground
            | Rejection::Banned { .. }
            | Rejection::WrongPassword
            | Rejection::NotARobot => RejectionKind::Forbidden,
            Rejection::RoomAlreadyExists
            | Rejection::SeatOccupied { .. }
            | Rejection::SeatHeld { .. }
            | Rejection::StaleTimer => RejectionKind::Conflict,
            Rejection::FieldEmpty { .. }
            | Rejection::FieldTooLong { .. }
            | Rejection::FieldInvalidCharacter { .. }
            | Rejection::InvalidUrl { .. }
            | Rejection::InvalidSeatCount { .. }
            | Rejection::InvalidGiftCount { .. }
            | Rejection::InvalidRecipientCount { .. }
            | Rejection::DuplicateRecipient { .. }
            | Rejection::InvalidGift
            | Rejection::InvalidResources
            | Rejection::InvalidSeat { .. }
            | Rejection::AmountOverflow => RejectionKind::BadInput,
            _ => RejectionKind::Rule,
        }
    }
}

/// Broad classes of [`Rejection`], for transports (400, 403, 404, 409, 422).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectionKind {
    /// The input is malformed or out of range.
    BadInput,
    /// The actor may not do this.
    Forbidden,
    /// The room does not exist.
    NotFound,
    /// The state conflicts with the command.
    Conflict,
    /// A room rule refused it.
    Rule,
}

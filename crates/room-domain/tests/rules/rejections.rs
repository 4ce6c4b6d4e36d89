//! Rejection codes: unique, SCREAMING_SNAKE_CASE, and equal to the JSON tag.

use std::collections::BTreeSet;

use room_domain::{Field, Rejection};

use crate::fixture::{NOON, id, seat};

fn one_of_each_rejection() -> Vec<Rejection> {
    let user = id("alice");
    vec![
        Rejection::RoomNotFound,
        Rejection::RoomAlreadyExists,
        Rejection::RoomClosed,
        Rejection::RoomFull { max: 1 },
        Rejection::Forbidden,
        Rejection::NotAMember { user: user.clone() },
        Rejection::Banned {
            user: user.clone(),
            until: NOON,
        },
        Rejection::WrongPassword,
        Rejection::CannotModerate {
            target: user.clone(),
        },
        Rejection::VipProtected {
            target: user.clone(),
            vip_level: 5,
        },
        Rejection::NotBanned { user: user.clone() },
        Rejection::TooManyAdmins { max: 1 },
        Rejection::InvalidSeat {
            seat: seat(9),
            seat_count: 8,
        },
        Rejection::SeatOccupied { seat: seat(0) },
        Rejection::SeatLocked { seat: seat(0) },
        Rejection::SeatEmpty { seat: seat(0) },
        Rejection::NotOnSeat { user: user.clone() },
        Rejection::SeatMutedByModerator { seat: seat(0) },
        Rejection::StaleTimer,
        Rejection::RocketNotReady { launch_at: NOON },
        Rejection::FieldEmpty { field: Field::Name },
        Rejection::FieldTooLong {
            field: Field::Notice,
            max: 500,
        },
        Rejection::InvalidUrl {
            field: Field::CoverUrl,
        },
        Rejection::InvalidSeatCount { seat_count: 0 },
        Rejection::InvalidGiftCount { count: 0, max: 1 },
        Rejection::InvalidRecipientCount { count: 0, max: 1 },
        Rejection::DuplicateRecipient { user },
        Rejection::InvalidGift,
        Rejection::AmountOverflow,
        Rejection::SelfGift,
        Rejection::NoRecipients,
        Rejection::InvalidResources,
    ]
}

#[test]
fn rejection_codes_are_unique_screaming_snake_case_and_match_the_json_tag() {
    let rejections = one_of_each_rejection();
    let codes: BTreeSet<&str> = rejections.iter().map(Rejection::code).collect();
    assert_eq!(codes.len(), rejections.len(), "codes are unique: {codes:?}");
    for rejection in &rejections {
        let code = rejection.code();
        let well_formed = !code.is_empty()
            && code.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            && !code.starts_with('_')
            && !code.ends_with('_')
            && !code.contains("__");
        assert!(well_formed, "{code}");
        let json = serde_json::to_value(rejection).expect("serializes");
        assert_eq!(json["code"], code, "{rejection:?}");
        assert!(!rejection.to_string().is_empty());
    }
}

//! Identifiers: opaque, validated strings for rooms, users, gifts, orders and commands, and small
//! integer ids for seats, seat sessions and rockets.
//!
//! String ids are reference counted (`Arc<str>`), so copying one into an event is a counter
//! increment, not an allocation: `decide` copies user ids into every event it produces.

use std::borrow::Borrow;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize};

/// Why a string is not a valid identifier.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdError {
    /// The string is empty.
    #[error("{kind} must not be empty")]
    Empty {
        /// Which kind of id was being built.
        kind: &'static str,
    },
    /// The string has more characters than the kind allows.
    #[error("{kind} must be at most {max} characters, got {len}")]
    TooLong {
        /// Which kind of id was being built.
        kind: &'static str,
        /// The limit in characters.
        max: usize,
        /// The length that was given, in characters.
        len: usize,
    },
    /// The string contains whitespace, a control, format or bidirectional character, an
    /// invisible character, or `/`.
    #[error(
        "{kind} must be printable: no whitespace, control, invisible or bidirectional \
         characters, and no '/'"
    )]
    BadCharacter {
        /// Which kind of id was being built.
        kind: &'static str,
    },
}

fn validate(kind: &'static str, s: &str) -> Result<(), IdError> {
    if s.is_empty() {
        return Err(IdError::Empty { kind });
    }
    // Count characters only when the byte length could exceed the limit.
    if s.len() > MAX_ID_CHARS {
        let len = s.chars().count();
        if len > MAX_ID_CHARS {
            return Err(IdError::TooLong {
                kind,
                max: MAX_ID_CHARS,
                len,
            });
        }
    }
    let refused = if s.is_ascii() {
        // Most ids: printable ASCII is `!` to `~`, and of those only `/` is refused.
        s.bytes().any(|b| !(b'!'..=b'~').contains(&b) || b == b'/')
    } else {
        s.chars().any(refused_in_id)
    };
    if refused {
        return Err(IdError::BadCharacter { kind });
    }
    Ok(())
}

/// Whether `c` may not stand in an id. Ids are shown to people and compared as strings, so
/// two ids that look alike must be equal: no whitespace, no control characters, no format
/// characters (Unicode category Cf: zero-width spaces and joiners, bidirectional marks,
/// embeddings, overrides and isolates, the byte order mark), no other default-ignorable
/// (invisible) characters, no noncharacters, and nothing outside the Basic Multilingual Plane
/// (where the tag characters and the other invisible supplementary characters are, and which
/// a pattern in a JSON Schema can only describe the same way in every regex dialect by
/// leaving out); and no `/`, which would read as a path separator wherever an id stands in a
/// URL or a key. The OpenAPI document's id pattern lists the complement of this set.
fn refused_in_id(c: char) -> bool {
    c.is_whitespace()
        || c.is_control()
        || c == '/'
        || c > '\u{FFFF}'
        || matches!(
            c,
            // Format characters (Cf).
            '\u{00AD}'
                | '\u{0600}'..='\u{0605}'
                | '\u{061C}'
                | '\u{06DD}'
                | '\u{070F}'
                | '\u{0890}'..='\u{0891}'
                | '\u{08E2}'
                | '\u{180E}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{FEFF}'
                | '\u{FFF9}'..='\u{FFFB}'
                // Other default-ignorable characters: invisible fillers, joiners and
                // variation selectors.
                | '\u{034F}'
                | '\u{115F}'..='\u{1160}'
                | '\u{17B4}'..='\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FFA0}'
                | '\u{FFF0}'..='\u{FFF8}'
                // Noncharacters.
                | '\u{FDD0}'..='\u{FDEF}'
                | '\u{FFFE}'..='\u{FFFF}'
        )
}

/// The longest string id, in characters.
pub const MAX_ID_CHARS: usize = 64;

macro_rules! string_id {
    ($(#[$meta:meta])* $name:ident, $kind:literal) => {
        $(#[$meta])*
        ///
        /// 1 to 64 printable characters of the Basic Multilingual Plane: no whitespace, no
        /// control, format, bidirectional or other invisible characters, no `/`. Serialized as
        /// a JSON string.
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        #[serde(transparent)]
        pub struct $name(Arc<str>);

        impl $name {
            /// Validates `s` and builds the id.
            pub fn new(s: impl AsRef<str>) -> Result<Self, IdError> {
                let s = s.as_ref();
                validate($kind, s)?;
                Ok(Self(Arc::from(s)))
            }

            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), &*self.0)
            }
        }

        impl FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, IdError> {
                Self::new(s)
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;
            fn try_from(s: String) -> Result<Self, IdError> {
                validate($kind, &s)?;
                Ok(Self(Arc::from(s)))
            }
        }

        impl TryFrom<&str> for $name {
            type Error = IdError;
            fn try_from(s: &str) -> Result<Self, IdError> {
                Self::new(s)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                // Validated where the deserializer holds the text, and copied once, into
                // the id's own allocation.
                struct Visitor;
                impl serde::de::Visitor<'_> for Visitor {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("a string")
                    }
                    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<$name, E> {
                        $name::new(s).map_err(E::custom)
                    }
                }
                d.deserialize_str(Visitor)
            }
        }
    };
}

string_id!(
    /// A room, as the service and its clients name it.
    RoomId,
    "room id"
);
string_id!(
    /// A user of the app: the `sub` of their token.
    UserId,
    "user id"
);
string_id!(
    /// A catalog gift.
    GiftId,
    "gift id"
);
string_id!(
    /// A gift order: chosen by the client, unique per sender; with the sender, the idempotency
    /// key of a gift from debit to apply.
    OrderId,
    "order id"
);
string_id!(
    /// A command: a repeated id is the same command, and gets the first answer.
    CommandId,
    "command id"
);

impl From<OrderId> for CommandId {
    /// The command id of an order stored before orders were scoped by sender
    /// ([`OrderKeys::OrderId`](crate::OrderKeys::OrderId)): it was applied under its order id.
    fn from(order: OrderId) -> Self {
        CommandId(order.0)
    }
}

impl From<&CommandId> for OrderId {
    /// The order id a robot gift carries: its command id (a robot gift has no order).
    fn from(command: &CommandId) -> Self {
        OrderId(command.0.clone())
    }
}

/// A mic seat, counted from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SeatIndex(pub u8);

impl fmt::Display for SeatIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// One stay of one user on one seat: a new session begins each time a seat is taken, so a
/// timer armed for an earlier stay can tell that it is stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SeatSessionId(pub u64);

/// One ignition of the room rocket; a launch timer names the rocket it was armed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RocketId(pub u64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_ids_and_rejects_bad_ones() {
        assert_eq!(UserId::new("u_42").unwrap().as_str(), "u_42");
        assert_eq!(UserId::new(""), Err(IdError::Empty { kind: "user id" }));
        assert!(matches!(
            RoomId::new("x".repeat(65)),
            Err(IdError::TooLong { len: 65, .. })
        ));
        // 64 multi-byte characters are within the limit although they are more than 64 bytes.
        assert!(UserId::new("é".repeat(64)).is_ok());
        assert_eq!(
            UserId::new("a b"),
            Err(IdError::BadCharacter { kind: "user id" })
        );
        assert!(UserId::new("a\u{0}").is_err());
    }

    #[test]
    fn the_ascii_path_refuses_what_the_character_rule_refuses() {
        for byte in 0u8..=0x7F {
            let c = char::from(byte);
            let alone = UserId::new(c.to_string()).is_err();
            // Beside a non-ASCII character the id takes the general path.
            let beside = UserId::new(format!("é{c}")).is_err();
            assert_eq!(alone, refused_in_id(c), "{byte:#04x} alone");
            assert_eq!(beside, refused_in_id(c), "{byte:#04x} beside é");
        }
    }

    #[test]
    fn ids_read_from_json_follow_the_rule() {
        let id: UserId = serde_json::from_str(r#""al\u0069ce""#).unwrap();
        assert_eq!(id.as_str(), "alice");
        assert!(serde_json::from_str::<UserId>(r#""ali\u200bce""#).is_err());
        assert!(serde_json::from_str::<UserId>(r#""a/b""#).is_err());
        assert!(serde_json::from_str::<UserId>("5").is_err());
    }

    #[test]
    fn refuses_ids_that_look_like_other_ids() {
        for bad in [
            "ali\u{200B}ce", // zero-width space
            "\u{202E}nimda", // right-to-left override
            "a\u{2066}b",    // left-to-right isolate
            "a\u{200D}b",    // zero-width joiner
            "\u{FEFF}alice", // byte order mark
            "a\u{00AD}b",    // soft hyphen
            "a\u{3164}",     // Hangul filler
            "a\u{FE0F}",     // variation selector
            "a\u{E0041}",    // tag
            "a/b",           // path separator
            "a\u{2028}b",    // line separator
            "a\u{FFFF}",     // noncharacter
        ] {
            assert_eq!(
                UserId::new(bad),
                Err(IdError::BadCharacter { kind: "user id" }),
                "{bad:?}"
            );
            assert!(RoomId::new(bad).is_err(), "{bad:?}");
            assert!(serde_json::from_value::<UserId>(serde_json::json!(bad)).is_err());
        }
        for good in [
            "alice",
            "u_42",
            "用户-7",
            "élodie.b",
            "a:b@c",
            "☺",
            "sys-rtc-104-x",
        ] {
            assert!(UserId::new(good).is_ok(), "{good:?}");
        }
        assert!(
            UserId::new("a\u{1F600}").is_err(),
            "outside the Basic Multilingual Plane"
        );
    }

    #[test]
    fn deserialization_validates() {
        let ok: UserId = serde_json::from_str("\"alice\"").unwrap();
        assert_eq!(ok.as_str(), "alice");
        assert!(serde_json::from_str::<UserId>("\"\"").is_err());
        assert_eq!(serde_json::to_string(&ok).unwrap(), "\"alice\"");
    }
}

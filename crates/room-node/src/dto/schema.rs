//! String and array schemas that say in the OpenAPI document exactly what the server enforces
//! (`room_domain`'s id rule, the room's text rules, the sizes of lists), so that generated
//! clients and fuzzers send what the server takes. Request bodies name them in their fields'
//! `#[schema(value_type = ...)]`.

use std::borrow::Cow;

use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Schema, Type};
use utoipa::{PartialSchema, ToSchema};

// The characters the server refuses, spelled as regular expression ranges that ECMA-262 and
// the common generators read alike (`\uXXXX` escapes, no `\s`, whose meaning varies).
// Control characters (`char::is_control`):
//   \u0000-\u001f \u007f-\u009f
// Whitespace besides those (`char::is_whitespace`):
//   \u0020 \u00a0 \u1680 \u2000-\u200a \u2028 \u2029 \u202f \u205f \u3000
// Bidirectional embeddings, overrides and isolates, refused in texts people read:
//   \u202a-\u202e \u2066-\u2069

/// String schemas that say in the OpenAPI document exactly what the server enforces on a
/// string (`room_domain`'s id rule, the room's text rules), so that generated clients and
/// fuzzers send what the server takes.
macro_rules! string_schema {
    ($(#[$meta:meta])* $name:ident, $description:literal, $min:expr, $max:expr, $pattern:expr) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .description(Some($description))
                    .min_length($min)
                    .max_length(Some($max))
                    .pattern(Some($pattern))
                    .into()
            }
        }

        impl ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }
        }
    };
}

string_schema!(
    /// The schema of every id (room, user, gift, order, operation): `room_domain`'s rule.
    Id,
    "1 to 64 printable characters of the Basic Multilingual Plane: no whitespace, no control, \
     format, bidirectional or other invisible character, no `/`.",
    Some(1),
    room_domain::MAX_ID_CHARS,
    r"^[\u0021-\u002e\u0030-\u007e\u00a1-\u00ac\u00ae-\u034e\u0350-\u05ff\u0606-\u061b\u061d-\u06dc\u06de-\u070e\u0710-\u088f\u0892-\u08e1\u08e3-\u115e\u1161-\u167f\u1681-\u17b3\u17b6-\u180a\u1810-\u1fff\u2010-\u2027\u2030-\u205e\u2070-\u2fff\u3001-\u3163\u3165-\ud7ff\ue000-\ufdcf\ufdf0-\ufdff\ufe10-\ufefe\uff00-\uff9f\uffa1-\uffef\ufffc-\ufffd]+$"
);

string_schema!(
    /// The schema of a gift order id: an [`Id`] that does not start with `sys-` (reserved for
    /// the ids the service makes up).
    OrderIdSchema,
    "The client's idempotency key, the sender's own: an id (1 to 64 printable characters of the \
     Basic Multilingual Plane: no whitespace, no control, format, bidirectional or other \
     invisible character, no `/`) not starting with `sys-` (reserved).",
    Some(1),
    room_domain::MAX_ID_CHARS,
    r"^(?!sys-)[\u0021-\u002e\u0030-\u007e\u00a1-\u00ac\u00ae-\u034e\u0350-\u05ff\u0606-\u061b\u061d-\u06dc\u06de-\u070e\u0710-\u088f\u0892-\u08e1\u08e3-\u115e\u1161-\u167f\u1681-\u17b3\u17b6-\u180a\u1810-\u1fff\u2010-\u2027\u2030-\u205e\u2070-\u2fff\u3001-\u3163\u3165-\ud7ff\ue000-\ufdcf\ufdf0-\ufdff\ufe10-\ufefe\uff00-\uff9f\uffa1-\uffef\ufffc-\ufffd]+$"
);

string_schema!(
    /// The schema of a room name.
    RoomName,
    "1 to 30 characters with at least one that is not whitespace (the name is trimmed), \
     no control character, no bidirectional embedding, override or isolate.",
    Some(1),
    room_domain::Field::Name.max_chars() as usize,
    r"^[^\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]*[^\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202a-\u202f\u205f\u2066-\u2069\u3000][^\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]*$"
);

string_schema!(
    /// The schema of the reason of an operator's action.
    Reason,
    "1 to 200 characters with at least one that is not whitespace (the reason is trimmed), \
     no control character, no bidirectional embedding, override or isolate.",
    Some(1),
    room_domain::Field::Reason.max_chars() as usize,
    r"^[^\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]*[^\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202a-\u202f\u205f\u2066-\u2069\u3000][^\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]*$"
);

string_schema!(
    /// The schema of a system message's text.
    MessageText,
    "1 to 500 characters with at least one that is not whitespace; line breaks and tabs are \
     allowed, other control characters and bidirectional embeddings, overrides and isolates \
     are not.",
    Some(1),
    room_domain::Field::Message.max_chars() as usize,
    r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]*[^\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202a-\u202f\u205f\u2066-\u2069\u3000][^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]*$"
);

/// The schema of a system message's target: one room, every open room of a region, or every
/// open room.
#[derive(Debug, Clone, Copy)]
pub struct MessageTargetSchema;

impl PartialSchema for MessageTargetSchema {
    fn schema() -> RefOr<Schema> {
        let closed = |name: &str, value: RefOr<Schema>| {
            ObjectBuilder::new()
                .property(name, value)
                .required(name)
                .additional_properties(Some(
                    utoipa::openapi::schema::AdditionalProperties::FreeForm(false),
                ))
        };
        let all = ObjectBuilder::new()
            .schema_type(Type::Boolean)
            .enum_values(Some([true]))
            .into();
        utoipa::openapi::schema::OneOfBuilder::new()
            .item(closed("room_id", Id::schema()).description(Some("One room")))
            .item(
                closed("region", Region::schema())
                    .description(Some("Every open room of the region")),
            )
            .item(closed("all", all).description(Some("Every open room")))
            .into()
    }
}

impl ToSchema for MessageTargetSchema {}

string_schema!(
    /// The schema of a room's notice board.
    Notice,
    "Up to 500 characters; line breaks and tabs are allowed, other control characters and \
     bidirectional embeddings, overrides and isolates are not.",
    None,
    room_domain::Field::Notice.max_chars() as usize,
    r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]*$"
);

string_schema!(
    /// The schema of an image URL.
    ImageUrl,
    "An absolute `http` or `https` URL of at most 2,048 bytes: `http://` or `https://`, a host \
     name (dot-separated labels of ASCII letters, digits and `-`, none starting with `xn--`, the \
     last starting with a letter), an optional port, then a path, query or fragment of \
     printable ASCII without spaces (percent-encode the rest); anything else is 400 \
     `INVALID_URL`. `\"\"` removes the image.",
    None,
    room_domain::MAX_IMAGE_URL_BYTES,
    room_domain::IMAGE_URL_PATTERN
);

string_schema!(
    /// The schema of a VIP level's exclusive background: an image URL that is not empty.
    VipBackgroundUrl,
    "An absolute `http` or `https` URL of at most 2,048 bytes, of the image URL rule \
     (`background_url` of a room); anything else is 400 `INVALID_VIP_LEVELS`.",
    Some(1),
    room_domain::MAX_IMAGE_URL_BYTES,
    room_domain::IMAGE_URL_PATTERN
);

string_schema!(
    /// The schema of a region code.
    Region,
    "Up to 32 characters, no control character, no bidirectional embedding, override or \
     isolate.",
    None,
    room_domain::Field::Region.max_chars() as usize,
    r"^[^\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]*$"
);

string_schema!(
    /// The schema of a nickname: the room name's text rule.
    Nickname,
    "1 to 30 characters with at least one that is not whitespace, no control character, no \
     bidirectional embedding, override or isolate (the room name's rule); anything else is 400 \
     `INVALID_PROFILE`.",
    Some(1),
    room_app::ports::MAX_NICKNAME_CHARS,
    r"^[^\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]*[^\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202a-\u202f\u205f\u2066-\u2069\u3000][^\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]*$"
);

string_schema!(
    /// The schema of a user's region code.
    UserRegion,
    "1 to 32 ASCII letters, digits, `-` or `_`; anything else is 400 `INVALID_PROFILE`.",
    Some(1),
    room_app::ports::MAX_REGION_CHARS,
    r"^[A-Za-z0-9_-]+$"
);

string_schema!(
    /// The schema of a user's country.
    Country,
    "An ISO 3166-1 alpha-2 code: two ASCII uppercase letters (`SA`, `EG`); anything else is \
     400 `INVALID_PROFILE`.",
    Some(2),
    2,
    r"^[A-Z]{2}$"
);

string_schema!(
    /// The schema of a catalog gift's display name.
    GiftName,
    "1 to 64 characters with at least one that is not whitespace.",
    Some(1),
    room_app::ports::MAX_GIFT_NAME_CHARS,
    r"[^\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
);

/// The schema of a gift's recipients: 1 to 20 distinct user ids, or a batch gift's scope
/// (`{"scope": "all_mic"}` or `{"scope": "all_room"}`).
#[derive(Debug, Clone, Copy)]
pub struct Recipients;

impl PartialSchema for Recipients {
    fn schema() -> RefOr<Schema> {
        let listed = ArrayBuilder::new()
            .items(Id::schema())
            .min_items(Some(1))
            .max_items(Some(room_domain::MAX_RECIPIENTS as usize))
            .unique_items(true)
            .description(Some("1 to 20 distinct members of the room"));
        let scope = ObjectBuilder::new()
            .property(
                "scope",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some(["all_mic", "all_room"])),
            )
            .required("scope")
            .additional_properties(Some(
                utoipa::openapi::schema::AdditionalProperties::FreeForm(false),
            ))
            .description(Some(
                "A batch gift: `all_mic` reaches every seat holder but the sender, `all_room` \
                 every member but the sender (seat holders by seat, then the others by when \
                 they joined), at most `max_batch_recipients` (default 200). The sender pays \
                 for whom the scope names as the order is placed; the room gives the gift to \
                 whom it names as it applies it, never more, and the rest is refunded.",
            ));
        utoipa::openapi::schema::OneOfBuilder::new()
            .item(listed)
            .item(scope)
            .into()
    }
}

impl ToSchema for Recipients {}

/// The schema of a robot pool: 1 to 200 distinct robot user ids.
#[derive(Debug, Clone, Copy)]
pub struct RobotPool;

impl PartialSchema for RobotPool {
    fn schema() -> RefOr<Schema> {
        ArrayBuilder::new()
            .items(Id::schema())
            .min_items(Some(1))
            .max_items(Some(room_app::ports::MAX_ROBOTS))
            .unique_items(true)
            .description(Some(
                "1 to 200 distinct robot user ids, each starting with the configured robot \
                 prefix (`[robots] id_prefix`, default `robot-`); the first owns the room",
            ))
            .into()
    }
}

impl ToSchema for RobotPool {}

/// The schema of a robot room's audience: 24 numbers, one for each hour of the day.
#[derive(Debug, Clone, Copy)]
pub struct Audience;

impl PartialSchema for Audience {
    fn schema() -> RefOr<Schema> {
        ArrayBuilder::new()
            .items(
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .minimum(Some(0))
                    .maximum(Some(room_app::ports::MAX_ROBOTS as u32)),
            )
            .min_items(Some(24))
            .max_items(Some(24))
            .description(Some(
                "Target robot listeners for each hour of the day (UTC, hour 0 first), each \
                 from 0 to the pool's size",
            ))
            .into()
    }
}

impl ToSchema for Audience {}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern_of<S: PartialSchema>() -> regex::Regex {
        let RefOr::T(Schema::Object(object)) = S::schema() else {
            panic!("an object schema");
        };
        regex::Regex::new(object.pattern.as_deref().expect("a pattern")).expect("a valid regex")
    }

    #[test]
    fn the_id_pattern_takes_exactly_the_characters_the_domain_takes() {
        let pattern = pattern_of::<Id>();
        let mut checked = 0;
        for c in (0..=0x10_FFFF).filter_map(char::from_u32) {
            let id = c.to_string();
            assert_eq!(
                pattern.is_match(&id),
                room_domain::UserId::new(&id).is_ok(),
                "U+{:04X}",
                u32::from(c)
            );
            checked += 1;
        }
        assert!(checked > 1_000_000);
    }

    #[test]
    fn the_image_url_pattern_takes_exactly_what_the_domain_takes() {
        let pattern = pattern_of::<ImageUrl>();
        let domain = |url: &str| {
            url.is_empty()
                || room_domain::check_image_url(room_domain::Field::CoverUrl, url).is_ok()
        };
        let mut samples: Vec<String> = [
            "",
            "https://img.example/a.png",
            "http://a",
            "https://xn--80ak6aa92e.com/",
            "https://Xn-a.example/",
            "https://xn.example/",
            "https://xna.example/",
            "https://x.example/",
            "https://img.example:65535/",
            "https://img.example:65536/",
            "https://img.example:09999/",
            "https://img.example:/",
            "https://10.0.0.1/",
            "https://a.1/",
            "https://-a.b-/",
            "javascript:alert(1)",
            "https://u@img.example/",
            "https://img.example/a b",
            "https://img.example/caf\u{e9}",
            "HTTPS://img.example/",
        ]
        .map(String::from)
        .to_vec();
        // A deterministic spread of strings over the characters that matter.
        let alphabet: Vec<char> = "htps:/.xnXN-09aZ?#@% _\\e\u{e9}".chars().collect();
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..20_000 {
            let mut url = String::from(if seed.is_multiple_of(2) {
                "https://"
            } else {
                "http://"
            });
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let len = (seed >> 59) as usize;
            for i in 0..len {
                let pick = (seed >> (i * 3 % 56)) as usize % alphabet.len();
                url.push(alphabet[pick]);
                seed = seed.rotate_left(7) ^ (i as u64);
            }
            samples.push(url);
        }
        let mut accepted = 0;
        for url in &samples {
            assert_eq!(pattern.is_match(url), domain(url), "{url:?}");
            accepted += usize::from(domain(url));
        }
        assert!(
            accepted > 100 && accepted < samples.len() - 100,
            "{accepted}"
        );
    }
}

//! VIP privileges: what a VIP level gives its holder in rooms ([`VipPrivileges`]), and the
//! level and privileges of the user a command is about, as the service looked them up before
//! it sent the command ([`VipStanding`]). Who holds which level, and what each level gives,
//! are kept by the service outside the room; the room is told with each command that needs
//! them, so that a grant that expired or changed counts from the next command on.

use serde::{Deserialize, Serialize};

use crate::image_url::check_image_url;
use crate::rejection::Field;

/// The most VIP levels a level table may have.
pub const MAX_VIP_LEVELS: usize = 32;

/// The most characters of an entry effect's or a vehicle's id.
pub const MAX_VIP_ASSET_ID_CHARS: usize = 64;

/// The most exclusive backgrounds one level may list.
pub const MAX_VIP_BACKGROUNDS: usize = 16;

/// What one VIP level gives its holder.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct VipPrivileges {
    /// Room admins cannot kick the holder (the owner and platform admins still can).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kick_shield: bool,
    /// Room admins cannot mute the holder on the public screen (the owner and platform
    /// admins still can).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mute_shield: bool,
    /// The entry animation clients play when the holder joins a room.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_effect_id: Option<String>,
    /// The vehicle clients show the holder arriving in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vehicle_id: Option<String>,
    /// The holder may take seats reserved for VIP ([`crate::Seat::vip_only`]); everyone else
    /// is refused them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub seat_priority: bool,
    /// Room backgrounds (image URLs) exclusive to VIP: a user may set one as their room's
    /// background only when their level, or a lower one, lists it ([`background_allowed`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backgrounds: Vec<String>,
}

impl VipPrivileges {
    /// What is wrong with these privileges, if anything: the field and the problem. An id is
    /// 1 to [`MAX_VIP_ASSET_ID_CHARS`] ASCII letters, digits, `-`, `_`, `.` or `:`.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        for (field, id) in [
            ("entry_effect_id", &self.entry_effect_id),
            ("vehicle_id", &self.vehicle_id),
        ] {
            if let Some(id) = id
                && let Some(problem) = asset_id_problem(id)
            {
                return Some((field, problem));
            }
        }
        if self.backgrounds.len() > MAX_VIP_BACKGROUNDS {
            return Some((
                "backgrounds",
                format!(
                    "{} backgrounds; at most {MAX_VIP_BACKGROUNDS}",
                    self.backgrounds.len()
                ),
            ));
        }
        for url in &self.backgrounds {
            if let Err(rejection) = check_image_url(Field::BackgroundUrl, url) {
                return Some(("backgrounds", rejection.to_string()));
            }
        }
        None
    }
}

/// Whether a user of VIP `level` (0: none) may set `url` as a room's background under the
/// level table `levels` (the first is level 1): yes when no level lists it (it is no VIP
/// background), or when a level from 1 to `level` lists it and the table has `level` (a grant
/// of a level the table dropped gives nothing). URLs are compared as images are fetched: by
/// host, case-insensitive, and path, without the scheme, port, query or fragment
/// ([`background_key`]), so `?x=1` or an upper-case host does not make an exclusive
/// background free.
pub fn background_allowed(levels: &[VipPrivileges], level: u8, url: &str) -> bool {
    let Some(first) = first_level_listing(levels, url) else {
        return true;
    };
    let level = usize::from(level);
    first < level && level <= levels.len()
}

/// The index (from 0) of the first level of `levels` that lists `url` as an exclusive
/// background, compared by [`background_key`]; `None` when no level does.
pub fn first_level_listing(levels: &[VipPrivileges], url: &str) -> Option<usize> {
    let key = background_key(url);
    levels.iter().position(|privileges| {
        privileges
            .backgrounds
            .iter()
            .any(|listed| background_key(listed) == key)
    })
}

/// What names a background's image: its host in lower case and its path as servers read it
/// (percent escapes decoded, runs of `/` as one); the URL itself when it does not parse.
pub fn background_key(url: &str) -> String {
    let Ok(parsed) = url::Url::parse(url) else {
        return url.to_owned();
    };
    let mut key = parsed.host_str().unwrap_or_default().to_ascii_lowercase();
    let path = percent_decoded(parsed.path());
    for part in path.split('/').filter(|part| !part.is_empty()) {
        key.push('/');
        key.push_str(part);
    }
    if path.ends_with('/') {
        key.push('/');
    }
    key
}

/// `text` with its `%XX` escapes decoded (bytes that are no UTF-8 shown as U+FFFD).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&high), Some(&low)) if hex(high).is_some() && hex(low).is_some() => {
                let value = hex(high).unwrap_or(0) * 16 + hex(low).unwrap_or(0);
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn asset_id_problem(id: &str) -> Option<String> {
    if id.is_empty() {
        return Some("must not be empty".into());
    }
    let chars = id.chars().count();
    if chars > MAX_VIP_ASSET_ID_CHARS {
        return Some(format!(
            "{chars} characters; at most {MAX_VIP_ASSET_ID_CHARS}"
        ));
    }
    if !id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
    {
        return Some("only ASCII letters, digits, '-', '_', '.' and ':'".into());
    }
    None
}

/// Checks a level table: at most [`MAX_VIP_LEVELS`] levels (the first is level 1), each
/// with valid privileges. The error names the level and the field (`levels[2].vehicle_id`).
pub fn check_vip_levels(levels: &[VipPrivileges]) -> Result<(), String> {
    if levels.len() > MAX_VIP_LEVELS {
        return Err(format!("{} levels; at most {MAX_VIP_LEVELS}", levels.len()));
    }
    for (index, level) in levels.iter().enumerate() {
        if let Some((field, problem)) = level.problem() {
            return Err(format!("levels[{index}].{field}: {problem}"));
        }
    }
    Ok(())
}

/// The VIP level of a user and what it gives, as of a command: the joining user of `join`
/// (their entry effect and vehicle go into `RoomUserJoined`), the target of `kick` and
/// `chat_mute` (their shields). Level 0 with no privileges: no VIP (none granted, or the
/// grant expired). Serialized flat: `{"level": 3, "kick_shield": true, ...}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipStanding {
    /// The level in force; 0 for none.
    pub level: u8,
    /// What it gives.
    #[serde(flatten)]
    pub privileges: VipPrivileges,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_bounded_and_plain() {
        let good = VipPrivileges {
            kick_shield: true,
            mute_shield: false,
            entry_effect_id: Some("fx.gold-01".into()),
            vehicle_id: Some("car:7".into()),
            ..VipPrivileges::default()
        };
        assert_eq!(good.problem(), None);
        let long = VipPrivileges {
            vehicle_id: Some("v".repeat(MAX_VIP_ASSET_ID_CHARS + 1)),
            ..VipPrivileges::default()
        };
        assert_eq!(long.problem().map(|p| p.0), Some("vehicle_id"));
        let spaced = VipPrivileges {
            entry_effect_id: Some("a b".into()),
            ..VipPrivileges::default()
        };
        assert_eq!(spaced.problem().map(|p| p.0), Some("entry_effect_id"));
        let empty = VipPrivileges {
            entry_effect_id: Some(String::new()),
            ..VipPrivileges::default()
        };
        assert!(empty.problem().is_some());
    }

    #[test]
    fn vip_backgrounds_need_their_level_or_a_higher_one() {
        let gold = "https://cdn.example.com/bg/gold.png";
        let mut levels = vec![VipPrivileges::default(); 4];
        levels[2].backgrounds.push(gold.into());
        assert!(background_allowed(
            &levels,
            0,
            "https://cdn.example.com/free.png"
        ));
        assert!(!background_allowed(&levels, 0, gold));
        assert!(!background_allowed(&levels, 2, gold));
        assert!(background_allowed(&levels, 3, gold));
        assert!(background_allowed(&levels, 4, gold));
        // A level the table does not have gives nothing.
        assert!(!background_allowed(&levels, 5, gold));
        // The same image under another spelling is the same background.
        for same in [
            "https://CDN.example.com/bg/gold.png",
            "https://cdn.example.com/bg/gold.png?x=1",
            "https://cdn.example.com/bg/gold.png#a",
            "http://cdn.example.com:443/bg/gold.png",
            "https://cdn.example.com/bg/gol%64.png",
            "https://cdn.example.com/bg/gold%2Epng",
            "https://cdn.example.com//bg//gold.png",
        ] {
            assert!(!background_allowed(&levels, 0, same), "{same}");
        }
        assert_eq!(check_vip_levels(&levels), Ok(()));
        levels[1].backgrounds.push("ftp://x".into());
        assert!(
            check_vip_levels(&levels)
                .unwrap_err()
                .starts_with("levels[1].backgrounds")
        );
        levels[1].backgrounds = vec![gold.into(); MAX_VIP_BACKGROUNDS + 1];
        assert!(check_vip_levels(&levels).is_err());
    }

    #[test]
    fn a_table_has_at_most_32_levels() {
        let levels = vec![VipPrivileges::default(); MAX_VIP_LEVELS];
        assert_eq!(check_vip_levels(&levels), Ok(()));
        let more = vec![VipPrivileges::default(); MAX_VIP_LEVELS + 1];
        assert!(check_vip_levels(&more).is_err());
        let mut bad = vec![VipPrivileges::default(); 3];
        bad[2].vehicle_id = Some(String::new());
        assert!(
            check_vip_levels(&bad)
                .unwrap_err()
                .starts_with("levels[2].vehicle_id")
        );
    }

    #[test]
    fn a_standing_is_flat_json() {
        let standing = VipStanding {
            level: 3,
            privileges: VipPrivileges {
                kick_shield: true,
                entry_effect_id: Some("fx".into()),
                ..VipPrivileges::default()
            },
        };
        let json = serde_json::to_value(&standing).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"level": 3, "kick_shield": true, "entry_effect_id": "fx"})
        );
        assert_eq!(
            serde_json::from_value::<VipStanding>(json).unwrap(),
            standing
        );
    }
}

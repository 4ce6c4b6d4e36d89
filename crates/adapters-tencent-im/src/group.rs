//! How rooms map to Tencent IM groups: a room's group id, and a group name Tencent accepts.

use room_domain::RoomId;
use sha2::{Digest, Sha256};

/// The longest custom group id Tencent accepts is 47 bytes ("< 48").
const MAX_GROUP_ID_BYTES: usize = 47;
/// Tencent reserves ids with this prefix for the groups it names itself.
const RESERVED_PREFIX: &str = "@TGS#";
/// Hex digits of the hash in a hashed group id: 160 bits.
const HASH_HEX_CHARS: usize = 40;

/// The group id of a room, the same on every node and every run: the room id itself when
/// Tencent accepts it as a custom group id (printable ASCII, below 48 bytes, not starting with
/// `@TGS#`), else `h` followed by the first 40 hex digits of the SHA-256 of the room id. A room
/// id that already looks like a hashed one (`h` and 40 lowercase hex digits) is hashed too,
/// so no two rooms share a group.
pub fn group_id(room: &RoomId) -> String {
    let id = room.as_str();
    let usable = id.len() <= MAX_GROUP_ID_BYTES
        && id.bytes().all(|b| b.is_ascii_graphic())
        && !id.starts_with(RESERVED_PREFIX)
        && !looks_hashed(id);
    if usable {
        return id.to_owned();
    }
    let digest = Sha256::digest(id.as_bytes());
    let mut hashed = String::with_capacity(1 + HASH_HEX_CHARS);
    hashed.push('h');
    for byte in &digest[..HASH_HEX_CHARS / 2] {
        hashed.push(hex_digit(byte >> 4));
        hashed.push(hex_digit(byte & 0x0f));
    }
    hashed
}

fn looks_hashed(id: &str) -> bool {
    id.len() == 1 + HASH_HEX_CHARS
        && id.starts_with('h')
        && id[1..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn hex_digit(nibble: u8) -> char {
    char::from(b"0123456789abcdef"[usize::from(nibble)])
}

/// `name` cut to at most `max_bytes` bytes at a character boundary.
pub(crate) fn truncate_utf8(name: &str, max_bytes: usize) -> &str {
    if name.len() <= max_bytes {
        return name;
    }
    let mut end = max_bytes;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn room(id: &str) -> RoomId {
        RoomId::new(id).unwrap()
    }

    #[test]
    fn a_plain_room_id_is_its_own_group_id() {
        assert_eq!(group_id(&room("room-42")), "room-42");
        let longest = "r".repeat(47);
        assert_eq!(group_id(&room(&longest)), longest);
    }

    #[test]
    fn ids_tencent_refuses_are_hashed_deterministically() {
        for id in [
            "r".repeat(48),
            "@TGS#abc".to_owned(),
            "房间一".to_owned(),
            format!("h{}", "a".repeat(40)),
        ] {
            let hashed = group_id(&room(&id));
            assert_eq!(hashed.len(), 41, "{id}");
            assert!(hashed.starts_with('h'));
            assert!(looks_hashed(&hashed));
            assert_eq!(hashed, group_id(&room(&id)));
            assert_ne!(hashed, id);
        }
        assert_ne!(
            group_id(&room(&"r".repeat(48))),
            group_id(&room(&"r".repeat(49)))
        );
    }

    #[test]
    fn a_known_hash() {
        // `printf '@TGS#1' | sha256sum`, first 40 digits.
        assert_eq!(
            group_id(&room("@TGS#1")),
            "hba8411472164e72e8f24ea0efbdca42e4a157583"
        );
    }

    #[test]
    fn names_are_cut_at_a_character_boundary() {
        assert_eq!(truncate_utf8("short", 30), "short");
        // 11 three-byte characters: 33 bytes, cut to 10 (30 bytes).
        let name = "语".repeat(11);
        assert_eq!(truncate_utf8(&name, 30), "语".repeat(10));
        let mixed = format!("a{}", "语".repeat(10)); // 31 bytes
        assert_eq!(truncate_utf8(&mixed, 30), format!("a{}", "语".repeat(9)));
    }
}

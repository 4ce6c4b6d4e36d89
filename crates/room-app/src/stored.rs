//! The compact form of the bodies the stores keep (events, commands, actors, gift orders,
//! outbox envelopes): a versioned binary encoding of the value's JSON data model, about a
//! third of its JSON text. Only storage sees it: the events on the wire, in the event stream
//! and in Kafka stay JSON.
//!
//! A body is the value as `serde_json` sees it (so every serde attribute of the domain types
//! keeps its meaning), written as one tagged value after a version byte, [`VERSION_2`]. Field
//! names and the common tag values are one byte each, looked up in a fixed table of words;
//! integers are variable-length; strings are length-prefixed. Stored JSON text (bodies written
//! before this form) starts with a byte no compact body starts with, so [`decode`] reads both:
//! rows written by an older release stay readable for as long as they are kept.
//!
//! Fields that a table keeps in columns of their own are left out of the body
//! ([`encode_without`]) and put back when it is read ([`decode_with`]): each thing is stored
//! once.
//!
//! Version 1 and version 2 differ only in their table of words: version 2's is version 1's
//! ([`VERSION_1_WORDS`] words) with words added after them, so a body of either version reads
//! with the table cut at its version's length. Bodies are written in version 2; version 1
//! bodies (written by the release before) read as they are.
//!
//! After its version byte, a body is one value:
//!
//! | first byte | value |
//! |---|---|
//! | `0x00`, `0x01`, `0x02` | null, false, true |
//! | `0x03` varint | an unsigned integer |
//! | `0x04` varint `n` | the negative integer `-1 - n` |
//! | `0x05` 8 bytes | a float, little-endian |
//! | `0x06` varint `len`, bytes | a string |
//! | `0x07` varint `n`, `n` values | an array |
//! | `0x08` varint `n`, `n` (key, value) pairs | an object |
//! | `0x09` varint `i` | the string [`WORDS`]`[i]` |
//! | `0x10 + n` (`n` < 16), `n` pairs | an object |
//! | `0x20 + n` (`n` < 16), `n` values | an array |
//! | `0x40 + n` (`n` < 64) | the unsigned integer `n` |
//! | `0x80 + len` (`len` < 64), bytes | a string |
//! | `0xC0 + i` (`i` < 64) | the string [`WORDS`]`[i]` |
//!
//! A key is one byte `k`: `k = 0` is followed by the key as a string (varint length, bytes),
//! `k > 0` is [`WORDS`]`[k - 1]`. Varints are LEB128 (7 bits a byte, low bits first). The
//! table of words is part of the version: a new word means a new version, whose table extends
//! the one before.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Number, Value};

use crate::{Error, Result};

/// The first byte of a body in version 1 of the compact form. JSON text never starts with it.
pub const VERSION_1: u8 = 0x01;

/// The first byte of a body in version 2 of the compact form, the one written. JSON text
/// never starts with it.
pub const VERSION_2: u8 = 0x02;

/// How many of [`WORDS`] version 1 knows: the first ones, never changed.
pub const VERSION_1_WORDS: usize = 131;

/// The words of version 2, by their index: field names and tag values of the stored domain
/// types, the most frequent first (the first 64 are one byte also as string values). The
/// first [`VERSION_1_WORDS`] are version 1's table.
pub const WORDS: &[&str] = &[
    // 0..64: field names and tags of a gift's rows.
    "type",
    "payload",
    "kind",
    "user_id",
    "order_id",
    "sender",
    "recipients",
    "gift",
    "gift_id",
    "count",
    "lucky_draw",
    "price",
    "heat",
    "fuel",
    "lucky",
    "unit_price",
    "total_value",
    "heat_added",
    "fuel_added",
    "delta",
    "user",
    "day_key",
    "week_key",
    "day_total",
    "week_total",
    "level",
    "threshold",
    "RoomGiftSent",
    "RoomHeatChanged",
    "RoomRankChanged",
    "RoomRocketFuelChanged",
    "apply_gift",
    "system",
    "robot",
    "vip_level",
    "platform_admin",
    "v",
    "occurred_at",
    "total",
    "status",
    "rejection",
    "fail_reason",
    "lucky_reward",
    "balance_after",
    "keys",
    "sender_and_order_id",
    "PENDING",
    "DEBITED",
    "APPLIED",
    "COMPLETED",
    "FAILED",
    "COMPENSATED",
    "multiplier",
    "reward",
    "robot_gift",
    "by",
    "role",
    "seat",
    "change",
    "action",
    "RoomUserJoined",
    "RoomUserLeft",
    "RoomMicChanged",
    "join",
    // 64..: the other events, commands and fields.
    "leave",
    "RoomCreated",
    "RoomProfileUpdated",
    "RoomBackgroundChanged",
    "RoomChatEnabledChanged",
    "RoomLockChanged",
    "RoomClosed",
    "RoomUserKicked",
    "RoomUserUnbanned",
    "RoomUserMuted",
    "RoomAdminChanged",
    "RoomMicSeatLocked",
    "RoomRocketIgnited",
    "RoomRocketLaunched",
    "RoomRocketReset",
    "create_room",
    "update_profile",
    "change_background",
    "set_chat_enabled",
    "set_lock",
    "close_room",
    "evict",
    "take_seat",
    "leave_seat",
    "lock_seat",
    "mute_seat",
    "remove_from_seat",
    "confirm_mic_publish",
    "mic_publish_timeout",
    "rtc_user_left",
    "kick",
    "unban",
    "chat_mute",
    "set_admin",
    "launch_rocket",
    "reset_rocket",
    "owner",
    "name",
    "seat_count",
    "region",
    "created_at",
    "notice",
    "cover_url",
    "background_url",
    "enabled",
    "locked",
    "password_hash",
    "reason",
    "until",
    "muted",
    "admin",
    "rocket_id",
    "ignited_at",
    "launch_at",
    "rewards",
    "coins",
    "next_level",
    "room_id",
    "seq",
    "event_id",
    "command_id",
    "amount",
    "session",
    "up",
    "down",
    "published",
    "code",
    // 131..: version 2, fields added to the stored types after version 1.
    "billing_version",
    "nickname",
    "avatar_url",
    "sender_nickname",
    "sender_avatar_url",
    "display",
    "sender_display",
    "joined_at",
    "password_verified",
    "ban_until",
    "ban_seconds",
    "by_moderator",
    "since",
    "publish_deadline",
    "scheduled_at",
    "verified_lock",
    "outcome",
    "balance",
];

/// How deep arrays and objects may nest in a stored body; deeper is corrupt (no domain value
/// comes near it, and decoding recurses once a level).
const MAX_DEPTH: usize = 64;

/// `value` in the compact form.
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>> {
    encode_value(&to_value(value)?)
}

/// `value` (an object) in the compact form without its fields named in `columns`, which the
/// table keeps in columns of their own.
pub fn encode_without<T: Serialize + ?Sized>(value: &T, columns: &[&str]) -> Result<Vec<u8>> {
    let mut value = to_value(value)?;
    if let Value::Object(fields) = &mut value {
        for column in columns {
            fields.remove(*column);
        }
    }
    encode_value(&value)
}

/// A stored body (compact, or JSON text written before it) as a value of `T`; anything else
/// is [`Error::Corrupt`], naming `what`.
pub fn decode<T: DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T> {
    from_value(decode_value(bytes, what)?, what)
}

/// Like [`decode`], for a body stored without the fields that live in columns: `columns` puts
/// them back (each name with its value) before the body becomes a `T`. A JSON body that still
/// holds one of them gets the column's value.
pub fn decode_with<T: DeserializeOwned>(
    bytes: &[u8],
    what: &str,
    columns: impl IntoIterator<Item = (&'static str, Value)>,
) -> Result<T> {
    let mut value = decode_value(bytes, what)?;
    let Value::Object(fields) = &mut value else {
        return Err(Error::corrupt(format!("stored {what}: not an object")));
    };
    for (name, column) in columns {
        fields.insert(name.to_owned(), column);
    }
    from_value(value, what)
}

/// Whether `bytes` is a body in the compact form, of either version (not JSON text).
pub fn is_compact(bytes: &[u8]) -> bool {
    words_of(bytes).is_some()
}

/// How many of [`WORDS`] the version of the compact body `bytes` knows; `None` for JSON text.
fn words_of(bytes: &[u8]) -> Option<usize> {
    match bytes.first() {
        Some(&VERSION_1) => Some(VERSION_1_WORDS),
        Some(&VERSION_2) => Some(WORDS.len()),
        _ => None,
    }
}

fn to_value<T: Serialize + ?Sized>(value: &T) -> Result<Value> {
    serde_json::to_value(value).map_err(|e| Error::Invalid(format!("cannot encode: {e}")))
}

fn from_value<T: DeserializeOwned>(value: Value, what: &str) -> Result<T> {
    serde_json::from_value(value).map_err(|e| Error::corrupt(format!("stored {what}: {e}")))
}

fn encode_value(value: &Value) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(64);
    out.push(VERSION_2);
    write_value(&mut out, value);
    Ok(out)
}

/// The value of a stored body, compact or JSON text.
fn decode_value(bytes: &[u8], what: &str) -> Result<Value> {
    let Some(words) = words_of(bytes) else {
        return serde_json::from_slice(bytes)
            .map_err(|e| Error::corrupt(format!("stored {what}: {e}")));
    };
    let mut reader = Reader {
        bytes: &bytes[1..],
        at: 0,
        words: &WORDS[..words],
    };
    let value = reader
        .value(0)
        .map_err(|problem| Error::corrupt(format!("stored {what}: {problem}")))?;
    if reader.at != reader.bytes.len() {
        return Err(Error::corrupt(format!(
            "stored {what}: {} bytes after the value",
            reader.bytes.len() - reader.at
        )));
    }
    Ok(value)
}

fn word_index(text: &str) -> Option<usize> {
    // A linear scan of a short table of short words: cheaper than hashing for these sizes,
    // and mostly a hit within the first few dozen.
    WORDS.iter().position(|word| *word == text)
}

fn write_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.push(0x00),
        Value::Bool(false) => out.push(0x01),
        Value::Bool(true) => out.push(0x02),
        Value::Number(number) => write_number(out, number),
        Value::String(text) => write_string(out, text),
        Value::Array(items) => {
            if items.len() < 16 {
                out.push(0x20 + items.len() as u8);
            } else {
                out.push(0x07);
                write_varint(out, items.len() as u64);
            }
            for item in items {
                write_value(out, item);
            }
        }
        Value::Object(fields) => {
            if fields.len() < 16 {
                out.push(0x10 + fields.len() as u8);
            } else {
                out.push(0x08);
                write_varint(out, fields.len() as u64);
            }
            for (key, field) in fields {
                match word_index(key).filter(|i| *i < 255) {
                    Some(i) => out.push(i as u8 + 1),
                    None => {
                        out.push(0);
                        write_varint(out, key.len() as u64);
                        out.extend_from_slice(key.as_bytes());
                    }
                }
                write_value(out, field);
            }
        }
    }
}

fn write_number(out: &mut Vec<u8>, number: &Number) {
    if let Some(n) = number.as_u64() {
        if n < 64 {
            out.push(0x40 + n as u8);
        } else {
            out.push(0x03);
            write_varint(out, n);
        }
    } else if let Some(n) = number.as_i64() {
        // Negative: as_u64 took every other integer.
        out.push(0x04);
        write_varint(out, (-1 - n) as u64);
    } else {
        let float = number.as_f64().unwrap_or(0.0);
        out.push(0x05);
        out.extend_from_slice(&float.to_le_bytes());
    }
}

fn write_string(out: &mut Vec<u8>, text: &str) {
    match word_index(text) {
        Some(i) if i < 64 => out.push(0xC0 + i as u8),
        Some(i) => {
            out.push(0x09);
            write_varint(out, i as u64);
        }
        None if text.len() < 64 => {
            out.push(0x80 + text.len() as u8);
            out.extend_from_slice(text.as_bytes());
        }
        None => {
            out.push(0x06);
            write_varint(out, text.len() as u64);
            out.extend_from_slice(text.as_bytes());
        }
    }
}

/// Reads one compact value; a problem is a short description for [`Error::Corrupt`].
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    /// The table of words of the body's version.
    words: &'static [&'static str],
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, String> {
        let byte = *self.bytes.get(self.at).ok_or("truncated")?;
        self.at += 1;
        Ok(byte)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut n: u64 = 0;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            n |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err("a varint longer than 64 bits".into())
    }

    /// A length that the rest of the body can hold, each item taking at least a byte.
    fn length(&mut self) -> Result<usize, String> {
        let n = self.varint()?;
        let left = (self.bytes.len() - self.at) as u64;
        if n > left {
            return Err(format!("a length of {n} with {left} bytes left"));
        }
        Ok(n as usize)
    }

    fn text(&mut self, len: usize) -> Result<String, String> {
        let end = self.at.checked_add(len).ok_or("truncated")?;
        let slice = self.bytes.get(self.at..end).ok_or("truncated")?;
        self.at = end;
        String::from_utf8(slice.to_vec()).map_err(|_| "a string that is not UTF-8".into())
    }

    fn word(&self, index: u64) -> Result<String, String> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.words.get(i))
            .map(|word| (*word).to_owned())
            .ok_or_else(|| format!("an unknown word {index}"))
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err("nested too deep".into());
        }
        let tag = self.byte()?;
        Ok(match tag {
            0x00 => Value::Null,
            0x01 => Value::Bool(false),
            0x02 => Value::Bool(true),
            0x03 => Value::from(self.varint()?),
            0x04 => {
                let n = self.varint()?;
                let n = i64::try_from(n).map_err(|_| "a negative integer out of range")?;
                Value::from(-1 - n)
            }
            0x05 => {
                let end = self.at + 8;
                let raw = self.bytes.get(self.at..end).ok_or("truncated")?;
                self.at = end;
                let float = f64::from_le_bytes(raw.try_into().map_err(|_| "truncated")?);
                Number::from_f64(float).map_or(Value::Null, Value::Number)
            }
            0x06 => {
                let len = self.length()?;
                Value::String(self.text(len)?)
            }
            0x07 => {
                let n = self.length()?;
                self.array(n, depth)?
            }
            0x08 => {
                let n = self.length()?;
                self.object(n, depth)?
            }
            0x09 => {
                let index = self.varint()?;
                Value::String(self.word(index)?)
            }
            0x10..=0x1F => self.object(usize::from(tag - 0x10), depth)?,
            0x20..=0x2F => self.array(usize::from(tag - 0x20), depth)?,
            0x40..=0x7F => Value::from(tag - 0x40),
            0x80..=0xBF => Value::String(self.text(usize::from(tag - 0x80))?),
            0xC0..=0xFF => Value::String(self.word(u64::from(tag - 0xC0))?),
            other => return Err(format!("an unknown tag {other:#04x}")),
        })
    }

    fn array(&mut self, n: usize, depth: usize) -> Result<Value, String> {
        let mut items = Vec::with_capacity(n);
        for _ in 0..n {
            items.push(self.value(depth + 1)?);
        }
        Ok(Value::Array(items))
    }

    fn object(&mut self, n: usize, depth: usize) -> Result<Value, String> {
        let mut fields = Map::new();
        for _ in 0..n {
            let key = match self.byte()? {
                0 => {
                    let len = self.length()?;
                    self.text(len)?
                }
                k => self.word(u64::from(k) - 1)?,
            };
            let value = self.value(depth + 1)?;
            fields.insert(key, value);
        }
        Ok(Value::Object(fields))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_kind_of_value_comes_back_as_it_went_in() {
        let long = "x".repeat(300);
        let many: Vec<u64> = (0..40).collect();
        let value = json!({
            "null": null, "yes": true, "no": false,
            "small": 5, "edge": 63, "larger": 64, "max": u64::MAX,
            "minus": -1, "min": i64::MIN, "float": 1.5,
            "short": "héllo", "long": long, "word": "RoomGiftSent", "late word": "session",
            "empty": [], "many": many, "nested": {"type": "apply_gift", "a": [[[{}]]]},
            "wide": (0..20).map(|i| (format!("k{i}"), json!(i))).collect::<Map<_, _>>(),
        });
        let bytes = encode(&value).unwrap();
        assert!(is_compact(&bytes));
        assert_eq!(decode::<Value>(&bytes, "value").unwrap(), value);
    }

    #[test]
    fn json_text_stored_before_the_compact_form_still_reads() {
        let value = json!({"type": "RoomHeatChanged", "payload": {"heat": 12, "delta": 2}});
        let text = value.to_string();
        assert!(!is_compact(text.as_bytes()));
        assert_eq!(decode::<Value>(text.as_bytes(), "event").unwrap(), value);
        assert!(encode(&value).unwrap().len() * 2 < text.len());
    }

    #[test]
    fn fields_kept_in_columns_are_left_out_and_put_back() {
        let value = json!({"order_id": "o-1", "sender": "alice", "count": 2});
        let bytes = encode_without(&value, &["order_id", "sender"]).unwrap();
        assert_eq!(
            decode::<Value>(&bytes, "order").unwrap(),
            json!({"count": 2})
        );
        let back: Value = decode_with(
            &bytes,
            "order",
            [("order_id", json!("o-1")), ("sender", json!("alice"))],
        )
        .unwrap();
        assert_eq!(back, value);
        // A JSON body that still holds them reads the same.
        let text = value.to_string();
        let back: Value =
            decode_with(text.as_bytes(), "order", [("sender", json!("alice"))]).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn damaged_bodies_are_corrupt_not_panics() {
        let good = encode(&json!({"type": "x", "list": [1, 2, 3], "text": "abc"})).unwrap();
        for cut in 1..good.len() {
            assert!(
                matches!(
                    decode::<Value>(&good[..cut], "body"),
                    Err(Error::Corrupt(_))
                ),
                "cut at {cut}"
            );
        }
        for bad in [
            vec![VERSION_1, 0x0A],
            vec![VERSION_1, 0x09, 0xff, 0x01],
            vec![VERSION_1, 0x07, 0xff, 0xff, 0xff, 0xff, 0x0f],
            vec![VERSION_1, 0x41, 0x41],
            vec![VERSION_1, 0x82, 0xff, 0xfe],
            std::iter::once(VERSION_1)
                .chain(std::iter::repeat_n(0x21, 100))
                .chain([0x40])
                .collect(),
            b"{not json".to_vec(),
        ] {
            assert!(
                matches!(decode::<Value>(&bad, "body"), Err(Error::Corrupt(_))),
                "{bad:?}"
            );
        }
    }

    /// A `RoomGiftSent` event as a release that wrote version 1 stored it (its
    /// `billing_version` key spelled out: version 1 has no word for it).
    const VERSION_1_GIFT_SENT: &str = "0112021B000F62696C6C696E675F76657273696F6E410A41134A0984\
        726F7365124A0F0005876F2D313730363807218B726563697069656E742D35068873656E6465722D35114A\
        104A01DB";

    fn unhex(text: &str) -> Vec<u8> {
        let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        digits
            .chunks(2)
            .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
            .collect()
    }

    #[test]
    fn a_body_written_in_version_1_reads_and_is_written_again_shorter() {
        let old = unhex(VERSION_1_GIFT_SENT);
        assert_eq!(old[0], VERSION_1);
        let value: Value = decode(&old, "event").unwrap();
        assert_eq!(
            value,
            json!({"type": "RoomGiftSent", "payload": {
                "billing_version": 1, "count": 1, "fuel_added": 10, "gift_id": "rose",
                "heat_added": 10, "lucky": null, "order_id": "o-17068",
                "recipients": ["recipient-5"], "sender": "sender-5", "total_value": 10,
                "unit_price": 10}})
        );
        let new = encode(&value).unwrap();
        assert_eq!(new[0], VERSION_2);
        assert_eq!(new.len() + "billing_version".len() + 1, old.len());
        assert_eq!(decode::<Value>(&new, "event").unwrap(), value);
    }

    #[test]
    fn a_version_1_body_knows_only_version_1_words() {
        let index = VERSION_1_WORDS as u8;
        // The first word of version 2, as a key and as a value.
        let key = [VERSION_2, 0x11, index + 1, 0x41];
        assert_eq!(
            decode::<Value>(&key, "body").unwrap(),
            json!({"billing_version": 1})
        );
        assert_eq!(encode(&json!({"billing_version": 1})).unwrap(), key);
        for bad in [
            vec![VERSION_1, 0x11, index + 1, 0x41],
            vec![VERSION_1, 0x09, index],
        ] {
            assert!(
                matches!(decode::<Value>(&bad, "body"), Err(Error::Corrupt(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn the_words_of_version_1_never_change() {
        // FNV-1a of version 1's words, one a line: a body stored in version 1 means these.
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in WORDS[..VERSION_1_WORDS].join("\n").bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        assert_eq!(hash, 0x443e_b1c3_51ff_205b);
    }

    #[test]
    fn the_words_are_unique_and_each_a_key_byte() {
        let mut seen = std::collections::HashSet::new();
        for word in WORDS {
            assert!(seen.insert(word), "{word} twice");
        }
        assert!(WORDS.len() <= 255, "a key is one byte");
    }
}

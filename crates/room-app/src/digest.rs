//! The one way the service names things by a hash: SHA-256 over parts, each behind its
//! length (so that no two lists of parts hash the same input), and lowercase hex digits.
//! Ids made this way are stored (gift command ids, idempotent request ids), so neither form
//! may ever change.

use sha2::{Digest, Sha256};

/// SHA-256 over `parts`, each preceded by its length in bytes as a big-endian `u64`.
pub fn length_prefixed_sha256<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// Appends `bytes` to `out` as lowercase hex digits, two per byte.
pub fn push_hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.reserve(2 * bytes.len());
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0F)]));
    }
}

/// `bytes` as lowercase hex digits, two per byte.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(2 * bytes.len());
    push_hex(&mut out, bytes);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_digits_are_the_formatters() {
        let bytes: Vec<u8> = (0..=255).collect();
        let expected: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex(&bytes), expected);
    }

    #[test]
    fn parts_are_told_apart_by_their_lengths() {
        let ab_c = length_prefixed_sha256([b"ab".as_slice(), b"c"]);
        let a_bc = length_prefixed_sha256([b"a".as_slice(), b"bc"]);
        assert_ne!(ab_c, a_bc);
        // The stored form: SHA-256 of 0x0000000000000002 "ab" 0x0000000000000001 "c".
        assert_eq!(
            hex(&ab_c[..4]),
            hex(&Sha256::digest(b"\0\0\0\0\0\0\0\x02ab\0\0\0\0\0\0\0\x01c")[..4])
        );
    }
}

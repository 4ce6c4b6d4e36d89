//! Room passwords: stored as a salted hash, checked by the service before a join (the room
//! gets the verdict).

use room_domain::PasswordHash;
use sha2::{Digest, Sha256};

/// `sha256$<salt>$<hex digest of salt:password>`. Room passwords are short PINs shared with a
/// room's audience, not account secrets; the salt keeps equal PINs from having equal hashes.
pub(super) fn hash_password(password: &str, salt: u64) -> PasswordHash {
    let salt = format!("{salt:016x}");
    PasswordHash(format!("sha256${salt}${}", digest(&salt, password)))
}

pub(super) fn verify_password(password: &str, hash: &PasswordHash) -> bool {
    let mut parts = hash.0.splitn(3, '$');
    match (parts.next(), parts.next(), parts.next()) {
        (Some("sha256"), Some(salt), Some(expected)) => {
            // Compare all bytes so timing does not reveal a matching prefix.
            let actual = digest(salt, password);
            actual.len() == expected.len()
                && actual
                    .bytes()
                    .zip(expected.bytes())
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0
        }
        _ => false,
    }
}

fn digest(salt: &str, password: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(salt.as_bytes());
    hasher.update(b":");
    hasher.update(password.as_bytes());
    crate::digest::hex(&hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_verify_only_with_the_right_text() {
        let hash = hash_password("1234", 42);
        assert!(!hash.0.contains("1234"));
        assert!(verify_password("1234", &hash));
        assert!(!verify_password("12345", &hash));
        assert!(!verify_password("1234", &PasswordHash("garbage".into())));
        assert_ne!(hash, hash_password("1234", 43));
    }
}

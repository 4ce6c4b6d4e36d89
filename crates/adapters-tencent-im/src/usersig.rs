//! UserSig version 2: the credential every Tencent IM call carries (the admin's, in the query
//! string) and every app user logs in with (minted by the service for its clients).
//!
//! A UserSig is the JSON document `{"TLS.ver":"2.0","TLS.identifier":..,"TLS.sdkappid":..,
//! "TLS.expire":..,"TLS.time":..,"TLS.sig":..}`, compressed with zlib, encoded in standard
//! padded base64 and made URL-safe with `+` -> `*`, `/` -> `-`, `=` -> `_`. `TLS.sig` is the
//! standard base64 of HMAC-SHA256, keyed by the UTF-8 bytes of the app's secret key, over
//! the lines `TLS.identifier:`, `TLS.sdkappid:`, `TLS.time:` and `TLS.expire:`, each ending
//! in `\n`. A sig is expired when `now > time + expire`.

use std::io::{Read, Write};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use flate2::Compression;
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// The most a decoded UserSig document may take: real ones are about 200 bytes; the cap keeps
/// a hostile sig from inflating without bound.
const MAX_DOCUMENT_BYTES: u64 = 4096;

/// Signs (and checks) UserSigs of one Tencent IM app, in the format the module
/// documentation describes. `Debug` leaves the secret out.
#[derive(Clone)]
pub struct UserSigner {
    sdk_app_id: u64,
    secret: SecretString,
}

impl std::fmt::Debug for UserSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserSigner")
            .field("sdk_app_id", &self.sdk_app_id)
            .field("secret", &"[REDACTED]")
            .finish()
    }
}

/// What a UserSig says, once decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    /// The account the sig is for.
    pub identifier: String,
    /// The app it was signed for.
    pub sdk_app_id: u64,
    /// When it was signed, in Unix seconds.
    pub time: u64,
    /// How many seconds after `time` it stays valid.
    pub expire: u64,
    /// `TLS.sig`: the standard padded base64 of the HMAC.
    pub signature: String,
}

impl Claims {
    /// The last Unix second the sig is valid in: `time + expire`.
    pub fn expires_at(&self) -> u64 {
        self.time.saturating_add(self.expire)
    }
}

/// Why a UserSig is refused, as Tencent IM tells the cases apart.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SigError {
    /// Not base64, not zlib, not the JSON document, or a field missing (Tencent's 70003).
    #[error("the UserSig cannot be decoded")]
    Undecodable,
    /// Signed for another app (Tencent's 70014).
    #[error("the UserSig is for app {found}, not {expected}")]
    AppMismatch {
        /// The app that checks it.
        expected: u64,
        /// The app in the sig.
        found: u64,
    },
    /// The HMAC does not match: another key, or altered fields (Tencent's 70009).
    #[error("the UserSig's HMAC does not match")]
    BadHmac,
    /// Past `time + expire` (Tencent's 70001).
    #[error("the UserSig expired at {expired_at}")]
    Expired {
        /// The last Unix second it was valid in.
        expired_at: u64,
    },
}

/// The JSON document inside a UserSig. Field order is free; Tencent's libraries differ.
#[derive(Serialize, Deserialize)]
struct Document {
    #[serde(rename = "TLS.ver")]
    ver: String,
    #[serde(rename = "TLS.identifier")]
    identifier: String,
    #[serde(rename = "TLS.sdkappid")]
    sdk_app_id: u64,
    #[serde(rename = "TLS.expire")]
    expire: u64,
    #[serde(rename = "TLS.time")]
    time: u64,
    #[serde(rename = "TLS.sig")]
    sig: String,
}

impl UserSigner {
    /// A signer for the app `sdk_app_id` with its secret key (the string from the console,
    /// used as its UTF-8 bytes).
    pub fn new(sdk_app_id: u64, secret: SecretString) -> Self {
        UserSigner { sdk_app_id, secret }
    }

    /// The app this signer signs for.
    pub fn sdk_app_id(&self) -> u64 {
        self.sdk_app_id
    }

    /// A UserSig for `identifier`, signed at `now_unix_secs` and valid `expire_secs` after.
    pub fn sign(&self, identifier: &str, expire_secs: u64, now_unix_secs: u64) -> String {
        let document = Document {
            ver: "2.0".to_owned(),
            identifier: identifier.to_owned(),
            sdk_app_id: self.sdk_app_id,
            expire: expire_secs,
            time: now_unix_secs,
            sig: self.signature(identifier, self.sdk_app_id, now_unix_secs, expire_secs),
        };
        let json = serde_json::to_vec(&document).expect("a UserSig document always serializes");
        let mut zlib = ZlibEncoder::new(Vec::with_capacity(json.len()), Compression::default());
        zlib.write_all(&json)
            .expect("compressing into memory cannot fail");
        let compressed = zlib.finish().expect("compressing into memory cannot fail");
        to_url_safe(STANDARD.encode(compressed))
    }

    /// Decodes `sig` and checks it: the app, then the HMAC, then expiry at `now_unix_secs`.
    /// Which account it names is the caller's to check.
    pub fn verify(&self, sig: &str, now_unix_secs: u64) -> Result<Claims, SigError> {
        let claims = decode(sig)?;
        if claims.sdk_app_id != self.sdk_app_id {
            return Err(SigError::AppMismatch {
                expected: self.sdk_app_id,
                found: claims.sdk_app_id,
            });
        }
        let given = STANDARD
            .decode(&claims.signature)
            .map_err(|_| SigError::BadHmac)?;
        let mut mac = self.mac();
        mac.update(
            signed_text(
                &claims.identifier,
                claims.sdk_app_id,
                claims.time,
                claims.expire,
            )
            .as_bytes(),
        );
        // `verify_slice` compares in constant time.
        mac.verify_slice(&given).map_err(|_| SigError::BadHmac)?;
        if now_unix_secs > claims.expires_at() {
            return Err(SigError::Expired {
                expired_at: claims.expires_at(),
            });
        }
        Ok(claims)
    }

    fn mac(&self) -> Hmac<Sha256> {
        Hmac::<Sha256>::new_from_slice(self.secret.expose_secret().as_bytes())
            .expect("HMAC takes a key of any length")
    }

    fn signature(&self, identifier: &str, sdk_app_id: u64, time: u64, expire: u64) -> String {
        let mut mac = self.mac();
        mac.update(signed_text(identifier, sdk_app_id, time, expire).as_bytes());
        STANDARD.encode(mac.finalize().into_bytes())
    }
}

/// Decodes a UserSig without checking it: what it claims, for a check or for a test.
pub fn decode(sig: &str) -> Result<Claims, SigError> {
    let compressed = STANDARD
        .decode(from_url_safe(sig))
        .map_err(|_| SigError::Undecodable)?;
    let mut json = Vec::new();
    ZlibDecoder::new(compressed.as_slice())
        .take(MAX_DOCUMENT_BYTES + 1)
        .read_to_end(&mut json)
        .map_err(|_| SigError::Undecodable)?;
    if json.len() as u64 > MAX_DOCUMENT_BYTES {
        return Err(SigError::Undecodable);
    }
    let document: Document = serde_json::from_slice(&json).map_err(|_| SigError::Undecodable)?;
    if document.ver != "2.0" {
        return Err(SigError::Undecodable);
    }
    Ok(Claims {
        identifier: document.identifier,
        sdk_app_id: document.sdk_app_id,
        time: document.time,
        expire: document.expire,
        signature: document.sig,
    })
}

fn signed_text(identifier: &str, sdk_app_id: u64, time: u64, expire: u64) -> String {
    format!(
        "TLS.identifier:{identifier}\nTLS.sdkappid:{sdk_app_id}\nTLS.time:{time}\nTLS.expire:{expire}\n"
    )
}

fn to_url_safe(standard: String) -> String {
    standard
        .chars()
        .map(|c| match c {
            '+' => '*',
            '/' => '-',
            '=' => '_',
            c => c,
        })
        .collect()
}

fn from_url_safe(sig: &str) -> String {
    sig.chars()
        .map(|c| match c {
            '*' => '+',
            '-' => '/',
            '_' => '=',
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "5bd2850fff3ecb11d7c805251c51ee463a25727bddc2385f3fa8bfee1bb93b5e";

    fn signer() -> UserSigner {
        UserSigner::new(1_400_000_000, SecretString::from(KEY))
    }

    #[test]
    fn a_sig_is_url_safe_and_verifies_until_it_expires() {
        let sig = signer().sign("administrator", 100, 1_700_000_000);
        assert!(!sig.contains(['+', '/', '=']), "{sig}");
        assert!(signer().verify(&sig, 1_700_000_100).is_ok());
        assert_eq!(
            signer().verify(&sig, 1_700_000_101),
            Err(SigError::Expired {
                expired_at: 1_700_000_100
            })
        );
    }

    #[test]
    fn verify_tells_the_refusals_apart() {
        let sig = signer().sign("administrator", 100, 1_700_000_000);
        let other_key = UserSigner::new(1_400_000_000, SecretString::from("another key"));
        assert_eq!(
            other_key.verify(&sig, 1_700_000_000),
            Err(SigError::BadHmac)
        );
        let other_app = UserSigner::new(1_400_000_001, SecretString::from(KEY));
        assert_eq!(
            other_app.verify(&sig, 1_700_000_000),
            Err(SigError::AppMismatch {
                expected: 1_400_000_001,
                found: 1_400_000_000
            })
        );
        assert_eq!(
            signer().verify("not a sig", 1_700_000_000),
            Err(SigError::Undecodable)
        );
        // Valid base64 that is not zlib.
        assert_eq!(
            signer().verify("aGVsbG8_", 1_700_000_000),
            Err(SigError::Undecodable)
        );
    }

    #[test]
    fn debug_redacts_the_secret() {
        let shown = format!("{:?}", signer());
        assert!(!shown.contains(KEY), "{shown}");
    }
}

//! UserSig version 2 through the public API: the documented check vector, what a sig
//! decodes to, and the user credentials the service mints.

use std::time::{SystemTime, UNIX_EPOCH};

use adapters_tencent_im::{ImClient, ImSettings, SigError, UserSigner, decode_user_sig};
use room_domain::UserId;
use secrecy::SecretString;

const KEY: &str = "5bd2850fff3ecb11d7c805251c51ee463a25727bddc2385f3fa8bfee1bb93b5e";

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[test]
fn the_check_vector_gives_the_documented_tls_sig() {
    let signer = UserSigner::new(1_400_000_000, SecretString::from(KEY));
    let sig = signer.sign("administrator", 86_400, 1_700_000_000);
    let claims = decode_user_sig(&sig).unwrap();
    assert_eq!(
        claims.signature,
        "yLAe+w7WUeUuqbV9h/TX78u21oTGi+i9Zp1u3PpnY60="
    );
    assert_eq!(claims.expires_at(), 1_700_086_400);
    assert_eq!(
        signer.verify(&sig, 1_700_086_400).unwrap().identifier,
        "administrator"
    );
    assert_eq!(
        signer.verify(&sig, 1_700_086_401),
        Err(SigError::Expired {
            expired_at: 1_700_086_400
        })
    );
}

#[test]
fn a_user_credential_is_a_sig_for_that_user_until_its_expiry() {
    let mut settings = ImSettings::new(1_400_000_000, KEY);
    settings.user_sig_ttl_secs = 3_600;
    let client = ImClient::new(&settings).unwrap();
    let before = now();
    let (sig, expires_at) = client.sign_user(&UserId::new("alice").unwrap());
    let claims = UserSigner::new(1_400_000_000, SecretString::from(KEY))
        .verify(&sig, now())
        .unwrap();
    assert_eq!(claims.identifier, "alice");
    assert_eq!(claims.expire, 3_600);
    assert!(claims.time >= before);
    assert_eq!(expires_at.0, (claims.time as i64 + 3_600) * 1000);
    assert_eq!(client.sdk_app_id(), 1_400_000_000);
}

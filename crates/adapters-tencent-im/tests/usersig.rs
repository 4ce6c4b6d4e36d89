//! UserSig version 2 through the public API: the documented check vector, what a sig
//! decodes to, and the user credentials the service mints.

use adapters_tencent_im::{ImClient, ImSettings, SigError, UserSigner, decode_user_sig};
use room_domain::{Timestamp, UserId};
use room_testkit::ManualClock;
use secrecy::SecretString;

const KEY: &str = "5bd2850fff3ecb11d7c805251c51ee463a25727bddc2385f3fa8bfee1bb93b5e";

#[test]
fn the_check_vector_gives_the_documented_tls_sig() {
    let signer = UserSigner::new(1_400_000_000, SecretString::from(KEY));
    let sig = signer.sign("administrator", 86_400, 1_700_000_000);
    let claims = decode_user_sig(&sig).unwrap();
    assert_eq!(
        claims.signature,
        "yLAe+w7WUeUuqbV9h/TX78u21oTGi+i9Zp1u3PpnY60="
    );
    assert_eq!(claims.identifier, "administrator");
    assert_eq!(claims.sdk_app_id, 1_400_000_000);
    assert_eq!((claims.time, claims.expire), (1_700_000_000, 86_400));
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
fn a_user_credential_is_a_sig_for_that_user_signed_at_the_clocks_time() {
    let mut settings = ImSettings::new(1_400_000_000, KEY);
    settings.user_sig_ttl_secs = 3_600;
    let clock = ManualClock::at(Timestamp(1_700_000_000_500));
    let client = ImClient::with_clock(&settings, clock.clone()).unwrap();
    let (sig, expires_at) = client.sign_user(&UserId::new("alice").unwrap());
    let signer = UserSigner::new(1_400_000_000, SecretString::from(KEY));
    let claims = signer.verify(&sig, 1_700_000_000).unwrap();
    assert_eq!(claims.identifier, "alice");
    assert_eq!((claims.time, claims.expire), (1_700_000_000, 3_600));
    assert_eq!(expires_at.0, 1_700_003_600_000);
    assert_eq!(client.sdk_app_id(), 1_400_000_000);
    // Later on the clock, a later sig.
    clock.advance_secs(60);
    let (later, _) = client.sign_user(&UserId::new("alice").unwrap());
    assert_eq!(decode_user_sig(&later).unwrap().time, 1_700_000_060);
}

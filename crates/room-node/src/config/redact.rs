//! How secrets serialize: never as themselves, so that serialized settings (the reference in
//! `docs/configuration.md`, a dump of what a node runs with) can be shown.

use secrecy::SecretString;
use serde::Serializer;

/// The stand-in of a secret that is set.
pub(super) const REDACTED: &str = "[REDACTED]";

/// An optional secret: `null` when unset, [`REDACTED`] when set.
pub(super) fn optional_secret<S: Serializer>(
    secret: &Option<SecretString>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match secret {
        Some(_) => serializer.serialize_some(REDACTED),
        None => serializer.serialize_none(),
    }
}

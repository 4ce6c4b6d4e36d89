//! `[catalog]`: the gift catalog and room rules file.

use std::path::PathBuf;

use serde::Deserialize;

/// `[catalog]`: the gift catalog and room rules file.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CatalogSettings {
    /// The file with the `[[gifts]]` catalog and the `[rules]`; when it does not exist, the
    /// copy built into the binary is used.
    pub path: PathBuf,
}

impl Default for CatalogSettings {
    fn default() -> Self {
        CatalogSettings {
            path: PathBuf::from("configs/gifts.toml"),
        }
    }
}

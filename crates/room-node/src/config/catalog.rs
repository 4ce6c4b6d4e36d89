//! `[catalog]`: the gift catalog and room rules file.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::reference::Section;

/// `[catalog]`: the gift catalog and room rules file.
#[derive(Debug, Clone, Deserialize, Serialize)]
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

/// What `[catalog]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "catalog",
    about: "The gift catalog and the room rules.",
    keys: &[(
        "path",
        "The file with the `[[gifts]]` catalog and the `[rules]`; when it does not exist, the \
             copy built into the binary (the shipped `configs/gifts.toml`) is used.",
    )],
};

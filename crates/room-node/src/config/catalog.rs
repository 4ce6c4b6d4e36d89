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
    /// How often a node reads the newest stored rocket levels, in milliseconds: a change made
    /// through another node reaches this node's rooms within it.
    pub rocket_refresh_ms: u64,
}

impl Default for CatalogSettings {
    fn default() -> Self {
        CatalogSettings {
            path: PathBuf::from("configs/gifts.toml"),
            rocket_refresh_ms: 5_000,
        }
    }
}

/// What `[catalog]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "catalog",
    about: "The gift catalog and the room rules. The rules' `rocket_levels` seed the rocket's \
            levels once (version 1); after that `PUT /v1/admin/rocket` changes them at run time \
            (this file no longer does). The gauge `room_rocket_settings_version` says which \
            version a node's rooms use.",
    keys: &[
        (
            "path",
            "The file with the `[[gifts]]` catalog and the `[rules]`; when it does not exist, \
             the copy built into the binary (the shipped `configs/gifts.toml`) is used.",
        ),
        (
            "rocket_refresh_ms",
            "How often a node reads the newest stored rocket levels, in milliseconds (at least \
             100): a change made through another node reaches this node's rooms within it. A \
             room takes new levels for its next fuel and ignition; a rocket counting down \
             launches with the prize it ignited with.",
        ),
    ],
};

//! Shared helpers for the integration tests.

#![allow(dead_code)]

use std::path::PathBuf;

/// The third-party fixtures folder (`$FACEWIRE_FIXTURES`, else `../shared/fixtures`), or `None`
/// with a note on stderr saying which tests are skipped.
pub fn fixtures(what: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("FACEWIRE_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures"));
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "note: fixtures folder {} is absent; skipping {what} (set FACEWIRE_FIXTURES)",
            dir.display()
        );
        None
    }
}

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The built `facewire` binary.
pub fn facewire_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_facewire"))
}

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

/// How many cases a fuzz test runs: `default`, or `$FACEWIRE_FUZZ_CASES` for a long run.
pub fn fuzz_cases(default: u64) -> u64 {
    std::env::var("FACEWIRE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The PRNG seed of a fuzz test: `default`, mixed with `$FACEWIRE_FUZZ_SEED` so long runs can
/// explore other cases.
pub fn fuzz_seed(default: u64) -> u64 {
    let extra: u64 = std::env::var("FACEWIRE_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    default ^ extra.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

//! Where look presets live: a name means `<config dir>/looks/NAME.toml`, like the performer
//! profiles in `<config dir>/profiles/`; anything else is a path.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::LookError;
use crate::diagnostic::{canonical_name, edit_distance, nearest};

/// The folder of presets inside the configuration folder.
pub const DIR_NAME: &str = "looks";

/// Where presets live when the configuration folder is `config` (the repository's layout, as
/// `config/profiles` for profiles), relative to the working directory.
pub const DEFAULT_DIR: &str = "config/looks";

/// The longest preset name, in characters.
pub const MAX_NAME: usize = crate::fsutil::MAX_NAME;

/// Checks that `name` can be a preset name: 1 to [`MAX_NAME`] letters, digits, `-`, `_` or
/// `.`, not starting with `.`, so it is a plain file name on every platform and cannot leave
/// the presets folder.
pub fn validate_name(name: &str) -> Result<(), LookError> {
    match crate::fsutil::name_problem(name) {
        Some(reason) => Err(LookError::BadName {
            name: name.to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

/// Whether `arg` names a preset (no path separator, no `.toml`) rather than giving a path.
fn is_name(arg: &str) -> bool {
    !arg.contains(['/', '\\']) && !arg.ends_with(".toml")
}

/// The file `arg` means: a preset name is `<config_dir>/looks/NAME.toml` (`config_dir` being
/// the folder `facewire.toml` is in, `config` in the repository's layout) and must exist;
/// anything else is a path, returned as it is (reading it reports a missing file). A missing
/// preset's error lists the presets there are, the nearest name first.
pub fn resolve(arg: &str, config_dir: &Path) -> Result<PathBuf, LookError> {
    if !is_name(arg) {
        return Ok(PathBuf::from(arg));
    }
    validate_name(arg)?;
    let dir = config_dir.join(DIR_NAME);
    let path = dir.join(format!("{arg}.toml"));
    if path.is_file() {
        return Ok(path);
    }
    let mut existing = list(&dir);
    let wanted = canonical_name(arg);
    existing
        .sort_by_cached_key(|name| (edit_distance(&wanted, &canonical_name(name)), name.clone()));
    Err(LookError::NotFound {
        name: arg.to_string(),
        dir,
        existing,
    })
}

/// The preset names in `dir`, sorted; empty when the folder does not exist.
pub fn list(dir: &Path) -> Vec<String> {
    crate::fsutil::list_names(dir)
}

/// The end of a [`LookError::NotFound`] message: the presets there are, and a hint when the
/// nearest looks like a typo.
pub(super) fn not_found_tail(name: &str, existing: &[String], dir: &Path) -> String {
    if existing.is_empty() {
        return format!(
            "; there are no presets yet (save one from the panel, or copy a NAME.toml into {})",
            dir.display()
        );
    }
    let mut s = format!("; presets there: {}", existing.join(", "));
    // `existing` comes nearest first: a hint only when that one is near enough.
    if let Some(best) = existing.first().filter(|best| close(name, best)) {
        let _ = write!(s, "\n  hint: did you mean `{best}`?");
    }
    s
}

/// Whether `candidate` is close enough to `name` to suggest (see [`nearest`]).
fn close(name: &str, candidate: &str) -> bool {
    nearest(name, [candidate]).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_in_the_looks_folder_and_paths_stay_paths() {
        let dir = tempfile::tempdir().unwrap();
        let looks = dir.path().join(DIR_NAME);
        std::fs::create_dir_all(&looks).unwrap();
        for name in ["round", "sharp", "soft"] {
            std::fs::write(looks.join(format!("{name}.toml")), "").unwrap();
        }
        std::fs::write(looks.join("notes.txt"), "").unwrap();
        assert_eq!(list(&looks), ["round", "sharp", "soft"]);
        assert_eq!(
            resolve("sharp", dir.path()).unwrap(),
            looks.join("sharp.toml")
        );
        assert_eq!(
            resolve("elsewhere/x.toml", dir.path()).unwrap(),
            PathBuf::from("elsewhere/x.toml")
        );
        assert_eq!(
            resolve("x.toml", dir.path()).unwrap(),
            PathBuf::from("x.toml")
        );
        let e = resolve("shrp", dir.path()).unwrap_err();
        let LookError::NotFound { existing, .. } = &e else {
            panic!("{e}")
        };
        assert_eq!(existing, &["sharp", "soft", "round"]);
        let message = e.to_string();
        assert!(
            message.contains("presets there: sharp, soft, round"),
            "{message}"
        );
        assert!(message.contains("did you mean `sharp`?"), "{message}");
        let e = resolve("zzzzzzzz", dir.path()).unwrap_err().to_string();
        assert!(!e.contains("did you mean"), "{e}");
        let e = resolve("round", &dir.path().join("nowhere"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("there are no presets yet"), "{e}");
        assert!(matches!(
            resolve(".hidden", dir.path()),
            Err(LookError::BadName { .. })
        ));
    }
}

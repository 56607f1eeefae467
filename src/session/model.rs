//! Switching avatars live: the models a folder offers, loading one with the mapping that goes
//! with it, and watching the file in use so that a saved re-export swaps in.

use std::path::{Path, PathBuf};

use super::{load_avatar, StartError};
use crate::avatar::AVATAR_EXTENSIONS;
use crate::config::Config;
use crate::control::{LoadedModel, ModelLoadError};
use crate::diagnostic::edit_distance;
use crate::watch::FileWatcher;

/// The most avatars a folder listing shows.
const MAX_LISTED: usize = 200;

/// The most suggestions a missing avatar's message names.
const SUGGESTED: usize = 3;

/// An avatar named on the command line that is neither a file nor in the avatars folder.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no avatar {given}: it is not a file here, nor in the avatars folder {folder} (render.models_dir){hint}")]
pub struct NoSuchModel {
    /// The name or path given.
    pub given: String,
    /// The avatars folder looked in.
    pub folder: String,
    /// What to try instead: the nearest names there, or what the folder lacks.
    pub hint: String,
}

/// The avatar a `--model` names: the file as given when it exists; else, for a relative name,
/// that name in the avatars folder `models_dir` (`render.models_dir`), also without its
/// extension (`--model alice` finds `alice.vrm`).
pub fn resolve_model(given: &Path, models_dir: &Path) -> Result<PathBuf, NoSuchModel> {
    // Empty: the built-in default head.
    if given.as_os_str().is_empty() || given.is_file() {
        return Ok(given.to_path_buf());
    }
    if given.is_relative() {
        let inside = models_dir.join(given);
        if inside.is_file() {
            return Ok(inside);
        }
        if given.extension().is_none() {
            if let Some(found) = AVATAR_EXTENSIONS
                .iter()
                .map(|e| inside.with_extension(e))
                .find(|p| p.is_file())
            {
                return Ok(found);
            }
        }
    }
    let available = models_in(models_dir);
    let hint = if !models_dir.is_dir() {
        "; that folder does not exist yet".to_owned()
    } else if available.is_empty() {
        "; that folder holds no .glb, .gltf or .vrm file yet: put your avatar there".to_owned()
    } else {
        let wanted = given
            .file_stem()
            .map(|s| s.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        let mut named: Vec<(usize, String)> = available
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .map(|name| {
                let stem = Path::new(&name)
                    .file_stem()
                    .map(|s| s.to_string_lossy().to_lowercase())
                    .unwrap_or_default();
                (edit_distance(&wanted, &stem), name)
            })
            .collect();
        named.sort();
        let nearest: Vec<String> = named
            .into_iter()
            .take(SUGGESTED)
            .map(|(_, name)| name)
            .collect();
        format!("; the nearest there: {}", nearest.join(", "))
    };
    let folder = std::path::absolute(models_dir).unwrap_or_else(|_| models_dir.to_path_buf());
    Err(NoSuchModel {
        given: given.display().to_string(),
        folder: folder.display().to_string(),
        hint,
    })
}

/// The avatars in `dir` (`.glb`, `.gltf`, `.vrm`, any case), sorted by name; empty when the
/// folder cannot be read.
pub fn models_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut models: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| AVATAR_EXTENSIONS.iter().any(|m| e.eq_ignore_ascii_case(m)))
        })
        .take(MAX_LISTED)
        .collect();
    models.sort();
    models
}

/// The mapping that goes with an avatar other than the configured one: a file of the same name
/// ending in `.toml` beside it (`models/alice.vrm` → `models/alice.toml`), when there is one.
pub fn sibling_mapping(model: &Path) -> Option<PathBuf> {
    let mapping = model.with_extension("toml");
    mapping.is_file().then_some(mapping)
}

/// Whether `path` names the avatar `config` was started with (`None`: the default head).
fn is_configured(config: &Config, path: Option<&Path>) -> bool {
    let configured = &config.render.model;
    match path {
        None => configured.as_os_str().is_empty(),
        Some(p) => {
            p == configured
                || p.canonicalize()
                    .ok()
                    .zip(configured.canonicalize().ok())
                    .is_some_and(|(a, b)| a == b)
        }
    }
}

/// Loads the avatar at `path` (`None`: the default head) and compiles its mapping: the
/// configured mapping for the configured avatar; for another one, [`sibling_mapping`] when it
/// exists, else the automatic mapping (the default head's own for the default head).
pub fn load_model_at(config: &Config, path: Option<&Path>) -> Result<LoadedModel, ModelLoadError> {
    let mut config = config.clone();
    let configured = is_configured(&config, path);
    config.render.model = path.map(Path::to_path_buf).unwrap_or_default();
    if !configured {
        config.render.mapping = path.and_then(sibling_mapping).unwrap_or_default();
    }
    let (avatar, mapping) = load_avatar(&config).map_err(|e| ModelLoadError {
        path: path.map(Path::to_path_buf),
        source: Box::new(e),
    })?;
    Ok(LoadedModel {
        path: path.map(Path::to_path_buf),
        avatar,
        mapping,
    })
}

/// Watches the avatar file `path` and hands each saved version, loaded with its mapping by
/// [`load_model_at`] (or why it could not be), to `deliver`.
pub fn watch_model(
    config: &Config,
    path: &Path,
    mut deliver: impl FnMut(Result<LoadedModel, ModelLoadError>) + Send + 'static,
) -> Result<FileWatcher, StartError> {
    let config = config.clone();
    let watcher = crate::watch::watch_file(path, move |p| {
        tracing::info!(model = %p.display(), "the avatar file changed; loading it");
        deliver(load_model_at(&config, Some(p)));
    })?;
    tracing::info!(model = %path.display(), "watching the avatar for changes");
    Ok(watcher)
}

/// The mapping file [`load_model_at`] uses for `path`, for the panel to name.
pub fn mapping_for(config: &Config, path: Option<&Path>) -> Option<PathBuf> {
    if is_configured(config, path) {
        super::mapping_path(config)
    } else {
        path.and_then(sibling_mapping)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_is_found_by_name_in_the_avatars_folder_or_named_with_the_nearest() {
        let dir = tempfile::tempdir().unwrap();
        let models = dir.path().join("models");
        std::fs::create_dir_all(&models).unwrap();
        for name in ["alice.vrm", "Bob.glb", "carol.gltf", "notes.txt"] {
            std::fs::write(models.join(name), b"").unwrap();
        }
        assert_eq!(
            resolve_model(Path::new("alice.vrm"), &models).unwrap(),
            models.join("alice.vrm")
        );
        assert_eq!(
            resolve_model(Path::new("alice"), &models).unwrap(),
            models.join("alice.vrm")
        );
        let given = dir.path().join("models/Bob.glb");
        assert_eq!(resolve_model(&given, &models).unwrap(), given);
        assert_eq!(
            resolve_model(Path::new(""), &models).unwrap(),
            PathBuf::new()
        );
        let error = resolve_model(Path::new("alcie"), &models).unwrap_err();
        let text = error.to_string();
        assert!(text.contains(&models.display().to_string()), "{text}");
        assert!(text.contains("nearest there: alice.vrm, "), "{text}");
        assert!(!text.contains("notes.txt"), "{text}");
        let empty = dir.path().join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        let text = resolve_model(Path::new("alice"), &empty)
            .unwrap_err()
            .to_string();
        assert!(text.contains("holds no .glb, .gltf or .vrm file"), "{text}");
        let text = resolve_model(Path::new("alice"), &dir.path().join("absent"))
            .unwrap_err()
            .to_string();
        assert!(text.contains("does not exist"), "{text}");
    }

    fn default_head_bytes() -> &'static [u8] {
        crate::headgen::DEFAULT_HEAD_GLB
    }

    #[test]
    fn a_folder_lists_its_avatars_by_name() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.vrm", "a.GLB", "c.gltf", "notes.txt", "d.toml"] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        std::fs::create_dir(dir.path().join("e.glb")).unwrap();
        let names: Vec<String> = models_in(dir.path())
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.GLB", "b.vrm", "c.gltf"]);
        assert!(models_in(&dir.path().join("missing")).is_empty());
    }

    use crate::diagnostic::with_causes;

    #[test]
    fn another_avatar_takes_the_mapping_beside_it_or_the_automatic_one() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("head.glb");
        std::fs::write(&model, default_head_bytes()).unwrap();
        let config = Config::default();
        let loaded = load_model_at(&config, Some(&model)).unwrap();
        assert_eq!(loaded.path.as_deref(), Some(model.as_path()));
        assert!(!loaded.mapping.targets.is_empty(), "automatic mapping");
        assert_eq!(mapping_for(&config, Some(&model)), None);
        // A mapping beside it that does not parse is the error, with its file.
        let mapping = dir.path().join("head.toml");
        std::fs::write(&mapping, "[targets\n").unwrap();
        assert_eq!(mapping_for(&config, Some(&model)), Some(mapping.clone()));
        let err = with_causes(&load_model_at(&config, Some(&model)).unwrap_err());
        assert!(err.contains("head.toml"), "{err}");
        // The default head keeps its own mapping.
        let head = load_model_at(&config, None).unwrap();
        assert!(head.path.is_none());
        assert!(!head.mapping.targets.is_empty());
    }

    #[test]
    fn a_broken_avatar_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("broken.glb");
        std::fs::write(&model, b"glTF not really").unwrap();
        let err = load_model_at(&Config::default(), Some(&model)).unwrap_err();
        assert_eq!(err.path.as_deref(), Some(model.as_path()));
        let err = with_causes(&err);
        assert!(err.contains("broken.glb"), "{err}");
    }

    #[test]
    fn a_saved_avatar_is_loaded_and_delivered() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("live.glb");
        std::fs::write(&model, default_head_bytes()).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let _watch = watch_model(&Config::default(), &model, move |loaded| {
            let _ = tx.send(loaded.map(|m| m.avatar.meshes.len()));
        })
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        crate::fsutil::write_atomic(&model, b"broken").unwrap();
        let first = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("a change is delivered");
        assert!(with_causes(&first.unwrap_err()).contains("live.glb"));
        crate::fsutil::write_atomic(&model, default_head_bytes()).unwrap();
        let second = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("a second change is delivered");
        assert!(second.unwrap() > 0);
    }
}

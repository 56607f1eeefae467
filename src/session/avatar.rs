//! Which avatar and mapping a run uses: the configured model (or the built-in default head),
//! the mapping file that goes with it, and the stage background for offscreen images.

use std::path::PathBuf;

use super::StartError;
use crate::avatar::{self, Avatar};
use crate::config::{Config, PoseConfig};
use crate::mapping::{self, CompiledMapping, MappingFile};

/// Where the default head's mapping lives in the configuration's folder.
pub const DEFAULT_HEAD_MAPPING_FILE: &str = "mappings/default_head.toml";

/// The default head's mapping file beside `config`'s file (it may not exist).
pub fn default_head_mapping(config: &Config) -> PathBuf {
    config.folder.join(DEFAULT_HEAD_MAPPING_FILE)
}

/// Whether the configuration names no model, so the built-in default head is used.
fn default_head(config: &Config) -> bool {
    config.render.model.as_os_str().is_empty()
}

/// The configured avatar, or the built-in default head, with a humanoid's arms brought to
/// the rest pose `[pose]` in `facewire.toml` asks for.
pub fn load_model(config: &Config) -> Result<Avatar, StartError> {
    load_model_posed(config, &config.pose)
}

/// The configured avatar, or the built-in default head, with a humanoid's arms brought to
/// the rest pose `pose` asks for.
fn load_model_posed(config: &Config, pose: &PoseConfig) -> Result<Avatar, StartError> {
    let mut avatar = if default_head(config) {
        avatar::load_slice(
            crate::headgen::DEFAULT_HEAD_GLB,
            crate::headgen::DEFAULT_HEAD,
        )?
    } else {
        avatar::load_with(&config.render.model, &load_limits(config))?
    };
    if let Some(rest) = pose.arm_rest() {
        for arm in avatar::rest_pose::relax(&mut avatar, &rest) {
            tracing::info!(
                side = ?arm.side,
                modelled = ?arm.start,
                modelled_down_degrees = arm.modelled_down_degrees,
                relaxed = arm.moved(),
                "humanoid arm at rest"
            );
        }
    }
    Ok(avatar)
}

/// The limits a model loads within: `render.texture_budget_mb`.
fn load_limits(config: &Config) -> avatar::LoadLimits {
    avatar::LoadLimits {
        texture_budget: u64::from(config.render.texture_budget_mb) << 20,
    }
}

/// The look preset `render.look` names (a name in the `looks` folder beside the
/// configuration, or a path), read and checked against `mapping`'s sliders; `None` when no
/// look is configured.
pub fn load_look(
    config: &Config,
    mapping: &CompiledMapping,
) -> Result<Option<crate::look::Look>, StartError> {
    let arg = config.render.look.trim();
    if arg.is_empty() {
        return Ok(None);
    }
    let path = crate::look::resolve(arg, &config.folder)?;
    let look = crate::look::Look::load(&path, &mapping.sliders().ranges())?;
    tracing::info!(look = %path.display(), sliders = look.sliders.len(), "look loaded");
    Ok(Some(look))
}

/// The file of the configured look preset, when there is one on disk (to watch it).
pub fn look_path(config: &Config) -> Option<PathBuf> {
    let arg = config.render.look.trim();
    (!arg.is_empty())
        .then(|| crate::look::resolve(arg, &config.folder).ok())
        .flatten()
}

/// The mapping text and where it came from: `render.mapping`, else (for the default head)
/// mappings/default_head.toml beside the configuration or its built-in copy; `None` means the
/// automatic mapping.
pub fn mapping_source(config: &Config) -> Result<Option<(String, String)>, StartError> {
    let default_file = default_head_mapping(config);
    let path = if !config.render.mapping.as_os_str().is_empty() {
        config.render.mapping.clone()
    } else if default_head(config) && default_file.is_file() {
        default_file
    } else if default_head(config) {
        return Ok(Some((
            mapping::DEFAULT_HEAD_MAPPING.to_string(),
            DEFAULT_HEAD_MAPPING_FILE.to_string(),
        )));
    } else {
        return Ok(None);
    };
    let text = crate::fsutil::read_text(&path).map_err(|source| StartError::ReadMapping {
        path: path.clone(),
        source,
    })?;
    Ok(Some((text, path.display().to_string())))
}

/// The mapping file in use, when there is one on disk (to watch it).
pub fn mapping_path(config: &Config) -> Option<PathBuf> {
    if !config.render.mapping.as_os_str().is_empty() {
        Some(config.render.mapping.clone())
    } else if default_head(config) && default_head_mapping(config).is_file() {
        Some(default_head_mapping(config))
    } else {
        None
    }
}

/// Loads the configured avatar (or the built-in default head) in the rest pose its mapping's
/// `[pose]` (else the configuration's) asks for, and compiles its mapping.
pub fn load_avatar(config: &Config) -> Result<(Avatar, CompiledMapping), StartError> {
    let file = match mapping_source(config)? {
        Some((text, path)) => Some(MappingFile::parse(&text, &path)?),
        None => None,
    };
    // The mapping's own [pose], made for this avatar, before the configuration's.
    let pose = file.as_ref().and_then(|f| f.pose).unwrap_or(config.pose);
    let avatar = load_model_posed(config, &pose)?;
    let targets: usize = avatar.meshes.iter().map(|m| m.target_count()).sum();
    tracing::info!(model = %avatar.source, meshes = avatar.meshes.len(), targets, "avatar loaded");
    let compiled = match &file {
        Some(file) => CompiledMapping::compile(file, &avatar)?,
        None => CompiledMapping::auto(&avatar),
    };
    // The layers' and expressions' own target values must name what the avatar has; the scene
    // resolves them.
    let stack = crate::stack::StackConfig::of(config).with_presets(avatar_presets(&avatar));
    crate::mapping::LayerTargets::compile(&stack.section(), &avatar)?;
    tracing::info!(
        mapping = file.as_ref().map_or("automatic", |f| f.path.as_str()),
        targets = compiled.targets.len(),
        "mapping compiled"
    );
    Ok((avatar, compiled))
}

/// The VRM preset expressions (happy, angry, sad, relaxed, surprised) `avatar` has, ready to
/// trigger without configuration; none for an avatar that is not a VRM.
pub fn avatar_presets(avatar: &Avatar) -> Vec<crate::expressions::Expression> {
    let Some(vrm) = avatar.vrm.as_ref() else {
        return Vec::new();
    };
    crate::expressions::vrm_presets(|name| {
        vrm.expressions
            .iter()
            .any(|e| e.preset.is_some_and(|p| p.name() == name))
    })
}

/// Checks the configured mapping against the configured model: what was checked (a line to
/// print before the report) and the report.
pub fn check_mapping(config: &Config) -> Result<(String, mapping::CheckReport), StartError> {
    let avatar = load_model(config)?;
    Ok(match mapping_source(config)? {
        Some((text, path)) => (
            format!("checking {path} against {}", avatar.source),
            mapping::check_text(&text, &path, &avatar),
        ),
        None => (
            format!("checking the automatic mapping against {}", avatar.source),
            mapping::check(&MappingFile::default(), &avatar),
        ),
    })
}

/// The background colour for offscreen images, and whether it is premultiplied alpha:
/// transparent when `window.transparent`, else opaque.
pub fn background(config: &Config) -> ([f32; 4], bool) {
    let mut c = config.window.background.0;
    if config.window.transparent {
        c[3] = 0.0;
        (c, true)
    } else {
        c[3] = 1.0;
        (c, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_head_gets_its_mapping_and_others_the_automatic_one() {
        let mut config = Config::default();
        let (text, path) = mapping_source(&config).unwrap().unwrap();
        assert!(path.ends_with("default_head.toml"), "{path}");
        assert!(!text.is_empty());
        config.render.model = PathBuf::from("avatar.vrm");
        assert!(mapping_source(&config).unwrap().is_none());
        assert_eq!(mapping_path(&config), None);
        config.render.mapping = PathBuf::from("/nonexistent/mapping.toml");
        let e = mapping_source(&config).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/mapping.toml"), "{e}");
    }

    #[test]
    fn the_default_head_loads_with_its_mapping() {
        let (avatar, mapping) = load_avatar(&Config::default()).unwrap();
        assert!(!avatar.meshes.is_empty());
        assert!(!mapping.targets.is_empty());
    }

    #[test]
    fn the_configured_texture_budget_defaults_to_the_loaders() {
        assert_eq!(
            load_limits(&Config::default()),
            avatar::LoadLimits::default()
        );
    }

    #[test]
    fn transparent_backgrounds_are_premultiplied() {
        let mut config = Config::default();
        assert_eq!(background(&config).0[3], 1.0);
        config.window.transparent = true;
        let (c, premultiplied) = background(&config);
        assert_eq!((c[3], premultiplied), (0.0, true));
    }
}

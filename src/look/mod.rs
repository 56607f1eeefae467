//! Look presets (`looks/NAME.toml` beside the configuration): a character's face-shape slider
//! values and colours, small shareable files that recreate a face on any avatar whose mapping has those sliders.
//!
//! A preset stores only slider names and values (the sliders themselves, with their targets and
//! ranges, live in the mapping file's `[sliders]`) and optional colours:
//!
//! ```toml
//! [sliders]
//! eye_size = 0.4
//! jaw_width = -0.25
//! [colors]
//! skin = "#f1c6a8"
//! blush = "#ff8a80"
//! blush_strength = 0.4
//! ```
//!
//! Reading is two steps, so a file can be checked before an avatar is loaded: [`LookFile`]
//! reads the TOML (unknown keys, values that are not numbers, bad colours), then
//! [`LookFile::check`] holds it against the mapping's sliders (unknown names, values out of
//! range); [`Look::parse`] does both. Every problem is reported at once, each at its line and
//! column. A [`Look`] becomes [`SliderValues`] for [`CompiledSliders::apply`] with
//! [`Look::values`]. No GL here.

mod color;
mod parse;
mod random;
mod store;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use color::{default_head_atlas, palette_of, ColorError, Srgb, COLOR_FORM};
pub use parse::LookFile;
pub use store::{list, resolve, validate_name, DEFAULT_DIR, DIR_NAME, MAX_NAME};

use crate::diagnostic::Located;
use crate::mapping::{CompiledSliders, SliderRange, SliderValues};
use crate::tomlfile::{Ordered, TomlFile, TomlFileError, F32};

/// How strongly blush shows when a preset gives a colour but no `blush_strength`.
pub const DEFAULT_BLUSH_STRENGTH: f32 = 0.5;

/// A look: face-shape slider values by name, in file order, and colours.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Look {
    /// `(slider name, value)`, each name once; sliders not listed stay at their defaults.
    pub sliders: Vec<(String, f32)>,
    /// The colours it sets.
    pub colors: Colors,
}

/// A look's colours; `None` keeps the avatar's own.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Colors {
    /// Skin.
    pub skin: Option<Srgb>,
    /// Hair (and brows).
    pub hair: Option<Srgb>,
    /// The iris of both eyes.
    pub iris: Option<Srgb>,
    /// Blush on the cheeks.
    pub blush: Option<Blush>,
}

/// Blush: a colour and how strongly it shows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Blush {
    /// The colour at full strength.
    pub color: Srgb,
    /// 0 (none) to 1 (the colour itself where the blush is densest).
    pub strength: f32,
}

/// Errors finding, reading, checking or saving a look preset.
#[derive(Debug, thiserror::Error)]
pub enum LookError {
    /// The preset name cannot be a file name.
    #[error("`{name}` is not a usable look name: {reason}")]
    BadName {
        /// The name as given.
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// No preset of that name exists.
    #[error(
        "no look preset `{name}` in {}{}",
        dir.display(),
        store::not_found_tail(name, existing, dir)
    )]
    NotFound {
        /// The name asked for.
        name: String,
        /// The folder searched.
        dir: PathBuf,
        /// The presets that do exist, the nearest to `name` first.
        existing: Vec<String>,
    },
    /// The file could not be read.
    #[error("{}: {cause}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's error; part of the message, so not a `source()`.
        cause: std::io::Error,
    },
    /// The file has problems: each located, in file order.
    #[error("{}", lines(.0))]
    Invalid(Vec<Located>),
    /// The file could not be written (the previous file, if any, is unchanged).
    #[error("cannot write the look preset: {0}")]
    Write(TomlFileError),
}

fn lines(problems: &[Located]) -> String {
    let mut s = String::new();
    for (i, p) in problems.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        let _ = write!(s, "{p}");
    }
    s
}

impl LookError {
    /// The located problems of an [`LookError::Invalid`] file (empty for the other errors).
    pub fn problems(&self) -> &[Located] {
        match self {
            LookError::Invalid(problems) => problems,
            _ => &[],
        }
    }
}

/// The first lines of a preset [`Look::to_toml`] writes.
pub const HEADER: &str = "\
# facewire look preset: face-shape slider values and colours.
# Slider names are those of the mapping's [sliders] tables; a slider not listed stays at its
# default. Colours are \"#rrggbb\" (sRGB); one not listed keeps the avatar's own.
";

impl Look {
    /// Slider `name`'s value, if the look sets it.
    pub fn get(&self, name: &str) -> Option<f32> {
        self.sliders
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, v)| v)
    }

    /// Sets slider `name` to `value`, in place if the look sets it already, else at the end.
    pub fn set(&mut self, name: &str, value: f32) {
        match self.sliders.iter_mut().find(|(n, _)| n == name) {
            Some((_, v)) => *v = value,
            None => self.sliders.push((name.to_string(), value)),
        }
    }

    /// One value per slider of `sliders`: the look's, clamped to the slider's range, or the
    /// default where the look sets none. Names `sliders` does not have are ignored (a checked
    /// look has none).
    pub fn values(&self, sliders: &CompiledSliders) -> SliderValues {
        let mut values = SliderValues::defaults(sliders);
        for (name, value) in &self.sliders {
            match sliders.index_of(name) {
                Some(i) => {
                    values.set(i, sliders.sliders[i].clamp(*value));
                }
                None => tracing::debug!(slider = %name, "look sets a slider the mapping lacks"),
            }
        }
        values
    }

    /// The look of `values` (one per slider of `sliders`), leaving out sliders at their default,
    /// with `colors`: what a panel saves.
    pub fn from_values(values: &SliderValues, sliders: &CompiledSliders, colors: Colors) -> Look {
        let sliders = sliders
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let v = s.clamp(values.get(i).unwrap_or(s.default));
                (v != s.default).then(|| (s.name.clone(), v))
            })
            .collect();
        Look { sliders, colors }
    }

    /// The text of a new preset file: [`HEADER`], the slider values, the colours that are set.
    /// Reading it back gives this look.
    pub fn to_toml(&self) -> String {
        crate::tomlfile::to_string(&LookTable::of(self), HEADER)
            .expect("a look is strings and numbers, always TOML")
    }

    /// Parses preset text and checks it against `sliders` (the compiled mapping's
    /// [`CompiledSliders::ranges`]); `path` labels errors. Every problem is in the error, in
    /// file order.
    pub fn parse(text: &str, path: &str, sliders: &[SliderRange]) -> Result<Look, LookError> {
        let (file, mut problems) = LookFile::parse_all(text, path);
        if let Some(file) = &file {
            problems.extend(file.check(sliders));
        }
        match file {
            Some(file) if problems.is_empty() => Ok(file.look),
            _ => {
                problems.sort_by_key(|p| (p.line, p.column));
                Err(LookError::Invalid(problems))
            }
        }
    }

    /// Reads a preset file and checks it against `sliders`.
    pub fn load(path: &Path, sliders: &[SliderRange]) -> Result<Look, LookError> {
        let text = crate::fsutil::read_text(path).map_err(|cause| LookError::Read {
            path: path.to_path_buf(),
            cause,
        })?;
        Look::parse(&text, &path.display().to_string(), sliders)
    }

    /// Writes the preset to `path` atomically (creating its folder). An existing file keeps
    /// what was written in it by hand (comments, order, spacing) where its keys remain; one
    /// that is not TOML is replaced.
    pub fn save(&self, path: &Path) -> Result<(), LookError> {
        let mut file = TomlFile::open_or_replace(path, HEADER).map_err(LookError::Write)?;
        file.set(&LookTable::of(self)).map_err(LookError::Write)?;
        file.write().map_err(LookError::Write)?;
        tracing::info!(path = %path.display(), "look preset saved");
        Ok(())
    }
}

/// A preset file as written: the tables that have something in them.
#[derive(Serialize)]
struct LookTable<'a> {
    /// `[sliders]`, in the look's order.
    #[serde(skip_serializing_if = "Ordered::is_empty")]
    sliders: Ordered<&'a str, F32>,
    /// `[colors]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    colors: Option<ColorTable>,
}

/// `[colors]` as written: `"#rrggbb"` strings.
#[derive(Serialize)]
struct ColorTable {
    #[serde(skip_serializing_if = "Option::is_none")]
    skin: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hair: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    iris: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    blush: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    blush_strength: Option<F32>,
}

impl<'a> LookTable<'a> {
    fn of(look: &'a Look) -> LookTable<'a> {
        let c = &look.colors;
        let hex = |c: Option<Srgb>| c.map(|c| c.to_string());
        LookTable {
            sliders: Ordered(
                look.sliders
                    .iter()
                    .map(|(name, v)| (name.as_str(), F32(*v)))
                    .collect(),
            ),
            colors: (*c != Colors::default()).then(|| ColorTable {
                skin: hex(c.skin),
                hair: hex(c.hair),
                iris: hex(c.iris),
                blush: hex(c.blush.map(|b| b.color)),
                blush_strength: c.blush.map(|b| F32(b.strength)),
            }),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::avatar::{Avatar, Mesh, Node, Pose};
    use crate::mapping::{CompiledMapping, MappingFile};
    use glam::Vec3;

    /// The default head's twelve sliders' names (each -1..1 at rest 0).
    pub(crate) fn sliders() -> impl Iterator<Item = &'static str> {
        crate::headgen::look::LOOK_SLIDERS.iter().map(|s| s.name)
    }

    pub(crate) fn ranges() -> Vec<SliderRange> {
        sliders()
            .map(|n| SliderRange {
                name: n.to_string(),
                min: -1.0,
                max: 1.0,
                default: 0.0,
            })
            .collect()
    }

    /// An avatar with the twelve sliders' look targets and two eye nodes, and a mapping of
    /// them compiled against it.
    fn rig() -> (Avatar, CompiledMapping) {
        let node = |name: &str, mesh| Node {
            name: Some(name.into()),
            translation: Vec3::new(0.0, 1.0, 0.0),
            mesh,
            ..Node::default()
        };
        let mut names: Vec<String> = vec!["jawOpen".into()];
        let mut text = String::from("version = 1\n");
        for s in sliders() {
            names.push(format!("look_{s}_up"));
            names.push(format!("look_{s}_down"));
            let _ = write!(
                text,
                "[sliders.{s}]\nup = \"look_{s}_up\"\ndown = \"look_{s}_down\"\n"
            );
            if s == "eye_spacing" {
                text.push_str(
                    "nodes = { LeftEye = [0.003, 0.0, 0.0], RightEye = [-0.003, 0.0, 0.0] }\n",
                );
            }
        }
        let avatar = Avatar {
            nodes: vec![
                node("Head", Some(0)),
                node("LeftEye", None),
                node("RightEye", None),
            ],
            roots: vec![0, 1, 2],
            meshes: vec![Mesh {
                name: None,
                default_weights: vec![0.0; names.len()],
                target_names: names,
                primitives: vec![],
            }],
            ..Avatar::default()
        };
        let file = MappingFile::parse(&text, "m.toml").unwrap();
        let mapping = CompiledMapping::compile(&file, &avatar).unwrap();
        (avatar, mapping)
    }

    fn weight(avatar: &Avatar, pose: &Pose, name: &str) -> f32 {
        let t = avatar.meshes[0]
            .target_names
            .iter()
            .position(|n| n == name)
            .unwrap();
        pose.weights[0][t]
    }

    fn sample() -> Look {
        Look {
            sliders: vec![
                ("eye_size".into(), 0.4),
                ("jaw_width".into(), -0.25),
                ("nose_length".into(), 0.1 + 0.2),
            ],
            colors: Colors {
                skin: Some(Srgb::hex(0xf1c6a8)),
                hair: None,
                iris: Some(Srgb::hex(0x3d7a55)),
                blush: Some(Blush {
                    color: Srgb::hex(0xff8a80),
                    strength: 0.35,
                }),
            },
        }
    }

    #[test]
    fn a_look_survives_a_round_trip_through_its_file() {
        let look = sample();
        let text = look.to_toml();
        assert!(text.starts_with(HEADER), "{text}");
        assert!(!text.contains("hair"), "{text}");
        assert_eq!(Look::parse(&text, "a.toml", &ranges()).unwrap(), look);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("looks").join("a.toml");
        look.save(&path).unwrap();
        assert_eq!(Look::load(&path, &ranges()).unwrap(), look);
        // Nothing set: the header alone, which reads as the empty look.
        let empty = Look::default().to_toml();
        assert_eq!(empty, HEADER);
        assert_eq!(Look::parse(&empty, "e.toml", &[]).unwrap(), Look::default());
        // Random looks (values of two decimals) too.
        for seed in 0..50 {
            let look = Look::random(seed, &ranges());
            assert_eq!(
                Look::parse(&look.to_toml(), "r.toml", &ranges()).unwrap(),
                look
            );
        }
    }

    #[test]
    fn saving_over_a_preset_keeps_what_was_written_by_hand() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("round.toml");
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("config/looks/round.toml"),
        )
        .unwrap()
        .replace("eye_size = 0.45\n", "eye_size = 0.45 # big\n")
        .replace("[colors]\n", "# Warm colours.\n[colors]\n");
        std::fs::write(&path, &text).unwrap();
        let mut look = Look::load(&path, &ranges()).unwrap();
        look.set("eye_size", 0.5);
        look.sliders.retain(|(n, _)| n != "nose_width");
        look.set("mouth_width", -0.2);
        look.colors.hair = None;
        look.save(&path).unwrap();
        let saved = std::fs::read_to_string(&path).unwrap();
        assert_eq!(Look::load(&path, &ranges()).unwrap(), look);
        let expected = text
            .replace("eye_size = 0.45 # big", "eye_size = 0.5 # big")
            .replace("nose_width = -0.1\n", "")
            .replace(
                "face_width = 0.2\n",
                "face_width = 0.2\nmouth_width = -0.2\n",
            )
            .replace("hair = \"#6a4e42\"\n", "");
        assert_eq!(saved, expected);
        // A file that is not TOML is replaced.
        std::fs::write(&path, "[sliders\n").unwrap();
        look.save(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), look.to_toml());
    }

    #[test]
    fn an_empty_look_leaves_the_rest_pose_exactly() {
        let (avatar, mapping) = rig();
        let rest = avatar.rest_pose();
        let mut pose = rest.clone();
        let zeros = Look {
            sliders: sliders().map(|s| (s.to_string(), 0.0)).collect(),
            colors: Colors::default(),
        };
        for look in [Look::default(), zeros] {
            mapping
                .sliders()
                .apply(&look.values(mapping.sliders()), &mut pose);
            assert_eq!(pose, rest);
        }
    }

    #[test]
    fn a_look_drives_its_sliders_targets_and_nodes() {
        let (avatar, mapping) = rig();
        let mut look = sample();
        look.set("eye_spacing", 1.0);
        look.set("face_width", 7.0);
        let mut pose = avatar.rest_pose();
        mapping
            .sliders()
            .apply(&look.values(mapping.sliders()), &mut pose);
        assert!((weight(&avatar, &pose, "look_eye_size_up") - 0.4).abs() < 1e-6);
        assert_eq!(weight(&avatar, &pose, "look_eye_size_down"), 0.0);
        assert_eq!(weight(&avatar, &pose, "look_jaw_width_down"), 0.25);
        assert_eq!(weight(&avatar, &pose, "look_face_width_up"), 1.0, "clamped");
        assert!(pose.translations[1].abs_diff_eq(Vec3::new(0.003, 0.0, 0.0), 1e-9));
        assert!(pose.translations[2].abs_diff_eq(Vec3::new(-0.003, 0.0, 0.0), 1e-9));
        // Saving what the panel shows drops the sliders at their defaults and clamps the rest.
        let values = look.values(mapping.sliders());
        let saved = Look::from_values(&values, mapping.sliders(), look.colors);
        let names: Vec<&str> = saved.sliders.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "eye_size",
                "eye_spacing",
                "nose_length",
                "jaw_width",
                "face_width"
            ]
        );
        assert_eq!(saved.get("face_width"), Some(1.0));
        assert_eq!(saved.values(mapping.sliders()), values);
    }

    #[test]
    fn the_example_presets_read_and_differ() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(DEFAULT_DIR);
        let names = list(&dir);
        assert!(names.len() >= 3, "{names:?}");
        let mut looks = Vec::new();
        for name in &names {
            let path = dir.join(format!("{name}.toml"));
            let look = Look::load(&path, &ranges()).unwrap_or_else(|e| panic!("{e}"));
            assert!(look.sliders.len() >= 3, "{name}");
            assert!(look.colors.skin.is_some(), "{name}");
            assert!(!looks.contains(&look), "{name} repeats another preset");
            looks.push(look);
        }
    }
}

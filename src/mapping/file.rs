//! The mapping file (TOML): raw serde types, parsed once with positions kept for error messages.
//!
//! Everything that can be checked without the avatar (channel names, curve points, ranges,
//! unknown keys) is checked here, while the TOML positions are at hand; names that depend on the
//! avatar (targets, nodes) keep their positions in [`Spanned`] values for
//! [`super::CompiledMapping::compile`].

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use toml::Spanned;

use super::Source;
use crate::diagnostic::{key_offset, nearest, Located};

/// The mapping format version this build writes; it reads every version up to this one.
pub const VERSION: u32 = 1;

/// Largest magnitude accepted for gains, offsets, clamp bounds and curve points, so that no
/// finite input can overflow an evaluation.
pub const MAX_MAGNITUDE: f32 = 1.0e4;

/// Errors reading or compiling a mapping file. Every message names the file, line and column.
#[derive(Debug, thiserror::Error)]
pub enum MappingError {
    /// The file could not be read.
    #[error("{path}: {cause}")]
    Read {
        /// The file.
        path: String,
        /// The underlying error; part of the message, so not a `source()`.
        cause: std::io::Error,
    },
    /// The file is not valid TOML, has an unknown key, a bad value, or names something the
    /// avatar does not have.
    #[error("{0}")]
    Invalid(Located),
}

impl MappingError {
    /// The error on one line (the hint, if any, after a semicolon), for reports.
    pub fn one_line(&self) -> String {
        match self {
            MappingError::Read { .. } => self.to_string(),
            MappingError::Invalid(located) => located.one_line(),
        }
    }

    /// Its line and column, for sorting errors into file order (a read error comes first).
    pub fn position(&self) -> (usize, usize) {
        match self {
            MappingError::Read { .. } => (0, 0),
            MappingError::Invalid(located) => (located.line, located.column),
        }
    }
}

/// A finite number of magnitude at most [`MAX_MAGNITUDE`].
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Finite(pub f32);

impl<'de> Deserialize<'de> for Finite {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        if !v.is_finite() || v.abs() > MAX_MAGNITUDE as f64 {
            return Err(de::Error::custom(format!(
                "{v} is out of range; use a finite number between -{MAX_MAGNITUDE} and {MAX_MAGNITUDE}"
            )));
        }
        Ok(Finite(v as f32))
    }
}

/// A table whose entries keep the file's order and the position of every key.
#[derive(Debug, Clone, PartialEq)]
pub struct Ordered<V>(pub Vec<(Spanned<String>, V)>);

impl<V> Default for Ordered<V> {
    fn default() -> Self {
        Ordered(Vec::new())
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Ordered<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V_<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for V_<V> {
            type Value = Ordered<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(key) = map.next_key::<Spanned<String>>()? {
                    out.push((key, map.next_value()?));
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V_(PhantomData))
    }
}

/// How the weighted sources of one target combine into one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Combine {
    /// `Σ weight·source` (the default).
    #[default]
    Sum,
    /// `Π weight·source`: a corrective that appears only when every source is active.
    Product,
    /// `min(weight·source)`: like product, but linear in the weakest source.
    Min,
    /// `max(weight·source)`.
    Max,
}

/// The sources of a target, ARKit channels or visemes: `"jawOpen"`,
/// `["mouthSmileLeft", "mouthSmileRight"]` (weight 1 each) or
/// `{ mouthSmileLeft = 0.5, mouthSmileRight = 0.5 }`; a viseme is written `"viseme:aa"`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sources(pub Vec<(Source, f32)>);

impl<'de> Deserialize<'de> for Sources {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Sources;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a channel or viseme name, an array of them, or a table of name = weight",
                )
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Sources, E> {
                Source::parse(s)
                    .map(|c| Sources(vec![(c, 1.0)]))
                    .map_err(E::custom)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Sources, A::Error> {
                let mut out = Vec::new();
                while let Some(source) = seq.next_element::<Source>()? {
                    out.push((source, 1.0));
                }
                Ok(Sources(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Sources, A::Error> {
                let mut out = Vec::new();
                while let Some(source) = map.next_key::<Source>()? {
                    let Finite(w) = map.next_value()?;
                    out.push((source, w));
                }
                Ok(Sources(out))
            }
        }
        let sources = d.deserialize_any(V)?;
        if sources.0.is_empty() {
            return Err(de::Error::custom("a target needs at least one source"));
        }
        for (i, (c, _)) in sources.0.iter().enumerate() {
            if sources.0[..i].iter().any(|(o, _)| o == c) {
                return Err(de::Error::custom(format!(
                    "`{c}` is listed twice (dialects such as `eyeBlink_L` and `eyeBlinkLeft` name the same channel)"
                )));
            }
        }
        Ok(sources)
    }
}

/// A response curve as written: `"linear"`, `"smoothstep"`, `{ points = [[x, y], ...] }`
/// (piecewise linear) or `{ spline = [[x, y], ...] }` (monotone cubic).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum CurveSpec {
    /// `y = x`.
    #[default]
    Linear,
    /// `y = 3x² − 2x³` on `x` clamped to [0, 1].
    Smoothstep,
    /// Straight lines between points (x strictly increasing), flat beyond the ends.
    Points(Vec<[f32; 2]>),
    /// A Fritsch–Carlson monotone cubic through the points, flat beyond the ends.
    Spline(Vec<[f32; 2]>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CurveTable {
    points: Option<Vec<[Finite; 2]>>,
    spline: Option<Vec<[Finite; 2]>>,
}

fn check_points<E: de::Error>(points: Vec<[Finite; 2]>, key: &str) -> Result<Vec<[f32; 2]>, E> {
    let points: Vec<[f32; 2]> = points.into_iter().map(|[x, y]| [x.0, y.0]).collect();
    if points.len() < 2 {
        return Err(E::custom(format!(
            "a `{key}` curve needs at least two [x, y] points"
        )));
    }
    if let Some(w) = points.windows(2).find(|w| w[1][0] <= w[0][0]) {
        return Err(E::custom(format!(
            "curve x values must increase strictly ({} is not above {})",
            w[1][0], w[0][0]
        )));
    }
    Ok(points)
}

impl<'de> Deserialize<'de> for CurveSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CurveSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("\"linear\", \"smoothstep\", { points = [[x, y], ...] } or { spline = [[x, y], ...] }")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<CurveSpec, E> {
                match s {
                    "linear" => Ok(CurveSpec::Linear),
                    "smoothstep" => Ok(CurveSpec::Smoothstep),
                    other => {
                        let hint = nearest(other, ["linear", "smoothstep"])
                            .map(|b| format!("; did you mean `{b}`?"))
                            .unwrap_or_else(|| {
                                "; use \"linear\", \"smoothstep\", { points = [...] } or { spline = [...] }".into()
                            });
                        Err(E::custom(format!("unknown curve `{other}`{hint}")))
                    }
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<CurveSpec, A::Error> {
                let t = CurveTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
                match (t.points, t.spline) {
                    (Some(p), None) => Ok(CurveSpec::Points(check_points(p, "points")?)),
                    (None, Some(p)) => Ok(CurveSpec::Spline(check_points(p, "spline")?)),
                    _ => Err(de::Error::custom(
                        "a curve table has exactly one of `points` or `spline`",
                    )),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// The output range `[low, high]` of a target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clamp(pub f32, pub f32);

impl Default for Clamp {
    fn default() -> Self {
        Clamp(0.0, 1.0)
    }
}

impl<'de> Deserialize<'de> for Clamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let [Finite(lo), Finite(hi)] = <[Finite; 2]>::deserialize(d)?;
        if lo > hi {
            return Err(de::Error::custom(format!(
                "clamp = [{lo}, {hi}]: the low bound is above the high bound"
            )));
        }
        Ok(Clamp(lo, hi))
    }
}

/// The full form of a target entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FullTarget {
    /// The driving channels or visemes and their weights.
    pub sources: Sources,
    /// How the weighted sources combine.
    #[serde(default)]
    pub combine: Combine,
    /// Multiplies the combined value.
    #[serde(default = "one")]
    pub gain: Finite,
    /// Added after the gain.
    #[serde(default = "zero")]
    pub offset: Finite,
    /// The response curve, applied after gain and offset.
    #[serde(default)]
    pub curve: CurveSpec,
    /// The output range, applied last.
    #[serde(default)]
    pub clamp: Clamp,
}

fn one() -> Finite {
    Finite(1.0)
}

fn zero() -> Finite {
    Finite(0.0)
}

/// One `[map]` entry: `Target = "source"` or a table in the full form.
#[derive(Debug, Clone, PartialEq)]
pub enum TargetEntry {
    /// `Target = "jawOpen"` or `Target = "viseme:aa"`: the target follows the channel or
    /// viseme (clamped to [0, 1]).
    Short(Source),
    /// `[map.Target]` or `Target = { sources = ..., ... }`.
    Full(FullTarget),
}

impl<'de> Deserialize<'de> for TargetEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TargetEntry;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a channel or viseme name, or a table with `sources`")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<TargetEntry, E> {
                Source::parse(s).map(TargetEntry::Short).map_err(E::custom)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<TargetEntry, A::Error> {
                FullTarget::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(TargetEntry::Full)
            }
        }
        d.deserialize_any(V)
    }
}

/// What a group does to its members' weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GroupMode {
    /// Nothing (the default): the members stay independent controls.
    #[default]
    Free,
    /// `w_i / max(1, Σ w_j)`: scaled down only when the sum exceeds 1.
    #[serde(alias = "normalize")]
    Normalise,
    /// Only the largest member keeps its weight (the first on ties); the others go to 0.
    Exclusive,
    /// Every member is scaled by `(w_i / w_max)^sharpness`: the largest keeps its weight, the
    /// others fade the further they fall behind it, and nothing jumps when the lead changes.
    SoftExclusive,
}

/// `[groups.NAME]`: a named set of targets.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    /// The member targets (avatar morph target names).
    pub targets: Vec<Spanned<String>>,
    /// What the group does.
    #[serde(default)]
    pub mode: GroupMode,
    /// The exponent of `soft-exclusive` (larger is closer to `exclusive`).
    #[serde(default = "default_sharpness")]
    pub sharpness: Finite,
}

fn default_sharpness() -> Finite {
    Finite(4.0)
}

/// An avatar axis with a sign: `"x"`, `"-x"`, `"y"`, `"-y"`, `"z"`, `"-z"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Axis {
    /// 0 for X, 1 for Y, 2 for Z.
    pub index: usize,
    /// Whether the direction is reversed.
    pub negative: bool,
}

impl Axis {
    /// +X.
    pub const X: Axis = Axis {
        index: 0,
        negative: false,
    };
    /// +Y.
    pub const Y: Axis = Axis {
        index: 1,
        negative: false,
    };
    /// +Z.
    pub const Z: Axis = Axis {
        index: 2,
        negative: false,
    };

    /// The unit vector.
    pub fn vector(self) -> glam::Vec3 {
        let mut v = glam::Vec3::ZERO;
        v[self.index] = if self.negative { -1.0 } else { 1.0 };
        v
    }
}

impl<'de> Deserialize<'de> for Axis {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let (negative, name) = match s.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, s.strip_prefix('+').unwrap_or(&s)),
        };
        let index = match name {
            "x" | "X" => 0,
            "y" | "Y" => 1,
            "z" | "Z" => 2,
            _ => {
                return Err(de::Error::custom(format!(
                    "`{s}` is not an axis; write \"x\", \"y\", \"z\", \"-x\", \"-y\" or \"-z\""
                )))
            }
        };
        Ok(Axis { index, negative })
    }
}

/// `[head]` and `[neck]`: a node that turns with the stream's head rotation.
///
/// The rotation is split into pitch (about X), yaw (about Y) and roll (about Z), in that
/// order of the arrays; each angle is multiplied by its gain, limited, and applied about the
/// avatar axis `axes` names for it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BoneSection {
    /// The node's name (on a VRM avatar, also a humanoid bone name such as `neck`); absent:
    /// the conventional node where the avatar has it (the head: a VRM avatar's humanoid `head`,
    /// else a node named `Head`; the neck: none); `""`: no node.
    pub node: Option<Spanned<String>>,
    /// Multiplier of pitch, yaw and roll.
    pub gain: [Finite; 3],
    /// Largest pitch, yaw and roll the node takes, in degrees (0 to 180).
    pub limit_degrees: [Finite; 3],
    /// The avatar axes that take the stream's pitch, yaw and roll.
    pub axes: [Axis; 3],
}

impl Default for BoneSection {
    fn default() -> Self {
        BoneSection {
            node: None,
            gain: [Finite(1.0); 3],
            limit_degrees: [Finite(180.0); 3],
            axes: [Axis::X, Axis::Y, Axis::Z],
        }
    }
}

/// `[jaw]`: a jaw bone opened by a channel or a viseme.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct JawSection {
    /// The jaw node (on a VRM avatar, also a humanoid bone name such as `jaw`); absent or
    /// `""`: no jaw bone.
    pub node: Option<Spanned<String>>,
    /// The channel (or `viseme:NAME`) that opens it.
    pub channel: Source,
    /// Degrees the jaw turns at weight 1.
    pub degrees: Finite,
    /// The axis it turns about (positive angles follow the right-hand rule).
    pub axis: Axis,
}

impl Default for JawSection {
    fn default() -> Self {
        JawSection {
            node: None,
            channel: Source::Channel(crate::arkit::Channel::JawOpen),
            degrees: Finite(20.0),
            axis: Axis::X,
        }
    }
}

/// `[targets]`: the automatic mapping.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TargetsSection {
    /// Every target named after an ARKit channel (any spelling, behind any `Prefix.`) follows
    /// that channel, unless `[map]` has an entry for it; on a VRM avatar, so does every custom
    /// expression named after a channel.
    pub auto: bool,
    /// On a VRM avatar, the preset expressions follow the built-in fallback from the ARKit
    /// channels ([`super::fallback`]) unless `[map]` has a `vrm:` entry for them or their
    /// channels already drive shapes named after them.
    pub expressions: bool,
}

impl Default for TargetsSection {
    fn default() -> Self {
        TargetsSection {
            auto: true,
            expressions: true,
        }
    }
}

/// `[eyes]`: the nodes that turn the eyeballs, and how far the eyeLook channels turn them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EyesSection {
    /// The avatar's left eye node (the performer's left; on a VRM avatar, also a humanoid bone
    /// name); absent: a VRM avatar's humanoid `leftEye`, else `LeftEye` where the avatar has it;
    /// `""`: none.
    pub left: Option<Spanned<String>>,
    /// The avatar's right eye node; absent: a VRM avatar's humanoid `rightEye`, else `RightEye`
    /// where the avatar has it; `""`: none.
    pub right: Option<Spanned<String>>,
    /// Degrees an eye turns sideways at eyeLookIn or eyeLookOut = 1.
    pub horizontal_degrees: f32,
    /// Degrees an eye turns up at eyeLookUp = 1.
    pub up_degrees: f32,
    /// Degrees an eye turns down at eyeLookDown = 1.
    pub down_degrees: f32,
}

impl Default for EyesSection {
    fn default() -> Self {
        EyesSection {
            left: None,
            right: None,
            horizontal_degrees: 25.0,
            up_degrees: 20.0,
            down_degrees: 25.0,
        }
    }
}

/// A whole mapping file, as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MappingFile {
    /// Format version; 1.
    pub version: Spanned<u32>,
    /// `[targets]`: the automatic mapping.
    #[serde(default)]
    pub targets: TargetsSection,
    /// `[map]`: explicit target entries, short or full form, in file order.
    #[serde(default)]
    pub map: Ordered<TargetEntry>,
    /// `[groups.NAME]`: named sets of targets, in file order.
    #[serde(default)]
    pub groups: Ordered<GroupSpec>,
    /// `[head]`.
    #[serde(default)]
    pub head: BoneSection,
    /// `[neck]`.
    #[serde(default)]
    pub neck: BoneSection,
    /// `[eyes]`.
    #[serde(default)]
    pub eyes: EyesSection,
    /// `[jaw]`.
    #[serde(default)]
    pub jaw: JawSection,
    /// `[pose]`: this avatar's rest pose, instead of `[pose]` in `facewire.toml`.
    #[serde(default)]
    pub pose: Option<super::PoseConfig>,
    /// `[wrinkles.NAME]`: wrinkle normal maps and the targets that blend them in, in file
    /// order.
    #[serde(default)]
    pub wrinkles: Ordered<super::wrinkles::WrinkleSpec>,
    /// `[sliders.NAME]`: face-shape sliders, in file order (see [`super::sliders`]).
    #[serde(default)]
    pub sliders: Ordered<super::sliders::SliderSpec>,
    /// Where it came from, for error messages.
    #[serde(skip)]
    pub path: String,
    /// Its text, for locating errors found after parsing.
    #[serde(skip)]
    pub text: String,
}

impl Default for MappingFile {
    fn default() -> Self {
        MappingFile {
            version: Spanned::new(0..0, VERSION),
            targets: TargetsSection::default(),
            map: Ordered::default(),
            groups: Ordered::default(),
            head: BoneSection::default(),
            neck: BoneSection::default(),
            eyes: EyesSection::default(),
            jaw: JawSection::default(),
            pose: None,
            wrinkles: Ordered::default(),
            sliders: Ordered::default(),
            path: "(automatic mapping)".into(),
            text: String::new(),
        }
    }
}

impl MappingFile {
    /// Parses mapping TOML; `path` labels errors. The error is the first problem in file
    /// order; [`MappingFile::parse_all`] finds them all.
    pub fn parse(text: &str, path: &str) -> Result<MappingFile, MappingError> {
        match MappingFile::parse_all(text, path) {
            (Some(file), errors) if errors.is_empty() => Ok(file),
            (_, mut errors) => Err(errors.swap_remove(0)),
        }
    }

    /// Parses mapping TOML, reading on past every error: the file without the entries that
    /// have one (none when what is left does not read either, such as a file that is not TOML)
    /// and every error, in file order. A file without errors comes back whole with none; a
    /// file with errors always comes back with at least one.
    pub fn parse_all(text: &str, path: &str) -> (Option<MappingFile>, Vec<MappingError>) {
        let (file, errors) = super::recover::deserialize(text, path);
        let mut errors: Vec<MappingError> = errors.into_iter().map(MappingError::Invalid).collect();
        let file = file.map(|mut file| {
            file.path = path.into();
            file.text = text.into();
            errors.extend(file.validate());
            file
        });
        errors.sort_by_key(MappingError::position);
        (file, errors)
    }

    /// The checks a deserialised file still needs: its version and ranges serde cannot say.
    fn validate(&self) -> Vec<MappingError> {
        let text = self.text.as_str();
        let mut errors = Vec::new();
        let version = *self.version.get_ref();
        if !(1..=VERSION).contains(&version) {
            errors.push(self.error_at(
                self.version.span(),
                format!("mapping version {version} is not supported"),
                Some(format!("this facewire reads `version = {VERSION}`")),
            ));
        }
        if let Some(pose) = &self.pose {
            if let Err(e) = pose.validate(text, &self.path) {
                errors.push(MappingError::Invalid(e));
            }
        }
        let eyes = &self.eyes;
        for (value, what) in [
            (eyes.horizontal_degrees, "horizontal_degrees"),
            (eyes.up_degrees, "up_degrees"),
            (eyes.down_degrees, "down_degrees"),
        ] {
            if !(0.0..=90.0).contains(&value) {
                let at = key_offset(text, what).unwrap_or(0);
                errors.push(self.error_at(
                    at..at,
                    format!("eyes.{what} = {value} is out of range"),
                    Some("use degrees between 0 and 90; 20 to 30 suits most avatars".into()),
                ));
            }
        }
        for (bone, section) in [("head", &self.head), ("neck", &self.neck)] {
            if section
                .limit_degrees
                .iter()
                .any(|l| !(0.0..=180.0).contains(&l.0))
            {
                let at = section_key_offset(text, bone, "limit_degrees");
                errors.push(self.error_at(
                    at..at,
                    format!("{bone}.limit_degrees must lie between 0 and 180"),
                    Some("for example limit_degrees = [40, 70, 30] (pitch, yaw, roll)".into()),
                ));
            }
            let mut seen = [false; 3];
            for a in section.axes {
                seen[a.index] = true;
            }
            if seen.contains(&false) {
                let at = section_key_offset(text, bone, "axes");
                errors.push(self.error_at(
                    at..at,
                    format!("{bone}.axes must name each of x, y and z once"),
                    Some("for example axes = [\"-x\", \"y\", \"z\"] (pitch, yaw, roll)".into()),
                ));
            }
        }
        for (name, group) in &self.groups.0 {
            if group.sharpness.0 <= 0.0 {
                let at = name.span().start;
                errors.push(self.error_at(
                    at..at,
                    format!("group `{}`: sharpness must be above 0", name.get_ref()),
                    Some("4 is a good start; larger is closer to `exclusive`".into()),
                ));
            }
        }
        errors.extend(super::sliders::validate(self));
        errors
    }

    /// Reads and parses a mapping file.
    pub fn load(path: &std::path::Path) -> Result<MappingFile, MappingError> {
        let text = crate::fsutil::read_text(path).map_err(|cause| MappingError::Read {
            path: path.display().to_string(),
            cause,
        })?;
        MappingFile::parse(&text, &path.display().to_string())
    }

    /// An error located at byte range `span` of this file.
    pub fn error_at(
        &self,
        span: std::ops::Range<usize>,
        message: String,
        hint: Option<String>,
    ) -> MappingError {
        MappingError::Invalid(Located::at(
            &self.path, &self.text, span.start, message, hint,
        ))
    }
}

/// Byte offset of `key = ...` inside the `[section]` table (or of the section header, or 0).
fn section_key_offset(text: &str, section: &str, key: &str) -> usize {
    let header = format!("[{section}]");
    let Some(start) = text
        .match_indices(&header)
        .map(|(i, _)| i)
        .find(|&i| i == 0 || text[..i].ends_with('\n'))
    else {
        return key_offset(text, key).unwrap_or(0);
    };
    let body = &text[start..];
    let end = body[1..].find("\n[").map_or(body.len(), |i| i + 2);
    key_offset(&body[..end], key).map_or(start, |o| start + o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arkit::{Channel, Viseme};

    #[test]
    fn map_keeps_order_and_key_positions() {
        let text = "version = 1\n[map]\nB = \"jawOpen\"\nA = { sources = { eyeBlink_L = 0.5, EyeBlinkRight = 0.5 }, curve = \"smoothstep\" }\n";
        let f = MappingFile::parse(text, "m.toml").unwrap();
        assert_eq!(f.map.0.len(), 2);
        assert_eq!(f.map.0[0].0.get_ref(), "B");
        assert_eq!(f.map.0[0].0.span().start, text.find("B =").unwrap());
        assert_eq!(f.map.0[0].1, TargetEntry::Short(Channel::JawOpen.into()));
        let TargetEntry::Full(full) = &f.map.0[1].1 else {
            panic!("full form expected")
        };
        assert_eq!(
            full.sources.0,
            [
                (Channel::EyeBlinkLeft.into(), 0.5),
                (Channel::EyeBlinkRight.into(), 0.5)
            ]
        );
        assert_eq!(full.curve, CurveSpec::Smoothstep);
        assert_eq!(full.clamp, Clamp(0.0, 1.0));
    }

    #[test]
    fn parse_all_reads_past_each_bad_entry_and_keeps_the_rest() {
        let text = "version = 1\n\
                    [map]\n\
                    A = { sources = \"jawOpen\", curve = \"stepp\" }\n\
                    B.sources = \"jawOpen\"\n\
                    B.gain = \"high\"\n\
                    C = [\n  \"jawOpen\",\n  \"mouthFunel\",\n]\n\
                    D = \"mouthFunnel\"\n\
                    [groups.g]\n\
                    targets = [\"D\"]\n\
                    mode = \"exclusve\"\n\
                    [groups.h]\n\
                    targets = [\"D\"]\n";
        let (file, errors) = MappingFile::parse_all(text, "m.toml");
        let at: Vec<(usize, usize)> = errors.iter().map(MappingError::position).collect();
        assert_eq!(at, [(3, 36), (5, 10), (6, 5), (13, 8)], "{errors:#?}");
        let file = file.expect("the rest reads");
        assert_eq!(file.map.0.len(), 1);
        assert_eq!(file.map.0[0].0.get_ref(), "D");
        assert_eq!(file.groups.0.len(), 1);
        assert_eq!(file.groups.0[0].0.get_ref(), "h");
        assert_eq!(file.map.0[0].0.span().start, text.find("D =").unwrap());
        let first = MappingFile::parse(text, "m.toml").unwrap_err();
        assert_eq!(first.position(), (3, 36));
    }

    #[test]
    fn non_finite_numbers_are_rejected() {
        let err = MappingFile::parse(
            "version = 1\n[map.A]\nsources = \"jawOpen\"\ngain = inf\n",
            "m.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("m.toml:4:8:"), "{err}");
    }

    #[test]
    fn visemes_are_sources_wherever_channels_are() {
        let text = "version = 1\n[map]\n\"vrm:aa\" = \"viseme:aa\"\nA = { sources = [\"viseme:ih\", \"jawOpen\"] }\nB = { sources = { \"viseme:ou\" = 0.5, mouthPucker = 0.5 }, combine = \"max\" }\n[jaw]\nchannel = \"viseme:oh\"\n";
        let f = MappingFile::parse(text, "m.toml").unwrap();
        assert_eq!(f.map.0[0].1, TargetEntry::Short(Viseme::Aa.into()));
        let sources = |i: usize| match &f.map.0[i].1 {
            TargetEntry::Full(full) => full.sources.0.clone(),
            TargetEntry::Short(_) => panic!("full form expected"),
        };
        assert_eq!(
            sources(1),
            [(Viseme::Ih.into(), 1.0), (Channel::JawOpen.into(), 1.0)]
        );
        assert_eq!(
            sources(2),
            [(Viseme::Ou.into(), 0.5), (Channel::MouthPucker.into(), 0.5)]
        );
        assert_eq!(f.jaw.channel, Source::Viseme(Viseme::Oh));
    }

    #[test]
    fn unknown_visemes_are_located_with_the_nearest_name() {
        let err = |text: &str| MappingFile::parse(text, "m.toml").unwrap_err().to_string();
        // Short form, table key and the jaw's channel point at the name, an array at itself.
        let e = err("version = 1\n[map]\nA = \"viseme:a\"\n");
        assert!(e.starts_with("m.toml:3:5:"), "{e}");
        assert!(
            e.contains("unknown viseme `a`; did you mean `viseme:aa`?"),
            "{e}"
        );
        let e = err("version = 1\n[map.A]\nsources = [\"jawOpen\", \"viseme:e\"]\n");
        assert!(e.starts_with("m.toml:3:11:"), "{e}");
        assert!(e.contains("did you mean `viseme:ee`?"), "{e}");
        let e = err("version = 1\n[map.A]\nsources = { \"viseme:ohh\" = 1.0 }\n");
        assert!(e.starts_with("m.toml:3:13:"), "{e}");
        assert!(e.contains("did you mean `viseme:oh`?"), "{e}");
        let e = err("version = 1\n[jaw]\nchannel = \"viseme:xyz\"\n");
        assert!(e.starts_with("m.toml:3:11:"), "{e}");
        assert!(e.contains("visemes are `viseme:sil`, `viseme:aa`"), "{e}");
        let e = err("version = 1\n[map.A]\nsources = [\"viseme:aa\", \"Viseme:AA\"]\n");
        assert!(e.contains("`viseme:aa` is listed twice"), "{e}");
    }
}

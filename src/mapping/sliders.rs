//! Face-shape sliders (`[sliders.NAME]` in a mapping file): static controls of a face editor,
//! each driving morph targets through curves and moving nodes, set by a look preset rather than
//! by the stream.
//!
//! A slider's value `x` lies in `[min, max]` (default -1..1, at rest 0). The shorthand
//! `up = "T"` gives target `T` the weight `max(x, 0) / max`, `down = "T"` the weight
//! `max(-x, 0) / -min`; the full form `targets = { T = curve }` passes `x` through a curve of
//! the mapping language. Weights are clamped to [0, 1] and override what the mapping wrote (a
//! look target is not an expression); several influences on one target add up first. `nodes`
//! move nodes by a translation in their parent's space (the space of their rest translation)
//! that reaches its `up` vector at `x = max` and its `down` vector (by default the `up` vector
//! mirrored, scaled by `|min| / max`) at `x = min`, linear in between through zero.
//!
//! Everything that can be checked without the avatar is checked while the file's positions are
//! at hand ([`validate`]); target and node names are resolved by [`compile`], each mistake
//! located with the nearest name. [`CompiledSliders::apply`] allocates nothing.

use std::fmt;

use glam::Vec3;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use toml::Spanned;

use super::compile::{expression_name, find_targets, target_names};
use super::file::{CurveSpec, Finite, Ordered};
use super::{Curve, MappingError, MappingFile};
use crate::avatar::{Avatar, Pose};
use crate::diagnostic::nearest;

/// The panel group of a slider whose table names none.
pub const DEFAULT_GROUP: &str = "Shape";

/// `[sliders.NAME]` as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SliderSpec {
    /// The label the panel shows; absent: made from the name (`eye_size` → `Eye size`).
    pub label: Option<String>,
    /// The panel group; absent: [`DEFAULT_GROUP`].
    pub group: Option<String>,
    /// The lowest value (default -1).
    #[serde(default = "minus_one")]
    pub min: Spanned<Finite>,
    /// The highest value (default 1).
    #[serde(default = "plus_one")]
    pub max: Spanned<Finite>,
    /// The value at rest (default 0).
    #[serde(default = "zero")]
    pub default: Spanned<Finite>,
    /// Shorthand: this target's weight is `max(x, 0) / max`.
    pub up: Option<Spanned<String>>,
    /// Shorthand: this target's weight is `max(-x, 0) / -min` (only when `min < 0`).
    pub down: Option<Spanned<String>>,
    /// Full form: each target's weight is `curve(x)` clamped to [0, 1], in file order.
    #[serde(default)]
    pub targets: Ordered<CurveSpec>,
    /// Node translations, in file order.
    #[serde(default)]
    pub nodes: Ordered<NodeShift>,
}

fn minus_one() -> Spanned<Finite> {
    Spanned::new(0..0, Finite(-1.0))
}

fn plus_one() -> Spanned<Finite> {
    Spanned::new(0..0, Finite(1.0))
}

fn zero() -> Spanned<Finite> {
    Spanned::new(0..0, Finite(0.0))
}

/// A node's translation as written: `[x, y, z]` (metres, at `x = max`) or
/// `{ up = [x, y, z], down = [x, y, z] }` (at `max` and at `min`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeShift {
    /// The translation at `x = max`.
    pub up: Vec3,
    /// The translation at `x = min`; absent: `up` mirrored, scaled by `|min| / max`.
    pub down: Option<Vec3>,
}

fn vector(v: [Finite; 3]) -> Vec3 {
    Vec3::new(v[0].0, v[1].0, v[2].0)
}

impl<'de> Deserialize<'de> for NodeShift {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Table {
            up: [Finite; 3],
            down: Option<[Finite; 3]>,
        }
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NodeShift;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a translation [x, y, z] in metres, or { up = [x, y, z], down = [x, y, z] }",
                )
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<NodeShift, A::Error> {
                let up = <[Finite; 3]>::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(NodeShift {
                    up: vector(up),
                    down: None,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<NodeShift, A::Error> {
                let t = Table::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(NodeShift {
                    up: vector(t.up),
                    down: t.down.map(vector),
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// The label made from a slider's name: separators become spaces, the first letter a capital
/// (`eye_size` → `Eye size`).
pub fn default_label(name: &str) -> String {
    let spaced: String = name
        .chars()
        .map(|c| if matches!(c, '_' | '-') { ' ' } else { c })
        .collect();
    let mut chars = spaced.trim().chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The byte range to point at for a value: where it is written, else the slider's name.
fn at<T>(value: &Spanned<T>, name: &Spanned<String>) -> std::ops::Range<usize> {
    if value.span().is_empty() {
        name.span()
    } else {
        value.span()
    }
}

/// The checks of `[sliders]` that need no avatar: ranges, and shorthands and node moves that
/// fit them (curves and finite numbers are checked as they are read).
pub(super) fn validate(file: &MappingFile) -> Vec<MappingError> {
    let mut errors = Vec::new();
    for (name, spec) in &file.sliders.0 {
        let n = name.get_ref();
        let (min, max, default) = (
            spec.min.get_ref().0,
            spec.max.get_ref().0,
            spec.default.get_ref().0,
        );
        if min >= max {
            errors.push(file.error_at(
                at(&spec.min, name),
                format!("slider `{n}`: min = {min} is not below max = {max}"),
                Some("for example min = -1.0, max = 1.0".into()),
            ));
        } else if !(min..=max).contains(&default) {
            errors.push(file.error_at(
                at(&spec.default, name),
                format!("slider `{n}`: default = {default} lies outside {min}..{max}"),
                Some("the default is the value at rest, usually 0".into()),
            ));
        }
        if let Some(up) = spec.up.as_ref().filter(|_| max <= 0.0) {
            errors.push(file.error_at(
                up.span(),
                format!("slider `{n}`: `up` needs max above 0 (max = {max})"),
                Some("use `targets = { NAME = curve }` for a slider that stays below 0".into()),
            ));
        }
        if let Some(down) = spec.down.as_ref().filter(|_| min >= 0.0) {
            errors.push(file.error_at(
                down.span(),
                format!("slider `{n}`: `down` needs min below 0 (min = {min})"),
                Some("set min = -1.0, or drop `down`".into()),
            ));
        }
        for (node, shift) in &spec.nodes.0 {
            if max <= 0.0 {
                errors.push(file.error_at(
                    node.span(),
                    format!(
                        "slider `{n}`: node `{}` moves by its vector at max, but max = {max} is \
                         not above 0",
                        node.get_ref()
                    ),
                    None,
                ));
            } else if shift.down.is_some() && min >= 0.0 {
                errors.push(file.error_at(
                    node.span(),
                    format!(
                        "slider `{n}`: node `{}` has a `down` vector, but min = {min} is not \
                         below 0",
                        node.get_ref()
                    ),
                    Some("drop `down`, or set min below 0".into()),
                ));
            }
        }
    }
    errors
}

/// One target a slider drives.
#[derive(Debug, Clone, PartialEq)]
pub struct Influence {
    /// The mesh.
    pub mesh: usize,
    /// The morph target of the mesh.
    pub target: usize,
    /// The slider value → weight curve (its output is clamped to [0, 1]).
    pub curve: Curve,
}

/// One node a slider moves: a translation linear in the slider's value, zero at 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeOffset {
    /// The node.
    pub node: usize,
    /// The translation per unit of value above 0 (the `up` vector over `max`), metres.
    pub per_up: Vec3,
    /// The translation per unit of value below 0 (the `down` vector over `min`), metres.
    pub per_down: Vec3,
}

impl NodeOffset {
    /// The translation at value `x`.
    pub fn at(&self, x: f32) -> Vec3 {
        if x >= 0.0 {
            self.per_up * x
        } else {
            self.per_down * x
        }
    }
}

/// A compiled slider.
#[derive(Debug, Clone, PartialEq)]
pub struct Slider {
    /// Its name (the key of its table, and of a look preset's `[sliders]` entry).
    pub name: String,
    /// The label the panel shows.
    pub label: String,
    /// The panel group.
    pub group: String,
    /// The lowest value.
    pub min: f32,
    /// The highest value.
    pub max: f32,
    /// The value at rest.
    pub default: f32,
    /// The targets it drives, each slot of a name found on several meshes once.
    pub influences: Vec<Influence>,
    /// The nodes it moves.
    pub nodes: Vec<NodeOffset>,
}

impl Slider {
    /// `x` made usable: clamped to the range; not finite: the default.
    pub fn clamp(&self, x: f32) -> f32 {
        if x.is_finite() {
            x.clamp(self.min, self.max)
        } else {
            self.default
        }
    }

    /// Its name and range, for checking look presets.
    pub fn range(&self) -> SliderRange {
        SliderRange {
            name: self.name.clone(),
            min: self.min,
            max: self.max,
            default: self.default,
        }
    }
}

/// A slider's name and range: what a look preset is checked against.
#[derive(Debug, Clone, PartialEq)]
pub struct SliderRange {
    /// The slider's name.
    pub name: String,
    /// The lowest value.
    pub min: f32,
    /// The highest value.
    pub max: f32,
    /// The value at rest.
    pub default: f32,
}

/// Every slider of a mapping, resolved against one avatar, in file order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CompiledSliders {
    /// The sliders.
    pub sliders: Vec<Slider>,
}

/// One value per slider of a [`CompiledSliders`], in its order: what [`CompiledSliders::apply`]
/// takes. Missing entries count as the slider's default.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SliderValues {
    values: Vec<f32>,
}

impl SliderValues {
    /// Every slider at its default.
    pub fn defaults(sliders: &CompiledSliders) -> SliderValues {
        SliderValues {
            values: sliders.sliders.iter().map(|s| s.default).collect(),
        }
    }

    /// Slider `index`'s value, if there is one.
    pub fn get(&self, index: usize) -> Option<f32> {
        self.values.get(index).copied()
    }

    /// Sets slider `index`'s value (clamped to its range when applied); false when there is no
    /// such slider.
    pub fn set(&mut self, index: usize, value: f32) -> bool {
        match self.values.get_mut(index) {
            Some(v) => {
                *v = value;
                true
            }
            None => false,
        }
    }

    /// The values, in slider order.
    pub fn as_slice(&self) -> &[f32] {
        &self.values
    }
}

impl CompiledSliders {
    /// The number of sliders.
    pub fn len(&self) -> usize {
        self.sliders.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.sliders.is_empty()
    }

    /// The sliders, in file order.
    pub fn iter(&self) -> std::slice::Iter<'_, Slider> {
        self.sliders.iter()
    }

    /// The index of the slider named `name` (exactly), if any.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.sliders.iter().position(|s| s.name == name)
    }

    /// Every slider's name and range, for checking look presets.
    pub fn ranges(&self) -> Vec<SliderRange> {
        self.sliders.iter().map(Slider::range).collect()
    }

    /// Whether a slider drives morph target `target` of mesh `mesh`.
    pub fn drives(&self, mesh: usize, target: usize) -> bool {
        self.sliders
            .iter()
            .flat_map(|s| &s.influences)
            .any(|i| i.mesh == mesh && i.target == target)
    }

    /// Sets the weight of every target a slider drives (overriding what is there: the sum of
    /// its influences' curves, each and the sum clamped to [0, 1]) and adds every slider's node
    /// translations to `pose.translations`. Values are clamped to their slider's range (a
    /// non-finite or missing value is the default). Allocates nothing.
    pub fn apply(&self, values: &SliderValues, pose: &mut Pose) {
        fn slot<'a>(weights: &'a mut [Vec<f32>], i: &Influence) -> Option<&'a mut f32> {
            weights.get_mut(i.mesh)?.get_mut(i.target)
        }
        for i in self.sliders.iter().flat_map(|s| &s.influences) {
            if let Some(w) = slot(&mut pose.weights, i) {
                *w = 0.0;
            }
        }
        for (k, s) in self.sliders.iter().enumerate() {
            let x = s.clamp(values.get(k).unwrap_or(s.default));
            for i in &s.influences {
                if let Some(w) = slot(&mut pose.weights, i) {
                    *w += i.curve.eval(x).clamp(0.0, 1.0);
                }
            }
            for n in &s.nodes {
                if let Some(t) = pose.translations.get_mut(n.node) {
                    let moved = *t + n.at(x);
                    if moved.is_finite() {
                        *t = moved;
                    }
                }
            }
        }
        for i in self.sliders.iter().flat_map(|s| &s.influences) {
            if let Some(w) = slot(&mut pose.weights, i) {
                *w = w.clamp(0.0, 1.0);
            }
        }
    }
}

/// Resolves `[sliders]` against `avatar`: every target and node must exist. Each mistake is
/// pushed to `errors` with its byte offset, the nearest name suggested.
pub(super) fn compile(
    file: &MappingFile,
    avatar: &Avatar,
    errors: &mut Vec<(usize, MappingError)>,
) -> CompiledSliders {
    let mut sliders = Vec::new();
    for (name, spec) in &file.sliders.0 {
        let n = name.get_ref();
        let (min, max) = (spec.min.get_ref().0, spec.max.get_ref().0);
        let mut influences = Vec::new();
        let mut target = |written: &Spanned<String>, curve: Curve| {
            let t = written.get_ref();
            let slots = find_targets(avatar, t);
            if slots.is_empty() {
                let message = if expression_name(t).is_some() {
                    format!("slider `{n}`: `{t}` is an expression; sliders drive morph targets")
                } else {
                    match nearest(t, target_names(avatar)) {
                        Some(best) => {
                            format!("slider `{n}`: unknown target `{t}`; did you mean `{best}`?")
                        }
                        None => format!(
                            "slider `{n}`: unknown target `{t}`: the model has no morph target \
                             of that name"
                        ),
                    }
                };
                errors.push((
                    written.span().start,
                    file.error_at(
                        written.span(),
                        message,
                        Some(
                            "target names are the model's morph target names (`facewire sheet` \
                             lists them)"
                                .into(),
                        ),
                    ),
                ));
            }
            influences.extend(slots.into_iter().map(|(mesh, target)| Influence {
                mesh,
                target,
                curve: curve.clone(),
            }));
        };
        if let Some(up) = &spec.up {
            target(up, Curve::Points(vec![[0.0, 0.0], [max, 1.0]]));
        }
        if let Some(down) = &spec.down {
            target(down, Curve::Points(vec![[min, 1.0], [0.0, 0.0]]));
        }
        for (t, curve) in &spec.targets.0 {
            target(t, Curve::from_spec(curve));
        }
        let mut nodes = Vec::new();
        for (node, shift) in &spec.nodes.0 {
            let Some(index) = find_node(avatar, node.get_ref()) else {
                errors.push((node.span().start, unknown_node(file, avatar, n, node)));
                continue;
            };
            let per_up = if max > 0.0 {
                shift.up / max
            } else {
                Vec3::ZERO
            };
            let per_down = match shift.down {
                Some(down) if min < 0.0 => down / min,
                _ => per_up,
            };
            nodes.push(NodeOffset {
                node: index,
                per_up,
                per_down,
            });
        }
        sliders.push(Slider {
            name: n.clone(),
            label: spec.label.clone().unwrap_or_else(|| default_label(n)),
            group: spec.group.clone().unwrap_or_else(|| DEFAULT_GROUP.into()),
            min,
            max,
            default: spec.default.get_ref().0,
            influences,
            nodes,
        });
    }
    CompiledSliders { sliders }
}

/// A node by name: on a VRM avatar a humanoid bone name first, then node names (exact, then
/// ignoring ASCII case).
fn find_node(avatar: &Avatar, name: &str) -> Option<usize> {
    avatar
        .vrm
        .as_ref()
        .and_then(|v| v.humanoid_bone(name))
        .filter(|&n| n < avatar.nodes.len())
        .or_else(|| {
            avatar
                .nodes
                .iter()
                .position(|node| node.name.as_deref() == Some(name))
        })
        .or_else(|| avatar.find_node(name))
}

fn unknown_node(
    file: &MappingFile,
    avatar: &Avatar,
    slider: &str,
    node: &Spanned<String>,
) -> MappingError {
    let name = node.get_ref();
    let message = match nearest(name, avatar.node_and_bone_names()) {
        Some(best) => format!("slider `{slider}`: unknown node `{name}`; did you mean `{best}`?"),
        None => format!("slider `{slider}`: the model has no node named `{name}`"),
    };
    file.error_at(node.span(), message, None)
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::avatar;
    use super::super::CompiledMapping;
    use super::*;
    use crate::mapping::check::check_text;

    const HEADER: &str = "version = 1\n[targets]\nauto = false\n";

    /// The fixture avatar with look targets of its own.
    fn look_avatar() -> Avatar {
        let mut a = avatar();
        let mesh = &mut a.meshes[0];
        for name in [
            "look_eye_size_up",
            "look_eye_size_down",
            "EyesBig",
            "Squint",
        ] {
            mesh.target_names.push(name.into());
            mesh.default_weights.push(0.0);
        }
        a
    }

    fn compile(body: &str) -> (CompiledMapping, Avatar) {
        let a = look_avatar();
        let text = format!("{HEADER}{body}");
        let file = MappingFile::parse(&text, "m.toml").unwrap();
        (CompiledMapping::compile(&file, &a).unwrap(), a)
    }

    fn weight(pose: &Pose, name: &str, a: &Avatar) -> f32 {
        let t = a.meshes[0]
            .target_names
            .iter()
            .position(|n| n == name)
            .unwrap();
        pose.weights[0][t]
    }

    fn values(m: &CompiledMapping, x: &[f32]) -> SliderValues {
        let mut v = SliderValues::defaults(m.sliders());
        for (i, &x) in x.iter().enumerate() {
            assert!(v.set(i, x));
        }
        v
    }

    const EYE_SIZE: &str = "[sliders.eye_size]\ngroup = \"Eyes\"\nup = \"look_eye_size_up\"\n\
                            down = \"look_eye_size_down\"\n";

    #[test]
    fn sliders_keep_file_order_labels_groups_and_defaults() {
        let (m, _) = compile(&format!(
            "{EYE_SIZE}[sliders.chin]\nlabel = \"Chin length\"\nmin = 0.0\nmax = 2.0\n\
             default = 0.5\nup = \"Squint\"\n"
        ));
        let s = &m.sliders().sliders;
        assert_eq!(s.len(), 2);
        assert_eq!(
            (s[0].name.as_str(), s[0].label.as_str(), s[0].group.as_str()),
            ("eye_size", "Eye size", "Eyes")
        );
        assert_eq!((s[0].min, s[0].max, s[0].default), (-1.0, 1.0, 0.0));
        assert_eq!(
            (s[1].label.as_str(), s[1].group.as_str()),
            ("Chin length", "Shape")
        );
        assert_eq!((s[1].min, s[1].max, s[1].default), (0.0, 2.0, 0.5));
        assert_eq!(m.sliders().index_of("chin"), Some(1));
        assert_eq!(
            m.sliders().ranges()[1],
            SliderRange {
                name: "chin".into(),
                min: 0.0,
                max: 2.0,
                default: 0.5
            }
        );
        assert_eq!(default_label("nose-width_"), "Nose width");
    }

    #[test]
    fn up_and_down_shorthands_split_the_range_at_zero() {
        let (m, a) = compile(EYE_SIZE);
        for (x, up, down) in [
            (0.5, 0.5, 0.0),
            (-0.5, 0.0, 0.5),
            (1.0, 1.0, 0.0),
            (-3.0, 0.0, 1.0),
        ] {
            let mut pose = a.rest_pose();
            m.sliders().apply(&values(&m, &[x]), &mut pose);
            assert_eq!(weight(&pose, "look_eye_size_up", &a), up, "x = {x}");
            assert_eq!(weight(&pose, "look_eye_size_down", &a), down, "x = {x}");
        }
    }

    #[test]
    fn full_curves_are_clamped_and_influences_on_one_target_add_up() {
        let (m, a) = compile(
            "[sliders.eye_size]\nup = \"EyesBig\"\n\
             targets = { EyesBig = \"linear\", Squint = { points = [[-1.0, 1.0], [0.0, 0.0]] } }\n\
             [sliders.squint]\nmin = 0.0\ntargets = { Squint = \"smoothstep\" }\n",
        );
        let mut pose = a.rest_pose();
        m.sliders().apply(&values(&m, &[0.4, 0.5]), &mut pose);
        // up (0.4) + linear (0.4); Squint: the points give 0 above 0, smoothstep(0.5) = 0.5.
        assert!((weight(&pose, "EyesBig", &a) - 0.8).abs() < 1e-6);
        assert_eq!(weight(&pose, "Squint", &a), 0.5);
        m.sliders().apply(&values(&m, &[0.9, 1.0]), &mut pose);
        assert_eq!(weight(&pose, "EyesBig", &a), 1.0, "the sum is clamped");
        m.sliders().apply(&values(&m, &[-0.25, 0.0]), &mut pose);
        assert_eq!(
            weight(&pose, "EyesBig", &a),
            0.0,
            "linear below 0 is clamped"
        );
        assert_eq!(weight(&pose, "Squint", &a), 0.25);
        // Other targets are left alone; a missing value counts as the default.
        assert_eq!(weight(&pose, "Smile", &a), 0.3);
        m.sliders().apply(&SliderValues::default(), &mut pose);
        assert_eq!(weight(&pose, "Squint", &a), 0.0);
    }

    #[test]
    fn nodes_move_linearly_to_their_up_and_down_vectors() {
        let (m, a) = compile(
            "[sliders.eye_spacing]\nmin = -0.5\n\
             nodes = { LeftEye = [0.003, 0.0, 0.0], RightEye = { up = [-0.003, 0.0, 0.0], down = [0.0, 0.001, 0.0] } }\n",
        );
        let at = |x: f32| {
            let mut pose = a.rest_pose();
            m.sliders().apply(&values(&m, &[x]), &mut pose);
            (
                pose.translations[1],
                pose.translations[2],
                pose.translations[0],
            )
        };
        let (left, right, head) = at(1.0);
        assert!(left.abs_diff_eq(Vec3::new(0.003, 0.0, 0.0), 1e-9));
        assert!(right.abs_diff_eq(Vec3::new(-0.003, 0.0, 0.0), 1e-9));
        assert_eq!(head, Vec3::ZERO);
        let (left, right, _) = at(0.5);
        assert!(left.abs_diff_eq(Vec3::new(0.0015, 0.0, 0.0), 1e-9));
        assert!(right.abs_diff_eq(Vec3::new(-0.0015, 0.0, 0.0), 1e-9));
        // At min: the mirrored up vector scaled by |min| / max, or the down vector.
        let (left, right, _) = at(-0.5);
        assert!(left.abs_diff_eq(Vec3::new(-0.0015, 0.0, 0.0), 1e-9));
        assert!(right.abs_diff_eq(Vec3::new(0.0, 0.001, 0.0), 1e-9));
        let (left, right, _) = at(0.0);
        assert_eq!((left, right), (Vec3::ZERO, Vec3::ZERO));
    }

    #[test]
    fn sliders_at_their_defaults_leave_the_rest_pose_exactly() {
        let (m, a) = compile(&format!(
            "{EYE_SIZE}[sliders.spacing]\nnodes = {{ LeftEye = [0.003, 0.0, 0.0] }}\n"
        ));
        let rest = a.rest_pose();
        let mut pose = rest.clone();
        m.sliders()
            .apply(&SliderValues::defaults(m.sliders()), &mut pose);
        assert_eq!(pose, rest);
        m.sliders()
            .apply(&values(&m, &[f32::NAN, f32::INFINITY]), &mut pose);
        assert_eq!(pose.weights, rest.weights);
        assert!(pose.translations.iter().all(|t| t.is_finite()));
    }

    #[test]
    fn slider_mistakes_are_listed_at_once_with_positions() {
        let a = look_avatar();
        let text = format!(
            "{HEADER}[sliders.a]\nmin = 1.0\nmax = 0.5\n\
             [sliders.b]\ndefault = 2.0\nup = \"look_eye_size_up\"\n\
             [sliders.c]\nmin = 0.0\ndown = \"Squint\"\n\
             [sliders.d]\nup = \"look_eye_size_upp\"\nnodes = {{ LeftEy = [0.0, 0.0, 0.001] }}\n\
             [sliders.e]\nmaximum = 2.0\n\
             [sliders.f]\ntargets = {{ Squint = \"smoothstp\" }}\n\
             [sliders.g]\nnodes = {{ LeftEye = [1.0, 2.0] }}\n\
             [sliders.h]\ntargets = {{ \"vrm:happy\" = \"linear\" }}\n"
        );
        let found: Vec<String> = check_text(&text, "m.toml", &a)
            .findings
            .iter()
            .map(ToString::to_string)
            .collect();
        let expect = [
            ("m.toml:5:7:", "min = 1 is not below max = 0.5"),
            ("m.toml:8:11:", "default = 2 lies outside -1..1"),
            ("m.toml:12:8:", "`down` needs min below 0"),
            (
                "m.toml:14:6:",
                "unknown target `look_eye_size_upp`; did you mean `look_eye_size_up`?",
            ),
            (
                "m.toml:15:11:",
                "unknown node `LeftEy`; did you mean `LeftEye`?",
            ),
            ("m.toml:17:1:", "unknown field `maximum`"),
            ("m.toml:19:22:", "did you mean `smoothstep`?"),
            ("m.toml:21:21:", "invalid length 2"),
            ("m.toml:23:13:", "`vrm:happy` is an expression"),
        ];
        assert_eq!(found.len(), expect.len(), "{found:#?}");
        for (f, (at, what)) in found.iter().zip(expect) {
            assert!(
                f.starts_with(&format!("error: {at}")),
                "{f} (expected {at})"
            );
            assert!(f.contains(what), "{f} (expected {what})");
        }
    }

    #[test]
    fn slider_targets_count_as_driven_in_the_check() {
        let a = look_avatar();
        let found = check_text(&format!("{HEADER}{EYE_SIZE}"), "m.toml", &a).to_string();
        assert!(!found.contains("look_eye_size_up"), "{found}");
        assert!(found.contains("`EyesBig`"), "{found}");
    }
}

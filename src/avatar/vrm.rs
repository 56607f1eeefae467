//! VRM avatars: the `VRM` (0.x) and `VRMC_vrm` (1.0) glTF extensions read into expressions,
//! humanoid bones and credits, and VRM 0.x models turned to face +Z.
//!
//! Both versions are read into one shape: an expression is a name, an optional preset, morph
//! target binds as (mesh, target, weight in 0..1), material binds (colours, texture offsets),
//! whether it is binary and how it overrides blink, look-at and mouth expressions. VRM 0.x names
//! its presets differently (`a`, `joy`, `blink_l`); [`Preset`] uses the 1.0 names and reads both.
//!
//! The extension JSON comes from files anyone can write, so every value is checked: an
//! expression, bind or bone with an index out of range, a value of the wrong type or a
//! non-finite weight is skipped, counted in [`Vrm::skipped`] and logged (the first few
//! individually), and the rest of the model still loads.
//!
//! See: <https://github.com/vrm-c/vrm-specification/tree/master/specification>

use std::fmt;

use glam::{Quat, Vec3};
use serde_json::{Map, Value};

use super::{Mesh, Node};

/// How many skipped values are logged one by one before the rest are only counted.
const LOGGED_WARNINGS: usize = 16;

/// The VRM version a model is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VrmVersion {
    /// VRM 0.x (the `VRM` extension): the model faces -Z.
    V0,
    /// VRM 1.0 (the `VRMC_vrm` extension): the model faces +Z, like plain glTF.
    V1,
}

impl fmt::Display for VrmVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            VrmVersion::V0 => "0.x",
            VrmVersion::V1 => "1.0",
        })
    }
}

/// A preset expression, by its VRM 1.0 name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Preset {
    /// `neutral`.
    Neutral,
    /// `aa` (0.x `a`): the open "ah" mouth.
    Aa,
    /// `ih` (0.x `i`).
    Ih,
    /// `ou` (0.x `u`).
    Ou,
    /// `ee` (0.x `e`).
    Ee,
    /// `oh` (0.x `o`).
    Oh,
    /// `blink`: both eyes closed.
    Blink,
    /// `blinkLeft` (0.x `blink_l`): the avatar's left eye closed.
    BlinkLeft,
    /// `blinkRight` (0.x `blink_r`): the avatar's right eye closed.
    BlinkRight,
    /// `happy` (0.x `joy`).
    Happy,
    /// `angry`.
    Angry,
    /// `sad` (0.x `sorrow`).
    Sad,
    /// `relaxed` (0.x `fun`).
    Relaxed,
    /// `surprised` (1.0 only).
    Surprised,
    /// `lookUp` (0.x `lookup`).
    LookUp,
    /// `lookDown` (0.x `lookdown`).
    LookDown,
    /// `lookLeft` (0.x `lookleft`): the avatar looks to its own left.
    LookLeft,
    /// `lookRight` (0.x `lookright`): the avatar looks to its own right.
    LookRight,
}

/// The expressions that others can override: blink, look-at and mouth (see
/// [`Expression::overrides`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Procedural {
    /// `blink`, `blinkLeft`, `blinkRight`.
    Blink = 0,
    /// `lookUp`, `lookDown`, `lookLeft`, `lookRight`.
    LookAt = 1,
    /// `aa`, `ih`, `ou`, `ee`, `oh`.
    Mouth = 2,
}

impl Preset {
    /// Every preset, in the order of the VRM 1.0 specification's table.
    pub const ALL: [Preset; 18] = [
        Preset::Happy,
        Preset::Angry,
        Preset::Sad,
        Preset::Relaxed,
        Preset::Surprised,
        Preset::Aa,
        Preset::Ih,
        Preset::Ou,
        Preset::Ee,
        Preset::Oh,
        Preset::Blink,
        Preset::BlinkLeft,
        Preset::BlinkRight,
        Preset::LookUp,
        Preset::LookDown,
        Preset::LookLeft,
        Preset::LookRight,
        Preset::Neutral,
    ];

    /// The VRM 1.0 name (`happy`, `blinkLeft`).
    pub fn name(self) -> &'static str {
        match self {
            Preset::Neutral => "neutral",
            Preset::Aa => "aa",
            Preset::Ih => "ih",
            Preset::Ou => "ou",
            Preset::Ee => "ee",
            Preset::Oh => "oh",
            Preset::Blink => "blink",
            Preset::BlinkLeft => "blinkLeft",
            Preset::BlinkRight => "blinkRight",
            Preset::Happy => "happy",
            Preset::Angry => "angry",
            Preset::Sad => "sad",
            Preset::Relaxed => "relaxed",
            Preset::Surprised => "surprised",
            Preset::LookUp => "lookUp",
            Preset::LookDown => "lookDown",
            Preset::LookLeft => "lookLeft",
            Preset::LookRight => "lookRight",
        }
    }

    /// The VRM 0.x `presetName` (`joy`, `blink_l`), or `None` for `surprised`, which 0.x lacks.
    pub fn name_v0(self) -> Option<&'static str> {
        Some(match self {
            Preset::Neutral => "neutral",
            Preset::Aa => "a",
            Preset::Ih => "i",
            Preset::Ou => "u",
            Preset::Ee => "e",
            Preset::Oh => "o",
            Preset::Blink => "blink",
            Preset::BlinkLeft => "blink_l",
            Preset::BlinkRight => "blink_r",
            Preset::Happy => "joy",
            Preset::Angry => "angry",
            Preset::Sad => "sorrow",
            Preset::Relaxed => "fun",
            Preset::Surprised => return None,
            Preset::LookUp => "lookup",
            Preset::LookDown => "lookdown",
            Preset::LookLeft => "lookleft",
            Preset::LookRight => "lookright",
        })
    }

    /// A preset by its 1.0 or 0.x name, ignoring ASCII case (`happy`, `Joy`, `blink_l`).
    pub fn parse(name: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|p| {
            p.name().eq_ignore_ascii_case(name)
                || p.name_v0().is_some_and(|n| n.eq_ignore_ascii_case(name))
        })
    }

    /// Which overridable kind the preset is, if any.
    pub fn procedural(self) -> Option<Procedural> {
        match self {
            Preset::Blink | Preset::BlinkLeft | Preset::BlinkRight => Some(Procedural::Blink),
            Preset::LookUp | Preset::LookDown | Preset::LookLeft | Preset::LookRight => {
                Some(Procedural::LookAt)
            }
            Preset::Aa | Preset::Ih | Preset::Ou | Preset::Ee | Preset::Oh => {
                Some(Procedural::Mouth)
            }
            _ => None,
        }
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How an active expression affects the blink, look-at or mouth expressions (VRM 1.0
/// `overrideBlink`, `overrideLookAt`, `overrideMouth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Override {
    /// No effect (`"none"`, the default).
    #[default]
    None,
    /// Any weight above 0 suppresses them entirely (`"block"`).
    Block,
    /// They are scaled by `1 - weight` (`"blend"`).
    Blend,
}

/// One morph target an expression moves, at `weight` (0..1) when the expression is at 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MorphBind {
    /// Mesh index in [`super::Avatar::meshes`].
    pub mesh: usize,
    /// Target index in that mesh.
    pub target: usize,
    /// The target's weight at expression weight 1, in 0..1 (0.x's 0..100 divided by 100).
    pub weight: f32,
}

/// The material an expression's material bind names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MaterialRef {
    /// By index (VRM 1.0).
    Index(usize),
    /// By name (VRM 0.x `materialName`).
    Name(String),
}

/// A material change an expression asks for (drawn through
/// [`super::material_binds::resolve`]).
#[derive(Debug, Clone, PartialEq)]
pub struct MaterialBind {
    /// The material.
    pub material: MaterialRef,
    /// What changes: the 0.x `propertyName` (`_Color`), the 1.0 `type` (`color`,
    /// `emissionColor`), or `textureTransform` for a 1.0 texture transform bind.
    pub property: String,
    /// The value at expression weight 1: a colour, or `[scale x, scale y, offset x, offset y]`.
    pub value: Vec<f32>,
}

/// One expression (0.x: a blend shape group).
#[derive(Debug, Clone, PartialEq)]
pub struct Expression {
    /// Its name: the 0.x group's `name`, or the 1.0 preset or custom key.
    pub name: String,
    /// The preset it implements, if any (`None`: a custom expression).
    pub preset: Option<Preset>,
    /// The morph targets it moves.
    pub binds: Vec<MorphBind>,
    /// Material colour and texture offset changes.
    pub material_binds: Vec<MaterialBind>,
    /// Whether its weight snaps to 0 or 1 (at 0.5).
    pub is_binary: bool,
    /// How it overrides the blink, look-at and mouth expressions, indexed by [`Procedural`].
    pub overrides: [Override; 3],
}

/// What the VRM extension says about a model.
#[derive(Debug, Clone, PartialEq)]
pub struct Vrm {
    /// 0.x or 1.0.
    pub version: VrmVersion,
    /// The file's `specVersion`, if given.
    pub spec_version: Option<String>,
    /// The model's title (0.x `meta.title`, 1.0 `meta.name`).
    pub title: Option<String>,
    /// Its author (0.x `meta.author`, 1.0 `meta.authors` joined by commas).
    pub author: Option<String>,
    /// Every valid expression: 0.x in file order, 1.0 the presets then the custom ones.
    pub expressions: Vec<Expression>,
    /// Humanoid bones: the VRM bone name (`head`, `leftEye`) and its node, in file order.
    pub humanoid: Vec<(String, usize)>,
    /// How the eyes look around (0.x `firstPerson`, 1.0 `lookAt`), when the file says.
    pub look_at: Option<super::lookat::LookAt>,
    /// How many expressions, binds, bones or values were skipped as invalid.
    pub skipped: usize,
}

impl Vrm {
    /// The expression `name` names: an expression of exactly that name, else the first one
    /// implementing the preset of that 1.0 or 0.x name, else one whose name matches ignoring
    /// ASCII case.
    pub fn expression(&self, name: &str) -> Option<usize> {
        self.expressions
            .iter()
            .position(|e| e.name == name)
            .or_else(|| Preset::parse(name).and_then(|p| self.preset(p)))
            .or_else(|| {
                self.expressions
                    .iter()
                    .position(|e| e.name.eq_ignore_ascii_case(name))
            })
    }

    /// The first expression implementing `preset`.
    pub fn preset(&self, preset: Preset) -> Option<usize> {
        self.expressions
            .iter()
            .position(|e| e.preset == Some(preset))
    }

    /// The node of humanoid bone `name` (`head`, `leftEye`), ignoring ASCII case.
    pub fn humanoid_bone(&self, name: &str) -> Option<usize> {
        self.humanoid
            .iter()
            .find(|(bone, _)| bone.eq_ignore_ascii_case(name))
            .map(|&(_, node)| node)
    }
}

/// Reads the VRM extension from a glTF file's root `extensions` (`VRMC_vrm` is preferred when
/// both are present), checking every index against `nodes` and `meshes`; `None` for a model
/// without one. `file` labels the warnings.
pub fn parse(
    extensions: Option<&Map<String, Value>>,
    nodes: &[Node],
    meshes: &[Mesh],
    file: &str,
) -> Option<Vrm> {
    let extensions = extensions?;
    let mut log = Warnings { file, count: 0 };
    let (version, root) = match (extensions.get("VRMC_vrm"), extensions.get("VRM")) {
        (Some(v1), _) => (VrmVersion::V1, v1),
        (None, Some(v0)) => (VrmVersion::V0, v0),
        (None, None) => return None,
    };
    let Some(root) = root.as_object() else {
        log.warn(format_args!("the VRM extension is not a JSON object"));
        return None;
    };
    let context = Context { nodes, meshes };
    let mut vrm = match version {
        VrmVersion::V0 => read_v0(root, &context, &mut log),
        VrmVersion::V1 => read_v1(root, &context, &mut log),
    };
    vrm.spec_version = root
        .get("specVersion")
        .and_then(Value::as_str)
        .map(str::to_owned);
    vrm.skipped = log.count;
    if log.count > LOGGED_WARNINGS {
        tracing::warn!(
            file,
            skipped = log.count,
            "VRM: {} more invalid values skipped",
            log.count - LOGGED_WARNINGS
        );
    }
    Some(vrm)
}

/// Reads the VRM extension and, for VRM 0.x, turns the scene to face +Z: each root node is
/// rotated 180 degrees about Y (its translation with it). Skinned meshes follow, since their
/// joints' world matrices include the roots.
pub(crate) fn attach(
    extensions: Option<&Map<String, Value>>,
    nodes: &mut [Node],
    roots: &[usize],
    meshes: &[Mesh],
    file: &str,
) -> Option<Vrm> {
    let vrm = parse(extensions, nodes, meshes, file)?;
    if vrm.version == VrmVersion::V0 {
        turn_to_face_plus_z(nodes, roots);
    }
    tracing::info!(
        file,
        version = %vrm.version,
        title = vrm.title.as_deref().unwrap_or(""),
        author = vrm.author.as_deref().unwrap_or(""),
        expressions = vrm.expressions.len(),
        humanoid_bones = vrm.humanoid.len(),
        skipped = vrm.skipped,
        "VRM avatar"
    );
    Some(vrm)
}

/// The half turn about Y that maps a VRM 0.x model (facing -Z) to face +Z.
pub const HALF_TURN: Quat = Quat::from_xyzw(0.0, 1.0, 0.0, 0.0);

/// Rotates each root node 180 degrees about the world Y axis.
fn turn_to_face_plus_z(nodes: &mut [Node], roots: &[usize]) {
    for &root in roots {
        if let Some(node) = nodes.get_mut(root) {
            node.translation = HALF_TURN * node.translation;
            node.rotation = (HALF_TURN * node.rotation).normalize();
            // A rest rotation is finite by the loader's checks; keep it so whatever happens.
            if !node.rotation.is_finite() || !node.translation.is_finite() {
                node.rotation = HALF_TURN;
                node.translation = Vec3::ZERO;
            }
        }
    }
}

/// Counts and logs skipped values.
struct Warnings<'a> {
    file: &'a str,
    count: usize,
}

impl Warnings<'_> {
    fn warn(&mut self, what: fmt::Arguments<'_>) {
        self.count += 1;
        if self.count <= LOGGED_WARNINGS {
            tracing::warn!(file = self.file, "VRM: {what}; skipped");
        }
    }
}

/// What binds are checked against.
struct Context<'a> {
    nodes: &'a [Node],
    meshes: &'a [Mesh],
}

impl Context<'_> {
    fn target_count(&self, mesh: usize) -> Option<usize> {
        self.meshes.get(mesh).map(Mesh::target_count)
    }
}

/// A non-negative integer that fits `usize`.
fn index(value: &Value) -> Option<usize> {
    value.as_u64().and_then(|v| usize::try_from(v).ok())
}

/// A finite number as `f32`.
fn number(value: &Value) -> Option<f32> {
    let v = value.as_f64()? as f32;
    v.is_finite().then_some(v)
}

/// An optional boolean field: absent is `false`, a wrong type is counted and read as `false`.
fn flag(object: &Map<String, Value>, key: &str, what: &str, log: &mut Warnings) -> bool {
    match object.get(key) {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            log.warn(format_args!("{what}: {key} is {other}, not true or false"));
            false
        }
    }
}

/// An array field: absent is empty, a wrong type is counted and read as empty.
fn array<'v>(
    object: &'v Map<String, Value>,
    key: &str,
    what: &str,
    log: &mut Warnings,
) -> &'v [Value] {
    match object.get(key) {
        None | Some(Value::Null) => &[],
        Some(Value::Array(items)) => items,
        Some(_) => {
            log.warn(format_args!("{what}: {key} is not an array"));
            &[]
        }
    }
}

/// An object field: absent is `None`, a wrong type is counted and read as absent.
fn object<'v>(
    parent: &'v Map<String, Value>,
    key: &str,
    what: &str,
    log: &mut Warnings,
) -> Option<&'v Map<String, Value>> {
    match parent.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::Object(o)) => Some(o),
        Some(_) => {
            log.warn(format_args!("{what}: {key} is not an object"));
            None
        }
    }
}

/// A string field, if it is one.
fn string(object: &Map<String, Value>, key: &str) -> Option<String> {
    object
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .filter(|s| !s.is_empty())
}

/// A morph bind's weight: finite, clamped to 0..1 after dividing by `scale` (100 for 0.x).
fn bind_weight(value: Option<&Value>, scale: f32, what: &str, log: &mut Warnings) -> Option<f32> {
    let Some(raw) = value.and_then(number) else {
        log.warn(format_args!(
            "{what}: weight {} is not a finite number",
            value.map_or_else(|| "(missing)".to_owned(), Value::to_string)
        ));
        return None;
    };
    let w = raw / scale;
    if !(0.0..=1.0).contains(&w) {
        log.warn(format_args!(
            "{what}: weight {raw} is outside 0..{scale}; clamped"
        ));
    }
    Some(w.clamp(0.0, 1.0))
}

/// A float array (colour, scale, offset): only finite numbers.
fn floats(value: Option<&Value>) -> Option<Vec<f32>> {
    value?.as_array()?.iter().map(number).collect()
}

/// Keeps only the first expression of each preset, warning about the others' preset.
fn dedup_presets(expressions: &mut [Expression], log: &mut Warnings) {
    for i in 0..expressions.len() {
        let Some(p) = expressions[i].preset else {
            continue;
        };
        if expressions[..i].iter().any(|e| e.preset == Some(p)) {
            log.warn(format_args!(
                "expression `{}` repeats preset {p}; it stays a custom expression",
                expressions[i].name
            ));
            expressions[i].preset = None;
        }
    }
}

/// VRM 0.x: `blendShapeMaster.blendShapeGroups`, `humanoid.humanBones`, `meta`.
fn read_v0(root: &Map<String, Value>, cx: &Context, log: &mut Warnings) -> Vrm {
    let mut expressions = Vec::new();
    let groups = object(root, "blendShapeMaster", "VRM", log).map_or(&[][..], |m| {
        array(m, "blendShapeGroups", "blendShapeMaster", log)
    });
    for (g, group) in groups.iter().enumerate() {
        let Some(group) = group.as_object() else {
            log.warn(format_args!("blend shape group {g} is not an object"));
            continue;
        };
        let preset_name = string(group, "presetName");
        let preset = match preset_name.as_deref() {
            None | Some("unknown") => None,
            Some(name) => {
                let p = Preset::parse(name).filter(|p| p.name_v0().is_some());
                if p.is_none() {
                    log.warn(format_args!(
                        "blend shape group {g}: unknown presetName `{name}`; read as custom"
                    ));
                }
                p
            }
        };
        let name = string(group, "name")
            .or_else(|| preset.map(|p| p.name_v0().unwrap_or(p.name()).to_owned()))
            .unwrap_or_else(|| format!("expression {g}"));
        let what = format!("blend shape group `{name}`");
        let mut binds = Vec::new();
        for (b, bind) in array(group, "binds", &what, log).iter().enumerate() {
            let what = format!("{what} bind {b}");
            let Some(bind) = bind.as_object() else {
                log.warn(format_args!("{what} is not an object"));
                continue;
            };
            let mesh = bind.get("mesh").and_then(index);
            let target = bind.get("index").and_then(index);
            let (Some(mesh), Some(target)) = (mesh, target) else {
                log.warn(format_args!("{what}: mesh or index is not an index"));
                continue;
            };
            match cx.target_count(mesh) {
                None => {
                    log.warn(format_args!(
                        "{what}: mesh {mesh} does not exist ({} meshes)",
                        cx.meshes.len()
                    ));
                    continue;
                }
                Some(count) if target >= count => {
                    log.warn(format_args!(
                        "{what}: mesh {mesh} has {count} morph targets, not {}",
                        target + 1
                    ));
                    continue;
                }
                Some(_) => {}
            }
            let Some(weight) = bind_weight(bind.get("weight"), 100.0, &what, log) else {
                continue;
            };
            binds.push(MorphBind {
                mesh,
                target,
                weight,
            });
        }
        let mut material_binds = Vec::new();
        for (m, value) in array(group, "materialValues", &what, log)
            .iter()
            .enumerate()
        {
            let bind = value.as_object().and_then(|v| {
                Some(MaterialBind {
                    material: MaterialRef::Name(string(v, "materialName")?),
                    property: string(v, "propertyName")?,
                    value: floats(v.get("targetValue"))?,
                })
            });
            match bind {
                Some(bind) => material_binds.push(bind),
                None => log.warn(format_args!(
                    "{what} material value {m}: needs materialName, propertyName and numeric targetValue"
                )),
            }
        }
        expressions.push(Expression {
            is_binary: flag(group, "isBinary", &what, log),
            name,
            preset,
            binds,
            material_binds,
            overrides: [Override::None; 3],
        });
    }
    dedup_presets(&mut expressions, log);

    let mut humanoid = Vec::new();
    let bones = object(root, "humanoid", "VRM", log)
        .map_or(&[][..], |h| array(h, "humanBones", "humanoid", log));
    for (i, bone) in bones.iter().enumerate() {
        let name = bone.get("bone").and_then(Value::as_str);
        let node = bone.get("node").and_then(index);
        match (name, node) {
            (Some(name), Some(node)) => add_bone(&mut humanoid, name, node, cx, log),
            _ => log.warn(format_args!(
                "humanoid bone {i}: needs a bone name and a node index"
            )),
        }
    }

    let meta = object(root, "meta", "VRM", log);
    Vrm {
        version: VrmVersion::V0,
        spec_version: None,
        title: meta.and_then(|m| string(m, "title")),
        author: meta.and_then(|m| string(m, "author")),
        expressions,
        humanoid,
        look_at: root
            .get("firstPerson")
            .and_then(Value::as_object)
            .and_then(super::lookat::read_v0),
        skipped: 0,
    }
}

/// Adds a humanoid bone after checking its node and that the name is new.
fn add_bone(
    humanoid: &mut Vec<(String, usize)>,
    name: &str,
    node: usize,
    cx: &Context,
    log: &mut Warnings,
) {
    if node >= cx.nodes.len() {
        log.warn(format_args!(
            "humanoid bone `{name}`: node {node} does not exist ({} nodes)",
            cx.nodes.len()
        ));
    } else if humanoid.iter().any(|(b, _)| b.eq_ignore_ascii_case(name)) {
        log.warn(format_args!("humanoid bone `{name}` is listed twice"));
    } else {
        humanoid.push((name.to_owned(), node));
    }
}

/// VRM 1.0: `expressions.preset`, `expressions.custom`, `humanoid.humanBones`, `meta`.
fn read_v1(root: &Map<String, Value>, cx: &Context, log: &mut Warnings) -> Vrm {
    let mut expressions = Vec::new();
    if let Some(all) = object(root, "expressions", "VRMC_vrm", log) {
        for kind in ["preset", "custom"] {
            let Some(table) = object(all, kind, "expressions", log) else {
                continue;
            };
            for (key, value) in table {
                let preset = if kind == "preset" {
                    let p = Preset::ALL.into_iter().find(|p| p.name() == key);
                    if p.is_none() {
                        log.warn(format_args!(
                            "expressions.preset.{key} is not a VRM 1.0 preset; read as custom"
                        ));
                    }
                    p
                } else {
                    None
                };
                let what = format!("expression `{key}`");
                let Some(e) = value.as_object() else {
                    log.warn(format_args!("{what} is not an object"));
                    continue;
                };
                expressions.push(read_expression_v1(key, preset, e, &what, cx, log));
            }
        }
    }
    dedup_presets(&mut expressions, log);

    let mut humanoid = Vec::new();
    let bones = object(root, "humanoid", "VRMC_vrm", log)
        .and_then(|h| object(h, "humanBones", "humanoid", log));
    for (name, bone) in bones.into_iter().flatten() {
        match bone.get("node").and_then(index) {
            Some(node) => add_bone(&mut humanoid, name, node, cx, log),
            None => log.warn(format_args!("humanoid bone `{name}`: node is not an index")),
        }
    }

    let meta = object(root, "meta", "VRMC_vrm", log);
    let authors = meta
        .and_then(|m| m.get("authors"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .filter(|a| !a.is_empty());
    Vrm {
        version: VrmVersion::V1,
        spec_version: None,
        title: meta.and_then(|m| string(m, "name")),
        author: authors,
        expressions,
        humanoid,
        look_at: root
            .get("lookAt")
            .and_then(Value::as_object)
            .and_then(super::lookat::read_v1),
        skipped: 0,
    }
}

/// One VRM 1.0 expression: its binds (a bind names a node, resolved to the node's mesh), flags
/// and overrides.
fn read_expression_v1(
    key: &str,
    preset: Option<Preset>,
    e: &Map<String, Value>,
    what: &str,
    cx: &Context,
    log: &mut Warnings,
) -> Expression {
    let mut binds = Vec::new();
    for (b, bind) in array(e, "morphTargetBinds", what, log).iter().enumerate() {
        let what = format!("{what} morph bind {b}");
        let Some(bind) = bind.as_object() else {
            log.warn(format_args!("{what} is not an object"));
            continue;
        };
        let node = bind.get("node").and_then(index);
        let target = bind.get("index").and_then(index);
        let (Some(node), Some(target)) = (node, target) else {
            log.warn(format_args!("{what}: node or index is not an index"));
            continue;
        };
        let Some(mesh) = cx.nodes.get(node).and_then(|n| n.mesh) else {
            log.warn(format_args!("{what}: node {node} has no mesh"));
            continue;
        };
        let count = cx.target_count(mesh).unwrap_or(0);
        if target >= count {
            log.warn(format_args!(
                "{what}: node {node}'s mesh has {count} morph targets, not {}",
                target + 1
            ));
            continue;
        }
        let Some(weight) = bind_weight(bind.get("weight"), 1.0, &what, log) else {
            continue;
        };
        binds.push(MorphBind {
            mesh,
            target,
            weight,
        });
    }
    let mut material_binds = Vec::new();
    for (m, value) in array(e, "materialColorBinds", what, log).iter().enumerate() {
        let bind = value.as_object().and_then(|v| {
            Some(MaterialBind {
                material: MaterialRef::Index(v.get("material").and_then(index)?),
                property: string(v, "type")?,
                value: floats(v.get("targetValue"))?,
            })
        });
        match bind {
            Some(bind) => material_binds.push(bind),
            None => log.warn(format_args!(
                "{what} material colour bind {m}: needs material, type and numeric targetValue"
            )),
        }
    }
    for (m, value) in array(e, "textureTransformBinds", what, log)
        .iter()
        .enumerate()
    {
        let bind = value.as_object().and_then(|v| {
            let material = v.get("material").and_then(index)?;
            let scale = match v.get("scale") {
                None => vec![1.0, 1.0],
                some => floats(some)?,
            };
            let offset = match v.get("offset") {
                None => vec![0.0, 0.0],
                some => floats(some)?,
            };
            (scale.len() == 2 && offset.len() == 2).then(|| MaterialBind {
                material: MaterialRef::Index(material),
                property: "textureTransform".to_owned(),
                value: [scale, offset].concat(),
            })
        });
        match bind {
            Some(bind) => material_binds.push(bind),
            None => log.warn(format_args!(
                "{what} texture transform bind {m}: needs material and two-number scale and offset"
            )),
        }
    }
    let mut overrides = [Override::None; 3];
    for (slot, key) in
        overrides
            .iter_mut()
            .zip(["overrideBlink", "overrideLookAt", "overrideMouth"])
    {
        *slot = match e.get(key) {
            None => Override::None,
            Some(v) => match v.as_str() {
                Some("none") => Override::None,
                Some("block") => Override::Block,
                Some("blend") => Override::Blend,
                _ => {
                    log.warn(format_args!(
                        "{what}: {key} is {v}, not \"none\", \"block\" or \"blend\"; read as none"
                    ));
                    Override::None
                }
            },
        };
    }
    Expression {
        name: key.to_owned(),
        preset,
        binds,
        material_binds,
        is_binary: flag(e, "isBinary", what, log),
        overrides,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(mesh: Option<usize>) -> Node {
        Node {
            mesh,
            ..Node::default()
        }
    }

    fn mesh(targets: usize) -> Mesh {
        Mesh {
            name: None,
            target_names: vec![String::new(); targets],
            default_weights: vec![0.0; targets],
            primitives: Vec::new(),
        }
    }

    /// Two nodes (node 1 holds mesh 0 with three targets) and one mesh.
    fn read(extensions: Value) -> Option<Vrm> {
        let nodes = [node(None), node(Some(0))];
        let meshes = [mesh(3)];
        parse(extensions.as_object(), &nodes, &meshes, "test")
    }

    #[test]
    fn presets_read_both_namings() {
        assert_eq!(Preset::parse("joy"), Some(Preset::Happy));
        assert_eq!(Preset::parse("Happy"), Some(Preset::Happy));
        assert_eq!(Preset::parse("blink_l"), Some(Preset::BlinkLeft));
        assert_eq!(Preset::parse("BLINKLEFT"), Some(Preset::BlinkLeft));
        assert_eq!(Preset::parse("A"), Some(Preset::Aa));
        assert_eq!(Preset::parse("unknown"), None);
        for p in Preset::ALL {
            assert_eq!(Preset::parse(p.name()), Some(p));
        }
    }

    #[test]
    fn a_plain_gltf_has_no_vrm() {
        assert!(read(json!({})).is_none());
        assert!(read(json!({"KHR_other": {}})).is_none());
        assert!(parse(None, &[], &[], "none").is_none());
        assert!(read(json!({"VRM": 7})).is_none());
    }

    #[test]
    fn hostile_v0_values_are_skipped_and_counted() {
        let vrm = read(json!({"VRM": {
            "blendShapeMaster": {"blendShapeGroups": [
                {"name": "A", "presetName": "a", "binds": [
                    {"mesh": 0, "index": 2, "weight": 50},
                    {"mesh": 1, "index": 0, "weight": 100},
                    {"mesh": 0, "index": 3, "weight": 100},
                    {"mesh": -1, "index": 0, "weight": 100},
                    {"mesh": "0", "index": 0, "weight": 100},
                    {"mesh": 0, "index": 0, "weight": "heavy"},
                    {"mesh": 0, "index": 0, "weight": 1e300},
                    {"mesh": 0, "index": 1},
                    {"mesh": 0, "index": 0, "weight": 250},
                    7
                ], "isBinary": "yes", "materialValues": [
                    {"materialName": "Face", "propertyName": "_Color", "targetValue": [1, 0, 0, 1]},
                    {"materialName": "Face", "propertyName": "_Color", "targetValue": "red"}
                ]},
                "not a group",
                {"presetName": "joy", "binds": "none"},
                {"name": "Again", "presetName": "a"},
                {"name": "Odd", "presetName": "wink"}
            ]},
            "humanoid": {"humanBones": [
                {"bone": "head", "node": 1},
                {"bone": "neck", "node": 9},
                {"bone": "head", "node": 0},
                {"bone": 3, "node": 0},
                {"node": 0}
            ]},
            "meta": {"title": 5, "author": "someone"}
        }}))
        .unwrap();
        assert_eq!(vrm.version, VrmVersion::V0);
        let names: Vec<&str> = vrm.expressions.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["A", "joy", "Again", "Odd"]);
        let a = &vrm.expressions[0];
        assert_eq!(a.preset, Some(Preset::Aa));
        assert_eq!(
            a.binds,
            [
                MorphBind {
                    mesh: 0,
                    target: 2,
                    weight: 0.5
                },
                MorphBind {
                    mesh: 0,
                    target: 0,
                    weight: 1.0
                }
            ]
        );
        assert!(!a.is_binary);
        assert_eq!(a.material_binds.len(), 1);
        assert_eq!(vrm.expressions[1].preset, Some(Preset::Happy));
        assert!(vrm.expressions[1].binds.is_empty());
        // A second `a` stays, as a custom expression; an unknown preset name reads as custom.
        assert_eq!(vrm.expressions[2].preset, None);
        assert_eq!(vrm.expressions[3].preset, None);
        assert_eq!(vrm.humanoid, [("head".to_owned(), 1)]);
        assert_eq!(vrm.humanoid_bone("HEAD"), Some(1));
        assert_eq!(vrm.title, None);
        assert_eq!(vrm.author.as_deref(), Some("someone"));
        // 9 binds (the clamped 250 counts but stays), 1 flag, 1 material value, 1 group,
        // 1 binds list, 1 repeated preset, 1 unknown preset, 4 bones.
        assert_eq!(vrm.skipped, 19, "{vrm:#?}");
    }

    #[test]
    fn hostile_v1_values_are_skipped_and_counted() {
        let vrm = read(json!({"VRMC_vrm": {
            "specVersion": "1.0",
            "expressions": {
                "preset": {
                    "happy": {"morphTargetBinds": [
                        {"node": 1, "index": 1, "weight": 0.5},
                        {"node": 0, "index": 0, "weight": 1.0},
                        {"node": 5, "index": 0, "weight": 1.0},
                        {"node": 1, "index": 3, "weight": 1.0},
                        {"node": 1, "index": 0, "weight": -2}
                    ], "isBinary": true, "overrideBlink": "block", "overrideMouth": "sometimes"},
                    "grin": {},
                    "blink": []
                },
                "custom": {
                    "wink": {"overrideLookAt": "blend", "textureTransformBinds": [
                        {"material": 0, "scale": [2, 3]},
                        {"material": 0, "scale": [2]}
                    ]}
                }
            },
            "humanoid": {"humanBones": {"head": {"node": 1}, "neck": {"node": "1"}, "jaw": 4}},
            "meta": {"name": "Test", "authors": ["a", 2, "b"]}
        }}))
        .unwrap();
        assert_eq!(vrm.version, VrmVersion::V1);
        assert_eq!(vrm.spec_version.as_deref(), Some("1.0"));
        assert_eq!(vrm.title.as_deref(), Some("Test"));
        assert_eq!(vrm.author.as_deref(), Some("a, b"));
        let happy = &vrm.expressions[vrm.preset(Preset::Happy).unwrap()];
        assert_eq!(
            happy.binds,
            [
                MorphBind {
                    mesh: 0,
                    target: 1,
                    weight: 0.5
                },
                MorphBind {
                    mesh: 0,
                    target: 0,
                    weight: 0.0
                }
            ]
        );
        assert!(happy.is_binary);
        assert_eq!(
            happy.overrides,
            [Override::Block, Override::None, Override::None]
        );
        let grin = &vrm.expressions[vrm.expression("grin").unwrap()];
        assert_eq!(grin.preset, None);
        let wink = &vrm.expressions[vrm.expression("wink").unwrap()];
        assert_eq!(wink.overrides[Procedural::LookAt as usize], Override::Blend);
        assert_eq!(wink.material_binds[0].value, [2.0, 3.0, 0.0, 0.0]);
        assert_eq!(vrm.expressions.len(), 3, "the array `blink` is skipped");
        assert_eq!(vrm.humanoid, [("head".to_owned(), 1)]);
        // 4 binds (the clamped -2 counts but stays), 1 override, 1 unknown preset, 1 non-object
        // expression, 1 texture bind, 2 bones.
        assert_eq!(vrm.skipped, 10, "{vrm:#?}");
        assert_eq!(vrm.expression("Happy"), vrm.preset(Preset::Happy));
        assert_eq!(vrm.expression("joy"), vrm.preset(Preset::Happy));
    }

    #[test]
    fn wrong_shapes_at_every_level_never_panic() {
        for body in [
            json!({"VRM": {"blendShapeMaster": 1, "humanoid": [], "meta": "x"}}),
            json!({"VRM": {"blendShapeMaster": {"blendShapeGroups": {"a": 1}}}}),
            json!({"VRM": {"humanoid": {"humanBones": [null, [], {"bone": "head", "node": 1e30}]}}}),
            json!({"VRMC_vrm": {"expressions": [], "humanoid": {"humanBones": []}}}),
            json!({"VRMC_vrm": {"expressions": {"preset": [], "custom": null}}}),
            json!({"VRMC_vrm": {"expressions": {"custom": {"x": {"morphTargetBinds": {"node": 1}}}}}}),
            json!({"VRMC_vrm": null}),
        ] {
            let nodes = [node(None), node(Some(0))];
            let meshes = [mesh(3)];
            let vrm = parse(body.as_object(), &nodes, &meshes, "shapes");
            if let Some(vrm) = vrm {
                assert!(vrm.skipped > 0, "{body}");
                assert!(vrm.expressions.iter().all(|e| e.binds.is_empty()));
            }
        }
    }

    #[test]
    fn version_1_wins_when_both_are_present() {
        let vrm = read(json!({"VRM": {}, "VRMC_vrm": {}})).unwrap();
        assert_eq!(vrm.version, VrmVersion::V1);
        assert_eq!(vrm.skipped, 0);
    }

    #[test]
    fn the_loader_keeps_a_model_with_a_broken_vrm_extension() {
        let doc = |vrm: &str| {
            format!(
                r#"{{"asset":{{"version":"2.0"}},"extensions":{{"VRM":{vrm}}},
                "nodes":[{{"translation":[0,1,2],"children":[1]}},{{"translation":[0,0,1]}}],
                "scenes":[{{"nodes":[0]}}]}}"#
            )
        };
        let avatar = crate::avatar::load_slice(
            doc(
                r#"{"blendShapeMaster":{"blendShapeGroups":[{"name":"A","presetName":"a",
                "binds":[{"mesh":3,"index":0,"weight":100}]}]},
                "humanoid":{"humanBones":[{"bone":"head","node":1},{"bone":"neck","node":99}]}}"#,
            )
            .as_bytes(),
            "broken",
        )
        .unwrap();
        let vrm = avatar.vrm.as_ref().unwrap();
        assert_eq!(vrm.skipped, 2);
        assert_eq!(vrm.expressions[0].binds, []);
        assert_eq!(vrm.humanoid_bone("head"), Some(1));
        // The 0.x root is turned; its child is not.
        let world = avatar.world_transforms(&avatar.rest_pose());
        let head = world[1].transform_point3(Vec3::ZERO);
        assert!((head - Vec3::new(0.0, 1.0, -3.0)).length() < 1e-5, "{head}");
        let plain = crate::avatar::load_slice(doc("\"not an object\"").as_bytes(), "string");
        assert!(plain.unwrap().vrm.is_none());
    }

    #[test]
    fn the_half_turn_moves_roots_only() {
        let mut nodes = vec![node(None), node(None)];
        nodes[0].translation = Vec3::new(1.0, 2.0, 3.0);
        nodes[0].children = vec![1];
        nodes[1].parent = Some(0);
        nodes[1].translation = Vec3::new(0.0, 0.0, -1.0);
        turn_to_face_plus_z(&mut nodes, &[0]);
        assert!((nodes[0].translation - Vec3::new(-1.0, 2.0, -3.0)).length() < 1e-6);
        assert!((nodes[0].rotation * Vec3::Z - Vec3::NEG_Z).length() < 1e-6);
        assert_eq!(nodes[1].translation, Vec3::new(0.0, 0.0, -1.0));
        assert_eq!(nodes[1].rotation, Quat::IDENTITY);
    }
}

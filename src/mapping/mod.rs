//! ARKit channels → avatar target weights and node rotations, compiled against a loaded avatar
//! into index tables so the render loop never looks a name up.
//!
//! A mapping file (see [`file`] and `config/mappings/example.toml`) says which targets follow
//! which channels (short form `Target = "channel"` or a full form with several weighted sources,
//! gain, offset, curve and clamp), which targets form groups, and which nodes turn with the
//! head, neck, eyes and jaw. Without one, the automatic mapping applies: every morph target
//! whose name is an ARKit channel in any dialect (optionally behind a `Prefix.` such as
//! `BlendShape.`) follows that channel; nodes named `Head`, `LeftEye` and `RightEye` follow the
//! stream's head and eye rotations, and eye nodes follow the `eyeLook*` channels when the
//! stream carries no eye rotation.
//!
//! VRM avatars add two things. Their humanoid bones (`head`, `neck`, `jaw`, `leftEye`,
//! `rightEye`) stand in for node names, and bone rotations are applied in avatar space whatever
//! the bones' rest orientation (see [`BoneFrames`]). Their expressions are targets too: a
//! mapping file drives one with `"vrm:NAME"`, and without one the [`fallback`] table drives the
//! preset expressions from the ARKit channels, skipping any preset whose channels already drive
//! shapes named after them (so a perfect-sync avatar maps directly). Expressions become morph
//! weights after the VRM rules: binary expressions snap at 0.5, overrides suppress blink,
//! look-at and mouth expressions, and the binds are summed per target and clamped to [0, 1].
//!
//! Per frame, [`CompiledMapping::apply`] evaluates the target drivers, then the expressions,
//! then the groups, then the bones; it allocates nothing and never produces a non-finite
//! weight.

pub mod check;
pub mod curve;
pub mod file;

use glam::{EulerRot, Quat, Vec3};
use toml::Spanned;

pub use check::{check, check_text, CheckReport, Finding, Severity};
pub use curve::Curve;
pub use file::{MappingError, MappingFile};

use crate::arkit::{Channel, ChannelMask, FaceFrame};
use crate::avatar::vrm::{Override, Preset, Procedural};
use crate::avatar::{Avatar, MorphBind, Pose};
use file::{BoneSection, Combine, GroupMode, TargetEntry};

/// The prefix that makes a `[map]` key name a VRM expression instead of a morph target.
pub const EXPRESSION_PREFIX: &str = "vrm:";

/// The mapping of the built-in default head, `config/mappings/default_head.toml`.
pub const DEFAULT_HEAD_MAPPING: &str = include_str!("../../config/mappings/default_head.toml");

/// One morph target driven by one driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetBinding {
    /// Mesh index in the avatar.
    pub mesh: usize,
    /// Target index in that mesh.
    pub target: usize,
    /// Index into [`CompiledMapping::drivers`].
    pub driver: usize,
}

/// How one value is computed from the frame's channels.
#[derive(Debug, Clone, PartialEq)]
pub struct Driver {
    /// Source channels with their weights.
    pub sources: Vec<(Channel, f32)>,
    /// How the weighted sources combine.
    pub combine: Combine,
    /// Multiplies the combined value.
    pub gain: f32,
    /// Added after the gain.
    pub offset: f32,
    /// Applied after gain and offset.
    pub curve: Curve,
    /// The output range; `None` (automatic bindings) passes the value through.
    pub clamp: Option<(f32, f32)>,
}

impl Driver {
    /// A driver that passes one channel through unchanged.
    pub fn identity(channel: Channel) -> Driver {
        Driver {
            sources: vec![(channel, 1.0)],
            combine: Combine::Sum,
            gain: 1.0,
            offset: 0.0,
            curve: Curve::Linear,
            clamp: None,
        }
    }

    /// The driver's value for `frame`, or `None` when the frame carries none of its sources.
    /// Missing sources count as 0 and non-finite values as 0; the result is always finite.
    pub fn eval(&self, frame: &FaceFrame) -> Option<f32> {
        let mut any = false;
        let mut acc = match self.combine {
            Combine::Sum => 0.0,
            Combine::Product => 1.0,
            Combine::Min => f32::INFINITY,
            Combine::Max => f32::NEG_INFINITY,
        };
        for &(channel, weight) in &self.sources {
            let v = match frame.get(channel) {
                Some(v) => {
                    any = true;
                    finite(v)
                }
                None => 0.0,
            } * weight;
            acc = match self.combine {
                Combine::Sum => acc + v,
                Combine::Product => acc * v,
                Combine::Min => acc.min(v),
                Combine::Max => acc.max(v),
            };
        }
        if !any {
            return None;
        }
        let y = self.curve.eval(finite(acc) * self.gain + self.offset);
        Some(match self.clamp {
            Some((lo, hi)) => finite(y).clamp(lo, hi),
            None => finite(y),
        })
    }
}

fn finite(v: f32) -> f32 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// A compiled group: each member is the list of (mesh, target) slots of one target name.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// The group's name.
    pub name: String,
    /// Members; a member's value is read from its first slot and written to all of them.
    pub members: Vec<Vec<(usize, usize)>>,
    /// What the group does.
    pub mode: GroupMode,
    /// The exponent of the soft exclusive mode.
    pub sharpness: f32,
}

impl Group {
    fn apply(&self, weights: &mut [Vec<f32>]) {
        let value = |w: &[Vec<f32>], m: &[(usize, usize)]| {
            m.first()
                .and_then(|&(mesh, t)| w.get(mesh).and_then(|ws| ws.get(t)))
                .map_or(0.0, |&v| finite(v))
        };
        let scale = |w: &mut [Vec<f32>], m: &[(usize, usize)], f: &dyn Fn(f32) -> f32| {
            for &(mesh, t) in m {
                if let Some(slot) = w.get_mut(mesh).and_then(|ws| ws.get_mut(t)) {
                    *slot = finite(f(finite(*slot)));
                }
            }
        };
        match self.mode {
            GroupMode::Free => {}
            GroupMode::Normalise => {
                let sum: f32 = self.members.iter().map(|m| value(weights, m)).sum();
                if sum > 1.0 {
                    for m in &self.members {
                        scale(weights, m, &|v| v / sum);
                    }
                }
            }
            GroupMode::Exclusive => {
                let mut best: Option<(usize, f32)> = None;
                for (i, m) in self.members.iter().enumerate() {
                    let v = value(weights, m);
                    if best.is_none_or(|(_, b)| v > b) {
                        best = Some((i, v));
                    }
                }
                for (i, m) in self.members.iter().enumerate() {
                    if best.is_some_and(|(b, _)| b != i) {
                        scale(weights, m, &|_| 0.0);
                    }
                }
            }
            GroupMode::SoftExclusive => {
                let max = self
                    .members
                    .iter()
                    .map(|m| value(weights, m))
                    .fold(0.0f32, f32::max);
                if max > 0.0 {
                    let p = self.sharpness;
                    for m in &self.members {
                        scale(weights, m, &|v| {
                            if v > 0.0 {
                                v * (v / max).min(1.0).powf(p)
                            } else {
                                v
                            }
                        });
                    }
                }
            }
        }
    }
}

/// A node turned by the stream's head rotation, per axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoneDriver {
    /// Multiplier of pitch (X), yaw (Y) and roll (Z).
    pub gain: Vec3,
    /// Largest |angle| of pitch, yaw and roll, in radians.
    pub limit: Vec3,
    /// The avatar axis (with sign) of pitch, yaw and roll.
    pub axes: [file::Axis; 3],
}

impl Default for BoneDriver {
    fn default() -> Self {
        BoneDriver::from_section(&BoneSection::default())
    }
}

impl BoneDriver {
    fn from_section(s: &BoneSection) -> BoneDriver {
        BoneDriver {
            gain: Vec3::from_array(s.gain.map(|g| g.0)),
            limit: Vec3::from_array(s.limit_degrees.map(|l| l.0.to_radians())),
            axes: s.axes,
        }
    }

    fn is_identity(&self) -> bool {
        self.gain == Vec3::ONE
            && self.limit.min_element() >= std::f32::consts::PI
            && self.axes == [file::Axis::X, file::Axis::Y, file::Axis::Z]
    }

    /// The node rotation for the stream's head rotation `q` (`None` when `q` is not finite).
    pub fn rotation(&self, q: Quat) -> Option<Quat> {
        if !q.is_finite() || q.length_squared() < 1e-12 {
            return None;
        }
        if self.is_identity() {
            return Some(q);
        }
        let (yaw, pitch, roll) = q.normalize().to_euler(EulerRot::YXZ);
        let stream = [pitch, yaw, roll];
        let mut out = [0.0f32; 3];
        for (i, (angle, axis)) in stream.into_iter().zip(self.axes).enumerate() {
            let a = (finite(angle) * self.gain[i]).clamp(-self.limit[i], self.limit[i]);
            out[axis.index] += if axis.negative { -a } else { a };
        }
        Some(Quat::from_euler(EulerRot::YXZ, out[1], out[0], out[2]))
    }
}

/// A jaw node opened by a channel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JawDriver {
    /// The jaw node.
    pub node: usize,
    /// The channel that opens it.
    pub channel: Channel,
    /// Radians per unit of the channel.
    pub radians: f32,
    /// The rotation axis (unit).
    pub axis: Vec3,
}

/// A VRM expression driven by a channel driver, with what it moves.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpressionBinding {
    /// Index into the avatar's VRM expressions.
    pub expression: usize,
    /// Index into [`CompiledMapping::drivers`].
    pub driver: usize,
    /// The morph targets it moves, with their weights at expression weight 1.
    pub binds: Vec<MorphBind>,
    /// Whether its weight snaps to 0 or 1 (above 0.5 is 1).
    pub is_binary: bool,
    /// Whether it is a blink, look-at or mouth expression, which others can override.
    pub procedural: Option<Procedural>,
    /// How it overrides the blink, look-at and mouth expressions, indexed by [`Procedural`].
    pub overrides: [Override; 3],
}

impl ExpressionBinding {
    /// The expression's weight for `frame` (in [0, 1], snapped when binary), or `None` when
    /// the frame carries none of its driver's sources.
    fn weight(&self, drivers: &[Driver], frame: &FaceFrame) -> Option<f32> {
        let w = finite(drivers.get(self.driver)?.eval(frame)?).clamp(0.0, 1.0);
        Some(if !self.is_binary {
            w
        } else if w > 0.5 {
            1.0
        } else {
            0.0
        })
    }
}

/// The rest orientation, in avatar space, of each driven node of a VRM avatar.
///
/// Head and eye rotations from the stream, the rotations the eyeLook channels make and the jaw
/// axis are all meant in avatar space (facing +Z, +Y up, +X on the avatar's left). A node's
/// extra rotation applies in its own frame, so for a VRM avatar each is turned into the node's
/// frame: `frame⁻¹ · q · frame`. That is what keeps a VRM 0.x model, turned a half turn to face
/// the camera, nodding the right way. Plain glTF avatars get identity frames: their rotations
/// apply in the node's frame, as the mapping file's axes describe.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoneFrames {
    /// The head node's frame.
    pub head: Quat,
    /// The neck node's frame.
    pub neck: Quat,
    /// The left eye node's frame.
    pub left_eye: Quat,
    /// The right eye node's frame.
    pub right_eye: Quat,
    /// The jaw node's frame.
    pub jaw: Quat,
}

impl Default for BoneFrames {
    fn default() -> Self {
        BoneFrames {
            head: Quat::IDENTITY,
            neck: Quat::IDENTITY,
            left_eye: Quat::IDENTITY,
            right_eye: Quat::IDENTITY,
            jaw: Quat::IDENTITY,
        }
    }
}

/// `q` (an avatar-space rotation) in the frame `frame` of a node.
fn in_frame(frame: Quat, q: Quat) -> Quat {
    if frame == Quat::IDENTITY {
        q
    } else {
        frame.inverse() * q * frame
    }
}

/// The built-in driver of a VRM preset expression from the ARKit channels, used for VRM
/// avatars without perfect sync (see the README's VRM section for the table and its reasons).
///
/// Blink is split exactly: `blink = min(L, R)`, `blinkLeft = L − R`, `blinkRight = R − L`
/// (clamped), so each eyelid's total is its own channel. The performer's left eye drives the
/// avatar's left eye (`blinkLeft`, 0.x `Blink_L`), as everywhere in facewire: the avatar is a
/// puppet, not a mirror image; `lookLeft` likewise means the avatar's own left. `neutral` and
/// `relaxed` have no fallback.
pub fn fallback(preset: Preset) -> Option<Driver> {
    use Channel::*;
    let sum = |sources: &[(Channel, f32)], offset: f32| Driver {
        sources: sources.to_vec(),
        combine: Combine::Sum,
        gain: 1.0,
        offset,
        curve: Curve::Linear,
        clamp: Some((0.0, 1.0)),
    };
    Some(match preset {
        Preset::Blink => Driver {
            combine: Combine::Min,
            ..sum(&[(EyeBlinkLeft, 1.0), (EyeBlinkRight, 1.0)], 0.0)
        },
        Preset::BlinkLeft => sum(&[(EyeBlinkLeft, 1.0), (EyeBlinkRight, -1.0)], 0.0),
        Preset::BlinkRight => sum(&[(EyeBlinkRight, 1.0), (EyeBlinkLeft, -1.0)], 0.0),
        Preset::Aa => sum(
            &[(JawOpen, 1.0), (MouthFunnel, -0.5), (MouthPucker, -0.5)],
            0.0,
        ),
        Preset::Ih => sum(&[(MouthStretchLeft, 0.5), (MouthStretchRight, 0.5)], 0.0),
        Preset::Ou => sum(&[(MouthPucker, 1.0)], 0.0),
        Preset::Ee => sum(
            &[
                (MouthUpperUpLeft, 0.25),
                (MouthUpperUpRight, 0.25),
                (MouthLowerDownLeft, 0.25),
                (MouthLowerDownRight, 0.25),
            ],
            0.0,
        ),
        Preset::Oh => sum(&[(MouthFunnel, 1.0)], 0.0),
        Preset::Happy => sum(&[(MouthSmileLeft, 0.5), (MouthSmileRight, 0.5)], 0.0),
        Preset::Angry => sum(&[(BrowDownLeft, 0.5), (BrowDownRight, 0.5)], 0.0),
        Preset::Sad => sum(
            &[
                (BrowInnerUp, 0.5),
                (MouthFrownLeft, 0.25),
                (MouthFrownRight, 0.25),
            ],
            0.0,
        ),
        // The jaw alone (talking) never reaches the offset; raised brows and wide eyes do.
        Preset::Surprised => sum(
            &[
                (BrowOuterUpLeft, 0.3),
                (BrowOuterUpRight, 0.3),
                (EyeWideLeft, 0.2),
                (EyeWideRight, 0.2),
                (JawOpen, 0.2),
            ],
            -0.2,
        ),
        Preset::LookUp => sum(&[(EyeLookUpLeft, 0.5), (EyeLookUpRight, 0.5)], 0.0),
        Preset::LookDown => sum(&[(EyeLookDownLeft, 0.5), (EyeLookDownRight, 0.5)], 0.0),
        Preset::LookLeft => sum(&[(EyeLookOutLeft, 0.5), (EyeLookInRight, 0.5)], 0.0),
        Preset::LookRight => sum(&[(EyeLookInLeft, 0.5), (EyeLookOutRight, 0.5)], 0.0),
        Preset::Neutral | Preset::Relaxed => return None,
    })
}

/// A mapping compiled against one avatar.
#[derive(Debug, Clone, PartialEq)]
pub struct CompiledMapping {
    /// Every driven target, in mesh and target order.
    pub targets: Vec<TargetBinding>,
    /// The drivers the bindings point at.
    pub drivers: Vec<Driver>,
    /// Groups, applied after the targets in file order.
    pub groups: Vec<Group>,
    /// The node that takes the head rotation.
    pub head: Option<usize>,
    /// How the head node follows the stream.
    pub head_driver: BoneDriver,
    /// The node that takes (part of) the head rotation as a neck.
    pub neck: Option<usize>,
    /// How the neck node follows the stream.
    pub neck_driver: BoneDriver,
    /// The node that takes the left eye rotation.
    pub left_eye: Option<usize>,
    /// The node that takes the right eye rotation.
    pub right_eye: Option<usize>,
    /// Eye turn at weight 1 of eyeLookIn/Out, eyeLookUp and eyeLookDown, in radians.
    pub eye_look: EyeLook,
    /// The jaw bone, if any.
    pub jaw: Option<JawDriver>,
    /// Driven VRM expressions, in the avatar's expression order.
    pub expressions: Vec<ExpressionBinding>,
    /// Every (mesh, target) slot an expression in [`CompiledMapping::expressions`] moves, once.
    pub expression_slots: Vec<(usize, usize)>,
    /// The frames bone rotations are turned into (identity except on VRM avatars).
    pub frames: BoneFrames,
}

/// How far the eyeLook channels turn the eye nodes at weight 1, in radians.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EyeLook {
    /// Sideways (eyeLookIn, eyeLookOut).
    pub horizontal: f32,
    /// Up (eyeLookUp).
    pub up: f32,
    /// Down (eyeLookDown).
    pub down: f32,
}

/// Parses a morph target name as an ARKit channel, ignoring a `Prefix.` in front.
pub fn channel_for_target(name: &str) -> Option<Channel> {
    Channel::parse(name).or_else(|| {
        let (_, last) = name.rsplit_once(['.', ':', '|'])?;
        Channel::parse(last)
    })
}

/// Every (mesh, target) slot named `name`: exact matches, else matches ignoring ASCII case.
pub fn find_targets(avatar: &Avatar, name: &str) -> Vec<(usize, usize)> {
    let find = |eq: &dyn Fn(&str) -> bool| -> Vec<(usize, usize)> {
        avatar
            .meshes
            .iter()
            .enumerate()
            .flat_map(|(mesh, m)| {
                m.target_names
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| eq(n))
                    .map(move |(t, _)| (mesh, t))
            })
            .collect()
    };
    let exact = find(&|n| n == name);
    if exact.is_empty() {
        find(&|n| n.eq_ignore_ascii_case(name))
    } else {
        exact
    }
}

fn target_names(avatar: &Avatar) -> impl Iterator<Item = &str> {
    avatar
        .meshes
        .iter()
        .flat_map(|m| m.target_names.iter().map(String::as_str))
        .filter(|n| !n.is_empty())
}

/// The expression a `[map]` key names (`vrm:happy` → `happy`; the prefix in any case), or
/// `None` for a morph target name.
pub fn expression_name(key: &str) -> Option<&str> {
    let prefix = key.get(..EXPRESSION_PREFIX.len())?;
    prefix
        .eq_ignore_ascii_case(EXPRESSION_PREFIX)
        .then(|| &key[EXPRESSION_PREFIX.len()..])
}

/// The error for a `vrm:` name the avatar has no expression for, with the nearest one.
fn unknown_expression(
    file: &MappingFile,
    avatar: &Avatar,
    name: &Spanned<String>,
    what: &str,
) -> MappingError {
    let n = name.get_ref();
    let Some(vrm) = &avatar.vrm else {
        return file.error_at(
            name.span(),
            format!("{what}`{n}` names a VRM expression, but the model is not a VRM avatar"),
            Some("name the model's morph targets instead (`facewire sheet` lists them)".into()),
        );
    };
    let candidates: Vec<String> = vrm
        .expressions
        .iter()
        .flat_map(|e| {
            std::iter::once(e.name.as_str())
                .chain(e.preset.map(Preset::name))
                .map(|x| format!("{EXPRESSION_PREFIX}{x}"))
        })
        .collect();
    let message = match crate::diagnostic::nearest(n, candidates.iter().map(String::as_str)) {
        Some(best) => format!("{what}unknown expression `{n}`; did you mean `{best}`?"),
        None => format!("{what}unknown expression `{n}`: the model has no expression of that name"),
    };
    file.error_at(
        name.span(),
        message,
        Some(
            "expressions go by the model's own names or the VRM 1.0 preset names \
             (`facewire check` lists them)"
                .into(),
        ),
    )
}

/// The nodes the head, neck, eye and jaw drivers turn.
struct Bones {
    head: Option<usize>,
    neck: Option<usize>,
    left_eye: Option<usize>,
    right_eye: Option<usize>,
    jaw: Option<usize>,
}

/// Finds the bone nodes: the ones the file names (a node name, or on a VRM avatar a humanoid
/// bone name), else the conventional ones (the humanoid `head`, `leftEye` and `rightEye` of a
/// VRM avatar, else nodes named `Head`, `LeftEye`, `RightEye`; no neck or jaw). Names that
/// match nothing are errors.
fn resolve_bones(
    file: &MappingFile,
    avatar: &Avatar,
    errors: &mut Vec<(usize, MappingError)>,
) -> Bones {
    let humanoid = |bone: &str| {
        avatar
            .vrm
            .as_ref()
            .and_then(|v| v.humanoid_bone(bone))
            .filter(|&n| n < avatar.nodes.len())
    };
    let mut node =
        |written: &Option<Spanned<String>>, conventional: Option<(&str, &str)>, key: &str| {
            let Some(spanned) = written else {
                let (bone, name) = conventional?;
                return humanoid(bone).or_else(|| avatar.find_node(name));
            };
            let name = spanned.get_ref();
            if name.is_empty() {
                return None;
            }
            let found = humanoid(name).or_else(|| avatar.find_node(name));
            if found.is_none() {
                let bones = avatar
                    .vrm
                    .iter()
                    .flat_map(|v| v.humanoid.iter().map(|(b, _)| b.as_str()));
                let names = avatar
                    .nodes
                    .iter()
                    .filter_map(|n| n.name.as_deref())
                    .chain(bones);
                let (message, hint) = match crate::diagnostic::nearest(name, names) {
                    Some(best) => (
                        format!("{key}: unknown node `{name}`; did you mean `{best}`?"),
                        None,
                    ),
                    None if avatar.vrm.is_some() => (
                        format!("{key}: the model has no node or humanoid bone named `{name}`"),
                        Some(format!(
                            "VRM humanoid bones are named like `head`, `neck`, `jaw`, `leftEye`; \
                         set {key} = \"\" if the avatar has no such node"
                        )),
                    ),
                    None => (
                        format!("{key}: the model has no node named `{name}`"),
                        Some(format!("set {key} = \"\" if the avatar has no such node")),
                    ),
                };
                errors.push((
                    spanned.span().start,
                    file.error_at(spanned.span(), message, hint),
                ));
            }
            found
        };
    Bones {
        head: node(&file.head.node, Some(("head", "Head")), "head.node"),
        neck: node(&file.neck.node, None, "neck.node"),
        left_eye: node(&file.eyes.left, Some(("leftEye", "LeftEye")), "eyes.left"),
        right_eye: node(
            &file.eyes.right,
            Some(("rightEye", "RightEye")),
            "eyes.right",
        ),
        jaw: node(&file.jaw.node, None, "jaw.node"),
    }
}

impl CompiledMapping {
    /// The automatic mapping of `avatar`: every ARKit-named target, the conventionally named
    /// head and eye nodes (a VRM avatar's humanoid head and eyes) where the avatar has them,
    /// and on a VRM avatar its ARKit-named expressions and the [`fallback`] for its presets.
    pub fn auto(avatar: &Avatar) -> CompiledMapping {
        match Self::build(&MappingFile::default(), avatar) {
            Ok(m) => m,
            // The default file names no node or target explicitly, so nothing can be missing;
            // should that ever change, an empty mapping is still safe to draw.
            Err(_) => CompiledMapping::empty(),
        }
    }

    fn empty() -> CompiledMapping {
        CompiledMapping {
            targets: Vec::new(),
            drivers: Vec::new(),
            groups: Vec::new(),
            head: None,
            head_driver: BoneDriver::default(),
            neck: None,
            neck_driver: BoneDriver::default(),
            left_eye: None,
            right_eye: None,
            eye_look: EyeLook {
                horizontal: 0.0,
                up: 0.0,
                down: 0.0,
            },
            jaw: None,
            expressions: Vec::new(),
            expression_slots: Vec::new(),
            frames: BoneFrames::default(),
        }
    }

    /// Compiles `file` against `avatar`: every target and node it names must exist. The error
    /// is the first problem in file order; [`check`] lists them all.
    pub fn compile(file: &MappingFile, avatar: &Avatar) -> Result<CompiledMapping, MappingError> {
        Self::build(file, avatar).map_err(|mut errors| errors.swap_remove(0))
    }

    /// Compiles, collecting every error (sorted by position in the file).
    pub(crate) fn build(
        file: &MappingFile,
        avatar: &Avatar,
    ) -> Result<CompiledMapping, Vec<MappingError>> {
        let mut errors: Vec<(usize, MappingError)> = Vec::new();
        let vrm = avatar.vrm.as_ref();
        // Bones first: whether the avatar has eye bones decides the look-at fallback.
        let bones = resolve_bones(file, avatar, &mut errors);
        let unknown_target = |name: &Spanned<String>, what: &str| {
            let n = name.get_ref();
            let message = match crate::diagnostic::nearest(n, target_names(avatar)) {
                Some(best) => format!("{what}unknown target `{n}`; did you mean `{best}`?"),
                None => format!(
                    "{what}unknown target `{n}`: the model has no morph target of that name"
                ),
            };
            (
                name.span().start,
                file.error_at(
                    name.span(),
                    message,
                    Some("target names are the model's morph target names (`facewire sheet` lists them)".into()),
                ),
            )
        };

        // One slot per morph target: the driver index, automatic first, explicit on top.
        let mut slot_driver: Vec<Vec<Option<usize>>> = avatar
            .meshes
            .iter()
            .map(|m| vec![None; m.target_count()])
            .collect();
        let mut drivers: Vec<Driver> = Vec::new();
        let mut by_channel: [Option<usize>; crate::arkit::COUNT] = [None; crate::arkit::COUNT];
        // Channels that drive a morph target (or expression) named after them.
        let mut named = ChannelMask::EMPTY;
        if file.targets.auto {
            for (mesh, m) in avatar.meshes.iter().enumerate() {
                for (target, name) in m.target_names.iter().enumerate() {
                    if let Some(channel) = channel_for_target(name) {
                        let d = *by_channel[channel.index()].get_or_insert_with(|| {
                            drivers.push(Driver::identity(channel));
                            drivers.len() - 1
                        });
                        slot_driver[mesh][target] = Some(d);
                        named.insert(channel);
                    }
                }
            }
        }
        // One driver per VRM expression, in the same layering: automatic, then explicit.
        let mut expression_driver: Vec<Option<usize>> =
            vec![None; vrm.map_or(0, |v| v.expressions.len())];
        if let Some(vrm) = vrm {
            if file.targets.auto {
                // Custom expressions named after a channel (perfect sync through expressions),
                // unless a morph target of that name already follows the channel.
                let direct = named;
                for (i, e) in vrm.expressions.iter().enumerate() {
                    let channel = match (e.preset, channel_for_target(&e.name)) {
                        (None, Some(channel)) if !direct.contains(channel) => channel,
                        _ => continue,
                    };
                    let d = *by_channel[channel.index()].get_or_insert_with(|| {
                        drivers.push(Driver::identity(channel));
                        drivers.len() - 1
                    });
                    expression_driver[i] = Some(d);
                    named.insert(channel);
                }
            }
            if file.targets.expressions {
                let eye_bones = bones.left_eye.is_some() || bones.right_eye.is_some();
                for preset in Preset::ALL {
                    let Some(i) = vrm.preset(preset) else {
                        continue;
                    };
                    if expression_driver[i].is_some()
                        || (eye_bones && preset.procedural() == Some(Procedural::LookAt))
                    {
                        continue;
                    }
                    let Some(driver) = fallback(preset) else {
                        continue;
                    };
                    if driver.sources.iter().any(|&(c, _)| named.contains(c)) {
                        continue;
                    }
                    drivers.push(driver);
                    expression_driver[i] = Some(drivers.len() - 1);
                }
            }
        }
        for (name, entry) in &file.map.0 {
            let driver = match entry {
                TargetEntry::Short(channel) => Driver {
                    clamp: Some((0.0, 1.0)),
                    ..Driver::identity(*channel)
                },
                TargetEntry::Full(full) => Driver {
                    sources: full.sources.0.clone(),
                    combine: full.combine,
                    gain: full.gain.0,
                    offset: full.offset.0,
                    curve: Curve::from_spec(&full.curve),
                    clamp: Some((full.clamp.0, full.clamp.1)),
                },
            };
            if let Some(expression) = expression_name(name.get_ref()) {
                match vrm.and_then(|v| v.expression(expression)) {
                    Some(i) => {
                        drivers.push(driver);
                        expression_driver[i] = Some(drivers.len() - 1);
                    }
                    None => errors.push((
                        name.span().start,
                        unknown_expression(file, avatar, name, "[map]: "),
                    )),
                }
                continue;
            }
            let slots = find_targets(avatar, name.get_ref());
            if slots.is_empty() {
                errors.push(unknown_target(name, "[map]: "));
                continue;
            }
            drivers.push(driver);
            for (mesh, target) in slots {
                slot_driver[mesh][target] = Some(drivers.len() - 1);
            }
        }
        let targets: Vec<TargetBinding> = slot_driver
            .iter()
            .enumerate()
            .flat_map(|(mesh, ts)| {
                ts.iter().enumerate().filter_map(move |(target, d)| {
                    d.map(|driver| TargetBinding {
                        mesh,
                        target,
                        driver,
                    })
                })
            })
            .collect();

        let mut groups = Vec::new();
        for (name, spec) in &file.groups.0 {
            let mut members = Vec::new();
            for t in &spec.targets {
                let slots = find_targets(avatar, t.get_ref());
                if !slots.is_empty() {
                    members.push(slots);
                } else if expression_name(t.get_ref()).is_some() {
                    errors.push((
                        t.span().start,
                        file.error_at(
                            t.span(),
                            format!(
                                "group `{}`: `{}` is an expression; groups take morph targets",
                                name.get_ref(),
                                t.get_ref()
                            ),
                            Some("list the morph targets the expressions move instead".into()),
                        ),
                    ));
                } else {
                    errors.push(unknown_target(t, &format!("group `{}`: ", name.get_ref())));
                }
            }
            groups.push(Group {
                name: name.get_ref().clone(),
                members,
                mode: spec.mode,
                sharpness: spec.sharpness.0,
            });
        }

        let mut expressions = Vec::new();
        let mut expression_slots = Vec::new();
        for (i, driver) in expression_driver.iter().enumerate() {
            let (Some(driver), Some(e)) = (*driver, vrm.and_then(|v| v.expressions.get(i))) else {
                continue;
            };
            // The loader checked every bind; an avatar built by hand is checked here.
            let binds: Vec<MorphBind> = e
                .binds
                .iter()
                .copied()
                .filter(|b| {
                    b.weight.is_finite()
                        && avatar
                            .meshes
                            .get(b.mesh)
                            .is_some_and(|m| b.target < m.target_count())
                })
                .collect();
            expression_slots.extend(binds.iter().map(|b| (b.mesh, b.target)));
            expressions.push(ExpressionBinding {
                expression: i,
                driver,
                binds,
                is_binary: e.is_binary,
                procedural: e.preset.and_then(Preset::procedural),
                overrides: e.overrides,
            });
        }
        expression_slots.sort_unstable();
        expression_slots.dedup();

        let frames = if vrm.is_some() {
            let world = avatar.world_transforms(&avatar.rest_pose());
            let frame = |node: Option<usize>| {
                node.and_then(|n| world.get(n))
                    .map(|m| m.to_scale_rotation_translation().1.normalize())
                    .filter(|q| q.is_finite())
                    .unwrap_or(Quat::IDENTITY)
            };
            BoneFrames {
                head: frame(bones.head),
                neck: frame(bones.neck),
                left_eye: frame(bones.left_eye),
                right_eye: frame(bones.right_eye),
                jaw: frame(bones.jaw),
            }
        } else {
            BoneFrames::default()
        };
        let jaw = bones.jaw.map(|n| JawDriver {
            node: n,
            channel: file.jaw.channel.0,
            radians: file.jaw.degrees.0.to_radians(),
            axis: file.jaw.axis.vector(),
        });

        if !errors.is_empty() {
            errors.sort_by_key(|(at, _)| *at);
            return Err(errors.into_iter().map(|(_, e)| e).collect());
        }
        Ok(CompiledMapping {
            targets,
            drivers,
            groups,
            head: bones.head,
            head_driver: BoneDriver::from_section(&file.head),
            neck: bones.neck,
            neck_driver: BoneDriver::from_section(&file.neck),
            left_eye: bones.left_eye,
            right_eye: bones.right_eye,
            eye_look: EyeLook {
                horizontal: file.eyes.horizontal_degrees.to_radians(),
                up: file.eyes.up_degrees.to_radians(),
                down: file.eyes.down_degrees.to_radians(),
            },
            jaw,
            expressions,
            expression_slots,
            frames,
        })
    }

    /// Channels that drive at least one target or node.
    pub fn driven_channels(&self) -> impl Iterator<Item = Channel> + '_ {
        self.driven_mask().iter()
    }

    /// The set of channels that drive at least one target or node.
    pub fn driven_mask(&self) -> ChannelMask {
        let mut mask = ChannelMask::EMPTY;
        for b in &self.targets {
            if let Some(d) = self.drivers.get(b.driver) {
                for &(c, _) in &d.sources {
                    mask.insert(c);
                }
            }
        }
        for e in &self.expressions {
            if let Some(d) = self.drivers.get(e.driver) {
                for &(c, _) in &d.sources {
                    mask.insert(c);
                }
            }
        }
        if let Some(j) = &self.jaw {
            mask.insert(j.channel);
        }
        if self.left_eye.is_some() {
            use Channel::*;
            for c in [
                EyeLookUpLeft,
                EyeLookDownLeft,
                EyeLookInLeft,
                EyeLookOutLeft,
            ] {
                mask.insert(c);
            }
        }
        if self.right_eye.is_some() {
            use Channel::*;
            for c in [
                EyeLookUpRight,
                EyeLookDownRight,
                EyeLookInRight,
                EyeLookOutRight,
            ] {
                mask.insert(c);
            }
        }
        mask
    }

    /// Writes the weights and rotations `frame` asks for into `pose` (which starts from the
    /// avatar's rest pose). Targets whose sources the frame lacks entirely stay at rest.
    /// Allocates nothing; every weight written is finite.
    pub fn apply(&self, frame: &FaceFrame, pose: &mut Pose) {
        for b in &self.targets {
            let Some(d) = self.drivers.get(b.driver) else {
                continue;
            };
            if let Some(w) = d.eval(frame) {
                if let Some(slot) = pose
                    .weights
                    .get_mut(b.mesh)
                    .and_then(|m| m.get_mut(b.target))
                {
                    *slot = w;
                }
            }
        }
        self.apply_expressions(frame, &mut pose.weights);
        for g in &self.groups {
            g.apply(&mut pose.weights);
        }
        let mut set = |node: Option<usize>, q: Option<Quat>| {
            if let (Some(n), Some(q)) = (node, q) {
                if let Some(slot) = pose.rotations.get_mut(n) {
                    if q.is_finite() {
                        *slot = q;
                    }
                }
            }
        };
        let f = &self.frames;
        set(
            self.head,
            frame
                .head
                .and_then(|q| self.head_driver.rotation(q))
                .map(|q| in_frame(f.head, q)),
        );
        set(
            self.neck,
            frame
                .head
                .and_then(|q| self.neck_driver.rotation(q))
                .map(|q| in_frame(f.neck, q)),
        );
        set(
            self.left_eye,
            frame
                .left_eye
                .or_else(|| eye_from_look(frame, Side::Left, &self.eye_look))
                .map(|q| in_frame(f.left_eye, q)),
        );
        set(
            self.right_eye,
            frame
                .right_eye
                .or_else(|| eye_from_look(frame, Side::Right, &self.eye_look))
                .map(|q| in_frame(f.right_eye, q)),
        );
        if let Some(j) = &self.jaw {
            if let Some(w) = frame.get(j.channel) {
                let q = Quat::from_axis_angle(j.axis, finite(w) * j.radians);
                set(Some(j.node), Some(in_frame(f.jaw, q)));
            }
        }
    }

    /// The weight each driven VRM expression ends at for `frame`, after snapping and the
    /// overrides (see [`CompiledMapping::apply`]), as (index into the avatar's expressions,
    /// weight); expressions whose sources the frame lacks are left out. This allocates: it is
    /// for tools and tests, not the render loop.
    pub fn expression_weights(&self, frame: &FaceFrame) -> Vec<(usize, f32)> {
        let mut out = Vec::new();
        self.resolve_expressions(frame, |e, w| out.push((e.expression, w)));
        out
    }

    /// Adds the driven expressions' binds to `weights`: each target gets the sum of its binds
    /// times their expressions' weights (from [`CompiledMapping::resolve_expressions`]),
    /// clamped to [0, 1]. An expression whose sources the frame lacks adds nothing, and when
    /// none has any, the weights are left as they are.
    fn apply_expressions(&self, frame: &FaceFrame, weights: &mut [Vec<f32>]) {
        if self.expressions.is_empty() {
            return;
        }
        let mut any = false;
        self.resolve_expressions(frame, |e, w| {
            any = true;
            if w == 0.0 {
                return;
            }
            for b in &e.binds {
                if let Some(slot) = weights.get_mut(b.mesh).and_then(|m| m.get_mut(b.target)) {
                    *slot = finite(*slot) + w * b.weight;
                }
            }
        });
        if any {
            for &(mesh, target) in &self.expression_slots {
                if let Some(slot) = weights.get_mut(mesh).and_then(|m| m.get_mut(target)) {
                    *slot = finite(*slot).clamp(0.0, 1.0);
                }
            }
        }
    }

    /// Calls `visit` with each driven expression whose sources `frame` carries and its final
    /// weight, after the VRM rules: binary expressions snap at 0.5; the summed weight of the
    /// expressions overriding blink, look-at or mouth (`block` counts 1 once above 0, `blend`
    /// its weight) scales those expressions by `1 − min(1, sum)` and suppresses binary ones
    /// entirely. An expression does not override its own kind.
    fn resolve_expressions(
        &self,
        frame: &FaceFrame,
        mut visit: impl FnMut(&ExpressionBinding, f32),
    ) {
        // The drivers are evaluated again below rather than stored, so that `apply` needs no
        // scratch space; only expressions that override anything are evaluated twice.
        let mut rate = [0.0f32; 3];
        for e in &self.expressions {
            if e.overrides == [Override::None; 3] {
                continue;
            }
            let Some(w) = e.weight(&self.drivers, frame) else {
                continue;
            };
            for (k, (r, mode)) in rate.iter_mut().zip(e.overrides).enumerate() {
                if e.procedural.is_some_and(|p| p as usize == k) {
                    continue;
                }
                *r += match mode {
                    Override::None => 0.0,
                    Override::Block if w > 0.0 => 1.0,
                    Override::Block => 0.0,
                    Override::Blend => w,
                };
            }
        }
        let keep = rate.map(|r| 1.0 - r.clamp(0.0, 1.0));
        for e in &self.expressions {
            let Some(mut w) = e.weight(&self.drivers, frame) else {
                continue;
            };
            if let Some(p) = e.procedural {
                let k = keep[p as usize];
                w = if e.is_binary && k < 1.0 { 0.0 } else { w * k };
            }
            visit(e, w);
        }
    }
}

/// Which eye.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Left,
    Right,
}

/// An eye rotation from the eyeLook channels. The avatar faces +Z with +X on its left: a left
/// eye looking out turns towards +X (positive yaw about +Y), a right eye looking out towards -X;
/// looking up turns towards +Y (negative angle about +X).
fn eye_from_look(frame: &FaceFrame, side: Side, look: &EyeLook) -> Option<Quat> {
    use Channel::*;
    let (up, down, inward, out) = match side {
        Side::Left => (
            EyeLookUpLeft,
            EyeLookDownLeft,
            EyeLookInLeft,
            EyeLookOutLeft,
        ),
        Side::Right => (
            EyeLookUpRight,
            EyeLookDownRight,
            EyeLookInRight,
            EyeLookOutRight,
        ),
    };
    let get = |c| frame.get(c);
    if [up, down, inward, out].iter().all(|&c| get(c).is_none()) {
        return None;
    }
    let v = |c| finite(get(c).unwrap_or(0.0));
    let outward = v(out) - v(inward);
    let yaw = match side {
        Side::Left => outward,
        Side::Right => -outward,
    } * look.horizontal;
    let pitch = v(down) * look.down - v(up) * look.up;
    Some(Quat::from_rotation_y(yaw) * Quat::from_rotation_x(pitch))
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::arkit::Protocol;
    use crate::avatar::{Mesh, Node};
    use glam::Vec3;
    use std::time::Instant;

    fn node(name: &str, mesh: Option<usize>) -> Node {
        Node {
            name: Some(name.into()),
            parent: None,
            children: vec![],
            translation: Vec3::ZERO,
            rotation: Quat::IDENTITY,
            scale: Vec3::ONE,
            mesh,
            weights: None,
        }
    }

    fn avatar() -> Avatar {
        Avatar {
            nodes: vec![
                node("head", Some(0)),
                node("LeftEye", None),
                node("RightEye", None),
            ],
            roots: vec![0, 1, 2],
            meshes: vec![Mesh {
                name: None,
                target_names: vec![
                    "BlendShape.JawOpen".into(),
                    "eyeBlink_L".into(),
                    "Smile".into(),
                ],
                default_weights: vec![0.0, 0.0, 0.3],
                primitives: vec![],
            }],
            ..Avatar::default()
        }
    }

    #[test]
    fn auto_maps_every_dialect_and_the_nodes() {
        let a = avatar();
        let m = CompiledMapping::auto(&a);
        assert_eq!(m.targets.len(), 2);
        assert_eq!(
            m.drivers[m.targets[0].driver].sources,
            [(Channel::JawOpen, 1.0)]
        );
        assert_eq!(
            m.drivers[m.targets[1].driver].sources,
            [(Channel::EyeBlinkLeft, 1.0)]
        );
        assert_eq!(
            (m.head, m.left_eye, m.right_eye),
            (Some(0), Some(1), Some(2))
        );
    }

    #[test]
    fn apply_sets_weights_and_keeps_unmapped_defaults() {
        let a = avatar();
        let m = CompiledMapping::auto(&a);
        let mut f = FaceFrame::empty(
            Protocol::Vmc,
            "127.0.0.1:1".parse().unwrap(),
            Instant::now(),
        );
        f.set(Channel::JawOpen, 0.8);
        f.head = Some(Quat::from_rotation_y(0.3));
        let mut pose = a.rest_pose();
        m.apply(&f, &mut pose);
        assert_eq!(pose.weights[0], vec![0.8, 0.0, 0.3]);
        assert_eq!(pose.rotations[0], Quat::from_rotation_y(0.3));
        assert_eq!(pose.rotations[1], Quat::IDENTITY);
    }

    #[test]
    fn eye_look_turns_eye_nodes_the_right_way() {
        let a = avatar();
        let m = CompiledMapping::auto(&a);
        let mut f = FaceFrame::empty(
            Protocol::Vmc,
            "127.0.0.1:1".parse().unwrap(),
            Instant::now(),
        );
        f.set(Channel::EyeLookOutLeft, 1.0);
        f.set(Channel::EyeLookInRight, 1.0);
        f.set(Channel::EyeLookUpLeft, 1.0);
        let mut pose = a.rest_pose();
        m.apply(&f, &mut pose);
        let left_gaze = pose.rotations[1] * Vec3::Z;
        let right_gaze = pose.rotations[2] * Vec3::Z;
        assert!(left_gaze.x > 0.2 && left_gaze.y > 0.2, "{left_gaze}");
        assert!(
            right_gaze.x > 0.2 && right_gaze.y.abs() < 1e-6,
            "{right_gaze}"
        );
    }

    #[test]
    fn the_default_head_mapping_binds_every_channel_and_both_eyes() {
        let avatar =
            crate::avatar::load_slice(crate::app::DEFAULT_HEAD_GLB, "default head").unwrap();
        let file = MappingFile::parse(DEFAULT_HEAD_MAPPING, "default_head.toml").unwrap();
        let m = CompiledMapping::compile(&file, &avatar).unwrap();
        let mut bound = crate::arkit::ChannelMask::EMPTY;
        for b in &m.targets {
            for (c, _) in &m.drivers[b.driver].sources {
                bound.insert(*c);
            }
        }
        assert_eq!(bound, crate::arkit::ChannelMask::ALL);
        assert!(m.head.is_some() && m.left_eye.is_some() && m.right_eye.is_some());
        assert_eq!(m, CompiledMapping::auto(&avatar));
    }

    #[test]
    fn a_missing_node_is_located_and_the_nearest_suggested() {
        let a = avatar();
        let text = "version = 1\n[eyes]\nleft = \"LeftEy\"\n";
        let file = MappingFile::parse(text, "m.toml").unwrap();
        let err = CompiledMapping::compile(&file, &a).unwrap_err().to_string();
        assert!(err.starts_with("m.toml:3:8:"), "{err}");
        assert!(err.contains("did you mean `LeftEye`?"), "{err}");
    }

    #[test]
    fn mapping_file_errors_name_line_and_column() {
        let err = MappingFile::parse("version = 1\n[eyes]\nlft = \"x\"\n", "m.toml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("m.toml:3:1:"), "{err}");
        assert!(err.contains("did you mean `left`?"), "{err}");
        let err = MappingFile::parse("version = 7\n", "m.toml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("m.toml:1:11:"), "{err}");
        let err = MappingFile::parse("version = 1\n[eyes]\nup_degrees = 400\n", "m.toml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("m.toml:3:1:"), "{err}");
        assert!(
            MappingFile::parse("[eyes]\n", "m.toml").is_err(),
            "version is required"
        );
    }

    /// A VRM avatar: a turned root (as the loader leaves a VRM 0.x model) with a head child,
    /// one face mesh of four targets and five expressions.
    fn vrm_avatar() -> Avatar {
        use crate::avatar::vrm::{Expression, Vrm, VrmVersion, HALF_TURN};
        let bind = |target, weight| MorphBind {
            mesh: 0,
            target,
            weight,
        };
        let expression = |name: &str, preset, binds, is_binary| Expression {
            name: name.into(),
            preset: Some(preset),
            binds,
            material_binds: vec![],
            is_binary,
            overrides: [Override::None; 3],
        };
        let mut root = node("root", None);
        root.rotation = HALF_TURN;
        root.children = vec![1];
        let mut head = node("J_Head", Some(0));
        head.parent = Some(0);
        head.translation = Vec3::new(0.0, 1.5, 0.0);
        Avatar {
            nodes: vec![root, head],
            roots: vec![0],
            meshes: vec![Mesh {
                name: None,
                target_names: vec!["eyeL".into(), "eyeR".into(), "mouth".into(), "smile".into()],
                default_weights: vec![0.0; 4],
                primitives: vec![],
            }],
            vrm: Some(Vrm {
                version: VrmVersion::V0,
                spec_version: None,
                title: None,
                author: None,
                expressions: vec![
                    expression(
                        "Blink",
                        Preset::Blink,
                        vec![bind(0, 1.0), bind(1, 1.0)],
                        false,
                    ),
                    expression("Blink_L", Preset::BlinkLeft, vec![bind(0, 1.0)], true),
                    expression("Blink_R", Preset::BlinkRight, vec![bind(1, 1.0)], true),
                    expression(
                        "Joy",
                        Preset::Happy,
                        vec![bind(2, 0.6), bind(3, 0.5)],
                        false,
                    ),
                    expression("A", Preset::Aa, vec![bind(2, 0.8)], false),
                ],
                humanoid: vec![("head".into(), 1)],
                skipped: 0,
            }),
            ..Avatar::default()
        }
    }

    fn frame(values: &[(Channel, f32)]) -> FaceFrame {
        let mut f = FaceFrame::empty(
            Protocol::Vmc,
            "127.0.0.1:1".parse().unwrap(),
            Instant::now(),
        );
        for &(c, v) in values {
            f.set(c, v);
        }
        f
    }

    fn weights(m: &CompiledMapping, a: &Avatar, values: &[(Channel, f32)]) -> Vec<f32> {
        let mut pose = a.rest_pose();
        m.apply(&frame(values), &mut pose);
        pose.weights[0].clone()
    }

    #[test]
    fn the_fallback_splits_blinks_and_sums_binds_clamped() {
        use Channel::*;
        let a = vrm_avatar();
        let m = CompiledMapping::auto(&a);
        assert_eq!(m.head, Some(1), "the humanoid head");
        assert_eq!(m.expressions.len(), 5);
        assert_eq!(m.expression_slots, [(0, 0), (0, 1), (0, 2), (0, 3)]);
        let both = weights(&m, &a, &[(EyeBlinkLeft, 1.0), (EyeBlinkRight, 1.0)]);
        assert_eq!(both, [1.0, 1.0, 0.0, 0.0]);
        let half = weights(&m, &a, &[(EyeBlinkLeft, 0.4), (EyeBlinkRight, 0.4)]);
        assert_eq!(half, [0.4, 0.4, 0.0, 0.0]);
        // Left alone: blink = 0, blinkLeft = 1 (binary), blinkRight = 0.
        let left = weights(&m, &a, &[(EyeBlinkLeft, 1.0), (EyeBlinkRight, 0.0)]);
        assert_eq!(left, [1.0, 0.0, 0.0, 0.0]);
        // Binary: 0.3 more on the left snaps to nothing.
        let uneven = weights(&m, &a, &[(EyeBlinkLeft, 0.8), (EyeBlinkRight, 0.5)]);
        assert_eq!(uneven, [0.5, 0.5, 0.0, 0.0]);
        // aa (0.8 on `mouth`) plus happy (0.6 on `mouth`) sums to 1.4 and clamps.
        let w = weights(
            &m,
            &a,
            &[
                (JawOpen, 1.0),
                (MouthSmileLeft, 1.0),
                (MouthSmileRight, 1.0),
            ],
        );
        assert_eq!(w, [0.0, 0.0, 1.0, 0.5]);
        // A frame without any source leaves the rest weights.
        assert_eq!(weights(&m, &a, &[(TongueOut, 1.0)]), [0.0; 4]);
    }

    #[test]
    fn overrides_block_or_blend_blinks() {
        use Channel::*;
        let mut a = vrm_avatar();
        let closed = [
            (EyeBlinkLeft, 1.0),
            (EyeBlinkRight, 1.0),
            (MouthSmileLeft, 0.5),
            (MouthSmileRight, 0.5),
        ];
        let vrm = a.vrm.as_mut().unwrap();
        vrm.expressions[3].overrides[Procedural::Blink as usize] = Override::Block;
        let m = CompiledMapping::auto(&a);
        assert_eq!(weights(&m, &a, &closed), [0.0, 0.0, 0.3, 0.25]);
        let vrm = a.vrm.as_mut().unwrap();
        vrm.expressions[3].overrides[Procedural::Blink as usize] = Override::Blend;
        let m = CompiledMapping::auto(&a);
        assert_eq!(weights(&m, &a, &closed), [0.5, 0.5, 0.3, 0.25]);
        // A binary blink is suppressed entirely by any blend.
        let vrm = a.vrm.as_mut().unwrap();
        vrm.expressions[0].is_binary = true;
        let m = CompiledMapping::auto(&a);
        assert_eq!(weights(&m, &a, &closed), [0.0, 0.0, 0.3, 0.25]);
        let weights = m.expression_weights(&frame(&closed));
        assert!(
            weights.contains(&(0, 0.0)) && weights.contains(&(3, 0.5)),
            "{weights:?}"
        );
    }

    #[test]
    fn head_turns_in_avatar_space_on_a_turned_vrm() {
        let a = vrm_avatar();
        let m = CompiledMapping::auto(&a);
        let rest = a.world_transforms(&a.rest_pose());
        for q in [
            Quat::from_rotation_x(0.4),
            Quat::from_rotation_y(0.5),
            Quat::from_rotation_z(-0.3),
            Quat::from_euler(EulerRot::YXZ, 0.3, -0.2, 0.1),
        ] {
            let mut f = frame(&[]);
            f.head = Some(q);
            let mut pose = a.rest_pose();
            m.apply(&f, &mut pose);
            let world = a.world_transforms(&pose);
            // The head's change of orientation, seen in avatar space, is the stream's rotation.
            let delta = world[1].to_scale_rotation_translation().1
                * rest[1].to_scale_rotation_translation().1.inverse();
            assert!(
                delta.abs_diff_eq(q, 1e-5) || delta.abs_diff_eq(-q, 1e-5),
                "{q} {delta}"
            );
        }
    }

    #[test]
    fn vrm_names_in_a_file_and_their_mistakes() {
        let a = vrm_avatar();
        let text = "version = 1\n[map.\"vrm:happy\"]\nsources = \"browInnerUp\"\n[head]\nnode = \"HEAD\"\n";
        let m = CompiledMapping::compile(&MappingFile::parse(text, "m.toml").unwrap(), &a).unwrap();
        let happy = m.expressions.iter().find(|e| e.expression == 3).unwrap();
        assert_eq!(
            m.drivers[happy.driver].sources,
            [(Channel::BrowInnerUp, 1.0)]
        );
        assert_eq!(m.head, Some(1));
        let err = |text: &str| {
            CompiledMapping::compile(&MappingFile::parse(text, "m.toml").unwrap(), &a)
                .unwrap_err()
                .to_string()
        };
        let e = err("version = 1\n[map]\n\"vrm:hapy\" = \"jawOpen\"\n");
        assert!(e.starts_with("m.toml:3:1:"), "{e}");
        assert!(e.contains("did you mean `vrm:happy`?"), "{e}");
        let e = err("version = 1\n[groups.g]\ntargets = [\"vrm:Joy\"]\n");
        assert!(e.contains("groups take morph targets"), "{e}");
        let e = err("version = 1\n[neck]\nnode = \"hed\"\n");
        assert!(e.contains("did you mean `head`?"), "{e}");
        let e = err("version = 1\n[jaw]\nnode = \"jaw\"\n");
        assert!(e.contains("no node or humanoid bone named `jaw`"), "{e}");
        let plain = avatar();
        let e = CompiledMapping::compile(
            &MappingFile::parse("version = 1\n[map]\n\"vrm:aa\" = \"jawOpen\"\n", "m.toml")
                .unwrap(),
            &plain,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("not a VRM avatar"), "{e}");
    }

    #[test]
    fn perfect_sync_shapes_skip_the_fallback() {
        use Channel::*;
        let mut a = vrm_avatar();
        a.meshes[0].target_names[3] = "mouthSmileLeft".into();
        let m = CompiledMapping::auto(&a);
        // happy's sources include mouthSmileLeft, which now drives its own shape.
        assert!(m.expressions.iter().all(|e| e.expression != 3));
        assert!(m.expressions.iter().any(|e| e.expression == 4));
        let text = "version = 1\n[targets]\nexpressions = false\n";
        let m = CompiledMapping::compile(&MappingFile::parse(text, "m.toml").unwrap(), &a).unwrap();
        assert!(m.expressions.is_empty());
        assert_eq!(
            weights(&m, &a, &[(MouthSmileLeft, 0.7)]),
            [0.0, 0.0, 0.0, 0.7]
        );
    }

    #[test]
    fn empty_node_names_turn_nothing() {
        let a = avatar();
        let text = "version = 1\n[head]\nnode = \"\"\n[targets]\nauto = false\n";
        let m = CompiledMapping::compile(&MappingFile::parse(text, "m.toml").unwrap(), &a).unwrap();
        assert_eq!(m.head, None);
        assert!(m.targets.is_empty());
        assert_eq!(m.left_eye, Some(1));
    }
}

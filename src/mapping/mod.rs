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
//! Per frame, [`CompiledMapping::apply`] evaluates the target drivers, then the groups, then
//! the bones; it allocates nothing and never produces a non-finite weight.

pub mod check;
pub mod curve;
pub mod file;

use glam::{EulerRot, Quat, Vec3};
use toml::Spanned;

pub use check::{check, check_text, CheckReport, Finding, Severity};
pub use curve::Curve;
pub use file::{MappingError, MappingFile};

use crate::arkit::{Channel, ChannelMask, FaceFrame};
use crate::avatar::{Avatar, Pose};
use file::{BoneSection, Combine, GroupMode, TargetEntry};

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

impl CompiledMapping {
    /// The automatic mapping of `avatar`: every ARKit-named target, and the conventionally
    /// named head and eye nodes where the avatar has them.
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
        let mut unknown_target = |name: &Spanned<String>, what: &str| {
            let n = name.get_ref();
            let message = match crate::config::nearest(n, target_names(avatar)) {
                Some(best) => format!("{what}unknown target `{n}`; did you mean `{best}`?"),
                None => format!(
                    "{what}unknown target `{n}`: the model has no morph target of that name"
                ),
            };
            errors.push((
                name.span().start,
                file.error_at(
                    name.span(),
                    message,
                    Some("target names are the model's morph target names (`facewire sheet` lists them)".into()),
                ),
            ));
        };

        // One slot per morph target: the driver index, automatic first, explicit on top.
        let mut slot_driver: Vec<Vec<Option<usize>>> = avatar
            .meshes
            .iter()
            .map(|m| vec![None; m.target_count()])
            .collect();
        let mut drivers: Vec<Driver> = Vec::new();
        if file.targets.auto {
            let mut by_channel: [Option<usize>; crate::arkit::COUNT] = [None; crate::arkit::COUNT];
            for (mesh, m) in avatar.meshes.iter().enumerate() {
                for (target, name) in m.target_names.iter().enumerate() {
                    if let Some(channel) = channel_for_target(name) {
                        let d = *by_channel[channel.index()].get_or_insert_with(|| {
                            drivers.push(Driver::identity(channel));
                            drivers.len() - 1
                        });
                        slot_driver[mesh][target] = Some(d);
                    }
                }
            }
        }
        for (name, entry) in &file.map.0 {
            let slots = find_targets(avatar, name.get_ref());
            if slots.is_empty() {
                unknown_target(name, "[map]: ");
                continue;
            }
            drivers.push(match entry {
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
            });
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
                if slots.is_empty() {
                    unknown_target(t, &format!("group `{}`: ", name.get_ref()));
                } else {
                    members.push(slots);
                }
            }
            groups.push(Group {
                name: name.get_ref().clone(),
                members,
                mode: spec.mode,
                sharpness: spec.sharpness.0,
            });
        }

        let mut node = |written: &Option<Spanned<String>>, conventional: &str, key: &str| {
            let Some(spanned) = written else {
                return if conventional.is_empty() {
                    None
                } else {
                    avatar.find_node(conventional)
                };
            };
            let name = spanned.get_ref();
            if name.is_empty() {
                return None;
            }
            let found = avatar.find_node(name);
            if found.is_none() {
                let names = avatar.nodes.iter().filter_map(|n| n.name.as_deref());
                let (message, hint) = match crate::config::nearest(name, names) {
                    Some(best) => (
                        format!("{key}: unknown node `{name}`; did you mean `{best}`?"),
                        None,
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
        let head = node(&file.head.node, "Head", "head.node");
        let neck = node(&file.neck.node, "", "neck.node");
        let left_eye = node(&file.eyes.left, "LeftEye", "eyes.left");
        let right_eye = node(&file.eyes.right, "RightEye", "eyes.right");
        let jaw = node(&file.jaw.node, "", "jaw.node").map(|n| JawDriver {
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
            head,
            head_driver: BoneDriver::from_section(&file.head),
            neck,
            neck_driver: BoneDriver::from_section(&file.neck),
            left_eye,
            right_eye,
            eye_look: EyeLook {
                horizontal: file.eyes.horizontal_degrees.to_radians(),
                up: file.eyes.up_degrees.to_radians(),
                down: file.eyes.down_degrees.to_radians(),
            },
            jaw,
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
        set(
            self.head,
            frame.head.and_then(|q| self.head_driver.rotation(q)),
        );
        set(
            self.neck,
            frame.head.and_then(|q| self.neck_driver.rotation(q)),
        );
        set(
            self.left_eye,
            frame
                .left_eye
                .or_else(|| eye_from_look(frame, Side::Left, &self.eye_look)),
        );
        set(
            self.right_eye,
            frame
                .right_eye
                .or_else(|| eye_from_look(frame, Side::Right, &self.eye_look)),
        );
        if let Some(j) = &self.jaw {
            if let Some(w) = frame.get(j.channel) {
                set(
                    Some(j.node),
                    Some(Quat::from_axis_angle(j.axis, finite(w) * j.radians)),
                );
            }
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

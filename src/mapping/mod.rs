//! ARKit channels → avatar target weights and node rotations, compiled against a loaded avatar
//! into index tables so the render loop never looks a name up.
//!
//! A mapping file (see [`file`]) says which targets follow which channels and which nodes turn
//! with the head and eyes. Without one, the automatic mapping applies: every morph target whose
//! name is an ARKit channel in any dialect (optionally behind a `Prefix.` such as `BlendShape.`)
//! follows that channel; nodes named `Head`, `LeftEye` and `RightEye` follow the stream's head
//! and eye rotations, and eye nodes follow the `eyeLook*` channels when the stream carries no eye
//! rotation.

pub mod file;

use glam::Quat;

pub use file::{MappingError, MappingFile};

use crate::arkit::{Channel, FaceFrame};
use crate::avatar::{Avatar, Pose};

/// The mapping of the built-in default head, `config/mappings/default_head.toml`.
pub const DEFAULT_HEAD_MAPPING: &str = include_str!("../../config/mappings/default_head.toml");

/// One morph target driven by one channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetBinding {
    /// Mesh index in the avatar.
    pub mesh: usize,
    /// Target index in that mesh.
    pub target: usize,
    /// The driving channel.
    pub channel: Channel,
}

/// A mapping compiled against one avatar.
#[derive(Debug, Clone, PartialEq)]
pub struct CompiledMapping {
    /// Every driven target.
    pub targets: Vec<TargetBinding>,
    /// The node that takes the head rotation.
    pub head: Option<usize>,
    /// The node that takes the left eye rotation.
    pub left_eye: Option<usize>,
    /// The node that takes the right eye rotation.
    pub right_eye: Option<usize>,
    /// Eye turn at weight 1 of eyeLookIn/Out, eyeLookUp and eyeLookDown, in radians.
    pub eye_look: EyeLook,
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

impl CompiledMapping {
    /// The automatic mapping of `avatar`: every ARKit-named target, and the conventionally
    /// named head and eye nodes where the avatar has them.
    pub fn auto(avatar: &Avatar) -> CompiledMapping {
        Self::build(&MappingFile::default(), avatar, false)
            .expect("the automatic mapping never names a missing node")
    }

    /// Compiles `file` against `avatar`: every node it names must exist.
    pub fn compile(file: &MappingFile, avatar: &Avatar) -> Result<CompiledMapping, MappingError> {
        Self::build(file, avatar, true)
    }

    fn build(
        file: &MappingFile,
        avatar: &Avatar,
        strict: bool,
    ) -> Result<CompiledMapping, MappingError> {
        let mut targets = Vec::new();
        if file.targets.auto {
            for (mesh, m) in avatar.meshes.iter().enumerate() {
                for (target, name) in m.target_names.iter().enumerate() {
                    if let Some(channel) = channel_for_target(name) {
                        targets.push(TargetBinding {
                            mesh,
                            target,
                            channel,
                        });
                    }
                }
            }
        }
        let node = |spanned: &toml::Spanned<String>, key: &str| {
            let name = spanned.get_ref();
            if name.is_empty() {
                return Ok(None);
            }
            match avatar.find_node(name) {
                Some(index) => Ok(Some(index)),
                None if !strict => Ok(None),
                None => {
                    let names = avatar.nodes.iter().filter_map(|n| n.name.as_deref());
                    let hint = match crate::config::nearest(name, names) {
                        Some(best) => format!("did you mean `{best}`?"),
                        None => format!("set {key} = \"\" if the avatar has no such node"),
                    };
                    Err(file.error_at(
                        spanned.span(),
                        format!("{key}: the model has no node named `{name}`"),
                        Some(hint),
                    ))
                }
            }
        };
        Ok(CompiledMapping {
            targets,
            head: node(&file.head.node, "head.node")?,
            left_eye: node(&file.eyes.left, "eyes.left")?,
            right_eye: node(&file.eyes.right, "eyes.right")?,
            eye_look: EyeLook {
                horizontal: file.eyes.horizontal_degrees.to_radians(),
                up: file.eyes.up_degrees.to_radians(),
                down: file.eyes.down_degrees.to_radians(),
            },
        })
    }

    /// Channels that drive at least one target or node.
    pub fn driven_channels(&self) -> impl Iterator<Item = Channel> + '_ {
        self.targets.iter().map(|b| b.channel)
    }

    /// Writes the weights and rotations `frame` asks for into `pose` (which starts from the
    /// avatar's rest pose). Channels the frame lacks leave their targets at rest.
    pub fn apply(&self, frame: &FaceFrame, pose: &mut Pose) {
        for b in &self.targets {
            if let Some(w) = frame.get(b.channel) {
                if let Some(slot) = pose
                    .weights
                    .get_mut(b.mesh)
                    .and_then(|m| m.get_mut(b.target))
                {
                    *slot = w;
                }
            }
        }
        let mut set = |node: Option<usize>, q: Option<Quat>| {
            if let (Some(n), Some(q)) = (node, q) {
                if let Some(slot) = pose.rotations.get_mut(n) {
                    *slot = q;
                }
            }
        };
        set(self.head, frame.head);
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
    let v = |c| get(c).unwrap_or(0.0);
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
        assert_eq!(m.targets[0].channel, Channel::JawOpen);
        assert_eq!(m.targets[1].channel, Channel::EyeBlinkLeft);
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
            bound.insert(b.channel);
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

//! ARKit channels (and lip sync's visemes) → avatar target weights and node rotations, compiled
//! against a loaded avatar into index tables so the render loop never looks a name up.
//!
//! A mapping file (see [`file`] and `config/mappings/example.toml`) says which targets follow
//! which channels (short form `Target = "channel"` or a full form with several weighted sources,
//! gain, offset, curve and clamp), which targets form groups, and which nodes turn with the
//! head, neck, eyes and jaw. A viseme of lip sync from audio, `viseme:aa`, is a [`Source`]
//! wherever a channel is. Without one, the automatic mapping applies: every morph target
//! whose name is an ARKit channel in any dialect (optionally behind a `Prefix.` such as
//! `BlendShape.`) follows that channel; nodes named `Head`, `LeftEye` and `RightEye` follow the
//! stream's head and eye rotations, and eye nodes follow the `eyeLook*` channels when the
//! stream carries no eye rotation.
//!
//! VRM avatars add two things. Their humanoid bones (`head`, `neck`, `jaw`, `leftEye`,
//! `rightEye`) stand in for node names, and bone rotations are applied in avatar space whatever
//! the bones' rest orientation (see [`BoneFrames`]). Their expressions are targets too: a
//! mapping file drives one with `"vrm:NAME"`, and without one the [`fallback`] table drives the
//! preset expressions from the ARKit channels (the vowels also from their visemes), skipping
//! any preset whose channels already drive shapes named after them (so a perfect-sync avatar
//! maps directly). Expressions become morph weights after the VRM rules: binary expressions
//! snap at 0.5, overrides suppress blink, look-at and mouth expressions, and the binds are
//! summed per target and clamped to [0, 1]. Their material binds move the pose's per-material colours and texture offsets (see
//! [`crate::avatar::material_binds`]).
//!
//! A mapping file may also define face-shape sliders (see [`sliders`]): static controls that a
//! look preset sets, driving look targets through curves and moving nodes;
//! [`CompiledSliders::apply`] writes them into a pose after the frame's own values.
//!
//! Per frame, [`CompiledMapping::apply`] evaluates the target drivers, then the expressions,
//! then the groups, then the bones; it allocates nothing and never produces a non-finite
//! weight.

pub mod check;
pub mod curve;
pub mod file;
pub mod sliders;

mod auto;
mod compile;
mod driver;
mod eval;
mod layers;
mod materials;
mod pose_section;
mod recover;
mod source;
pub mod wrinkles;

pub use auto::{channel_for_target, fallback};
pub use check::{check, check_text, CheckReport, Finding, Severity};
pub use compile::{expression_name, find_targets};
pub use curve::Curve;
pub use driver::{
    BoneDriver, BoneFrames, Driver, ExpressionBinding, Group, JawDriver, TargetBinding,
};
pub use file::{MappingError, MappingFile};
pub use layers::{LayerTargetError, LayerTargets};
pub use pose_section::{ArmsMode, PoseConfig};
pub use sliders::{CompiledSliders, Influence, NodeOffset, Slider, SliderRange, SliderValues};
pub use source::Source;

/// The prefix that makes a `[map]` key name a VRM expression instead of a morph target.
pub const EXPRESSION_PREFIX: &str = "vrm:";

/// The prefix that makes a source name a viseme of lip sync (`viseme:aa`) instead of a channel.
pub const VISEME_PREFIX: &str = "viseme:";

/// The prefix that makes a source name a parameter a plugin created through the stream-tool
/// API (`param:HeartRate`).
pub const PARAM_PREFIX: &str = "param:";

/// The mapping of the built-in default head, `config/mappings/default_head.toml`.
pub const DEFAULT_HEAD_MAPPING: &str = include_str!("../../config/mappings/default_head.toml");

fn finite(v: f32) -> f32 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
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
    /// Wrinkle maps, in file order (at most [`crate::avatar::MAX_WRINKLE_MAPS`]).
    pub wrinkles: Vec<wrinkles::CompiledWrinkle>,
    /// The face-shape sliders (`[sliders.NAME]`), in file order.
    pub sliders: CompiledSliders,
}

impl CompiledMapping {
    /// The face-shape sliders; [`CompiledSliders::apply`] sets their targets and nodes after
    /// [`CompiledMapping::apply`].
    pub fn sliders(&self) -> &CompiledSliders {
        &self.sliders
    }
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
    /// The avatar's own range maps (VRM look-at by bone): the angles above are then the gaze,
    /// which the maps turn into each eye's turn.
    pub ranges: Option<crate::avatar::lookat::LookAt>,
}

#[cfg(test)]
mod fixtures;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_head_mapping_binds_every_channel_and_both_eyes() {
        let avatar =
            crate::avatar::load_slice(crate::headgen::DEFAULT_HEAD_GLB, "default head").unwrap();
        let file = MappingFile::parse(DEFAULT_HEAD_MAPPING, "default_head.toml").unwrap();
        let m = CompiledMapping::compile(&file, &avatar).unwrap();
        let mut bound = crate::arkit::ChannelMask::EMPTY;
        for b in &m.targets {
            for c in m.drivers[b.driver]
                .sources
                .iter()
                .filter_map(|s| s.0.channel())
            {
                bound.insert(c);
            }
        }
        assert_eq!(bound, crate::arkit::ChannelMask::ALL);
        assert!(m.head.is_some() && m.left_eye.is_some() && m.right_eye.is_some());
        // Apart from its face-shape sliders and wrinkle maps, the file says what the
        // automatic mapping does.
        assert_eq!(m.wrinkles.len(), 4);
        let without_sliders = CompiledMapping {
            sliders: CompiledSliders::default(),
            wrinkles: Vec::new(),
            ..m
        };
        assert_eq!(without_sliders, CompiledMapping::auto(&avatar));
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
}

//! Spring bones: hair, ribbons and skirts that follow the head and settle. [`parse`] reads a
//! model's VRM 0.x `secondaryAnimation` or VRM 1.0 `VRMC_springBone` into a [`SpringRig`];
//! [`SpringSim`] steps it in avatar space with fixed substeps and writes each joint's rotation
//! into a [`Pose`](super::Pose).
//!
//! Every position, offset and direction here is in avatar space (for VRM 0.x after the half
//! turn that makes the model face +Z), so the simulation needs no knowledge of file versions.

mod parse;
mod sim;

pub use parse::parse;
pub use sim::{SpringSim, MAX_SUBSTEPS, RESET_DISTANCE, RESET_GAP, SUBSTEP};

use glam::Vec3;

/// Every spring of a model, with the colliders its springs avoid.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpringRig {
    /// The springs: chains (or trees, for VRM 0.x) of joints sharing colliders and a centre.
    pub springs: Vec<Spring>,
    /// Every usable collider, in file order (VRM 0.x: group by group). An invalid one (a node
    /// the file lacks, no shape, a bad radius or offset) is dropped and listed in
    /// [`SpringRig::skipped`], so every collider here names a node of the file.
    pub colliders: Vec<Collider>,
    /// Collider groups: indices into [`SpringRig::colliders`] (VRM 1.0 groups keep the file's
    /// order; members naming dropped colliders are left out).
    pub collider_groups: Vec<Vec<usize>>,
    /// What was skipped while reading the file, and why.
    pub skipped: Vec<SpringIssue>,
}

impl SpringRig {
    /// Number of simulated joints over all springs.
    pub fn joint_count(&self) -> usize {
        self.springs.iter().map(|s| s.joints.len()).sum()
    }
}

/// One spring: joints that share collider groups and a centre.
#[derive(Debug, Clone, PartialEq)]
pub struct Spring {
    /// The spring's name (VRM 1.0 `name`, VRM 0.x `comment`), if any.
    pub name: Option<String>,
    /// The simulated joints, each after its ancestors among them.
    pub joints: Vec<Joint>,
    /// Indices into [`SpringRig::collider_groups`].
    pub collider_groups: Vec<usize>,
    /// The node whose space the joints' inertia lives in (a moving centre carries the spring
    /// along without swinging it); `None`: avatar space.
    pub center: Option<usize>,
}

/// One simulated bone: a node whose rotation the spring drives, pointing at its tail.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Joint {
    /// The node the spring rotates.
    pub node: usize,
    /// Where the bone's tail is in the node's own space at rest: its child's translation, or
    /// for a leaf 7 cm along the node's own translation (as VRM 0.x defines it).
    pub tail: Vec3,
    /// How it moves.
    pub settings: JointSettings,
}

/// How one joint moves; the numbers mean what they mean in VRM (tuned for 60 steps a second).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JointSettings {
    /// How strongly the bone returns to its rest direction.
    pub stiffness: f32,
    /// How much of its velocity the bone loses each 1/60 s, from 0 to 1.
    pub drag: f32,
    /// Strength of the constant pull along [`JointSettings::gravity_dir`].
    pub gravity_power: f32,
    /// Direction of that pull in avatar space (unit length, or zero for none).
    pub gravity_dir: Vec3,
    /// Radius of the bone's tail as colliders see it, in metres.
    pub hit_radius: f32,
}

impl Default for JointSettings {
    /// The VRM defaults.
    fn default() -> Self {
        JointSettings {
            stiffness: 1.0,
            drag: 0.4,
            gravity_power: 0.0,
            gravity_dir: Vec3::NEG_Y,
            hit_radius: 0.0,
        }
    }
}

/// A shape that joints' tails stay out of, attached to a node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Collider {
    /// The node it moves with; its offsets are in that node's space.
    pub node: usize,
    /// Its shape.
    pub shape: ColliderShape,
}

/// A collider's shape, in its node's space.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ColliderShape {
    /// A ball.
    Sphere {
        /// Centre, in the node's space.
        offset: Vec3,
        /// Radius, in metres.
        radius: f32,
    },
    /// A segment with a radius.
    Capsule {
        /// One end, in the node's space.
        offset: Vec3,
        /// The other end, in the node's space.
        tail: Vec3,
        /// Radius, in metres.
        radius: f32,
    },
}

/// Something in a model's spring data that was skipped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpringIssue {
    /// A node index that the file does not have.
    #[error("{what} names node {index}, which the file does not have")]
    NoSuchNode {
        /// What named it.
        what: String,
        /// The index.
        index: usize,
    },
    /// A collider or collider group index that the file does not have.
    #[error("{what} names {kind} {index}, which the file does not have")]
    NoSuchCollider {
        /// What named it.
        what: String,
        /// `collider` or `collider group`.
        kind: &'static str,
        /// The index.
        index: usize,
    },
    /// A value of the wrong type or out of range.
    #[error("{what} is not valid")]
    Invalid {
        /// Which value.
        what: String,
    },
    /// A collider with neither a sphere nor a capsule.
    #[error("collider {index} has no sphere or capsule shape")]
    NoShape {
        /// The collider's index.
        index: usize,
    },
    /// A joint that another spring already drives.
    #[error("node {node} is a joint of more than one spring; the first one drives it")]
    DrivenTwice {
        /// The node.
        node: usize,
    },
}

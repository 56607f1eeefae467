//! Stepping a [`SpringRig`]: Verlet integration of each joint's tail in fixed substeps, the tail
//! kept at its bone's length and out of the colliders, and the bone turned from its rest
//! direction to the tail.
//!
//! The VRM numbers are tuned for one step per 1/60 s; each substep scales them so that a joint
//! loses the same share of its velocity and gains the same push per second whatever the substep,
//! and the substep is fixed, so the motion does not depend on the frame rate.

use std::ops::Range;
use std::time::Duration;

use glam::{Mat4, Quat, Vec3};

use super::{ColliderShape, JointSettings, SpringRig};
use crate::avatar::{Avatar, Pose};

/// The fixed substep, in seconds.
pub const SUBSTEP: f32 = 1.0 / 120.0;

/// The most substeps one [`SpringSim::step`] runs; time beyond them is dropped, so a slow frame
/// cannot make the next one slower.
pub const MAX_SUBSTEPS: u32 = 12;

/// A step longer than this (seconds) is a stall: the joints start again from rest.
pub const RESET_GAP: f32 = 0.5;

/// A spring root that moves further than this (metres, in its centre's space) in one step has
/// teleported: the joints start again from rest instead of whipping.
pub const RESET_DISTANCE: f32 = 0.5;

/// The step the VRM numbers are tuned for, in seconds.
const VRM_STEP: f32 = 1.0 / 60.0;

/// How many times a tail is pushed out of one collider and put back at its bone's length.
const COLLISION_ROUNDS: usize = 4;

/// A tail moving less than this per substep (metres) is at rest.
const SETTLED: f32 = 1e-5;

/// The running state of a model's springs. Create it once per avatar and call
/// [`SpringSim::step`] each frame after the pose's other rotations are set.
#[derive(Debug, Clone)]
pub struct SpringSim {
    /// Every node reachable from the roots, parents first, with its parent.
    order: Vec<(usize, Option<usize>)>,
    /// The joints, parents first.
    joints: Vec<SimJoint>,
    /// Nodes between a joint and its nearest joint ancestor, parents first (ranges of
    /// [`SimJoint::path`]).
    paths: Vec<usize>,
    /// Collider indices per joint (ranges of [`SimJoint::colliders`]).
    joint_colliders: Vec<usize>,
    /// The rig's colliders on nodes the avatar has.
    colliders: Vec<(usize, ColliderShape)>,
    /// Each collider this frame: the ends of its segment in avatar space and its radius.
    collider_world: Vec<(Vec3, Vec3, f32)>,
    /// Centre nodes.
    centers: Vec<usize>,
    /// Each centre's world transform this frame, and its inverse.
    center_world: Vec<(Mat4, Mat4)>,
    /// Every node's world transform; the joints' are updated as they move.
    world: Vec<Mat4>,
    /// The pose's rotations at the last step, the joints' at rest.
    before: Vec<Quat>,
    /// Rotations between `before` and this step's, for one substep.
    blend: Vec<Quat>,
    /// Time not yet simulated, in seconds.
    pending: f32,
    /// Whether the joints start from rest at the next step.
    needs_reset: bool,
}

/// One joint's settings and state.
#[derive(Debug, Clone)]
struct SimJoint {
    node: usize,
    parent: Option<usize>,
    /// The tail in the node's space, and its direction.
    tail: Vec3,
    axis: Vec3,
    settings: JointSettings,
    /// The share of velocity kept per substep.
    keep: f32,
    /// Index into [`SpringSim::centers`].
    center: Option<usize>,
    path: Range<usize>,
    colliders: Range<usize>,
    /// Whether no ancestor is a joint.
    root: bool,
    /// The tail now and one substep ago, in the centre's space.
    current: Vec3,
    previous: Vec3,
    /// The tail in avatar space after the last substep.
    world_tail: Vec3,
    /// The bone's head in the centre's space at the last step (roots only).
    last_head: Vec3,
    /// The rotation after the rest rotation.
    rotation: Quat,
}

impl SpringSim {
    /// The simulation of `avatar`'s own springs, if it has any.
    pub fn for_avatar(avatar: &Avatar) -> Option<SpringSim> {
        avatar
            .springs
            .as_ref()
            .map(|rig| SpringSim::new(avatar, rig))
            .filter(|sim| !sim.joints.is_empty())
    }

    /// A simulation of `rig` on `avatar`'s nodes; joints and colliders naming nodes the avatar
    /// lacks are left out. The joints start at rest at the first step.
    pub fn new(avatar: &Avatar, rig: &SpringRig) -> SpringSim {
        let count = avatar.nodes.len();
        let mut order = Vec::with_capacity(count);
        let mut depth = vec![usize::MAX; count];
        let mut stack: Vec<(usize, Option<usize>, usize)> =
            avatar.roots.iter().rev().map(|&r| (r, None, 0)).collect();
        while let Some((node, parent, d)) = stack.pop() {
            if node >= count || depth[node] != usize::MAX {
                continue;
            }
            depth[node] = d;
            order.push((node, parent));
            let children = &avatar.nodes[node].children;
            stack.extend(children.iter().rev().map(|&c| (c, Some(node), d + 1)));
        }
        let mut parents = vec![None; count];
        for &(node, parent) in &order {
            parents[node] = parent;
        }
        let reachable_parent = |node: usize| parents[node];
        // Only colliders on nodes the avatar has are simulated; `kept[c]` is rig collider `c`'s
        // index among them.
        let mut colliders: Vec<(usize, ColliderShape)> = Vec::new();
        let kept: Vec<Option<usize>> = rig
            .colliders
            .iter()
            .map(|c| {
                (c.node < count).then(|| {
                    colliders.push((c.node, c.shape));
                    colliders.len() - 1
                })
            })
            .collect();
        let mut is_joint = vec![false; count];
        let mut found = Vec::new();
        let mut centers: Vec<usize> = Vec::new();
        for spring in &rig.springs {
            let center = spring.center.filter(|&c| c < count).map(|c| {
                centers.iter().position(|&x| x == c).unwrap_or_else(|| {
                    centers.push(c);
                    centers.len() - 1
                })
            });
            let colliders: Vec<usize> = spring
                .collider_groups
                .iter()
                .filter_map(|&g| rig.collider_groups.get(g))
                .flatten()
                .filter_map(|&c| kept.get(c).copied().flatten())
                .collect();
            for joint in &spring.joints {
                if joint.node >= count || is_joint[joint.node] || depth[joint.node] == usize::MAX {
                    continue;
                }
                is_joint[joint.node] = true;
                found.push((depth[joint.node], joint, center, colliders.clone()));
            }
        }
        // Parents first; stable, so file order breaks ties.
        found.sort_by_key(|&(d, ..)| d);
        let mut paths = Vec::new();
        let mut joint_colliders = Vec::new();
        let joints = found
            .into_iter()
            .map(|(_, joint, center, colliders)| {
                let parent = reachable_parent(joint.node);
                // Walk up to the nearest joint ancestor, collecting the nodes between.
                let mut between = Vec::new();
                let mut up = parent;
                while let Some(p) = up {
                    if is_joint[p] {
                        break;
                    }
                    between.push(p);
                    up = reachable_parent(p);
                }
                let root = up.is_none();
                let path = if root {
                    paths.len()..paths.len()
                } else {
                    let start = paths.len();
                    paths.extend(between.iter().rev());
                    start..paths.len()
                };
                let start = joint_colliders.len();
                joint_colliders.extend(colliders);
                let settings = joint.settings;
                SimJoint {
                    node: joint.node,
                    parent,
                    tail: joint.tail,
                    axis: joint.tail.normalize_or(Vec3::Y),
                    keep: (1.0 - settings.drag.clamp(0.0, 1.0)).powf(SUBSTEP / VRM_STEP),
                    settings,
                    center,
                    path,
                    colliders: start..joint_colliders.len(),
                    root,
                    current: Vec3::ZERO,
                    previous: Vec3::ZERO,
                    world_tail: Vec3::ZERO,
                    last_head: Vec3::ZERO,
                    rotation: Quat::IDENTITY,
                }
            })
            .collect();
        SpringSim {
            order,
            joints,
            paths,
            joint_colliders,
            collider_world: vec![(Vec3::ZERO, Vec3::ZERO, 0.0); colliders.len()],
            colliders,
            center_world: vec![(Mat4::IDENTITY, Mat4::IDENTITY); centers.len()],
            centers,
            world: vec![Mat4::IDENTITY; count],
            before: Vec::new(),
            blend: Vec::new(),
            pending: 0.0,
            needs_reset: true,
        }
    }

    /// Number of simulated joints.
    pub fn joint_count(&self) -> usize {
        self.joints.len()
    }

    /// Makes the joints start again from rest at the next step.
    pub fn reset(&mut self) {
        self.needs_reset = true;
    }

    /// Each joint's node and where its tail is in avatar space after the last step.
    pub fn tails(&self) -> impl Iterator<Item = (usize, Vec3)> + '_ {
        self.joints.iter().map(|j| (j.node, j.world_tail))
    }

    /// Whether some tail still moves (a frame drawn now would differ from the last one).
    pub fn is_moving(&self) -> bool {
        !self.needs_reset
            && self
                .joints
                .iter()
                .any(|j| j.current.distance_squared(j.previous) > SETTLED * SETTLED)
    }

    /// Advances the springs by `elapsed` under `pose` (the mapping's rotations already in it)
    /// and writes each joint's rotation into `pose.rotations`, replacing what was there: the
    /// springs own their joints' rotations, recomputed from rest every frame. The first step, a
    /// step after a gap longer than [`RESET_GAP`], and a step in which a spring root moved
    /// further than [`RESET_DISTANCE`] put the joints at rest under the new pose instead.
    pub fn step(&mut self, avatar: &Avatar, pose: &mut Pose, elapsed: Duration) {
        if avatar.nodes.len() != self.world.len() {
            return;
        }
        for joint in &self.joints {
            if let Some(r) = pose.rotations.get_mut(joint.node) {
                *r = Quat::IDENTITY;
            }
        }
        self.frame(avatar, &pose.rotations, &pose.translations);
        let dt = elapsed.as_secs_f32();
        let mut reset =
            self.needs_reset || dt > RESET_GAP || self.before.len() != pose.rotations.len();
        for joint in self.joints.iter_mut().filter(|j| j.root) {
            let head = self.world[joint.node].w_axis.truncate();
            let head = to_center(&self.center_world, joint.center).transform_point3(head);
            reset |= head.distance(joint.last_head) > RESET_DISTANCE || !head.is_finite();
            joint.last_head = head;
        }
        if reset {
            self.rest();
        } else {
            // Substep k ends `ends[k]` seconds after the last step; between steps the pose's
            // rotations turn evenly from the last step's to this one's.
            let mut since = -self.pending;
            self.pending += dt;
            let mut substeps = (self.pending / SUBSTEP) as u32;
            if substeps > MAX_SUBSTEPS {
                // The time dropped is the oldest: the substeps run up to this step's pose.
                substeps = MAX_SUBSTEPS;
                since = dt - MAX_SUBSTEPS as f32 * SUBSTEP;
                self.pending = 0.0;
            } else {
                self.pending -= substeps as f32 * SUBSTEP;
            }
            let still = self.before == pose.rotations || dt <= 0.0;
            let mut blend = std::mem::take(&mut self.blend);
            blend.resize(pose.rotations.len(), Quat::IDENTITY);
            for k in 0..substeps {
                let rotations: &[Quat] = if still {
                    &pose.rotations
                } else {
                    let f = ((since + (k + 1) as f32 * SUBSTEP) / dt).clamp(0.0, 1.0);
                    for ((b, before), now) in
                        blend.iter_mut().zip(&self.before).zip(&pose.rotations)
                    {
                        *b = before.slerp(*now, f);
                    }
                    &blend
                };
                self.frame(avatar, rotations, &pose.translations);
                self.substep(avatar, rotations, &pose.translations);
            }
            self.blend = blend;
            let finite = self
                .joints
                .iter()
                .all(|j| j.current.is_finite() && j.previous.is_finite() && j.rotation.is_finite());
            if !finite {
                self.frame(avatar, &pose.rotations, &pose.translations);
                self.rest();
            }
        }
        self.before.clone_from(&pose.rotations);
        for joint in &self.joints {
            if let Some(r) = pose.rotations.get_mut(joint.node) {
                *r = joint.rotation;
            }
        }
    }

    /// World transforms, centres and colliders under `rotations` and `translations` (the
    /// joints' at rest).
    fn frame(&mut self, avatar: &Avatar, rotations: &[Quat], translations: &[Vec3]) {
        for &(node, parent) in &self.order {
            let parent = parent.map_or(Mat4::IDENTITY, |p| self.world[p]);
            let extra = rotations.get(node).copied().unwrap_or(Quat::IDENTITY);
            self.world[node] = parent * local(avatar, translations, node, extra);
        }
        for (slot, &center) in self.center_world.iter_mut().zip(&self.centers) {
            let m = self.world[center];
            *slot = (m, m.inverse());
        }
        for (slot, &(node, shape)) in self.collider_world.iter_mut().zip(&self.colliders) {
            let m = self.world[node];
            *slot = match shape {
                ColliderShape::Sphere { offset, radius } => {
                    let c = m.transform_point3(offset);
                    (c, c, radius)
                }
                ColliderShape::Capsule {
                    offset,
                    tail,
                    radius,
                } => (m.transform_point3(offset), m.transform_point3(tail), radius),
            };
        }
    }

    /// Puts every joint at rest under the frame's transforms.
    fn rest(&mut self) {
        for joint in &mut self.joints {
            joint.rotation = Quat::IDENTITY;
            let tail = self.world[joint.node].transform_point3(joint.tail);
            let to = to_center(&self.center_world, joint.center);
            joint.current = to.transform_point3(tail);
            joint.previous = joint.current;
            joint.world_tail = tail;
        }
        self.pending = 0.0;
        self.needs_reset = false;
    }

    /// One fixed substep of every joint, parents first.
    fn substep(&mut self, avatar: &Avatar, rotations: &[Quat], translations: &[Vec3]) {
        let force_scale = SUBSTEP * SUBSTEP / VRM_STEP;
        for joint in &mut self.joints {
            for &node in &self.paths[joint.path.clone()] {
                let parent = avatar.nodes[node]
                    .parent
                    .map_or(Mat4::IDENTITY, |p| self.world[p]);
                let extra = rotations.get(node).copied().unwrap_or(Quat::IDENTITY);
                self.world[node] = parent * local(avatar, translations, node, extra);
            }
            let parent = joint.parent.map_or(Mat4::IDENTITY, |p| self.world[p]);
            let rest = parent * local(avatar, translations, joint.node, Quat::IDENTITY);
            let head = rest.w_axis.truncate();
            let bone = rest.transform_vector3(joint.tail);
            let length = bone.length();
            let (from, to) = match joint.center {
                Some(c) => self.center_world[c],
                None => (Mat4::IDENTITY, Mat4::IDENTITY),
            };
            let s = &joint.settings;
            let axis = to.transform_vector3(bone).normalize_or_zero();
            let gravity = to.transform_vector3(s.gravity_dir).normalize_or_zero();
            let next = joint.current
                + (joint.current - joint.previous) * joint.keep
                + (axis * s.stiffness + gravity * s.gravity_power) * force_scale;
            let fallback = bone.normalize_or(Vec3::NEG_Y);
            let mut tail =
                head + (from.transform_point3(next) - head).normalize_or(fallback) * length;
            for &c in &self.joint_colliders[joint.colliders.clone()] {
                let (a, b, radius) = self.collider_world[c];
                let reach = radius + s.hit_radius;
                // Out of the collider, then back onto the bone's sphere, which can lead back in
                // a little: a few rounds settle both.
                let mut away = tail - nearest_on_segment(a, b, tail);
                for _ in 0..COLLISION_ROUNDS {
                    if away.length_squared() >= reach * reach {
                        break;
                    }
                    let pushed =
                        nearest_on_segment(a, b, tail) + away.normalize_or(fallback) * reach;
                    tail = head + (pushed - head).normalize_or(fallback) * length;
                    away = tail - nearest_on_segment(a, b, tail);
                }
            }
            joint.previous = joint.current;
            joint.current = to.transform_point3(tail);
            joint.world_tail = tail;
            let local_dir = rest.inverse().transform_vector3(tail - head);
            joint.rotation =
                Quat::from_rotation_arc(joint.axis, local_dir.normalize_or(joint.axis));
            self.world[joint.node] =
                parent * local(avatar, translations, joint.node, joint.rotation);
        }
    }
}

/// Node `node`'s local transform with `extra` after its rest rotation and the pose's extra
/// translation (`translations[node]`, when there and finite) added to its rest translation.
fn local(avatar: &Avatar, translations: &[Vec3], node: usize, extra: Quat) -> Mat4 {
    let n = &avatar.nodes[node];
    let shift = translations
        .get(node)
        .copied()
        .filter(|t| t.is_finite())
        .unwrap_or(Vec3::ZERO);
    Mat4::from_scale_rotation_translation(n.scale, n.rotation * extra, n.translation + shift)
}

/// The transform from avatar space into a centre's space (identity without one).
fn to_center(centers: &[(Mat4, Mat4)], center: Option<usize>) -> Mat4 {
    center.map_or(Mat4::IDENTITY, |c| centers[c].1)
}

/// The point of segment `a`–`b` nearest to `p`.
fn nearest_on_segment(a: Vec3, b: Vec3, p: Vec3) -> Vec3 {
    let ab = b - a;
    let len2 = ab.length_squared();
    if len2 <= f32::EPSILON {
        return a;
    }
    a + ab * ((p - a).dot(ab) / len2).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::spring::{Collider, Joint, Spring};
    use crate::avatar::Node;

    const SEGMENT: f32 = 0.1;

    fn node(parent: Option<usize>, children: Vec<usize>, translation: Vec3) -> Node {
        Node {
            parent,
            children,
            translation,
            ..Node::default()
        }
    }

    /// A root, a head 1.5 m up, and a three-bone hair chain from the back of its crown hanging
    /// in `direction` (node 2 to node 5, the last one only a tail).
    fn head_with_hair(root: Vec3, direction: Vec3, settings: JointSettings) -> Avatar {
        let step = direction.normalize() * SEGMENT;
        let nodes = vec![
            node(None, vec![1], Vec3::ZERO),
            node(Some(0), vec![2], Vec3::new(0.0, 1.5, 0.0)),
            node(Some(1), vec![3], root),
            node(Some(2), vec![4], step),
            node(Some(3), vec![5], step),
            node(Some(4), vec![], step),
        ];
        let joints = (2..5)
            .map(|n| Joint {
                node: n,
                tail: step,
                settings,
            })
            .collect();
        Avatar {
            nodes,
            roots: vec![0],
            springs: Some(SpringRig {
                springs: vec![Spring {
                    name: Some("hair".into()),
                    joints,
                    collider_groups: vec![],
                    center: None,
                }],
                ..SpringRig::default()
            }),
            ..Avatar::default()
        }
    }

    fn swaying() -> JointSettings {
        JointSettings {
            stiffness: 1.0,
            drag: 0.2,
            ..JointSettings::default()
        }
    }

    fn back_hair() -> Avatar {
        head_with_hair(
            Vec3::new(0.0, 0.1, -0.1),
            Vec3::NEG_Y + Vec3::NEG_Z * 0.5,
            swaying(),
        )
    }

    /// The head turns 40 degrees about Y over 0.2 s (smoothly), then holds still.
    fn head_turn(t: f32) -> f32 {
        let x = (t / 0.2).clamp(0.0, 1.0);
        40f32.to_radians() * x * x * (3.0 - 2.0 * x)
    }

    /// Where the drawn chain's tip is under `pose`.
    fn tip(avatar: &Avatar, pose: &Pose) -> Vec3 {
        let last = avatar.springs.as_ref().unwrap().springs[0].joints[2];
        avatar.world_transforms(pose)[last.node].transform_point3(last.tail)
    }

    /// Steps `frames` frames of `1/hz` s with the head at `angle(t)`; returns the pose and the
    /// tip after each frame.
    fn run(
        avatar: &Avatar,
        sim: &mut SpringSim,
        hz: u32,
        seconds: f32,
        angle: impl Fn(f32) -> f32,
    ) -> (Pose, Vec<Vec3>) {
        let mut pose = avatar.rest_pose();
        let frames = (seconds * hz as f32).round() as u32;
        let mut tips = Vec::new();
        for f in 0..=frames {
            let t = f as f32 / hz as f32;
            pose.rotations[1] = Quat::from_rotation_y(angle(t));
            let dt = if f == 0 { 0.0 } else { 1.0 / hz as f64 };
            sim.step(avatar, &mut pose, Duration::from_secs_f64(dt));
            tips.push(tip(avatar, &pose));
        }
        (pose, tips)
    }

    /// The tip with the hair at rest under the head turned by `angle`.
    fn rigid_tip(avatar: &Avatar, angle: f32) -> Vec3 {
        let mut pose = avatar.rest_pose();
        pose.rotations[1] = Quat::from_rotation_y(angle);
        tip(avatar, &pose)
    }

    #[test]
    fn hair_lags_a_head_turn_swings_and_settles() {
        let avatar = back_hair();
        let mut sim = SpringSim::for_avatar(&avatar).unwrap();
        assert_eq!(sim.joint_count(), 3);
        let (_, tips) = run(&avatar, &mut sim, 60, 4.0, head_turn);
        let start = rigid_tip(&avatar, 0.0);
        assert!(tips[0].distance(start) < 1e-5, "starts at rest");
        let end = rigid_tip(&avatar, 40f32.to_radians());
        // At the end of the turn the tip trails behind where a rigid tip would be.
        let lag = tips[12].distance(end);
        assert!(lag > 0.01, "the tip lags the turn by {lag} m");
        // It swings past its rest direction: at some time after the turn, the tip's angle
        // about the head's Y axis exceeds 40 degrees.
        let head = Vec3::new(0.0, 1.5, 0.0);
        let bearing = |p: Vec3| {
            let d = p - head;
            (-d.x).atan2(-d.z) // 0 at rest behind the head, growing with the turn
        };
        let overshoot = tips[12..]
            .iter()
            .map(|&p| bearing(p) - bearing(end))
            .fold(f32::MIN, f32::max);
        assert!(overshoot > 1f32.to_radians(), "overshoot {overshoot} rad");
        // After three seconds it has settled where the rigid tip is.
        let at_three = &tips[180..];
        for pair in at_three.windows(2) {
            assert!(pair[0].distance(pair[1]) < 1e-4, "still moving at 3 s");
        }
        assert!(at_three[0].distance(end) < 1e-3, "settled away from rest");
        assert!(!sim.is_moving(), "reported as moving once settled");
    }

    #[test]
    fn thirty_and_one_hundred_forty_four_hertz_agree() {
        let avatar = back_hair();
        let tail_at = |hz: u32, seconds: f32| {
            let mut sim = SpringSim::for_avatar(&avatar).unwrap();
            run(&avatar, &mut sim, hz, seconds, head_turn);
            sim.tails().map(|(_, t)| t).collect::<Vec<_>>()
        };
        for (seconds, tolerance) in [(0.5, 0.04 * SEGMENT), (2.0, 0.001 * SEGMENT)] {
            let slow = tail_at(30, seconds);
            let fast = tail_at(144, seconds);
            for (a, b) in slow.iter().zip(&fast) {
                let gap = a.distance(*b);
                assert!(
                    gap < tolerance,
                    "at {seconds} s the tails differ by {gap} m"
                );
            }
        }
        // Mid-swing both are far from rest: the agreement is not only both being at rest.
        let swinging = tail_at(30, 0.5);
        let rigid = rigid_tip(&avatar, 40f32.to_radians());
        assert!(swinging[2].distance(rigid) > 0.2 * SEGMENT);
    }

    #[test]
    fn rotations_are_recomputed_from_rest_each_frame() {
        let avatar = back_hair();
        let mut sim = SpringSim::for_avatar(&avatar).unwrap();
        let (mut pose, _) = run(&avatar, &mut sim, 60, 0.3, head_turn);
        let after = pose.rotations.clone();
        // A pose that still holds last frame's spring rotations gives the same result as a
        // fresh one: nothing accumulates onto them.
        let mut fresh = avatar.rest_pose();
        fresh.rotations[1] = pose.rotations[1];
        let mut sim2 = sim.clone();
        sim.step(&avatar, &mut pose, Duration::ZERO);
        sim2.step(&avatar, &mut fresh, Duration::ZERO);
        assert_eq!(pose.rotations, fresh.rotations);
        assert_eq!(pose.rotations, after);
        assert!(after[2] != Quat::IDENTITY);
    }

    /// A chain lying across the crown of a head whose collider is given, pulled down hard.
    fn draped(shape: ColliderShape) -> (Avatar, Vec3, Vec3, f32) {
        let settings = JointSettings {
            stiffness: 0.5,
            drag: 0.4,
            gravity_power: 3.0,
            gravity_dir: Vec3::NEG_Y,
            hit_radius: 0.02,
        };
        let mut avatar = head_with_hair(Vec3::new(0.0, 0.12, 0.0), Vec3::X, settings);
        let rig = avatar.springs.as_mut().unwrap();
        rig.colliders.push(Collider { node: 1, shape });
        rig.collider_groups.push(vec![0]);
        rig.springs[0].collider_groups.push(0);
        let head = Vec3::new(0.0, 1.5, 0.0);
        let (a, b, radius) = match shape {
            ColliderShape::Sphere { offset, radius } => (head + offset, head + offset, radius),
            ColliderShape::Capsule {
                offset,
                tail,
                radius,
            } => (head + offset, head + tail, radius),
        };
        (avatar, a, b, radius + settings.hit_radius)
    }

    fn settled_tails(avatar: &Avatar) -> Vec<Vec3> {
        let mut sim = SpringSim::for_avatar(avatar).unwrap();
        run(avatar, &mut sim, 60, 3.0, |_| 0.0);
        sim.tails().map(|(_, t)| t).collect()
    }

    #[test]
    fn colliders_keep_hair_out_of_the_head() {
        let shapes = [
            ColliderShape::Sphere {
                offset: Vec3::ZERO,
                radius: 0.1,
            },
            ColliderShape::Capsule {
                offset: Vec3::new(0.0, 0.0, -0.05),
                tail: Vec3::new(0.0, 0.0, 0.05),
                radius: 0.1,
            },
        ];
        for shape in shapes {
            let (mut avatar, a, b, reach) = draped(shape);
            for tail in settled_tails(&avatar) {
                let gap = tail.distance(nearest_on_segment(a, b, tail));
                assert!(
                    gap >= reach - 1e-3,
                    "{shape:?}: a tail is {gap} m from the axis"
                );
            }
            // Without the collider, gravity pulls the chain into the head.
            avatar.springs.as_mut().unwrap().springs[0]
                .collider_groups
                .clear();
            let inside = settled_tails(&avatar)
                .into_iter()
                .any(|t| t.distance(nearest_on_segment(a, b, t)) < reach - 0.01);
            assert!(inside, "{shape:?}: the test chain never reaches the head");
        }
    }

    #[test]
    fn colliders_on_nodes_the_avatar_lacks_are_left_out() {
        // A rig put together elsewhere may name nodes this avatar does not have, in a group a
        // spring uses or in none: the simulation steps without them.
        let shape = ColliderShape::Sphere {
            offset: Vec3::ZERO,
            radius: 0.1,
        };
        let (mut avatar, a, b, reach) = draped(shape);
        let rig = avatar.springs.as_mut().unwrap();
        rig.colliders.insert(
            0,
            Collider {
                node: usize::MAX,
                shape,
            },
        );
        rig.colliders.push(Collider { node: 6, shape });
        rig.collider_groups = vec![vec![0, 1, 2], vec![2]];
        let mut sim = SpringSim::for_avatar(&avatar).unwrap();
        let mut pose = avatar.rest_pose();
        for _ in 0..120 {
            sim.step(&avatar, &mut pose, Duration::from_secs_f64(1.0 / 60.0));
        }
        // The head's own collider, still in the group, keeps working.
        for (_, tail) in sim.tails() {
            assert!(tail.distance(nearest_on_segment(a, b, tail)) >= reach - 1e-3);
        }
    }

    /// Every tail is finite and within the chain's length of the chain's root.
    fn assert_sane(avatar: &Avatar, sim: &SpringSim, pose: &Pose) {
        let world = avatar.world_transforms(pose);
        let root = world[2].w_axis.truncate();
        for (node, tail) in sim.tails() {
            assert!(tail.is_finite(), "joint {node} is not finite");
            assert!(tail.distance(root) <= 3.0 * SEGMENT + 1e-4);
        }
        assert!(pose.rotations.iter().all(|r| r.is_finite()));
    }

    #[test]
    fn a_teleport_or_a_stall_restarts_from_rest() {
        let mut avatar = back_hair();
        let mut sim = SpringSim::for_avatar(&avatar).unwrap();
        let (mut pose, _) = run(&avatar, &mut sim, 60, 0.15, head_turn);
        assert!(sim.is_moving());
        // The head jumps 10 m in one frame.
        avatar.nodes[0].translation = Vec3::new(10.0, 0.0, 0.0);
        sim.step(&avatar, &mut pose, Duration::from_secs_f64(1.0 / 60.0));
        assert_sane(&avatar, &sim, &pose);
        let mut rest = pose.clone();
        rest.rotations[2..5].fill(Quat::IDENTITY);
        assert!(tip(&avatar, &pose).distance(tip(&avatar, &rest)) < 1e-5);
        // It swings again, then the renderer stalls for five seconds with the head turned back.
        for _ in 0..6 {
            pose.rotations[1] = Quat::IDENTITY;
            sim.step(&avatar, &mut pose, Duration::from_secs_f64(1.0 / 60.0));
        }
        assert!(sim.is_moving());
        sim.step(&avatar, &mut pose, Duration::from_secs(5));
        assert_sane(&avatar, &sim, &pose);
        assert!(pose.rotations[2..5].iter().all(|&r| r == Quat::IDENTITY));
        // And moves on normally afterwards.
        let (pose, _) = run(&avatar, &mut sim, 60, 1.0, head_turn);
        assert_sane(&avatar, &sim, &pose);
    }

    #[test]
    fn a_slow_frame_runs_at_most_the_substep_cap() {
        let avatar = back_hair();
        let mut capped = SpringSim::for_avatar(&avatar).unwrap();
        let mut pose = avatar.rest_pose();
        capped.step(&avatar, &mut pose, Duration::ZERO);
        pose.rotations[1] = Quat::from_rotation_y(0.5);
        capped.step(&avatar, &mut pose, Duration::from_secs_f64(1.0 / 60.0));
        let mut exact = capped.clone();
        let mut other = pose.clone();
        // 0.3 s is below the stall limit but above the cap: the same as the cap's worth.
        capped.step(&avatar, &mut pose, Duration::from_secs_f32(0.3));
        let cap = Duration::from_secs_f32(MAX_SUBSTEPS as f32 * SUBSTEP + SUBSTEP * 0.5);
        exact.step(&avatar, &mut other, cap);
        assert_eq!(pose.rotations, other.rotations);
        assert!(pose.rotations[2] != Quat::IDENTITY);
    }

    #[test]
    fn a_centre_carries_its_spring_without_swinging_it() {
        // The whole avatar slides sideways 2 cm a frame; with the root as the centre the hair
        // does not trail, without it it does.
        let mut avatar = back_hair();
        let slide = |avatar: &mut Avatar| {
            let mut sim = SpringSim::for_avatar(avatar).unwrap();
            let mut pose = avatar.rest_pose();
            for f in 0..20 {
                avatar.nodes[0].translation = Vec3::new(0.02 * f as f32, 0.0, 0.0);
                sim.step(avatar, &mut pose, Duration::from_secs_f64(1.0 / 60.0));
            }
            pose.rotations[4].angle_between(Quat::IDENTITY)
        };
        let free = slide(&mut avatar);
        avatar.springs.as_mut().unwrap().springs[0].center = Some(0);
        let centred = slide(&mut avatar);
        assert!(free > 0.05, "free hair turned {free} rad");
        assert!(centred < 1e-4, "centred hair turned {centred} rad");
    }
}

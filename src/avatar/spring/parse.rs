//! Reading spring bones from a glTF file's root `extensions`: VRM 1.0 `VRMC_springBone`, or VRM
//! 0.x `VRM.secondaryAnimation`. Invalid entries are skipped and listed in
//! [`SpringRig::skipped`], never fatal.

use std::collections::HashSet;

use glam::Vec3;
use serde_json::{Map, Value};

use super::{Collider, ColliderShape, Joint, JointSettings, Spring, SpringIssue, SpringRig};
use crate::avatar::Node;

/// How far a VRM 0.x leaf's tail lies along its own translation, in metres.
const LEAF_TAIL: f32 = 0.07;

/// How many skipped entries are logged one by one.
const LOGGED: usize = 8;

/// Reads the spring bones of a model from its root `extensions` (`VRMC_springBone` is preferred
/// when both are present), checking every node index against `nodes`. `None` when the file has
/// no springs. For VRM 0.x, directions given in the file's world are turned as
/// [`crate::avatar::vrm::HALF_TURN`] turns the model, and collider offsets are converted from
/// UniVRM's mirrored Z. `file` labels the warnings.
pub fn parse(
    extensions: Option<&Map<String, Value>>,
    nodes: &[Node],
    file: &str,
) -> Option<SpringRig> {
    let extensions = extensions?;
    let mut reader = Reader {
        nodes,
        rig: SpringRig::default(),
        driven: HashSet::new(),
    };
    if let Some(v1) = extensions.get("VRMC_springBone").and_then(Value::as_object) {
        reader.read_v1(v1);
    } else if let Some(v0) = extensions
        .get("VRM")
        .and_then(|vrm| vrm.get("secondaryAnimation"))
        .and_then(Value::as_object)
    {
        reader.read_v0(v0);
    } else {
        return None;
    }
    let rig = reader.rig;
    for issue in rig.skipped.iter().take(LOGGED) {
        tracing::warn!(file, "spring bones: {issue}; skipped");
    }
    if rig.skipped.len() > LOGGED {
        tracing::warn!(
            file,
            "spring bones: {} more entries skipped",
            rig.skipped.len() - LOGGED
        );
    }
    if rig.springs.is_empty() {
        return None;
    }
    tracing::info!(
        file,
        springs = rig.springs.len(),
        joints = rig.joint_count(),
        colliders = rig.colliders.len(),
        "spring bones"
    );
    Some(rig)
}

/// The state of one read.
struct Reader<'a> {
    nodes: &'a [Node],
    rig: SpringRig,
    /// Nodes some spring already drives.
    driven: HashSet<usize>,
}

impl Reader<'_> {
    fn issue(&mut self, issue: SpringIssue) {
        self.rig.skipped.push(issue);
    }

    fn invalid(&mut self, what: String) {
        self.issue(SpringIssue::Invalid { what });
    }

    /// A node index of the file, or an issue naming `what`.
    fn node(&mut self, value: Option<&Value>, what: impl Fn() -> String) -> Option<usize> {
        let Some(value) = value else {
            self.invalid(what());
            return None;
        };
        match index(value) {
            Some(n) if n < self.nodes.len() => Some(n),
            Some(n) => {
                self.issue(SpringIssue::NoSuchNode {
                    what: what(),
                    index: n,
                });
                None
            }
            None => {
                self.invalid(what());
                None
            }
        }
    }

    /// Group indices of `value` (an array) below `count`; the others become issues.
    fn groups(&mut self, value: Option<&Value>, count: usize, what: &str) -> Vec<usize> {
        let mut groups = Vec::new();
        for item in value.and_then(Value::as_array).into_iter().flatten() {
            match index(item) {
                Some(g) if g < count => groups.push(g),
                Some(g) => self.issue(SpringIssue::NoSuchCollider {
                    what: what.to_owned(),
                    kind: "collider group",
                    index: g,
                }),
                None => self.invalid(format!("a collider group of {what}")),
            }
        }
        groups
    }

    /// A joint for `node` whose tail is `tail` (in the node's space), unless the node is driven
    /// already or the bone has no length.
    fn joint(&mut self, node: usize, tail: Vec3, settings: JointSettings) -> Option<Joint> {
        if !tail.is_finite() || tail.length_squared() < 1e-12 {
            self.invalid(format!("the bone of joint node {node} (it has no length)"));
            return None;
        }
        if !self.driven.insert(node) {
            self.issue(SpringIssue::DrivenTwice { node });
            return None;
        }
        Some(Joint {
            node,
            tail,
            settings,
        })
    }

    /// VRM 1.0: `colliders`, `colliderGroups`, `springs[].joints`.
    fn read_v1(&mut self, root: &Map<String, Value>) {
        let nodes = self.nodes;
        // Each file collider's index in the rig, or `None` where it was dropped.
        let mut rig_index: Vec<Option<usize>> = Vec::new();
        for (i, collider) in array(root.get("colliders")).iter().enumerate() {
            let what = || format!("collider {i}");
            let node = self.node(collider.get("node"), what);
            let shape = collider.get("shape");
            let shape = if let Some(sphere) = shape.and_then(|s| s.get("sphere")) {
                match (
                    vec3_array(sphere.get("offset")),
                    radius(sphere.get("radius")),
                ) {
                    (Some(offset), Some(radius)) => Some(ColliderShape::Sphere { offset, radius }),
                    _ => {
                        self.invalid(format!("the sphere of collider {i}"));
                        None
                    }
                }
            } else if let Some(capsule) = shape.and_then(|s| s.get("capsule")) {
                match (
                    vec3_array(capsule.get("offset")),
                    vec3_array(capsule.get("tail")),
                    radius(capsule.get("radius")),
                ) {
                    (Some(offset), Some(tail), Some(radius)) => Some(ColliderShape::Capsule {
                        offset,
                        tail,
                        radius,
                    }),
                    _ => {
                        self.invalid(format!("the capsule of collider {i}"));
                        None
                    }
                }
            } else {
                self.issue(SpringIssue::NoShape { index: i });
                None
            };
            // An invalid collider is dropped: the rig keeps only usable colliders, and the
            // groups below name them by their place in the rig, not in the file.
            match (node, shape) {
                (Some(node), Some(shape)) => {
                    rig_index.push(Some(self.rig.colliders.len()));
                    self.rig.colliders.push(Collider { node, shape });
                }
                _ => rig_index.push(None),
            }
        }
        for (g, group) in array(root.get("colliderGroups")).iter().enumerate() {
            let mut members = Vec::new();
            for item in array(group.get("colliders")) {
                match index(item) {
                    Some(c) if c < rig_index.len() => {
                        // A dropped collider was reported with the collider itself.
                        if let Some(member) = rig_index[c] {
                            members.push(member);
                        }
                    }
                    Some(c) => self.issue(SpringIssue::NoSuchCollider {
                        what: format!("collider group {g}"),
                        kind: "collider",
                        index: c,
                    }),
                    None => self.invalid(format!("a collider of collider group {g}")),
                }
            }
            self.rig.collider_groups.push(members);
        }
        let group_count = self.rig.collider_groups.len();
        for (s, spring) in array(root.get("springs")).iter().enumerate() {
            let what = format!("spring {s}");
            let collider_groups = self.groups(spring.get("colliderGroups"), group_count, &what);
            let center = match spring.get("center") {
                None | Some(Value::Null) => None,
                center => self.node(center, || format!("the center of spring {s}")),
            };
            let mut chain = Vec::new();
            for (j, joint) in array(spring.get("joints")).iter().enumerate() {
                match self.node(joint.get("node"), || format!("joint {j} of spring {s}")) {
                    Some(node) => chain.push((node, joint)),
                    None => break,
                }
            }
            let mut joints = Vec::new();
            for pair in chain.windows(2) {
                let ((node, joint), (child, _)) = (pair[0], pair[1]);
                if nodes[child].parent != Some(node) {
                    self.invalid(format!(
                        "the chain of spring {s} (node {child} is not a child of node {node})"
                    ));
                    break;
                }
                let settings = self.settings_v1(joint, &format!("joint node {node}"));
                let tail = nodes[child].translation;
                match self.joint(node, tail, settings) {
                    Some(joint) => joints.push(joint),
                    None => break,
                }
            }
            if !joints.is_empty() {
                self.rig.springs.push(Spring {
                    name: spring
                        .get("name")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    joints,
                    collider_groups,
                    center,
                });
            }
        }
    }

    fn settings_v1(&mut self, joint: &Value, what: &str) -> JointSettings {
        self.settings(joint, what, "stiffness", |v| {
            vec3_array(Some(v)).map(Vec3::normalize_or_zero)
        })
    }

    /// The joint settings in `object` (a VRM 1.0 joint or a 0.x bone group): each number
    /// clamped to its range, a bad value noted and replaced by the default; `gravity_dir` reads
    /// the direction as the version writes it.
    fn settings(
        &mut self,
        object: &Value,
        what: &str,
        stiffness_key: &str,
        gravity_dir: fn(&Value) -> Option<Vec3>,
    ) -> JointSettings {
        let defaults = JointSettings::default();
        let mut number = |key: &str, default: f32, min: f32, max: f32| match object.get(key) {
            None => default,
            Some(v) => match v.as_f64().map(|v| v as f32) {
                Some(v) if v.is_finite() => v.clamp(min, max),
                _ => {
                    self.rig.skipped.push(SpringIssue::Invalid {
                        what: format!("{key} of {what}"),
                    });
                    default
                }
            },
        };
        let stiffness = number(stiffness_key, defaults.stiffness, 0.0, f32::MAX);
        let drag = number("dragForce", defaults.drag, 0.0, 1.0);
        let gravity_power = number("gravityPower", defaults.gravity_power, 0.0, f32::MAX);
        let hit_radius = number("hitRadius", defaults.hit_radius, 0.0, f32::MAX);
        let gravity_dir = match object.get("gravityDir") {
            None => defaults.gravity_dir,
            Some(v) => gravity_dir(v).unwrap_or_else(|| {
                self.invalid(format!("gravityDir of {what}"));
                defaults.gravity_dir
            }),
        };
        JointSettings {
            stiffness,
            drag,
            gravity_power,
            gravity_dir,
            hit_radius,
        }
    }

    /// VRM 0.x: `colliderGroups[]` (a node and spheres in its space) and `boneGroups[]` (roots
    /// whose every descendant is a joint).
    fn read_v0(&mut self, root: &Map<String, Value>) {
        let nodes = self.nodes;
        for (g, group) in array(root.get("colliderGroups")).iter().enumerate() {
            let node = self.node(group.get("node"), || format!("collider group {g}"));
            let mut members = Vec::new();
            for (c, collider) in array(group.get("colliders")).iter().enumerate() {
                let offset = vec3_object(collider.get("offset"));
                let radius = radius(collider.get("radius"));
                match (node, offset, radius) {
                    (Some(node), Some(offset), Some(radius)) => {
                        members.push(self.rig.colliders.len());
                        self.rig.colliders.push(Collider {
                            node,
                            shape: ColliderShape::Sphere {
                                // UniVRM writes these in Unity's axes: Z is mirrored.
                                offset: offset * Vec3::new(1.0, 1.0, -1.0),
                                radius,
                            },
                        });
                    }
                    (Some(_), _, _) => {
                        self.invalid(format!("collider {c} of collider group {g}"));
                    }
                    (None, _, _) => {}
                }
            }
            self.rig.collider_groups.push(members);
        }
        let group_count = self.rig.collider_groups.len();
        for (b, group) in array(root.get("boneGroups")).iter().enumerate() {
            let what = format!("bone group {b}");
            let collider_groups = self.groups(group.get("colliderGroups"), group_count, &what);
            let center = match group.get("center") {
                None | Some(Value::Null) => None,
                Some(v) if v.as_i64() == Some(-1) => None,
                center => self.node(center, || format!("the center of {what}")),
            };
            let settings = self.settings_v0(group, &what);
            for item in array(group.get("bones")) {
                let Some(root) = self.node(Some(item), || format!("a bone of {what}")) else {
                    continue;
                };
                let mut joints = Vec::new();
                // Depth first, each node before its descendants.
                let mut stack = vec![root];
                let mut seen = HashSet::new();
                while let Some(node) = stack.pop() {
                    if !seen.insert(node) {
                        continue;
                    }
                    let children = &nodes[node].children;
                    let tail = match children.first().and_then(|&c| nodes.get(c)) {
                        Some(child) => child.translation,
                        None => nodes[node].translation.normalize_or_zero() * LEAF_TAIL,
                    };
                    stack.extend(children.iter().rev().filter(|&&c| c < nodes.len()));
                    if let Some(joint) = self.joint(node, tail, settings) {
                        joints.push(joint);
                    }
                }
                if !joints.is_empty() {
                    self.rig.springs.push(Spring {
                        name: group
                            .get("comment")
                            .and_then(Value::as_str)
                            .filter(|c| !c.is_empty())
                            .map(str::to_owned),
                        joints,
                        collider_groups: collider_groups.clone(),
                        center,
                    });
                }
            }
        }
    }

    fn settings_v0(&mut self, group: &Value, what: &str) -> JointSettings {
        // "stiffiness" is the VRM 0.x spelling; accept the corrected one too.
        let stiffness_key = if group.get("stiffiness").is_some() {
            "stiffiness"
        } else {
            "stiffness"
        };
        // Unity's world (mirrored Z), then the half turn: X and Z change sign once each.
        self.settings(group, what, stiffness_key, |v| {
            vec3_object(Some(v)).map(|d| (d * Vec3::new(-1.0, 1.0, 1.0)).normalize_or_zero())
        })
    }
}

/// A non-negative integer that fits `usize`.
fn index(value: &Value) -> Option<usize> {
    value.as_u64().and_then(|v| usize::try_from(v).ok())
}

/// The items of a JSON array, or none.
fn array(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// A radius: finite and not negative; absent means 0.
fn radius(value: Option<&Value>) -> Option<f32> {
    match value {
        None => Some(0.0),
        Some(v) => v
            .as_f64()
            .map(|r| r as f32)
            .filter(|r| r.is_finite() && *r >= 0.0),
    }
}

/// `[x, y, z]` (VRM 1.0); absent means zero.
fn vec3_array(value: Option<&Value>) -> Option<Vec3> {
    let Some(value) = value else {
        return Some(Vec3::ZERO);
    };
    let items = value.as_array().filter(|a| a.len() == 3)?;
    let mut v = [0.0f32; 3];
    for (slot, item) in v.iter_mut().zip(items) {
        *slot = item.as_f64()? as f32;
    }
    Some(Vec3::from(v)).filter(|v| v.is_finite())
}

/// `{"x": .., "y": .., "z": ..}` (VRM 0.x); absent axes and an absent object mean zero.
fn vec3_object(value: Option<&Value>) -> Option<Vec3> {
    let Some(value) = value else {
        return Some(Vec3::ZERO);
    };
    let object = value.as_object()?;
    let mut v = [0.0f32; 3];
    for (slot, key) in v.iter_mut().zip(["x", "y", "z"]) {
        if let Some(item) = object.get(key) {
            *slot = item.as_f64()? as f32;
        }
    }
    Some(Vec3::from(v)).filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::spring::SpringIssue;
    use serde_json::json;

    /// A chain 0 → 1 → 2 → 3 (each 10 cm down) and a lone node 4 with a child 5.
    fn nodes() -> Vec<Node> {
        let node = |parent: Option<usize>, children: Vec<usize>, y: f32| Node {
            parent,
            children,
            translation: Vec3::new(0.0, y, 0.0),
            ..Node::default()
        };
        vec![
            node(None, vec![1], 1.5),
            node(Some(0), vec![2], -0.1),
            node(Some(1), vec![3], -0.1),
            node(Some(2), vec![], -0.1),
            node(None, vec![5], 1.0),
            node(Some(4), vec![], 0.2),
        ]
    }

    fn read(extensions: Value) -> Option<SpringRig> {
        parse(extensions.as_object(), &nodes(), "test.vrm")
    }

    #[test]
    fn vrm1_springs_joints_colliders_groups_and_centre() {
        let rig = read(json!({"VRMC_springBone": {
            "specVersion": "1.0",
            "colliders": [
                {"node": 4, "shape": {"sphere": {"offset": [0.0, 0.1, 0.0], "radius": 0.09}}},
                {"node": 4, "shape": {"capsule": {"offset": [0.1, 0.0, 0.0], "radius": 0.05,
                                                  "tail": [-0.1, 0.0, 0.0]}}},
                {"node": 4, "shape": {}}
            ],
            "colliderGroups": [{"name": "head", "colliders": [0, 1, 2]}, {"colliders": [1]}],
            "springs": [{
                "name": "hair",
                "center": 4,
                "colliderGroups": [1, 0, 7],
                "joints": [
                    {"node": 1, "hitRadius": 0.02, "stiffness": 2.5, "gravityPower": 0.5,
                     "gravityDir": [0.0, 0.0, -2.0], "dragForce": 0.3},
                    {"node": 2},
                    {"node": 3, "stiffness": 9.0}
                ]
            }]
        }}))
        .unwrap();
        assert_eq!(
            rig.colliders[0],
            Collider {
                node: 4,
                shape: ColliderShape::Sphere {
                    offset: Vec3::new(0.0, 0.1, 0.0),
                    radius: 0.09
                }
            }
        );
        assert_eq!(
            rig.colliders[1].shape,
            ColliderShape::Capsule {
                offset: Vec3::X * 0.1,
                tail: Vec3::X * -0.1,
                radius: 0.05
            }
        );
        // The shapeless collider is reported and left out of its group.
        assert_eq!(rig.collider_groups, vec![vec![0, 1], vec![1]]);
        assert_eq!(rig.springs.len(), 1);
        let spring = &rig.springs[0];
        assert_eq!(spring.name.as_deref(), Some("hair"));
        assert_eq!(spring.center, Some(4));
        assert_eq!(spring.collider_groups, vec![1, 0]);
        // The last joint is only the chain's tail.
        let nodes: Vec<usize> = spring.joints.iter().map(|j| j.node).collect();
        assert_eq!(nodes, vec![1, 2]);
        let first = spring.joints[0];
        assert_eq!(first.tail, Vec3::new(0.0, -0.1, 0.0));
        assert_eq!(
            first.settings,
            JointSettings {
                stiffness: 2.5,
                drag: 0.3,
                gravity_power: 0.5,
                gravity_dir: Vec3::NEG_Z,
                hit_radius: 0.02,
            }
        );
        assert_eq!(spring.joints[1].settings, JointSettings::default());
        assert!(rig.skipped.contains(&SpringIssue::NoShape { index: 2 }));
        assert!(rig.skipped.iter().any(|i| matches!(
            i,
            SpringIssue::NoSuchCollider {
                kind: "collider group",
                index: 7,
                ..
            }
        )));
    }

    #[test]
    fn vrm1_invalid_colliders_are_dropped_and_groups_remapped() {
        let sphere = |node: Value, radius: Value| json!({"node": node, "shape": {"sphere": {"offset": [0.0, 0.1, 0.0], "radius": radius}}});
        let rig = read(json!({"VRMC_springBone": {
            "colliders": [
                sphere(json!(-1), json!(0.1)),
                sphere(json!(4), json!(0.1)),
                sphere(json!(99), json!(0.1)),
                {"node": 4, "shape": {}},
                {"node": 4},
                sphere(json!(4), json!(-0.5)),
                sphere(json!(4), json!("wide")),
                {"node": 4, "shape": {"capsule": {"offset": [0.1, 0.0], "radius": 0.05}}},
                {"node": 4, "shape": {"capsule": {"offset": [0.1, 0.0, 0.0], "radius": 0.05,
                                                  "tail": [-0.1, 0.0, 0.0]}}}
            ],
            // Group 1 is used by no spring and names only dropped colliders.
            "colliderGroups": [{"colliders": [0, 1, 2, 3, 8, 12]}, {"colliders": [2, 5]}],
            "springs": [{"colliderGroups": [0], "joints": [{"node": 1}, {"node": 2}]}]
        }}))
        .unwrap();
        // Only the two valid colliders are kept, renumbered in file order.
        assert_eq!(rig.colliders.len(), 2);
        assert!(rig.colliders.iter().all(|c| c.node == 4));
        assert!(matches!(
            rig.colliders[1].shape,
            ColliderShape::Capsule { .. }
        ));
        assert_eq!(rig.collider_groups, vec![vec![0, 1], vec![]]);
        // Each dropped collider is reported once, and the index past the file's colliders too.
        let issues: Vec<String> = rig.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(issues.len(), 8, "{issues:#?}");
        assert!(
            issues
                .iter()
                .any(|i| i.contains("collider 2 names node 99")),
            "{issues:#?}"
        );
        assert!(
            issues.iter().any(|i| i.contains("names collider 12")),
            "{issues:#?}"
        );
    }

    #[test]
    fn vrm1_chain_stops_at_a_node_that_is_not_a_child() {
        let rig = read(json!({"VRMC_springBone": {"springs": [
            {"joints": [{"node": 0}, {"node": 1}, {"node": 5}, {"node": 3}]},
            {"joints": [{"node": 4}, {"node": 99}]}
        ]}}))
        .unwrap();
        assert_eq!(rig.springs.len(), 1);
        assert_eq!(rig.springs[0].joints.len(), 1);
        assert!(rig.skipped.iter().any(|i| *i
            == SpringIssue::NoSuchNode {
                what: "joint 1 of spring 1".into(),
                index: 99
            }));
    }

    #[test]
    fn vrm0_bone_groups_with_stiffiness_and_no_centre() {
        let rig = read(json!({"VRM": {"secondaryAnimation": {
            "boneGroups": [
                {"comment": "hair", "bones": [1], "center": -1, "colliderGroups": [0],
                 "stiffiness": 2.0, "dragForce": 0.1, "gravityPower": 0.2,
                 "gravityDir": {"x": 1.0, "y": 0.0, "z": 0.0}, "hitRadius": 0.03},
                {"bones": [4, 2], "center": 0, "stiffness": 3.0}
            ],
            "colliderGroups": [
                {"node": 0, "colliders": [{"offset": {"x": 0.1, "y": 0.2, "z": 0.3},
                                           "radius": 0.1}]}
            ]
        }}}))
        .unwrap();
        // A Unity-axes offset: Z mirrored.
        assert_eq!(
            rig.colliders,
            vec![Collider {
                node: 0,
                shape: ColliderShape::Sphere {
                    offset: Vec3::new(0.1, 0.2, -0.3),
                    radius: 0.1
                }
            }]
        );
        assert_eq!(rig.collider_groups, vec![vec![0]]);
        let hair = &rig.springs[0];
        assert_eq!(hair.name.as_deref(), Some("hair"));
        assert_eq!(hair.center, None);
        assert_eq!(hair.collider_groups, vec![0]);
        // The root and every descendant; the leaf's tail lies 7 cm along its own translation.
        let joints: Vec<(usize, Vec3)> = hair.joints.iter().map(|j| (j.node, j.tail)).collect();
        assert_eq!(
            joints,
            vec![
                (1, Vec3::new(0.0, -0.1, 0.0)),
                (2, Vec3::new(0.0, -0.1, 0.0)),
                (3, Vec3::new(0.0, -LEAF_TAIL, 0.0)),
            ]
        );
        let s = hair.joints[0].settings;
        assert_eq!(
            (s.stiffness, s.drag, s.gravity_power, s.hit_radius),
            (2.0, 0.1, 0.2, 0.03)
        );
        // A direction in the file's world is turned with the model: +X becomes -X.
        assert_eq!(s.gravity_dir, Vec3::NEG_X);
        // The second group: its own root, a centre, and node 2 already driven by the first.
        assert_eq!(rig.springs.len(), 2);
        assert_eq!(rig.springs[1].center, Some(0));
        assert_eq!(rig.springs[1].joints[0].node, 4);
        assert_eq!(rig.springs[1].joints[0].settings.stiffness, 3.0);
        assert!(rig.skipped.contains(&SpringIssue::DrivenTwice { node: 2 }));
    }

    #[test]
    fn no_springs_no_rig() {
        assert!(read(json!({})).is_none());
        assert!(read(json!({"VRM": {"humanoid": {}}})).is_none());
        assert!(read(json!({"VRMC_springBone": {"springs": []}})).is_none());
        assert!(parse(None, &nodes(), "x").is_none());
    }
}

//! Humanoid rigs: which nodes are the head, neck, chest, arms and eyes, read from a VRM's
//! humanoid bones or, for plain glTF, from the bone names that Mixamo, Ready Player Me, VRoid,
//! Unreal, Blender and Character Creator rigs use.

use glam::Vec3;

use super::Avatar;

/// Which side of the body a bone is on, as the avatar sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The avatar's left (+X once it faces +Z).
    Left,
    /// The avatar's right (-X once it faces +Z).
    Right,
}

/// The humanoid bones facewire uses: the torso up to the head, the arms and the eyes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bone {
    /// The lowest spine bone above the hips.
    Spine,
    /// The chest (Mixamo's and Ready Player Me's `Spine2`, VRoid's `J_Bip_C_Chest`).
    Chest,
    /// The upper chest (VRoid's `J_Bip_C_UpperChest`).
    UpperChest,
    /// The neck.
    Neck,
    /// The head.
    Head,
    /// The shoulder (clavicle).
    Shoulder(Side),
    /// The upper arm.
    UpperArm(Side),
    /// The lower arm (forearm).
    LowerArm(Side),
    /// The hand.
    Hand(Side),
    /// The eye.
    Eye(Side),
}

/// How many [`Bone`]s there are.
const BONES: usize = 15;

impl Bone {
    /// Every bone, in the order [`Humanoid`] stores them.
    pub const ALL: [Bone; BONES] = [
        Bone::Spine,
        Bone::Chest,
        Bone::UpperChest,
        Bone::Neck,
        Bone::Head,
        Bone::Shoulder(Side::Left),
        Bone::Shoulder(Side::Right),
        Bone::UpperArm(Side::Left),
        Bone::UpperArm(Side::Right),
        Bone::LowerArm(Side::Left),
        Bone::LowerArm(Side::Right),
        Bone::Hand(Side::Left),
        Bone::Hand(Side::Right),
        Bone::Eye(Side::Left),
        Bone::Eye(Side::Right),
    ];

    /// The VRM humanoid bone name (`head`, `leftUpperArm`).
    pub fn vrm_name(self) -> &'static str {
        use Side::{Left as L, Right as R};
        match self {
            Bone::Spine => "spine",
            Bone::Chest => "chest",
            Bone::UpperChest => "upperChest",
            Bone::Neck => "neck",
            Bone::Head => "head",
            Bone::Shoulder(L) => "leftShoulder",
            Bone::Shoulder(R) => "rightShoulder",
            Bone::UpperArm(L) => "leftUpperArm",
            Bone::UpperArm(R) => "rightUpperArm",
            Bone::LowerArm(L) => "leftLowerArm",
            Bone::LowerArm(R) => "rightLowerArm",
            Bone::Hand(L) => "leftHand",
            Bone::Hand(R) => "rightHand",
            Bone::Eye(L) => "leftEye",
            Bone::Eye(R) => "rightEye",
        }
    }

    /// The bone a rig's node name stands for, ignoring case, separators (`_ - . space`), the
    /// prefixes rigs put in front (`mixamorig:`, `Armature_`, `DEF-`, `J_Bip_C_`, `CC_Base_`,
    /// `Bip01 `) and an `_Armature` suffix. The side is a `Left`/`Right` prefix or a `L`/`R`
    /// word at either end (`LeftArm`, `J_Bip_L_UpperArm`, `upper_arm.L`, `hand_r`).
    pub fn from_node_name(name: &str) -> Option<Bone> {
        let lower = name.to_ascii_lowercase();
        // Namespaces: `mixamorig:Head`, `Armature|Head`.
        let mut rest = lower.rsplit([':', '|']).next().unwrap_or(&lower);
        const PREFIXES: [&str; 10] = [
            "armature",
            "def",
            "mixamorig",
            "bip001",
            "bip01",
            "bip",
            "j",
            "cc",
            "base",
            "orig",
        ];
        const SUFFIXES: [&str; 1] = ["armature"];
        let mut words: Vec<&str> = rest
            .split(['_', '-', '.', ' '])
            .filter(|w| !w.is_empty())
            .collect();
        // Strip known prefixes and suffixes, word by word.
        loop {
            match words.first() {
                Some(w) if PREFIXES.contains(w) && words.len() > 1 => {
                    words.remove(0);
                }
                _ => break,
            }
        }
        while words.len() > 1 && words.last().is_some_and(|w| SUFFIXES.contains(w)) {
            words.pop();
        }
        // `J_Bip_C_Head`: a centre marker.
        if words.len() > 1 && words[0] == "c" {
            words.remove(0);
        }
        let side_word = |w: &str| match w {
            "l" | "left" => Some(Side::Left),
            "r" | "right" => Some(Side::Right),
            _ => None,
        };
        let mut side = None;
        if words.len() > 1 {
            if let Some(s) = side_word(words[0]) {
                side = Some(s);
                words.remove(0);
            } else if let Some(s) = side_word(words[words.len() - 1]) {
                side = Some(s);
                words.pop();
            }
        }
        let joined = words.concat();
        rest = &joined;
        if side.is_none() {
            if let Some(r) = rest.strip_prefix("left") {
                side = Some(Side::Left);
                rest = r;
            } else if let Some(r) = rest.strip_prefix("right") {
                side = Some(Side::Right);
                rest = r;
            }
        }
        let centre = match rest {
            "head" => Some(Bone::Head),
            "neck" | "neck1" | "neck01" => Some(Bone::Neck),
            "upperchest" | "spine3" | "spine03" => Some(Bone::UpperChest),
            "chest" | "spine2" | "spine02" => Some(Bone::Chest),
            "spine" | "spine01" => Some(Bone::Spine),
            _ => None,
        };
        match (centre, side) {
            (Some(bone), None) => return Some(bone),
            (Some(_), Some(_)) => return None,
            _ => {}
        }
        let side = side?;
        match rest {
            "shoulder" | "clavicle" => Some(Bone::Shoulder(side)),
            "upperarm" | "arm" | "uparm" => Some(Bone::UpperArm(side)),
            "lowerarm" | "forearm" | "elbow" | "lowarm" => Some(Bone::LowerArm(side)),
            "hand" | "wrist" => Some(Bone::Hand(side)),
            "eye" => Some(Bone::Eye(side)),
            _ => None,
        }
    }

    /// The index into [`Bone::ALL`].
    fn index(self) -> usize {
        Bone::ALL
            .iter()
            .position(|&b| b == self)
            .unwrap_or_default()
    }
}

/// The humanoid bones an avatar has: the node of each [`Bone`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Humanoid {
    /// The node of each bone, in [`Bone::ALL`]'s order.
    nodes: [Option<usize>; BONES],
}

impl Humanoid {
    /// The avatar's humanoid bones, or `None` when it is not a humanoid. A VRM's humanoid bones
    /// come first; bone names fill what it does not list, and a plain glTF is read from its
    /// bone names alone. A humanoid has a head, a neck or a chest (a plain glTF needs both),
    /// and its head sits above its chest in the rest pose.
    pub fn detect(avatar: &Avatar) -> Option<Humanoid> {
        let mut nodes = [None; BONES];
        let from_vrm = avatar.vrm.as_ref().filter(|v| !v.humanoid.is_empty());
        if let Some(vrm) = from_vrm {
            for bone in Bone::ALL {
                nodes[bone.index()] = vrm
                    .humanoid_bone(bone.vrm_name())
                    .filter(|&n| n < avatar.nodes.len());
            }
        }
        for (index, node) in avatar.nodes.iter().enumerate() {
            // A node that draws a mesh is a part of the body, not a bone.
            if node.mesh.is_some() {
                continue;
            }
            let Some(bone) = node.name.as_deref().and_then(Bone::from_node_name) else {
                continue;
            };
            if nodes[bone.index()].is_none() && !nodes.contains(&Some(index)) {
                nodes[bone.index()] = Some(index);
            }
        }
        let humanoid = Humanoid { nodes };
        let head = humanoid.bone(Bone::Head)?;
        let torso = humanoid.chest();
        let enough = if from_vrm.is_some() {
            humanoid.bone(Bone::Neck).is_some() || torso.is_some()
        } else {
            humanoid.bone(Bone::Neck).is_some() && torso.is_some()
        };
        if !enough {
            return None;
        }
        let world = avatar.world_transforms(&avatar.rest_pose());
        let below = torso.or(humanoid.bone(Bone::Neck))?;
        let up = world[head].w_axis.y - world[below].w_axis.y;
        (up > 0.0).then_some(humanoid)
    }

    /// The node of `bone`, if the rig has it.
    pub fn bone(&self, bone: Bone) -> Option<usize> {
        self.nodes[bone.index()]
    }

    /// The bone a bust is cut at: the chest, else the upper chest, else the spine.
    pub fn chest(&self) -> Option<usize> {
        self.bone(Bone::Chest)
            .or(self.bone(Bone::UpperChest))
            .or(self.bone(Bone::Spine))
    }

    /// Every bone found, with its node.
    pub fn bones(&self) -> impl Iterator<Item = (Bone, usize)> + '_ {
        Bone::ALL
            .iter()
            .zip(&self.nodes)
            .filter_map(|(&b, &n)| n.map(|n| (b, n)))
    }
}

/// World position of node `node` in the rest pose, from [`Avatar::world_transforms`].
pub(crate) fn position(world: &[glam::Mat4], node: usize) -> Vec3 {
    world.get(node).map_or(Vec3::ZERO, |m| m.w_axis.truncate())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::avatar::{Node, Vrm};
    use glam::Quat;

    /// A node named `name` under `parent` at `translation` from it.
    pub(crate) fn add(
        avatar: &mut Avatar,
        name: &str,
        parent: Option<usize>,
        translation: Vec3,
    ) -> usize {
        let index = avatar.nodes.len();
        avatar.nodes.push(Node {
            name: Some(name.to_string()),
            parent,
            translation,
            ..Node::default()
        });
        match parent {
            Some(p) => avatar.nodes[p].children.push(index),
            None => avatar.roots.push(index),
        }
        index
    }

    /// A Ready Player Me rig's bone names, hips to hands.
    pub(crate) const READY_PLAYER_ME: [&str; 13] = [
        "Hips",
        "Spine",
        "Spine2",
        "Neck",
        "Head",
        "LeftShoulder",
        "LeftArm",
        "LeftForeArm",
        "LeftHand",
        "RightShoulder",
        "RightArm",
        "RightForeArm",
        "RightHand",
    ];

    /// A VRoid rig's bone names, hips to hands.
    pub(crate) const VROID: [&str; 13] = [
        "J_Bip_C_Hips",
        "J_Bip_C_Spine",
        "J_Bip_C_Chest",
        "J_Bip_C_Neck",
        "J_Bip_C_Head",
        "J_Bip_L_Shoulder",
        "J_Bip_L_UpperArm",
        "J_Bip_L_LowerArm",
        "J_Bip_L_Hand",
        "J_Bip_R_Shoulder",
        "J_Bip_R_UpperArm",
        "J_Bip_R_LowerArm",
        "J_Bip_R_Hand",
    ];

    /// A standing rig with the given names for hips, spine, chest, neck, head and the left
    /// and right shoulder, upper arm, lower arm and hand, arms straight out (a T-pose).
    pub(crate) fn rig(names: [&str; 13]) -> Avatar {
        let mut a = Avatar::default();
        let hips = add(&mut a, names[0], None, Vec3::new(0.0, 1.0, 0.0));
        let spine = add(&mut a, names[1], Some(hips), Vec3::new(0.0, 0.1, 0.0));
        let chest = add(&mut a, names[2], Some(spine), Vec3::new(0.0, 0.15, 0.0));
        let neck = add(&mut a, names[3], Some(chest), Vec3::new(0.0, 0.2, 0.0));
        add(&mut a, names[4], Some(neck), Vec3::new(0.0, 0.1, 0.0));
        for (k, sign) in [(5, 1.0), (9, -1.0)] {
            let shoulder = add(
                &mut a,
                names[k],
                Some(chest),
                Vec3::new(sign * 0.03, 0.17, 0.0),
            );
            let upper = add(&mut a, names[k + 1], Some(shoulder), Vec3::X * sign * 0.1);
            let lower = add(&mut a, names[k + 2], Some(upper), Vec3::X * sign * 0.25);
            add(&mut a, names[k + 3], Some(lower), Vec3::X * sign * 0.25);
        }
        a
    }

    fn found(avatar: &Avatar) -> Vec<(Bone, String)> {
        let h = Humanoid::detect(avatar).expect("a humanoid");
        h.bones()
            .map(|(b, n)| (b, avatar.nodes[n].name.clone().unwrap()))
            .collect()
    }

    fn check_names(names: [&str; 13]) {
        let a = rig(names);
        let got = found(&a);
        let expect = [
            (Bone::Spine, names[1]),
            (Bone::Chest, names[2]),
            (Bone::Neck, names[3]),
            (Bone::Head, names[4]),
            (Bone::Shoulder(Side::Left), names[5]),
            (Bone::UpperArm(Side::Left), names[6]),
            (Bone::LowerArm(Side::Left), names[7]),
            (Bone::Hand(Side::Left), names[8]),
            (Bone::Shoulder(Side::Right), names[9]),
            (Bone::UpperArm(Side::Right), names[10]),
            (Bone::LowerArm(Side::Right), names[11]),
            (Bone::Hand(Side::Right), names[12]),
        ];
        for (bone, name) in expect {
            assert!(
                got.contains(&(bone, name.to_string())),
                "{bone:?} should be {name}: {got:?}"
            );
        }
    }

    #[test]
    fn mixamo_names_make_a_humanoid() {
        check_names([
            "mixamorig:Hips",
            "mixamorig:Spine",
            "mixamorig:Spine2",
            "mixamorig:Neck",
            "mixamorig:Head",
            "mixamorig:LeftShoulder",
            "mixamorig:LeftArm",
            "mixamorig:LeftForeArm",
            "mixamorig:LeftHand",
            "mixamorig:RightShoulder",
            "mixamorig:RightArm",
            "mixamorig:RightForeArm",
            "mixamorig:RightHand",
        ]);
    }

    #[test]
    fn ready_player_me_names_make_a_humanoid() {
        check_names(READY_PLAYER_ME);
    }

    #[test]
    fn vroid_names_make_a_humanoid() {
        check_names(VROID);
    }

    #[test]
    fn blender_unreal_and_prefixed_spellings_are_read() {
        let cases = [
            ("DEF-upper_arm.L", Some(Bone::UpperArm(Side::Left))),
            ("Armature_Head", Some(Bone::Head)),
            ("upperarm_r", Some(Bone::UpperArm(Side::Right))),
            ("clavicle_l", Some(Bone::Shoulder(Side::Left))),
            ("neck_01", Some(Bone::Neck)),
            ("spine_03", Some(Bone::UpperChest)),
            ("hand.r_Armature", Some(Bone::Hand(Side::Right))),
            ("CC_Base_L_Forearm", Some(Bone::LowerArm(Side::Left))),
            ("Left elbow", Some(Bone::LowerArm(Side::Left))),
            ("J_Bip_C_UpperChest", Some(Bone::UpperChest)),
            ("J_Adj_L_FaceEye", None),
            ("mixamorig:LeftHandIndex1", None),
            ("HeadTop_End", None),
            ("LeftUpLeg", None),
            ("Head_L", None),
            ("Arm", None),
            ("", None),
        ];
        for (name, bone) in cases {
            assert_eq!(Bone::from_node_name(name), bone, "{name}");
        }
    }

    #[test]
    fn a_head_alone_or_upside_down_is_not_a_humanoid() {
        let mut head_only = Avatar::default();
        add(&mut head_only, "Head", None, Vec3::ZERO);
        add(&mut head_only, "Spine", None, Vec3::ZERO);
        assert_eq!(Humanoid::detect(&head_only), None, "no neck");
        let mut flipped = rig(READY_PLAYER_ME);
        flipped.nodes[0].rotation = Quat::from_rotation_x(std::f32::consts::PI);
        assert_eq!(Humanoid::detect(&flipped), None, "head below the chest");
        assert_eq!(Humanoid::detect(&Avatar::default()), None);
    }

    #[test]
    fn vrm_bones_win_over_names() {
        let mut a = rig([
            "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m",
        ]);
        assert_eq!(Humanoid::detect(&a), None, "no names, no VRM");
        let names = [
            "spine",
            "chest",
            "neck",
            "head",
            "leftShoulder",
            "leftUpperArm",
            "leftLowerArm",
            "leftHand",
        ];
        let nodes = [1, 2, 3, 4, 5, 6, 7, 8];
        a.vrm = Some(Vrm {
            humanoid: names
                .iter()
                .zip(nodes)
                .map(|(n, i)| (n.to_string(), i))
                .collect(),
            version: crate::avatar::VrmVersion::V1,
            spec_version: None,
            title: None,
            author: None,
            expressions: Vec::new(),
            look_at: None,
            skipped: 0,
        });
        // A node whose name says Head elsewhere does not replace the VRM's head.
        add(&mut a, "Head", None, Vec3::new(0.0, 3.0, 0.0));
        let h = Humanoid::detect(&a).expect("a VRM humanoid");
        assert_eq!(h.bone(Bone::Head), Some(4));
        assert_eq!(h.bone(Bone::UpperArm(Side::Left)), Some(6));
        assert_eq!(h.bone(Bone::UpperArm(Side::Right)), None);
        assert_eq!(h.chest(), Some(2));
    }
}

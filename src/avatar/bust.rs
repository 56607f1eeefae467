//! The bust of a humanoid avatar: where its head, neck and chest are in the rest pose and how
//! large its head is, and the box a camera frames to show it from the chest up, as VTuber
//! overlays do.

use glam::Vec3;

use super::humanoid::{position, Bone, Humanoid};
use super::{blend, Aabb, Avatar};

/// A humanoid's head and chest in world space, in the rest pose.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bust {
    /// The head bone's position (the base of the skull).
    pub head: Vec3,
    /// The neck bone's position (the base of the neck).
    pub neck: Vec3,
    /// The chest bone's position, where the picture is cut.
    pub chest: Vec3,
    /// The height (Y) of the top of the head.
    pub head_top: f32,
    /// Half the head's width: the farthest its skull reaches sideways from the head bone.
    pub head_half_width: f32,
    /// The nearest and farthest Z the skull reaches (back, front).
    pub head_depth: (f32, f32),
}

/// Headroom above the head, as a fraction of the head-and-neck height.
const HEADROOM: f32 = 0.03;
/// The picture is cut at the chest bone, but never less than this many head-and-neck heights
/// below the neck...
const CUT_MIN: f32 = 0.35;
/// ...and never more than this many.
const CUT_MAX: f32 = 1.2;

impl Bust {
    /// The bust of `avatar` when it is a humanoid ([`Humanoid::detect`]).
    pub fn of(avatar: &Avatar) -> Option<Bust> {
        Bust::measure(avatar, &Humanoid::detect(avatar)?)
    }

    /// Measures the bust of `avatar` with its humanoid bones: the bones' rest positions and the
    /// extent of the mesh skinned mostly to the head and the bones under it (hair, eyes), or,
    /// when no vertex follows the head, of the mesh above the neck. `None` when there is no
    /// such mesh, or when it is flat (a test card on a humanoid rig is not a head).
    pub fn measure(avatar: &Avatar, humanoid: &Humanoid) -> Option<Bust> {
        let world = avatar.world_transforms(&avatar.rest_pose());
        let head_node = humanoid.bone(Bone::Head)?;
        let head = position(&world, head_node);
        let (neck, chest) = match (humanoid.bone(Bone::Neck), humanoid.chest()) {
            (Some(n), Some(c)) => (position(&world, n), position(&world, c)),
            (Some(n), None) => {
                let neck = position(&world, n);
                (neck, neck - Vec3::Y * (head.y - neck.y).max(0.0) * 3.0)
            }
            (None, Some(c)) => {
                let chest = position(&world, c);
                (chest.lerp(head, 0.7), chest)
            }
            (None, None) => return None,
        };
        let under_head = subtree(avatar, head_node);
        // The skull: what follows the head (above the head bone, so hanging hair is left out),
        // or, when nothing does, the mesh above the neck.
        let mut following = Extent::new(head);
        let mut above_neck = Extent::new(head);
        for_each_rest_vertex(avatar, &world, |p, follows| {
            if follows.share(&under_head) > 0.5 {
                following.top = following.top.max(p.y);
                if p.y >= head.y {
                    following.add(p);
                }
            } else if p.y > neck.y {
                above_neck.top = above_neck.top.max(p.y);
                above_neck.add(p);
            }
        });
        let skull = [following, above_neck]
            .into_iter()
            .find(|e| e.count > 0 && e.top > head.y)
            // A flat board on a humanoid rig (a test card, a sign) is no skull to measure.
            .filter(|e| {
                let (width, deep) = (e.half_width * 2.0, e.depth.1 - e.depth.0);
                width > 0.0 && deep > width * 0.2
            });
        let bust = match skull {
            Some(e) => Bust {
                head,
                neck,
                chest,
                head_top: e.top,
                head_half_width: e.half_width,
                head_depth: e.depth,
            },
            None => Bust::from_bones(head, neck, chest, avatar.bounds()?)?,
        };
        (bust.head.is_finite() && bust.neck.is_finite() && bust.chest.is_finite()).then_some(bust)
    }

    /// A bust estimated from the bones alone, for a rig with no head mesh to measure: a skull
    /// twice the neck's length tall, about as wide as a head of that height. `None` when the
    /// avatar draws nothing there (`bounds`, the drawn extent, misses the bust), so a rig whose
    /// mesh is elsewhere keeps the whole-model framing.
    fn from_bones(head: Vec3, neck: Vec3, chest: Vec3, bounds: Aabb) -> Option<Bust> {
        let skull = 2.0 * (head.y - neck.y);
        if !(skull.is_finite() && skull > 0.0) {
            return None;
        }
        let half_width = 0.45 * skull;
        let bust = Bust {
            head,
            neck,
            chest,
            head_top: head.y + skull,
            head_half_width: half_width,
            head_depth: (head.z - half_width, head.z + half_width),
        };
        let region = bust.region();
        let height = region.max.y - region.min.y;
        let overlap = bounds.max.y.min(region.max.y) - bounds.min.y.max(region.min.y);
        let across = bounds.max.x.min(region.max.x) - bounds.min.x.max(region.min.x);
        (overlap > 0.25 * height && across > 0.0).then_some(bust)
    }

    /// The box a camera frames to show this bust: from a little above the head down to the
    /// chest, the head at its top and centred across, its width the shoulders' or more, its
    /// depth the skull's. [`Camera::framing`](crate::render::Camera::framing) of this box puts
    /// the face in the upper third of the picture.
    pub fn region(&self) -> Aabb {
        let length = (self.head_top - self.neck.y).max(1e-3);
        let top = self.head_top + HEADROOM * length;
        // At the chest bone, within limits that keep a big-headed (chibi) avatar's head large
        // and a long-necked one's shoulders in the picture.
        let bottom = self.chest.y.clamp(
            self.neck.y - CUT_MAX * length,
            self.neck.y - CUT_MIN * length,
        );
        let height = top - bottom;
        let half_x = (self.head_half_width * 1.4).max(height * 0.4);
        let (back, front) = self.head_depth;
        Aabb {
            min: Vec3::new(self.head.x - half_x, bottom, back),
            max: Vec3::new(self.head.x + half_x, top, front.max(back)),
        }
    }
}

/// How far some vertices reach around the head bone.
#[derive(Clone, Copy)]
struct Extent {
    /// The head bone's position.
    head: Vec3,
    /// The highest Y of all of them.
    top: f32,
    /// The farthest X from the head bone's, of those counted.
    half_width: f32,
    /// The lowest and highest Z of those counted.
    depth: (f32, f32),
    /// How many were counted.
    count: usize,
}

impl Extent {
    fn new(head: Vec3) -> Extent {
        Extent {
            head,
            top: f32::NEG_INFINITY,
            half_width: 0.0,
            depth: (f32::INFINITY, f32::NEG_INFINITY),
            count: 0,
        }
    }

    fn add(&mut self, p: Vec3) {
        self.half_width = self.half_width.max((p.x - self.head.x).abs());
        self.depth = (self.depth.0.min(p.z), self.depth.1.max(p.z));
        self.count += 1;
    }
}

/// Whether each node is `root` or under it.
fn subtree(avatar: &Avatar, root: usize) -> Vec<bool> {
    let mut inside = vec![false; avatar.nodes.len()];
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if n < inside.len() && !std::mem::replace(&mut inside[n], true) {
            stack.extend(&avatar.nodes[n].children);
        }
    }
    inside
}

/// What a vertex follows: joints of a skin with their weights, or the node of its mesh.
#[derive(Clone, Copy)]
enum Follows<'a> {
    /// A skinned vertex: its four joints (indices into `skin`), their weights, and the skin's
    /// joint nodes.
    Joints([u16; 4], glam::Vec4, &'a [usize]),
    /// An unskinned vertex moves with its mesh's node.
    Node(usize),
}

impl Follows<'_> {
    /// The share of the vertex that follows the nodes marked in `set`, 0 to 1.
    fn share(self, set: &[bool]) -> f32 {
        let marked = |node: usize| set.get(node) == Some(&true);
        match self {
            Follows::Node(node) => f32::from(u8::from(marked(node))),
            Follows::Joints(joints, weights, skin) => {
                let total = weights.x + weights.y + weights.z + weights.w;
                let inside: f32 = joints
                    .iter()
                    .zip(weights.to_array())
                    .filter(|(&j, _)| skin.get(usize::from(j)).is_some_and(|&n| marked(n)))
                    .map(|(_, w)| w)
                    .sum();
                if total > 0.0 {
                    inside / total
                } else {
                    0.0
                }
            }
        }
    }
}

/// Calls `visit` with every drawn vertex in the rest pose (skinned, in world space) and what
/// it follows.
fn for_each_rest_vertex(
    avatar: &Avatar,
    world: &[glam::Mat4],
    mut visit: impl FnMut(Vec3, Follows<'_>),
) {
    for (index, node) in avatar.nodes.iter().enumerate() {
        let Some(mesh) = node.mesh.and_then(|m| avatar.meshes.get(m)) else {
            continue;
        };
        let skin = avatar.node_skin(index);
        let joints = skin.map(|s| avatar.joint_matrices(s, world));
        let skin_joints = skin.map_or(&[][..], |s| avatar.skins[s].joints.as_slice());
        for prim in &mesh.primitives {
            let n = prim.positions.len();
            let skinned = joints
                .as_deref()
                .filter(|_| prim.joints.len() == n && prim.joint_weights.len() == n);
            for (v, p) in prim.positions.iter().enumerate() {
                let (model, follows) = match skinned {
                    Some(matrices) => {
                        let (js, ws) = (prim.joints[v], prim.joint_weights[v]);
                        (
                            blend::skin_matrix(js, ws, matrices, world[index]),
                            Follows::Joints(js, ws, skin_joints),
                        )
                    }
                    None => (world[index], Follows::Node(index)),
                };
                visit(model.transform_point3(*p), follows);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::humanoid::tests::{rig, READY_PLAYER_ME};
    use crate::avatar::{Mesh, Primitive};

    fn ready_player_me() -> Avatar {
        rig(READY_PLAYER_ME)
    }

    /// A mesh of `positions` drawn by a new node under `parent`.
    fn with_mesh(a: &mut Avatar, parent: usize, positions: Vec<Vec3>) {
        a.meshes.push(Mesh {
            primitives: vec![Primitive {
                positions,
                ..Primitive::default()
            }],
            name: None,
            target_names: Vec::new(),
            default_weights: Vec::new(),
        });
        let node = crate::avatar::humanoid::tests::add(a, "mesh", Some(parent), Vec3::ZERO);
        a.nodes[node].mesh = Some(a.meshes.len() - 1);
    }

    #[test]
    fn a_flat_card_over_the_bust_is_framed_by_the_bones_and_one_elsewhere_is_not() {
        let mut a = ready_player_me();
        assert!(Humanoid::detect(&a).is_some());
        assert_eq!(Bust::of(&a), None, "nothing drawn, nothing to frame");
        // A flat card at the legs (hips at 1.0): the bust would frame empty space.
        with_mesh(
            &mut a,
            0,
            vec![Vec3::new(-0.2, -1.0, 0.0), Vec3::new(0.2, -0.2, 0.0)],
        );
        assert_eq!(Bust::of(&a), None, "the card is not where the head is");
        // A flat card standing in front of the chest and head (the VRM 1.0 test fixtures):
        // no skull to measure, so the bones size the bust (head 1.55, neck 1.45).
        with_mesh(
            &mut a,
            0,
            vec![Vec3::new(-0.2, 0.0, 0.0), Vec3::new(0.2, 0.8, 0.0)],
        );
        let bust = Bust::of(&a).expect("a bust from the bones");
        assert!((bust.head_top - 1.75).abs() < 1e-5, "{}", bust.head_top);
        assert!((bust.head_half_width - 0.09).abs() < 1e-5);
        let region = bust.region();
        assert!(region.max.y > 1.75 && region.min.y < 1.45 && region.min.y >= 1.25 - 1e-5);
    }

    #[test]
    fn without_a_skinned_head_the_mesh_above_the_neck_is_measured() {
        // Hips 1.0, spine 1.1, chest 1.25, neck 1.45, head 1.55: a body mesh on the hips.
        let mut a = ready_player_me();
        with_mesh(
            &mut a,
            0,
            vec![
                Vec3::new(-0.1, 0.5, -0.1),
                Vec3::new(0.1, 0.75, 0.12),
                Vec3::new(0.0, 0.0, 0.0),
            ],
        );
        let bust = Bust::of(&a).expect("a bust");
        assert!((bust.head.y - 1.55).abs() < 1e-5);
        assert!((bust.neck.y - 1.45).abs() < 1e-5);
        assert!((bust.chest.y - 1.25).abs() < 1e-5);
        assert!((bust.head_top - 1.75).abs() < 1e-5, "{}", bust.head_top);
        assert!((bust.head_half_width - 0.1).abs() < 1e-5);
        let region = bust.region();
        assert!(region.max.y > bust.head_top && region.min.y < bust.neck.y);
        assert!(region.min.y >= bust.chest.y - 1e-5);
    }

    #[test]
    fn the_head_mesh_sets_the_top_and_width() {
        let mut a = ready_player_me();
        let head = a.find_node("Head").unwrap();
        // A skull of unskinned vertices parented to the head, and a body on the hips that
        // reaches higher than the head but does not follow it.
        a.meshes = vec![
            Mesh {
                primitives: vec![Primitive {
                    positions: vec![
                        Vec3::new(-0.09, 0.0, -0.1),
                        Vec3::new(0.09, 0.22, 0.11),
                        Vec3::new(0.0, -0.3, 0.0),
                    ],
                    ..Primitive::default()
                }],
                name: None,
                target_names: Vec::new(),
                default_weights: Vec::new(),
            },
            Mesh {
                primitives: vec![Primitive {
                    positions: vec![Vec3::new(0.5, 2.0, 0.0)],
                    ..Primitive::default()
                }],
                name: None,
                target_names: Vec::new(),
                default_weights: Vec::new(),
            },
        ];
        crate::avatar::humanoid::tests::add(&mut a, "skull", Some(head), Vec3::ZERO);
        let skull = a.nodes.len() - 1;
        a.nodes[skull].mesh = Some(0);
        crate::avatar::humanoid::tests::add(&mut a, "body", Some(0), Vec3::ZERO);
        let body = a.nodes.len() - 1;
        a.nodes[body].mesh = Some(1);
        let bust = Bust::of(&a).unwrap();
        assert!((bust.head_top - 1.77).abs() < 1e-5, "{}", bust.head_top);
        assert!((bust.head_half_width - 0.09).abs() < 1e-5);
        assert!((bust.head_depth.0 + 0.1).abs() < 1e-5 && (bust.head_depth.1 - 0.11).abs() < 1e-5);
    }

    #[test]
    fn a_non_humanoid_has_no_bust() {
        let mut a = Avatar::default();
        crate::avatar::humanoid::tests::add(&mut a, "Head", None, Vec3::ZERO);
        assert_eq!(Bust::of(&a), None);
    }
}

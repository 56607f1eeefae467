//! Avatar models in CPU memory: glTF 2.0 / GLB loading, the node hierarchy and the CPU reference
//! blend. No GL here; `render` uploads what this module loads.
//!
//! Morph targets are stored target-major and sparse: each target keeps only the vertices it
//! moves ([`Deltas`]), and reads as one delta per vertex as glTF defines them.

pub mod blend;
pub mod bust;
pub mod correctives;
mod deltas;
pub mod humanoid;
mod load;
pub mod lod;
pub mod lookat;
pub mod material_binds;
pub mod mtoon;
mod pixels;
pub mod rest_pose;
mod sampler;
pub mod spring;
pub mod vrm;

pub use bust::Bust;
pub use deltas::Deltas;
pub use humanoid::{Bone, Humanoid, Side};
pub use load::{
    load, load_slice, load_slice_with, load_with, AvatarError, LoadLimits, AVATAR_EXTENSIONS,
    DEFAULT_TEXTURE_BUDGET,
};
pub use lod::LodGroup;
pub use material_binds::MaterialOverride;
pub use mtoon::{Outline, OutlineMode, Toon};
pub use pixels::Pixels;
pub use rest_pose::{relax_arms, ArmRest, ArmStart, RelaxedArm};
pub use sampler::{MagFilter, MinFilter, Sampler, Wrap};
pub use vrm::{Expression, MorphBind, Preset, Vrm, VrmVersion};

use glam::{Mat3, Mat4, Quat, Vec2, Vec3, Vec4};

/// A loaded avatar: the default scene's nodes with their meshes, materials and textures.
#[derive(Debug, Clone, Default)]
pub struct Avatar {
    /// Where it was loaded from (a path, or a short label for in-memory data).
    pub source: String,
    /// Every node of the file, in glTF index order.
    pub nodes: Vec<Node>,
    /// Nodes of the scene that is drawn, without a parent.
    pub roots: Vec<usize>,
    /// Every mesh, in glTF index order.
    pub meshes: Vec<Mesh>,
    /// Every material, in glTF index order.
    pub materials: Vec<Material>,
    /// Decoded textures, in glTF texture index order.
    pub textures: Vec<Texture>,
    /// Each texture's name (the glTF texture's, else its image's), indexed like
    /// [`Avatar::textures`]; a mapping file names wrinkle maps by it.
    pub texture_names: Vec<Option<String>>,
    /// Every skin, in glTF index order.
    pub skins: Vec<Skin>,
    /// The skin each node's mesh is bound with (glTF `node.skin`), indexed like [`Avatar::nodes`];
    /// nodes past the end of this list have none. Read it through [`Avatar::node_skin`].
    pub node_skins: Vec<Option<usize>>,
    /// What the VRM extension says (expressions, humanoid bones, credits), for a VRM avatar.
    /// A VRM 0.x model is already turned to face +Z like every other avatar.
    pub vrm: Option<Vrm>,
    /// Spring bones (VRM 0.x `secondaryAnimation`, VRM 1.0 `VRMC_springBone`), if the file has
    /// any; [`spring::SpringSim`] moves them.
    pub springs: Option<spring::SpringRig>,
    /// Levels of detail (`MSFT_lod` on nodes): groups of nodes of which one level is drawn.
    /// The loader keeps only consistent groups: every node in at most one group, no level
    /// inside another level's subtree, every level reached from the scene's roots.
    pub lods: Vec<LodGroup>,
}

/// A skin: the joints that deform a mesh and the matrices that bring its vertices into each
/// joint's space.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Skin {
    /// The skin's name, if any.
    pub name: Option<String>,
    /// Joint nodes; a vertex's joint index `j` means node `joints[j]`.
    pub joints: Vec<usize>,
    /// One inverse bind matrix per joint (identity where the file gives none).
    pub inverse_bind: Vec<Mat4>,
}

/// One node of the hierarchy, with its rest transform.
#[derive(Debug, Clone)]
pub struct Node {
    /// The node's name, if the file gives one.
    pub name: Option<String>,
    /// The parent node, if any.
    pub parent: Option<usize>,
    /// Child nodes.
    pub children: Vec<usize>,
    /// Rest translation.
    pub translation: Vec3,
    /// Rest rotation.
    pub rotation: Quat,
    /// Rest scale.
    pub scale: Vec3,
    /// The mesh this node instantiates.
    pub mesh: Option<usize>,
    /// Morph weights set on the node; they override the mesh's default weights.
    pub weights: Option<Vec<f32>>,
}

impl Default for Node {
    /// A nameless root at the origin with the identity transform, no children and no mesh.
    fn default() -> Node {
        Node {
            name: None,
            parent: None,
            children: Vec::new(),
            translation: Vec3::ZERO,
            rotation: Quat::IDENTITY,
            scale: Vec3::ONE,
            mesh: None,
            weights: None,
        }
    }
}

/// A mesh: primitives sharing one set of morph weights.
#[derive(Debug, Clone)]
pub struct Mesh {
    /// The mesh's name, if any.
    pub name: Option<String>,
    /// Morph target names (from `mesh.extras.targetNames`), one per target; empty names where
    /// the file has none.
    pub target_names: Vec<String>,
    /// The mesh's default morph weights, one per target (zeros when the file gives none).
    pub default_weights: Vec<f32>,
    /// Its primitives.
    pub primitives: Vec<Primitive>,
}

impl Mesh {
    /// Number of morph targets (the same for every primitive of the mesh).
    pub fn target_count(&self) -> usize {
        self.target_names.len()
    }
}

/// A triangle list with its vertex attributes and morph targets.
#[derive(Debug, Clone, Default)]
pub struct Primitive {
    /// Vertex positions.
    pub positions: Vec<Vec3>,
    /// Vertex normals (generated flat-shaded when the file has none).
    pub normals: Vec<Vec3>,
    /// Texture coordinates of the set the material's base colour texture reads (`TEXCOORD_0`
    /// unless the material names another set); zeros when the file has none.
    pub uvs: Vec<Vec2>,
    /// Triangle indices (generated 0..n when the file has none).
    pub indices: Vec<u32>,
    /// The material index, if any.
    pub material: Option<usize>,
    /// Morph targets, one per mesh target, each with one delta per vertex (stored sparsely).
    pub targets: Vec<MorphTarget>,
    /// Skin joints (`JOINTS_0`), four per vertex, as indices into the skin's
    /// [`Skin::joints`]; empty when the primitive is not skinned.
    pub joints: Vec<[u16; 4]>,
    /// Skin weights (`WEIGHTS_0`), four per vertex, parallel to [`Primitive::joints`]. Each
    /// vertex's weights sum to 1, or are all zero for a vertex that follows the mesh's own node
    /// instead of the joints.
    pub joint_weights: Vec<Vec4>,
    /// Linear RGBA vertex colours (`COLOR_0`), multiplied into the base colour; empty when the
    /// file has none.
    pub colors: Vec<Vec4>,
}

/// One morph target of one primitive: offsets from the base, never absolute positions. Each
/// attribute stores only the vertices it moves (see [`Deltas`]); build one from dense lists with
/// `Vec::into`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MorphTarget {
    /// Position deltas, one per vertex.
    pub positions: Deltas,
    /// Normal deltas, one per vertex, or empty when the target has none.
    pub normals: Deltas,
    /// Tangent deltas (xyz of `TANGENT`), one per vertex, or empty when the target has none.
    pub tangents: Deltas,
}

/// The parts of a glTF material facewire draws.
#[derive(Debug, Clone, PartialEq)]
pub struct Material {
    /// The material's name, if any.
    pub name: Option<String>,
    /// Linear RGBA base colour factor.
    pub base_color: [f32; 4],
    /// Index into [`Avatar::textures`] of the base colour texture.
    pub base_color_texture: Option<usize>,
    /// Whether back faces are drawn.
    pub double_sided: bool,
    /// How the base colour's alpha is used.
    pub alpha_mode: AlphaMode,
    /// The alpha below which [`AlphaMode::Mask`] discards a fragment (glTF default 0.5).
    pub alpha_cutoff: f32,
    /// The `TEXCOORD_n` set the base colour texture reads (after `KHR_texture_transform`'s
    /// override); the loader puts that set into [`Primitive::uvs`].
    pub base_color_tex_coord: u32,
    /// `KHR_texture_transform` of the base colour texture (identity when absent). The MToon
    /// shade texture is read through the same transform.
    pub base_color_transform: TextureTransform,
    /// `KHR_materials_unlit`: the base colour is shown as is, without lighting.
    pub unlit: bool,
    /// Linear RGB emissive colour factor (glTF `emissiveFactor`, VRM 0.x `_EmissionColor`),
    /// added to the shaded colour; black is none.
    pub emissive: [f32; 3],
    /// Index into [`Avatar::textures`] of the texture multiplied into the emissive factor,
    /// read through the base colour texture's UV set and transform.
    pub emissive_texture: Option<usize>,
    /// MToon toon shading (VRM), which takes precedence over `unlit`.
    pub toon: Option<Toon>,
}

impl Default for Material {
    fn default() -> Self {
        Material {
            name: None,
            base_color: [1.0; 4],
            base_color_texture: None,
            double_sided: false,
            alpha_mode: AlphaMode::Opaque,
            alpha_cutoff: 0.5,
            base_color_tex_coord: 0,
            base_color_transform: TextureTransform::IDENTITY,
            unlit: false,
            emissive: [0.0; 3],
            emissive_texture: None,
            toon: None,
        }
    }
}

/// glTF `alphaMode`: how a material's alpha is used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AlphaMode {
    /// Alpha is ignored; the surface is fully opaque.
    #[default]
    Opaque,
    /// Fragments with alpha below [`Material::alpha_cutoff`] are discarded, the rest are opaque.
    Mask,
    /// Alpha-blended over what is behind, drawn after the opaque surfaces, far to near.
    Blend,
}

/// `KHR_texture_transform`: `uv' = T(offset) * R(rotation) * S(scale) * uv`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TextureTransform {
    /// Offset of the UV origin, in UV units.
    pub offset: Vec2,
    /// Counter-clockwise rotation of the UVs around the origin, in radians.
    pub rotation: f32,
    /// Scale of the UVs.
    pub scale: Vec2,
}

impl Default for TextureTransform {
    fn default() -> Self {
        TextureTransform::IDENTITY
    }
}

impl TextureTransform {
    /// No change.
    pub const IDENTITY: TextureTransform = TextureTransform {
        offset: Vec2::ZERO,
        rotation: 0.0,
        scale: Vec2::ONE,
    };

    /// The transform as a 3x3 matrix on `(u, v, 1)`, exactly as the extension defines it.
    pub fn matrix(&self) -> Mat3 {
        let (s, c) = self.rotation.sin_cos();
        let translation = Mat3::from_cols(
            Vec3::X,
            Vec3::Y,
            Vec3::new(self.offset.x, self.offset.y, 1.0),
        );
        let rotation = Mat3::from_cols(Vec3::new(c, -s, 0.0), Vec3::new(s, c, 0.0), Vec3::Z);
        let scale = Mat3::from_diagonal(Vec3::new(self.scale.x, self.scale.y, 1.0));
        translation * rotation * scale
    }

    /// Transforms one texture coordinate.
    pub fn apply(&self, uv: Vec2) -> Vec2 {
        (self.matrix() * uv.extend(1.0)).truncate()
    }

    /// Whether this is the identity.
    pub fn is_identity(&self) -> bool {
        *self == TextureTransform::IDENTITY
    }
}

/// A decoded texture: RGBA8, sRGB-encoded colour, rows top to bottom.
#[derive(Debug, Clone, PartialEq)]
pub struct Texture {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 4` bytes, shared with the other textures drawn from the same image;
    /// empty once [`Avatar::release_texture_pixels`] freed them.
    pub rgba: Pixels,
    /// How the texture is sampled: the glTF texture's sampler.
    pub sampler: Sampler,
}

/// An axis-aligned box.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Aabb {
    /// Smallest corner.
    pub min: Vec3,
    /// Largest corner.
    pub max: Vec3,
}

impl Aabb {
    /// The box's centre.
    pub fn center(&self) -> Vec3 {
        (self.min + self.max) * 0.5
    }

    /// The box's size along each axis.
    pub fn size(&self) -> Vec3 {
        self.max - self.min
    }

    /// The eight corners; corner `i` takes `max` on the axes whose bits (x 1, y 2, z 4) are
    /// set in `i`, `min` on the others.
    pub fn corners(&self) -> [Vec3; 8] {
        std::array::from_fn(|i| {
            Vec3::select(
                glam::BVec3::new(i & 1 != 0, i & 2 != 0, i & 4 != 0),
                self.max,
                self.min,
            )
        })
    }

    /// Whether `p` lies inside the box or on its surface.
    pub fn contains(&self, p: Vec3) -> bool {
        p.cmpge(self.min).all() && p.cmple(self.max).all()
    }

    /// The smallest box holding `self` and `p`.
    fn grown(self, p: Vec3) -> Aabb {
        Aabb {
            min: self.min.min(p),
            max: self.max.max(p),
        }
    }
}

/// How many wrinkle maps one avatar can blend (a mapping file declares them).
pub const MAX_WRINKLE_MAPS: usize = 4;

/// What animates an avatar in one frame, in avatar space.
#[derive(Debug, PartialEq)]
pub struct Pose {
    /// Morph weights per mesh (`weights[mesh][target]`).
    pub weights: Vec<Vec<f32>>,
    /// Extra rotation per node, applied after the node's rest rotation (identity = rest).
    pub rotations: Vec<Quat>,
    /// Extra translation per node, in the node's parent space (the space of its rest
    /// translation), added to the rest translation (zero = rest): face-shape sliders move the
    /// eyes with it. Nodes past the end of this list, and non-finite entries, stay at rest.
    pub translations: Vec<Vec3>,
    /// Per material, the colours and texture offset it is drawn with this frame (VRM
    /// expressions' material binds move them from the material's own values); indexed like
    /// [`Avatar::materials`]. A renderer draws a material past the end of this list with its
    /// own values.
    pub materials: Vec<MaterialOverride>,
    /// How strongly each of the mapping's wrinkle maps shows, 0 to 1, in the order the mapping
    /// declares them (0 for none).
    pub wrinkles: [f32; MAX_WRINKLE_MAPS],
}

/// Whether one of `materials` samples texture `index`.
fn sampled(materials: &[Material], index: usize) -> bool {
    materials.iter().any(|m| {
        let toon = m.toon.as_ref();
        [
            m.base_color_texture,
            m.emissive_texture,
            toon.and_then(|t| t.shade_texture),
            toon.and_then(|t| t.rim_texture),
            toon.and_then(|t| t.matcap_texture),
        ]
        .contains(&Some(index))
    })
}

impl Clone for Pose {
    fn clone(&self) -> Self {
        Pose {
            weights: self.weights.clone(),
            rotations: self.rotations.clone(),
            translations: self.translations.clone(),
            materials: self.materials.clone(),
            wrinkles: self.wrinkles,
        }
    }

    /// Copies `source` into the lists this pose already has, so resetting a pose from the
    /// rest pose each frame allocates nothing once the sizes match.
    fn clone_from(&mut self, source: &Self) {
        self.weights.clone_from(&source.weights);
        self.rotations.clone_from(&source.rotations);
        self.translations.clone_from(&source.translations);
        self.materials.clone_from(&source.materials);
        self.wrinkles = source.wrinkles;
    }
}

impl Pose {
    /// Node `node`'s extra translation: zero when absent or not finite.
    pub fn translation(&self, node: usize) -> Vec3 {
        self.translations
            .get(node)
            .copied()
            .filter(|t| t.is_finite())
            .unwrap_or(Vec3::ZERO)
    }
}

impl Avatar {
    /// Frees the decoded pixels of every texture, keeping their sizes and samplers: for an
    /// avatar whose textures the GL already holds, which would otherwise keep a second copy
    /// (4 MB for the default head) for the whole run. An avatar without its pixels draws
    /// white where they were if it is uploaded again.
    /// Textures no material samples (wrinkle maps, say) keep theirs: the renderer uploads them
    /// only when a mapping asks for them.
    pub fn release_texture_pixels(&mut self) {
        for (index, texture) in self.textures.iter_mut().enumerate() {
            if sampled(&self.materials, index) {
                texture.rgba = Pixels::default();
            }
        }
    }

    /// Frees every morph target's stored deltas, keeping the targets (their names, their
    /// vertex counts): for an avatar the renderer has uploaded, whose morph path keeps its own
    /// copy of them (about 3 MB for the default head). Bounds computed afterwards no longer
    /// reach as far as the expressions do, and an avatar without its deltas draws without
    /// expressions if uploaded again.
    pub fn release_target_deltas(&mut self) {
        for target in self
            .meshes
            .iter_mut()
            .flat_map(|m| m.primitives.iter_mut())
            .flat_map(|p| p.targets.iter_mut())
        {
            target.positions.release();
            target.normals.release();
        }
    }

    /// Whether some material samples texture `index` (base colour, emission, or an MToon
    /// texture).
    pub fn texture_sampled(&self, index: usize) -> bool {
        sampled(&self.materials, index)
    }

    /// The rest pose: every mesh at its default weights (overridden by node weights, as glTF
    /// says), every node unrotated and unmoved.
    pub fn rest_pose(&self) -> Pose {
        let mut weights: Vec<Vec<f32>> = self
            .meshes
            .iter()
            .map(|m| m.default_weights.clone())
            .collect();
        for node in &self.nodes {
            if let (Some(mesh), Some(w)) = (node.mesh, &node.weights) {
                if w.len() == weights[mesh].len() {
                    weights[mesh].clone_from(w);
                }
            }
        }
        Pose {
            weights,
            rotations: vec![Quat::IDENTITY; self.nodes.len()],
            translations: vec![Vec3::ZERO; self.nodes.len()],
            materials: self.materials.iter().map(MaterialOverride::rest).collect(),
            wrinkles: [0.0; MAX_WRINKLE_MAPS],
        }
    }

    /// Every name a mapping may give a node by: the nodes' own names, then (for a VRM avatar)
    /// its humanoid bones' names; for suggesting the nearest to a name that fits none.
    pub fn node_and_bone_names(&self) -> impl Iterator<Item = &str> {
        let bones = self
            .vrm
            .iter()
            .flat_map(|v| v.humanoid.iter().map(|(b, _)| b.as_str()));
        self.nodes
            .iter()
            .filter_map(|n| n.name.as_deref())
            .chain(bones)
    }

    /// The first node whose name equals `name`, ignoring ASCII case.
    pub fn find_node(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| {
            n.name
                .as_deref()
                .is_some_and(|own| own.eq_ignore_ascii_case(name))
        })
    }

    /// World transform of every node under `pose` (nodes outside the drawn scene get their
    /// local transform).
    pub fn world_transforms(&self, pose: &Pose) -> Vec<Mat4> {
        let mut world = vec![Mat4::IDENTITY; self.nodes.len()];
        let mut stack: Vec<(usize, Mat4)> =
            self.roots.iter().map(|&r| (r, Mat4::IDENTITY)).collect();
        let mut visited = vec![false; self.nodes.len()];
        while let Some((index, parent)) = stack.pop() {
            if std::mem::replace(&mut visited[index], true) {
                continue;
            }
            let node = &self.nodes[index];
            let extra = pose.rotations.get(index).copied().unwrap_or(Quat::IDENTITY);
            let local = Mat4::from_scale_rotation_translation(
                node.scale,
                node.rotation * extra,
                node.translation + pose.translation(index),
            );
            world[index] = parent * local;
            stack.extend(node.children.iter().map(|&c| (c, world[index])));
        }
        world
    }

    /// The skin node `node`'s mesh is bound with, if any (and if it exists).
    pub fn node_skin(&self, node: usize) -> Option<usize> {
        self.node_skins
            .get(node)
            .copied()
            .flatten()
            .filter(|&s| s < self.skins.len())
    }

    /// The joint matrices of skin `skin` given every node's world transform (from
    /// [`Avatar::world_transforms`]): `world[joint] * inverse_bind` per joint, mapping bind-space
    /// vertices to world space. Joints outside `world` count as identity; an unknown skin gives
    /// an empty list.
    pub fn joint_matrices(&self, skin: usize, world: &[Mat4]) -> Vec<Mat4> {
        let Some(skin) = self.skins.get(skin) else {
            return Vec::new();
        };
        skin.joints
            .iter()
            .enumerate()
            .map(|(k, &joint)| {
                let w = world.get(joint).copied().unwrap_or(Mat4::IDENTITY);
                w * skin.inverse_bind.get(k).copied().unwrap_or(Mat4::IDENTITY)
            })
            .collect()
    }

    /// Bounds of every drawn primitive in the rest pose, in world space. Skinned primitives are
    /// skinned first (their node's own transform only places vertices without joint weights).
    /// Frame the avatar with these: an expression does not change them.
    pub fn bounds(&self) -> Option<Aabb> {
        self.reach(false)
    }

    /// Bounds that hold every drawn primitive under any morph weights in `[0, 1]`, with the nodes
    /// and skins at rest, in world space: each vertex is grown by the sum of its targets'
    /// negative deltas and by the sum of their positive ones (per axis), a box that holds the
    /// vertex whatever the weights. Use them where the whole expression must fit (the clip
    /// planes), and [`Avatar::bounds`] to frame: a full `jawOpen` must not shrink the head.
    pub fn deformation_bounds(&self) -> Option<Aabb> {
        self.reach(true)
    }

    /// [`Avatar::bounds`], or with `morphs` [`Avatar::deformation_bounds`].
    fn reach(&self, morphs: bool) -> Option<Aabb> {
        let world = self.world_transforms(&self.rest_pose());
        let mut bounds: Option<Aabb> = None;
        for (index, node) in self.nodes.iter().enumerate() {
            let Some(mesh) = node.mesh else { continue };
            let joints = self
                .node_skin(index)
                .map(|skin| self.joint_matrices(skin, &world));
            for prim in &self.meshes[mesh].primitives {
                let skinned = joints.as_deref().filter(|_| {
                    prim.joints.len() == prim.positions.len()
                        && prim.joint_weights.len() == prim.positions.len()
                });
                // Per vertex, the sums of the targets' negative and positive deltas.
                let mut reach = (Vec::new(), Vec::new());
                if morphs {
                    let n = prim.positions.len();
                    let (low, high) = (&mut reach.0, &mut reach.1);
                    low.resize(n, Vec3::ZERO);
                    high.resize(n, Vec3::ZERO);
                    for target in prim.targets.iter().filter(|t| t.positions.len() == n) {
                        for (v, d) in target.positions.entries() {
                            low[v as usize] += d.min(Vec3::ZERO);
                            high[v as usize] += d.max(Vec3::ZERO);
                        }
                    }
                }
                for (v, p) in prim.positions.iter().enumerate() {
                    let model = match skinned {
                        Some(matrices) => blend::skin_matrix(
                            prim.joints[v],
                            prim.joint_weights[v],
                            matrices,
                            world[index],
                        ),
                        None => world[index],
                    };
                    let (low, high) = match (reach.0.get(v), reach.1.get(v)) {
                        (Some(&low), Some(&high)) => (*p + low, *p + high),
                        _ => (*p, *p),
                    };
                    // An affine map takes a box into the hull of its corners' images.
                    let corners = Aabb {
                        min: low,
                        max: high,
                    }
                    .corners();
                    let used = if low == high { 1 } else { 8 };
                    for c in &corners[..used] {
                        let q = model.transform_point3(*c);
                        bounds = Some(match bounds {
                            None => Aabb { min: q, max: q },
                            Some(b) => b.grown(q),
                        });
                    }
                }
            }
        }
        bounds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(parent: Option<usize>, children: Vec<usize>, translation: Vec3) -> Node {
        Node {
            parent,
            children,
            translation,
            rotation: Quat::from_rotation_y(std::f32::consts::FRAC_PI_2),
            ..Node::default()
        }
    }

    #[test]
    fn pose_translations_move_a_node_in_its_parent_space_and_its_children_with_it() {
        let avatar = Avatar {
            nodes: vec![
                node(None, vec![1], Vec3::new(0.0, 1.0, 0.0)),
                node(Some(0), vec![2], Vec3::new(0.1, 0.0, 0.0)),
                node(Some(1), vec![], Vec3::new(0.0, 0.0, 0.2)),
            ],
            roots: vec![0],
            ..Avatar::default()
        };
        let mut pose = avatar.rest_pose();
        assert_eq!(pose.translations, [Vec3::ZERO; 3]);
        let rest = avatar.world_transforms(&pose);
        pose.translations[1] = Vec3::new(0.003, 0.0, 0.0);
        let moved = avatar.world_transforms(&pose);
        // The parent turns a quarter about Y: its +X is the world's -Z.
        let shift = moved[1].w_axis.truncate() - rest[1].w_axis.truncate();
        assert!(
            shift.abs_diff_eq(Vec3::new(0.0, 0.0, -0.003), 1e-6),
            "{shift}"
        );
        let child = moved[2].w_axis.truncate() - rest[2].w_axis.truncate();
        assert!(child.abs_diff_eq(shift, 1e-6), "{child}");
        assert_eq!(moved[0], rest[0]);
        // A non-finite or missing translation leaves the node at rest; clones keep them.
        pose.translations[1] = Vec3::NAN;
        assert_eq!(avatar.world_transforms(&pose), rest);
        pose.translations.truncate(1);
        assert_eq!(avatar.world_transforms(&pose), rest);
        let mut copy = avatar.rest_pose();
        pose.translations = vec![Vec3::X; 3];
        copy.clone_from(&pose);
        assert_eq!(copy, pose);
        assert_eq!(pose.clone(), pose);
    }
}

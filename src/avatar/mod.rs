//! Avatar models in CPU memory: glTF 2.0 / GLB loading, the node hierarchy and the CPU reference
//! blend. No GL here; `render` uploads what this module loads.
//!
//! Morph targets are stored target-major and dense (one delta per vertex per target), exactly as
//! glTF defines them; the CPU blend in [`blend`] builds its own sparse view for speed.

pub mod blend;
mod load;

pub use load::{load, load_slice, AvatarError};

use glam::{Mat4, Quat, Vec2, Vec3};

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
    /// Texture coordinates (zeros when the file has none).
    pub uvs: Vec<Vec2>,
    /// Triangle indices (generated 0..n when the file has none).
    pub indices: Vec<u32>,
    /// The material index, if any.
    pub material: Option<usize>,
    /// Morph targets, one per mesh target, each with one delta per vertex.
    pub targets: Vec<MorphTarget>,
}

/// One morph target of one primitive: offsets from the base, never absolute positions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MorphTarget {
    /// Position deltas, one per vertex.
    pub positions: Vec<Vec3>,
    /// Normal deltas, one per vertex, or empty when the target has none.
    pub normals: Vec<Vec3>,
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
}

impl Default for Material {
    fn default() -> Self {
        Material {
            name: None,
            base_color: [1.0; 4],
            base_color_texture: None,
            double_sided: false,
        }
    }
}

/// A decoded texture: RGBA8, sRGB-encoded colour, rows top to bottom.
#[derive(Debug, Clone, PartialEq)]
pub struct Texture {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 4` bytes.
    pub rgba: Vec<u8>,
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
}

/// What animates an avatar in one frame, in avatar space.
#[derive(Debug, Clone, PartialEq)]
pub struct Pose {
    /// Morph weights per mesh (`weights[mesh][target]`).
    pub weights: Vec<Vec<f32>>,
    /// Extra rotation per node, applied after the node's rest rotation (identity = rest).
    pub rotations: Vec<Quat>,
}

impl Avatar {
    /// The rest pose: every mesh at its default weights (overridden by node weights, as glTF
    /// says), every node unrotated.
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
        }
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
                node.translation,
            );
            world[index] = parent * local;
            stack.extend(node.children.iter().map(|&c| (c, world[index])));
        }
        world
    }

    /// Bounds of every drawn primitive in the rest pose, in world space.
    pub fn bounds(&self) -> Option<Aabb> {
        let world = self.world_transforms(&self.rest_pose());
        let mut bounds: Option<Aabb> = None;
        for (index, node) in self.nodes.iter().enumerate() {
            let Some(mesh) = node.mesh else { continue };
            for prim in &self.meshes[mesh].primitives {
                for p in &prim.positions {
                    let q = world[index].transform_point3(*p);
                    bounds = Some(match bounds {
                        None => Aabb { min: q, max: q },
                        Some(b) => Aabb {
                            min: b.min.min(q),
                            max: b.max.max(q),
                        },
                    });
                }
            }
        }
        bounds
    }
}

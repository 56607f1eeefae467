//! Levels of detail at draw time: which level of each `MSFT_lod` group draws this frame, and
//! which nodes (with their subtrees) and meshes that hides.
//!
//! Every level is uploaded with the avatar, so switching level costs nothing: the hidden nodes
//! are skipped by the passes, and a mesh that only hidden nodes draw gets no morph work (no CPU
//! blend or upload, no active list). The choice reuses buffers sized at construction and never
//! allocates.
//!
//! With [`LodMode::Auto`] a group's level follows its screen coverage: the bounding sphere of
//! level 0's mesh at rest (grown by every morph target's reach), placed by that node's world
//! matrix (a skinned mesh's dominant joint), seen from the frame's camera; the coverage is the
//! sphere's projected diameter over the viewport's height. It picks the first level whose
//! threshold it reaches ([`LodGroup::level_for`]; the defaults are
//! [`crate::avatar::lod::DEFAULT_COVERAGE`]: level 0 from 0.5, level 1 from 0.25, level 2
//! below). A camera inside the sphere, or a level 0 without geometry, draws level 0.

use glam::{Mat4, Vec3};

use super::renderer::Renderer;
use super::{Camera, LodMode};
use crate::avatar::{Avatar, LodGroup};

/// The level-of-detail state of one renderer.
pub(super) struct Lods {
    /// The mode in use.
    pub(super) mode: LodMode,
    /// The avatar's groups whose nodes all exist.
    groups: Vec<Group>,
    /// The level each group drew last frame (reused).
    pub(super) levels: Vec<usize>,
    /// Per node: hidden this frame, as a level not chosen or inside one (reused).
    pub(super) hidden: Vec<bool>,
    /// Per mesh: whether a node drawn this frame draws it (reused).
    pub(super) mesh_drawn: Vec<bool>,
    /// Traversal stack (capacity for every node).
    stack: Vec<usize>,
}

/// One group, with what auto mode measures it by.
struct Group {
    /// Levels and thresholds.
    lod: LodGroup,
    /// The node whose mesh is measured: level 0, or the first node below it with a mesh.
    measured: usize,
    /// The bounding sphere of that mesh at rest, in its own space: centre and radius. `None`
    /// when there is no geometry to measure.
    sphere: Option<(Vec3, f32)>,
}

impl Lods {
    /// The groups of `avatar` (groups naming nodes it does not have are dropped with a
    /// warning), starting at the level `mode` gives (level 0 in auto mode).
    pub(super) fn new(avatar: &Avatar, mode: LodMode) -> Lods {
        let count = avatar.nodes.len();
        let groups: Vec<Group> = avatar
            .lods
            .iter()
            .filter(|group| {
                let valid = group.levels.len() >= 2 && group.levels.iter().all(|&n| n < count);
                if !valid {
                    tracing::warn!(levels = ?group.levels, "level-of-detail group with missing nodes ignored");
                }
                valid
            })
            .map(|group| {
                let measured = first_mesh_node(avatar, group.levels[0]).unwrap_or(group.levels[0]);
                Group {
                    lod: group.clone(),
                    measured,
                    sphere: avatar.nodes[measured]
                        .mesh
                        .and_then(|m| avatar.meshes.get(m))
                        .and_then(rest_sphere),
                }
            })
            .collect();
        let levels = groups.iter().map(|g| fixed_level(&g.lod, mode)).collect();
        Lods {
            mode,
            groups,
            levels,
            hidden: vec![false; count],
            mesh_drawn: vec![true; avatar.meshes.len()],
            stack: Vec::with_capacity(count),
        }
    }
}

/// The level a mode fixes before any frame is drawn: the fixed level, or 0 in auto mode.
fn fixed_level(group: &LodGroup, mode: LodMode) -> usize {
    match mode {
        LodMode::Auto => 0,
        LodMode::Fixed(level) => group.clamp(usize::try_from(level).unwrap_or(usize::MAX)),
    }
}

/// `node` if it has a mesh, else the first node with a mesh in its subtree (depth first).
fn first_mesh_node(avatar: &Avatar, node: usize) -> Option<usize> {
    let mut stack = vec![node];
    let mut seen = vec![false; avatar.nodes.len()];
    while let Some(n) = stack.pop() {
        if n >= avatar.nodes.len() || std::mem::replace(&mut seen[n], true) {
            continue;
        }
        if avatar.nodes[n]
            .mesh
            .is_some_and(|m| m < avatar.meshes.len())
        {
            return Some(n);
        }
        stack.extend(avatar.nodes[n].children.iter().rev());
    }
    None
}

/// The bounding sphere of a mesh's rest positions, grown by the largest total reach of its
/// morph targets (the sum of a vertex's delta lengths over every target); `None` without
/// finite vertices.
fn rest_sphere(mesh: &crate::avatar::Mesh) -> Option<(Vec3, f32)> {
    let points = || {
        mesh.primitives
            .iter()
            .flat_map(|p| p.positions.iter().copied())
            .filter(|p| p.is_finite())
    };
    let (min, max) = points().fold(None, |acc: Option<(Vec3, Vec3)>, p| {
        Some(acc.map_or((p, p), |(lo, hi)| (lo.min(p), hi.max(p))))
    })?;
    let center = (min + max) * 0.5;
    let radius = points().map(|p| p.distance(center)).fold(0.0f32, f32::max);
    let mut reach = 0.0f32;
    for prim in &mesh.primitives {
        let mut sum = vec![0.0f32; prim.positions.len()];
        for target in &prim.targets {
            for (v, d) in target.positions.entries() {
                if let Some(s) = sum.get_mut(v as usize) {
                    *s += d.length();
                }
            }
        }
        reach = sum
            .into_iter()
            .filter(|s| s.is_finite())
            .fold(reach, f32::max);
    }
    Some((center, radius + reach))
}

/// The fraction of the viewport's height a sphere (world-space `center` and `radius`) covers
/// seen from `camera`: its projected diameter over the height. Infinite when the eye is inside.
pub(super) fn coverage(camera: &Camera, center: Vec3, radius: f32) -> f32 {
    let distance = center.distance(camera.eye);
    if !(distance.is_finite() && radius.is_finite()) || distance <= radius {
        return f32::INFINITY;
    }
    // The sphere's silhouette spans the angle 2·asin(r/d); its half-height on the image plane
    // at distance 1 is tan(asin(r/d)), against tan(fov/2) for half the viewport.
    let half = radius / (distance * distance - radius * radius).sqrt();
    half / (camera.fov_y_sanitized() * 0.5).tan()
}

/// The largest factor by which `m` scales a length.
fn max_scale(m: &Mat4) -> f32 {
    m.x_axis
        .truncate()
        .length()
        .max(m.y_axis.truncate().length())
        .max(m.z_axis.truncate().length())
}

impl Renderer {
    /// The level each level-of-detail group drew in the last frame (in the order of
    /// [`Avatar::lods`], without groups naming missing nodes); before the first frame, the
    /// level the mode starts at.
    pub fn lod_levels(&self) -> &[usize] {
        &self.lods.levels
    }

    /// The level-of-detail mode in use.
    pub fn lod(&self) -> LodMode {
        self.lods.mode
    }

    /// Changes the level-of-detail mode from the next frame on (everything is uploaded
    /// already, so switching costs nothing).
    pub fn set_lod(&mut self, mode: LodMode) {
        if mode != self.lods.mode {
            tracing::debug!(from = %self.lods.mode, to = %mode, "level-of-detail mode changed");
            self.lods.mode = mode;
        }
    }

    /// Picks this frame's level of every group, then marks the hidden nodes and the meshes
    /// drawn. Needs this frame's world and joint matrices.
    pub(super) fn select_lods(&mut self, camera: &Camera) {
        for g in 0..self.lods.groups.len() {
            let group = &self.lods.groups[g];
            let level = match self.lods.mode {
                LodMode::Fixed(_) => fixed_level(&group.lod, self.lods.mode),
                LodMode::Auto => group.lod.level_for(self.group_coverage(group, camera)),
            };
            let previous = std::mem::replace(&mut self.lods.levels[g], level);
            if previous != level {
                tracing::debug!(
                    group = g,
                    node = self.lods.groups[g].lod.levels[0],
                    from = previous,
                    to = level,
                    "level of detail changed"
                );
            }
        }

        let lods = &mut self.lods;
        lods.hidden.fill(false);
        for (group, &chosen) in lods.groups.iter().zip(&lods.levels) {
            for (level, &node) in group.lod.levels.iter().enumerate() {
                if level == chosen {
                    continue;
                }
                lods.stack.clear();
                lods.stack.push(node);
                while let Some(n) = lods.stack.pop() {
                    if n >= lods.hidden.len() || std::mem::replace(&mut lods.hidden[n], true) {
                        continue;
                    }
                    lods.stack.extend(self.nodes[n].children.iter().copied());
                }
            }
        }
        lods.mesh_drawn.fill(false);
        for (index, node) in self.nodes.iter().enumerate() {
            if self.visited[index] && !lods.hidden[index] {
                if let Some(drawn) = node.mesh.and_then(|m| lods.mesh_drawn.get_mut(m)) {
                    *drawn = true;
                }
            }
        }
    }

    /// The screen coverage of a group's measured mesh this frame.
    fn group_coverage(&self, group: &Group, camera: &Camera) -> f32 {
        let Some((center, radius)) = group.sphere else {
            return f32::INFINITY;
        };
        let node = group.measured;
        let placement = match self.nodes[node]
            .mesh
            .and_then(|m| self.meshes.get(m))
            .and_then(|m| m.primitives.first())
        {
            Some(prim) => self.placement(node, prim),
            None => self.world[node],
        };
        coverage(
            camera,
            placement.transform_point3(center),
            radius * max_scale(&placement),
        )
    }

    /// Whether node `index` is hidden this frame by a level-of-detail choice.
    pub(super) fn lod_hidden(&self, index: usize) -> bool {
        self.lods.hidden.get(index).copied().unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::{Mesh, Primitive};

    fn camera_at(z: f32) -> Camera {
        Camera {
            eye: Vec3::new(0.0, 0.0, z),
            target: Vec3::ZERO,
            up: Vec3::Y,
            fov_y: 90f32.to_radians(),
            aspect: 1.0,
            near: 0.01,
            far: 100.0,
        }
    }

    #[test]
    fn coverage_is_the_projected_diameter_over_the_height() {
        // With a 90° lens the view's half-height at distance d is d; a small sphere of radius r
        // covers about r / d.
        let c = coverage(&camera_at(10.0), Vec3::ZERO, 0.1);
        assert!((c - 0.01).abs() < 1e-4, "{c}");
        let near = coverage(&camera_at(2.0), Vec3::ZERO, 1.0);
        assert!((near - 1.0 / 3f32.sqrt()).abs() < 1e-5, "{near}");
        assert_eq!(coverage(&camera_at(0.5), Vec3::ZERO, 1.0), f32::INFINITY);
        assert_eq!(coverage(&camera_at(2.0), Vec3::NAN, 1.0), f32::INFINITY);
        // Farther means smaller.
        assert!(coverage(&camera_at(20.0), Vec3::ZERO, 1.0) < near);
    }

    #[test]
    fn the_sphere_holds_the_vertices_and_their_morph_reach() {
        let mesh = Mesh {
            name: None,
            target_names: vec!["a".into()],
            default_weights: vec![0.0],
            primitives: vec![Primitive {
                positions: vec![Vec3::new(-1.0, 0.0, 0.0), Vec3::new(1.0, 0.0, 0.0)],
                targets: vec![crate::avatar::MorphTarget {
                    positions: vec![Vec3::ZERO, Vec3::new(0.0, 0.5, 0.0)].into(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        let (center, radius) = rest_sphere(&mesh).unwrap();
        assert_eq!(center, Vec3::ZERO);
        assert!((radius - 1.5).abs() < 1e-6, "{radius}");
        let empty = Mesh {
            primitives: vec![Primitive::default()],
            ..mesh
        };
        assert!(rest_sphere(&empty).is_none());
    }
}

//! Mesh building blocks for the head generator: an indexed triangle builder with per-vertex
//! tags, welded smooth normals and the left/right vertex mirror map.

use std::collections::BTreeMap;

use glam::{Vec2, Vec3};

/// An indexed triangle list under construction.
///
/// Besides positions and texture coordinates every vertex carries a `tag` (which part and which
/// side of a slit it belongs to, used to tell coincident vertices apart when mirroring) and a
/// normal `group` (vertices of one group share a smooth normal, which welds UV seams).
#[derive(Debug, Clone, Default)]
pub struct MeshBuilder {
    /// Vertex positions in metres.
    pub positions: Vec<Vec3>,
    /// Texture coordinates (glTF convention: v grows downwards in the image).
    pub uvs: Vec<Vec2>,
    /// Per-vertex tag; mirrored partners share the same tag.
    pub tags: Vec<u32>,
    /// Per-vertex normal group.
    pub groups: Vec<u32>,
    /// Counter-clockwise (seen from outside) triangles.
    pub indices: Vec<u32>,
}

impl MeshBuilder {
    /// Number of vertices so far.
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// Whether no vertex was added yet.
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// Adds a vertex in its own normal group and returns its index.
    pub fn vertex(&mut self, position: Vec3, uv: Vec2, tag: u32) -> u32 {
        let index = self.positions.len() as u32;
        self.positions.push(position);
        self.uvs.push(uv);
        self.tags.push(tag);
        self.groups.push(index);
        index
    }

    /// Adds a triangle, skipping degenerate index triples.
    pub fn tri(&mut self, a: u32, b: u32, c: u32) {
        if a != b && b != c && a != c {
            self.indices.extend_from_slice(&[a, b, c]);
        }
    }

    /// Adds a quad `a b c d` (counter-clockwise) as two triangles.
    pub fn quad(&mut self, a: u32, b: u32, c: u32, d: u32) {
        self.tri(a, b, c);
        self.tri(a, c, d);
    }

    /// Appends another builder, offsetting its indices and normal groups.
    pub fn append(&mut self, other: &MeshBuilder) {
        let offset = self.positions.len() as u32;
        self.positions.extend_from_slice(&other.positions);
        self.uvs.extend_from_slice(&other.uvs);
        self.tags.extend_from_slice(&other.tags);
        self.groups.extend(other.groups.iter().map(|g| g + offset));
        self.indices
            .extend(other.indices.iter().map(|i| i + offset));
    }

    /// Reverses the winding of every triangle (for surfaces seen from inside).
    pub fn flip(&mut self) {
        for tri in self.indices.chunks_exact_mut(3) {
            tri.swap(1, 2);
        }
    }

    /// Smooth normals of `positions` (which may be a deformed copy of [`Self::positions`]).
    pub fn normals_of(&self, positions: &[Vec3]) -> Vec<Vec3> {
        smooth_normals(positions, &self.indices, &self.groups)
    }
}

/// Area-weighted smooth normals; vertices with the same `groups` entry share one normal.
pub fn smooth_normals(positions: &[Vec3], indices: &[u32], groups: &[u32]) -> Vec<Vec3> {
    let mut sum = vec![Vec3::ZERO; positions.len()];
    for tri in indices.chunks_exact(3) {
        let [a, b, c] = [tri[0] as usize, tri[1] as usize, tri[2] as usize];
        let n = (positions[b] - positions[a]).cross(positions[c] - positions[a]);
        for v in [a, b, c] {
            let g = groups[v] as usize;
            sum[g] += n;
        }
    }
    (0..positions.len())
        .map(|v| {
            let n = sum[groups[v] as usize];
            let len = n.length();
            if len > 0.0 {
                n / len
            } else {
                Vec3::Y
            }
        })
        .collect()
}

/// Exact lookup key of a position: bit patterns, with negative zero folded into zero.
fn key(tag: u32, p: Vec3) -> (u32, u32, u32, u32) {
    let bits = |f: f32| if f == 0.0 { 0 } else { f.to_bits() };
    (tag, bits(p.x), bits(p.y), bits(p.z))
}

/// For every vertex, the vertex at its mirror image across x = 0 with the same tag, or itself
/// when there is none. The geometry is built exactly symmetric, so partners match bit for bit.
pub fn mirror_map(positions: &[Vec3], tags: &[u32]) -> Vec<u32> {
    let mut lookup = BTreeMap::new();
    for (i, (&p, &t)) in positions.iter().zip(tags).enumerate() {
        lookup.entry(key(t, p)).or_insert(i as u32);
    }
    positions
        .iter()
        .zip(tags)
        .enumerate()
        .map(|(i, (&p, &t))| {
            let m = Vec3::new(-p.x, p.y, p.z);
            lookup.get(&key(t, m)).copied().unwrap_or(i as u32)
        })
        .collect()
}

/// Reflects a vector across the x = 0 plane.
pub fn mirror(v: Vec3) -> Vec3 {
    Vec3::new(-v.x, v.y, v.z)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_vertices_share_a_normal() {
        let mut b = MeshBuilder::default();
        let v0 = b.vertex(Vec3::ZERO, Vec2::ZERO, 0);
        let v1 = b.vertex(Vec3::X, Vec2::ZERO, 0);
        let v2 = b.vertex(Vec3::Y, Vec2::ZERO, 0);
        let v3 = b.vertex(Vec3::Z, Vec2::ZERO, 0);
        b.tri(v0, v1, v2);
        b.tri(v0, v3, v1);
        let n = b.normals_of(&b.positions);
        assert!((n[2] - Vec3::Z).length() < 1e-6);
        assert!((n[3] - Vec3::Y).length() < 1e-6);
        b.groups[3] = 2;
        let n = b.normals_of(&b.positions);
        assert_eq!(n[2], n[3]);
    }

    #[test]
    fn mirror_map_pairs_symmetric_vertices_and_respects_tags() {
        let positions = [
            Vec3::new(0.1, 0.2, 0.3),
            Vec3::new(-0.1, 0.2, 0.3),
            Vec3::new(0.0, 0.5, 0.3),
            Vec3::new(-0.1, 0.2, 0.3),
        ];
        let tags = [0, 0, 0, 1];
        assert_eq!(mirror_map(&positions, &tags), vec![1, 0, 2, 3]);
    }

    #[test]
    fn degenerate_triangles_are_skipped() {
        let mut b = MeshBuilder::default();
        b.tri(0, 0, 1);
        assert!(b.indices.is_empty());
    }
}

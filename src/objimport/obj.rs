//! The part of Wavefront OBJ a shape set needs: vertex positions, in file order, and polygonal
//! faces triangulated over those positions.
//!
//! Vertices keep their OBJ position index (the first `v` line is vertex 0), so the same index
//! means the same vertex in every file of a shape set and deltas line up without any matching.
//! Texture coordinates and normals are read past: the importer computes its own normals, and a
//! position can carry several texture coordinates across a seam, which one index per vertex
//! cannot express. Materials are read as groups: each triangle belongs to the material the last
//! `usemtl` before its face names (faces before any `usemtl` to a default group), and the
//! `mtllib` statements are kept for the importer to read. Grouping, smoothing and free-form
//! statements are ignored, as are points and lines, which are not surfaces.
//!
//! This is a small reader of its own because the OBJ crates lose that index: `tobj` numbers
//! vertices per material group in order of first use (and drops unused ones), and `obj-rs`
//! panics (`unimplemented!`) on free-form statements, which hostile files may contain.

use std::collections::HashMap;

use glam::Vec3;

/// The most material groups a file may have: far above any face (ICT-FaceKit has 12), and few
/// enough that a hostile file cannot make one primitive (and one material) per face.
pub const MAX_MATERIALS: usize = 1024;

/// The most `mtllib` statements kept (one `mtllib` may still list several files).
pub const MAX_LIBRARIES: usize = 16;

/// The longest material or library name kept, in bytes.
pub const MAX_NAME_BYTES: usize = 1024;

/// A syntax error in an OBJ file, with its 1-based line number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {detail}")]
pub struct ObjError {
    /// The 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub detail: String,
}

/// The geometry of one OBJ file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObjMesh {
    /// Vertex positions, by OBJ position index.
    pub positions: Vec<Vec3>,
    /// Triangles over [`ObjMesh::positions`], three indices each (empty when faces were not
    /// read).
    pub triangles: Vec<u32>,
    /// Number of `f` statements (faces before triangulation).
    pub faces: usize,
    /// The material groups, in order of first use: the name a `usemtl` gives, `None` for the
    /// faces before any `usemtl` (or after one without a name). Only groups that have a
    /// triangle are listed.
    pub materials: Vec<Option<String>>,
    /// For each triangle (each three of [`ObjMesh::triangles`]), its index in
    /// [`ObjMesh::materials`].
    pub triangle_materials: Vec<u32>,
    /// What the `mtllib` statements say, each as written (trimmed), without repeats, in file
    /// order.
    pub libraries: Vec<String>,
}

impl ObjMesh {
    /// The name of the material group of `triangle`, `None` for the default group.
    pub fn material_of(&self, triangle: usize) -> Option<&str> {
        let group = *self.triangle_materials.get(triangle)?;
        self.materials.get(group as usize)?.as_deref()
    }
}

/// What to read from a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// Positions and faces (the neutral mesh).
    Everything,
    /// Positions only (a target, whose faces are the neutral's).
    PositionsOnly,
}

/// Parses OBJ text. Faces may use any of the `v`, `v/vt`, `v//vn` and `v/vt/vn` forms and
/// negative (relative) indices; polygons are triangulated (see [`triangulate`]).
pub fn parse(bytes: &[u8], read: Read) -> Result<ObjMesh, ObjError> {
    let mut mesh = ObjMesh::default();
    let mut polygon: Vec<u32> = Vec::with_capacity(8);
    // The material the next faces get (`None` before any `usemtl`) and, once a face used it,
    // its index in `mesh.materials`.
    let mut material: Option<String> = None;
    let mut material_index: Option<u32> = None;
    let mut material_indices: HashMap<Option<String>, u32> = HashMap::new();
    // Faces may name positions defined further down; those indices are checked at the end.
    let mut forward_reference: Option<(usize, u32)> = None;
    for (number, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line_no = number + 1;
        let error = |detail: String| ObjError {
            line: line_no,
            detail,
        };
        let line = match line.iter().position(|&b| b == b'#') {
            Some(comment) => &line[..comment],
            None => line,
        };
        let mut tokens = line
            .split(|b| b.is_ascii_whitespace())
            .filter(|t| !t.is_empty());
        match tokens.next() {
            Some(b"v") => {
                let mut xyz = [0.0f32; 3];
                for (axis, value) in xyz.iter_mut().enumerate() {
                    let token = tokens.next().ok_or_else(|| {
                        error(format!(
                            "a vertex needs x, y and z; coordinate {axis} is missing"
                        ))
                    })?;
                    *value = parse_float(token).map_err(error)?;
                }
                if mesh.positions.len() >= u32::MAX as usize {
                    return Err(error("more than 4294967295 vertices".to_owned()));
                }
                mesh.positions.push(Vec3::from_array(xyz));
            }
            Some(b"f" | b"fo") if read == Read::Everything => {
                polygon.clear();
                for token in tokens {
                    let index = parse_index(token, mesh.positions.len()).map_err(error)?;
                    if index as usize >= mesh.positions.len() && forward_reference.is_none() {
                        forward_reference = Some((line_no, index));
                    }
                    polygon.push(index);
                }
                if polygon.len() < 3 {
                    return Err(error(format!(
                        "a face needs at least 3 vertices, this one has {}",
                        polygon.len()
                    )));
                }
                mesh.faces += 1;
                let group = match material_index {
                    Some(group) => group,
                    None => {
                        let next = mesh.materials.len();
                        let group =
                            *material_indices.entry(material.clone()).or_insert_with(|| {
                                mesh.materials.push(material.clone());
                                next as u32
                            });
                        if mesh.materials.len() > MAX_MATERIALS {
                            return Err(error(format!(
                                "more than {MAX_MATERIALS} materials (usemtl names)"
                            )));
                        }
                        material_index = Some(group);
                        group
                    }
                };
                let before = mesh.triangles.len();
                triangulate(&polygon, &mesh.positions, &mut mesh.triangles);
                let added = (mesh.triangles.len() - before) / 3;
                mesh.triangle_materials
                    .extend(std::iter::repeat_n(group, added));
            }
            Some(b"usemtl") if read == Read::Everything => {
                let name = rest_of_line(line, b"usemtl").map_err(error)?;
                if name != material {
                    material = name;
                    material_index = None;
                }
            }
            Some(b"mtllib") if read == Read::Everything => {
                if let Some(name) = rest_of_line(line, b"mtllib").map_err(error)? {
                    if !mesh.libraries.contains(&name) {
                        if mesh.libraries.len() >= MAX_LIBRARIES {
                            return Err(error(format!(
                                "more than {MAX_LIBRARIES} material libraries (mtllib)"
                            )));
                        }
                        mesh.libraries.push(name);
                    }
                }
            }
            Some(b"f" | b"fo") => mesh.faces += 1,
            _ => {}
        }
    }
    if let Some((line, index)) = forward_reference {
        if index as usize >= mesh.positions.len() {
            return Err(ObjError {
                line,
                detail: format!(
                    "face refers to vertex {} but the file has {}",
                    u64::from(index) + 1,
                    mesh.positions.len()
                ),
            });
        }
    }
    Ok(mesh)
}

/// What follows the keyword `keyword` on `line` (a line without its comment), trimmed, as text:
/// a material or file name, which may hold spaces. `None` when nothing follows.
pub(crate) fn rest_of_line(line: &[u8], keyword: &[u8]) -> Result<Option<String>, String> {
    let start = line
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(line.len());
    let rest = line[start..].get(keyword.len()..).unwrap_or_default();
    let rest = rest.trim_ascii();
    if rest.is_empty() {
        return Ok(None);
    }
    if rest.len() > MAX_NAME_BYTES {
        return Err(format!(
            "a name of {} bytes (at most {MAX_NAME_BYTES})",
            rest.len()
        ));
    }
    Ok(Some(String::from_utf8_lossy(rest).into_owned()))
}

/// Parses one finite coordinate.
fn parse_float(token: &[u8]) -> Result<f32, String> {
    std::str::from_utf8(token)
        .ok()
        .and_then(|s| s.parse::<f32>().ok())
        .filter(|v| v.is_finite())
        .ok_or_else(|| {
            format!(
                "`{}` is not a finite number",
                String::from_utf8_lossy(token)
            )
        })
}

/// Parses the position part of a face vertex (`7`, `7/3`, `7//2`, `-1/-1`) into a 0-based
/// index; `defined` is the number of positions so far, which negative indices count back from.
fn parse_index(token: &[u8], defined: usize) -> Result<u32, String> {
    let position = token.split(|&b| b == b'/').next().unwrap_or_default();
    let bad = || {
        format!(
            "`{}` is not a face vertex (write v, v/vt, v//vn or v/vt/vn)",
            String::from_utf8_lossy(token)
        )
    };
    let value: i64 = std::str::from_utf8(position)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(bad)?;
    let index = match value {
        0 => return Err("face vertex index 0 (OBJ indices start at 1)".to_owned()),
        v if v > 0 => v - 1,
        v => {
            let back = v.unsigned_abs();
            if back > defined as u64 {
                return Err(format!(
                    "relative face vertex {v} reaches before the first vertex ({defined} defined)"
                ));
            }
            defined as i64 - back as i64
        }
    };
    u32::try_from(index).map_err(|_| format!("face vertex {value} is out of range"))
}

/// Appends the triangles of one polygon to `out`.
///
/// Quads are split along the diagonal that keeps both halves facing the same way (a concave
/// quad folds over itself when split along the other one); larger polygons are fanned from their
/// first vertex, which is exact for convex polygons. Positions not yet defined (forward
/// references, checked later) count as the origin here.
pub fn triangulate(polygon: &[u32], positions: &[Vec3], out: &mut Vec<u32>) {
    match *polygon {
        [a, b, c, d] => {
            let at = |i: u32| positions.get(i as usize).copied().unwrap_or(Vec3::ZERO);
            let (pa, pb, pc, pd) = (at(a), at(b), at(c), at(d));
            let first = (pb - pa).cross(pc - pa);
            let second = (pc - pa).cross(pd - pa);
            if first.dot(second) >= 0.0 {
                out.extend_from_slice(&[a, b, c, a, c, d]);
            } else {
                out.extend_from_slice(&[a, b, d, b, c, d]);
            }
        }
        [first, ref rest @ ..] => {
            for pair in rest.windows(2) {
                out.extend_from_slice(&[first, pair[0], pair[1]]);
            }
        }
        [] => {}
    }
}

/// Area-weighted smooth vertex normals of `triangles` over `positions`: each vertex gets the
/// normalised sum of the (unnormalised) face normals around it; +Z where that sum vanishes (a
/// vertex no face uses, or only degenerate ones).
pub fn smooth_normals(positions: &[Vec3], triangles: &[u32]) -> Vec<Vec3> {
    let mut sums = vec![Vec3::ZERO; positions.len()];
    for tri in triangles.chunks_exact(3) {
        let [a, b, c] = [tri[0] as usize, tri[1] as usize, tri[2] as usize];
        let (Some(&pa), Some(&pb), Some(&pc)) =
            (positions.get(a), positions.get(b), positions.get(c))
        else {
            continue;
        };
        let n = (pb - pa).cross(pc - pa);
        sums[a] += n;
        sums[b] += n;
        sums[c] += n;
    }
    sums.into_iter().map(|n| n.normalize_or(Vec3::Z)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_keep_their_obj_index_and_faces_every_form() {
        let text = b"# a quad and a triangle\nv 0 0 0\nv 1 0 0\nvt 0 0\nv 1 1 0\nv 0 1 0 1\n\
            vn 0 0 1\nf 1/1/1 2/1/1 3//1 4\nf -4 -3 -1\ng other\nusemtl x\ns 1\nl 1 2\n";
        let mesh = parse(text, Read::Everything).unwrap();
        assert_eq!(mesh.positions.len(), 4);
        assert_eq!(mesh.positions[3], Vec3::new(0.0, 1.0, 0.0));
        assert_eq!(mesh.faces, 2);
        assert_eq!(mesh.triangles, vec![0, 1, 2, 0, 2, 3, 0, 1, 3]);
        let only = parse(text, Read::PositionsOnly).unwrap();
        assert_eq!(only.positions, mesh.positions);
        assert!(only.triangles.is_empty());
        assert_eq!(only.faces, 2);
    }

    #[test]
    fn usemtl_groups_the_triangles_that_follow_it() {
        let text = b"mtllib a.mtl\nmtllib  my lib.mtl  \nmtllib a.mtl\nv 0 0 0\nv 1 0 0\n\
            v 1 1 0\nv 0 1 0\nf 1 2 3\nusemtl Skin Tone # a comment\nf 1 2 3 4\n\
            usemtl Eye\nusemtl Skin Tone\nf 1 3 4\nusemtl Eye\nf 2 3 4\nusemtl Unused\n\
            usemtl\nf 4 3 2\n";
        let mesh = parse(text, Read::Everything).unwrap();
        assert_eq!(mesh.libraries, ["a.mtl", "my lib.mtl"]);
        assert_eq!(
            mesh.materials,
            [None, Some("Skin Tone".to_owned()), Some("Eye".to_owned())],
            "groups in order of first use, only those with faces"
        );
        assert_eq!(mesh.triangle_materials, [0, 1, 1, 1, 2, 0]);
        assert_eq!(mesh.triangles.len(), 3 * mesh.triangle_materials.len());
        assert_eq!(mesh.material_of(1), Some("Skin Tone"));
        assert_eq!(mesh.material_of(4), Some("Eye"));
        assert_eq!(mesh.material_of(5), None);
        assert_eq!(mesh.material_of(6), None);
        // Targets read positions only: no groups, no libraries.
        let only = parse(text, Read::PositionsOnly).unwrap();
        assert!(only.materials.is_empty() && only.libraries.is_empty());
        assert!(only.triangle_materials.is_empty());
    }

    #[test]
    fn material_counts_and_names_are_bounded() {
        let mut text = b"v 0 0 0\nv 1 0 0\nv 0 1 0\n".to_vec();
        for k in 0..=MAX_MATERIALS {
            text.extend_from_slice(format!("usemtl m{k}\nf 1 2 3\n").as_bytes());
        }
        let error = parse(&text, Read::Everything).unwrap_err();
        assert_eq!(error.line, 3 + 2 * (MAX_MATERIALS + 1), "{error}");
        assert!(error.detail.contains("more than 1024 materials"), "{error}");
        // Switching back and forth between a few names is no new group.
        let mut text = b"v 0 0 0\nv 1 0 0\nv 0 1 0\n".to_vec();
        for k in 0..5000 {
            text.extend_from_slice(format!("usemtl m{}\nf 1 2 3\n", k % 3).as_bytes());
        }
        assert_eq!(parse(&text, Read::Everything).unwrap().materials.len(), 3);
        let mut long = b"usemtl ".to_vec();
        long.extend(std::iter::repeat_n(b'n', MAX_NAME_BYTES + 1));
        let error = parse(&long, Read::Everything).unwrap_err();
        assert!(error.detail.contains("a name of 1025 bytes"), "{error}");
        let mut text = Vec::new();
        for k in 0..=MAX_LIBRARIES {
            text.extend_from_slice(format!("mtllib {k}.mtl\n").as_bytes());
        }
        let error = parse(&text, Read::Everything).unwrap_err();
        assert_eq!(error.line, MAX_LIBRARIES + 1);
        // Hostile bytes in names never panic.
        let mesh = parse(
            b"v 0 0 0\nv 1 0 0\nv 0 1 0\nusemtl \xff\xfe\0\nf 1 2 3\nmtllib \xc3\n",
            Read::Everything,
        )
        .unwrap();
        assert_eq!(mesh.materials.len(), 1);
        assert_eq!(mesh.libraries.len(), 1);
    }

    #[test]
    fn concave_quads_split_along_the_inner_diagonal() {
        // A dart: vertex 3 is pushed inside, so the diagonal 0-2 would fold.
        let positions = [
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(2.0, 0.0, 0.0),
            Vec3::new(2.0, 2.0, 0.0),
            Vec3::new(1.5, 0.5, 0.0),
        ];
        let mut out = Vec::new();
        triangulate(&[0, 1, 2, 3], &positions, &mut out);
        assert_eq!(out, vec![0, 1, 3, 1, 2, 3]);
        for tri in out.chunks(3) {
            let [a, b, c] = [0, 1, 2].map(|k| positions[tri[k] as usize]);
            assert!((b - a).cross(c - a).z > 0.0, "{tri:?} faces away");
        }
        out.clear();
        triangulate(&[0, 1, 2, 3, 4], &[Vec3::ZERO; 5], &mut out);
        assert_eq!(out, vec![0, 1, 2, 0, 2, 3, 0, 3, 4]);
    }

    #[test]
    fn errors_name_the_line() {
        let cases: [(&[u8], usize, &str); 7] = [
            (b"v 0 0\n", 1, "missing"),
            (b"v 0 0 0\nv 1 nan 0\n", 2, "finite"),
            (b"v 0 0 0\nv 1 0 0\nf 1 2\n", 3, "at least 3"),
            (b"v 0 0 0\nf 1 0 1\n", 2, "index 0"),
            (b"v 0 0 0\nf -1 -2 -1\n", 2, "before the first"),
            (b"v 0 0 0\nf 1 2 3\n", 2, "vertex 2 but the file has 1"),
            (b"v 0 0 0\nf 1 a/1 1\n", 2, "not a face vertex"),
        ];
        for (text, line, needle) in cases {
            let error = parse(text, Read::Everything).unwrap_err();
            assert_eq!(error.line, line, "{error}");
            assert!(error.to_string().contains(needle), "{error}");
        }
    }

    #[test]
    fn forward_references_resolve_at_the_end() {
        let mesh = parse(b"f 1 2 3\nv 0 0 0\nv 1 0 0\nv 0 1 0\n", Read::Everything).unwrap();
        assert_eq!(mesh.triangles, vec![0, 1, 2]);
    }

    #[test]
    fn smooth_normals_average_around_shared_vertices() {
        // Two faces of a roof meeting at the ridge 0-1: the ridge normal points straight up.
        let positions = [
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(0.0, 0.0, 1.0),
            Vec3::new(1.0, -1.0, 0.0),
            Vec3::new(-1.0, -1.0, 0.0),
            Vec3::new(5.0, 5.0, 5.0),
        ];
        let normals = smooth_normals(&positions, &[0, 1, 2, 1, 0, 3]);
        assert!((normals[0] - Vec3::Y).length() < 1e-6, "{:?}", normals[0]);
        let side = Vec3::new(1.0, 1.0, 0.0).normalize();
        assert!((normals[2] - side).length() < 1e-6, "{:?}", normals[2]);
        assert_eq!(normals[4], Vec3::Z);
    }
}

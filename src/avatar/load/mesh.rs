//! Meshes and their triangle primitives: vertex attributes, indices, skin weights and morph
//! targets, with target names and default weights, and flat normals for primitives without.

use super::accessor::{self, Kind};
use super::{finite_weights, label, AvatarError, Loader};
use crate::avatar::{Deltas, Mesh, MorphTarget, Primitive};
use glam::{Vec2, Vec3, Vec4};
use gltf::mesh::{Mode, Semantic};

impl Loader<'_> {
    /// One mesh: its triangle primitives, target names and default weights.
    pub(super) fn mesh(&mut self, mesh: gltf::Mesh<'_>) -> Result<Mesh, AvatarError> {
        let file = self.file;
        let mesh_label = label("mesh", mesh.name(), mesh.index());
        let mesh_error = |detail: String| AvatarError::Mesh {
            file: file.to_owned(),
            mesh: mesh_label.clone(),
            detail,
        };
        // The mesh's target count comes from its weights when it has them, else from its first
        // triangle primitive; every triangle primitive must agree.
        let mut target_count = mesh.weights().map(<[f32]>::len);
        let mut primitives = Vec::new();
        for primitive in mesh.primitives() {
            let index = primitive.index();
            if primitive.mode() != Mode::Triangles {
                tracing::warn!(
                    file = self.file,
                    mesh = %mesh_label,
                    primitive = index,
                    mode = ?primitive.mode(),
                    "skipping a primitive that is not a triangle list"
                );
                continue;
            }
            let count = primitive.morph_targets().len();
            match target_count {
                None => target_count = Some(count),
                Some(expected) if expected != count => {
                    return Err(mesh_error(format!(
                        "primitive {index} has {count} morph targets, but the mesh has {expected}"
                    )));
                }
                Some(_) => {}
            }
            let loaded = (mesh.index(), primitives.len());
            primitives.push(self.primitive(loaded, &mesh_label, &primitive)?);
        }
        let target_count = target_count.unwrap_or(0);

        let default_weights = match mesh.weights() {
            Some(weights) => finite_weights(weights, &mesh_label),
            None => vec![0.0; target_count],
        };
        let names = target_names(mesh.extras())
            .or_else(|| mesh.primitives().find_map(|p| target_names(p.extras())));
        let target_names = match names {
            Some(mut names) => {
                if names.len() != target_count {
                    tracing::warn!(
                        file = self.file,
                        mesh = %mesh_label,
                        names = names.len(),
                        targets = target_count,
                        "targetNames does not match the target count; padding or truncating"
                    );
                }
                names.resize(target_count, String::new());
                names
            }
            None => vec![String::new(); target_count],
        };
        Ok(Mesh {
            name: mesh.name().map(str::to_owned),
            target_names,
            default_weights,
            primitives,
        })
    }

    /// One triangle primitive with its morph targets (kept sparse); `loaded` is its (mesh, position among
    /// the mesh's loaded primitives).
    fn primitive(
        &mut self,
        loaded: (usize, usize),
        mesh_label: &str,
        primitive: &gltf::Primitive<'_>,
    ) -> Result<Primitive, AvatarError> {
        let p = primitive.index();
        let file = self.file;
        let mesh_error = |detail: String| AvatarError::Mesh {
            file: file.to_owned(),
            mesh: mesh_label.to_owned(),
            detail: format!("primitive {p}: {detail}"),
        };
        let usage = |what: &str| {
            let what = what.to_owned();
            move || format!("{mesh_label} primitive {p} {what}")
        };

        let position_accessor = primitive
            .get(&Semantic::Positions)
            .ok_or_else(|| mesh_error("has no POSITION attribute".into()))?;
        let positions = self.vec3(position_accessor, Kind::Position, None, &usage("POSITION"))?;
        if let Some(v) = positions.iter().position(|p| !p.is_finite()) {
            return Err(mesh_error(format!("non-finite position at vertex {v}")));
        }
        let vertex_count = positions.len();
        if u32::try_from(vertex_count).is_err() {
            return Err(mesh_error(format!(
                "{vertex_count} vertices do not fit 32-bit indices"
            )));
        }

        let normals = match primitive.get(&Semantic::Normals) {
            Some(accessor) => {
                let normals = self.vec3(
                    accessor,
                    Kind::Direction,
                    Some(vertex_count),
                    &usage("NORMAL"),
                )?;
                if let Some(v) = normals.iter().position(|n| !n.is_finite()) {
                    return Err(mesh_error(format!("non-finite normal at vertex {v}")));
                }
                Some(normals)
            }
            None => None,
        };

        let uv_set = primitive
            .material()
            .index()
            .and_then(|m| self.uv_sets.get(m).copied())
            .unwrap_or(0);
        let uv_accessor = match primitive.get(&Semantic::TexCoords(uv_set)) {
            Some(accessor) => Some((uv_set, accessor)),
            None => {
                if uv_set != 0 {
                    tracing::warn!(
                        file = self.file,
                        mesh = mesh_label,
                        primitive = p,
                        set = uv_set,
                        "the base colour texture's TEXCOORD set is missing; using TEXCOORD_0"
                    );
                }
                primitive
                    .get(&Semantic::TexCoords(0))
                    .map(|accessor| (0, accessor))
            }
        };
        let uvs = match uv_accessor {
            Some((set, accessor)) => {
                let use_ = usage(&format!("TEXCOORD_{set}"));
                let count = self.prepare(&accessor, Kind::TexCoord, Some(vertex_count), &use_)?;
                let index = accessor.index();
                let uvs = accessor::read_vec2(accessor, count, self.buffers)
                    .map_err(|detail| self.accessor_error(index, &use_, detail))?;
                if let Some(v) = uvs.iter().position(|uv| !uv.is_finite()) {
                    return Err(mesh_error(format!(
                        "non-finite TEXCOORD_{set} at vertex {v}"
                    )));
                }
                uvs
            }
            None => vec![Vec2::ZERO; vertex_count],
        };

        let (joints, joint_weights) = match (
            primitive.get(&Semantic::Joints(0)),
            primitive.get(&Semantic::Weights(0)),
        ) {
            (Some(joint_accessor), Some(weight_accessor)) => {
                let use_ = usage("JOINTS_0");
                let count =
                    self.prepare(&joint_accessor, Kind::Joints, Some(vertex_count), &use_)?;
                let index = joint_accessor.index();
                self.joint_accessors.insert(loaded, (index, p));
                let mut joints = accessor::read_joints(joint_accessor, count, self.buffers)
                    .map_err(|detail| self.accessor_error(index, &use_, detail))?;
                let use_ = usage("WEIGHTS_0");
                let count =
                    self.prepare(&weight_accessor, Kind::Weights, Some(vertex_count), &use_)?;
                let index = weight_accessor.index();
                let mut weights = accessor::read_vec4_unorm(weight_accessor, count, self.buffers)
                    .map_err(|detail| self.accessor_error(index, &use_, detail))?;
                if let Some(v) = weights.iter().position(|w| !w.is_finite()) {
                    return Err(mesh_error(format!("non-finite WEIGHTS_0 at vertex {v}")));
                }
                let renormalised = normalize_skin_weights(&mut joints, &mut weights);
                if renormalised > 0 {
                    tracing::debug!(
                        file = self.file,
                        mesh = mesh_label,
                        primitive = p,
                        vertices = renormalised,
                        "skin weights renormalised to sum to 1"
                    );
                }
                (joints, weights)
            }
            (None, None) => (Vec::new(), Vec::new()),
            _ => {
                tracing::warn!(
                    file = self.file,
                    mesh = mesh_label,
                    primitive = p,
                    "JOINTS_0 without WEIGHTS_0 (or the reverse); drawing the primitive unskinned"
                );
                (Vec::new(), Vec::new())
            }
        };

        let colors = match primitive.get(&Semantic::Colors(0)) {
            Some(accessor) => {
                let use_ = usage("COLOR_0");
                let count = self.prepare(&accessor, Kind::Color, Some(vertex_count), &use_)?;
                let index = accessor.index();
                let colors = accessor::read_vec4_unorm(accessor, count, self.buffers)
                    .map_err(|detail| self.accessor_error(index, &use_, detail))?;
                if let Some(v) = colors.iter().position(|c| !c.is_finite()) {
                    return Err(mesh_error(format!("non-finite COLOR_0 at vertex {v}")));
                }
                colors
            }
            None => Vec::new(),
        };

        let mut indices = match primitive.indices() {
            Some(accessor) => {
                let use_ = usage("indices");
                let count = self.prepare(&accessor, Kind::Index, None, &use_)?;
                let index = accessor.index();
                let indices = accessor::read_indices(accessor, count, self.buffers)
                    .map_err(|detail| self.accessor_error(index, &use_, detail))?;
                if let Some((at, &bad)) = indices
                    .iter()
                    .enumerate()
                    .find(|(_, &i)| i as usize >= vertex_count)
                {
                    return Err(mesh_error(format!(
                        "index {bad} at position {at} is out of range for {vertex_count} vertices"
                    )));
                }
                indices
            }
            None => {
                self.spend(vertex_count, &usage("generated indices"))?;
                (0..vertex_count as u32).collect()
            }
        };
        if indices.len() % 3 != 0 {
            tracing::warn!(
                file = self.file,
                mesh = mesh_label,
                primitive = p,
                indices = indices.len(),
                "index count is not a multiple of 3; dropping the incomplete triangle"
            );
            indices.truncate(indices.len() - indices.len() % 3);
        }

        let mut targets = Vec::new();
        for (t, target) in primitive.morph_targets().enumerate() {
            let target_positions = match target.positions() {
                Some(accessor) => {
                    let use_ = usage(&format!("target {t} POSITION"));
                    let deltas =
                        self.vec3(accessor, Kind::PositionDelta, Some(vertex_count), &use_)?;
                    if let Some(v) = deltas.iter().position(|d| !d.is_finite()) {
                        return Err(mesh_error(format!(
                            "target {t}: non-finite position delta at vertex {v}"
                        )));
                    }
                    Deltas::from_dense(&deltas)
                }
                None => {
                    self.spend(vertex_count, &usage(&format!("target {t} (no POSITION)")))?;
                    Deltas::from_entries(vertex_count, [])
                }
            };
            // Normal deltas only mean something relative to base normals; without them the
            // normals (and their deltas) are generated below.
            let target_normals = match (target.normals(), &normals) {
                (Some(accessor), Some(_)) => {
                    let use_ = usage(&format!("target {t} NORMAL"));
                    let deltas = self.vec3(accessor, Kind::Direction, Some(vertex_count), &use_)?;
                    if let Some(v) = deltas.iter().position(|d| !d.is_finite()) {
                        return Err(mesh_error(format!(
                            "target {t}: non-finite normal delta at vertex {v}"
                        )));
                    }
                    Deltas::from_dense(&deltas)
                }
                _ => Deltas::new(),
            };
            let target_tangents = match target.tangents() {
                Some(accessor) => {
                    let use_ = usage(&format!("target {t} TANGENT"));
                    let deltas = self.vec3(accessor, Kind::Direction, Some(vertex_count), &use_)?;
                    if let Some(v) = deltas.iter().position(|d| !d.is_finite()) {
                        return Err(mesh_error(format!(
                            "target {t}: non-finite tangent delta at vertex {v}"
                        )));
                    }
                    Deltas::from_dense(&deltas)
                }
                None => Deltas::new(),
            };
            targets.push(MorphTarget {
                positions: target_positions,
                normals: target_normals,
                tangents: target_tangents,
            });
        }

        let mut out = Primitive {
            positions,
            normals: normals.unwrap_or_default(),
            uvs,
            indices,
            material: primitive.material().index(),
            targets,
            joints,
            joint_weights,
            colors,
        };
        if out.normals.is_empty() {
            let expanded = out.indices.len().saturating_mul(3 + 2 * out.targets.len());
            self.spend(expanded, &usage("generated flat normals"))?;
            flat_shade(&mut out);
        }
        Ok(out)
    }
}

/// The `targetNames` array of a raw JSON extras object, if it has one.
fn target_names(extras: &gltf::json::Extras) -> Option<Vec<String>> {
    let raw = extras.as_ref()?;
    let value: serde_json::Value = serde_json::from_str(raw.get()).ok()?;
    let names = value.get("targetNames")?.as_array()?;
    Some(
        names
            .iter()
            .map(|name| name.as_str().unwrap_or_default().to_owned())
            .collect(),
    )
}

/// Makes skin weights usable: negative weights become 0, each vertex's weights are divided by
/// their sum (a vertex whose weights sum to zero keeps all-zero weights: it follows its mesh's
/// node), and the joint of every zero-weight influence becomes 0, so only joints that matter are
/// range-checked. Returns how many vertices had to be renormalised.
fn normalize_skin_weights(joints: &mut [[u16; 4]], weights: &mut [Vec4]) -> usize {
    let mut renormalised = 0;
    for (joint, weight) in joints.iter_mut().zip(weights.iter_mut()) {
        let w = weight.max(Vec4::ZERO);
        let sum = w.element_sum();
        *weight = if sum > 0.0 { w / sum } else { Vec4::ZERO };
        if (sum - 1.0).abs() > 1e-3 {
            renormalised += 1;
        }
        for (j, w) in joint.iter_mut().zip(weight.to_array()) {
            if w == 0.0 {
                *j = 0;
            }
        }
    }
    renormalised
}

/// Gives a primitive without normals the flat normals glTF requires: each triangle gets its own
/// three vertices (remapping UVs and every target's position deltas with them) and its face
/// normal, and each target gets normal deltas equal to the change of the face normal at full
/// weight, so shading follows the expression.
fn flat_shade(primitive: &mut Primitive) {
    let corners: Vec<usize> = primitive.indices.iter().map(|&i| i as usize).collect();
    let base = &primitive.positions;
    let mut normals = Vec::with_capacity(corners.len());
    for triangle in corners.chunks_exact(3) {
        let n = face_normal(base[triangle[0]], base[triangle[1]], base[triangle[2]]);
        normals.extend([n; 3]);
    }
    for target in &mut primitive.targets {
        let deltas = &target.positions;
        let mut normal_deltas = Vec::with_capacity(corners.len());
        for (t, triangle) in corners.chunks_exact(3).enumerate() {
            let [a, b, c] = [triangle[0], triangle[1], triangle[2]];
            let delta =
                if deltas[a] == Vec3::ZERO && deltas[b] == Vec3::ZERO && deltas[c] == Vec3::ZERO {
                    Vec3::ZERO
                } else {
                    let base_normal = normals[3 * t];
                    let moved = (base[b] + deltas[b] - base[a] - deltas[a])
                        .cross(base[c] + deltas[c] - base[a] - deltas[a])
                        .normalize_or(base_normal);
                    moved - base_normal
                };
            normal_deltas.extend([delta; 3]);
        }
        target.positions = corners.iter().map(|&i| deltas[i]).collect();
        target.normals = normal_deltas.into();
        if !target.tangents.is_empty() {
            target.tangents = corners.iter().map(|&i| target.tangents[i]).collect();
        }
    }
    primitive.positions = corners.iter().map(|&i| base[i]).collect();
    primitive.uvs = corners.iter().map(|&i| primitive.uvs[i]).collect();
    if !primitive.joints.is_empty() {
        primitive.joints = corners.iter().map(|&i| primitive.joints[i]).collect();
        primitive.joint_weights = corners
            .iter()
            .map(|&i| primitive.joint_weights[i])
            .collect();
    }
    if !primitive.colors.is_empty() {
        primitive.colors = corners.iter().map(|&i| primitive.colors[i]).collect();
    }
    primitive.normals = normals;
    primitive.indices = (0..corners.len() as u32).collect();
}

/// The face normal of a triangle, or +Z for a degenerate one (which rasterises to nothing).
fn face_normal(a: Vec3, b: Vec3, c: Vec3) -> Vec3 {
    (b - a).cross(c - a).normalize_or(Vec3::Z)
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{floats, gltf_json, triangle_doc};
    use super::*;
    use crate::avatar::load::load_slice;

    #[test]
    fn missing_normals_become_flat_with_target_normal_deltas() {
        let avatar = load_slice(
            &triangle_doc(3, r#","extras":{"targetNames":["lift"]}"#),
            "tri",
        )
        .unwrap();
        let mesh = &avatar.meshes[0];
        assert_eq!(mesh.target_names, vec!["lift".to_owned()]);
        assert_eq!(mesh.default_weights, vec![0.0]);
        let prim = &mesh.primitives[0];
        assert_eq!(prim.indices, vec![0, 1, 2]);
        assert_eq!(prim.normals, vec![Vec3::Z; 3]);
        assert_eq!(prim.uvs, vec![Vec2::ZERO; 3]);
        // At full weight vertex 2 moves to (0,1,1): the face normal becomes (0,-1,1)/√2.
        let moved = Vec3::new(0.0, -1.0, 1.0).normalize();
        for delta in &prim.targets[0].normals {
            assert!((Vec3::Z + *delta - moved).length() < 1e-6);
        }
        assert_eq!(prim.targets[0].positions[2], Vec3::Z);
        assert_eq!(avatar.roots, vec![0]);
    }

    #[test]
    fn too_much_vertex_data_names_the_accessor_and_its_mesh() {
        // A sparse POSITION accessor of 2^26 + 1 elements, one of them given: sixteen bytes
        // asking for a gigabyte.
        let mut bin = 0u32.to_le_bytes().to_vec();
        bin.extend(floats(&[0.0, 0.0, 0.0]));
        let count = super::super::MAX_DECODED_ELEMENTS + 1;
        let body = format!(
            r#""bufferViews":[{{"buffer":0,"byteLength":4}},{{"buffer":0,"byteOffset":4,"byteLength":12}}],
            "accessors":[{{"componentType":5126,"count":{count},"type":"VEC3","min":[0,0,0],"max":[0,0,0],
              "sparse":{{"count":1,"indices":{{"bufferView":0,"componentType":5125}},"values":{{"bufferView":1}}}}}}],
            "meshes":[{{"name":"Body","primitives":[{{"attributes":{{"POSITION":0}}}}]}}]"#
        );
        let error = load_slice(&gltf_json(&bin, &body), "big.gltf").unwrap_err();
        assert!(matches!(error, AvatarError::TooLarge { .. }), "{error}");
        assert_eq!(
            error.to_string(),
            format!(
                "big.gltf: accessor 0 (\"Body\" (mesh 0) primitive 0 POSITION): refusing to \
                 decode more than {} vertex attribute elements in all",
                count - 1
            )
        );
    }

    #[test]
    fn target_with_wrong_vertex_count_is_an_error() {
        let error = load_slice(&triangle_doc(2, ""), "short-target").unwrap_err();
        let message = error.to_string();
        assert!(
            matches!(error, AvatarError::Accessor { accessor: 1, .. }),
            "{message}"
        );
        assert!(
            message.contains("short-target") && message.contains("target 0"),
            "{message}"
        );
    }

    #[test]
    fn mesh_weights_disagreeing_with_targets_is_an_error() {
        let error = load_slice(&triangle_doc(3, r#","weights":[0,0]"#), "weights").unwrap_err();
        assert!(matches!(error, AvatarError::Mesh { .. }), "{error}");
        assert!(error.to_string().contains("mesh 0"), "{error}");
    }

    #[test]
    fn out_of_range_indices_and_views_are_errors() {
        let bin = floats(&[0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
        let mut bin = bin;
        bin.extend([0u8, 0, 1, 0, 7, 0, 0, 0]);
        let doc = |index_view_len: usize, stride: &str| {
            let body = format!(
                r#""bufferViews":[{{"buffer":0,"byteLength":36{stride}}},{{"buffer":0,"byteOffset":36,"byteLength":{index_view_len}}}],
                "accessors":[
                  {{"bufferView":0,"componentType":5126,"count":3,"type":"VEC3","min":[0,0,0],"max":[1,1,0]}},
                  {{"bufferView":1,"componentType":5123,"count":3,"type":"SCALAR"}}],
                "meshes":[{{"primitives":[{{"attributes":{{"POSITION":0}},"indices":1}}]}}]"#
            );
            gltf_json(&bin, &body)
        };
        let bad_index = load_slice(&doc(6, ""), "bad-index").unwrap_err();
        assert!(matches!(bad_index, AvatarError::Mesh { .. }), "{bad_index}");
        assert!(bad_index.to_string().contains("index 7"), "{bad_index}");
        let short_view = load_slice(&doc(4, ""), "short-view").unwrap_err();
        assert!(
            matches!(short_view, AvatarError::Accessor { accessor: 1, .. }),
            "{short_view}"
        );
        let long_view = load_slice(&doc(60, ""), "long-view").unwrap_err();
        assert!(
            matches!(long_view, AvatarError::Accessor { .. }),
            "{long_view}"
        );
        let thin_stride = load_slice(&doc(6, r#","byteStride":4"#), "stride").unwrap_err();
        assert!(
            matches!(thin_stride, AvatarError::Accessor { accessor: 0, .. }),
            "{thin_stride}"
        );
    }
}

//! A small, deterministic GLB (binary glTF 2.0) writer: nodes, meshes with morph targets
//! (stored as sparse accessors), materials and at most one embedded PNG texture.
//!
//! Besides the default head it writes the avatars `facewire import-obj` builds, which have no
//! texture and no texture coordinates.
//!
//! The JSON is serialised from structs, so its field order is fixed by this file and not by
//! serde_json's map implementation.

use std::collections::BTreeMap;

use glam::{Vec2, Vec3};
use serde::Serialize;

/// A scene to write: `roots` lists the scene's root nodes (`nodes[0]` alone when empty).
#[derive(Debug, Clone, Default)]
pub struct Document {
    /// All nodes.
    pub nodes: Vec<NodeDef>,
    /// Indices of the scene's root nodes; empty means `nodes[0]` is the only root.
    pub roots: Vec<usize>,
    /// All meshes.
    pub meshes: Vec<MeshDef>,
    /// All materials.
    pub materials: Vec<MaterialDef>,
    /// The one texture image, PNG encoded; empty for none (then no material may be textured).
    pub image_png: Vec<u8>,
    /// Further textures no material samples, by name (wrinkle maps a mapping file names),
    /// PNG encoded; written after the colour texture, sharing its sampler.
    pub extra_images: Vec<(String, Vec<u8>)>,
}

/// A node with a translation.
#[derive(Debug, Clone, Default)]
pub struct NodeDef {
    /// Node name.
    pub name: String,
    /// Translation relative to the parent (m).
    pub translation: Vec3,
    /// Mesh index.
    pub mesh: Option<usize>,
    /// Child node indices.
    pub children: Vec<usize>,
    /// The node's coarser levels of detail (`MSFT_lod` ids, finest first); empty for none.
    pub lod: Vec<usize>,
    /// Screen coverage thresholds of the node's levels (`extras.MSFT_screencoverage`,
    /// descending, one per level including this node's); empty for the reader's defaults.
    pub lod_coverage: Vec<f32>,
}

/// A mesh; every primitive must carry `target_names.len()` targets.
#[derive(Debug, Clone, Default)]
pub struct MeshDef {
    /// Mesh name.
    pub name: String,
    /// Morph target names, written to `extras.targetNames`.
    pub target_names: Vec<String>,
    /// Primitives.
    pub primitives: Vec<PrimitiveDef>,
}

/// An indexed triangle list.
#[derive(Debug, Clone, Default)]
pub struct PrimitiveDef {
    /// Positions (m).
    pub positions: Vec<Vec3>,
    /// Unit normals.
    pub normals: Vec<Vec3>,
    /// Texture coordinates; empty for none (no `TEXCOORD_0` is written).
    pub uvs: Vec<Vec2>,
    /// Triangle indices.
    pub indices: Vec<u32>,
    /// Material index.
    pub material: usize,
    /// Morph targets (dense; written sparse).
    pub targets: Vec<TargetDef>,
}

/// One morph target of one primitive.
#[derive(Debug, Clone, Default)]
pub struct TargetDef {
    /// Position deltas, one per vertex.
    pub positions: Vec<Vec3>,
    /// Normal deltas, one per vertex; empty for a target without `NORMAL` (readers then keep
    /// the base normals under it).
    pub normals: Vec<Vec3>,
}

/// A metallic-roughness material.
#[derive(Debug, Clone)]
pub struct MaterialDef {
    /// Material name.
    pub name: String,
    /// Linear base colour factor.
    pub base_color: [f32; 4],
    /// Whether the base colour is multiplied by the texture.
    pub textured: bool,
    /// Whether back faces are drawn.
    pub double_sided: bool,
    /// Roughness factor.
    pub roughness: f32,
}

const ARRAY_BUFFER: u32 = 34962;
const ELEMENT_ARRAY_BUFFER: u32 = 34963;
const FLOAT: u32 = 5126;
const UNSIGNED_SHORT: u32 = 5123;
const UNSIGNED_INT: u32 = 5125;

#[derive(Serialize)]
struct Root {
    asset: Asset,
    scene: usize,
    scenes: Vec<Scene>,
    nodes: Vec<Node>,
    meshes: Vec<Mesh>,
    materials: Vec<Material>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    textures: Vec<Texture>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    samplers: Vec<Sampler>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    images: Vec<Image>,
    accessors: Vec<Accessor>,
    #[serde(rename = "bufferViews")]
    buffer_views: Vec<BufferView>,
    buffers: Vec<Buffer>,
    #[serde(rename = "extensionsUsed", skip_serializing_if = "Vec::is_empty")]
    extensions_used: Vec<&'static str>,
}

#[derive(Serialize)]
struct Asset {
    version: &'static str,
    generator: String,
}

#[derive(Serialize)]
struct Scene {
    nodes: Vec<usize>,
}

#[derive(Serialize)]
struct Node {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    mesh: Option<usize>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    children: Vec<usize>,
    translation: [f32; 3],
    #[serde(skip_serializing_if = "Option::is_none")]
    extensions: Option<NodeExtensions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extras: Option<NodeExtras>,
}

#[derive(Serialize)]
struct NodeExtensions {
    #[serde(rename = "MSFT_lod")]
    msft_lod: MsftLod,
}

#[derive(Serialize)]
struct MsftLod {
    ids: Vec<usize>,
}

#[derive(Serialize)]
struct NodeExtras {
    #[serde(rename = "MSFT_screencoverage")]
    screen_coverage: Vec<f32>,
}

#[derive(Serialize)]
struct Mesh {
    name: String,
    primitives: Vec<Primitive>,
    #[serde(skip_serializing_if = "Option::is_none")]
    weights: Option<Vec<f32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extras: Option<Extras>,
}

#[derive(Serialize)]
struct Extras {
    #[serde(rename = "targetNames")]
    target_names: Vec<String>,
}

#[derive(Serialize)]
struct Attributes {
    #[serde(rename = "POSITION")]
    position: usize,
    #[serde(rename = "NORMAL", skip_serializing_if = "Option::is_none")]
    normal: Option<usize>,
    #[serde(rename = "TEXCOORD_0", skip_serializing_if = "Option::is_none")]
    texcoord: Option<usize>,
}

#[derive(Serialize)]
struct Primitive {
    attributes: Attributes,
    indices: usize,
    material: usize,
    mode: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    targets: Vec<Attributes>,
}

#[derive(Serialize)]
struct Material {
    name: String,
    #[serde(rename = "pbrMetallicRoughness")]
    pbr: Pbr,
    #[serde(rename = "doubleSided")]
    double_sided: bool,
}

#[derive(Serialize)]
struct Pbr {
    #[serde(rename = "baseColorFactor")]
    base_color_factor: [f32; 4],
    #[serde(rename = "baseColorTexture", skip_serializing_if = "Option::is_none")]
    base_color_texture: Option<TextureRef>,
    #[serde(rename = "metallicFactor")]
    metallic_factor: f32,
    #[serde(rename = "roughnessFactor")]
    roughness_factor: f32,
}

#[derive(Serialize)]
struct TextureRef {
    index: usize,
}

#[derive(Serialize)]
struct Texture {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    sampler: usize,
    source: usize,
}

#[derive(Serialize)]
struct Sampler {
    #[serde(rename = "magFilter")]
    mag_filter: u32,
    #[serde(rename = "minFilter")]
    min_filter: u32,
    #[serde(rename = "wrapS")]
    wrap_s: u32,
    #[serde(rename = "wrapT")]
    wrap_t: u32,
}

#[derive(Serialize)]
struct Image {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(rename = "bufferView")]
    buffer_view: usize,
    #[serde(rename = "mimeType")]
    mime_type: &'static str,
}

#[derive(Serialize)]
struct Accessor {
    #[serde(rename = "bufferView", skip_serializing_if = "Option::is_none")]
    buffer_view: Option<usize>,
    #[serde(rename = "componentType")]
    component_type: u32,
    count: usize,
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    min: Option<Vec<f32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max: Option<Vec<f32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sparse: Option<Sparse>,
}

#[derive(Serialize)]
struct Sparse {
    count: usize,
    indices: SparseIndices,
    values: SparseValues,
}

#[derive(Serialize)]
struct SparseIndices {
    #[serde(rename = "bufferView")]
    buffer_view: usize,
    #[serde(rename = "componentType")]
    component_type: u32,
}

#[derive(Serialize)]
struct SparseValues {
    #[serde(rename = "bufferView")]
    buffer_view: usize,
}

#[derive(Serialize)]
struct BufferView {
    buffer: usize,
    #[serde(rename = "byteOffset")]
    byte_offset: usize,
    #[serde(rename = "byteLength")]
    byte_length: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<u32>,
}

#[derive(Serialize)]
struct Buffer {
    #[serde(rename = "byteLength")]
    byte_length: usize,
}

/// Accumulates the binary chunk and its buffer views.
#[derive(Default)]
struct Bin {
    data: Vec<u8>,
    views: Vec<BufferView>,
    accessors: Vec<Accessor>,
    /// The shared all-zero target accessor of each vertex count.
    zeros: BTreeMap<usize, usize>,
}

impl Bin {
    fn view(&mut self, bytes: &[u8], target: Option<u32>) -> usize {
        while !self.data.len().is_multiple_of(4) {
            self.data.push(0);
        }
        self.views.push(BufferView {
            buffer: 0,
            byte_offset: self.data.len(),
            byte_length: bytes.len(),
            target,
        });
        self.data.extend_from_slice(bytes);
        self.views.len() - 1
    }

    fn accessor(&mut self, accessor: Accessor) -> usize {
        self.accessors.push(accessor);
        self.accessors.len() - 1
    }

    fn vec3(&mut self, values: &[Vec3], bounds: bool) -> usize {
        let view = self.view(&vec3_bytes(values), Some(ARRAY_BUFFER));
        let (min, max) = if bounds {
            let (lo, hi) = min_max(values.iter().copied());
            (Some(lo.to_array().to_vec()), Some(hi.to_array().to_vec()))
        } else {
            (None, None)
        };
        self.accessor(Accessor {
            buffer_view: Some(view),
            component_type: FLOAT,
            count: values.len(),
            kind: "VEC3",
            min,
            max,
            sparse: None,
        })
    }

    fn vec2(&mut self, values: &[Vec2]) -> usize {
        let bytes: Vec<u8> = values
            .iter()
            .flat_map(|v| v.to_array())
            .flat_map(f32::to_le_bytes)
            .collect();
        let view = self.view(&bytes, Some(ARRAY_BUFFER));
        self.accessor(Accessor {
            buffer_view: Some(view),
            component_type: FLOAT,
            count: values.len(),
            kind: "VEC2",
            min: None,
            max: None,
            sparse: None,
        })
    }

    fn indices(&mut self, indices: &[u32], vertex_count: usize) -> usize {
        let (bytes, component_type) = index_bytes(indices, vertex_count);
        let view = self.view(&bytes, Some(ELEMENT_ARRAY_BUFFER));
        self.accessor(Accessor {
            buffer_view: Some(view),
            component_type,
            count: indices.len(),
            kind: "SCALAR",
            min: None,
            max: None,
            sparse: None,
        })
    }

    /// A sparse target: positions and normals share one index list (every vertex where either
    /// changes). An all-zero target still lists vertex 0, because glTF requires a sparse count
    /// of at least one and an accessor without a buffer view must be sparse; all the all-zero
    /// targets of one vertex count share one such accessor. A target without normal deltas
    /// gets no `NORMAL`.
    fn target(&mut self, target: &TargetDef) -> Attributes {
        let n = target.positions.len();
        let has_normals = !target.normals.is_empty();
        let moves = |i: usize| {
            target.positions[i] != Vec3::ZERO || (has_normals && target.normals[i] != Vec3::ZERO)
        };
        let listed: Vec<u32> = (0..n).filter(|&i| moves(i)).map(|i| i as u32).collect();
        if listed.is_empty() {
            let zero = self.zero(n);
            return Attributes {
                position: zero,
                normal: has_normals.then_some(zero),
                texcoord: None,
            };
        }
        let index_view = self.view(&index_bytes(&listed, n).0, None);
        let component_type = index_bytes(&[], n).1;
        let position = self.sparse(&target.positions, &listed, index_view, component_type);
        let normal =
            has_normals.then(|| self.sparse(&target.normals, &listed, index_view, component_type));
        Attributes {
            position,
            normal,
            texcoord: None,
        }
    }

    /// The shared all-zero target accessor for `n` vertices (vertex 0 listed with a zero).
    fn zero(&mut self, n: usize) -> usize {
        if let Some(&zero) = self.zeros.get(&n) {
            return zero;
        }
        let (index_data, component_type) = index_bytes(&[0], n);
        let index_view = self.view(&index_data, None);
        let zero = self.sparse(&vec![Vec3::ZERO; n], &[0], index_view, component_type);
        self.zeros.insert(n, zero);
        zero
    }

    /// A sparse VEC3 accessor of `n = values.len()` elements holding `values` at `listed`.
    fn sparse(
        &mut self,
        values: &[Vec3],
        listed: &[u32],
        index_view: usize,
        component_type: u32,
    ) -> usize {
        let n = values.len();
        let picked: Vec<Vec3> = listed.iter().map(|&i| values[i as usize]).collect();
        let value_view = self.view(&vec3_bytes(&picked), None);
        // Bounds cover every element, including the implicit zeros of unlisted vertices.
        let zeros = (listed.len() < n).then_some(Vec3::ZERO);
        let (lo, hi) = min_max(picked.iter().copied().chain(zeros));
        self.accessor(Accessor {
            buffer_view: None,
            component_type: FLOAT,
            count: n,
            kind: "VEC3",
            min: Some(lo.to_array().to_vec()),
            max: Some(hi.to_array().to_vec()),
            sparse: Some(Sparse {
                count: listed.len(),
                indices: SparseIndices {
                    buffer_view: index_view,
                    component_type,
                },
                values: SparseValues {
                    buffer_view: value_view,
                },
            }),
        })
    }
}

fn vec3_bytes(values: &[Vec3]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|v| v.to_array())
        .flat_map(f32::to_le_bytes)
        .collect()
}

fn index_bytes(indices: &[u32], vertex_count: usize) -> (Vec<u8>, u32) {
    if vertex_count <= usize::from(u16::MAX) {
        let bytes = indices
            .iter()
            .flat_map(|&i| (i as u16).to_le_bytes())
            .collect();
        (bytes, UNSIGNED_SHORT)
    } else {
        (
            indices.iter().flat_map(|&i| i.to_le_bytes()).collect(),
            UNSIGNED_INT,
        )
    }
}

fn min_max(values: impl Iterator<Item = Vec3>) -> (Vec3, Vec3) {
    let mut lo = Vec3::splat(f32::MAX);
    let mut hi = Vec3::splat(f32::MIN);
    let mut any = false;
    for v in values {
        lo = lo.min(v);
        hi = hi.max(v);
        any = true;
    }
    if any {
        (lo, hi)
    } else {
        (Vec3::ZERO, Vec3::ZERO)
    }
}

/// Serialises `doc` as GLB bytes, naming "facewire headgen" as the generator.
pub fn write(doc: &Document) -> Vec<u8> {
    write_as(doc, "facewire headgen")
}

/// Serialises `doc` as GLB bytes with `generator` in the asset header.
pub fn write_as(doc: &Document, generator: &str) -> Vec<u8> {
    let mut bin = Bin::default();
    let mut meshes = Vec::new();
    for mesh in &doc.meshes {
        let mut primitives = Vec::new();
        for prim in &mesh.primitives {
            let position = bin.vec3(&prim.positions, true);
            let normal = bin.vec3(&prim.normals, false);
            let texcoord = (!prim.uvs.is_empty()).then(|| bin.vec2(&prim.uvs));
            let indices = bin.indices(&prim.indices, prim.positions.len());
            let targets = prim.targets.iter().map(|t| bin.target(t)).collect();
            primitives.push(Primitive {
                attributes: Attributes {
                    position,
                    normal: Some(normal),
                    texcoord,
                },
                indices,
                material: prim.material,
                mode: 4,
                targets,
            });
        }
        let has_targets = !mesh.target_names.is_empty();
        meshes.push(Mesh {
            name: mesh.name.clone(),
            primitives,
            weights: has_targets.then(|| vec![0.0; mesh.target_names.len()]),
            extras: has_targets.then(|| Extras {
                target_names: mesh.target_names.clone(),
            }),
        });
    }
    let image_view = (!doc.image_png.is_empty()).then(|| bin.view(&doc.image_png, None));
    // The colour texture (if any) is texture and image 0; the named ones follow it.
    let mut images: Vec<(Option<String>, usize)> =
        image_view.map(|view| (None, view)).into_iter().collect();
    for (name, png) in &doc.extra_images {
        images.push((Some(name.clone()), bin.view(png, None)));
    }
    while !bin.data.len().is_multiple_of(4) {
        bin.data.push(0);
    }

    let root = Root {
        asset: Asset {
            version: "2.0",
            generator: generator.to_owned(),
        },
        scene: 0,
        scenes: vec![Scene {
            nodes: if doc.roots.is_empty() {
                vec![0]
            } else {
                doc.roots.clone()
            },
        }],
        nodes: doc
            .nodes
            .iter()
            .map(|n| Node {
                name: n.name.clone(),
                mesh: n.mesh,
                children: n.children.clone(),
                translation: n.translation.to_array(),
                extensions: (!n.lod.is_empty()).then(|| NodeExtensions {
                    msft_lod: MsftLod { ids: n.lod.clone() },
                }),
                extras: (!n.lod_coverage.is_empty()).then(|| NodeExtras {
                    screen_coverage: n.lod_coverage.clone(),
                }),
            })
            .collect(),
        meshes,
        materials: doc
            .materials
            .iter()
            .map(|m| Material {
                name: m.name.clone(),
                pbr: Pbr {
                    base_color_factor: m.base_color,
                    base_color_texture: (m.textured && image_view.is_some())
                        .then_some(TextureRef { index: 0 }),
                    metallic_factor: 0.0,
                    roughness_factor: m.roughness,
                },
                double_sided: m.double_sided,
            })
            .collect(),
        textures: images
            .iter()
            .enumerate()
            .map(|(source, (name, _))| Texture {
                name: name.clone(),
                sampler: 0,
                source,
            })
            .collect(),
        samplers: (!images.is_empty())
            .then_some(Sampler {
                mag_filter: 9729,
                min_filter: 9987,
                wrap_s: 33071,
                wrap_t: 33071,
            })
            .into_iter()
            .collect(),
        images: images
            .iter()
            .map(|(name, buffer_view)| Image {
                name: name.clone(),
                buffer_view: *buffer_view,
                mime_type: "image/png",
            })
            .collect(),
        accessors: std::mem::take(&mut bin.accessors),
        buffer_views: std::mem::take(&mut bin.views),
        buffers: vec![Buffer {
            byte_length: bin.data.len(),
        }],
        extensions_used: if doc.nodes.iter().any(|n| !n.lod.is_empty()) {
            vec!["MSFT_lod"]
        } else {
            Vec::new()
        },
    };
    // Serialising plain structs of numbers and strings cannot fail.
    let mut json = serde_json::to_vec(&root).unwrap_or_default();
    while !json.len().is_multiple_of(4) {
        json.push(b' ');
    }

    let total = 12 + 8 + json.len() + 8 + bin.data.len();
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(b"glTF");
    out.extend_from_slice(&2u32.to_le_bytes());
    out.extend_from_slice(&(total as u32).to_le_bytes());
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(b"JSON");
    out.extend_from_slice(&json);
    out.extend_from_slice(&(bin.data.len() as u32).to_le_bytes());
    out.extend_from_slice(b"BIN\0");
    out.extend_from_slice(&bin.data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn triangle_doc() -> Document {
        let prim = PrimitiveDef {
            positions: vec![Vec3::ZERO, Vec3::X, Vec3::Y],
            normals: vec![Vec3::Z; 3],
            uvs: vec![Vec2::ZERO; 3],
            indices: vec![0, 1, 2],
            material: 0,
            targets: vec![
                TargetDef {
                    positions: vec![Vec3::ZERO, Vec3::new(0.0, 0.5, 0.0), Vec3::ZERO],
                    normals: vec![Vec3::ZERO; 3],
                },
                TargetDef {
                    positions: vec![Vec3::ZERO; 3],
                    normals: vec![Vec3::ZERO; 3],
                },
            ],
        };
        Document {
            nodes: vec![NodeDef {
                name: "Root".into(),
                mesh: Some(0),
                ..NodeDef::default()
            }],
            roots: Vec::new(),
            meshes: vec![MeshDef {
                name: "Tri".into(),
                target_names: vec!["a".into(), "b".into()],
                primitives: vec![prim],
            }],
            materials: vec![MaterialDef {
                name: "m".into(),
                base_color: [1.0; 4],
                textured: false,
                double_sided: false,
                roughness: 1.0,
            }],
            image_png: vec![1, 2, 3],
            extra_images: Vec::new(),
        }
    }

    #[test]
    fn glb_header_and_chunks_are_aligned() {
        let glb = write(&triangle_doc());
        assert_eq!(&glb[0..4], b"glTF");
        assert_eq!(
            u32::from_le_bytes(glb[8..12].try_into().unwrap()) as usize,
            glb.len()
        );
        let json_len = u32::from_le_bytes(glb[12..16].try_into().unwrap()) as usize;
        assert_eq!(json_len % 4, 0);
        assert_eq!(glb.len() % 4, 0);
    }

    #[test]
    fn named_textures_follow_the_colour_texture() {
        let mut doc = triangle_doc();
        doc.extra_images = vec![("wrinkles".into(), vec![4, 5, 6, 7])];
        doc.materials[0].textured = true;
        let gltf = gltf::Gltf::from_slice(&write_as(&doc, "test")).unwrap();
        let names: Vec<Option<String>> = gltf
            .textures()
            .map(|t| t.name().map(String::from))
            .collect();
        assert_eq!(names, [None, Some("wrinkles".to_string())]);
        assert_eq!(gltf.images().count(), 2);
        let material = gltf.materials().next().unwrap();
        let base = material.pbr_metallic_roughness().base_color_texture();
        assert_eq!(base.map(|t| t.texture().index()), Some(0));
        // Without a colour texture the named one is texture 0, and no material samples it.
        doc.image_png.clear();
        let gltf = gltf::Gltf::from_slice(&write_as(&doc, "test")).unwrap();
        let first = gltf
            .textures()
            .next()
            .and_then(|t| t.name().map(String::from));
        assert_eq!(first.as_deref(), Some("wrinkles"));
        let material = gltf.materials().next().unwrap();
        assert!(material
            .pbr_metallic_roughness()
            .base_color_texture()
            .is_none());
    }

    #[test]
    fn untextured_documents_have_no_texture_or_uvs() {
        let mut doc = triangle_doc();
        doc.image_png.clear();
        doc.meshes[0].primitives[0].uvs.clear();
        let glb = write_as(&doc, "test");
        let gltf = gltf::Gltf::from_slice(&glb).unwrap();
        assert_eq!(gltf.textures().count(), 0);
        assert_eq!(gltf.images().count(), 0);
        let prim = gltf.meshes().next().unwrap().primitives().next().unwrap();
        assert!(prim.get(&gltf::Semantic::TexCoords(0)).is_none());
        let material = gltf.materials().next().unwrap();
        assert!(material
            .pbr_metallic_roughness()
            .base_color_texture()
            .is_none());
        assert_eq!(gltf.as_json().asset.generator.as_deref(), Some("test"));
    }

    #[test]
    fn sparse_targets_parse_and_read_back() {
        let glb = write(&triangle_doc());
        let gltf = gltf::Gltf::from_slice(&glb).unwrap();
        let blob = gltf.blob.clone().unwrap();
        let mesh = gltf.meshes().next().unwrap();
        let prim = mesh.primitives().next().unwrap();
        let reader = prim.reader(|_| Some(&blob));
        let targets: Vec<_> = reader.read_morph_targets().collect();
        assert_eq!(targets.len(), 2);
        let a: Vec<[f32; 3]> = targets[0].0.clone().unwrap().collect();
        assert_eq!(a, vec![[0.0; 3], [0.0, 0.5, 0.0], [0.0; 3]]);
        let b: Vec<[f32; 3]> = targets[1].0.clone().unwrap().collect();
        assert_eq!(b, vec![[0.0; 3]; 3]);
    }
}

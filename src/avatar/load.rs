//! glTF 2.0 / GLB loading into the CPU avatar types, hardened against hostile files.
//!
//! Loading goes through the `gltf` crate (JSON validation, buffers, sparse accessors, PNG/JPEG
//! decoding) but checks what that crate leaves unchecked before asking it to read: GLB header
//! lengths, buffer view and accessor byte ranges, accessor layouts, URI encodings and image
//! sources. On top of that the avatar's own invariants are enforced: every morph target of a
//! primitive has one delta per vertex, every primitive of a mesh has the mesh's target count,
//! indices are in range, geometry is finite and the node hierarchy is a forest.
//!
//! A file that requires a glTF extension facewire does not support is refused, naming it (see
//! `extensions`). `KHR_mesh_quantization`'s integer attributes are turned into floats as they are
//! read, and `EXT_meshopt_compression`'s buffer views are decompressed before any accessor
//! reads them (see `compression`).

mod accessor;
mod compression;
mod extensions;
mod texture;

use super::{
    mtoon, AlphaMode, Avatar, Material, Mesh, MorphTarget, Node, Primitive, Skin, Texture,
    TextureTransform,
};
use accessor::Kind;
use glam::{Mat4, Quat, Vec2, Vec3, Vec4};
use gltf::mesh::{Mode, Semantic};
use std::collections::HashMap;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::time::Instant;

/// Most vertex attribute elements (positions, normals, deltas, indices…) one file may decode.
///
/// Sparse accessors without a buffer view, and many primitives sharing one accessor, let a small
/// file ask for far more memory than it holds; this bound turns that into an error. It is about
/// 64 million elements (under a gigabyte of `Vec3`s), far beyond any real avatar.
const MAX_DECODED_ELEMENTS: usize = 1 << 26;

/// Most bytes `EXT_meshopt_compression` may decompress to in one file: a gigabyte, the size of
/// [`MAX_DECODED_ELEMENTS`] four-float elements. The codec can shrink runs of equal bytes more
/// than a thousandfold, so a small file could otherwise ask for any amount of memory.
const MAX_DECOMPRESSED_BYTES: usize = MAX_DECODED_ELEMENTS * 16;

/// Errors loading an avatar. Every message names the file (or in-memory label) first.
#[derive(Debug, thiserror::Error)]
pub enum AvatarError {
    /// The file could not be read from disk.
    #[error("cannot read avatar file {file}: {source}")]
    Io {
        /// The path as given.
        file: String,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The GLB container header is malformed (checked before the glTF parser sees it).
    #[error("{file}: malformed GLB container: {detail}")]
    Glb {
        /// The file or label.
        file: String,
        /// What is wrong with the header.
        detail: String,
    },
    /// The bytes are neither valid glTF 2.0 JSON nor GLB, or the document fails validation.
    #[error("{file}: not a valid glTF 2.0 / GLB file: {source}")]
    Gltf {
        /// The file or label.
        file: String,
        /// The parser's or validator's error.
        #[source]
        source: gltf::Error,
    },
    /// A buffer could not be loaded: a missing file, a bad data URI, or too few bytes.
    #[error("{file}: buffer {buffer}: {detail}")]
    Buffer {
        /// The file or label.
        file: String,
        /// The glTF buffer index.
        buffer: usize,
        /// What went wrong.
        detail: String,
    },
    /// An accessor has the wrong layout or count, or points outside its buffer.
    #[error("{file}: accessor {accessor} ({usage}): {detail}")]
    Accessor {
        /// The file or label.
        file: String,
        /// The glTF accessor index.
        accessor: usize,
        /// Which mesh attribute or target reads it.
        usage: String,
        /// What is wrong.
        detail: String,
    },
    /// A mesh is inconsistent: mismatched target counts, indices out of range, non-finite data.
    #[error("{file}: {mesh}: {detail}")]
    Mesh {
        /// The file or label.
        file: String,
        /// The mesh, by name and index.
        mesh: String,
        /// What is wrong.
        detail: String,
    },
    /// A node has an unusable transform, or the hierarchy is not a forest.
    #[error("{file}: {node}: {detail}")]
    Node {
        /// The file or label.
        file: String,
        /// The node, by name and index.
        node: String,
        /// What is wrong.
        detail: String,
    },
    /// A skin is unusable: its inverse bind matrices are too few or not finite.
    #[error("{file}: {skin}: {detail}")]
    Skin {
        /// The file or label.
        file: String,
        /// The skin, by name and index.
        skin: String,
        /// What is wrong.
        detail: String,
    },
    /// The file requires (in `extensionsRequired`) a glTF extension facewire does not support.
    #[error("{file}: requires the glTF extension {extension}, which facewire does not support")]
    UnsupportedExtension {
        /// The file or label.
        file: String,
        /// The extension's name.
        extension: String,
    },
    /// An `EXT_meshopt_compression` buffer view cannot be decoded: a malformed extension object,
    /// an impossible layout, or corrupt compressed bytes.
    #[error("{file}: buffer view {view} (EXT_meshopt_compression): {detail}")]
    Compression {
        /// The file or label.
        file: String,
        /// The glTF buffer view index.
        view: usize,
        /// What is wrong.
        detail: String,
    },
    /// The file asks for more decoded vertex data than the loader's limit (about 64 million
    /// elements) allows.
    #[error("{file}: refusing to decode more than {limit} vertex attribute elements")]
    TooLarge {
        /// The file or label.
        file: String,
        /// The element limit.
        limit: usize,
    },
    /// The glTF or image decoder panicked on this input; the panic was contained.
    #[error("{file}: the glTF decoder failed unexpectedly on this file: {detail}")]
    DecoderPanic {
        /// The file or label.
        file: String,
        /// The panic message.
        detail: String,
    },
}

/// Loads a glTF (with external or data-URI buffers and images) or GLB file.
pub fn load(path: &Path) -> Result<Avatar, AvatarError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| AvatarError::Io {
        file: file.clone(),
        source,
    })?;
    let base = path.parent().unwrap_or(Path::new(""));
    load_bytes(&bytes, file, Some(base))
}

/// Loads GLB bytes (or self-contained glTF JSON) from memory; `label` names it in messages and
/// in [`Avatar::source`]. External file references are errors here (data URIs are fine).
pub fn load_slice(bytes: &[u8], label: &str) -> Result<Avatar, AvatarError> {
    load_bytes(bytes, label.to_owned(), None)
}

/// Loads with panic containment: the checks in this module aim to leave the `gltf` and `image`
/// crates nothing to panic on, but a hostile file must never take the process down, so any
/// panic those crates still raise becomes an error.
fn load_bytes(bytes: &[u8], file: String, base: Option<&Path>) -> Result<Avatar, AvatarError> {
    let started = Instant::now();
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| load_unguarded(bytes, &file, base)));
    let result = match outcome {
        Ok(result) => result,
        Err(payload) => {
            let detail = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            Err(AvatarError::DecoderPanic { file, detail })
        }
    };
    match &result {
        Ok(avatar) => tracing::info!(
            file = %avatar.source,
            nodes = avatar.nodes.len(),
            meshes = avatar.meshes.len(),
            targets = avatar.meshes.iter().map(Mesh::target_count).sum::<usize>(),
            textures = avatar.textures.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "avatar loaded"
        ),
        // The caller reports the error itself; this only records it for debugging.
        Err(error) => tracing::debug!(%error, "avatar load failed"),
    }
    result
}

/// The load itself: container checks, parsing and validation, buffers, then the avatar.
fn load_unguarded(bytes: &[u8], file: &str, base: Option<&Path>) -> Result<Avatar, AvatarError> {
    // Some exporters write a UTF-8 byte order mark, which JSON parsers reject.
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    check_glb_header(bytes).map_err(|detail| AvatarError::Glb {
        file: file.to_owned(),
        detail,
    })?;
    let gltf_error = |source| AvatarError::Gltf {
        file: file.to_owned(),
        source,
    };
    let gltf::Gltf { document, blob } =
        gltf::Gltf::from_slice_without_validation(bytes).map_err(gltf_error)?;
    let mut root = document.into_json();
    // First of all, and before validation, which would reject the file for any required
    // extension outside the `gltf` crate's own list, with a message that names none.
    let skipped =
        extensions::check(&mut root).map_err(|extension| AvatarError::UnsupportedExtension {
            file: file.to_owned(),
            extension,
        })?;
    for extension in &skipped {
        tracing::warn!(
            file,
            extension = extension.as_str(),
            "ignoring a glTF extension facewire does not support (the file does not require it)"
        );
    }
    // The validator indexes the accessor of every POSITION attribute before checking that it
    // exists, so that one reference is checked here first.
    check_position_references(&root).map_err(|(mesh, detail)| AvatarError::Mesh {
        file: file.to_owned(),
        mesh,
        detail,
    })?;
    let placeholders = compression::placeholder_buffers(&root);
    let document = gltf::Document::from_json(root).map_err(gltf_error)?;
    let mut buffers = load_buffers(&document, blob, base, file, &placeholders)?;
    let document = if compression::has_compressed_views(document.as_json()) {
        let mut root = document.into_json();
        compression::decode_views(&mut root, &mut buffers, MAX_DECOMPRESSED_BYTES).map_err(
            |(view, detail)| AvatarError::Compression {
                file: file.to_owned(),
                view,
                detail,
            },
        )?;
        gltf::Document::from_json(root).map_err(gltf_error)?
    } else {
        document
    };
    let mut loader = Loader {
        file,
        base,
        document: &document,
        buffers: &buffers,
        decoded: 0,
        uv_sets: Vec::new(),
        joint_accessors: HashMap::new(),
    };
    let textures = loader.textures();
    let materials = loader.materials(textures.len());
    loader.uv_sets = materials.iter().map(|m| m.base_color_tex_coord).collect();
    let meshes = document
        .meshes()
        .map(|mesh| loader.mesh(mesh))
        .collect::<Result<Vec<_>, _>>()?;
    let skins = loader.skins()?;
    let mut nodes = loader.nodes(&meshes)?;
    let node_skins: Vec<Option<usize>> = document
        .nodes()
        .map(|node| node.skin().map(|skin| skin.index()))
        .collect();
    loader.check_joints(&meshes, &skins, &nodes, &node_skins)?;
    let roots = loader.roots(&nodes);
    let vrm = super::vrm::attach(document.extensions(), &mut nodes, &roots, &meshes, file);
    Ok(Avatar {
        source: file.to_owned(),
        nodes,
        roots,
        meshes,
        materials,
        textures,
        skins,
        node_skins,
        vrm,
    })
}

/// Checks the GLB header's declared length, which the `gltf` crate subtracts from unchecked.
fn check_glb_header(bytes: &[u8]) -> Result<(), String> {
    if !bytes.starts_with(b"glTF") {
        return Ok(());
    }
    let Some(length) = bytes.get(8..12) else {
        return Err(format!(
            "only {} bytes, shorter than the 12-byte header",
            bytes.len()
        ));
    };
    let length = u32::from_le_bytes([length[0], length[1], length[2], length[3]]) as usize;
    if length < 20 {
        return Err(format!(
            "declared length {length} cannot hold a header and a JSON chunk"
        ));
    }
    if length > bytes.len() {
        return Err(format!(
            "declared length {length} exceeds the {} bytes present (truncated?)",
            bytes.len()
        ));
    }
    Ok(())
}

/// Checks that every primitive's POSITION accessor index exists; on failure returns the mesh's
/// label and what is wrong.
fn check_position_references(root: &gltf::json::Root) -> Result<(), (String, String)> {
    let position = gltf::json::validation::Checked::Valid(Semantic::Positions);
    for (m, mesh) in root.meshes.iter().enumerate() {
        for (p, primitive) in mesh.primitives.iter().enumerate() {
            if let Some(index) = primitive.attributes.get(&position) {
                if index.value() >= root.accessors.len() {
                    return Err((
                        label("mesh", mesh.name.as_deref(), m),
                        format!(
                            "primitive {p}: POSITION refers to accessor {}, but the file has {}",
                            index.value(),
                            root.accessors.len()
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Percent-decodes a relative URI the way the `gltf` importer does, which panics on a result that
/// is not UTF-8; `None` means the importer would have panicked.
fn percent_decode(uri: &str) -> Option<String> {
    fn hex(digit: u8) -> Option<u8> {
        match digit {
            b'0'..=b'9' => Some(digit - b'0'),
            b'A'..=b'F' => Some(digit - b'A' + 10),
            b'a'..=b'f' => Some(digit - b'a' + 10),
            _ => None,
        }
    }
    let bytes = uri.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let decoded = match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&hi), Some(&lo)) => hex(hi).zip(hex(lo)).map(|(hi, lo)| (hi << 4) | lo),
            _ => None,
        };
        match decoded {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Checks a buffer or image URI before the importer resolves it; `base` is `None` for in-memory
/// data, where only data URIs can be resolved.
fn check_uri(uri: &str, base: Option<&Path>) -> Result<(), String> {
    if uri.starts_with("data:") {
        return Ok(());
    }
    if base.is_none() {
        return Err(format!(
            "refers to the external file \"{uri}\", which in-memory data cannot resolve"
        ));
    }
    if !uri.contains(':') && percent_decode(uri).is_none() {
        return Err(format!("URI \"{uri}\" does not percent-decode to UTF-8"));
    }
    Ok(())
}

/// Loads every buffer (the GLB binary chunk, data URIs or files beside the glTF), except the
/// placeholders (by buffer index) that only back compressed views: those stay empty.
fn load_buffers(
    document: &gltf::Document,
    mut blob: Option<Vec<u8>>,
    base: Option<&Path>,
    file: &str,
    placeholders: &[bool],
) -> Result<Vec<gltf::buffer::Data>, AvatarError> {
    let mut buffers = Vec::new();
    for buffer in document.buffers() {
        let error = |detail: String| AvatarError::Buffer {
            file: file.to_owned(),
            buffer: buffer.index(),
            detail,
        };
        if placeholders.get(buffer.index()).copied().unwrap_or(false) {
            // A GLB's binary chunk belongs to buffer 0 alone, even when nothing reads it.
            if buffer.index() == 0 && matches!(buffer.source(), gltf::buffer::Source::Bin) {
                blob = None;
            }
            buffers.push(gltf::buffer::Data(Vec::new()));
            continue;
        }
        if let gltf::buffer::Source::Uri(uri) = buffer.source() {
            check_uri(uri, base).map_err(error)?;
        }
        let data = gltf::buffer::Data::from_source_and_blob(buffer.source(), base, &mut blob)
            .map_err(|e| error(e.to_string()))?;
        if data.len() < buffer.length() {
            return Err(error(format!(
                "declares {} bytes but only {} are present",
                buffer.length(),
                data.len()
            )));
        }
        buffers.push(data);
    }
    Ok(buffers)
}

/// `"name" (mesh 3)` or `mesh 3`.
fn label(kind: &str, name: Option<&str>, index: usize) -> String {
    match name {
        Some(name) => format!("\"{name}\" ({kind} {index})"),
        None => format!("{kind} {index}"),
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

/// Replaces non-finite weights by 0, warning once per list.
fn finite_weights(weights: &[f32], what: &str) -> Vec<f32> {
    if weights.iter().any(|w| !w.is_finite()) {
        tracing::warn!(what, "non-finite morph weights replaced by 0");
    }
    weights
        .iter()
        .map(|&w| if w.is_finite() { w } else { 0.0 })
        .collect()
}

/// The face normal of a triangle, or +Z for a degenerate one (which rasterises to nothing).
fn face_normal(a: Vec3, b: Vec3, c: Vec3) -> Vec3 {
    (b - a).cross(c - a).normalize_or(Vec3::Z)
}

/// State of one load: the parsed document, its buffers and the decoded-size budget.
struct Loader<'a> {
    file: &'a str,
    base: Option<&'a Path>,
    document: &'a gltf::Document,
    buffers: &'a [gltf::buffer::Data],
    decoded: usize,
    /// The `TEXCOORD_n` set each material's base colour texture reads, by material index.
    uv_sets: Vec<u32>,
    /// The `JOINTS_0` accessor and glTF primitive index of each loaded primitive, by (mesh,
    /// primitive as loaded).
    joint_accessors: HashMap<(usize, usize), (usize, usize)>,
}

impl Loader<'_> {
    /// Counts `elements` against [`MAX_DECODED_ELEMENTS`].
    fn spend(&mut self, elements: usize) -> Result<(), AvatarError> {
        self.decoded = self.decoded.saturating_add(elements);
        if self.decoded > MAX_DECODED_ELEMENTS {
            return Err(AvatarError::TooLarge {
                file: self.file.to_owned(),
                limit: MAX_DECODED_ELEMENTS,
            });
        }
        Ok(())
    }

    /// Checks an accessor for `kind` (and, when given, an exact element count) and charges its
    /// elements to the budget; returns the count.
    fn prepare(
        &mut self,
        accessor: &gltf::Accessor<'_>,
        kind: Kind,
        expected: Option<usize>,
        usage: &dyn Fn() -> String,
    ) -> Result<usize, AvatarError> {
        let error = |detail: String| AvatarError::Accessor {
            file: self.file.to_owned(),
            accessor: accessor.index(),
            usage: usage(),
            detail,
        };
        let count = accessor::check(accessor, kind, self.buffers).map_err(error)?;
        if let Some(expected) = expected {
            if count != expected {
                return Err(error(format!(
                    "has {count} elements, but the primitive has {expected} vertices"
                )));
            }
        }
        self.spend(count)?;
        Ok(count)
    }

    /// Checks and reads a `VEC3` accessor (dense or sparse) of floats, or of the quantized
    /// integers `kind` allows.
    fn vec3(
        &mut self,
        accessor: gltf::Accessor<'_>,
        kind: Kind,
        expected: Option<usize>,
        usage: &dyn Fn() -> String,
    ) -> Result<Vec<Vec3>, AvatarError> {
        let count = self.prepare(&accessor, kind, expected, usage)?;
        let index = accessor.index();
        accessor::read_vec3(accessor, count, self.buffers)
            .map_err(|detail| self.accessor_error(index, usage, detail))
    }

    /// An [`AvatarError::Accessor`] for a failure while reading.
    fn accessor_error(
        &self,
        accessor: usize,
        usage: &dyn Fn() -> String,
        detail: String,
    ) -> AvatarError {
        AvatarError::Accessor {
            file: self.file.to_owned(),
            accessor,
            usage: usage(),
            detail,
        }
    }

    /// Decodes every glTF texture from its image source, in texture order. An image that cannot
    /// be decoded (unsupported encoding, missing file, corrupt data) is replaced by a 1×1 white
    /// placeholder with a warning: a wrong-coloured avatar is more useful on stream than none.
    fn textures(&self) -> Vec<Texture> {
        let mut decoded: HashMap<usize, Texture> = HashMap::new();
        let mut textures = Vec::new();
        for texture in self.document.textures() {
            let image = texture.source();
            let image_index = image.index();
            let rgba = match decoded.get(&image_index) {
                Some(done) => done.clone(),
                None => {
                    let result = self.decode_image(image);
                    let done = result.unwrap_or_else(|reason| {
                        tracing::warn!(
                            file = self.file,
                            texture = texture.index(),
                            image = image_index,
                            %reason,
                            "texture replaced by a white placeholder"
                        );
                        texture::placeholder()
                    });
                    decoded.insert(image_index, done.clone());
                    done
                }
            };
            textures.push(rgba);
        }
        textures
    }

    /// Decodes one image after checking the parts of its source the `gltf` crate unwraps.
    fn decode_image(&self, image: gltf::Image<'_>) -> Result<Texture, String> {
        let json = self
            .document
            .as_json()
            .images
            .get(image.index())
            .ok_or_else(|| "image missing from the document".to_string())?;
        // The importer resolves data URIs only when given a base folder, even though they need
        // none; an empty base is safe because `check_uri` rejects other URIs in memory.
        let mut base = self.base;
        match (&json.buffer_view, &json.uri) {
            (Some(view), _) => {
                if json.mime_type.is_none() {
                    return Err("image in a buffer view has no mimeType".into());
                }
                let view = self
                    .document
                    .views()
                    .nth(view.value())
                    .ok_or_else(|| "image buffer view does not exist".to_string())?;
                let buffer_len = self
                    .buffers
                    .get(view.buffer().index())
                    .map_or(0, |data| data.len());
                let fits = view
                    .offset()
                    .checked_add(view.length())
                    .is_some_and(|end| end <= buffer_len);
                if !fits {
                    return Err(format!(
                        "image buffer view {} runs past the end of its buffer",
                        view.index()
                    ));
                }
            }
            (None, Some(uri)) => {
                check_uri(uri, self.base)?;
                if uri.starts_with("data:") {
                    base = Some(self.base.unwrap_or(Path::new("")));
                }
            }
            (None, None) => return Err("image has neither a uri nor a bufferView".into()),
        }
        let data = gltf::image::Data::from_source(image.source(), base, self.buffers)
            .map_err(|e| e.to_string())?;
        texture::to_rgba8(&data)
    }

    /// Every material, in glTF order. Textures are per glTF texture, so a base colour texture's
    /// glTF index is its index into [`Avatar::textures`]. VRM MToon parameters (1.0 on the
    /// material, 0.x in the root `VRM` extension) are read here too.
    fn materials(&self, texture_count: usize) -> Vec<Material> {
        let mut materials: Vec<Material> = self
            .document
            .materials()
            .map(|material| {
                let index = material.index().unwrap_or(0);
                let pbr = material.pbr_metallic_roughness();
                let mut base_color = pbr.base_color_factor();
                if base_color.iter().any(|c| !c.is_finite()) {
                    tracing::warn!(
                        file = self.file,
                        material = index,
                        "non-finite base colour factor replaced by white"
                    );
                    base_color = [1.0; 4];
                }
                let info = pbr.base_color_texture();
                let transform = info.as_ref().and_then(|info| info.texture_transform());
                let base_color_tex_coord = info.as_ref().map_or(0, |info| {
                    transform
                        .as_ref()
                        .and_then(|t| t.tex_coord())
                        .unwrap_or(info.tex_coord())
                });
                let base_color_transform = match &transform {
                    Some(t) => {
                        let read = TextureTransform {
                            offset: Vec2::from(t.offset()),
                            rotation: t.rotation(),
                            scale: Vec2::from(t.scale()),
                        };
                        if read.offset.is_finite()
                            && read.rotation.is_finite()
                            && read.scale.is_finite()
                        {
                            read
                        } else {
                            tracing::warn!(
                                file = self.file,
                                material = index,
                                "non-finite KHR_texture_transform ignored"
                            );
                            TextureTransform::IDENTITY
                        }
                    }
                    None => TextureTransform::IDENTITY,
                };
                let alpha_cutoff = material.alpha_cutoff().unwrap_or(0.5);
                let toon = material
                    .extension_value("VRMC_materials_mtoon")
                    .map(|ext| mtoon::from_vrmc(ext, texture_count));
                Material {
                    name: material.name().map(str::to_owned),
                    base_color,
                    base_color_texture: info.map(|info| info.texture().index()),
                    double_sided: material.double_sided(),
                    alpha_mode: match material.alpha_mode() {
                        gltf::material::AlphaMode::Opaque => AlphaMode::Opaque,
                        gltf::material::AlphaMode::Mask => AlphaMode::Mask,
                        gltf::material::AlphaMode::Blend => AlphaMode::Blend,
                    },
                    alpha_cutoff: if alpha_cutoff.is_finite() {
                        alpha_cutoff
                    } else {
                        0.5
                    },
                    base_color_tex_coord,
                    base_color_transform,
                    unlit: material.unlit(),
                    toon,
                }
            })
            .collect();
        if let Some(vrm) = self.document.extension_value("VRM") {
            let toon = mtoon::apply_vrm0(vrm, &mut materials, texture_count, self.file);
            tracing::debug!(
                file = self.file,
                materials = toon,
                "VRM 0.x MToon materials read"
            );
        }
        materials
    }

    /// Every skin, with its joints and inverse bind matrices (identity where the file has none).
    fn skins(&mut self) -> Result<Vec<Skin>, AvatarError> {
        let mut skins = Vec::new();
        for skin in self.document.skins() {
            let skin_label = label("skin", skin.name(), skin.index());
            let joints: Vec<usize> = skin.joints().map(|joint| joint.index()).collect();
            let inverse_bind = match skin.inverse_bind_matrices() {
                Some(accessor) => {
                    let index = accessor.index();
                    let usage = || format!("{skin_label} inverseBindMatrices");
                    let count = self.prepare(&accessor, Kind::Mat4F32, None, &usage)?;
                    let skin_error = |detail: String| AvatarError::Skin {
                        file: self.file.to_owned(),
                        skin: skin_label.clone(),
                        detail,
                    };
                    if count < joints.len() {
                        return Err(skin_error(format!(
                            "has {count} inverse bind matrices for {} joints",
                            joints.len()
                        )));
                    }
                    let mut matrices = accessor::read_mat4(accessor, count, self.buffers)
                        .map_err(|detail| self.accessor_error(index, &usage, detail))?;
                    if let Some(k) = matrices.iter().position(|m| !m.is_finite()) {
                        return Err(skin_error(format!("inverse bind matrix {k} is not finite")));
                    }
                    matrices.truncate(joints.len());
                    matrices
                }
                None => vec![Mat4::IDENTITY; joints.len()],
            };
            skins.push(Skin {
                name: skin.name().map(str::to_owned),
                joints,
                inverse_bind,
            });
        }
        Ok(skins)
    }

    /// Checks that every skinned node's primitives name only joints its skin has (influences
    /// with a zero weight are not checked: the loader zeroes their joint index).
    fn check_joints(
        &self,
        meshes: &[Mesh],
        skins: &[Skin],
        nodes: &[Node],
        node_skins: &[Option<usize>],
    ) -> Result<(), AvatarError> {
        for (n, node) in nodes.iter().enumerate() {
            let (Some(mesh_index), Some(Some(skin_index))) = (node.mesh, node_skins.get(n)) else {
                continue;
            };
            let (Some(mesh), Some(skin)) = (meshes.get(mesh_index), skins.get(*skin_index)) else {
                continue;
            };
            let count = skin.joints.len();
            for (p, prim) in mesh.primitives.iter().enumerate() {
                let bad = prim.joints.iter().enumerate().find_map(|(v, joints)| {
                    joints
                        .iter()
                        .find(|&&j| usize::from(j) >= count)
                        .map(|&j| (v, j))
                });
                if let Some((v, j)) = bad {
                    let (accessor, gltf_primitive) = self
                        .joint_accessors
                        .get(&(mesh_index, p))
                        .copied()
                        .unwrap_or((0, p));
                    let mesh_label = label("mesh", mesh.name.as_deref(), mesh_index);
                    return Err(AvatarError::Accessor {
                        file: self.file.to_owned(),
                        accessor,
                        usage: format!("{mesh_label} primitive {gltf_primitive} JOINTS_0"),
                        detail: format!(
                            "joint index {j} at vertex {v} is out of range for skin {skin_index}, which has {count} joints (used by {})",
                            label("node", node.name.as_deref(), n)
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// One mesh: its triangle primitives, target names and default weights.
    fn mesh(&mut self, mesh: gltf::Mesh<'_>) -> Result<Mesh, AvatarError> {
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

    /// One triangle primitive with dense morph targets; `loaded` is its (mesh, position among
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
                self.spend(vertex_count)?;
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
                    deltas
                }
                None => {
                    self.spend(vertex_count)?;
                    vec![Vec3::ZERO; vertex_count]
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
                    deltas
                }
                _ => Vec::new(),
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
                    deltas
                }
                None => Vec::new(),
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
            self.spend(expanded)?;
            flat_shade(&mut out);
        }
        Ok(out)
    }

    /// Every node with its rest transform, linked into parents and children.
    fn nodes(&self, meshes: &[Mesh]) -> Result<Vec<Node>, AvatarError> {
        let mut nodes = Vec::new();
        for node in self.document.nodes() {
            let node_label = label("node", node.name(), node.index());
            let node_error = |detail: String| AvatarError::Node {
                file: self.file.to_owned(),
                node: node_label.clone(),
                detail,
            };
            let (translation, rotation, scale) = match node.transform() {
                gltf::scene::Transform::Matrix { matrix } => {
                    let matrix = Mat4::from_cols_array_2d(&matrix);
                    if !matrix.is_finite() {
                        return Err(node_error("matrix is not finite".into()));
                    }
                    let (scale, rotation, translation) = matrix.to_scale_rotation_translation();
                    if scale.is_finite() && rotation.is_finite() && translation.is_finite() {
                        (translation, rotation.normalize(), scale)
                    } else {
                        // A singular matrix (a zero scale hides a node) has no rotation to recover.
                        tracing::warn!(
                            file = self.file,
                            node = %node_label,
                            "singular node matrix; keeping its translation only, scaled to zero"
                        );
                        (matrix.w_axis.truncate(), Quat::IDENTITY, Vec3::ZERO)
                    }
                }
                gltf::scene::Transform::Decomposed {
                    translation,
                    rotation,
                    scale,
                } => {
                    let (translation, rotation, scale) = (
                        Vec3::from(translation),
                        Quat::from_array(rotation),
                        Vec3::from(scale),
                    );
                    if !(translation.is_finite() && rotation.is_finite() && scale.is_finite()) {
                        return Err(node_error(
                            "translation, rotation or scale is not finite".into(),
                        ));
                    }
                    if rotation.length() < 1e-6 {
                        return Err(node_error("rotation is a zero quaternion".into()));
                    }
                    (translation, rotation.normalize(), scale)
                }
            };
            let mesh = node.mesh().map(|mesh| mesh.index());
            let target_count = mesh
                .and_then(|m| meshes.get(m))
                .map_or(0, Mesh::target_count);
            let weights = node.weights().and_then(|weights| {
                if weights.len() == target_count {
                    Some(finite_weights(weights, &node_label))
                } else {
                    tracing::warn!(
                        file = self.file,
                        node = %node_label,
                        weights = weights.len(),
                        targets = target_count,
                        "ignoring node weights that do not match its mesh's target count"
                    );
                    None
                }
            });
            nodes.push(Node {
                name: node.name().map(str::to_owned),
                parent: None,
                children: Vec::new(),
                translation,
                rotation,
                scale,
                mesh,
                weights,
            });
        }

        for node in self.document.nodes() {
            for child in node.children() {
                let c = child.index();
                let hierarchy_error = |detail: String| AvatarError::Node {
                    file: self.file.to_owned(),
                    node: label("node", child.name(), c),
                    detail,
                };
                if c == node.index() {
                    return Err(hierarchy_error("is its own child".into()));
                }
                match nodes[c].parent {
                    Some(parent) if parent == node.index() => {
                        return Err(hierarchy_error(format!(
                            "is listed twice as a child of node {parent}"
                        )));
                    }
                    Some(parent) => {
                        return Err(hierarchy_error(format!(
                            "has two parents, nodes {parent} and {}",
                            node.index()
                        )));
                    }
                    None => {}
                }
                nodes[c].parent = Some(node.index());
                nodes[node.index()].children.push(c);
            }
        }
        self.check_acyclic(&nodes)?;
        Ok(nodes)
    }

    /// Fails if following parents from some node never reaches a root.
    fn check_acyclic(&self, nodes: &[Node]) -> Result<(), AvatarError> {
        #[derive(Clone, Copy, PartialEq)]
        enum State {
            Unknown,
            OnPath,
            Rooted,
        }
        let mut state = vec![State::Unknown; nodes.len()];
        let mut path = Vec::new();
        for start in 0..nodes.len() {
            let mut at = Some(start);
            while let Some(i) = at {
                match state[i] {
                    State::Rooted => break,
                    State::OnPath => {
                        return Err(AvatarError::Node {
                            file: self.file.to_owned(),
                            node: label("node", nodes[i].name.as_deref(), i),
                            detail: "is part of a cycle in the node hierarchy".into(),
                        });
                    }
                    State::Unknown => {
                        state[i] = State::OnPath;
                        path.push(i);
                        at = nodes[i].parent;
                    }
                }
            }
            for i in path.drain(..) {
                state[i] = State::Rooted;
            }
        }
        Ok(())
    }

    /// The drawn scene's root nodes: the default scene, else scene 0, else every parentless node.
    fn roots(&self, nodes: &[Node]) -> Vec<usize> {
        let scene = self
            .document
            .default_scene()
            .or_else(|| self.document.scenes().next());
        let Some(scene) = scene else {
            return (0..nodes.len())
                .filter(|&i| nodes[i].parent.is_none())
                .collect();
        };
        let mut roots: Vec<usize> = Vec::new();
        for node in scene.nodes() {
            let i = node.index();
            if nodes[i].parent.is_some() {
                tracing::warn!(
                    file = self.file,
                    scene = scene.index(),
                    node = i,
                    "scene lists a node that has a parent; drawing it through its parent only"
                );
            } else if !roots.contains(&i) {
                roots.push(i);
            }
        }
        roots
    }
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
        target.normals = normal_deltas;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal glTF JSON document around one base64 buffer.
    fn gltf_json(buffer: &[u8], body: &str) -> Vec<u8> {
        let b64 = base64_encode(buffer);
        format!(
            r#"{{"asset":{{"version":"2.0"}},"buffers":[{{"byteLength":{},"uri":"data:application/octet-stream;base64,{b64}"}}],{body}}}"#,
            buffer.len()
        )
        .into_bytes()
    }

    fn base64_encode(bytes: &[u8]) -> String {
        const TABLE: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let b = [
                chunk[0],
                *chunk.get(1).unwrap_or(&0),
                *chunk.get(2).unwrap_or(&0),
            ];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(TABLE[(n >> (18 - 6 * i)) as usize & 63] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    fn floats(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// One triangle without normals or indices, with one morph target lifting vertex 2.
    fn triangle_doc(delta_count: usize, extra_mesh: &str) -> Vec<u8> {
        let mut bin = floats(&[0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
        bin.extend(floats(&[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]));
        let body = format!(
            r#""bufferViews":[{{"buffer":0,"byteLength":36}},{{"buffer":0,"byteOffset":36,"byteLength":36}}],
            "accessors":[
              {{"bufferView":0,"componentType":5126,"count":3,"type":"VEC3","min":[0,0,0],"max":[1,1,0]}},
              {{"bufferView":1,"componentType":5126,"count":{delta_count},"type":"VEC3"}}],
            "meshes":[{{"primitives":[{{"attributes":{{"POSITION":0}},"targets":[{{"POSITION":1}}]}}]{extra_mesh}}}],
            "nodes":[{{"mesh":0}}],"scenes":[{{"nodes":[0]}}]"#
        );
        gltf_json(&bin, &body)
    }

    #[test]
    fn errors_can_cross_threads() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<AvatarError>();
    }

    #[test]
    fn base64_helper_matches_known_vectors() {
        assert_eq!(base64_encode(b"Man"), "TWFu");
        assert_eq!(base64_encode(b"Ma"), "TWE=");
        assert_eq!(base64_encode(b"M"), "TQ==");
    }

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
    fn dangling_position_reference_is_an_error_not_a_validator_panic() {
        let doc = br#"{"asset":{"version":"2.0"},"meshes":[{"primitives":[{"attributes":{"POSITION":0}}]}]}"#;
        let error = load_slice(doc, "dangling").unwrap_err();
        assert!(matches!(error, AvatarError::Mesh { .. }), "{error}");
        assert!(error.to_string().contains("accessor 0"), "{error}");
    }

    #[test]
    fn glb_header_lengths_are_checked() {
        assert!(check_glb_header(b"glTF").is_err());
        let mut header = b"glTF\x02\x00\x00\x00".to_vec();
        header.extend(4u32.to_le_bytes());
        assert!(check_glb_header(&header).is_err());
        assert!(check_glb_header(b"{\"asset\":{}}").is_ok());
    }

    #[test]
    fn percent_decoding_rejects_non_utf8_only() {
        assert_eq!(percent_decode("a%20b.bin").as_deref(), Some("a b.bin"));
        assert_eq!(percent_decode("50%zz").as_deref(), Some("50%zz"));
        assert_eq!(percent_decode("%").as_deref(), Some("%"));
        assert_eq!(percent_decode("%FF.bin"), None);
        assert!(check_uri("%FF.bin", Some(Path::new("."))).is_err());
        assert!(check_uri("model.bin", None).is_err());
        assert!(check_uri("data:application/octet-stream;base64,AAAA", None).is_ok());
    }

    #[test]
    fn hierarchy_cycles_and_double_parents_are_errors() {
        let doc = |nodes: &str| {
            format!(r#"{{"asset":{{"version":"2.0"}},"nodes":{nodes}}}"#).into_bytes()
        };
        let cycle = load_slice(&doc(r#"[{"children":[1]},{"children":[0]}]"#), "cycle");
        assert!(matches!(cycle, Err(AvatarError::Node { .. })), "{cycle:?}");
        let two_parents = load_slice(&doc(r#"[{"children":[2]},{"children":[2]},{}]"#), "dag");
        assert!(
            matches!(two_parents, Err(AvatarError::Node { .. })),
            "{two_parents:?}"
        );
        let own_child = load_slice(&doc(r#"[{"children":[0]}]"#), "self");
        assert!(
            matches!(own_child, Err(AvatarError::Node { .. })),
            "{own_child:?}"
        );
        let forest = load_slice(
            &doc(r#"[{"children":[1]},{},{"matrix":[2,0,0,0,0,2,0,0,0,0,2,0,1,2,3,1]}]"#),
            "ok",
        )
        .unwrap();
        assert_eq!(forest.roots, vec![0, 2]);
        assert_eq!(forest.nodes[1].parent, Some(0));
        assert_eq!(forest.nodes[2].translation, Vec3::new(1.0, 2.0, 3.0));
        assert!((forest.nodes[2].scale - Vec3::splat(2.0)).length() < 1e-6);
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

    #[test]
    fn undecodable_textures_become_placeholders() {
        let body = r#""images":[{"uri":"data:image/png;base64,AAAA"}],"textures":[{"source":0}],
            "materials":[{"pbrMetallicRoughness":{"baseColorTexture":{"index":0}},"doubleSided":true}]"#;
        let avatar = load_slice(&gltf_json(&[0; 4], body), "bad-png").unwrap();
        assert_eq!(avatar.textures, vec![texture::placeholder()]);
        assert_eq!(avatar.materials[0].base_color_texture, Some(0));
        assert!(avatar.materials[0].double_sided);
    }
}

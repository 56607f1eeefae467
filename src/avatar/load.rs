//! glTF 2.0 / GLB loading into the CPU avatar types, hardened against hostile files.
//!
//! Loading goes through the `gltf` crate (JSON validation, buffers, sparse accessors, PNG/JPEG
//! decoding; WebP and KTX2 images are decoded here, see `texture` and `ktx`) but checks what
//! that crate leaves unchecked before asking it to read: GLB header
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
mod budget;
mod compression;
mod extensions;
mod ktx;
mod lod;
mod material;
mod mesh;
mod scene;
mod source;
mod texture;

use super::{Avatar, Mesh};
use accessor::Kind;
use glam::Vec3;
use source::{check_glb_header, check_position_references, load_buffers};
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

/// The decoded-texture budget when none is configured: 512 MiB of RGBA8 pixels, two 8192²
/// images or eight 4096² ones, well beyond a real avatar's textures.
pub const DEFAULT_TEXTURE_BUDGET: u64 = 512 << 20;

/// Limits a load works within, beyond the fixed ones that guard against hostile files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadLimits {
    /// The most bytes of decoded texture pixels (RGBA8) the avatar keeps, an image shared by
    /// several textures counted once. Planned from the images' headers before decoding: images
    /// that do not fit are shrunk (halved until they do), with a warning naming each.
    pub texture_budget: u64,
}

impl Default for LoadLimits {
    fn default() -> Self {
        LoadLimits {
            texture_budget: DEFAULT_TEXTURE_BUDGET,
        }
    }
}

/// Errors loading an avatar. Every message names the file (or in-memory label) first.
#[derive(Debug, thiserror::Error)]
pub enum AvatarError {
    /// The file could not be read from disk.
    #[error("cannot read avatar file {file}{}", did_you_mean(suggestion.as_deref()))]
    Io {
        /// The path as given.
        file: String,
        /// For a file that does not exist, the avatar file beside it whose name is nearest,
        /// when it looks like a typo.
        suggestion: Option<String>,
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
    /// A value in the glTF JSON does not have the type or range glTF gives it (or the JSON is
    /// malformed), at a place named by its JSON path.
    #[error("{file}: invalid glTF JSON at {path}: {detail}")]
    Json {
        /// The file or label.
        file: String,
        /// Where: a JSON path such as `nodes[12].children[0]`, or a byte offset in the JSON.
        path: String,
        /// What is wrong there.
        detail: String,
    },
    /// The bytes are neither valid glTF 2.0 JSON nor GLB, or the document fails validation.
    #[error("{file}: not a valid glTF 2.0 / GLB file")]
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
    /// elements) allows; `what` is the data that would have passed it.
    #[error(
        "{file}: {what}: refusing to decode more than {limit} vertex attribute elements in all"
    )]
    TooLarge {
        /// The file or label.
        file: String,
        /// The accessor and the mesh primitive (or skin) that reads it, or the data generated
        /// for a primitive, whose elements passed the limit.
        what: String,
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

/// Loads a glTF (with external or data-URI buffers and images) or GLB file, within the default
/// [`LoadLimits`].
pub fn load(path: &Path) -> Result<Avatar, AvatarError> {
    load_with(path, &LoadLimits::default())
}

/// The largest avatar file read: several times the largest VRM avatars people stream with; a
/// path naming a device or a video by mistake is refused at once (see
/// [`crate::fsutil::read_bounded`]).
pub const MAX_AVATAR_BYTES: u64 = 512 << 20;

/// Loads a glTF or GLB file within `limits`.
pub fn load_with(path: &Path, limits: &LoadLimits) -> Result<Avatar, AvatarError> {
    let file = path.display().to_string();
    let bytes =
        crate::fsutil::read_bounded(path, MAX_AVATAR_BYTES).map_err(|source| AvatarError::Io {
            file: file.clone(),
            suggestion: (source.kind() == std::io::ErrorKind::NotFound)
                .then(|| nearest_avatar_file(path))
                .flatten(),
            source,
        })?;
    let base = path.parent().unwrap_or(Path::new(""));
    load_bytes(&bytes, file, Some(base), limits)
}

/// The extensions of the files facewire loads as avatars.
pub const AVATAR_EXTENSIONS: [&str; 3] = ["glb", "gltf", "vrm"];

/// For a path that names no file, the avatar file (`.glb`, `.gltf`, `.vrm`) in the same folder
/// whose name is nearest to its name, as a path spelt like the one given.
fn nearest_avatar_file(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let names: Vec<String> = std::fs::read_dir(folder)
        .ok()?
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| {
            Path::new(name)
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| {
                    AVATAR_EXTENSIONS
                        .iter()
                        .any(|known| e.eq_ignore_ascii_case(known))
                })
        })
        .take(10_000)
        .collect();
    let best = crate::diagnostic::nearest(name, names.iter().map(String::as_str))?;
    Some(path.with_file_name(best).display().to_string())
}

/// ` (did you mean `PATH`?)`, or nothing.
fn did_you_mean(suggestion: Option<&str>) -> String {
    suggestion.map_or_else(String::new, |s| format!(" (did you mean `{s}`?)"))
}

/// Loads GLB bytes (or self-contained glTF JSON) from memory, within the default
/// [`LoadLimits`]; `label` names it in messages and in [`Avatar::source`]. External file
/// references are errors here (data URIs are fine).
pub fn load_slice(bytes: &[u8], label: &str) -> Result<Avatar, AvatarError> {
    load_slice_with(bytes, label, &LoadLimits::default())
}

/// Loads GLB bytes (or self-contained glTF JSON) from memory within `limits` (see
/// [`load_slice`]).
pub fn load_slice_with(
    bytes: &[u8],
    label: &str,
    limits: &LoadLimits,
) -> Result<Avatar, AvatarError> {
    load_bytes(bytes, label.to_owned(), None, limits)
}

/// Loads with panic containment: the checks in this module aim to leave the `gltf` and `image`
/// crates nothing to panic on, but a hostile file must never take the process down, so any
/// panic those crates still raise becomes an error.
fn load_bytes(
    bytes: &[u8],
    file: String,
    base: Option<&Path>,
    limits: &LoadLimits,
) -> Result<Avatar, AvatarError> {
    let started = Instant::now();
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        load_unguarded(bytes, &file, base, limits)
    }));
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
fn load_unguarded(
    bytes: &[u8],
    file: &str,
    base: Option<&Path>,
    limits: &LoadLimits,
) -> Result<Avatar, AvatarError> {
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
        gltf::Gltf::from_slice_without_validation(bytes).map_err(|error| {
            // Only a value that does not deserialize is worth a second, path-tracking parse.
            let place = match &error {
                gltf::Error::Deserialize(_) => source::json_error_place(bytes),
                _ => None,
            };
            match place {
                Some((path, detail)) => AvatarError::Json {
                    file: file.to_owned(),
                    path,
                    detail,
                },
                None => gltf_error(error),
            }
        })?;
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
        limits: *limits,
        decoded: 0,
        uv_sets: Vec::new(),
        joint_accessors: HashMap::new(),
    };
    let textures = loader.textures();
    let texture_names = document
        .textures()
        .map(|t| {
            t.name()
                .or_else(|| t.source().and_then(|image| image.name()))
                .map(str::to_owned)
        })
        .collect();
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
    let mut roots = loader.roots(&nodes);
    let lods = lod::groups(&loader.raw_lods(), &mut nodes, &mut roots, file);
    let vrm = super::vrm::attach(document.extensions(), &mut nodes, &roots, &meshes, file);
    let springs = super::spring::parse(document.extensions(), &nodes, file);
    Ok(Avatar {
        source: file.to_owned(),
        nodes,
        roots,
        meshes,
        materials,
        textures,
        texture_names,
        skins,
        node_skins,
        vrm,
        springs,
        lods,
    })
}

/// `"name" (mesh 3)` or `mesh 3`.
fn label(kind: &str, name: Option<&str>, index: usize) -> String {
    match name {
        Some(name) => format!("\"{name}\" ({kind} {index})"),
        None => format!("{kind} {index}"),
    }
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

/// State of one load: the parsed document, its buffers and the decoded-size budget.
struct Loader<'a> {
    file: &'a str,
    base: Option<&'a Path>,
    document: &'a gltf::Document,
    buffers: &'a [gltf::buffer::Data],
    /// The limits the load works within.
    limits: LoadLimits,
    decoded: usize,
    /// The `TEXCOORD_n` set each material's base colour texture reads, by material index.
    uv_sets: Vec<u32>,
    /// The `JOINTS_0` accessor and glTF primitive index of each loaded primitive, by (mesh,
    /// primitive as loaded).
    joint_accessors: HashMap<(usize, usize), (usize, usize)>,
}

impl Loader<'_> {
    /// Counts `elements` against [`MAX_DECODED_ELEMENTS`]; `what` names them in the error.
    fn spend(&mut self, elements: usize, what: &dyn Fn() -> String) -> Result<(), AvatarError> {
        self.decoded = self.decoded.saturating_add(elements);
        if self.decoded > MAX_DECODED_ELEMENTS {
            return Err(AvatarError::TooLarge {
                file: self.file.to_owned(),
                what: what(),
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
        self.spend(count, &|| {
            format!("accessor {} ({})", accessor.index(), usage())
        })?;
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
}

#[cfg(test)]
mod fixtures;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_can_cross_threads() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<AvatarError>();
    }

    #[test]
    fn a_mistyped_model_path_suggests_the_nearest_avatar_file() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["Godette.vrm", "robot.glb", "godette.txt", "notes.md"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let typo = dir.path().join("godete.vrm");
        let error = load(&typo).unwrap_err();
        let expected = dir.path().join("Godette.vrm");
        assert!(
            matches!(&error, AvatarError::Io { suggestion: Some(s), .. } if *s == expected.display().to_string()),
            "{error:?}"
        );
        assert!(
            error
                .to_string()
                .ends_with(&format!("(did you mean `{}`?)", expected.display())),
            "{error}"
        );
        // Nothing near: no suggestion; and only for a file that is missing.
        let error = load(&dir.path().join("zzzzzzzz.glb")).unwrap_err();
        assert!(!error.to_string().contains("did you mean"), "{error}");
        let error = load(dir.path()).unwrap_err();
        assert!(
            matches!(
                error,
                AvatarError::Io {
                    suggestion: None,
                    ..
                }
            ),
            "{error:?}"
        );
    }
}

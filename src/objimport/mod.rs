//! `facewire import-obj`: a GLB avatar with morph targets from an OBJ shape set (a neutral mesh
//! and one same-topology OBJ per shape, as sculpting tools export them).
//!
//! - [`obj`]: the OBJ reader (positions by OBJ index, triangulated faces, material groups) and
//!   smooth normals.
//! - [`mtl`]: the material library reader (`newmtl`, `Kd`, `d`, `Tr`).
//! - [`materials`]: the groups' colours, which groups are left out, one compact primitive per
//!   group.
//! - [`names`]: file names to target names: ARKit shapes in any dialect, halves, others.
//!
//! Vertex `i` of every file is the OBJ file's `i`-th `v` line, so a target's deltas are simply
//! its positions minus the neutral's. Each target stores position deltas and normal deltas (the
//! target's smooth normals minus the neutral's), with the neutral's faces, built by
//! [`headgen::morph`](crate::headgen::morph) as the default head's targets are. Units stay the
//! OBJ's: facewire frames whatever size the model has. Files are parsed in parallel, one thread
//! per core.
//!
//! Each `usemtl` group of the neutral becomes one primitive with its own material: the `Kd` of
//! the `mtllib` library beside the OBJ (sRGB there, linear in the GLB), or facewire's skin colour
//! where there is none or [`ImportOptions::skin_materials`] asks for it. Groups named in
//! [`ImportOptions::skip_materials`], and fully dissolved ones (`d 0`), are left out; normals
//! and targets are computed over the triangles kept. A primitive holds only the vertices its
//! triangles use (see [`materials::compact`]).

pub mod materials;
pub mod mtl;
pub mod names;
pub mod obj;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use glam::Vec3;

use crate::arkit::Channel;
use crate::headgen::glb::{Document, MeshDef, NodeDef, TargetDef};
use crate::headgen::morph;
pub use names::{NameDialect, Shape, Side};
use obj::{ObjMesh, Read};

/// The generator named in the GLB's asset header.
const GENERATOR: &str = "facewire import-obj";

/// Position deltas shorter than this fraction of the neutral's bounding-box diagonal are
/// export noise, stored as zero (a micrometre on a 1 m model).
const POSITION_EPS: f32 = 1e-6;

/// The skin material's linear base colour: a light, warm skin tone.
pub const SKIN: [f32; 4] = [0.72, 0.45, 0.33, 1.0];

/// Errors importing a shape set. Every message names the file it is about.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A file or the targets folder could not be read.
    #[error("cannot read {file}")]
    Io {
        /// The path.
        file: String,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// An OBJ file is malformed.
    #[error("{file}: line {line}: {detail}")]
    Parse {
        /// The path.
        file: String,
        /// The 1-based line number.
        line: usize,
        /// What is wrong.
        detail: String,
    },
    /// A target does not have the neutral's vertex count, so it is not the same topology.
    #[error(
        "{file} has {found} vertices but the neutral mesh {neutral} has {expected}; \
         every target must be the neutral's topology"
    )]
    VertexCount {
        /// The target's path.
        file: String,
        /// Its vertex count.
        found: usize,
        /// The neutral's path.
        neutral: String,
        /// The neutral's vertex count.
        expected: usize,
    },
    /// The neutral mesh has no faces to draw.
    #[error("the neutral mesh {file} has no faces")]
    NoFaces {
        /// The neutral's path.
        file: String,
    },
    /// Every material group of the neutral mesh is left out.
    #[error("every material group of {file} is left out ({groups}); nothing is left to draw")]
    NothingLeft {
        /// The neutral's path.
        file: String,
        /// The groups and why each is left out.
        groups: String,
    },
    /// `--skip-material` or `--skin` names a material no group of the neutral mesh has.
    #[error("{option} {name}: {}", unknown_material(suggestion.as_deref(), groups))]
    UnknownMaterial {
        /// The option (`--skip-material`, `--skin`).
        option: &'static str,
        /// The name given.
        name: String,
        /// The nearest group name, if one is close.
        suggestion: Option<String>,
        /// The neutral mesh's material groups (`usemtl` names), in order of first use.
        groups: Vec<String>,
    },
    /// The targets folder holds no usable target file.
    #[error("{dir} holds no target .obj files besides the neutral mesh")]
    NoTargets {
        /// The targets folder.
        dir: String,
    },
    /// The avatar would not fit GLB's 32-bit length fields.
    #[error("the avatar would take {bytes} bytes, more than a GLB file can hold (4 GiB)")]
    TooLarge {
        /// The size it would need.
        bytes: u64,
    },
    /// The output could not be written.
    #[error("cannot write {file}")]
    Write {
        /// The output path.
        file: String,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// The message of [`ImportError::UnknownMaterial`] after the name.
fn unknown_material(suggestion: Option<&str>, groups: &[String]) -> String {
    let mut text = String::from("the neutral mesh has no material group of that name");
    if let Some(s) = suggestion {
        text.push_str(&format!("; did you mean {s}?"));
    }
    if groups.is_empty() {
        text.push_str(" (it has no usemtl groups)");
    } else {
        text.push_str(&format!(" (its groups: {})", groups.join(", ")));
    }
    text
}

/// How to import.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// Sum the left and right halves of a shape ARKit has no sides for (`browInnerUp_L` +
    /// `browInnerUp_R` → `browInnerUp`) into one target; without it the halves are imported
    /// under their file names.
    pub combine_halves: bool,
    /// How ARKit targets are spelled.
    pub dialect: NameDialect,
    /// Material groups (`usemtl` names) to leave out of the GLB, such as semi-transparent
    /// overlays a renderer without blending cannot show. A name no group has is an error.
    pub skip_materials: Vec<String>,
    /// Material groups that get facewire's skin colour instead of their library's `Kd` (for
    /// placeholder greys). A name no group has is an error.
    pub skin_materials: Vec<String>,
}

/// Where an imported material's colour comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MaterialSource {
    /// The `Kd` of this library.
    Library(String),
    /// Skin, as [`ImportOptions::skin_materials`] asks.
    SkinOption,
    /// Skin: the faces come before any `usemtl`.
    NoUsemtl,
    /// Skin: no material library could be read.
    NoLibrary,
    /// Skin: the libraries do not have the material, or give it no `Kd` (a warning says which).
    NoColour,
}

/// One material of the imported avatar: one primitive of the GLB.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedMaterial {
    /// The name (the `usemtl` name; [`materials::DEFAULT_MATERIAL`] for faces before any).
    pub name: String,
    /// Linear RGBA base colour.
    pub colour: [f32; 4],
    /// Where the colour comes from.
    pub source: MaterialSource,
    /// Its triangles.
    pub triangles: usize,
}

impl ImportedMaterial {
    /// The colour as sRGB hex (`#333333` for `Kd 0.2 0.2 0.2`), as a person compares it with
    /// the library.
    pub fn hex(&self) -> String {
        let [r, g, b] =
            [0, 1, 2].map(|k| (mtl::linear_to_srgb(self.colour[k]) * 255.0).round() as u8);
        format!("#{r:02X}{g:02X}{b:02X}")
    }
}

/// A material group left out of the avatar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedMaterial {
    /// The `usemtl` name.
    pub name: String,
    /// Its triangles.
    pub triangles: usize,
    /// Why it was left out.
    pub reason: String,
}

/// One target of the imported avatar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedTarget {
    /// The target's name in the GLB.
    pub name: String,
    /// The ARKit shape it is, if any.
    pub channel: Option<Channel>,
    /// The file names it was built from (two for combined halves).
    pub files: Vec<String>,
    /// How many vertices it moves.
    pub moved: usize,
}

/// A file in the targets folder that was not imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The file name.
    pub file: String,
    /// Why it was skipped.
    pub reason: String,
}

/// What an import did, for the person running it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ImportReport {
    /// The neutral mesh's path.
    pub neutral: String,
    /// Vertex count (the neutral's `v` lines).
    pub vertices: usize,
    /// Triangle count after triangulation.
    pub triangles: usize,
    /// The imported targets, in GLB order: ARKit shapes in canonical order, then the others by
    /// name.
    pub targets: Vec<ImportedTarget>,
    /// ARKit shapes no file provides.
    pub missing: Vec<Channel>,
    /// Missing shapes whose halves were imported separately (see
    /// [`ImportOptions::combine_halves`]).
    pub uncombined: Vec<Channel>,
    /// Files that were not imported, with the reason.
    pub skipped: Vec<Skipped>,
    /// The material libraries read.
    pub libraries: Vec<String>,
    /// The materials, one per primitive, in the OBJ's order of first use.
    pub materials: Vec<ImportedMaterial>,
    /// The material groups left out.
    pub skipped_materials: Vec<SkippedMaterial>,
    /// What did not stop the import but may surprise: unreadable material libraries and their
    /// lines, materials without a colour, partly transparent ones.
    pub warnings: Vec<String>,
}

impl ImportReport {
    /// The target named `name`, if any.
    pub fn target(&self, name: &str) -> Option<&ImportedTarget> {
        self.targets.iter().find(|t| t.name == name)
    }

    /// The material named `name`, if any.
    pub fn material(&self, name: &str) -> Option<&ImportedMaterial> {
        self.materials.iter().find(|m| m.name == name)
    }
}

impl fmt::Display for ImportReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: {} vertices, {} triangles",
            self.neutral, self.vertices, self.triangles
        )?;
        if self.libraries.is_empty() {
            writeln!(f, "materials ({}):", self.materials.len())?;
        } else {
            writeln!(
                f,
                "materials ({}, from {}):",
                self.materials.len(),
                self.libraries.join(", ")
            )?;
        }
        for m in &self.materials {
            let note = match &m.source {
                MaterialSource::Library(_) => String::new(),
                MaterialSource::SkinOption => " skin (--skin)".to_owned(),
                MaterialSource::NoUsemtl => " skin (faces before any usemtl)".to_owned(),
                MaterialSource::NoLibrary => " skin (no material library)".to_owned(),
                MaterialSource::NoColour => " skin (no colour in the library)".to_owned(),
            };
            writeln!(
                f,
                "  {}: {}{note}, {} triangles",
                m.name,
                m.hex(),
                m.triangles
            )?;
        }
        if !self.skipped_materials.is_empty() {
            let left: Vec<String> = self
                .skipped_materials
                .iter()
                .map(|m| format!("{} ({}, {} triangles)", m.name, m.reason, m.triangles))
                .collect();
            writeln!(
                f,
                "materials left out ({}): {}",
                left.len(),
                left.join(", ")
            )?;
        }
        let arkit = self.targets.iter().filter(|t| t.channel.is_some()).count();
        let others: Vec<&str> = self
            .targets
            .iter()
            .filter(|t| t.channel.is_none())
            .map(|t| t.name.as_str())
            .collect();
        write!(
            f,
            "{} targets: {arkit} ARKit shapes, {} others",
            self.targets.len(),
            others.len()
        )?;
        if others.is_empty() {
            writeln!(f)?;
        } else {
            writeln!(f, " (kept by file name: {})", others.join(", "))?;
        }
        let combined: Vec<String> = self
            .targets
            .iter()
            .filter(|t| t.channel.is_some() && t.files.iter().any(|f| is_half(f)))
            .map(|t| match t.files.as_slice() {
                [one] => format!("{} ({one} alone: the other half is missing)", t.name),
                files => format!("{} ({})", t.name, files.join(" + ")),
            })
            .collect();
        if !combined.is_empty() {
            writeln!(f, "combined halves: {}", combined.join(", "))?;
        }
        let still: Vec<&str> = self
            .targets
            .iter()
            .filter(|t| t.moved == 0)
            .map(|t| t.name.as_str())
            .collect();
        if !still.is_empty() {
            writeln!(f, "targets that move no vertex: {}", still.join(", "))?;
        }
        if self.missing.is_empty() {
            writeln!(f, "every ARKit shape is present")?;
        } else {
            let missing: Vec<String> = self
                .missing
                .iter()
                .map(|c| {
                    if self.uncombined.contains(c) {
                        format!(
                            "{c} (its halves are imported as they are; --combine-halves sums them)"
                        )
                    } else {
                        c.to_string()
                    }
                })
                .collect();
            writeln!(
                f,
                "missing ARKit shapes ({}): {}",
                self.missing.len(),
                missing.join(", ")
            )?;
        }
        if !self.skipped.is_empty() {
            writeln!(f, "skipped ({}):", self.skipped.len())?;
            for s in &self.skipped {
                writeln!(f, "  {}: {}", s.file, s.reason)?;
            }
        }
        if !self.warnings.is_empty() {
            writeln!(f, "warnings ({}):", self.warnings.len())?;
            for w in &self.warnings {
                writeln!(f, "  {w}")?;
            }
        }
        Ok(())
    }
}

/// Whether a file name is one half of a sideless ARKit shape.
fn is_half(file: &str) -> bool {
    matches!(names::classify(&stem(file)), Shape::Half(..))
}

/// The file name without its extension.
fn stem(file: &str) -> String {
    Path::new(file)
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
}

/// An imported avatar: GLB bytes and what went into them.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The GLB file's bytes.
    pub glb: Vec<u8>,
    /// What was imported, missing and skipped.
    pub report: ImportReport,
}

/// One target file to read.
#[derive(Debug, Clone)]
struct Source {
    path: PathBuf,
    name: String,
}

/// One target to build: its name and the sources whose deltas it sums.
#[derive(Debug, Clone)]
struct Plan {
    name: String,
    channel: Option<Channel>,
    sources: Vec<usize>,
}

/// Imports `neutral` and every target OBJ in `targets_dir` into GLB bytes.
pub fn import(
    neutral: &Path,
    targets_dir: &Path,
    options: &ImportOptions,
) -> Result<Imported, ImportError> {
    let started = Instant::now();
    let neutral_name = neutral.display().to_string();
    let (sources, plans, mut report) = plan(neutral, targets_dir, options)?;
    if plans.is_empty() {
        return Err(ImportError::NoTargets {
            dir: targets_dir.display().to_string(),
        });
    }

    // The neutral and every target, parsed in parallel; errors in file order.
    let mut jobs: Vec<(&Path, Read)> = vec![(neutral, Read::Everything)];
    jobs.extend(
        sources
            .iter()
            .map(|s| (s.path.as_path(), Read::PositionsOnly)),
    );
    let mut parsed = parallel_map(&jobs, |&(path, read)| read_obj(path, read)).into_iter();
    let base = parsed.next().unwrap_or_else(|| Ok(ObjMesh::default()))?;
    if base.triangles.is_empty() {
        return Err(ImportError::NoFaces { file: neutral_name });
    }
    let mut targets: Vec<Vec<Vec3>> = Vec::with_capacity(sources.len());
    for (source, mesh) in sources.iter().zip(parsed) {
        let mesh = mesh?;
        if mesh.positions.len() != base.positions.len() {
            return Err(ImportError::VertexCount {
                file: source.path.display().to_string(),
                found: mesh.positions.len(),
                neutral: neutral_name,
                expected: base.positions.len(),
            });
        }
        targets.push(mesh.positions);
    }
    let parsed_at = started.elapsed();

    let libraries = materials::read_libraries(neutral, &base.libraries, &mut report.warnings);
    report.libraries = libraries.iter().map(|l| l.name.clone()).collect();
    let groups = materials::plan_groups(&base, &libraries, options, &mut report)?;
    let kept: Vec<bool> = groups.iter().map(|g| g.material.is_some()).collect();
    // The triangles drawn: normals and targets are computed over these alone, so an overlay left
    // out does not bend the normals of the surface under it.
    let triangles: Vec<u32> = base
        .triangles
        .chunks_exact(3)
        .zip(&base.triangle_materials)
        .filter(|(_, &g)| kept[g as usize])
        .flat_map(|(t, _)| t.iter().copied())
        .collect();
    if triangles.is_empty() {
        let groups: Vec<String> = report
            .skipped_materials
            .iter()
            .map(|m| format!("{}: {}", m.name, m.reason))
            .collect();
        return Err(ImportError::NothingLeft {
            file: neutral_name,
            groups: groups.join(", "),
        });
    }
    let mut drawn = vec![false; base.positions.len()];
    for &v in &triangles {
        drawn[v as usize] = true;
    }

    let normals = obj::smooth_normals(&base.positions, &triangles);
    let (lo, hi) = base
        .positions
        .iter()
        .fold((Vec3::MAX, Vec3::MIN), |(lo, hi), p| {
            (lo.min(*p), hi.max(*p))
        });
    let eps = (hi - lo).length() * POSITION_EPS;
    let built = parallel_map(&plans, |plan| {
        build_target(&base.positions, &triangles, &normals, plan, &targets, eps)
    });
    drop(targets);

    report.neutral = neutral_name;
    report.vertices = base.positions.len();
    report.triangles = base.triangles.len() / 3;
    report.targets = plans
        .iter()
        .zip(&built)
        .map(|(plan, target)| ImportedTarget {
            name: plan.name.clone(),
            channel: plan.channel,
            files: plan
                .sources
                .iter()
                .map(|&s| sources[s].name.clone())
                .collect(),
            moved: target
                .positions
                .iter()
                .zip(&drawn)
                .filter(|(d, drawn)| **drawn && **d != Vec3::ZERO)
                .count(),
        })
        .collect();

    let mesh_name = neutral
        .file_stem()
        .map_or_else(|| "Face".to_owned(), |s| s.to_string_lossy().into_owned());
    // One primitive per group kept, each with its own material.
    let mut by_group: Vec<Vec<u32>> = vec![Vec::new(); base.materials.len()];
    for (t, &g) in base.triangles.chunks_exact(3).zip(&base.triangle_materials) {
        if kept[g as usize] {
            by_group[g as usize].extend_from_slice(t);
        }
    }
    let mut scratch = vec![u32::MAX; base.positions.len()];
    let mut primitives = Vec::new();
    let mut material_defs = Vec::new();
    for group in groups {
        let Some(material) = group.material else {
            continue;
        };
        primitives.push(materials::compact(
            &by_group[group.group],
            &base.positions,
            &normals,
            &built,
            material_defs.len(),
            &mut scratch,
        ));
        material_defs.push(material);
    }
    drop(built);
    let doc = Document {
        nodes: vec![NodeDef {
            name: "Head".into(),
            translation: Vec3::ZERO,
            mesh: Some(0),
            ..NodeDef::default()
        }],
        roots: Vec::new(),
        meshes: vec![MeshDef {
            name: mesh_name,
            target_names: plans.iter().map(|p| p.name.clone()).collect(),
            primitives,
        }],
        materials: material_defs,
        image_png: Vec::new(),
        extra_images: Vec::new(),
    };
    check_size(&doc)?;
    let glb = crate::headgen::glb::write_as(&doc, GENERATOR);
    tracing::info!(
        neutral = %report.neutral,
        vertices = report.vertices,
        targets = report.targets.len(),
        materials = report.materials.len(),
        missing = report.missing.len(),
        skipped = report.skipped.len(),
        parse_ms = parsed_at.as_millis() as u64,
        total_ms = started.elapsed().as_millis() as u64,
        bytes = glb.len(),
        "OBJ shape set imported"
    );
    Ok(Imported { glb, report })
}

/// [`import`], then writes the GLB to `out` atomically.
pub fn import_to_file(
    neutral: &Path,
    targets_dir: &Path,
    out: &Path,
    options: &ImportOptions,
) -> Result<ImportReport, ImportError> {
    let imported = import(neutral, targets_dir, options)?;
    crate::fsutil::write_atomic(out, &imported.glb).map_err(|source| ImportError::Write {
        file: out.display().to_string(),
        source,
    })?;
    Ok(imported.report)
}

/// Reads and parses one OBJ file.
fn read_obj(path: &Path, read: Read) -> Result<ObjMesh, ImportError> {
    let file = || path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| ImportError::Io {
        file: file(),
        source,
    })?;
    obj::parse(&bytes, read).map_err(|e| ImportError::Parse {
        file: file(),
        line: e.line,
        detail: e.detail,
    })
}

/// Refuses documents whose binary chunk would overflow GLB's 32-bit lengths: positions,
/// normals, indices and, per target, at most a sparse index and two deltas per vertex.
fn check_size(doc: &Document) -> Result<(), ImportError> {
    let mut bytes: u64 = 0;
    for prim in doc.meshes.iter().flat_map(|m| &m.primitives) {
        let n = prim.positions.len() as u64;
        bytes += n * 24 + prim.indices.len() as u64 * 4;
        bytes += prim.targets.len() as u64 * n * 28;
    }
    if bytes > u64::from(u32::MAX) - (1 << 20) {
        return Err(ImportError::TooLarge { bytes });
    }
    Ok(())
}

/// Lists the targets folder and decides what to build: the sources to read, the targets to
/// build from them (in GLB order) and a report of what is missing and skipped so far.
fn plan(
    neutral: &Path,
    dir: &Path,
    options: &ImportOptions,
) -> Result<(Vec<Source>, Vec<Plan>, ImportReport), ImportError> {
    let io = |source| ImportError::Io {
        file: dir.display().to_string(),
        source,
    };
    let neutral_real = neutral.canonicalize().map_err(|source| ImportError::Io {
        file: neutral.display().to_string(),
        source,
    })?;
    let mut entries: Vec<(String, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if !path.is_file() {
            continue;
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        entries.push((name, path));
    }
    entries.sort();

    let mut report = ImportReport::default();
    let mut skip = |file: &str, reason: String| {
        report.skipped.push(Skipped {
            file: file.to_owned(),
            reason,
        })
    };
    let mut sources: Vec<Source> = Vec::new();
    let mut whole: BTreeMap<Channel, usize> = BTreeMap::new();
    let mut halves: BTreeMap<Channel, [Option<usize>; 2]> = BTreeMap::new();
    let mut others: BTreeMap<String, usize> = BTreeMap::new();
    for (name, path) in entries {
        if path.canonicalize().is_ok_and(|p| p == neutral_real) {
            skip(&name, "the neutral mesh".to_owned());
            continue;
        }
        if !path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("obj"))
        {
            skip(&name, "not an .obj file".to_owned());
            continue;
        }
        let Some(file_stem) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else {
            skip(&name, "the file name is not UTF-8".to_owned());
            continue;
        };
        let index = sources.len();
        let taken = match names::classify(&file_stem) {
            Shape::Channel(c) => whole.entry(c).or_insert(index),
            Shape::Half(c, side) => {
                let slot = &mut halves.entry(c).or_default()[side as usize];
                slot.get_or_insert(index)
            }
            Shape::Other => others.entry(file_stem.clone()).or_insert(index),
        };
        if *taken != index {
            skip(&name, format!("the same shape as {}", sources[*taken].name));
            continue;
        }
        sources.push(Source { path, name });
    }

    let mut plans = Vec::new();
    for channel in Channel::ALL {
        let pair = halves.get(&channel).copied().unwrap_or_default();
        let sources_of = if let Some(&s) = whole.get(&channel) {
            vec![s]
        } else if options.combine_halves && pair.iter().any(Option::is_some) {
            halves.remove(&channel);
            pair.iter().flatten().copied().collect()
        } else {
            report.missing.push(channel);
            if pair.iter().any(Option::is_some) {
                report.uncombined.push(channel);
            }
            continue;
        };
        plans.push(Plan {
            name: options.dialect.name(channel),
            channel: Some(channel),
            sources: sources_of,
        });
    }
    // Halves not combined (or shadowed by a whole shape) stay usable under their file names.
    for s in halves.values().flatten().flatten() {
        others.insert(stem(&sources[*s].name), *s);
    }
    for (name, s) in others {
        if plans.iter().any(|p| p.name == name) {
            report.skipped.push(Skipped {
                file: sources[s].name.clone(),
                reason: format!("its name is taken by another target ({name})"),
            });
            continue;
        }
        plans.push(Plan {
            name,
            channel: None,
            sources: vec![s],
        });
    }
    report.skipped.sort_by(|a, b| a.file.cmp(&b.file));
    Ok((sources, plans, report))
}

/// Builds one target: summed position deltas (noise below `eps` dropped) and the normal deltas
/// of the moved surface, whose faces are `triangles`.
fn build_target(
    base: &[Vec3],
    triangles: &[u32],
    base_normals: &[Vec3],
    plan: &Plan,
    targets: &[Vec<Vec3>],
    eps: f32,
) -> TargetDef {
    let mut deltas = vec![Vec3::ZERO; base.len()];
    for &s in &plan.sources {
        for ((d, p), p0) in deltas.iter_mut().zip(&targets[s]).zip(base) {
            *d += *p - *p0;
        }
    }
    morph::target(
        base,
        base_normals,
        deltas,
        eps,
        Some(morph::NORMAL_EPS),
        |moved| obj::smooth_normals(moved, triangles),
    )
}

/// Applies `f` to every item on up to one named thread per core and returns the results in
/// item order. Runs on the calling thread when only one core (or item) is there, or when no
/// thread can be started.
fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    if workers <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else {
                return done;
            };
            done.push((i, f(item)));
        }
    };
    let mut results: Vec<Option<R>> = std::iter::repeat_with(|| None).take(items.len()).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (1..workers)
            .filter_map(|k| {
                std::thread::Builder::new()
                    .name(format!("objimport-{k}"))
                    .spawn_scoped(scope, work)
                    .ok()
            })
            .collect();
        let mut all = work();
        for handle in handles {
            match handle.join() {
                Ok(done) => all.extend(done),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        for (i, r) in all {
            results[i] = Some(r);
        }
    });
    results.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A strip of four quads along x (vertices `2k` at (k, 0, 0) and `2k + 1` at (k, 1, 0)),
    /// each quad in its own material group, the first before any `usemtl`; plus a target that
    /// lifts every top vertex by its x.
    const NEUTRAL: &str = "mtllib strip.mtl\n\
        v 0 0 0\nv 0 1 0\nv 1 0 0\nv 1 1 0\nv 2 0 0\nv 2 1 0\nv 3 0 0\nv 3 1 0\nv 4 0 0\nv 4 1 0\n\
        f 1 3 4 2\nusemtl Skin\nf 3 5 6 4\nusemtl Lash\nf 5 7 8 6\nusemtl Veil\nf 7 9 10 8\n";

    const LIBRARY: &str = "newmtl Skin\nKd 0.6 0.6 0.6\nnewmtl Lash\nKd 0.2 0.1 0\nTr 0.5\n\
        newmtl Veil\nKd 1 1 1\nd 0\n";

    /// A folder with the strip, its library (when `library` is some) and a `targets/` folder
    /// with `jawOpen.obj`.
    fn strip(library: Option<&str>) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let neutral = dir.path().join("strip.obj");
        std::fs::write(&neutral, NEUTRAL).unwrap();
        if let Some(text) = library {
            std::fs::write(dir.path().join("strip.mtl"), text).unwrap();
        }
        let targets = dir.path().join("targets");
        std::fs::create_dir(&targets).unwrap();
        let mut target = String::new();
        for k in 0..5 {
            target.push_str(&format!("v {k} 0 0\nv {k} 1 {}\n", k as f32 * 0.25));
        }
        std::fs::write(targets.join("jawOpen.obj"), target).unwrap();
        (dir, neutral, targets)
    }

    fn options(skip: &[&str], skin: &[&str]) -> ImportOptions {
        ImportOptions {
            skip_materials: skip.iter().map(|s| (*s).to_owned()).collect(),
            skin_materials: skin.iter().map(|s| (*s).to_owned()).collect(),
            ..ImportOptions::default()
        }
    }

    fn close(a: [f32; 4], b: [f32; 4]) -> bool {
        a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-4)
    }

    #[test]
    fn one_primitive_per_group_with_its_vertices_and_target_slices() {
        let (_dir, neutral, targets) = strip(Some(LIBRARY));
        let imported = import(&neutral, &targets, &ImportOptions::default()).unwrap();
        let report = &imported.report;
        let avatar = crate::avatar::load_slice(&imported.glb, "strip").unwrap();
        // Veil is fully dissolved (d 0) and left out; the rest keep the OBJ's order.
        let names: Vec<&str> = report.materials.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["Skin", "Skin", "Lash"]);
        assert_eq!(report.materials[0].source, MaterialSource::NoUsemtl);
        assert_eq!(
            report.materials[1].source,
            MaterialSource::Library("strip.mtl".into())
        );
        assert_eq!(report.skipped_materials.len(), 1);
        assert_eq!(report.skipped_materials[0].name, "Veil");
        assert!(report.skipped_materials[0].reason.contains("d 0"));
        assert!(
            report
                .warnings
                .iter()
                .any(|w| w.contains("Lash is partly transparent (d 0.5")),
            "{:?}",
            report.warnings
        );
        assert_eq!(report.libraries, ["strip.mtl"]);

        let prims = &avatar.meshes[0].primitives;
        assert_eq!(prims.len(), 3);
        let colours: Vec<[f32; 4]> = prims
            .iter()
            .map(|p| avatar.materials[p.material.unwrap()].base_color)
            .collect();
        assert!(close(colours[0], SKIN), "{colours:?}");
        let grey = mtl::srgb_to_linear(0.6);
        assert!(close(colours[1], [grey, grey, grey, 1.0]), "{colours:?}");
        let lash = [mtl::srgb_to_linear(0.2), mtl::srgb_to_linear(0.1), 0.0, 1.0];
        assert!(close(colours[2], lash), "{colours:?}");
        assert_eq!(report.materials[1].hex(), "#999999");
        for (k, prim) in prims.iter().enumerate() {
            assert!(avatar.materials[prim.material.unwrap()].double_sided);
            // Quad k uses OBJ vertices 2k..2k + 4: four vertices, not ten.
            assert_eq!(prim.positions.len(), 4, "primitive {k}");
            assert_eq!(prim.indices.len(), 6);
            let target = &prim.targets[0];
            for (v, p) in prim.positions.iter().enumerate() {
                assert_eq!(p.x, (k + v / 2) as f32, "primitive {k} vertex {v}");
                let lift = if p.y == 1.0 { p.x * 0.25 } else { 0.0 };
                assert_eq!(target.positions[v], Vec3::new(0.0, 0.0, lift), "{k} {v}");
            }
        }
        // The left-out Veil's vertices 8 and 9 move but are not counted.
        assert_eq!(report.target("jawOpen").unwrap().moved, 3);
        let text = report.to_string();
        assert!(text.contains("materials (3, from strip.mtl):"), "{text}");
        assert!(text.contains("  Skin: #999999, 2 triangles"), "{text}");
        assert!(text.contains("skin (faces before any usemtl)"), "{text}");
        assert!(
            text.contains(
                "materials left out (1): Veil (fully transparent (d 0 in strip.mtl), 2 triangles)"
            ),
            "{text}"
        );
    }

    #[test]
    fn skip_and_skin_options() {
        let (_dir, neutral, targets) = strip(Some(LIBRARY));
        let imported = import(&neutral, &targets, &options(&["Lash"], &["Skin"])).unwrap();
        let report = &imported.report;
        let names: Vec<&str> = report.materials.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["Skin", "Skin"]);
        assert_eq!(report.materials[1].source, MaterialSource::SkinOption);
        assert!(close(report.materials[1].colour, SKIN));
        let left: Vec<(&str, &str)> = report
            .skipped_materials
            .iter()
            .map(|m| (m.name.as_str(), m.reason.as_str()))
            .collect();
        assert_eq!(left[0], ("Lash", "--skip-material"));
        assert_eq!(left[1].0, "Veil");
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
        let avatar = crate::avatar::load_slice(&imported.glb, "strip").unwrap();
        assert_eq!(avatar.meshes[0].primitives.len(), 2);
        assert!(report.to_string().contains("skin (--skin)"), "{report}");

        // Leaving out everything that has a usemtl still draws the faces before the first.
        let imported = import(&neutral, &targets, &options(&["Skin", "Lash"], &[])).unwrap();
        assert_eq!(imported.report.materials.len(), 1);
    }

    #[test]
    fn an_unknown_material_name_lists_the_groups() {
        let (_dir, neutral, targets) = strip(Some(LIBRARY));
        let error = import(&neutral, &targets, &options(&["Lahs"], &[])).unwrap_err();
        let message = error.to_string();
        assert_eq!(
            message,
            "--skip-material Lahs: the neutral mesh has no material group of that name; did you \
             mean Lash? (its groups: Skin, Lash, Veil)"
        );
        let error = import(&neutral, &targets, &options(&[], &["Eyes"])).unwrap_err();
        let message = error.to_string();
        assert!(message.starts_with("--skin Eyes: "), "{message}");
        assert!(!message.contains("did you mean"), "{message}");
        assert!(
            message.contains("(its groups: Skin, Lash, Veil)"),
            "{message}"
        );
    }

    #[test]
    fn a_missing_or_broken_library_is_a_warning_and_the_groups_get_skin() {
        let (dir, neutral, targets) = strip(None);
        let imported = import(&neutral, &targets, &ImportOptions::default()).unwrap();
        let report = &imported.report;
        assert_eq!(report.materials.len(), 4, "nothing says Veil is dissolved");
        assert!(report.materials.iter().all(|m| close(m.colour, SKIN)));
        assert_eq!(report.materials[1].source, MaterialSource::NoLibrary);
        assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
        assert!(
            report.warnings[0].contains("cannot read the material library")
                && report.warnings[0].contains("strip.mtl"),
            "{:?}",
            report.warnings
        );
        assert!(report.to_string().contains("warnings (1):"), "{report}");

        // A library with bad lines and without Veil: the lines and the material are warnings.
        std::fs::write(
            dir.path().join("strip.mtl"),
            "newmtl Skin\nKd 0.6 oops 0.6\nnewmtl Lash\nKd 0 0 0\n",
        )
        .unwrap();
        let report = import(&neutral, &targets, &ImportOptions::default())
            .unwrap()
            .report;
        let warnings = report.warnings.join("\n");
        assert!(
            warnings.contains("strip.mtl: line 2: Kd: `oops` is not a finite number"),
            "{warnings}"
        );
        assert!(
            warnings.contains("Skin has no Kd in strip.mtl"),
            "{warnings}"
        );
        assert!(warnings.contains("Veil is not in strip.mtl"), "{warnings}");
        assert_eq!(report.materials[2].hex(), "#000000");

        // A library that is not a file, or too large, is refused without reading it all.
        std::fs::remove_file(dir.path().join("strip.mtl")).unwrap();
        std::fs::create_dir(dir.path().join("strip.mtl")).unwrap();
        let report = import(&neutral, &targets, &ImportOptions::default())
            .unwrap()
            .report;
        assert!(
            report.warnings[0].contains("not a file"),
            "{:?}",
            report.warnings
        );
        std::fs::remove_dir(dir.path().join("strip.mtl")).unwrap();
        let big = vec![b'#'; crate::fsutil::MAX_TEXT_BYTES as usize + 1];
        std::fs::write(dir.path().join("strip.mtl"), big).unwrap();
        let report = import(&neutral, &targets, &ImportOptions::default())
            .unwrap()
            .report;
        assert!(
            report.warnings[0].contains("larger than 8 MiB"),
            "{:?}",
            report.warnings
        );
    }

    #[test]
    fn absolute_library_paths_are_not_read_and_nothing_left_is_an_error() {
        let (dir, neutral, targets) = strip(Some(LIBRARY));
        let absolute = dir.path().join("strip.mtl");
        let text = NEUTRAL.replace(
            "mtllib strip.mtl",
            &format!("mtllib {}", absolute.display()),
        );
        std::fs::write(&neutral, text).unwrap();
        let report = import(&neutral, &targets, &ImportOptions::default())
            .unwrap()
            .report;
        assert!(
            report.warnings[0].contains("not a path relative to the OBJ file"),
            "{:?}",
            report.warnings
        );

        // Only Veil, which is dissolved, and a group left out: nothing to draw.
        std::fs::write(
            &neutral,
            "mtllib strip.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nusemtl Veil\nf 1 2 3\nusemtl Lash\nf 1 2 3\n",
        )
        .unwrap();
        std::fs::write(targets.join("jawOpen.obj"), "v 0 0 0\nv 1 0 0\nv 0 1 1\n").unwrap();
        let error = import(&neutral, &targets, &options(&["Lash"], &[])).unwrap_err();
        assert!(matches!(error, ImportError::NothingLeft { .. }), "{error}");
        assert!(
            error.to_string().contains("Veil: fully transparent")
                && error.to_string().contains("Lash: --skip-material"),
            "{error}"
        );
    }
}

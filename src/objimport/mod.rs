//! `facewire import-obj`: a GLB avatar with morph targets from an OBJ shape set (a neutral mesh
//! and one same-topology OBJ per shape, as sculpting tools export them).
//!
//! - [`obj`]: the OBJ reader (positions by OBJ index, triangulated faces) and smooth normals.
//! - [`names`]: file names to target names: ARKit shapes in any dialect, halves, others.
//!
//! Vertex `i` of every file is the OBJ file's `i`-th `v` line, so a target's deltas are simply
//! its positions minus the neutral's. Each target stores position deltas and normal deltas (the
//! target's smooth normals minus the neutral's), with the neutral's faces, built by
//! [`headgen::morph`](crate::headgen::morph) as the default head's targets are. Units stay the
//! OBJ's: facewire frames whatever size the model has. Files are parsed in parallel, one thread
//! per core.

pub mod names;
pub mod obj;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use glam::Vec3;

use crate::arkit::Channel;
use crate::headgen::glb::{Document, MaterialDef, MeshDef, NodeDef, PrimitiveDef, TargetDef};
use crate::headgen::morph;
pub use names::{NameDialect, Shape, Side};
use obj::{ObjMesh, Read};

/// The generator named in the GLB's asset header.
const GENERATOR: &str = "facewire import-obj";

/// Position deltas shorter than this fraction of the neutral's bounding-box diagonal are
/// export noise, stored as zero (a micrometre on a 1 m model).
const POSITION_EPS: f32 = 1e-6;

/// The skin material's linear base colour: a light, warm skin tone.
const SKIN: [f32; 4] = [0.72, 0.45, 0.33, 1.0];

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

/// How to import.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// Sum the left and right halves of a shape ARKit has no sides for (`browInnerUp_L` +
    /// `browInnerUp_R` → `browInnerUp`) into one target; without it the halves are imported
    /// under their file names.
    pub combine_halves: bool,
    /// How ARKit targets are spelled.
    pub dialect: NameDialect,
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
#[derive(Debug, Clone, PartialEq, Eq, Default)]
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
}

impl ImportReport {
    /// The target named `name`, if any.
    pub fn target(&self, name: &str) -> Option<&ImportedTarget> {
        self.targets.iter().find(|t| t.name == name)
    }
}

impl fmt::Display for ImportReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: {} vertices, {} triangles",
            self.neutral, self.vertices, self.triangles
        )?;
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

    let normals = obj::smooth_normals(&base.positions, &base.triangles);
    let (lo, hi) = base
        .positions
        .iter()
        .fold((Vec3::MAX, Vec3::MIN), |(lo, hi), p| {
            (lo.min(*p), hi.max(*p))
        });
    let eps = (hi - lo).length() * POSITION_EPS;
    let built = parallel_map(&plans, |plan| {
        build_target(&base, &normals, plan, &targets, eps)
    });

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
                .filter(|d| **d != Vec3::ZERO)
                .count(),
        })
        .collect();

    let mesh_name = neutral
        .file_stem()
        .map_or_else(|| "Face".to_owned(), |s| s.to_string_lossy().into_owned());
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
            primitives: vec![PrimitiveDef {
                positions: base.positions,
                normals,
                uvs: Vec::new(),
                indices: base.triangles,
                material: 0,
                targets: built,
            }],
        }],
        materials: vec![MaterialDef {
            name: "Skin".into(),
            base_color: SKIN,
            textured: false,
            // Shape sets are often open meshes (a face mask, eyelash strips): show both sides.
            double_sided: true,
            roughness: 0.7,
        }],
        image_png: Vec::new(),
        extra_images: Vec::new(),
    };
    check_size(&doc)?;
    let glb = crate::headgen::glb::write_as(&doc, GENERATOR);
    tracing::info!(
        neutral = %report.neutral,
        vertices = report.vertices,
        targets = report.targets.len(),
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
/// of the moved surface.
fn build_target(
    base: &ObjMesh,
    base_normals: &[Vec3],
    plan: &Plan,
    targets: &[Vec<Vec3>],
    eps: f32,
) -> TargetDef {
    let mut deltas = vec![Vec3::ZERO; base.positions.len()];
    for &s in &plan.sources {
        for ((d, p), p0) in deltas.iter_mut().zip(&targets[s]).zip(&base.positions) {
            *d += *p - *p0;
        }
    }
    morph::target(
        &base.positions,
        base_normals,
        deltas,
        eps,
        Some(morph::NORMAL_EPS),
        |moved| obj::smooth_normals(moved, &base.triangles),
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

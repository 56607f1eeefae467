//! The neutral mesh's material groups: their colours from the `mtllib` libraries (or the skin
//! colour), which are left out, and one compact primitive per group kept.
//!
//! A primitive holds only the vertices its triangles use, in ascending OBJ order, with the
//! matching slices of the normals and of every target's deltas, so splitting a mesh by material
//! adds only the vertices two groups share (a seam) and the GLB does not grow with the number
//! of groups.

use std::io::Read as _;
use std::path::Path;

use glam::Vec3;

use super::mtl::{self, MtlLibrary};
use super::obj::ObjMesh;
use super::{ImportError, ImportOptions, ImportedMaterial, MaterialSource, SkippedMaterial, SKIN};
use crate::fsutil::MAX_TEXT_BYTES;
use crate::headgen::glb::{MaterialDef, PrimitiveDef, TargetDef};

/// The GLB material name of the faces before any `usemtl`.
pub const DEFAULT_MATERIAL: &str = "Skin";

/// The roughness of every imported material (MTL's `Ns` is a Phong exponent, which does not map
/// well onto a single roughness; a skin-like value suits a face).
const ROUGHNESS: f32 = 0.7;

/// A library read from beside the neutral mesh.
#[derive(Debug, Clone)]
pub struct Library {
    /// The file name as the OBJ's `mtllib` gives it.
    pub name: String,
    /// Its materials.
    pub parsed: MtlLibrary,
}

/// Reads the libraries the `mtllib` statements name, relative to the neutral's folder. A
/// library that cannot be read is a warning; so is each line of one that cannot be used.
pub fn read_libraries(
    neutral: &Path,
    mtllib: &[String],
    warnings: &mut Vec<String>,
) -> Vec<Library> {
    let folder = neutral.parent().unwrap_or(Path::new(""));
    let mut names: Vec<String> = Vec::new();
    for statement in mtllib {
        // `mtllib a.mtl b.mtl` lists several files; a single name with spaces is one file.
        if folder.join(statement).is_file() {
            names.push(statement.clone());
        } else {
            names.extend(statement.split_ascii_whitespace().map(str::to_owned));
        }
    }
    let mut libraries = Vec::new();
    for name in names {
        if libraries.iter().any(|l: &Library| l.name == name) {
            continue;
        }
        let relative = Path::new(&name);
        if relative.has_root() || relative.is_absolute() {
            warnings.push(format!(
                "mtllib {name}: not a path relative to the OBJ file; only those are read"
            ));
            continue;
        }
        let path = folder.join(relative);
        match read_bounded(&path) {
            Ok(bytes) => {
                let parsed = mtl::parse(&bytes);
                for problem in &parsed.problems {
                    warnings.push(format!(
                        "{}: line {}: {}",
                        path.display(),
                        problem.line,
                        problem.detail
                    ));
                }
                if parsed.problem_count > parsed.problems.len() {
                    warnings.push(format!(
                        "{}: {} more lines that cannot be used",
                        path.display(),
                        parsed.problem_count - parsed.problems.len()
                    ));
                }
                libraries.push(Library { name, parsed });
            }
            Err(reason) => warnings.push(format!(
                "cannot read the material library {}: {reason}; its materials get the skin colour",
                path.display()
            )),
        }
    }
    libraries
}

/// The bytes of a regular file of at most [`MAX_TEXT_BYTES`].
fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    let metadata = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !metadata.is_file() {
        return Err("not a file".to_owned());
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_TEXT_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_TEXT_BYTES {
        return Err(format!("larger than {} MiB", MAX_TEXT_BYTES >> 20));
    }
    Ok(bytes)
}

/// What becomes of one material group of the neutral mesh.
#[derive(Debug, Clone)]
pub struct GroupPlan {
    /// The group's index in [`ObjMesh::materials`].
    pub group: usize,
    /// Its material, `None` when the group is left out.
    pub material: Option<MaterialDef>,
}

/// Decides every group's material, checks the option names against the groups, and fills the
/// report's materials, left-out materials and warnings. Groups keep the OBJ's order of first
/// use.
pub fn plan_groups(
    base: &ObjMesh,
    libraries: &[Library],
    options: &ImportOptions,
    report: &mut super::ImportReport,
) -> Result<Vec<GroupPlan>, ImportError> {
    let names: Vec<&str> = base
        .materials
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    for (option, wanted) in [
        ("--skip-material", &options.skip_materials),
        ("--skin", &options.skin_materials),
    ] {
        if let Some(name) = wanted.iter().find(|w| !names.contains(&w.as_str())) {
            return Err(ImportError::UnknownMaterial {
                option,
                name: name.clone(),
                suggestion: crate::diagnostic::nearest(name, names.iter().copied())
                    .map(str::to_owned),
                groups: names.iter().map(|n| (*n).to_owned()).collect(),
            });
        }
    }

    let mut triangles = vec![0usize; base.materials.len()];
    for &g in &base.triangle_materials {
        triangles[g as usize] += 1;
    }
    let library_names = || {
        libraries
            .iter()
            .map(|l| l.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut plans = Vec::with_capacity(base.materials.len());
    for (group, name) in base.materials.iter().enumerate() {
        let triangles = triangles[group];
        let Some(name) = name else {
            report.materials.push(ImportedMaterial {
                name: DEFAULT_MATERIAL.to_owned(),
                colour: SKIN,
                source: MaterialSource::NoUsemtl,
                triangles,
            });
            plans.push(GroupPlan {
                group,
                material: Some(material(DEFAULT_MATERIAL, SKIN)),
            });
            continue;
        };
        let found = libraries
            .iter()
            .find_map(|l| l.parsed.material(name).map(|m| (l, m)));
        if options.skip_materials.contains(name) {
            report.skipped_materials.push(SkippedMaterial {
                name: name.clone(),
                triangles,
                reason: "--skip-material".to_owned(),
            });
            plans.push(GroupPlan {
                group,
                material: None,
            });
            continue;
        }
        if let Some((library, m)) = found {
            let opacity = m.opacity();
            if opacity <= 0.0 {
                report.skipped_materials.push(SkippedMaterial {
                    name: name.clone(),
                    triangles,
                    reason: format!("fully transparent (d 0 in {})", library.name),
                });
                plans.push(GroupPlan {
                    group,
                    material: None,
                });
                continue;
            }
            if opacity < 1.0 {
                report.warnings.push(format!(
                    "{name} is partly transparent (d {opacity} in {}) but is drawn opaque; \
                     --skip-material {name} leaves it out",
                    library.name
                ));
            }
        }
        let (colour, source) = if options.skin_materials.contains(name) {
            (SKIN, MaterialSource::SkinOption)
        } else {
            match found {
                Some((library, m)) => match m.diffuse {
                    Some(kd) => (
                        [
                            mtl::srgb_to_linear(kd[0]),
                            mtl::srgb_to_linear(kd[1]),
                            mtl::srgb_to_linear(kd[2]),
                            1.0,
                        ],
                        MaterialSource::Library(library.name.clone()),
                    ),
                    None => {
                        report.warnings.push(format!(
                            "{name} has no Kd in {}; it gets the skin colour",
                            library.name
                        ));
                        (SKIN, MaterialSource::NoColour)
                    }
                },
                None if libraries.is_empty() => (SKIN, MaterialSource::NoLibrary),
                None => {
                    report.warnings.push(format!(
                        "{name} is not in {}; it gets the skin colour",
                        library_names()
                    ));
                    (SKIN, MaterialSource::NoColour)
                }
            }
        };
        report.materials.push(ImportedMaterial {
            name: name.clone(),
            colour,
            source,
            triangles,
        });
        plans.push(GroupPlan {
            group,
            material: Some(material(name, colour)),
        });
    }
    if !names.is_empty() && base.libraries.is_empty() {
        report.warnings.push(
            "the OBJ names materials (usemtl) but no material library (mtllib); they get the \
             skin colour"
                .to_owned(),
        );
    }
    Ok(plans)
}

/// An imported material: a flat colour, both sides drawn (shape sets are often open meshes: a
/// face mask, eyelash strips).
fn material(name: &str, colour: [f32; 4]) -> MaterialDef {
    MaterialDef {
        name: name.to_owned(),
        base_color: colour,
        textured: false,
        double_sided: true,
        roughness: ROUGHNESS,
    }
}

/// The primitive of the triangles `indices` (over the whole mesh's vertices): the vertices they
/// use, in ascending order, with their normals and every target's deltas, and the indices
/// remapped to them. `scratch` is a map from mesh vertex to primitive vertex, as long as
/// `positions` and all `u32::MAX`; it is left so.
pub fn compact(
    indices: &[u32],
    positions: &[Vec3],
    normals: &[Vec3],
    targets: &[TargetDef],
    material: usize,
    scratch: &mut [u32],
) -> PrimitiveDef {
    let mut used: Vec<u32> = indices.to_vec();
    used.sort_unstable();
    used.dedup();
    for (new, &old) in used.iter().enumerate() {
        scratch[old as usize] = new as u32;
    }
    let remapped: Vec<u32> = indices.iter().map(|&i| scratch[i as usize]).collect();
    for &old in &used {
        scratch[old as usize] = u32::MAX;
    }
    let pick = |all: &[Vec3]| -> Vec<Vec3> {
        if all.is_empty() {
            Vec::new()
        } else {
            used.iter().map(|&v| all[v as usize]).collect()
        }
    };
    PrimitiveDef {
        positions: pick(positions),
        normals: pick(normals),
        uvs: Vec::new(),
        indices: remapped,
        material,
        targets: targets
            .iter()
            .map(|t| TargetDef {
                positions: pick(&t.positions),
                normals: pick(&t.normals),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_keeps_the_used_vertices_in_order_and_targets_aligned() {
        let positions: Vec<Vec3> = (0..6).map(|i| Vec3::splat(i as f32)).collect();
        let normals: Vec<Vec3> = (0..6).map(|i| Vec3::new(0.0, 0.0, i as f32)).collect();
        let targets = vec![
            TargetDef {
                positions: (0..6).map(|i| Vec3::X * (10 + i) as f32).collect(),
                normals: (0..6).map(|i| Vec3::Y * (20 + i) as f32).collect(),
            },
            TargetDef {
                positions: (0..6).map(|i| Vec3::Z * (30 + i) as f32).collect(),
                normals: Vec::new(),
            },
        ];
        let mut scratch = vec![u32::MAX; 6];
        let prim = compact(
            &[5, 1, 3, 3, 1, 4],
            &positions,
            &normals,
            &targets,
            2,
            &mut scratch,
        );
        assert!(scratch.iter().all(|&s| s == u32::MAX), "scratch left clean");
        assert_eq!(prim.material, 2);
        let kept = [1usize, 3, 4, 5];
        assert_eq!(prim.positions, kept.map(|v| positions[v]));
        assert_eq!(prim.normals, kept.map(|v| normals[v]));
        assert_eq!(prim.indices, [3, 0, 1, 1, 0, 2]);
        // Each triangle still names the same positions.
        for (new, old) in prim.indices.iter().zip([5, 1, 3, 3, 1, 4]) {
            assert_eq!(prim.positions[*new as usize], positions[old]);
        }
        assert_eq!(prim.targets.len(), 2);
        assert_eq!(
            prim.targets[0].positions,
            kept.map(|v| targets[0].positions[v])
        );
        assert_eq!(prim.targets[0].normals, kept.map(|v| targets[0].normals[v]));
        assert_eq!(
            prim.targets[1].positions,
            kept.map(|v| targets[1].positions[v])
        );
        assert!(prim.targets[1].normals.is_empty());
    }
}

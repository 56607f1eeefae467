//! `facewire import-obj`: small OBJ shape sets written here (every face form, halves, errors)
//! checked against deltas computed from the OBJ numbers, and the ICT-FaceKit face imported with
//! its materials, loaded and rendered.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use facewire::arkit::Channel;
use facewire::avatar::{self, Avatar, Primitive};
use facewire::image::RgbaImage;
use facewire::objimport::{self, ImportError, ImportOptions, NameDialect};
use glam::Vec3;

use crate::support::{changed_pixels, facewire_bin, fixtures, repo};

// ---------------------------------------------------------------------------------------------
// Small shape sets
// ---------------------------------------------------------------------------------------------

/// The neutral of the small sets: a 3x3 grid of vertices in the z = 0 plane (vertex `3 * row +
/// column` at (column, row, 0)), as four quads written in every face form OBJ has, with texture
/// coordinates and normals present for some faces and negative indices for one.
const GRID: [[f32; 3]; 9] = [
    [0.0, 0.0, 0.0],
    [1.0, 0.0, 0.0],
    [2.0, 0.0, 0.0],
    [0.0, 1.0, 0.0],
    [1.0, 1.0, 0.0],
    [2.0, 1.0, 0.0],
    [0.0, 2.0, 0.0],
    [1.0, 2.0, 0.0],
    [2.0, 2.0, 0.0],
];

/// The grid's faces: `v/vt/vn`, `v//vn`, `v/vt` and negative `v` (counted back from the ninth
/// vertex), all counter-clockwise seen from +Z.
const GRID_FACES: &str = "vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\nvn 0 0 1\n\
    f 1/1/1 2/2/1 5/3/1 4/4/1\n\
    f 2//1 3//1 6//1 5//1\n\
    f 4/1 5/2 8/3 7/4\n\
    f -5 -4 -1 -2\n";

/// OBJ text for `positions` (written with the `v` lines' full precision) and `faces`.
fn obj_text(positions: &[[f32; 3]], faces: &str) -> String {
    let mut text = String::from("# written by the facewire tests\no shape\n");
    for p in positions {
        text.push_str(&format!("v {} {} {}\n", p[0], p[1], p[2]));
    }
    text.push_str(faces);
    text
}

/// The grid with some vertices moved: `moves` lists (vertex, offset).
fn grid_moved(moves: &[(usize, [f32; 3])]) -> Vec<[f32; 3]> {
    let mut positions = GRID.to_vec();
    for &(v, d) in moves {
        for k in 0..3 {
            positions[v][k] += d[k];
        }
    }
    positions
}

/// A fresh folder holding `neutral.obj` (the grid) and a `targets/` folder.
fn shape_set() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let neutral = dir.path().join("neutral.obj");
    std::fs::write(&neutral, obj_text(&GRID, GRID_FACES)).unwrap();
    let targets = dir.path().join("targets");
    std::fs::create_dir(&targets).unwrap();
    (dir, neutral, targets)
}

/// Writes one target OBJ: the grid with `moves` applied; `faces` as given (targets' faces are
/// the neutral's, so they may be written in any form or left out).
fn write_target(targets: &Path, file: &str, moves: &[(usize, [f32; 3])], faces: &str) {
    std::fs::write(targets.join(file), obj_text(&grid_moved(moves), faces)).unwrap();
}

/// Imports and loads the result back through the avatar loader.
fn import(
    neutral: &Path,
    targets: &Path,
    options: ImportOptions,
) -> (Avatar, objimport::ImportReport) {
    let imported = objimport::import(neutral, targets, &options).unwrap();
    let avatar = avatar::load_slice(&imported.glb, "imported").unwrap();
    (avatar, imported.report)
}

/// The one primitive of an imported avatar.
fn primitive(avatar: &Avatar) -> &Primitive {
    assert_eq!(avatar.meshes.len(), 1);
    assert_eq!(avatar.meshes[0].primitives.len(), 1);
    &avatar.meshes[0].primitives[0]
}

/// The index of the target called `name`.
fn target_index(avatar: &Avatar, name: &str) -> usize {
    let names = &avatar.meshes[0].target_names;
    names
        .iter()
        .position(|n| n == name)
        .unwrap_or_else(|| panic!("no target {name} in {names:?}"))
}

fn assert_close(a: Vec3, b: Vec3, what: &str) {
    assert!((a - b).length() < 1e-5, "{what}: {a} != {b}");
}

/// Area-weighted smooth normals computed here from the triangles read back, as the expected
/// value for the importer's normals.
fn expected_normals(positions: &[Vec3], indices: &[u32]) -> Vec<Vec3> {
    let mut sums = vec![Vec3::ZERO; positions.len()];
    for t in indices.chunks(3) {
        let [a, b, c] = [t[0], t[1], t[2]].map(|i| positions[i as usize]);
        let n = (b - a).cross(c - a);
        for &i in t {
            sums[i as usize] += n;
        }
    }
    sums.into_iter().map(|n| n.normalize()).collect()
}

#[test]
fn quads_in_every_face_form_import_with_deltas_at_the_moved_vertices() {
    let (_dir, neutral, targets) = shape_set();
    // Lift the centre (jawOpen) and drag a corner (eyeBlink_L), each written differently.
    let lift = [0.0, 0.0, 0.5];
    let drag = [0.125, -0.25, 0.375];
    write_target(
        &targets,
        "jawOpen.obj",
        &[(4, lift)],
        "f 1 2 5 4\nf 2 3 6 5\nf 4 5 8 7\nf 5 6 9 8\n",
    );
    write_target(&targets, "eyeBlink_L.obj", &[(0, drag)], GRID_FACES);
    let (avatar, report) = import(&neutral, &targets, ImportOptions::default());

    let prim = primitive(&avatar);
    assert_eq!(prim.positions.len(), 9, "one vertex per OBJ position");
    for (v, p) in GRID.iter().enumerate() {
        assert_eq!(prim.positions[v], Vec3::from_array(*p), "vertex {v}");
    }
    assert_eq!(
        prim.indices.len(),
        4 * 2 * 3,
        "four quads, two triangles each"
    );
    assert_eq!(report.vertices, 9);
    assert_eq!(report.triangles, 8);
    // Every triangle faces +Z like the quads it came from.
    for t in prim.indices.chunks(3) {
        let [a, b, c] = [t[0], t[1], t[2]].map(|i| prim.positions[i as usize]);
        assert!((b - a).cross(c - a).z > 0.0, "triangle {t:?} is flipped");
    }
    for n in &prim.normals {
        assert_close(*n, Vec3::Z, "a flat neutral's normal");
    }

    assert_eq!(
        avatar.meshes[0].target_names,
        vec!["eyeBlinkLeft".to_owned(), "jawOpen".to_owned()],
        "ARKit names, in canonical order"
    );
    for (name, vertex, delta) in [("jawOpen", 4, lift), ("eyeBlinkLeft", 0, drag)] {
        let target = &prim.targets[target_index(&avatar, name)];
        for v in 0..9 {
            let want = if v == vertex {
                Vec3::from_array(delta)
            } else {
                Vec3::ZERO
            };
            assert_close(target.positions[v], want, &format!("{name} vertex {v}"));
        }
        // Normal deltas: the moved surface's smooth normals minus the neutral's.
        let moved: Vec<Vec3> = prim
            .positions
            .iter()
            .zip(&target.positions)
            .map(|(p, d)| *p + *d)
            .collect();
        let want = expected_normals(&moved, &prim.indices);
        for (v, want) in want.iter().enumerate() {
            assert_close(
                prim.normals[v] + target.normals[v],
                *want,
                &format!("{name} normal at vertex {v}"),
            );
        }
        assert!(
            target.normals.iter().any(|n| n.length() > 0.1),
            "{name}: normals turn around vertex {vertex}"
        );
    }
    assert_eq!(report.target("jawOpen").unwrap().moved, 1);
}

#[test]
fn name_dialects_spell_the_arkit_targets() {
    let (_dir, neutral, targets) = shape_set();
    write_target(&targets, "EyeBlinkLeft.obj", &[(0, [0.0, 0.0, 1.0])], "");
    write_target(&targets, "mouthLeft.obj", &[(1, [0.0, 0.0, 1.0])], "");
    write_target(&targets, "cheekRaiser_L.obj", &[(2, [0.0, 0.0, 1.0])], "");
    for (dialect, want) in [
        (NameDialect::Camel, ["eyeBlinkLeft", "mouthLeft"]),
        (NameDialect::Pascal, ["EyeBlinkLeft", "MouthLeft"]),
        (NameDialect::Raw, ["eyeBlink_L", "mouthLeft"]),
    ] {
        let options = ImportOptions {
            dialect,
            ..ImportOptions::default()
        };
        let (avatar, _) = import(&neutral, &targets, options);
        assert_eq!(
            avatar.meshes[0].target_names,
            vec![want[0], want[1], "cheekRaiser_L"],
            "{dialect}"
        );
    }
}

#[test]
fn halves_of_a_sideless_shape_combine_into_one_target() {
    let (_dir, neutral, targets) = shape_set();
    // Each half lifts its own side; both lift the middle column, which adds up.
    let (left, right) = ([0.0, 0.25, 0.5], [0.0, 0.125, 0.25]);
    let (mid_l, mid_r) = ([0.0, 0.0, 0.375], [0.0, 0.0, 0.125]);
    write_target(
        &targets,
        "browInnerUp_L.obj",
        &[(6, left), (7, mid_l)],
        GRID_FACES,
    );
    write_target(&targets, "browInnerUp_R.obj", &[(8, right), (7, mid_r)], "");
    write_target(&targets, "cheekPuffLeft.obj", &[(3, left)], "");

    let combined = ImportOptions {
        combine_halves: true,
        ..ImportOptions::default()
    };
    let (avatar, report) = import(&neutral, &targets, combined);
    assert_eq!(
        avatar.meshes[0].target_names,
        vec!["browInnerUp".to_owned(), "cheekPuff".to_owned()]
    );
    let prim = primitive(&avatar);
    let brow = &prim.targets[target_index(&avatar, "browInnerUp")];
    assert_close(brow.positions[6], Vec3::from_array(left), "left half");
    assert_close(brow.positions[8], Vec3::from_array(right), "right half");
    assert_close(
        brow.positions[7],
        Vec3::new(0.0, 0.0, 0.5),
        "both halves summed",
    );
    for v in 0..6 {
        assert_eq!(brow.positions[v], Vec3::ZERO, "vertex {v}");
    }
    assert!(!report.missing.contains(&Channel::BrowInnerUp));
    assert!(!report.missing.contains(&Channel::CheekPuff));
    let text = report.to_string();
    assert!(
        text.contains("browInnerUp (browInnerUp_L.obj + browInnerUp_R.obj)"),
        "{text}"
    );
    assert!(
        text.contains("cheekPuff (cheekPuffLeft.obj alone"),
        "{text}"
    );

    // Without combining, the halves stay under their own names and the shape is missing.
    let (avatar, report) = import(&neutral, &targets, ImportOptions::default());
    assert_eq!(
        avatar.meshes[0].target_names,
        vec!["browInnerUp_L", "browInnerUp_R", "cheekPuffLeft"]
    );
    let left_half = &primitive(&avatar).targets[0];
    assert_close(
        left_half.positions[7],
        Vec3::from_array(mid_l),
        "left half alone",
    );
    assert!(report.missing.contains(&Channel::BrowInnerUp));
    assert!(report.uncombined.contains(&Channel::BrowInnerUp));
    assert!(report.to_string().contains("--combine-halves"), "{report}");
}

#[test]
fn a_target_with_another_vertex_count_is_an_error_naming_it() {
    let (_dir, neutral, targets) = shape_set();
    write_target(&targets, "jawOpen.obj", &[], "");
    std::fs::write(targets.join("mouthClose.obj"), obj_text(&GRID[..8], "")).unwrap();
    let error = objimport::import(&neutral, &targets, &ImportOptions::default()).unwrap_err();
    assert!(
        matches!(
            error,
            ImportError::VertexCount {
                found: 8,
                expected: 9,
                ..
            }
        ),
        "{error}"
    );
    let message = error.to_string();
    assert!(
        message.contains("mouthClose.obj") && message.contains("neutral.obj"),
        "{message}"
    );
}

#[test]
fn malformed_files_are_errors_with_file_and_line() {
    let (_dir, neutral, targets) = shape_set();
    std::fs::write(targets.join("jawOpen.obj"), "v 0 0 0\nv 1 x 0\n").unwrap();
    let error = objimport::import(&neutral, &targets, &ImportOptions::default()).unwrap_err();
    assert!(
        matches!(&error, ImportError::Parse { line: 2, file, .. } if file.ends_with("jawOpen.obj")),
        "{error}"
    );
    let empty = tempfile::tempdir().unwrap();
    let error = objimport::import(&neutral, empty.path(), &ImportOptions::default()).unwrap_err();
    assert!(matches!(error, ImportError::NoTargets { .. }), "{error}");
}

#[test]
fn missing_shapes_and_skipped_files_are_reported() {
    let (dir, _, _) = shape_set();
    // Everything in one folder, as sculpting tools often export: the neutral beside its targets.
    let folder = dir.path();
    std::fs::write(folder.join("notes.txt"), "not a mesh").unwrap();
    write_target(folder, "jawOpen.obj", &[(4, [0.0, -0.5, 0.0])], "");
    write_target(folder, "jaw_open.obj", &[(4, [0.0, -0.5, 0.0])], "");
    write_target(folder, "PupilDilate_L.obj", &[(1, [0.0, 0.0, 0.1])], "");
    write_target(folder, "mouthClose.obj", &[], "");
    let neutral = folder.join("neutral.obj");
    let (avatar, report) = import(&neutral, folder, ImportOptions::default());
    assert_eq!(
        avatar.meshes[0].target_names,
        vec!["jawOpen", "mouthClose", "PupilDilate_L"]
    );
    let want_missing: Vec<Channel> = Channel::ALL
        .into_iter()
        .filter(|c| !matches!(c, Channel::JawOpen | Channel::MouthClose))
        .collect();
    assert_eq!(report.missing, want_missing);
    let skipped: Vec<(&str, &str)> = report
        .skipped
        .iter()
        .map(|s| (s.file.as_str(), s.reason.as_str()))
        .collect();
    assert_eq!(
        skipped,
        vec![
            ("jaw_open.obj", "the same shape as jawOpen.obj"),
            ("neutral.obj", "the neutral mesh"),
            ("notes.txt", "not an .obj file"),
        ]
    );
    let text = report.to_string();
    assert!(
        text.contains("missing ARKit shapes (50): eyeBlinkLeft,"),
        "{text}"
    );
    assert!(
        text.contains("targets that move no vertex: mouthClose"),
        "{text}"
    );
    assert!(text.contains("kept by file name: PupilDilate_L"), "{text}");
}

#[test]
fn the_command_writes_the_glb_and_prints_the_report() {
    let (dir, neutral, targets) = shape_set();
    write_target(&targets, "browInnerUp_L.obj", &[(6, [0.0, 0.5, 0.0])], "");
    write_target(&targets, "browInnerUp_R.obj", &[(8, [0.0, 0.5, 0.0])], "");
    let out = dir.path().join("out").join("avatar.glb");
    let output = facewire(&[
        "import-obj",
        "--neutral",
        neutral.to_str().unwrap(),
        "--targets",
        targets.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--combine-halves",
        "--name-dialect",
        "pascal",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("1 targets: 1 ARKit shapes"), "{stdout}");
    assert!(stdout.contains("missing ARKit shapes (51)"), "{stdout}");
    let avatar = avatar::load(&out).unwrap();
    assert_eq!(avatar.meshes[0].target_names, vec!["BrowInnerUp"]);

    std::fs::write(targets.join("jawOpen.obj"), obj_text(&GRID[..4], "")).unwrap();
    let output = facewire(&[
        "import-obj",
        "--neutral",
        neutral.to_str().unwrap(),
        "--targets",
        targets.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("jawOpen.obj has 4 vertices but the neutral mesh"),
        "{stderr}"
    );
    // The earlier avatar is still there, whole.
    assert!(avatar::load(&out).is_ok());
}

// ---------------------------------------------------------------------------------------------
// The ICT-FaceKit face
// ---------------------------------------------------------------------------------------------

/// The ICT files the tests extract: the neutral, its material library and a few targets
/// (halves, an extra).
const ICT_FILES: [&str; 7] = [
    "generic_neutral_mesh.obj",
    "ICTFaceModelMaterial.mtl",
    "jawOpen.obj",
    "eyeBlink_L.obj",
    "browInnerUp_L.obj",
    "browInnerUp_R.obj",
    "cheekRaiser_L.obj",
];

/// A chin vertex on the midline that jawOpen moves about 4 cm.
const ICT_CHIN: usize = 964;
/// The top of the head, which no expression moves.
const ICT_CROWN: usize = 10527;

/// Runs the built binary from the repository root with the built-in default configuration (an
/// empty configuration file), so the pictures do not depend on `config/facewire.toml`.
fn facewire(args: &[&str]) -> Output {
    let config = repo().join("target/objimport-tests/facewire.toml");
    if !config.is_file() {
        std::fs::create_dir_all(config.parent().unwrap()).unwrap();
        std::fs::write(&config, "# defaults\n").unwrap();
    }
    Command::new(facewire_bin())
        .current_dir(repo())
        .env("FACEWIRE_LOG", "warn")
        .arg("--config")
        .arg(&config)
        .args(args)
        .output()
        .unwrap()
}

/// The ICT material groups left out: the semi-transparent shadow and wetness layers over the
/// eyes, which an opaque material cannot show.
const ICT_OVERLAYS: &str = "M_EyeOcclusion,M_EyeBlend,M_LacrimalFluid";

/// The groups the README's command leaves out so that a camera sees the eyes: the overlays, the
/// scleras that hide the irises without their texture, and the eyelash cards.
pub const ICT_SKIP_FOR_EYES: &str =
    "M_EyeOcclusion,M_EyeBlend,M_LacrimalFluid,M_ScleraLeft,M_ScleraRight,M_EyeLashes";

/// The extracted subset of the ICT face (in `target/objimport-tests/ict/FaceXModel`) and the
/// GLB `facewire import-obj --combine-halves --skip-material ICT_OVERLAYS --skin
/// M_Face,M_BackHead` made of it, once per test run; `None` with a note when the fixtures are
/// absent.
fn ict() -> Option<&'static (PathBuf, PathBuf)> {
    static ICT: OnceLock<Option<(PathBuf, PathBuf)>> = OnceLock::new();
    ICT.get_or_init(|| {
        let archive = fixtures("the ICT-FaceKit import tests")?
            .join("faces/ict-facekit/ICT-FaceKit-FaceXModel.tar.xz");
        if !archive.is_file() {
            eprintln!(
                "note: {} is absent; skipping the ICT-FaceKit import tests",
                archive.display()
            );
            return None;
        }
        let out = repo().join("target/objimport-tests/ict");
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(&out).unwrap();
        let extracted = Command::new("tar")
            .arg("-xJf")
            .arg(&archive)
            .arg("-C")
            .arg(&out)
            .args(ICT_FILES.map(|f| format!("FaceXModel/{f}")))
            .output()
            .expect("run tar");
        assert!(
            extracted.status.success(),
            "tar -xJf {}: {}",
            archive.display(),
            String::from_utf8_lossy(&extracted.stderr)
        );
        let folder = out.join("FaceXModel");
        let glb = out.join("ict.glb");
        let imported = facewire(&[
            "import-obj",
            "--neutral",
            folder.join(ICT_FILES[0]).to_str().unwrap(),
            "--targets",
            folder.to_str().unwrap(),
            "--out",
            glb.to_str().unwrap(),
            "--combine-halves",
            "--skip-material",
            ICT_OVERLAYS,
            "--skin",
            "M_Face",
            "--skin",
            "M_BackHead",
        ]);
        let stdout = String::from_utf8_lossy(&imported.stdout);
        assert!(
            imported.status.success(),
            "import-obj failed: {stdout}\n{}",
            String::from_utf8_lossy(&imported.stderr)
        );
        eprintln!("{stdout}");
        assert!(stdout.contains("26719 vertices"), "{stdout}");
        assert!(
            stdout.contains("browInnerUp (browInnerUp_L.obj + browInnerUp_R.obj)"),
            "{stdout}"
        );
        assert!(
            stdout.contains("materials (9, from ICTFaceModelMaterial.mtl):"),
            "{stdout}"
        );
        assert!(
            stdout.contains("  M_EyeLashes: #000000, 2160 triangles"),
            "{stdout}"
        );
        assert!(
            stdout.contains("  M_Face: #DDB39B skin (--skin)"),
            "{stdout}"
        );
        assert!(
            stdout.contains(
                "materials left out (3): M_LacrimalFluid (--skip-material, 652 triangles), \
                 M_EyeBlend (--skip-material, 60 triangles), M_EyeOcclusion (--skip-material, \
                 512 triangles)"
            ),
            "{stdout}"
        );
        assert!(!stdout.contains("warnings"), "{stdout}");
        Some((folder, glb))
    })
    .as_ref()
}

/// The `index`-th `v` line of an OBJ file, read straight from its text.
fn obj_vertex(file: &Path, index: usize) -> Vec3 {
    let text = std::fs::read_to_string(file).unwrap();
    let line = text
        .lines()
        .filter(|l| l.starts_with("v "))
        .nth(index)
        .unwrap_or_else(|| panic!("{} has no vertex {index}", file.display()));
    let xyz: Vec<f64> = line[2..]
        .split_whitespace()
        .map(|t| t.parse().unwrap())
        .collect();
    Vec3::new(xyz[0] as f32, xyz[1] as f32, xyz[2] as f32)
}

/// The primitive drawn with the material called `name`.
fn primitive_of<'a>(avatar: &'a Avatar, name: &str) -> &'a Primitive {
    avatar.meshes[0]
        .primitives
        .iter()
        .find(|p| avatar.materials[p.material.unwrap()].name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no primitive with the material {name}"))
}

/// The index of the vertex of `prim` at `position` (the importer keeps OBJ positions exactly).
fn vertex_at(prim: &Primitive, position: Vec3) -> usize {
    prim.positions
        .iter()
        .position(|p| *p == position)
        .unwrap_or_else(|| panic!("no vertex at {position}"))
}

#[test]
fn ict_face_imports_with_its_shapes_and_positions() {
    let Some((folder, glb)) = ict() else {
        return;
    };
    let avatar = avatar::load(glb).unwrap();
    assert_eq!(
        avatar.meshes[0].target_names,
        vec!["eyeBlinkLeft", "jawOpen", "browInnerUp", "cheekRaiser_L"]
    );
    let neutral = folder.join(ICT_FILES[0]);
    let face = primitive_of(&avatar, "M_Face");
    let chin = vertex_at(face, obj_vertex(&neutral, ICT_CHIN));
    let jaw = &face.targets[target_index(&avatar, "jawOpen")];
    let want = obj_vertex(&folder.join("jawOpen.obj"), ICT_CHIN) - obj_vertex(&neutral, ICT_CHIN);
    assert!(want.length() > 3.0, "the chin drops by centimetres: {want}");
    assert_close(jaw.positions[chin], want, "jawOpen at the chin");
    let crown = obj_vertex(&neutral, ICT_CROWN);
    let mut crowns = 0;
    for prim in &avatar.meshes[0].primitives {
        if let Some(v) = prim.positions.iter().position(|p| *p == crown) {
            crowns += 1;
            for target in &prim.targets {
                assert_eq!(target.positions[v], Vec3::ZERO);
            }
        }
    }
    assert!(crowns >= 1, "the crown is drawn");
    let brow = &face.targets[target_index(&avatar, "browInnerUp")];
    let moved = |t: &facewire::avatar::MorphTarget| {
        t.positions.iter().filter(|d| **d != Vec3::ZERO).count()
    };
    assert!(
        moved(brow) > 1000,
        "browInnerUp moves {} vertices",
        moved(brow)
    );
}

#[test]
fn ict_face_keeps_its_materials() {
    let Some((_, glb)) = ict() else {
        return;
    };
    let avatar = avatar::load(glb).unwrap();
    let prims = &avatar.meshes[0].primitives;
    let names: Vec<&str> = prims
        .iter()
        .map(|p| {
            avatar.materials[p.material.unwrap()]
                .name
                .as_deref()
                .unwrap()
        })
        .collect();
    assert_eq!(
        names,
        [
            "M_Face",
            "M_BackHead",
            "M_GumsTongue",
            "M_Teeth",
            "M_ScleraLeft",
            "M_IrisLeft",
            "M_ScleraRight",
            "M_IrisRight",
            "M_EyeLashes"
        ],
        "one primitive per material group kept, in the OBJ's order"
    );
    let colour = |name: &str| {
        let prim = primitive_of(&avatar, name);
        let material = &avatar.materials[prim.material.unwrap()];
        assert!(material.double_sided, "{name}");
        material.base_color
    };
    let luminance = |c: [f32; 4]| 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
    // Kd 0 0 0: the eyelashes are black; Kd 0.2: the irises dark (linear 0.033).
    assert!(luminance(colour("M_EyeLashes")) < 0.01);
    assert!(luminance(colour("M_IrisLeft")) < 0.05);
    assert!(luminance(colour("M_Teeth")) > 0.5, "Kd 0.8: light teeth");
    // --skin: the face and the back of the head get the skin colour, not the MTL's grey.
    assert_eq!(colour("M_Face"), colour("M_BackHead"));
    let face = colour("M_Face");
    assert!(
        face[0] > face[1] && face[1] > face[2],
        "warm skin: {face:?}"
    );
    // Compacted: every primitive holds only its own vertices, so the whole is about the OBJ's
    // 26,719 (less the overlays, plus the seams two groups share).
    let total: usize = prims.iter().map(|p| p.positions.len()).sum();
    assert!((25_000..27_000).contains(&total), "{total} vertices in all");
    for prim in prims {
        let used = prim
            .indices
            .iter()
            .copied()
            .collect::<std::collections::BTreeSet<u32>>();
        assert_eq!(used.len(), prim.positions.len(), "no unused vertex");
        assert!(prim
            .targets
            .iter()
            .all(|t| t.positions.len() == prim.positions.len()));
    }
}

/// Pixels dark enough to be an eye (the background is green, the skin light).
fn dark_pixels(image: &RgbaImage) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for y in 0..image.height {
        for x in 0..image.width {
            let [r, g, b, _] = image.pixel(x, y);
            if r.max(g).max(b) < 70 {
                out.push((x, y));
            }
        }
    }
    out
}

#[test]
fn ict_face_eyes_read_open_and_closed() {
    let Some((folder, glb)) = ict() else {
        return;
    };
    // As the README imports the face: without textures the sclera shell hides the iris inside
    // it and the eyelash cards are black bands around the eye, so those go too; what shows in
    // the eye is the dark eyeball, and the lid closes over it.
    let dir = glb.parent().unwrap();
    let eyes = dir.join("ict_eyes.glb");
    let imported = facewire(&[
        "import-obj",
        "--neutral",
        folder.join(ICT_FILES[0]).to_str().unwrap(),
        "--targets",
        folder.to_str().unwrap(),
        "--out",
        eyes.to_str().unwrap(),
        "--combine-halves",
        "--skip-material",
        ICT_SKIP_FOR_EYES,
        "--skin",
        "M_Face,M_BackHead",
    ]);
    let stdout = String::from_utf8_lossy(&imported.stdout);
    assert!(
        imported.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&imported.stderr)
    );
    assert!(stdout.contains("materials (6, from"), "{stdout}");
    let shot = |weights: &str, name: &str| {
        let out = dir.join(name);
        let output = facewire(&[
            "snapshot",
            "--model",
            eyes.to_str().unwrap(),
            "--weights",
            weights,
            "--morph",
            "cpu",
            "--size",
            "384x384",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(
            output.status.success(),
            "snapshot failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        dark_pixels(&RgbaImage::load_png(&out).unwrap())
    };
    let open = shot("", "eyes_open.png");
    let wink = shot("eyeBlinkLeft=1", "eyes_wink.png");
    eprintln!(
        "dark pixels: {} with both eyes open, {} with the left one closed",
        open.len(),
        wink.len()
    );
    assert!(open.len() > 100, "the open eyes are dark: {}", open.len());
    let centre = 192.0;
    let side = |pixels: &[(u32, u32)], right: bool| {
        pixels
            .iter()
            .filter(|p| (p.0 as f32 > centre) == right)
            .count()
    };
    // Both eyes about the same; the avatar's left eye is on the picture's right.
    let (open_l, open_r) = (side(&open, false), side(&open, true));
    assert!(
        open_l.min(open_r) * 3 > open_l.max(open_r) * 2,
        "{open_l} {open_r}"
    );
    assert!(
        side(&wink, true) * 5 < open_r,
        "the closed eye keeps {} of {open_r} dark pixels",
        side(&wink, true)
    );
    assert!(
        side(&wink, false) * 4 > open_l * 3,
        "the open eye keeps {} of {open_l}",
        side(&wink, false)
    );
}

#[test]
fn ict_face_opens_its_jaw_in_a_snapshot() {
    let Some((_, glb)) = ict() else {
        return;
    };
    let dir = glb.parent().unwrap();
    let shot = |weights: &str, name: &str| {
        let out = dir.join(name);
        let output = facewire(&[
            "snapshot",
            "--model",
            glb.to_str().unwrap(),
            "--weights",
            weights,
            "--morph",
            "cpu",
            "--size",
            "256x256",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(
            output.status.success(),
            "snapshot failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        RgbaImage::load_png(&out).unwrap()
    };
    let neutral = shot("", "neutral.png");
    let open = shot("jawOpen=1", "jaw_open.png");
    // The rows the head covers (the corner pixel is background).
    let background = neutral.pixel(0, 0);
    let rows: Vec<u32> = (0..neutral.height)
        .filter(|&y| (0..neutral.width).any(|x| neutral.pixel(x, y) != background))
        .collect();
    let (top, bottom) = (rows[0], rows[rows.len() - 1]);
    let height = (bottom - top) as f32;
    let changed = changed_pixels(&neutral, &open, 8);
    assert!(
        changed.len() > 1000,
        "only {} pixels changed",
        changed.len()
    );
    let depth = |y: u32| (y as f32 - top as f32) / height;
    let first = changed.iter().map(|p| p.1).min().unwrap_or(0);
    let mean_y = changed.iter().map(|p| depth(p.1)).sum::<f32>() / changed.len() as f32;
    let mean_x = changed.iter().map(|p| p.0 as f32).sum::<f32>() / changed.len() as f32;
    eprintln!(
        "jawOpen changes {} pixels from row {first}; the head spans rows {top}-{bottom}; mean depth {mean_y:.2}",
        changed.len()
    );
    // The head spans crown to shoulders; the mouth and chin sit in the middle of that span.
    assert!(
        depth(first) > 0.2,
        "the top of the head changed (row {first}, head rows {top}-{bottom})"
    );
    assert!(
        (0.45..0.8).contains(&mean_y),
        "changes centred at depth {mean_y}"
    );
    let centre = neutral.width as f32 / 2.0;
    assert!(
        (mean_x - centre).abs() < 16.0,
        "changes centred at x={mean_x}"
    );
}

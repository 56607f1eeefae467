//! The default head: regeneration matches `models/`, sanity of its targets.

use std::collections::HashMap;
use std::sync::OnceLock;

use facewire::arkit::Channel;
use facewire::headgen::{generate, DEFAULT_HEAD};

use crate::support;

/// One generated head, shared by the tests (generation takes a moment in debug builds).
fn glb() -> &'static [u8] {
    static GLB: OnceLock<Vec<u8>> = OnceLock::new();
    GLB.get_or_init(generate)
}

type V3 = [f32; 3];

/// One primitive read back through the `gltf` crate.
struct Prim {
    positions: Vec<V3>,
    uvs: Vec<[f32; 2]>,
    /// Per target: (position deltas, normal deltas).
    targets: Vec<(Vec<V3>, Vec<V3>)>,
}

/// The face mesh's primitives and its target names.
fn face() -> &'static (Vec<Prim>, Vec<String>) {
    static FACE: OnceLock<(Vec<Prim>, Vec<String>)> = OnceLock::new();
    FACE.get_or_init(|| {
        let (doc, buffers, _) = gltf::import_slice(glb()).expect("the head imports");
        let mesh = doc
            .meshes()
            .find(|m| m.name() == Some("Face"))
            .expect("a Face mesh");
        let extras: serde_json::Value =
            serde_json::from_str(mesh.extras().as_ref().expect("mesh extras").get()).unwrap();
        let names = extras["targetNames"]
            .as_array()
            .expect("targetNames")
            .iter()
            .map(|n| n.as_str().unwrap_or_default().to_string())
            .collect();
        let prims = mesh
            .primitives()
            .map(|p| {
                let r = p.reader(|b| Some(&buffers[b.index()]));
                Prim {
                    positions: r.read_positions().unwrap().collect(),
                    uvs: r.read_tex_coords(0).unwrap().into_f32().collect(),
                    targets: r
                        .read_morph_targets()
                        .map(|(pos, nor, _)| {
                            (
                                pos.expect("position deltas").collect(),
                                nor.expect("normal deltas").collect(),
                            )
                        })
                        .collect(),
                }
            })
            .collect();
        (prims, names)
    })
}

fn len(v: V3) -> f32 {
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

fn target(ch: Channel) -> usize {
    ch.index()
}

#[test]
fn generation_is_deterministic() {
    assert!(generate() == glb(), "two generate() calls differ");
}

#[test]
fn committed_head_matches_the_generator() {
    let path = support::repo().join(DEFAULT_HEAD);
    if std::env::var_os("UPDATE_HEAD").is_some_and(|v| v == "1") {
        facewire::fsutil::write_atomic(&path, glb()).expect("write the head");
        return;
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == glb(),
        "{} is out of date with the generator; regenerate it with `cargo run -- gen-head` \
         (or UPDATE_HEAD=1 cargo test --test tests headgen::)",
        path.display()
    );
}

#[test]
fn head_is_a_valid_small_glb() {
    assert!(glb().len() < 3_500_000, "GLB is {} bytes", glb().len());
    let gltf = gltf::Gltf::from_slice(glb()).expect("the GLB parses and validates");
    assert!(gltf.materials().count() >= 2);
    let (_, _, images) = gltf::import_slice(glb()).expect("the GLB imports");
    assert_eq!(images.len(), 1);
    assert_eq!((images[0].width, images[0].height), (1024, 1024));
}

#[test]
fn node_hierarchy_has_a_head_and_two_eyes() {
    let gltf = gltf::Gltf::from_slice(glb()).unwrap();
    let scene = gltf.default_scene().expect("a default scene");
    let roots: Vec<_> = scene.nodes().collect();
    assert_eq!(roots.len(), 1);
    let head = &roots[0];
    assert_eq!(head.name(), Some("Head"));
    assert!(head.mesh().is_some());
    let children: Vec<_> = head.children().collect();
    let eye = |name: &str| {
        let n = children
            .iter()
            .find(|c| c.name() == Some(name))
            .expect(name);
        assert!(n.mesh().is_some(), "{name} has an eyeball");
        n.transform().decomposed().0
    };
    let (left, right) = (eye("LeftEye"), eye("RightEye"));
    assert!(left[0] > 0.01 && right[0] < -0.01, "LeftEye sits at +X");
    assert!((left[0] + right[0]).abs() < 1e-6 && left[1] == right[1]);
    assert!(left[2] > 0.05, "the eyes are in the face, towards +Z");
}

#[test]
fn all_52_targets_are_named_canonically_in_order() {
    let (prims, names) = face();
    let expected: Vec<&str> = Channel::ALL.iter().map(|c| c.name()).collect();
    assert_eq!(names, &expected);
    for p in prims {
        assert_eq!(p.targets.len(), 52);
    }
}

#[test]
fn every_target_moves_vertices_and_normals() {
    let (prims, _) = face();
    for ch in Channel::ALL {
        let t = target(ch);
        let moved = prims
            .iter()
            .flat_map(|p| &p.targets[t].0)
            .filter(|d| len(**d) > 5e-4)
            .count();
        let turned = prims
            .iter()
            .flat_map(|p| &p.targets[t].1)
            .filter(|d| len(**d) > 1e-3)
            .count();
        assert!(moved > 0, "{ch} moves nothing by half a millimetre");
        assert!(turned > 0, "{ch} has no normal deltas");
    }
}

#[test]
fn left_and_right_targets_mirror_each_other() {
    let (prims, _) = face();
    for p in prims {
        // Vertices are paired by position and texture row (lips meet at neutral, so the
        // upper and lower lip copies share positions but not texture coordinates).
        let key = |pos: V3, v: f32| {
            (
                (pos[0] * 1e5).round() as i64,
                (pos[1] * 1e5).round() as i64,
                (pos[2] * 1e5).round() as i64,
                (v * 1e4).round() as i64,
            )
        };
        let mut lookup: HashMap<_, Vec<usize>> = HashMap::new();
        for (i, (pos, uv)) in p.positions.iter().zip(&p.uvs).enumerate() {
            lookup.entry(key(*pos, uv[1])).or_default().push(i);
        }
        let partner = |i: usize| {
            let pos = p.positions[i];
            lookup
                .get(&key([-pos[0], pos[1], pos[2]], p.uvs[i][1]))
                .and_then(|c| c.first().copied())
        };
        for ch in Channel::ALL {
            let other = ch.mirror();
            if other == ch {
                continue;
            }
            let (a, b) = (&p.targets[target(ch)], &p.targets[target(other)]);
            for i in 0..p.positions.len() {
                let Some(m) = partner(i) else { continue };
                let (da, db) = (a.0[i], b.0[m]);
                let err = len([da[0] + db[0], da[1] - db[1], da[2] - db[2]]);
                assert!(
                    err < 1e-5,
                    "{ch} vs {other} at vertex {i}: {da:?} vs {db:?}"
                );
            }
        }
    }
}

#[test]
fn jaw_open_drops_the_chin() {
    let (prims, _) = face();
    let skin = &prims[0];
    // The chin: the lowest centre-line skin vertex well in front of the neck.
    let chin = (0..skin.positions.len())
        .filter(|&i| skin.positions[i][0].abs() < 1e-4 && skin.positions[i][2] > 0.06)
        .min_by(|&a, &b| skin.positions[a][1].total_cmp(&skin.positions[b][1]))
        .expect("a chin vertex");
    let d = skin.targets[target(Channel::JawOpen)].0[chin];
    assert!(d[1] < -0.008, "jawOpen moves the chin by {d:?}");
}

#[test]
fn eye_blink_left_moves_only_the_left_side_and_closes_the_lid() {
    let (prims, _) = face();
    let mut biggest_drop = 0.0f32;
    for p in prims {
        for (pos, d) in p
            .positions
            .iter()
            .zip(&p.targets[target(Channel::EyeBlinkLeft)].0)
        {
            if len(*d) > 0.0 {
                assert!(
                    pos[0] > 0.0,
                    "eyeBlinkLeft moves a vertex at x = {}",
                    pos[0]
                );
                biggest_drop = biggest_drop.max(-d[1]);
            }
        }
    }
    assert!(
        biggest_drop > 0.01,
        "the upper lid only drops {biggest_drop} m"
    );
}

#[test]
fn neutral_mouth_is_closed_and_jaw_open_parts_the_lips() {
    let (prims, _) = face();
    let skin = &prims[0];
    let jaw = &skin.targets[target(Channel::JawOpen)].0;
    let centre: Vec<usize> = (0..skin.positions.len())
        .filter(|&i| skin.positions[i][0].abs() < 0.003 && skin.positions[i][2] > 0.05)
        .collect();
    let mut pairs = 0;
    for &a in &centre {
        for &b in &centre {
            let (pa, pb) = (skin.positions[a], skin.positions[b]);
            let gap = len([pa[0] - pb[0], pa[1] - pb[1], pa[2] - pb[2]]);
            if a != b && gap < 5e-4 && jaw[b][1] - jaw[a][1] < -0.005 {
                pairs += 1;
            }
        }
    }
    assert!(
        pairs > 0,
        "no upper/lower lip vertices meet at neutral and part with jawOpen"
    );
}

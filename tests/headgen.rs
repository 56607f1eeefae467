//! The default head: regeneration matches `models/`, sanity of its targets.

use std::collections::HashMap;
use std::sync::OnceLock;

use facewire::arkit::Channel;
use facewire::headgen::{generate, look, DEFAULT_HEAD};

use crate::support;

/// One generated head, shared by the tests (generation takes a moment in debug builds).
fn glb() -> &'static [u8] {
    static GLB: OnceLock<Vec<u8>> = OnceLock::new();
    GLB.get_or_init(generate)
}

type V3 = [f32; 3];

/// A mesh's morph target names, from its `extras.targetNames`.
fn target_names(mesh: &gltf::Mesh) -> Vec<String> {
    let extras: serde_json::Value =
        serde_json::from_str(mesh.extras().as_ref().expect("mesh extras").get()).unwrap();
    extras["targetNames"]
        .as_array()
        .expect("targetNames")
        .iter()
        .map(|n| n.as_str().unwrap_or_default().to_string())
        .collect()
}

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
        let names = target_names(&mesh);
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
    // Three levels of detail, the finest with its normal deltas; the binary embeds the file.
    assert!(glb().len() < 4_500_000, "GLB is {} bytes", glb().len());
    let gltf = gltf::Gltf::from_slice(glb()).expect("the GLB parses and validates");
    assert!(gltf.materials().count() >= 2);
    let (_, _, images) = gltf::import_slice(glb()).expect("the GLB imports");
    // The colour atlas, then the two wrinkle textures.
    assert_eq!(images.len(), 3);
    assert_eq!((images[0].width, images[0].height), (1024, 1024));
    for image in &images[1..] {
        assert_eq!((image.width, image.height), (512, 512));
    }
    // Every mesh carries normals and texture coordinates; the whole head at its finest level
    // (each eyeball counted once per eye node) has 10,000 to 30,000 vertices, and each coarser
    // level of the face fewer than the one before.
    let mut vertices = 0;
    let mut levels = Vec::new();
    for node in gltf.nodes() {
        let mut count = 0;
        for p in node.mesh().iter().flat_map(|m| m.primitives()) {
            assert!(p.get(&gltf::Semantic::Normals).is_some());
            assert!(p.get(&gltf::Semantic::TexCoords(0)).is_some());
            count += p.get(&gltf::Semantic::Positions).map_or(0, |a| a.count());
        }
        let name = node.name().unwrap_or_default();
        if name.starts_with("Face") {
            levels.push((name.to_string(), count));
        }
        if !name.starts_with("Face_LOD") {
            vertices += count;
        }
    }
    assert!((10_000..=30_000).contains(&vertices), "{vertices} vertices");
    let names: Vec<&str> = levels.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["Face", "Face_LOD1", "Face_LOD2"]);
    assert!(levels.windows(2).all(|w| w[1].1 < w[0].1), "{levels:?}");
}

#[test]
fn node_hierarchy_has_a_head_and_two_eyes() {
    let gltf = gltf::Gltf::from_slice(glb()).unwrap();
    let scene = gltf.default_scene().expect("a default scene");
    let head = scene
        .nodes()
        .find(|n| n.name() == Some("Head"))
        .expect("a Head root");
    // The mapping turns `Head`; the face is its child, so levels of detail can replace it.
    assert!(head.mesh().is_none(), "the Head pivot carries no mesh");
    let children: Vec<_> = head.children().collect();
    let face = children
        .iter()
        .find(|c| c.name() == Some("Face"))
        .expect("a Face child of Head");
    assert_eq!(face.mesh().and_then(|m| m.name()), Some("Face"));
    assert_eq!(face.transform().decomposed().0, [0.0; 3]);
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
fn the_52_targets_come_first_in_canonical_order_then_the_look_targets_then_correctives() {
    let (prims, names) = face();
    let expected: Vec<&str> = Channel::ALL
        .iter()
        .map(|c| c.name())
        .chain(look::target_names())
        .collect();
    let looks_end = 52 + 2 * look::LOOK_SLIDERS.len();
    assert_eq!(&names[..looks_end], &expected[..]);
    for p in prims {
        assert_eq!(p.targets.len(), names.len());
    }
    // Then the look correctives: `<look target>*<expression>`, grouped by look target in the
    // look targets' order, expressions in canonical order within a group, each pair once.
    let rest = &names[looks_end..];
    assert!(!rest.is_empty(), "no corrective targets");
    let looks = rest.iter().take_while(|n| n.starts_with("look_")).count();
    let (look_correctives, pairs) = rest.split_at(looks);
    let mut last = (0, 0);
    for name in look_correctives {
        let (look, expr) = name.split_once('*').expect("a corrective name");
        let l = names[52..looks_end]
            .iter()
            .position(|n| n == look)
            .unwrap_or_else(|| panic!("{name}: no look target {look}"));
        let e = Channel::parse(expr)
            .filter(|c| c.name() == expr)
            .unwrap_or_else(|| panic!("{name}: no expression {expr}"))
            .index();
        assert!((l, e) > last || last == (0, 0), "{name} out of order");
        last = (l, e);
    }
    // Last the correctives of two expressions: `<expression>*<expression>`, the two channels
    // in canonical order, each pair once.
    assert!(!pairs.is_empty(), "no corrective of two expressions");
    let mut seen = std::collections::HashSet::new();
    for name in pairs {
        let (a, b) = name.split_once('*').expect("a corrective name");
        let channel = |n: &str| {
            Channel::parse(n)
                .filter(|c| c.name() == n)
                .unwrap_or_else(|| panic!("{name}: no expression {n}"))
        };
        assert!(channel(a) < channel(b), "{name}: channels out of order");
        assert!(seen.insert(name), "{name} twice");
    }
    // Each one resolves at runtime to its two inputs, in every level of detail of the face.
    let avatar = facewire::avatar::load_slice(glb(), "generated head").unwrap();
    let resolved = facewire::avatar::correctives::Correctives::resolve(&avatar);
    assert_eq!(
        resolved.list.len(),
        rest.len() * facewire::headgen::SHIPPED_LEVELS
    );
    // The pairs that must have one.
    for want in [
        "look_eye_size_up*eyeBlinkLeft",
        "look_eye_size_down*eyeBlinkRight",
        "look_eye_tilt_up*eyeBlinkLeft",
        "look_eye_size_up*eyeWideLeft",
        "look_mouth_width_up*mouthSmileLeft",
        "look_lip_fullness_up*jawOpen",
        "jawOpen*mouthSmileLeft",
        "jawOpen*mouthSmileRight",
    ] {
        assert!(rest.iter().any(|n| n == want), "no corrective {want}");
    }
}

/// How many vertices target `t` moves by more than half a millimetre, and how many normals it
/// turns by more than 0.001, over all of `prims`.
fn moved_and_turned(prims: &[Prim], t: usize) -> (usize, usize) {
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
    (moved, turned)
}

#[test]
fn every_target_moves_vertices_and_normals() {
    let (prims, _) = face();
    for ch in Channel::ALL {
        let (moved, turned) = moved_and_turned(prims, target(ch));
        assert!(moved > 0, "{ch} moves nothing by half a millimetre");
        assert!(turned > 0, "{ch} has no normal deltas");
    }
}

/// Each vertex's mirror image across x = 0 in `p`, if it has one. Vertices are paired by
/// position and texture row (the lips meet at neutral, so the upper and lower lip copies share
/// positions but not texture coordinates).
fn mirror_partners(p: &Prim) -> Vec<Option<usize>> {
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
    p.positions
        .iter()
        .zip(&p.uvs)
        .map(|(pos, uv)| {
            lookup
                .get(&key([-pos[0], pos[1], pos[2]], uv[1]))
                .and_then(|c| c.first().copied())
        })
        .collect()
}

#[test]
fn left_and_right_targets_mirror_each_other() {
    let (prims, _) = face();
    for p in prims {
        let partners = mirror_partners(p);
        for ch in Channel::ALL {
            let other = ch.mirror();
            if other == ch {
                continue;
            }
            let (a, b) = (&p.targets[target(ch)], &p.targets[target(other)]);
            for (i, partner) in partners.iter().enumerate() {
                let Some(m) = *partner else { continue };
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

/// An axis-aligned box in the model's frame (the `Face` positions plus the head pivot).
#[derive(Debug, Clone, Copy)]
struct Region {
    name: &'static str,
    min: V3,
    max: V3,
}

impl Region {
    fn contains(&self, p: V3) -> bool {
        (0..3).all(|k| p[k] >= self.min[k] && p[k] <= self.max[k])
    }

    /// The same box reflected to the avatar's right (−X).
    fn mirrored(self, name: &'static str) -> Region {
        Region {
            name,
            min: [-self.max[0], self.min[1], self.min[2]],
            max: [-self.min[0], self.max[1], self.max[2]],
        }
    }
}

/// Named regions of the face, built around the generator's landmarks: the left eyeball's
/// centre and the middle of the mouth line. Left regions lie at +X (the avatar's left).
struct Regions {
    eye: [Region; 2],
    brow: [Region; 2],
    inner_brows: Region,
    cheek: [Region; 2],
    nose: Region,
    mouth: Region,
    jaw: Region,
}

fn regions() -> Regions {
    use facewire::headgen::face::{base_shape, eye_center, MOUTH_PHI};
    let e = eye_center();
    let m = base_shape(0.0, MOUTH_PHI);
    // The eye and its lids, from the lower lid's fall-off to the upper lid's crease.
    let eye = Region {
        name: "left eye",
        min: [e.x - 0.034, e.y - 0.032, e.z - 0.03],
        max: [e.x + 0.034, e.y + 0.048, e.z + 0.03],
    };
    // The brow above the eye, from the centre line to past the eye's outer corner.
    let brow = Region {
        name: "left brow",
        min: [-0.0005, e.y + 0.004, e.z - 0.035],
        max: [e.x + 0.045, e.y + 0.07, e.z + 0.04],
    };
    let inner_brows = Region {
        name: "inner brows",
        min: [-(e.x + 0.012), e.y + 0.004, e.z - 0.02],
        max: [e.x + 0.012, e.y + 0.07, e.z + 0.04],
    };
    // The cheek: beside the nose and the mouth, under the eye.
    let cheek = Region {
        name: "left cheek",
        min: [0.006, m.y - 0.03, m.z - 0.07],
        max: [0.09, e.y - 0.004, m.z + 0.02],
    };
    let nose = Region {
        name: "nose",
        min: [-0.024, m.y + 0.002, m.z - 0.03],
        max: [0.024, e.y + 0.02, m.z + 0.03],
    };
    // The lips, the skin around them and everything inside the mouth.
    let mouth = Region {
        name: "mouth",
        min: [-0.042, m.y - 0.03, m.z - 0.045],
        max: [0.042, m.y + 0.022, m.z + 0.04],
    };
    // The jaw, chin, lower lip, lower teeth and tongue: the lower head below the mouth line,
    // rising a little towards the hinge in front of the ears, where the jaw's blend reaches
    // up the sides of the face (still below the eyes).
    let jaw = Region {
        name: "jaw",
        min: [-0.085, 0.03, m.z - 0.13],
        max: [0.085, m.y + 0.021, m.z + 0.05],
    };
    assert!(jaw.max[1] < e.y - 0.025, "the jaw region reaches the eyes");
    Regions {
        eye: [eye, eye.mirrored("right eye")],
        brow: [brow, brow.mirrored("right brow")],
        inner_brows,
        cheek: [cheek, cheek.mirrored("right cheek")],
        nose,
        mouth,
        jaw,
    }
}

/// The regions a channel may move, by its name.
fn allowed(ch: Channel, r: &Regions) -> Vec<Region> {
    use Channel::*;
    let name = ch.name();
    let side = usize::from(name.ends_with("Right"));
    match ch {
        BrowInnerUp => vec![r.inner_brows],
        CheekPuff => vec![r.cheek[0], r.cheek[1]],
        CheekSquintLeft | CheekSquintRight => vec![r.cheek[side], r.eye[side]],
        NoseSneerLeft | NoseSneerRight => vec![r.nose, r.cheek[side], r.mouth],
        TongueOut => vec![r.mouth, r.jaw],
        _ if name.starts_with("eye") => vec![r.eye[side]],
        _ if name.starts_with("brow") => vec![r.brow[side]],
        _ if name.starts_with("jaw") => vec![r.jaw, r.mouth],
        _ if name.starts_with("mouth") => vec![r.mouth, r.jaw, r.cheek[0], r.cheek[1]],
        _ => Vec::new(),
    }
}

/// Model-frame positions of a `Face` primitive.
fn model_positions(p: &Prim) -> Vec<V3> {
    let pivot = facewire::headgen::HEAD_PIVOT;
    p.positions
        .iter()
        .map(|q| [q[0] + pivot.x, q[1] + pivot.y, q[2] + pivot.z])
        .collect()
}

/// Vertices that a target moves by more than 0.1 mm, with their model-frame positions.
fn moved(ch: Channel) -> Vec<(V3, V3)> {
    let (prims, _) = face();
    prims
        .iter()
        .flat_map(|p| {
            model_positions(p)
                .into_iter()
                .zip(p.targets[target(ch)].0.iter().copied())
                .filter(|(_, d)| len(*d) > 1e-4)
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn every_target_stays_inside_the_regions_its_name_allows() {
    let r = regions();
    for ch in Channel::ALL {
        let allowed = allowed(ch, &r);
        assert!(!allowed.is_empty(), "{ch} has no region");
        let moved = moved(ch);
        assert!(!moved.is_empty(), "{ch} is empty");
        for (p, d) in moved {
            assert!(
                allowed.iter().any(|a| a.contains(p)),
                "{ch} moves a vertex at {p:?} by {d:?}, outside {:?}",
                allowed.iter().map(|a| a.name).collect::<Vec<_>>()
            );
        }
    }
}

#[test]
fn sided_targets_move_only_their_side_and_the_right_way() {
    use Channel::*;
    for ch in Channel::ALL {
        let name = ch.name();
        let moved = moved(ch);
        match ch {
            // These move the jaw or the whole mouth towards the avatar's left or right.
            JawLeft | JawRight | MouthLeft | MouthRight => {
                let sign = if name.ends_with("Left") { 1.0 } else { -1.0 };
                let sum: f32 = moved.iter().map(|(_, d)| d[0]).sum();
                assert!(sum * sign > 0.0, "{ch} moves the wrong way ({sum})");
            }
            _ if name.ends_with("Left") => {
                for (p, d) in &moved {
                    assert!(p[0] >= -5e-4, "{ch} moves {p:?} by {d:?} on the right");
                }
            }
            _ if name.ends_with("Right") => {
                for (p, d) in &moved {
                    assert!(p[0] <= 5e-4, "{ch} moves {p:?} by {d:?} on the left");
                }
            }
            _ => {}
        }
    }
}

#[test]
fn symmetric_targets_move_both_sides_alike() {
    use Channel::*;
    for ch in [
        JawOpen,
        MouthClose,
        MouthFunnel,
        MouthPucker,
        CheekPuff,
        BrowInnerUp,
    ] {
        let moved = moved(ch);
        let left: f32 = moved
            .iter()
            .filter(|(p, _)| p[0] > 0.0)
            .map(|(_, d)| len(*d))
            .sum();
        let right: f32 = moved
            .iter()
            .filter(|(p, _)| p[0] < 0.0)
            .map(|(_, d)| len(*d))
            .sum();
        assert!(
            (left - right).abs() <= 0.01 * left.max(right),
            "{ch}: left {left} vs right {right}"
        );
    }
}

#[test]
fn tongue_out_parts_the_lips_and_pushes_the_tongue_forwards() {
    let (prims, _) = face();
    let skin = &prims[0];
    let t = target(Channel::TongueOut);
    // The lower lip drops with a slight jaw opening, so the tongue passes between the lips.
    let lip_drop = (0..skin.positions.len())
        .filter(|&i| skin.positions[i][0].abs() < 1e-4)
        .map(|i| -skin.targets[t].0[i][1])
        .fold(0.0f32, f32::max);
    assert!(
        lip_drop > 0.004,
        "tongueOut drops the lower lip by {lip_drop}"
    );
    let forward = prims[1].targets[t]
        .0
        .iter()
        .map(|d| d[2])
        .fold(0.0f32, f32::max);
    assert!(forward > 0.015, "the tongue only moves {forward} forwards");
}

#[test]
fn head_neck_and_eyes_are_separate_nodes() {
    let gltf = gltf::Gltf::from_slice(glb()).unwrap();
    let scene = gltf.default_scene().expect("a default scene");
    let roots: Vec<_> = scene
        .nodes()
        .map(|n| n.name().map(str::to_string))
        .collect();
    assert!(roots.contains(&Some("Head".into())), "{roots:?}");
    assert!(roots.contains(&Some("Neck".into())), "{roots:?}");
    let neck = scene.nodes().find(|n| n.name() == Some("Neck")).unwrap();
    let mesh = neck.mesh().expect("the neck has a mesh");
    assert!(mesh.primitives().all(|p| p.morph_targets().count() == 0));
    let (doc, buffers, _) = gltf::import_slice(glb()).unwrap();
    let mesh = doc.meshes().nth(mesh.index()).unwrap();
    let mut top = f32::MIN;
    let mut bottom = f32::MAX;
    for p in mesh.primitives() {
        let r = p.reader(|b| Some(&buffers[b.index()]));
        for q in r.read_positions().unwrap() {
            top = top.max(q[1]);
            bottom = bottom.min(q[1]);
        }
    }
    // The neck rises from its collar at y = 0 to above the head pivot, into the skull.
    assert!(bottom <= 0.0 && bottom > -0.01, "neck bottom {bottom}");
    assert!(
        top > facewire::headgen::HEAD_PIVOT.y + 0.015,
        "the neck's top ({top}) must reach into the head"
    );
}

/// Renders the default head at `size`² pixels, front view, with the given channel weights.
fn render(size: u32, weights: &[(Channel, f32)]) -> facewire::image::RgbaImage {
    render_posed(size, weights, None, [0.0, 0.7, 0.25, 1.0], None)
}

/// Renders the default head at `size`² pixels over `clear`, turned by `head` (the stream's head
/// rotation), with the given channel weights and `samples` MSAA samples (`None`: the default).
fn render_posed(
    size: u32,
    weights: &[(Channel, f32)],
    head: Option<glam::Quat>,
    clear: [f32; 4],
    samples: Option<u32>,
) -> facewire::image::RgbaImage {
    use facewire::app::Scene;
    use facewire::headgen::DEFAULT_HEAD_GLB;
    use facewire::render::headless::HeadlessContext;
    let avatar = facewire::avatar::load_slice(DEFAULT_HEAD_GLB, "default head").expect("loads");
    let ctx = match samples {
        Some(n) => HeadlessContext::with_samples(size, size, n),
        None => HeadlessContext::new(size, size),
    }
    .expect("headless context");
    let mut scene = Scene::new(ctx.gl(), avatar, facewire::config::MorphMode::Cpu).expect("scene");
    let mut frame = crate::support::frame(weights);
    frame.head = head;
    scene.set_frame(Some(&frame));
    let image = scene.draw_image(&ctx, clear, false);
    drop(scene);
    image
}

/// Pixels in the rectangle (fractions of the image) that pass `test`.
fn count(
    img: &facewire::image::RgbaImage,
    (x0, y0, x1, y1): (f32, f32, f32, f32),
    test: impl Fn([u8; 4]) -> bool,
) -> usize {
    let (w, h) = (img.width as f32, img.height as f32);
    let mut n = 0;
    for y in (y0 * h) as u32..(y1 * h) as u32 {
        for x in (x0 * w) as u32..(x1 * w) as u32 {
            if test(img.pixel(x, y)) {
                n += 1;
            }
        }
    }
    n
}

/// The irises are blue: clearly more blue than red.
fn iris_blue(p: [u8; 4]) -> bool {
    p[2] > 90 && p[2] as i32 > p[0] as i32 + 50 && p[2] as i32 > p[1] as i32 + 15
}

/// The mouth interior is dark.
fn dark(p: [u8; 4]) -> bool {
    (p[0] as u32 + p[1] as u32 + p[2] as u32) < 150
}

#[test]
fn rendered_blink_hides_the_left_iris_and_jaw_open_shows_the_mouth() {
    const SIZE: u32 = 256;
    // The avatar's left eye is on the viewer's right half of the front view.
    let viewer_right_eye = (0.5, 0.3, 0.75, 0.6);
    let viewer_left_eye = (0.25, 0.3, 0.5, 0.6);
    let mouth = (0.38, 0.55, 0.62, 0.8);
    let neutral = render(SIZE, &[]);
    let (nr, nl) = (
        count(&neutral, viewer_right_eye, iris_blue),
        count(&neutral, viewer_left_eye, iris_blue),
    );
    assert!(
        nr > 40 && nl > 40,
        "irises at neutral: {nl} left, {nr} right"
    );
    let blink = render(SIZE, &[(Channel::EyeBlinkLeft, 1.0)]);
    let (br, bl) = (
        count(&blink, viewer_right_eye, iris_blue),
        count(&blink, viewer_left_eye, iris_blue),
    );
    assert!(
        br * 20 < nr,
        "the avatar's left iris still shows {br} of {nr} pixels"
    );
    assert!(
        bl * 10 > nl * 9,
        "the avatar's right iris shrank from {nl} to {bl} pixels"
    );

    let dark_neutral = count(&neutral, mouth, dark);
    let open = render(SIZE, &[(Channel::JawOpen, 1.0)]);
    let dark_open = count(&open, mouth, dark);
    assert!(
        dark_open > dark_neutral + 100,
        "jawOpen shows {dark_open} dark mouth pixels (neutral {dark_neutral})"
    );
}

/// The head turned by `yaw` and `pitch` degrees, as the snapshot command's `--head` does: yaw
/// about +Y turns the face towards +X, pitch about +X nods it down.
fn head_turn(yaw: f32, pitch: f32) -> glam::Quat {
    glam::Quat::from_rotation_y(yaw.to_radians()) * glam::Quat::from_rotation_x(pitch.to_radians())
}

/// Background pixels that the background around the image cannot reach (4-connected flood fill
/// from the border): places where the head lets the background show through. `bg` must be a
/// colour the head never shows.
fn enclosed_background(img: &facewire::image::RgbaImage, bg: [u8; 4]) -> Vec<(u32, u32)> {
    let (w, h) = (img.width, img.height);
    let is_bg = |x: u32, y: u32| img.pixel(x, y)[..3] == bg[..3];
    let mut seen = vec![false; (w * h) as usize];
    let mut stack = Vec::new();
    for x in 0..w {
        stack.push((x, 0));
        stack.push((x, h - 1));
    }
    for y in 0..h {
        stack.push((0, y));
        stack.push((w - 1, y));
    }
    while let Some((x, y)) = stack.pop() {
        let i = (y * w + x) as usize;
        if seen[i] || !is_bg(x, y) {
            continue;
        }
        seen[i] = true;
        if x > 0 {
            stack.push((x - 1, y));
        }
        if x + 1 < w {
            stack.push((x + 1, y));
        }
        if y > 0 {
            stack.push((x, y - 1));
        }
        if y + 1 < h {
            stack.push((x, y + 1));
        }
    }
    let mut holes = Vec::new();
    for y in 0..h {
        for x in 0..w {
            if is_bg(x, y) && !seen[(y * w + x) as usize] {
                holes.push((x, y));
            }
        }
    }
    holes
}

#[test]
fn turned_head_never_lets_the_background_show_through() {
    // Pure magenta appears nowhere on the head, and without multisampling the background keeps
    // its exact colour, so any enclosed pixel of that colour is a hole in the surface.
    const SIZE: u32 = 240;
    let bg = [255, 0, 255, 255];
    let clear = [1.0, 0.0, 1.0, 1.0];
    use Channel::*;
    let expressions: [&[(Channel, f32)]; 8] = [
        &[],
        &[(EyeBlinkLeft, 1.0), (EyeBlinkRight, 1.0)],
        &[(JawOpen, 1.0)],
        &[(MouthPucker, 1.0), (JawOpen, 1.0)],
        &[
            (MouthSmileLeft, 1.0),
            (MouthSmileRight, 1.0),
            (JawOpen, 1.0),
        ],
        &[(MouthLeft, 1.0)],
        &[
            (EyeWideLeft, 1.0),
            (EyeWideRight, 1.0),
            (EyeLookInLeft, 1.0),
        ],
        &[(CheekPuff, 1.0), (MouthPucker, 1.0)],
    ];
    let views = [(35.0, 0.0), (-35.0, 0.0), (45.0, 20.0), (-45.0, -20.0)];
    let mut failures = Vec::new();
    for (e, weights) in expressions.iter().enumerate() {
        for &(yaw, pitch) in &views {
            let img = render_posed(SIZE, weights, Some(head_turn(yaw, pitch)), clear, Some(0));
            let holes = enclosed_background(&img, bg);
            if !holes.is_empty() {
                failures.push(format!(
                    "expression {e} at yaw {yaw}, pitch {pitch}: {} hole pixels, first at {:?}",
                    holes.len(),
                    holes[0]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn skin_is_a_closed_consistently_wound_surface_except_inside_the_slits() {
    use facewire::headgen::face::{build_skin, Slit};
    let skin = build_skin(0);
    // Seam vertices share a normal group with the column they duplicate: weld through it.
    let weld = |v: u32| skin.mesh.groups[v as usize];
    let inner = |v: u32| {
        matches!(
            skin.vertices[v as usize].slit,
            Slit::EyeInner { .. } | Slit::MouthInner { .. }
        )
    };
    // Directed edge counts: a closed, consistently wound surface uses every edge once in each
    // direction.
    let mut directed: HashMap<(u32, u32), usize> = HashMap::new();
    for t in skin.mesh.indices.chunks_exact(3) {
        for k in 0..3 {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            *directed.entry((weld(a), weld(b))).or_default() += 1;
        }
    }
    let mut border = 0;
    for (&(a, b), &n) in &directed {
        assert_eq!(
            n, 1,
            "edge {a}->{b} is used {n} times in the same direction"
        );
        if !directed.contains_key(&(b, a)) {
            // The only open border is the far edge of the lid margins and inner lips, which ends
            // inside the eyeball or in front of the mouth cavity.
            assert!(
                inner(a) && inner(b),
                "edge {a}->{b} ({:?} -> {:?}) is open",
                skin.vertices[a as usize],
                skin.vertices[b as usize]
            );
            border += 1;
        }
    }
    assert!(border > 0, "the slits' inner borders are missing");
}

#[test]
fn front_views_show_no_black_pixels_inside_the_skin() {
    // Nothing on the head is pure black, so a black pixel whose neighbours are all lit is a
    // shading failure or a crack showing something black behind the skin.
    const SIZE: u32 = 600;
    use Channel::*;
    let expressions: [&[(Channel, f32)]; 4] = [
        &[],
        &[(CheekPuff, 1.0)],
        &[(CheekPuff, 1.0), (MouthPucker, 1.0)],
        &[(MouthSmileLeft, 1.0), (MouthSmileRight, 1.0)],
    ];
    let black = |p: [u8; 4]| p[..3] == [0, 0, 0];
    let mut failures = Vec::new();
    for (e, weights) in expressions.iter().enumerate() {
        let img = render_posed(SIZE, weights, None, [0.0, 0.7, 0.25, 1.0], None);
        for y in 1..SIZE - 1 {
            for x in 1..SIZE - 1 {
                let around = [
                    img.pixel(x - 1, y),
                    img.pixel(x + 1, y),
                    img.pixel(x, y - 1),
                    img.pixel(x, y + 1),
                ];
                if black(img.pixel(x, y)) && around.iter().all(|&p| !dark(p)) {
                    failures.push(format!("expression {e}: black pixel at ({x}, {y})"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The skin's lip edge pairs (upper, lower): vertices that coincide at rest on the front of
/// the mouth line, told apart by jawOpen moving the lower one down.
fn lip_edge_pairs() -> Vec<(usize, usize)> {
    let (prims, _) = face();
    let skin = &prims[0];
    let pos = model_positions(skin);
    let jaw = &skin.targets[target(Channel::JawOpen)].0;
    let mut by_pos: HashMap<[u32; 3], Vec<usize>> = HashMap::new();
    for (i, p) in pos.iter().enumerate() {
        by_pos
            .entry([p[0].to_bits(), p[1].to_bits(), p[2].to_bits()])
            .or_default()
            .push(i);
    }
    let mouth_y = facewire::headgen::face::mouth_y();
    let mut pairs = Vec::new();
    for ids in by_pos.values() {
        if let [a, b] = ids[..] {
            // The lips' inner copies sit behind the edges; the eyelid slits are far above.
            let p = pos[a];
            let on_edge = (p[1] - mouth_y).abs() < 0.004 && p[2] > 0.07;
            if !on_edge || (jaw[a][1] - jaw[b][1]).abs() < 1e-3 {
                continue;
            }
            pairs.push(if jaw[a][1] < jaw[b][1] {
                (b, a)
            } else {
                (a, b)
            });
        }
    }
    pairs.sort();
    pairs
}

/// Skin positions with the given weights applied.
fn skin_posed(weights: &[(Channel, f32)]) -> Vec<V3> {
    let (prims, _) = face();
    let mut pos = model_positions(&prims[0]);
    for &(ch, w) in weights {
        for (p, d) in pos.iter_mut().zip(&prims[0].targets[target(ch)].0) {
            for k in 0..3 {
                p[k] += w * d[k];
            }
        }
    }
    pos
}

#[test]
fn mouth_close_closes_the_open_jaw_and_alone_tucks_the_lower_lip_behind_the_upper() {
    use Channel::*;
    let pairs = lip_edge_pairs();
    assert!(pairs.len() > 8, "only {} lip edge pairs", pairs.len());
    for w in [1.0, 0.5] {
        let pos = skin_posed(&[(JawOpen, w), (MouthClose, w)]);
        for &(up, lo) in &pairs {
            let gap = len([
                pos[up][0] - pos[lo][0],
                pos[up][1] - pos[lo][1],
                pos[up][2] - pos[lo][2],
            ]);
            assert!(
                gap < 0.001,
                "jawOpen = mouthClose = {w}: lips {gap} m apart"
            );
        }
    }
    // Alone, the lower lip's edge rises (linear blending keeps the lips' relative motion), but
    // it must stay behind the upper lip's skin at the height it reaches instead of arching out
    // in front of it. Compare on the centre line.
    let rest = skin_posed(&[]);
    let pos = skin_posed(&[(MouthClose, 1.0)]);
    let (up, lo) = *pairs
        .iter()
        .min_by(|a, b| rest[a.0][0].abs().total_cmp(&rest[b.0][0].abs()))
        .expect("a centre pair");
    let edge = pos[lo];
    let mouth_y = rest[up][1];
    // The upper lip's profile: centre-line skin above the mouth line, ordered by height.
    let mut profile: Vec<V3> = rest
        .iter()
        .zip(&pos)
        .filter(|(r, _)| r[0] == 0.0 && r[1] > mouth_y && r[1] < mouth_y + 0.03 && r[2] > 0.06)
        .map(|(_, p)| *p)
        .collect();
    profile.sort_by(|a, b| a[1].total_cmp(&b[1]));
    let at = profile
        .windows(2)
        .find(|w| w[0][1] <= edge[1] && edge[1] <= w[1][1])
        .map(|w| {
            let t = (edge[1] - w[0][1]) / (w[1][1] - w[0][1]);
            w[0][2] + t * (w[1][2] - w[0][2])
        })
        .expect("the upper lip spans the lower lip's height");
    assert!(
        edge[2] <= at + 0.0005,
        "the lower lip's edge sits {} mm in front of the upper lip",
        (edge[2] - at) * 1e3
    );
}

/// Index of a look target in the Face mesh: after the 52 ARKit targets, each slider's up
/// target then its down target.
fn look_target(slider: usize, up: bool) -> usize {
    52 + 2 * slider + usize::from(!up)
}

/// Every look target: (its name, its index).
fn look_targets() -> Vec<(&'static str, usize)> {
    look::LOOK_SLIDERS
        .iter()
        .enumerate()
        .flat_map(|(k, s)| {
            [
                (s.up, look_target(k, true)),
                (s.down, look_target(k, false)),
            ]
        })
        .collect()
}

/// The slider index of `name`.
fn slider(name: &str) -> usize {
    look::LOOK_SLIDERS
        .iter()
        .position(|s| s.name == name)
        .unwrap_or_else(|| panic!("no slider {name}"))
}

/// The Face mesh's weights for the given (target index, weight) pairs, with every corrective
/// target's weight set from its inputs as the runtime sets it.
fn with_correctives(weights: &[(usize, f32)]) -> Vec<f32> {
    use facewire::avatar::correctives::Correctives;
    static AVATAR: OnceLock<(facewire::avatar::Avatar, Correctives, usize)> = OnceLock::new();
    let (avatar, correctives, mesh) = AVATAR.get_or_init(|| {
        let avatar = facewire::avatar::load_slice(glb(), "generated head").expect("loads");
        let mesh = avatar
            .meshes
            .iter()
            .position(|m| m.name.as_deref() == Some("Face"))
            .expect("a Face mesh");
        let correctives = Correctives::resolve(&avatar);
        (avatar, correctives, mesh)
    });
    let mut pose = avatar.rest_pose();
    for &(t, w) in weights {
        pose.weights[*mesh][t] += w;
    }
    correctives.apply(&mut pose);
    std::mem::take(&mut pose.weights[*mesh])
}

/// Skin positions (model frame) with the given target weights applied, targets by index, and
/// the correctives those weights drive.
fn skin_weighted(weights: &[(usize, f32)]) -> Vec<V3> {
    let (prims, _) = face();
    let mut pos = model_positions(&prims[0]);
    let all = with_correctives(weights);
    for (t, &w) in all.iter().enumerate().filter(|(_, w)| **w != 0.0) {
        for (p, d) in pos.iter_mut().zip(&prims[0].targets[t].0) {
            for k in 0..3 {
                p[k] += w * d[k];
            }
        }
    }
    pos
}

fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

#[test]
fn look_sliders_are_listed_with_their_target_names() {
    let names: Vec<&str> = look::LOOK_SLIDERS.iter().map(|s| s.name).collect();
    for want in [
        "eye_size",
        "eye_spacing",
        "eye_tilt",
        "brow_height",
        "nose_length",
        "nose_width",
        "mouth_width",
        "lip_fullness",
        "jaw_width",
        "chin_length",
        "cheek_fullness",
        "face_width",
    ] {
        assert!(names.contains(&want), "{want} is missing from {names:?}");
    }
    for s in look::LOOK_SLIDERS {
        assert_eq!(s.up, format!("look_{}_up", s.name));
        assert_eq!(s.down, format!("look_{}_down", s.name));
    }
}

#[test]
fn every_look_target_moves_vertices_and_normals_and_its_ends_differ() {
    let (prims, _) = face();
    for (name, t) in look_targets() {
        let (moved, turned) = moved_and_turned(prims, t);
        assert!(moved > 0, "{name} moves nothing by half a millimetre");
        assert!(turned > 0, "{name} has no normal deltas");
    }
    for (k, s) in look::LOOK_SLIDERS.iter().enumerate() {
        let (up, down) = (look_target(k, true), look_target(k, false));
        let differ = prims.iter().any(|p| {
            p.targets[up]
                .0
                .iter()
                .zip(&p.targets[down].0)
                .any(|(a, b)| len(sub(*a, *b)) > 1e-3)
        });
        assert!(differ, "{}: up and down are the same", s.name);
    }
}

#[test]
fn look_targets_are_left_right_symmetric() {
    let (prims, _) = face();
    for p in prims {
        let partners = mirror_partners(p);
        let mut pairs = 0;
        for (i, partner) in partners.iter().enumerate() {
            let Some(m) = *partner else { continue };
            pairs += 1;
            for (name, t) in look_targets() {
                let (da, db) = (p.targets[t].0[i], p.targets[t].0[m]);
                let err = len([da[0] + db[0], da[1] - db[1], da[2] - db[2]]);
                assert!(err < 1e-5, "{name} at vertex {i}: {da:?} vs mirror {db:?}");
            }
        }
        assert!(pairs > p.positions.len() / 2, "too few mirror pairs");
    }
}

/// The regions a look target may move, by its slider.
fn look_allowed(slider: &str, r: &Regions) -> Vec<Region> {
    let lower_face = Region {
        name: "lower face",
        min: [-0.09, 0.03, -0.01],
        max: [0.09, r.eye[0].min[1] + 0.02, r.mouth.max[2]],
    };
    let sides = |name| Region {
        name,
        min: [0.008, 0.06, -0.2],
        max: [0.2, 0.3, 0.2],
    };
    match slider {
        "eye_size" | "eye_spacing" | "eye_tilt" => r.eye.to_vec(),
        "brow_height" => vec![r.brow[0], r.brow[1]],
        "nose_length" | "nose_width" => vec![r.nose],
        "mouth_width" | "lip_fullness" => vec![r.mouth],
        "jaw_width" => vec![lower_face],
        "chin_length" => vec![r.jaw],
        "cheek_fullness" => r.cheek.to_vec(),
        "face_width" => vec![
            sides("left side"),
            sides("left side").mirrored("right side"),
        ],
        _ => Vec::new(),
    }
}

#[test]
fn every_look_target_stays_inside_the_regions_its_slider_allows() {
    let r = regions();
    let (prims, _) = face();
    for (k, s) in look::LOOK_SLIDERS.iter().enumerate() {
        let allowed = look_allowed(s.name, &r);
        assert!(!allowed.is_empty(), "{} has no region", s.name);
        for up in [true, false] {
            let t = look_target(k, up);
            for p in prims {
                for (q, d) in model_positions(p).into_iter().zip(&p.targets[t].0) {
                    if len(*d) > 1e-4 {
                        assert!(
                            allowed.iter().any(|a| a.contains(q)),
                            "{} ({}) moves a vertex at {q:?} by {d:?}, outside {:?}",
                            s.name,
                            if up { "up" } else { "down" },
                            allowed.iter().map(|a| a.name).collect::<Vec<_>>()
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn broad_look_targets_leave_the_lids_and_the_nose_tip_alone() {
    use facewire::headgen::face::{build_skin, Slit};
    let skin = build_skin(0);
    let (prims, _) = face();
    let pos = model_positions(&prims[0]);
    // The nose tip: the frontmost centre-line vertex above the mouth.
    let tip = (0..pos.len())
        .filter(|&i| pos[i][0] == 0.0 && pos[i][1] > facewire::headgen::face::mouth_y() + 0.01)
        .max_by(|&a, &b| pos[a][2].total_cmp(&pos[b][2]))
        .expect("a nose tip");
    for name in ["face_width", "jaw_width", "cheek_fullness", "chin_length"] {
        let k = slider(name);
        for up in [true, false] {
            let d = &prims[0].targets[look_target(k, up)].0;
            for (i, v) in skin.vertices.iter().enumerate() {
                if matches!(v.slit, Slit::EyeEdge { .. } | Slit::EyeInner { .. }) {
                    assert!(len(d[i]) < 1e-4, "{name} moves a lid by {:?}", d[i]);
                }
            }
            assert!(
                len(d[tip]) < 1e-4,
                "{name} moves the nose tip by {:?}",
                d[tip]
            );
        }
    }
}

#[test]
fn look_targets_point_the_way_their_names_say() {
    use facewire::headgen::face::{build_skin, eye_center, Slit, EYE_INNER, EYE_OUTER};
    let skin = build_skin(0);
    let (prims, _) = face();
    let pos = model_positions(&prims[0]);
    let d = |name: &str, up: bool| &prims[0].targets[look_target(slider(name), up)].0;
    // The left eye's corners: the lid edge vertices at the slit's innermost and outermost
    // columns.
    let edge_cols: Vec<usize> = (0..skin.vertices.len())
        .filter(|&i| {
            let v = skin.vertices[i];
            matches!(v.slit, Slit::EyeEdge { upper: true }) && v.theta > 0.0
        })
        .collect();
    let inner = *edge_cols
        .iter()
        .min_by(|&&a, &&b| skin.vertices[a].theta.total_cmp(&skin.vertices[b].theta))
        .unwrap();
    let outer = *edge_cols
        .iter()
        .max_by(|&&a, &&b| skin.vertices[a].theta.total_cmp(&skin.vertices[b].theta))
        .unwrap();
    assert!(skin.vertices[inner].theta < EYE_INNER + 0.1);
    assert!(skin.vertices[outer].theta > EYE_OUTER - 0.1);
    for (up, sign) in [(true, 1.0), (false, -1.0)] {
        // eye_size: the opening widens (the corners move apart) or narrows.
        let e = d("eye_size", up);
        assert!(
            sign * (e[outer][0] - e[inner][0]) > 0.003,
            "eye_size {up}: corners move apart by {}",
            e[outer][0] - e[inner][0]
        );
        // eye_tilt: the outer end rises against the inner end.
        let e = d("eye_tilt", up);
        assert!(sign * (e[outer][1] - e[inner][1]) > 0.002, "eye_tilt {up}");
        // eye_spacing: the whole lid moves sideways by exactly the eyeball's shift.
        // eye_spacing: the lids move sideways by exactly the eyeball's shift.
        let e = d("eye_spacing", up);
        let shift = look::eye_spacing_shift(sign);
        for &(u, l) in &eye_edge_pairs() {
            for i in [u, l] {
                assert!(
                    (e[i][0] - shift).abs() < 2e-5 && e[i][1].abs() < 1e-5,
                    "eye_spacing {up}: a lid edge moves by {:?}, the eyeball by {shift}",
                    e[i]
                );
            }
        }
    }
    const { assert!(look::EYE_SPACING_SHIFT > 0.0) };
    assert_eq!(look::EYE_SPACING_SHIFT_DOWN, -look::EYE_SPACING_SHIFT);
    assert!(eye_center().x > 0.0, "the left eye's socket is at +X");

    let mouth_y = facewire::headgen::face::mouth_y();
    let centre = |above: f32, below: f32| {
        (0..pos.len())
            .filter(|&i| {
                pos[i][0] == 0.0 && pos[i][1] > mouth_y + below && pos[i][1] < mouth_y + above
            })
            .max_by(|&a, &b| pos[a][2].total_cmp(&pos[b][2]))
            .expect("a centre-line vertex")
    };
    let tip = centre(0.05, 0.01);
    let chin = (0..pos.len())
        .filter(|&i| pos[i][0] == 0.0 && pos[i][2] > 0.06)
        .min_by(|&a, &b| pos[a][1].total_cmp(&pos[b][1]))
        .unwrap();
    let lip = centre(0.004, -0.004);
    for (up, sign) in [(true, 1.0), (false, -1.0)] {
        let n = d("nose_length", up)[tip];
        assert!(
            sign * n[1] < -0.001 || sign * n[2] > 0.0005,
            "nose_length {up}: {n:?}"
        );
        let c = d("chin_length", up)[chin];
        assert!(sign * c[1] < -0.004, "chin_length {up}: {c:?}");
        let l = d("lip_fullness", up)[lip];
        assert!(sign * l[2] > 0.001, "lip_fullness {up}: {l:?}");
        // Sideways fields: the sum of x motion, signed by side, widens or narrows.
        for name in [
            "face_width",
            "jaw_width",
            "mouth_width",
            "nose_width",
            "cheek_fullness",
        ] {
            let t = look_target(slider(name), up);
            let widen: f32 = prims
                .iter()
                .flat_map(|p| p.positions.iter().zip(&p.targets[t].0))
                .map(|(q, d)| d[0] * q[0].signum())
                .sum();
            let widen = if name == "nose_width" {
                // The nose widens by getting fuller: its sides come forwards.
                d(name, up).iter().map(|d| d[2]).sum::<f32>()
            } else {
                widen
            };
            assert!(sign * widen > 0.0, "{name} {up}: {widen}");
        }
        // brow_height: the brows move up or down.
        let b: f32 = d("brow_height", up).iter().map(|d| d[1]).sum();
        assert!(sign * b > 0.0, "brow_height {up}: {b}");
    }
}

/// The left eye's lid edge pairs (upper, lower) at the same column, from the generator's
/// skin grid (whose vertex order is the skin primitive's).
fn eye_edge_pairs() -> Vec<(usize, usize)> {
    use facewire::headgen::face::{build_skin, Slit};
    let skin = build_skin(0);
    let edge = |upper: bool| -> Vec<usize> {
        (0..skin.vertices.len())
            .filter(|&i| {
                skin.vertices[i].slit == Slit::EyeEdge { upper } && skin.vertices[i].theta > 0.0
            })
            .collect()
    };
    let (ups, los) = (edge(true), edge(false));
    ups.iter()
        .filter_map(|&u| {
            los.iter()
                .find(|&&l| skin.vertices[l].theta == skin.vertices[u].theta)
                .map(|&l| (u, l))
        })
        .collect()
}

#[test]
fn lids_stay_off_the_eyeball_with_every_look_target_alone_blinking_and_wide() {
    use facewire::headgen::face::{build_skin, eye_center, Slit, EYE_RADIUS};
    let skin = build_skin(0);
    let blink = target(Channel::EyeBlinkLeft);
    let wide = target(Channel::EyeWideLeft);
    for (k, s) in look::LOOK_SLIDERS.iter().enumerate() {
        for (up, value) in [(true, 1.0), (false, -1.0)] {
            let t = look_target(k, up);
            // The eyeball follows its socket when the eyes move apart.
            let mut e = eye_center();
            if s.name == "eye_spacing" {
                e.x += look::eye_spacing_shift(value);
            }
            for extra in [None, Some(blink), Some(wide)] {
                let mut weights = vec![(t, 1.0)];
                weights.extend(extra.map(|x| (x, 1.0)));
                let pos = skin_weighted(&weights);
                let pivot = facewire::headgen::HEAD_PIVOT;
                for (i, v) in skin.vertices.iter().enumerate() {
                    if pos[i][0] <= 0.0 || matches!(v.slit, Slit::EyeInner { .. }) {
                        continue;
                    }
                    let p = glam::Vec3::from(pos[i]);
                    let r = (p - e).length();
                    assert!(
                        r >= EYE_RADIUS,
                        "{} {} with {extra:?}: skin at {:?} ({v:?}) is {} mm inside the eyeball",
                        s.name,
                        value,
                        p - pivot,
                        (EYE_RADIUS - r) * 1e3
                    );
                }
            }
        }
    }
}

#[test]
fn blinking_still_closes_the_lids_on_a_reshaped_eye() {
    let blink = target(Channel::EyeBlinkLeft);
    let pairs = eye_edge_pairs();
    assert!(pairs.len() > 8, "only {} lid edge pairs", pairs.len());
    let base = skin_weighted(&[(blink, 1.0)]);
    let worst_gap = |pos: &[V3]| {
        pairs
            .iter()
            .map(|&(u, l)| len(sub(pos[u], pos[l])))
            .fold(0.0f32, f32::max)
    };
    let closed = worst_gap(&base);
    assert!(
        closed < 1e-4,
        "a plain blink leaves the lids {closed} m apart"
    );
    for name in ["eye_size", "eye_tilt", "eye_spacing"] {
        for up in [true, false] {
            let pos = skin_weighted(&[(blink, 1.0), (look_target(slider(name), up), 1.0)]);
            let gap = worst_gap(&pos);
            assert!(
                gap < 3e-4,
                "{name} {up}: blinked lids are {} mm apart",
                gap * 1e3
            );
        }
    }
}

/// Renders the generated head at `size`² pixels, front view, with the given Face target
/// weights (by index) and the correctives they drive; `eye_spacing` moves the eye nodes by
/// `spacing`, as the renderer's mapping will.
fn render_targets(size: u32, weights: &[(usize, f32)], spacing: f32) -> facewire::image::RgbaImage {
    render_targets_framed(size, weights, spacing, None)
}

/// [`render_targets`] with the camera moved `zoom` times closer and raised by `lift` head
/// heights, when given.
fn render_targets_framed(
    size: u32,
    weights: &[(usize, f32)],
    spacing: f32,
    framing: Option<(f32, f32)>,
) -> facewire::image::RgbaImage {
    use facewire::app::Scene;
    use facewire::render::headless::HeadlessContext;
    let mut avatar = facewire::avatar::load_slice(glb(), "generated head").expect("loads");
    for node in &mut avatar.nodes {
        match node.name.as_deref() {
            Some("LeftEye") => node.translation.x += spacing,
            Some("RightEye") => node.translation.x -= spacing,
            _ => {}
        }
    }
    let face = avatar
        .meshes
        .iter()
        .position(|m| m.name.as_deref() == Some("Face"))
        .expect("a Face mesh");
    let all = with_correctives(weights);
    let ctx = HeadlessContext::new(size, size).expect("headless context");
    let mut scene = Scene::new(ctx.gl(), avatar, facewire::config::MorphMode::Cpu).expect("scene");
    if let Some((zoom, lift)) = framing {
        let mut camera = *scene.camera();
        camera.zoom = zoom;
        camera.offset_y = lift;
        scene.set_camera(camera);
    }
    scene.set_pose(|pose| pose.weights[face].copy_from_slice(&all));
    let image = scene.draw_image(&ctx, [0.0, 0.7, 0.25, 1.0], false);
    drop(scene);
    image
}

#[test]
fn rendered_blink_hides_the_iris_on_a_reshaped_eye() {
    const SIZE: u32 = 256;
    let viewer_right_eye = (0.5, 0.3, 0.75, 0.6);
    let blink = target(Channel::EyeBlinkLeft);
    for name in ["eye_size", "eye_tilt", "eye_spacing"] {
        for (up, value) in [(true, 1.0), (false, -1.0)] {
            let look = look_target(slider(name), up);
            let spacing = if name == "eye_spacing" {
                look::eye_spacing_shift(value)
            } else {
                0.0
            };
            let open = render_targets(SIZE, &[(look, 1.0)], spacing);
            let shut = render_targets(SIZE, &[(look, 1.0), (blink, 1.0)], spacing);
            let (o, b) = (
                count(&open, viewer_right_eye, iris_blue),
                count(&shut, viewer_right_eye, iris_blue),
            );
            assert!(o > 40, "{name} {value}: the open iris shows {o} pixels");
            assert!(
                b * 20 < o,
                "{name} {value}: the blinked iris still shows {b} of {o} pixels"
            );
        }
    }
}

#[test]
fn rendered_reshaped_mouths_show_no_dark_tears_when_closed() {
    use Channel::*;
    const SIZE: u32 = 256;
    // A close-up of the mouth, where a smile or a pout keeps the lips closed: anything dark
    // below the lips is the mouth's inside showing through the skin.
    let lower_face = (0.15, 0.77, 0.85, 0.95);
    let close_up = Some((3.5, -0.15));
    let (w, f) = (slider("mouth_width"), slider("lip_fullness"));
    // (mouthFunnel parts the lips, so its opening grows with the mouth; the triangle test
    // covers it.)
    for expr in [&[MouthSmileLeft, MouthSmileRight][..], &[MouthPucker]] {
        let base: Vec<(usize, f32)> = expr.iter().map(|&c| (target(c), 1.0)).collect();
        let plain = count(
            &render_targets_framed(SIZE, &base, 0.0, close_up),
            lower_face,
            dark,
        );
        for (a, b) in [(true, true), (false, false), (true, false), (false, true)] {
            let mut weights = base.clone();
            weights.extend([(look_target(w, a), 1.0), (look_target(f, b), 1.0)]);
            let n = count(
                &render_targets_framed(SIZE, &weights, 0.0, close_up),
                lower_face,
                dark,
            );
            assert!(
                n <= plain,
                "mouth_width {a} lip_fullness {b} with {expr:?}: {n} dark pixels (plain {plain})"
            );
        }
    }
}

#[test]
fn every_slider_and_expression_at_once_stays_within_the_gpu_target_limit() {
    // A slider drives one of its two ends, and a corrective is active only when both its inputs
    // are: with every slider set (at its end with more correctives) and every expression
    // active, the GPU path must still keep every active target.
    let (_, names) = face();
    let correctives = |look: &str| {
        names
            .iter()
            .filter(|n| n.split_once('*').is_some_and(|(a, _)| a == look))
            .count()
    };
    let worst: usize = look::LOOK_SLIDERS
        .iter()
        .map(|s| 1 + correctives(s.up).max(correctives(s.down)))
        .sum::<usize>()
        + 52;
    assert!(
        worst <= facewire::render::MAX_ACTIVE_TARGETS,
        "up to {worst} targets active at once, the GPU path keeps {}",
        facewire::render::MAX_ACTIVE_TARGETS
    );
}

#[test]
fn the_mouth_stays_closed_at_rest_with_every_look_target() {
    let pairs = lip_edge_pairs();
    for (name, t) in look_targets() {
        let pos = skin_weighted(&[(t, 1.0)]);
        for &(up, lo) in &pairs {
            let gap = len(sub(pos[up], pos[lo]));
            assert!(gap < 1e-5, "{name}: the closed lips are {gap} m apart");
        }
    }
}

/// Skin triangles around the mouth that turn away with `weights` compared with `reference`:
/// whose facing turns by more than 90°, or that clearly face the camera (front view, towards
/// +Z) in `reference` and face away from it with `weights`, so back-face culling opens a hole
/// in the lips or folds them over.
fn flipped_mouth_triangles(reference: &[(usize, f32)], weights: &[(usize, f32)]) -> usize {
    let (prims, _) = face();
    let (doc, buffers, _) = gltf::import_slice(glb()).unwrap();
    let mesh = doc.meshes().find(|m| m.name() == Some("Face")).unwrap();
    let p = mesh.primitives().next().unwrap();
    let indices: Vec<u32> = p
        .reader(|b| Some(&buffers[b.index()]))
        .read_indices()
        .unwrap()
        .into_u32()
        .collect();
    let rest = model_positions(&prims[0]);
    let before = skin_weighted(reference);
    let posed = skin_weighted(weights);
    let mouth_y = facewire::headgen::face::mouth_y();
    let normal = |q: &[V3], t: &[u32]| {
        let (a, b, c) = (q[t[0] as usize], q[t[1] as usize], q[t[2] as usize]);
        glam::Vec3::from(sub(b, a)).cross(glam::Vec3::from(sub(c, a)))
    };
    indices
        .chunks_exact(3)
        .filter(|t| {
            let a = rest[t[0] as usize];
            (a[1] - mouth_y).abs() < 0.03 && a[0].abs() < 0.045 && a[2] > 0.05
        })
        .filter(|t| {
            let (n0, n1) = (normal(&before, t), normal(&posed, t));
            if n0.length() < 1e-12 || n1.length() < 1e-12 {
                return false;
            }
            let turned = n0.dot(n1) < 0.0;
            let hidden = n0.z > 0.3 * n0.length() && n1.z <= 0.0;
            turned || hidden
        })
        .count()
}

/// Pairs of the lips' edges near the corners (the outer third of the mouth) where the upper
/// edge ends up more than `tolerance` below the lower one: crossed lips.
fn crossed_lip_edges(weights: &[(usize, f32)], tolerance: f32) -> usize {
    let rest = skin_weighted(&[]);
    let pos = skin_weighted(weights);
    let pairs = lip_edge_pairs();
    let widest = pairs
        .iter()
        .map(|&(u, _)| rest[u][0].abs())
        .fold(0.0f32, f32::max);
    pairs
        .iter()
        .filter(|&&(u, _)| rest[u][0].abs() > 0.66 * widest)
        .filter(|&&(u, l)| pos[u][1] < pos[l][1] - tolerance)
        .count()
}

#[test]
fn reshaped_mouths_open_smile_and_pucker_without_inverting() {
    use Channel::*;
    let expressions: [&[Channel]; 7] = [
        &[JawOpen],
        &[MouthSmileLeft, MouthSmileRight],
        &[MouthPucker],
        &[MouthFunnel],
        &[MouthStretchLeft, MouthStretchRight],
        &[JawOpen, MouthSmileLeft, MouthSmileRight],
        &[MouthSmileLeft],
    ];
    let mut looks: Vec<Vec<(usize, f32)>> = Vec::new();
    for name in ["mouth_width", "lip_fullness", "jaw_width", "chin_length"] {
        for up in [true, false] {
            looks.push(vec![(look_target(slider(name), up), 1.0)]);
        }
    }
    // Both mouth sliders at once, as a character creator would set them.
    for (a, b) in [(true, true), (true, false), (false, true), (false, false)] {
        looks.push(vec![
            (look_target(slider("mouth_width"), a), 1.0),
            (look_target(slider("lip_fullness"), b), 1.0),
        ]);
    }
    for expr in expressions {
        let base: Vec<(usize, f32)> = expr.iter().map(|&c| (target(c), 1.0)).collect();
        let crossed_before = crossed_lip_edges(&base, 2e-4);
        for look in &looks {
            let mut weights = base.clone();
            weights.extend(look);
            let names: Vec<&str> = look.iter().map(|&(t, _)| face().1[t].as_str()).collect();
            // Against the plain expression, not neutral: jawOpen with a smile already turns a
            // few corner triangles over by itself.
            let flipped = flipped_mouth_triangles(&base, &weights);
            assert!(
                flipped == 0,
                "{names:?} with {expr:?}: {flipped} triangles turn away from the plain expression"
            );
            let crossed = crossed_lip_edges(&weights, 2e-4);
            assert!(
                crossed <= crossed_before,
                "{names:?} with {expr:?}: {crossed} lip edge pairs cross at the corners \
                 (plain: {crossed_before})"
            );
        }
    }
    // With jawOpen the reshaped lips still part.
    let pairs = lip_edge_pairs();
    for name in ["mouth_width", "lip_fullness"] {
        for up in [true, false] {
            let pos =
                skin_weighted(&[(target(JawOpen), 1.0), (look_target(slider(name), up), 1.0)]);
            let open = pairs
                .iter()
                .map(|&(u, l)| pos[u][1] - pos[l][1])
                .fold(0.0f32, f32::max);
            assert!(
                open > 0.005,
                "{name} {up}: jawOpen parts the lips by {open}"
            );
        }
    }
}

/// One primitive of a face level read back.
struct LevelPrim {
    positions: Vec<V3>,
    triangles: usize,
    material: Option<usize>,
    /// Texture coordinate bounds: min u, min v, max u, max v.
    uv_bounds: [f32; 4],
    /// Per target, the position deltas.
    targets: Vec<Vec<V3>>,
}

/// One face level read back, with its target names.
struct Level {
    name: String,
    prims: Vec<LevelPrim>,
    names: Vec<String>,
}

fn levels() -> &'static Vec<Level> {
    static LEVELS: OnceLock<Vec<Level>> = OnceLock::new();
    LEVELS.get_or_init(|| {
        let (doc, buffers, _) = gltf::import_slice(glb()).expect("the head imports");
        facewire::headgen::FACE_LEVELS
            .iter()
            .map(|&name| {
                let mesh = doc
                    .meshes()
                    .find(|m| m.name() == Some(name))
                    .unwrap_or_else(|| panic!("a {name} mesh"));
                let names = target_names(&mesh);
                let prims = mesh
                    .primitives()
                    .map(|p| {
                        let r = p.reader(|b| Some(&buffers[b.index()]));
                        let positions: Vec<V3> = r.read_positions().unwrap().collect();
                        let triangles = r.read_indices().unwrap().into_u32().count() / 3;
                        let mut bounds = [f32::MAX, f32::MAX, f32::MIN, f32::MIN];
                        for uv in r.read_tex_coords(0).unwrap().into_f32() {
                            bounds = [
                                bounds[0].min(uv[0]),
                                bounds[1].min(uv[1]),
                                bounds[2].max(uv[0]),
                                bounds[3].max(uv[1]),
                            ];
                        }
                        let targets = r
                            .read_morph_targets()
                            .map(|(pos, _, _)| pos.expect("position deltas").collect())
                            .collect();
                        LevelPrim {
                            positions,
                            triangles,
                            material: p.material().index(),
                            uv_bounds: bounds,
                            targets,
                        }
                    })
                    .collect();
                Level {
                    name: name.to_string(),
                    prims,
                    names,
                }
            })
            .collect()
    })
}

#[test]
fn face_levels_have_fewer_triangles_the_same_targets_and_the_same_materials() {
    let levels = levels();
    assert_eq!(levels.len(), 3);
    let tris: Vec<usize> = levels
        .iter()
        .map(|l| l.prims.iter().map(|p| p.triangles).sum())
        .collect();
    // About a half and a quarter of level 0.
    let ratio = |k: usize| tris[k] as f32 / tris[0] as f32;
    assert!((0.4..0.6).contains(&ratio(1)), "triangles {tris:?}");
    assert!((0.18..0.32).contains(&ratio(2)), "triangles {tris:?}");
    let full = &levels[0];
    assert_eq!(full.names.len(), 208);
    for level in &levels[1..] {
        assert_eq!(
            level.names, full.names,
            "{} names its targets alike",
            level.name
        );
        assert_eq!(level.prims.len(), full.prims.len());
        for (p, p0) in level.prims.iter().zip(&full.prims) {
            assert_eq!(p.material, p0.material, "{}: same material", level.name);
            assert_eq!(p.targets.len(), full.names.len());
            assert!(
                p.triangles < p0.triangles,
                "{}: fewer triangles in every primitive",
                level.name
            );
            // The same atlas regions.
            for k in 0..4 {
                assert!(
                    (p.uv_bounds[k] - p0.uv_bounds[k]).abs() < 0.02,
                    "{}: uv bounds",
                    level.name
                );
            }
        }
    }
}

#[test]
fn every_face_level_opens_the_jaw_and_blinks_the_left_eye() {
    for level in levels() {
        let skin = &level.prims[0];
        let chin = (0..skin.positions.len())
            .filter(|&i| skin.positions[i][0].abs() < 1e-4 && skin.positions[i][2] > 0.06)
            .min_by(|&a, &b| skin.positions[a][1].total_cmp(&skin.positions[b][1]))
            .expect("a chin vertex");
        let d = skin.targets[target(Channel::JawOpen)][chin];
        assert!(
            d[1] < -0.008,
            "{}: jawOpen moves the chin by {d:?}",
            level.name
        );

        let mut biggest_drop = 0.0f32;
        for p in &level.prims {
            for (pos, d) in p
                .positions
                .iter()
                .zip(&p.targets[target(Channel::EyeBlinkLeft)])
            {
                if len(*d) > 0.0 {
                    assert!(
                        pos[0] > 0.0,
                        "{}: eyeBlinkLeft at x = {}",
                        level.name,
                        pos[0]
                    );
                    biggest_drop = biggest_drop.max(-d[1]);
                }
            }
        }
        assert!(
            biggest_drop > 0.01,
            "{}: the lid drops {biggest_drop}",
            level.name
        );
        // And its mirror image on the right.
        let right = &skin.targets[target(Channel::EyeBlinkRight)];
        assert!(skin
            .positions
            .iter()
            .zip(right)
            .all(|(p, d)| len(*d) == 0.0 || p[0] < 0.0));
    }
}

#[test]
fn msft_lod_on_face_names_the_coarser_levels_under_head() {
    let bytes = glb();
    let json_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let root: serde_json::Value = serde_json::from_slice(&bytes[20..20 + json_len]).unwrap();
    assert!(root["extensionsUsed"]
        .as_array()
        .unwrap()
        .contains(&"MSFT_lod".into()));
    let nodes = root["nodes"].as_array().unwrap();
    let name = |i: usize| nodes[i]["name"].as_str().unwrap_or_default();
    let mesh_name = |i: usize| {
        let m = nodes[i]["mesh"].as_u64().unwrap() as usize;
        root["meshes"][m]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(name(0), "Head");
    assert!(nodes[0].get("mesh").is_none());
    assert_eq!(root["scenes"][0]["nodes"], serde_json::json!([0, 6]));
    assert_eq!(nodes[0]["children"], serde_json::json!([1, 2, 3, 4, 5]));
    assert_eq!(name(1), "Face");
    let ids: Vec<usize> = nodes[1]["extensions"]["MSFT_lod"]["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(ids, [4, 5]);
    for (k, &id) in ids.iter().enumerate() {
        let want = facewire::headgen::FACE_LEVELS[k + 1];
        assert_eq!((name(id), mesh_name(id).as_str()), (want, want));
        assert_eq!(nodes[id]["translation"], serde_json::json!([0.0, 0.0, 0.0]));
    }
    // The eyes are Head's children, not Face's: hiding a level keeps them.
    assert!(nodes[1].get("children").is_none());
    assert_eq!((name(2), name(3), name(6)), ("LeftEye", "RightEye", "Neck"));
    // facewire's loader takes the group as it is.
    let avatar = facewire::avatar::load_slice(bytes, "levels.glb").expect("the head loads");
    assert_eq!(avatar.lods.len(), 1);
    assert_eq!(avatar.lods[0].levels, [1, 4, 5]);
    // The coarser levels' meshes (and only they) are drawn only in place of the finest.
    let coarser: Vec<bool> = (0..avatar.meshes.len())
        .map(|m| avatar.mesh_is_coarser_level(m))
        .collect();
    assert_eq!(coarser, [false, false, false, true, true]);
    assert!(avatar.in_coarser_level(4) && !avatar.in_coarser_level(1));
}

/// Channel weights as (Face target index, weight) pairs.
fn channel_weights(weights: &[(Channel, f32)]) -> Vec<(usize, f32)> {
    weights.iter().map(|&(c, w)| (target(c), w)).collect()
}

/// Skin triangles of the lower face, off the lips' edges and inner surfaces, that face the
/// camera (front view, towards +Z) at rest and turn away from it with `weights` (and the
/// correctives they drive): back-face culling shows the dark mouth behind them as a slit.
fn back_facing_skin(weights: &[(usize, f32)]) -> usize {
    use facewire::headgen::face::{build_skin, mouth_y, Slit};
    static SKIN: OnceLock<facewire::headgen::face::Skin> = OnceLock::new();
    let skin = SKIN.get_or_init(|| build_skin(0));
    let rest = skin_weighted(&[]);
    let posed = skin_weighted(weights);
    let mouth_y = mouth_y();
    let normal = |q: &[V3], t: &[u32]| {
        let [a, b, c] = [t[0], t[1], t[2]].map(|v| glam::Vec3::from(q[v as usize]));
        (b - a).cross(c - a).normalize_or_zero()
    };
    skin.mesh
        .indices
        .chunks_exact(3)
        .filter(|t| {
            t.iter()
                .all(|&v| skin.vertices[v as usize].slit == Slit::None)
        })
        .filter(|t| {
            let p = rest[t[0] as usize];
            p[1] < mouth_y + 0.015 && p[1] > mouth_y - 0.05 && p[0].abs() < 0.045 && p[2] > 0.04
        })
        .filter(|t| normal(&rest, t).z > 0.3 && normal(&posed, t).z <= 0.0)
        .count()
}

/// How far the upper lip's edge rises from its middle to its highest point with `weights` (m):
/// the depth of the V an open upper lip hangs in when the corners rise and its middle does not.
fn upper_lip_v(weights: &[(usize, f32)]) -> f32 {
    let rest = skin_weighted(&[]);
    let pos = skin_weighted(weights);
    let pairs = lip_edge_pairs();
    let (centre, _) = *pairs
        .iter()
        .min_by(|a, b| rest[a.0][0].abs().total_cmp(&rest[b.0][0].abs()))
        .expect("a centre pair");
    pairs
        .iter()
        .map(|&(u, _)| pos[u][1] - pos[centre][1])
        .fold(0.0f32, f32::max)
}

#[test]
fn common_combinations_open_the_mouth_without_slits_or_a_v() {
    use Channel::*;
    let smile = [(MouthSmileLeft, 1.0), (MouthSmileRight, 1.0)];
    let with = |extra: &[(Channel, f32)]| -> Vec<(Channel, f32)> {
        extra.iter().chain(&smile).copied().collect()
    };
    let laugh = with(&[(JawOpen, 0.7)]);
    let big_laugh = with(&[(JawOpen, 1.0)]);
    // (name, channels, most back-facing triangles allowed). Before the pair correctives and
    // the wider relaxation of the jaw's lower lip, the laugh turned skin under a mouth corner
    // away (a dark slit), the laugh with the jaw wide open 14 triangles, and the open jaw with
    // stretched corners 10. A few sliver triangles between a pinned corner and the dropping
    // lower lip beside it still stand edge-on under a wide-open or stretched mouth; they may
    // not get more.
    type Combo<'a> = (&'a str, Vec<(Channel, f32)>, usize);
    let combos: [Combo; 7] = [
        ("laugh", laugh.clone(), 0),
        ("big laugh", big_laugh.clone(), 2),
        ("funnel + jaw", vec![(MouthFunnel, 1.0), (JawOpen, 0.5)], 0),
        ("pucker + jaw", vec![(MouthPucker, 1.0), (JawOpen, 0.4)], 0),
        (
            "press + smile",
            with(&[(MouthPressLeft, 1.0), (MouthPressRight, 1.0)]),
            0,
        ),
        ("puff + smile", with(&[(CheekPuff, 1.0)]), 0),
        (
            "jaw + stretch",
            vec![
                (JawOpen, 0.6),
                (MouthStretchLeft, 1.0),
                (MouthStretchRight, 1.0),
            ],
            5,
        ),
    ];
    // With the jaw wide open the chin follows the jaw, not the smiling corners: a smile does
    // not drag the skin the jaw carries (at least 80% of the chin's drop) up beside the chin
    // into a point (before: by 2.9 mm).
    let (prims, _) = face();
    let jaw_deltas = &prims[0].targets[target(JawOpen)].0;
    let chin_drop = jaw_deltas.iter().map(|d| len(*d)).fold(0.0f32, f32::max);
    let jaw = skin_weighted(&channel_weights(&[(JawOpen, 1.0)]));
    let laughing = skin_weighted(&channel_weights(&big_laugh));
    let dragged = jaw_deltas
        .iter()
        .zip(jaw.iter().zip(&laughing))
        .filter(|(d, _)| len(**d) > 0.8 * chin_drop)
        .map(|(_, (a, b))| len(sub(*a, *b)))
        .fold(0.0f32, f32::max);
    for (name, channels, allowed) in &combos {
        let back = back_facing_skin(&channel_weights(channels));
        assert!(
            back <= *allowed,
            "{name}: {back} skin triangles around the mouth turn away from the camera"
        );
    }
    // The open upper lip curves up gently towards the corners instead of hanging in a V
    // (before: 6.2 mm deep in the laugh, 5.8 mm with the jaw wide open).
    for (name, channels) in [("laugh", &laugh), ("big laugh", &big_laugh)] {
        let v = upper_lip_v(&channel_weights(channels));
        assert!(
            v < 0.0045,
            "{name}: the upper lip hangs in a V {:.1} mm deep",
            v * 1e3
        );
    }
    assert!(
        dragged < 0.001,
        "a smile moves the chin of a wide-open jaw by {:.2} mm",
        dragged * 1e3
    );
}

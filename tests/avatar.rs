//! avatar integration tests: the Khronos morph samples and RobotExpressive read in place, a
//! hand-built GLB, and hostile (truncated, corrupted, inconsistent) files.

use facewire::avatar::blend::{blend_reference, CpuBlender};
use facewire::avatar::{self, Avatar, AvatarError, Mesh};
use facewire::image::RgbaImage;
use glam::{Vec2, Vec3};
use std::path::{Path, PathBuf};

/// A Khronos sample under the fixtures folder, or `None` (with a note) when fixtures are absent.
fn khronos(relative: &str) -> Option<PathBuf> {
    crate::support::fixtures("khronos glTF samples")
        .map(|dir| dir.join("gltf/khronos").join(relative))
}

fn load_fixture(path: &Path) -> Avatar {
    avatar::load(path).unwrap_or_else(|e| panic!("{e}"))
}

fn close(a: Vec3, b: Vec3) -> bool {
    (a - b).abs().max_element() < 1e-6
}

/// The largest |delta| component of a target's position deltas.
fn max_abs<'a>(deltas: impl IntoIterator<Item = &'a Vec3>) -> f32 {
    deltas
        .into_iter()
        .map(|d| d.abs().max_element())
        .fold(0.0, f32::max)
}

#[test]
fn simple_morph_has_its_known_deltas_and_blends() {
    let Some(path) = khronos("SimpleMorph/glTF/SimpleMorph.gltf") else {
        return;
    };
    let avatar = load_fixture(&path);
    assert_eq!(avatar.roots, vec![0]);
    assert_eq!(avatar.nodes[0].mesh, Some(0));
    let mesh = &avatar.meshes[0];
    assert_eq!(mesh.target_count(), 2);
    assert_eq!(mesh.target_names, vec![String::new(), String::new()]);
    assert_eq!(mesh.default_weights, vec![0.5, 0.5]);
    let prim = &mesh.primitives[0];
    // The file has no normals, so the loader flat-shades; with indices 0,1,2 the vertex order
    // is unchanged.
    assert_eq!(prim.indices, vec![0, 1, 2]);
    assert_eq!(
        prim.positions,
        vec![
            Vec3::ZERO,
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(0.5, 0.5, 0.0)
        ]
    );
    assert_eq!(prim.normals, vec![Vec3::Z; 3]);
    assert_eq!(prim.uvs, vec![Vec2::ZERO; 3]);
    assert_eq!(
        prim.targets[0].positions,
        vec![Vec3::ZERO, Vec3::ZERO, Vec3::new(-1.0, 1.0, 0.0)]
    );
    assert_eq!(
        prim.targets[1].positions,
        vec![Vec3::ZERO, Vec3::ZERO, Vec3::new(1.0, 1.0, 0.0)]
    );

    // Default weights 0.5 / 0.5: vertex 2 moves by 0.5·(-1,1,0) + 0.5·(1,1,0) = (0,1,0).
    let blender = CpuBlender::new(prim);
    let mut positions = vec![Vec3::ZERO; 3];
    let mut normals = vec![Vec3::ZERO; 3];
    blender
        .blend(&mesh.default_weights, &mut positions, &mut normals)
        .unwrap();
    assert_eq!(positions[2], Vec3::new(0.5, 1.5, 0.0));
    assert_eq!(&positions[..2], &prim.positions[..2]);
    let dense: Vec<Vec<Vec3>> = prim.targets.iter().map(|t| t.positions.to_vec()).collect();
    let deltas: Vec<&[Vec3]> = dense.iter().map(Vec::as_slice).collect();
    let mut reference = vec![Vec3::ZERO; 3];
    blend_reference(
        &prim.positions,
        &deltas,
        &mesh.default_weights,
        &mut reference,
    );
    assert_eq!(reference, positions);
}

#[test]
fn animated_morph_cube_has_position_and_normal_deltas() {
    let Some(path) = khronos("AnimatedMorphCube/glTF/AnimatedMorphCube.gltf") else {
        return;
    };
    let avatar = load_fixture(&path);
    let mesh = &avatar.meshes[0];
    assert_eq!(mesh.name.as_deref(), Some("Cube"));
    assert_eq!(mesh.target_count(), 2);
    // The file names its targets only through accessor names, not extras.targetNames.
    assert_eq!(mesh.target_names, vec![String::new(), String::new()]);
    assert_eq!(mesh.default_weights, vec![0.0, 0.0]);
    let prim = &mesh.primitives[0];
    assert_eq!(prim.positions.len(), 24);
    assert_eq!(prim.normals.len(), 24);
    assert_eq!(prim.indices.len(), 36);
    assert_eq!(prim.material, Some(0));
    for target in &prim.targets {
        assert_eq!(target.positions.len(), 24);
        assert_eq!(
            target.normals.len(),
            24,
            "NORMAL deltas are loaded (TANGENT ignored)"
        );
    }
    // "thin" only stretches the faces, so its normal deltas are zero; "angle" tilts them (up to
    // 0.705 in the file).
    assert_eq!(max_abs(&prim.targets[0].normals), 0.0);
    assert!((max_abs(&prim.targets[1].normals) - 0.705_169_1).abs() < 1e-6);
    // Accessor max of the POSITION deltas: y up to 0.01893253 ("thin") and 0.0198908355 ("angle").
    let max_y = |t: usize| {
        prim.targets[t]
            .positions
            .iter()
            .map(|d| d.y)
            .fold(f32::MIN, f32::max)
    };
    assert!((max_y(0) - 0.018_932_53).abs() < 1e-7, "{}", max_y(0));
    assert!((max_y(1) - 0.019_890_836).abs() < 1e-7, "{}", max_y(1));

    let node = &avatar.nodes[0];
    assert_eq!(node.name.as_deref(), Some("AnimatedMorphCube"));
    assert_eq!(node.scale, Vec3::splat(100.0));
    assert!((node.rotation.length() - 1.0).abs() < 1e-6);
    let material = &avatar.materials[0];
    assert!((material.base_color[0] - 0.603_827_4).abs() < 1e-6);
    assert_eq!(material.base_color_texture, None);
    assert!(avatar.textures.is_empty());
}

#[test]
fn morph_primitives_test_shares_one_weight_array_and_decodes_jpeg() {
    let Some(path) = khronos("MorphPrimitivesTest/glTF/MorphPrimitivesTest.gltf") else {
        return;
    };
    let avatar = load_fixture(&path);
    assert_eq!(avatar.meshes.len(), 1);
    let mesh = &avatar.meshes[0];
    assert_eq!(mesh.default_weights, vec![0.5]);
    assert_eq!(mesh.primitives.len(), 2);
    assert_eq!(
        mesh.primitives
            .iter()
            .map(|p| p.positions.len())
            .collect::<Vec<_>>(),
        vec![21, 9]
    );
    for prim in &mesh.primitives {
        assert_eq!(prim.targets.len(), 1);
        assert!((max_abs(&prim.targets[0].positions) - 0.2).abs() < 1e-6);
        assert!(prim.uvs.iter().any(|uv| *uv != Vec2::ZERO));
    }
    assert_eq!(mesh.primitives[0].material, Some(0));
    assert_eq!(mesh.primitives[1].material, Some(1));

    assert_eq!(avatar.materials[0].name.as_deref(), Some("red"));
    assert_eq!(avatar.materials[0].base_color, [1.0, 0.0, 0.0, 1.0]);
    assert_eq!(avatar.materials[1].base_color, [0.0, 1.0, 0.0, 1.0]);
    assert_eq!(avatar.materials[1].base_color_texture, Some(0));
    let texture = &avatar.textures[0];
    assert_eq!((texture.width, texture.height), (512, 512));
    assert_eq!(texture.rgba.len(), 512 * 512 * 4);
    assert!(
        texture.rgba.chunks_exact(4).all(|px| px[3] == 255),
        "JPEG has no alpha"
    );
    // A grey UV grid stored as a three-channel JPEG; reference pixels from ImageMagick, with
    // room for decoder rounding.
    let pixel = |x: usize, y: usize| {
        let i = (y * 512 + x) * 4;
        [texture.rgba[i], texture.rgba[i + 1], texture.rgba[i + 2]]
    };
    for ((x, y), grey) in [((0, 0), 18u8), ((256, 256), 0), ((10, 500), 132)] {
        for channel in pixel(x, y) {
            assert!(
                channel.abs_diff(grey) <= 4,
                "({x},{y}): {:?} vs {grey}",
                pixel(x, y)
            );
        }
    }
    let mean = texture
        .rgba
        .chunks_exact(4)
        .map(|px| f64::from(px[0]))
        .sum::<f64>()
        / (512.0 * 512.0);
    assert!((mean - 179.05).abs() < 1.0, "mean {mean}");

    // Node 0 (a Japanese name) is the root, node 1 carries the mesh.
    assert_eq!(avatar.roots, vec![0]);
    assert_eq!(avatar.nodes[0].name.as_deref(), Some("ルートパート"));
    assert_eq!(avatar.nodes[0].children, vec![1]);
    assert_eq!(avatar.nodes[1].parent, Some(0));
    assert_eq!(avatar.find_node("MESH"), Some(1));
}

#[test]
fn morph_stress_test_names_eight_targets() {
    let Some(path) = khronos("MorphStressTest/glTF/MorphStressTest.gltf") else {
        return;
    };
    let avatar = load_fixture(&path);
    let mesh = &avatar.meshes[0];
    let expected: Vec<String> = (1..=8).map(|i| format!("Key {i}")).collect();
    assert_eq!(mesh.target_names, expected);
    assert_eq!(mesh.target_count(), 8);
    assert_eq!(mesh.default_weights, vec![0.0; 8]);
    assert_eq!(mesh.primitives.len(), 2);
    for prim in &mesh.primitives {
        assert_eq!(prim.targets.len(), 8);
        let n = prim.positions.len();
        for target in &prim.targets {
            assert_eq!((target.positions.len(), target.normals.len()), (n, n));
        }
    }
    // The first primitive (the base plate) does not move; the second moves by up to 1.0 per
    // target, with small normal deltas.
    for target in &mesh.primitives[0].targets {
        assert_eq!(
            (max_abs(&target.positions), max_abs(&target.normals)),
            (0.0, 0.0)
        );
    }
    for target in &mesh.primitives[1].targets {
        assert!((max_abs(&target.positions) - 1.0).abs() < 1e-6);
        assert!((max_abs(&target.normals) - 0.0177).abs() < 1e-3);
    }
    let sizes: Vec<(u32, u32)> = avatar
        .textures
        .iter()
        .map(|t| (t.width, t.height))
        .collect();
    assert_eq!(sizes, vec![(1024, 1024), (64, 64), (64, 64)]);
    assert_eq!(avatar.materials[0].base_color_texture, Some(1));
    assert_eq!(avatar.materials[1].base_color_texture, Some(2));
    assert!(avatar.materials.iter().all(|m| m.double_sided));
}

#[test]
fn simple_sparse_accessor_substitutes_three_vertices() {
    let Some(path) = khronos("SimpleSparseAccessor/glTF-Embedded/SimpleSparseAccessor.gltf") else {
        return;
    };
    let avatar = load_fixture(&path);
    let prim = &avatar.meshes[0].primitives[0];
    // No normals in the file: flat shading gives each of the 12 triangles its own corners.
    assert_eq!(prim.positions.len(), 36);
    // The base buffer holds a 7×2 grid (x = 0..6, y = 0 or 1); the sparse accessor replaces
    // vertices 8, 10 and 12, i.e. (1,1,0), (3,1,0) and (5,1,0), by (1,2,0), (3,3,0), (5,4,0).
    let has = |p: Vec3| prim.positions.contains(&p);
    for replaced in [
        Vec3::new(1.0, 2.0, 0.0),
        Vec3::new(3.0, 3.0, 0.0),
        Vec3::new(5.0, 4.0, 0.0),
    ] {
        assert!(has(replaced), "{replaced} missing");
    }
    for base in [
        Vec3::new(1.0, 1.0, 0.0),
        Vec3::new(3.0, 1.0, 0.0),
        Vec3::new(5.0, 1.0, 0.0),
    ] {
        assert!(!has(base), "{base} should have been substituted");
    }
    for kept in (0..7)
        .map(|x| Vec3::new(x as f32, 0.0, 0.0))
        .chain([0.0, 2.0, 4.0, 6.0].map(|x| Vec3::new(x, 1.0, 0.0)))
    {
        assert!(has(kept), "{kept} missing");
    }
    assert!(prim.normals.iter().all(|n| close(*n, Vec3::Z)));
}

#[test]
fn robot_expressive_glb_has_expressions_and_hierarchy() {
    let Some(dir) = crate::support::fixtures("RobotExpressive GLB") else {
        return;
    };
    let avatar = load_fixture(&dir.join("gltf/RobotExpressive/RobotExpressive.glb"));
    assert_eq!(avatar.nodes.len(), 84);
    assert_eq!(avatar.meshes.len(), 19);
    assert_eq!(
        avatar.roots,
        vec![83],
        "scene 0 (AuxScene) holds Root_Scene"
    );

    let expressive: Vec<&Mesh> = avatar
        .meshes
        .iter()
        .filter(|m| m.target_count() > 0)
        .collect();
    assert_eq!(expressive.len(), 3);
    for mesh in &expressive {
        assert_eq!(mesh.target_names, vec!["Angry", "Surprised", "Sad"]);
        assert_eq!(mesh.default_weights, vec![0.0; 3]);
        for prim in &mesh.primitives {
            assert_eq!(prim.targets.len(), 3);
            assert!(
                prim.targets.iter().all(|t| t.normals.is_empty()),
                "POSITION-only targets"
            );
        }
    }
    let moving = expressive
        .iter()
        .flat_map(|m| &m.primitives)
        .flat_map(|p| &p.targets)
        .filter(|t| max_abs(&t.positions) > 0.0)
        .count();
    assert!(moving > 0, "some expression target moves vertices");

    // Hierarchy: Head_2 (node 6, mesh 3) hangs under Head_1 under Head under Neck.
    let head = avatar.find_node("Head").unwrap();
    let head_2 = avatar.find_node("Head_2").unwrap();
    assert_eq!(avatar.nodes[head_2].mesh, Some(3));
    assert_eq!(
        avatar.nodes[avatar.nodes[head_2].parent.unwrap()].parent,
        Some(head)
    );
    assert_eq!(avatar.nodes[head].parent, avatar.find_node("Neck"));
    let mut root = head_2;
    while let Some(parent) = avatar.nodes[root].parent {
        root = parent;
    }
    assert_eq!(root, 83);
    let hand_l = &avatar.nodes[avatar.find_node("HandL").unwrap()];
    assert!((hand_l.rotation.x + std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
    assert!(avatar.bounds().is_some());
    assert_eq!(avatar.materials.len(), 3);
    assert_eq!(avatar.materials[1].name.as_deref(), Some("Main"));
}

// ---------------------------------------------------------------------------------------------
// A hand-built GLB: every feature the loader handles, small enough to truncate at every byte.

/// Packs JSON text and BIN bytes into a GLB.
fn glb(json: &str, bin: &[u8]) -> Vec<u8> {
    crate::support::glb(json.as_bytes(), bin)
}

fn floats(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A 2×2 PNG with four distinct pixels.
fn tiny_png() -> (RgbaImage, Vec<u8>) {
    let image = RgbaImage {
        width: 2,
        height: 2,
        data: vec![
            255, 0, 0, 255, 0, 255, 0, 128, 0, 0, 255, 255, 10, 20, 30, 0,
        ],
    };
    let png = image.to_png().unwrap();
    (image, png)
}

/// The JSON and BIN of the hand-built avatar: one triangle with normals, UVs and u16 indices;
/// target "smile" dense (POSITION + NORMAL), target "blink" a sparse POSITION accessor without a
/// buffer view; a PNG in a buffer view as the base colour texture; a two-node hierarchy whose
/// child overrides the mesh weights.
fn hand_built() -> (String, Vec<u8>) {
    let (_, png) = tiny_png();
    let mut bin = Vec::new();
    bin.extend(floats(&[0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0])); // 0: positions
    bin.extend(floats(&[0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0])); // 36: normals
    bin.extend(floats(&[0.0, 0.0, 1.0, 0.0, 0.0, 1.0])); // 72: uvs
    bin.extend([0u8, 0, 1, 0, 2, 0, 0, 0]); // 96: indices + padding
    bin.extend(floats(&[0.0, 0.1, 0.0, 0.0, 0.2, 0.0, 0.0, 0.0, 0.0])); // 104: smile positions
    bin.extend(floats(&[0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])); // 140: smile normals
    bin.extend([2u8, 0, 0, 0]); // 176: blink sparse index + padding
    bin.extend(floats(&[0.0, 0.0, 0.5])); // 180: blink sparse value
    bin.extend(&png); // 192: image
    let json = format!(
        r#"{{"asset":{{"version":"2.0"}},"scene":0,"scenes":[{{"nodes":[0]}}],
"nodes":[{{"name":"Root","children":[1]}},{{"name":"Face","mesh":0,"translation":[0,1,0],"weights":[1,0]}}],
"meshes":[{{"name":"face","weights":[0.25,0],"extras":{{"targetNames":["smile","blink"]}},
 "primitives":[{{"attributes":{{"POSITION":0,"NORMAL":1,"TEXCOORD_0":2}},"indices":3,"material":0,
  "targets":[{{"POSITION":4,"NORMAL":5}},{{"POSITION":6}}]}}]}}],
"materials":[{{"name":"skin","pbrMetallicRoughness":{{"baseColorFactor":[1,0.5,0.25,1],"baseColorTexture":{{"index":0}}}},"doubleSided":true}}],
"textures":[{{"source":0}}],
"images":[{{"bufferView":7,"mimeType":"image/png"}}],
"buffers":[{{"byteLength":{bin_len}}}],
"bufferViews":[
 {{"buffer":0,"byteOffset":0,"byteLength":36}},
 {{"buffer":0,"byteOffset":36,"byteLength":36}},
 {{"buffer":0,"byteOffset":72,"byteLength":24}},
 {{"buffer":0,"byteOffset":96,"byteLength":6}},
 {{"buffer":0,"byteOffset":104,"byteLength":72}},
 {{"buffer":0,"byteOffset":176,"byteLength":2}},
 {{"buffer":0,"byteOffset":180,"byteLength":12}},
 {{"buffer":0,"byteOffset":192,"byteLength":{png_len}}}],
"accessors":[
 {{"bufferView":0,"componentType":5126,"count":3,"type":"VEC3","min":[0,0,0],"max":[1,1,0]}},
 {{"bufferView":1,"componentType":5126,"count":3,"type":"VEC3"}},
 {{"bufferView":2,"componentType":5126,"count":3,"type":"VEC2"}},
 {{"bufferView":3,"componentType":5123,"count":3,"type":"SCALAR"}},
 {{"bufferView":4,"byteOffset":0,"componentType":5126,"count":3,"type":"VEC3"}},
 {{"bufferView":4,"byteOffset":36,"componentType":5126,"count":3,"type":"VEC3"}},
 {{"componentType":5126,"count":3,"type":"VEC3","sparse":{{"count":1,
   "indices":{{"bufferView":5,"componentType":5123}},"values":{{"bufferView":6}}}}}}]}}"#,
        bin_len = bin.len(),
        png_len = png.len()
    );
    (json, bin)
}

#[test]
fn hand_built_glb_loads_every_feature() {
    let (json, bin) = hand_built();
    let avatar = avatar::load_slice(&glb(&json, &bin), "hand-built.glb").unwrap();
    assert_eq!(avatar.source, "hand-built.glb");
    assert_eq!(avatar.roots, vec![0]);
    assert_eq!(avatar.nodes[0].children, vec![1]);
    assert_eq!(avatar.nodes[1].parent, Some(0));
    assert_eq!(avatar.nodes[1].translation, Vec3::Y);
    assert_eq!(avatar.nodes[1].weights, Some(vec![1.0, 0.0]));

    let mesh = &avatar.meshes[0];
    assert_eq!(mesh.target_names, vec!["smile", "blink"]);
    assert_eq!(mesh.default_weights, vec![0.25, 0.0]);
    assert_eq!(
        avatar.rest_pose().weights,
        vec![vec![1.0, 0.0]],
        "node weights override"
    );
    let prim = &mesh.primitives[0];
    assert_eq!(prim.indices, vec![0, 1, 2]);
    assert_eq!(prim.uvs, vec![Vec2::ZERO, Vec2::X, Vec2::Y]);
    assert_eq!(prim.material, Some(0));
    assert_eq!(prim.targets[0].positions[1], Vec3::new(0.0, 0.2, 0.0));
    assert_eq!(prim.targets[0].normals[0], Vec3::new(0.1, 0.0, 0.0));
    assert_eq!(
        prim.targets[1].positions,
        vec![Vec3::ZERO, Vec3::ZERO, Vec3::new(0.0, 0.0, 0.5)],
        "sparse accessor without a buffer view: zeros plus the substituted vertex"
    );
    assert!(prim.targets[1].normals.is_empty());

    let material = &avatar.materials[0];
    assert_eq!(material.base_color, [1.0, 0.5, 0.25, 1.0]);
    assert_eq!(material.base_color_texture, Some(0));
    assert!(material.double_sided);
    let (image, _) = tiny_png();
    assert_eq!(
        (avatar.textures[0].width, avatar.textures[0].height),
        (2, 2)
    );
    assert_eq!(avatar.textures[0].rgba, image.data);

    // Blend the way the renderer will: both weights, every output form.
    let blender = CpuBlender::new(prim);
    let weights = [0.5, 1.0];
    let mut interleaved = vec![0.0; 18];
    blender
        .blend_interleaved(&weights, &mut interleaved)
        .unwrap();
    assert!(close(
        Vec3::from_slice(&interleaved[6..]),
        Vec3::new(1.0, 0.1, 0.0)
    ));
    assert!(close(
        Vec3::from_slice(&interleaved[12..]),
        Vec3::new(0.0, 1.0, 0.5)
    ));
    assert!(close(
        Vec3::from_slice(&interleaved[3..]),
        Vec3::new(0.05, 0.0, 1.0)
    ));
}

/// Loads hostile bytes: an error is fine, a contained decoder panic is a failure of the checks.
fn load_hostile(bytes: &[u8], what: &str) -> Result<Avatar, AvatarError> {
    let result = avatar::load_slice(bytes, what);
    if let Err(error @ AvatarError::DecoderPanic { .. }) = &result {
        panic!("{what}: the loader's checks let a decoder panic through: {error}");
    }
    result
}

/// Rewrites the GLB header's total length, so a truncated file passes the header check and
/// reaches the chunk and JSON parsers.
fn with_declared_length(bytes: &[u8]) -> Vec<u8> {
    let mut bytes = bytes.to_vec();
    if bytes.len() >= 12 {
        let len = (bytes.len() as u32).to_le_bytes();
        bytes[8..12].copy_from_slice(&len);
    }
    bytes
}

#[test]
fn every_truncation_of_a_glb_is_an_error() {
    let (json, bin) = hand_built();
    let bytes = glb(&json, &bin);
    for n in 0..bytes.len() {
        let cut = &bytes[..n];
        assert!(
            load_hostile(cut, &format!("cut at {n}")).is_err(),
            "cut at {n}"
        );
        let patched = with_declared_length(cut);
        assert!(load_hostile(&patched, &format!("cut at {n}, length patched")).is_err());
    }
    assert!(load_hostile(&bytes, "whole").is_ok());
}

#[test]
fn truncated_robot_expressive_is_an_error() {
    let Some(dir) = crate::support::fixtures("RobotExpressive GLB") else {
        return;
    };
    let bytes = std::fs::read(dir.join("gltf/RobotExpressive/RobotExpressive.glb")).unwrap();
    let step = bytes.len() / 97;
    for n in (0..bytes.len()).step_by(step).chain([bytes.len() - 1]) {
        let cut = with_declared_length(&bytes[..n]);
        assert!(
            load_hostile(&cut, &format!("robot cut at {n}")).is_err(),
            "cut at {n}"
        );
    }
}

#[test]
fn corrupted_glb_bytes_never_panic() {
    let (json, bin) = hand_built();
    let bytes = glb(&json, &bin);
    // xorshift64*, seeded: the same corruptions every run.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let (mut loaded, mut rejected) = (0, 0);
    for round in 0..3000 {
        let mut corrupt = bytes.clone();
        for _ in 0..1 + next() % 4 {
            let at = (next() % corrupt.len() as u64) as usize;
            corrupt[at] = if round % 2 == 0 {
                next() as u8
            } else {
                corrupt[at] ^ (1 << (next() % 8))
            };
        }
        match load_hostile(&corrupt, &format!("corruption round {round}")) {
            Ok(_) => loaded += 1,
            Err(_) => rejected += 1,
        }
    }
    // Many flips land in float data or image bytes and still load; many break the structure.
    assert!(
        loaded > 0 && rejected > 0,
        "loaded {loaded}, rejected {rejected}"
    );
}

#[test]
fn inconsistent_documents_are_errors_naming_the_problem() {
    let (json, bin) = hand_built();
    let replace = |from: &str, to: &str| {
        assert!(json.contains(from), "{from}");
        json.replacen(from, to, 1)
    };
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "zero count",
            replace(
                r#""count":3,"type":"VEC3","min""#,
                r#""count":0,"type":"VEC3","min""#,
            ),
            "count 0",
        ),
        (
            "huge count",
            replace(
                r#""count":3,"type":"VEC3","min""#,
                r#""count":4000000000,"type":"VEC3","min""#,
            ),
            "run past",
        ),
        (
            "huge offset",
            replace(
                r#""byteOffset":36,"componentType""#,
                r#""byteOffset":18446744073709551000,"componentType""#,
            ),
            "run past",
        ),
        (
            "index layout",
            replace(
                r#""componentType":5123,"count":3,"type":"SCALAR""#,
                r#""componentType":5126,"count":3,"type":"SCALAR""#,
            ),
            "not valid here",
        ),
        (
            "target count",
            replace(r#"{"POSITION":6}"#, r#"{"POSITION":0},{"POSITION":6}"#),
            "morph targets",
        ),
        (
            "short sparse target",
            replace(
                r#""componentType":5126,"count":3,"type":"VEC3","sparse""#,
                r#""componentType":5126,"count":2,"type":"VEC3","sparse""#,
            ),
            "3 vertices",
        ),
        (
            "huge sparse target",
            replace(
                r#""componentType":5126,"count":3,"type":"VEC3","sparse""#,
                r#""componentType":5126,"count":1099511627776,"type":"VEC3","sparse""#,
            ),
            "3 vertices",
        ),
        (
            "sparse values out of view",
            replace(r#""sparse":{"count":1"#, r#""sparse":{"count":9"#),
            "sparse",
        ),
        (
            "cycle",
            replace(
                r#""mesh":0,"translation""#,
                r#""children":[0],"mesh":0,"translation""#,
            ),
            "cycle",
        ),
        (
            "mesh weights",
            replace(r#""weights":[0.25,0]"#, r#""weights":[0.25]"#),
            "face",
        ),
        (
            "view past buffer",
            replace(
                r#""byteOffset":72,"byteLength":24"#,
                r#""byteOffset":72,"byteLength":2400"#,
            ),
            "past the end",
        ),
    ];
    for (what, json, needle) in cases {
        let error = load_hostile(&glb(&json, &bin), what).expect_err(what);
        let message = error.to_string();
        assert!(
            message.starts_with(what),
            "{what}: message does not name the file: {message}"
        );
        assert!(message.contains(needle), "{what}: {message}");
    }

    // Binary-level damage: an index out of range and a NaN position.
    let mut bad_index = bin.clone();
    bad_index[100] = 9;
    let error = load_hostile(&glb(&json, &bad_index), "bad index").unwrap_err();
    assert!(error.to_string().contains("index 9"), "{error}");
    let mut nan = bin.clone();
    nan[12..16].copy_from_slice(&f32::NAN.to_le_bytes());
    let error = load_hostile(&glb(&json, &nan), "nan").unwrap_err();
    assert!(
        error
            .to_string()
            .contains("non-finite position at vertex 1"),
        "{error}"
    );
    let mut nan_delta = bin.clone();
    nan_delta[116..120].copy_from_slice(&f32::INFINITY.to_le_bytes());
    let error = load_hostile(&glb(&json, &nan_delta), "inf delta").unwrap_err();
    assert!(error.to_string().contains("target 0"), "{error}");

    // A texture the decoder cannot read degrades to a placeholder instead of failing the load.
    let no_mime = json.replacen(r#","mimeType":"image/png""#, "", 1);
    let avatar = load_hostile(&glb(&no_mime, &bin), "no mime").unwrap();
    assert_eq!(
        (avatar.textures[0].width, avatar.textures[0].height),
        (1, 1)
    );
}

#[test]
fn json_errors_name_the_json_path_not_a_column_of_the_one_line_glb() {
    // Node 1's second child is -1: glTF indices are unsigned. The GLB's JSON is one line of
    // over a kilobyte, where serde_json's own message points at "line 1 column 1049".
    let (json, bin) = hand_built();
    let json = json.replace('\n', "");
    let bad = json.replacen(r#""children":[1]"#, r#""children":[1,-1]"#, 1);
    assert_ne!(bad, json);
    let error = load_hostile(&glb(&bad, &bin), "bad-index.glb").unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, AvatarError::Json { .. }), "{message}");
    assert!(
        message.starts_with("bad-index.glb: invalid glTF JSON at nodes[0].children[1]: "),
        "{message}"
    );
    assert!(message.contains("-1"), "{message}");
    assert!(!message.contains("column"), "{message}");

    // A value of the wrong type deep in a mesh.
    let bad = json.replacen(r#""weights":[0.25,0]"#, r#""weights":[0.25,"zero"]"#, 1);
    let message = load_hostile(&glb(&bad, &bin), "type")
        .unwrap_err()
        .to_string();
    assert!(message.contains("at meshes[0].weights[1]: "), "{message}");
    // A misspelt enum parses, then fails validation, whose message names its path too.
    let bad = json.replacen(r#""type":"VEC2""#, r#""type":"VEC9""#, 1);
    let error = load_hostile(&glb(&bad, &bin), "enum").unwrap_err();
    let message = facewire::diagnostic::with_causes(&error);
    assert!(message.contains("accessors[2].type"), "{message}");
}

#[test]
fn a_short_binary_chunk_gives_its_lengths() {
    let (json, bin) = hand_built();
    let mut bytes = glb(&json, &bin);
    // Declare four more bytes in the binary chunk than follow it, keeping the header's length.
    let json_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let at = 20 + json_len;
    let declared = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) + 4;
    bytes[at..at + 4].copy_from_slice(&declared.to_le_bytes());
    let message = load_hostile(&bytes, "short-bin.glb")
        .unwrap_err()
        .to_string();
    assert_eq!(
        message,
        format!(
            "short-bin.glb: malformed GLB container: the binary chunk declares {declared} bytes, \
             but only {} follow its header at byte {at} (the file has {} bytes; truncated?)",
            declared - 4,
            bytes.len()
        )
    );
    assert!(
        !message.contains('\0') && !message.contains("\\0"),
        "{message:?}"
    );
}

#[test]
fn missing_file_and_external_references_are_errors() {
    let error = avatar::load(Path::new("/nonexistent/facewire/avatar.glb")).unwrap_err();
    assert!(matches!(error, AvatarError::Io { .. }), "{error}");
    assert!(
        error
            .to_string()
            .contains("/nonexistent/facewire/avatar.glb"),
        "{error}"
    );

    let Some(path) = khronos("SimpleMorph/glTF/SimpleMorph.gltf") else {
        return;
    };
    // The same JSON in memory cannot resolve its external buffers.
    let bytes = std::fs::read(&path).unwrap();
    let error = avatar::load_slice(&bytes, "SimpleMorph in memory").unwrap_err();
    assert!(
        matches!(error, AvatarError::Buffer { buffer: 0, .. }),
        "{error}"
    );
    assert!(
        error.to_string().contains("simpleMorphGeometry.bin"),
        "{error}"
    );
}

//! What the fuzz targets share: the checks run on a loaded avatar (everything the stage does
//! with it short of the GL), the default head, and frames that drive every channel.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use facewire::arkit::{Channel, FaceFrame, Protocol};
use facewire::avatar::blend::{skin_reference, CpuBlender};
use facewire::avatar::correctives::Correctives;
use facewire::avatar::material_binds;
use facewire::avatar::spring::SpringSim;
use facewire::avatar::{self, Avatar, Bust, Humanoid, LoadLimits, Pose};
use facewire::mapping::{self, CompiledMapping, MappingFile, DEFAULT_HEAD_MAPPING};
use glam::{Quat, Vec3};

/// The limits fuzzed avatars load within: a small texture budget (256² RGBA), so an image
/// header asking for a huge texture is shrunk rather than slowing every run.
pub const LIMITS: LoadLimits = LoadLimits {
    texture_budget: 256 * 256 * 4,
};

/// The default head, loaded once.
pub fn default_head() -> &'static Avatar {
    static HEAD: OnceLock<Avatar> = OnceLock::new();
    HEAD.get_or_init(|| {
        avatar::load_slice(facewire::headgen::DEFAULT_HEAD_GLB, "default head")
            .expect("the default head loads")
    })
}

/// The default head's mapping compiled against it, once.
pub fn default_mapping() -> &'static CompiledMapping {
    static MAPPING: OnceLock<CompiledMapping> = OnceLock::new();
    MAPPING.get_or_init(|| {
        let file = MappingFile::parse(DEFAULT_HEAD_MAPPING, "default_head.toml").expect("parses");
        CompiledMapping::compile(&file, default_head()).expect("compiles")
    })
}

/// A frame with every channel at `value` and the head and eyes turned by it.
pub fn frame(value: f32) -> FaceFrame {
    let mut f = FaceFrame::empty(
        Protocol::Vmc,
        std::net::SocketAddr::from(([127, 0, 0, 1], 1)),
        Instant::now(),
    );
    for &c in Channel::ALL.iter() {
        f.set(c, value);
    }
    let turn = Quat::from_euler(glam::EulerRot::YXZ, value, -value * 0.5, value * 0.3);
    f.head = Some(turn);
    f.left_eye = Some(turn);
    f.right_eye = Some(turn);
    f
}

/// Panics with `what` unless every weight, rotation, translation, material value and wrinkle
/// strength of `pose` is finite and every weight within the largest magnitude a mapping writes.
pub fn assert_pose_finite(pose: &Pose, what: &str) {
    let limit = mapping::file::MAX_MAGNITUDE;
    for (m, weights) in pose.weights.iter().enumerate() {
        if let Some(t) = weights
            .iter()
            .position(|w| !w.is_finite() || w.abs() > limit)
        {
            panic!("{what}: weight {t} of mesh {m} is {}", weights[t]);
        }
    }
    assert!(
        pose.rotations.iter().all(|q| q.is_finite()),
        "{what}: a rotation is not finite"
    );
    assert!(
        pose.translations.iter().all(|t| t.is_finite()),
        "{what}: a translation is not finite"
    );
    assert!(
        pose.wrinkles.iter().all(|w| (0.0..=1.0).contains(w)),
        "{what}: wrinkles {:?}",
        pose.wrinkles
    );
}

/// Panics unless every index `avatar` keeps names something it has and its geometry is finite:
/// what the loader promises the renderer and the simulation.
pub fn assert_consistent(avatar: &Avatar) {
    let nodes = avatar.nodes.len();
    let meshes = avatar.meshes.len();
    let materials = avatar.materials.len();
    let textures = avatar.textures.len();
    assert!(avatar.roots.iter().all(|&r| r < nodes), "a root");
    for (i, node) in avatar.nodes.iter().enumerate() {
        assert!(node.parent.is_none_or(|p| p < nodes), "node {i}'s parent");
        assert!(
            node.children.iter().all(|&c| c < nodes),
            "node {i}'s children"
        );
        assert!(node.mesh.is_none_or(|m| m < meshes), "node {i}'s mesh");
        assert!(
            node.translation.is_finite() && node.rotation.is_finite() && node.scale.is_finite(),
            "node {i}'s transform"
        );
    }
    for (m, mesh) in avatar.meshes.iter().enumerate() {
        let targets = mesh.target_count();
        assert_eq!(mesh.default_weights.len(), targets, "mesh {m}'s weights");
        for (p, prim) in mesh.primitives.iter().enumerate() {
            let n = prim.positions.len();
            let at = format!("mesh {m} primitive {p}");
            assert!(
                prim.indices.iter().all(|&i| (i as usize) < n),
                "{at}: an index"
            );
            assert!(
                prim.positions.iter().all(|v| v.is_finite()),
                "{at}: a position"
            );
            assert!(prim.normals.iter().all(|v| v.is_finite()), "{at}: a normal");
            assert!(prim.uvs.iter().all(|v| v.is_finite()), "{at}: a uv");
            assert!(
                prim.material.is_none_or(|i| i < materials),
                "{at}: material"
            );
            assert_eq!(prim.targets.len(), targets, "{at}: targets");
            for (t, target) in prim.targets.iter().enumerate() {
                assert_eq!(target.positions.len(), n, "{at} target {t}");
                assert!(
                    target.positions.iter().all(|d| d.is_finite()),
                    "{at} target {t}: a delta"
                );
            }
            assert!(
                prim.joint_weights.iter().all(|w| w.is_finite()),
                "{at}: a joint weight"
            );
            assert!(prim.colors.iter().all(|c| c.is_finite()), "{at}: a colour");
        }
    }
    for (i, material) in avatar.materials.iter().enumerate() {
        let toon = material.toon.as_ref();
        for texture in [
            material.base_color_texture,
            material.emissive_texture,
            toon.and_then(|t| t.shade_texture),
            toon.and_then(|t| t.rim_texture),
            toon.and_then(|t| t.matcap_texture),
        ]
        .into_iter()
        .flatten()
        {
            assert!(texture < textures, "material {i} samples texture {texture}");
        }
    }
    for (i, texture) in avatar.textures.iter().enumerate() {
        let bytes = u64::from(texture.width) * u64::from(texture.height) * 4;
        assert!(
            texture.rgba.is_empty() || texture.rgba.len() as u64 == bytes,
            "texture {i}: {}x{} with {} bytes",
            texture.width,
            texture.height,
            texture.rgba.len()
        );
    }
    assert_eq!(avatar.texture_names.len(), textures, "texture names");
    for (s, skin) in avatar.skins.iter().enumerate() {
        assert!(skin.joints.iter().all(|&j| j < nodes), "skin {s}'s joints");
        assert!(
            skin.inverse_bind.iter().all(|m| m.is_finite()),
            "skin {s}'s inverse bind matrices"
        );
    }
    if let Some(vrm) = &avatar.vrm {
        assert!(
            vrm.humanoid.iter().all(|&(_, n)| n < nodes),
            "a humanoid bone"
        );
        for e in &vrm.expressions {
            for bind in &e.binds {
                assert!(
                    bind.mesh < meshes && bind.target < avatar.meshes[bind.mesh].target_count(),
                    "expression {}: bind {bind:?}",
                    e.name
                );
                assert!(bind.weight.is_finite(), "expression {}: weight", e.name);
            }
        }
    }
    if let Some(rig) = &avatar.springs {
        for spring in &rig.springs {
            for joint in &spring.joints {
                assert!(joint.node < nodes, "spring joint node {}", joint.node);
                assert!(joint.tail.is_finite(), "spring joint tail");
            }
            assert!(spring.center.is_none_or(|c| c < nodes), "spring centre");
            assert!(
                spring
                    .collider_groups
                    .iter()
                    .all(|&g| g < rig.collider_groups.len()),
                "spring collider group"
            );
        }
        assert!(
            rig.colliders.iter().all(|c| c.node < nodes),
            "collider node"
        );
        assert!(
            rig.collider_groups
                .iter()
                .flatten()
                .all(|&c| c < rig.colliders.len()),
            "collider group member"
        );
    }
    for group in &avatar.lods {
        assert!(group.levels.iter().all(|&n| n < nodes), "LOD level node");
    }
}

/// Everything the stage and `facewire snapshot` do with a loaded avatar short of the GL: the
/// arms brought to rest, the correctives, the automatic mapping and the default head's, a pose
/// with every channel and every target at full weight, the material binds, the CPU blend and
/// skinning, the framing and a few frames of the spring bones. Panics where a value the
/// renderer would receive is not finite.
pub fn exercise(mut avatar: Avatar) {
    assert_consistent(&avatar);
    avatar::rest_pose::relax(&mut avatar, &avatar::ArmRest::default());
    assert_consistent(&avatar);
    let _ = Humanoid::detect(&avatar);
    let _ = Bust::of(&avatar);
    let _ = avatar.bounds();
    let _ = avatar.deformation_bounds();

    let correctives = Correctives::resolve(&avatar);
    let auto = CompiledMapping::auto(&avatar);
    let file = MappingFile::parse(DEFAULT_HEAD_MAPPING, "default_head.toml").expect("parses");
    let compiled = CompiledMapping::compile(&file, &avatar).ok();
    let presets = facewire::session::avatar_presets(&avatar);
    let _ = presets.len();

    let mut pose = avatar.rest_pose();
    for mapping in std::iter::once(&auto).chain(compiled.as_ref()) {
        for value in [0.0, 1.0] {
            pose = avatar.rest_pose();
            mapping.apply(&frame(value), &mut pose);
            mapping.sliders.apply(
                &facewire::look::Look::default().values(&mapping.sliders),
                &mut pose,
            );
            correctives.apply(&mut pose);
            mapping::wrinkles::apply(&mapping.wrinkles, &mut pose);
            assert_pose_finite(&pose, "a frame through the mapping");
        }
    }

    // Every target at full weight, every node turned a little.
    for weights in &mut pose.weights {
        weights.fill(1.0);
    }
    for (i, rotation) in pose.rotations.iter_mut().enumerate() {
        *rotation = Quat::from_rotation_y(0.1 * (i % 7) as f32);
    }
    correctives.apply(&mut pose);
    if let Some(vrm) = &avatar.vrm {
        for e in &vrm.expressions {
            for bind in &e.material_binds {
                if let Ok(resolved) = material_binds::resolve(bind, &avatar.materials) {
                    resolved.apply(1.0, &mut pose.materials);
                }
            }
        }
    }
    assert_pose_finite(&pose, "every target at 1");

    // The CPU morph path and the skinning after it.
    let world = avatar.world_transforms(&pose);
    assert!(world.iter().all(|m| m.is_finite()), "a world transform");
    for (index, node) in avatar.nodes.iter().enumerate() {
        let Some(mesh) = node.mesh else { continue };
        let joints = avatar
            .node_skin(index)
            .map(|skin| avatar.joint_matrices(skin, &world))
            .unwrap_or_default();
        for prim in &avatar.meshes[mesh].primitives {
            let blender = CpuBlender::new(prim);
            let n = blender.vertex_count();
            let mut positions = vec![Vec3::ZERO; n];
            let mut normals = vec![Vec3::ZERO; n];
            blender
                .blend(&pose.weights[mesh], &mut positions, &mut normals)
                .expect("outputs sized by the blender");
            let mut interleaved = vec![0.0; n * 6];
            blender
                .blend_interleaved(&pose.weights[mesh], &mut interleaved)
                .expect("sized");
            let (skinned, _) = skin_reference(prim, &positions, &normals, &joints, world[index]);
            assert_eq!(skinned.len(), n);
        }
    }

    // The spring bones, a few frames of a head turn.
    if let Some(mut sim) = SpringSim::for_avatar(&avatar) {
        let mut pose = avatar.rest_pose();
        for f in 0..6 {
            if let Some(r) = pose.rotations.first_mut() {
                *r = Quat::from_rotation_y(f as f32 * 0.1);
            }
            let dt = if f == 0 { 0.0 } else { 1.0 / 60.0 };
            sim.step(&avatar, &mut pose, Duration::from_secs_f32(dt));
            assert_pose_finite(&pose, "a spring step");
        }
        let _ = sim.is_moving();
    }

    avatar.release_texture_pixels();
    avatar.release_target_deltas();
}

/// Packs a JSON chunk and a BIN chunk into a GLB container, each padded to four bytes.
pub fn glb(json: &[u8], bin: &[u8]) -> Vec<u8> {
    let mut json = json.to_vec();
    json.resize(json.len().next_multiple_of(4), b' ');
    let mut bin = bin.to_vec();
    bin.resize(bin.len().next_multiple_of(4), 0);
    let total = 12 + 8 + json.len() + 8 + bin.len();
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(b"glTF");
    out.extend(2u32.to_le_bytes());
    out.extend((total as u32).to_le_bytes());
    out.extend((json.len() as u32).to_le_bytes());
    out.extend_from_slice(b"JSON");
    out.extend(json);
    out.extend((bin.len() as u32).to_le_bytes());
    out.extend_from_slice(b"BIN\0");
    out.extend(bin);
    out
}

/// The fixed BIN chunk of the `gltf_json` target: 4 KiB holding a unit triangle's positions,
/// normals, indices, a morph delta, joints and weights at known offsets, then a ramp of bytes,
/// so that mutated accessors read plausible data wherever they point.
pub fn fixed_bin() -> &'static [u8] {
    static BIN: OnceLock<Vec<u8>> = OnceLock::new();
    BIN.get_or_init(|| {
        let mut bin = Vec::with_capacity(4096);
        let floats: [f32; 36] = [
            // 0: positions
            0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, //
            // 36: normals
            0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, //
            // 72: a morph target's deltas
            0.0, 0.1, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.1, //
            // 108: uvs, then weights (one joint each)
            0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0,
        ];
        for f in floats {
            bin.extend(f.to_le_bytes());
        }
        // 144: indices (u16), then 152: joints (u8 × 4 per vertex)
        for i in [0u16, 1, 2, 0] {
            bin.extend(i.to_le_bytes());
        }
        bin.extend([0u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        // 164: three weights of [1, 0, 0, 0]
        for _ in 0..3 {
            for w in [1.0f32, 0.0, 0.0, 0.0] {
                bin.extend(w.to_le_bytes());
            }
        }
        // 212: the rest, a ramp
        let mut k = 0u8;
        while bin.len() < 4096 {
            bin.push(k);
            k = k.wrapping_add(37);
        }
        bin
    })
}

//! The generator of facewire's default avatar head (`models/default_head.glb`): a stylised,
//! friendly head built from code, with all 52 ARKit morph targets and face-shape ("look") targets.
//!
//! - [`face`]: proportions and the skin surface with its eye and mouth slits.
//! - [`parts`]: neck (its own root node, so it stays put while the head turns), mouth
//!   interior, hair cap and eyeball.
//! - [`targets`]: the ARKit morph targets as displacement fields.
//! - [`look`]: the face-shape ("look") targets, two per slider, after the 52 ARKit ones.
//! - [`correctives`]: corrective targets for a look target and an expression together
//!   (`look_eye_size_up*eyeBlinkLeft`), after the look targets.
//! - [`pairs`]: corrective targets for two expressions together (`jawOpen*mouthSmileLeft`),
//!   after the look correctives.
//! - [`texture`]: the painted texture atlas.
//! - [`glb`]: the GLB writer.
//! - [`mesh`], [`math`]: building blocks (triangle builder, normals, mirror map, portable trig).
//! - [`morph`]: a target from position deltas (short ones dropped, the normal deltas of the
//!   moved surface), shared with [`objimport`](crate::objimport).
//!
//! Everything is deterministic: no hash-map iteration, no clock, no platform maths library, so
//! [`generate`] returns the same bytes on every machine and the committed file can be checked
//! byte for byte.

pub mod correctives;
pub mod face;
pub mod glb;
pub mod look;
pub mod math;
pub mod mesh;
pub mod morph;
pub mod pairs;
pub mod parts;
pub mod targets;
pub mod texture;
pub mod wrinkles;

use glam::Vec3;

use crate::arkit::Channel;
use glb::{Document, MaterialDef, MeshDef, NodeDef, PrimitiveDef, TargetDef};
use mesh::MeshBuilder;
use targets::Rig;

/// Where the default head lives, relative to the repository root.
pub const DEFAULT_HEAD: &str = "models/default_head.glb";

/// The default head, built into the binary so facewire runs from any directory.
pub const DEFAULT_HEAD_GLB: &[u8] = include_bytes!("../../models/default_head.glb");

/// Head rotation pivot (the `Head` node's origin): the top of the neck, under the skull.
pub const HEAD_PIVOT: Vec3 = Vec3::new(0.0, 0.075, -0.015);

/// Position deltas shorter than this are dropped (m).
const POSITION_EPS: f32 = 1e-6;
/// Corrective position deltas shorter than this are dropped (m): a hundredth of a millimetre is
/// invisible, and the correctives are many.
const CORRECTIVE_EPS: f32 = 1e-5;
/// Position deltas shorter than this are dropped from the coarser levels' targets (m).
const LOD_POSITION_EPS: f32 = 3e-4;
/// Corrective position deltas shorter than this are dropped from the coarser levels (m).
const LOD_CORRECTIVE_EPS: f32 = 3e-4;

/// Material indices, in glTF order.
const SKIN: usize = 0;
const HAIR: usize = 1;
const MOUTH: usize = 2;
const EYE: usize = 3;

/// Generates the default head as GLB bytes (identical on every run and machine).
pub fn generate() -> Vec<u8> {
    glb::write(&document())
}

/// Names of the level-of-detail meshes and nodes, level 0 first.
pub const FACE_LEVELS: [&str; face::LEVELS] = ["Face", "Face_LOD1", "Face_LOD2"];

/// Drop thresholds of one level of detail's targets.
#[derive(Debug, Clone, Copy)]
struct Thresholds {
    /// Position deltas shorter than this are dropped (m).
    position: f32,
    /// Corrective position deltas shorter than this are dropped (m).
    corrective: f32,
    /// Normal deltas shorter than this are dropped; `None` writes no normal deltas at all.
    normal: Option<f32>,
}

/// The thresholds of level `lod`. Level 0 keeps everything visible up close. The coarser levels
/// are only drawn small on screen, where a few tenths of a millimetre are well below a pixel:
/// they drop more, and carry no normal deltas (their expressions shade with the neutral
/// normals), so the file stays small.
fn thresholds(lod: usize) -> Thresholds {
    if lod == 0 {
        Thresholds {
            position: POSITION_EPS,
            corrective: CORRECTIVE_EPS,
            normal: Some(morph::NORMAL_EPS),
        }
    } else {
        Thresholds {
            position: LOD_POSITION_EPS,
            corrective: LOD_CORRECTIVE_EPS,
            normal: None,
        }
    }
}

/// The face mesh at level of detail `lod` (0 is the full mesh): skin, mouth interior and hair,
/// with every ARKit, look and corrective target, evaluated on that level's vertices.
pub fn face_mesh(lod: usize) -> MeshDef {
    let eps = thresholds(lod);
    let rig = Rig::new(lod);
    let builders = rig.primitives();
    let normals: Vec<Vec<Vec3>> = builders
        .iter()
        .map(|b| b.normals_of(&b.positions))
        .collect();
    let mut targets: [Vec<TargetDef>; 3] = Default::default();
    for channel in Channel::ALL {
        let deltas = rig.deltas(channel);
        for (k, (b, d)) in builders.iter().zip(deltas).enumerate() {
            targets[k].push(target(b, &normals[k], d, eps));
        }
    }
    for slider in &look::LOOK_SLIDERS {
        for value in [1.0, -1.0] {
            let deltas = look::deltas(&rig, slider, value);
            for (k, (b, d)) in builders.iter().zip(deltas).enumerate() {
                targets[k].push(target(b, &normals[k], d, eps));
            }
        }
    }
    let correctives = correctives::correctives(&rig);
    for c in &correctives {
        let look = look::deltas(&rig, &c.slider, c.value);
        let expr = rig.deltas(c.channel);
        for (k, b) in builders.iter().enumerate() {
            targets[k].push(corrective_target(
                b,
                &normals[k],
                &look[k],
                &expr[k],
                &c.deltas[k],
                eps,
            ));
        }
    }
    let pairs = pairs::pair_correctives(&rig);
    for c in &pairs {
        let [a, b] = c.channels.map(|channel| rig.deltas(channel));
        for (k, builder) in builders.iter().enumerate() {
            targets[k].push(corrective_target(
                builder,
                &normals[k],
                &a[k],
                &b[k],
                &c.deltas[k],
                eps,
            ));
        }
    }
    let materials = [SKIN, MOUTH, HAIR];
    let primitives = builders
        .iter()
        .zip(normals)
        .zip(targets)
        .zip(materials)
        .map(|(((b, n), t), material)| primitive(b, n, material, t, HEAD_PIVOT))
        .collect();
    MeshDef {
        name: FACE_LEVELS[lod].into(),
        target_names: Channel::ALL
            .iter()
            .map(|c| c.name())
            .chain(look::target_names())
            .map(str::to_string)
            .chain(correctives.iter().map(|c| c.name.clone()))
            .chain(pairs.iter().map(|c| c.name.clone()))
            .collect(),
        primitives,
    }
}

/// How many levels of detail the committed head carries: all of [`face::LEVELS`] (the two
/// coarser levels add about 1.1 MB to the file, their geometry a quarter of that, the rest their
/// position-only targets).
pub const SHIPPED_LEVELS: usize = face::LEVELS;

/// The default head as a document, before serialisation, with [`SHIPPED_LEVELS`] levels.
pub fn document() -> Document {
    document_with_levels(SHIPPED_LEVELS)
}

/// The default head with `levels` face levels of detail (1 to [`face::LEVELS`]).
///
/// Nodes: `Head` (0, the pivot the mapping turns, no mesh) holds `Face` (1, level 0), the eyes
/// (2, 3) and the coarser levels `Face_LOD1`, `Face_LOD2` (4, 5), which `Face` lists in its
/// `MSFT_lod`; `Neck` (last) is the other root. The eyes are not under `Face`, so hiding a
/// level never hides them. Meshes: level 0, eyeball, neck, then the coarser levels.
pub fn document_with_levels(levels: usize) -> Document {
    let levels = levels.clamp(1, face::LEVELS);
    let face = face_mesh(0);
    let eye = parts::eyeball();
    let eye_normals = eye.normals_of(&eye.positions);
    let eye_mesh = MeshDef {
        name: "Eyeball".into(),
        target_names: Vec::new(),
        primitives: vec![primitive(&eye, eye_normals, EYE, Vec::new(), Vec3::ZERO)],
    };
    let neck = parts::neck();
    let neck_normals = neck.normals_of(&neck.positions);
    let neck_mesh = MeshDef {
        name: "Neck".into(),
        target_names: Vec::new(),
        primitives: vec![primitive(&neck, neck_normals, SKIN, Vec::new(), Vec3::ZERO)],
    };
    let eye_center = face::eye_center();
    let texture = texture::paint();
    let image_png = texture::encode_png(texture::SIZE, texture::SIZE, &texture).unwrap_or_default();
    // Nodes 4.. are the coarser levels, meshes 3.. their meshes.
    let lod_nodes: Vec<usize> = (1..levels).map(|l| 3 + l).collect();
    let neck_node = 3 + levels;
    let mut nodes = vec![
        NodeDef {
            name: "Head".into(),
            translation: HEAD_PIVOT,
            children: (1..4).chain(lod_nodes.iter().copied()).collect(),
            ..NodeDef::default()
        },
        NodeDef {
            name: FACE_LEVELS[0].into(),
            mesh: Some(0),
            lod: lod_nodes.clone(),
            ..NodeDef::default()
        },
        NodeDef {
            name: "LeftEye".into(),
            translation: eye_center - HEAD_PIVOT,
            mesh: Some(1),
            ..NodeDef::default()
        },
        NodeDef {
            name: "RightEye".into(),
            translation: mesh::mirror(eye_center) - HEAD_PIVOT,
            mesh: Some(1),
            ..NodeDef::default()
        },
    ];
    let mut meshes = vec![face, eye_mesh, neck_mesh];
    for (level, name) in FACE_LEVELS.iter().enumerate().take(levels).skip(1) {
        nodes.push(NodeDef {
            name: (*name).into(),
            mesh: Some(2 + level),
            ..NodeDef::default()
        });
        meshes.push(face_mesh(level));
    }
    nodes.push(NodeDef {
        name: "Neck".into(),
        mesh: Some(2),
        ..NodeDef::default()
    });
    Document {
        nodes,
        roots: vec![0, neck_node],
        meshes,
        materials: vec![
            MaterialDef {
                name: "Skin".into(),
                base_color: [1.0; 4],
                textured: true,
                double_sided: false,
                roughness: 0.8,
            },
            MaterialDef {
                name: "Hair".into(),
                base_color: [1.0; 4],
                textured: true,
                double_sided: true,
                roughness: 0.6,
            },
            MaterialDef {
                name: "Mouth".into(),
                base_color: [1.0; 4],
                textured: true,
                double_sided: true,
                roughness: 0.7,
            },
            MaterialDef {
                name: "Eye".into(),
                base_color: [1.0; 4],
                textured: true,
                double_sided: false,
                roughness: 0.3,
            },
        ],
        image_png,
        extra_images: wrinkles::TEXTURES
            .iter()
            .map(|(name, maps)| {
                let pixels = wrinkles::paint(*maps);
                let png = texture::encode_png(wrinkles::SIZE, wrinkles::SIZE, &pixels);
                (name.to_string(), png.unwrap_or_default())
            })
            .collect(),
    }
}

/// One target of one primitive: thresholded position deltas and the normal deltas of the
/// deformed surface.
fn target(b: &MeshBuilder, base_normals: &[Vec3], deltas: Vec<Vec3>, eps: Thresholds) -> TargetDef {
    morph::target(
        &b.positions,
        base_normals,
        deltas,
        eps.position,
        eps.normal,
        |moved| b.normals_of(moved),
    )
}

/// A corrective target of one primitive: position deltas below the corrective threshold dropped, and
/// the normal deltas that make the blended normals those of the combined surface (its two
/// inputs, a look target and an expression or two expressions, applied together, minus what
/// the two targets' own normal deltas add).
fn corrective_target(
    b: &MeshBuilder,
    base_normals: &[Vec3],
    look: &[Vec3],
    expr: &[Vec3],
    correction: &[Vec3],
    eps: Thresholds,
) -> TargetDef {
    let mut positions = correction.to_vec();
    morph::drop_short(&mut positions, eps.corrective);
    let Some(normal_eps) = eps.normal else {
        return TargetDef {
            positions,
            normals: Vec::new(),
        };
    };
    let shape = |parts: &[&[Vec3]]| -> Vec<Vec3> {
        let moved: Vec<Vec3> = b
            .positions
            .iter()
            .enumerate()
            .map(|(i, p)| parts.iter().fold(*p, |q, d| q + d[i]))
            .collect();
        b.normals_of(&moved)
    };
    let both = shape(&[look, expr, &positions]);
    let only_look = shape(&[look]);
    let only_expr = shape(&[expr]);
    let normals = (0..b.positions.len())
        .map(|i| {
            let dn = both[i] - only_look[i] - only_expr[i] + base_normals[i];
            if positions[i] == Vec3::ZERO || dn.length() < normal_eps {
                Vec3::ZERO
            } else {
                dn
            }
        })
        .collect();
    TargetDef { positions, normals }
}

/// A glTF primitive from a builder, with positions made relative to `origin`.
fn primitive(
    b: &MeshBuilder,
    normals: Vec<Vec3>,
    material: usize,
    targets: Vec<TargetDef>,
    origin: Vec3,
) -> PrimitiveDef {
    PrimitiveDef {
        positions: b.positions.iter().map(|p| *p - origin).collect(),
        normals,
        uvs: b.uvs.clone(),
        indices: b.indices.clone(),
        material,
        targets,
    }
}

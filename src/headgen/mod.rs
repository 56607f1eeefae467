//! The generator of facewire's default avatar head (`models/default_head.glb`): a stylised,
//! friendly head built from code, with all 52 ARKit morph targets and face-shape ("look") targets.
//!
//! - [`face`]: proportions and the skin surface with its eye and mouth slits.
//! - [`parts`]: neck (its own root node, so it stays put while the head turns), mouth
//!   interior, hair cap and eyeball.
//! - [`targets`]: the ARKit morph targets as displacement fields.
//! - [`looks`]: the face-shape ("look") targets, two per slider, after the 52 ARKit ones.
//! - [`correctives`]: corrective targets for a look target and an expression together
//!   (`look_eye_size_up*eyeBlinkLeft`), after the look targets.
//! - [`texture`]: the painted texture atlas.
//! - [`glb`]: the GLB writer.
//! - [`mesh`], [`math`]: building blocks (triangle builder, normals, mirror map, portable trig).
//!
//! Everything is deterministic: no hash-map iteration, no clock, no platform maths library, so
//! [`generate`] returns the same bytes on every machine and the committed file can be checked
//! byte for byte.

pub mod correctives;
pub mod face;
pub mod glb;
pub mod looks;
pub mod math;
pub mod mesh;
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

/// Head rotation pivot (the `Head` node's origin): the top of the neck, under the skull.
pub const HEAD_PIVOT: Vec3 = Vec3::new(0.0, 0.075, -0.015);

/// Position deltas shorter than this are dropped (m).
const POSITION_EPS: f32 = 1e-6;
/// Corrective position deltas shorter than this are dropped (m): a hundredth of a millimetre is
/// invisible, and the correctives are many.
const CORRECTIVE_EPS: f32 = 1e-5;
/// Normal deltas shorter than this are dropped.
const NORMAL_EPS: f32 = 1e-4;

/// Material indices, in glTF order.
const SKIN: usize = 0;
const HAIR: usize = 1;
const MOUTH: usize = 2;
const EYE: usize = 3;

/// Generates the default head as GLB bytes (identical on every run and machine).
pub fn generate() -> Vec<u8> {
    glb::write(&document())
}

/// The default head as a document, before serialisation.
pub fn document() -> Document {
    let rig = Rig::new();
    let builders = rig.primitives();
    let normals: Vec<Vec<Vec3>> = builders
        .iter()
        .map(|b| b.normals_of(&b.positions))
        .collect();
    let mut targets: [Vec<TargetDef>; 3] = Default::default();
    for channel in Channel::ALL {
        let deltas = rig.deltas(channel);
        for (k, (b, d)) in builders.iter().zip(deltas).enumerate() {
            targets[k].push(target(b, &normals[k], d));
        }
    }
    for slider in &looks::LOOK_SLIDERS {
        for value in [1.0, -1.0] {
            let deltas = looks::deltas(&rig, slider, value);
            for (k, (b, d)) in builders.iter().zip(deltas).enumerate() {
                targets[k].push(target(b, &normals[k], d));
            }
        }
    }
    let correctives = correctives::correctives(&rig);
    for c in &correctives {
        let look = looks::deltas(&rig, &c.slider, c.value);
        let expr = rig.deltas(c.channel);
        for (k, b) in builders.iter().enumerate() {
            targets[k].push(corrective_target(
                b,
                &normals[k],
                &look[k],
                &expr[k],
                &c.deltas[k],
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
    let face = MeshDef {
        name: "Face".into(),
        target_names: Channel::ALL
            .iter()
            .map(|c| c.name())
            .chain(looks::target_names())
            .map(str::to_string)
            .chain(correctives.iter().map(|c| c.name.clone()))
            .collect(),
        primitives,
    };
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
    Document {
        nodes: vec![
            NodeDef {
                name: "Head".into(),
                translation: HEAD_PIVOT,
                mesh: Some(0),
                children: vec![1, 2],
            },
            NodeDef {
                name: "LeftEye".into(),
                translation: eye_center - HEAD_PIVOT,
                mesh: Some(1),
                children: Vec::new(),
            },
            NodeDef {
                name: "RightEye".into(),
                translation: mesh::mirror(eye_center) - HEAD_PIVOT,
                mesh: Some(1),
                children: Vec::new(),
            },
            NodeDef {
                name: "Neck".into(),
                translation: Vec3::ZERO,
                mesh: Some(2),
                children: Vec::new(),
            },
        ],
        roots: vec![0, 3],
        meshes: vec![face, eye_mesh, neck_mesh],
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
fn target(b: &MeshBuilder, base_normals: &[Vec3], mut deltas: Vec<Vec3>) -> TargetDef {
    for d in &mut deltas {
        if d.length() < POSITION_EPS {
            *d = Vec3::ZERO;
        }
    }
    let moved: Vec<Vec3> = b
        .positions
        .iter()
        .zip(&deltas)
        .map(|(p, d)| *p + *d)
        .collect();
    let normals = b
        .normals_of(&moved)
        .iter()
        .zip(base_normals)
        .map(|(n, n0)| {
            let dn = *n - *n0;
            if dn.length() < NORMAL_EPS {
                Vec3::ZERO
            } else {
                dn
            }
        })
        .collect();
    TargetDef {
        positions: deltas,
        normals,
    }
}

/// A corrective target of one primitive: position deltas below [`CORRECTIVE_EPS`] dropped, and
/// the normal deltas that make the blended normals those of the combined surface (look and
/// expression applied together, minus what the two targets' own normal deltas add).
fn corrective_target(
    b: &MeshBuilder,
    base_normals: &[Vec3],
    look: &[Vec3],
    expr: &[Vec3],
    correction: &[Vec3],
) -> TargetDef {
    let positions: Vec<Vec3> = correction
        .iter()
        .map(|d| {
            if d.length() < CORRECTIVE_EPS {
                Vec3::ZERO
            } else {
                *d
            }
        })
        .collect();
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
            if positions[i] == Vec3::ZERO || dn.length() < NORMAL_EPS {
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

//! Hand-built avatars and frames for the mapping's unit tests.

use super::CompiledMapping;
use crate::arkit::{Channel, FaceFrame, Protocol};
use crate::avatar::vrm::{Override, Preset};
use crate::avatar::{Avatar, Mesh, MorphBind, Node};
use glam::Vec3;
use std::time::Instant;

pub(super) fn node(name: &str, mesh: Option<usize>) -> Node {
    Node {
        name: Some(name.into()),
        mesh,
        ..Node::default()
    }
}

pub(super) fn avatar() -> Avatar {
    Avatar {
        nodes: vec![
            node("head", Some(0)),
            node("LeftEye", None),
            node("RightEye", None),
        ],
        roots: vec![0, 1, 2],
        meshes: vec![Mesh {
            name: None,
            target_names: vec![
                "BlendShape.JawOpen".into(),
                "eyeBlink_L".into(),
                "Smile".into(),
            ],
            default_weights: vec![0.0, 0.0, 0.3],
            primitives: vec![],
        }],
        ..Avatar::default()
    }
}

/// A VRM avatar: a turned root (as the loader leaves a VRM 0.x model) with a head child,
/// one face mesh of four targets and five expressions.
pub(super) fn vrm_avatar() -> Avatar {
    use crate::avatar::vrm::{Expression, Vrm, VrmVersion, HALF_TURN};
    let bind = |target, weight| MorphBind {
        mesh: 0,
        target,
        weight,
    };
    let expression = |name: &str, preset, binds, is_binary| Expression {
        name: name.into(),
        preset: Some(preset),
        binds,
        material_binds: vec![],
        is_binary,
        overrides: [Override::None; 3],
    };
    let mut root = node("root", None);
    root.rotation = HALF_TURN;
    root.children = vec![1];
    let mut head = node("J_Head", Some(0));
    head.parent = Some(0);
    head.translation = Vec3::new(0.0, 1.5, 0.0);
    Avatar {
        nodes: vec![root, head],
        roots: vec![0],
        meshes: vec![Mesh {
            name: None,
            target_names: vec!["eyeL".into(), "eyeR".into(), "mouth".into(), "smile".into()],
            default_weights: vec![0.0; 4],
            primitives: vec![],
        }],
        vrm: Some(Vrm {
            version: VrmVersion::V0,
            spec_version: None,
            title: None,
            author: None,
            expressions: vec![
                expression(
                    "Blink",
                    Preset::Blink,
                    vec![bind(0, 1.0), bind(1, 1.0)],
                    false,
                ),
                expression("Blink_L", Preset::BlinkLeft, vec![bind(0, 1.0)], true),
                expression("Blink_R", Preset::BlinkRight, vec![bind(1, 1.0)], true),
                expression(
                    "Joy",
                    Preset::Happy,
                    vec![bind(2, 0.6), bind(3, 0.5)],
                    false,
                ),
                expression("A", Preset::Aa, vec![bind(2, 0.8)], false),
            ],
            humanoid: vec![("head".into(), 1)],
            look_at: None,
            skipped: 0,
        }),
        ..Avatar::default()
    }
}

pub(super) fn frame(values: &[(Channel, f32)]) -> FaceFrame {
    let mut f = FaceFrame::empty(
        Protocol::Vmc,
        "127.0.0.1:1".parse().unwrap(),
        Instant::now(),
    );
    for &(c, v) in values {
        f.set(c, v);
    }
    f
}

pub(super) fn weights(m: &CompiledMapping, a: &Avatar, values: &[(Channel, f32)]) -> Vec<f32> {
    let mut pose = a.rest_pose();
    m.apply(&frame(values), &mut pose);
    pose.weights[0].clone()
}

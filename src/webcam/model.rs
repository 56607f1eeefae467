//! The tracker's networks: MediaPipe's Face Landmarker (Apache-2.0), shipped in
//! `models/mediapipe/` as ONNX and built into the binary, run on the CPU by tract.
//!
//! Google publishes them as TFLite files inside `face_landmarker.task`; they were converted once
//! with tf2onnx (the command is in `models/mediapipe/README.md`). Each network keeps TFLite's
//! NHWC layout: an image goes in as rows of RGB pixels.
//!
//! When the landmark model loads, its 69 `PRelu` nodes are rewritten ([`unfold_prelu`]) as
//! `a·x + (1 − a)·max(x, 0)`, the same values: tract runs `PRelu` as a comparison and a select,
//! which took two fifths of the network's time, where a `max` and two multiplications by a
//! constant per channel run at memory speed.

use std::sync::Arc;

use thiserror::Error;
use tract_onnx::pb;
use tract_onnx::prelude::*;

/// BlazeFace short range: a 128x128 picture (RGB in -1..1) in; for each of 896 anchors a box,
/// six keypoints (16 values) and a score out.
pub const DETECTOR_ONNX: &[u8] = include_bytes!("../../models/mediapipe/face_detector.onnx");

/// Face Mesh V2: a 256x256 face crop (RGB in 0..1) in; 478 landmarks (x, y, z in crop pixels)
/// and the face's presence (a logit) out.
pub const LANDMARKS_ONNX: &[u8] =
    include_bytes!("../../models/mediapipe/face_landmarks_detector.onnx");

/// Blendshape V2: 146 of the landmarks (x, y in frame pixels) in, 52 scores in 0..1 out.
pub const BLENDSHAPES_ONNX: &[u8] = include_bytes!("../../models/mediapipe/face_blendshapes.onnx");

/// The side of the detector's square input, in pixels.
pub const DETECTOR_SIDE: usize = 128;

/// The side of the landmark model's square input, in pixels.
pub const LANDMARK_SIDE: usize = 256;

/// The detector's anchors (boxes it scores).
pub const ANCHORS: usize = 896;

/// The values the detector gives per anchor: box centre x, y, width, height, then six
/// keypoints' x and y.
pub const ANCHOR_VALUES: usize = 16;

/// The landmarks the landmark model finds: 468 of the face mesh, then 5 for each iris.
pub const LANDMARKS: usize = 478;

/// The landmarks the blendshape model reads.
pub const BLENDSHAPE_INPUTS: usize = 146;

/// The blendshape model's scores (a neutral score, then ARKit's 52 less tongueOut).
pub const BLENDSHAPE_OUTPUTS: usize = 52;

/// Why a network could not be loaded or run.
#[derive(Debug, Error)]
pub enum ModelError {
    /// The ONNX file did not parse or optimise.
    #[error("the {name} network does not load: {reason}")]
    Load {
        /// Which network.
        name: &'static str,
        /// What went wrong, as tract says.
        reason: String,
    },
    /// The network failed on an input (a bug, not a user error).
    #[error("the {name} network failed: {reason}")]
    Run {
        /// Which network.
        name: &'static str,
        /// tract's message.
        reason: String,
    },
}

/// One loaded network, optimised for one fixed input shape.
pub struct Network {
    /// Which network, for messages.
    name: &'static str,
    /// The input's shape.
    shape: Vec<usize>,
    /// The runnable plan.
    plan: Arc<TypedRunnableModel>,
}

impl std::fmt::Debug for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Network")
            .field("name", &self.name)
            .field("shape", &self.shape)
            .finish()
    }
}

/// Rewrites every `PRelu` node of `model` whose slope is a float constant as
/// `a·x + (1 − a)·Relu(x)` (a `Relu`, two `Mul`s by constants and an `Add`): the same values for
/// any slope, positive, negative or above 1. Returns how many nodes it rewrote; a `PRelu` whose
/// slope is not a constant is left as it is.
pub fn unfold_prelu(model: &mut pb::ModelProto) -> Result<usize, String> {
    let Some(graph) = model.graph.as_mut() else {
        return Err("the file has no graph".into());
    };
    let mut nodes = Vec::with_capacity(graph.node.len() + 4 * 69);
    let mut constants = Vec::new();
    let mut rewritten = 0;
    for node in std::mem::take(&mut graph.node) {
        let slope = match (
            node.op_type.as_str(),
            node.input.as_slice(),
            node.output.first(),
        ) {
            ("PRelu", [_, slope], Some(_)) => graph.initializer.iter().find(|t| &t.name == slope),
            _ => None,
        };
        let Some(slope) = slope.and_then(float_values) else {
            nodes.push(node);
            continue;
        };
        let (x, a, y) = (
            node.input[0].clone(),
            node.input[1].clone(),
            node.output[0].clone(),
        );
        let rest_name = format!("{}__one_minus_slope", node.name);
        constants.push(pb::TensorProto {
            name: rest_name.clone(),
            dims: graph
                .initializer
                .iter()
                .find(|t| t.name == a)
                .map(|t| t.dims.clone())
                .unwrap_or_default(),
            data_type: pb::tensor_proto::DataType::Float as i32,
            float_data: slope.iter().map(|v| 1.0 - v).collect(),
            ..pb::TensorProto::default()
        });
        let step = |op: &str, suffix: &str, inputs: Vec<String>, output: String| pb::NodeProto {
            name: format!("{}__{suffix}", node.name),
            op_type: op.into(),
            input: inputs,
            output: vec![output],
            ..pb::NodeProto::default()
        };
        let relu = format!("{y}__relu");
        let ax = format!("{y}__ax");
        let rest = format!("{y}__rest");
        nodes.push(step("Relu", "relu", vec![x.clone()], relu.clone()));
        nodes.push(step("Mul", "ax", vec![x, a], ax.clone()));
        nodes.push(step("Mul", "rest", vec![relu, rest_name], rest.clone()));
        nodes.push(step("Add", "sum", vec![ax, rest], y));
        rewritten += 1;
    }
    graph.node = nodes;
    graph.initializer.extend(constants);
    Ok(rewritten)
}

/// A float tensor's values, from `float_data` or little-endian `raw_data`.
fn float_values(t: &pb::TensorProto) -> Option<Vec<f32>> {
    if t.data_type != pb::tensor_proto::DataType::Float as i32 {
        return None;
    }
    if !t.float_data.is_empty() {
        return Some(t.float_data.clone());
    }
    if t.raw_data.is_empty() || !t.raw_data.len().is_multiple_of(4) {
        return None;
    }
    Some(
        t.raw_data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
    )
}

impl Network {
    /// Loads an ONNX network from `bytes`, unfolds its `PRelu` nodes ([`unfold_prelu`]) and
    /// optimises it for an input of `shape` (the landmark model's file leaves its batch size
    /// open; it is fixed here to 1).
    pub fn load(name: &'static str, bytes: &[u8], shape: &[usize]) -> Result<Network, ModelError> {
        let load = |reason: String| ModelError::Load { name, reason };
        let onnx = tract_onnx::onnx();
        let mut proto = onnx
            .proto_model_for_read(&mut &bytes[..])
            .map_err(|e| load(format!("{e:#}")))?;
        unfold_prelu(&mut proto).map_err(load)?;
        let plan = onnx
            .model_for_proto_model(&proto)
            .and_then(|m| m.with_input_fact(0, f32::fact(shape).into()))
            .and_then(|m| m.into_optimized())
            .and_then(|m| m.into_runnable())
            .map_err(|e| load(format!("{e:#}")))?;
        Ok(Network {
            name,
            shape: shape.to_vec(),
            plan,
        })
    }

    /// Runs the network on `input` (as many values as the input's shape holds, row-major) and
    /// gives every output's values, flat, in the network's order. The input is copied, so the
    /// caller's buffer can be filled again for the next call.
    pub fn run(&self, input: &[f32]) -> Result<Vec<Vec<f32>>, ModelError> {
        let run = |reason: String| ModelError::Run {
            name: self.name,
            reason,
        };
        let tensor = Tensor::from_shape(&self.shape, input)
            .map_err(|e| run(format!("input of the wrong size: {e:#}")))?;
        let outputs = self
            .plan
            .run(tvec!(tensor.into()))
            .map_err(|e| run(format!("{e:#}")))?;
        outputs
            .iter()
            .map(|o| {
                let view = o
                    .to_plain_array_view::<f32>()
                    .map_err(|e| run(format!("{e:#}")))?;
                Ok(view.iter().copied().collect())
            })
            .collect()
    }
}

/// The three networks, loaded once (about half a second) and shared.
#[derive(Debug)]
pub struct Networks {
    /// The face detector.
    pub detector: Network,
    /// The landmark model.
    pub landmarks: Network,
    /// The blendshape model.
    pub blendshapes: Network,
}

impl Networks {
    /// Loads the built-in networks.
    pub fn load() -> Result<Networks, ModelError> {
        Ok(Networks {
            detector: Network::load(
                "face detector",
                DETECTOR_ONNX,
                &[1, DETECTOR_SIDE, DETECTOR_SIDE, 3],
            )?,
            landmarks: Network::load(
                "face landmark",
                LANDMARKS_ONNX,
                &[1, LANDMARK_SIDE, LANDMARK_SIDE, 3],
            )?,
            blendshapes: Network::load("blendshape", BLENDSHAPES_ONNX, &[1, BLENDSHAPE_INPUTS, 2])?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prelu_unfolds_into_the_same_values_for_any_slope() {
        let slopes = [-5.0f32, 0.0, 0.25, 1.0, 19.0];
        let model = pb::ModelProto {
            ir_version: 8,
            opset_import: vec![pb::OperatorSetIdProto {
                domain: String::new(),
                version: 16,
            }],
            graph: Some(pb::GraphProto {
                node: vec![pb::NodeProto {
                    name: "p".into(),
                    op_type: "PRelu".into(),
                    input: vec!["x".into(), "a".into()],
                    output: vec!["y".into()],
                    ..pb::NodeProto::default()
                }],
                initializer: vec![pb::TensorProto {
                    name: "a".into(),
                    dims: vec![1, 5],
                    data_type: pb::tensor_proto::DataType::Float as i32,
                    raw_data: slopes.iter().flat_map(|v| v.to_le_bytes()).collect(),
                    ..pb::TensorProto::default()
                }],
                input: vec![pb::ValueInfoProto {
                    name: "x".into(),
                    r#type: Some(pb::TypeProto {
                        value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor {
                            elem_type: pb::tensor_proto::DataType::Float as i32,
                            shape: None,
                        })),
                        ..pb::TypeProto::default()
                    }),
                    ..pb::ValueInfoProto::default()
                }],
                output: vec![pb::ValueInfoProto {
                    name: "y".into(),
                    ..pb::ValueInfoProto::default()
                }],
                ..pb::GraphProto::default()
            }),
            ..pb::ModelProto::default()
        };
        let run = |proto: &pb::ModelProto| -> Vec<f32> {
            let plan = tract_onnx::onnx()
                .model_for_proto_model(proto)
                .and_then(|m| m.with_input_fact(0, f32::fact([2, 5]).into()))
                .and_then(|m| m.into_optimized())
                .and_then(|m| m.into_runnable())
                .unwrap();
            let x = tract_ndarray::arr2(&[
                [-2.0f32, -1.0, 0.5, 3.0, -0.5],
                [1.0, 2.0, -3.0, -4.0, 0.0],
            ]);
            let out = plan.run(tvec!(Tensor::from(x).into())).unwrap();
            out[0]
                .to_plain_array_view::<f32>()
                .unwrap()
                .iter()
                .copied()
                .collect()
        };
        let before = run(&model);
        let mut unfolded = model.clone();
        assert_eq!(unfold_prelu(&mut unfolded), Ok(1));
        let graph = unfolded.graph.as_ref().unwrap();
        assert!(graph.node.iter().all(|n| n.op_type != "PRelu"));
        assert_eq!(graph.node.len(), 4);
        let after = run(&unfolded);
        assert_eq!(before.len(), 10);
        for (b, a) in before.iter().zip(&after) {
            assert!((b - a).abs() < 1e-5, "{before:?} vs {after:?}");
        }
    }

    #[test]
    fn the_landmark_model_has_no_prelu_left_and_the_others_none_to_unfold() {
        for (bytes, prelu) in [
            (LANDMARKS_ONNX, 69),
            (DETECTOR_ONNX, 0),
            (BLENDSHAPES_ONNX, 0),
        ] {
            let mut proto = tract_onnx::onnx()
                .proto_model_for_read(&mut &bytes[..])
                .unwrap();
            assert_eq!(unfold_prelu(&mut proto), Ok(prelu));
            let graph = proto.graph.as_ref().unwrap();
            assert!(graph.node.iter().all(|n| n.op_type != "PRelu"));
        }
    }
}

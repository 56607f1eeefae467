//! The tracker's networks: OpenSeeFace's face detector and landmark model, shipped in
//! `models/openseeface/` and built into the binary, run on the CPU by tract.
//!
//! The `_opt` files were saved after onnxruntime's graph optimiser, so besides standard opset-11
//! operators they hold its `com.microsoft` `FusedConv` nodes: a convolution with its activation
//! (`Relu`, or `Clip` between two `activation_params`) folded in. tract does not know that
//! operator, so [`unfuse`] rewrites each one, when the model loads, as the standard `Conv` it
//! holds followed by its activation as a node of its own; onnxruntime gives the rewritten graph
//! exactly the outputs of the original.

use std::sync::Arc;

use thiserror::Error;
use tract_onnx::pb;
use tract_onnx::prelude::*;

/// OpenSeeFace's face detector (MobileNetV3): a 224x224 image in, a 56x56 map of face centres
/// and radii out, with its max-pooled copy.
pub const DETECTOR_ONNX: &[u8] = include_bytes!("../../models/openseeface/mnv3_detection_opt.onnx");

/// OpenSeeFace's fastest landmark model (`lm_model0`): a 224x224 face crop in, 66 landmark
/// heat maps of 28x28 and their x and y offsets out.
pub const LANDMARKS_ONNX: &[u8] = include_bytes!("../../models/openseeface/lm_model0_opt.onnx");

/// The side of both networks' square input, in pixels.
pub const INPUT_SIDE: usize = 224;

/// The side of the detector's output maps (one cell per 4 input pixels).
pub const DETECTOR_SIDE: usize = 56;

/// The side of the landmark model's heat maps.
pub const LANDMARK_SIDE: usize = 28;

/// The landmarks the landmark model finds (the 68-point layout less the two inner mouth corners).
pub const LANDMARKS: usize = 66;

/// ImageNet's per-channel mean of RGB in 0..1, which both networks were trained with.
pub const MEAN: [f32; 3] = [0.485, 0.456, 0.406];

/// ImageNet's per-channel standard deviation of RGB in 0..1.
pub const STD: [f32; 3] = [0.229, 0.224, 0.225];

/// Why a network could not be loaded or run.
#[derive(Debug, Error)]
pub enum ModelError {
    /// The ONNX file did not parse or has a node this loader cannot rewrite.
    #[error("the {name} network does not load: {reason}")]
    Load {
        /// Which network.
        name: &'static str,
        /// What went wrong, as tract or the rewrite says.
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

/// Rewrites every `com.microsoft` `FusedConv` node of `model` as a standard `Conv` followed by
/// its activation (`Relu`, or `Clip` with its two `activation_params` as opset-11 min and max
/// inputs). Returns how many nodes it rewrote; other nodes are left as they are.
pub fn unfuse(model: &mut pb::ModelProto) -> Result<usize, String> {
    let Some(graph) = model.graph.as_mut() else {
        return Err("the file has no graph".into());
    };
    let mut nodes = Vec::with_capacity(graph.node.len() + 32);
    let mut constants = Vec::new();
    let mut rewritten = 0;
    for node in graph.node.drain(..) {
        if node.op_type != "FusedConv" {
            nodes.push(node);
            continue;
        }
        let mut activation = None;
        let mut params = Vec::new();
        let mut conv = node.clone();
        conv.op_type = "Conv".into();
        conv.domain = String::new();
        conv.attribute.retain(|a| match a.name.as_str() {
            "activation" => {
                activation = Some(String::from_utf8_lossy(&a.s).into_owned());
                false
            }
            "activation_params" => {
                params = a.floats.clone();
                false
            }
            _ => true,
        });
        let Some(output) = conv.output.first().cloned() else {
            return Err(format!("FusedConv node `{}` has no output", node.name));
        };
        let activation = activation.unwrap_or_default();
        let between = format!("{output}__conv");
        conv.output[0] = between.clone();
        let mut act = pb::NodeProto {
            name: format!("{}__{}", node.name, activation.to_lowercase()),
            input: vec![between],
            output: vec![output],
            ..pb::NodeProto::default()
        };
        match (activation.as_str(), params.as_slice()) {
            ("Relu", _) => act.op_type = "Relu".into(),
            ("Clip", &[low, high]) => {
                act.op_type = "Clip".into();
                for (suffix, value) in [("min", low), ("max", high)] {
                    let name = format!("{}__{suffix}", act.name);
                    constants.push(pb::TensorProto {
                        name: name.clone(),
                        data_type: pb::tensor_proto::DataType::Float as i32,
                        float_data: vec![value],
                        ..pb::TensorProto::default()
                    });
                    act.input.push(name);
                }
            }
            (other, params) => {
                return Err(format!(
                    "FusedConv node `{}` has activation `{other}` with {} parameters; only Relu \
                     and Clip(min, max) are known",
                    node.name,
                    params.len()
                ))
            }
        }
        nodes.push(conv);
        nodes.push(act);
        rewritten += 1;
    }
    graph.node = nodes;
    graph.initializer.extend(constants);
    Ok(rewritten)
}

/// A network's outputs: each one's shape and its values, flat in row-major order.
pub type Outputs = Vec<(Vec<usize>, Vec<f32>)>;

/// One loaded network, optimised for a fixed 1x3xSxS input.
pub struct Network {
    /// Which network, for messages.
    name: &'static str,
    /// The runnable plan.
    plan: Arc<TypedRunnableModel>,
}

impl std::fmt::Debug for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Network").field("name", &self.name).finish()
    }
}

impl Network {
    /// Loads an ONNX network from `bytes`, rewrites its fused nodes and optimises it for a
    /// 1x3x`side`x`side` input.
    pub fn load(name: &'static str, bytes: &[u8], side: usize) -> Result<Network, ModelError> {
        let load = |reason: String| ModelError::Load { name, reason };
        let onnx = tract_onnx::onnx();
        let mut proto = onnx
            .proto_model_for_read(&mut &bytes[..])
            .map_err(|e| load(e.to_string()))?;
        unfuse(&mut proto).map_err(load)?;
        let plan = onnx
            .model_for_proto_model(&proto)
            .and_then(|m| m.with_input_fact(0, f32::fact([1, 3, side, side]).into()))
            .and_then(|m| m.into_optimized())
            .and_then(|m| m.into_runnable())
            .map_err(|e| load(format!("{e:#}")))?;
        Ok(Network { name, plan })
    }

    /// Runs the network on one 1x3xSxS input (channel planes, normalised) and returns every
    /// output as a flat vector with its shape.
    pub fn run(&self, input: Tensor) -> Result<Outputs, ModelError> {
        let run = |reason: String| ModelError::Run {
            name: self.name,
            reason,
        };
        let outputs = self
            .plan
            .run(tvec!(input.into()))
            .map_err(|e| run(format!("{e:#}")))?;
        outputs
            .iter()
            .map(|o| {
                let view = o
                    .to_plain_array_view::<f32>()
                    .map_err(|e| run(format!("{e:#}")))?;
                Ok((o.shape().to_vec(), view.iter().copied().collect()))
            })
            .collect()
    }
}

/// The detector and the landmark model, loaded once (about a third of a second) and shared.
#[derive(Debug)]
pub struct Networks {
    /// The face detector.
    pub detector: Network,
    /// The landmark model.
    pub landmarks: Network,
}

impl Networks {
    /// Loads both built-in networks.
    pub fn load() -> Result<Networks, ModelError> {
        Ok(Networks {
            detector: Network::load("face detector", DETECTOR_ONNX, INPUT_SIDE)?,
            landmarks: Network::load("landmark", LANDMARKS_ONNX, INPUT_SIDE)?,
        })
    }
}

/// A 1x3x`side`x`side` input tensor from `planes` (red, green, blue planes of `side`²
/// values each, already normalised).
pub fn input_tensor(planes: Vec<f32>, side: usize) -> Tensor {
    debug_assert_eq!(planes.len(), 3 * side * side);
    tract_ndarray::Array4::from_shape_vec((1, 3, side, side), planes)
        .map(Tensor::from)
        .unwrap_or_else(|_| Tensor::zero::<f32>(&[1, 3, side, side]).expect("a zero tensor"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test input both here and in the reference run (`model_reference.py`):
    /// `sin(0.05 x + c) cos(0.07 y)` for channel `c`, computed in f64.
    fn pattern(side: usize) -> Vec<f32> {
        let mut v = Vec::with_capacity(3 * side * side);
        for c in 0..3 {
            for y in 0..side {
                for x in 0..side {
                    let value = (0.05 * x as f64 + c as f64).sin() * (0.07 * y as f64).cos();
                    v.push(value as f32);
                }
            }
        }
        v
    }

    #[test]
    fn unfuse_rewrites_every_fused_node_and_nothing_else() {
        for (bytes, fused) in [(DETECTOR_ONNX, 23), (LANDMARKS_ONNX, 20)] {
            let onnx = tract_onnx::onnx();
            let mut proto = onnx.proto_model_for_read(&mut &bytes[..]).unwrap();
            let before = proto.graph.as_ref().unwrap().node.len();
            assert_eq!(unfuse(&mut proto).unwrap(), fused);
            let graph = proto.graph.as_ref().unwrap();
            assert_eq!(graph.node.len(), before + fused);
            assert!(graph.node.iter().all(|n| n.domain.is_empty()));
            assert!(graph.node.iter().all(|n| n.op_type != "FusedConv"));
        }
    }

    #[test]
    fn unknown_activations_are_refused_by_name() {
        let mut model = pb::ModelProto {
            graph: Some(pb::GraphProto {
                node: vec![pb::NodeProto {
                    name: "c1".into(),
                    op_type: "FusedConv".into(),
                    output: vec!["y".into()],
                    attribute: vec![pb::AttributeProto {
                        name: "activation".into(),
                        s: b"LeakyRelu".to_vec(),
                        ..pb::AttributeProto::default()
                    }],
                    ..pb::NodeProto::default()
                }],
                ..pb::GraphProto::default()
            }),
            ..pb::ModelProto::default()
        };
        let err = unfuse(&mut model).unwrap_err();
        assert!(err.contains("`c1`") && err.contains("LeakyRelu"), "{err}");
    }

    /// The rewritten networks give onnxruntime's outputs for the original files on the same
    /// input (`model_reference.rs`, printed by onnxruntime with `model_reference.py`).
    #[test]
    fn rewritten_networks_match_onnxruntime_on_the_original_files() {
        let nets = Networks::load().unwrap();
        let out = nets
            .landmarks
            .run(input_tensor(pattern(INPUT_SIDE), INPUT_SIDE))
            .unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, [1, 198, 28, 28]);
        let reference = reference::LANDMARKS;
        for &(i, want) in reference {
            let got = out[0].1[i];
            assert!(
                (got - want).abs() < 1e-3,
                "landmark output {i}: {got} vs {want}"
            );
        }
        let out = nets
            .detector
            .run(input_tensor(pattern(INPUT_SIDE), INPUT_SIDE))
            .unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].0, [1, 2, 56, 56]);
        for &(i, want) in reference::DETECTOR {
            let got = out[0].1[i];
            assert!(
                (got - want).abs() < 1e-3,
                "detector output {i}: {got} vs {want}"
            );
        }
    }

    /// Values onnxruntime gives for [`pattern`] with the original `_opt` files, at a few flat
    /// indices spread over the outputs.
    mod reference {
        include!("model_reference.rs");
    }
}

//! The tracker's networks: MediaPipe's Face Landmarker (Apache-2.0), shipped in
//! `models/mediapipe/` as ONNX and built into the binary, run on the CPU by tract.
//!
//! Google publishes them as TFLite files inside `face_landmarker.task`; they were converted once
//! with tf2onnx (the command is in `models/mediapipe/README.md`). Each network keeps TFLite's
//! NHWC layout: an image goes in as rows of RGB pixels.

use std::sync::Arc;

use thiserror::Error;
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

impl Network {
    /// Loads an ONNX network from `bytes` and optimises it for an input of `shape` (the
    /// landmark model's file leaves its batch size open; it is fixed here to 1).
    pub fn load(name: &'static str, bytes: &[u8], shape: &[usize]) -> Result<Network, ModelError> {
        let plan = tract_onnx::onnx()
            .model_for_read(&mut &bytes[..])
            .and_then(|m| m.with_input_fact(0, f32::fact(shape).into()))
            .and_then(|m| m.into_optimized())
            .and_then(|m| m.into_runnable())
            .map_err(|e| ModelError::Load {
                name,
                reason: format!("{e:#}"),
            })?;
        Ok(Network {
            name,
            shape: shape.to_vec(),
            plan,
        })
    }

    /// Runs the network on `input` (as many values as the input's shape holds, row-major) and
    /// gives every output's values, flat, in the network's order.
    pub fn run(&self, input: Vec<f32>) -> Result<Vec<Vec<f32>>, ModelError> {
        let run = |reason: String| ModelError::Run {
            name: self.name,
            reason,
        };
        let tensor = tract_ndarray::ArrayD::from_shape_vec(self.shape.as_slice(), input)
            .map_err(|e| run(format!("input of the wrong size: {e}")))?;
        let outputs = self
            .plan
            .run(tvec!(Tensor::from(tensor).into()))
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

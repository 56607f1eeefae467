//! The tracker: from one camera frame to the face's landmarks, pose and channels.
//!
//! Per frame: while a face is followed, its box from the last frame (grown a little) is cut out,
//! scaled to 224x224 and given to the landmark model; the landmarks give the next box. Only when
//! no face is followed, or the landmarks' confidence falls under [`LANDMARK_CONFIDENCE`], does
//! the detector look at the whole frame. The landmarks then give the head's pose (a fit of a mean
//! 3D face, [`super::pose`]) and the face's features ([`super::features`]), which become ARKit
//! channels through the mapping the OpenSeeFace packets use.
//!
//! The method and its numbers (crop margins, thresholds, the heat-map decoding) are
//! OpenSeeFace's `tracker.py`, whose networks these are.

use std::sync::Arc;
use std::time::Instant;

use glam::Quat;

use super::eyes::contrast;
use super::features::{eye_openness, measure, Features, Median};
use super::frame::Frame;
use super::model::{
    input_tensor, ModelError, Networks, DETECTOR_SIDE, INPUT_SIDE, LANDMARKS, LANDMARK_SIDE, MEAN,
    STD,
};
use super::pose::{Fit, PoseSolver};
use crate::arkit::{Channel, FaceFrame, Protocol, TrackingFlag};
use crate::ingest::openseeface::{feature, set_feature_channels, Ramp, BROW, FEATURES};

/// The detector's score from which a peak counts as a face (OpenSeeFace's 0.6).
pub const DETECTION_CONFIDENCE: f32 = 0.6;

/// The landmarks' mean confidence from which a face counts as found (OpenSeeFace's 0.6).
pub const LANDMARK_CONFIDENCE: f32 = 0.6;

/// −eye feature to `eyeBlink`: a tenth of the way from the eye at rest to the most closed seen
/// is rest flicker, nine tenths is closed.
pub const BLINK: Ramp = Ramp {
    zero: 0.1,
    full: 0.9,
};

/// Degrees from the head's usual pose past which a face is turned: its features are read, not
/// learnt from.
const TURNED: f32 = 12.0;

/// Frames a lost face's last box is still tried before only the detector looks.
const KEEP_LOST_BOX: u32 = 5;

/// The most reprojection error, in pixels, of a pose fit that is believed.
const MAX_FIT_ERROR: f32 = 300.0;

/// A box in frame pixels: left, top, width, height.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaceBox {
    /// Left edge.
    pub x: f32,
    /// Top edge.
    pub y: f32,
    /// Width.
    pub w: f32,
    /// Height.
    pub h: f32,
}

/// One face as the tracker read it from a frame.
#[derive(Debug, Clone)]
pub struct Face {
    /// The 66 landmarks in frame pixels (x right, y down).
    pub landmarks: [[f32; 2]; LANDMARKS],
    /// Each landmark's confidence, 0..1.
    pub confidence: [f32; LANDMARKS],
    /// The landmarks' mean confidence.
    pub mean_confidence: f32,
    /// The box the landmarks span.
    pub bounds: FaceBox,
    /// The head's pose fit, when it converged.
    pub fit: Option<Fit>,
    /// The fourteen features (see [`super::features`]), in −1..1.
    pub features: [f32; FEATURES],
    /// Eye openness, left and right (1 open, 0 closed).
    pub eye_open: [f32; 2],
}

impl Face {
    /// The head's rotation in facewire's frame, when the pose fit converged.
    pub fn head(&self) -> Option<Quat> {
        self.fit.as_ref().map(|f| f.pose.head())
    }
}

/// How long each step of the last frame took, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepTimes {
    /// The detector, 0 when it did not run.
    pub detect_us: u32,
    /// Cropping and scaling the face for the landmark model.
    pub crop_us: u32,
    /// The landmark model.
    pub landmarks_us: u32,
    /// Pose fit and features.
    pub pose_us: u32,
}

/// The tracker's state: the networks, the followed face's box and the per-face learners.
#[derive(Debug)]
pub struct Tracker {
    /// The networks, shared.
    networks: Arc<Networks>,
    /// The followed face's box, and for how many frames it has been lost.
    followed: Option<(FaceBox, u32)>,
    /// The pose fit, warm-started from the last frame.
    pose: PoseSolver,
    /// The features' normalisers, learning the performer's face at rest.
    features: Features,
    /// The head's usual yaw, pitch and roll (running medians, degrees): the features learn
    /// only from faces near it.
    usual_pose: [Median; 3],
    /// The last frame's step times.
    times: StepTimes,
    /// Frames read so far.
    frames: u64,
    /// Frames the detector ran on.
    detections: u64,
}

fn micros(since: Instant) -> u32 {
    since.elapsed().as_micros().min(u32::MAX as u128) as u32
}

impl Tracker {
    /// A tracker on loaded networks.
    pub fn new(networks: Arc<Networks>) -> Tracker {
        Tracker {
            networks,
            followed: None,
            pose: PoseSolver::new(),
            features: Features::default(),
            usual_pose: Default::default(),
            times: StepTimes::default(),
            frames: 0,
            detections: 0,
        }
    }

    /// How long each step of the last frame took.
    pub fn times(&self) -> StepTimes {
        self.times
    }

    /// Frames read, and how many of them the detector ran on.
    pub fn counts(&self) -> (u64, u64) {
        (self.frames, self.detections)
    }

    /// Forgets the followed face and what the features learned (a new performer).
    pub fn reset(&mut self) {
        self.followed = None;
        self.pose.reset();
        self.features = Features::default();
        self.usual_pose = Default::default();
    }

    /// Reads one frame: the face, or `None` when there is none to be seen.
    pub fn track(&mut self, frame: &Frame) -> Result<Option<Face>, ModelError> {
        self.frames += 1;
        self.times = StepTimes::default();
        if frame.width < 8 || frame.height < 8 || frame.rgb.len() < frame_len(frame) {
            self.followed = None;
            return Ok(None);
        }
        let mut found = None;
        if let Some((face_box, _)) = self.followed {
            found = self.landmarks(frame, face_box)?;
        }
        if found.is_none() {
            let started = Instant::now();
            let detected = detect(&self.networks, frame)?;
            self.detections += 1;
            self.times.detect_us = micros(started);
            if let Some(face_box) = detected {
                found = self.landmarks(frame, face_box)?;
            }
        }
        let Some((landmarks, confidence)) = found else {
            self.followed = match self.followed {
                Some((b, lost)) if lost < KEEP_LOST_BOX => Some((b, lost + 1)),
                _ => None,
            };
            if self.followed.is_none() {
                self.pose.reset();
            }
            return Ok(None);
        };
        let bounds = bounds(&landmarks);
        self.followed = Some((bounds, 0));

        let started = Instant::now();
        let fit = self
            .pose
            .solve(&landmarks, frame.width, frame.height)
            .filter(|f| f.error <= MAX_FIT_ERROR);
        let mut features = [0.0; FEATURES];
        let mut eye_open = [1.0; 2];
        if let Some(fit) = &fit {
            let mut raw = measure(&face_plane(fit));
            // The lids' landmarks alone miss blinks (see `super::eyes`): the eye's contrast
            // between its corners falls with them.
            for (eye, outer, inner) in [(feature::EYE_L, 45, 42), (feature::EYE_R, 36, 39)] {
                if let Some(c) = contrast(frame, landmarks[outer], landmarks[inner]) {
                    raw[eye] *= c;
                }
            }
            // A face turned far from its usual pose measures distorted (the far brow reads
            // raised): it is read against what was learnt, and teaches nothing.
            features = if self.near_usual_pose(fit) {
                self.features.update_measured(&raw)
            } else {
                self.features.read_measured(&raw)
            };
            eye_open = [
                eye_openness(features[feature::EYE_L]),
                eye_openness(features[feature::EYE_R]),
            ];
        } else {
            self.pose.reset();
        }
        self.times.pose_us = micros(started);
        let mean_confidence = confidence.iter().sum::<f32>() / LANDMARKS as f32;
        Ok(Some(Face {
            landmarks,
            confidence,
            mean_confidence,
            bounds,
            fit,
            features,
            eye_open,
        }))
    }

    /// Whether `fit`'s head is within [`TURNED`] of its usual pose in yaw, pitch and roll, and
    /// learns that pose.
    fn near_usual_pose(&mut self, fit: &Fit) -> bool {
        let (yaw, pitch, roll) = fit.pose.head().to_euler(glam::EulerRot::YXZ);
        let angles = [yaw, pitch, roll].map(f32::to_degrees);
        let mut near = true;
        for (usual, angle) in self.usual_pose.iter_mut().zip(angles) {
            usual.push(angle);
            near &= (angle - usual.get()).abs() <= TURNED;
        }
        near
    }

    /// Runs the landmark model on the crop around `face_box`; the landmarks when their mean
    /// confidence reaches [`LANDMARK_CONFIDENCE`].
    #[allow(clippy::type_complexity)]
    fn landmarks(
        &mut self,
        frame: &Frame,
        face_box: FaceBox,
    ) -> Result<Option<([[f32; 2]; LANDMARKS], [f32; LANDMARKS])>, ModelError> {
        let started = Instant::now();
        let Some(crop) = Crop::around(face_box, frame.width, frame.height) else {
            return Ok(None);
        };
        let planes = sample(frame, crop, INPUT_SIDE);
        self.times.crop_us += micros(started);
        let started = Instant::now();
        let out = self
            .networks
            .landmarks
            .run(input_tensor(planes, INPUT_SIDE))?;
        self.times.landmarks_us += micros(started);
        let Some((_, maps)) = out.first() else {
            return Ok(None);
        };
        let (landmarks, confidence) = decode_landmarks(maps, crop);
        let mean = confidence.iter().sum::<f32>() / LANDMARKS as f32;
        Ok((mean >= LANDMARK_CONFIDENCE).then_some((landmarks, confidence)))
    }
}

/// The byte length of a frame's pixels.
fn frame_len(frame: &Frame) -> usize {
    frame.width as usize * frame.height as usize * 3
}

/// The landmarks' points in the fitted face's plane, in OpenSeeFace's face frame (+X towards the
/// face's right, +Y up), which the features' formulas read: the fit's points have +X towards the
/// face's left.
fn face_plane(fit: &Fit) -> [[f32; 2]; LANDMARKS] {
    std::array::from_fn(|i| {
        let [x, y, _] = fit.face_points[i];
        [-x, y]
    })
}

/// The box the landmarks span.
fn bounds(landmarks: &[[f32; 2]; LANDMARKS]) -> FaceBox {
    let (mut x0, mut y0, mut x1, mut y1) = (f32::MAX, f32::MAX, f32::MIN, f32::MIN);
    for &[x, y] in landmarks {
        x0 = x0.min(x);
        y0 = y0.min(y);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    FaceBox {
        x: x0,
        y: y0,
        w: x1 - x0,
        h: y1 - y0,
    }
}

/// The part of the frame given to the landmark model, in frame pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Crop {
    /// Left edge.
    pub x0: f32,
    /// Top edge.
    pub y0: f32,
    /// Right edge.
    pub x1: f32,
    /// Bottom edge.
    pub y1: f32,
}

impl Crop {
    /// The crop around a face box: a tenth of its width added left and right and an eighth of
    /// its height above and below (room for the brows and the chin), kept inside the frame.
    /// `None` when less than 4 pixels remain either way or the box is not finite.
    pub fn around(b: FaceBox, width: u32, height: u32) -> Option<Crop> {
        if !(b.x.is_finite() && b.y.is_finite() && b.w.is_finite() && b.h.is_finite()) {
            return None;
        }
        let (w, h) = (width as f32, height as f32);
        let crop = Crop {
            x0: (b.x - 0.1 * b.w).clamp(0.0, w),
            y0: (b.y - 0.125 * b.h).clamp(0.0, h),
            x1: (b.x + 1.1 * b.w).clamp(0.0, w),
            y1: (b.y + 1.125 * b.h).clamp(0.0, h),
        };
        (crop.x1 - crop.x0 >= 4.0 && crop.y1 - crop.y0 >= 4.0).then_some(crop)
    }
}

/// The crop scaled to `side` x `side` with bilinear sampling (pixel centres aligned, as
/// OpenCV's linear resize), as three normalised planes (ImageNet mean and deviation), red first.
pub fn sample(frame: &Frame, crop: Crop, side: usize) -> Vec<f32> {
    let plane = side * side;
    let mut out = vec![0.0f32; 3 * plane];
    let (fw, fh) = (frame.width as usize, frame.height as usize);
    let sx = (crop.x1 - crop.x0) / side as f32;
    let sy = (crop.y1 - crop.y0) / side as f32;
    let scale: [f32; 3] = std::array::from_fn(|c| 1.0 / (255.0 * STD[c]));
    let offset: [f32; 3] = std::array::from_fn(|c| -MEAN[c] / STD[c]);
    // Columns' source positions and weights, once per row length.
    let columns: Vec<(usize, usize, f32)> = (0..side)
        .map(|dx| {
            let x = (crop.x0 + (dx as f32 + 0.5) * sx - 0.5).clamp(0.0, (fw - 1) as f32);
            let x0 = x.floor() as usize;
            (x0, (x0 + 1).min(fw - 1), x - x0 as f32)
        })
        .collect();
    for dy in 0..side {
        let y = (crop.y0 + (dy as f32 + 0.5) * sy - 0.5).clamp(0.0, (fh - 1) as f32);
        let y0 = y.floor() as usize;
        let y1 = (y0 + 1).min(fh - 1);
        let ty = y - y0 as f32;
        let row0 = &frame.rgb[y0 * fw * 3..(y0 + 1) * fw * 3];
        let row1 = &frame.rgb[y1 * fw * 3..(y1 + 1) * fw * 3];
        for (dx, &(x0, x1, tx)) in columns.iter().enumerate() {
            for c in 0..3 {
                let a = row0[x0 * 3 + c] as f32;
                let b = row0[x1 * 3 + c] as f32;
                let d = row1[x0 * 3 + c] as f32;
                let e = row1[x1 * 3 + c] as f32;
                let top = a + (b - a) * tx;
                let bottom = d + (e - d) * tx;
                let v = top + (bottom - top) * ty;
                out[c * plane + dy * side + dx] = v * scale[c] + offset[c];
            }
        }
    }
    out
}

/// The inverse of the logistic function, scaled down by `factor`, with `p` kept inside 0..1:
/// how the landmark model encodes a landmark's offset within its heat-map cell.
fn logit(p: f32, factor: f32) -> f32 {
    let p = p.clamp(1e-7, 1.0 - 1e-7);
    (p / (1.0 - p)).ln() / factor
}

/// Decodes the landmark model's output (66 heat maps, then 66 x-offset and 66 y-offset maps, each
/// 28x28) into landmarks in frame pixels and their confidences.
pub fn decode_landmarks(maps: &[f32], crop: Crop) -> ([[f32; 2]; LANDMARKS], [f32; LANDMARKS]) {
    let cells = LANDMARK_SIDE * LANDMARK_SIDE;
    let mut points = [[0.0f32; 2]; LANDMARKS];
    let mut confidence = [0.0f32; LANDMARKS];
    if maps.len() < 3 * LANDMARKS * cells {
        return (points, confidence);
    }
    // The network's input spans 0..223; its 28 cells step by 223/27.
    let res = (INPUT_SIDE - 1) as f32;
    let step = res / (LANDMARK_SIDE - 1) as f32;
    let scale_x = (crop.x1 - crop.x0) / INPUT_SIDE as f32;
    let scale_y = (crop.y1 - crop.y0) / INPUT_SIDE as f32;
    for i in 0..LANDMARKS {
        let heat = &maps[i * cells..(i + 1) * cells];
        let (best, &conf) = heat
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .unwrap_or((0, &0.0));
        let (row, col) = (best / LANDMARK_SIDE, best % LANDMARK_SIDE);
        // The first offset map moves along the rows (down), the second along the columns.
        let down = res * logit(maps[(LANDMARKS + i) * cells + best], 16.0);
        let right = res * logit(maps[(2 * LANDMARKS + i) * cells + best], 16.0);
        let x = crop.x0 + scale_x * (col as f32 * step + right);
        let y = crop.y0 + scale_y * (row as f32 * step + down);
        if x.is_finite() && y.is_finite() && conf.is_finite() {
            points[i] = [x, y];
            confidence[i] = conf;
        }
    }
    (points, confidence)
}

/// Runs the detector on the whole frame (scaled to 224x224) and returns the best face's box in
/// frame pixels, when its score reaches [`DETECTION_CONFIDENCE`].
pub fn detect(networks: &Networks, frame: &Frame) -> Result<Option<FaceBox>, ModelError> {
    let whole = Crop {
        x0: 0.0,
        y0: 0.0,
        x1: frame.width as f32,
        y1: frame.height as f32,
    };
    let planes = sample(frame, whole, INPUT_SIDE);
    let out = networks.detector.run(input_tensor(planes, INPUT_SIDE))?;
    let (Some((_, maps)), Some((_, pooled))) = (out.first(), out.get(1)) else {
        return Ok(None);
    };
    let cells = DETECTOR_SIDE * DETECTOR_SIDE;
    if maps.len() < 2 * cells || pooled.len() < cells {
        return Ok(None);
    }
    // A face is a local maximum of the score map (equal to its max-pooled value).
    let best = (0..cells)
        .filter(|&i| maps[i] == pooled[i] && maps[i].is_finite())
        .max_by(|&a, &b| maps[a].total_cmp(&maps[b]));
    let Some(best) = best.filter(|&i| maps[i] >= DETECTION_CONFIDENCE) else {
        return Ok(None);
    };
    let radius = maps[cells + best] * 112.0;
    let cell = (INPUT_SIDE / DETECTOR_SIDE) as f32;
    let (cx, cy) = (
        (best % DETECTOR_SIDE) as f32 * cell,
        (best / DETECTOR_SIDE) as f32 * cell,
    );
    let sx = frame.width as f32 / INPUT_SIDE as f32;
    let sy = frame.height as f32 / INPUT_SIDE as f32;
    let b = FaceBox {
        x: (cx - radius) * sx,
        y: (cy - radius) * sy,
        w: 2.0 * radius * sx,
        h: 2.0 * radius * sy,
    };
    Ok((b.w > 0.0 && b.h > 0.0).then_some(b))
}

/// The face frame a tracked (or missed) camera frame gives: the channels of the OpenSeeFace
/// mapping and the head, or [`TrackingFlag::Lost`] when no face was seen.
pub fn face_frame(face: Option<&Face>, received: Instant) -> FaceFrame {
    let mut frame = FaceFrame::empty(Protocol::Webcam, super::SOURCE, received);
    match face {
        None => frame.tracking = TrackingFlag::Lost,
        Some(face) => {
            frame.tracking = TrackingFlag::Tracked;
            set_feature_channels(&mut frame, face.eye_open, &face.features);
            // The eyes straight from their features: the shared mapping's thresholds are set for
            // OpenSeeFace's own eye measure, which opens and shuts rather than closing by degrees.
            for (channel, i) in [
                (Channel::EyeBlinkLeft, feature::EYE_L),
                (Channel::EyeBlinkRight, feature::EYE_R),
            ] {
                frame.set(channel, BLINK.at(-face.features[i]));
            }
            // The brows' outer ends from their height alone: the brows' steepness is an angle
            // around 0, whose normaliser starts a side at the least flicker, and the landmark
            // model tilts the brows with every blink.
            for (channel, i) in [
                (Channel::BrowOuterUpLeft, feature::EYEBROW_UPDOWN_L),
                (Channel::BrowOuterUpRight, feature::EYEBROW_UPDOWN_R),
            ] {
                frame.set(channel, BROW.at(face.features[i]));
            }
            // An open jaw pulls the mouth's corners down under the upper lip, which the corners'
            // measure reads as a frown: the frown gives way as the jaw opens.
            let jaw = frame.get(Channel::JawOpen).unwrap_or(0.0);
            for channel in [Channel::MouthFrownLeft, Channel::MouthFrownRight] {
                if let Some(frown) = frame.get(channel) {
                    frame.set(channel, frown * (1.0 - jaw));
                }
            }
            // A smile and an open jaw widen the mouth too, which the width's measure reads as
            // a stretch: the stretch is what the mouth's width says beyond them.
            let smile = [Channel::MouthSmileLeft, Channel::MouthSmileRight]
                .map(|c| frame.get(c).unwrap_or(0.0));
            let explained = jaw.max(smile[0]).max(smile[1]);
            for channel in [Channel::MouthStretchLeft, Channel::MouthStretchRight] {
                if let Some(stretch) = frame.get(channel) {
                    frame.set(channel, stretch * (1.0 - explained));
                }
            }
            frame.head = face.head();
        }
    }
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A face whose features are `set` and otherwise at rest.
    fn face(set: &[(usize, f32)]) -> Face {
        let mut features = [0.0; FEATURES];
        for &(i, v) in set {
            features[i] = v;
        }
        Face {
            landmarks: [[0.0; 2]; LANDMARKS],
            confidence: [1.0; LANDMARKS],
            mean_confidence: 1.0,
            bounds: FaceBox {
                x: 0.0,
                y: 0.0,
                w: 100.0,
                h: 100.0,
            },
            fit: None,
            features,
            eye_open: [1.0; 2],
        }
    }

    fn channels(set: &[(usize, f32)]) -> FaceFrame {
        face_frame(Some(&face(set)), Instant::now())
    }

    #[test]
    fn a_wide_mouth_stretches_only_beyond_what_a_smile_or_the_jaw_explains() {
        use feature::*;
        let stretch = |f: &FaceFrame| f.get(Channel::MouthStretchLeft).unwrap();
        // Wide alone: a stretch.
        assert_eq!(stretch(&channels(&[(MOUTH_WIDE, 1.0)])), 1.0);
        // Wide with the corners up: a smile, not a stretch.
        let smiling = channels(&[
            (MOUTH_WIDE, 1.0),
            (MOUTH_CORNER_UPDOWN_L, -1.0),
            (MOUTH_CORNER_UPDOWN_R, -1.0),
        ]);
        assert_eq!(smiling.get(Channel::MouthSmileLeft), Some(1.0));
        assert_eq!(stretch(&smiling), 0.0);
        // Wide with the jaw open: the jaw, not a stretch; and no frown either.
        let open = channels(&[
            (MOUTH_WIDE, 1.0),
            (MOUTH_OPEN, 1.0),
            (MOUTH_CORNER_UPDOWN_L, 1.0),
        ]);
        assert_eq!(open.get(Channel::JawOpen), Some(1.0));
        assert_eq!(stretch(&open), 0.0);
        assert_eq!(open.get(Channel::MouthFrownLeft), Some(0.0));
        // No face: lost, no channels.
        let lost = face_frame(None, Instant::now());
        assert_eq!(lost.tracking, TrackingFlag::Lost);
        assert!(lost.present.is_empty());
    }
}

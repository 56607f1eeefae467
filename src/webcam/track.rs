//! The tracker: from one camera frame to the face's landmarks, pose and 51 ARKit channels, as
//! MediaPipe's Face Landmarker does it in video mode.
//!
//! Per frame: while a face is followed, the crop its landmarks gave on the last frame (their box
//! made square, grown 1.5 times, turned level with the eye corners) is cut out at 256x256 and
//! given to the landmark model, which also says whether a face is there. Only when no face is
//! followed does the detector look at the whole frame, and its best face gives the crop. The
//! landmarks are smoothed from frame to frame ([`super::smooth`]), give the head's pose
//! ([`super::pose`]), and 146 of them go to the blendshape model, whose scores are the channels:
//! as the model gives them, with no normaliser that learns from what it saw, so a held
//! expression stays. A performer's range is the calibration's job, as for a phone.

use std::sync::Arc;
use std::time::Instant;

use glam::Quat;

use super::detect::{anchors, detect, Detection};
use super::frame::Frame;
use super::model::{ModelError, Networks, BLENDSHAPE_OUTPUTS, LANDMARKS, LANDMARK_SIDE};
use super::pose::{fit, Fit};
use super::roi::{Border, Roi};
use super::smooth::Smoother;
use crate::arkit::{Channel, FaceFrame, Protocol, TrackingFlag};

/// The landmark model's presence score from which a face counts as there (MediaPipe's
/// `min_face_presence_confidence`).
pub const MIN_PRESENCE: f32 = 0.5;

/// The outer corners of the eyes (the one on the picture's left first), whose line the crop
/// keeps level.
pub const EYE_CORNERS: [usize; 2] = [33, 263];

/// The landmarks the blendshape model reads, in its order (MediaPipe's
/// `kLandmarksSubsetIdxs`).
pub const BLENDSHAPE_LANDMARKS: [u16; 146] = [
    0, 1, 4, 5, 6, 7, 8, 10, 13, 14, 17, 21, 33, 37, 39, 40, 46, 52, 53, 54, 55, 58, 61, 63, 65,
    66, 67, 70, 78, 80, 81, 82, 84, 87, 88, 91, 93, 95, 103, 105, 107, 109, 127, 132, 133, 136,
    144, 145, 146, 148, 149, 150, 152, 153, 154, 155, 157, 158, 159, 160, 161, 162, 163, 168, 172,
    173, 176, 178, 181, 185, 191, 195, 197, 234, 246, 249, 251, 263, 267, 269, 270, 276, 282, 283,
    284, 285, 288, 291, 293, 295, 296, 297, 300, 308, 310, 311, 312, 314, 317, 318, 321, 323, 324,
    332, 334, 336, 338, 356, 361, 362, 365, 373, 374, 375, 377, 378, 379, 380, 381, 382, 384, 385,
    386, 387, 388, 389, 390, 397, 398, 400, 402, 405, 409, 415, 454, 466, 468, 469, 470, 471, 472,
    473, 474, 475, 476, 477,
];

/// The blendshape model's scores in its order (MediaPipe's `kBlendshapeNames`): a neutral score
/// (`None`), then ARKit's channels less tongueOut. Its left and right are the performer's, as
/// ARKit's are (a performer's left eye shut, on the picture's right, reads eyeBlinkLeft).
pub const SCORES: [Option<Channel>; BLENDSHAPE_OUTPUTS] = {
    use Channel::*;
    [
        None,
        Some(BrowDownLeft),
        Some(BrowDownRight),
        Some(BrowInnerUp),
        Some(BrowOuterUpLeft),
        Some(BrowOuterUpRight),
        Some(CheekPuff),
        Some(CheekSquintLeft),
        Some(CheekSquintRight),
        Some(EyeBlinkLeft),
        Some(EyeBlinkRight),
        Some(EyeLookDownLeft),
        Some(EyeLookDownRight),
        Some(EyeLookInLeft),
        Some(EyeLookInRight),
        Some(EyeLookOutLeft),
        Some(EyeLookOutRight),
        Some(EyeLookUpLeft),
        Some(EyeLookUpRight),
        Some(EyeSquintLeft),
        Some(EyeSquintRight),
        Some(EyeWideLeft),
        Some(EyeWideRight),
        Some(JawForward),
        Some(JawLeft),
        Some(JawOpen),
        Some(JawRight),
        Some(MouthClose),
        Some(MouthDimpleLeft),
        Some(MouthDimpleRight),
        Some(MouthFrownLeft),
        Some(MouthFrownRight),
        Some(MouthFunnel),
        Some(MouthLeft),
        Some(MouthLowerDownLeft),
        Some(MouthLowerDownRight),
        Some(MouthPressLeft),
        Some(MouthPressRight),
        Some(MouthPucker),
        Some(MouthRight),
        Some(MouthRollLower),
        Some(MouthRollUpper),
        Some(MouthShrugLower),
        Some(MouthShrugUpper),
        Some(MouthSmileLeft),
        Some(MouthSmileRight),
        Some(MouthStretchLeft),
        Some(MouthStretchRight),
        Some(MouthUpperUpLeft),
        Some(MouthUpperUpRight),
        Some(NoseSneerLeft),
        Some(NoseSneerRight),
    ]
};

/// One face as the tracker read it from a frame.
#[derive(Debug, Clone)]
pub struct Face {
    /// The 478 landmarks in frame pixels (x right, y down, z into the scene scaled as x),
    /// smoothed from frame to frame.
    pub landmarks: Vec<[f32; 3]>,
    /// The landmark model's presence score, 0..1.
    pub presence: f32,
    /// The crop the landmarks were read in.
    pub roi: Roi,
    /// The head's pose fit, when it converged.
    pub fit: Option<Fit>,
    /// The blendshape model's 52 scores, in its order ([`SCORES`]), each in 0..1.
    pub scores: [f32; BLENDSHAPE_OUTPUTS],
}

impl Face {
    /// The head's rotation in facewire's frame, when the pose fit converged.
    pub fn head(&self) -> Option<Quat> {
        self.fit.as_ref().map(|f| f.pose.head())
    }

    /// The score of `channel`, when the model gives it.
    pub fn weight(&self, channel: Channel) -> Option<f32> {
        SCORES
            .iter()
            .position(|c| *c == Some(channel))
            .map(|i| self.scores[i])
    }
}

/// How long each step of the last frame took, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepTimes {
    /// The detector, 0 when it did not run.
    pub detect_us: u32,
    /// Cutting out and scaling the face's crop.
    pub crop_us: u32,
    /// The landmark model.
    pub landmarks_us: u32,
    /// Smoothing, the pose fit and the blendshape model.
    pub blendshapes_us: u32,
}

/// The tracker's state: the networks, the followed face's crop and the landmarks' smoothing.
#[derive(Debug)]
pub struct Tracker {
    /// The networks, shared.
    networks: Arc<Networks>,
    /// The detector's anchors.
    anchors: Vec<[f32; 2]>,
    /// The crop the last frame's landmarks gave, while a face is followed.
    followed: Option<Roi>,
    /// The landmarks' smoothing.
    smoother: Smoother,
    /// Scratch space for the networks' inputs.
    input: Vec<f32>,
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
            anchors: anchors(),
            followed: None,
            smoother: Smoother::default(),
            input: Vec::new(),
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

    /// Forgets the followed face.
    pub fn reset(&mut self) {
        self.followed = None;
        self.smoother.reset();
    }

    /// Reads one frame seen at `time` (seconds on any clock that only goes forward; it paces
    /// the smoothing): the face, or `None` when there is none to be seen.
    pub fn track(&mut self, frame: &Frame, time: f64) -> Result<Option<Face>, ModelError> {
        self.frames += 1;
        self.times = StepTimes::default();
        if frame.width < 8
            || frame.height < 8
            || frame.rgb.len() < frame.width as usize * frame.height as usize * 3
        {
            self.reset();
            return Ok(None);
        }
        let mut found = None;
        if let Some(roi) = self.followed {
            found = self.landmarks(frame, roi)?;
        }
        if found.is_none() {
            self.smoother.reset();
            let started = Instant::now();
            let detected = detect(&self.networks, &self.anchors, frame, &mut self.input)?;
            self.detections += 1;
            self.times.detect_us = micros(started);
            if let Some(roi) = detected.as_ref().and_then(Detection::roi) {
                found = self.landmarks(frame, roi)?;
            }
        }
        let Some((mut landmarks, presence, roi)) = found else {
            self.reset();
            return Ok(None);
        };
        // The next frame's crop comes from the landmarks as the model gave them.
        self.followed = Roi::around_points(&landmarks, EYE_CORNERS[0], EYE_CORNERS[1]);

        let started = Instant::now();
        self.smoother.apply(&mut landmarks, time);
        let fit = fit(&landmarks, frame.width, frame.height);
        let scores = self.blendshapes(&landmarks)?;
        self.times.blendshapes_us = micros(started);
        Ok(Some(Face {
            landmarks,
            presence,
            roi,
            fit,
            scores,
        }))
    }

    /// Runs the landmark model on `roi`: the landmarks in frame pixels, the presence score and
    /// the crop, when a face is there.
    #[allow(clippy::type_complexity)]
    fn landmarks(
        &mut self,
        frame: &Frame,
        roi: Roi,
    ) -> Result<Option<(Vec<[f32; 3]>, f32, Roi)>, ModelError> {
        if !roi.is_usable() {
            return Ok(None);
        }
        let started = Instant::now();
        roi.sample(
            frame,
            LANDMARK_SIDE,
            Border::Replicate,
            [0.0, 1.0],
            &mut self.input,
        );
        self.times.crop_us += micros(started);
        let started = Instant::now();
        let out = self.networks.landmarks.run(&self.input)?;
        self.times.landmarks_us += micros(started);
        let (Some(points), Some(presence)) = (out.first(), out.get(1).and_then(|p| p.first()))
        else {
            return Ok(None);
        };
        let presence = 1.0 / (1.0 + (-presence.clamp(-100.0, 100.0)).exp());
        if presence.is_nan() || presence < MIN_PRESENCE || points.len() < LANDMARKS * 3 {
            return Ok(None);
        }
        let side = LANDMARK_SIDE as f32;
        let mut landmarks = Vec::with_capacity(LANDMARKS);
        for p in points.chunks_exact(3).take(LANDMARKS) {
            let [x, y] = roi.to_frame(p[0] / side, p[1] / side);
            let z = p[2] / side * roi.w;
            if !(x.is_finite() && y.is_finite() && z.is_finite()) {
                return Ok(None);
            }
            landmarks.push([x, y, z]);
        }
        Ok(Some((landmarks, presence, roi)))
    }

    /// The blendshape model's scores for `landmarks`, each kept in 0..1.
    fn blendshapes(
        &mut self,
        landmarks: &[[f32; 3]],
    ) -> Result<[f32; BLENDSHAPE_OUTPUTS], ModelError> {
        self.input.clear();
        for &i in &BLENDSHAPE_LANDMARKS {
            let p = landmarks.get(usize::from(i)).copied().unwrap_or_default();
            self.input.extend_from_slice(&[p[0], p[1]]);
        }
        let out = self.networks.blendshapes.run(&self.input)?;
        let mut scores = [0.0f32; BLENDSHAPE_OUTPUTS];
        if let Some(values) = out.first() {
            for (s, v) in scores.iter_mut().zip(values) {
                *s = if v.is_finite() {
                    v.clamp(0.0, 1.0)
                } else {
                    0.0
                };
            }
        }
        Ok(scores)
    }
}

/// The face frame a tracked (or missed) camera frame gives: the 51 channels of the blendshape
/// model and the head, or [`TrackingFlag::Lost`] when no face was seen.
pub fn face_frame(face: Option<&Face>, received: Instant) -> FaceFrame {
    let mut frame = FaceFrame::empty(Protocol::Webcam, super::SOURCE, received);
    match face {
        None => frame.tracking = TrackingFlag::Lost,
        Some(face) => {
            frame.tracking = TrackingFlag::Tracked;
            for (channel, &score) in SCORES.iter().zip(&face.scores) {
                if let Some(channel) = channel {
                    frame.set(*channel, score);
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

    #[test]
    fn every_channel_but_the_tongue_is_scored_once() {
        let mut seen: Vec<Channel> = SCORES.iter().flatten().copied().collect();
        assert_eq!(seen.len(), 51);
        seen.sort_by_key(|c| c.index());
        seen.dedup();
        assert_eq!(seen.len(), 51);
        assert!(!seen.contains(&Channel::TongueOut));
        // Sorted and without repeats: the landmarks the blendshape model reads.
        assert!(BLENDSHAPE_LANDMARKS.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(
            *BLENDSHAPE_LANDMARKS.last().unwrap() as usize,
            LANDMARKS - 1
        );
    }

    #[test]
    fn noise_flat_and_tiny_frames_are_no_face_and_never_a_panic() {
        let mut tracker = Tracker::new(Arc::new(Networks::load().unwrap()));
        let mut seed = 0x2545_f491_u32;
        let mut noise = vec![0u8; 96 * 72 * 3];
        for v in &mut noise {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            *v = seed as u8;
        }
        let frames = [
            Frame {
                width: 96,
                height: 72,
                rgb: noise,
            },
            Frame::filled(64, 48, [0, 0, 0]),
            Frame::filled(64, 48, [255, 255, 255]),
            Frame::filled(7, 7, [128, 128, 128]),
            Frame {
                width: 640,
                height: 480,
                rgb: vec![1, 2, 3],
            },
        ];
        for (i, frame) in frames.iter().enumerate() {
            let face = tracker.track(frame, i as f64 / 30.0).unwrap();
            assert!(face.is_none(), "frame {i} read a face");
        }
        assert_eq!(tracker.counts().0, 5);
    }

    #[test]
    fn a_face_gives_its_scores_as_channels_and_none_is_lost() {
        let mut scores = [0.0; BLENDSHAPE_OUTPUTS];
        scores[25] = 0.7; // jawOpen
        scores[9] = 0.9; // eyeBlinkLeft
        let face = Face {
            landmarks: vec![[0.0; 3]; LANDMARKS],
            presence: 1.0,
            roi: Roi::letterbox(8, 8),
            fit: None,
            scores,
        };
        let frame = face_frame(Some(&face), Instant::now());
        assert_eq!(frame.tracking, TrackingFlag::Tracked);
        assert_eq!(frame.get(Channel::JawOpen), Some(0.7));
        assert_eq!(frame.get(Channel::EyeBlinkLeft), Some(0.9));
        assert_eq!(frame.get(Channel::EyeBlinkRight), Some(0.0));
        assert_eq!(frame.get(Channel::TongueOut), None);
        assert_eq!(face.weight(Channel::JawOpen), Some(0.7));
        let lost = face_frame(None, Instant::now());
        assert_eq!(lost.tracking, TrackingFlag::Lost);
        assert!(lost.present.is_empty());
    }
}

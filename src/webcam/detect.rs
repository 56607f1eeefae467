//! The face detector (BlazeFace short range) and its decoding, as MediaPipe's face detector graph
//! configures them: 896 SSD anchors on a 16x16 and an 8x8 grid, boxes and six keypoints relative
//! to their anchor, a sigmoid score, and overlapping boxes merged by their scores' weights.

use super::frame::Frame;
use super::model::{ModelError, Networks, ANCHORS, ANCHOR_VALUES, DETECTOR_SIDE};
use super::roi::{Border, Roi};

/// The score from which a box is a face (MediaPipe's `min_face_detection_confidence`).
pub const MIN_SCORE: f32 = 0.5;

/// Boxes overlapping the best one by more than this (intersection over union) are merged into
/// it (MediaPipe's `min_suppression_threshold`).
pub const MERGE_OVERLAP: f32 = 0.3;

/// The keypoints the detector gives: the eyes (the one on the picture's left first), the nose
/// tip, the mouth's centre, and the ear tragions.
pub const KEYPOINTS: usize = 6;

/// One face the detector found, in frame pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Detection {
    /// Left, top, right, bottom.
    pub bounds: [f32; 4],
    /// The six keypoints ([`KEYPOINTS`]).
    pub keypoints: [[f32; 2]; KEYPOINTS],
    /// The score, 0..1.
    pub score: f32,
}

impl Detection {
    /// The crop the landmark model reads for this face: its box grown, turned level with its
    /// eyes.
    pub fn roi(&self) -> Option<Roi> {
        Roi::around_box(self.bounds, self.keypoints[0], self.keypoints[1], false)
    }
}

/// Each anchor's centre in the detector's input, 0..1: two anchors a cell on the 16x16 grid
/// (stride 8), then six a cell on the 8x8 grid (the three stride-16 layers), rows first.
pub fn anchors() -> Vec<[f32; 2]> {
    let mut out = Vec::with_capacity(ANCHORS);
    for (grid, each) in [(16usize, 2usize), (8, 6)] {
        for y in 0..grid {
            for x in 0..grid {
                let centre = [
                    (x as f32 + 0.5) / grid as f32,
                    (y as f32 + 0.5) / grid as f32,
                ];
                out.extend(std::iter::repeat_n(centre, each));
            }
        }
    }
    out
}

/// Decodes the detector's outputs (`boxes`: 16 values per anchor, `scores`: one logit per
/// anchor) into the best face, in the detector's input (0..1), when one scores
/// [`MIN_SCORE`] or more: its box and keypoints averaged with every box overlapping it by more
/// than [`MERGE_OVERLAP`], weighted by their scores.
pub fn decode(boxes: &[f32], scores: &[f32], anchors: &[[f32; 2]]) -> Option<Detection> {
    let n = anchors
        .len()
        .min(scores.len())
        .min(boxes.len() / ANCHOR_VALUES);
    let side = DETECTOR_SIDE as f32;
    let decoded = |i: usize| -> Detection {
        let v = &boxes[i * ANCHOR_VALUES..(i + 1) * ANCHOR_VALUES];
        let [ax, ay] = anchors[i];
        let (cx, cy) = (v[0] / side + ax, v[1] / side + ay);
        let (w, h) = (v[2] / side, v[3] / side);
        Detection {
            bounds: [cx - w / 2.0, cy - h / 2.0, cx + w / 2.0, cy + h / 2.0],
            keypoints: std::array::from_fn(|k| {
                [v[4 + 2 * k] / side + ax, v[5 + 2 * k] / side + ay]
            }),
            score: 1.0 / (1.0 + (-scores[i].clamp(-100.0, 100.0)).exp()),
        }
    };
    let finite = |d: &Detection| {
        d.score.is_finite()
            && d.bounds.iter().all(|v| v.is_finite())
            && d.keypoints.iter().flatten().all(|v| v.is_finite())
    };
    let candidates: Vec<Detection> = (0..n)
        .filter(|&i| scores[i] >= logit(MIN_SCORE))
        .map(decoded)
        .filter(|d| finite(d) && d.score >= MIN_SCORE)
        .collect();
    let best = candidates
        .iter()
        .max_by(|a, b| a.score.total_cmp(&b.score))?;
    let mut sum = 0.0f32;
    let mut bounds = [0.0f32; 4];
    let mut keypoints = [[0.0f32; 2]; KEYPOINTS];
    for d in candidates
        .iter()
        .filter(|d| overlap(&d.bounds, &best.bounds) > MERGE_OVERLAP)
    {
        sum += d.score;
        for (b, v) in bounds.iter_mut().zip(d.bounds) {
            *b += d.score * v;
        }
        for (k, v) in keypoints.iter_mut().zip(d.keypoints) {
            k[0] += d.score * v[0];
            k[1] += d.score * v[1];
        }
    }
    if sum <= 0.0 {
        return Some(*best);
    }
    Some(Detection {
        bounds: bounds.map(|b| b / sum),
        keypoints: keypoints.map(|[x, y]| [x / sum, y / sum]),
        score: best.score,
    })
}

/// The logit of `p` (the raw score at which the sigmoid reaches `p`).
fn logit(p: f32) -> f32 {
    (p / (1.0 - p)).ln()
}

/// Intersection over union of two boxes (left, top, right, bottom).
pub fn overlap(a: &[f32; 4], b: &[f32; 4]) -> f32 {
    let w = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
    let h = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
    let inter = w * h;
    let union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
    if union > 0.0 {
        inter / union
    } else {
        0.0
    }
}

/// Looks for a face in the whole frame: the frame letterboxed to the detector's square input,
/// the best face mapped back to frame pixels. `input` is scratch space, refilled on each call.
pub fn detect(
    networks: &Networks,
    anchors: &[[f32; 2]],
    frame: &Frame,
    input: &mut Vec<f32>,
) -> Result<Option<Detection>, ModelError> {
    let roi = Roi::letterbox(frame.width, frame.height);
    roi.sample(frame, DETECTOR_SIDE, Border::Zero, [-1.0, 1.0], input);
    let out = networks.detector.run(input)?;
    let (Some(boxes), Some(scores)) = (out.first(), out.get(1)) else {
        return Ok(None);
    };
    let Some(found) = decode(boxes, scores, anchors) else {
        return Ok(None);
    };
    // From the letterboxed square (0..1) back to the frame.
    let side = roi.w;
    let (ox, oy) = (roi.cx - side / 2.0, roi.cy - side / 2.0);
    let x = |v: f32| v * side + ox;
    let y = |v: f32| v * side + oy;
    Ok(Some(Detection {
        bounds: [
            x(found.bounds[0]),
            y(found.bounds[1]),
            x(found.bounds[2]),
            y(found.bounds[3]),
        ],
        keypoints: found.keypoints.map(|[a, b]| [x(a), y(b)]),
        score: found.score,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn there_are_896_anchors_on_two_grids() {
        let a = anchors();
        assert_eq!(a.len(), ANCHORS);
        assert_eq!(a[0], [1.0 / 32.0, 1.0 / 32.0]);
        assert_eq!(a[1], a[0]);
        assert_eq!(a[2], [3.0 / 32.0, 1.0 / 32.0]);
        assert_eq!(a[512], [1.0 / 16.0, 1.0 / 16.0]);
        assert_eq!(a[895], [15.0 / 16.0, 15.0 / 16.0]);
    }

    /// Raw outputs with a box of `size` (input pixels) at anchor `i`, scoring `logit`.
    fn raw(entries: &[(usize, f32, f32, f32)]) -> (Vec<f32>, Vec<f32>) {
        let mut boxes = vec![0.0; ANCHORS * ANCHOR_VALUES];
        let mut scores = vec![-10.0; ANCHORS];
        for &(i, dx, size, score) in entries {
            boxes[i * ANCHOR_VALUES] = dx;
            boxes[i * ANCHOR_VALUES + 2] = size;
            boxes[i * ANCHOR_VALUES + 3] = size;
            boxes[i * ANCHOR_VALUES + 4] = -10.0;
            boxes[i * ANCHOR_VALUES + 6] = 10.0;
            scores[i] = score;
        }
        (boxes, scores)
    }

    #[test]
    fn overlapping_boxes_merge_by_score_and_weak_ones_are_no_face() {
        let a = anchors();
        // Two boxes 64 px wide on one anchor, 4 px apart, the right one twice as sure.
        let (boxes, scores) = raw(&[(600, 0.0, 64.0, 0.0), (601, 4.0, 64.0, 10.0)]);
        let d = decode(&boxes, &scores, &a).unwrap();
        let w0 = 0.5f32;
        let w1 = 1.0 / (1.0 + (-10.0f32).exp());
        let shift = 4.0 / 128.0 * w1 / (w0 + w1);
        let cx = a[600][0] + shift;
        assert!(
            ((d.bounds[0] + d.bounds[2]) / 2.0 - cx).abs() < 1e-5,
            "{d:?}"
        );
        assert!((d.bounds[2] - d.bounds[0] - 0.5).abs() < 1e-5);
        assert_eq!(d.score, w1);
        // The eyes: the first keypoint left of the second.
        assert!(d.keypoints[0][0] < d.keypoints[1][0]);
        // Nothing scoring 0.5: no face.
        let (boxes, scores) = raw(&[(10, 0.0, 64.0, -0.1)]);
        assert_eq!(decode(&boxes, &scores, &a), None);
        // Short or hostile outputs: no face, no panic.
        assert_eq!(decode(&boxes[..10], &scores, &a), None);
        let (mut boxes, scores) = raw(&[(10, 0.0, 64.0, 5.0)]);
        boxes[10 * ANCHOR_VALUES] = f32::NAN;
        assert_eq!(decode(&boxes, &scores, &a), None);
    }

    #[test]
    fn overlap_is_intersection_over_union() {
        assert_eq!(
            overlap(&[0.0, 0.0, 2.0, 2.0], &[1.0, 0.0, 3.0, 2.0]),
            1.0 / 3.0
        );
        assert_eq!(overlap(&[0.0, 0.0, 1.0, 1.0], &[2.0, 2.0, 3.0, 3.0]), 0.0);
        assert_eq!(overlap(&[0.0, 0.0, 0.0, 0.0], &[0.0, 0.0, 0.0, 0.0]), 0.0);
    }
}

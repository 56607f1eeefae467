//! Corrective targets for a look target and an expression together, named
//! `<look target>*<expression>` and weighted at runtime by the product of the two weights
//! (`crate::avatar::correctives`).
//!
//! Morph targets add linearly, so a look delta `L` and an expression delta `E` combine as
//! `L + E`: a blink cannot close lids whose opening the look changed, and a smile on a widened
//! mouth pulls the corners through skin the look moved elsewhere. The right combined shape is
//! the expression applied first and the look field evaluated where each vertex ended up,
//! `v + E(v) + L(v + E(v))`, so the corrective is `C(v) = L(v + E(v)) − L(v)`. Only the pairs
//! where the sum goes wrong get one (the eye sliders with the lid expressions, the mouth
//! sliders with the mouth expressions), and only where `C` reaches [`MIN_CORRECTION`].

use glam::Vec3;

use super::look::{self, LookSlider, LOOK_SLIDERS};
use super::targets::Rig;
use crate::arkit::Channel;

/// A pair whose corrective never moves a vertex by this much is left out (m).
pub const MIN_CORRECTION: f32 = 5e-5;

/// The look sliders that reshape the lids, with the expressions that move the lids.
const EYE_SLIDERS: [&str; 3] = ["eye_size", "eye_spacing", "eye_tilt"];
/// Expressions that move the lids (both sides; a side's corrective is the mirror of the
/// other's, since the look fields are symmetric).
const LID_CHANNELS: [Channel; 16] = {
    use Channel::*;
    [
        EyeBlinkLeft,
        EyeLookDownLeft,
        EyeLookInLeft,
        EyeLookOutLeft,
        EyeLookUpLeft,
        EyeSquintLeft,
        EyeWideLeft,
        EyeBlinkRight,
        EyeLookDownRight,
        EyeLookInRight,
        EyeLookOutRight,
        EyeLookUpRight,
        EyeSquintRight,
        EyeWideRight,
        CheekSquintLeft,
        CheekSquintRight,
    ]
};
/// The look sliders that reshape the mouth.
const MOUTH_SLIDERS: [&str; 2] = ["mouth_width", "lip_fullness"];
/// Expressions that, summed with a reshaped mouth, tear or fold the lips.
const MOUTH_CHANNELS: [Channel; 8] = {
    use Channel::*;
    [
        JawOpen,
        MouthFunnel,
        MouthPucker,
        MouthSmileLeft,
        MouthSmileRight,
        MouthStretchLeft,
        MouthStretchRight,
        MouthClose,
    ]
};

/// One corrective target.
#[derive(Debug, Clone)]
pub struct CorrectiveTarget {
    /// `<look target>*<expression>`.
    pub name: String,
    /// The look slider.
    pub slider: LookSlider,
    /// The slider's end the look target is (±1).
    pub value: f32,
    /// The expression.
    pub channel: Channel,
    /// Position deltas of the skin, mouth and hair primitives.
    pub deltas: [Vec<Vec3>; 3],
}

/// The expressions a look slider gets correctives with.
fn channels_for(slider: &str) -> &'static [Channel] {
    if EYE_SLIDERS.contains(&slider) {
        &LID_CHANNELS
    } else if MOUTH_SLIDERS.contains(&slider) {
        &MOUTH_CHANNELS
    } else {
        &[]
    }
}

/// `C = L(v + E(v)) − L(v)` for the look target of `slider` at `value` (±1) and the
/// expression deltas `expr`, per primitive.
pub fn corrective(
    rig: &Rig,
    slider: &LookSlider,
    value: f32,
    expr: &[Vec<Vec3>; 3],
) -> [Vec<Vec3>; 3] {
    let rest = look::deltas(rig, slider, value);
    let moved: Vec<Vec<Vec3>> = rig
        .primitives()
        .iter()
        .zip(expr)
        .map(|(b, e)| b.positions.iter().zip(e).map(|(p, d)| *p + *d).collect())
        .collect();
    let at = look::deltas_at(rig, slider, value, [&moved[0], &moved[1], &moved[2]]);
    let mut out: [Vec<Vec3>; 3] = Default::default();
    for (k, (a, r)) in at.iter().zip(&rest).enumerate() {
        out[k] = a.iter().zip(r).map(|(a, r)| *a - *r).collect();
    }
    out
}

/// Every corrective target in file order: per look target (the look targets' order), the
/// expressions in canonical ARKit order, skipping pairs below [`MIN_CORRECTION`].
pub fn correctives(rig: &Rig) -> Vec<CorrectiveTarget> {
    let mut expressions: Vec<Option<[Vec<Vec3>; 3]>> = vec![None; crate::arkit::COUNT];
    let mut out = Vec::new();
    for slider in &LOOK_SLIDERS {
        let mut channels = channels_for(slider.name).to_vec();
        channels.sort_by_key(|c| c.index());
        for (value, look) in [(1.0, slider.up), (-1.0, slider.down)] {
            for &channel in &channels {
                let expr = expressions[channel.index()].get_or_insert_with(|| rig.deltas(channel));
                let deltas = corrective(rig, slider, value, expr);
                let largest = deltas
                    .iter()
                    .flatten()
                    .map(|d| d.length())
                    .fold(0.0f32, f32::max);
                if largest >= MIN_CORRECTION {
                    out.push(CorrectiveTarget {
                        name: format!("{look}*{}", channel.name()),
                        slider: *slider,
                        value,
                        channel,
                        deltas,
                    });
                }
            }
        }
    }
    out
}

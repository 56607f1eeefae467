//! Visemes to the face: the lip-sync layer of the mixer and the ARKit mouth pose of each
//! viseme, so every perfect-sync avatar and the default head speak. VRM avatars also get the
//! viseme weights themselves (their `aa`, `ih`, `ou`, `ee`, `oh` expressions) through
//! [`crate::arkit::FaceFrame::visemes`].

use std::time::{Duration, Instant};

use super::{LipFrame, LipMode, Viseme, VISEMES};
use crate::arkit::Channel;
use crate::mixer::{BlendMode, Fade, Kit, Layer, LayerValues, Own, Region, RegionMask};

/// The name of the lip-sync layer in the mixer (and in `[layers].order`, to place it).
pub use crate::mixer::LAYER_LIPSYNC;

/// How long the layer takes to come in when lip sync starts or goes.
const FADE: Duration = Duration::from_millis(200);

use Channel::*;

/// The ARKit pose of each vowel at full weight: what the performer's face does saying it.
/// `sil` is the mouth at rest (no channel moves).
const POSES: [&[(Channel, f32)]; VISEMES] = [
    &[],
    // aa: the jaw well open, the lower lip down with it.
    &[
        (JawOpen, 0.65),
        (MouthLowerDownLeft, 0.35),
        (MouthLowerDownRight, 0.35),
        (MouthUpperUpLeft, 0.1),
        (MouthUpperUpRight, 0.1),
    ],
    // ih: a narrow opening, the corners drawn back.
    &[
        (JawOpen, 0.2),
        (MouthStretchLeft, 0.45),
        (MouthStretchRight, 0.45),
        (MouthSmileLeft, 0.15),
        (MouthSmileRight, 0.15),
    ],
    // ou: lips pushed forward into a small round opening.
    &[(JawOpen, 0.15), (MouthPucker, 0.8), (MouthFunnel, 0.35)],
    // ee: half open, wide, both lips off the teeth.
    &[
        (JawOpen, 0.35),
        (MouthStretchLeft, 0.3),
        (MouthStretchRight, 0.3),
        (MouthLowerDownLeft, 0.25),
        (MouthLowerDownRight, 0.25),
        (MouthUpperUpLeft, 0.15),
        (MouthUpperUpRight, 0.15),
    ],
    // oh: open and rounded.
    &[(JawOpen, 0.45), (MouthFunnel, 0.7), (MouthPucker, 0.25)],
];

/// The channels of the mouth region lip sync drives in `always` and `when_lost` modes: every
/// channel of any pose, so silence closes what a vowel opened.
const SHAPE: [Channel; 12] = [
    JawOpen,
    MouthLowerDownLeft,
    MouthLowerDownRight,
    MouthUpperUpLeft,
    MouthUpperUpRight,
    MouthStretchLeft,
    MouthStretchRight,
    MouthSmileLeft,
    MouthSmileRight,
    MouthPucker,
    MouthFunnel,
    MouthClose,
];

/// The channels that open the mouth, which `blend` takes from the audio when it opens further
/// than the phone.
const OPENING: [Channel; 5] = [
    JawOpen,
    MouthLowerDownLeft,
    MouthLowerDownRight,
    MouthUpperUpLeft,
    MouthUpperUpRight,
];

/// The ARKit pose of a mix of visemes: each vowel's pose by its weight, summed and clamped.
pub fn mouth_pose(weights: &[f32; VISEMES]) -> [(Channel, f32); SHAPE.len()] {
    let mut out = SHAPE.map(|c| (c, 0.0f32));
    for viseme in Viseme::ALL {
        let w = weights[viseme.index()];
        if !(w.is_finite() && w > 0.0) {
            continue;
        }
        for &(channel, value) in POSES[viseme.index()] {
            if let Some(slot) = out.iter_mut().find(|(c, _)| *c == channel) {
                slot.1 += value * w.min(1.0);
            }
        }
    }
    for slot in &mut out {
        slot.1 = slot.1.clamp(0.0, 1.0);
    }
    out
}

/// The lip-sync layer for `mode` at `strength` (its most weight), empty and faded out until
/// audio arrives (so a run without audio keeps the mouth as before); `None` when lip sync is
/// off.
pub fn layer(mode: LipMode, strength: f32) -> Option<Layer> {
    let mouth = RegionMask::of(&[Region::MouthJaw]);
    let blend = match mode {
        LipMode::Off => return None,
        LipMode::Blend => BlendMode::Max,
        LipMode::WhenLost | LipMode::Always => BlendMode::Override,
    };
    let mut layer = Layer::new(LAYER_LIPSYNC, blend, mouth, Fade::new(false, FADE, FADE));
    layer.gain = strength;
    layer.when_lost = mode == LipMode::WhenLost;
    Some(layer)
}

/// How long without a lip-sync hop before the layer fades out (the audio stopped or its
/// device went away); hops come every 16 ms.
pub const LIP_TIMEOUT: Duration = Duration::from_millis(300);

/// Lip sync as a source of the mixer: the lip-sync layer (see [`layer`]), filled by each hop of
/// the audio analysis and faded out when hops stop coming.
#[derive(Debug, Default)]
pub struct LipSyncSource {
    /// How lip sync mixes (`[lipsync] mode`).
    mode: LipMode,
    /// When the last hop came.
    last: Option<Instant>,
}

impl LipSyncSource {
    /// Off until [`LipSyncSource::configure`] gives its mode.
    pub fn new() -> LipSyncSource {
        LipSyncSource::default()
    }

    /// Takes `[lipsync]`'s `mode` and `strength`; returns its layer, or none when lip sync is
    /// off.
    pub fn configure(&mut self, mode: LipMode, strength: f32) -> Option<Layer> {
        self.mode = mode;
        layer(mode, strength)
    }

    /// Takes one hop's `frame` at `now`: the layer shows its mouth and fades in.
    pub fn hop<K: Kit>(&mut self, frame: &LipFrame, now: Instant, own: &mut Own<'_, K>) {
        if let Some(layer) = own.layer_mut(0) {
            layer.values = values(self.mode, &frame.weights);
            if !layer.fade.is_on() {
                layer.fade.set(true, now);
            }
        }
        self.last = Some(now);
    }

    /// Moves on to `now`: without a hop for [`LIP_TIMEOUT`], the layer fades out.
    pub fn advance<K: Kit>(&mut self, now: Instant, own: &mut Own<'_, K>) {
        if self
            .last
            .is_some_and(|t| now.saturating_duration_since(t) > LIP_TIMEOUT)
        {
            self.last = None;
            own.set_active(0, false, now);
        }
    }
}

/// Viseme weights of silence.
pub fn silence() -> [f32; VISEMES] {
    let mut w = [0.0; VISEMES];
    w[Viseme::Sil.index()] = 1.0;
    w
}

/// The layer's values for viseme `weights` in `mode`: the mouth pose (only its opening in
/// `blend`) and the weights themselves.
pub fn values(mode: LipMode, weights: &[f32; VISEMES]) -> LayerValues {
    let mut v = LayerValues::default();
    for (channel, value) in mouth_pose(weights) {
        if mode != LipMode::Blend || OPENING.contains(&channel) {
            v.set(channel, value);
        }
    }
    v.set_visemes(*weights);
    v
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::arkit::{FaceFrame, Protocol};
    use crate::calibrate::at;
    use crate::mixer::{Mixer, LAYER_TRACKING};

    fn weights(v: Viseme, w: f32) -> [f32; VISEMES] {
        let mut out = [0.0; VISEMES];
        out[v.index()] = w;
        out[Viseme::Sil.index()] = 1.0 - w;
        out
    }

    fn get(pose: &[(Channel, f32)], c: Channel) -> f32 {
        pose.iter().find(|(k, _)| *k == c).map_or(0.0, |p| p.1)
    }

    #[test]
    fn each_vowel_has_its_own_mouth() {
        let aa = mouth_pose(&weights(Viseme::Aa, 1.0));
        let ih = mouth_pose(&weights(Viseme::Ih, 1.0));
        let ou = mouth_pose(&weights(Viseme::Ou, 1.0));
        let oh = mouth_pose(&weights(Viseme::Oh, 1.0));
        let sil = mouth_pose(&silence());
        assert!(sil.iter().all(|(_, v)| *v == 0.0), "silence rests");
        // aa opens the jaw the most; ih stretches; ou puckers; oh funnels.
        for other in [&ih, &ou, &oh] {
            assert!(get(&aa, JawOpen) > get(other, JawOpen));
        }
        assert!(get(&ih, MouthStretchLeft) > get(&aa, MouthStretchLeft));
        assert!(get(&ou, MouthPucker) > get(&oh, MouthPucker));
        assert!(get(&oh, MouthFunnel) > get(&ou, MouthFunnel));
        // Half the weight, half the pose; junk weights are ignored.
        let half = mouth_pose(&weights(Viseme::Aa, 0.5));
        assert!((get(&half, JawOpen) - 0.5 * get(&aa, JawOpen)).abs() < 1e-6);
        let junk = mouth_pose(&[f32::NAN, f32::INFINITY, -3.0, 0.0, 0.0, 0.0]);
        assert!(junk
            .iter()
            .all(|(_, v)| v.is_finite() && (0.0..=1.0).contains(v)));
    }

    fn phone(t: Instant, jaw: f32, pucker: f32) -> FaceFrame {
        let mut f = FaceFrame::empty(Protocol::Vmc, "10.0.0.2:5000".parse().unwrap(), t);
        f.set(JawOpen, jaw);
        f.set(MouthPucker, pucker);
        f.set(EyeBlinkLeft, 0.4);
        f
    }

    fn mixer(mode: LipMode) -> Mixer {
        let tracking = Layer::new(
            LAYER_TRACKING,
            BlendMode::Override,
            RegionMask::ALL,
            Fade::new(true, Duration::ZERO, Duration::ZERO),
        );
        let mut lip = layer(mode, 1.0).unwrap();
        lip.fade = Fade::new(true, Duration::ZERO, Duration::ZERO);
        Mixer::new(vec![tracking, lip])
    }

    fn speak(m: &mut Mixer, mode: LipMode, v: Viseme) {
        m.layer_mut(LAYER_LIPSYNC).unwrap().values = values(mode, &weights(v, 1.0));
    }

    #[test]
    fn off_has_no_layer() {
        assert!(layer(LipMode::Off, 1.0).is_none());
    }

    #[test]
    fn always_owns_the_mouth_and_leaves_the_rest_to_the_phone() {
        let t0 = Instant::now();
        let mut m = mixer(LipMode::Always);
        m.set_tracking(&phone(t0, 0.1, 0.9));
        speak(&mut m, LipMode::Always, Viseme::Aa);
        let out = m.mix(t0);
        assert!((out.get(JawOpen).unwrap() - 0.65).abs() < 1e-6);
        assert_eq!(
            out.get(MouthPucker),
            Some(0.0),
            "the phone's pucker is overridden"
        );
        assert_eq!(
            out.get(EyeBlinkLeft),
            Some(0.4),
            "the eyes stay the phone's"
        );
        assert!((out.visemes[Viseme::Aa.index()] - 1.0).abs() < 1e-6);
    }

    #[test]
    fn blend_takes_the_wider_opening_and_keeps_the_phones_lips() {
        let t0 = Instant::now();
        let mut m = mixer(LipMode::Blend);
        m.set_tracking(&phone(t0, 0.1, 0.9));
        speak(&mut m, LipMode::Blend, Viseme::Aa);
        let out = m.mix(t0);
        assert!(
            (out.get(JawOpen).unwrap() - 0.65).abs() < 1e-6,
            "audio opens further"
        );
        assert_eq!(
            out.get(MouthPucker),
            Some(0.9),
            "the phone keeps the lip shape"
        );
        // The phone opening wider than the audio wins.
        m.set_tracking(&phone(t0, 0.9, 0.0));
        let out = m.mix(at(t0, 0.02));
        assert_eq!(out.get(JawOpen), Some(0.9));
    }

    #[test]
    fn when_lost_speaks_only_without_a_face() {
        let t0 = Instant::now();
        let mut m = mixer(LipMode::WhenLost);
        speak(&mut m, LipMode::WhenLost, Viseme::Aa);
        // No phone yet: the audio drives the mouth.
        let out = m.mix(t0);
        assert!((out.get(JawOpen).unwrap() - 0.65).abs() < 1e-6);
        assert!(out.visemes[Viseme::Aa.index()] > 0.99);
        // A tracked face: the phone's mouth, no visemes.
        m.set_tracking_layer(&phone(t0, 0.1, 0.9), 1.0);
        let out = m.mix(at(t0, 0.02));
        assert_eq!(out.get(JawOpen), Some(0.1));
        assert_eq!(out.visemes, [0.0; VISEMES]);
        // The face fading out halfway: halfway between.
        m.set_tracking_layer(&phone(t0, 0.1, 0.9), 0.5);
        let out = m.mix(at(t0, 0.04));
        let jaw = out.get(JawOpen).unwrap();
        assert!(jaw > 0.1 && jaw < 0.65, "{jaw}");
        // Lost: the audio's.
        m.set_tracking_layer(&phone(t0, 0.1, 0.9), 0.0);
        let out = m.mix(at(t0, 0.06));
        assert!((out.get(JawOpen).unwrap() - 0.65).abs() < 1e-6);
    }
}

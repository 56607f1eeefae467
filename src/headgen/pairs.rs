//! Corrective targets for two expressions together, named `<a>*<b>` (the two ARKit channels in
//! canonical order, `jawOpen*mouthSmileLeft`) and weighted at runtime by the product of the two
//! weights (`crate::avatar::correctives`), like the look correctives of [`super::correctives`].
//!
//! Each expression is sculpted on the neutral face, and morph targets add: where two of them
//! move the same skin, the sum can be a shape neither sculpt meant. A laugh (`jawOpen` with both
//! `mouthSmile*`) is the plainest case: the smile lifts the corners while the jaw leaves the
//! middle of the upper lip where it was, so the open upper lip hangs in a V; and the smile's
//! lift of the skin under the corners fights the jaw pulling the chin down, pinching the chin.
//! A corrective here holds what the pair needs on top of the sum; only the left-side pairs are
//! sculpted, the right-side ones are their mirror images.

use glam::Vec3;

use super::face::{SkinVertex, Slit, MOUTH_HALF, MOUTH_PHI};
use super::math::{bump, smoothstep};
use super::mesh::mirror;
use super::parts::{cavity_center, MouthPart};
use super::targets::{jaw_weight, pout_cavity, skin_delta, upper_lip_weight, Landmarks, Rig};
use crate::arkit::Channel;

/// How far the middle of the upper lip rises in a full laugh (`jawOpen` and both
/// `mouthSmile*` at 1), beyond what the jaw lifts it (m): the corners rise by the smile, the
/// middle by this, so the open upper lip draws a shallow curve instead of a V.
const LAUGH_UPPER_LIFT: f32 = 0.0045;
/// How far the laugh raises the upper front of the mouth's cavity (m).
const LAUGH_CAVITY_LIFT: f32 = 0.007;
/// Latitude over which the laugh's lift of the upper lip fades towards the nose.
const LAUGH_UPPER_REACH: f32 = 0.2;
/// How far the middle of the upper lip rises with `jawOpen` and `mouthFunnel` at 1, beyond what
/// each lifts it (m): the funnel lifts the whole upper lip about evenly, so with the jaw's
/// arched drop of the lower lip the opening had a flat top over a V; this arches the top so
/// the opening is an O.
const FUNNEL_UPPER_ARCH: f32 = 0.004;
/// The same for `jawOpen` with `mouthPucker`, whose gathered lips barely part by themselves.
const PUCKER_UPPER_ARCH: f32 = 0.005;
/// Half-width of the band about the centre line where the left smile's share of the upper
/// lip's lift hands over to the right smile's (m). The two shares add up to 1 everywhere.
const SPLIT: f32 = 0.004;

/// The pairs that get a corrective (left side; each has a mirrored right-side partner unless
/// both channels are unsided).
const PAIRS: [(Channel, Channel); 3] = [
    (Channel::JawOpen, Channel::MouthFunnel),
    (Channel::JawOpen, Channel::MouthPucker),
    (Channel::JawOpen, Channel::MouthSmileLeft),
];

/// One corrective target for two expressions.
#[derive(Debug, Clone)]
pub struct PairTarget {
    /// `<a>*<b>`.
    pub name: String,
    /// The two expressions, in canonical order.
    pub channels: [Channel; 2],
    /// Position deltas of the skin, mouth and hair primitives.
    pub deltas: [Vec<Vec3>; 3],
}

/// Every pair corrective in file order: the left-side pairs in [`PAIRS`] order, each followed
/// by its mirrored right-side partner.
pub fn pair_correctives(rig: &Rig) -> Vec<PairTarget> {
    let mut out = Vec::new();
    for (a, b) in PAIRS {
        let left = pair_deltas(rig, a, b);
        let (ma, mb) = (a.mirror(), b.mirror());
        let mirrored = (ma, mb) != (a, b);
        out.push(pair_target(a, b, left.clone()));
        if mirrored {
            let flip = |i: usize| -> Vec<Vec3> {
                rig.mirrors[i]
                    .iter()
                    .map(|&m| mirror(left[i][m as usize]))
                    .collect()
            };
            out.push(pair_target(ma, mb, [flip(0), flip(1), flip(2)]));
        }
    }
    out
}

/// A pair's target, its channels put in canonical order.
fn pair_target(a: Channel, b: Channel, deltas: [Vec<Vec3>; 3]) -> PairTarget {
    let channels = if a.index() <= b.index() {
        [a, b]
    } else {
        [b, a]
    };
    PairTarget {
        name: format!("{}*{}", channels[0].name(), channels[1].name()),
        channels,
        deltas,
    }
}

/// The corrective deltas of a left-side pair, per primitive.
fn pair_deltas(rig: &Rig, a: Channel, b: Channel) -> [Vec<Vec3>; 3] {
    let lm = Landmarks::new();
    let skin = rig
        .skin
        .positions
        .iter()
        .enumerate()
        .map(|(i, &p)| match rig.grid.get(i) {
            Some(v) => skin_pair_delta(&lm, a, b, v, p),
            None => Vec3::ZERO,
        })
        .collect();
    let cavity = cavity_center();
    let mouth = rig
        .mouth
        .positions
        .iter()
        .zip(&rig.mouth_parts)
        .map(|(&p, &part)| match (a, b, part) {
            (Channel::JawOpen, Channel::MouthSmileLeft, MouthPart::Cavity) => {
                laugh_cavity_lift(&lm, cavity, p)
            }
            (Channel::JawOpen, Channel::MouthPucker, MouthPart::Cavity) => pout_cavity(&lm, p),
            _ => Vec3::ZERO,
        })
        .collect();
    [skin, mouth, vec![Vec3::ZERO; rig.hair.len()]]
}

/// The laugh's lift of the cavity's upper front, most beside the middle of the mouth, where
/// the smile has raised the lips' inner surfaces nearly to the cavity's top already: the roof
/// rises above them, so a turned head looking in under the raised upper lip sees the cavity,
/// not past it into the head.
fn laugh_cavity_lift(lm: &Landmarks, cavity: Vec3, p: Vec3) -> Vec3 {
    let across = smoothstep(1.5 * lm.corner.x, 0.5 * lm.corner.x, p.x.abs());
    let top = smoothstep(cavity.y, cavity.y + 0.006, p.y);
    let front = smoothstep(cavity.z - 0.004, cavity.z + 0.008, p.z);
    Vec3::new(0.0, LAUGH_CAVITY_LIFT, 0.0) * (across * top * front * smoothstep(-SPLIT, SPLIT, p.x))
}

/// The corrective delta of one skin vertex (neutral position `p`) for a left-side pair.
fn skin_pair_delta(lm: &Landmarks, a: Channel, b: Channel, v: &SkinVertex, p: Vec3) -> Vec3 {
    use Channel::*;
    match (a, b) {
        (JawOpen, MouthSmileLeft) => {
            // Where the jaw carries the skin (the lower lip, the chin), it follows the jaw
            // rather than the smile: the corners keep their lift, the skin below them does not
            // fight the dropping chin.
            let follow = -skin_delta(lm, MouthSmileLeft, v, p) * jaw_weight(v);
            // The upper lip rises between the corners, shared with the right smile across the
            // centre line.
            let lift = Vec3::new(0.0, LAUGH_UPPER_LIFT, 0.0)
                * (upper_lip_band(v) * smoothstep(-SPLIT, SPLIT, p.x));
            follow + lift
        }
        // The upper lip arches up like the lower lip drops (the jaw's own lift of it, made
        // larger), so the rounded lips open in an O.
        (JawOpen, MouthFunnel) => Vec3::new(0.0, FUNNEL_UPPER_ARCH, 0.0) * outer_upper_lip(v),
        (JawOpen, MouthPucker) => Vec3::new(0.0, PUCKER_UPPER_ARCH, 0.0) * outer_upper_lip(v),
        _ => Vec3::ZERO,
    }
}

/// The upper lip between the corners: 1 on its edge across the middle of the mouth, falling
/// to 0 well before the corners (where the smile lifts it already; lifted there too, it would
/// bare the mouth's cavity past its edge to a turned head) and over [`LAUGH_UPPER_REACH`]
/// upwards; 0 on the lower lip and on the lips' inner surfaces (see [`outer_upper_lip`]).
fn upper_lip_band(v: &SkinVertex) -> f32 {
    let dp = v.phi - MOUTH_PHI;
    let rows = match v.slit {
        Slit::MouthEdge { upper: true } => 1.0,
        Slit::None if dp > 0.0 => bump(dp, LAUGH_UPPER_REACH),
        _ => 0.0,
    };
    rows * smoothstep(0.9 * MOUTH_HALF, 0.1 * MOUTH_HALF, v.theta.abs())
}

/// The jaw's lift of the upper lip ([`upper_lip_weight`]) on the outer skin only: the lip's
/// inner surface stays against the mouth's cavity, so a lip raised further than the jaw raises
/// it never opens a gap between the two that a turned head shows the background through.
fn outer_upper_lip(v: &SkinVertex) -> f32 {
    match v.slit {
        Slit::MouthInner { .. } => 0.0,
        _ => upper_lip_weight(v),
    }
}

//! What a compiled mapping is made of: target bindings, channel drivers, groups, the head,
//! neck and jaw drivers, driven VRM expressions and the bone frames of a VRM avatar.

use super::file::{self, BoneSection, Combine, GroupMode};
use super::{finite, Curve, Source};
use crate::arkit::FaceFrame;
use crate::avatar::vrm::{Override, Procedural};
use crate::avatar::MorphBind;
use glam::{EulerRot, Quat, Vec3};

/// One morph target driven by one driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetBinding {
    /// Mesh index in the avatar.
    pub mesh: usize,
    /// Target index in that mesh.
    pub target: usize,
    /// Index into [`CompiledMapping::drivers`](super::CompiledMapping::drivers).
    pub driver: usize,
}

/// How one value is computed from the frame's channels and visemes.
#[derive(Debug, Clone, PartialEq)]
pub struct Driver {
    /// Sources with their weights.
    pub sources: Vec<(Source, f32)>,
    /// How the weighted sources combine.
    pub combine: Combine,
    /// Multiplies the combined value.
    pub gain: f32,
    /// Added after the gain.
    pub offset: f32,
    /// Applied after gain and offset.
    pub curve: Curve,
    /// The output range; `None` (automatic bindings) passes the value through.
    pub clamp: Option<(f32, f32)>,
    /// A second driver whose value wins where it is larger: the value is the maximum of the
    /// two, each after its own gain, curve and clamp. The VRM vowels use it to open as far as
    /// the larger of their ARKit formula and their viseme.
    pub max_with: Option<Box<Driver>>,
}

impl Driver {
    /// A driver that passes one channel or viseme through unchanged.
    pub fn identity(source: impl Into<Source>) -> Driver {
        Driver {
            sources: vec![(source.into(), 1.0)],
            combine: Combine::Sum,
            gain: 1.0,
            offset: 0.0,
            curve: Curve::Linear,
            clamp: None,
            max_with: None,
        }
    }

    /// Calls `visit` with every source the driver reads, those of [`Driver::max_with`] too.
    pub fn each_source(&self, visit: &mut impl FnMut(Source, f32)) {
        for &(source, weight) in &self.sources {
            visit(source, weight);
        }
        if let Some(other) = &self.max_with {
            other.each_source(visit);
        }
    }

    /// The driver's value for `frame`, or `None` when the frame carries none of its sources.
    /// Missing sources count as 0 and non-finite values as 0; the result is always finite.
    pub fn eval(&self, frame: &FaceFrame) -> Option<f32> {
        let own = self.eval_own(frame);
        let Some(other) = &self.max_with else {
            return own;
        };
        match (own, other.eval(frame)) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// The value of this driver's own sources, without [`Driver::max_with`].
    fn eval_own(&self, frame: &FaceFrame) -> Option<f32> {
        let mut any = false;
        let mut acc = match self.combine {
            Combine::Sum => 0.0,
            Combine::Product => 1.0,
            Combine::Min => f32::INFINITY,
            Combine::Max => f32::NEG_INFINITY,
        };
        for &(source, weight) in &self.sources {
            let v = match source.value(frame) {
                Some(v) => {
                    any = true;
                    finite(v)
                }
                None => 0.0,
            } * weight;
            acc = match self.combine {
                Combine::Sum => acc + v,
                Combine::Product => acc * v,
                Combine::Min => acc.min(v),
                Combine::Max => acc.max(v),
            };
        }
        if !any {
            return None;
        }
        let y = self.curve.eval(finite(acc) * self.gain + self.offset);
        Some(match self.clamp {
            Some((lo, hi)) => finite(y).clamp(lo, hi),
            None => finite(y),
        })
    }
}

/// A compiled group: each member is the list of (mesh, target) slots of one target name.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// The group's name.
    pub name: String,
    /// Members; a member's value is read from its first slot and written to all of them.
    pub members: Vec<Vec<(usize, usize)>>,
    /// What the group does.
    pub mode: GroupMode,
    /// The exponent of the soft exclusive mode.
    pub sharpness: f32,
}

impl Group {
    pub(super) fn apply(&self, weights: &mut [Vec<f32>]) {
        let value = |w: &[Vec<f32>], m: &[(usize, usize)]| {
            m.first()
                .and_then(|&(mesh, t)| w.get(mesh).and_then(|ws| ws.get(t)))
                .map_or(0.0, |&v| finite(v))
        };
        let scale = |w: &mut [Vec<f32>], m: &[(usize, usize)], f: &dyn Fn(f32) -> f32| {
            for &(mesh, t) in m {
                if let Some(slot) = w.get_mut(mesh).and_then(|ws| ws.get_mut(t)) {
                    *slot = finite(f(finite(*slot)));
                }
            }
        };
        match self.mode {
            GroupMode::Free => {}
            GroupMode::Normalise => {
                let sum: f32 = self.members.iter().map(|m| value(weights, m)).sum();
                if sum > 1.0 {
                    for m in &self.members {
                        scale(weights, m, &|v| v / sum);
                    }
                }
            }
            GroupMode::Exclusive => {
                let mut best: Option<(usize, f32)> = None;
                for (i, m) in self.members.iter().enumerate() {
                    let v = value(weights, m);
                    if best.is_none_or(|(_, b)| v > b) {
                        best = Some((i, v));
                    }
                }
                for (i, m) in self.members.iter().enumerate() {
                    if best.is_some_and(|(b, _)| b != i) {
                        scale(weights, m, &|_| 0.0);
                    }
                }
            }
            GroupMode::SoftExclusive => {
                let max = self
                    .members
                    .iter()
                    .map(|m| value(weights, m))
                    .fold(0.0f32, f32::max);
                if max > 0.0 {
                    let p = self.sharpness;
                    for m in &self.members {
                        scale(weights, m, &|v| {
                            if v > 0.0 {
                                v * (v / max).min(1.0).powf(p)
                            } else {
                                v
                            }
                        });
                    }
                }
            }
        }
    }
}

/// A node turned by the stream's head rotation, per axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoneDriver {
    /// Multiplier of pitch (X), yaw (Y) and roll (Z).
    pub gain: Vec3,
    /// Largest |angle| of pitch, yaw and roll, in radians.
    pub limit: Vec3,
    /// The avatar axis (with sign) of pitch, yaw and roll.
    pub axes: [file::Axis; 3],
}

impl Default for BoneDriver {
    fn default() -> Self {
        BoneDriver::from_section(&BoneSection::default())
    }
}

impl BoneDriver {
    pub(super) fn from_section(s: &BoneSection) -> BoneDriver {
        BoneDriver {
            gain: Vec3::from_array(s.gain.map(|g| g.0)),
            limit: Vec3::from_array(s.limit_degrees.map(|l| l.0.to_radians())),
            axes: s.axes,
        }
    }

    fn is_identity(&self) -> bool {
        self.gain == Vec3::ONE
            && self.limit.min_element() >= std::f32::consts::PI
            && self.axes == [file::Axis::X, file::Axis::Y, file::Axis::Z]
    }

    /// The node rotation for the stream's head rotation `q` (`None` when `q` is not finite).
    pub fn rotation(&self, q: Quat) -> Option<Quat> {
        if !q.is_finite() || q.length_squared() < 1e-12 {
            return None;
        }
        if self.is_identity() {
            return Some(q);
        }
        let (yaw, pitch, roll) = q.normalize().to_euler(EulerRot::YXZ);
        let stream = [pitch, yaw, roll];
        let mut out = [0.0f32; 3];
        for (i, (angle, axis)) in stream.into_iter().zip(self.axes).enumerate() {
            let a = (finite(angle) * self.gain[i]).clamp(-self.limit[i], self.limit[i]);
            out[axis.index] += if axis.negative { -a } else { a };
        }
        Some(Quat::from_euler(EulerRot::YXZ, out[1], out[0], out[2]))
    }
}

/// A jaw node opened by a channel or a viseme.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JawDriver {
    /// The jaw node.
    pub node: usize,
    /// The channel or viseme that opens it.
    pub source: Source,
    /// Radians per unit of the source.
    pub radians: f32,
    /// The rotation axis (unit).
    pub axis: Vec3,
}

/// A VRM expression driven by a channel driver, with what it moves.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpressionBinding {
    /// Index into the avatar's VRM expressions.
    pub expression: usize,
    /// Index into [`CompiledMapping::drivers`](super::CompiledMapping::drivers).
    pub driver: usize,
    /// The morph targets it moves, with their weights at expression weight 1.
    pub binds: Vec<MorphBind>,
    /// The material colours and texture offsets it moves, resolved against the avatar's
    /// materials.
    pub material_binds: Vec<crate::avatar::material_binds::ResolvedBind>,
    /// Whether its weight snaps to 0 or 1 (above 0.5 is 1).
    pub is_binary: bool,
    /// Whether it is a blink, look-at or mouth expression, which others can override.
    pub procedural: Option<Procedural>,
    /// How it overrides the blink, look-at and mouth expressions, indexed by [`Procedural`].
    pub overrides: [Override; 3],
}

impl ExpressionBinding {
    /// The expression's weight for `frame` (in [0, 1], snapped when binary), or `None` when
    /// the frame carries none of its driver's sources.
    pub fn weight(&self, drivers: &[Driver], frame: &FaceFrame) -> Option<f32> {
        let w = finite(drivers.get(self.driver)?.eval(frame)?).clamp(0.0, 1.0);
        Some(if !self.is_binary {
            w
        } else if w > 0.5 {
            1.0
        } else {
            0.0
        })
    }
}

/// The rest orientation, in avatar space, of each driven node of a VRM avatar.
///
/// Head and eye rotations from the stream, the rotations the eyeLook channels make and the jaw
/// axis are all meant in avatar space (facing +Z, +Y up, +X on the avatar's left). A node's
/// extra rotation applies in its own frame, so for a VRM avatar each is turned into the node's
/// frame: `frame⁻¹ · q · frame`. That is what keeps a VRM 0.x model, turned a half turn to face
/// the camera, nodding the right way. Plain glTF avatars get identity frames: their rotations
/// apply in the node's frame, as the mapping file's axes describe.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoneFrames {
    /// The head node's frame.
    pub head: Quat,
    /// The neck node's frame.
    pub neck: Quat,
    /// The left eye node's frame.
    pub left_eye: Quat,
    /// The right eye node's frame.
    pub right_eye: Quat,
    /// The jaw node's frame.
    pub jaw: Quat,
}

impl Default for BoneFrames {
    fn default() -> Self {
        BoneFrames {
            head: Quat::IDENTITY,
            neck: Quat::IDENTITY,
            left_eye: Quat::IDENTITY,
            right_eye: Quat::IDENTITY,
            jaw: Quat::IDENTITY,
        }
    }
}

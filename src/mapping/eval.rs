//! Evaluating a frame: the channels and visemes a compiled mapping reads, and the target weights and node
//! rotations it writes into a pose, with the VRM expression rules.

use super::{finite, CompiledMapping, ExpressionBinding, EyeLook, Source};
use crate::arkit::{Channel, ChannelMask, FaceFrame, Viseme, VISEMES};
use crate::avatar::vrm::Override;
use crate::avatar::{MaterialOverride, Pose};
use glam::Quat;

impl CompiledMapping {
    /// Channels that drive at least one target or node.
    pub fn driven_channels(&self) -> impl Iterator<Item = Channel> + '_ {
        self.driven_mask().iter()
    }

    /// Calls `visit` with every source of the drivers in use (targets, expressions, the jaw).
    fn each_driving_source(&self, mut visit: impl FnMut(Source)) {
        let mut visit = |s: Source, _: f32| visit(s);
        let bound = self.targets.iter().map(|b| b.driver);
        for d in bound.chain(self.expressions.iter().map(|e| e.driver)) {
            if let Some(d) = self.drivers.get(d) {
                d.each_source(&mut visit);
            }
        }
        if let Some(j) = &self.jaw {
            visit(j.source, 1.0);
        }
    }

    /// The visemes that drive at least one target, expression or the jaw, in
    /// [`Viseme::ALL`] order.
    pub fn driven_visemes(&self) -> Vec<Viseme> {
        let mut driven = [false; VISEMES];
        self.each_driving_source(|s| {
            if let Some(v) = s.viseme() {
                driven[v.index()] = true;
            }
        });
        Viseme::ALL
            .into_iter()
            .filter(|v| driven[v.index()])
            .collect()
    }

    /// The set of channels that drive at least one target or node.
    pub fn driven_mask(&self) -> ChannelMask {
        let mut mask = ChannelMask::EMPTY;
        self.each_driving_source(|s| {
            if let Some(c) = s.channel() {
                mask.insert(c);
            }
        });
        if self.left_eye.is_some() {
            use Channel::*;
            for c in [
                EyeLookUpLeft,
                EyeLookDownLeft,
                EyeLookInLeft,
                EyeLookOutLeft,
            ] {
                mask.insert(c);
            }
        }
        if self.right_eye.is_some() {
            use Channel::*;
            for c in [
                EyeLookUpRight,
                EyeLookDownRight,
                EyeLookInRight,
                EyeLookOutRight,
            ] {
                mask.insert(c);
            }
        }
        mask
    }

    /// Writes the weights, rotations and material colours `frame` asks for into `pose` (which
    /// starts from the avatar's rest pose). Targets whose sources the frame lacks entirely stay
    /// at rest.
    /// Allocates nothing; every weight written is finite.
    pub fn apply(&self, frame: &FaceFrame, pose: &mut Pose) {
        for b in &self.targets {
            let Some(d) = self.drivers.get(b.driver) else {
                continue;
            };
            if let Some(w) = d.eval(frame) {
                if let Some(slot) = pose
                    .weights
                    .get_mut(b.mesh)
                    .and_then(|m| m.get_mut(b.target))
                {
                    *slot = w;
                }
            }
        }
        self.apply_expressions(frame, &mut pose.weights, &mut pose.materials);
        for g in &self.groups {
            g.apply(&mut pose.weights);
        }
        let mut set = |node: Option<usize>, q: Option<Quat>| {
            if let (Some(n), Some(q)) = (node, q) {
                if let Some(slot) = pose.rotations.get_mut(n) {
                    if q.is_finite() {
                        *slot = q;
                    }
                }
            }
        };
        let f = &self.frames;
        set(
            self.head,
            frame
                .head
                .and_then(|q| self.head_driver.rotation(q))
                .map(|q| in_frame(f.head, q)),
        );
        set(
            self.neck,
            frame
                .head
                .and_then(|q| self.neck_driver.rotation(q))
                .map(|q| in_frame(f.neck, q)),
        );
        set(
            self.left_eye,
            frame
                .left_eye
                .or_else(|| eye_from_look(frame, Side::Left, &self.eye_look))
                .map(|q| in_frame(f.left_eye, q)),
        );
        set(
            self.right_eye,
            frame
                .right_eye
                .or_else(|| eye_from_look(frame, Side::Right, &self.eye_look))
                .map(|q| in_frame(f.right_eye, q)),
        );
        if let Some(j) = &self.jaw {
            if let Some(w) = j.source.value(frame) {
                let q = Quat::from_axis_angle(j.axis, finite(w) * j.radians);
                set(Some(j.node), Some(in_frame(f.jaw, q)));
            }
        }
    }

    /// The weight each driven VRM expression ends at for `frame`, after snapping and the
    /// overrides (see [`CompiledMapping::apply`]), as (index into the avatar's expressions,
    /// weight); expressions whose sources the frame lacks are left out. This allocates: it is
    /// for tools and tests, not the render loop.
    pub fn expression_weights(&self, frame: &FaceFrame) -> Vec<(usize, f32)> {
        let mut out = Vec::new();
        self.resolve_expressions(frame, |e, w| out.push((e.expression, w)));
        out
    }

    /// Adds the driven expressions' binds to `weights`: each target gets the sum of its binds
    /// times their expressions' weights (from [`CompiledMapping::resolve_expressions`]),
    /// clamped to [0, 1]. An expression whose sources the frame lacks adds nothing, and when
    /// none has any, the weights are left as they are. Material binds move `materials` the
    /// same way (`(target - base) * weight`, summed), unclamped: the renderer clamps colours.
    fn apply_expressions(
        &self,
        frame: &FaceFrame,
        weights: &mut [Vec<f32>],
        materials: &mut [MaterialOverride],
    ) {
        if self.expressions.is_empty() {
            return;
        }
        let mut any = false;
        self.resolve_expressions(frame, |e, w| {
            any = true;
            if w == 0.0 {
                return;
            }
            for b in &e.binds {
                if let Some(slot) = weights.get_mut(b.mesh).and_then(|m| m.get_mut(b.target)) {
                    *slot = finite(*slot) + w * b.weight;
                }
            }
            for b in &e.material_binds {
                b.apply(w, materials);
            }
        });
        if any {
            for &(mesh, target) in &self.expression_slots {
                if let Some(slot) = weights.get_mut(mesh).and_then(|m| m.get_mut(target)) {
                    *slot = finite(*slot).clamp(0.0, 1.0);
                }
            }
        }
    }

    /// Calls `visit` with each driven expression whose sources `frame` carries and its final
    /// weight, after the VRM rules: binary expressions snap at 0.5; the summed weight of the
    /// expressions overriding blink, look-at or mouth (`block` counts 1 once above 0, `blend`
    /// its weight) scales those expressions by `1 − min(1, sum)` and suppresses binary ones
    /// entirely. An expression does not override its own kind.
    fn resolve_expressions(
        &self,
        frame: &FaceFrame,
        mut visit: impl FnMut(&ExpressionBinding, f32),
    ) {
        // The drivers are evaluated again below rather than stored, so that `apply` needs no
        // scratch space; only expressions that override anything are evaluated twice.
        let mut rate = [0.0f32; 3];
        for e in &self.expressions {
            if e.overrides == [Override::None; 3] {
                continue;
            }
            let Some(w) = e.weight(&self.drivers, frame) else {
                continue;
            };
            for (k, (r, mode)) in rate.iter_mut().zip(e.overrides).enumerate() {
                if e.procedural.is_some_and(|p| p as usize == k) {
                    continue;
                }
                *r += match mode {
                    Override::None => 0.0,
                    Override::Block if w > 0.0 => 1.0,
                    Override::Block => 0.0,
                    Override::Blend => w,
                };
            }
        }
        let keep = rate.map(|r| 1.0 - r.clamp(0.0, 1.0));
        for e in &self.expressions {
            let Some(mut w) = e.weight(&self.drivers, frame) else {
                continue;
            };
            if let Some(p) = e.procedural {
                let k = keep[p as usize];
                w = if e.is_binary && k < 1.0 { 0.0 } else { w * k };
            }
            visit(e, w);
        }
    }
}

/// `q` (an avatar-space rotation) in the frame `frame` of a node.
fn in_frame(frame: Quat, q: Quat) -> Quat {
    if frame == Quat::IDENTITY {
        q
    } else {
        frame.inverse() * q * frame
    }
}

/// Which eye.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Left,
    Right,
}

/// An eye rotation from the eyeLook channels. The avatar faces +Z with +X on its left: a left
/// eye looking out turns towards +X (positive yaw about +Y), a right eye looking out towards -X;
/// looking up turns towards +Y (negative angle about +X).
fn eye_from_look(frame: &FaceFrame, side: Side, look: &EyeLook) -> Option<Quat> {
    use Channel::*;
    let (up, down, inward, out) = match side {
        Side::Left => (
            EyeLookUpLeft,
            EyeLookDownLeft,
            EyeLookInLeft,
            EyeLookOutLeft,
        ),
        Side::Right => (
            EyeLookUpRight,
            EyeLookDownRight,
            EyeLookInRight,
            EyeLookOutRight,
        ),
    };
    let get = |c| frame.get(c);
    if [up, down, inward, out].iter().all(|&c| get(c).is_none()) {
        return None;
    }
    let v = |c| finite(get(c).unwrap_or(0.0));
    let outward = v(out) - v(inward);
    let (turn, pitch) = match &look.ranges {
        None => (
            outward * look.horizontal,
            v(down) * look.down - v(up) * look.up,
        ),
        // The avatar's range maps turn the gaze (in degrees) into the eye's turn.
        Some(r) => {
            let gaze = (outward * look.horizontal).to_degrees();
            let turn = if outward >= 0.0 {
                r.horizontal_outer.map(gaze)
            } else {
                -r.horizontal_inner.map(gaze)
            };
            let down = r.vertical_down.map((v(down) * look.down).to_degrees());
            let up = r.vertical_up.map((v(up) * look.up).to_degrees());
            (turn.to_radians(), (down - up).to_radians())
        }
    };
    let yaw = match side {
        Side::Left => turn,
        Side::Right => -turn,
    };
    Some(Quat::from_rotation_y(yaw) * Quat::from_rotation_x(pitch))
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{avatar, frame, vrm_avatar, weights};
    use super::*;
    use crate::arkit::Protocol;
    use crate::avatar::vrm::Procedural;
    use glam::{EulerRot, Vec3};
    use std::time::Instant;

    #[test]
    fn apply_sets_weights_and_keeps_unmapped_defaults() {
        let a = avatar();
        let m = CompiledMapping::auto(&a);
        let mut f = FaceFrame::empty(
            Protocol::Vmc,
            "127.0.0.1:1".parse().unwrap(),
            Instant::now(),
        );
        f.set(Channel::JawOpen, 0.8);
        f.head = Some(Quat::from_rotation_y(0.3));
        let mut pose = a.rest_pose();
        m.apply(&f, &mut pose);
        assert_eq!(pose.weights[0], vec![0.8, 0.0, 0.3]);
        assert_eq!(pose.rotations[0], Quat::from_rotation_y(0.3));
        assert_eq!(pose.rotations[1], Quat::IDENTITY);
    }

    #[test]
    fn eye_look_turns_eye_nodes_the_right_way() {
        let a = avatar();
        let m = CompiledMapping::auto(&a);
        let mut f = FaceFrame::empty(
            Protocol::Vmc,
            "127.0.0.1:1".parse().unwrap(),
            Instant::now(),
        );
        f.set(Channel::EyeLookOutLeft, 1.0);
        f.set(Channel::EyeLookInRight, 1.0);
        f.set(Channel::EyeLookUpLeft, 1.0);
        let mut pose = a.rest_pose();
        m.apply(&f, &mut pose);
        let left_gaze = pose.rotations[1] * Vec3::Z;
        let right_gaze = pose.rotations[2] * Vec3::Z;
        assert!(left_gaze.x > 0.2 && left_gaze.y > 0.2, "{left_gaze}");
        assert!(
            right_gaze.x > 0.2 && right_gaze.y.abs() < 1e-6,
            "{right_gaze}"
        );
    }

    #[test]
    fn overrides_block_or_blend_blinks() {
        use Channel::*;
        let mut a = vrm_avatar();
        let closed = [
            (EyeBlinkLeft, 1.0),
            (EyeBlinkRight, 1.0),
            (MouthSmileLeft, 0.5),
            (MouthSmileRight, 0.5),
        ];
        let vrm = a.vrm.as_mut().unwrap();
        vrm.expressions[3].overrides[Procedural::Blink as usize] = Override::Block;
        let m = CompiledMapping::auto(&a);
        assert_eq!(weights(&m, &a, &closed), [0.0, 0.0, 0.3, 0.25]);
        let vrm = a.vrm.as_mut().unwrap();
        vrm.expressions[3].overrides[Procedural::Blink as usize] = Override::Blend;
        let m = CompiledMapping::auto(&a);
        assert_eq!(weights(&m, &a, &closed), [0.5, 0.5, 0.3, 0.25]);
        // A binary blink is suppressed entirely by any blend.
        let vrm = a.vrm.as_mut().unwrap();
        vrm.expressions[0].is_binary = true;
        let m = CompiledMapping::auto(&a);
        assert_eq!(weights(&m, &a, &closed), [0.0, 0.0, 0.3, 0.25]);
        let weights = m.expression_weights(&frame(&closed));
        assert!(
            weights.contains(&(0, 0.0)) && weights.contains(&(3, 0.5)),
            "{weights:?}"
        );
    }

    #[test]
    fn head_turns_in_avatar_space_on_a_turned_vrm() {
        let a = vrm_avatar();
        let m = CompiledMapping::auto(&a);
        let rest = a.world_transforms(&a.rest_pose());
        for q in [
            Quat::from_rotation_x(0.4),
            Quat::from_rotation_y(0.5),
            Quat::from_rotation_z(-0.3),
            Quat::from_euler(EulerRot::YXZ, 0.3, -0.2, 0.1),
        ] {
            let mut f = frame(&[]);
            f.head = Some(q);
            let mut pose = a.rest_pose();
            m.apply(&f, &mut pose);
            let world = a.world_transforms(&pose);
            // The head's change of orientation, seen in avatar space, is the stream's rotation.
            let delta = world[1].to_scale_rotation_translation().1
                * rest[1].to_scale_rotation_translation().1.inverse();
            assert!(
                delta.abs_diff_eq(q, 1e-5) || delta.abs_diff_eq(-q, 1e-5),
                "{q} {delta}"
            );
        }
    }

    /// The VRM test avatar with eye bones under its head and `look` as its look-at.
    fn looking_avatar(look: crate::avatar::lookat::LookAt) -> crate::avatar::Avatar {
        use super::super::fixtures::node;
        let mut a = vrm_avatar();
        for name in ["J_EyeL", "J_EyeR"] {
            let mut eye = node(name, None);
            eye.parent = Some(1);
            let index = a.nodes.len();
            a.nodes[1].children.push(index);
            a.nodes.push(eye);
        }
        let vrm = a.vrm.as_mut().unwrap();
        vrm.humanoid.push(("leftEye".into(), 2));
        vrm.humanoid.push(("rightEye".into(), 3));
        vrm.look_at = Some(look);
        a
    }

    fn range(input: f32, output: f32) -> crate::avatar::lookat::RangeMap {
        crate::avatar::lookat::RangeMap {
            input_max_degrees: input,
            output_scale: output,
        }
    }

    #[test]
    fn bone_look_at_turns_the_eyes_through_the_avatars_range_maps() {
        use crate::avatar::lookat::{LookAt, LookAtKind};
        let a = looking_avatar(LookAt {
            kind: LookAtKind::Bone,
            horizontal_inner: range(90.0, 8.0),
            horizontal_outer: range(90.0, 12.0),
            vertical_down: range(90.0, 10.0),
            vertical_up: range(90.0, 10.0),
        });
        let m = CompiledMapping::auto(&a);
        let degrees = |values: &[(Channel, f32)], eye: usize| {
            let mut pose = a.rest_pose();
            m.apply(&frame(values), &mut pose);
            pose.rotations[eye]
                .angle_between(Quat::IDENTITY)
                .to_degrees()
        };
        // The mapping's 25 degrees of gaze at eyeLook = 1, through 90 -> 12 (outward) and
        // 90 -> 8 (inward).
        let out = degrees(&[(Channel::EyeLookOutLeft, 1.0)], 2);
        assert!((out - 25.0 / 90.0 * 12.0).abs() < 0.01, "{out}");
        let inward = degrees(&[(Channel::EyeLookInLeft, 1.0)], 2);
        assert!((inward - 25.0 / 90.0 * 8.0).abs() < 0.01, "{inward}");
        let right_in = degrees(&[(Channel::EyeLookInRight, 1.0)], 3);
        assert!((right_in - inward).abs() < 0.01, "{right_in}");
        // Without the avatar's maps the mapping's degrees are the eye's turn.
        let mut plain = a.clone();
        plain.vrm.as_mut().unwrap().look_at = None;
        let m = CompiledMapping::auto(&plain);
        let mut pose = plain.rest_pose();
        m.apply(&frame(&[(Channel::EyeLookOutLeft, 1.0)]), &mut pose);
        let full = pose.rotations[2].angle_between(Quat::IDENTITY).to_degrees();
        assert!((full - 25.0).abs() < 0.01, "{full}");
    }

    #[test]
    fn expression_look_at_weights_the_look_expressions_and_keeps_the_eye_bones_still() {
        use crate::avatar::lookat::{LookAt, LookAtKind};
        use crate::avatar::vrm::{Expression, Preset};
        let mut a = looking_avatar(LookAt {
            kind: LookAtKind::Expression,
            horizontal_inner: range(90.0, 1.0),
            horizontal_outer: range(50.0, 1.0),
            vertical_down: range(90.0, 1.0),
            vertical_up: range(40.0, 0.6),
        });
        let look = |name: &str, preset, target| Expression {
            name: name.into(),
            preset: Some(preset),
            binds: vec![crate::avatar::MorphBind {
                mesh: 0,
                target,
                weight: 1.0,
            }],
            material_binds: vec![],
            is_binary: false,
            overrides: [Override::None; 3],
        };
        let vrm = a.vrm.as_mut().unwrap();
        vrm.expressions.push(look("LookLeft", Preset::LookLeft, 2));
        vrm.expressions.push(look("LookUp", Preset::LookUp, 3));
        let m = CompiledMapping::auto(&a);
        let mut pose = a.rest_pose();
        m.apply(
            &frame(&[
                (Channel::EyeLookOutLeft, 1.0),
                (Channel::EyeLookInRight, 1.0),
                (Channel::EyeLookUpLeft, 1.0),
                (Channel::EyeLookUpRight, 1.0),
            ]),
            &mut pose,
        );
        // 25 degrees of gaze sideways: half of the outer map's 50; 20 up: half of the up map's
        // 40, so half of its 0.6.
        assert!(
            (pose.weights[0][2] - 0.5).abs() < 1e-4,
            "{:?}",
            pose.weights[0]
        );
        assert!(
            (pose.weights[0][3] - 0.3).abs() < 1e-4,
            "{:?}",
            pose.weights[0]
        );
        assert_eq!(pose.rotations[2], Quat::IDENTITY);
        assert_eq!(pose.rotations[3], Quat::IDENTITY);
    }
}

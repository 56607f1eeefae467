//! The arms' rest pose: a humanoid modelled in a T-pose or an A-pose gets its arms down, hanging
//! relaxed, by a change of the arm bones' rest rotations when the model loads, so that
//! skinning, bounds, framing and everything after them see the relaxed arms.
//!
//! The change is computed in world space, where "down" is -Y and "forward" is +Z (the loader
//! turns every model to face +Z, VRM 0.x included), and converted into each bone's local space.

use glam::{Quat, Vec3};

use super::humanoid::{position, Bone, Humanoid, Side};
use super::Avatar;

/// Where relaxed arms hang, in degrees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArmRest {
    /// How far the upper arm points down from horizontal, seen from the front (90: straight
    /// down along the body).
    pub down_degrees: f32,
    /// How far the upper arm then swings forward, out of the body's plane.
    pub forward_degrees: f32,
    /// How far the elbow bends, bringing the forearm forward.
    pub elbow_degrees: f32,
}

impl Default for ArmRest {
    fn default() -> ArmRest {
        ArmRest {
            down_degrees: 70.0,
            forward_degrees: 8.0,
            elbow_degrees: 15.0,
        }
    }
}

/// How an arm was modelled, read from its upper arm's direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArmStart {
    /// Straight out sideways, up to 20 degrees below (or 35 above) horizontal.
    TPose,
    /// Out sideways and down, 20 to 55 degrees below horizontal.
    APose,
    /// Already hanging more than 55 degrees down: left as modelled.
    Down,
    /// Pointing forward, backward or up: left as modelled.
    Other,
}

/// What [`relax_arms`] did to one arm.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RelaxedArm {
    /// Which arm.
    pub side: Side,
    /// How it was modelled.
    pub start: ArmStart,
    /// How far its upper arm pointed down from horizontal as modelled, in degrees.
    pub modelled_down_degrees: f32,
}

impl RelaxedArm {
    /// Whether the arm was moved (it was modelled in a T-pose or an A-pose).
    pub fn moved(&self) -> bool {
        matches!(self.start, ArmStart::TPose | ArmStart::APose)
    }
}

/// Brings the arms of `avatar` down to `rest` when it is a humanoid ([`Humanoid::detect`]);
/// one entry per arm found, none for other avatars (which stay untouched).
pub fn relax(avatar: &mut Avatar, rest: &ArmRest) -> Vec<RelaxedArm> {
    match Humanoid::detect(avatar) {
        Some(humanoid) => relax_arms(avatar, &humanoid, rest),
        None => Vec::new(),
    }
}

/// Brings each arm of `humanoid` that is modelled in a T-pose or an A-pose down to `rest`:
/// the upper arm turned to point `rest.down_degrees` below horizontal and `rest.forward_degrees`
/// forward, whichever way it was modelled, then the lower arm bent `rest.elbow_degrees`
/// forward. An arm needs its upper and lower arm bones; the hand (or the lower arm's first
/// child) gives the forearm's direction.
pub fn relax_arms(avatar: &mut Avatar, humanoid: &Humanoid, rest: &ArmRest) -> Vec<RelaxedArm> {
    let world = avatar.world_transforms(&avatar.rest_pose());
    let centre = humanoid
        .bone(Bone::Head)
        .or(humanoid.chest())
        .map_or(Vec3::ZERO, |n| position(&world, n));
    let mut arms = Vec::new();
    for side in [Side::Left, Side::Right] {
        let (Some(upper), Some(lower)) = (
            humanoid.bone(Bone::UpperArm(side)),
            humanoid.bone(Bone::LowerArm(side)),
        ) else {
            continue;
        };
        let world = avatar.world_transforms(&avatar.rest_pose());
        let shoulder = position(&world, upper);
        let Some(direction) = (position(&world, lower) - shoulder).try_normalize() else {
            continue;
        };
        // Outward is away from the body's centre line; a left arm on +X once facing +Z.
        let across = shoulder.x - centre.x;
        let outward = if across.abs() > 1e-6 {
            across.signum()
        } else if side == Side::Left {
            1.0
        } else {
            -1.0
        };
        let down = (-direction.y).clamp(-1.0, 1.0).asin().to_degrees();
        let start = classify(down, direction.x * outward);
        arms.push(RelaxedArm {
            side,
            start,
            modelled_down_degrees: down,
        });
        if !matches!(start, ArmStart::TPose | ArmStart::APose) {
            continue;
        }
        let (a, f) = (
            rest.down_degrees.to_radians(),
            rest.forward_degrees.to_radians(),
        );
        let frontal = Vec3::new(outward * a.cos(), -a.sin(), 0.0);
        let target = (frontal * f.cos() + Vec3::Z * f.sin()).normalize();
        turn_in_world(
            avatar,
            &world,
            upper,
            Quat::from_rotation_arc(direction, target),
        );

        // The elbow: the forearm bent forward from the upper arm's new direction.
        let end = humanoid
            .bone(Bone::Hand(side))
            .or_else(|| avatar.nodes[lower].children.first().copied());
        let Some(end) = end else { continue };
        let world = avatar.world_transforms(&avatar.rest_pose());
        let elbow = position(&world, lower);
        let Some(forearm) = (position(&world, end) - elbow).try_normalize() else {
            continue;
        };
        let Some(ahead) = (Vec3::Z - target * target.z).try_normalize() else {
            continue;
        };
        let e = rest.elbow_degrees.to_radians();
        let goal = target * e.cos() + ahead * e.sin();
        turn_in_world(
            avatar,
            &world,
            lower,
            Quat::from_rotation_arc(forearm, goal),
        );
    }
    arms
}

/// What an upper arm pointing `down` degrees below horizontal, `outward` (the cosine of its
/// angle to the outward direction) was modelled as.
fn classify(down: f32, outward: f32) -> ArmStart {
    if down > 55.0 {
        ArmStart::Down
    } else if outward < 0.3 {
        ArmStart::Other
    } else if down >= 20.0 {
        ArmStart::APose
    } else if down >= -35.0 {
        ArmStart::TPose
    } else {
        ArmStart::Other
    }
}

/// Turns node `node` by `turn` in world space (about its own origin), given every node's
/// world transform: its new rest rotation is `parent⁻¹ · turn · parent · rotation`, with
/// `parent` the parent's world rotation.
fn turn_in_world(avatar: &mut Avatar, world: &[glam::Mat4], node: usize, turn: Quat) {
    let parent = avatar.nodes[node]
        .parent
        .and_then(|p| world.get(p))
        .map_or(Quat::IDENTITY, |m| m.to_scale_rotation_translation().1);
    let own = avatar.nodes[node].rotation;
    avatar.nodes[node].rotation = (parent.inverse() * turn * parent * own).normalize();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::humanoid::tests::{add, rig, VROID};

    fn vroid() -> Avatar {
        rig(VROID)
    }

    /// The same rig in an A-pose: each upper arm turned 40 degrees down in its bone's space.
    fn a_pose() -> Avatar {
        let mut a = vroid();
        for (name, sign) in [("J_Bip_L_UpperArm", -1.0), ("J_Bip_R_UpperArm", 1.0)] {
            let n = a.find_node(name).unwrap();
            a.nodes[n].rotation = Quat::from_rotation_z(sign * 40f32.to_radians());
        }
        a
    }

    /// World positions of the upper arm, lower arm and hand of `side`.
    fn arm(a: &Avatar, side: &str) -> [Vec3; 3] {
        let world = a.world_transforms(&a.rest_pose());
        ["UpperArm", "LowerArm", "Hand"]
            .map(|b| position(&world, a.find_node(&format!("J_Bip_{side}_{b}")).unwrap()))
    }

    /// The upper arm's angle below horizontal seen from the front, and its forward angle.
    fn angles(a: &Avatar, side: &str) -> (f32, f32) {
        let [shoulder, elbow, _] = arm(a, side);
        let d = (elbow - shoulder).normalize();
        let frontal = d.x.hypot(d.y);
        (
            (-d.y).atan2(d.x.abs()).to_degrees(),
            d.z.atan2(frontal).to_degrees(),
        )
    }

    #[test]
    fn t_pose_and_a_pose_end_at_the_same_relaxed_angle() {
        let rest = ArmRest::default();
        for (mut a, start) in [(vroid(), ArmStart::TPose), (a_pose(), ArmStart::APose)] {
            let arms = relax(&mut a, &rest);
            assert_eq!(arms.len(), 2);
            assert!(
                arms.iter().all(|r| r.start == start && r.moved()),
                "{arms:?}"
            );
            for side in ["L", "R"] {
                let (down, forward) = angles(&a, side);
                assert!((down - 70.0).abs() < 0.05, "{start:?} {side}: {down}");
                assert!((forward - 8.0).abs() < 0.05, "{start:?} {side}: {forward}");
                let [shoulder, elbow, hand] = arm(&a, side);
                assert!(
                    hand.y < elbow.y && elbow.y < shoulder.y,
                    "hand below the shoulder"
                );
                assert!(hand.z > elbow.z && elbow.z > shoulder.z, "and forward");
                let bend = (elbow - shoulder).angle_between(hand - elbow).to_degrees();
                assert!((bend - 15.0).abs() < 0.05, "elbow {bend}");
            }
            // Mirrored: the left arm out on +X, the right on -X, alike otherwise.
            let [ls, le, lh] = arm(&a, "L");
            let [rs, re, rh] = arm(&a, "R");
            assert!(le.x > ls.x && re.x < rs.x);
            for (l, r) in [(le - ls, re - rs), (lh - ls, rh - rs)] {
                assert!(l.abs_diff_eq(Vec3::new(-r.x, r.y, r.z), 1e-5), "{l} vs {r}");
            }
        }
    }

    #[test]
    fn a_model_turned_to_face_plus_z_still_lowers_its_arms_forward() {
        // A VRM 0.x model is turned a half turn about Y at load: its left arm was on -X.
        let mut a = vroid();
        let root = a.roots[0];
        a.nodes[root].rotation = Quat::from_rotation_y(std::f32::consts::PI);
        relax(&mut a, &ArmRest::default());
        for side in ["L", "R"] {
            let (down, forward) = angles(&a, side);
            assert!((down - 70.0).abs() < 0.05 && (forward - 8.0).abs() < 0.05);
            let [shoulder, _, hand] = arm(&a, side);
            assert!(hand.z > shoulder.z && hand.y < shoulder.y, "{side}: {hand}");
        }
        // The turn put the left arm on -X; it stays out on its own side.
        let [ls, le, _] = arm(&a, "L");
        assert!(ls.x < 0.0 && le.x < ls.x);
    }

    #[test]
    fn arms_already_down_and_non_humanoids_are_left_alone() {
        let mut down = vroid();
        for (name, sign) in [("J_Bip_L_UpperArm", -1.0), ("J_Bip_R_UpperArm", 1.0)] {
            let n = down.find_node(name).unwrap();
            down.nodes[n].rotation = Quat::from_rotation_z(sign * 80f32.to_radians());
        }
        let before = down.nodes.clone();
        let arms = relax(&mut down, &ArmRest::default());
        assert!(arms.iter().all(|r| r.start == ArmStart::Down && !r.moved()));
        assert!((arms[0].modelled_down_degrees - 80.0).abs() < 0.01);
        assert_eq!(
            down.nodes.iter().map(|n| n.rotation).collect::<Vec<_>>(),
            before.iter().map(|n| n.rotation).collect::<Vec<_>>()
        );

        let mut robot = Avatar::default();
        let body = add(&mut robot, "body", None, Vec3::Y);
        add(&mut robot, "LeftArm", Some(body), Vec3::X);
        let lower = add(&mut robot, "LeftForeArm", Some(body), Vec3::X * 2.0);
        add(&mut robot, "LeftHand", Some(lower), Vec3::X);
        let before = robot.nodes.clone();
        assert!(relax(&mut robot, &ArmRest::default()).is_empty());
        assert_eq!(
            robot.nodes.iter().map(|n| n.rotation).collect::<Vec<_>>(),
            before.iter().map(|n| n.rotation).collect::<Vec<_>>()
        );
    }

    #[test]
    fn classification_follows_the_upper_arm() {
        assert_eq!(classify(0.0, 1.0), ArmStart::TPose);
        assert_eq!(classify(-20.0, 0.9), ArmStart::TPose);
        assert_eq!(classify(45.0, 0.7), ArmStart::APose);
        assert_eq!(classify(70.0, 0.3), ArmStart::Down);
        assert_eq!(classify(88.0, 0.03), ArmStart::Down);
        assert_eq!(classify(10.0, 0.1), ArmStart::Other);
        assert_eq!(classify(-60.0, 0.5), ArmStart::Other);
    }
}

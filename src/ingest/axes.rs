//! Per-protocol rotation conventions: the one table that maps each sender's axes into ours.
//!
//! facewire's avatar frame is glTF's: right-handed, +Y up, the face looking down +Z, and +X
//! towards the performer's LEFT. Every rotation a decoder produces goes through one of the
//! [`AxisMap`] constants below, so that a test against real captures can fix a sign in one place.
//!
//! | Protocol, message | Sender's frame | Quaternion `(x, y, z, w)` → ours | Status |
//! |---|---|---|---|
//! | VMC `/VMC/Ext/Bone/Pos` (`Head`, `LeftEye`, `RightEye`) | Unity humanoid: left-handed, +X the avatar's right, +Y up, +Z forward | `(x, -y, -z, w)`: a mirror of X | UNCONFIRMED |
//! | Face Cap `/HRQ` | ARKit face anchor: right-handed, +X towards the face's left, +Y up, +Z out of the face | `(x, y, z, w)`: already ours | UNCONFIRMED |
//! | Face Cap `/HR`, `/ELR`, `/ERR` | the same, as Euler degrees `x` = pitch, `y` = yaw, `z` = roll | pitch, yaw, roll kept; `q = Ry(yaw)·Rx(pitch)·Rz(roll)` | UNCONFIRMED |
//!
//! Why the VMC row flips `y` and `z`: mirroring space through the X = 0 plane (Unity's +X is the
//! avatar's right, ours is the avatar's left) turns a rotation by θ about axis `a` into a rotation
//! by θ about `(a.x, -a.y, -a.z)`, because an axis of rotation is a pseudovector. The quaternion
//! `(sin(θ/2)·a, cos(θ/2))` therefore becomes `(x, -y, -z, w)`.
//!
//! The Euler order `Y·X·Z` (yaw, then pitch in the yawed frame, then roll) is the usual
//! head-tracking order; which order Face Cap itself uses is UNCONFIRMED.

use glam::Quat;

/// Sign flips that take one protocol's rotations into facewire's avatar frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AxisMap {
    /// Factors (±1) applied to the quaternion's vector part `(x, y, z)`; `w` is kept.
    pub quat: [f32; 3],
    /// Factors (±1) applied to Euler angles `(pitch about X, yaw about Y, roll about Z)`.
    pub euler: [f32; 3],
}

/// VMC bone rotations (Unity humanoid, left-handed): a mirror of X, which keeps pitch and negates
/// yaw and roll. VMC sends no Euler angles today; the `euler` row is there for completeness.
/// UNCONFIRMED.
pub const VMC: AxisMap = AxisMap {
    quat: [1.0, -1.0, -1.0],
    euler: [1.0, -1.0, -1.0],
};

/// Face Cap rotations (ARKit face anchor): already in our frame. UNCONFIRMED.
pub const FACECAP: AxisMap = AxisMap {
    quat: [1.0, 1.0, 1.0],
    euler: [1.0, 1.0, 1.0],
};

/// Why a rotation from the wire was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadRotation {
    /// A component was NaN or infinite.
    NonFinite,
    /// Every component was zero, so the quaternion has no direction.
    Degenerate,
}

impl AxisMap {
    /// Converts a wire quaternion `(x, y, z, w)` into ours, normalised. Rejects non-finite and
    /// all-zero quaternions; any finite non-zero magnitude is accepted, because some senders do
    /// not normalise.
    pub fn quat(&self, [x, y, z, w]: [f32; 4]) -> Result<Quat, BadRotation> {
        if !(x.is_finite() && y.is_finite() && z.is_finite() && w.is_finite()) {
            return Err(BadRotation::NonFinite);
        }
        // Scaling by the largest component first keeps the length computation from overflowing
        // for huge finite components and from underflowing for tiny ones.
        let largest = x.abs().max(y.abs()).max(z.abs()).max(w.abs());
        if largest <= 0.0 {
            return Err(BadRotation::Degenerate);
        }
        let [sx, sy, sz] = self.quat;
        let q = Quat::from_xyzw(
            sx * x / largest,
            sy * y / largest,
            sz * z / largest,
            w / largest,
        );
        Ok(q.normalize())
    }

    /// Converts Euler angles in degrees (pitch about X, yaw about Y, roll about Z, as sent) into
    /// a quaternion in our frame, composed as `Ry(yaw)·Rx(pitch)·Rz(roll)`.
    pub fn euler_degrees(&self, pitch: f32, yaw: f32, roll: f32) -> Result<Quat, BadRotation> {
        if !(pitch.is_finite() && yaw.is_finite() && roll.is_finite()) {
            return Err(BadRotation::NonFinite);
        }
        let [sp, sy, sr] = self.euler;
        // Reduce first: a huge finite angle would otherwise lose all precision in radians.
        let rad = |deg: f32, sign: f32| (sign * deg.rem_euclid(360.0)).to_radians();
        let q = Quat::from_rotation_y(rad(yaw, sy))
            * Quat::from_rotation_x(rad(pitch, sp))
            * Quat::from_rotation_z(rad(roll, sr));
        Ok(q.normalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec3;

    fn close(a: Quat, b: Quat) -> bool {
        // q and -q are the same rotation.
        a.dot(b).abs() > 1.0 - 1e-5
    }

    #[test]
    fn vmc_mirror_turns_a_unity_yaw_into_the_opposite_yaw() {
        // Unity: +30° about +Y turns +Z (forward) towards +X, the avatar's right.
        let unity = Quat::from_rotation_y(30f32.to_radians());
        let ours = VMC.quat(unity.to_array()).unwrap();
        let forward = ours * Vec3::Z;
        // Ours: the avatar's right is -X, so the face must turn towards -X.
        assert!(forward.x < -0.4, "{forward}");
        assert!(close(ours, Quat::from_rotation_y(-30f32.to_radians())));
    }

    #[test]
    fn vmc_mirror_keeps_a_pitch() {
        // A rotation about X (nodding) is unchanged by mirroring X.
        let unity = Quat::from_rotation_x(20f32.to_radians());
        assert!(close(VMC.quat(unity.to_array()).unwrap(), unity));
    }

    #[test]
    fn quaternions_are_normalised_and_checked() {
        let q = FACECAP.quat([0.0, 0.0, 0.0, 2.0]).unwrap();
        assert!(close(q, Quat::IDENTITY));
        let q = FACECAP.quat([3e38, 0.0, 0.0, 3e38]).unwrap();
        assert!((q.length() - 1.0).abs() < 1e-5);
        assert!(close(q, Quat::from_rotation_x(90f32.to_radians())));
        assert_eq!(
            FACECAP.quat([0.0, 0.0, 0.0, 0.0]),
            Err(BadRotation::Degenerate)
        );
        assert_eq!(
            FACECAP.quat([f32::NAN, 0.0, 0.0, 1.0]),
            Err(BadRotation::NonFinite)
        );
        assert_eq!(
            FACECAP.quat([0.0, f32::INFINITY, 0.0, 1.0]),
            Err(BadRotation::NonFinite)
        );
    }

    #[test]
    fn euler_order_is_yaw_then_pitch_then_roll() {
        let q = FACECAP.euler_degrees(10.0, 20.0, 30.0).unwrap();
        let expected = Quat::from_rotation_y(20f32.to_radians())
            * Quat::from_rotation_x(10f32.to_radians())
            * Quat::from_rotation_z(30f32.to_radians());
        assert!(close(q, expected));
        let yaw_only = FACECAP.euler_degrees(0.0, 90.0, 0.0).unwrap();
        assert!((yaw_only * Vec3::Z - Vec3::X).length() < 1e-5);
        assert!(FACECAP.euler_degrees(1e30, -1e30, 0.0).unwrap().is_finite());
        assert_eq!(
            FACECAP.euler_degrees(f32::NEG_INFINITY, 0.0, 0.0),
            Err(BadRotation::NonFinite)
        );
    }
}

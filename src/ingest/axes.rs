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
//! | iFacialMocap `=head#x,y,z,…` | ARKit face anchor, Euler degrees `x` = pitch, `y` = yaw, `z` = roll | pitch, yaw, roll kept | UNCONFIRMED |
//! | iFacialMocap `rightEye#`, `leftEye#` | the same, `x` = pitch (+ looks down), `y` = yaw (+ looks to the performer's left), `z` = roll | kept | yaw and pitch signs CONFIRMED by the vpuppr sample; roll UNCONFIRMED |
//! | Facemotion3d (same grammar as iFacialMocap) | as iFacialMocap | kept | UNCONFIRMED |
//! | Live Link Face eyes, values 55–60 (`LeftEyeYaw`, `…Pitch`, `…Roll`, then the right eye) | Unreal rotator in radians: + yaw looks to the performer's RIGHT, + pitch looks down | pitch kept, yaw and roll negated (a mirror of X, as VMC) | yaw and pitch signs CONFIRMED by the LLV capture; roll UNCONFIRMED |
//! | Live Link Face head, values 52–54 (`HeadYaw`, `HeadPitch`, `HeadRoll`) | the same Unreal rotator as the eyes, in radians | pitch kept, yaw and roll negated | UNCONFIRMED (assumed to match the eyes) |
//! | VTube Studio / MeowFace `Rotation {x,y,z}` | Euler degrees `x` = pitch, `y` = yaw, `z` = roll | kept | UNCONFIRMED (vpuppr reads MeowFace's `x` as yaw instead) |
//! | VTube Studio `EyeLeft`, `EyeRight` `{x,y,z}` | Euler degrees, `x` = pitch (+ looks down), `y` = yaw (+ looks to the performer's left) | kept | yaw and pitch signs CONFIRMED by the vpuppr sample; roll UNCONFIRMED |
//! | OpenSeeFace head quaternion (`x, y, z, w` at byte 33 of a face record) | the inverse of its face model's rotation into OpenCV's frame of the image read rows first (x down the image, y to its right, z into the scene); the face model has +X towards the face's RIGHT, +Y up, +Z out of the face | relative to a face looking into the camera ([`OPENSEEFACE_FACING_CAMERA`]), inverted, then `(x, -y, -z, w)` (a mirror of X) | derived from tracker.py's face model and landmark layout; UNCONFIRMED against a capture |
//!
//! Why the VMC row flips `y` and `z`: mirroring space through the X = 0 plane (Unity's +X is the
//! avatar's right, ours is the avatar's left) turns a rotation by θ about axis `a` into a rotation
//! by θ about `(a.x, -a.y, -a.z)`, because an axis of rotation is a pseudovector. The quaternion
//! `(sin(θ/2)·a, cos(θ/2))` therefore becomes `(x, -y, -z, w)`.
//!
//! The Euler order `Y·X·Z` (yaw, then pitch in the yawed frame, then roll) is the usual
//! head-tracking order; which order Face Cap itself uses is UNCONFIRMED.
//!
//! How the CONFIRMED signs were pinned. In the iFacialMocap sample
//! (`ifacialmocap_v1_vpuppr_sample.txt`) and the VTube Studio sample
//! (`vts_tracking_payload_vpuppr_sample.json`), the blendshapes say both eyes look to the
//! performer's left (`eyeLookOut_L` and `eyeLookIn_R` high, `eyeLookIn_L` and `eyeLookOut_R` zero)
//! and a little down (`eyeLookDown_*` above zero), while both eyes' `y` and `x` are positive. A
//! positive rotation about +Y turns +Z towards +X (the performer's left) and a positive rotation
//! about +X turns +Z towards −Y (down), so both rows keep their signs. In the 180 frames of the
//! Live Link Face capture (`livelinkface_llv_dao`), `LeftEyeYaw` correlates at −0.9997 with
//! `eyeLookOutLeft − eyeLookInLeft` (gaze towards the performer's left), the right eye likewise,
//! and `LeftEyePitch` at +0.9996 with `eyeLookDownLeft − eyeLookUpLeft`: Live Link Face's yaw is
//! the opposite of ours and its pitch is ours. That is what a mirror of X gives (an Unreal rotator
//! whose +Y is the performer's right), so the roll is negated too, and the head values, which
//! Unreal derives the same way, get the same row. The synthetic LLV sweeps only pin which index is
//! which curve, not physical signs. Which Euler order these apps use is UNCONFIRMED; all rows use
//! `Y·X·Z`.
//!
//! How the OpenSeeFace row was derived. tracker.py fits its 3D face model to the landmarks with
//! OpenCV's solvePnP, but hands it the points as (row, column), so the camera frame of the fit has
//! x running down the image and y to its right. Its face model puts landmark 0 (the jaw on the
//! face's right, which a camera that does not mirror shows on the image's left) at +X, the brows
//! above the chin at +Y and the nose tip at +Z. The only proper rotation that shows that model
//! upright and facing the camera takes +X to −y, +Y to −x and +Z to −z: a half turn about
//! `(1, −1, 0)/√2`. facetracker.py sends the quaternion of the fitted rotation matrix with its
//! vector part negated, the inverse rotation. So the head's turn in the face model's frame is
//! `(q · facing)⁻¹`, and a mirror of X takes it into ours. The Euler angles OpenSeeFace also sends
//! come from OpenCV's RQ decomposition of the same matrix (about `(±180, 0, −90)` at rest), whose
//! yaw sign is not the same in every OpenCV release; they are not used.

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

/// iFacialMocap's `head#`, `rightEye#` and `leftEye#` Euler degrees (ARKit face anchor): already
/// in our frame. Eye yaw and pitch signs are pinned by the vpuppr sample; the head's are
/// UNCONFIRMED.
pub const IFACIALMOCAP: AxisMap = AxisMap {
    quat: [1.0, 1.0, 1.0],
    euler: [1.0, 1.0, 1.0],
};

/// Facemotion3d's Euler degrees (same grammar as iFacialMocap): assumed the same as
/// iFacialMocap. UNCONFIRMED.
pub const FACEMOTION3D: AxisMap = AxisMap {
    quat: [1.0, 1.0, 1.0],
    euler: [1.0, 1.0, 1.0],
};

/// Live Link Face head and eye rotators in radians: a mirror of X, which keeps pitch and negates
/// yaw and roll. Eye yaw and pitch signs are pinned by the LLV capture; roll and the head are
/// UNCONFIRMED.
pub const LIVELINKFACE: AxisMap = AxisMap {
    quat: [1.0, -1.0, -1.0],
    euler: [1.0, -1.0, -1.0],
};

/// VTube Studio (and MeowFace) `Rotation`, `EyeLeft` and `EyeRight` Euler degrees: already in
/// our frame. Eye yaw and pitch signs are pinned by the vpuppr sample; the head's are
/// UNCONFIRMED.
pub const VTUBESTUDIO: AxisMap = AxisMap {
    quat: [1.0, 1.0, 1.0],
    euler: [1.0, 1.0, 1.0],
};

/// OpenSeeFace's head (after [`openseeface_head`] has taken out the camera): its face model
/// has +X towards the face's right, a mirror of X against ours, which keeps pitch and negates yaw
/// and roll. OpenSeeFace's Euler angles are not read; the `euler` row is there for completeness.
/// UNCONFIRMED against a capture.
pub const OPENSEEFACE: AxisMap = AxisMap {
    quat: [1.0, -1.0, -1.0],
    euler: [1.0, -1.0, -1.0],
};

/// The rotation OpenSeeFace's fit gives a face looking straight into the camera, upright: its
/// model's +X to the camera frame's −y, +Y to −x, +Z to −z (a half turn about `(1, −1, 0)/√2`;
/// see the module's notes).
pub const OPENSEEFACE_FACING_CAMERA: Quat = Quat::from_xyzw(
    std::f32::consts::FRAC_1_SQRT_2,
    -std::f32::consts::FRAC_1_SQRT_2,
    0.0,
    0.0,
);

/// Converts OpenSeeFace's head quaternion `(x, y, z, w)` as sent into the head's rotation in our
/// frame, from a face looking into the camera. OpenSeeFace sends the fitted rotation
/// `facing · turn` inverted (its vector part negated), so `q · facing` is the turn inverted; its
/// inverse is the head's turn in the face model's frame, which [`OPENSEEFACE`] mirrors into ours.
/// Rejects non-finite and all-zero quaternions; any finite non-zero magnitude is accepted.
pub fn openseeface_head(raw: [f32; 4]) -> Result<Quat, BadRotation> {
    const AS_SENT: AxisMap = AxisMap {
        quat: [1.0, 1.0, 1.0],
        euler: [1.0, 1.0, 1.0],
    };
    let wire = AS_SENT.quat(raw)?;
    let turn = (wire * OPENSEEFACE_FACING_CAMERA).conjugate();
    OPENSEEFACE.quat(turn.to_array())
}

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

    /// Converts a rotation in our frame back into this protocol's wire quaternion `(x, y, z, w)`:
    /// the inverse of [`AxisMap::quat`] (each factor is ±1, so it is its own inverse).
    pub fn to_wire_quat(&self, q: Quat) -> [f32; 4] {
        let [sx, sy, sz] = self.quat;
        [sx * q.x, sy * q.y, sz * q.z, q.w]
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

    /// Converts Euler angles in radians (pitch about X, yaw about Y, roll about Z, as sent) into
    /// a quaternion in our frame, composed like [`AxisMap::euler_degrees`].
    pub fn euler_radians(&self, pitch: f32, yaw: f32, roll: f32) -> Result<Quat, BadRotation> {
        if !(pitch.is_finite() && yaw.is_finite() && roll.is_finite()) {
            return Err(BadRotation::NonFinite);
        }
        let [sp, sy, sr] = self.euler;
        // Reduce first, as for degrees: a huge finite angle would otherwise lose all precision.
        let rad = |angle: f32, sign: f32| sign * angle.rem_euclid(std::f32::consts::TAU);
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
    fn wire_quaternions_round_trip() {
        let q = Quat::from_euler(glam::EulerRot::YXZ, 0.3, -0.2, 0.1);
        for map in [VMC, FACECAP, LIVELINKFACE] {
            assert!(close(map.quat(map.to_wire_quat(q)).unwrap(), q));
        }
        // Our yaw towards the performer's left is a Unity yaw towards the avatar's left (-Y).
        let wire = VMC.to_wire_quat(Quat::from_rotation_y(0.5));
        assert!(wire[1] < 0.0, "{wire:?}");
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

    #[test]
    fn radians_agree_with_degrees() {
        let a = LIVELINKFACE.euler_radians(0.1, 0.2, 0.3).unwrap();
        let b = LIVELINKFACE
            .euler_degrees(
                0.1f32.to_degrees(),
                0.2f32.to_degrees(),
                0.3f32.to_degrees(),
            )
            .unwrap();
        assert!(close(a, b));
        assert!(LIVELINKFACE
            .euler_radians(1e30, -1e30, 0.0)
            .unwrap()
            .is_finite());
        assert_eq!(
            LIVELINKFACE.euler_radians(0.0, f32::NAN, 0.0),
            Err(BadRotation::NonFinite)
        );
    }

    #[test]
    fn live_link_face_positive_yaw_looks_to_the_performers_right() {
        // Pinned by the LLV capture: + yaw on the wire goes with eyeLookIn_L and eyeLookOut_R.
        let q = LIVELINKFACE.euler_radians(0.0, 0.5, 0.0).unwrap();
        assert!((q * Vec3::Z).x < -0.4);
        // + pitch on the wire goes with eyeLookDown.
        let q = LIVELINKFACE.euler_radians(0.5, 0.0, 0.0).unwrap();
        assert!((q * Vec3::Z).y < -0.4);
    }

    #[test]
    fn openseeface_facing_the_camera_is_no_turn() {
        // OpenSeeFace sends the fitted rotation inverted; facing the camera, that is the half
        // turn itself, either sign.
        for sign in [1.0, -1.0] {
            let wire = (OPENSEEFACE_FACING_CAMERA.conjugate() * sign).to_array();
            assert!(close(openseeface_head(wire).unwrap(), Quat::IDENTITY));
        }
        assert_eq!(openseeface_head([0.0; 4]), Err(BadRotation::Degenerate));
        assert_eq!(
            openseeface_head([f32::INFINITY, 0.0, 0.0, 1.0]),
            Err(BadRotation::NonFinite)
        );
        // Huge finite components are scaled before they are multiplied.
        let huge = OPENSEEFACE_FACING_CAMERA
            .conjugate()
            .to_array()
            .map(|v| v * 3e38);
        assert!(close(openseeface_head(huge).unwrap(), Quat::IDENTITY));
    }

    #[test]
    fn arkit_senders_positive_yaw_looks_to_the_performers_left() {
        // Pinned by the vpuppr samples: + y goes with eyeLookOut_L and eyeLookIn_R, + x with
        // eyeLookDown.
        for map in [IFACIALMOCAP, VTUBESTUDIO] {
            let q = map.euler_degrees(0.0, 20.0, 0.0).unwrap();
            assert!((q * Vec3::Z).x > 0.3);
            let q = map.euler_degrees(20.0, 0.0, 0.0).unwrap();
            assert!((q * Vec3::Z).y < -0.3);
        }
    }
}

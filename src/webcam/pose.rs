//! The head's pose from the face's landmarks, as MediaPipe's face geometry finds it: the
//! landmarks lifted from the picture into centimetres with a pinhole camera (MediaPipe's: a 63°
//! vertical field of view), the depth the landmark model gives them rescaled in two passes to the
//! canonical face's size ([`super::canonical_face`]), and the canonical face fitted to them by a
//! weighted similarity transform (rotation, scale and shift) on the landmarks MediaPipe fits on
//! (its Procrustes basis: the forehead, the nose and the eyes' corners, which speech and
//! expressions move least). The rotation is Horn's closed form, the largest eigenvector of a 4x4
//! matrix.
//!
//! # Frames
//!
//! - **Picture**: the landmarks' own, x right, y down (pixels), z into the scene (scaled as x):
//!   the performer's left appears on the picture's right.
//! - **Camera**: OpenCV's, x right, y down, z forward into the scene.
//! - **Head** (facewire's, glTF's, and the canonical face's): +X towards the performer's LEFT,
//!   +Y up, +Z out of the face.
//! - **Facing**: [`FACING`] = diag(1, -1, -1), a half turn about x, shows the head upright and
//!   facing the camera.
//!
//! A [`Pose`]'s rotation takes head coordinates to camera coordinates; [`Pose::head`] is the
//! head's own turn, `FACINGᵀ · rotation`, in the head frame, which is what the avatar's head
//! takes.

use glam::{DMat3, DQuat, DVec3, Mat3, Quat, Vec3};

use super::canonical_face::{BASIS, VERTICES};

/// A half turn about x: the head upright and facing the camera.
pub const FACING: Mat3 = Mat3::from_cols(Vec3::X, Vec3::NEG_Y, Vec3::NEG_Z);

/// A fit whose weighted RMS error is above this fraction of the face's size is no face.
const MAX_RELATIVE_ERROR: f64 = 0.25;

/// The head's pose in the camera's frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pose {
    /// Takes head coordinates to camera coordinates: [`FACING`] for a head upright and looking
    /// into the camera.
    pub rotation: Mat3,
    /// The canonical face's origin (the centre of the head, behind the nose) in the camera's
    /// frame, in centimetres.
    pub translation: Vec3,
    /// The face's size against the canonical face's (1 for a face of the canonical size).
    pub scale: f32,
}

impl Pose {
    /// The pose whose head turn ([`Pose::head`]) is `head`.
    pub fn from_head(head: Quat, translation: Vec3, scale: f32) -> Self {
        Self {
            rotation: FACING * Mat3::from_quat(head),
            translation,
            scale,
        }
    }

    /// The head's turn away from facing the camera upright, in facewire's head frame: the
    /// rotation with `rotation = FACING · head`. Identity when the performer looks straight into
    /// the camera; a positive turn about +Y (yaw) turns the face towards the performer's left
    /// (+X), a positive turn about +X (pitch) nods it down, and a positive turn about -Z (roll)
    /// tilts its top towards the performer's left shoulder. Returned with w ≥ 0.
    pub fn head(&self) -> Quat {
        // FACING is its own transpose (and inverse).
        let q = Quat::from_mat3(&(FACING * self.rotation)).normalize();
        if q.w < 0.0 {
            -q
        } else {
            q
        }
    }

    /// The head's turn ([`Pose::head`]) as `[yaw, pitch, roll]` in degrees, with
    /// `head = Ry(yaw) · Rx(pitch) · Rz(-roll)`: facewire's `--head YAW,PITCH,ROLL` convention.
    /// Yaw turns the face towards the performer's (avatar's) left, pitch nods it down, roll tilts
    /// it towards the left shoulder. Yaw and roll are in (-180, 180], pitch in [-90, 90].
    pub fn yaw_pitch_roll(&self) -> [f32; 3] {
        let m = FACING * self.rotation;
        // For Ry(y)·Rx(p)·Rz(r): the third column is (sin y cos p, -sin p, cos y cos p) and the
        // second row is (cos p sin r, cos p cos r, -sin p).
        let forward = m.z_axis;
        let yaw = forward.x.atan2(forward.z);
        let pitch = (-forward.y).atan2(forward.x.hypot(forward.z));
        let roll = -m.x_axis.y.atan2(m.y_axis.y);
        [yaw.to_degrees(), pitch.to_degrees(), roll.to_degrees()]
    }

    /// Where the canonical face's point `p` (centimetres, head frame) lies in the camera's
    /// frame, in centimetres.
    pub fn project(&self, p: Vec3) -> Vec3 {
        self.rotation * p * self.scale + self.translation
    }
}

/// One fit of the canonical face to a frame's landmarks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    /// The head's pose.
    pub pose: Pose,
    /// The weighted root-mean-square distance, in centimetres, between the fitted face's points
    /// and their landmarks lifted into the camera's space.
    pub error: f32,
}

/// The camera's vertical field of view that the landmarks are lifted with (MediaPipe's).
pub const VERTICAL_FOV_DEGREES: f64 = 63.0;

/// The landmarks of the face mesh (the irises' ten after them play no part).
const MESH: usize = 468;

/// A weighted similarity transform: `target ≈ scale · rotation · source + translation`.
#[derive(Debug, Clone, Copy)]
struct Similarity {
    rotation: DMat3,
    scale: f64,
    translation: DVec3,
    /// Weighted RMS distance between the transformed source and the target.
    error: f64,
    /// Weighted RMS spread of the target about its centre.
    spread: f64,
}

/// Fits the canonical face to `points` (at least the 468 landmarks of the mesh: pixels, x
/// right, y down, z as x) seen in a `width` x `height` picture. `None` when a point is missing
/// or not finite, the points are (nearly) at one place, or the fit's error is over a quarter of
/// the face's size. Allocates nothing.
pub fn fit(points: &[[f32; 3]], width: u32, height: u32) -> Option<Fit> {
    if points.len() < MESH || width == 0 || height == 0 {
        return None;
    }
    let (w, h) = (f64::from(width), f64::from(height));
    // The picture's frustum at the near plane (1 cm).
    let near = 1.0;
    let height_at_near = 2.0 * near * (0.5 * VERTICAL_FOV_DEGREES.to_radians()).tan();
    let width_at_near = w * height_at_near / h;
    // On the near plane: x right, y up, z (the landmark model's depth) scaled as x.
    let mut screen = [DVec3::ZERO; MESH];
    for (s, p) in screen.iter_mut().zip(points) {
        let [x, y, z] = p.map(f64::from);
        *s = DVec3::new(
            x / w * width_at_near - 0.5 * width_at_near,
            (1.0 - y / h) * height_at_near - 0.5 * height_at_near,
            z / w * width_at_near,
        );
        if !s.is_finite() {
            return None;
        }
    }
    let depth_offset = screen.iter().map(|p| p.z).sum::<f64>() / MESH as f64;
    // First pass: the scale of the flat landmarks against the canonical face.
    let flat = screen.map(|p| DVec3::new(p.x, p.y, -p.z));
    let first = similarity(&flat)?.scale;
    // Second pass: lifted with that scale, measured again.
    let lift = |scale: f64| {
        screen.map(|p| {
            let z = (p.z - depth_offset + near) / scale;
            DVec3::new(p.x * z / near, p.y * z / near, -z)
        })
    };
    let second = similarity(&lift(first))?.scale;
    let fitted = similarity(&lift(first * second))?;
    // NaN fails this too.
    if fitted.error.is_nan() || fitted.error > MAX_RELATIVE_ERROR * fitted.spread {
        return None;
    }
    // The fit is in OpenGL's camera frame (x right, y up, z towards the viewer); the pose is in
    // OpenCV's, a half turn about x away.
    let flip = DMat3::from_diagonal(DVec3::new(1.0, -1.0, -1.0));
    Some(Fit {
        pose: Pose {
            rotation: (flip * fitted.rotation).as_mat3(),
            translation: (flip * fitted.translation).as_vec3(),
            scale: fitted.scale as f32,
        },
        error: fitted.error as f32,
    })
}

/// The similarity transform taking the canonical face's basis points onto `target`'s.
fn similarity(target: &[DVec3; MESH]) -> Option<Similarity> {
    let weight: f64 = BASIS.iter().map(|&(_, w)| f64::from(w)).sum();
    if weight.is_nan() || weight <= 0.0 {
        return None;
    }
    let mut centre_c = DVec3::ZERO;
    let mut centre_p = DVec3::ZERO;
    for &(i, w) in &BASIS {
        centre_c += canonical(i) * f64::from(w);
        centre_p += *target.get(i)? * f64::from(w);
    }
    centre_c /= weight;
    centre_p /= weight;
    // The cross-covariance S = Σ w a bᵀ, a from the canonical face, b from the target.
    let mut s = [[0.0f64; 3]; 3];
    let mut spread_c = 0.0;
    let mut spread_p = 0.0;
    for &(i, w) in &BASIS {
        let w = f64::from(w);
        let a = canonical(i) - centre_c;
        let b = target[i] - centre_p;
        spread_c += w * a.length_squared();
        spread_p += w * b.length_squared();
        for (r, ar) in a.to_array().into_iter().enumerate() {
            for (c, bc) in b.to_array().into_iter().enumerate() {
                s[r][c] += w * ar * bc;
            }
        }
    }
    if !(spread_c > 1e-12 && spread_p > 1e-12) {
        return None;
    }
    let [[sxx, sxy, sxz], [syx, syy, syz], [szx, szy, szz]] = s;
    let n = [
        [sxx + syy + szz, syz - szy, szx - sxz, sxy - syx],
        [syz - szy, sxx - syy - szz, sxy + syx, szx + sxz],
        [szx - sxz, sxy + syx, -sxx + syy - szz, syz + szy],
        [sxy - syx, szx + sxz, syz + szy, -sxx - syy + szz],
    ];
    let [qw, qx, qy, qz] = largest_eigenvector(n)?;
    let q = DQuat::from_xyzw(qx, qy, qz, qw).normalize();
    if !q.is_finite() {
        return None;
    }
    let rotation = DMat3::from_quat(q);
    let mut turned = 0.0;
    for &(i, w) in &BASIS {
        turned += f64::from(w) * (target[i] - centre_p).dot(rotation * (canonical(i) - centre_c));
    }
    let scale = turned / spread_c;
    if !(scale > 0.0 && scale.is_finite()) {
        return None;
    }
    let translation = centre_p - rotation * centre_c * scale;
    let mut error = 0.0;
    for &(i, w) in &BASIS {
        let fitted = rotation * canonical(i) * scale + translation;
        error += f64::from(w) * (fitted - target[i]).length_squared();
    }
    Some(Similarity {
        rotation,
        scale,
        translation,
        error: (error / weight).sqrt(),
        spread: (spread_p / weight).sqrt(),
    })
}

fn canonical(i: usize) -> DVec3 {
    let [x, y, z] = VERTICES[i];
    DVec3::new(f64::from(x), f64::from(y), f64::from(z))
}

/// The eigenvector of the symmetric 4x4 matrix `a` with the largest eigenvalue, by Jacobi
/// rotations. `None` when the matrix is not finite.
fn largest_eigenvector(mut a: [[f64; 4]; 4]) -> Option<[f64; 4]> {
    if a.iter().flatten().any(|v| !v.is_finite()) {
        return None;
    }
    let mut v = [[0.0f64; 4]; 4];
    for (i, row) in v.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    for _ in 0..50 {
        let off: f64 = (0..4)
            .flat_map(|p| ((p + 1)..4).map(move |q| (p, q)))
            .map(|(p, q)| a[p][q] * a[p][q])
            .sum();
        if off < 1e-24 {
            break;
        }
        for p in 0..4 {
            for q in (p + 1)..4 {
                if a[p][q].abs() < 1e-300 {
                    continue;
                }
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for row in a.iter_mut() {
                    let (akp, akq) = (row[p], row[q]);
                    row[p] = c * akp - s * akq;
                    row[q] = s * akp + c * akq;
                }
                let (row_p, row_q) = (a[p], a[q]);
                for (k, (apk, aqk)) in row_p.into_iter().zip(row_q).enumerate() {
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
                for row in v.iter_mut() {
                    let (vp, vq) = (row[p], row[q]);
                    row[p] = c * vp - s * vq;
                    row[q] = s * vp + c * vq;
                }
            }
        }
    }
    let best = (0..4).max_by(|&i, &j| a[i][i].total_cmp(&a[j][j]))?;
    Some([v[0][best], v[1][best], v[2][best], v[3][best]])
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE: [u32; 2] = [640, 480];

    /// The canonical face posed by `head` (yaw, pitch, roll in degrees) `distance` cm in front
    /// of the camera and `side` cm to the right, seen in a 640x480 picture as the landmark model
    /// gives its points: pixels, and depth scaled as x.
    fn posed(yaw: f32, pitch: f32, roll: f32, distance: f32, side: f32) -> Vec<[f32; 3]> {
        let head = Quat::from_rotation_y(yaw.to_radians())
            * Quat::from_rotation_x(pitch.to_radians())
            * Quat::from_rotation_z(-roll.to_radians());
        let pose = Pose::from_head(head, Vec3::new(side, 0.0, distance), 1.0);
        let [w, h] = SIZE.map(|v| v as f32);
        let f = h / 2.0 / (VERTICAL_FOV_DEGREES as f32 / 2.0).to_radians().tan();
        VERTICES
            .iter()
            .map(|&v| {
                let p = pose.project(Vec3::from(v));
                [
                    w / 2.0 + f * p.x / p.z,
                    h / 2.0 + f * p.y / p.z,
                    f * (p.z - distance) / distance,
                ]
            })
            .collect()
    }

    #[test]
    fn the_canonical_face_posed_gives_its_pose_back() {
        for ([yaw, pitch, roll], side) in [
            ([0.0, 0.0, 0.0], 0.0),
            ([25.0, 0.0, 0.0], 0.0),
            ([-30.0, 10.0, 5.0], 10.0),
            ([10.0, -20.0, -15.0], -15.0),
        ] {
            let fit = fit(&posed(yaw, pitch, roll, 60.0, side), SIZE[0], SIZE[1]).unwrap();
            let got = fit.pose.yaw_pitch_roll();
            for (g, want) in got.iter().zip([yaw, pitch, roll]) {
                assert!((g - want).abs() < 1.0, "{got:?} vs {yaw} {pitch} {roll}");
            }
            assert!((fit.pose.scale - 1.0).abs() < 0.05, "{fit:?}");
            assert!(fit.error < 0.2, "{fit:?}");
        }
    }

    #[test]
    fn a_face_facing_the_camera_has_its_left_on_the_right_and_its_nose_nearest() {
        let points = posed(0.0, 0.0, 0.0, 60.0, 0.0);
        // 263 is the left eye's outer corner, 33 the right's; 1 the nose tip.
        assert!(points[263][0] > points[33][0]);
        assert!(points[1][2] < points[263][2]);
        let head = fit(&points, SIZE[0], SIZE[1]).unwrap().pose.head();
        assert!(head.angle_between(Quat::IDENTITY) < 0.01, "{head}");
    }

    #[test]
    fn missing_flat_or_hostile_points_give_no_pose() {
        let face = posed(0.0, 0.0, 0.0, 60.0, 0.0);
        assert_eq!(fit(&face[..100], 640, 480), None);
        assert_eq!(fit(&face, 0, 480), None);
        assert_eq!(fit(&[[5.0, 5.0, 5.0]; 478], 640, 480), None);
        let mut bad = face.clone();
        bad[BASIS[0].0] = [f32::NAN, 0.0, 0.0];
        assert_eq!(fit(&bad, 640, 480), None);
        let mut scrambled = face;
        for (k, &(i, _)) in BASIS.iter().enumerate() {
            scrambled[i] = [(k * 37 % 11) as f32 * 40.0, (k * 13 % 7) as f32 * 60.0, 0.0];
        }
        assert_eq!(fit(&scrambled, 640, 480), None);
    }
}

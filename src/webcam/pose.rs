//! The head's pose from 66 face landmarks: OpenSeeFace's mean 3D face fitted to the image.
//!
//! The method is OpenSeeFace's (`tracker.py`, by Emiliana, BSD 2-Clause): 18 contour points of
//! a mean face ([`CONTOUR`]: jaw corners and chin, nose bridge, nose tip and nostrils, and the
//! eyes' corners, which OpenSeeFace leaves out) are
//! fitted to their landmarks with a pinhole camera whose focal length is the image's width and
//! whose principal point is the image's centre, warm-started from the previous frame's pose.
//! The 66 landmarks are then lifted to 3D at the fitted model's depth, brought back into the
//! head's frame and normalised (nose line upright, scaled to the mean face): the points the
//! feature measurements read ([`Fit::face_points`]). Our code is our own: a Levenberg–Marquardt
//! fit over six parameters (a rotation vector, as a local increment of the current rotation, and
//! a translation) with an analytic Jacobian, in `f64`.
//!
//! # Frames
//!
//! - **Image**: landmarks are `[x, y]` pixels, x to the image's right, y down the image, as the
//!   camera delivers them (not mirrored: the performer's left appears on the image's right).
//!   OpenSeeFace feeds its (row, column) pairs to OpenCV as they are, a transposed camera; we do
//!   not.
//! - **Camera**: OpenCV's, x right, y down, z forward into the scene; the camera looks along +z.
//! - **Head** (facewire's, glTF's): +X towards the performer's LEFT, +Y up, +Z out of the face.
//!   OpenSeeFace's table has +X towards the face's RIGHT (landmark 0, the jaw on the face's
//!   right, has +X), which is a left-handed frame against the camera's; we negate its X once
//!   ([`MEAN_FACE`]), so every rotation here is a proper one.
//! - **Facing**: [`FACING`] = diag(1, -1, -1), a half turn about x, shows the head upright and
//!   facing the camera: the face's left (+X) on the image's right (+x), up (+Y) up the image
//!   (-y), out of the face (+Z) towards the camera (-z).
//!
//! A [`Pose`]'s rotation takes head coordinates to camera coordinates; [`Pose::head`] is the
//! head's own turn, `FACINGᵀ · rotation`, in the head frame, which is what the avatar's head
//! takes.

use glam::{DMat3, DQuat, DVec2, DVec3, Mat3, Quat, Vec3};

/// OpenSeeFace's mean face, rows 0..66 of `face_3d` in `tracker.py` (OpenSeeFace by Emiliana,
/// BSD 2-Clause), in its own frame: +X towards the face's RIGHT, +Y up, +Z out of the face, the
/// nose tip (30) at the origin. The four pupil and eyeball rows after these are left out.
const OSF_FACE_3D: [[f64; 3]; 66] = [
    [0.4551769692672, 0.300895790030204, -0.764429433974752],
    [0.448998827123556, 0.166995837790733, -0.765143004071253],
    [0.437431554952677, 0.022655479179981, -0.739267175112735],
    [0.415033422928434, -0.088941454648772, -0.747947437846473],
    [0.389123587370091, -0.232380029794684, -0.704788385327458],
    [0.334630113904382, -0.361265387599081, -0.615587579236862],
    [0.263725112132858, -0.460009725616771, -0.491479221041573],
    [0.16241621322721, -0.558037146073869, -0.339445180872282],
    [0.0, -0.621079019321682, -0.287294770748887],
    [-0.16241621322721, -0.558037146073869, -0.339445180872282],
    [-0.263725112132858, -0.460009725616771, -0.491479221041573],
    [-0.334630113904382, -0.361265387599081, -0.615587579236862],
    [-0.389123587370091, -0.232380029794684, -0.704788385327458],
    [-0.415033422928434, -0.088941454648772, -0.747947437846473],
    [-0.437431554952677, 0.022655479179981, -0.739267175112735],
    [-0.448998827123556, 0.166995837790733, -0.765143004071253],
    [-0.4551769692672, 0.300895790030204, -0.764429433974752],
    [0.385529968662985, 0.402800553948697, -0.310031082540741],
    [0.322196658344302, 0.464439136821772, -0.250558059367669],
    [0.25409760441282, 0.46420381416882, -0.208177722146526],
    [0.186875436782135, 0.44706071961879, -0.145299823706503],
    [0.120880983543622, 0.423566314072968, -0.110757158774771],
    [-0.120880983543622, 0.423566314072968, -0.110757158774771],
    [-0.186875436782135, 0.44706071961879, -0.145299823706503],
    [-0.25409760441282, 0.46420381416882, -0.208177722146526],
    [-0.322196658344302, 0.464439136821772, -0.250558059367669],
    [-0.385529968662985, 0.402800553948697, -0.310031082540741],
    [0.0, 0.293332603215811, -0.137582088779393],
    [0.0, 0.194828701837823, -0.069158109325951],
    [0.0, 0.103844017393155, -0.009151819844964],
    [0.0, 0.0, 0.0],
    [0.080626352317973, -0.041276068128093, -0.134161035564826],
    [0.046439347377934, -0.057675223874769, -0.102990627164664],
    [0.0, -0.068753126205604, -0.090545348482397],
    [-0.046439347377934, -0.057675223874769, -0.102990627164664],
    [-0.080626352317973, -0.041276068128093, -0.134161035564826],
    [0.315905195966084, 0.298337502555443, -0.285107407636464],
    [0.275252345439353, 0.312721904921771, -0.244558251170671],
    [0.176394511553111, 0.311907184376107, -0.219205360345231],
    [0.131229723798772, 0.284447361805627, -0.234239149487417],
    [0.184124948330084, 0.260179585304867, -0.226590776513707],
    [0.279433549294448, 0.267363071770222, -0.248441437111633],
    [-0.131229723798772, 0.284447361805627, -0.234239149487417],
    [-0.176394511553111, 0.311907184376107, -0.219205360345231],
    [-0.275252345439353, 0.312721904921771, -0.244558251170671],
    [-0.315905195966084, 0.298337502555443, -0.285107407636464],
    [-0.279433549294448, 0.267363071770222, -0.248441437111633],
    [-0.184124948330084, 0.260179585304867, -0.226590776513707],
    [0.121155252430729, -0.208988660580347, -0.160606287940521],
    [0.041356305910044, -0.194484199722098, -0.096159882202821],
    [0.0, -0.205180167345702, -0.083299217789729],
    [-0.041356305910044, -0.194484199722098, -0.096159882202821],
    [-0.121155252430729, -0.208988660580347, -0.160606287940521],
    [-0.132325402795928, -0.290857984604968, -0.187067868218105],
    [-0.064137791831655, -0.325377847425684, -0.158924039726607],
    [0.0, -0.343742581679188, -0.113925986025684],
    [0.064137791831655, -0.325377847425684, -0.158924039726607],
    [0.132325402795928, -0.290857984604968, -0.187067868218105],
    [0.181481567104525, -0.243239316141725, -0.231284988892766],
    [0.083999507750469, -0.239717753728704, -0.155256465640701],
    [0.0, -0.256058040176369, -0.0950619498899],
    [-0.083999507750469, -0.239717753728704, -0.155256465640701],
    [-0.181481567104525, -0.243239316141725, -0.231284988892766],
    [-0.074036069749345, -0.250689938345682, -0.177346470406188],
    [0.0, -0.264945854681568, -0.112349967428413],
    [0.074036069749345, -0.250689938345682, -0.177346470406188],
];

/// The mean face in facewire's head frame: +X towards the face's LEFT, +Y up, +Z out of the
/// face, the nose tip (landmark 30) at the origin, the eyes at z ≈ -0.22, in the model's units
/// (the jaw is 0.91 wide at landmarks 0 and 16). OpenSeeFace's table (by Emiliana, BSD 2-Clause)
/// with its X negated, which makes it right-handed like the camera's frame.
pub const MEAN_FACE: [[f32; 3]; 66] = mean_face_f32();

/// The landmarks the pose is fitted to, the points an expression moves least: OpenSeeFace's
/// contour points, the jaw's upper corners (0, 1, 15, 16), the chin (8), the nose bridge and tip
/// (27 to 30) and the nostrils (31 to 35), and the eyes' corners (36, 39, 42, 45). The jaw
/// corners the landmark model finds on a turned head lie on its outline, which turns less than
/// the head; the eye corners are fixed points of the skull and keep the yaw from reading short
/// (on a rendered scan turned 20 degrees, 16.3 rather than 15.7).
pub const CONTOUR: [usize; 18] = [
    0, 1, 8, 15, 16, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 39, 42, 45,
];

/// The rotation, head frame to camera frame, of a head upright and facing the camera: a half
/// turn about x, diag(1, -1, -1). The face's left (+X) shows on the image's right (+x), up (+Y)
/// up the image (-y), and the face (+Z) looks into the camera (-z).
pub const FACING: Mat3 = Mat3::from_cols(Vec3::X, Vec3::NEG_Y, Vec3::NEG_Z);

/// [`FACING`] in `f64`.
const FACING_F64: DMat3 = DMat3::from_cols(DVec3::X, DVec3::NEG_Y, DVec3::NEG_Z);

/// Levenberg–Marquardt tries (accepted or refused steps) per fit.
const MAX_ITERATIONS: usize = 30;

/// A fit whose RMS contour error is above this fraction of the contour landmarks' RMS distance
/// from their centroid (the face's size in the image) is refused. Real faces fit within a tenth;
/// a stylised face (an anime avatar's big eyes and small nose, as a VTuber may hold up to the
/// camera) fits at about a quarter, and should still turn the avatar's head.
const MAX_RELATIVE_ERROR: f64 = 0.4;

/// The nearest a contour point of the model may be to the camera's plane, in model units (the
/// face is about one unit wide): nearer, or behind it, the pose is refused.
const MIN_DEPTH: f64 = 1e-3;

/// A step lowering the cost by less than this fraction ends the fit: it has converged.
const CONVERGED_DECREASE: f64 = 1e-12;

/// A step turning the face by less than this (radians) and moving it by less than this fraction
/// of its distance ends the fit: it has converged.
const CONVERGED_STEP: f64 = 1e-9;

/// The least damping: the step is then Gauss–Newton's.
const MIN_LAMBDA: f64 = 1e-9;

/// The most damping: past it the fit has stalled without converging.
const MAX_LAMBDA: f64 = 1e9;

/// The landmark pairs whose horizontal distances scale the face points (jaw corners, eye
/// corners), as OpenSeeFace's `normalize_pts3d`.
const HORIZONTAL_PAIRS: [(usize, usize); 3] = [(0, 16), (36, 39), (42, 45)];

/// [`MEAN_FACE`] at compile time: OpenSeeFace's table with X negated.
const fn mean_face_f32() -> [[f32; 3]; 66] {
    let mut out = [[0.0f32; 3]; 66];
    let mut i = 0;
    while i < 66 {
        let p = OSF_FACE_3D[i];
        out[i] = [(-p[0]) as f32, p[1] as f32, p[2] as f32];
        i += 1;
    }
    out
}

/// Landmark `i` of the mean face in facewire's head frame, in `f64`.
fn model_point(i: usize) -> DVec3 {
    let p = OSF_FACE_3D[i];
    DVec3::new(-p[0], p[1], p[2])
}

/// A head's pose as the camera sees it. The head's frame is facewire's (glTF's): +X towards the
/// performer's LEFT, +Y up, +Z out of the face, origin at the nose tip, in the mean face's units
/// ([`MEAN_FACE`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pose {
    /// Takes head coordinates to camera coordinates (x right, y down, z forward into the scene):
    /// [`FACING`] for a head upright and looking into the camera.
    pub rotation: Mat3,
    /// The nose tip in the camera's frame, in model units: z is its depth in front of the camera.
    pub translation: Vec3,
}

impl Pose {
    /// The pose whose head turn ([`Pose::head`]) is `head`, with the nose tip at `translation`
    /// (camera frame, model units).
    pub fn from_head(head: Quat, translation: Vec3) -> Self {
        Self {
            rotation: FACING * Mat3::from_quat(head),
            translation,
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
}

/// One fit of the mean face to a frame's landmarks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    /// The head's pose.
    pub pose: Pose,
    /// Root-mean-square reprojection error of the contour points ([`CONTOUR`]), in pixels: the
    /// square root of the mean, over the 18 points, of the squared distance between a landmark
    /// and the fitted face's projection of it.
    pub error: f32,
    /// The 66 landmarks lifted to 3D (each at the depth of its point of the fitted mean face),
    /// brought back into the head's frame and normalised as OpenSeeFace's `normalize_pts3d`
    /// does: x and y moved so the nose tip (30) is at x = y = 0, turned about z so the nose line
    /// from 30 to 27 points up (+Y), then x and y divided by the face's horizontal and vertical
    /// scales against the mean face; z is kept. The frame is [`MEAN_FACE`]'s: +X towards the
    /// face's LEFT (the negation of OpenSeeFace's x), +Y up, +Z out of the face. An upright
    /// mean face gives [`MEAN_FACE`] back.
    pub face_points: [[f32; 3]; 66],
}

/// Fits the mean face to landmarks frame after frame, warm-starting each fit from the last good
/// pose.
#[derive(Debug, Clone, Default)]
pub struct PoseSolver {
    /// The last good fit's pose, the next fit's start.
    last: Option<State>,
    /// Fits started without a previous pose.
    cold_starts: u64,
}

impl PoseSolver {
    /// A solver with no previous pose: its first fit starts cold.
    pub fn new() -> Self {
        Self::default()
    }

    /// Fits the mean face to `landmarks` (66 points, `[x, y]` pixels, x right, y down) in an
    /// image `width` x `height`; the camera's focal length is `width` pixels and its principal
    /// point the image's centre. Warm-starts from the last good pose; falls back to a cold start
    /// (several starting rotations, the best fit kept) when the warm start fails or after
    /// [`PoseSolver::reset`]. Returns `None` when the fit does not converge or is degenerate:
    /// a zero image size, a non-finite landmark, landmarks all (nearly) at one point, a face at
    /// or behind the camera, an error above a quarter of the face's size in the image, or a
    /// face whose nose line or width cannot be normalised. A `None` forgets the last pose.
    /// Never panics and allocates nothing.
    pub fn solve(&mut self, landmarks: &[[f32; 2]; 66], width: u32, height: u32) -> Option<Fit> {
        let fitted = self.fit(landmarks, width, height);
        self.last = fitted.as_ref().map(|(state, _)| *state);
        fitted.map(|(_, fit)| fit)
    }

    /// Forgets the last pose: the next fit starts cold.
    pub fn reset(&mut self) {
        self.last = None;
    }

    /// How many fits have started cold (a diagnostic: a healthy track starts cold once).
    pub fn cold_starts(&self) -> u64 {
        self.cold_starts
    }

    /// [`PoseSolver::solve`], with the fitted state kept for the next warm start.
    fn fit(&mut self, landmarks: &[[f32; 2]; 66], width: u32, height: u32) -> Option<(State, Fit)> {
        if width == 0 || height == 0 {
            return None;
        }
        let mut image = [DVec2::ZERO; 66];
        for (point, landmark) in image.iter_mut().zip(landmarks) {
            *point = DVec2::new(f64::from(landmark[0]), f64::from(landmark[1]));
            if !point.is_finite() {
                return None;
            }
        }
        let camera = Camera {
            focal: f64::from(width),
            centre: DVec2::new(f64::from(width), f64::from(height)) * 0.5,
        };
        let problem = Problem::new(camera, &image)?;
        if let Some(last) = self.last {
            if let Some(fitted) = problem
                .refine(last)
                .and_then(|(state, cost)| problem.finish(&image, state, cost))
            {
                return Some(fitted);
            }
        }
        self.cold_starts += 1;
        let (state, cost) = problem
            .cold_starts()
            .into_iter()
            .flatten()
            .filter_map(|start| problem.refine(start))
            .min_by(|a, b| a.1.total_cmp(&b.1))?;
        problem.finish(&image, state, cost)
    }
}

/// A pose while fitting: rotation (head to camera) and translation, in `f64`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct State {
    rotation: DQuat,
    translation: DVec3,
}

impl State {
    /// The state moved by `step`: a rotation vector applied on the camera's side, then a
    /// translation.
    fn stepped(&self, step: &[f64; 6]) -> Self {
        let turn = DQuat::from_scaled_axis(DVec3::new(step[0], step[1], step[2]));
        Self {
            rotation: (turn * self.rotation).normalize(),
            translation: self.translation + DVec3::new(step[3], step[4], step[5]),
        }
    }
}

/// The pinhole camera: focal length and principal point, in pixels.
#[derive(Debug, Clone, Copy)]
struct Camera {
    focal: f64,
    centre: DVec2,
}

/// The cost, gradient and Gauss–Newton matrix of the contour's reprojection at one state.
struct Normal {
    /// Sum of squared reprojection errors, px².
    cost: f64,
    /// JᵀJ.
    jtj: [[f64; 6]; 6],
    /// Jᵀr.
    jtr: [f64; 6],
}

/// One frame's fit: the contour's model points and landmarks.
struct Problem {
    camera: Camera,
    model: [DVec3; 18],
    observed: [DVec2; 18],
    /// The contour landmarks' RMS distance from their centroid, px.
    spread: f64,
    /// Their centroid, px.
    centroid: DVec2,
}

impl Problem {
    /// The fit of the contour of `image`, or `None` when the landmarks are all (nearly) at one
    /// point.
    fn new(camera: Camera, image: &[DVec2; 66]) -> Option<Self> {
        let model = CONTOUR.map(model_point);
        let observed = CONTOUR.map(|i| image[i]);
        let centroid = observed.iter().sum::<DVec2>() / observed.len() as f64;
        let spread = (observed
            .iter()
            .map(|p| p.distance_squared(centroid))
            .sum::<f64>()
            / observed.len() as f64)
            .sqrt();
        if !spread.is_finite() || spread <= 1e-6 {
            return None;
        }
        Some(Self {
            camera,
            model,
            observed,
            spread,
            centroid,
        })
    }

    /// The contour's cost, JᵀJ and Jᵀr at `state`, or `None` when a contour point is not in
    /// front of the camera or the cost is not finite.
    fn normal(&self, state: &State) -> Option<Normal> {
        let rotation = DMat3::from_quat(state.rotation);
        let focal = self.camera.focal;
        let mut normal = Normal {
            cost: 0.0,
            jtj: [[0.0; 6]; 6],
            jtr: [0.0; 6],
        };
        for (&point, &observed) in self.model.iter().zip(&self.observed) {
            let a = rotation * point;
            let p = a + state.translation;
            if p.z.is_nan() || p.z < MIN_DEPTH {
                return None;
            }
            let inv = 1.0 / p.z;
            let g = focal * inv;
            let gu = -g * p.x * inv;
            let gv = -g * p.y * inv;
            let r = self.camera.centre + g * DVec2::new(p.x, p.y) - observed;
            // d(u, v)/dp = [[g, 0, gu], [0, g, gv]]; a rotation step w moves p by w × a.
            let ju = [gu * a.y, g * a.z - gu * a.x, -g * a.y, g, 0.0, gu];
            let jv = [gv * a.y - g * a.z, -gv * a.x, g * a.x, 0.0, g, gv];
            normal.cost += r.length_squared();
            for (i, row) in normal.jtj.iter_mut().enumerate() {
                for (j, cell) in row.iter_mut().enumerate() {
                    *cell += ju[i] * ju[j] + jv[i] * jv[j];
                }
            }
            for (i, cell) in normal.jtr.iter_mut().enumerate() {
                *cell += ju[i] * r.x + jv[i] * r.y;
            }
        }
        normal.cost.is_finite().then_some(normal)
    }

    /// Levenberg–Marquardt from `start`: the fitted state and its cost (the best reached within
    /// [`MAX_ITERATIONS`] tries), or `None` when the start is not in front of the camera. Steps that would take a contour point behind the camera are
    /// refused like steps that raise the cost.
    fn refine(&self, start: State) -> Option<(State, f64)> {
        let mut state = start;
        let mut normal = self.normal(&state)?;
        // Exact fits end here: a millionth of a pixel per point on a face 100 px wide.
        let exact = (1e-8 * self.spread).powi(2) * self.model.len() as f64;
        let mut lambda = 1e-3;
        for _ in 0..MAX_ITERATIONS {
            if normal.cost <= exact {
                return Some((state, normal.cost));
            }
            let Some(step) = damped_step(&normal, lambda) else {
                lambda *= 10.0;
                continue;
            };
            // A step this small changes nothing that matters: the fit is at its minimum.
            let turn = DVec3::new(step[0], step[1], step[2]).length();
            let shift = DVec3::new(step[3], step[4], step[5]).length();
            if turn <= CONVERGED_STEP && shift <= CONVERGED_STEP * state.translation.length() {
                return Some((state, normal.cost));
            }
            let moved = state.stepped(&step);
            match self.normal(&moved).filter(|next| next.cost < normal.cost) {
                Some(next) => {
                    let decrease = (normal.cost - next.cost) / normal.cost;
                    state = moved;
                    normal = next;
                    if decrease < CONVERGED_DECREASE {
                        return Some((state, normal.cost));
                    }
                    lambda = (lambda * 0.1).max(MIN_LAMBDA);
                }
                None => lambda *= 10.0,
            }
            if lambda > MAX_LAMBDA {
                // No step lowers the cost any more: this is the minimum from here.
                break;
            }
        }
        // Out of tries or at a minimum no step improves: the best state reached, which
        // [`Problem::finish`] accepts only when its error is within bounds.
        Some((state, normal.cost))
    }

    /// Cold starts: the face upright, turned as the landmarks suggest, and facing the camera
    /// (each with the roll the jaw line shows), and turned a third of the way round to either
    /// side; `None` where no translation puts the face in front of the camera.
    fn cold_starts(&self) -> [Option<State>; 4] {
        // Contour indices: 0 is landmark 0, 4 is landmark 16, 8 is landmark 30 (the nose tip).
        let (right_jaw, left_jaw, nose) = (self.observed[0], self.observed[4], self.observed[8]);
        let across = left_jaw - right_jaw;
        // Positive roll tilts the head towards its left shoulder, the image's right: the jaw's
        // left corner (image right) goes down the image.
        let roll = across.y.atan2(across.x);
        let width = across.length();
        // The nose tip against the jaw corners' midpoint, in the jaw line's own axes.
        let offset = nose - (right_jaw + left_jaw) * 0.5;
        let (sin, cos) = roll.sin_cos();
        let along = offset.x * cos + offset.y * sin;
        let down = -offset.x * sin + offset.y * cos;
        // The mean face: the jaw corners are `jaw_width` apart, `jaw_depth` behind and
        // `jaw_height` above the nose tip. Turned by yaw, the tip sits `jaw_depth · sin(yaw)`
        // across from their midpoint, which are `jaw_width · cos(yaw)` apart; nodded by pitch,
        // it sits `jaw_height · cos(pitch) + jaw_depth · sin(pitch)` below them.
        let (m0, m16) = (model_point(0), model_point(16));
        let jaw_width = m16.x - m0.x;
        let jaw_depth = -(m0.z + m16.z) * 0.5;
        let jaw_height = (m0.y + m16.y) * 0.5;
        let yaw = (along / width * jaw_width / jaw_depth)
            .atan()
            .clamp(-1.2, 1.2);
        let scale = width / (jaw_width * yaw.cos());
        let below = down / scale / jaw_height.hypot(jaw_depth);
        let pitch = (below.clamp(-1.0, 1.0).asin() - jaw_height.atan2(jaw_depth)).clamp(-1.2, 1.2);
        let third = std::f64::consts::FRAC_PI_3;
        [(yaw, pitch), (0.0, 0.0), (third, 0.0), (-third, 0.0)].map(|(yaw, pitch)| {
            let head = DQuat::from_rotation_y(yaw)
                * DQuat::from_rotation_x(pitch)
                * DQuat::from_rotation_z(-roll);
            self.placed(DQuat::from_mat3(&FACING_F64) * head)
        })
    }

    /// The face turned by `rotation` and placed so its contour's projection has the landmarks'
    /// centroid and size, or `None` when that puts it at or behind the camera.
    fn placed(&self, rotation: DQuat) -> Option<State> {
        let turned = self.model.map(|p| rotation * p);
        let centre = turned.iter().sum::<DVec3>() / turned.len() as f64;
        let size = (turned
            .iter()
            .map(|p| (p.truncate() - centre.truncate()).length_squared())
            .sum::<f64>()
            / turned.len() as f64)
            .sqrt();
        let depth = self.camera.focal * size / self.spread;
        if !depth.is_finite() || depth <= 0.0 {
            return None;
        }
        let across = (self.centroid - self.camera.centre) * (depth / self.camera.focal);
        Some(State {
            rotation,
            translation: DVec3::new(across.x, across.y, depth) - centre,
        })
    }

    /// The fit at `state`, with its contour cost `cost`: refused when its error is above the
    /// bound or the face points cannot be normalised.
    fn finish(&self, image: &[DVec2; 66], state: State, cost: f64) -> Option<(State, Fit)> {
        let error = (cost / self.model.len() as f64).sqrt();
        if !error.is_finite() || error > MAX_RELATIVE_ERROR * self.spread {
            return None;
        }
        let rotation = DMat3::from_quat(state.rotation);
        let inverse = rotation.transpose();
        let mut points = [DVec3::ZERO; 66];
        for (i, (lifted, pixel)) in points.iter_mut().zip(image).enumerate() {
            // The landmark's ray, at the depth of the fitted face's point.
            let depth = (rotation * model_point(i) + state.translation).z;
            let ray = (*pixel - self.camera.centre) / self.camera.focal;
            *lifted = inverse * (DVec3::new(ray.x, ray.y, 1.0) * depth - state.translation);
        }
        normalise(&mut points)?;
        let face_points = points.map(|p| p.as_vec3().to_array());
        let pose = Pose {
            rotation: rotation.as_mat3(),
            translation: state.translation.as_vec3(),
        };
        let finite = face_points.iter().flatten().all(|v| v.is_finite())
            && pose.rotation.is_finite()
            && pose.translation.is_finite()
            && pose.translation.z > 0.0;
        finite.then_some((
            state,
            Fit {
                pose,
                error: error as f32,
                face_points,
            },
        ))
    }
}

/// The Levenberg–Marquardt step: solves `(JᵀJ + λ·diag(JᵀJ)) δ = -Jᵀr`, or `None` when that
/// matrix is not positive definite.
fn damped_step(normal: &Normal, lambda: f64) -> Option<[f64; 6]> {
    let floor = 1e-12 * (0..6).map(|i| normal.jtj[i][i]).fold(0.0, f64::max);
    let mut a = normal.jtj;
    for (i, row) in a.iter_mut().enumerate() {
        row[i] += lambda * row[i].max(floor);
    }
    let b = normal.jtr.map(|v| -v);
    cholesky_solve(&a, &b)
}

/// Solves `a x = b` for a symmetric positive definite 6 x 6 `a` by Cholesky, or `None` when `a`
/// is not (numerically) positive definite.
fn cholesky_solve(a: &[[f64; 6]; 6], b: &[f64; 6]) -> Option<[f64; 6]> {
    let mut l = [[0.0; 6]; 6];
    for i in 0..6 {
        for j in 0..=i {
            let sum = a[i][j] - (0..j).map(|k| l[i][k] * l[j][k]).sum::<f64>();
            if i == j {
                if sum.is_nan() || sum <= 0.0 {
                    return None;
                }
                l[i][i] = sum.sqrt();
            } else {
                l[i][j] = sum / l[j][j];
            }
        }
    }
    let mut y = [0.0; 6];
    for i in 0..6 {
        y[i] = (b[i] - (0..i).map(|k| l[i][k] * y[k]).sum::<f64>()) / l[i][i];
    }
    let mut x = [0.0; 6];
    for i in (0..6).rev() {
        x[i] = (y[i] - (i + 1..6).map(|k| l[k][i] * x[k]).sum::<f64>()) / l[i][i];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

/// OpenSeeFace's `normalize_pts3d`: the nose tip to x = y = 0, the nose line (30 to 27) turned
/// upright about z, then x and y divided by the face's scales against the mean face (nose
/// segments 27 to 30 vertically; jaw and eye corners horizontally). `None` when the nose line
/// has no length or a scale is not positive and finite.
fn normalise(points: &mut [DVec3; 66]) -> Option<()> {
    let nose = points[30];
    let up = points[27].truncate() - nose.truncate();
    let length = up.length();
    if !length.is_finite() || length <= 0.0 {
        return None;
    }
    // The turn taking `up` to (0, length).
    let (cos, sin) = (up.y / length, up.x / length);
    for p in points.iter_mut() {
        let (x, y) = (p.x - nose.x, p.y - nose.y);
        p.x = x * cos - y * sin;
        p.y = x * sin + y * cos;
    }
    let vertical = (27..30)
        .map(|k| (points[k].y - points[k + 1].y) / (model_point(k).y - model_point(k + 1).y))
        .sum::<f64>()
        / 3.0;
    let horizontal = HORIZONTAL_PAIRS
        .iter()
        .map(|&(a, b)| {
            (points[a].x - points[b].x).abs() / (model_point(a).x - model_point(b).x).abs()
        })
        .sum::<f64>()
        / HORIZONTAL_PAIRS.len() as f64;
    let usable = |s: f64| s.is_finite() && s > 0.0;
    if !usable(vertical) || !usable(horizontal) {
        return None;
    }
    for p in points.iter_mut() {
        p.x /= horizontal;
        p.y /= vertical;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec2;

    const WIDTH: u32 = 640;
    const HEIGHT: u32 = 480;

    /// The head turn of `--head YAW,PITCH,ROLL` (degrees).
    fn head(yaw: f32, pitch: f32, roll: f32) -> Quat {
        Quat::from_rotation_y(yaw.to_radians())
            * Quat::from_rotation_x(pitch.to_radians())
            * Quat::from_rotation_z(-roll.to_radians())
    }

    /// The mean face's landmarks seen with `pose` by the solver's camera for a 640 x 480 image.
    fn project(pose: &Pose) -> [[f32; 2]; 66] {
        let focal = WIDTH as f32;
        let centre = Vec2::new(WIDTH as f32, HEIGHT as f32) * 0.5;
        MEAN_FACE.map(|p| {
            let c = pose.rotation * Vec3::from(p) + pose.translation;
            (centre + focal * Vec2::new(c.x, c.y) / c.z).to_array()
        })
    }

    fn landmarks(yaw: f32, pitch: f32, roll: f32, translation: Vec3) -> [[f32; 2]; 66] {
        project(&Pose::from_head(head(yaw, pitch, roll), translation))
    }

    /// Deterministic noise in [-1, 1].
    fn noise(seed: &mut u64) -> f32 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    fn angle_error(got: [f32; 3], want: [f32; 3]) -> f32 {
        got.iter()
            .zip(want)
            .map(|(g, w)| (g - w).abs())
            .fold(0.0, f32::max)
    }

    const ANGLES: [f32; 5] = [-40.0, -20.0, 0.0, 20.0, 40.0];
    const PLACES: [Vec3; 3] = [
        Vec3::new(0.0, 0.0, 3.0),
        Vec3::new(-0.4, 0.3, 2.2),
        Vec3::new(0.6, -0.2, 5.0),
    ];

    #[test]
    fn mean_face_is_the_table_mirrored_into_a_right_handed_frame() {
        assert_eq!(MEAN_FACE[30], [0.0, 0.0, 0.0]);
        for (ours, theirs) in MEAN_FACE.iter().zip(&OSF_FACE_3D) {
            assert_eq!(ours[0], -theirs[0] as f32);
            assert_eq!(ours[1], theirs[1] as f32);
            assert_eq!(ours[2], theirs[2] as f32);
        }
        // Landmark 0 (the jaw on the face's right) at -X, 16 at +X; eyes behind the nose tip.
        assert!(MEAN_FACE[0][0] < 0.0 && MEAN_FACE[16][0] > 0.0);
        assert!(MEAN_FACE[36][0] < 0.0 && MEAN_FACE[45][0] > 0.0);
        assert!((MEAN_FACE[39][2] + 0.234).abs() < 0.01);
        // Right-handed: the face's left (0 → 16) × up (8 → 27) points out of the face.
        let left = Vec3::from(MEAN_FACE[16]) - Vec3::from(MEAN_FACE[0]);
        let up = Vec3::from(MEAN_FACE[27]) - Vec3::from(MEAN_FACE[8]);
        let out = left.cross(up);
        assert!(out.z > 0.9 * out.length(), "{out}");
    }

    #[test]
    fn facing_shows_the_face_upright_and_looking_at_the_camera() {
        assert!((FACING.determinant() - 1.0).abs() < 1e-6);
        let pose = Pose::from_head(Quat::IDENTITY, Vec3::new(0.0, 0.0, 3.0));
        assert_eq!(pose.rotation, FACING);
        let image = project(&pose);
        // The face's right jaw (0) and right eye (36) on the image's left.
        assert!(image[0][0] < image[16][0] && image[36][0] < image[45][0]);
        // Brows above the chin (smaller y).
        assert!(image[19][1] < image[8][1]);
        // The nose tip nearer the camera than the eyes.
        let depth = |i: usize| (FACING * Vec3::from(MEAN_FACE[i])).z;
        assert!(depth(30) < depth(39));
        let head = pose.head();
        assert!(head.angle_between(Quat::IDENTITY) < 1e-5, "{head}");
        assert_eq!(pose.yaw_pitch_roll(), [0.0, 0.0, 0.0]);
    }

    #[test]
    fn yaw_pitch_roll_round_trips() {
        for yaw in [-170.0, -90.0, -40.0, -5.0, 0.0, 12.0, 60.0, 135.0] {
            for pitch in [-85.0, -40.0, -3.0, 0.0, 25.0, 70.0] {
                for roll in [-150.0, -30.0, 0.0, 7.0, 45.0, 100.0] {
                    let pose = Pose::from_head(head(yaw, pitch, roll), Vec3::Z);
                    let got = pose.yaw_pitch_roll();
                    assert!(
                        angle_error(got, [yaw, pitch, roll]) < 0.01,
                        "{got:?} for {yaw}, {pitch}, {roll}"
                    );
                    let back = pose.head();
                    assert!(1.0 - back.dot(head(yaw, pitch, roll)).abs() < 1e-6);
                    assert!(back.w >= 0.0);
                }
            }
        }
    }

    #[test]
    fn cold_start_recovers_exact_poses() {
        for yaw in ANGLES {
            for pitch in ANGLES {
                for roll in ANGLES {
                    for place in PLACES {
                        let mut solver = PoseSolver::new();
                        let image = landmarks(yaw, pitch, roll, place);
                        let fit = solver
                            .solve(&image, WIDTH, HEIGHT)
                            .unwrap_or_else(|| panic!("no fit for {yaw}, {pitch}, {roll}"));
                        let got = fit.pose.yaw_pitch_roll();
                        assert!(
                            angle_error(got, [yaw, pitch, roll]) < 0.5,
                            "{got:?} for {yaw}, {pitch}, {roll} at {place}"
                        );
                        assert!(fit.error < 0.01, "{}", fit.error);
                        assert!((fit.pose.translation - place).length() < 1e-3 * place.z);
                        assert_eq!(solver.cold_starts(), 1);
                    }
                }
            }
        }
    }

    #[test]
    fn cold_start_recovers_wide_turns() {
        for (yaw, pitch, roll) in [
            (65.0, 0.0, 0.0),
            (-65.0, 10.0, 0.0),
            (60.0, 45.0, -60.0),
            (-60.0, -45.0, 60.0),
            (0.0, 60.0, 90.0),
            (30.0, -55.0, -120.0),
        ] {
            let image = landmarks(yaw, pitch, roll, Vec3::new(0.1, 0.2, 3.0));
            let fit = PoseSolver::new().solve(&image, WIDTH, HEIGHT).unwrap();
            let got = fit.pose.yaw_pitch_roll();
            assert!(
                angle_error(got, [yaw, pitch, roll]) < 0.5,
                "{got:?} for {yaw}, {pitch}, {roll}"
            );
        }
    }

    #[test]
    fn warm_start_follows_a_moving_head_and_recovers_from_jumps() {
        let mut solver = PoseSolver::new();
        let mut seed = 7;
        let mut steps = 0;
        for step in 0..200 {
            let t = step as f32 * 0.05;
            let (yaw, pitch, roll) = (
                40.0 * t.sin(),
                35.0 * (0.7 * t).cos(),
                30.0 * (1.3 * t).sin(),
            );
            let place = Vec3::new(0.3 * (0.4 * t).sin(), 0.1, 3.0 + 0.5 * t.cos());
            let fit = solver
                .solve(&landmarks(yaw, pitch, roll, place), WIDTH, HEIGHT)
                .unwrap();
            assert!(angle_error(fit.pose.yaw_pitch_roll(), [yaw, pitch, roll]) < 0.5);
            steps += 1;
            // Now and then the head jumps (a missed stretch of frames).
            if step % 50 == 49 {
                let (yaw, pitch, roll) = (
                    noise(&mut seed) * 40.0,
                    noise(&mut seed) * 40.0,
                    noise(&mut seed) * 40.0,
                );
                let fit = solver
                    .solve(&landmarks(yaw, pitch, roll, place), WIDTH, HEIGHT)
                    .unwrap();
                assert!(angle_error(fit.pose.yaw_pitch_roll(), [yaw, pitch, roll]) < 0.5);
                steps += 1;
            }
        }
        // Most fits were warm.
        assert!(
            solver.cold_starts() < 10,
            "{} cold starts in {steps}",
            solver.cold_starts()
        );
    }

    #[test]
    fn reset_starts_cold() {
        let mut solver = PoseSolver::new();
        let image = landmarks(10.0, 5.0, -5.0, Vec3::new(0.0, 0.0, 3.0));
        solver.solve(&image, WIDTH, HEIGHT).unwrap();
        solver.solve(&image, WIDTH, HEIGHT).unwrap();
        assert_eq!(solver.cold_starts(), 1);
        solver.reset();
        solver.solve(&image, WIDTH, HEIGHT).unwrap();
        assert_eq!(solver.cold_starts(), 2);
    }

    #[test]
    fn signs_follow_facewire_head_convention() {
        let place = Vec3::new(0.0, 0.0, 3.0);
        let mut solver = PoseSolver::new();
        let mut solve = |image: &[[f32; 2]; 66]| {
            solver.reset();
            solver
                .solve(image, WIDTH, HEIGHT)
                .unwrap()
                .pose
                .yaw_pitch_roll()
        };
        let mid = |image: &[[f32; 2]; 66], a: usize, b: usize| {
            (Vec2::from(image[a]) + Vec2::from(image[b])) * 0.5
        };

        // Turned towards the performer's left: the nose tip moves to the image's right of the
        // jaw corners' midpoint.
        let image = landmarks(20.0, 0.0, 0.0, place);
        assert!(image[30][0] > mid(&image, 0, 16).x + 10.0);
        assert!(solve(&image)[0] > 19.5);
        let image = landmarks(-20.0, 0.0, 0.0, place);
        assert!(image[30][0] < mid(&image, 0, 16).x - 10.0);
        assert!(solve(&image)[0] < -19.5);

        // Nodding down: the nose tip moves down the image, nearer the chin than the brows.
        let level = landmarks(0.0, 0.0, 0.0, place);
        let image = landmarks(0.0, 20.0, 0.0, place);
        let below_eyes = |image: &[[f32; 2]; 66]| image[30][1] - mid(image, 36, 45).y;
        assert!(below_eyes(&image) > below_eyes(&level) + 5.0);
        assert!(solve(&image)[1] > 19.5);
        let image = landmarks(0.0, -20.0, 0.0, place);
        assert!(below_eyes(&image) < below_eyes(&level) - 5.0);
        assert!(solve(&image)[1] < -19.5);

        // Tilted towards the performer's left shoulder: the eye on the image's right (the
        // performer's left eye, 42 to 47) goes down the image, the other up.
        let image = landmarks(0.0, 0.0, 20.0, place);
        assert!(image[45][1] > image[36][1] + 10.0);
        assert!(image[45][0] > image[36][0]);
        assert!(solve(&image)[2] > 19.5);
        let image = landmarks(0.0, 0.0, -20.0, place);
        assert!(image[45][1] < image[36][1] - 10.0);
        assert!(solve(&image)[2] < -19.5);
    }

    #[test]
    fn one_pixel_noise_keeps_angles_within_two_degrees() {
        let mut seed = 1;
        let mut worst: f32 = 0.0;
        for yaw in ANGLES {
            for pitch in ANGLES {
                for roll in [-30.0, 0.0, 30.0] {
                    for place in PLACES {
                        let mut image = landmarks(yaw, pitch, roll, place);
                        for point in image.iter_mut().flatten() {
                            *point += noise(&mut seed);
                        }
                        let mut solver = PoseSolver::new();
                        let cold = solver.solve(&image, WIDTH, HEIGHT).unwrap();
                        let warm = solver.solve(&image, WIDTH, HEIGHT).unwrap();
                        for fit in [cold, warm] {
                            let error = angle_error(fit.pose.yaw_pitch_roll(), [yaw, pitch, roll]);
                            worst = worst.max(error);
                            assert!(
                                error < 2.0,
                                "{error}° for {yaw}, {pitch}, {roll} at {place}"
                            );
                            assert!(fit.error > 0.05 && fit.error < 2.0, "{}", fit.error);
                        }
                    }
                }
            }
        }
        assert!(worst > 0.0);
    }

    #[test]
    fn bad_landmarks_give_none_without_panicking() {
        let good = landmarks(10.0, -10.0, 5.0, Vec3::new(0.0, 0.0, 3.0));
        let mut solver = PoseSolver::new();
        assert!(solver.solve(&good, WIDTH, HEIGHT).is_some());
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            for (i, axis) in [(0, 0), (30, 1), (47, 0)] {
                let mut image = good;
                image[i][axis] = bad;
                assert!(solver.solve(&image, WIDTH, HEIGHT).is_none());
            }
        }
        for value in [0.0, 320.0, -1e30, f32::MAX] {
            assert!(solver.solve(&[[value; 2]; 66], WIDTH, HEIGHT).is_none());
        }
        // A face a billion times larger than the image would put it inside the lens.
        let huge = good.map(|[x, y]| [x * 1e9, y * 1e9]);
        assert!(solver.solve(&huge, WIDTH, HEIGHT).is_none());
        assert!(solver.solve(&good, 0, HEIGHT).is_none());
        assert!(solver.solve(&good, WIDTH, 0).is_none());
        // Extreme and scrambled inputs: any answer, no panic, finite when there is one.
        let mut seed = 3;
        for scale in [1e-3, 1.0, 1e4, 1e20, f32::MAX] {
            for _ in 0..20 {
                let image =
                    [[0.0f32; 2]; 66].map(|_| [noise(&mut seed) * scale, noise(&mut seed) * scale]);
                if let Some(fit) = solver.solve(&image, WIDTH, HEIGHT) {
                    assert!(fit.error.is_finite());
                    assert!(fit.face_points.iter().flatten().all(|v| v.is_finite()));
                }
            }
        }
        // The solver still works after all that.
        solver.reset();
        let fit = solver.solve(&good, WIDTH, HEIGHT).unwrap();
        assert!(angle_error(fit.pose.yaw_pitch_roll(), [10.0, -10.0, 5.0]) < 0.5);
    }

    #[test]
    fn a_face_behind_the_camera_is_refused() {
        let image = landmarks(0.0, 0.0, 0.0, Vec3::new(0.0, 0.0, 3.0));
        let centre = Vec2::new(WIDTH as f32, HEIGHT as f32) * 0.5;
        let image_dvec = image.map(|[x, y]| DVec2::new(x.into(), y.into()));
        let camera = Camera {
            focal: WIDTH.into(),
            centre: centre.as_dvec2(),
        };
        let problem = Problem::new(camera, &image_dvec).unwrap();
        let behind = State {
            rotation: DQuat::from_mat3(&FACING_F64),
            translation: DVec3::new(0.0, 0.0, -3.0),
        };
        assert!(problem.normal(&behind).is_none());
        assert!(problem.refine(behind).is_none());
        // The nose tip behind the camera, the jaw in front of it.
        let straddling = State {
            translation: DVec3::new(0.0, 0.0, -0.3),
            ..behind
        };
        assert!(problem.normal(&straddling).is_none());
    }

    #[test]
    fn face_points_of_an_exact_projection_are_the_mean_face() {
        for (yaw, pitch, roll) in [(0.0, 0.0, 0.0), (25.0, -15.0, 10.0), (-35.0, 20.0, -30.0)] {
            let image = landmarks(yaw, pitch, roll, Vec3::new(0.2, -0.1, 3.0));
            let fit = PoseSolver::new().solve(&image, WIDTH, HEIGHT).unwrap();
            for (i, (got, want)) in fit.face_points.iter().zip(&MEAN_FACE).enumerate() {
                let gap = (Vec3::from(*got) - Vec3::from(*want)).length();
                assert!(gap < 1e-3, "landmark {i}: {got:?} against {want:?}");
            }
        }
    }

    #[test]
    fn face_points_are_normalised_like_openseeface() {
        // A wider face, tilted in the image plane, lifts to a face whose nose line is upright
        // and whose scales match the mean face.
        let mut image = landmarks(0.0, 0.0, 15.0, Vec3::new(0.0, 0.0, 3.0));
        let centre = Vec2::from(image[30]);
        for (i, point) in image.iter_mut().enumerate() {
            if !CONTOUR.contains(&i) {
                let p = Vec2::from(*point) - centre;
                *point = (centre + p * Vec2::new(1.05, 1.0)).to_array();
            }
        }
        let fit = PoseSolver::new().solve(&image, WIDTH, HEIGHT).unwrap();
        let p = fit.face_points;
        assert!(p[27][0].abs() < 1e-5 && p[27][1] > 0.0);
        assert_eq!([p[30][0], p[30][1]], [0.0, 0.0]);
        let horizontal = HORIZONTAL_PAIRS
            .iter()
            .map(|&(a, b)| (p[a][0] - p[b][0]).abs() / (MEAN_FACE[a][0] - MEAN_FACE[b][0]).abs())
            .sum::<f32>()
            / 3.0;
        assert!((horizontal - 1.0).abs() < 1e-4, "{horizontal}");
        let vertical = (27..30)
            .map(|k| (p[k][1] - p[k + 1][1]) / (MEAN_FACE[k][1] - MEAN_FACE[k + 1][1]))
            .sum::<f32>()
            / 3.0;
        assert!((vertical - 1.0).abs() < 1e-4, "{vertical}");
    }
}

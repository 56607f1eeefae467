//! The camera: a perspective view that frames the avatar's head from the front.

use glam::{Mat4, Vec3};

use crate::avatar::Aabb;
use crate::config::CameraConfig;

/// A perspective camera in world space (right-handed, Y up, OpenGL clip space).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Camera {
    /// Where the camera is.
    pub eye: Vec3,
    /// The point it looks at.
    pub target: Vec3,
    /// The world's up direction (need not be exactly perpendicular to the view direction).
    pub up: Vec3,
    /// Vertical field of view, in radians.
    pub fov_y: f32,
    /// Viewport width divided by height.
    pub aspect: f32,
    /// Near clip distance.
    pub near: f32,
    /// Far clip distance.
    pub far: f32,
}

/// The vertical field of view [`Camera::framing`] uses: a portrait lens, 27 degrees.
pub const FRAMING_FOV_Y: f32 = 27.0 * std::f32::consts::PI / 180.0;

/// The margin [`Camera::framing`] leaves around the head: 1.15 shows 15 % more than the box.
pub const FRAMING_MARGIN: f32 = 1.15;

impl Camera {
    /// A camera on the +Z side of `bounds` looking down -Z at its centre (the face looks at the
    /// camera), far enough away that the box's front face fits the view with a small margin.
    ///
    /// Non-finite or empty bounds fall back to a unit box at the origin, and a non-positive or
    /// non-finite aspect to 1. The clip planes leave room for the head to turn: they enclose the
    /// box's bounding sphere wherever it rotates around its centre.
    pub fn framing(bounds: Aabb, aspect: f32) -> Camera {
        Camera::framing_with_fov(bounds, aspect, FRAMING_FOV_Y).0
    }

    /// [`Camera::framing`] with the user's framing on top: the head framed with `settings.fov`
    /// (so it keeps its size whatever the lens), then the camera moved `zoom` times closer,
    /// orbited around the head's centre by yaw and pitch, and raised by `offset_y` head heights
    /// together with the point it looks at. Out-of-range settings are clamped; the default
    /// settings give exactly [`Camera::framing`].
    pub fn framed(bounds: Aabb, aspect: f32, settings: &CameraConfig) -> Camera {
        let s = settings.clamped();
        // The default lens is exactly the framing's, bit for bit.
        let fov_y = if s.fov == CameraConfig::default().fov {
            FRAMING_FOV_Y
        } else {
            s.fov.to_radians()
        };
        let (base, radius, height) = Camera::framing_with_fov(bounds, aspect, fov_y);
        if s == CameraConfig::default() {
            return base;
        }
        let offset = base.eye - base.target;
        let distance = offset.length() / s.zoom;
        let orbit = glam::Quat::from_rotation_y(s.orbit_yaw.to_radians())
            * glam::Quat::from_rotation_x(-s.orbit_pitch.to_radians());
        let dir = orbit * offset.try_normalize().unwrap_or(Vec3::Z);
        let lift = Vec3::Y * (s.offset_y * height);
        let target = base.target + lift;
        let eye = target + dir * distance;
        // The head's bounding sphere is centred on the unlifted target; keep all of it between
        // the clip planes wherever the lift and orbit put the camera.
        let reach = distance + lift.length();
        Camera {
            eye,
            target,
            near: (distance - lift.length() - radius * 1.5).max(distance * 0.01),
            far: reach + radius * 1.5,
            ..base
        }
    }

    /// This camera with its clip planes widened (never narrowed) so that `reach` lies between
    /// them, with the room to turn [`Camera::framing`] gives the framed box: the box's bounding
    /// sphere, enlarged 1.5 times, around the box's centre. Pass
    /// [`Avatar::deformation_bounds`](crate::avatar::Avatar::deformation_bounds), so a full
    /// expression is not clipped, while the framing (eye, target, lens) stays on the rest head.
    /// Bounds that are not finite change nothing.
    pub fn reaching(self, reach: Aabb) -> Camera {
        if !(reach.min.is_finite() && reach.max.is_finite()) {
            return self;
        }
        let (_, _, forward) = self.basis();
        let depth = forward.dot(reach.center() - self.eye);
        let radius = (reach.size().abs() * 0.5).length() * 1.5;
        // As in the framing: the near plane never comes closer than 1 % of the distance to the
        // target, which keeps the depth buffer's precision.
        let floor = (self.target - self.eye).length() * 0.01;
        let near = if self.near.is_finite() && self.near > 0.0 {
            self.near.min((depth - radius).max(floor))
        } else {
            self.near
        };
        let far = if self.far.is_finite() {
            self.far.max(depth + radius)
        } else {
            self.far
        };
        Camera { near, far, ..self }
    }

    /// [`Camera::framing`] with another vertical field of view (radians), with the radius of
    /// the framed box's bounding sphere and the box's height.
    fn framing_with_fov(bounds: Aabb, aspect: f32, fov_y: f32) -> (Camera, f32, f32) {
        let fov_y = if fov_y.is_finite() {
            fov_y.clamp(0.01, 3.0)
        } else {
            FRAMING_FOV_Y
        };
        let aspect = if aspect.is_finite() && aspect > 0.0 {
            aspect
        } else {
            1.0
        };
        let usable = bounds.min.is_finite() && bounds.max.is_finite();
        let (center, size) = if usable {
            (bounds.center(), bounds.size().abs())
        } else {
            (Vec3::ZERO, Vec3::ONE)
        };
        // A flat or empty box still needs a size to frame; borrow it from the largest axis.
        let largest = size.max_element();
        let size = if largest > 0.0 {
            size.max(Vec3::splat(largest * 0.05))
        } else {
            Vec3::ONE
        };
        let half = size * 0.5;
        let tan = (fov_y * 0.5).tan();
        // Distance from the box's front face at which its height and its width both fit.
        let front = (half.y / tan).max(half.x / (tan * aspect)) * FRAMING_MARGIN;
        let eye = Vec3::new(center.x, center.y, center.z + half.z + front);
        let distance = eye.z - center.z;
        let radius = half.length();
        let near = (distance - radius * 1.5).max(distance * 0.01);
        let far = distance + radius * 1.5;
        let camera = Camera {
            eye,
            target: center,
            up: Vec3::Y,
            fov_y,
            aspect,
            near,
            far,
        };
        (camera, radius, size.y)
    }

    /// The vertical field of view the projection uses: [`Camera::fov_y`] clamped to 0.01..=3.1
    /// radians, [`FRAMING_FOV_Y`] when it is not finite.
    pub(super) fn fov_y_sanitized(&self) -> f32 {
        if self.fov_y.is_finite() {
            self.fov_y.clamp(0.01, 3.1)
        } else {
            FRAMING_FOV_Y
        }
    }

    /// The world-to-view matrix.
    pub fn view(&self) -> Mat4 {
        let (forward, up) = self.basis_forward_up();
        glam::camera::rh::view::look_to_mat4(self.eye, forward, up)
    }

    /// The view-to-clip matrix (OpenGL depth range -1..1).
    pub fn projection(&self) -> Mat4 {
        let fov = self.fov_y_sanitized();
        let aspect = if self.aspect.is_finite() && self.aspect > 0.0 {
            self.aspect
        } else {
            1.0
        };
        let near = if self.near.is_finite() && self.near > 0.0 {
            self.near
        } else {
            0.01
        };
        let far = if self.far.is_finite() && self.far > near {
            self.far
        } else {
            near * 1000.0
        };
        glam::camera::rh::proj::opengl::perspective(fov, aspect, near, far)
    }

    /// The world-to-clip matrix, `projection * view`.
    pub fn view_proj(&self) -> Mat4 {
        self.projection() * self.view()
    }

    /// Camera right, up and forward unit vectors in world space (forward points at the target).
    pub fn basis(&self) -> (Vec3, Vec3, Vec3) {
        let (forward, up) = self.basis_forward_up();
        let right = forward.cross(up).normalize();
        (right, right.cross(forward), forward)
    }

    /// The normalised view direction and an up vector that is not parallel to it, with
    /// fallbacks for degenerate cameras (eye on the target, up along the view).
    fn basis_forward_up(&self) -> (Vec3, Vec3) {
        let forward = (self.target - self.eye)
            .try_normalize()
            .unwrap_or(Vec3::NEG_Z);
        let up = self.up.try_normalize().unwrap_or(Vec3::Y);
        let up = if forward.cross(up).length_squared() > 1e-8 {
            up
        } else if forward.cross(Vec3::Y).length_squared() > 1e-8 {
            Vec3::Y
        } else {
            Vec3::Z
        };
        (forward, up)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head() -> Aabb {
        Aabb {
            min: Vec3::new(-0.08, 1.45, -0.1),
            max: Vec3::new(0.08, 1.70, 0.11),
        }
    }

    #[test]
    fn framing_looks_down_negative_z_at_the_centre() {
        let c = Camera::framing(head(), 16.0 / 9.0);
        assert!(c.eye.z > head().max.z);
        assert!((c.eye.x - 0.0).abs() < 1e-6 && (c.eye.y - head().center().y).abs() < 1e-6);
        let (_, _, forward) = c.basis();
        assert!(forward.abs_diff_eq(Vec3::NEG_Z, 1e-6));
        assert!(c.near > 0.0 && c.far > c.near);
    }

    #[test]
    fn framed_box_fits_with_a_margin() {
        for aspect in [0.5, 1.0, 16.0 / 9.0] {
            let b = head();
            let c = Camera::framing(b, aspect);
            let vp = c.view_proj();
            let mut largest: f32 = 0.0;
            for p in b.corners() {
                let ndc = vp.project_point3(p);
                assert!(
                    ndc.z > -1.0 && ndc.z < 1.0,
                    "corner clipped by depth: {ndc}"
                );
                largest = largest.max(ndc.x.abs()).max(ndc.y.abs());
            }
            assert!(largest < 1.0, "box overflows the view: {largest}");
            assert!(largest > 0.75, "box is framed too small: {largest}");
        }
    }

    #[test]
    fn degenerate_input_still_gives_a_finite_camera() {
        let nan = Aabb {
            min: Vec3::NAN,
            max: Vec3::NAN,
        };
        let point = Aabb {
            min: Vec3::ONE,
            max: Vec3::ONE,
        };
        for (b, aspect) in [(nan, f32::NAN), (point, 0.0), (head(), -1.0)] {
            let c = Camera::framing(b, aspect);
            assert!(c.view_proj().is_finite(), "{c:?}");
        }
        let mut c = Camera::framing(head(), 1.0);
        c.target = c.eye;
        c.up = Vec3::ZERO;
        c.near = -1.0;
        assert!(c.view_proj().is_finite());
    }

    /// The largest |x| and |y| of the head box's corners in normalised device coordinates,
    /// and where its centre lands.
    fn projected(c: &Camera, b: Aabb) -> (f32, f32, Vec3) {
        let vp = c.view_proj();
        let (mut x, mut y) = (0.0f32, 0.0f32);
        for p in b.corners() {
            let ndc = vp.project_point3(p);
            assert!(
                ndc.z > -1.0 && ndc.z < 1.0,
                "corner clipped by depth: {ndc}"
            );
            x = x.max(ndc.x.abs());
            y = y.max(ndc.y.abs());
        }
        (x, y, vp.project_point3(b.center()))
    }

    #[test]
    fn default_settings_frame_exactly_like_framing() {
        let c = Camera::framed(head(), 1.5, &CameraConfig::default());
        assert_eq!(c, Camera::framing(head(), 1.5));
    }

    #[test]
    fn zoom_scales_the_head_on_screen() {
        // Zoom moves the camera closer: the plane through the head's centre scales exactly.
        let b = head();
        let top = Vec3::new(b.center().x, b.max.y, b.center().z);
        let base = Camera::framed(b, 1.0, &CameraConfig::default());
        let y1 = base.view_proj().project_point3(top).y;
        let (_, whole1, _) = projected(&base, b);
        for zoom in [0.5, 2.0] {
            let s = CameraConfig {
                zoom,
                ..CameraConfig::default()
            };
            let c = Camera::framed(b, 1.0, &s);
            let y = c.view_proj().project_point3(top).y;
            assert!((y / y1 - zoom).abs() < 1e-3, "zoom {zoom}: {y} vs {y1}");
            let (_, whole, centre) = projected(&c, b);
            assert_eq!(whole > whole1, zoom > 1.0);
            assert!(centre.x.abs() < 1e-4 && centre.y.abs() < 1e-4, "{centre}");
        }
    }

    #[test]
    fn offset_moves_the_head_down_the_picture() {
        let s = CameraConfig {
            offset_y: 0.25,
            ..CameraConfig::default()
        };
        let c = Camera::framed(head(), 1.0, &s);
        let (_, _, centre) = projected(&c, head());
        assert!(
            centre.y < -0.2,
            "a raised camera shows the head lower: {centre}"
        );
        assert!(centre.x.abs() < 1e-4);
        let (_, _, forward) = c.basis();
        assert!(
            forward.abs_diff_eq(Vec3::NEG_Z, 1e-5),
            "still level: {forward}"
        );
        let down = Camera::framed(
            head(),
            1.0,
            &CameraConfig {
                offset_y: -0.25,
                ..CameraConfig::default()
            },
        );
        assert!(projected(&down, head()).2.y > 0.2);
    }

    #[test]
    fn orbit_circles_the_head_and_keeps_it_centred() {
        let base = Camera::framing(head(), 1.0);
        let distance = (base.eye - base.target).length();
        let yawed = Camera::framed(
            head(),
            1.0,
            &CameraConfig {
                orbit_yaw: 30.0,
                ..CameraConfig::default()
            },
        );
        assert!(
            yawed.eye.x > 0.0,
            "yaw moves towards the avatar's left: {}",
            yawed.eye
        );
        assert!(((yawed.eye - yawed.target).length() - distance).abs() < 1e-4);
        let angle = (yawed.eye - yawed.target).angle_between(base.eye - base.target);
        assert!((angle.to_degrees() - 30.0).abs() < 1e-3);
        let pitched = Camera::framed(
            head(),
            1.0,
            &CameraConfig {
                orbit_pitch: 20.0,
                ..CameraConfig::default()
            },
        );
        assert!(pitched.eye.y > base.eye.y, "pitch raises the camera");
        let (_, _, forward) = pitched.basis();
        assert!(forward.y < 0.0, "and looks down: {forward}");
        for c in [yawed, pitched] {
            let (_, _, centre) = projected(&c, head());
            assert!(centre.x.abs() < 1e-4 && centre.y.abs() < 1e-4, "{centre}");
        }
    }

    #[test]
    fn fov_changes_the_lens_but_keeps_the_head_size() {
        let narrow = Camera::framing(head(), 1.0);
        let wide = Camera::framed(
            head(),
            1.0,
            &CameraConfig {
                fov: 60.0,
                ..CameraConfig::default()
            },
        );
        assert!((wide.fov_y.to_degrees() - 60.0).abs() < 1e-3);
        assert!(wide.eye.z < narrow.eye.z, "a wider lens comes closer");
        assert_ne!(wide.projection(), narrow.projection());
        let (_, y_wide, _) = projected(&wide, head());
        let (_, y_narrow, _) = projected(&narrow, head());
        assert!(
            y_wide < 1.0 && (y_wide - y_narrow).abs() < 0.15,
            "{y_wide} vs {y_narrow}"
        );
    }

    #[test]
    fn wild_settings_are_clamped_to_a_finite_camera() {
        let wild = CameraConfig {
            zoom: f32::NAN,
            offset_y: 1e9,
            orbit_yaw: 725.0,
            orbit_pitch: -400.0,
            fov: 0.0,
        };
        let c = Camera::framed(head(), 1.0, &wild);
        assert!(c.view_proj().is_finite(), "{c:?}");
        assert!(c.near > 0.0 && c.far > c.near);
        let clamped = wild.clamped();
        assert_eq!(clamped.zoom, 1.0);
        assert!((clamped.orbit_yaw - 5.0).abs() < 1e-3);
        assert_eq!(clamped.orbit_pitch, -CameraConfig::PITCH_LIMIT);
    }

    /// A grown-up humanoid's bust: head bone at 1.40 m, neck 1.33, chest 1.12, the skull's
    /// top at 1.60, 18 cm wide.
    fn bust() -> crate::avatar::Bust {
        crate::avatar::Bust {
            head: Vec3::new(0.0, 1.40, 0.0),
            neck: Vec3::new(0.0, 1.33, -0.01),
            chest: Vec3::new(0.0, 1.12, 0.0),
            head_top: 1.60,
            head_half_width: 0.09,
            head_depth: (-0.11, 0.11),
        }
    }

    #[test]
    fn a_bust_is_framed_from_the_chest_up_with_the_face_high_and_large() {
        let b = bust();
        for aspect in [16.0 / 9.0, 1.0] {
            let c = Camera::framed(b.region(), aspect, &CameraConfig::default());
            assert_eq!(c.fov_y, FRAMING_FOV_Y);
            let (_, _, forward) = c.basis();
            assert!(forward.abs_diff_eq(Vec3::NEG_Z, 1e-6), "facing the avatar");
            assert!(c.eye.z > b.head_depth.1 && (c.eye.x - b.head.x).abs() < 1e-6);
            let vp = c.view_proj();
            let y = |p: Vec3| vp.project_point3(p).y;
            let top = y(Vec3::new(0.0, b.head_top, 0.0));
            // The whole head shows, with a little room above it.
            assert!((0.7..0.95).contains(&top), "top of the head at {top}");
            // The head bone (the base of the skull) is in the upper half, the eyes a little
            // above it in the upper third of the picture.
            assert!(y(b.head) > 0.0, "head bone at {}", y(b.head));
            let eyes = y(b.head + Vec3::Y * 0.07);
            assert!(eyes > 1.0 / 3.0 - 0.05, "eyes at {eyes}");
            // The chest is at the bottom edge: the picture is cut there.
            let chest = y(b.chest);
            assert!((-1.0..-0.75).contains(&chest), "chest at {chest}");
            // The face fills a good part of the width: a fifth on a wide stage, more on a square.
            let left = vp.project_point3(b.head - Vec3::X * b.head_half_width).x;
            let right = vp.project_point3(b.head + Vec3::X * b.head_half_width).x;
            let share = (right - left) / 2.0;
            assert!(share > 0.15 * (16.0 / 9.0) / aspect, "face width {share}");
            assert!(share < 0.5, "face width {share}");
        }
    }

    #[test]
    fn the_saved_camera_applies_on_top_of_the_bust() {
        let b = bust().region();
        let base = Camera::framed(b, 1.0, &CameraConfig::default());
        let zoomed = Camera::framed(
            b,
            1.0,
            &CameraConfig {
                zoom: 2.0,
                ..CameraConfig::default()
            },
        );
        assert!((zoomed.target - base.target).length() < 1e-6);
        let ratio = (base.eye - base.target).length() / (zoomed.eye - zoomed.target).length();
        assert!((ratio - 2.0).abs() < 1e-4, "{ratio}");
    }

    #[test]
    fn reaching_widens_the_clip_planes_and_keeps_the_framing() {
        // A head whose expression pushes the face far towards the camera and the back far away.
        let reach = Aabb {
            min: head().min - Vec3::new(0.0, 0.0, 0.5),
            max: head().max + Vec3::new(0.0, 0.0, 0.3),
        };
        let framed = Camera::framing(head(), 1.0);
        let corner_depths = |c: &Camera| {
            let vp = c.view_proj();
            (0..8)
                .map(|i| {
                    let p = Vec3::select(
                        glam::BVec3::new(i & 1 != 0, i & 2 != 0, i & 4 != 0),
                        reach.max,
                        reach.min,
                    );
                    vp.project_point3(p).z
                })
                .collect::<Vec<_>>()
        };
        assert!(
            corner_depths(&framed).iter().any(|z| z.abs() > 1.0),
            "the example must be clipped by the rest framing"
        );
        let reaching = framed.reaching(reach);
        for z in corner_depths(&reaching) {
            assert!(z > -1.0 && z < 1.0, "corner clipped: {z}");
        }
        assert_eq!(
            (reaching.eye, reaching.target, reaching.fov_y),
            (framed.eye, framed.target, framed.fov_y)
        );
        assert!(reaching.near <= framed.near && reaching.far >= framed.far);
        assert!(reaching.near >= (framed.eye - framed.target).length() * 0.01 * 0.999);
        // A box inside the framed one changes nothing, and neither do non-finite bounds.
        assert_eq!(framed.reaching(head()), framed);
        let nan = Aabb {
            min: Vec3::NAN,
            max: Vec3::NAN,
        };
        assert_eq!(framed.reaching(nan), framed);
    }
}

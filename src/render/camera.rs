//! The camera: a perspective view that frames the avatar's head from the front.

use glam::{Mat4, Vec3};

use crate::avatar::Aabb;

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
        let tan = (FRAMING_FOV_Y * 0.5).tan();
        // Distance from the box's front face at which its height and its width both fit.
        let front = (half.y / tan).max(half.x / (tan * aspect)) * FRAMING_MARGIN;
        let eye = Vec3::new(center.x, center.y, center.z + half.z + front);
        let distance = eye.z - center.z;
        let radius = half.length();
        let near = (distance - radius * 1.5).max(distance * 0.01);
        let far = distance + radius * 1.5;
        Camera {
            eye,
            target: center,
            up: Vec3::Y,
            fov_y: FRAMING_FOV_Y,
            aspect,
            near,
            far,
        }
    }

    /// The world-to-view matrix.
    pub fn view(&self) -> Mat4 {
        let (forward, up) = self.basis_forward_up();
        glam::camera::rh::view::look_to_mat4(self.eye, forward, up)
    }

    /// The view-to-clip matrix (OpenGL depth range -1..1).
    pub fn projection(&self) -> Mat4 {
        let fov = if self.fov_y.is_finite() {
            self.fov_y.clamp(0.01, 3.1)
        } else {
            FRAMING_FOV_Y
        };
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
            for i in 0..8 {
                let p = Vec3::new(
                    if i & 1 == 0 { b.min.x } else { b.max.x },
                    if i & 2 == 0 { b.min.y } else { b.max.y },
                    if i & 4 == 0 { b.min.z } else { b.max.z },
                );
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
}

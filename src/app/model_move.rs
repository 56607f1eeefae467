//! Where plugins put the avatar on the stage (VTube Studio's `MoveModelRequest`): its middle
//! moved across the window, turned and sized, eased from where it stands to where it is sent
//! over the time given, and the camera that shows it there.
//!
//! The avatar is a 3D head, not a flat picture, so the camera does the moving: a larger size
//! narrows the lens (a smaller one steps back), a turn rolls the camera about its line of
//! sight, and a position turns the camera away from the head so that the head appears at that
//! place in the window while it is still seen straight on.

use std::time::{Duration, Instant};

use glam::Quat;

use crate::api::ModelPosition;
use crate::render::Camera;

/// How much larger each step of `size` makes the avatar: 100 is 8 times the framing, -100 an
/// eighth, every 33⅓ doubles it.
fn scale(size: f32) -> f32 {
    2f32.powf(size * 3.0 / 100.0)
}

/// `p` with every value finite (a value that is not takes its rest value).
fn sanitised(p: ModelPosition) -> ModelPosition {
    let f = |v: f32| if v.is_finite() { v } else { 0.0 };
    ModelPosition {
        x: f(p.x),
        y: f(p.y),
        rotation: f(p.rotation),
        size: f(p.size).clamp(-100.0, 100.0),
    }
}

/// `camera` (the framing of the avatar at rest) moved so that the avatar stands at `p`: its
/// middle (the point the camera looks at) at `p.x`, `p.y` in the window (-1 to 1 edge to edge),
/// turned `p.rotation` degrees clockwise about it, `scale(p.size)` times as large. The rest
/// position gives `camera` itself.
pub fn place(camera: Camera, p: ModelPosition) -> Camera {
    let p = sanitised(p);
    if p == ModelPosition::default() {
        return camera;
    }
    let mut c = camera;
    let (_, up, forward) = c.basis();
    let distance = (c.target - c.eye).length();
    // Size: a narrower lens magnifies without changing the perspective; to shrink, the
    // camera steps back (a wider lens would bend what is off the middle).
    let s = scale(p.size);
    let half = if c.fov_y.is_finite() {
        c.fov_y.clamp(0.01, 3.1) * 0.5
    } else {
        crate::render::FRAMING_FOV_Y * 0.5
    };
    if s >= 1.0 {
        c.fov_y = 2.0 * (half.tan() / s).atan();
    } else {
        let back = distance * (1.0 / s - 1.0);
        c.eye -= forward * back;
        c.near += back;
        c.far += back;
    }
    // Turn: the camera rolls the other way about its line of sight, so the picture turns
    // clockwise about the avatar's middle.
    let roll = Quat::from_axis_angle(forward, -p.rotation.to_radians());
    let up = roll * up;
    let right = forward.cross(up).normalize();
    // Position: the camera turns (about its own place) so that its line to the avatar's
    // middle goes through (x, y) of the window.
    let tan_y = (c.fov_y.clamp(0.01, 3.1) * 0.5).tan();
    let aspect = if c.aspect.is_finite() && c.aspect > 0.0 {
        c.aspect
    } else {
        1.0
    };
    let towards = (right * (p.x * tan_y * aspect) + up * (p.y * tan_y) + forward).normalize();
    let turn = Quat::from_rotation_arc(towards, forward);
    let ahead = turn * forward;
    let reach = (c.target - c.eye).length();
    c.target = c.eye + ahead * reach;
    c.up = turn * up;
    // The avatar now lies off the line of sight: nearer along it by the angle's cosine.
    let cos = towards.dot(forward).clamp(0.01, 1.0);
    c.near = (c.near * cos).max(reach * 0.001);
    c
}

/// The ease of a move: slow out, slow in (smoothstep), `t` from 0 to 1.
fn ease(t: f32) -> f32 {
    let t = t.clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

/// The avatar's place on the stage and the move under way.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelMover {
    from: ModelPosition,
    to: ModelPosition,
    start: Instant,
    over: Duration,
}

impl ModelMover {
    /// At rest: the avatar where facewire frames it.
    pub fn new(now: Instant) -> ModelMover {
        ModelMover {
            from: ModelPosition::default(),
            to: ModelPosition::default(),
            start: now,
            over: Duration::ZERO,
        }
    }

    /// Moves from where the avatar stands at `now` to `to` over `over` (at once when zero); a
    /// move under way is replaced, as in VTube Studio. Turns go the short way round.
    pub fn move_to(&mut self, to: ModelPosition, over: Duration, now: Instant) {
        let from = self.at(now);
        let mut to = sanitised(to);
        // The turn from `from` to `to` of at most half a circle either way.
        let turn = (to.rotation - from.rotation + 180.0).rem_euclid(360.0) - 180.0;
        to.rotation = from.rotation + turn;
        *self = ModelMover {
            from,
            to,
            start: now,
            over,
        };
    }

    /// Where the avatar stands at `now`.
    pub fn at(&self, now: Instant) -> ModelPosition {
        let t = if self.over.is_zero() {
            1.0
        } else {
            now.saturating_duration_since(self.start).as_secs_f32() / self.over.as_secs_f32()
        };
        let k = ease(t);
        let mix = |a: f32, b: f32| a + (b - a) * k;
        ModelPosition {
            x: mix(self.from.x, self.to.x),
            y: mix(self.from.y, self.to.y),
            rotation: mix(self.from.rotation, self.to.rotation),
            size: mix(self.from.size, self.to.size),
        }
    }

    /// Whether a move is under way at `now` (the picture changes from frame to frame).
    pub fn moving(&self, now: Instant) -> bool {
        self.from != self.to && now < self.start + self.over
    }

    /// `camera` moved to show the avatar where it stands at `now`.
    pub fn camera(&self, camera: Camera, now: Instant) -> Camera {
        place(camera, self.at(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::Aabb;
    use glam::Vec3;

    fn head() -> Aabb {
        Aabb {
            min: Vec3::new(-0.08, 1.45, -0.1),
            max: Vec3::new(0.08, 1.70, 0.11),
        }
    }

    /// Where `point` lands in the window (normalised device coordinates) through `c`.
    fn seen(c: &Camera, point: Vec3) -> (f32, f32) {
        let p = c.view_proj().project_point3(point);
        (p.x, p.y)
    }

    fn at(x: f32, y: f32, rotation: f32, size: f32) -> ModelPosition {
        ModelPosition {
            x,
            y,
            rotation,
            size,
        }
    }

    #[test]
    fn the_rest_position_is_the_framing_itself() {
        let c = Camera::framing(head(), 16.0 / 9.0);
        assert_eq!(place(c, ModelPosition::default()), c);
    }

    #[test]
    fn the_avatar_s_middle_goes_where_it_is_sent() {
        let c = Camera::framing(head(), 16.0 / 9.0);
        let middle = head().center();
        for (x, y) in [(0.5, -0.25), (-0.9, 0.8), (0.0, 1.0), (1.0, -1.0)] {
            for rotation in [0.0, 45.0, 270.0] {
                for size in [-60.0, 0.0, 40.0] {
                    let placed = place(c, at(x, y, rotation, size));
                    let (sx, sy) = seen(&placed, middle);
                    assert!(
                        (sx - x).abs() < 1e-3 && (sy - y).abs() < 1e-3,
                        "({x}, {y}) turned {rotation} at {size}: seen at ({sx}, {sy})"
                    );
                    let v = placed.view_proj().project_point3(middle);
                    assert!(v.z.abs() < 1.0, "the middle is clipped: {v}");
                }
            }
        }
    }

    #[test]
    fn a_turn_is_clockwise_and_a_size_scales() {
        let c = Camera::framing(head(), 1.0);
        let middle = head().center();
        let above = middle + Vec3::Y * 0.1;
        // Turned a quarter clockwise: what was above the middle is to its right.
        let turned = place(c, at(0.0, 0.0, 90.0, 0.0));
        let (x, y) = seen(&turned, above);
        assert!(x > 0.1 && y.abs() < 1e-3, "({x}, {y})");
        let height = |c: &Camera| seen(c, above).1 - seen(c, middle).1;
        let rest = height(&c);
        let doubled = height(&place(c, at(0.0, 0.0, 0.0, 100.0 / 3.0)));
        let halved = height(&place(c, at(0.0, 0.0, 0.0, -100.0 / 3.0)));
        assert!((doubled / rest - 2.0).abs() < 1e-3, "{}", doubled / rest);
        assert!((halved / rest - 0.5).abs() < 0.02, "{}", halved / rest);
    }

    #[test]
    fn moves_ease_over_their_time_and_turn_the_short_way() {
        let t0 = Instant::now();
        let mut m = ModelMover::new(t0);
        assert!(!m.moving(t0));
        m.move_to(at(1.0, 0.0, 350.0, 0.0), Duration::from_secs(1), t0);
        assert!(m.moving(t0));
        let t = |s: f32| t0 + Duration::from_secs_f32(s);
        assert_eq!(m.at(t0).x, 0.0);
        assert!((m.at(t(0.5)).x - 0.5).abs() < 1e-6);
        // Eased: slow at the start.
        assert!(m.at(t(0.1)).x < 0.1);
        // From 0 to 350 degrees is ten degrees anticlockwise.
        assert!((m.at(t(1.0)).rotation + 10.0).abs() < 1e-4);
        assert!(!m.moving(t(1.0)));
        // A new move starts from where the avatar is, not where the last one was going.
        m.move_to(at(0.0, 0.0, 0.0, 0.0), Duration::ZERO, t(0.5));
        assert_eq!(m.at(t(0.5)), ModelPosition::default());
        assert!(!m.moving(t(0.5)));
    }
}

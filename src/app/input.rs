//! The stage's keys and mouse: camera hotkeys, expression keys, the mouse wheel and mouse
//! drags, and the list of hotkeys the README and the panel show.

use winit::event::{ElementState, MouseButton};
use winit::keyboard::{Key, KeyCode, ModifiersState, NamedKey, PhysicalKey};

use crate::config::CameraConfig;
use crate::expressions;
use crate::render;

/// Zoom factor of one key press or one wheel notch.
const ZOOM_STEP: f32 = 1.1;
/// Orbit of one arrow key press, in degrees.
const ORBIT_STEP: f32 = 5.0;
/// Orbit per pixel of a left-drag, in degrees.
const ORBIT_PER_PIXEL: f32 = 0.3;
/// Vertical move of one PageUp/PageDown press, in head heights.
const OFFSET_STEP: f32 = 0.05;
/// Field-of-view change of one `F` press, in degrees.
const FOV_STEP: f32 = 5.0;
/// Pixels of a touchpad scroll that count as one wheel notch.
pub(super) const PIXELS_PER_NOTCH: f64 = 50.0;

/// What a key does on the stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageKey {
    /// The camera changed.
    Camera,
    /// Save the camera into the configuration file.
    Save,
    /// Take the face as it is now as the performer's neutral.
    Neutral,
    /// Show or hide the control panel.
    Panel,
    /// Show or hide the connect card on the stage.
    ConnectCard,
    /// Nothing.
    None,
}

/// The stage's keys, as the README and the panel list them.
pub const STAGE_HOTKEYS: &[(&str, &str)] = &[
    (
        "N",
        "capture the neutral face now (relax, look straight ahead)",
    ),
    ("P", "show or hide the control panel"),
    (
        "C",
        "show or hide the connect card on the stage (while no phone sends)",
    ),
    ("+ / - / mouse wheel", "zoom in and out"),
    ("arrows / left drag", "orbit around the head"),
    (
        "PageUp / PageDown / right drag",
        "move the head down and up in the picture",
    ),
    ("F / Shift+F", "widen and narrow the field of view"),
    ("0", "reset the camera"),
    ("S", "save the camera into the configuration file"),
];

/// Applies a stage hotkey to `camera`: `+`/`-` zoom, arrows orbit, PageUp/PageDown move the
/// camera up and down, `F`/`Shift+F` widen and narrow the field of view, `0` resets, `S` asks
/// for a save; `N` (capture a neutral) and `P` (toggle the panel) are passed on.
pub fn camera_key(camera: &mut CameraConfig, key: &Key, shift: bool) -> StageKey {
    let before = *camera;
    match key {
        Key::Named(NamedKey::ArrowLeft) => camera.orbit_yaw -= ORBIT_STEP,
        Key::Named(NamedKey::ArrowRight) => camera.orbit_yaw += ORBIT_STEP,
        Key::Named(NamedKey::ArrowUp) => camera.orbit_pitch += ORBIT_STEP,
        Key::Named(NamedKey::ArrowDown) => camera.orbit_pitch -= ORBIT_STEP,
        Key::Named(NamedKey::PageUp) => camera.offset_y += OFFSET_STEP,
        Key::Named(NamedKey::PageDown) => camera.offset_y -= OFFSET_STEP,
        Key::Character(c) => match c.as_str() {
            // `=` is `+` without Shift on most layouts.
            "+" | "=" => camera.zoom *= ZOOM_STEP,
            "-" | "_" => camera.zoom /= ZOOM_STEP,
            "0" | ")" => *camera = CameraConfig::default(),
            "f" | "F" if shift => camera.fov -= FOV_STEP,
            "f" | "F" => camera.fov += FOV_STEP,
            "s" | "S" => return StageKey::Save,
            "n" | "N" => return StageKey::Neutral,
            "p" | "P" => return StageKey::Panel,
            "c" | "C" => return StageKey::ConnectCard,
            _ => return StageKey::None,
        },
        _ => return StageKey::None,
    }
    *camera = camera.clamped();
    if *camera == before {
        StageKey::None
    } else {
        StageKey::Camera
    }
}

/// The expression key a physical key is with `modifiers` held: `KeyA` is `A`, `Digit1` is
/// `1`, whatever the keyboard layout prints on it. `None` for keys expressions cannot be bound
/// to (modifiers themselves, `Escape`, ...).
pub fn expression_key(key: PhysicalKey, modifiers: ModifiersState) -> Option<expressions::Key> {
    let PhysicalKey::Code(code) = key else {
        return None;
    };
    // winit's key code names (`KeyA`, `Digit1`, `F1`, `ArrowUp`, `Numpad1`) are among the
    // spellings `Key::parse` accepts.
    let name = expressions::Key::parse(&format!("{code:?}")).ok()?.name;
    Some(expressions::Key {
        name,
        ctrl: modifiers.control_key(),
        shift: modifiers.shift_key(),
        alt: modifiers.alt_key(),
    })
}

/// What a key event on the stage means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyRoute {
    /// The expression bound to this key follows it: down (`true`) or up.
    Expression(expressions::Key, bool),
    /// An auto-repeat of a key held for an expression: nothing happens.
    Swallowed,
    /// Not an expression's key: the stage's own hotkeys apply.
    Stage,
}

/// Routes the stage's key events. The rule: a key (with its modifiers) bound to an expression
/// belongs to the expression, even where it is also a stage hotkey; other keys are the stage's.
/// Auto-repeats never retrigger an expression, and a key comes up as the key that went down,
/// whatever modifiers were let go meanwhile.
#[derive(Debug, Default)]
pub struct ExpressionKeys {
    /// The keys down for an expression, by physical key.
    held: Vec<(KeyCode, expressions::Key)>,
}

impl ExpressionKeys {
    /// Routes one key event; `bound` says whether an expression is bound to a key.
    pub fn route(
        &mut self,
        physical: PhysicalKey,
        state: ElementState,
        repeat: bool,
        modifiers: ModifiersState,
        bound: impl Fn(&expressions::Key) -> bool,
    ) -> KeyRoute {
        let PhysicalKey::Code(code) = physical else {
            return KeyRoute::Stage;
        };
        let held = self.held.iter().position(|(c, _)| *c == code);
        match (state, held) {
            (ElementState::Released, Some(i)) => {
                KeyRoute::Expression(self.held.swap_remove(i).1, false)
            }
            (ElementState::Released, None) => KeyRoute::Stage,
            (ElementState::Pressed, Some(_)) => KeyRoute::Swallowed,
            (ElementState::Pressed, None) if repeat => KeyRoute::Stage,
            (ElementState::Pressed, None) => match expression_key(physical, modifiers) {
                Some(key) if bound(&key) => {
                    self.held.push((code, key));
                    KeyRoute::Expression(key, true)
                }
                _ => KeyRoute::Stage,
            },
        }
    }

    /// Lets go of every key held for an expression (the stage lost the keyboard focus, so their
    /// releases will not arrive).
    pub fn release_all(&mut self) -> Vec<expressions::Key> {
        self.held.drain(..).map(|(_, key)| key).collect()
    }
}

/// Zooms `camera` by `notches` wheel notches (positive zooms in).
pub fn camera_wheel(camera: &mut CameraConfig, notches: f32) {
    if notches.is_finite() {
        camera.zoom *= ZOOM_STEP.powf(notches.clamp(-20.0, 20.0));
        *camera = camera.clamped();
    }
}

/// Applies a mouse drag of `(dx, dy)` pixels in a window `height` pixels high: the left button
/// turns the head as if grabbed (the camera orbits the other way), the right or middle button
/// moves it up and down with the pointer. Returns whether the camera changed.
pub fn camera_drag(
    camera: &mut CameraConfig,
    button: MouseButton,
    (dx, dy): (f64, f64),
    height: u32,
) -> bool {
    let before = *camera;
    match button {
        MouseButton::Left => {
            camera.orbit_yaw -= dx as f32 * ORBIT_PER_PIXEL;
            camera.orbit_pitch += dy as f32 * ORBIT_PER_PIXEL;
        }
        MouseButton::Right | MouseButton::Middle => {
            // The picture shows about FRAMING_MARGIN head heights at zoom 1, so the head
            // follows the pointer.
            let heights = dy as f32 / height.max(1) as f32 * render::FRAMING_MARGIN;
            camera.offset_y += heights / camera.zoom.max(0.01);
        }
        _ => return false,
    }
    *camera = camera.clamped();
    *camera != before
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hotkeys_move_the_camera_and_zero_resets() {
        let mut c = CameraConfig::default();
        let ch = |s: &str| Key::Character(s.into());
        assert_eq!(camera_key(&mut c, &ch("+"), false), StageKey::Camera);
        assert!(c.zoom > 1.0);
        camera_key(&mut c, &Key::Named(NamedKey::ArrowRight), false);
        assert_eq!(c.orbit_yaw, ORBIT_STEP);
        camera_key(&mut c, &Key::Named(NamedKey::ArrowUp), false);
        assert_eq!(c.orbit_pitch, ORBIT_STEP);
        camera_key(&mut c, &Key::Named(NamedKey::PageUp), false);
        assert!(c.offset_y > 0.0);
        camera_key(&mut c, &ch("f"), false);
        assert_eq!(c.fov, 27.0 + FOV_STEP);
        camera_key(&mut c, &ch("F"), true);
        camera_key(&mut c, &ch("F"), true);
        assert_eq!(c.fov, 27.0 - FOV_STEP);
        assert_eq!(camera_key(&mut c, &ch("s"), false), StageKey::Save);
        assert_eq!(camera_key(&mut c, &ch("c"), false), StageKey::ConnectCard);
        assert_eq!(camera_key(&mut c, &ch("q"), false), StageKey::None);
        assert_eq!(camera_key(&mut c, &ch("0"), false), StageKey::Camera);
        assert_eq!(c, CameraConfig::default());
        // Limits hold however often a key repeats.
        for _ in 0..100 {
            camera_key(&mut c, &ch("-"), false);
            camera_key(&mut c, &Key::Named(NamedKey::ArrowDown), false);
        }
        assert_eq!(c.zoom, CameraConfig::ZOOM_RANGE.0);
        assert_eq!(c.orbit_pitch, -CameraConfig::PITCH_LIMIT);
        assert_eq!(camera_key(&mut c, &ch("-"), false), StageKey::None);
    }

    #[test]
    fn physical_keys_spell_expression_keys() {
        let code = |c| PhysicalKey::Code(c);
        let none = ModifiersState::empty();
        let spelled = |c, m| expression_key(code(c), m).map(|k| k.to_string());
        assert_eq!(spelled(KeyCode::F1, none).as_deref(), Some("F1"));
        assert_eq!(spelled(KeyCode::KeyQ, none).as_deref(), Some("Q"));
        assert_eq!(spelled(KeyCode::Digit3, none).as_deref(), Some("3"));
        assert_eq!(spelled(KeyCode::Numpad7, none).as_deref(), Some("Numpad7"));
        assert_eq!(spelled(KeyCode::ArrowUp, none).as_deref(), Some("Up"));
        assert_eq!(
            spelled(KeyCode::PageDown, none).as_deref(),
            Some("PageDown")
        );
        assert_eq!(
            spelled(
                KeyCode::Digit3,
                ModifiersState::CONTROL | ModifiersState::SHIFT
            )
            .as_deref(),
            Some("Ctrl+Shift+3")
        );
        assert_eq!(
            spelled(KeyCode::F2, ModifiersState::ALT).as_deref(),
            Some("Alt+F2")
        );
        assert_eq!(spelled(KeyCode::ShiftLeft, ModifiersState::SHIFT), None);
        assert_eq!(spelled(KeyCode::Escape, none), None);
        // Every key a stage key spells parses back to itself.
        for c in [KeyCode::KeyA, KeyCode::Digit0, KeyCode::F24, KeyCode::Equal] {
            let key = expression_key(code(c), ModifiersState::CONTROL).unwrap();
            assert_eq!(expressions::Key::parse(&key.to_string()), Ok(key));
        }
    }

    #[test]
    fn bound_keys_go_to_expressions_once_and_others_to_the_stage() {
        use ElementState::{Pressed, Released};
        let f1 = PhysicalKey::Code(KeyCode::F1);
        let p = PhysicalKey::Code(KeyCode::KeyP);
        let none = ModifiersState::empty();
        let ctrl = ModifiersState::CONTROL;
        // F1 and Ctrl+P are bound; plain P stays the panel's key.
        let bound = |k: &expressions::Key| k.to_string() == "F1" || k.to_string() == "Ctrl+P";
        let mut keys = ExpressionKeys::default();
        let key = |s: &str| expressions::Key::parse(s).unwrap();
        assert_eq!(
            keys.route(f1, Pressed, false, none, bound),
            KeyRoute::Expression(key("F1"), true)
        );
        // Auto-repeats are swallowed, not sent again and not the stage's.
        assert_eq!(
            keys.route(f1, Pressed, true, none, bound),
            KeyRoute::Swallowed
        );
        assert_eq!(
            keys.route(f1, Released, false, none, bound),
            KeyRoute::Expression(key("F1"), false)
        );
        assert_eq!(keys.route(p, Pressed, false, none, bound), KeyRoute::Stage);
        assert_eq!(keys.route(p, Pressed, true, none, bound), KeyRoute::Stage);
        assert_eq!(keys.route(p, Released, false, none, bound), KeyRoute::Stage);
        // Ctrl+P is the expression's; it comes up as Ctrl+P though Ctrl was let go first.
        assert_eq!(
            keys.route(p, Pressed, false, ctrl, bound),
            KeyRoute::Expression(key("Ctrl+P"), true)
        );
        assert_eq!(
            keys.route(p, Released, false, none, bound),
            KeyRoute::Expression(key("Ctrl+P"), false)
        );
        // Losing the focus lets go of the keys held.
        keys.route(f1, Pressed, false, none, bound);
        assert_eq!(keys.release_all(), [key("F1")]);
        assert_eq!(
            keys.route(f1, Released, false, none, bound),
            KeyRoute::Stage
        );
    }

    #[test]
    fn mouse_zooms_orbits_and_moves() {
        let mut c = CameraConfig::default();
        camera_wheel(&mut c, 2.0);
        assert!((c.zoom - ZOOM_STEP * ZOOM_STEP).abs() < 1e-5);
        camera_wheel(&mut c, f32::NAN);
        assert!(c.zoom.is_finite());
        assert!(camera_drag(&mut c, MouseButton::Left, (10.0, 0.0), 720));
        assert!(c.orbit_yaw < 0.0, "dragging right turns the head right");
        assert!(camera_drag(&mut c, MouseButton::Right, (0.0, 72.0), 720));
        assert!(c.offset_y > 0.0, "dragging down moves the head down");
        assert!(!camera_drag(&mut c, MouseButton::Back, (5.0, 5.0), 720));
    }
}

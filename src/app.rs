//! The render side of facewire: the scene (avatar, mapping, renderer, camera), the winit
//! application that shows it in the stage window, and the headless loop used by
//! `facewire run --headless`.

mod event;

pub use event::AppEvent;

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use winit::application::ApplicationHandler;
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, ControlFlow};
use winit::keyboard::{Key, ModifiersState, NamedKey};
use winit::window::WindowId;

use crate::arkit::FaceFrame;
use crate::avatar::{Avatar, Pose};
use crate::bridge::FrameReceiver;
use crate::calibrate::Decision;
use crate::config::{CameraConfig, Config};
use crate::mapping::CompiledMapping;
use crate::motion::{Motion, MotionMode, MotionSettings};
use crate::panel::{PanelAction, PanelModel, PanelState, RoutineView, Timings, Topic};
use crate::render::{self, Camera, DrawTarget, MorphPath, RenderError, Renderer};
use crate::telemetry::{DrawStats, InputCounters, RateMeter, Telemetry};

/// The default head, built into the binary so facewire runs from any directory.
pub const DEFAULT_HEAD_GLB: &[u8] = include_bytes!("../models/default_head.glb");

/// Errors of the render side.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// Creating the GL context, shaders or buffers failed.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// Writing the final frame failed.
    #[error(transparent)]
    Image(#[from] crate::image::ImageError),
}

/// Errors saving the stage's camera into the configuration file.
#[derive(Debug, thiserror::Error)]
pub enum CameraSaveError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file with the new camera would not load (it did not before either, or its
    /// `[camera]` keys are written in a way the line-based rewrite does not follow); the file
    /// is left as it was.
    #[error("the rewritten file would not load, so it was left as it was: {0}")]
    Rewrite(String),
    /// The program started without a configuration file and the default one has appeared since;
    /// it is not overwritten.
    #[error("{path} exists but was not loaded at start; not overwriting it (add the [camera] values by hand)")]
    Exists {
        /// The file that would have been written.
        path: String,
    },
}

/// Everything needed to draw the avatar: the model, its compiled mapping, the GL renderer and
/// the camera. Owns the renderer, so it must be dropped while its GL context is current.
pub struct Scene {
    avatar: Avatar,
    mapping: CompiledMapping,
    renderer: Renderer,
    rest: Pose,
    pose: Pose,
    /// Rest-pose bounds, computed once: the camera frames them every frame.
    bounds: crate::avatar::Aabb,
    /// Bounds of every expression the targets can make: the clip planes hold them.
    reach: crate::avatar::Aabb,
    /// The user's framing on top of the automatic one.
    camera: CameraConfig,
}

impl Scene {
    /// Uploads `avatar` to the current GL context.
    pub fn new(
        gl: Rc<glow::Context>,
        avatar: Avatar,
        morph: crate::config::MorphMode,
    ) -> Result<Scene, RenderError> {
        let renderer = Renderer::new(gl, &avatar, morph)?;
        let mapping = CompiledMapping::auto(&avatar);
        let rest = avatar.rest_pose();
        let bounds = avatar.bounds().unwrap_or(crate::avatar::Aabb {
            min: glam::Vec3::splat(-0.5),
            max: glam::Vec3::splat(0.5),
        });
        let reach = avatar.deformation_bounds().unwrap_or(bounds);
        Ok(Scene {
            bounds,
            reach,
            camera: CameraConfig::default(),
            pose: rest.clone(),
            rest,
            mapping,
            renderer,
            avatar,
        })
    }

    /// The morph path the renderer chose.
    pub fn morph_path(&self) -> MorphPath {
        self.renderer.morph_path()
    }

    /// The loaded avatar.
    pub fn avatar(&self) -> &Avatar {
        &self.avatar
    }

    /// The mapping in use.
    pub fn mapping(&self) -> &CompiledMapping {
        &self.mapping
    }

    /// The pose drawn last (or about to be drawn).
    pub fn pose(&self) -> &Pose {
        &self.pose
    }

    /// Sets the pose from a calibrated frame (`None`: the rest pose).
    pub fn set_frame(&mut self, frame: Option<&FaceFrame>) {
        self.pose.clone_from(&self.rest);
        if let Some(frame) = frame {
            self.mapping.apply(frame, &mut self.pose);
        }
    }

    /// Sets the user's framing (zoom, offset, orbit, field of view); out-of-range values are
    /// clamped when drawing.
    pub fn set_camera(&mut self, camera: CameraConfig) {
        self.camera = camera;
    }

    /// The user's framing.
    pub fn camera(&self) -> &CameraConfig {
        &self.camera
    }

    /// Replaces the mapping (for example with one compiled from a mapping file).
    pub fn set_mapping(&mut self, mapping: CompiledMapping) {
        self.mapping = mapping;
    }

    /// Sets the pose directly in avatar space: starts from the rest pose, then `edit` changes
    /// weights or rotations (for tools that drive targets no channel maps to).
    pub fn set_pose(&mut self, edit: impl FnOnce(&mut Pose)) {
        self.pose.clone_from(&self.rest);
        edit(&mut self.pose);
    }

    /// Draws the current pose into the bound framebuffer.
    pub fn draw(&mut self, target: &DrawTarget) {
        let aspect = target.width as f32 / target.height.max(1) as f32;
        let camera = Camera::framed(self.bounds, aspect, &self.camera).reaching(self.reach);
        self.renderer.draw(&self.pose, &camera, target);
    }
}

/// Swaps in a reloaded mapping at a frame boundary: `parsed` is the mapping file as re-read
/// from disk, or why it could not be read. A mapping that fails to parse or to compile against
/// the avatar is reported and the last good one keeps running. Returns what happened, in words
/// (the error verbatim, with its file, line and column, on failure).
pub fn reload_mapping(
    scene: &mut Scene,
    parsed: Result<crate::mapping::MappingFile, String>,
) -> Result<String, String> {
    let compiled = parsed.and_then(|file| {
        CompiledMapping::compile(&file, scene.avatar())
            .map(|m| (m, file.path.clone()))
            .map_err(|e| e.to_string())
    });
    match compiled {
        Ok((mapping, path)) => {
            let targets = mapping.targets.len();
            scene.set_mapping(mapping);
            tracing::info!(mapping = %path, targets, "mapping reloaded");
            Ok(format!("{path}: reloaded, {targets} targets driven"))
        }
        Err(error) => {
            tracing::error!(%error, "mapping reload failed; keeping the last good mapping");
            Err(format!("{error}\n(the last good mapping keeps running)"))
        }
    }
}

/// Percentiles of a sample set, in the samples' unit.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// Spaces frames so that at most `cap` are drawn per second, whatever else paces the loop
/// (vsync or nothing). Frames are due on a fixed grid, `1/cap` apart, so the long-run rate is
/// never above the cap; a frame may start an eighth of a period early, so that a display whose
/// refresh is a hair faster than the cap is not halved by waiting for the next vertical blank.
/// A loop that falls more than a period behind starts a new grid rather than catching up in a
/// burst.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FramePacer {
    period: Option<Duration>,
    next: Option<Instant>,
}

impl FramePacer {
    /// A pacer for at most `cap` frames per second; 0 is unlimited.
    pub fn new(cap: u32) -> FramePacer {
        FramePacer {
            period: (cap > 0).then(|| Duration::from_secs_f64(1.0 / f64::from(cap))),
            next: None,
        }
    }

    /// The time between frames at the cap (`None`: unlimited).
    pub fn period(&self) -> Option<Duration> {
        self.period
    }

    /// Whether a frame may start at `now`; when it may, the frame is counted.
    pub fn try_frame(&mut self, now: Instant) -> bool {
        let Some(period) = self.period else {
            return true;
        };
        match self.next {
            Some(next) if now + period / 8 < next => false,
            Some(next) => {
                self.next = Some(if now >= next + period {
                    now + period
                } else {
                    next + period
                });
                true
            }
            None => {
                self.next = Some(now + period);
                true
            }
        }
    }

    /// When the next frame may start (`None`: at any time).
    pub fn next_due(&self) -> Option<Instant> {
        let (period, next) = (self.period?, self.next?);
        Some(next.checked_sub(period / 8).unwrap_or(next))
    }
}

/// The cap the stage's pacer needs: `fps_cap`, or 0 when vsync already holds the display
/// (`refresh_mhz`, in millihertz, when known) at or below it, so the two never fight.
pub fn effective_cap(fps_cap: u32, vsync: bool, refresh_mhz: Option<u32>) -> u32 {
    match refresh_mhz {
        Some(mhz)
            if vsync
                && fps_cap > 0
                && mhz > 0
                && f64::from(mhz) / 1000.0 <= f64::from(fps_cap) + 0.5 =>
        {
            0
        }
        _ => fps_cap,
    }
}

/// Whether to draw: always when rendering continuously; with `render_on_change`, only when a
/// new frame arrived or something else changed (camera, size, prompt, background, mapping).
pub fn wants_redraw(render_on_change: bool, new_frame: bool, changed: bool) -> bool {
    !render_on_change || new_frame || changed
}

/// What a headless run reports on exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct HeadlessReport {
    /// Frames rendered.
    pub frames_drawn: u64,
    /// Frames the ingest side committed.
    pub frames_received: u64,
    /// Frames dropped because the hand-off queue was full.
    pub frames_dropped: u64,
    /// Datagrams that were not valid OSC.
    pub malformed: u64,
    /// Age of the newest sample when a frame using it was drawn, in microseconds.
    pub sample_age_us: AgeStats,
    /// The tracking state at exit and how often it changed.
    pub tracking: TrackingSummary,
}

/// The tracking state at the end of a run and how many changes led there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct TrackingSummary {
    /// The state at exit.
    pub state: crate::calibrate::TrackingState,
    /// State changes during the run.
    pub changes: u64,
}

impl Default for TrackingSummary {
    fn default() -> Self {
        TrackingSummary {
            state: crate::calibrate::TrackingState::Neutral,
            changes: 0,
        }
    }
}

/// Median and 99th percentile of sample ages, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct AgeStats {
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
}

/// How a headless run draws: its frame rate and background.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadlessPace {
    /// Frames per second.
    pub fps: u32,
    /// Background colour (straight RGBA).
    pub background: [f32; 4],
    /// Whether the output keeps alpha (premultiplied).
    pub premultiplied: bool,
    /// Draw only the first frame and then when a new frame arrived or `before_draw` reported a
    /// change (`window.render_on_change`).
    pub render_on_change: bool,
    /// How frames are blended at draw time (`window.motion`).
    pub motion: crate::motion::MotionMode,
}

/// Renders offscreen at `pace.fps` until `until` returns true, calling `before_draw` (for
/// reloads at a frame boundary; it returns whether it changed anything) and taking the newest
/// frame from `frames` before each draw. With `pace.render_on_change`, a tick with neither a new
/// frame nor a change draws nothing. Returns the last image, the number of frames drawn and the
/// sample ages (microseconds) of the frames that used a new sample.
pub fn run_headless(
    scene: &mut Scene,
    ctx: &render::headless::HeadlessContext,
    frames: &mut FrameReceiver,
    pace: &HeadlessPace,
    mut before_draw: impl FnMut(&mut Scene) -> bool,
    mut until: impl FnMut() -> bool,
) -> (crate::image::RgbaImage, u64, Vec<u64>) {
    let period = Duration::from_secs_f64(1.0 / pace.fps.max(1) as f64);
    let (width, height) = ctx.size();
    let target = DrawTarget {
        width,
        height,
        clear_color: pace.background,
        alpha: pace.premultiplied,
    };
    let mut motion = Motion::new(MotionSettings {
        mode: pace.motion,
        ..MotionSettings::default()
    });
    let mut ages = Vec::new();
    let mut drawn = 0u64;
    let mut next = Instant::now();
    let mut first = true;
    loop {
        let new_frame = frames.take_each(|f| motion.push(f));
        if let Some(frame) = new_frame {
            ages.push(frame.received.elapsed().as_micros() as u64);
        }
        let now = Instant::now();
        let moving = motion.settles_at().is_some_and(|at| now <= at);
        let changed = before_draw(scene) || first || moving;
        first = false;
        if wants_redraw(pace.render_on_change, new_frame.is_some(), changed) {
            scene.set_frame(motion.sample(now).as_ref());
            ctx.bind();
            scene.draw(&target);
            ctx.finish();
            drawn += 1;
        }
        if until() {
            break;
        }
        next += period;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now;
        }
    }
    (ctx.read_rgba(), drawn, ages)
}

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
const PIXELS_PER_NOTCH: f64 = 50.0;

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

/// A camera value as written in the file: three decimals at most, always a TOML float.
fn toml_float(v: f32) -> String {
    let rounded = (f64::from(v) * 1000.0).round() / 1000.0 + 0.0;
    let text = format!("{rounded}");
    if text.contains(['.', 'e', 'E']) {
        text
    } else {
        format!("{text}.0")
    }
}

/// Rewrites the `[camera]` table of a configuration file's `text` to hold `camera`, changing
/// only the values of its keys (indentation and end-of-line comments stay), adding keys that
/// are missing at the end of the table, or appending the table when there is none. Every other
/// line is kept byte for byte.
pub fn rewrite_camera_table(text: &str, camera: &CameraConfig) -> String {
    let values = [
        ("zoom", camera.zoom),
        ("offset_y", camera.offset_y),
        ("orbit_yaw", camera.orbit_yaw),
        ("orbit_pitch", camera.orbit_pitch),
        ("fov", camera.fov),
    ];
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut written = [false; 5];
    let mut out = String::with_capacity(text.len() + 128);
    let mut in_camera = false;
    let mut seen_camera = false;
    // Where the camera table's last key line ends in `out` (or its header), for missing keys.
    let mut insert_at: Option<usize> = None;
    let flush_missing = |out: &mut String, at: Option<usize>, written: &mut [bool; 5]| {
        let Some(at) = at else { return };
        let mut add = String::new();
        for (i, (key, value)) in values.iter().enumerate() {
            if !written[i] {
                add.push_str(&format!("{key} = {}{newline}", toml_float(*value)));
                written[i] = true;
            }
        }
        out.insert_str(at, &add);
    };
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with('[') {
            if in_camera {
                flush_missing(&mut out, insert_at, &mut written);
            }
            let name = trimmed
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or("")
                .trim();
            in_camera = !trimmed.starts_with("[[") && name == "camera";
            out.push_str(line);
            if in_camera {
                seen_camera = true;
                if !line.ends_with('\n') {
                    out.push_str(newline);
                }
                insert_at = Some(out.len());
            }
            continue;
        }
        if in_camera {
            let key_end = trimmed
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(trimmed.len());
            let (key, rest) = trimmed.split_at(key_end);
            let slot = values.iter().position(|(k, _)| *k == key);
            if let (Some(i), Some(value_text)) = (slot, rest.trim_start().strip_prefix('=')) {
                let indent = &line[..line.len() - trimmed.len()];
                let body = value_text.trim_end_matches(['\n', '\r']);
                let comment = body.find('#').map(|at| body[at..].trim_end());
                let ending = &line[line.trim_end_matches(['\n', '\r']).len()..];
                out.push_str(indent);
                out.push_str(&format!("{key} = {}", toml_float(values[i].1)));
                if let Some(comment) = comment {
                    out.push(' ');
                    out.push_str(comment);
                }
                out.push_str(if ending.is_empty() { newline } else { ending });
                written[i] = true;
                insert_at = Some(out.len());
                continue;
            }
        }
        out.push_str(line);
    }
    if in_camera {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push_str(newline);
            insert_at = insert_at.map(|at| at.min(out.len()));
        }
        flush_missing(&mut out, insert_at, &mut written);
    }
    if !seen_camera {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push_str(newline);
        }
        if !out.is_empty() {
            out.push_str(newline);
        }
        out.push_str("[camera]");
        out.push_str(newline);
        let at = out.len();
        flush_missing(&mut out, Some(at), &mut written);
    }
    out
}

/// Saves `camera` into the configuration file the program started with (`started_with`), or,
/// when it started without one, into [`crate::config::DEFAULT_PATH`] if that does not exist.
/// Only the `[camera]` values change; the result is checked to load before it replaces the
/// file, atomically. Returns the file written.
pub fn save_camera(
    started_with: Option<&Path>,
    camera: &CameraConfig,
) -> Result<PathBuf, CameraSaveError> {
    let camera = camera.clamped();
    let (path, text) = match started_with {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| CameraSaveError::Io {
                path: path.display().to_string(),
                source,
            })?;
            (path.to_path_buf(), text)
        }
        None => {
            let path = PathBuf::from(crate::config::DEFAULT_PATH);
            if path.exists() {
                return Err(CameraSaveError::Exists {
                    path: path.display().to_string(),
                });
            }
            let header = "# facewire configuration: only the stage camera, saved with S on the \
                          stage.\n# Every other setting keeps its default (see the README).\n";
            (path, header.to_string())
        }
    };
    let new_text = rewrite_camera_table(&text, &camera);
    let label = path.display().to_string();
    match Config::parse(&new_text, &label) {
        Ok(parsed) if same_camera(&parsed.camera, &camera) => {}
        Ok(_) => {
            return Err(CameraSaveError::Rewrite(
                "the [camera] values did not take; are they written as dotted keys?".into(),
            ))
        }
        Err(error) => return Err(CameraSaveError::Rewrite(error.to_string())),
    }
    crate::fsutil::write_atomic(&path, new_text.as_bytes()).map_err(|source| {
        CameraSaveError::Io {
            path: label,
            source,
        }
    })?;
    Ok(path)
}

/// Whether two cameras agree to the three decimals the file keeps.
fn same_camera(a: &CameraConfig, b: &CameraConfig) -> bool {
    let (a, b) = (
        [a.zoom, a.offset_y, a.orbit_yaw, a.orbit_pitch, a.fov],
        [b.zoom, b.offset_y, b.orbit_yaw, b.orbit_pitch, b.fov],
    );
    a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-3)
}

/// Options of the stage window.
#[derive(Debug, Clone)]
pub struct StageOptions {
    /// The configuration (window, render and camera sections).
    pub config: Config,
    /// The configuration file the program started with, where `S` saves the camera (`None`:
    /// it started without one).
    pub config_path: Option<PathBuf>,
    /// Close the window after this long (demos and tests).
    pub exit_after: Option<Duration>,
    /// The mapping file the panel's "Reload mapping" reads (`None`: the built-in mapping).
    pub mapping_path: Option<PathBuf>,
    /// On exit, write the last frames of the stage and the panel here as `stage.png` and
    /// `panel.png` (documentation and tests).
    pub screenshots: Option<PathBuf>,
}

/// What the control panel drives: implemented by the program that owns the input (network
/// listeners or a replay) and the performer profiles.
pub trait Controls {
    /// The input's running totals (the hand-off's drops are added by the stage).
    fn counters(&self) -> InputCounters;
    /// What the input is, in words (addresses listened on, or the recording replayed).
    fn input_label(&self) -> String;
    /// Whether the calibration routine can run now (a live input, no routine running).
    fn can_calibrate(&self) -> bool;
    /// The performer profiles found.
    fn profiles(&self) -> Vec<String>;
    /// The profile in use.
    fn profile(&self) -> Option<String>;
    /// Takes the face as it is now as the neutral; the outcome arrives as
    /// [`AppEvent::Message`].
    fn capture_neutral(&mut self);
    /// Uses the profile `name` (`None`: no profile). Returns a confirmation, or the error
    /// verbatim.
    fn choose_profile(&mut self, name: Option<&str>) -> Result<String, String>;
    /// Starts the guided calibration routine; its progress arrives as [`AppEvent::Routine`].
    fn start_calibration(&mut self) -> Result<(), String>;
    /// Answers the routine's review.
    fn review(&mut self, decision: Decision);
    /// The folder holding the configuration.
    fn config_folder(&self) -> PathBuf;
}

/// How often the panel refreshes its meters.
const PANEL_PERIOD: Duration = Duration::from_millis(100);

/// The mouse drag in progress on the stage.
#[derive(Debug, Clone, Copy)]
struct Drag {
    button: MouseButton,
    last: (f64, f64),
}

/// The winit application showing the avatar in the stage window.
pub struct StageApp {
    options: StageOptions,
    avatar: Option<(Avatar, CompiledMapping)>,
    frames: FrameReceiver,
    prompt: Option<crate::hud::PromptCard>,
    prompt_dirty: bool,
    telemetry: Arc<Telemetry>,
    controls: Option<Box<dyn Controls>>,
    /// The panel should be open (it opens once the stage is up).
    panel_wanted: bool,
    panel_state: PanelState,
    /// When the panel refreshes next.
    panel_due: Instant,
    routine: RoutineView,
    stats: DrawStats,
    rates: RateMeter,
    /// Blends the frames received into the frame drawn at the display rate.
    motion: Motion,
    // Field order is drop order: the GL objects go before the window's context.
    panel: Option<render::panel::PanelWindow>,
    overlay: Option<render::overlay::Overlay>,
    scene: Option<Scene>,
    window: Option<render::window::GlWindow>,
    error: Option<AppError>,
    pacer: FramePacer,
    /// Something other than a new frame changed since the last draw.
    dirty: bool,
    modifiers: ModifiersState,
    cursor: Option<(f64, f64)>,
    drag: Option<Drag>,
    exit_at: Option<Instant>,
}

impl StageApp {
    /// A stage for `avatar`, animated through `mapping`, fed by `frames`.
    pub fn new(
        options: StageOptions,
        avatar: Avatar,
        mapping: CompiledMapping,
        frames: FrameReceiver,
    ) -> StageApp {
        StageApp {
            exit_at: options.exit_after.map(|d| Instant::now() + d),
            pacer: FramePacer::new(options.config.window.fps_cap),
            telemetry: Telemetry::new(Instant::now()),
            controls: None,
            panel_wanted: false,
            panel_state: PanelState::default(),
            panel_due: Instant::now(),
            routine: RoutineView::Idle,
            stats: DrawStats::default(),
            rates: RateMeter::default(),
            motion: Motion::new(MotionSettings {
                mode: options.config.window.motion,
                ..MotionSettings::default()
            }),
            panel: None,
            options,
            avatar: Some((avatar, mapping)),
            frames,
            prompt: None,
            prompt_dirty: false,
            overlay: None,
            scene: None,
            window: None,
            error: None,
            dirty: true,
            modifiers: ModifiersState::empty(),
            cursor: None,
            drag: None,
        }
    }

    /// Adds the control panel: it shows `telemetry` (kept current by the ingest side) and
    /// drives `controls`; it opens with the stage when the configuration's `window.panel` is
    /// on, and `P` on the stage shows and hides it.
    pub fn with_panel(mut self, telemetry: Arc<Telemetry>, controls: Box<dyn Controls>) -> Self {
        self.panel_wanted = self.options.config.window.panel;
        self.telemetry = telemetry;
        self.controls = Some(controls);
        self
    }

    /// The stage's draw statistics so far.
    pub fn draw_stats(&self) -> &DrawStats {
        &self.stats
    }

    /// The error that ended the event loop, if any.
    pub fn take_error(&mut self) -> Option<AppError> {
        self.error.take()
    }

    fn fail(&mut self, event_loop: &ActiveEventLoop, error: AppError) {
        tracing::error!(%error, "stage window failed");
        self.error = Some(error);
        event_loop.exit();
    }

    /// The camera changed: show it at the next paced frame.
    fn camera_changed(&mut self) {
        let camera = self.options.config.camera;
        if let Some(scene) = self.scene.as_mut() {
            scene.set_camera(camera);
        }
        tracing::debug!(?camera, "stage camera changed");
        self.dirty = true;
    }

    fn save_camera(&self) {
        let camera = self.options.config.camera;
        match save_camera(self.options.config_path.as_deref(), &camera) {
            Ok(path) => tracing::info!(
                config = %path.display(),
                zoom = camera.zoom,
                offset_y = camera.offset_y,
                orbit_yaw = camera.orbit_yaw,
                orbit_pitch = camera.orbit_pitch,
                fov = camera.fov,
                "camera saved"
            ),
            Err(error) => tracing::error!(%error, ?camera, "camera not saved"),
        }
    }

    fn on_key(&mut self, event: &winit::event::KeyEvent) {
        if event.state != ElementState::Pressed {
            return;
        }
        let shift = self.modifiers.shift_key();
        match camera_key(&mut self.options.config.camera, &event.logical_key, shift) {
            StageKey::Camera => self.camera_changed(),
            StageKey::Save if !event.repeat => self.save_camera(),
            StageKey::Neutral if !event.repeat => self.act(PanelAction::CaptureNeutral),
            StageKey::Panel if !event.repeat => {
                if self.panel.is_some() {
                    self.close_panel();
                } else {
                    self.panel_wanted = self.controls.is_some();
                }
            }
            StageKey::Save | StageKey::Neutral | StageKey::Panel | StageKey::None => {}
        }
    }

    /// Posts a message to the panel (and the log).
    fn post(&mut self, topic: Topic, result: Result<String, String>) {
        match result {
            Ok(text) => {
                tracing::info!(topic = ?topic, %text, "panel");
                self.panel_state
                    .messages
                    .post(topic, false, text, Instant::now());
            }
            Err(text) => {
                tracing::warn!(topic = ?topic, %text, "panel");
                self.panel_state
                    .messages
                    .post(topic, true, text, Instant::now());
            }
        }
        self.panel_due = Instant::now();
    }

    /// Carries out what the panel (or a stage hotkey) asked for.
    fn act(&mut self, action: PanelAction) {
        let Some(controls) = self.controls.as_mut() else {
            tracing::info!(?action, "no live input to act on");
            return;
        };
        match action {
            PanelAction::CaptureNeutral => controls.capture_neutral(),
            PanelAction::StartCalibration => {
                if let Err(e) = controls.start_calibration() {
                    self.post(Topic::Calibration, Err(e));
                }
            }
            PanelAction::Review(decision) => controls.review(decision),
            PanelAction::ChooseProfile(name) => {
                let result = controls.choose_profile(name.as_deref());
                self.post(Topic::Profile, result);
            }
            PanelAction::ReloadMapping => {
                let Some(scene) = self.scene.as_mut() else {
                    return;
                };
                let result = match &self.options.mapping_path {
                    Some(path) => reload_mapping(
                        scene,
                        crate::mapping::MappingFile::load(path).map_err(|e| e.to_string()),
                    ),
                    None => Ok(
                        "no mapping file is in use: the built-in mapping is compiled \
                                from the avatar's target names (set render.mapping to edit one)"
                            .to_string(),
                    ),
                };
                self.dirty = true;
                self.post(Topic::Mapping, result);
            }
            PanelAction::OpenConfigFolder => {
                let folder = controls.config_folder();
                let result = crate::fsutil::open_in_file_manager(&folder)
                    .map(|()| format!("opened {}", folder.display()))
                    .map_err(|e| format!("cannot open {}: {e}", folder.display()));
                self.post(Topic::General, result);
            }
            PanelAction::ClearMessages => self.panel_state.messages.clear(),
        }
    }

    fn open_panel(&mut self, event_loop: &ActiveEventLoop) {
        self.panel_wanted = false;
        // Beside the stage, so neither covers the other (window managers may move it).
        let position = self.window.as_ref().and_then(|w| {
            let at = w.window().outer_position().ok()?;
            let size = w.window().outer_size();
            Some((at.x + size.width as i32 + 8, at.y))
        });
        let options = render::panel::PanelOptions {
            position,
            ..render::panel::PanelOptions::default()
        };
        match render::panel::PanelWindow::create(event_loop, &options) {
            Ok(panel) => {
                tracing::info!("control panel open");
                self.panel = Some(panel);
                self.panel_due = Instant::now();
            }
            Err(error) => {
                tracing::warn!(%error, "the control panel cannot open; the stage runs without it");
            }
        }
    }

    fn close_panel(&mut self) {
        self.panel = None;
        self.panel_wanted = false;
        tracing::info!("control panel closed (P on the stage opens it again)");
    }

    /// What the panel shows now.
    fn panel_model(&mut self, now: Instant) -> Option<PanelModel> {
        let scene = self.scene.as_ref()?;
        let telemetry = self.telemetry.snapshot();
        let (mut counters, input, can_calibrate, profiles, profile) = match &self.controls {
            Some(c) => (
                c.counters(),
                c.input_label(),
                c.can_calibrate(),
                c.profiles(),
                c.profile(),
            ),
            None => (
                InputCounters::default(),
                String::new(),
                false,
                Vec::new(),
                None,
            ),
        };
        counters.dropped = self.frames.counters().snapshot().dropped;
        let rates = self.rates.update(now, counters);
        let fps = self
            .stats
            .interval
            .percentiles([50.0])
            .map(|[p50]| p50.as_secs_f64())
            .filter(|s| *s > 0.0)
            .map(|s| 1.0 / s);
        Some(PanelModel {
            rows: crate::panel::channel_rows(
                &telemetry,
                scene.mapping(),
                scene.avatar(),
                scene.pose(),
            ),
            targets: crate::panel::target_weights(scene.avatar(), scene.pose()),
            avatar: format!(
                "{} ({:?} morph path)",
                scene.avatar().source,
                scene.morph_path()
            ),
            telemetry,
            counters,
            rates,
            input,
            timings: Timings {
                sample_age: self.stats.sample_age.percentiles([50.0, 99.0]),
                draw_time: self.stats.draw_time.percentiles([50.0, 99.0]),
                fps,
                motion_latency: (self.motion.settings().mode != MotionMode::Off)
                    .then(|| self.motion.latency()),
            },
            profiles,
            profile,
            can_calibrate,
            routine: self.routine.clone(),
            hotkeys: STAGE_HOTKEYS,
            now,
        })
    }

    /// Draws the panel; with `capture`, returns the frame drawn.
    fn draw_panel(&mut self, capture: bool) -> Option<crate::image::RgbaImage> {
        let now = Instant::now();
        let model = self.panel_model(now)?;
        let panel = self.panel.as_mut()?;
        let state = &mut self.panel_state;
        let mut actions = Vec::new();
        let result = panel.draw(
            |ui| actions.extend(crate::panel::show(ui, &model, state)),
            capture,
        );
        let image = match result {
            Ok((wanted, image)) => {
                if let Some(delay) = wanted {
                    self.panel_due = self
                        .panel_due
                        .min(now + delay.max(Duration::from_millis(16)));
                }
                image
            }
            Err(error) => {
                tracing::warn!(%error, "the control panel failed to draw; closing it");
                self.panel = None;
                None
            }
        };
        for action in actions {
            self.act(action);
        }
        image
    }

    /// Writes the stage's and the panel's current frames into the screenshot folder.
    fn take_screenshots(&mut self) {
        let Some(dir) = self.options.screenshots.clone() else {
            return;
        };
        if let Err(error) = std::fs::create_dir_all(&dir) {
            tracing::error!(%error, dir = %dir.display(), "cannot create the screenshot folder");
            return;
        }
        let shots = [
            ("stage.png", self.redraw_stage(true)),
            ("panel.png", self.draw_panel(true)),
        ];
        for (name, image) in shots {
            let Some(image) = image else { continue };
            let path = dir.join(name);
            match image.save_png(&path) {
                Ok(()) => tracing::info!(file = %path.display(), "screenshot written"),
                Err(error) => tracing::error!(%error, file = %path.display(), "screenshot failed"),
            }
        }
    }

    /// Draws the stage; with `capture`, returns the frame drawn.
    fn redraw_stage(&mut self, capture: bool) -> Option<crate::image::RgbaImage> {
        let (Some(window), Some(scene)) = (self.window.as_ref(), self.scene.as_mut()) else {
            return None;
        };
        let start = Instant::now();
        self.dirty = false;
        if let Err(error) = window.make_current() {
            tracing::warn!(%error, "cannot make the stage context current");
            return None;
        }
        let motion = &mut self.motion;
        let sample = self
            .frames
            .take_each(|f| motion.push(f))
            .map(|f| f.received);
        scene.set_frame(self.motion.sample(start).as_ref());
        let mut clear = self.options.config.window.background.0;
        if window.has_alpha() {
            clear[3] = 0.0;
        }
        window.bind();
        scene.draw(&window.draw_target(clear));
        if let Some(overlay) = self.overlay.as_mut() {
            let (width, height) = window.size();
            if self.prompt_dirty {
                if let Some(card) = &self.prompt {
                    let card_width = crate::hud::prompt_width(width);
                    overlay.set_image(&crate::hud::render_prompt(card, card_width));
                }
                self.prompt_dirty = false;
            }
            if self.prompt.is_some() {
                let (x, y) = crate::hud::prompt_placement((width, height), overlay.size().1);
                overlay.draw((width, height), x, y);
            }
        }
        let image = capture.then(|| window.read_rgba());
        if let Err(error) = window.swap_buffers() {
            tracing::warn!(%error, "swap_buffers failed");
        }
        self.stats.record(start, Instant::now(), sample);
        image
    }
}

impl ApplicationHandler<AppEvent> for StageApp {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.window.is_some() {
            return;
        }
        let cfg = &self.options.config.window;
        let opts = render::window::WindowOptions {
            title: cfg.title.clone(),
            width: cfg.width,
            height: cfg.height,
            transparent: cfg.transparent,
            vsync: cfg.vsync,
            position: None,
        };
        let window = match render::window::create(event_loop, &opts) {
            Ok(w) => w,
            Err(e) => return self.fail(event_loop, e.into()),
        };
        if cfg.transparent && window.has_alpha() {
            tracing::info!("transparent window: writing premultiplied alpha for OBS");
        }
        let refresh = window
            .window()
            .current_monitor()
            .and_then(|m| m.refresh_rate_millihertz());
        let cap = effective_cap(cfg.fps_cap, cfg.vsync, refresh);
        self.pacer = FramePacer::new(cap);
        tracing::info!(
            fps_cap = cfg.fps_cap,
            vsync = cfg.vsync,
            refresh_mhz = refresh,
            paced_at = cap,
            render_on_change = cfg.render_on_change,
            "stage frame pacing"
        );
        let Some((avatar, mapping)) = self.avatar.take() else {
            return;
        };
        match Scene::new(window.gl(), avatar, self.options.config.render.morph) {
            Ok(mut scene) => {
                scene.set_mapping(mapping);
                scene.set_camera(self.options.config.camera);
                tracing::info!(morph = ?scene.morph_path(), "stage ready");
                self.scene = Some(scene);
            }
            Err(e) => return self.fail(event_loop, e.into()),
        }
        match render::overlay::Overlay::new(window.gl()) {
            Ok(overlay) => self.overlay = Some(overlay),
            Err(error) => tracing::warn!(%error, "prompts cannot be shown in the window"),
        }
        self.dirty = true;
        self.window = Some(window);
    }

    fn user_event(&mut self, event_loop: &ActiveEventLoop, event: AppEvent) {
        match event {
            // The wake-up itself is the point: about_to_wait then finds the frame.
            AppEvent::FrameReady => {}
            AppEvent::Mapping(parsed) => {
                if let Some(scene) = self.scene.as_mut() {
                    let result = reload_mapping(scene, parsed.map(|f| *f));
                    self.dirty = true;
                    self.post(Topic::Mapping, result);
                }
            }
            AppEvent::Message { topic, error, text } => {
                self.panel_state
                    .messages
                    .post(topic, error, text, Instant::now());
                self.panel_due = Instant::now();
            }
            AppEvent::Routine(view) => {
                self.routine = view;
                self.panel_due = Instant::now();
            }
            AppEvent::Background(color) => {
                self.options.config.window.background = crate::config::Color(color);
                self.dirty = true;
            }
            AppEvent::Camera(camera) => {
                if let Some(scene) = self.scene.as_mut() {
                    scene.set_camera(camera);
                }
                self.options.config.camera = camera;
                self.dirty = true;
            }
            AppEvent::Prompt(card) => {
                self.prompt = card;
                self.prompt_dirty = true;
                self.dirty = true;
            }
            AppEvent::Tracking(state) => {
                tracing::debug!(state = state.name(), "stage sees a tracking change");
            }
            AppEvent::Shutdown => event_loop.exit(),
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, id: WindowId, event: WindowEvent) {
        if let Some(panel) = self.panel.as_mut().filter(|p| p.id() == id) {
            match event {
                WindowEvent::CloseRequested => self.close_panel(),
                WindowEvent::RedrawRequested => {
                    self.draw_panel(false);
                }
                event => {
                    if panel.on_event(&event) {
                        self.panel_due = Instant::now();
                    }
                }
            }
            return;
        }
        if self.window.as_ref().is_some_and(|w| w.window().id() != id) {
            // A window already closed (a panel's last events).
            return;
        }
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::Resized(size) => {
                if let Some(w) = self.window.as_mut() {
                    w.resize(size.width, size.height);
                }
                self.dirty = true;
            }
            // Drawn at once: the system asks when the window was uncovered or first shown.
            WindowEvent::RedrawRequested => {
                self.redraw_stage(false);
            }
            WindowEvent::ModifiersChanged(modifiers) => self.modifiers = modifiers.state(),
            WindowEvent::KeyboardInput { event, .. } => self.on_key(&event),
            WindowEvent::MouseWheel { delta, .. } => {
                let notches = match delta {
                    MouseScrollDelta::LineDelta(_, y) => y,
                    MouseScrollDelta::PixelDelta(p) => (p.y / PIXELS_PER_NOTCH) as f32,
                };
                let before = self.options.config.camera;
                camera_wheel(&mut self.options.config.camera, notches);
                if self.options.config.camera != before {
                    self.camera_changed();
                }
            }
            WindowEvent::MouseInput { state, button, .. } => match state {
                ElementState::Pressed => {
                    self.drag = self.cursor.map(|last| Drag { button, last });
                }
                ElementState::Released => {
                    if self.drag.is_some_and(|d| d.button == button) {
                        self.drag = None;
                    }
                }
            },
            WindowEvent::CursorMoved { position, .. } => {
                let now = (position.x, position.y);
                self.cursor = Some(now);
                if let Some(drag) = self.drag.as_mut() {
                    let delta = (now.0 - drag.last.0, now.1 - drag.last.1);
                    drag.last = now;
                    let button = drag.button;
                    let height = self.window.as_ref().map_or(1, |w| w.size().1);
                    if camera_drag(&mut self.options.config.camera, button, delta, height) {
                        self.camera_changed();
                    }
                }
            }
            WindowEvent::CursorLeft { .. } => {
                self.cursor = None;
                self.drag = None;
            }
            _ => {}
        }
    }

    fn about_to_wait(&mut self, event_loop: &ActiveEventLoop) {
        let now = Instant::now();
        if self.exit_at.is_some_and(|t| now >= t) {
            self.take_screenshots();
            event_loop.exit();
            return;
        }
        if self.window.is_none() {
            event_loop.set_control_flow(ControlFlow::Wait);
            return;
        }
        if self.panel_wanted && self.panel.is_none() {
            self.open_panel(event_loop);
        }
        // The earliest instant something other than the stage needs the loop.
        let mut wake = self.exit_at;
        if let Some(panel) = self.panel.as_ref() {
            if now >= self.panel_due {
                panel.request_redraw();
                self.panel_due = now + PANEL_PERIOD;
            }
            wake = Some(wake.map_or(self.panel_due, |w| w.min(self.panel_due)));
        }
        let until = |at: Option<Instant>| at.map_or(ControlFlow::Wait, ControlFlow::WaitUntil);
        let render_on_change = self.options.config.window.render_on_change;
        let new_frame = render_on_change && self.frames.pending() > 0;
        // Motion between the phone's frames goes on for a moment after the newest arrived.
        let moving = self.motion.settles_at().is_some_and(|at| now <= at);
        if !wants_redraw(render_on_change, new_frame, self.dirty || moving) {
            // Nothing to draw: sleep until the ingest side's FrameReady (or any other event)
            // wakes the loop, or until the panel or the exit is due.
            self.stats.idle();
            event_loop.set_control_flow(until(wake));
            return;
        }
        if self.pacer.try_frame(now) {
            // With vsync, swap_buffers paces an uncapped loop; each pass asks for the next.
            if let Some(window) = self.window.as_ref() {
                window.window().request_redraw();
            }
            event_loop.set_control_flow(until(wake));
        } else if let Some(due) = self.pacer.next_due() {
            let due = wake.map_or(due, |w| w.min(due));
            event_loop.set_control_flow(ControlFlow::WaitUntil(due));
        }
    }

    fn exiting(&mut self, _event_loop: &ActiveEventLoop) {
        self.panel = None;
        if let Some(w) = self.window.as_ref() {
            if let Err(error) = w.make_current() {
                tracing::warn!(%error, "cannot make the context current to release GL objects");
            }
        }
        self.overlay = None;
        self.scene = None;
        self.window = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 51);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&[], 50.0), 0);
        assert_eq!(percentile(&[7], 99.0), 7);
    }

    #[test]
    fn pacer_never_exceeds_the_cap() {
        for cap in [30u32, 60, 144] {
            let mut pacer = FramePacer::new(cap);
            let start = Instant::now();
            // A loop trying to draw every half millisecond for three seconds.
            let mut drawn = Vec::new();
            for step in 0..6000u64 {
                let now = start + Duration::from_micros(step * 500);
                if pacer.try_frame(now) {
                    drawn.push(now - start);
                }
            }
            let total = drawn.len() as u32;
            assert!(total <= 3 * cap + 1, "cap {cap}: {total} frames in 3 s");
            assert!(
                total + 2 >= 3 * cap,
                "cap {cap}: only {total} frames in 3 s"
            );
            for window in 0..5 {
                let from = Duration::from_millis(window * 500);
                let in_window = drawn
                    .iter()
                    .filter(|t| **t >= from && **t < from + Duration::from_secs(1))
                    .count() as u32;
                assert!(in_window <= cap + 1, "cap {cap}: {in_window} in one second");
            }
        }
    }

    #[test]
    fn pacer_restarts_its_grid_after_a_stall_instead_of_bursting() {
        let mut pacer = FramePacer::new(60);
        let start = Instant::now();
        assert!(pacer.try_frame(start));
        // A one-second stall, then a loop trying every millisecond.
        let resume = start + Duration::from_secs(1);
        let burst = (0..20)
            .filter(|ms| pacer.try_frame(resume + Duration::from_millis(*ms)))
            .count();
        assert_eq!(burst, 2, "one frame at once, the next a period later");
        assert!(pacer.next_due().is_some_and(|due| due > resume));
        let mut unlimited = FramePacer::new(0);
        assert!((0..100).all(|_| unlimited.try_frame(start)));
        assert_eq!(unlimited.next_due(), None);
    }

    #[test]
    fn vsync_at_or_below_the_cap_needs_no_pacer() {
        assert_eq!(effective_cap(60, true, Some(60_000)), 0);
        assert_eq!(effective_cap(60, true, Some(59_940)), 0);
        assert_eq!(effective_cap(60, true, Some(144_000)), 60);
        assert_eq!(effective_cap(60, false, Some(60_000)), 60);
        assert_eq!(effective_cap(60, true, None), 60);
        assert_eq!(effective_cap(0, true, Some(60_000)), 0);
    }

    #[test]
    fn render_on_change_draws_nothing_while_still() {
        assert!(!wants_redraw(true, false, false));
        assert!(wants_redraw(true, true, false));
        assert!(wants_redraw(true, false, true));
        assert!(wants_redraw(false, false, false));
    }

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

    const FILE: &str = "# top comment\n[window]\ntitle = \"x\" # keep me\n\n[camera]\n# zoom it\nzoom = 1.0   # magnification\n  fov = 27.0\n\n[render]\nheadless_fps = 30\n";

    fn moved() -> CameraConfig {
        CameraConfig {
            zoom: 1.331,
            offset_y: -0.15,
            orbit_yaw: 20.0,
            orbit_pitch: 5.0,
            fov: 35.0,
        }
    }

    #[test]
    fn saving_rewrites_only_the_camera_values() {
        let out = rewrite_camera_table(FILE, &moved());
        let parsed = Config::parse(&out, "f.toml").unwrap();
        assert!(same_camera(&parsed.camera, &moved()), "{out}");
        assert_eq!(parsed.render.headless_fps, 30);
        assert_eq!(parsed.window.title, "x");
        for kept in [
            "# top comment\n",
            "title = \"x\" # keep me\n",
            "# zoom it\n",
            "zoom = 1.331 # magnification\n",
            "  fov = 35.0\n",
            "\n[render]\nheadless_fps = 30\n",
        ] {
            assert!(out.contains(kept), "lost {kept:?} in:\n{out}");
        }
        // The missing keys go after the table's last key, before the blank line.
        assert!(
            out.contains(
                "fov = 35.0\noffset_y = -0.15\norbit_yaw = 20.0\norbit_pitch = 5.0\n\n[render]"
            ),
            "{out}"
        );
        // Saving again with the same values changes nothing.
        assert_eq!(rewrite_camera_table(&out, &moved()), out);
        // CRLF files keep CRLF, and a file without the table gets one.
        let crlf = rewrite_camera_table("[window]\r\nvsync = true\r\n", &moved());
        assert!(crlf.ends_with("[camera]\r\nzoom = 1.331\r\noffset_y = -0.15\r\norbit_yaw = 20.0\r\norbit_pitch = 5.0\r\nfov = 35.0\r\n"), "{crlf:?}");
        assert!(same_camera(
            &Config::parse(&crlf, "f").unwrap().camera,
            &moved()
        ));
        let no_newline = rewrite_camera_table("[camera]\nzoom = 2.0", &moved());
        assert!(same_camera(
            &Config::parse(&no_newline, "f").unwrap().camera,
            &moved()
        ));
    }

    #[test]
    fn save_camera_writes_the_started_file_and_refuses_broken_results() {
        let dir = std::env::temp_dir().join(format!("facewire-camera-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("facewire.toml");
        std::fs::write(&path, FILE).unwrap();
        assert_eq!(save_camera(Some(&path), &moved()).unwrap(), path);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("# zoom it\n") && text.contains("title = \"x\" # keep me"));
        assert!(same_camera(&Config::load(&path).unwrap().camera, &moved()));
        // Dotted keys elsewhere would clash with the table: the file is left alone.
        let dotted = "camera.zoom = 1.0\n";
        std::fs::write(&path, dotted).unwrap();
        assert!(matches!(
            save_camera(Some(&path), &moved()),
            Err(CameraSaveError::Rewrite(_))
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), dotted);
        let missing = dir.join("missing.toml");
        assert!(matches!(
            save_camera(Some(&missing), &moved()),
            Err(CameraSaveError::Io { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

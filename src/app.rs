//! The render side of facewire: the scene (avatar, mapping, renderer, camera), the winit
//! application that shows it in the stage window, and the headless loop used by
//! `facewire run --headless`.

use std::rc::Rc;
use std::time::{Duration, Instant};

use winit::application::ApplicationHandler;
use winit::event::WindowEvent;
use winit::event_loop::{ActiveEventLoop, ControlFlow};
use winit::window::WindowId;

use crate::arkit::FaceFrame;
use crate::avatar::{Avatar, Pose};
use crate::bridge::{AppEvent, FrameReceiver};
use crate::config::Config;
use crate::mapping::CompiledMapping;
use crate::render::{self, Camera, DrawTarget, MorphPath, RenderError, Renderer};

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
        Ok(Scene {
            bounds,
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

    /// Sets the pose from a calibrated frame (`None`: the rest pose).
    pub fn set_frame(&mut self, frame: Option<&FaceFrame>) {
        self.pose.clone_from(&self.rest);
        if let Some(frame) = frame {
            self.mapping.apply(frame, &mut self.pose);
        }
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
        let camera = Camera::framing(self.bounds, aspect);
        self.renderer.draw(&self.pose, &camera, target);
    }
}

/// Swaps in a reloaded mapping at a frame boundary: `parsed` is the mapping file as re-read
/// from disk, or why it could not be read. A mapping that fails to parse or to compile against
/// the avatar is reported and the last good one keeps running.
pub fn reload_mapping(scene: &mut Scene, parsed: Result<crate::mapping::MappingFile, String>) {
    let compiled = parsed.and_then(|file| {
        CompiledMapping::compile(&file, scene.avatar())
            .map(|m| (m, file.path.clone()))
            .map_err(|e| e.one_line())
    });
    match compiled {
        Ok((mapping, path)) => {
            let targets = mapping.targets.len();
            scene.set_mapping(mapping);
            tracing::info!(mapping = %path, targets, "mapping reloaded");
        }
        Err(error) => {
            tracing::error!(%error, "mapping reload failed; keeping the last good mapping");
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
}

/// Renders offscreen at `pace.fps` until `until` returns true, calling `before_draw` (for
/// reloads at a frame boundary) and taking the newest frame from `frames` before each draw.
/// Returns the last image, the number of frames drawn and the sample ages (microseconds) of the
/// frames that used a new sample.
pub fn run_headless(
    scene: &mut Scene,
    ctx: &render::headless::HeadlessContext,
    frames: &mut FrameReceiver,
    pace: &HeadlessPace,
    mut before_draw: impl FnMut(&mut Scene),
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
    let mut latest: Option<FaceFrame> = None;
    let mut ages = Vec::new();
    let mut drawn = 0u64;
    let mut next = Instant::now();
    loop {
        if let Some(frame) = frames.take_newest() {
            latest = Some(frame);
            ages.push(frame.received.elapsed().as_micros() as u64);
        }
        before_draw(scene);
        scene.set_frame(latest.as_ref());
        ctx.bind();
        scene.draw(&target);
        ctx.finish();
        drawn += 1;
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

/// Options of the stage window.
#[derive(Debug, Clone)]
pub struct StageOptions {
    /// The configuration (window, render sections).
    pub config: Config,
    /// Close the window after this long (demos and tests).
    pub exit_after: Option<Duration>,
}

/// The winit application showing the avatar in the stage window.
pub struct StageApp {
    options: StageOptions,
    avatar: Option<(Avatar, CompiledMapping)>,
    frames: FrameReceiver,
    latest: Option<FaceFrame>,
    prompt: Option<crate::hud::PromptCard>,
    prompt_dirty: bool,
    // Field order is drop order: the GL objects go before the window's context.
    overlay: Option<render::overlay::Overlay>,
    scene: Option<Scene>,
    window: Option<render::window::GlWindow>,
    error: Option<AppError>,
    frame_period: Option<Duration>,
    next_frame: Instant,
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
        let frame_period =
            (!options.config.window.vsync).then(|| Duration::from_secs_f64(1.0 / 60.0));
        StageApp {
            exit_at: options.exit_after.map(|d| Instant::now() + d),
            options,
            avatar: Some((avatar, mapping)),
            frames,
            latest: None,
            prompt: None,
            prompt_dirty: false,
            overlay: None,
            scene: None,
            window: None,
            error: None,
            frame_period,
            next_frame: Instant::now(),
        }
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

    fn redraw(&mut self) {
        let (Some(window), Some(scene)) = (self.window.as_ref(), self.scene.as_mut()) else {
            return;
        };
        if let Some(frame) = self.frames.take_newest() {
            self.latest = Some(frame);
        }
        scene.set_frame(self.latest.as_ref());
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
        if let Err(error) = window.swap_buffers() {
            tracing::warn!(%error, "swap_buffers failed");
        }
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
        };
        let window = match render::window::create(event_loop, &opts) {
            Ok(w) => w,
            Err(e) => return self.fail(event_loop, e.into()),
        };
        if cfg.transparent && window.has_alpha() {
            tracing::info!("transparent window: writing premultiplied alpha for OBS");
        }
        let Some((avatar, mapping)) = self.avatar.take() else {
            return;
        };
        match Scene::new(window.gl(), avatar, self.options.config.render.morph) {
            Ok(mut scene) => {
                scene.set_mapping(mapping);
                tracing::info!(morph = ?scene.morph_path(), "stage ready");
                self.scene = Some(scene);
            }
            Err(e) => return self.fail(event_loop, e.into()),
        }
        match render::overlay::Overlay::new(window.gl()) {
            Ok(overlay) => self.overlay = Some(overlay),
            Err(error) => tracing::warn!(%error, "prompts cannot be shown in the window"),
        }
        window.window().request_redraw();
        self.window = Some(window);
    }

    fn user_event(&mut self, event_loop: &ActiveEventLoop, event: AppEvent) {
        match event {
            AppEvent::Mapping(parsed) => {
                if let Some(scene) = self.scene.as_mut() {
                    reload_mapping(scene, parsed.map(|f| *f));
                }
            }
            AppEvent::Background(color) => {
                self.options.config.window.background = crate::config::Color(color);
            }
            AppEvent::Prompt(card) => {
                self.prompt = card;
                self.prompt_dirty = true;
            }
            AppEvent::Tracking(state) => {
                tracing::debug!(state = state.name(), "stage sees a tracking change");
            }
            AppEvent::Shutdown => event_loop.exit(),
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::Resized(size) => {
                if let Some(w) = self.window.as_mut() {
                    w.resize(size.width, size.height);
                    w.window().request_redraw();
                }
            }
            WindowEvent::RedrawRequested => {
                self.redraw();
                if self.frame_period.is_none() {
                    if let Some(w) = self.window.as_ref() {
                        w.window().request_redraw();
                    }
                }
            }
            _ => {}
        }
    }

    fn about_to_wait(&mut self, event_loop: &ActiveEventLoop) {
        if self.exit_at.is_some_and(|t| Instant::now() >= t) {
            event_loop.exit();
            return;
        }
        match self.frame_period {
            // With vsync, swap_buffers paces the loop and each redraw requests the next.
            None => event_loop.set_control_flow(ControlFlow::Wait),
            Some(period) => {
                let now = Instant::now();
                if now >= self.next_frame {
                    self.next_frame = (self.next_frame + period).max(now);
                    if let Some(w) = self.window.as_ref() {
                        w.window().request_redraw();
                    }
                }
                event_loop.set_control_flow(ControlFlow::WaitUntil(self.next_frame));
            }
        }
    }

    fn exiting(&mut self, _event_loop: &ActiveEventLoop) {
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
}

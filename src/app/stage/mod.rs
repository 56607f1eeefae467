//! The winit application of the stage window: drawing the avatar, applying control events,
//! the camera controls and the control panel's actions.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use winit::application::ApplicationHandler;
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, ControlFlow};
use winit::keyboard::ModifiersState;
use winit::window::WindowId;

use super::input::PIXELS_PER_NOTCH;
use super::{
    camera_drag, camera_key, camera_wheel, effective_cap, reload_look, reload_mapping, save_camera,
    software_advice, wants_redraw, AppError, AppEvent, Controls, ExpressionKeys, FramePacer,
    KeyRoute, Scene, Shortfall, StageKey,
};
use crate::app::motion::{Motion, MotionSettings};
use crate::avatar::Avatar;
use crate::bridge::FrameReceiver;
use crate::config::Config;
use crate::control::telemetry::{DrawStats, RateMeter, Telemetry};
use crate::control::{RoutineView, Topic};
use crate::diagnostic::with_causes;
use crate::mapping::CompiledMapping;
use crate::panel::{PanelAction, PanelState};
use crate::render;

mod actions;
mod cards;
mod layout;
mod panel;

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

/// How often the panel refreshes its meters.
const PANEL_PERIOD: Duration = Duration::from_millis(100);
/// How often the stage looks whether a look's colours have finished painting.
const LOOK_POLL: Duration = Duration::from_millis(40);

/// The mouse drag in progress on the stage.
#[derive(Debug, Clone, Copy)]
struct Drag {
    button: MouseButton,
    last: (f64, f64),
}

/// The stage window and what draws into it: the scene's GL objects, the card overlay, the
/// frame pacing and what it measures.
struct Display {
    // Field order is drop order: the GL objects go before the window's context.
    overlay: Option<render::overlay::Overlay>,
    scene: Option<Scene>,
    window: Option<render::window::GlWindow>,
    pacer: FramePacer,
    /// The frame rate the stage is paced at (its cap, or the display's refresh under vsync;
    /// 0: unknown or unpaced).
    fps_target: u32,
    /// Watches for a stage that keeps drawing well below `fps_target`.
    shortfall: Shortfall,
    /// What the panel advises once `shortfall` found the stage short on a software rasteriser.
    advice: Option<String>,
    stats: DrawStats,
    /// Blends the frames received into the frame drawn at the display rate.
    motion: Motion,
    /// Something other than a new frame changed since the last draw.
    dirty: bool,
}

/// The control panel: its window, what it remembers between refreshes, when it refreshes next,
/// and the stream tools waiting for the performer's answer in it.
struct PanelHost {
    window: Option<render::panel::PanelWindow>,
    /// The panel should be open (it opens once the stage is up).
    wanted: bool,
    /// Where the panel opens at first start, laid out with the stage.
    area: Option<super::Area>,
    state: PanelState,
    /// When the panel refreshes next.
    due: Instant,
    /// Stream tools waiting for an answer in the panel.
    plugins: crate::panel::Approvals,
}

/// Keys and the mouse on the stage.
struct StageInput {
    modifiers: ModifiersState,
    /// Routes keys bound to expressions to them, the others to the stage's hotkeys.
    expression_keys: ExpressionKeys,
    cursor: Option<(f64, f64)>,
    drag: Option<Drag>,
    /// The expressions' keys registered with the desktop, where it allows.
    global_keys: Option<super::GlobalKeys>,
    /// The keys down on the stage.
    held: std::collections::HashSet<winit::keyboard::PhysicalKey>,
}

/// The winit application showing the avatar in the stage window, in parts: the display and its
/// GL, the control panel, the keys and the mouse, and the cards over the avatar.
pub struct StageApp {
    options: StageOptions,
    avatar: Option<(Avatar, CompiledMapping)>,
    frames: FrameReceiver,
    /// The routine's prompt and the connect card over the avatar.
    cards: cards::Cards,
    telemetry: Arc<Telemetry>,
    controls: Option<Box<dyn Controls>>,
    routine: RoutineView,
    rates: RateMeter,
    error: Option<AppError>,
    exit_at: Option<Instant>,
    /// The mixer's stack as configured, for resolving its layers' targets on each avatar.
    stack: crate::stack::StackConfig,
    /// A plugin's move of the avatar that came before the stage had a scene to move.
    early_move: Option<(crate::api::ModelPosition, std::time::Duration)>,
    input: StageInput,
    // Field order is drop order: the panel's window goes before the stage's GL objects.
    panel: PanelHost,
    display: Display,
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
            stack: crate::stack::StackConfig::of(&options.config),
            early_move: None,
            exit_at: options.exit_after.map(|d| Instant::now() + d),
            telemetry: Telemetry::new(Instant::now()),
            controls: None,
            routine: RoutineView::Idle,
            rates: RateMeter::default(),
            cards: cards::Cards::new(options.config.window.connect_card),
            input: StageInput {
                modifiers: ModifiersState::empty(),
                expression_keys: ExpressionKeys::default(),
                cursor: None,
                drag: None,
                global_keys: None,
                held: std::collections::HashSet::new(),
            },
            panel: PanelHost {
                window: None,
                wanted: false,
                area: None,
                state: PanelState::default(),
                due: Instant::now(),
                plugins: crate::panel::Approvals::default(),
            },
            display: Display {
                overlay: None,
                scene: None,
                window: None,
                pacer: FramePacer::new(options.config.window.fps_cap),
                fps_target: 0,
                shortfall: Shortfall::new(0),
                advice: None,
                stats: DrawStats::default(),
                motion: Motion::new(MotionSettings {
                    mode: options.config.window.motion,
                    ..MotionSettings::default()
                }),
                dirty: true,
            },
            options,
            avatar: Some((avatar, mapping)),
            frames,
            error: None,
        }
    }

    /// Adds the control panel: it shows `telemetry` (kept current by the ingest side) and
    /// drives `controls`; it opens with the stage when the configuration's `window.panel` is
    /// on, and `P` on the stage shows and hides it.
    pub fn with_panel(mut self, telemetry: Arc<Telemetry>, controls: Box<dyn Controls>) -> Self {
        self.panel.wanted = self.options.config.window.panel;
        self.telemetry = telemetry;
        self.controls = Some(controls);
        self
    }

    /// Adds the expressions' keys registered with the desktop (`[window] global_hotkeys`): the
    /// stage keeps them in step with the expressions and hands their presses to the controls.
    pub fn with_global_keys(mut self, keys: Option<super::GlobalKeys>) -> Self {
        self.input.global_keys = keys;
        self
    }

    /// The stage's draw statistics so far.
    pub fn draw_stats(&self) -> &DrawStats {
        &self.display.stats
    }

    /// The error that ended the event loop, if any.
    pub fn take_error(&mut self) -> Option<AppError> {
        self.error.take()
    }

    fn fail(&mut self, event_loop: &ActiveEventLoop, error: AppError) {
        tracing::error!(error = %with_causes(&error), "stage window failed");
        self.error = Some(error);
        event_loop.exit();
    }

    /// The camera changed: show it at the next paced frame.
    fn camera_changed(&mut self) {
        let camera = self.options.config.camera;
        if let Some(scene) = self.display.scene.as_mut() {
            scene.set_camera(camera);
        }
        tracing::debug!(?camera, "stage camera changed");
        self.display.dirty = true;
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
            Err(error) => {
                tracing::error!(error = %with_causes(&error), ?camera, "camera not saved")
            }
        }
    }

    fn on_key(&mut self, event: &winit::event::KeyEvent) {
        // A press of a key already down is a repeat, whether or not winit says so: X11 can
        // deliver one press twice (seen with XTEST), which would toggle a card or the panel
        // twice.
        let repeat = match event.state {
            ElementState::Pressed => !self.input.held.insert(event.physical_key) || event.repeat,
            ElementState::Released => {
                self.input.held.remove(&event.physical_key);
                event.repeat
            }
        };
        let route = match self.controls.as_mut() {
            Some(controls) => {
                let expressions = controls.expressions();
                let route = self.input.expression_keys.route(
                    event.physical_key,
                    event.state,
                    repeat,
                    self.input.modifiers,
                    |key| expressions.iter().any(|e| e.key.as_ref() == Some(key)),
                );
                if let KeyRoute::Expression(key, pressed) = route {
                    tracing::debug!(%key, pressed, "expression key on the stage");
                    controls.expression_key(key, pressed);
                }
                route
            }
            None => KeyRoute::Stage,
        };
        if route != KeyRoute::Stage || event.state != ElementState::Pressed {
            return;
        }
        let shift = self.input.modifiers.shift_key();
        match camera_key(&mut self.options.config.camera, &event.logical_key, shift) {
            StageKey::Camera => self.camera_changed(),
            StageKey::Save if !repeat => self.save_camera(),
            StageKey::Neutral if !repeat => self.act(PanelAction::CaptureNeutral),
            StageKey::Panel if !repeat => {
                if self.panel.window.is_some() {
                    self.close_panel();
                } else {
                    self.panel.wanted = self.controls.is_some();
                }
            }
            StageKey::ConnectCard if !repeat => {
                let shown = !self.cards.shown();
                self.show_connect_card(shown);
            }
            StageKey::Save
            | StageKey::Neutral
            | StageKey::Panel
            | StageKey::ConnectCard
            | StageKey::None => {}
        }
    }

    /// Shows or hides the connect card on the stage (the key, the panel).
    fn show_connect_card(&mut self, shown: bool) {
        if self.cards.set_shown(shown) {
            tracing::info!(shown, "connect card on the stage (C shows and hides it)");
            self.display.dirty = true;
            self.panel.due = Instant::now();
        }
    }

    /// Puts the connect card away the first time another source than the phone moves the face.
    fn watch_other_sources(&mut self) {
        if self.cards.connect_on_stage().is_none() {
            return;
        }
        let Some(report) = self.telemetry.mix() else {
            return;
        };
        if let Some(layer) = self.cards.note_mix(&report) {
            tracing::info!(
                %layer,
                "the face moves without a phone: the connect card leaves the stage (C on the \
                 stage brings it back)"
            );
            self.display.dirty = true;
            self.panel.due = Instant::now();
        }
    }

    /// Writes the stage's and the panel's current frames into the screenshot folder.
    fn take_screenshots(&mut self) {
        let Some(dir) = self.options.screenshots.clone() else {
            return;
        };
        if let Err(error) = std::fs::create_dir_all(&dir) {
            tracing::error!(error = %with_causes(&error), dir = %dir.display(), "cannot create the screenshot folder");
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
                Err(error) => {
                    tracing::error!(error = %with_causes(&error), file = %path.display(), "screenshot failed")
                }
            }
        }
    }

    /// Draws the stage; with `capture`, returns the frame drawn.
    fn redraw_stage(&mut self, capture: bool) -> Option<crate::image::RgbaImage> {
        let (Some(window), Some(scene)) =
            (self.display.window.as_ref(), self.display.scene.as_mut())
        else {
            return None;
        };
        let start = Instant::now();
        self.display.dirty = false;
        if let Err(error) = window.make_current() {
            tracing::warn!(error = %with_causes(&error), "cannot make the stage context current");
            return None;
        }
        let motion = &mut self.display.motion;
        let sample = self
            .frames
            .take_each(|f| motion.push(f))
            .map(|f| f.received);
        scene.set_frame(self.display.motion.sample(start).as_ref());
        scene.update_look(false);
        let mut clear = self.options.config.window.background.0;
        if window.has_alpha() {
            clear[3] = 0.0;
        }
        window.bind();
        scene.draw(&window.draw_target(clear));
        if let Some(overlay) = self.display.overlay.as_mut() {
            let viewport = window.size();
            let connect = self.cards.connect_on_stage().is_some();
            if self.cards.dirty() {
                if let Some(card) = self.cards.prompt() {
                    let width = crate::app::hud::prompt_width(viewport.0);
                    overlay.set_image(&crate::app::hud::render_prompt(card, width));
                } else if let Some(card) = self.cards.connect_on_stage() {
                    let image = if self.options.config.window.show_addresses {
                        crate::app::hud::fit_connect(card, viewport)
                    } else {
                        crate::app::hud::fit_connect_private(card, viewport)
                    };
                    overlay.set_image(&image);
                }
                self.cards.drawn();
            }
            if self.cards.prompt().is_some() {
                let (x, y) = crate::app::hud::prompt_placement(viewport, overlay.size().1);
                overlay.draw(viewport, x, y);
            } else if connect {
                let (x, y) = crate::app::hud::connect_placement(viewport, overlay.size());
                overlay.draw(viewport, x, y);
            }
        }
        let image = capture.then(|| window.read_rgba());
        if let Err(error) = window.swap_buffers() {
            tracing::warn!(error = %with_causes(&error), "swap_buffers failed");
        }
        self.display.stats.record(start, Instant::now(), sample);
        if let Some(fps) = self.display.shortfall.frame(start) {
            self.short_of_target(fps);
        }
        image
    }

    /// Starts measuring the frame rate afresh (the stage's load changed), forgetting advice.
    fn watch_frame_rate(&mut self) {
        self.display.shortfall = Shortfall::new(self.display.fps_target);
        self.display.advice = None;
    }

    /// The stage drew `fps` over a stretch, well below its target: on a software rasteriser,
    /// says why and what helps (in the log and on the panel).
    fn short_of_target(&mut self, fps: f64) {
        let Some(window) = self.display.window.as_ref() else {
            return;
        };
        let renderer = window.renderer();
        if !render::is_software_renderer(&renderer) {
            tracing::info!(fps, target = self.display.fps_target, %renderer, "the stage draws below its frame cap");
            return;
        }
        let advice = software_advice(
            fps,
            self.display.fps_target,
            &renderer,
            self.options.config.render.lod,
            self.panel.window.is_some(),
        );
        tracing::warn!(fps, target = self.display.fps_target, %renderer, "{advice}");
        self.display.advice = Some(advice);
    }
}

impl ApplicationHandler<AppEvent> for StageApp {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.display.window.is_some() {
            return;
        }
        let cfg = &self.options.config.window;
        let mut opts = render::window::WindowOptions {
            title: cfg.title.clone(),
            width: cfg.width,
            height: cfg.height,
            transparent: cfg.transparent,
            vsync: cfg.vsync,
            position: None,
            multisample: true,
        };
        if self.panel.wanted {
            self.panel.area = layout::lay_out_with_panel(event_loop, &mut opts);
        }
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
        self.display.pacer = FramePacer::new(cap);
        self.display.fps_target = match cap {
            0 if cfg.vsync => refresh.map_or(0, |mhz| (mhz + 500) / 1000),
            cap => cap,
        };
        tracing::info!(
            fps_cap = cfg.fps_cap,
            vsync = cfg.vsync,
            refresh_mhz = refresh,
            paced_at = cap,
            render_on_change = cfg.render_on_change,
            "stage frame pacing"
        );
        self.watch_frame_rate();
        let Some((avatar, mapping)) = self.avatar.take() else {
            return;
        };
        match Scene::new(window.gl(), avatar, self.options.config.render.morph) {
            Ok(mut scene) => {
                scene.set_lod(self.options.config.render.lod);
                scene.set_spring_bones(self.options.config.render.spring_bones);
                scene.set_mapping(mapping);
                scene.set_camera(self.options.config.camera);
                match crate::session::load_look(&self.options.config, scene.mapping()) {
                    Ok(Some(look)) => scene.set_look(look),
                    Ok(None) => {}
                    Err(e) => tracing::error!(error = %e, "look left out"),
                }
                // Checked against the avatar when it was loaded.
                if let Err(e) = scene.set_stack(&self.stack) {
                    tracing::warn!(error = %e, "layer targets left out");
                }
                tracing::info!(morph = ?scene.morph_path(), "stage ready");
                if let Some((to, over)) = self.early_move.take() {
                    scene.move_model(to, over, Instant::now());
                }
                self.display.scene = Some(scene);
            }
            Err(e) => return self.fail(event_loop, e.into()),
        }
        match render::overlay::Overlay::new(window.gl()) {
            Ok(overlay) => self.display.overlay = Some(overlay),
            Err(error) => {
                tracing::warn!(error = %with_causes(&error), "prompts cannot be shown in the window")
            }
        }
        self.display.dirty = true;
        self.display.window = Some(window);
    }

    fn user_event(&mut self, event_loop: &ActiveEventLoop, event: AppEvent) {
        match event {
            // The wake-up itself is the point: about_to_wait then finds the frame.
            AppEvent::FrameReady => {}
            AppEvent::Mapping(parsed) => {
                if let Some(scene) = self.display.scene.as_mut() {
                    let result = reload_mapping(scene, parsed.map(|f| *f));
                    self.display.dirty = true;
                    self.post(Topic::Mapping, result);
                }
            }
            AppEvent::Look(parsed) => {
                if let Some(scene) = self.display.scene.as_mut() {
                    let result = reload_look(scene, parsed.map(|f| *f));
                    self.display.dirty = true;
                    self.post(Topic::Look, result);
                }
            }
            AppEvent::Message { topic, error, text } => {
                self.panel
                    .state
                    .messages
                    .post(topic, error, text, Instant::now());
                self.panel.due = Instant::now();
            }
            AppEvent::Routine(view) => {
                self.routine = view;
                self.panel.due = Instant::now();
            }
            AppEvent::Model(loaded) => {
                let result = loaded
                    .map_err(|e| with_causes(&e))
                    .and_then(|m| self.swap_model(*m))
                    .map_err(|e| format!("{e}\n(the current avatar stays)"));
                if let Err(e) = &result {
                    tracing::error!(error = %e, "avatar not swapped");
                }
                self.post(Topic::Avatar, result);
            }
            AppEvent::Background(color) => {
                self.options.config.window.background = crate::config::Color(color);
                self.display.dirty = true;
            }
            AppEvent::Layers(stack) => {
                if let Some(scene) = self.display.scene.as_mut() {
                    let result = scene
                        .set_stack(&stack)
                        .map(|()| "layer targets reloaded".to_string())
                        .map_err(|e| format!("{e}\n(the running layer targets stay in use)"));
                    self.display.dirty = true;
                    self.post(Topic::Config, result);
                }
                self.options.config.layers = stack.layers.clone();
                self.stack = *stack;
            }
            AppEvent::Camera(camera) => {
                if let Some(scene) = self.display.scene.as_mut() {
                    scene.set_camera(camera);
                }
                self.options.config.camera = camera;
                self.display.dirty = true;
            }
            AppEvent::Prompt(card) => {
                self.cards.set_prompt(card);
                self.display.dirty = true;
            }
            AppEvent::Connect { card, waiting } => {
                self.cards.set_connect(card, waiting);
                self.display.dirty = true;
                self.panel.due = Instant::now();
            }
            AppEvent::Tracking(state) => {
                tracing::debug!(state = state.name(), "stage sees a tracking change");
            }
            AppEvent::LoadModel(path) => self.act(PanelAction::SwitchModel(path)),
            AppEvent::MoveModel { to, over } => {
                match self.display.scene.as_mut() {
                    Some(scene) => scene.move_model(to, over, Instant::now()),
                    None => self.early_move = Some((to, over)),
                }
                self.display.dirty = true;
            }
            AppEvent::ApiApproval {
                plugin,
                developer,
                reply,
            } => {
                self.panel.plugins.ask(plugin, developer, reply);
                // The question is in the panel: open it if it was closed.
                self.panel.wanted = self.panel.window.is_none() && self.controls.is_some();
                self.panel.due = Instant::now();
            }
            AppEvent::GlobalKey { id, pressed } => {
                let key = self.input.global_keys.as_ref().and_then(|g| g.key(id));
                if let (Some(key), Some(controls)) = (key, self.controls.as_mut()) {
                    tracing::debug!(%key, pressed, "global expression key");
                    controls.expression_key(key, pressed);
                }
            }
            AppEvent::Shutdown => event_loop.exit(),
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, id: WindowId, event: WindowEvent) {
        if let Some(panel) = self.panel.window.as_mut().filter(|p| p.id() == id) {
            match event {
                WindowEvent::CloseRequested => self.close_panel(),
                WindowEvent::RedrawRequested => {
                    self.draw_panel(false);
                }
                event => {
                    if panel.on_event(&event) {
                        self.panel.due = Instant::now();
                    }
                }
            }
            return;
        }
        if self
            .display
            .window
            .as_ref()
            .is_some_and(|w| w.window().id() != id)
        {
            // A window already closed (a panel's last events).
            return;
        }
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::Resized(size) => {
                if let Some(w) = self.display.window.as_mut() {
                    w.resize(size.width, size.height);
                }
                self.cards.mark_dirty();
                self.display.dirty = true;
            }
            // Drawn at once: the system asks when the window was uncovered or first shown.
            WindowEvent::RedrawRequested => {
                self.redraw_stage(false);
            }
            WindowEvent::ModifiersChanged(modifiers) => self.input.modifiers = modifiers.state(),
            // The releases of keys held for expressions go to the window with the focus now.
            WindowEvent::Focused(false) => {
                self.input.held.clear();
                for key in self.input.expression_keys.release_all() {
                    if let Some(controls) = self.controls.as_mut() {
                        controls.expression_key(key, false);
                    }
                }
            }
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
                    self.input.drag = self.input.cursor.map(|last| Drag { button, last });
                }
                ElementState::Released => {
                    if self.input.drag.is_some_and(|d| d.button == button) {
                        self.input.drag = None;
                    }
                }
            },
            WindowEvent::CursorMoved { position, .. } => {
                let now = (position.x, position.y);
                self.input.cursor = Some(now);
                if let Some(drag) = self.input.drag.as_mut() {
                    let delta = (now.0 - drag.last.0, now.1 - drag.last.1);
                    drag.last = now;
                    let button = drag.button;
                    let height = self.display.window.as_ref().map_or(1, |w| w.size().1);
                    if camera_drag(&mut self.options.config.camera, button, delta, height) {
                        self.camera_changed();
                    }
                }
            }
            WindowEvent::CursorLeft { .. } => {
                self.input.cursor = None;
                self.input.drag = None;
            }
            _ => {}
        }
    }

    fn about_to_wait(&mut self, event_loop: &ActiveEventLoop) {
        let now = Instant::now();
        if let (Some(global), Some(controls)) =
            (self.input.global_keys.as_mut(), self.controls.as_ref())
        {
            // The expressions (and so their keys) change with a reload or another avatar.
            global.set_keys(
                controls
                    .expressions()
                    .iter()
                    .filter_map(|e| e.key)
                    .collect(),
            );
        }
        if self.exit_at.is_some_and(|t| now >= t) {
            self.take_screenshots();
            event_loop.exit();
            return;
        }
        if self.display.window.is_none() {
            event_loop.set_control_flow(ControlFlow::Wait);
            return;
        }
        if self.panel.wanted && self.panel.window.is_none() {
            self.open_panel(event_loop);
        }
        self.watch_other_sources();
        // The earliest instant something other than the stage needs the loop.
        let mut wake = self.exit_at;
        if let Some(panel) = self.panel.window.as_ref() {
            if now >= self.panel.due {
                panel.request_redraw();
                self.panel.due = now + PANEL_PERIOD;
            }
            wake = Some(wake.map_or(self.panel.due, |w| w.min(self.panel.due)));
        }
        if let Some(scene) = self.display.scene.as_mut() {
            // A look's colours paint on a worker thread: draw once they are ready.
            let (painting, ready) = scene.look_changing();
            self.display.dirty |= ready;
            if painting {
                let soon = now + LOOK_POLL;
                wake = Some(wake.map_or(soon, |w| w.min(soon)));
            }
        }
        let until = |at: Option<Instant>| at.map_or(ControlFlow::Wait, ControlFlow::WaitUntil);
        let render_on_change = self.options.config.window.render_on_change;
        let new_frame = render_on_change && self.frames.pending() > 0;
        // Motion between the phone's frames goes on for a moment after the newest arrived.
        let moving = self.display.motion.settles_at().is_some_and(|at| now <= at)
            || self
                .display
                .scene
                .as_ref()
                .is_some_and(|s| s.springs_moving() || s.model_moving(now));
        if !wants_redraw(render_on_change, new_frame, self.display.dirty || moving) {
            // Nothing to draw: sleep until the ingest side's FrameReady (or any other event)
            // wakes the loop, or until the panel or the exit is due.
            self.display.stats.idle();
            event_loop.set_control_flow(until(wake));
            return;
        }
        if self.display.pacer.try_frame(now) {
            // With vsync, swap_buffers paces an uncapped loop; each pass asks for the next.
            if let Some(window) = self.display.window.as_ref() {
                window.window().request_redraw();
            }
            event_loop.set_control_flow(until(wake));
        } else if let Some(due) = self.display.pacer.next_due() {
            let due = wake.map_or(due, |w| w.min(due));
            event_loop.set_control_flow(ControlFlow::WaitUntil(due));
        }
    }

    fn exiting(&mut self, _event_loop: &ActiveEventLoop) {
        self.panel.window = None;
        if let Some(w) = self.display.window.as_ref() {
            if let Err(error) = w.make_current() {
                tracing::warn!(error = %with_causes(&error), "cannot make the context current to release GL objects");
            }
        }
        self.display.overlay = None;
        self.display.scene = None;
        self.display.window = None;
    }
}

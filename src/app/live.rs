//! Live runs put together: the session's input and chain on one side, the stage window (with
//! its control panel) or the offscreen loop on the other.

use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, PoisonError};
use std::time::{Duration, Instant};

use super::{
    percentile, reload_look, reload_mapping, run_headless, AgeStats, AppError, AppEvent,
    HeadlessPace, HeadlessReport, LoopError, Scene, StageApp, StageLoop, StageOptions,
};
use crate::avatar::Avatar;
use crate::bridge;
use crate::calibrate::{self, Calibration, Profile, TerminalUi};
use crate::config::Config;
use crate::mapping::CompiledMapping;
use crate::render::headless::HeadlessContext;
use crate::session::{
    self, LipInput, LiveControls, LiveOptions, Replay, StageChange, StageLink, StageUi, StartError,
};
use crate::telemetry::Telemetry;

/// Hand-off queue length: a few frames absorb scheduling jitter; more would only add latency.
const QUEUE: usize = 4;

/// Why a live run failed.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The input, its chain or a watcher could not start.
    #[error(transparent)]
    Start(#[from] StartError),
    /// The stage's event loop failed.
    #[error(transparent)]
    Loop(#[from] LoopError),
    /// Rendering failed.
    #[error(transparent)]
    App(#[from] AppError),
    /// The offscreen context could not be made.
    #[error(transparent)]
    Render(#[from] crate::render::RenderError),
    /// The calibration routine's thread could not start or panicked.
    #[error("the calibration routine {0}")]
    Routine(&'static str),
    /// The calibration routine failed.
    #[error(transparent)]
    Calibration(#[from] calibrate::SessionError),
}

/// What a live run uses besides the avatar.
pub struct LiveRun<'a> {
    /// The configuration, command-line flags applied.
    pub config: &'a Config,
    /// The configuration file, watched for live changes.
    pub source: Option<&'a Path>,
    /// The profiles folder.
    pub profiles: PathBuf,
    /// The performer's profile, if one was chosen.
    pub profile: Option<Profile>,
    /// A recording to play instead of listening.
    pub replay: Option<Replay<'a>>,
    /// Stop after this long.
    pub exit_after: Option<Duration>,
    /// A WAV file to play as lip sync's audio instead of the microphone.
    pub lipsync_wav: Option<&'a Path>,
}

impl LiveRun<'_> {
    /// Where lip sync listens: the WAV file if one is given, else the microphone in a window
    /// run (or a headless run whose `[lipsync] device` names one).
    fn lip_input(&self, window: bool) -> LipInput<'_> {
        match self.lipsync_wav {
            Some(file) => LipInput::Wav(file),
            None if window || self.config.lipsync.device().is_some() => LipInput::Microphone,
            None => LipInput::None,
        }
    }
}

/// The stage window with its control panel, following the input until the window closes.
/// `screenshots`: a folder that gets both windows' last frames.
pub fn run_stage(
    run: LiveRun<'_>,
    avatar: Avatar,
    mapping: CompiledMapping,
    screenshots: Option<PathBuf>,
) -> Result<(), LiveError> {
    let config = run.config;
    let stage = StageLoop::open("is a display available? for offscreen use --headless")?;
    let notify = stage.notifier();
    let (sender, receiver) = bridge::channel(QUEUE);
    let telemetry = Telemetry::new(Instant::now());
    let live = session::start(
        config,
        sender,
        LiveOptions {
            profile: run.profile.as_ref(),
            profiles: run.profiles.clone(),
            notify: Some(Arc::clone(&notify)),
            telemetry: Some(Arc::clone(&telemetry)),
            lipsync: run.lip_input(true),
            replay: run.replay,
            tap: None,
            presets: session::avatar_presets(&avatar),
            api: true,
        },
    )?;
    let _config_watch = session::watch_config(
        run.source,
        config,
        run.profile.as_ref(),
        live.commands.clone(),
        StageLink::Window(Arc::clone(&notify)),
    )?;
    let tell = Arc::clone(&notify);
    let _mapping_watch = session::watch_mapping(config, move |parsed| {
        tell(AppEvent::Mapping(parsed.map(Box::new)));
    })?;
    let tell = Arc::clone(&notify);
    let _look_watch = session::watch_look(config, move |parsed| {
        tell(AppEvent::Look(parsed.map(Box::new)));
    })?;
    let config_folder = run
        .source
        .and_then(Path::parent)
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("config"), Path::to_path_buf);
    let global_keys = if config.window.global_hotkeys {
        super::GlobalKeys::start(Arc::clone(&notify))
    } else {
        None
    };
    let controls = LiveControls::new(
        live.input,
        live.commands,
        notify,
        run.profiles,
        run.profile.map(|p| p.performer),
        config_folder,
        config,
    )
    .with_lipsync(live.lipsync)
    .with_api(live.api.as_ref().map(|api| api.model.clone()))
    .with_expressions(live.expressions);
    // The API serves until the stage closes.
    let _api = live.api;
    let mut app = StageApp::new(
        StageOptions {
            config: config.clone(),
            config_path: run.source.map(Path::to_path_buf),
            exit_after: run.exit_after,
            mapping_path: session::mapping_path(config),
            screenshots,
        },
        avatar,
        mapping,
        receiver,
    )
    .with_panel(telemetry, Box::new(controls))
    .with_global_keys(global_keys);
    stage.run(&mut app)?;
    let stats = app.draw_stats();
    if let Some([p50, p99]) = stats.draw_time.percentiles([50.0, 99.0]) {
        tracing::info!(
            frames = stats.frames,
            draw_p50_us = p50.as_micros() as u64,
            draw_p99_us = p99.as_micros() as u64,
            "stage closed"
        );
    }
    if let Some([p50, p99]) = stats.panel_time.percentiles([50.0, 99.0]) {
        tracing::info!(
            refreshes = stats.panel_frames,
            draw_p50_us = p50.as_micros() as u64,
            draw_p99_us = p99.as_micros() as u64,
            "control panel closed"
        );
    }
    // Dropping the application ends the input (the controls own it) and a routine waiting for
    // frames.
    let error = app.take_error();
    drop(app);
    match error {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// The whole pipeline rendered offscreen at `render.headless_fps` into a `size` image, until
/// `exit_after`, or, replaying without it, until the recording has played and its last frame
/// is drawn. Returns the last frame and the run's report.
pub fn run_offscreen(
    run: LiveRun<'_>,
    avatar: Avatar,
    mapping: CompiledMapping,
    size: (u32, u32),
) -> Result<(crate::image::RgbaImage, HeadlessReport), LiveError> {
    let config = run.config;
    let ctx = HeadlessContext::new(size.0, size.1)?;
    let mut scene = Scene::new(ctx.gl(), avatar, config.render.morph)?;
    scene.set_lod(config.render.lod);
    scene.set_spring_bones(config.render.spring_bones);
    scene.set_mapping(mapping);
    scene.set_camera(config.camera);
    if let Some(look) = session::load_look(config, scene.mapping())? {
        scene.set_look(look);
        scene.update_look(true);
    }
    scene
        .set_stack(&crate::stack::StackConfig::of(config))
        .map_err(StartError::from)?;
    let presets = session::avatar_presets(scene.avatar());
    tracing::info!(morph = ?scene.morph_path(), width = size.0, height = size.1, "headless renderer ready");
    let (sender, mut receiver) = bridge::channel(QUEUE);
    let counters = sender.counters();
    let replaying = run.replay.is_some();
    let live = session::start(
        config,
        sender,
        LiveOptions {
            profile: run.profile.as_ref(),
            profiles: run.profiles.clone(),
            lipsync: run.lip_input(false),
            replay: run.replay,
            presets,
            api: true,
            ..LiveOptions::default()
        },
    )?;
    let (camera_tx, cameras) = mpsc::channel();
    let _config_watch = session::watch_config(
        run.source,
        config,
        run.profile.as_ref(),
        live.commands.clone(),
        StageLink::Headless(camera_tx),
    )?;
    let (reload_tx, reloads) = mpsc::channel();
    let _mapping_watch = session::watch_mapping(config, move |parsed| {
        let _ = reload_tx.send(parsed);
    })?;
    let (look_tx, looks) = mpsc::channel();
    let _look_watch = session::watch_look(config, move |parsed| {
        let _ = look_tx.send(parsed);
    })?;
    let deadline = run.exit_after.map(|d| Instant::now() + d);
    // Without an exit time, a replayed run ends once the recording has played and its last
    // frame has been drawn.
    let until_replayed = deadline.is_none() && replaying;
    let (background, premultiplied) = session::background(config);
    let input = &live.input;
    let (image, drawn, mut ages) = run_headless(
        &mut scene,
        &ctx,
        &mut receiver,
        &HeadlessPace {
            fps: config.render.headless_fps,
            background,
            premultiplied,
            render_on_change: config.window.render_on_change,
            motion: config.window.motion,
        },
        |scene| {
            let mut changed = false;
            while let Ok(parsed) = reloads.try_recv() {
                let _ = reload_mapping(scene, parsed);
                changed = true;
            }
            while let Ok(parsed) = looks.try_recv() {
                let _ = reload_look(scene, parsed);
                changed = true;
            }
            changed |= scene.update_look(false);
            while let Ok(change) = cameras.try_recv() {
                match change {
                    StageChange::Camera(camera) => scene.set_camera(camera),
                    StageChange::Layers(stack) => {
                        if let Err(e) = scene.set_stack(&stack) {
                            tracing::error!(error = %e, "layer targets kept as they were");
                        }
                    }
                }
                changed = true;
            }
            changed
        },
        || {
            deadline.is_some_and(|d| Instant::now() >= d)
                || (until_replayed && input.finished() && counters.snapshot().idle())
        },
    );
    let (frames_received, malformed) = live.input.counts();
    live.input.shutdown();
    drop(scene);
    ages.sort_unstable();
    let report = HeadlessReport {
        frames_drawn: drawn,
        frames_received,
        frames_dropped: counters.snapshot().dropped,
        malformed,
        sample_age_us: AgeStats {
            p50: percentile(&ages, 50.0),
            p99: percentile(&ages, 99.0),
        },
        tracking: *live.tracking.lock().unwrap_or_else(PoisonError::into_inner),
    };
    Ok((image, report))
}

/// One still image of `frame` offscreen, `size` pixels, framed and coloured as `config` says.
pub fn snapshot(
    config: &Config,
    avatar: Avatar,
    mapping: CompiledMapping,
    frame: &crate::arkit::FaceFrame,
    size: (u32, u32),
) -> Result<crate::image::RgbaImage, LiveError> {
    let ctx = HeadlessContext::new(size.0, size.1)?;
    let mut scene = Scene::new(ctx.gl(), avatar, config.render.morph)?;
    scene.set_lod(config.render.lod);
    scene.set_mapping(mapping);
    scene.set_camera(config.camera);
    if let Some(look) = session::load_look(config, scene.mapping())? {
        scene.set_look(look);
        scene.update_look(true);
    }
    let (clear_color, alpha) = session::background(config);
    scene.set_frame(Some(frame));
    Ok(scene.draw_image(&ctx, clear_color, alpha))
}

/// The guided calibration routine on live input: prompts on the terminal and, with `stage`
/// (the avatar and its mapping), as cards beside the face in the stage window. `None` when the
/// performer cancelled or closed the window.
pub fn calibrate_live(
    config: &Config,
    profiles: PathBuf,
    old: Option<&Profile>,
    performer: &str,
    stage: Option<(Avatar, CompiledMapping)>,
) -> Result<Option<Calibration>, LiveError> {
    let (raw_tx, raw_rx) = mpsc::sync_channel(1024);
    let (sender, receiver) = bridge::channel(QUEUE);
    let options = |notify| LiveOptions {
        profile: old,
        profiles: profiles.clone(),
        notify,
        tap: Some(raw_tx.clone()),
        ..LiveOptions::default()
    };
    let Some((avatar, mapping)) = stage else {
        let live = session::start(config, sender, options(None))?;
        drop(raw_tx);
        let mut ui = StageUi::new(TerminalUi::stdio(), None);
        let result = calibrate::run_routine(raw_rx, &mut ui, old, performer);
        live.input.shutdown();
        return Ok(result?);
    };
    let stage = StageLoop::open("use --no-window to calibrate on the terminal only")?;
    let notify = stage.notifier();
    let live = session::start(config, sender, options(Some(Arc::clone(&notify))))?;
    drop(raw_tx);
    let old_owned = old.cloned();
    let performer = performer.to_string();
    let routine = std::thread::Builder::new()
        .name("facewire-calibrate".into())
        .spawn(move || {
            let mut ui = StageUi::new(TerminalUi::stdio(), Some(Arc::clone(&notify)));
            let result = calibrate::run_routine(raw_rx, &mut ui, old_owned.as_ref(), &performer);
            notify(AppEvent::Shutdown);
            result
        })
        .map_err(|_| LiveError::Routine("could not start"))?;
    let mut app = StageApp::new(
        StageOptions {
            config: config.clone(),
            config_path: None,
            exit_after: None,
            mapping_path: None,
            screenshots: None,
        },
        avatar,
        mapping,
        receiver,
    );
    stage.run(&mut app)?;
    // Closing the window ends the input, which ends a routine still waiting for frames.
    live.input.shutdown();
    let result = routine.join().map_err(|_| LiveError::Routine("panicked"))?;
    if let Some(e) = app.take_error() {
        return Err(e.into());
    }
    match result {
        Ok(calibration) => Ok(calibration),
        Err(calibrate::SessionError::Disconnected) => Ok(None),
    }
}

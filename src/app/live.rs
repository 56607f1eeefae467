//! The front-ends of live runs: the stage window (with its control panel), the offscreen loop
//! and the calibration routine's stage, each drawing what a run that the session put together
//! ([`session::stage`], [`session::offscreen`], [`session::calibration`]) hands it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::{
    percentile, reload_look, reload_mapping, run_headless, AgeStats, AppError, AppEvent,
    HeadlessPace, HeadlessReport, LoopError, Scene, StageApp, StageLoop, StageOptions,
};
use crate::avatar::Avatar;
use crate::calibrate::{self, Calibration, Profile};
use crate::config::Config;
use crate::control::telemetry::Telemetry;
use crate::mapping::CompiledMapping;
use crate::render::headless::HeadlessContext;
use crate::session::{self, LiveRun, StartError};

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
    Calibration(#[from] calibrate::DriveError),
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
    let telemetry = Telemetry::new(Instant::now());
    let source = run.source;
    let exit_after = run.exit_after;
    let live = session::stage(run, &avatar, Arc::clone(&notify), Arc::clone(&telemetry))?;
    let stop = Arc::clone(&notify);
    session::on_stop(move || stop(AppEvent::Shutdown))?;
    let global_keys = if config.window.global_hotkeys {
        super::GlobalKeys::start(notify)
    } else {
        None
    };
    // The watchers and the API serve until the stage closes.
    let _keep = live.keep;
    let mut app = StageApp::new(
        StageOptions {
            config: config.clone(),
            config_path: source.map(Path::to_path_buf),
            exit_after,
            mapping_path: session::mapping_path(config),
            screenshots,
        },
        avatar,
        mapping,
        live.receiver,
    )
    .with_panel(telemetry, Box::new(live.controls))
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
    tracing::info!(morph = ?scene.morph_path(), width = size.0, height = size.1, "headless renderer ready");
    let deadline = run.exit_after.map(|d| Instant::now() + d);
    // Without an exit time, a replayed run ends once the recording has played and its last
    // frame has been drawn.
    let until_replayed = deadline.is_none() && run.replay.is_some();
    let mut live = session::offscreen(run, scene.avatar())?;
    let stopped = Arc::new(AtomicBool::new(false));
    let stop = Arc::clone(&stopped);
    session::on_stop(move || stop.store(true, Ordering::SeqCst))?;
    let (background, premultiplied) = session::background(config);
    let (input, counters, changes) = (&live.input, &live.counters, &live.changes);
    let (image, drawn, mut ages) = run_headless(
        &mut scene,
        &ctx,
        &mut live.receiver,
        &HeadlessPace {
            fps: config.render.headless_fps,
            background,
            premultiplied,
            render_on_change: config.window.render_on_change,
            motion: config.window.motion,
        },
        |scene| {
            let mut changed = scene.update_look(false);
            for event in changes.try_iter() {
                changed |= apply_change(scene, event);
            }
            changed
        },
        || {
            stopped.load(Ordering::SeqCst)
                || deadline.is_some_and(|d| Instant::now() >= d)
                || (until_replayed && input.finished() && counters.snapshot().idle())
        },
    );
    let dropped = counters.snapshot().dropped;
    let input = live.finish();
    drop(scene);
    ages.sort_unstable();
    let report = HeadlessReport {
        frames_drawn: drawn,
        frames_received: input.frames_received,
        frames_dropped: dropped,
        malformed: input.malformed,
        sample_age_us: AgeStats {
            p50: percentile(&ages, 50.0),
            p99: percentile(&ages, 99.0),
        },
        tracking: input.tracking,
    };
    Ok((image, report))
}

/// Applies a change the offscreen run was told of (a saved mapping, look or configuration, a
/// plugin's move of the avatar); whether the picture may change.
fn apply_change(scene: &mut Scene, event: AppEvent) -> bool {
    match event {
        AppEvent::Mapping(parsed) => {
            let _ = reload_mapping(scene, parsed.map(|m| *m));
        }
        AppEvent::Look(parsed) => {
            let _ = reload_look(scene, parsed.map(|l| *l));
        }
        AppEvent::Camera(camera) => scene.set_camera(camera),
        AppEvent::MoveModel { to, over } => scene.move_model(to, over, Instant::now()),
        AppEvent::Layers(stack) => {
            if let Err(e) = scene.set_stack(&stack) {
                tracing::error!(error = %e, "layer targets kept as they were");
            }
        }
        _ => return false,
    }
    true
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

/// Still images of `frames` offscreen, one after another in one GL context, `size` pixels,
/// framed and coloured as `config` says; `each` takes each image with its index and may stop
/// the sequence with an error. Springs and motion are not simulated between the images: each is
/// its frame's pose at rest, as [`snapshot`] draws it.
pub fn snapshot_sequence<E: From<LiveError>>(
    config: &Config,
    avatar: Avatar,
    mapping: CompiledMapping,
    frames: &[crate::arkit::FaceFrame],
    size: (u32, u32),
    mut each: impl FnMut(usize, crate::image::RgbaImage) -> Result<(), E>,
) -> Result<(), E> {
    let ctx = HeadlessContext::new(size.0, size.1).map_err(LiveError::from)?;
    let mut scene = Scene::new(ctx.gl(), avatar, config.render.morph).map_err(LiveError::from)?;
    scene.set_lod(config.render.lod);
    scene.set_mapping(mapping);
    scene.set_camera(config.camera);
    if let Some(look) = session::load_look(config, scene.mapping()).map_err(LiveError::from)? {
        scene.set_look(look);
        scene.update_look(true);
    }
    let (clear_color, alpha) = session::background(config);
    for (i, frame) in frames.iter().enumerate() {
        scene.set_frame(Some(frame));
        each(i, scene.draw_image(&ctx, clear_color, alpha))?;
    }
    Ok(())
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
    let Some((avatar, mapping)) = stage else {
        let live = session::calibration(config, profiles, old, performer, None)?;
        let result = live.routine.join();
        live.input.shutdown();
        return Ok(result.map_err(|_| LiveError::Routine("panicked"))??);
    };
    let stage = StageLoop::open("use --no-window to calibrate on the terminal only")?;
    let live = session::calibration(config, profiles, old, performer, Some(stage.notifier()))?;
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
        live.receiver,
    );
    stage.run(&mut app)?;
    // Closing the window ends the input, which ends a routine still waiting for frames.
    live.input.shutdown();
    let result = live
        .routine
        .join()
        .map_err(|_| LiveError::Routine("panicked"))?;
    if let Some(e) = app.take_error() {
        return Err(e.into());
    }
    match result {
        Ok(calibration) => Ok(calibration),
        Err(calibrate::DriveError::Disconnected) => Ok(None),
    }
}

//! Every kind of live run put together in one place: the input and its chain, the watchers of
//! the configuration, mapping and look, lip sync, the API and the hand-off, for the stage window
//! ([`stage`]), the offscreen loop ([`offscreen`]), the calibration routine ([`calibration`]) and
//! the relay, which has no front-end at all ([`relay`]).
//!
//! A front-end gets a frame receiver and a control handle ([`LiveControls`] for the stage, the
//! input for the offscreen loop) and hears of changes through its [`Notify`]; nothing here
//! knows how it draws.

use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use super::{
    avatar_presets, start, watch_config, watch_look, watch_mapping, ConfigWatch, Input, LipInput,
    Live, LiveControls, LiveOptions, Replay, StageUi, StartError, TrackingWatch,
};
use crate::avatar::Avatar;
use crate::bridge::{self, BridgeCounters, FrameReceiver};
use crate::calibrate::{self, Calibration, Profile, TerminalUi, TrackingSummary};
use crate::config::Config;
use crate::control::telemetry::Telemetry;
use crate::control::{AppEvent, Notify};
use crate::watch::FileWatcher;

/// Hand-off queue length: a few frames absorb scheduling jitter; more would only add latency.
const QUEUE: usize = 4;

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
    /// run (or a run without a window whose `[lipsync] device` names one).
    fn lip_input(&self, window: bool) -> LipInput<'_> {
        match self.lipsync_wav {
            Some(file) => LipInput::Wav(file),
            None if window || self.config.lipsync.device().is_some() => LipInput::Microphone,
            None => LipInput::None,
        }
    }

    /// The folder holding the configuration (the working directory for a file named without
    /// one).
    fn config_folder(&self) -> PathBuf {
        let folder = &self.config.folder;
        if folder.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            folder.clone()
        }
    }
}

/// The watchers a run keeps while it lasts: the configuration (with its expressions file), the
/// mapping and the look. Dropping them stops them.
pub struct Watches {
    _config: Option<ConfigWatch>,
    _mapping: Option<FileWatcher>,
    _look: Option<FileWatcher>,
}

/// Watches the configuration, the mapping and the look of `run`; what changes reaches the
/// chain through `commands` and the front-end through `front` (`None`: the relay, which draws
/// nothing and only logs).
fn watch(
    run: &LiveRun<'_>,
    commands: &mpsc::Sender<super::SessionCommand>,
    front: Option<&Notify>,
) -> Result<Watches, StartError> {
    let config = watch_config(
        run.source,
        run.config,
        run.profile.as_ref(),
        commands.clone(),
        front.cloned(),
    )?;
    let (mapping, look) = match front {
        Some(front) => {
            let tell = Arc::clone(front);
            let mapping = watch_mapping(run.config, move |parsed| {
                tell(AppEvent::Mapping(parsed.map(Box::new)));
            })?;
            let tell = Arc::clone(front);
            let look = watch_look(run.config, move |parsed| {
                tell(AppEvent::Look(parsed.map(Box::new)));
            })?;
            (mapping, look)
        }
        None => (None, None),
    };
    Ok(Watches {
        _config: config,
        _mapping: mapping,
        _look: look,
    })
}

/// What serves a run while it lasts besides its input: the watchers, the connect card's watch
/// (hints until the first frame), lip sync's audio (when the controls do not hold it) and the
/// API. Dropping it stops them.
pub struct Keep {
    _watches: Watches,
    _connect: Option<super::ConnectHandle>,
    _lipsync: Option<super::LipSource>,
    _api: Option<super::LiveApi>,
}

/// The stage window's run: what the window draws and what its panel drives.
pub struct StageRun {
    /// The mixed frames.
    pub receiver: FrameReceiver,
    /// The control panel's handle on the run; dropping it stops the input.
    pub controls: LiveControls,
    /// The watchers, the connect card's watch and the API, kept until the window closes.
    pub keep: Keep,
}

/// Starts a live run for the stage window, whose event loop `notify` reaches and whose panel
/// reads `telemetry`; `avatar` is the one it shows first.
pub fn stage(
    run: LiveRun<'_>,
    avatar: &Avatar,
    notify: Notify,
    telemetry: Arc<Telemetry>,
) -> Result<StageRun, StartError> {
    let config = run.config;
    let (sender, receiver) = bridge::channel(QUEUE);
    let live = start(
        config,
        Some(sender),
        LiveOptions {
            profile: run.profile.as_ref(),
            profiles: run.profiles.clone(),
            notify: Some(Arc::clone(&notify)),
            telemetry: Some(telemetry),
            lipsync: run.lip_input(true),
            replay: run.replay,
            tap: None,
            presets: avatar_presets(avatar),
            api: true,
            // The stage draws the avatar: the API's moves go to `notify`.
            front: None,
        },
    )?;
    let watches = watch(&run, &live.commands, Some(&notify))?;
    let controls = LiveControls::new(
        live.input,
        live.commands,
        notify,
        run.profiles.clone(),
        run.profile.as_ref().map(|p| p.performer.clone()),
        run.config_folder(),
        config,
    )
    .with_lipsync(live.lipsync)
    .with_api(live.api.as_ref().map(|api| api.model.clone()))
    .with_expressions(live.expressions)
    .with_config_path(run.source);
    Ok(StageRun {
        receiver,
        controls,
        keep: Keep {
            _watches: watches,
            _connect: live.connect,
            _lipsync: None,
            _api: live.api,
        },
    })
}

/// The offscreen loop's run: the frames it draws, the changes it applies before each, and the
/// input it watches for the end of a replay.
pub struct OffscreenRun {
    /// The mixed frames.
    pub receiver: FrameReceiver,
    /// The hand-off's counters (a replay has ended once the last frame is taken).
    pub counters: Arc<BridgeCounters>,
    /// Mapping, look, camera and layer changes, in the order they were saved, and the API's
    /// moves of the avatar.
    pub changes: mpsc::Receiver<AppEvent>,
    /// The input (stop it with [`OffscreenRun::finish`]).
    pub input: Input,
    tracking: TrackingWatch,
    _keep: Keep,
}

/// How a run's input went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct InputReport {
    /// Frames committed by the input.
    pub frames_received: u64,
    /// Datagrams that could not be decoded.
    pub malformed: u64,
    /// The tracking state at the end and how often it changed.
    pub tracking: TrackingSummary,
}

impl InputReport {
    /// Stops `input` and reports how it went, with the state `tracking` last logged.
    fn stop(input: Input, tracking: &TrackingWatch) -> InputReport {
        let (frames_received, malformed) = input.counts();
        input.shutdown();
        let tracking = *tracking.borrow();
        InputReport {
            frames_received,
            malformed,
            tracking,
        }
    }
}

impl OffscreenRun {
    /// Stops the input and reports how it went.
    pub fn finish(self) -> InputReport {
        InputReport::stop(self.input, &self.tracking)
    }
}

/// Starts a live run for the offscreen loop, which shows `avatar`.
pub fn offscreen(run: LiveRun<'_>, avatar: &Avatar) -> Result<OffscreenRun, StartError> {
    let (sender, receiver) = bridge::channel(QUEUE);
    let counters = sender.counters();
    let (tx, changes) = mpsc::channel();
    // Saved files and the API's moves of the avatar reach the loop through one channel.
    let front: Notify = Arc::new(move |event| {
        let _ = tx.send(event);
    });
    let live = start(
        run.config,
        Some(sender),
        LiveOptions {
            profile: run.profile.as_ref(),
            profiles: run.profiles.clone(),
            lipsync: run.lip_input(false),
            replay: run.replay,
            presets: avatar_presets(avatar),
            api: true,
            front: Some(Arc::clone(&front)),
            ..LiveOptions::default()
        },
    )?;
    let watches = watch(&run, &live.commands, Some(&front))?;
    Ok(OffscreenRun {
        receiver,
        counters,
        changes,
        input: live.input,
        tracking: live.tracking,
        _keep: Keep {
            _watches: watches,
            _connect: live.connect,
            _lipsync: live.lipsync,
            _api: live.api,
        },
    })
}

/// What asks a relay to end, besides its clock and the end of its replay.
pub type StopRequest = mpsc::Receiver<()>;

/// How a relay went.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct RelayReport {
    /// How its input went.
    #[serde(flatten)]
    pub input: InputReport,
    /// Seconds it ran.
    pub seconds: f64,
}

/// The relay: the whole live chain with no front-end (no window, no GL), forwarding to
/// `[forward] to` and serving the API, until `stop` fires (a signal), `run.exit_after` passes
/// or, replaying without it, the recording has played.
pub fn relay(run: LiveRun<'_>, stop: &StopRequest) -> Result<RelayReport, StartError> {
    let started = Instant::now();
    let config = run.config;
    if config.forward.to.is_empty() {
        tracing::warn!(
            "the relay forwards to nobody: add --forward ADDR or [forward] to = [\"ADDR\"] \
             (the API still serves)"
        );
    }
    let presets = if config.render.model.as_os_str().is_empty() {
        Vec::new()
    } else {
        // A VRM's preset expressions are layers of the mixer; the avatar is read, never drawn.
        match super::load_model_at(config, Some(&config.render.model)) {
            Ok(loaded) => avatar_presets(&loaded.avatar),
            Err(error) => {
                tracing::warn!(%error, "the avatar's expressions are left out");
                Vec::new()
            }
        }
    };
    let live: Live = start(
        config,
        None,
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
    let _watches = watch(&run, &live.commands, None)?;
    let replaying = run.replay.is_some();
    let deadline = run.exit_after.map(|d| started + d);
    tracing::info!(
        forward = ?config.forward.to,
        api = config.api.enabled,
        "relay running (SIGTERM or Ctrl-C ends it)"
    );
    loop {
        let poll = Duration::from_millis(50);
        let wait = deadline.map_or(poll, |d| {
            d.saturating_duration_since(Instant::now()).min(poll)
        });
        match stop.recv_timeout(wait) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if deadline.is_some_and(|d| Instant::now() >= d)
            || (deadline.is_none() && replaying && live.input.finished())
        {
            break;
        }
    }
    let input = InputReport::stop(live.input, &live.tracking);
    tracing::info!(
        frames = input.frames_received,
        malformed = input.malformed,
        "relay stopped"
    );
    Ok(RelayReport {
        input,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The calibration routine's run: the frames for its stage and the routine on its own thread.
pub struct CalibrationRun {
    /// The mixed frames, for the stage.
    pub receiver: FrameReceiver,
    /// The input (stop it to end a routine still waiting for frames).
    pub input: Input,
    /// The routine; `Ok(None)` when the performer cancelled, `Err` when the input ended first.
    pub routine: std::thread::JoinHandle<Result<Option<Calibration>, calibrate::DriveError>>,
    /// The connect card's watch (hints until the first frame).
    _connect: Option<super::ConnectHandle>,
}

/// Starts the guided calibration routine on live input, prompting on the terminal and, with
/// `stage` (the window's event loop), as cards on the stage; the stage is told to close when
/// the routine ends.
pub fn calibration(
    config: &Config,
    profiles: PathBuf,
    old: Option<&Profile>,
    performer: &str,
    stage: Option<Notify>,
) -> Result<CalibrationRun, StartError> {
    let (raw_tx, raw_rx) = mpsc::sync_channel(1024);
    let (sender, receiver) = bridge::channel(QUEUE);
    let live = start(
        config,
        Some(sender),
        LiveOptions {
            profile: old,
            profiles,
            notify: stage.clone(),
            tap: Some(raw_tx),
            ..LiveOptions::default()
        },
    )?;
    let old = old.cloned();
    let performer = performer.to_string();
    let input = match &live.input {
        Input::Network(handle) => Some(handle.probe()),
        Input::Replay(_) | Input::Video(_) | Input::Webcam(_) => None,
    };
    println!(
        "Calibration: {} steps, {} once face data arrives (Ctrl-C stops it without saving).",
        calibrate::STEPS.len(),
        calibrate::minutes_and_seconds(calibrate::routine_duration(
            calibrate::STEPS,
            calibrate::PREPARE
        )),
    );
    let routine = std::thread::Builder::new()
        .name("facewire-calibrate".into())
        .spawn(move || {
            let mut ui = StageUi::new(TerminalUi::stdio(), stage.clone());
            if let Some(input) = input {
                ui = ui.with_frames(Box::new(move || input.frames()));
            }
            let result = calibrate::run_routine(raw_rx, &mut ui, old.as_ref(), &performer);
            if let Some(stage) = stage {
                stage(AppEvent::Shutdown);
            }
            result
        })
        .map_err(StartError::Thread)?;
    Ok(CalibrationRun {
        receiver,
        input: live.input,
        routine,
        _connect: live.connect,
    })
}

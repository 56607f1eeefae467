//! A live run's wiring, free of GL and windowing: which input (the network or a replay), the
//! chain from decoded frames to the hand-off (conditioner, mixer, forwarding, telemetry), neutral
//! capture, the calibration routine's launchers and the config and mapping watchers.
//!
//! `main.rs` parses the command line and calls [`start`]; the stage (the app layer) gets the
//! frames through the [`crate::bridge`] and the control panel's actions through
//! [`LiveControls`]. Events for the stage go through a [`Notify`], a plain function, so nothing
//! here depends on winit.

mod api_host;
mod avatar;
mod chain;
mod connect;
mod controls;
pub mod forward;
mod input;
mod lip_input;
mod model;
mod neutral;
mod routine;
mod run;
mod signal;
mod watch;

use std::path::PathBuf;
use std::sync::{mpsc, Arc};

pub use api_host::{model_info, ApiModel, LiveApi, SessionHost, DEFAULT_HEAD_ID, REMOVE_ALL_ID};
pub use avatar::{
    avatar_presets, background, check_mapping, default_head_mapping, load_avatar, load_look,
    load_model, look_path, mapping_path, mapping_source, DEFAULT_HEAD_MAPPING_FILE,
};
pub use chain::{ApiLink, ExpressionsWatch, LiveSink, Outputs, SessionCommand, TrackingWatch};
pub use connect::{watch_connection, ConnectHandle, ShowCard};
pub use controls::LiveControls;
pub use input::{Input, Replay};
pub use lip_input::{start_lipsync, LipInput, LipSource};
pub use model::{
    load_model_at, mapping_for, models_in, resolve_model, sibling_mapping, watch_model, NoSuchModel,
};
pub use neutral::{capture_neutral, NEUTRAL_MAX_AGE};
pub use routine::{FrameCount, PanelRoutineUi, StageUi};
pub use run::{
    calibration, offscreen, relay, stage, CalibrationRun, InputReport, Keep, LiveRun, OffscreenRun,
    RelayReport, StageRun, StopRequest, Watches,
};
pub use signal::{exit_on_stop, on_stop, INTERRUPTED};
pub use watch::{watch_config, watch_look, watch_mapping, ConfigWatch};

use crate::arkit::FaceFrame;
use crate::bridge::FrameSender;
use crate::calibrate::Profile;
use crate::config::Config;
use crate::control::telemetry::Telemetry;
pub use crate::control::Notify;

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The avatar could not be loaded.
    #[error(transparent)]
    Avatar(#[from] crate::avatar::AvatarError),
    /// The mapping does not parse or does not fit the avatar.
    #[error(transparent)]
    Mapping(#[from] crate::mapping::MappingError),
    /// The look preset (`--look`, `render.look`) is missing or does not fit the sliders.
    #[error(transparent)]
    Look(#[from] crate::look::LookError),
    /// The mapping file could not be read.
    #[error("cannot read the mapping {}", path.display())]
    ReadMapping {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A recording could not be loaded or played.
    #[error("cannot use the recording {}", path.display())]
    Recording {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: crate::record::RecordError,
    },
    /// The network listeners could not start.
    #[error(transparent)]
    Ingest(#[from] crate::ingest::IngestError),
    /// A video for the webcam tracker could not be read.
    #[error(transparent)]
    Video(#[from] crate::webcam::video::VideoError),
    /// The webcam tracker's networks failed.
    #[error(transparent)]
    Tracker(#[from] crate::webcam::model::ModelError),
    /// Forwarding could not start.
    #[error(transparent)]
    Forward(#[from] crate::session::forward::ForwardError),
    /// A file could not be watched for changes.
    #[error(transparent)]
    Watch(#[from] crate::watch::WatchError),
    /// A layer's target values do not fit the avatar.
    #[error(transparent)]
    LayerTargets(#[from] crate::mapping::LayerTargetError),
    /// The performer's profile could not be loaded.
    #[error(transparent)]
    Profile(#[from] crate::calibrate::ProfileError),
    /// The WAV file that stands in for the microphone could not be read.
    #[error(transparent)]
    Wav(#[from] crate::lipsync::wav::WavError),
    /// The handler of SIGTERM and Ctrl-C could not be set.
    #[error("cannot handle SIGTERM and Ctrl-C")]
    Signal(#[source] ctrlc::Error),
    /// A thread of the run could not be started.
    #[error("cannot start a thread")]
    Thread(#[source] std::io::Error),
}

/// What a live run needs besides the configuration and the hand-off.
#[derive(Default)]
pub struct LiveOptions<'a> {
    /// The performer's profile, applied from the first frame.
    pub profile: Option<&'a Profile>,
    /// Where profiles are saved (a captured neutral goes into the profile in use).
    pub profiles: PathBuf,
    /// Where stage events go, when there is a stage window.
    pub notify: Option<Notify>,
    /// The front-end that draws the avatar, for the API's moves of it: `notify` when not
    /// given (a headless run gives its offscreen loop's channel; a relay has none).
    pub front: Option<Notify>,
    /// The control panel's telemetry, when there is a panel.
    pub telemetry: Option<Arc<Telemetry>>,
    /// A recording to play instead of listening.
    pub replay: Option<Replay<'a>>,
    /// A copy of every raw frame from the start (the calibration routine's input).
    pub tap: Option<mpsc::SyncSender<FaceFrame>>,
    /// Where lip sync listens.
    pub lipsync: LipInput<'a>,
    /// The avatar's VRM preset expressions (see [`avatar_presets`]).
    pub presets: Vec<crate::expressions::Expression>,
    /// Serve the API for stream tools (when `[api] enabled`).
    pub api: bool,
}

/// A running input with its chain.
pub struct Live {
    /// The input; stopping it ends the chain.
    pub input: Input,
    /// Commands to the chain on the ingest thread.
    pub commands: mpsc::Sender<SessionCommand>,
    /// The tracking state as the chain last reported it.
    pub tracking: TrackingWatch,
    /// The connect card's watch, for a network input (it ends at the first frame).
    pub connect: Option<ConnectHandle>,
    /// Lip sync's audio input, while it runs.
    pub lipsync: Option<LipSource>,
    /// The expressions and their states, as the chain keeps them.
    pub expressions: ExpressionsWatch,
    /// The API for stream tools, while it runs; it stops when this is dropped.
    pub api: Option<LiveApi>,
}

/// Starts the input of a live run with its chain, handing mixed frames to `sender` (`None`:
/// nothing draws them, as in the relay).
pub fn start(
    config: &Config,
    sender: Option<FrameSender>,
    options: LiveOptions<'_>,
) -> Result<Live, StartError> {
    let (tracking_tx, tracking) = tokio::sync::watch::channel(Default::default());
    let (expressions_tx, expressions) = tokio::sync::watch::channel(Vec::new());
    let notify = options.notify.clone();
    let (commands, command_rx) = mpsc::channel();
    let lip_telemetry = options.telemetry.clone();
    let front = options.front.clone().or_else(|| notify.clone());
    let api = if options.api && config.api.enabled {
        start_api(
            config,
            &commands,
            &expressions,
            &tracking,
            notify.clone(),
            front,
        )
    } else {
        None
    };
    // A run with a control panel shows the phone's address field; one without says how else.
    let panel = options.telemetry.is_some();
    let outputs = Outputs {
        sender,
        telemetry: options.telemetry,
        wake: config.window.render_on_change && options.notify.is_some(),
        notify: options.notify,
        tracking: tracking_tx,
        expressions: expressions_tx,
        api: api.as_ref().map(|(link, _)| link.clone()),
    };
    let mut sink = LiveSink::new(
        config,
        options.profile,
        options.profiles,
        outputs,
        command_rx,
        options.presets,
    )?;
    if let Some(tap) = options.tap {
        sink = sink.with_tap(tap);
    }
    let input = Input::start(config, options.replay, Box::new(sink), notify.clone())?;
    let connect = match &input {
        Input::Network(handle) => {
            let show = notify.map(|notify| -> ShowCard {
                Box::new(move |card, waiting| {
                    notify(crate::control::AppEvent::Connect {
                        card: Box::new(card),
                        waiting,
                    });
                })
            });
            watch_connection(
                handle.probe(),
                handle.listeners(),
                config.ingest.phone,
                show,
                panel,
            )
        }
        Input::Webcam(webcam) => notify.and_then(|notify| {
            connect::watch_webcam(
                webcam.watch(),
                Box::new(move |card, waiting| {
                    notify(crate::control::AppEvent::Connect {
                        card: Box::new(card),
                        waiting,
                    });
                }),
            )
        }),
        Input::Replay(_) | Input::Video(_) => None,
    };
    // After the connect watch: opening the microphone can take a moment, and the card should
    // not miss a phone that is already sending.
    let lipsync = start_lipsync(
        &config.lipsync,
        options.lipsync,
        options.profile,
        commands.clone(),
        lip_telemetry,
    )?;
    Ok(Live {
        input,
        commands,
        tracking,
        connect,
        lipsync,
        expressions,
        api: api.map(|(_, api)| api),
    })
}

/// Starts the API's server over the run's chain. A server that cannot start (its port taken,
/// most often by VTube Studio itself) is reported, and the run goes on without it.
fn start_api(
    config: &Config,
    commands: &mpsc::Sender<SessionCommand>,
    expressions: &ExpressionsWatch,
    tracking: &TrackingWatch,
    notify: Option<Notify>,
    front: Option<Notify>,
) -> Option<(ApiLink, LiveApi)> {
    let host = SessionHost::new(
        config,
        commands.clone(),
        expressions.clone(),
        tracking.clone(),
        notify.clone(),
        front,
    );
    let model = host.model();
    let injected = crate::api::InjectedStore::new();
    match crate::api::spawn(
        &config.api,
        Arc::new(host),
        injected.clone(),
        crate::api::Limits::default(),
    ) {
        Ok(handle) => {
            model.attach(handle.emitter());
            let link = ApiLink {
                injected,
                events: handle.emitter(),
            };
            Some((link, LiveApi { handle, model }))
        }
        Err(error) => {
            tracing::warn!(
                %error,
                listen = %config.api.listen,
                "the API for stream tools is off for this run: set [api] listen to another port, \
                 or [api] enabled = false if another program (VTube Studio) serves it"
            );
            if let Some(notify) = notify {
                notify(crate::control::AppEvent::Message {
                    topic: crate::control::Topic::Api,
                    error: true,
                    text: format!(
                        "the API for stream tools is off: {error}\n(set [api] listen to \
                         another port, or [api] enabled = false)"
                    ),
                });
            }
            None
        }
    }
}

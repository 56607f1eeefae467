//! The control events that a session's threads send to its front-end: in a window run the
//! stage's winit event loop (through its `EventLoopProxy`), offscreen a channel read before
//! each frame, in the relay the log.

/// Control messages from background threads to the winit event loop.
#[derive(Debug)]
pub enum AppEvent {
    /// A new frame waits in the hand-off queue; sent only when the stage renders on change, to
    /// wake it.
    FrameReady,
    /// The tracking state changed (face lost, fading, reacquired, ...).
    Tracking(crate::calibrate::TrackingState),
    /// The mapping file was saved: its new content, or why it cannot be read.
    Mapping(Result<Box<crate::mapping::MappingFile>, crate::mapping::MappingError>),
    /// The look preset was saved: its new content (read, not yet checked against the
    /// sliders), or why it cannot be read.
    Look(Result<Box<crate::look::LookFile>, crate::look::LookError>),
    /// An avatar to show instead of the current one (chosen in the panel, or its file saved
    /// anew), or why it could not be loaded (the current one stays).
    Model(Result<Box<super::LoadedModel>, super::ModelLoadError>),
    /// The configuration's stage background changed (straight sRGB RGBA).
    Background([f32; 4]),
    /// The configuration's stack (`[layers]`, `[expressions]`, ...) changed: the layers' own
    /// target values to resolve anew.
    Layers(Box<crate::stack::StackConfig>),
    /// The configuration's `[camera]` framing changed.
    Camera(crate::config::CameraConfig),
    /// The connect card: what to enter in the phone app and, when nothing arrives, what to
    /// check. The stage shows it while `waiting` (until the first frame); the panel keeps it.
    Connect {
        /// The card, with its current hints.
        card: Box<crate::connect::ConnectCard>,
        /// No frame has arrived yet.
        waiting: bool,
    },
    /// Show this prompt card over the avatar (`None` hides it).
    Prompt(Option<super::PromptCard>),
    /// A message for the control panel: an error verbatim (with its file, line and column), or
    /// the outcome of an action.
    Message {
        /// What it is about.
        topic: super::Topic,
        /// Whether it reports a failure.
        error: bool,
        /// The text.
        text: String,
    },
    /// Where the calibration routine stands, for the control panel.
    Routine(super::RoutineView),
    /// Show this avatar instead (`None`: the default head), as the panel's choice does: a
    /// plugin of the API asked.
    LoadModel(Option<std::path::PathBuf>),
    /// A plugin of the API moves the avatar on the stage (`MoveModelRequest`): from where it
    /// stands to `to`, eased over `over` (at once when zero).
    MoveModel {
        /// Where it goes.
        to: crate::api::ModelPosition,
        /// How long the move takes.
        over: std::time::Duration,
    },
    /// A plugin of the API asks for a token: the panel asks the performer, whose answer goes
    /// to `reply` (`true`: allow).
    ApiApproval {
        /// The plugin's name.
        plugin: String,
        /// Its developer.
        developer: String,
        /// Where the answer goes.
        reply: tokio::sync::oneshot::Sender<bool>,
    },
    /// A global hotkey went down (`pressed`) or up: the desktop's id of an expression key
    /// registered by the app's global keys.
    GlobalKey {
        /// The hotkey's id.
        id: u32,
        /// Down or up.
        pressed: bool,
    },
    /// Stop the program.
    Shutdown,
}

/// Delivers an event to the front-end: threads without winit (the session, the calibration
/// routine) tell the stage, the offscreen loop or the relay's log through one of these.
pub type Notify = std::sync::Arc<dyn Fn(AppEvent) + Send + Sync>;

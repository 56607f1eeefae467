//! The control events that background threads send to the stage's winit event loop through
//! its `EventLoopProxy`.

/// Control messages from background threads to the winit event loop.
#[derive(Debug)]
pub enum AppEvent {
    /// A new frame waits in the hand-off queue; sent only when the stage renders on change, to
    /// wake it.
    FrameReady,
    /// The tracking state changed (face lost, fading, reacquired, ...).
    Tracking(crate::calibrate::TrackingState),
    /// The mapping file was saved: its new content, or why it cannot be read.
    Mapping(Result<Box<crate::mapping::MappingFile>, String>),
    /// The look preset was saved: its new content (read, not yet checked against the
    /// sliders), or why it cannot be read.
    Look(Result<Box<crate::looks::LookFile>, String>),
    /// An avatar to show instead of the current one (chosen in the panel, or its file saved
    /// anew), or why it could not be loaded (the current one stays).
    Model(Result<Box<crate::session::LoadedModel>, String>),
    /// The configuration's stage background changed (straight sRGB RGBA).
    Background([f32; 4]),
    /// The configuration's stack (`[layers]`, `[expressions]`, ...) changed: the layers' own
    /// target values to resolve anew.
    Layers(Box<crate::session::StackConfig>),
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
    Prompt(Option<crate::hud::PromptCard>),
    /// A message for the control panel: an error verbatim (with its file, line and column), or
    /// the outcome of an action.
    Message {
        /// What it is about.
        topic: crate::panel::Topic,
        /// Whether it reports a failure.
        error: bool,
        /// The text.
        text: String,
    },
    /// Where the calibration routine stands, for the control panel.
    Routine(crate::panel::RoutineView),
    /// Show this avatar instead (`None`: the default head), as the panel's choice does: a
    /// plugin of the API asked.
    LoadModel(Option<std::path::PathBuf>),
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
    /// registered by [`crate::app::GlobalKeys`].
    GlobalKey {
        /// The hotkey's id.
        id: u32,
        /// Down or up.
        pressed: bool,
    },
    /// Stop the program.
    Shutdown,
}

/// Delivers an event to the stage: threads without winit (the session, the calibration
/// routine) tell the stage through one of these.
pub type Notify = std::sync::Arc<dyn Fn(AppEvent) + Send + Sync>;

/// The stage's event loop, opened before the window so that background threads can be handed
/// a [`Notify`] first.
pub struct StageLoop {
    event_loop: winit::event_loop::EventLoop<AppEvent>,
}

/// The event loop could not be opened or ended with an error.
#[derive(Debug, thiserror::Error)]
#[error("{what}")]
pub struct LoopError {
    what: String,
    #[source]
    source: winit::error::EventLoopError,
}

impl StageLoop {
    /// Opens the event loop; `hint` ends the message when there is no display.
    pub fn open(hint: &str) -> Result<StageLoop, LoopError> {
        let event_loop = winit::event_loop::EventLoop::<AppEvent>::with_user_event()
            .build()
            .map_err(|source| LoopError {
                what: format!("cannot open a window ({hint})"),
                source,
            })?;
        Ok(StageLoop { event_loop })
    }

    /// A [`Notify`] that sends events to this loop.
    pub fn notifier(&self) -> Notify {
        let proxy = self.event_loop.create_proxy();
        std::sync::Arc::new(move |event| {
            let _ = proxy.send_event(event);
        })
    }

    /// Runs `app` until the stage closes.
    pub fn run(self, app: &mut super::StageApp) -> Result<(), LoopError> {
        self.event_loop.run_app(app).map_err(|source| LoopError {
            what: "the stage's event loop failed".into(),
            source,
        })
    }
}

//! The control events that background threads send to the stage's winit event loop through
//! its `EventLoopProxy`.

/// Control messages from background threads to the winit event loop.
#[derive(Debug, Clone, PartialEq)]
pub enum AppEvent {
    /// A new frame waits in the hand-off queue; sent only when the stage renders on change, to
    /// wake it.
    FrameReady,
    /// The tracking state changed (face lost, fading, reacquired, ...).
    Tracking(crate::calibrate::TrackingState),
    /// The mapping file was saved: its new content, or why it cannot be read.
    Mapping(Result<Box<crate::mapping::MappingFile>, String>),
    /// The configuration's stage background changed (straight sRGB RGBA).
    Background([f32; 4]),
    /// The configuration's `[camera]` framing changed.
    Camera(crate::config::CameraConfig),
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
    /// Stop the program.
    Shutdown,
}

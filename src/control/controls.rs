//! What the control panel drives: the interface the program owning the input and the
//! performer profiles implements for the stage.

use std::path::PathBuf;

use crate::calibrate::Decision;
use crate::control::telemetry::InputCounters;
use crate::expressions::ExpressionStatus;
use crate::expressions::{Key, Trigger};

/// Why a control of the live run (the panel's or a stage hotkey's) could not be carried out.
/// Its text, with its causes, is what the panel shows: what went wrong and how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// The performer's profile could not be loaded (the message names the nearest ones).
    #[error(transparent)]
    Profile(#[from] crate::calibrate::ProfileError),
    /// The routine needs a live input, and runs one at a time.
    #[error(
        "calibration needs live input from the phone (not a replay), and one routine at a time"
    )]
    NotLive,
    /// Lip sync is off or has no input.
    #[error("lip sync is off ([lipsync] mode) or has no input")]
    NoLipSync,
    /// Recording vowels needs the microphone, not a WAV file.
    #[error("recording vowels needs an open microphone (see [lipsync] device)")]
    NoMicrophone,
    /// The vowels are saved into a profile, and none is chosen.
    #[error("choose a performer profile first: the vowels are saved into it")]
    NoPerformer,
    /// A thread of the control could not be started.
    #[error("cannot start {what}")]
    Thread {
        /// What the thread was for.
        what: &'static str,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The phone's address as typed is no IP address (an escaped excerpt of it).
    #[error(
        "`{0}` is not an IP address: enter the address the phone app shows, such as \
         192.168.1.23 (empty: the phone that sends first)"
    )]
    NotAnAddress(String),
    /// The input is not the network (a replay, a video, a webcam).
    #[error("there is no live network input to ask a phone for data")]
    NoNetworkInput,
    /// The phone is asked, but facewire has no configuration file to save it in.
    #[error(
        "{asked}; not saved: facewire started without a configuration file (--config PATH \
         names one)"
    )]
    NoConfigFile {
        /// What was done.
        asked: String,
    },
    /// The phone is asked, but saving it into the configuration failed.
    #[error("{asked}; not saved")]
    NotSaved {
        /// What was done.
        asked: String,
        /// Why it was not saved.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
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
    /// [`AppEvent::Message`](super::AppEvent::Message).
    fn capture_neutral(&mut self);
    /// Uses the profile `name` (`None`: no profile). Returns a confirmation.
    fn choose_profile(&mut self, name: Option<&str>) -> Result<String, ControlError>;
    /// Starts the guided calibration routine; its progress arrives as
    /// [`AppEvent::Routine`](super::AppEvent::Routine).
    fn start_calibration(&mut self) -> Result<(), ControlError>;
    /// Records the performer's vowels for lip sync from the microphone, prompting in the
    /// panel; the outcome arrives as [`AppEvent::Message`](super::AppEvent::Message).
    fn record_vowels(&mut self) -> Result<(), ControlError>;
    /// Answers the routine's review.
    fn review(&mut self, decision: Decision);
    /// The folder holding the configuration.
    fn config_folder(&self) -> PathBuf;
    /// The avatars the panel offers (`render.models_dir`), by file.
    fn models(&self) -> Vec<PathBuf>;
    /// The avatar chosen (`None`: the built-in default head).
    fn model(&self) -> Option<PathBuf>;
    /// Loads `path` (`None`: the default head) off the stage's thread and watches it; the avatar
    /// or the error arrives as [`AppEvent::Model`](super::AppEvent::Model).
    fn switch_model(&mut self, path: Option<PathBuf>);

    /// The avatar changed: these are the VRM preset expressions it has.
    fn set_presets(&mut self, _presets: Vec<crate::expressions::Expression>) {}

    /// A key went down (`pressed`) or up on the stage (or as a global hotkey): the expression
    /// bound to it follows (toggle ones flip on press, hold ones are on while it is down).
    fn expression_key(&mut self, _key: Key, _pressed: bool) {}

    /// Switches the expression `name` as `trigger` says (the panel's buttons).
    fn trigger_expression(&mut self, _name: &str, _trigger: Trigger) {}

    /// Switches every expression off.
    fn release_expressions(&mut self) {}

    /// The expressions and their states, as last published (none without a live input).
    fn expressions(&self) -> Vec<ExpressionStatus> {
        Vec::new()
    }

    /// The phone that iFacialMocap, Facemotion3d, VTube Studio and MeowFace are asked for data
    /// (`ingest.phone`), as the panel's field shows it ("" for none).
    fn phone(&self) -> String {
        String::new()
    }

    /// Asks the phone at `address` (empty: the phone that sends first) from now on, and with
    /// `save` writes it into the configuration file as `[ingest] phone` (comments kept).
    /// Returns a confirmation.
    fn set_phone(&mut self, address: &str, save: bool) -> Result<String, ControlError> {
        let _ = (address, save);
        Err(ControlError::NoNetworkInput)
    }
}

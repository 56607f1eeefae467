//! What the control panel drives: the interface the program owning the input and the
//! performer profiles implements for the stage.

use std::path::PathBuf;

use crate::calibrate::Decision;
use crate::control::telemetry::InputCounters;
use crate::expressions::ExpressionStatus;
use crate::expressions::{Key, Trigger};

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
    /// Uses the profile `name` (`None`: no profile). Returns a confirmation, or the error
    /// verbatim.
    fn choose_profile(&mut self, name: Option<&str>) -> Result<String, String>;
    /// Starts the guided calibration routine; its progress arrives as
    /// [`AppEvent::Routine`](super::AppEvent::Routine).
    fn start_calibration(&mut self) -> Result<(), String>;
    /// Records the performer's vowels for lip sync from the microphone, prompting in the
    /// panel; the outcome arrives as [`AppEvent::Message`](super::AppEvent::Message).
    fn record_vowels(&mut self) -> Result<(), String>;
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
    /// Returns a confirmation, or what went wrong and how to fix it.
    fn set_phone(&mut self, address: &str, save: bool) -> Result<String, String> {
        let _ = (address, save);
        Err("there is no live network input to ask a phone for data".into())
    }
}

//! What crosses between a session and its front-end, free of GUI types: the events a
//! session's threads send ([`AppEvent`] through a [`Notify`]), the [`Controls`] the control
//! panel drives, and the plain data they carry (messages' topics, the routine's progress, prompt
//! cards, a loaded avatar). The session, the app and the panel import this; it imports neither.

mod controls;
mod event;
pub mod telemetry;

pub use controls::{ControlError, Controls};
pub use event::{AppEvent, Notify};

use std::path::PathBuf;

use crate::avatar::Avatar;
use crate::mapping::CompiledMapping;

/// What a message is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topic {
    /// The mapping file.
    Mapping,
    /// The configuration file.
    Config,
    /// A performer profile.
    Profile,
    /// The avatar file.
    Avatar,
    /// The calibration routine or a captured neutral.
    Calibration,
    /// An expression switched on or off.
    Expressions,
    /// The API for stream tools.
    Api,
    /// The look preset.
    Look,
    /// The webcam: opened, missing, busy, unplugged, back.
    Webcam,
    /// Anything else (opening a folder, ...).
    General,
}

impl Topic {
    /// Its name in the panel's message list.
    pub fn label(self) -> &'static str {
        match self {
            Topic::Mapping => "mapping",
            Topic::Config => "config",
            Topic::Profile => "profile",
            Topic::Avatar => "avatar",
            Topic::Look => "look",
            Topic::Calibration => "calibration",
            Topic::Expressions => "expressions",
            Topic::Api => "api",
            Topic::Webcam => "webcam",
            Topic::General => "facewire",
        }
    }
}

/// Where the guided routine stands, as the panel shows it.
#[derive(Debug, Clone, PartialEq)]
pub enum RoutineView {
    /// Not running.
    Idle,
    /// A step is shown on the stage.
    Running {
        /// 1-based step number.
        step: usize,
        /// Steps in all.
        steps: usize,
        /// The step's prompt.
        title: String,
        /// What it is doing (getting ready, recording).
        status: String,
        /// Progress through the step, 0 to 1.
        progress: f32,
    },
    /// Finished: waiting for the performer's decision on this summary.
    Review {
        /// The summary table, as the terminal shows it.
        summary: String,
        /// The step titles, for "redo step".
        steps: Vec<String>,
    },
}

/// What one prompt card says.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptCard {
    /// The step's name, in large letters ("Blink").
    pub title: String,
    /// What to do ("Close both eyes fully, then open them.").
    pub instruction: String,
    /// A short status ("get ready: 2", "recording", "done").
    pub status: String,
    /// 1-based step number.
    pub step: usize,
    /// Number of steps.
    pub steps: usize,
    /// Progress through this step, 0 to 1.
    pub progress: f32,
}

/// The stage's prompt card for a routine step; `review_in` says where the summary is reviewed
/// once the routine finishes ("the terminal", "the panel").
pub fn prompt_card(prompt: &crate::calibrate::Prompt, review_in: &str) -> PromptCard {
    use crate::calibrate::Phase;
    let status = match prompt.phase {
        Phase::Prepare => format!("get ready: {}", prompt.remaining.as_secs() + 1),
        Phase::Record => "hold it...".to_string(),
        Phase::Waiting => "waiting for face data".to_string(),
        Phase::Finished => format!("done: review the summary in {review_in}"),
    };
    PromptCard {
        title: prompt.title.to_string(),
        instruction: prompt.instruction.to_string(),
        status,
        step: (prompt.step + 1).min(prompt.steps),
        steps: prompt.steps,
        progress: prompt.progress,
    }
}

/// What a prompt card last showed (step, phase, percent of progress, whole seconds left), so
/// that it is redrawn only when that changes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PromptChanges(Option<(usize, crate::calibrate::Phase, u32, u64)>);

impl PromptChanges {
    /// Whether `prompt` shows something other than the card last shown; remembers it.
    pub fn changed(&mut self, prompt: &crate::calibrate::Prompt) -> bool {
        let key = (
            prompt.step,
            prompt.phase,
            (prompt.progress * 100.0) as u32,
            prompt.remaining.as_secs(),
        );
        self.0.replace(key) != Some(key)
    }

    /// Forgets the card shown, so the next prompt is drawn.
    pub fn reset(&mut self) {
        self.0 = None;
    }
}

/// An avatar loaded for the stage, with its compiled mapping.
pub struct LoadedModel {
    /// The file (`None`: the built-in default head).
    pub path: Option<PathBuf>,
    /// The avatar.
    pub avatar: Avatar,
    /// Its mapping.
    pub mapping: CompiledMapping,
}

/// Why an avatar could not be loaded for the stage (the current one stays): the file, and the
/// cause with its own causes.
#[derive(Debug, thiserror::Error)]
#[error("cannot load {}", path.as_ref().map_or_else(|| "the default head".to_string(), |p| p.display().to_string()))]
pub struct ModelLoadError {
    /// The file (`None`: the built-in default head).
    pub path: Option<PathBuf>,
    /// Why: the avatar, its mapping or the layers' targets.
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

impl std::fmt::Debug for LoadedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedModel")
            .field("path", &self.path)
            .field("source", &self.avatar.source)
            .finish_non_exhaustive()
    }
}

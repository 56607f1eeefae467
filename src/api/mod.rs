//! A WebSocket server that speaks VTube Studio's public API, so stream automation (Streamer.bot,
//! Mix It Up, SAMMI, Lumia Stream) can drive facewire as if it were VTube Studio: hotkeys,
//! expressions, models, injected parameters and events. See `docs/api.md`.
//!
//! The server knows nothing of the rest of facewire: a live run implements [`ApiHost`], mixes
//! in the values of the [`InjectedStore`] it hands over, and pushes events through
//! [`ApiHandle::emit`].
//!
//! - `protocol.rs`: the envelope, responses and VTube Studio's error IDs.
//! - `plugin/`: one plugin's connection: authentication, every request, event subscriptions
//!   (`parameters.rs`: the requests about input parameters).
//! - `server.rs`: the listener thread, connection and message limits, per-client queues.
//! - `params.rs`: input parameter names (VTube Studio's and ARKit's) onto ARKit channels.
//! - `custom.rs`: the parameters plugins create, by VTube Studio's rules.
//! - `inject.rs`: injected values with their weights and lapse.
//! - `tokens.rs`: the plugins' tokens and the parameters they created, kept in a file.

use std::time::Duration;

use tokio::sync::oneshot;

pub mod custom;
mod inject;
pub mod params;
mod plugin;
pub mod protocol;
mod server;
mod tokens;

mod section;

pub use custom::{CustomParam, CustomParams};
pub use inject::{
    CustomValue, InjectError, InjectMode, Injected, InjectedStore, InjectedValues, InjectionSource,
    ParamValue, LAPSE,
};
pub use section::{valid_name, ApiConfig, DEFAULT_PORT};
pub use server::{spawn, ApiEmitter, ApiError, ApiHandle, ApiStats, Limits};

/// The name of the mixer layer that carries the values plugins inject (on top of the stack).
pub const LAYER_API: &str = "api";
pub use tokens::{TokenError, TokenStore};

/// A model the host can show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    /// Its unique ID (`modelID`).
    pub id: String,
    /// Its display name (`modelName`).
    pub name: String,
    /// Its file name (`vtsModelName`), e.g. `Alicia.vrm`.
    pub file: String,
}

/// Where the model stands on the stage, in VTube Studio's units (`MoveModelRequest`,
/// `CurrentModelResponse`'s `modelPosition`): its middle at `x`, `y` (-1 to 1 are the window's
/// left and right, bottom and top edges), turned `rotation` degrees clockwise, at `size` (-100
/// smallest to 100 largest; 0 is the framing facewire draws by itself).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ModelPosition {
    /// Left (-1) to right (1) edge; further is off the window.
    pub x: f32,
    /// Bottom (-1) to top (1) edge; further is off the window.
    pub y: f32,
    /// Degrees clockwise, 0 to 360.
    pub rotation: f32,
    /// -100 (smallest) to 100 (largest).
    pub size: f32,
}

/// The largest position either way, as VTube Studio.
pub const POSITION_LIMIT: f32 = 1000.0;
/// The largest turn either way in one request, in degrees, as VTube Studio.
pub const ROTATION_LIMIT: f32 = 360.0;
/// The largest size either way, as VTube Studio.
pub const SIZE_LIMIT: f32 = 100.0;
/// The longest a move may take, as VTube Studio.
pub const MOVE_TIME_LIMIT: Duration = Duration::from_secs(2);

/// A plugin's `MoveModelRequest`, checked: where to, and over how long.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelMove {
    /// How long the move takes (0: at once), at most [`MOVE_TIME_LIMIT`].
    pub over: Duration,
    /// Whether the values are added to where the model is (else they are where it goes).
    pub relative: bool,
    /// `positionX`, when given.
    pub x: Option<f32>,
    /// `positionY`, when given.
    pub y: Option<f32>,
    /// `rotation`, when given.
    pub rotation: Option<f32>,
    /// `size`, when given.
    pub size: Option<f32>,
}

impl ModelPosition {
    /// Where `m` takes a model that stands here: each value given set (or, `relative`, added),
    /// the others kept; positions and size kept within their limits, the turn within 0 to 360.
    pub fn moved(self, m: &ModelMove) -> ModelPosition {
        let apply = |now: f32, given: Option<f32>| match given {
            Some(v) if m.relative => now + v,
            Some(v) => v,
            None => now,
        };
        ModelPosition {
            x: apply(self.x, m.x).clamp(-POSITION_LIMIT, POSITION_LIMIT),
            y: apply(self.y, m.y).clamp(-POSITION_LIMIT, POSITION_LIMIT),
            rotation: apply(self.rotation, m.rotation).rem_euclid(360.0),
            size: apply(self.size, m.size).clamp(-SIZE_LIMIT, SIZE_LIMIT),
        }
    }
}

/// A hotkey of the current model./// A hotkey of the current model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hotkey {
    /// Its unique ID (`hotkeyID`).
    pub id: String,
    /// Its name; plugins may trigger it by name, in any letter case.
    pub name: String,
    /// VTube Studio's action type (`ToggleExpression`, `RemoveAllExpressions`, `CalibrateCam`,
    /// ...; `Files/HotkeyAction.cs`).
    pub action: String,
    /// What it does, in words.
    pub description: String,
    /// The expression, animation or model file it uses, or empty.
    pub file: String,
}

/// An expression of the current model and whether it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpressionState {
    /// Its file (`expressionFile`), the name plugins activate it by.
    pub file: String,
    /// Its display name.
    pub name: String,
    /// Whether it is active.
    pub active: bool,
}

/// A command the host handed on (a trigger for the run's chain): done once the run carried it
/// out and published what follows from it, so that a request after it sees its effect.
#[derive(Debug, Default)]
pub struct Applied(Option<oneshot::Receiver<()>>);

impl Applied {
    /// Done already (the host acted at once).
    pub fn now() -> Applied {
        Applied(None)
    }

    /// Done when `done` fires, or when its sender is dropped (the run ended).
    pub fn when(done: oneshot::Receiver<()>) -> Applied {
        Applied(Some(done))
    }

    /// Waits until it is done, or at most `limit`; whether it was carried out in time (a run
    /// that ended counts as done: nothing more will come of it).
    pub async fn wait(self, limit: Duration) -> bool {
        match self.0 {
            None => true,
            Some(done) => tokio::time::timeout(limit, done).await.is_ok(),
        }
    }
}

/// The host's answer to a plugin asking for a token.
#[derive(Debug)]
pub enum Approval {
    /// Allowed at once.
    Allow,
    /// Denied at once.
    Deny,
    /// Asked (a prompt on stage or in the panel): the answer comes later, `true` to allow.
    /// A dropped sender, or no answer within [`Limits::approval_timeout`], denies.
    Later(oneshot::Receiver<bool>),
}

/// Why the host could not do what a plugin asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// No model is loaded.
    #[error("no model is loaded")]
    NoModel,
    /// The model, hotkey or expression asked for does not exist.
    #[error("not found")]
    NotFound,
    /// The host cannot do it right now (loading, a dialog open).
    #[error("not possible right now")]
    Busy,
    /// It failed.
    #[error("{0}")]
    Failed(String),
}

/// What the live run offers the API. Methods are called from the API's thread and must not
/// block: a host hands commands on (a channel to the session) and answers from state it keeps;
/// a command whose effect later requests must see comes back as [`Applied`], which the
/// connection waits for (briefly, see [`Limits::apply_timeout`]) before it answers.
pub trait ApiHost: Send + Sync + 'static {
    /// The model shown, if any.
    fn current_model(&self) -> Option<ModelInfo>;
    /// Every model that can be loaded.
    fn available_models(&self) -> Vec<ModelInfo>;
    /// Loads the model with `id`; an empty `id` unloads the current one.
    fn load_model(&self, id: &str) -> Result<(), HostError>;
    /// The current model's hotkeys.
    fn hotkeys(&self) -> Vec<Hotkey>;
    /// Triggers the hotkey with ID `id` (already resolved from a name); the answer goes out
    /// once it is [`Applied`].
    fn trigger_hotkey(&self, id: &str) -> Result<Applied, HostError>;
    /// The current model's expressions.
    fn expressions(&self) -> Vec<ExpressionState>;
    /// Shows (`active`) or hides the expression `file`, fading over `fade`; the answer goes out
    /// once it is [`Applied`].
    fn set_expression(
        &self,
        file: &str,
        active: bool,
        fade: Duration,
    ) -> Result<Applied, HostError>;
    /// Whether the face is tracked now.
    fn tracking(&self) -> bool;
    /// Where the current model stands (where the last move takes it).
    fn model_position(&self) -> ModelPosition;
    /// Moves the current model (`MoveModelRequest`); a run that draws nothing keeps where it
    /// would stand.
    fn move_model(&self, m: &ModelMove) -> Result<(), HostError>;
    /// A plugin (`pluginName`, `pluginDeveloper`) asks for a token: allow it?
    fn approve(&self, plugin: &str, developer: &str) -> Approval;
}

/// Something that happened, pushed by the host to subscribed plugins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiEvent {
    /// A model was loaded (`loaded`) or unloaded (`ModelLoadedEvent`).
    ModelLoaded {
        /// Loaded or unloaded.
        loaded: bool,
        /// The model.
        model: ModelInfo,
    },
    /// The face was found or lost (`TrackingStatusChangedEvent`).
    TrackingStatusChanged {
        /// Whether the face is found now.
        face_found: bool,
    },
    /// A hotkey ran (`HotkeyTriggeredEvent`). The server sends this itself for hotkeys
    /// triggered through the API; the host sends it for the others.
    HotkeyTriggered {
        /// The hotkey.
        hotkey: Hotkey,
        /// The model it belongs to.
        model: Option<ModelInfo>,
        /// Whether a plugin triggered it.
        by_api: bool,
    },
}

//! The render side of facewire: the scene (avatar, mapping, renderer, camera), the winit
//! application that shows it in the stage window, and the headless loop used by
//! `facewire run --headless`.
//!
//! - `scene`: the avatar, its mapping, the renderer and the framing; mapping reloads.
//! - `stage`: the stage window's winit application.
//! - `event_loop`: the stage's winit event loop, which the session's events reach.
//! - `input`: the stage's camera hotkeys, expression keys, wheel and drags.
//! - `camera_save`: saving the camera into the configuration file.
//! - `pacing`: the frame-rate cap and redrawing on change.
//! - `placement`: where the control panel opens on the screen.
//! - `model_move`: where plugins of the API put the avatar on the stage, eased over time.
//! - `headless`: the offscreen loop of `facewire run --headless`.
//! - `live`: live runs put together: the session's input and chain feeding the stage window,
//!   the offscreen loop or the calibration routine's stage.

mod camera_save;
mod event_loop;
mod headless;
mod hotkeys;
pub mod hud;
mod input;
mod live;
mod look;
pub mod model_move;
pub mod motion;
mod pacing;
mod placement;
mod scene;
mod stage;

pub use camera_save::{rewrite_camera_table, save_camera, CameraSaveError};
pub use event_loop::{LoopError, StageLoop};
pub use headless::{run_headless, AgeStats, HeadlessPace, HeadlessReport};
pub use hotkeys::{hotkey_of, GlobalKeys};
pub use input::{
    camera_drag, camera_key, camera_wheel, expression_key, ExpressionKeys, KeyRoute, StageKey,
    STAGE_HOTKEYS,
};
pub use live::{calibrate_live, run_offscreen, run_stage, snapshot, snapshot_sequence, LiveError};
pub use pacing::{effective_cap, percentile, software_advice, wants_redraw, FramePacer, Shortfall};
pub use placement::{first_start, panel_area, Area, PANEL_MIN_WIDTH};
pub use scene::{reload_look, reload_mapping, Scene};
pub use stage::{StageApp, StageOptions};

use crate::control::{AppEvent, Controls, Notify};
use crate::render::RenderError;

/// Errors of the render side.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// Creating the GL context, shaders or buffers failed.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// Writing the final frame failed.
    #[error(transparent)]
    Image(#[from] crate::image::ImageError),
}

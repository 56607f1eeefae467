//! facewire turns a phone's ARKit face tracking into a live blendshape avatar for streamers.
//!
//! # Layout
//!
//! Data flows phone → [`ingest`] → [`calibrate`] → [`bridge`] → render thread: [`mapping`] turns
//! ARKit channels into the avatar's target weights and node rotations → [`render`].
//!
//! - [`arkit`]: the 52 channels (canonical order, every spelling dialect) and `FaceFrame`.
//! - [`ingest`]: the tokio side: UDP sockets and OSC decoding (VMC, Face Cap); bad packets are
//!   counted, never fatal.
//! - [`calibrate`]: per-frame conditioning in ARKit space: clamp and frame-rate independent
//!   smoothing.
//! - [`bridge`]: the newest-wins ringbuf hand-off of frames to the render thread, with counters.
//! - [`mixer`]: the ordered stack of layers (tracking, fixed poses, and every later source of
//!   weights) mixed by face region in ARKit space before the hand-off.
//! - [`mapping`]: ARKit channels → avatar target weights and node rotations, compiled against a
//!   loaded avatar into index tables.
//! - [`motion`]: the frame to draw at each redraw, interpolated between the frames received
//!   (smooth motion at the display rate, one sender period late).
//! - [`record`]: recordings of raw input (our `.fwrec` format, Live Link Face CSV) and replay.
//! - [`avatar`]: glTF/GLB loading into CPU structures and the CPU reference blend.
//! - [`headgen`]: the generator of the default head in `models/`.
//! - [`objimport`]: `facewire import-obj`: a GLB avatar from an OBJ shape set.
//! - [`forward`]: sends the calibrated stream on as VMC to other tools.
//! - [`config`]: `facewire.toml`, parsed raw and validated once.
//! - [`diagnostic`]: errors located by file, line and column, and did-you-mean suggestions.
//! - [`render`]: the only GL code: contexts (window and headless EGL), shaders, morph paths.
//! - [`app`]: the winit application: the stage window, redraws, the control events
//!   ([`app::AppEvent`]) and applying them, the control panel's actions.
//! - [`panel`]: the control panel's contents (egui): meters, state, actions, errors verbatim.
//! - [`telemetry`]: what the panel shows, gathered from the ingest and render threads.
//! - [`session`]: a live run's wiring: the input (network or replay), the chain from decoded
//!   frames through conditioner and mixer to the hand-off, neutral capture, the routine's
//!   launchers, the config and mapping watchers.
//! - [`sheet`]: the labelled contact sheet of a model's morph targets, for tech artists.
//! - [`hud`]: on-stage text cards (calibration prompts) drawn on the CPU.
//! - [`text`]: CPU drawing of 8x8 bitmap-font text and filled rectangles into RGBA images, shared
//!   by [`sheet`] and [`hud`].
//! - [`watch`]: file watching with debounce, for hot reload of the mapping.
//! - [`image`], [`fsutil`]: PNG snapshots and atomic file writes.

pub mod app;
pub mod arkit;
pub mod avatar;
pub mod bridge;
pub mod calibrate;
pub mod config;
pub mod diagnostic;
pub mod forward;
pub mod fsutil;
pub mod headgen;
pub mod hud;
pub mod image;
pub mod ingest;
pub mod mapping;
pub mod mixer;
pub mod motion;
pub mod objimport;
pub mod panel;
pub mod record;
pub mod render;
pub mod session;
pub mod sheet;
pub mod telemetry;
pub mod text;
pub mod watch;

//! facewire turns a phone's ARKit face tracking into a live blendshape avatar for streamers.
//!
//! # Layout
//!
//! One frame travels in one direction (see `docs/architecture.md`):
//!
//! ```text
//! socket ─▶ ingest ─▶ calibrate (conditioner) ─▶ mixer ─▶ bridge ─▶ app ─▶ mapping ─▶ render
//!           decode      remap, clamp, smooth,      layers     newest    display    ARKit →
//!           ARKit       tracking-loss state        by region  wins      rate       avatar, GL
//! ```
//!
//! Left of the bridge is ARKit space, on the ingest thread; right of it, avatar space on the
//! main thread. [`session`] wires a live run; [`commands`] holds the subcommands' flags and
//! bodies, and `main.rs` only parses the command line and dispatches.
//!
//! Ingest side (ARKit space):
//! - [`arkit`]: the 52 channels (canonical order, every spelling dialect), `FaceFrame`, the
//!   `FrameSink` every stage of the chain implements, and the one `Protocol` enum.
//! - [`ingest`]: the tokio thread: UDP sockets, the phone apps' decoders, handshakes, the sender
//!   guard and a raw-datagram tap; bad packets are counted, never fatal.
//! - [`calibrate`]: per-performer remap and clamp, One Euro smoothing, the tracking-loss state
//!   machine, profiles and the guided routine's logic.
//! - [`mixer`]: the ordered stack of layers (tracking, fixed poses, and every later source of
//!   weights) mixed by face region over the rest pose.
//! - [`lipsync`]: audio to mouth shapes (MFCC against vowel profiles), a source of weights.
//! - [`expressions`]: faces a key, a chat command or the API switches on and off (smile, angry
//!   brows, a wink), each a fading layer of the mixer, and the face regions they hold.
//! - [`idle`]: idle life (blinks, breathing, glances) for the face while tracking is lost, a
//!   source of weights driven by the clock.
//! - [`audio`]: microphone input on its own thread (ALSA loaded at run time on Linux, cpal
//!   elsewhere), reopened when the device comes back.
//! - [`record`]: recordings of raw input (our `.fwrec` format, Live Link Face CSV) and replay.
//! - [`api`]: a VTube Studio-compatible WebSocket API for stream automation (Streamer.bot,
//!   Mix It Up, ...): hotkeys, expressions, models, injected parameters, events; independent of
//!   the rest through a host trait.
//! - [`connect`]: the connect card: this PC's addresses, what to enter in each phone app, and
//!   what to check when no data arrives (network, firewall, wrong port, `ingest.allow`).
//! - [`stack`]: the mixer's stack as configured: `[layers]` with lip sync, idle life, each
//!   expression and the API's injected values, bottom to top.
//! - [`control`]: what crosses between a session and its front-end, free of GUI types: the
//!   events ([`control::AppEvent`]) sent through a [`control::Notify`], the panel's
//!   [`control::Controls`] and the plain data they carry; [`control::telemetry`], what the panel
//!   shows, gathered from the ingest and render threads.
//! - [`session`]: every kind of live run put together (stage, offscreen, calibration, and the
//!   relay, which has no window and no GL), and its wiring: the input (network or replay), the chain from decoded
//!   frames through conditioner and mixer to the hand-off, neutral capture, the panel's
//!   controls, the config and mapping watchers; [`session::forward`] sends the mixed stream on
//!   as VMC to other tools.
//! - [`commands`]: the subcommands: their clap flags, the bodies that describe a live run for
//!   [`session`] (run, relay, calibrate), and the tools with loops of their own (`listen`,
//!   `record`, `track`, `lipsync`, the vowel take, snapshots, `check`, `config`).
//!
//! The hand-off:
//! - [`bridge`]: the newest-wins ringbuf hand-off of frames to the render thread, with counters.
//!
//! Render side (avatar space):
//! - [`app`]: the winit application: the stage window, its input and event loop, the headless
//!   loop, and the front-ends of the live runs that [`session`] puts together;
//!   [`app::motion`], the frame to draw at each redraw, interpolated between the frames
//!   received (smooth motion at the display rate, one sender period late); [`app::hud`], the
//!   on-stage text cards (calibration prompts, the connect card) drawn on the CPU.
//! - [`mapping`]: ARKit channels → avatar target weights and node rotations, compiled against a
//!   loaded avatar into index tables.
//! - [`look`]: look presets (`looks/NAME.toml` beside the configuration): face-shape slider
//!   values and colours, checked against the mapping's sliders, saved atomically, or made at
//!   random.
//! - [`avatar`]: glTF/GLB/VRM loading into CPU structures and the CPU reference blend; a
//!   humanoid's bones, its arms' rest pose, the bust the camera frames and levels of detail.
//! - [`render`]: the only GL code: contexts (window and headless EGL), shaders, morph paths,
//!   skins, materials, levels of detail, draw passes.
//! - [`panel`]: the control panel's contents (egui): meters, layers, state, actions, errors.
//!
//! Shared and offline:
//! - [`config`]: `facewire.toml`, found (`--config`, `config/` in the working directory, else
//!   the platform's config folder, filled on first start), parsed raw with its relative paths
//!   taken from its folder, and validated once; the types of its sections.
//! - [`diagnostic`]: errors located by file, line and column, and did-you-mean suggestions.
//! - [`text`]: CPU drawing of 8x8 bitmap-font text and filled rectangles into RGBA images, shared
//!   by [`sheet`] and [`app::hud`].
//! - [`sheet`]: the labelled contact sheet of a model's morph targets, for tech artists.
//! - [`headgen`]: the generator of the default head in `models/`.
//! - [`objimport`]: `facewire import-obj`: a GLB avatar from an OBJ shape set.
//! - [`watch`]: file watching with debounce, for hot reload.
//! - [`image`], [`fsutil`]: PNG snapshots and atomic file writes.
//! - [`tomlfile`]: saving a TOML file (profiles, look presets, API tokens, the camera) from a
//!   serde value, merged into the file as it is so that what a person wrote in it stays.
//! - [`logging`]: the `FACEWIRE_LOG` filter and the subscriber on stderr.

pub mod api;
pub mod app;
pub mod arkit;
pub mod audio;
pub mod avatar;
pub mod bridge;
pub mod calibrate;
pub mod commands;
pub mod config;
pub mod connect;
pub mod control;
pub mod diagnostic;
pub mod expressions;
pub mod fsutil;
pub mod headgen;
pub mod idle;
pub mod image;
pub mod ingest;
pub mod lipsync;
pub mod logging;
pub mod look;
pub mod mapping;
pub mod mixer;
pub mod objimport;
pub mod panel;
pub mod record;
pub mod render;
pub mod session;
pub mod sheet;
pub mod stack;
pub mod text;
pub mod tomlfile;
pub mod watch;
pub mod webcam;

//! Integration tests: one binary, one module per theme.

/// Shared helpers: fixture lookup, the built binary, temporary folders.
mod support;

/// Ingest: VMC and Face Cap over real loopback UDP, liblo interop, hostile input.
mod ingest;

/// Avatar loading against the Khronos samples and the CPU reference blend.
mod avatar;

/// The default head: regeneration matches `models/`, sanity of its targets.
mod headgen;

/// Headless rendering on llvmpipe: snapshots, morph path agreement.
mod render;

/// Face customisation on the default head: wrinkle maps, face-shape sliders and look presets.
mod looks;

/// The whole pipeline through the `facewire` binary: snapshot, run --headless, listen.
mod pipeline;

/// `facewire relay` (no window, no GL), SIGTERM, and the modules' layering (no circles, no
/// layer found by name outside the mixer).
mod relay;

/// The contact sheet of a model's targets.
mod sheet;

/// Smoothing, tracking loss and the Live Link Face CSV reader.
mod calibrate;

/// Calibrated eyes at rest: a real take's calm frames read open, its blinks close fully.
mod eyes_at_rest;

/// Recording and replay.
mod record;

/// The phone apps' protocols decoded from real captures.
mod protocols;

/// Performer profiles and the guided calibration routine.
mod profile;

/// The mapping language: constructs, errors, checks.
mod mapping;

/// VRM 0.x and 1.0 avatars: expressions, humanoid bones, facing, the ARKit fallback.
mod vrm;

/// Motion at the display rate: interpolation against real takes thinned to 30 Hz.
mod motion;

/// `facewire import-obj`: OBJ shape sets to GLB, small sets and the ICT-FaceKit face.
mod objimport;

/// glTF 2.0 conformance: every fixture against values read by hand, extensions (required or
/// only used), mesh quantization, meshopt compression, bounds that hold a full expression.
mod conformance;

/// Rigged avatars and materials: skinning after morphing, alpha modes, vertex colours, texture
/// transforms, MToon (rim light, matcap), emission and expressions' material binds, on built
/// GLBs, RobotExpressive and Godette.
mod materials;

/// Texture images and samplers: WebP and KTX2/Basis Universal images, the choice between a
/// texture's images, hostile images, wrap and filter modes rendered.
mod textures;

/// Every fixture avatar rendered: each target changes the image only where it moves.
mod fixture_render;

/// Golden replay: a real take through the whole pipeline, forwarded stream and frames compared
/// with what facewire produced when they were recorded.
mod golden;

/// Lip sync from audio: espeak-ng's vowels read as their visemes; `--live` through ALSA's null
/// device and its file plugin.
mod lipsync;

/// The VTube Studio-compatible API over loopback WebSockets: authentication and tokens,
/// hotkeys, injected and custom parameters, events, hostile clients.
mod api;

/// The API of a real headless run or relay, driven by an independent client and by
/// VTubeStudioJS: authentication, hotkeys and the expression state right after them, injected
/// values in the frame drawn, the avatar moved, models and statistics, a flood of connections,
/// a port in use.
mod api_live;

/// Hand-edited files (configuration, mapping, look, expressions, profile) under mutation: read or refused,
/// never a panic, never a value that is not finite.
mod hand_edited;

/// An installed facewire started outside the repository: the platform's config folder filled
/// on first start and used, profiles saved beside the configuration.
mod install;

/// The webcam tracker through the binary: rendered frames read back (PNG folders, Y4M), and the
/// closed loop on a scanned face.
mod webcam;

/// The Windows build under Wine (when `FACEWIRE_WINDOWS_EXE` names it): first start in
/// %APPDATA%, offscreen rendering through WGL, the stage, the relay and the API, Ctrl-C.
mod windows;

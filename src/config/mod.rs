//! `facewire.toml`: parsed raw with serde, validated once, with errors that name the file, line
//! and column and suggest a fix.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::diagnostic::{locate_key, Located};

mod locate;
#[cfg(test)]
mod section_tests;

pub use crate::api::{valid_name, ApiConfig, DEFAULT_PORT};
pub use crate::calibrate::settings::{Invalid, SmoothingConfig, TrackingConfig};
pub use crate::expressions::{ExpressionSpec, ExpressionsError, ExpressionsSection};
pub use crate::idle::IdleConfig;
pub use crate::ingest::{
    ForwardNames, ForwardSection, IngestSection, PhonePorts, Subnet, SubnetError,
    MAX_VTS_REQUEST_PORTS,
};
pub use crate::lipsync::LipsyncConfig;
pub use crate::mapping::{ArmsMode, PoseConfig};
pub use crate::mixer::{LayerSpec, LayersSection, DEFAULT_FADE};
pub use crate::webcam::WebcamConfig;
pub use locate::{platform_folder, write_shipped, Found, Origin, FILE_NAME, SHIPPED};

/// The configuration file used when `--config` is not given and it exists in the working
/// directory (a checkout of the repository).
pub const DEFAULT_PATH: &str = "config/facewire.toml";

/// The folder of a configuration that comes from no file (the built-in defaults, or text
/// parsed with [`Config::parse`]): `config` in the working directory, the repository's layout.
pub const DEFAULT_FOLDER: &str = "config";

/// Errors loading the configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: {cause}")]
    Read {
        /// The file.
        path: String,
        /// The underlying error; part of the message, so not a `source()`.
        cause: std::io::Error,
    },
    /// The file is not valid TOML or has a bad key or value.
    #[error("{0}")]
    Parse(Located),
}

/// How the frame to draw is made from the frames received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MotionMode {
    /// The newest frame, unchanged: motion moves in steps at the sender's rate.
    Off,
    /// Blend the two frames around "now minus one sender period": smooth, exact, one period late.
    #[default]
    Interpolate,
    /// Continue the last two frames' motion past the newest: no added latency, overshoots.
    Extrapolate,
}

impl MotionMode {
    /// The name used in configuration: `off`, `interpolate` or `extrapolate`.
    pub fn name(self) -> &'static str {
        match self {
            MotionMode::Off => "off",
            MotionMode::Interpolate => "interpolate",
            MotionMode::Extrapolate => "extrapolate",
        }
    }
}

impl std::fmt::Display for MotionMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for MotionMode {
    type Err = String;

    fn from_str(s: &str) -> Result<MotionMode, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "off" | "none" | "step" => Ok(MotionMode::Off),
            "interpolate" => Ok(MotionMode::Interpolate),
            "extrapolate" => Ok(MotionMode::Extrapolate),
            _ => Err(format!(
                "unknown motion mode {s:?} (expected interpolate, extrapolate or off)"
            )),
        }
    }
}

/// An sRGB colour with straight alpha, written `"#rrggbb"` or `"#rrggbbaa"` in the file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Color(pub [f32; 4]);

impl Color {
    /// Parses `#rrggbb` or `#rrggbbaa`.
    pub fn parse(s: &str) -> Option<Color> {
        let hex = s.strip_prefix('#')?;
        if !(hex.len() == 6 || hex.len() == 8) || !hex.is_ascii() {
            return None;
        }
        let mut c = [1.0f32; 4];
        for (i, slot) in c.iter_mut().enumerate().take(hex.len() / 2) {
            let byte = u8::from_str_radix(&hex[i * 2..i * 2 + 2], 16).ok()?;
            *slot = byte as f32 / 255.0;
        }
        Some(Color(c))
    }
}

impl fmt::Display for Color {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0.map(|v| (v.clamp(0.0, 1.0) * 255.0).round() as u8);
        write!(f, "#{:02x}{:02x}{:02x}", b[0], b[1], b[2])?;
        if b[3] != 255 {
            write!(f, "{:02x}", b[3])?;
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for Color {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Color::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "`{s}` is not a colour; write \"#rrggbb\" or \"#rrggbbaa\", for example \"#00b140\""
            ))
        })
    }
}

/// `[window]`: the stage window OBS captures.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WindowConfig {
    /// Window title (what OBS's window capture lists).
    pub title: String,
    /// Inner width in pixels.
    pub width: u32,
    /// Inner height in pixels.
    pub height: u32,
    /// Background colour (a chroma key colour by default).
    pub background: Color,
    /// Ask for an alpha framebuffer and write premultiplied alpha.
    pub transparent: bool,
    /// Wait for the display's vertical blank.
    pub vsync: bool,
    /// The most frames the stage draws per second, with or without vsync; 0 is unlimited.
    pub fps_cap: u32,
    /// Draw only when something changed (a new frame from the phone, the camera, the window
    /// size, a prompt), leaving the GPU to the game and OBS while the face is still.
    pub render_on_change: bool,
    /// Open the control panel window at start (`P` on the stage shows and hides it).
    pub panel: bool,
    /// How head, eyes and weights move between the phone's frames at the display rate.
    pub motion: MotionMode,
    /// Register the expressions' keys with the desktop, so they work while another window has
    /// the focus (where the desktop allows it); off, they work on the stage only.
    pub global_hotkeys: bool,
    /// Show this PC's network addresses on the stage's connect card; off, the card (which OBS
    /// captures) names the apps and ports only and points at the panel and the terminal.
    pub show_addresses: bool,
    /// Show the connect card on the stage while facewire waits for the phone; off, it is on
    /// the panel and the terminal only (`C` on the stage shows and hides it either way).
    pub connect_card: bool,
}

impl Default for WindowConfig {
    fn default() -> Self {
        WindowConfig {
            title: "facewire".into(),
            width: 1280,
            height: 720,
            background: Color([0.0, 177.0 / 255.0, 64.0 / 255.0, 1.0]),
            transparent: false,
            vsync: true,
            fps_cap: 60,
            render_on_change: false,
            panel: true,
            motion: MotionMode::Interpolate,
            global_hotkeys: true,
            show_addresses: true,
            connect_card: true,
        }
    }
}

/// `[camera]`: the stage's framing, applied on top of the automatic head framing; set on the
/// stage with the mouse or keys and saved with `S`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CameraConfig {
    /// Magnification by moving the camera closer: 2 halves the distance, showing the head
    /// twice as large (its nearest parts a little more), 0.5 doubles it.
    pub zoom: f32,
    /// Moves the camera and the point it looks at up by this fraction of the head's height
    /// (negative moves them down), so the head sits lower (higher) in the picture.
    pub offset_y: f32,
    /// Orbit around the head in degrees: positive moves the camera towards the avatar's left.
    pub orbit_yaw: f32,
    /// Orbit around the head in degrees: positive moves the camera up, looking down at it.
    pub orbit_pitch: f32,
    /// Vertical field of view in degrees; the distance changes with it so the head keeps its
    /// size (a wider lens is closer and shows more perspective).
    pub fov: f32,
}

impl Default for CameraConfig {
    fn default() -> Self {
        CameraConfig {
            zoom: 1.0,
            offset_y: 0.0,
            orbit_yaw: 0.0,
            orbit_pitch: 0.0,
            fov: 27.0,
        }
    }
}

impl CameraConfig {
    /// The smallest and largest zoom.
    pub const ZOOM_RANGE: (f32, f32) = (0.2, 8.0);
    /// The largest vertical offset, in head heights either way.
    pub const OFFSET_LIMIT: f32 = 2.0;
    /// The largest orbit pitch either way, in degrees (the camera never flips over the top).
    pub const PITCH_LIMIT: f32 = 80.0;
    /// The narrowest and widest field of view, in degrees.
    pub const FOV_RANGE: (f32, f32) = (5.0, 100.0);

    /// The settings with every value in its range (non-finite values take the default), and
    /// the yaw wrapped to -180..180 degrees.
    pub fn clamped(&self) -> CameraConfig {
        let d = CameraConfig::default();
        let pick = |v: f32, default: f32, lo: f32, hi: f32| {
            if v.is_finite() {
                v.clamp(lo, hi)
            } else {
                default
            }
        };
        let yaw = if self.orbit_yaw.is_finite() {
            (self.orbit_yaw + 180.0).rem_euclid(360.0) - 180.0
        } else {
            d.orbit_yaw
        };
        CameraConfig {
            zoom: pick(self.zoom, d.zoom, Self::ZOOM_RANGE.0, Self::ZOOM_RANGE.1),
            offset_y: pick(
                self.offset_y,
                d.offset_y,
                -Self::OFFSET_LIMIT,
                Self::OFFSET_LIMIT,
            ),
            orbit_yaw: yaw,
            orbit_pitch: pick(
                self.orbit_pitch,
                d.orbit_pitch,
                -Self::PITCH_LIMIT,
                Self::PITCH_LIMIT,
            ),
            fov: pick(self.fov, d.fov, Self::FOV_RANGE.0, Self::FOV_RANGE.1),
        }
    }

    /// Checks the ranges: `Err((key, message, hint))`.
    fn check(&self) -> Result<(), (&'static str, String, String)> {
        let (zlo, zhi) = Self::ZOOM_RANGE;
        let (flo, fhi) = Self::FOV_RANGE;
        let checks = [
            ("zoom", self.zoom, zlo, zhi),
            (
                "offset_y",
                self.offset_y,
                -Self::OFFSET_LIMIT,
                Self::OFFSET_LIMIT,
            ),
            ("orbit_yaw", self.orbit_yaw, -180.0, 180.0),
            (
                "orbit_pitch",
                self.orbit_pitch,
                -Self::PITCH_LIMIT,
                Self::PITCH_LIMIT,
            ),
            ("fov", self.fov, flo, fhi),
        ];
        for (key, value, lo, hi) in checks {
            if !(value.is_finite() && (lo..=hi).contains(&value)) {
                return Err((
                    key,
                    format!("{key} = {value} is out of range"),
                    format!("use {lo} to {hi}; `0` on the stage resets the camera"),
                ));
            }
        }
        Ok(())
    }
}

/// Which morph implementation the config asks for (`render.morph` in `facewire.toml`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MorphMode {
    /// Pick per renderer: the CPU path on software rasterisers (llvmpipe, softpipe,
    /// SwiftShader), where it is measurably faster, and the GPU path everywhere else.
    #[default]
    Auto,
    /// Always sum the morph targets in the vertex shader.
    Gpu,
    /// Always blend on the CPU and upload the blended vertices.
    Cpu,
}

/// The error for a `render.morph` value that is not `auto`, `gpu` or `cpu`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown morph mode {0:?} (expected \"auto\", \"gpu\" or \"cpu\")")]
pub struct ParseMorphModeError(pub String);

impl std::str::FromStr for MorphMode {
    type Err = ParseMorphModeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(MorphMode::Auto),
            "gpu" => Ok(MorphMode::Gpu),
            "cpu" => Ok(MorphMode::Cpu),
            _ => Err(ParseMorphModeError(s.to_owned())),
        }
    }
}

impl fmt::Display for MorphMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MorphMode::Auto => "auto",
            MorphMode::Gpu => "gpu",
            MorphMode::Cpu => "cpu",
        })
    }
}

/// Which level of detail the renderer draws of each `MSFT_lod` group (`render.lod` in
/// `facewire.toml`): `"auto"` or a level number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum LodMode {
    /// Pick each frame by how much of the viewport's height the group's level 0 covers (the
    /// file's `MSFT_screencoverage` thresholds, else level 0 from 0.5, level 1 from 0.25,
    /// level 2 below).
    #[default]
    Auto,
    /// Always this level, or a group's last level when it has fewer.
    Fixed(u32),
}

/// The error for a `render.lod` value that is neither `auto` nor a level number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown level of detail {0:?} (expected \"auto\" or a level number: 0, 1, 2, ...)")]
pub struct ParseLodModeError(pub String);

impl std::str::FromStr for LodMode {
    type Err = ParseLodModeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let trimmed = s.trim();
        if trimmed.eq_ignore_ascii_case("auto") {
            return Ok(LodMode::Auto);
        }
        trimmed
            .parse::<u32>()
            .map(LodMode::Fixed)
            .map_err(|_| ParseLodModeError(s.to_owned()))
    }
}

impl fmt::Display for LodMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LodMode::Auto => f.write_str("auto"),
            LodMode::Fixed(level) => write!(f, "{level}"),
        }
    }
}

impl serde::Serialize for LodMode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            LodMode::Auto => s.serialize_str("auto"),
            LodMode::Fixed(level) => s.serialize_u32(*level),
        }
    }
}

impl<'de> Deserialize<'de> for LodMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = LodMode;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("\"auto\" or a level number (0, 1, 2, ...)")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<LodMode, E> {
                v.parse().map_err(E::custom)
            }

            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<LodMode, E> {
                u32::try_from(v)
                    .map(LodMode::Fixed)
                    .map_err(|_| E::custom(ParseLodModeError(v.to_string())))
            }

            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<LodMode, E> {
                u32::try_from(v)
                    .map(LodMode::Fixed)
                    .map_err(|_| E::custom(ParseLodModeError(v.to_string())))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// `[render]`: the avatar and how it is drawn.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RenderSection {
    /// The avatar (glTF or GLB); empty means the built-in default head.
    pub model: PathBuf,
    /// The mapping file; empty means the default head's mapping for the default head and the
    /// automatic mapping for other models.
    pub mapping: PathBuf,
    /// Morph path: "auto", "gpu" or "cpu".
    pub morph: MorphMode,
    /// Level of detail of models with `MSFT_lod` groups: "auto" or a level number.
    pub lod: LodMode,
    /// Frame rate of headless runs, frames per second.
    pub headless_fps: u32,
    /// The folder whose avatars (`.glb`, `.gltf`, `.vrm`) the control panel offers (`models`
    /// beside the configuration).
    pub models_dir: PathBuf,
    /// Whether a model's spring bones (hair, ribbons, skirts) move; off, they stay at rest.
    pub spring_bones: bool,
    /// The most mebibytes of decoded texture pixels a model keeps (an image shared by several
    /// textures counts once); images over it are shrunk to fit when the model loads.
    pub texture_budget_mb: u32,
    /// The look preset: a name in config/looks (`round` for config/looks/round.toml) or a
    /// path; empty for none.
    pub look: String,
}

impl Default for RenderSection {
    fn default() -> Self {
        RenderSection {
            model: PathBuf::new(),
            mapping: PathBuf::new(),
            morph: MorphMode::Auto,
            lod: LodMode::Auto,
            headless_fps: 60,
            models_dir: PathBuf::from("models"),
            spring_bones: true,
            texture_budget_mb: 512,
            look: String::new(),
        }
    }
}

/// The whole configuration file.
///
/// Its relative paths (`render.model`, `render.mapping`, `render.models_dir`, a `render.look`
/// given as a path, `expressions.file`, `api.tokens`) are resolved against [`Config::folder`]
/// when it is read, so they name the same files whatever the working directory; paths given
/// on the command line stay relative to the working directory.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default = "Config::as_written")]
pub struct Config {
    /// `[window]`.
    pub window: WindowConfig,
    /// `[ingest]`.
    pub ingest: IngestSection,
    /// `[smoothing]`.
    pub smoothing: SmoothingConfig,
    /// `[tracking]`: tracking-loss detection and the hold, fade and ease-in times.
    pub tracking: TrackingConfig,
    /// `[render]`.
    pub render: RenderSection,
    /// `[forward]`: the calibrated stream sent on as VMC.
    pub forward: ForwardSection,
    /// `[camera]`: the stage's framing.
    pub camera: CameraConfig,
    /// `[layers]`: the mixer's stack.
    pub layers: LayersSection,
    /// `[pose]`: a humanoid's rest pose.
    pub pose: PoseConfig,
    /// `[lipsync]`: lip sync from the microphone.
    pub lipsync: LipsyncConfig,
    /// `[webcam]`: face tracking from a webcam instead of a phone.
    pub webcam: WebcamConfig,
    /// `[idle]`: idle life while tracking is lost.
    pub idle: IdleConfig,
    /// `[expressions]`: faces switched on and off by keys, the panel and the API.
    pub expressions: ExpressionsSection,
    /// `[api]`: the VTube Studio-compatible API for stream tools.
    pub api: ApiConfig,
    /// The folder of the configuration file in use: relative paths in the file were resolved
    /// against it, and performers' profiles (`profiles/`), look presets (`looks/`) and the
    /// default head's mapping (`mappings/default_head.toml`) live in it. Empty: the working
    /// directory.
    #[serde(skip)]
    pub folder: PathBuf,
}

impl Default for Config {
    /// The built-in defaults, with [`DEFAULT_FOLDER`] as their folder.
    fn default() -> Config {
        let mut config = Config::as_written();
        config.resolve_paths(Path::new(DEFAULT_FOLDER));
        config
    }
}

impl Config {
    /// The defaults as a file states them: relative paths not yet resolved, no folder.
    fn as_written() -> Config {
        Config {
            window: WindowConfig::default(),
            ingest: IngestSection::default(),
            smoothing: SmoothingConfig::default(),
            tracking: TrackingConfig::default(),
            render: RenderSection::default(),
            forward: ForwardSection::default(),
            camera: CameraConfig::default(),
            layers: LayersSection::default(),
            pose: PoseConfig::default(),
            lipsync: LipsyncConfig::default(),
            webcam: WebcamConfig::default(),
            idle: IdleConfig::default(),
            expressions: ExpressionsSection::default(),
            api: ApiConfig::default(),
            folder: PathBuf::new(),
        }
    }

    /// Parses TOML text as if it were a file in [`DEFAULT_FOLDER`]; `path` only labels errors.
    pub fn parse(text: &str, path: &str) -> Result<Config, ConfigError> {
        Config::parse_in(text, path, Path::new(DEFAULT_FOLDER))
    }

    /// Parses TOML text read from a file in `folder`, against which its relative paths are
    /// resolved (and its expressions file read); `path` only labels errors.
    pub fn parse_in(text: &str, path: &str, folder: &Path) -> Result<Config, ConfigError> {
        let mut config: Config = toml::from_str(text)
            .map_err(|e| ConfigError::Parse(Located::from_toml(path, text, &e)))?;
        config.validate(text, path)?;
        config.resolve_paths(folder);
        config
            .expressions
            .resolve(text, path)
            .map_err(ConfigError::Parse)?;
        for unused in config.smoothing.unused_keys(text) {
            tracing::warn!(file = path, "{unused}; remove it or change the filter");
        }
        Ok(config)
    }

    /// Reads and parses a configuration file; its relative paths are resolved against the
    /// folder it is in.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = crate::fsutil::read_text(path).map_err(|cause| ConfigError::Read {
            path: path.display().to_string(),
            cause,
        })?;
        let folder = path.parent().unwrap_or(Path::new(""));
        Config::parse_in(&text, &path.display().to_string(), folder)
    }

    /// Makes the file's relative paths relative to `folder` instead, and remembers it as
    /// [`Config::folder`].
    fn resolve_paths(&mut self, folder: &Path) {
        let join = |path: &mut PathBuf| {
            if !path.as_os_str().is_empty() && path.is_relative() {
                *path = folder.join(&*path);
            }
        };
        // Avatars may also be named from the working directory, as a checkout's `models/` is
        // (the folder beside the configuration wins when both have it).
        let join_or_here = |path: &mut PathBuf| {
            let beside = folder.join(&*path);
            if !path.as_os_str().is_empty()
                && path.is_relative()
                && (beside.exists() || !path.exists())
            {
                *path = beside;
            }
        };
        join_or_here(&mut self.render.model);
        join(&mut self.render.mapping);
        join_or_here(&mut self.render.models_dir);
        join(&mut self.api.tokens);
        // A look written as a path rather than a preset name (as `look::resolve` tells them
        // apart: a path separator or the `.toml` ending).
        let look = self.render.look.trim();
        if (look.contains(['/', '\\']) || look.ends_with(".toml")) && Path::new(look).is_relative()
        {
            self.render.look = folder.join(look).display().to_string();
        }
        self.expressions.folder = folder.to_path_buf();
        self.folder = folder.to_path_buf();
    }

    fn validate(&self, text: &str, path: &str) -> Result<(), ConfigError> {
        let fail = |key: &str, message: String, hint: &str| {
            let (line, column) = locate_key(text, key);
            Err(ConfigError::Parse(Located {
                path: path.to_string(),
                line,
                column,
                message,
                hint: Some(hint.to_string()),
            }))
        };
        if !(16..=16384).contains(&self.window.width) || !(16..=16384).contains(&self.window.height)
        {
            return fail(
                "width",
                format!(
                    "window size {}x{} is out of range",
                    self.window.width, self.window.height
                ),
                "use a size between 16 and 16384 pixels, e.g. width = 1280, height = 720",
            );
        }
        if !(1..=1000).contains(&self.render.headless_fps) {
            return fail(
                "headless_fps",
                format!(
                    "headless_fps = {} is out of range",
                    self.render.headless_fps
                ),
                "use a frame rate between 1 and 1000",
            );
        }
        if !(16..=16384).contains(&self.render.texture_budget_mb) {
            return fail(
                "texture_budget_mb",
                format!(
                    "texture_budget_mb = {} is out of range",
                    self.render.texture_budget_mb
                ),
                "use a size in mebibytes between 16 and 16384, e.g. texture_budget_mb = 512",
            );
        }
        if let Err(Invalid {
            line,
            column,
            message,
            hint,
        }) = self
            .smoothing
            .validate(text)
            .and_then(|()| self.tracking.validate(text))
        {
            return Err(ConfigError::Parse(Located {
                path: path.to_string(),
                line,
                column,
                message,
                hint: Some(hint),
            }));
        }
        if let Err((key, message, hint)) = self.ingest.check() {
            return fail(key, message, &hint);
        }
        if self.window.fps_cap > 1000 {
            return fail(
                "fps_cap",
                format!("fps_cap = {} is out of range", self.window.fps_cap),
                "use 0 (unlimited) or a frame rate up to 1000, e.g. fps_cap = 60",
            );
        }
        if let Err((key, message, hint)) = self.camera.check() {
            return fail(key, message, &hint);
        }
        self.pose.validate(text, path).map_err(ConfigError::Parse)?;
        self.lipsync
            .validate(text, path)
            .map_err(ConfigError::Parse)?;
        self.webcam
            .validate(text, path)
            .map_err(ConfigError::Parse)?;
        self.idle.validate(text, path).map_err(ConfigError::Parse)?;
        self.expressions
            .validate(text, path)
            .map_err(ConfigError::Parse)?;
        self.api.validate(text, path).map_err(ConfigError::Parse)?;
        if let Err((key, message, hint)) = self.layers.check() {
            // Channel names sit inside inline tables, not at the start of a line.
            let offset = crate::diagnostic::key_offset(text, &key)
                .or_else(|| text.find(&format!("{key} ")))
                .or_else(|| text.find("[layers"))
                .unwrap_or(0);
            return Err(ConfigError::Parse(Located::at(
                path,
                text,
                offset,
                message,
                Some(hint),
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_documented_file() {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/facewire.toml"))
                .unwrap();
        let mut shipped = Config::parse(&text, "facewire.toml").unwrap();
        // The shipped file adds the default head's expressions (tests run in the package
        // root, where its relative path points); everything else is the default.
        let names: Vec<String> = shipped
            .expressions
            .all()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["angry", "smile", "surprised", "wink"]);
        shipped.expressions = Config::default().expressions;
        assert_eq!(shipped, Config::default());
    }

    #[test]
    fn relative_paths_resolve_against_the_files_folder() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("facewire");
        std::fs::create_dir_all(folder.join("faces")).unwrap();
        std::fs::write(
            folder.join("faces/more.toml"),
            "[expressions.blush]\nvalues = { cheekPuff = 0.3 }\n",
        )
        .unwrap();
        let absolute = dir.path().join("elsewhere.vrm");
        let text = format!(
            "[render]\nmodel = {:?}\nmapping = \"mappings/mine.toml\"\nlook = \"looks/mine.toml\"\n\
             [expressions]\nfile = \"faces/more.toml\"\n[api]\ntokens = \"tokens.toml\"\n",
            absolute.display().to_string()
        );
        let path = folder.join("facewire.toml");
        std::fs::write(&path, text).unwrap();
        // Tests run in the package root, which has a models/ folder: the working directory's
        // is used while the configuration's folder has none, and the folder's once it has one.
        let config = Config::load(&path).unwrap();
        assert_eq!(config.render.models_dir, PathBuf::from("models"));
        std::fs::create_dir_all(folder.join("models")).unwrap();
        let config = Config::load(&path).unwrap();
        assert_eq!(config.folder, folder);
        assert_eq!(config.render.model, absolute, "absolute paths stay");
        assert_eq!(config.render.mapping, folder.join("mappings/mine.toml"));
        assert_eq!(config.render.models_dir, folder.join("models"));
        assert_eq!(
            config.render.look,
            folder.join("looks/mine.toml").display().to_string()
        );
        assert_eq!(config.api.tokens, folder.join("tokens.toml"));
        assert_eq!(config.expressions.all()[0].name, "blush");
        // A preset name stays a name: it is looked up in the folder's looks/ when used.
        std::fs::write(&path, "[render]\nlook = \"round\"\n").unwrap();
        assert_eq!(Config::load(&path).unwrap().render.look, "round");
        // Without a file, the folder is the repository's config/.
        assert_eq!(Config::default().folder, Path::new(DEFAULT_FOLDER));
        assert_eq!(
            Config::default().api.tokens,
            Path::new("config/api_tokens.toml")
        );
    }

    #[test]
    fn unknown_key_names_line_column_and_suggests() {
        let text = "[window]\ntitle = \"x\"\nwidht = 3\n";
        let err = Config::parse(text, "f.toml").unwrap_err().to_string();
        assert!(err.starts_with("f.toml:3:1:"), "{err}");
        assert!(err.contains("did you mean `width`?"), "{err}");
    }

    #[test]
    fn bad_values_are_located() {
        let err = Config::parse("[window]\nbackground = \"green\"\n", "f.toml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("f.toml:2:"), "{err}");
        assert!(err.contains("#rrggbb"), "{err}");
        let err = Config::parse("[render]\nmorph = \"gpuu\"\n", "f.toml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("f.toml:2:"), "{err}");
        let err = Config::parse("[render]\n  headless_fps = 0\n", "f.toml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("f.toml:2:3:"), "{err}");
    }

    #[test]
    fn the_texture_budget_is_read_and_its_range_located() {
        assert_eq!(Config::default().render.texture_budget_mb, 512);
        let config = Config::parse("[render]\ntexture_budget_mb = 2048\n", "f.toml").unwrap();
        assert_eq!(config.render.texture_budget_mb, 2048);
        for bad in ["0", "15", "16385"] {
            let text = format!("[render]\nmodel = \"\"\n texture_budget_mb = {bad}\n");
            let err = Config::parse(&text, "f.toml").unwrap_err().to_string();
            assert!(err.starts_with("f.toml:3:2:"), "{bad}: {err}");
            assert!(err.contains("texture_budget_mb"), "{bad}: {err}");
        }
        for bad in ["-1", "\"big\"", "1.5"] {
            let text = format!("[render]\ntexture_budget_mb = {bad}\n");
            let err = Config::parse(&text, "f.toml").unwrap_err().to_string();
            assert!(err.starts_with("f.toml:2:"), "{bad}: {err}");
        }
    }

    #[test]
    fn lod_reads_auto_and_levels_and_locates_bad_values() {
        let lod = |text: &str| Config::parse(&format!("[render]\n{text}\n"), "f.toml");
        assert_eq!(Config::default().render.lod, LodMode::Auto);
        assert_eq!(lod("lod = \"auto\"").unwrap().render.lod, LodMode::Auto);
        assert_eq!(lod("lod = \"AUTO\"").unwrap().render.lod, LodMode::Auto);
        assert_eq!(lod("lod = 0").unwrap().render.lod, LodMode::Fixed(0));
        assert_eq!(lod("lod = 2").unwrap().render.lod, LodMode::Fixed(2));
        assert_eq!(lod("lod = 7").unwrap().render.lod, LodMode::Fixed(7));
        for bad in [
            "lod = \"high\"",
            "lod = -1",
            "lod = 1.5",
            "lod = true",
            "lod = 99999999999",
        ] {
            let err = lod(bad).unwrap_err().to_string();
            assert!(err.starts_with("f.toml:2:"), "{bad}: {err}");
        }
        let err = lod("lod = \"high\"").unwrap_err().to_string();
        assert!(err.contains("\"auto\""), "{err}");
        assert_eq!("auto".parse(), Ok(LodMode::Auto));
        assert_eq!(" 1 ".parse(), Ok(LodMode::Fixed(1)));
        assert!("-1".parse::<LodMode>().is_err());
        assert_eq!(LodMode::Fixed(2).to_string(), "2");
        assert_eq!(LodMode::Auto.to_string(), "auto");
    }

    #[test]
    fn colours_parse_and_print() {
        assert_eq!(Color::parse("#ff0000").unwrap().0, [1.0, 0.0, 0.0, 1.0]);
        assert_eq!(Color::parse("#00000000").unwrap().0[3], 0.0);
        assert!(Color::parse("00ff00").is_none());
        assert!(Color::parse("#12345").is_none());
        assert_eq!(Color::parse("#00b140").unwrap().to_string(), "#00b140");
    }

    #[test]
    fn the_readme_layers_example_is_a_valid_configuration() {
        let readme = include_str!("../../README.md");
        let section = &readme[readme.find("## Layers").unwrap()..];
        let start = section.find("```toml\n").unwrap() + "```toml\n".len();
        let text = &section[start..start + section[start..].find("```").unwrap()];
        let config = Config::parse(text, "README.md").unwrap();
        assert_eq!(config.layers.order, ["tracking", "smile"]);
        assert_eq!(
            config.layers.spec("smile").mode,
            crate::mixer::BlendMode::Add
        );
    }
}

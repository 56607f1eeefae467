//! The command line's words: the subcommands and their flags, as clap parses them. The
//! commands' bodies are in the sibling modules; `main.rs` parses and dispatches.
//!
//! The doc comments here are the `--help` text clap prints for each flag and subcommand, so the
//! structs and the flattened fields that carry no help of their own have none.
#![allow(missing_docs)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use super::{
    CheckArgs, CommandError, HeadAngles, LipsyncArgs, Size, TakeArgs, TrackArgs, VowelArgs,
};
use crate::config::{Config, LodMode, MorphMode};
use crate::headgen;
use crate::record;
use crate::session::{self, Replay};

#[derive(Debug, Parser)]
#[command(
    name = "facewire",
    version,
    about = "Phone face tracking to a live avatar for OBS"
)]
pub struct Cli {
    /// Configuration file (default: config/facewire.toml in the working directory when it
    /// exists, else facewire.toml in the platform's config folder, written there on first start;
    /// `facewire config` says which).
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Open the stage window and follow the phone (the default command).
    Run(RunArgs),
    /// Follow the phone without a window or GL: calibrate, mix (idle life, lip sync,
    /// expressions, the API) and forward VMC to another app (VSeeFace, Warudo, VNyan, Blender).
    Relay(RelayArgs),
    /// Render one still image offscreen (no window, no X server).
    Snapshot(SnapshotArgs),
    /// Print every frame a phone sends as one JSON line.
    Listen(ListenArgs),
    /// Render a labelled contact sheet: the neutral face and each morph target at weight 1.
    Sheet(crate::sheet::SheetArgs),
    /// Calibrate a performer: a guided routine (or a recording) writes their profile.
    Calibrate(CalibrateArgs),
    /// Validate a mapping against a model and report what drives nothing.
    Check(CheckArgs),
    /// Save the raw datagrams that arrive on every port facewire listens on, with their timing,
    /// to a .fwrec file.
    Record(RecordArgs),
    /// Send a recording (.fwrec or a Live Link Face CSV) to facewire or another VMC receiver.
    Replay(ReplayArgs),
    /// Regenerate the default head (models/default_head.glb).
    GenHead(GenHeadArgs),
    /// Build a GLB avatar with morph targets from an OBJ shape set (a neutral mesh and one OBJ
    /// per shape, same topology).
    ImportObj(ImportObjArgs),
    /// Print the mouth shapes of speech, a line per 16 ms: in a WAV file, or the microphone's.
    Lipsync(LipsyncArgs),
    /// Track the face in a video (numbered PNG or JPEG frames, or a Y4M file) with the webcam
    /// tracker, a line per frame.
    Track(TrackArgs),
    /// List the cameras facewire can track (`run --webcam NUMBER` chooses one).
    Webcam(WebcamArgs),
    /// Say which configuration file is in use and where profiles, looks and avatars are kept.
    Config(ConfigArgs),
}

#[derive(Debug, Args)]
pub struct WebcamArgs {
    /// List the cameras: number, name, device and the frame formats facewire reads (the
    /// default).
    #[arg(long)]
    pub list: bool,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Print only the configuration file's path.
    #[arg(long)]
    pub path: bool,
}

#[derive(Debug, Args, Default)]
pub struct RenderArgs {
    /// Avatar file (.glb, .gltf or .vrm) instead of the configured one.
    #[arg(long, value_name = "PATH")]
    pub model: Option<PathBuf>,
    /// Mapping file (ARKit channels to the avatar's targets and nodes).
    #[arg(long, value_name = "PATH")]
    pub mapping: Option<PathBuf>,
    /// Morph path: auto, gpu or cpu.
    #[arg(long, value_name = "MODE")]
    pub morph: Option<MorphMode>,
    /// Level of detail: auto, or a level (0 the most detailed).
    #[arg(long, value_name = "auto|LEVEL")]
    pub lod: Option<LodMode>,
    /// Transparent background with premultiplied alpha.
    #[arg(long)]
    pub transparent: bool,
    /// Keep spring bones (hair, ribbons, skirts) at rest, instead of render.spring_bones.
    #[arg(long)]
    pub no_springs: bool,
    /// Look preset (face-shape sliders, colours): a name in config/looks or a path.
    #[arg(long, value_name = "NAME|PATH")]
    pub look: Option<String>,
}

/// Where a live run listens, and which phone it asks for data.
#[derive(Debug, Args, Default)]
pub struct NetworkArgs {
    /// UDP address to listen on for VMC and Face Cap (repeatable), instead of the configured
    /// ones.
    #[arg(long, value_name = "ADDR")]
    pub listen: Vec<SocketAddr>,
    /// The phone's IP address, for the apps that need facewire to ask for data (iFacialMocap,
    /// Facemotion3d, VTube Studio, MeowFace).
    #[arg(long, value_name = "IP")]
    pub phone: Option<std::net::IpAddr>,
}

impl NetworkArgs {
    /// Applies the flags to `[ingest]`.
    pub fn apply(&self, config: &mut Config) {
        config.ingest.apply_flags(&self.listen, self.phone);
    }
}

#[derive(Debug, Args, Default)]
pub struct RunArgs {
    #[command(flatten)]
    pub network: NetworkArgs,
    #[command(flatten)]
    pub render: RenderArgs,
    #[command(flatten)]
    pub live: LiveArgs,
    /// Render offscreen instead of in a window.
    #[arg(long)]
    pub headless: bool,
    /// Write the last frame to this PNG on exit (headless runs).
    #[arg(long, value_name = "PNG")]
    pub out: Option<PathBuf>,
    /// Offscreen size, WIDTHxHEIGHT (headless runs; default: the window size).
    #[arg(long, value_name = "WxH")]
    pub size: Option<Size>,
    /// The most frames the stage draws per second (0: unlimited), instead of window.fps_cap
    /// (render.headless_fps with --headless).
    #[arg(long, value_name = "FPS")]
    pub fps_cap: Option<u32>,
    /// Draw only when a new frame arrived or something changed (window.render_on_change).
    #[arg(long)]
    pub render_on_change: bool,
    /// Start without the control panel (P on the stage opens it), instead of window.panel.
    #[arg(long)]
    pub no_panel: bool,
    /// On exit, write the stage's and the panel's last frames into this folder as stage.png
    /// and panel.png (window runs; use with --exit-after).
    #[arg(long, value_name = "DIR")]
    pub screenshots: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RelayArgs {
    /// Send the mixed stream as VMC to this address (repeatable), besides [forward] to.
    #[arg(long, value_name = "ADDR")]
    pub forward: Vec<SocketAddr>,
    #[command(flatten)]
    pub network: NetworkArgs,
    #[command(flatten)]
    pub live: LiveArgs,
}

/// What a live run (the stage, a headless run, the relay) takes besides its input's addresses.
#[derive(Debug, Args, Default)]
pub struct LiveArgs {
    /// Take input from a recording (.fwrec or Live Link Face CSV), or a video (a folder of
    /// numbered PNG or JPEG frames, or a Y4M file) through the webcam tracker, instead of the
    /// network; a headless run and the relay end when it does.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// Playback speed of --replay.
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Track a webcam instead of listening for a phone: the first, or the one this number (as
    /// `facewire webcam --list` prints it) or (part of a) name chooses; instead of [webcam].
    #[arg(
        long,
        value_name = "NAME|NUMBER",
        num_args = 0..=1,
        default_missing_value = "",
        conflicts_with = "replay"
    )]
    pub webcam: Option<String>,
    /// Play this WAV file as lip sync's audio instead of the microphone (see [lipsync]).
    #[arg(long, value_name = "FILE")]
    pub lipsync_wav: Option<PathBuf>,
    /// Apply this performer's calibration profile.
    #[arg(long, value_name = "NAME")]
    pub performer: Option<String>,
    /// The profiles folder (default: profiles beside the configuration file).
    #[arg(long, value_name = "DIR")]
    pub profiles: Option<PathBuf>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub exit_after: Option<f64>,
}

/// `--webcam [NAME|NUMBER]`: the webcam on for this run, the camera chosen when named.
pub fn apply_webcam(config: &mut Config, webcam: Option<&str>) {
    if let Some(device) = webcam {
        config.webcam.enabled = true;
        if !device.trim().is_empty() {
            config.webcam.device = device.trim().to_string();
        }
    }
}

impl LiveArgs {
    /// The live run these flags describe, over `config` (read from `source`).
    pub fn run<'a>(
        &'a self,
        config: &'a Config,
        source: Option<&'a Path>,
    ) -> Result<session::LiveRun<'a>, CommandError> {
        let profiles = super::profiles_folder(self.profiles.as_deref(), config);
        let profile = super::performer_profile(&profiles, self.performer.as_deref())?;
        Ok(session::LiveRun {
            config,
            source,
            profile,
            profiles,
            replay: self.replay.as_deref().map(|file| Replay {
                file,
                speed: self.speed,
            }),
            exit_after: self.exit_after.map(|s| Duration::from_secs_f64(s.max(0.0))),
            lipsync_wav: self.lipsync_wav.as_deref(),
        })
    }
}

#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// Channel weights, e.g. 'jawOpen=1,eyeBlinkLeft=0.5' (ARKit names in any dialect).
    #[arg(long, default_value = "")]
    pub weights: String,
    /// Output PNG (with --frames: the folder the numbered frames go to).
    #[arg(long, value_name = "PNG")]
    pub out: PathBuf,
    /// Render a sequence instead of one image: a JSON-lines file, one frame a line, e.g.
    /// `{"weights": {"jawOpen": 0.5}, "head": [20, 0, -5]}` (head: yaw, pitch, roll in degrees).
    /// Writes OUT/frame_00001.png and on, a video `facewire track --video OUT` reads.
    #[arg(long, value_name = "JSONL", conflicts_with_all = ["weights", "head"])]
    pub frames: Option<PathBuf>,
    /// Image size, WIDTHxHEIGHT.
    #[arg(long, default_value = "800x800")]
    pub size: Size,
    /// Head rotation in degrees, YAW,PITCH,ROLL (yaw turns towards the avatar's left, pitch
    /// nods down, roll tilts towards the avatar's left shoulder).
    #[arg(long, value_name = "Y,P,R", allow_hyphen_values = true)]
    pub head: Option<HeadAngles>,
    #[command(flatten)]
    pub render: RenderArgs,
}

#[derive(Debug, Args)]
pub struct ListenArgs {
    /// UDP port to listen on for VMC and Face Cap (all interfaces); default: the configured
    /// addresses. The other apps' listeners run as configured.
    #[arg(long)]
    pub port: Option<u16>,
    /// Exit after this many frames.
    #[arg(long)]
    pub count: Option<u64>,
    /// The phone's IP address, for the apps that need facewire to ask for data.
    #[arg(long, value_name = "IP")]
    pub phone: Option<std::net::IpAddr>,
    /// Print what a webcam's tracker reads instead (the first webcam, or the one this number
    /// or name chooses), with a line a second on the camera's and the tracker's frame rates.
    #[arg(
        long,
        value_name = "NAME|NUMBER",
        num_args = 0..=1,
        default_missing_value = "",
        conflicts_with = "port"
    )]
    pub webcam: Option<String>,
    /// Print the frames of a recording (.fwrec or Live Link Face CSV) or a video (numbered PNG
    /// or JPEG frames, or a Y4M file, through the webcam tracker) instead, played in real time;
    /// ends with it.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["port", "webcam"])]
    pub replay: Option<PathBuf>,
    /// Playback speed of --replay.
    #[arg(long, default_value_t = 1.0, requires = "replay")]
    pub speed: f64,
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// The performer's name; the profile is saved as <profiles>/<NAME>.toml.
    #[arg(long)]
    pub performer: String,
    #[command(flatten)]
    pub take: TakeArgs,
    /// The profiles folder (default: profiles beside the configuration file).
    #[arg(long, value_name = "DIR")]
    pub profiles: Option<PathBuf>,
    /// Guide on the terminal only, without the stage window.
    #[arg(long)]
    pub no_window: bool,
    /// Save without asking for confirmation.
    #[arg(long)]
    pub yes: bool,
    #[command(flatten)]
    pub network: NetworkArgs,
    /// Calibrate from a webcam instead of a phone: the first, or the one this number or name
    /// chooses (as `facewire webcam --list` prints them).
    #[arg(
        long,
        value_name = "NAME|NUMBER",
        num_args = 0..=1,
        default_missing_value = ""
    )]
    pub webcam: Option<String>,
    #[command(flatten)]
    pub vowels: VowelArgs,
}

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Output file.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Record only this UDP port (all interfaces unless configured otherwise); default: every
    /// port `run` listens on (VMC and Face Cap, iFacialMocap, Facemotion3d, Live Link Face,
    /// VTube Studio, OpenSeeFace).
    #[arg(long)]
    pub port: Option<u16>,
    /// Stop after this many datagrams.
    #[arg(long)]
    pub count: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// The phone's IP address, for the apps that need facewire to ask for data (iFacialMocap,
    /// Facemotion3d, VTube Studio).
    #[arg(long, value_name = "IP")]
    pub phone: Option<std::net::IpAddr>,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The recording.
    pub file: PathBuf,
    /// Where to send it.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:39539")]
    pub to: SocketAddr,
    /// Playback speed (2 = twice as fast).
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Start again at the end, until interrupted.
    #[arg(long = "loop")]
    pub looped: bool,
    /// The file's format: fwrec or llf-csv (default: detected from its content).
    #[arg(long)]
    pub format: Option<record::Format>,
}

#[derive(Debug, Args)]
pub struct GenHeadArgs {
    /// Where to write the head.
    #[arg(long, default_value = headgen::DEFAULT_HEAD)]
    pub out: PathBuf,
    /// Face levels of detail to write (1 to 3; the committed head has the default).
    #[arg(long, default_value_t = headgen::SHIPPED_LEVELS)]
    pub levels: usize,
}

#[derive(Debug, Args)]
pub struct ImportObjArgs {
    /// The neutral (rest) mesh.
    #[arg(long, value_name = "OBJ")]
    pub neutral: PathBuf,
    /// The folder of target OBJs, one per shape, named after it (eyeBlink_L.obj, jawOpen.obj);
    /// names that are no ARKit shape are kept as they are.
    #[arg(long, value_name = "DIR")]
    pub targets: PathBuf,
    /// Where to write the avatar.
    #[arg(long, value_name = "GLB")]
    pub out: PathBuf,
    /// Sum left and right halves of a shape ARKit has no sides for (browInnerUp_L +
    /// browInnerUp_R -> browInnerUp) into one target.
    #[arg(long)]
    pub combine_halves: bool,
    /// How ARKit targets are named: camel (eyeBlinkLeft), pascal (EyeBlinkLeft) or raw
    /// (eyeBlink_L).
    #[arg(long, value_name = "DIALECT", default_value = "camel")]
    pub name_dialect: crate::objimport::NameDialect,
    /// Leave out the faces of this material (a usemtl name), such as semi-transparent overlays;
    /// repeat or separate with commas.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub skip_material: Vec<String>,
    /// Give this material facewire's skin colour instead of its library colour (Kd); repeat
    /// or separate with commas.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub skin: Vec<String>,
}

//! The `facewire` command line: the stage window (default), headless runs, snapshots, a stream
//! inspector and the default head generator.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};

use facewire::app::{
    self, AgeStats, AppEvent, HeadlessReport, Scene, StageApp, StageOptions, TrackingSummary,
};
use facewire::arkit::{Channel, FaceFrame, Protocol};
use facewire::avatar::{self, Avatar};
use facewire::bridge;
use facewire::calibrate::{
    self, Conditioner, ConditionerSink, Profile, RoutineUi, TerminalUi, TrackingState,
};
use facewire::config::{Config, MorphMode};
use facewire::forward::Forwarder;
use facewire::image::RgbaImage;
use facewire::ingest::FrameSink;
use facewire::ingest::{self, IngestConfig};
use facewire::mapping::{self, CompiledMapping, MappingFile};
use facewire::record::{self, Recording, ReplayOptions};
use facewire::render::{headless::HeadlessContext, DrawTarget};
use facewire::{fsutil, headgen, sheet};

/// Where the default head's mapping lives in a checkout.
const DEFAULT_HEAD_MAPPING_PATH: &str = "config/mappings/default_head.toml";

/// Hand-off queue length: a few frames absorb scheduling jitter; more would only add latency.
const QUEUE: usize = 4;

#[derive(Debug, Parser)]
#[command(
    name = "facewire",
    version,
    about = "Phone face tracking to a live avatar for OBS"
)]
struct Cli {
    /// Configuration file (default: config/facewire.toml when it exists, else built-in defaults).
    #[arg(long, global = true, value_name = "PATH")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Open the stage window and follow the phone (the default command).
    Run(RunArgs),
    /// Render one still image offscreen (no window, no X server).
    Snapshot(SnapshotArgs),
    /// Print every frame a phone sends as one JSON line.
    Listen(ListenArgs),
    /// Render a labelled contact sheet: the neutral face and each morph target at weight 1.
    Sheet(SheetArgs),
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
}

#[derive(Debug, Args, Default)]
struct RenderArgs {
    /// Avatar file (.glb or .gltf) instead of the configured one.
    #[arg(long, value_name = "PATH")]
    model: Option<PathBuf>,
    /// Mapping file (ARKit channels to the avatar's targets and nodes).
    #[arg(long, value_name = "PATH")]
    mapping: Option<PathBuf>,
    /// Morph path: auto, gpu or cpu.
    #[arg(long, value_name = "MODE")]
    morph: Option<MorphMode>,
    /// Transparent background with premultiplied alpha.
    #[arg(long)]
    transparent: bool,
}

#[derive(Debug, Args, Default)]
struct RunArgs {
    /// UDP address to listen on for VMC and Face Cap (repeatable), instead of the configured
    /// ones.
    #[arg(long, value_name = "ADDR")]
    listen: Vec<SocketAddr>,
    /// The phone's IP address, for the apps that need facewire to ask for data (iFacialMocap,
    /// Facemotion3d, VTube Studio, MeowFace).
    #[arg(long, value_name = "IP")]
    phone: Option<std::net::IpAddr>,
    #[command(flatten)]
    render: RenderArgs,
    /// Render offscreen instead of in a window.
    #[arg(long)]
    headless: bool,
    /// Take input from a recording (.fwrec or Live Link Face CSV) instead of the network; a
    /// headless run ends when the recording does.
    #[arg(long, value_name = "FILE")]
    replay: Option<PathBuf>,
    /// Playback speed of --replay.
    #[arg(long, default_value_t = 1.0)]
    speed: f64,
    /// Apply this performer's calibration profile.
    #[arg(long, value_name = "NAME")]
    performer: Option<String>,
    /// The profiles folder.
    #[arg(long, value_name = "DIR", default_value = calibrate::profile::DEFAULT_DIR)]
    profiles: PathBuf,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    exit_after: Option<f64>,
    /// Write the last frame to this PNG on exit (headless runs).
    #[arg(long, value_name = "PNG")]
    out: Option<PathBuf>,
    /// Offscreen size, WIDTHxHEIGHT (headless runs; default: the window size).
    #[arg(long, value_name = "WxH")]
    size: Option<Size>,
    /// The most frames the stage draws per second (0: unlimited), instead of window.fps_cap.
    #[arg(long, value_name = "FPS")]
    fps_cap: Option<u32>,
    /// Draw only when a new frame arrived or something changed (window.render_on_change).
    #[arg(long)]
    render_on_change: bool,
    /// Start without the control panel (P on the stage opens it), instead of window.panel.
    #[arg(long)]
    no_panel: bool,
    /// On exit, write the stage's and the panel's last frames into this folder as stage.png
    /// and panel.png (window runs; use with --exit-after).
    #[arg(long, value_name = "DIR")]
    screenshots: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct SnapshotArgs {
    /// Channel weights, e.g. 'jawOpen=1,eyeBlinkLeft=0.5' (ARKit names in any dialect).
    #[arg(long, default_value = "")]
    weights: String,
    /// Output PNG.
    #[arg(long, value_name = "PNG")]
    out: PathBuf,
    /// Image size, WIDTHxHEIGHT.
    #[arg(long, default_value = "800x800")]
    size: Size,
    /// Head rotation in degrees, YAW,PITCH,ROLL (yaw turns towards the avatar's left, pitch
    /// nods down, roll tilts towards the avatar's left shoulder).
    #[arg(long, value_name = "Y,P,R", allow_hyphen_values = true)]
    head: Option<HeadAngles>,
    #[command(flatten)]
    render: RenderArgs,
}

#[derive(Debug, Args)]
struct ListenArgs {
    /// UDP port to listen on for VMC and Face Cap (all interfaces); default: the configured
    /// addresses. The other apps' listeners run as configured.
    #[arg(long)]
    port: Option<u16>,
    /// Exit after this many frames.
    #[arg(long)]
    count: Option<u64>,
    /// The phone's IP address, for the apps that need facewire to ask for data.
    #[arg(long, value_name = "IP")]
    phone: Option<std::net::IpAddr>,
}

#[derive(Debug, Args)]
struct SheetArgs {
    /// Avatar file (.glb or .gltf); default: the configured model.
    #[arg(long, value_name = "PATH")]
    model: Option<PathBuf>,
    /// Mapping file (which channels drive which targets and nodes).
    #[arg(long, value_name = "PATH")]
    mapping: Option<PathBuf>,
    /// Output PNG.
    #[arg(long, value_name = "PNG", default_value = "sheet.png")]
    out: PathBuf,
    /// Size of each panel's picture in pixels.
    #[arg(long, default_value_t = sheet::DEFAULT_PANEL)]
    size: u32,
    /// Panels per row.
    #[arg(long, default_value_t = sheet::DEFAULT_COLUMNS)]
    columns: u32,
    /// What the camera frames: targets (the part the targets move) or model (all of it).
    #[arg(long, default_value = "targets")]
    framing: sheet::Framing,
    /// Morph path: auto, gpu or cpu.
    #[arg(long, value_name = "MODE")]
    morph: Option<MorphMode>,
}

#[derive(Debug, Args)]
struct CheckArgs {
    /// Mapping file; default: the configured one (the default head's for the default head).
    #[arg(long, value_name = "PATH")]
    mapping: Option<PathBuf>,
    /// Avatar file (.glb or .gltf); default: the configured model.
    #[arg(long, value_name = "PATH")]
    model: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct CalibrateArgs {
    /// The performer's name; the profile is saved as <profiles>/<NAME>.toml.
    #[arg(long)]
    performer: String,
    /// Calibrate from a recording (.fwrec or a Live Link Face CSV) instead of live.
    #[arg(long, value_name = "FILE")]
    from: Option<PathBuf>,
    /// The profiles folder.
    #[arg(long, value_name = "DIR", default_value = calibrate::profile::DEFAULT_DIR)]
    profiles: PathBuf,
    /// Guide on the terminal only, without the stage window.
    #[arg(long)]
    no_window: bool,
    /// Save without asking for confirmation.
    #[arg(long)]
    yes: bool,
    /// UDP address to listen on for VMC and Face Cap (repeatable), instead of the configured
    /// ones.
    #[arg(long, value_name = "ADDR")]
    listen: Vec<SocketAddr>,
    /// The phone's IP address, for the apps that need facewire to ask for data.
    #[arg(long, value_name = "IP")]
    phone: Option<std::net::IpAddr>,
}

#[derive(Debug, Args)]
struct RecordArgs {
    /// Output file.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Record only this UDP port (all interfaces unless configured otherwise); default: every
    /// port `run` listens on (VMC and Face Cap, iFacialMocap, Facemotion3d, Live Link Face,
    /// VTube Studio).
    #[arg(long)]
    port: Option<u16>,
    /// The phone's IP address, for the apps that need facewire to ask for data (iFacialMocap,
    /// Facemotion3d, VTube Studio).
    #[arg(long, value_name = "IP")]
    phone: Option<std::net::IpAddr>,
    /// Stop after this many datagrams.
    #[arg(long)]
    count: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
}

#[derive(Debug, Args)]
struct ReplayArgs {
    /// The recording.
    file: PathBuf,
    /// Where to send it.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:39539")]
    to: SocketAddr,
    /// Playback speed (2 = twice as fast).
    #[arg(long, default_value_t = 1.0)]
    speed: f64,
    /// Start again at the end, until interrupted.
    #[arg(long = "loop")]
    looped: bool,
    /// The file's format: fwrec or llf-csv (default: detected from its content).
    #[arg(long)]
    format: Option<record::Format>,
}

#[derive(Debug, Args)]
struct GenHeadArgs {
    /// Where to write the head.
    #[arg(long, default_value = headgen::DEFAULT_HEAD)]
    out: PathBuf,
}

#[derive(Debug, Args)]
struct ImportObjArgs {
    /// The neutral (rest) mesh.
    #[arg(long, value_name = "OBJ")]
    neutral: PathBuf,
    /// The folder of target OBJs, one per shape, named after it (eyeBlink_L.obj, jawOpen.obj);
    /// names that are no ARKit shape are kept as they are.
    #[arg(long, value_name = "DIR")]
    targets: PathBuf,
    /// Where to write the avatar.
    #[arg(long, value_name = "GLB")]
    out: PathBuf,
    /// Sum left and right halves of a shape ARKit has no sides for (browInnerUp_L +
    /// browInnerUp_R -> browInnerUp) into one target.
    #[arg(long)]
    combine_halves: bool,
    /// How ARKit targets are named: camel (eyeBlinkLeft), pascal (EyeBlinkLeft) or raw
    /// (eyeBlink_L).
    #[arg(long, value_name = "DIALECT", default_value = "camel")]
    name_dialect: facewire::objimport::NameDialect,
}

/// A head rotation, `YAW,PITCH,ROLL` in degrees.
#[derive(Debug, Clone, Copy, PartialEq)]
struct HeadAngles(glam::Quat);

impl std::str::FromStr for HeadAngles {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let v: Vec<f32> = s
            .split(',')
            .map(|p| p.trim().parse::<f32>().ok().filter(|v| v.is_finite()))
            .collect::<Option<_>>()
            .ok_or_else(|| format!("`{s}` is not YAW,PITCH,ROLL in degrees, e.g. 20,-5,0"))?;
        let [yaw, pitch, roll] = v[..] else {
            return Err(format!("`{s}` needs three angles: YAW,PITCH,ROLL"));
        };
        // The avatar looks down +Z with +X on its left: yaw about +Y turns the face towards +X,
        // pitch about +X nods it down, roll about -Z tilts it towards +X.
        Ok(HeadAngles(
            glam::Quat::from_rotation_y(yaw.to_radians())
                * glam::Quat::from_rotation_x(pitch.to_radians())
                * glam::Quat::from_rotation_z(-roll.to_radians()),
        ))
    }
}

/// An image size, `WIDTHxHEIGHT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Size(u32, u32);

impl std::str::FromStr for Size {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (w, h) = s
            .split_once(['x', 'X'])
            .ok_or_else(|| format!("`{s}` is not a size; write WIDTHxHEIGHT, e.g. 800x800"))?;
        let parse = |v: &str| {
            v.trim()
                .parse::<u32>()
                .ok()
                .filter(|n| (16..=8192).contains(n))
                .ok_or_else(|| format!("`{v}` is not a size between 16 and 8192"))
        };
        Ok(Size(parse(w)?, parse(h)?))
    }
}

fn main() -> std::process::ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_env("FACEWIRE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}

fn run() -> Result<()> {
    let cli = Cli::parse();
    let (mut config, source) = Config::discover(cli.config.as_deref())?;
    match &source {
        Some(p) => tracing::info!(config = %p.display(), "configuration loaded"),
        None => tracing::info!("no configuration file; using defaults"),
    }
    match cli.command {
        None => run_command(&mut config, source.as_deref(), cli.run),
        Some(Command::Run(args)) => run_command(&mut config, source.as_deref(), args),
        Some(Command::Snapshot(args)) => snapshot(&mut config, args),
        Some(Command::Listen(args)) => listen(&mut config, args),
        Some(Command::Sheet(args)) => contact_sheet(&mut config, args),
        Some(Command::Calibrate(args)) => calibrate_command(&mut config, args),
        Some(Command::Check(args)) => check_command(&mut config, args),
        Some(Command::Record(args)) => record_command(&config, args),
        Some(Command::Replay(args)) => replay_command(args),
        Some(Command::GenHead(args)) => {
            let bytes = headgen::generate();
            fsutil::write_atomic(&args.out, &bytes)
                .with_context(|| format!("writing {}", args.out.display()))?;
            println!("wrote {} ({} bytes)", args.out.display(), bytes.len());
            Ok(())
        }
        Some(Command::ImportObj(args)) => import_obj_command(args),
    }
}

/// Imports an OBJ shape set and prints what was imported, missing and skipped.
fn import_obj_command(args: ImportObjArgs) -> Result<()> {
    use facewire::objimport::{self, ImportOptions};
    let started = Instant::now();
    let options = ImportOptions {
        combine_halves: args.combine_halves,
        dialect: args.name_dialect,
    };
    let report = objimport::import_to_file(&args.neutral, &args.targets, &args.out, &options)?;
    print!("{report}");
    println!(
        "wrote {} in {:.2} s",
        args.out.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Applies the render flags to the configuration.
fn apply_render_args(config: &mut Config, args: &RenderArgs) {
    if let Some(m) = &args.model {
        config.render.model.clone_from(m);
    }
    if let Some(m) = &args.mapping {
        config.render.mapping.clone_from(m);
    }
    if let Some(m) = args.morph {
        config.render.morph = m;
    }
    if args.transparent {
        config.window.transparent = true;
    }
}

/// The mapping text and where it came from: `render.mapping`, else (for the default head)
/// config/mappings/default_head.toml or its built-in copy; `None` means the automatic mapping.
fn mapping_source(config: &Config) -> Result<Option<(String, String)>> {
    let default_head = config.render.model.as_os_str().is_empty();
    let default_file = std::path::Path::new(DEFAULT_HEAD_MAPPING_PATH);
    let path = if !config.render.mapping.as_os_str().is_empty() {
        config.render.mapping.clone()
    } else if default_head && default_file.is_file() {
        default_file.to_path_buf()
    } else if default_head {
        return Ok(Some((
            mapping::DEFAULT_HEAD_MAPPING.to_string(),
            DEFAULT_HEAD_MAPPING_PATH.to_string(),
        )));
    } else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("reading the mapping {}", path.display()))?;
    Ok(Some((text, path.display().to_string())))
}

fn check_command(config: &mut Config, args: CheckArgs) -> Result<()> {
    if let Some(m) = args.model {
        config.render.model = m;
    }
    if let Some(m) = args.mapping {
        config.render.mapping = m;
    }
    let avatar = if config.render.model.as_os_str().is_empty() {
        avatar::load_slice(app::DEFAULT_HEAD_GLB, headgen::DEFAULT_HEAD)?
    } else {
        avatar::load(&config.render.model)?
    };
    let report = match mapping_source(config)? {
        Some((text, path)) => {
            println!("checking {path} against {}", avatar.source);
            mapping::check_text(&text, &path, &avatar)
        }
        None => {
            println!("checking the automatic mapping against {}", avatar.source);
            mapping::check(&MappingFile::default(), &avatar)
        }
    };
    println!("{report}");
    if report.has_errors() {
        bail!("the mapping has errors");
    }
    Ok(())
}

/// The mapping file in use, when there is one on disk.
fn mapping_path(config: &Config) -> Option<PathBuf> {
    if !config.render.mapping.as_os_str().is_empty() {
        Some(config.render.mapping.clone())
    } else if config.render.model.as_os_str().is_empty()
        && std::path::Path::new(DEFAULT_HEAD_MAPPING_PATH).is_file()
    {
        Some(PathBuf::from(DEFAULT_HEAD_MAPPING_PATH))
    } else {
        None
    }
}

/// Watches the mapping file in use, when there is one on disk, and hands each saved version
/// (parsed, or why it could not be) to `deliver`.
fn watch_mapping(
    config: &Config,
    mut deliver: impl FnMut(Result<MappingFile, String>) + Send + 'static,
) -> Result<Option<facewire::watch::FileWatcher>> {
    let Some(path) = mapping_path(config) else {
        return Ok(None);
    };
    let watcher = facewire::watch::watch_file(&path, move |p| {
        deliver(MappingFile::load(p).map_err(|e| e.to_string()));
    })?;
    tracing::info!(mapping = %path.display(), "watching the mapping for changes");
    Ok(Some(watcher))
}

/// Loads the configured avatar (or the built-in default head) and compiles its mapping.
fn load_avatar(config: &Config) -> Result<(Avatar, CompiledMapping)> {
    let default_head = config.render.model.as_os_str().is_empty();
    let avatar = if default_head {
        avatar::load_slice(app::DEFAULT_HEAD_GLB, headgen::DEFAULT_HEAD)?
    } else {
        avatar::load(&config.render.model)?
    };
    let targets: usize = avatar.meshes.iter().map(|m| m.target_count()).sum();
    tracing::info!(model = %avatar.source, meshes = avatar.meshes.len(), targets, "avatar loaded");
    let file = match mapping_source(config)? {
        Some((text, path)) => Some(MappingFile::parse(&text, &path)?),
        None => None,
    };
    let compiled = match &file {
        Some(file) => CompiledMapping::compile(file, &avatar)?,
        None => CompiledMapping::auto(&avatar),
    };
    tracing::info!(
        mapping = file.as_ref().map_or("automatic", |f| f.path.as_str()),
        targets = compiled.targets.len(),
        "mapping compiled"
    );
    Ok((avatar, compiled))
}

/// The background colour for offscreen images: transparent when asked, else opaque.
fn background(config: &Config) -> ([f32; 4], bool) {
    let mut c = config.window.background.0;
    if config.window.transparent {
        c[3] = 0.0;
        (c, true)
    } else {
        c[3] = 1.0;
        (c, false)
    }
}

/// Parses `name=value,name=value` into a frame of ARKit channels.
fn parse_weights(spec: &str) -> Result<FaceFrame> {
    let mut frame = FaceFrame::empty(
        Protocol::Vmc,
        SocketAddr::from(([127, 0, 0, 1], 0)),
        Instant::now(),
    );
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, value) = item
            .split_once('=')
            .with_context(|| format!("`{item}`: write NAME=VALUE, e.g. jawOpen=1"))?;
        let channel = Channel::parse(name).with_context(|| {
            let names = Channel::ALL.map(Channel::name);
            match facewire::diagnostic::nearest(name.trim(), names) {
                Some(best) => format!("unknown channel `{name}`; did you mean `{best}`?"),
                None => format!("unknown channel `{name}`; ARKit names like jawOpen, eyeBlinkLeft"),
            }
        })?;
        let v: f32 = value
            .trim()
            .parse()
            .ok()
            .filter(|v: &f32| v.is_finite())
            .with_context(|| format!("`{value}` is not a number (in `{item}`)"))?;
        frame.set(channel, v.clamp(0.0, 1.0));
    }
    Ok(frame)
}

fn contact_sheet(config: &mut Config, args: SheetArgs) -> Result<()> {
    apply_render_args(
        config,
        &RenderArgs {
            model: args.model,
            mapping: args.mapping,
            morph: args.morph,
            transparent: false,
        },
    );
    let (avatar, mapping) = load_avatar(config)?;
    let options = sheet::SheetOptions {
        panel: args.size,
        columns: args.columns,
        morph: config.render.morph,
        framing: args.framing,
        ..sheet::SheetOptions::default()
    };
    let image = sheet::render_sheet_with(avatar, &mapping, &options)?;
    image.save_png(&args.out)?;
    println!(
        "wrote {} ({}x{})",
        args.out.display(),
        image.width,
        image.height
    );
    Ok(())
}

fn snapshot(config: &mut Config, args: SnapshotArgs) -> Result<()> {
    apply_render_args(config, &args.render);
    let mut frame = parse_weights(&args.weights)?;
    frame.head = args.head.map(|h| h.0);
    let (avatar, mapping) = load_avatar(config)?;
    let ctx = HeadlessContext::new(args.size.0, args.size.1)?;
    let mut scene = Scene::new(ctx.gl(), avatar, config.render.morph)?;
    scene.set_mapping(mapping);
    scene.set_camera(config.camera);
    let (clear, premultiplied) = background(config);
    scene.set_frame(Some(&frame));
    ctx.bind();
    scene.draw(&DrawTarget {
        width: args.size.0,
        height: args.size.1,
        clear_color: clear,
        alpha: premultiplied,
    });
    let image: RgbaImage = ctx.read_rgba();
    drop(scene);
    image.save_png(&args.out)?;
    tracing::info!(out = %args.out.display(), "snapshot written");
    Ok(())
}

/// Where frames come from: the network or a recording. Both stop when dropped.
enum Input {
    /// UDP listeners.
    Network(ingest::IngestHandle),
    /// A recording played in real time.
    Replay(record::ReplayHandle),
}

impl Input {
    /// Frames committed and malformed datagrams so far.
    fn counts(&self) -> (u64, u64) {
        match self {
            Input::Network(h) => {
                let s = h.stats();
                (s.frames, s.malformed_datagrams + s.oversized_datagrams)
            }
            Input::Replay(h) => {
                let s = h.stats();
                (s.frames, s.malformed)
            }
        }
    }

    /// The totals the control panel shows.
    fn panel_counters(&self) -> facewire::telemetry::InputCounters {
        use facewire::arkit::Protocol;
        match self {
            Input::Network(h) => {
                let s = h.stats();
                let n = h.net_stats();
                let phones = [
                    Protocol::IFacialMocap,
                    Protocol::Facemotion3d,
                    Protocol::LiveLinkFace,
                    Protocol::VTubeStudio,
                ]
                .map(|p| n.phone(p).copied().unwrap_or_default());
                facewire::telemetry::InputCounters {
                    datagrams: s.datagrams + phones.iter().map(|p| p.datagrams).sum::<u64>(),
                    frames: s.frames + phones.iter().map(|p| p.frames).sum::<u64>(),
                    malformed: s.malformed_datagrams
                        + s.oversized_datagrams
                        + phones
                            .iter()
                            .map(|p| p.malformed + p.truncated + p.oversized + p.unsupported)
                            .sum::<u64>(),
                    rejected: n.guard.not_allowed + n.guard.other_source,
                    dropped: 0,
                }
            }
            Input::Replay(h) => {
                let s = h.stats();
                facewire::telemetry::InputCounters {
                    datagrams: s.datagrams,
                    frames: s.frames,
                    malformed: s.malformed,
                    ..Default::default()
                }
            }
        }
    }

    /// What the input is, for the control panel.
    fn label(&self) -> String {
        match self {
            Input::Network(h) => {
                let listening: Vec<String> = h
                    .listeners()
                    .iter()
                    .map(|l| format!("{} {}", l.kind.listener_label(), l.addr))
                    .collect();
                format!("listening: {}", listening.join(", "))
            }
            Input::Replay(_) => "replaying a recording".to_string(),
        }
    }

    /// Whether a replay has played everything (never true for the network).
    fn finished(&self) -> bool {
        matches!(self, Input::Replay(h) if h.stats().finished)
    }

    fn shutdown(self) {
        match self {
            Input::Network(h) => h.shutdown(),
            Input::Replay(h) => {
                h.shutdown();
            }
        }
    }
}

/// The tracking state as last reported, and how many changes there were.
type TrackingLog = Arc<Mutex<TrackingSummary>>;

/// The ingest-side sink: calibrate, smooth and watch for tracking loss, then forward and hand
/// off; tell the window about state changes, and keep `log` current. With `link`, it also keeps
/// the control panel's telemetry and carries out its commands.
fn frame_sink(
    config: &Config,
    profile: Option<&Profile>,
    mut sender: bridge::FrameSender,
    notify: Option<winit::event_loop::EventLoopProxy<AppEvent>>,
    log: TrackingLog,
    link: Option<PanelLink>,
) -> Result<(Box<dyn FrameSink>, SettingsSlot)> {
    let mut core = Conditioner::new(config.smoothing, config.tracking, Instant::now());
    if let Some(profile) = profile {
        profile.apply_to(&mut core, &config.smoothing);
    }
    let mut forwarder = Forwarder::new(&config.forward)?;
    if forwarder.is_some() {
        tracing::info!(to = ?config.forward.to, "forwarding the calibrated stream as VMC");
    }
    let telemetry = link.as_ref().map(|l| Arc::clone(&l.telemetry));
    let state_telemetry = telemetry.clone();
    // A stage that renders only on change sleeps until told that a frame waits.
    let wake = notify.clone().filter(|_| config.window.render_on_change);
    let messages = notify.clone();
    let inner = ConditionerSink::new(
        core,
        Box::new(move |frame: FaceFrame| {
            if let Some(f) = forwarder.as_mut() {
                f.send(&frame);
            }
            if let Some(t) = &telemetry {
                t.record_calibrated(&frame);
            }
            sender.send(frame);
            if let Some(proxy) = &wake {
                let _ = proxy.send_event(AppEvent::FrameReady);
            }
        }),
        Box::new(move |state: TrackingState| {
            {
                let mut log = log.lock().unwrap_or_else(PoisonError::into_inner);
                log.state = state;
                log.changes += 1;
            }
            if let Some(t) = &state_telemetry {
                t.record_tracking(state, Instant::now());
            }
            if let Some(proxy) = &notify {
                let _ = proxy.send_event(AppEvent::Tracking(state));
            }
        }),
    );
    let slot = SettingsSlot::default();
    let sink = ReloadableSink {
        inner,
        slot: Arc::clone(&slot),
        smoothing: config.smoothing,
        profile: profile.cloned(),
        link,
        last_raw: None,
        tap: None,
        messages,
    };
    Ok((Box::new(sink), slot))
}

/// New smoothing and tracking settings waiting for the ingest thread to pick them up.
type SettingsSlot = Arc<Mutex<Option<(calibrate::SmoothingConfig, calibrate::TrackingConfig)>>>;

/// What the control panel asks of the ingest thread; carried out at its next tick.
enum SinkCommand {
    /// Take the newest raw frame as the performer's neutral.
    CaptureNeutral,
    /// Use this profile from now on (`None`: no profile).
    Profile(Option<Box<Profile>>),
    /// Copy raw frames to the calibration routine (`None`: stop).
    Tap(Option<mpsc::SyncSender<FaceFrame>>),
}

/// The ingest side's end of the control panel.
struct PanelLink {
    /// What the panel shows.
    telemetry: Arc<facewire::telemetry::Telemetry>,
    /// What it asks for.
    commands: mpsc::Receiver<SinkCommand>,
    /// Where profiles are saved.
    profiles: PathBuf,
}

/// The conditioner sink, plus settings swapped in on the next tick after a config reload, and
/// the control panel's telemetry and commands.
struct ReloadableSink {
    inner: ConditionerSink,
    slot: SettingsSlot,
    /// The main smoothing settings (a profile may override them).
    smoothing: calibrate::SmoothingConfig,
    /// The profile in use, updated when a neutral is captured.
    profile: Option<Profile>,
    link: Option<PanelLink>,
    /// The newest frame as received.
    last_raw: Option<FaceFrame>,
    /// The calibration routine's copy of the raw frames.
    tap: Option<mpsc::SyncSender<FaceFrame>>,
    /// Where outcomes are reported.
    messages: Option<winit::event_loop::EventLoopProxy<AppEvent>>,
}

/// The newest frame must be at most this old to be captured as a neutral.
const NEUTRAL_MAX_AGE: Duration = Duration::from_secs(2);

impl ReloadableSink {
    fn report(&self, topic: facewire::panel::Topic, result: Result<String, String>) {
        let (error, text) = match result {
            Ok(text) => (false, text),
            Err(text) => (true, text),
        };
        if let Some(proxy) = &self.messages {
            let _ = proxy.send_event(AppEvent::Message { topic, error, text });
        }
    }

    fn capture_neutral(&mut self) -> Result<String, String> {
        let raw = self
            .last_raw
            .ok_or("no face data has arrived yet: start the phone app, then capture")?;
        let age = raw.received.elapsed();
        if age > NEUTRAL_MAX_AGE {
            return Err(format!(
                "the newest face data is {:.0} s old: is the phone still sending?",
                age.as_secs_f64()
            ));
        }
        let capture = self.inner.core_mut().capture_neutral(&raw);
        let mut text = format!(
            "neutral captured: {} channels re-zeroed",
            capture.rezeroed.len()
        );
        if !capture.kept.is_empty() {
            let names: Vec<&str> = capture.kept.iter().take(4).map(|c| c.name()).collect();
            text.push_str(&format!(
                "; {} read near full and kept their range ({}{}): relax and capture again",
                capture.kept.len(),
                names.join(", "),
                if capture.kept.len() > 4 { ", ..." } else { "" }
            ));
        }
        if raw.head.is_some() {
            text.push_str("; head re-centred for this session");
        }
        match self.profile.as_mut() {
            Some(profile) => {
                for c in capture.rezeroed.iter() {
                    let range = capture.ranges[c.index()];
                    let mut p = profile.channel(c);
                    p.neutral = range.min;
                    p.min = range.min;
                    p.max = range.max;
                    profile.set(c, p);
                }
                let dir = self.link.as_ref().map(|l| l.profiles.clone());
                let dir = dir.unwrap_or_else(Profile::default_dir);
                match profile.save(&dir) {
                    Ok(path) => text.push_str(&format!("; saved to {}", path.display())),
                    Err(e) => return Err(format!("{text}, but the profile was not saved: {e}")),
                }
            }
            None => text.push_str(" (no profile chosen: kept until facewire stops)"),
        }
        Ok(text)
    }

    fn command(&mut self, command: SinkCommand) {
        match command {
            SinkCommand::CaptureNeutral => {
                let result = self.capture_neutral();
                self.report(facewire::panel::Topic::Calibration, result);
            }
            SinkCommand::Profile(profile) => {
                let core = self.inner.core_mut();
                match &profile {
                    Some(p) => p.apply_to(core, &self.smoothing),
                    None => {
                        core.set_ranges(
                            [calibrate::ChannelRange::default(); facewire::arkit::COUNT],
                        );
                        core.set_neutral(calibrate::NeutralPose::default());
                        core.set_smoothing(self.smoothing);
                    }
                }
                self.profile = profile.map(|p| *p);
            }
            SinkCommand::Tap(tap) => self.tap = tap,
        }
    }
}

impl FrameSink for ReloadableSink {
    fn frame(&mut self, frame: FaceFrame) {
        if let Some(link) = &self.link {
            link.telemetry.record_raw(&frame);
        }
        self.last_raw = Some(frame);
        if let Some(tap) = &self.tap {
            if let Err(mpsc::TrySendError::Disconnected(_)) = tap.try_send(frame) {
                self.tap = None;
            }
        }
        self.inner.frame(frame);
    }

    fn tick(&mut self, now: Instant) {
        let pending = self.slot.try_lock().ok().and_then(|mut slot| slot.take());
        if let Some((smoothing, tracking)) = pending {
            self.smoothing = smoothing;
            let core = self.inner.core_mut();
            core.set_smoothing(smoothing);
            core.set_tracking(tracking);
        }
        while let Some(command) = self.link.as_ref().and_then(|l| l.commands.try_recv().ok()) {
            self.command(command);
        }
        self.inner.tick(now);
    }
}

/// Where a reloaded configuration's live changes go besides the ingest thread.
enum StageLink {
    /// The stage window: background and camera arrive as events.
    Window(winit::event_loop::EventLoopProxy<AppEvent>),
    /// A headless run: the camera arrives through a channel read before each frame.
    Headless(mpsc::Sender<facewire::config::CameraConfig>),
}

/// Watches the configuration file the program started with and applies what can change live:
/// smoothing and tracking (through `slot`), the stage background and camera (through `stage`).
/// Other changes are reported as needing a restart; a file that fails to parse keeps the
/// running settings.
fn watch_config(
    source: Option<&std::path::Path>,
    running: &Config,
    profile: Option<&Profile>,
    slot: SettingsSlot,
    stage: StageLink,
) -> Result<Option<facewire::watch::FileWatcher>> {
    let Some(path) = source else { return Ok(None) };
    // Compare saves with the file as it was, not with the running settings, which command-line
    // flags may have changed.
    let mut old = Config::load(path).unwrap_or_else(|_| running.clone());
    let profile_smoothing = profile.and_then(|p| p.smoothing);
    let watcher = facewire::watch::watch_file(path, move |p| {
        let tell = |error: bool, text: String| {
            if let StageLink::Window(proxy) = &stage {
                let _ = proxy.send_event(AppEvent::Message {
                    topic: facewire::panel::Topic::Config,
                    error,
                    text,
                });
            }
        };
        let new = match Config::load(p) {
            Ok(new) => new,
            Err(error) => {
                tracing::error!(%error, "configuration reload failed; keeping the running settings");
                tell(true, format!("{error}\n(the running settings stay in use)"));
                return;
            }
        };
        if new.smoothing != old.smoothing || new.tracking != old.tracking {
            let smoothing = profile_smoothing.unwrap_or(new.smoothing);
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some((smoothing, new.tracking));
            tracing::info!("smoothing and tracking settings reloaded");
        }
        if new.window.background != old.window.background {
            if let StageLink::Window(proxy) = &stage {
                let _ = proxy.send_event(AppEvent::Background(new.window.background.0));
            }
            tracing::info!(background = %new.window.background, "background reloaded");
        }
        if new.camera != old.camera {
            match &stage {
                StageLink::Window(proxy) => {
                    let _ = proxy.send_event(AppEvent::Camera(new.camera));
                }
                StageLink::Headless(tx) => {
                    let _ = tx.send(new.camera);
                }
            }
            tracing::info!("camera framing reloaded");
        }
        let mut window = new.window.clone();
        window.background = old.window.background;
        let restart: Vec<&str> = [
            ("[window]", window != old.window),
            ("[ingest]", new.ingest != old.ingest),
            ("[render]", new.render != old.render),
            ("[forward]", new.forward != old.forward),
        ]
        .into_iter()
        .filter_map(|(name, changed)| changed.then_some(name))
        .collect();
        if !restart.is_empty() {
            tracing::warn!(sections = ?restart, "these changes take effect when facewire restarts");
        }
        tell(
            false,
            if restart.is_empty() {
                format!("{}: reloaded", p.display())
            } else {
                format!(
                    "{}: reloaded; changes in {} take effect when facewire restarts",
                    p.display(),
                    restart.join(", ")
                )
            },
        );
        old = new;
    })?;
    tracing::info!(config = %path.display(), "watching the configuration for changes");
    Ok(Some(watcher))
}

/// Starts the input thread (network listeners, or a replay when `replay` names a file).
fn start_input(
    config: &Config,
    replay: Option<(&std::path::Path, f64)>,
    sink: Box<dyn FrameSink>,
) -> Result<Input> {
    Ok(match replay {
        Some((file, speed)) => {
            let recording = Recording::load(file)
                .with_context(|| format!("loading the recording {}", file.display()))?;
            tracing::info!(
                file = %file.display(),
                format = %recording.format(),
                items = recording.len(),
                seconds = recording.duration().as_secs_f64(),
                "replaying instead of listening"
            );
            let options = ReplayOptions {
                speed,
                ..ReplayOptions::default()
            };
            Input::Replay(record::spawn_replay(recording, options, sink)?)
        }
        None => Input::Network(ingest::spawn(
            IngestConfig::from_section(&config.ingest),
            sink,
        )?),
    })
}

fn run_command(config: &mut Config, source: Option<&std::path::Path>, args: RunArgs) -> Result<()> {
    apply_render_args(config, &args.render);
    if !args.listen.is_empty() {
        config.ingest.listen.clone_from(&args.listen);
    }
    if args.phone.is_some() {
        config.ingest.phone = args.phone;
    }
    if let Some(cap) = args.fps_cap {
        config.window.fps_cap = cap;
    }
    if args.render_on_change {
        config.window.render_on_change = true;
    }
    let (avatar, mapping) = load_avatar(config)?;
    if args.headless {
        return run_headless(config, source, &args, avatar, mapping);
    }
    if args.out.is_some() || args.size.is_some() {
        bail!("--out and --size belong to headless runs; add --headless");
    }
    let event_loop = winit::event_loop::EventLoop::<AppEvent>::with_user_event()
        .build()
        .context("cannot open a window (is a display available? for offscreen use --headless)")?;
    let (sender, receiver) = bridge::channel(QUEUE);
    let replay = args.replay.as_deref().map(|f| (f, args.speed));
    let profile = performer_profile(&args.profiles, args.performer.as_deref())?;
    if args.no_panel {
        config.window.panel = false;
    }
    let telemetry = facewire::telemetry::Telemetry::new(Instant::now());
    let (commands, command_rx) = mpsc::channel();
    let (sink, slot) = frame_sink(
        config,
        profile.as_ref(),
        sender,
        Some(event_loop.create_proxy()),
        TrackingLog::default(),
        Some(PanelLink {
            telemetry: Arc::clone(&telemetry),
            commands: command_rx,
            profiles: args.profiles.clone(),
        }),
    )?;
    let input = start_input(config, replay, sink)?;
    let _config_watch = watch_config(
        source,
        config,
        profile.as_ref(),
        slot,
        StageLink::Window(event_loop.create_proxy()),
    )?;
    let proxy = event_loop.create_proxy();
    let _watch = watch_mapping(config, move |parsed| {
        let _ = proxy.send_event(AppEvent::Mapping(parsed.map(Box::new)));
    })?;
    let controls = LiveControls {
        input: Some(input),
        live: replay.is_none(),
        commands,
        proxy: event_loop.create_proxy(),
        profiles: args.profiles.clone(),
        profile: profile.map(|p| p.performer),
        routine: None,
        config_folder: source
            .and_then(|p| p.parent())
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("config"), std::path::Path::to_path_buf),
    };
    let mut app = StageApp::new(
        StageOptions {
            config: config.clone(),
            config_path: source.map(std::path::Path::to_path_buf),
            exit_after: args.exit_after.map(|s| Duration::from_secs_f64(s.max(0.0))),
            mapping_path: mapping_path(config),
            screenshots: args.screenshots.clone(),
        },
        avatar,
        mapping,
        receiver,
    )
    .with_panel(telemetry, Box::new(controls));
    event_loop.run_app(&mut app)?;
    let stats = app.draw_stats();
    if let Some([p50, p99]) = stats.draw_time.percentiles([50.0, 99.0]) {
        tracing::info!(
            frames = stats.frames,
            draw_p50_us = p50.as_micros() as u64,
            draw_p99_us = p99.as_micros() as u64,
            "stage closed"
        );
    }
    // Dropping the application ends the input (the controls own it) and a routine waiting for
    // frames.
    let error = app.take_error();
    drop(app);
    match error {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// The running calibration routine started from the panel.
struct PanelRoutine {
    /// The performer's review decisions.
    decisions: mpsc::Sender<calibrate::Decision>,
    /// The routine's thread, which returns the outcome to report.
    thread: std::thread::JoinHandle<()>,
}

/// The control panel's side of `run`: the input, the ingest thread's commands, the profiles.
struct LiveControls {
    /// The input (dropped with the controls, which stops it).
    input: Option<Input>,
    /// Whether the input is live (not a replay), so calibration makes sense.
    live: bool,
    commands: mpsc::Sender<SinkCommand>,
    proxy: winit::event_loop::EventLoopProxy<AppEvent>,
    profiles: PathBuf,
    /// The profile in use, by performer name.
    profile: Option<String>,
    routine: Option<PanelRoutine>,
    config_folder: PathBuf,
}

impl Drop for LiveControls {
    fn drop(&mut self) {
        if let Some(input) = self.input.take() {
            input.shutdown();
        }
        // The input's end closes the routine's frames; a review waiting for a decision ends
        // when its channel closes.
        if let Some(routine) = self.routine.take() {
            drop(routine.decisions);
            let _ = routine.thread.join();
        }
    }
}

impl app::Controls for LiveControls {
    fn counters(&self) -> facewire::telemetry::InputCounters {
        self.input
            .as_ref()
            .map(Input::panel_counters)
            .unwrap_or_default()
    }

    fn input_label(&self) -> String {
        self.input.as_ref().map(Input::label).unwrap_or_default()
    }

    fn can_calibrate(&self) -> bool {
        self.live && self.routine.as_ref().is_none_or(|r| r.thread.is_finished())
    }

    fn profiles(&self) -> Vec<String> {
        Profile::list(&self.profiles)
    }

    fn profile(&self) -> Option<String> {
        self.profile.clone()
    }

    fn capture_neutral(&mut self) {
        let _ = self.commands.send(SinkCommand::CaptureNeutral);
    }

    fn choose_profile(&mut self, name: Option<&str>) -> Result<String, String> {
        let profile = match name {
            Some(name) => {
                Some(Profile::load_named(&self.profiles, name).map_err(|e| e.to_string())?)
            }
            None => None,
        };
        let text = match &profile {
            Some(p) => format!(
                "profile {} in use ({})",
                p.performer,
                Profile::path_in(&self.profiles, &p.performer).display()
            ),
            None => "no profile: raw ranges in use".to_string(),
        };
        self.profile = profile.as_ref().map(|p| p.performer.clone());
        let _ = self
            .commands
            .send(SinkCommand::Profile(profile.map(Box::new)));
        Ok(text)
    }

    fn start_calibration(&mut self) -> Result<(), String> {
        if !self.can_calibrate() {
            return Err(
                "calibration needs live input from the phone (not a replay), and one \
                        routine at a time"
                    .into(),
            );
        }
        if let Some(old) = self.routine.take() {
            let _ = old.thread.join();
        }
        let performer = self
            .profile
            .clone()
            .unwrap_or_else(|| "performer".to_string());
        let old = Profile::load_named(&self.profiles, &performer).ok();
        let (raw_tx, raw_rx) = mpsc::sync_channel::<FaceFrame>(1024);
        let (decisions, decision_rx) = mpsc::channel();
        let _ = self.commands.send(SinkCommand::Tap(Some(raw_tx)));
        let proxy = self.proxy.clone();
        let commands = self.commands.clone();
        let dir = self.profiles.clone();
        let thread = std::thread::Builder::new()
            .name("facewire-calibrate".into())
            .spawn(move || {
                let notify = proxy.clone();
                let mut ui = facewire::panel::PanelRoutineUi::new(
                    Box::new(move |event| {
                        let _ = notify.send_event(event);
                    }),
                    decision_rx,
                );
                let outcome = calibrate::run_routine(raw_rx, &mut ui, old.as_ref(), &performer);
                let _ = commands.send(SinkCommand::Tap(None));
                let _ = proxy.send_event(AppEvent::Prompt(None));
                let _ = proxy.send_event(AppEvent::Routine(facewire::panel::RoutineView::Idle));
                let (error, text) = match outcome {
                    Ok(Some(calibration)) => match calibration.profile.save(&dir) {
                        Ok(path) => {
                            let _ = commands
                                .send(SinkCommand::Profile(Some(Box::new(calibration.profile))));
                            (
                                false,
                                format!("calibration saved to {} and in use", path.display()),
                            )
                        }
                        Err(e) => (true, format!("calibration not saved: {e}")),
                    },
                    Ok(None) => (false, "calibration discarded".to_string()),
                    Err(e) => (true, format!("calibration stopped: {e}")),
                };
                let _ = proxy.send_event(AppEvent::Message {
                    topic: facewire::panel::Topic::Calibration,
                    error,
                    text,
                });
            })
            .map_err(|e| format!("cannot start the calibration routine: {e}"))?;
        self.profile = Some(self.profile.clone().unwrap_or_else(|| "performer".into()));
        self.routine = Some(PanelRoutine { decisions, thread });
        Ok(())
    }

    fn review(&mut self, decision: calibrate::Decision) {
        if let Some(routine) = &self.routine {
            let _ = routine.decisions.send(decision);
        }
    }

    fn config_folder(&self) -> PathBuf {
        self.config_folder.clone()
    }
}

fn run_headless(
    config: &Config,
    source: Option<&std::path::Path>,
    args: &RunArgs,
    avatar: Avatar,
    mapping: CompiledMapping,
) -> Result<()> {
    let Size(width, height) = args
        .size
        .unwrap_or(Size(config.window.width, config.window.height));
    let ctx = HeadlessContext::new(width, height)?;
    let mut scene = Scene::new(ctx.gl(), avatar, config.render.morph)?;
    scene.set_mapping(mapping);
    scene.set_camera(config.camera);
    tracing::info!(morph = ?scene.morph_path(), width, height, "headless renderer ready");
    let (sender, mut receiver) = bridge::channel(QUEUE);
    let counters = sender.counters();
    let replay = args.replay.as_deref().map(|f| (f, args.speed));
    let tracking = TrackingLog::default();
    let profile = performer_profile(&args.profiles, args.performer.as_deref())?;
    let (sink, slot) = frame_sink(
        config,
        profile.as_ref(),
        sender,
        None,
        Arc::clone(&tracking),
        None,
    )?;
    let input = start_input(config, replay, sink)?;
    let (camera_tx, cameras) = mpsc::channel();
    let _config_watch = watch_config(
        source,
        config,
        profile.as_ref(),
        slot,
        StageLink::Headless(camera_tx),
    )?;
    let deadline = args
        .exit_after
        .map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
    // Without --exit-after, a replayed run ends once the recording has played and its last
    // frame has been drawn.
    let until_replayed = deadline.is_none() && args.replay.is_some();
    let (clear, premultiplied) = background(config);
    let (reload_tx, reloads) = mpsc::channel();
    let _watch = watch_mapping(config, move |parsed| {
        let _ = reload_tx.send(parsed);
    })?;
    let (image, drawn, mut ages) = app::run_headless(
        &mut scene,
        &ctx,
        &mut receiver,
        &app::HeadlessPace {
            fps: config.render.headless_fps,
            background: clear,
            premultiplied,
            render_on_change: config.window.render_on_change,
            motion: config.window.motion,
        },
        |scene| {
            let mut changed = false;
            while let Ok(parsed) = reloads.try_recv() {
                let _ = app::reload_mapping(scene, parsed);
                changed = true;
            }
            while let Ok(camera) = cameras.try_recv() {
                scene.set_camera(camera);
                changed = true;
            }
            changed
        },
        || {
            deadline.is_some_and(|d| Instant::now() >= d)
                || (until_replayed && input.finished() && receiver_idle(&counters))
        },
    );
    let (frames_received, malformed) = input.counts();
    input.shutdown();
    drop(scene);
    if let Some(out) = &args.out {
        image.save_png(out)?;
    }
    ages.sort_unstable();
    let report = HeadlessReport {
        frames_drawn: drawn,
        frames_received,
        frames_dropped: counters.snapshot().dropped,
        malformed,
        sample_age_us: AgeStats {
            p50: app::percentile(&ages, 50.0),
            p99: app::percentile(&ages, 99.0),
        },
        tracking: *tracking.lock().unwrap_or_else(PoisonError::into_inner),
    };
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

/// Whether every frame handed off has been taken or dropped (nothing left to draw).
fn receiver_idle(counters: &bridge::BridgeCounters) -> bool {
    let s = counters.snapshot();
    s.taken + s.superseded + s.dropped >= s.sent
}

/// Loads `--performer NAME`'s profile from `dir`.
fn performer_profile(dir: &std::path::Path, name: Option<&str>) -> Result<Option<Profile>> {
    let Some(name) = name else { return Ok(None) };
    let profile = Profile::load_named(dir, name)?;
    tracing::info!(performer = name, created = %profile.created, "performer profile loaded");
    Ok(Some(profile))
}

/// Passes raw frames to the calibration routine and everything to the usual sink.
struct Tee {
    raw: mpsc::SyncSender<FaceFrame>,
    inner: Box<dyn FrameSink>,
}

impl FrameSink for Tee {
    fn frame(&mut self, frame: FaceFrame) {
        // The routine needs the phone's own values, before any profile or smoothing; if it
        // falls behind, frames are dropped rather than queued without bound.
        let _ = self.raw.try_send(frame);
        self.inner.frame(frame);
    }

    fn tick(&mut self, now: Instant) {
        self.inner.tick(now);
    }
}

/// Shows the routine's prompts on the terminal and, when there is one, in the stage window.
struct StageUi<R, W> {
    terminal: TerminalUi<R, W>,
    proxy: Option<winit::event_loop::EventLoopProxy<AppEvent>>,
    shown: facewire::panel::PromptChanges,
}

impl<R: std::io::BufRead, W: Write> RoutineUi for StageUi<R, W> {
    fn show(&mut self, prompt: &calibrate::Prompt) {
        self.terminal.show(prompt);
        let Some(proxy) = &self.proxy else { return };
        // Redraw the card only when what it shows changes (percent of progress, whole seconds).
        if !self.shown.changed(prompt) {
            return;
        }
        let card = facewire::panel::prompt_card(prompt, "the terminal");
        let _ = proxy.send_event(AppEvent::Prompt(Some(card)));
    }

    fn review(&mut self, summary: &calibrate::Summary) -> calibrate::Decision {
        self.terminal.review(summary)
    }
}

fn calibrate_command(config: &mut Config, args: CalibrateArgs) -> Result<()> {
    Profile::validate_name(&args.performer)?;
    let old = Profile::load_named(&args.profiles, &args.performer).ok();
    if let Some(old) = &old {
        eprintln!(
            "updating {}'s profile from {} (the old ranges are shown beside the new ones)",
            args.performer, old.created
        );
    }
    let calibration = match &args.from {
        Some(file) => {
            let recording = Recording::load(file)
                .with_context(|| format!("loading the recording {}", file.display()))?;
            let calibration = calibrate::calibrate_offline(
                record::frames(&recording),
                old.as_ref(),
                &args.performer,
            );
            println!("{}", calibration.summary);
            if !args.yes && !confirm("Save this profile? [Y/n] ")? {
                println!("not saved");
                return Ok(());
            }
            Some(calibration)
        }
        None => live_calibration(config, &args, old.as_ref())?,
    };
    let Some(calibration) = calibration else {
        println!("calibration cancelled; nothing saved");
        return Ok(());
    };
    let path = calibration.profile.save(&args.profiles)?;
    println!(
        "saved {}; use it with: facewire run --performer {}",
        path.display(),
        args.performer
    );
    Ok(())
}

/// Asks a yes/no question on the terminal; Enter means yes.
fn confirm(question: &str) -> Result<bool> {
    eprint!("{question}");
    std::io::stderr().flush()?;
    let mut line = String::new();
    if std::io::stdin().read_line(&mut line)? == 0 {
        return Ok(false);
    }
    Ok(matches!(
        line.trim().to_ascii_lowercase().as_str(),
        "" | "y" | "yes"
    ))
}

/// Runs the guided routine on live input, with the stage window showing the avatar and the
/// prompts unless `--no-window`.
fn live_calibration(
    config: &mut Config,
    args: &CalibrateArgs,
    old: Option<&Profile>,
) -> Result<Option<calibrate::Calibration>> {
    if !args.listen.is_empty() {
        config.ingest.listen.clone_from(&args.listen);
    }
    if args.phone.is_some() {
        config.ingest.phone = args.phone;
    }
    let (raw_tx, raw_rx) = mpsc::sync_channel::<FaceFrame>(1024);
    let (sender, receiver) = bridge::channel(QUEUE);
    let performer = args.performer.clone();
    let old_owned = old.cloned();
    if args.no_window {
        let (sink, _) = frame_sink(config, old, sender, None, TrackingLog::default(), None)?;
        let input = start_input(
            config,
            None,
            Box::new(Tee {
                raw: raw_tx,
                inner: sink,
            }),
        )?;
        let mut ui = StageUi {
            terminal: TerminalUi::stdio(),
            proxy: None,
            shown: facewire::panel::PromptChanges::default(),
        };
        let result = calibrate::run_routine(raw_rx, &mut ui, old, &performer);
        input.shutdown();
        return Ok(result?);
    }
    let (avatar, mapping) = load_avatar(config)?;
    let event_loop = winit::event_loop::EventLoop::<AppEvent>::with_user_event()
        .build()
        .context("cannot open a window (use --no-window to calibrate on the terminal only)")?;
    let (sink, _) = frame_sink(
        config,
        old,
        sender,
        Some(event_loop.create_proxy()),
        TrackingLog::default(),
        None,
    )?;
    let input = start_input(
        config,
        None,
        Box::new(Tee {
            raw: raw_tx,
            inner: sink,
        }),
    )?;
    let proxy = event_loop.create_proxy();
    let routine = std::thread::Builder::new()
        .name("facewire-calibrate".into())
        .spawn(move || {
            let mut ui = StageUi {
                terminal: TerminalUi::stdio(),
                proxy: Some(proxy.clone()),
                shown: facewire::panel::PromptChanges::default(),
            };
            let result = calibrate::run_routine(raw_rx, &mut ui, old_owned.as_ref(), &performer);
            let _ = proxy.send_event(AppEvent::Shutdown);
            result
        })?;
    let mut app = StageApp::new(
        StageOptions {
            config: config.clone(),
            config_path: None,
            exit_after: None,
            mapping_path: None,
            screenshots: None,
        },
        avatar,
        mapping,
        receiver,
    );
    event_loop.run_app(&mut app)?;
    // Closing the window ends the input, which ends a routine still waiting for frames.
    input.shutdown();
    let result = routine
        .join()
        .map_err(|_| anyhow::anyhow!("the calibration routine panicked"))?;
    if let Some(e) = app.take_error() {
        return Err(e.into());
    }
    match result {
        Ok(calibration) => Ok(calibration),
        Err(calibrate::SessionError::Disconnected) => Ok(None),
    }
}

fn record_command(config: &Config, args: RecordArgs) -> Result<()> {
    let mut ingest = IngestConfig::from_section(&config.ingest);
    if let Some(port) = args.port {
        ingest = ingest.restrict_to_port(port);
    }
    if args.phone.is_some() {
        ingest.phone = args.phone;
    }
    let handle = record::spawn_recorder(record::RecorderConfig {
        ingest,
        out: args.out.clone(),
        max_datagrams: args.count,
        max_duration: args.duration.map(|s| Duration::from_secs_f64(s.max(0.0))),
    })?;
    eprintln!(
        "recording to {} (Ctrl-C stops; the file is readable up to the last datagram)",
        args.out.display()
    );
    while !handle.wait_finished(Duration::from_secs(2)) {
        let s = handle.stats();
        tracing::info!(
            datagrams = s.datagrams,
            bytes = s.bytes,
            senders = s.senders,
            "recording"
        );
    }
    let stats = handle.shutdown()?;
    println!(
        "recorded {} datagrams ({} bytes) in {:.1} s to {}",
        stats.datagrams,
        stats.bytes,
        stats.elapsed.as_secs_f64(),
        args.out.display()
    );
    Ok(())
}

fn replay_command(args: ReplayArgs) -> Result<()> {
    let recording = match args.format {
        Some(format) => Recording::load_as(&args.file, format),
        None => Recording::load(&args.file),
    }
    .with_context(|| format!("loading {}", args.file.display()))?;
    eprintln!(
        "replaying {} ({}, {} items, {:.1} s) to {} at {}x{}",
        args.file.display(),
        recording.format(),
        recording.len(),
        recording.duration().as_secs_f64(),
        args.to,
        args.speed,
        if args.looped { ", looping" } else { "" }
    );
    let stats = record::replay_to(
        &recording,
        args.to,
        &ReplayOptions {
            speed: args.speed,
            looped: args.looped,
        },
        &std::sync::atomic::AtomicBool::new(false),
    )?;
    println!(
        "sent {} datagrams ({} bytes), {} send errors",
        stats.datagrams, stats.bytes, stats.send_errors
    );
    Ok(())
}

/// What `listen` prints: the frames as the phone sent them, and the tracking state facewire
/// derives from them. Frames stay inline: they travel through a bounded channel, not a heap.
#[allow(clippy::large_enum_variant)]
enum Heard {
    /// A raw committed frame.
    Frame(FaceFrame),
    /// A tracking state change, with the time it was noticed and why the face was lost.
    State(
        TrackingState,
        Instant,
        Option<facewire::calibrate::LossReason>,
    ),
}

/// Forwards raw frames to `listen`'s printer and runs a conditioner beside them for the state.
struct ListenSink {
    tx: mpsc::SyncSender<Heard>,
    core: Conditioner,
}

impl ListenSink {
    fn states(&mut self, out: facewire::calibrate::Output, now: Instant) {
        for &state in out.states() {
            let _ = self.tx.try_send(Heard::State(state, now, out.reason));
        }
    }
}

impl FrameSink for ListenSink {
    fn frame(&mut self, frame: FaceFrame) {
        let _ = self.tx.try_send(Heard::Frame(frame));
        let out = self.core.on_frame(&frame, frame.received);
        self.states(out, frame.received);
    }

    fn tick(&mut self, now: Instant) {
        let out = self.core.on_tick(now);
        self.states(out, now);
    }
}

fn listen(config: &mut Config, args: ListenArgs) -> Result<()> {
    if args.phone.is_some() {
        config.ingest.phone = args.phone;
    }
    let listen = match args.port {
        Some(p) => vec![SocketAddr::from(([0, 0, 0, 0], p))],
        None => config.ingest.listen.clone(),
    };
    let (tx, rx) = mpsc::sync_channel::<Heard>(256);
    let start = Instant::now();
    let mut ingest_config = IngestConfig::from_section(&config.ingest);
    if args.port.is_some() {
        ingest_config.listen = listen;
        ingest_config.listen_required = true;
    }
    let handle = ingest::spawn(
        ingest_config,
        Box::new(ListenSink {
            tx,
            core: Conditioner::new(config.smoothing, config.tracking, start),
        }),
    )?;
    let stdout = std::io::stdout();
    let mut printed = 0u64;
    let seconds =
        |t: Instant| (t.saturating_duration_since(start).as_secs_f64() * 1e6).round() / 1e6;
    while args.count.is_none_or(|n| printed < n) {
        let line = match rx.recv() {
            Ok(Heard::Frame(frame)) => {
                printed += 1;
                frame_json(&frame, start)
            }
            Ok(Heard::State(state, at, reason)) => {
                let mut v = serde_json::json!({ "t": seconds(at), "state": state });
                if let Some(reason) = reason {
                    v["reason"] = serde_json::json!(reason);
                }
                v
            }
            Err(_) => break,
        };
        let mut out = stdout.lock();
        if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
            break;
        }
    }
    handle.shutdown();
    Ok(())
}

/// One frame as a JSON line: time, source, sender, present weights, poses.
fn frame_json(frame: &FaceFrame, start: Instant) -> serde_json::Value {
    let weights: serde_json::Map<String, serde_json::Value> = frame
        .present
        .iter()
        .map(|c| {
            (
                c.name().to_string(),
                serde_json::json!(frame.weights[c.index()]),
            )
        })
        .collect();
    let mut v = serde_json::json!({
        "t": (frame.received.saturating_duration_since(start).as_secs_f64() * 1e6).round() / 1e6,
        "source": frame.protocol.name(),
        "from": frame.from.to_string(),
        "weights": weights,
    });
    let quat = |q: glam::Quat| serde_json::json!([q.x, q.y, q.z, q.w]);
    if let Some(q) = frame.head {
        v["head"] = quat(q);
    }
    if let Some(q) = frame.left_eye {
        v["left_eye"] = quat(q);
    }
    if let Some(q) = frame.right_eye {
        v["right_eye"] = quat(q);
    }
    if let Some(t) = frame.sender_time {
        v["sender_time"] = serde_json::json!(t);
    }
    if frame.tracking != facewire::arkit::TrackingFlag::Unknown {
        v["tracking"] = serde_json::json!(frame.tracking);
    }
    v
}

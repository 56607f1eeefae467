//! The `facewire` command line: the stage window (default), headless runs, snapshots, a stream
//! inspector, calibration, recordings and the default head generator. Each subcommand is one
//! short function here; the live session's wiring lives in `facewire::session`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};

use facewire::app::{
    self, AgeStats, AppEvent, HeadlessReport, Scene, StageApp, StageLoop, StageOptions,
};
use facewire::arkit::{Channel, FaceFrame, Protocol};
use facewire::bridge;
use facewire::calibrate::{self, Profile, TerminalUi};
use facewire::config::{Config, MorphMode};
use facewire::image::RgbaImage;
use facewire::mapping::{self, MappingFile};
use facewire::record::{self, Recording, ReplayOptions};
use facewire::render::{headless::HeadlessContext, DrawTarget};
use facewire::session::{self, LiveControls, LiveOptions, Notify, Replay, StageLink, StageUi};
use facewire::telemetry::Telemetry;
use facewire::{fsutil, headgen, sheet};

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
    /// Save the raw datagrams a phone sends, with their timing, to a .fwrec file.
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
    /// UDP port to listen on (all interfaces); default: the configured addresses.
    #[arg(long)]
    port: Option<u16>,
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

fn check_command(config: &mut Config, args: CheckArgs) -> Result<()> {
    if let Some(m) = args.model {
        config.render.model = m;
    }
    if let Some(m) = args.mapping {
        config.render.mapping = m;
    }
    let avatar = session::load_model(config)?;
    let report = match session::mapping_source(config)? {
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
    let (avatar, mapping) = session::load_avatar(config)?;
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
    let (avatar, mapping) = session::load_avatar(config)?;
    let ctx = HeadlessContext::new(args.size.0, args.size.1)?;
    let mut scene = Scene::new(ctx.gl(), avatar, config.render.morph)?;
    scene.set_mapping(mapping);
    scene.set_camera(config.camera);
    let (clear, premultiplied) = session::background(config);
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

/// The flags of `run` that change the configuration.
fn apply_run_args(config: &mut Config, args: &RunArgs) {
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
    if args.no_panel {
        config.window.panel = false;
    }
}

fn run_command(config: &mut Config, source: Option<&Path>, args: RunArgs) -> Result<()> {
    apply_run_args(config, &args);
    let (avatar, mapping) = session::load_avatar(config)?;
    if args.headless {
        return run_headless(config, source, &args, avatar, mapping);
    }
    if args.out.is_some() || args.size.is_some() {
        bail!("--out and --size belong to headless runs; add --headless");
    }
    let stage = StageLoop::open("is a display available? for offscreen use --headless")?;
    let notify = stage.notifier();
    let (sender, receiver) = bridge::channel(QUEUE);
    let profile = session::performer_profile(&args.profiles, args.performer.as_deref())?;
    let telemetry = Telemetry::new(Instant::now());
    let live = session::start(
        config,
        sender,
        LiveOptions {
            profile: profile.as_ref(),
            profiles: args.profiles.clone(),
            notify: Some(Arc::clone(&notify)),
            telemetry: Some(Arc::clone(&telemetry)),
            replay: args.replay.as_deref().map(|file| Replay {
                file,
                speed: args.speed,
            }),
            tap: None,
        },
    )?;
    let _config_watch = session::watch_config(
        source,
        config,
        profile.as_ref(),
        live.commands.clone(),
        StageLink::Window(Arc::clone(&notify)),
    )?;
    let tell = Arc::clone(&notify);
    let _watch = session::watch_mapping(config, move |parsed| {
        tell(AppEvent::Mapping(parsed.map(Box::new)));
    })?;
    let config_folder = source
        .and_then(Path::parent)
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("config"), Path::to_path_buf);
    let controls = LiveControls::new(
        live.input,
        live.commands,
        notify,
        args.profiles.clone(),
        profile.map(|p| p.performer),
        config_folder,
    );
    let mut app = StageApp::new(
        StageOptions {
            config: config.clone(),
            config_path: source.map(Path::to_path_buf),
            exit_after: args.exit_after.map(|s| Duration::from_secs_f64(s.max(0.0))),
            mapping_path: session::mapping_path(config),
            screenshots: args.screenshots.clone(),
        },
        avatar,
        mapping,
        receiver,
    )
    .with_panel(telemetry, Box::new(controls));
    stage.run(&mut app)?;
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

fn run_headless(
    config: &Config,
    source: Option<&Path>,
    args: &RunArgs,
    avatar: facewire::avatar::Avatar,
    mapping: facewire::mapping::CompiledMapping,
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
    let profile = session::performer_profile(&args.profiles, args.performer.as_deref())?;
    let live = session::start(
        config,
        sender,
        LiveOptions {
            profile: profile.as_ref(),
            profiles: args.profiles.clone(),
            replay: args.replay.as_deref().map(|file| Replay {
                file,
                speed: args.speed,
            }),
            ..LiveOptions::default()
        },
    )?;
    let (camera_tx, cameras) = mpsc::channel();
    let _config_watch = session::watch_config(
        source,
        config,
        profile.as_ref(),
        live.commands.clone(),
        StageLink::Headless(camera_tx),
    )?;
    let deadline = args
        .exit_after
        .map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
    // Without --exit-after, a replayed run ends once the recording has played and its last
    // frame has been drawn.
    let until_replayed = deadline.is_none() && args.replay.is_some();
    let (clear, premultiplied) = session::background(config);
    let (reload_tx, reloads) = mpsc::channel();
    let _watch = session::watch_mapping(config, move |parsed| {
        let _ = reload_tx.send(parsed);
    })?;
    let input = &live.input;
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
                || (until_replayed && input.finished() && counters.snapshot().idle())
        },
    );
    let (frames_received, malformed) = live.input.counts();
    live.input.shutdown();
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
        tracking: *live.tracking.lock().unwrap_or_else(PoisonError::into_inner),
    };
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
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
    let options = |notify: Option<Notify>| LiveOptions {
        profile: old,
        profiles: args.profiles.clone(),
        notify,
        tap: Some(raw_tx.clone()),
        ..LiveOptions::default()
    };
    if args.no_window {
        let live = session::start(config, sender, options(None))?;
        drop(raw_tx);
        let mut ui = StageUi::new(TerminalUi::stdio(), None);
        let result = calibrate::run_routine(raw_rx, &mut ui, old, &performer);
        live.input.shutdown();
        return Ok(result?);
    }
    let (avatar, mapping) = session::load_avatar(config)?;
    let stage = StageLoop::open("use --no-window to calibrate on the terminal only")?;
    let notify = stage.notifier();
    let live = session::start(config, sender, options(Some(Arc::clone(&notify))))?;
    drop(raw_tx);
    let old_owned = old.cloned();
    let routine = std::thread::Builder::new()
        .name("facewire-calibrate".into())
        .spawn(move || {
            let mut ui = StageUi::new(TerminalUi::stdio(), Some(Arc::clone(&notify)));
            let result = calibrate::run_routine(raw_rx, &mut ui, old_owned.as_ref(), &performer);
            notify(AppEvent::Shutdown);
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
    stage.run(&mut app)?;
    // Closing the window ends the input, which ends a routine still waiting for frames.
    live.input.shutdown();
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
    let listen = match args.port {
        Some(p) => vec![SocketAddr::from(([0, 0, 0, 0], p))],
        None => config.ingest.listen.clone(),
    };
    let handle = record::spawn_recorder(record::RecorderConfig {
        listen,
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

fn listen(config: &mut Config, args: ListenArgs) -> Result<()> {
    if args.phone.is_some() {
        config.ingest.phone = args.phone;
    }
    session::listen(config, args.port, args.count, &mut std::io::stdout())?;
    Ok(())
}

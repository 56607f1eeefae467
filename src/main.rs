//! The `facewire` command line: the stage window (default), headless runs, snapshots, a stream
//! inspector, calibration, recordings and the default head generator. Each subcommand is one
//! short function here; the live session's wiring lives in `facewire::session`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};

use facewire::app;
use facewire::calibrate::{Profile, ProfileError};
use facewire::config::{Config, Found, LodMode, MorphMode, Origin};
use facewire::record::{self, Recording, ReplayOptions};
use facewire::session::{self, HeadAngles, Replay, Size};
use facewire::{fsutil, headgen, sheet};

#[derive(Debug, Parser)]
#[command(
    name = "facewire",
    version,
    about = "Phone face tracking to a live avatar for OBS"
)]
struct Cli {
    /// Configuration file (default: config/facewire.toml in the working directory when it
    /// exists, else facewire.toml in the platform's config folder, written there on first start;
    /// `facewire config` says which).
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
    /// Follow the phone without a window or GL: calibrate, mix (idle life, lip sync,
    /// expressions, the API) and forward VMC to another app (VSeeFace, Warudo, VNyan, Blender).
    Relay(RelayArgs),
    /// Render one still image offscreen (no window, no X server).
    Snapshot(SnapshotArgs),
    /// Print every frame a phone sends as one JSON line.
    Listen(ListenArgs),
    /// Render a labelled contact sheet: the neutral face and each morph target at weight 1.
    Sheet(facewire::sheet::SheetArgs),
    /// Calibrate a performer: a guided routine (or a recording) writes their profile.
    Calibrate(CalibrateArgs),
    /// Validate a mapping against a model and report what drives nothing.
    Check(session::CheckArgs),
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
    Lipsync(session::LipsyncArgs),
    /// Track the face in a video (numbered PNG or JPEG frames, or a Y4M file) with the webcam
    /// tracker, a line per frame.
    Track(session::TrackArgs),
    /// List the cameras facewire can track (`run --webcam NUMBER` chooses one).
    Webcam(WebcamArgs),
    /// Say which configuration file is in use and where profiles, looks and avatars are kept.
    Config(ConfigArgs),
}

#[derive(Debug, Args)]
struct WebcamArgs {
    /// List the cameras: number, name, device and the frame formats facewire reads (the
    /// default).
    #[arg(long)]
    list: bool,
}

#[derive(Debug, Args)]
struct ConfigArgs {
    /// Print only the configuration file's path.
    #[arg(long)]
    path: bool,
}

#[derive(Debug, Args, Default)]
struct RenderArgs {
    /// Avatar file (.glb, .gltf or .vrm) instead of the configured one.
    #[arg(long, value_name = "PATH")]
    model: Option<PathBuf>,
    /// Mapping file (ARKit channels to the avatar's targets and nodes).
    #[arg(long, value_name = "PATH")]
    mapping: Option<PathBuf>,
    /// Morph path: auto, gpu or cpu.
    #[arg(long, value_name = "MODE")]
    morph: Option<MorphMode>,
    /// Level of detail: auto, or a level (0 the most detailed).
    #[arg(long, value_name = "auto|LEVEL")]
    lod: Option<LodMode>,
    /// Transparent background with premultiplied alpha.
    #[arg(long)]
    transparent: bool,
    /// Keep spring bones (hair, ribbons, skirts) at rest, instead of render.spring_bones.
    #[arg(long)]
    no_springs: bool,
    /// Look preset (face-shape sliders, colours): a name in config/looks or a path.
    #[arg(long, value_name = "NAME|PATH")]
    look: Option<String>,
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
    #[command(flatten)]
    live: LiveArgs,
    /// Render offscreen instead of in a window.
    #[arg(long)]
    headless: bool,
    /// Write the last frame to this PNG on exit (headless runs).
    #[arg(long, value_name = "PNG")]
    out: Option<PathBuf>,
    /// Offscreen size, WIDTHxHEIGHT (headless runs; default: the window size).
    #[arg(long, value_name = "WxH")]
    size: Option<Size>,
    /// The most frames the stage draws per second (0: unlimited), instead of window.fps_cap
    /// (render.headless_fps with --headless).
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
struct RelayArgs {
    /// Send the mixed stream as VMC to this address (repeatable), besides [forward] to.
    #[arg(long, value_name = "ADDR")]
    forward: Vec<SocketAddr>,
    /// UDP address to listen on for VMC and Face Cap (repeatable), instead of the configured
    /// ones.
    #[arg(long, value_name = "ADDR")]
    listen: Vec<SocketAddr>,
    /// The phone's IP address, for the apps that need facewire to ask for data (iFacialMocap,
    /// Facemotion3d, VTube Studio, MeowFace).
    #[arg(long, value_name = "IP")]
    phone: Option<std::net::IpAddr>,
    #[command(flatten)]
    live: LiveArgs,
}

/// What a live run (the stage, a headless run, the relay) takes besides its input's addresses.
#[derive(Debug, Args, Default)]
struct LiveArgs {
    /// Take input from a recording (.fwrec or Live Link Face CSV), or a video (a folder of
    /// numbered PNG or JPEG frames, or a Y4M file) through the webcam tracker, instead of the
    /// network; a headless run and the relay end when it does.
    #[arg(long, value_name = "FILE")]
    replay: Option<PathBuf>,
    /// Playback speed of --replay.
    #[arg(long, default_value_t = 1.0)]
    speed: f64,
    /// Track a webcam instead of listening for a phone: the first, or the one this number (as
    /// `facewire webcam --list` prints it) or (part of a) name chooses; instead of [webcam].
    #[arg(
        long,
        value_name = "NAME|NUMBER",
        num_args = 0..=1,
        default_missing_value = "",
        conflicts_with = "replay"
    )]
    webcam: Option<String>,
    /// Play this WAV file as lip sync's audio instead of the microphone (see [lipsync]).
    #[arg(long, value_name = "FILE")]
    lipsync_wav: Option<PathBuf>,
    /// Apply this performer's calibration profile.
    #[arg(long, value_name = "NAME")]
    performer: Option<String>,
    /// The profiles folder (default: profiles beside the configuration file).
    #[arg(long, value_name = "DIR")]
    profiles: Option<PathBuf>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    exit_after: Option<f64>,
}

/// `--webcam [NAME|NUMBER]`: the webcam on for this run, the camera chosen when named.
fn apply_webcam(config: &mut Config, webcam: Option<&str>) {
    if let Some(device) = webcam {
        config.webcam.enabled = true;
        if !device.trim().is_empty() {
            config.webcam.device = device.trim().to_string();
        }
    }
}

impl LiveArgs {
    /// The live run these flags describe, over `config` (read from `source`).
    fn run<'a>(
        &'a self,
        config: &'a Config,
        source: Option<&'a Path>,
    ) -> Result<session::LiveRun<'a>> {
        let profiles = profiles_folder(self.profiles.as_deref(), config);
        let profile = session::performer_profile(&profiles, self.performer.as_deref())
            .map_err(|e| elsewhere(e, &profiles))?;
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
struct SnapshotArgs {
    /// Channel weights, e.g. 'jawOpen=1,eyeBlinkLeft=0.5' (ARKit names in any dialect).
    #[arg(long, default_value = "")]
    weights: String,
    /// Output PNG (with --frames: the folder the numbered frames go to).
    #[arg(long, value_name = "PNG")]
    out: PathBuf,
    /// Render a sequence instead of one image: a JSON-lines file, one frame a line, e.g.
    /// `{"weights": {"jawOpen": 0.5}, "head": [20, 0, -5]}` (head: yaw, pitch, roll in degrees).
    /// Writes OUT/frame_00001.png and on, a video `facewire track --video OUT` reads.
    #[arg(long, value_name = "JSONL", conflicts_with_all = ["weights", "head"])]
    frames: Option<PathBuf>,
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
    /// Print what a webcam's tracker reads instead (the first webcam, or the one this number
    /// or name chooses), with a line a second on the camera's and the tracker's frame rates.
    #[arg(
        long,
        value_name = "NAME|NUMBER",
        num_args = 0..=1,
        default_missing_value = "",
        conflicts_with = "port"
    )]
    webcam: Option<String>,
}

#[derive(Debug, Args)]
struct CalibrateArgs {
    /// The performer's name; the profile is saved as <profiles>/<NAME>.toml.
    #[arg(long)]
    performer: String,
    #[command(flatten)]
    take: session::TakeArgs,
    /// The profiles folder (default: profiles beside the configuration file).
    #[arg(long, value_name = "DIR")]
    profiles: Option<PathBuf>,
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
    /// Calibrate from a webcam instead of a phone: the first, or the one this number or name
    /// chooses (as `facewire webcam --list` prints them).
    #[arg(
        long,
        value_name = "NAME|NUMBER",
        num_args = 0..=1,
        default_missing_value = ""
    )]
    webcam: Option<String>,
    #[command(flatten)]
    vowels: session::VowelArgs,
}

#[derive(Debug, Args)]
struct RecordArgs {
    /// Output file.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Record only this UDP port (all interfaces unless configured otherwise); default: every
    /// port `run` listens on (VMC and Face Cap, iFacialMocap, Facemotion3d, Live Link Face,
    /// VTube Studio, OpenSeeFace).
    #[arg(long)]
    port: Option<u16>,
    /// Stop after this many datagrams.
    #[arg(long)]
    count: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// The phone's IP address, for the apps that need facewire to ask for data (iFacialMocap,
    /// Facemotion3d, VTube Studio).
    #[arg(long, value_name = "IP")]
    phone: Option<std::net::IpAddr>,
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
    /// Face levels of detail to write (1 to 3; the committed head has the default).
    #[arg(long, default_value_t = headgen::SHIPPED_LEVELS)]
    levels: usize,
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
    /// Leave out the faces of this material (a usemtl name), such as semi-transparent overlays;
    /// repeat or separate with commas.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    skip_material: Vec<String>,
    /// Give this material facewire's skin colour instead of its library colour (Kd); repeat
    /// or separate with commas.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    skin: Vec<String>,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    // Commands that print an answer keep the info lines (configuration loaded, avatar loaded)
    // off the terminal beside it; FACEWIRE_LOG still turns them on.
    let quiet = matches!(
        cli.command,
        Some(Command::Config(_) | Command::Check(_) | Command::Webcam(_))
    );
    facewire::logging::init(if quiet {
        "warn"
    } else {
        facewire::logging::DEFAULT_FILTER
    });
    match run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}

/// A missing profile's error, with the user's own profiles folder named when it is not the one
/// searched (a checkout's config/ in use): that it has the profile and how to use it, or that it
/// lacks it too.
fn elsewhere(error: session::StartError, searched: &Path) -> anyhow::Error {
    let name = match &error {
        session::StartError::Profile(ProfileError::NotFound { name, .. }) => name.clone(),
        _ => return error.into(),
    };
    let Some(folder) = facewire::config::platform_folder() else {
        return error.into();
    };
    let user = Profile::dir_in(&folder);
    let searched_abs = std::path::absolute(searched).unwrap_or_else(|_| searched.to_path_buf());
    if user == searched_abs {
        return error.into();
    }
    let path = Profile::path_in(&user, &name);
    if path.is_file() {
        anyhow::anyhow!(
            "{error}\n  note: {} has a profile for `{name}`, but the configuration in use keeps \
             its profiles in {} (run facewire from another folder, or give --profiles {})",
            path.display(),
            searched_abs.display(),
            user.display()
        )
    } else {
        anyhow::anyhow!(
            "{error}\n  note: not in your own profiles folder, {}, either",
            user.display()
        )
    }
}

/// `facewire track`: the lines on standard output, the summary on standard error.
fn track(args: &session::TrackArgs) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let summary = session::track_command(args, &mut out)?;
    eprintln!(
        "{} frames, a face in {}; tracking took {:.1} ms a frame on average (median {:.1}, \
         99th percentile {:.1}, at most {:.1}), the detector ran on {} frames",
        summary.frames,
        summary.faces,
        summary.mean_ms,
        summary.p50_ms,
        summary.p99_ms,
        summary.max_ms,
        summary.detections
    );
    Ok(())
}

/// `--profiles DIR` when given, else the profiles folder beside the configuration.
fn profiles_folder(flag: Option<&Path>, config: &Config) -> PathBuf {
    flag.map_or_else(|| Profile::dir_in(&config.folder), Path::to_path_buf)
}

fn run(cli: Cli) -> Result<()> {
    // `track` reads a video and nothing of the configuration: it neither needs nor writes the
    // user's config folder.
    if let Some(Command::Track(args)) = &cli.command {
        return track(args);
    }
    let found = Config::discover(cli.config.as_deref())?;
    match (&found.path, &found.origin) {
        (Some(p), Origin::FirstStart) => eprintln!(
            "first start: wrote the default configuration to {} (profiles, looks and mappings \
             are kept beside it; `facewire config` says where)",
            p.display()
        ),
        (Some(p), _) => tracing::info!(config = %p.display(), "configuration loaded"),
        (None, origin) => tracing::warn!("{origin}"),
    }
    let Found {
        mut config,
        path: source,
        origin,
    } = found;
    match cli.command {
        None => run_command(&mut config, source.as_deref(), cli.run),
        Some(Command::Run(args)) => run_command(&mut config, source.as_deref(), args),
        Some(Command::Relay(args)) => relay_command(&mut config, source.as_deref(), args),
        Some(Command::Snapshot(args)) => snapshot(&mut config, args),
        Some(Command::Listen(args)) => listen(&mut config, args),
        Some(Command::Sheet(args)) => contact_sheet(&mut config, args),
        Some(Command::Calibrate(args)) => calibrate_command(&mut config, args),
        Some(Command::Check(args)) => check_command(&mut config, args),
        Some(Command::Record(args)) => record_command(&mut config, args),
        Some(Command::Replay(args)) => replay_command(args),
        Some(Command::GenHead(args)) => {
            let bytes = headgen::glb::write(&headgen::document_with_levels(args.levels));
            fsutil::write_atomic(&args.out, &bytes)
                .with_context(|| format!("writing {}", args.out.display()))?;
            println!("wrote {} ({} bytes)", args.out.display(), bytes.len());
            Ok(())
        }
        Some(Command::ImportObj(args)) => import_obj_command(args),
        Some(Command::Lipsync(args)) => {
            let mut out = std::io::stdout().lock();
            session::lipsync_command(&args, &config, &mut out)?;
            Ok(())
        }
        Some(Command::Track(args)) => track(&args),
        Some(Command::Webcam(_)) => {
            session::list_cameras(&mut std::io::stdout().lock())?;
            Ok(())
        }
        Some(Command::Config(args)) => {
            config_command(&config, source.as_deref(), &origin, &args);
            Ok(())
        }
    }
}

/// Says which configuration file is in use, why, and the folders beside it.
fn config_command(config: &Config, source: Option<&Path>, origin: &Origin, args: &ConfigArgs) {
    let shown = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    if args.path {
        if let Some(path) = source {
            println!("{}", shown(path).display());
        }
        return;
    }
    match source {
        Some(path) => println!("configuration: {} ({origin})", shown(path).display()),
        None => println!("configuration: {origin}"),
    }
    if matches!(origin, Origin::BesideProgram) {
        println!(
            "note:          an unpacked download keeps its configuration, profiles and looks in \
             its own config/, wherever it is started from; copy that folder into a newer \
             version's folder when you update"
        );
    }
    // Run in a checkout, the checkout's config/ takes precedence: say what it shadows.
    if matches!(origin, Origin::WorkingDirectory) {
        if let Some(folder) = facewire::config::platform_folder() {
            let user = folder.join(facewire::config::FILE_NAME);
            let shown_user = user.display();
            if user.is_file() {
                println!(
                    "note:          run in a checkout, so config/ is used; your own \
                     {shown_user} is not read (run facewire from another folder, or give \
                     --config {shown_user})"
                );
            } else {
                println!(
                    "note:          run in a checkout, so config/ is used; your own \
                     {shown_user} does not exist yet (`facewire config` run from another folder \
                     writes it)"
                );
            }
        }
    }
    println!(
        "profiles:      {}",
        shown(&Profile::dir_in(&config.folder)).display()
    );
    println!(
        "looks:         {}",
        shown(&config.folder.join(facewire::look::DIR_NAME)).display()
    );
    println!(
        "avatars:       {} (render.models_dir)",
        shown(&config.render.models_dir).display()
    );
}

/// Imports an OBJ shape set and prints what was imported, missing and skipped.
fn import_obj_command(args: ImportObjArgs) -> Result<()> {
    use facewire::objimport::{self, ImportOptions};
    let started = Instant::now();
    let options = ImportOptions {
        combine_halves: args.combine_halves,
        dialect: args.name_dialect,
        skip_materials: args.skip_material,
        skin_materials: args.skin,
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
fn apply_render_args(config: &mut Config, args: &RenderArgs) -> Result<()> {
    if let Some(m) = &args.model {
        config.render.model = session::resolve_model(m, &config.render.models_dir)?;
    }
    if let Some(m) = &args.mapping {
        config.render.mapping.clone_from(m);
    }
    if let Some(m) = args.morph {
        config.render.morph = m;
    }
    if let Some(lod) = args.lod {
        config.render.lod = lod;
    }
    if args.transparent {
        config.window.transparent = true;
    }
    if args.no_springs {
        config.render.spring_bones = false;
    }
    if let Some(look) = &args.look {
        config.render.look.clone_from(look);
    }
    Ok(())
}

fn check_command(config: &mut Config, args: session::CheckArgs) -> Result<()> {
    if let Some(m) = args.model {
        config.render.model = session::resolve_model(&m, &config.render.models_dir)?;
    }
    if let Some(m) = args.mapping {
        config.render.mapping = m;
    }
    let (what, report) = session::check_mapping(config)?;
    println!("{what}");
    println!("{report}");
    if report.has_errors() {
        bail!("the mapping has errors");
    }
    Ok(())
}

fn contact_sheet(config: &mut Config, args: facewire::sheet::SheetArgs) -> Result<()> {
    let combos = args.combinations();
    apply_render_args(
        config,
        &RenderArgs {
            model: args.model,
            mapping: args.mapping,
            morph: args.morph,
            look: args.look,
            ..RenderArgs::default()
        },
    )?;
    let (avatar, mapping) = session::load_avatar(config)?;
    let options = sheet::SheetOptions {
        panel: args.size,
        columns: args.columns,
        morph: config.render.morph,
        framing: args.framing,
        look: session::load_look(config, &mapping)?,
        looks: args.looks,
        combos,
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
    apply_render_args(config, &args.render)?;
    if let Some(path) = &args.frames {
        let frames = session::read_pose_lines(path)?;
        let (avatar, mapping) = session::load_avatar(config)?;
        std::fs::create_dir_all(&args.out)
            .with_context(|| format!("creating the folder {}", args.out.display()))?;
        let size = (args.size.0, args.size.1);
        app::snapshot_sequence(config, avatar, mapping, &frames, size, |i, image| {
            let file = args.out.join(format!("frame_{:05}.png", i + 1));
            image
                .save_png(&file)
                .with_context(|| format!("writing {}", file.display()))
        })?;
        tracing::info!(out = %args.out.display(), frames = frames.len(), "snapshots written");
        return Ok(());
    }
    let mut frame = session::parse_weights(&args.weights)?;
    frame.head = args.head.map(|h| h.0);
    let (avatar, mapping) = session::load_avatar(config)?;
    let image = app::snapshot(config, avatar, mapping, &frame, (args.size.0, args.size.1))?;
    image.save_png(&args.out)?;
    tracing::info!(out = %args.out.display(), "snapshot written");
    Ok(())
}

/// The flags of `run` that change the configuration.
fn apply_run_args(config: &mut Config, args: &RunArgs) -> Result<()> {
    apply_render_args(config, &args.render)?;
    config.ingest.apply_flags(&args.listen, args.phone);
    if let Some(cap) = args.fps_cap {
        config.window.fps_cap = cap;
        config.render.headless_fps = cap;
    }
    if args.render_on_change {
        config.window.render_on_change = true;
    }
    if args.no_panel {
        config.window.panel = false;
    }
    Ok(())
}

fn run_command(config: &mut Config, source: Option<&Path>, args: RunArgs) -> Result<()> {
    apply_run_args(config, &args)?;
    apply_webcam(config, args.live.webcam.as_deref());
    let (avatar, mapping) = session::load_avatar(config)?;
    // A look that does not fit the mapping's sliders stops here, before any window opens.
    session::load_look(config, &mapping)?;
    if !args.headless && (args.out.is_some() || args.size.is_some()) {
        bail!("--out and --size belong to headless runs; add --headless");
    }
    let run = args.live.run(config, source)?;
    if !args.headless {
        return Ok(app::run_stage(run, avatar, mapping, args.screenshots)?);
    }
    let Size(width, height) = args
        .size
        .unwrap_or(Size(config.window.width, config.window.height));
    let (image, report) = app::run_offscreen(run, avatar, mapping, (width, height))?;
    if let Some(out) = &args.out {
        image.save_png(out)?;
    }
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

fn relay_command(config: &mut Config, source: Option<&Path>, args: RelayArgs) -> Result<()> {
    config.ingest.apply_flags(&args.listen, args.phone);
    apply_webcam(config, args.live.webcam.as_deref());
    for to in &args.forward {
        if !config.forward.to.contains(to) {
            config.forward.to.push(*to);
        }
    }
    let run = args.live.run(config, source)?;
    let (stop, stopped) = std::sync::mpsc::channel();
    session::on_stop(move || {
        let _ = stop.send(());
    })?;
    let report = session::relay(run, &stopped)?;
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

fn calibrate_command(config: &mut Config, args: CalibrateArgs) -> Result<()> {
    Profile::validate_name(&args.performer)?;
    let profiles = profiles_folder(args.profiles.as_deref(), config);
    session::exit_on_stop("calibration interrupted; nothing saved")?;
    if args.vowels.wanted() {
        let name = &args.performer;
        session::calibrate_vowels(&args.vowels, config, &profiles, name, args.yes)?;
        return Ok(());
    }
    let old = Profile::load_named(&profiles, &args.performer).ok();
    if let Some(old) = &old {
        eprintln!(
            "updating {}'s profile from {} (the old ranges are shown beside the new ones)",
            args.performer, old.created
        );
    }
    let calibration = match &args.take.from {
        Some(file) => {
            let calibration =
                session::calibrate_from(file, &args.take, old.as_ref(), &args.performer)?;
            println!("{}", calibration.summary);
            if !args.yes && !session::confirm("Save this profile? [Y/n] ")? {
                println!("not saved");
                return Ok(());
            }
            Some(calibration)
        }
        None => {
            config.ingest.apply_flags(&args.listen, args.phone);
            apply_webcam(config, args.webcam.as_deref());
            let stage = if args.no_window {
                None
            } else {
                Some(session::load_avatar(config)?)
            };
            app::calibrate_live(
                config,
                profiles.clone(),
                old.as_ref(),
                &args.performer,
                stage,
            )?
        }
    };
    let Some(calibration) = calibration else {
        println!("calibration cancelled; nothing saved");
        return Ok(());
    };
    let path = calibration.profile.save(&profiles)?;
    session::exit_on_stop(format!(
        "interrupted; the face calibration is saved in {}",
        path.display()
    ))?;
    println!(
        "saved {}; use it with: facewire run --performer {}",
        path.display(),
        args.performer
    );
    let quiet = args.yes || args.take.from.is_some();
    session::offer_vowels(config, &profiles, &args.performer, quiet)?;
    Ok(())
}

fn record_command(config: &mut Config, args: RecordArgs) -> Result<()> {
    config.ingest.apply_flags(&[], args.phone);
    eprintln!(
        "recording to {} (Ctrl-C stops; the file is readable up to the last datagram)",
        args.out.display()
    );
    let limits = (
        args.count,
        args.duration.map(|s| Duration::from_secs_f64(s.max(0.0))),
    );
    let stats = session::record(config, args.port, &args.out, limits)?;
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
    let options = ReplayOptions {
        speed: args.speed,
        looped: args.looped,
    };
    options.validate()?;
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
    let stop = std::sync::atomic::AtomicBool::new(false);
    let stats = record::replay_to(&recording, args.to, &options, &stop)?;
    println!(
        "sent {} datagrams ({} bytes), {} send errors",
        stats.datagrams, stats.bytes, stats.send_errors
    );
    Ok(())
}

fn listen(config: &mut Config, args: ListenArgs) -> Result<()> {
    config.ingest.apply_flags(&[], args.phone);
    apply_webcam(config, args.webcam.as_deref());
    session::listen(config, args.port, args.count, &mut std::io::stdout())?;
    Ok(())
}

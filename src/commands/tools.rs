//! The tools: still pictures (`snapshot`, `sheet`), `check`, `listen`, `record`, `replay`,
//! `track`, `webcam`, `config`, `gen-head` and `import-obj`. Each prints its answer on standard
//! output; progress and notes go to standard error.

use std::path::Path;
use std::time::{Duration, Instant};

use super::cli::{
    apply_webcam, ConfigArgs, GenHeadArgs, ImportObjArgs, ListenArgs, RecordArgs, RenderArgs,
    ReplayArgs, SnapshotArgs,
};
use super::live::apply_render_args;
use super::{CheckArgs, CommandError, TrackArgs};
use crate::app;
use crate::calibrate::Profile;
use crate::config::{Config, Origin};
use crate::record::{self, Recording, ReplayOptions};
use crate::session::{self, Replay};
use crate::{fsutil, headgen, sheet};

/// `facewire snapshot`: one still image, or with `--frames` a numbered sequence.
pub fn snapshot(config: &mut Config, args: SnapshotArgs) -> Result<(), CommandError> {
    apply_render_args(config, &args.render)?;
    if let Some(path) = &args.frames {
        let frames = super::read_pose_lines(path)?;
        let (avatar, mapping) = session::load_avatar(config)?;
        std::fs::create_dir_all(&args.out).map_err(|source| CommandError::Write {
            path: args.out.clone(),
            source,
        })?;
        let size = (args.size.0, args.size.1);
        app::snapshot_sequence(config, avatar, mapping, &frames, size, |i, image| {
            let file = args.out.join(format!("frame_{:05}.png", i + 1));
            image.save_png(&file).map_err(CommandError::from)
        })?;
        tracing::info!(out = %args.out.display(), frames = frames.len(), "snapshots written");
        return Ok(());
    }
    let mut frame = super::parse_weights(&args.weights)?;
    frame.head = args.head.map(|h| h.0);
    let (avatar, mapping) = session::load_avatar(config)?;
    let image = app::snapshot(config, avatar, mapping, &frame, (args.size.0, args.size.1))?;
    image.save_png(&args.out)?;
    tracing::info!(out = %args.out.display(), "snapshot written");
    Ok(())
}

/// `facewire sheet`: a labelled contact sheet of the avatar's morph targets.
pub fn contact_sheet(config: &mut Config, args: sheet::SheetArgs) -> Result<(), CommandError> {
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

/// `facewire check`: the mapping held against the model; an error when it has errors.
pub fn check(config: &mut Config, args: CheckArgs) -> Result<(), CommandError> {
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
        return Err(CommandError::MappingHasErrors);
    }
    Ok(())
}

/// `facewire listen`: every frame as one JSON line on standard output.
pub fn listen_command(config: &mut Config, args: ListenArgs) -> Result<(), CommandError> {
    config.ingest.apply_flags(&[], args.phone);
    apply_webcam(config, args.webcam.as_deref());
    let replay = args.replay.as_deref().map(|file| Replay {
        file,
        speed: args.speed,
    });
    super::listen(
        config,
        args.port,
        replay,
        args.count,
        &mut std::io::stdout(),
    )
}

/// `facewire record`: the datagrams that arrive, into a `.fwrec` file.
pub fn record_command(config: &mut Config, args: RecordArgs) -> Result<(), CommandError> {
    config.ingest.apply_flags(&[], args.phone);
    eprintln!(
        "recording to {} (Ctrl-C stops; the file is readable up to the last datagram)",
        args.out.display()
    );
    let limits = (
        args.count,
        args.duration.map(|s| Duration::from_secs_f64(s.max(0.0))),
    );
    let stats = super::record(config, args.port, &args.out, limits)?;
    println!(
        "recorded {} datagrams ({} bytes) in {:.1} s to {}",
        stats.datagrams,
        stats.bytes,
        stats.elapsed.as_secs_f64(),
        args.out.display()
    );
    Ok(())
}

/// `facewire replay`: a recording sent to a VMC receiver in real time.
pub fn replay(args: ReplayArgs) -> Result<(), CommandError> {
    let options = ReplayOptions {
        speed: args.speed,
        looped: args.looped,
    };
    options.validate().map_err(CommandError::ReplayOptions)?;
    let failed = |source| CommandError::Recording {
        path: args.file.clone(),
        source,
    };
    let recording = match args.format {
        Some(format) => Recording::load_as(&args.file, format),
        None => Recording::load(&args.file),
    }
    .map_err(failed)?;
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
    let stats = record::replay_to(&recording, args.to, &options, &stop).map_err(failed)?;
    println!(
        "sent {} datagrams ({} bytes), {} send errors",
        stats.datagrams, stats.bytes, stats.send_errors
    );
    Ok(())
}

/// `facewire track`: the lines on standard output, the summary on standard error. Reads a
/// video and nothing of the configuration.
pub fn track(args: &TrackArgs) -> Result<(), CommandError> {
    let mut out = std::io::stdout().lock();
    let summary = super::track_command(args, &mut out)?;
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

/// `facewire webcam --list`: the cameras.
pub fn list_cameras_command() -> Result<(), CommandError> {
    super::list_cameras(&mut std::io::stdout().lock())
}

/// `facewire gen-head`: writes the default head.
pub fn gen_head(args: GenHeadArgs) -> Result<(), CommandError> {
    let bytes = headgen::glb::write(&headgen::document_with_levels(args.levels));
    fsutil::write_atomic(&args.out, &bytes).map_err(|source| CommandError::Write {
        path: args.out.clone(),
        source,
    })?;
    println!("wrote {} ({} bytes)", args.out.display(), bytes.len());
    Ok(())
}

/// `facewire import-obj`: imports an OBJ shape set and prints what was imported, missing and
/// skipped.
pub fn import_obj(args: ImportObjArgs) -> Result<(), CommandError> {
    use crate::objimport::{self, ImportOptions};
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

/// `facewire config`: which configuration file is in use, why, and the folders beside it.
pub fn config(config: &Config, source: Option<&Path>, origin: &Origin, args: &ConfigArgs) {
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
        if let Some(folder) = crate::config::platform_folder() {
            let user = folder.join(crate::config::FILE_NAME);
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
        shown(&config.folder.join(crate::look::DIR_NAME)).display()
    );
    println!(
        "avatars:       {} (render.models_dir)",
        shown(&config.render.models_dir).display()
    );
}

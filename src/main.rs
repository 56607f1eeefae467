//! The `facewire` command line: parses it, finds the configuration and hands each subcommand
//! to its body in `facewire::commands`; the live session's wiring lives in `facewire::session`.

use anyhow::Result;
use clap::Parser;

use facewire::commands::{self, Cli, Command};
use facewire::config::{Config, Found, Origin};

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

fn run(cli: Cli) -> Result<()> {
    // `track` reads a video and nothing of the configuration: it neither needs nor writes the
    // user's config folder.
    if let Some(Command::Track(args)) = &cli.command {
        return Ok(commands::track(args)?);
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
    let config = &mut config;
    let source = source.as_deref();
    match cli.command {
        None => commands::run(config, source, cli.run)?,
        Some(Command::Run(args)) => commands::run(config, source, args)?,
        Some(Command::Relay(args)) => commands::relay(config, source, args)?,
        Some(Command::Snapshot(args)) => commands::snapshot(config, args)?,
        Some(Command::Listen(args)) => commands::listen_command(config, args)?,
        Some(Command::Sheet(args)) => commands::contact_sheet(config, args)?,
        Some(Command::Calibrate(args)) => commands::calibrate(config, args)?,
        Some(Command::Check(args)) => commands::check(config, args)?,
        Some(Command::Record(args)) => commands::record_command(config, args)?,
        Some(Command::Replay(args)) => commands::replay(args)?,
        Some(Command::GenHead(args)) => commands::gen_head(args)?,
        Some(Command::ImportObj(args)) => commands::import_obj(args)?,
        Some(Command::Lipsync(args)) => {
            commands::lipsync_command(&args, config, &mut std::io::stdout().lock())?
        }
        Some(Command::Track(args)) => commands::track(&args)?,
        Some(Command::Webcam(_)) => commands::list_cameras_command()?,
        Some(Command::Config(args)) => commands::config(config, source, &origin, &args),
    }
    Ok(())
}

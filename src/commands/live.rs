//! The live commands: `run` (the stage window, or offscreen with `--headless`), `relay` (no
//! window, forwarding VMC) and `calibrate` (the guided routine, or a recording).

use std::path::Path;

use super::cli::{apply_webcam, CalibrateArgs, RelayArgs, RenderArgs, RunArgs};
use super::{profiles_folder, CommandError, Size};
use crate::app;
use crate::calibrate::Profile;
use crate::config::Config;
use crate::session;

/// Applies the render flags to the configuration.
pub(super) fn apply_render_args(
    config: &mut Config,
    args: &RenderArgs,
) -> Result<(), CommandError> {
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

/// The flags of `run` that change the configuration.
fn apply_run_args(config: &mut Config, args: &RunArgs) -> Result<(), CommandError> {
    apply_render_args(config, &args.render)?;
    args.network.apply(config);
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

/// `facewire run` (and facewire without a command): the stage window, or with `--headless`
/// an offscreen run that prints its report as JSON.
pub fn run(config: &mut Config, source: Option<&Path>, args: RunArgs) -> Result<(), CommandError> {
    apply_run_args(config, &args)?;
    apply_webcam(config, args.live.webcam.as_deref());
    let (avatar, mapping) = session::load_avatar(config)?;
    // A look that does not fit the mapping's sliders stops here, before any window opens.
    session::load_look(config, &mapping)?;
    if !args.headless && (args.out.is_some() || args.size.is_some()) {
        return Err(CommandError::Flags(
            "--out and --size belong to headless runs; add --headless",
        ));
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

/// `facewire relay`: no window; forwards the mixed stream until SIGTERM or Ctrl-C (or the end
/// of a replay), then prints its report as JSON.
pub fn relay(
    config: &mut Config,
    source: Option<&Path>,
    args: RelayArgs,
) -> Result<(), CommandError> {
    args.network.apply(config);
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

/// `facewire calibrate`: the guided routine (on the stage, or the terminal alone) or a
/// recording writes the performer's profile; then the vowels for lip sync are offered.
pub fn calibrate(config: &mut Config, args: CalibrateArgs) -> Result<(), CommandError> {
    Profile::validate_name(&args.performer)?;
    let profiles = profiles_folder(args.profiles.as_deref(), config);
    session::exit_on_stop("calibration interrupted; nothing saved")?;
    if args.vowels.wanted() {
        let name = &args.performer;
        super::calibrate_vowels(&args.vowels, config, &profiles, name, args.yes)?;
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
                super::calibrate_from(file, &args.take, old.as_ref(), &args.performer)?;
            println!("{}", calibration.summary);
            if !args.yes
                && !super::confirm("Save this profile? [Y/n] ").map_err(CommandError::Output)?
            {
                println!("not saved");
                return Ok(());
            }
            Some(calibration)
        }
        None => {
            args.network.apply(config);
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
    super::offer_vowels(config, &profiles, &args.performer, quiet)?;
    Ok(())
}

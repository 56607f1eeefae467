//! Hot reload: the configuration file and the mapping file are watched, and what can change
//! live is swapped in; a file that fails to load keeps the running settings.

use std::path::Path;
use std::sync::mpsc;

use super::chain::{SessionCommand, StackConfig};
use super::{Notify, StartError};
use crate::app::AppEvent;
use crate::calibrate::Profile;
use crate::config::{CameraConfig, Config, LayersSection};
use crate::mapping::MappingFile;
use crate::panel::Topic;
use crate::watch::FileWatcher;

/// A change of the stage that a headless run applies before its next frame.
#[derive(Debug, Clone, PartialEq)]
pub enum StageChange {
    /// New `[camera]` framing.
    Camera(CameraConfig),
    /// New `[layers]`, for the layers' own target values.
    Layers(LayersSection),
}

/// Where a reloaded configuration's stage changes go.
pub enum StageLink {
    /// The stage window: background, camera and layers arrive as events, outcomes as messages.
    Window(Notify),
    /// A headless run: camera and layers arrive through a channel read before each frame.
    Headless(mpsc::Sender<StageChange>),
}

impl StageLink {
    fn message(&self, error: bool, text: String) {
        if let StageLink::Window(notify) = self {
            notify(AppEvent::Message {
                topic: Topic::Config,
                error,
                text,
            });
        }
    }
}

/// What changed between two versions of the configuration, applied: smoothing, tracking and
/// the stack (layers, lip sync, idle life) go to the ingest thread through `commands`, background and camera to `stage`.
/// Returns the sections whose changes need a restart.
fn apply(
    old: &Config,
    new: &Config,
    profile: Option<&Profile>,
    commands: &mpsc::Sender<SessionCommand>,
    stage: &StageLink,
) -> Vec<&'static str> {
    if new.smoothing != old.smoothing || new.tracking != old.tracking {
        let smoothing = profile.and_then(|p| p.smoothing).unwrap_or(new.smoothing);
        let _ = commands.send(SessionCommand::Settings(Box::new((
            smoothing,
            new.tracking,
        ))));
        tracing::info!("smoothing and tracking settings reloaded");
    }
    let stack = StackConfig::of(new);
    if stack != StackConfig::of(old) {
        let _ = commands.send(SessionCommand::Layers(Box::new(stack)));
    }
    if new.lipsync != old.lipsync {
        tracing::info!(mode = new.lipsync.mode.name(), "lip sync settings reloaded");
    }
    if new.idle != old.idle {
        tracing::info!(enabled = new.idle.enabled, "idle life settings reloaded");
    }
    if new.layers != old.layers {
        match stage {
            StageLink::Window(notify) => notify(AppEvent::Layers(Box::new(new.layers.clone()))),
            StageLink::Headless(tx) => {
                let _ = tx.send(StageChange::Layers(new.layers.clone()));
            }
        }
        tracing::info!(order = ?new.layers.order, "layers reloaded");
    }
    if new.window.background != old.window.background {
        if let StageLink::Window(notify) = stage {
            notify(AppEvent::Background(new.window.background.0));
        }
        tracing::info!(background = %new.window.background, "background reloaded");
    }
    if new.camera != old.camera {
        match stage {
            StageLink::Window(notify) => notify(AppEvent::Camera(new.camera)),
            StageLink::Headless(tx) => {
                let _ = tx.send(StageChange::Camera(new.camera));
            }
        }
        tracing::info!("camera framing reloaded");
    }
    let mut window = new.window.clone();
    window.background = old.window.background;
    [
        ("[window]", window != old.window),
        ("[ingest]", new.ingest != old.ingest),
        ("[render]", new.render != old.render),
        ("[forward]", new.forward != old.forward),
        ("[pose]", new.pose != old.pose),
    ]
    .into_iter()
    .filter_map(|(name, changed)| changed.then_some(name))
    .collect()
}

/// Watches the configuration file the program started with (`source`) and applies what can
/// change live: smoothing, tracking and layers (through `commands`), the stage background and
/// camera (through `stage`). Other changes are reported as needing a restart; a file that fails
/// to parse keeps the running settings.
pub fn watch_config(
    source: Option<&Path>,
    running: &Config,
    profile: Option<&Profile>,
    commands: mpsc::Sender<SessionCommand>,
    stage: StageLink,
) -> Result<Option<FileWatcher>, StartError> {
    let Some(path) = source else { return Ok(None) };
    // Compare saves with the file as it was, not with the running settings, which command-line
    // flags may have changed.
    let mut old = Config::load(path).unwrap_or_else(|_| running.clone());
    let profile = profile.cloned();
    let watcher = crate::watch::watch_file(path, move |p| {
        let new = match Config::load(p) {
            Ok(new) => new,
            Err(error) => {
                tracing::error!(%error, "configuration reload failed; keeping the running settings");
                stage.message(true, format!("{error}\n(the running settings stay in use)"));
                return;
            }
        };
        let restart = apply(&old, &new, profile.as_ref(), &commands, &stage);
        if restart.is_empty() {
            stage.message(false, format!("{}: reloaded", p.display()));
        } else {
            tracing::warn!(sections = ?restart, "these changes take effect when facewire restarts");
            stage.message(
                false,
                format!(
                    "{}: reloaded; changes in {} take effect when facewire restarts",
                    p.display(),
                    restart.join(", ")
                ),
            );
        }
        old = new;
    })?;
    tracing::info!(config = %path.display(), "watching the configuration for changes");
    Ok(Some(watcher))
}

/// Watches the mapping file in use, when there is one on disk, and hands each saved version
/// (parsed, or why it could not be) to `deliver`.
pub fn watch_mapping(
    config: &Config,
    mut deliver: impl FnMut(Result<MappingFile, String>) + Send + 'static,
) -> Result<Option<FileWatcher>, StartError> {
    let Some(path) = super::mapping_path(config) else {
        return Ok(None);
    };
    let watcher = crate::watch::watch_file(&path, move |p| {
        deliver(MappingFile::load(p).map_err(|e| e.to_string()));
    })?;
    tracing::info!(mapping = %path.display(), "watching the mapping for changes");
    Ok(Some(watcher))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_sections_go_to_the_ingest_thread_and_others_need_a_restart() {
        let old = Config::default();
        let mut new = Config::default();
        new.tracking.fade = 1.5;
        new.layers.order.push("smile".into());
        new.camera.zoom = 2.0;
        new.forward.to = vec!["127.0.0.1:39540".parse().unwrap()];
        new.pose.elbow_degrees = 30.0;
        let (tx, rx) = mpsc::channel();
        let (camera_tx, cameras) = mpsc::channel();
        let restart = apply(&old, &new, None, &tx, &StageLink::Headless(camera_tx));
        assert_eq!(restart, ["[forward]", "[pose]"]);
        let sent: Vec<SessionCommand> = rx.try_iter().collect();
        assert!(matches!(&sent[0], SessionCommand::Settings(s) if s.1.fade == 1.5));
        assert!(matches!(&sent[1], SessionCommand::Layers(l) if l.layers.order.len() == 2));
        let changes: Vec<StageChange> = cameras.try_iter().collect();
        assert!(matches!(&changes[0], StageChange::Layers(l) if l.order.len() == 2));
        assert!(matches!(&changes[1], StageChange::Camera(c) if c.zoom == 2.0));
        assert!(apply(
            &new,
            &new,
            None,
            &tx,
            &StageLink::Headless(mpsc::channel().0)
        )
        .is_empty());
        assert!(rx.try_recv().is_err(), "nothing changed, nothing sent");
        // Idle life alone changes the stack, not the stage's layers.
        let mut calm = new.clone();
        calm.idle.enabled = false;
        let (stage_tx, stage_rx) = mpsc::channel();
        assert!(apply(&new, &calm, None, &tx, &StageLink::Headless(stage_tx)).is_empty());
        assert!(matches!(rx.try_recv(), Ok(SessionCommand::Layers(l)) if !l.idle.enabled));
        assert!(stage_rx.try_recv().is_err());
    }
}

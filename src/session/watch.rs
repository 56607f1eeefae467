//! Hot reload: the configuration file and the mapping file are watched, and what can change
//! live is swapped in; a file that fails to load keeps the running settings.

use std::path::Path;
use std::sync::mpsc;

use super::chain::SessionCommand;
use super::{Notify, StartError};
use crate::calibrate::Profile;
use crate::config::Config;
use crate::control::AppEvent;
use crate::control::Topic;
use crate::mapping::MappingFile;
use crate::stack::StackConfig;
use crate::watch::FileWatcher;

/// Tells the front-end (when there is one) how a reload went.
fn message(front: Option<&Notify>, error: bool, text: String) {
    if let Some(notify) = front {
        notify(AppEvent::Message {
            topic: Topic::Config,
            error,
            text,
        });
    }
}

/// What changed between two versions of the configuration, applied: smoothing, tracking and
/// the stack (layers, lip sync, idle life) go to the ingest thread through `commands`; the
/// stack, background and camera to the front-end, when there is one.
/// Returns the sections whose changes need a restart.
fn apply(
    old: &Config,
    new: &Config,
    profile: Option<&Profile>,
    commands: &mpsc::Sender<SessionCommand>,
    front: Option<&Notify>,
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
    let stack_changed = stack != StackConfig::of(old);
    if stack_changed {
        let _ = commands.send(SessionCommand::Layers(Box::new(stack.clone())));
    }
    if new.lipsync != old.lipsync {
        tracing::info!(mode = new.lipsync.mode.name(), "lip sync settings reloaded");
    }
    if new.idle != old.idle {
        tracing::info!(enabled = new.idle.enabled, "idle life settings reloaded");
    }
    if stack_changed {
        if let Some(notify) = front {
            notify(AppEvent::Layers(Box::new(stack)));
        }
        tracing::info!(order = ?new.layers.order, "layers reloaded");
    }
    if new.expressions != old.expressions {
        tracing::info!(
            expressions = new.expressions.all().len(),
            "expressions reloaded"
        );
    }
    if new.window.background != old.window.background {
        if let Some(notify) = front {
            notify(AppEvent::Background(new.window.background.0));
        }
        tracing::info!(background = %new.window.background, "background reloaded");
    }
    if new.camera != old.camera {
        if let Some(notify) = front {
            notify(AppEvent::Camera(new.camera));
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
        ("[api]", new.api != old.api),
    ]
    .into_iter()
    .filter_map(|(name, changed)| changed.then_some(name))
    .collect()
}

/// The watchers of the configuration: its file and the expressions file it names. Dropping it
/// stops them.
pub struct ConfigWatch {
    _watchers: Vec<FileWatcher>,
}

/// Watches the configuration file the program started with (`source`), and the expressions
/// file it names (`[expressions] file`), and applies what can change live: smoothing,
/// tracking, layers, lip sync, idle life and expressions (through `commands`), the stage
/// background and camera (through `front`, when there is a front-end). Other changes are reported as needing a restart; a
/// file that fails to parse keeps the running settings.
pub fn watch_config(
    source: Option<&Path>,
    running: &Config,
    profile: Option<&Profile>,
    commands: mpsc::Sender<SessionCommand>,
    front: Option<Notify>,
) -> Result<Option<ConfigWatch>, StartError> {
    let Some(path) = source else { return Ok(None) };
    // Compare saves with the file as it was, not with the running settings, which command-line
    // flags may have changed.
    let old = Config::load(path).unwrap_or_else(|_| running.clone());
    let expressions = old.expressions.file_path();
    let profile = profile.cloned();
    let config_path = path.to_path_buf();
    let state = std::sync::Arc::new(std::sync::Mutex::new(old));
    let reload = move |saved: &Path| {
        let mut old = state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let new = match Config::load(&config_path) {
            Ok(new) => new,
            Err(error) => {
                tracing::error!(%error, "configuration reload failed; keeping the running settings");
                message(
                    front.as_ref(),
                    true,
                    format!("{error}\n(the running settings stay in use)"),
                );
                return;
            }
        };
        let restart = apply(&old, &new, profile.as_ref(), &commands, front.as_ref());
        if restart.is_empty() {
            message(
                front.as_ref(),
                false,
                format!("{}: reloaded", saved.display()),
            );
        } else {
            tracing::warn!(sections = ?restart, "these changes take effect when facewire restarts");
            message(
                front.as_ref(),
                false,
                format!(
                    "{}: reloaded; changes in {} take effect when facewire restarts",
                    saved.display(),
                    restart.join(", ")
                ),
            );
        }
        *old = new;
    };
    let reload = std::sync::Arc::new(reload);
    let on_config = std::sync::Arc::clone(&reload);
    let mut watchers = vec![crate::watch::watch_file(path, move |p| on_config(p))?];
    tracing::info!(config = %path.display(), "watching the configuration for changes");
    if let Some(file) = expressions {
        let on_file = std::sync::Arc::clone(&reload);
        match crate::watch::watch_file(&file, move |p| on_file(p)) {
            Ok(w) => {
                tracing::info!(expressions = %file.display(), "watching the expressions for changes");
                watchers.push(w);
            }
            Err(error) => tracing::warn!(%error, "the expressions file is not watched"),
        }
    }
    Ok(Some(ConfigWatch {
        _watchers: watchers,
    }))
}

/// Watches the mapping file in use, when there is one on disk, and hands each saved version
/// (parsed, or why it could not be) to `deliver`.
pub fn watch_mapping(
    config: &Config,
    mut deliver: impl FnMut(Result<MappingFile, crate::mapping::MappingError>) + Send + 'static,
) -> Result<Option<FileWatcher>, StartError> {
    let Some(path) = super::mapping_path(config) else {
        return Ok(None);
    };
    let watcher = crate::watch::watch_file(&path, move |p| {
        deliver(MappingFile::load(p));
    })?;
    tracing::info!(mapping = %path.display(), "watching the mapping for changes");
    Ok(Some(watcher))
}

/// Watches the configured look preset, when there is one, and hands every new version,
/// read but not yet checked against the sliders (or why it cannot be read), to `deliver`.
pub fn watch_look(
    config: &Config,
    mut deliver: impl FnMut(Result<crate::look::LookFile, crate::look::LookError>) + Send + 'static,
) -> Result<Option<FileWatcher>, StartError> {
    let Some(path) = super::look_path(config) else {
        return Ok(None);
    };
    let watcher = crate::watch::watch_file(&path, move |p| {
        deliver(crate::look::LookFile::load(p));
    })?;
    tracing::info!(look = %path.display(), "watching the look for changes");
    Ok(Some(watcher))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A front-end that keeps the events it is told.
    fn front() -> (Notify, mpsc::Receiver<AppEvent>) {
        let (tx, rx) = mpsc::channel();
        let notify: Notify = std::sync::Arc::new(move |event| {
            let _ = tx.send(event);
        });
        (notify, rx)
    }

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
        let (notify, cameras) = front();
        let restart = apply(&old, &new, None, &tx, Some(&notify));
        assert_eq!(restart, ["[forward]", "[pose]"]);
        let sent: Vec<SessionCommand> = rx.try_iter().collect();
        assert!(matches!(&sent[0], SessionCommand::Settings(s) if s.1.fade == 1.5));
        assert!(matches!(&sent[1], SessionCommand::Layers(l) if l.layers.order.len() == 2));
        let changes: Vec<AppEvent> = cameras.try_iter().collect();
        assert!(matches!(&changes[0], AppEvent::Layers(l) if l.layers.order.len() == 2));
        assert!(matches!(&changes[1], AppEvent::Camera(c) if c.zoom == 2.0));
        assert!(apply(&new, &new, None, &tx, Some(&front().0)).is_empty());
        assert!(rx.try_recv().is_err(), "nothing changed, nothing sent");
        // Idle life changes the stack, and so the places of the layers above it: the stage
        // resolves their targets anew.
        let mut calm = new.clone();
        calm.idle.enabled = false;
        let (notify, stage_rx) = front();
        assert!(apply(&new, &calm, None, &tx, Some(&notify)).is_empty());
        assert!(matches!(rx.try_recv(), Ok(SessionCommand::Layers(l)) if !l.idle.enabled));
        assert!(matches!(stage_rx.try_recv(), Ok(AppEvent::Layers(l)) if !l.idle.enabled));
        // The API's settings need a restart.
        let mut moved = new.clone();
        moved.api.listen = "127.0.0.1:8002".parse().unwrap();
        assert_eq!(apply(&new, &moved, None, &tx, None), ["[api]"]);
    }
}

//! Watching a file for saves (mapping hot reload): the parent directory is watched, events for
//! the file are debounced, and a callback runs once the file has been quiet for a moment.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode, Watcher};

/// How long a file must stay quiet after a change before it is read: editors save in several
/// steps (truncate, write, rename), and reading in the middle would see a half-written file.
pub const DEBOUNCE: Duration = Duration::from_millis(120);

/// Errors starting a watcher.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The path has no file name or parent folder to watch.
    #[error("{0}: not a file that can be watched")]
    NotAFile(String),
    /// The operating system's watcher failed.
    #[error("cannot watch {path}")]
    Notify {
        /// The folder being watched.
        path: String,
        /// The watcher's error.
        source: notify::Error,
    },
    /// The watcher thread could not start.
    #[error("cannot start the watcher thread")]
    Thread(#[source] std::io::Error),
}

/// A running watch; dropping it stops the watch and joins its thread.
pub struct FileWatcher {
    watcher: Option<RecommendedWatcher>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for FileWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileWatcher").finish_non_exhaustive()
    }
}

/// Calls `on_change(path)` on a thread named `facewire-watch` whenever `path` is written,
/// created or renamed into place, once per burst of events.
pub fn watch_file(
    path: &Path,
    mut on_change: impl FnMut(&Path) + Send + 'static,
) -> Result<FileWatcher, WatchError> {
    let name = path
        .file_name()
        .ok_or_else(|| WatchError::NotAFile(path.display().to_string()))?
        .to_owned();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let target = dir.join(&name);
    let (tx, rx) = mpsc::channel::<notify::Result<notify::Event>>();
    let mut watcher = notify::recommended_watcher(tx).map_err(|source| WatchError::Notify {
        path: dir.display().to_string(),
        source,
    })?;
    // Watching the folder rather than the file survives editors that replace the file.
    watcher
        .watch(&dir, RecursiveMode::NonRecursive)
        .map_err(|source| WatchError::Notify {
            path: dir.display().to_string(),
            source,
        })?;
    let concerns = move |event: &notify::Event| {
        !event.kind.is_access()
            && event
                .paths
                .iter()
                .any(|p| p.file_name() == Some(name.as_os_str()))
    };
    let thread = std::thread::Builder::new()
        .name("facewire-watch".into())
        .spawn(move || {
            // The loop ends when the watcher (and with it the sender) is dropped.
            while let Ok(event) = rx.recv() {
                let relevant = match &event {
                    Ok(e) => concerns(e),
                    Err(error) => {
                        tracing::warn!(%error, "file watcher error");
                        false
                    }
                };
                if !relevant {
                    continue;
                }
                // Debounce: wait until the burst of events is over.
                loop {
                    match rx.recv_timeout(DEBOUNCE) {
                        Ok(_) => continue,
                        Err(mpsc::RecvTimeoutError::Timeout) => break,
                        Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    }
                }
                on_change(&target);
            }
        })
        .map_err(WatchError::Thread)?;
    Ok(FileWatcher {
        watcher: Some(watcher),
        thread: Some(thread),
    })
}

impl Drop for FileWatcher {
    fn drop(&mut self) {
        // Dropping the watcher drops the event sender, which ends the thread's loop.
        drop(self.watcher.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_save_is_reported_once_per_burst() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.toml");
        std::fs::write(&path, "a").unwrap();
        let (tx, rx) = mpsc::channel();
        let watch = watch_file(&path, move |p| {
            let _ = tx.send(std::fs::read_to_string(p).unwrap_or_default());
        })
        .unwrap();
        // Another file in the folder is not reported.
        std::fs::write(dir.path().join("other.toml"), "x").unwrap();
        // A burst of writes is reported once, with the final content.
        for text in ["b", "bc", "bcd"] {
            std::fs::write(&path, text).unwrap();
        }
        let got = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(got, "bcd");
        let quiet_until = Instant::now() + DEBOUNCE * 4;
        while Instant::now() < quiet_until {
            assert!(rx.recv_timeout(DEBOUNCE).is_err(), "one report per burst");
        }
        // Replacing the file by rename (as many editors save) is reported too.
        let tmp = dir.path().join(".m.toml.tmp");
        std::fs::write(&tmp, "renamed").unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), "renamed");
        drop(watch);
    }
}

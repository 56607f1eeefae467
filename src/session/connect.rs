//! The connect card of a live run: printed on the terminal when listening starts and whenever
//! its hints change, and handed to the stage and the control panel, until the first frame.

use std::net::IpAddr;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::connect::{lan_addresses, ConnectCard, ConnectUpdate, ConnectWatch, Os};
use crate::ingest::{BoundListener, IngestProbe};

/// How often the listeners' reports are read.
const POLL: Duration = Duration::from_millis(250);

/// Where the card goes besides the terminal.
pub type ShowCard = Box<dyn Fn(ConnectCard, bool) + Send>;

/// The thread watching for the first frame; dropping it stops the thread.
pub struct ConnectHandle {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for ConnectHandle {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Prints the connect card for `listeners` (with this PC's addresses and the configured
/// `phone`) and watches `probe` until the first frame: the hints are printed when they change,
/// and `show` gets the card with whether facewire is still waiting for data. `None` when the
/// thread cannot start (the run goes on without the card).
pub fn watch_connection(
    probe: IngestProbe,
    listeners: &[BoundListener],
    phone: Option<IpAddr>,
    show: Option<ShowCard>,
) -> Option<ConnectHandle> {
    let card = ConnectCard::new(listeners, &lan_addresses(), phone);
    let mut watch = ConnectWatch::new(card, Instant::now(), Os::current());
    let (stop, stopped) = mpsc::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("facewire-connect".into())
        .spawn(move || loop {
            if let Some(update) = watch.update(Instant::now(), probe.frames(), &probe.reports()) {
                let mut text = update.terminal_lines().join("\n");
                text.push('\n');
                eprint!("{text}");
                let connected = matches!(update, ConnectUpdate::Connected { .. });
                if let Some(show) = &show {
                    show(watch.card().clone(), !connected);
                }
                if connected {
                    return;
                }
            }
            match stopped.recv_timeout(POLL) {
                Err(RecvTimeoutError::Timeout) => {}
                _ => return,
            }
        });
    match thread {
        Ok(thread) => Some(ConnectHandle {
            stop: Some(stop),
            thread: Some(thread),
        }),
        Err(error) => {
            tracing::warn!(%error, "the connect card cannot be watched");
            None
        }
    }
}

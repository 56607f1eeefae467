//! Ending a run cleanly when asked: SIGTERM (systemd stopping the relay), SIGINT (Ctrl-C) or
//! SIGHUP (the terminal closed); on Windows Ctrl-C and a closed console. The first request
//! calls the run's stop, which ends it with status 0 once everything is shut down and written;
//! a second one, while that takes too long, exits at once. An interactive command (calibration)
//! says what became of its work and exits with status 130 instead.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use super::StartError;

/// What the next request to end calls.
type Stop = Box<dyn Fn() + Send>;

/// The run's stop; the process-wide handler is set with the first one.
static STOP: OnceLock<Mutex<Option<Stop>>> = OnceLock::new();

/// Requests to end so far.
static REQUESTS: AtomicU32 = AtomicU32::new(0);

/// Calls `stop` (on a thread of its own) when the process is asked to end, instead of what an
/// earlier call gave; a second request exits at once with status 1.
pub fn on_stop(stop: impl Fn() + Send + 'static) -> Result<(), StartError> {
    let mut first = false;
    let slot = STOP.get_or_init(|| {
        first = true;
        Mutex::new(None)
    });
    *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(Box::new(stop));
    if first {
        ctrlc::set_handler(asked_to_stop).map_err(StartError::Signal)?;
    }
    Ok(())
}

/// The exit status of an interactive command ended by Ctrl-C, SIGTERM or SIGHUP before it
/// finished (128 + SIGINT's number, as shells report an interrupted command).
pub const INTERRUPTED: i32 = 130;

/// For an interactive command waiting on the terminal or a routine (calibration), which has no
/// run to stop: when the process is asked to end, prints `said` on its own line on stderr and
/// exits with status [`INTERRUPTED`]. A later call replaces `said`.
pub fn exit_on_stop(said: impl Into<String>) -> Result<(), StartError> {
    let said = said.into();
    on_stop(move || {
        // After a progress bar drawn in place.
        eprintln!("\n{said}");
        std::process::exit(INTERRUPTED);
    })
}

fn asked_to_stop() {
    if REQUESTS.fetch_add(1, Ordering::SeqCst) > 0 {
        eprintln!("asked again to stop: exiting now");
        std::process::exit(1);
    }
    tracing::info!("asked to stop: shutting down");
    let slot = STOP
        .get()
        .map(|s| s.lock().unwrap_or_else(PoisonError::into_inner));
    if let Some(stop) = slot.as_ref().and_then(|s| s.as_ref()) {
        stop();
    }
}

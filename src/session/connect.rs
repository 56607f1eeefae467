//! The connect card of a live run: printed on the terminal when listening starts and whenever
//! its hints change, and handed to the stage and the control panel, until the first frame.

use std::net::IpAddr;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::connect::{lan_addresses, ConnectCard, ConnectUpdate, ConnectWatch, Os, WebcamCard};
use crate::ingest::{BoundListener, IngestProbe};
use crate::webcam::camera::{WebcamStats, WebcamWatch};

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
/// and `show` gets the card with whether facewire is still waiting for data. A run without a
/// control panel (`panel` false) tells how to give the phone's address without one. `None` when
/// the thread cannot start (the run goes on without the card).
pub fn watch_connection(
    probe: IngestProbe,
    listeners: &[BoundListener],
    phone: Option<IpAddr>,
    show: Option<ShowCard>,
    panel: bool,
) -> Option<ConnectHandle> {
    let mut card = ConnectCard::new(listeners, &lan_addresses(), phone);
    if !panel {
        card = card.without_panel();
    }
    let mut watch = ConnectWatch::new(card, Instant::now(), Os::current());
    poll_until_done(move || {
        let update = watch.update(Instant::now(), probe.frames(), &probe.reports())?;
        let mut text = update.terminal_lines().join("\n");
        text.push('\n');
        eprint!("{text}");
        let connected = matches!(update, ConnectUpdate::Connected { .. });
        if let Some(show) = &show {
            show(watch.card().clone(), !connected);
        }
        connected.then_some(())
    })
}

/// Calls `step` every [`POLL`] on a thread of its own ("facewire-connect") until it returns
/// `Some` or the handle is dropped. `None` when the thread cannot start (the run goes on
/// without the card).
fn poll_until_done(mut step: impl FnMut() -> Option<()> + Send + 'static) -> Option<ConnectHandle> {
    let (stop, stopped) = mpsc::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("facewire-connect".into())
        .spawn(move || loop {
            if step().is_some() {
                return;
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

/// What to do while the camera is open but sees no face.
const NO_FACE: &str = "No face in view yet: sit in front of the camera, your whole head in the \
                       picture, lit from the front.";

/// The webcam card for `stats`.
pub fn webcam_card(stats: &WebcamStats) -> ConnectCard {
    let problem = match (&stats.camera, &stats.problem) {
        (_, Some(problem)) => Some(format!(
            "{problem} (facewire tries again every {} s)",
            crate::webcam::camera::RETRY.as_secs()
        )),
        (Some(_), None) => Some(NO_FACE.to_string()),
        (None, None) => None,
    };
    ConnectCard::webcam(WebcamCard {
        camera: stats.camera.as_ref().map(ToString::to_string),
        rates: stats.rates(),
        problem,
    })
}

/// Shows the webcam card through `show` until the tracker sees the first face: the camera
/// and the rates, or what keeps the camera away, each time they change (the rates rounded to
/// whole frames a second). `None` when the thread cannot start.
pub fn watch_webcam(webcam: WebcamWatch, show: ShowCard) -> Option<ConnectHandle> {
    let mut shown: Option<ConnectCard> = None;
    poll_until_done(move || {
        let stats = webcam.stats();
        let card = webcam_card(&stats);
        let found = stats.faces > 0;
        if found || shown.as_ref() != Some(&card) {
            show(card.clone(), !found);
            shown = Some(card);
        }
        found.then_some(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webcam::camera::{CameraMode, PixelLayout};

    #[test]
    fn the_webcam_card_says_what_keeps_the_camera_or_the_face_away() {
        let missing = webcam_card(&WebcamStats {
            problem: Some("no camera found: plug in a webcam".into()),
            ..WebcamStats::default()
        });
        let state = missing.webcam_state().unwrap();
        assert_eq!(state.camera, None);
        assert_eq!(state.rates, None);
        assert_eq!(
            state.problem.as_deref(),
            Some("no camera found: plug in a webcam (facewire tries again every 2 s)")
        );
        let open = webcam_card(&WebcamStats {
            camera: Some(CameraMode {
                name: "C920".into(),
                id: "/dev/video2".into(),
                width: 640,
                height: 480,
                fps: 30.0,
                layout: PixelLayout::Yuyv,
            }),
            camera_fps: 30.2,
            tracker_fps: 29.6,
            tracker_ms: 18.7,
            ..WebcamStats::default()
        });
        let state = open.webcam_state().unwrap();
        assert_eq!(
            state.camera.as_deref(),
            Some("C920 (/dev/video2), 640x480 at 30 fps YUYV")
        );
        assert_eq!(
            state.rates.as_deref(),
            Some("camera 30 fps, tracker 30 fps (19 ms a frame)")
        );
        assert_eq!(state.problem.as_deref(), Some(NO_FACE));
        assert!(open.addresses().is_empty() && open.apps().is_empty());
    }
}

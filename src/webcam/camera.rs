//! Live cameras: which there are, which one the settings name, its frames as RGB, and a camera
//! followed on threads of its own.
//!
//! [`WebcamInput`] runs two threads: `facewire-camera` takes frames from the camera as fast as
//! it gives them and keeps only the newest; `facewire-webcam` tracks the newest frame whenever
//! it is free, so a tracker slower than the camera skips frames instead of falling behind. A
//! camera that is missing, busy or unplugged is said once (and shown through
//! [`WebcamInput::stats`]), then opened again every [`RETRY`] until it is back; meanwhile the
//! sink is ticked, so the face goes lost as when a phone goes quiet.
//!
//! The platform's own camera interface lives in a backend (`v4l` on Linux, `native` on Windows
//! and macOS); everything here works on the [`Camera`] trait, which tests implement with
//! generated frames.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::model::{ModelError, Networks};
pub use super::raw::{decode_mjpeg, DecodeError, PixelLayout, RawFrame, MAX_SIDE};
use super::track::{face_frame, Tracker};
use crate::arkit::FrameSink;

/// How long the camera thread waits between attempts to open a camera that is missing or lost.
pub const RETRY: Duration = Duration::from_secs(2);

/// How long a camera may give no frame before it counts as lost.
pub const STALL: Duration = Duration::from_secs(3);

/// How often the tracker thread ticks the sink while no frame comes.
const TICK: Duration = Duration::from_millis(10);

/// The longest one wait for a frame from the camera (so that a stop is seen soon).
const READ_WAIT: Duration = Duration::from_millis(100);

/// The weight of a new interval in the running frame-rate and time averages.
const SMOOTHING: f32 = 0.1;

/// A camera as the system lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CameraInfo {
    /// Its place in the list, from 0: what `--webcam 1` chooses.
    pub index: usize,
    /// The name the camera gives itself.
    pub name: String,
    /// How the system names it (the device file on Linux).
    pub id: String,
    /// The frame layouts facewire can read that it offers, best first; empty when it offers none.
    pub layouts: Vec<PixelLayout>,
}

/// What to ask of a camera; it gives the nearest it can.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CameraRequest {
    /// Frame width in pixels.
    pub width: u32,
    /// Frame height in pixels.
    pub height: u32,
    /// Frames a second.
    pub fps: u32,
}

impl Default for CameraRequest {
    fn default() -> CameraRequest {
        CameraRequest {
            width: 640,
            height: 480,
            fps: 30,
        }
    }
}

/// How an open camera delivers frames.
#[derive(Debug, Clone, PartialEq)]
pub struct CameraMode {
    /// The camera's name.
    pub name: String,
    /// How the system names it.
    pub id: String,
    /// Frame width in pixels.
    pub width: u32,
    /// Frame height in pixels.
    pub height: u32,
    /// Frames a second the camera says it gives (0 when it does not say).
    pub fps: f32,
    /// The frames' layout.
    pub layout: PixelLayout,
}

impl fmt::Display for CameraMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}), {}x{}",
            self.name, self.id, self.width, self.height
        )?;
        if self.fps > 0.0 {
            write!(f, " at {:.0} fps", self.fps)?;
        }
        write!(f, " {}", self.layout.name())
    }
}

/// Why a camera cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CameraError {
    /// The system lists no camera.
    #[error("no camera found: {}", no_camera_fix())]
    NoCamera,
    /// No camera matches the name or number asked for.
    #[error("no camera matches \"{wanted}\"; {}", camera_list(available))]
    NoMatch {
        /// What was asked for.
        wanted: String,
        /// The cameras there are.
        available: Vec<CameraInfo>,
    },
    /// The system refused access to the camera.
    #[error(
        "no permission to use the camera {device} ({reason}): {}",
        permission_fix()
    )]
    Permission {
        /// The camera.
        device: String,
        /// The system's message.
        reason: String,
    },
    /// Another program holds the camera.
    #[error(
        "the camera {device} is busy ({reason}): close the program using it (a browser tab, a \
         video call, OBS's own video capture source of it), or choose another with [webcam] \
         device (facewire webcam --list shows them)"
    )]
    Busy {
        /// The camera.
        device: String,
        /// The system's message.
        reason: String,
    },
    /// The camera offers no frame layout facewire reads.
    #[error(
        "the camera {device} offers none of the frame formats facewire reads (MJPEG, YUYV, \
         NV12, RGB, BGR, grey; it offers {offered}); \
         choose another with [webcam] device (facewire webcam --list shows them)"
    )]
    NoLayout {
        /// The camera.
        device: String,
        /// What it offers, as the system names the formats.
        offered: String,
    },
    /// The camera could not be opened or set up for another reason.
    #[error("cannot open the camera {device}: {reason}")]
    Open {
        /// The camera.
        device: String,
        /// What failed.
        reason: String,
    },
    /// The list of cameras could not be read.
    #[error("cannot list the cameras: {reason}")]
    List {
        /// The system's message.
        reason: String,
    },
    /// This build of facewire has no camera input on this system.
    #[error(
        "this build of facewire cannot open cameras on {platform}; track a video with --replay, \
         or run OpenSeeFace's tracker, whose packets facewire reads on port 11573"
    )]
    Unsupported {
        /// The operating system.
        platform: &'static str,
    },
}

/// What to do when no camera is there (also what `facewire webcam --list` says then, so it
/// names no command but the next start).
fn no_camera_fix() -> &'static str {
    if cfg!(target_os = "linux") {
        "plug in a webcam (it appears as /dev/video0 or so; in a container or VM, pass the \
         device through), or check that your user may open it (the video group: sudo usermod -aG \
         video $USER, then log in again), then start facewire again"
    } else if cfg!(target_os = "macos") {
        "plug in a webcam, and allow your terminal (or facewire) to use the camera in System \
         Settings > Privacy & Security > Camera, then start facewire again"
    } else {
        "plug in a webcam, and turn on Settings > Privacy & security > Camera > Let desktop apps \
         access your camera, then start facewire again"
    }
}

/// What to change when the system refuses access.
fn permission_fix() -> &'static str {
    if cfg!(target_os = "linux") {
        "add your user to the video group (sudo usermod -aG video $USER, then log in again)"
    } else if cfg!(target_os = "macos") {
        "allow your terminal (or facewire) to use the camera in System Settings > Privacy & \
         Security > Camera, then start facewire again"
    } else {
        "turn on Settings > Privacy & security > Camera > Let desktop apps access your camera, \
         then start facewire again"
    }
}

/// The cameras there are, for an error message: one a line.
fn camera_list(available: &[CameraInfo]) -> String {
    if available.is_empty() {
        return format!("there are no cameras at all: {}", no_camera_fix());
    }
    let mut text = String::from("the cameras are:");
    for c in available {
        text.push_str(&format!("\n  {}  {}  ({})", c.index, c.name, c.id));
    }
    text.push_str(
        "\nuse one's number, or a part of its name, with --webcam or [webcam] device \
         (facewire webcam --list shows them)",
    );
    text
}

/// The camera `wanted` names among `cameras`: `None` or an empty name, the first; a number,
/// the camera of that index; else the one whose id or name is `wanted` (ignoring case), else the
/// first whose name contains it.
pub fn choose<'a>(
    cameras: &'a [CameraInfo],
    wanted: Option<&str>,
) -> Result<&'a CameraInfo, CameraError> {
    let wanted = wanted.map(str::trim).unwrap_or_default();
    if cameras.is_empty() {
        return Err(CameraError::NoCamera);
    }
    let no_match = || CameraError::NoMatch {
        wanted: wanted.to_string(),
        available: cameras.to_vec(),
    };
    if wanted.is_empty() {
        return Ok(&cameras[0]);
    }
    if let Ok(index) = wanted.parse::<usize>() {
        return cameras
            .iter()
            .find(|c| c.index == index)
            .ok_or_else(no_match);
    }
    let lower = wanted.to_lowercase();
    cameras
        .iter()
        .find(|c| c.id.to_lowercase() == lower || c.name.to_lowercase() == lower)
        .or_else(|| {
            cameras
                .iter()
                .find(|c| c.name.to_lowercase().contains(&lower))
        })
        .ok_or_else(no_match)
}

/// An open camera, as the camera thread uses it (it is opened and used on that thread alone).
pub trait Camera {
    /// How it delivers frames.
    fn mode(&self) -> &CameraMode;

    /// Waits up to `wait` for the next frame: `Ok(None)` when none came. An error means the
    /// camera is gone (unplugged, taken away).
    fn read(&mut self, wait: Duration) -> Result<Option<RawFrame>, String>;
}

/// Opens the camera the settings name (a closure so that tests can give their own).
pub type Opener = Box<dyn FnMut() -> Result<Box<dyn Camera>, CameraError> + Send>;

/// What happens to a followed camera, as it is said once on the terminal.
#[derive(Debug, Clone, PartialEq)]
pub enum CameraStatus {
    /// The camera opened (`back`: again, after a loss).
    Open {
        /// How it delivers frames.
        mode: CameraMode,
        /// Whether it was lost before.
        back: bool,
    },
    /// There is no camera now: missing, busy, refused or unplugged (what and what to do).
    Problem(String),
}

impl fmt::Display for CameraStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CameraStatus::Open { mode, back: false } => write!(f, "webcam open: {mode}"),
            CameraStatus::Open { mode, back: true } => write!(f, "webcam is back: {mode}"),
            CameraStatus::Problem(problem) => write!(
                f,
                "webcam: {problem}; trying again every {} s",
                RETRY.as_secs()
            ),
        }
    }
}

/// Hears each [`CameraStatus`] as it is said.
pub type OnStatus = Box<dyn FnMut(&CameraStatus) + Send>;

/// What a followed camera is doing, for the panel, the connect card and `listen`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WebcamStats {
    /// The camera, while it is open.
    pub camera: Option<CameraMode>,
    /// Why there is no camera now (missing, busy, unplugged), while there is none.
    pub problem: Option<String>,
    /// Frames the camera gave.
    pub camera_frames: u64,
    /// Frames tracked.
    pub tracked: u64,
    /// Tracked frames with a face.
    pub faces: u64,
    /// Frames that did not decode.
    pub undecodable: u64,
    /// The camera's frames a second, averaged over about the last ten frames.
    pub camera_fps: f32,
    /// Frames tracked a second, averaged alike.
    pub tracker_fps: f32,
    /// Milliseconds to track one frame (decoding included), averaged alike.
    pub tracker_ms: f32,
    /// Milliseconds from a frame's arrival from the camera to its weights, averaged alike.
    pub latency_ms: f32,
}

impl WebcamStats {
    /// The camera's and the tracker's frame rates on one line, while the camera is open.
    pub fn rates(&self) -> Option<String> {
        self.camera.as_ref().map(|_| {
            format!(
                "camera {:.0} fps, tracker {:.0} fps ({:.0} ms a frame)",
                self.camera_fps, self.tracker_fps, self.tracker_ms
            )
        })
    }

    /// One line for the panel and the console.
    pub fn summary(&self) -> String {
        match (&self.camera, &self.problem) {
            (Some(camera), _) => format!(
                "webcam {camera}: camera {:.0} fps, tracker {:.0} fps ({:.0} ms a frame)",
                self.camera_fps, self.tracker_fps, self.tracker_ms
            ),
            (None, Some(problem)) => {
                format!(
                    "webcam: {problem} (trying again every {} s)",
                    RETRY.as_secs()
                )
            }
            (None, None) => "webcam: opening the camera".to_string(),
        }
    }
}

/// The state both threads share.
#[derive(Debug, Default)]
struct Shared {
    stats: WebcamStats,
    /// The newest frame not yet tracked, with the time it arrived.
    newest: Option<(RawFrame, Instant)>,
}

/// A running average of an interval or a duration.
fn smooth(average: &mut f32, value: f32) {
    *average = if *average <= 0.0 {
        value
    } else {
        *average + SMOOTHING * (value - *average)
    };
}

/// The state, the signal that a frame came, and the stop flag.
struct Link {
    shared: Mutex<Shared>,
    frame_ready: Condvar,
    stop: AtomicBool,
}

impl Link {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }
}

/// Reads a [`WebcamInput`]'s stats from another thread (the connect card's).
#[derive(Clone)]
pub struct WebcamWatch(Arc<Link>);

impl WebcamWatch {
    /// What the camera and the tracker are doing.
    pub fn stats(&self) -> WebcamStats {
        self.0.lock().stats.clone()
    }
}

/// A camera followed on its threads; dropping it (or [`WebcamInput::shutdown`]) stops them.
pub struct WebcamInput {
    link: Arc<Link>,
    threads: Vec<JoinHandle<()>>,
}

impl fmt::Debug for WebcamInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebcamInput")
            .field("stats", &self.stats())
            .finish()
    }
}

impl WebcamInput {
    /// Loads the tracker's networks and starts the threads: `open` is called until it gives a
    /// camera (every [`RETRY`]), each tracked frame's face frame (or a lost one) goes to `sink`.
    /// Fails only when the networks or the threads cannot be started; a camera that is not
    /// there is waited for.
    /// `on_status` hears each change as it is said on the terminal.
    pub fn start(
        open: Opener,
        sink: Box<dyn FrameSink>,
        on_status: OnStatus,
    ) -> Result<WebcamInput, ModelError> {
        WebcamInput::start_with(open, sink, on_status, RETRY, STALL)
    }

    /// [`WebcamInput::start`] with the retry interval and the stall time given.
    pub fn start_with(
        open: Opener,
        sink: Box<dyn FrameSink>,
        on_status: OnStatus,
        retry: Duration,
        stall: Duration,
    ) -> Result<WebcamInput, ModelError> {
        let networks = Arc::new(Networks::load()?);
        let link = Arc::new(Link {
            shared: Mutex::new(Shared::default()),
            frame_ready: Condvar::new(),
            stop: AtomicBool::new(false),
        });
        let spawn_error = |e: std::io::Error| ModelError::Run {
            name: "webcam thread",
            reason: e.to_string(),
        };
        let mut input = WebcamInput {
            link: link.clone(),
            threads: Vec::new(),
        };
        let camera_link = link.clone();
        input.threads.push(
            std::thread::Builder::new()
                .name("facewire-camera".into())
                .spawn(move || capture(open, on_status, &camera_link, retry, stall))
                .map_err(spawn_error)?,
        );
        input.threads.push(
            std::thread::Builder::new()
                .name("facewire-webcam".into())
                .spawn(move || follow(Tracker::new(networks), sink, &link))
                .map_err(spawn_error)?,
        );
        Ok(input)
    }

    /// What the camera and the tracker are doing.
    pub fn stats(&self) -> WebcamStats {
        self.link.lock().stats.clone()
    }

    /// A handle that reads [`WebcamInput::stats`] from another thread.
    pub fn watch(&self) -> WebcamWatch {
        WebcamWatch(self.link.clone())
    }

    /// Stops the threads and waits for them.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        self.link.stop.store(true, Ordering::Release);
        self.link.frame_ready.notify_all();
        for thread in self.threads.drain(..) {
            if thread.join().is_err() {
                tracing::error!("a webcam thread panicked");
            }
        }
    }
}

impl Drop for WebcamInput {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Sleeps `time` in short steps; false when asked to stop meanwhile.
fn wait(link: &Link, time: Duration) -> bool {
    let until = Instant::now() + time;
    while !link.stopped() {
        let now = Instant::now();
        if now >= until {
            return true;
        }
        std::thread::sleep((until - now).min(Duration::from_millis(50)));
    }
    false
}

/// The camera thread: opens the camera (again and again while it is not there), then keeps its
/// newest frame for the tracker until the camera is lost or the input stops. Each change is said
/// once.
fn capture(
    mut open: Opener,
    mut on_status: OnStatus,
    link: &Link,
    retry: Duration,
    stall: Duration,
) {
    let mut said: Option<String> = None;
    let mut was_open = false;
    let mut say = |status: CameraStatus, link: &Link| {
        match &status {
            CameraStatus::Open { mode, .. } => {
                tracing::info!(camera = %mode, "{status}");
                let mut shared = link.lock();
                shared.stats.camera = Some(mode.clone());
                shared.stats.problem = None;
            }
            CameraStatus::Problem(problem) => {
                tracing::warn!("{status}");
                let mut shared = link.lock();
                shared.stats.camera = None;
                shared.stats.problem = Some(problem.clone());
            }
        }
        on_status(&status);
    };
    while !link.stopped() {
        let mut camera = match open() {
            Ok(camera) => camera,
            Err(e) => {
                let problem = e.to_string();
                if said.as_ref() != Some(&problem) {
                    said = Some(problem.clone());
                    say(CameraStatus::Problem(problem), link);
                }
                if !wait(link, retry) {
                    break;
                }
                continue;
            }
        };
        let mode = camera.mode().clone();
        say(
            CameraStatus::Open {
                mode: mode.clone(),
                back: was_open,
            },
            link,
        );
        was_open = true;
        let reason = read_until_lost(camera.as_mut(), link, stall);
        drop(camera);
        link.lock().newest = None;
        let Some(reason) = reason else { break };
        let problem = format!("the camera {} stopped ({reason})", mode.id);
        said = Some(problem.clone());
        say(CameraStatus::Problem(problem), link);
        if !wait(link, retry) {
            break;
        }
    }
    link.lock().stats.camera = None;
}

/// Reads frames into the shared slot until the camera fails or stalls (the reason) or the input
/// stops (`None`).
fn read_until_lost(camera: &mut dyn Camera, link: &Link, stall: Duration) -> Option<String> {
    let mut last = Instant::now();
    let mut previous: Option<Instant> = None;
    while !link.stopped() {
        match camera.read(READ_WAIT) {
            Ok(Some(frame)) => {
                let now = Instant::now();
                last = now;
                let mut shared = link.lock();
                shared.stats.camera_frames += 1;
                if let Some(previous) = previous {
                    let interval = (now - previous).as_secs_f32();
                    if interval > 0.0 {
                        smooth(&mut shared.stats.camera_fps, 1.0 / interval);
                    }
                }
                previous = Some(now);
                shared.newest = Some((frame, now));
                drop(shared);
                link.frame_ready.notify_one();
            }
            Ok(None) if last.elapsed() >= stall => {
                return Some(format!(
                    "no frame for {:.0} s",
                    last.elapsed().as_secs_f32()
                ))
            }
            Ok(None) => {}
            Err(reason) => return Some(reason),
        }
    }
    None
}

/// The tracker thread: tracks the newest frame whenever there is one, ticking the sink between.
fn follow(mut tracker: Tracker, mut sink: Box<dyn FrameSink>, link: &Link) {
    let mut previous: Option<Instant> = None;
    let clock = Instant::now();
    let mut last_warning: Option<Instant> = None;
    let mut index = 0u64;
    while !link.stopped() {
        let newest = {
            let mut shared = link.lock();
            if shared.newest.is_none() {
                shared = link
                    .frame_ready
                    .wait_timeout(shared, TICK)
                    .map(|(guard, _)| guard)
                    .unwrap_or_else(|e| e.into_inner().0);
            }
            shared.newest.take()
        };
        let Some((raw, arrived)) = newest else {
            sink.tick(Instant::now());
            continue;
        };
        let started = Instant::now();
        let frame = match raw.decode() {
            Ok(frame) => frame,
            Err(e) => {
                link.lock().stats.undecodable += 1;
                if last_warning.is_none_or(|t| t.elapsed() >= Duration::from_secs(5)) {
                    tracing::warn!(error = %e, "webcam frame skipped");
                    last_warning = Some(Instant::now());
                }
                continue;
            }
        };
        let face = match tracker.track(
            &frame,
            arrived.saturating_duration_since(clock).as_secs_f64(),
        ) {
            Ok(face) => face,
            Err(e) => {
                // A network that fails on one frame fails on all: say so and stop tracking.
                tracing::error!(error = %e, "the webcam tracker failed; the webcam stops");
                link.lock().stats.problem = Some(format!("the tracker failed: {e}"));
                break;
            }
        };
        let done = Instant::now();
        let out = face_frame(face.as_ref(), done);
        {
            let mut shared = link.lock();
            let stats = &mut shared.stats;
            stats.tracked += 1;
            stats.faces += u64::from(face.is_some());
            smooth(
                &mut stats.tracker_ms,
                (done - started).as_secs_f32() * 1000.0,
            );
            smooth(
                &mut stats.latency_ms,
                (done - arrived).as_secs_f32() * 1000.0,
            );
            if let Some(previous) = previous {
                let interval = (done - previous).as_secs_f32();
                if interval > 0.0 {
                    smooth(&mut stats.tracker_fps, 1.0 / interval);
                }
            }
        }
        previous = Some(done);
        tracing::trace!(frame = index, face = face.is_some(), "webcam frame tracked");
        index += 1;
        sink.frame(out);
        sink.tick(Instant::now());
    }
}

/// The cameras the system lists, in its order.
pub fn list() -> Result<Vec<CameraInfo>, CameraError> {
    backend::list()
}

/// Opens the camera `device` names (as [`choose`] reads it; `None`: the first) at the nearest
/// the camera offers to `request`, looking the cameras up again at each call (one may have been
/// plugged in since).
pub fn opener(device: Option<String>, request: CameraRequest) -> Opener {
    Box::new(move || {
        let cameras = list()?;
        let info = choose(&cameras, device.as_deref())?;
        backend::open(info, request)
    })
}

#[cfg(target_os = "linux")]
use super::v4l as backend;

#[cfg(any(target_os = "windows", target_os = "macos"))]
use super::native as backend;

/// No camera interface on this system in this build.
#[cfg(not(any(target_os = "linux", target_os = "windows", target_os = "macos")))]
mod backend {
    use super::{Camera, CameraError, CameraInfo, CameraRequest};

    pub fn list() -> Result<Vec<CameraInfo>, CameraError> {
        Err(CameraError::Unsupported {
            platform: std::env::consts::OS,
        })
    }

    pub fn open(_: &CameraInfo, _: CameraRequest) -> Result<Box<dyn Camera>, CameraError> {
        Err(CameraError::Unsupported {
            platform: std::env::consts::OS,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(index: usize, name: &str, id: &str) -> CameraInfo {
        CameraInfo {
            index,
            name: name.into(),
            id: id.into(),
            layouts: vec![PixelLayout::Mjpeg, PixelLayout::Yuyv],
        }
    }

    fn cameras() -> Vec<CameraInfo> {
        vec![
            info(0, "Integrated Camera", "/dev/video0"),
            info(1, "HD Pro Webcam C920", "/dev/video2"),
        ]
    }

    #[test]
    fn a_camera_is_chosen_by_number_name_part_or_device() {
        let cameras = cameras();
        assert_eq!(choose(&cameras, None).unwrap().index, 0);
        assert_eq!(choose(&cameras, Some("  ")).unwrap().index, 0);
        assert_eq!(choose(&cameras, Some("1")).unwrap().index, 1);
        assert_eq!(choose(&cameras, Some("c920")).unwrap().index, 1);
        assert_eq!(choose(&cameras, Some("/dev/video2")).unwrap().index, 1);
        assert_eq!(
            choose(&cameras, Some("integrated camera")).unwrap().index,
            0
        );
    }

    #[test]
    fn a_camera_not_there_is_named_with_the_ones_that_are() {
        let cameras = cameras();
        let error = choose(&cameras, Some("brio")).unwrap_err();
        let text = error.to_string();
        assert!(text.contains("\"brio\""), "{text}");
        assert!(
            text.contains("1  HD Pro Webcam C920  (/dev/video2)"),
            "{text}"
        );
        assert!(text.contains("webcam --list"), "{text}");
        assert!(matches!(
            choose(&cameras, Some("7")),
            Err(CameraError::NoMatch { .. })
        ));
        let none = choose(&[], None).unwrap_err();
        assert_eq!(none, CameraError::NoCamera);
        assert!(none.to_string().contains("plug in a webcam"), "{none}");
        // Said by `facewire webcam --list` too: it does not send the user back to itself.
        assert!(!none.to_string().contains("--list"), "{none}");
    }

    #[test]
    fn the_summary_names_the_camera_or_the_problem() {
        let mut stats = WebcamStats {
            problem: Some("no camera found: plug in a webcam".into()),
            ..WebcamStats::default()
        };
        assert!(stats.summary().contains("plug in a webcam"));
        assert!(stats.summary().contains("trying again every 2 s"));
        stats.problem = None;
        stats.camera = Some(CameraMode {
            name: "C920".into(),
            id: "/dev/video2".into(),
            width: 640,
            height: 480,
            fps: 30.0,
            layout: PixelLayout::Mjpeg,
        });
        stats.camera_fps = 29.7;
        stats.tracker_fps = 28.2;
        stats.tracker_ms = 19.4;
        assert_eq!(
            stats.summary(),
            "webcam C920 (/dev/video2), 640x480 at 30 fps MJPEG: camera 30 fps, tracker 28 fps \
             (19 ms a frame)"
        );
    }
}

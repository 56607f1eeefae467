//! A video played as a camera: its frames tracked at their frame rate on a thread of their own
//! ("facewire-webcam"), each face handed to a [`FrameSink`] like a phone's frames.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::model::{ModelError, Networks};
use super::track::{face_frame, Tracker};
use super::video::{frame_time, VideoSource};
use crate::arkit::FrameSink;

/// How often the sink is ticked while the thread waits for the next frame's time.
const TICK: Duration = Duration::from_millis(10);

/// The least time between two warnings about unreadable frames.
const WARN_EVERY: Duration = Duration::from_secs(2);

/// What a playing video has done so far, shared with its thread.
#[derive(Debug, Default)]
struct Counters {
    frames: AtomicU64,
    faces: AtomicU64,
    unreadable: AtomicU64,
    finished: AtomicBool,
}

/// What a playing video has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlayStats {
    /// Frames tracked.
    pub frames: u64,
    /// Frames with a face.
    pub faces: u64,
    /// Frames that could not be read (skipped) or tracked.
    pub unreadable: u64,
    /// Whether the video has ended.
    pub finished: bool,
}

/// A video playing on its thread; dropping it (or [`VideoPlayer::shutdown`]) stops it.
#[derive(Debug)]
pub struct VideoPlayer {
    stop: Arc<AtomicBool>,
    counters: Arc<Counters>,
    thread: Option<JoinHandle<()>>,
}

impl VideoPlayer {
    /// Loads the tracker's networks and starts playing `video` at `fps` frames a second times
    /// `speed`: each frame is tracked and its face frame (or a lost one) goes to `sink`.
    pub fn spawn(
        video: VideoSource,
        fps: f64,
        speed: f64,
        sink: Box<dyn FrameSink>,
    ) -> Result<VideoPlayer, ModelError> {
        let networks = Arc::new(Networks::load()?);
        let stop = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(Counters::default());
        let period = Duration::from_secs_f64(1.0 / (fps * speed).clamp(0.01, 10_000.0));
        let thread = {
            let (stop, counters) = (stop.clone(), counters.clone());
            std::thread::Builder::new()
                .name("facewire-webcam".into())
                .spawn(move || play(video, fps, period, networks, sink, &stop, &counters))
                .map_err(|e| ModelError::Run {
                    name: "webcam thread",
                    reason: e.to_string(),
                })?
        };
        Ok(VideoPlayer {
            stop,
            counters,
            thread: Some(thread),
        })
    }

    /// What the video has done so far.
    pub fn stats(&self) -> PlayStats {
        let c = &self.counters;
        PlayStats {
            frames: c.frames.load(Ordering::Relaxed),
            faces: c.faces.load(Ordering::Relaxed),
            unreadable: c.unreadable.load(Ordering::Relaxed),
            finished: c.finished.load(Ordering::Acquire),
        }
    }

    /// Stops the thread and waits for it.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for VideoPlayer {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// The thread: frames tracked one after another at `period`, the sink ticked between them.
fn play(
    mut video: VideoSource,
    fps: f64,
    period: Duration,
    networks: Arc<Networks>,
    mut sink: Box<dyn FrameSink>,
    stop: &AtomicBool,
    counters: &Counters,
) {
    let mut tracker = Tracker::new(networks);
    let start = Instant::now();
    let mut last_warning: Option<Instant> = None;
    let mut index = 0u64;
    while !stop.load(Ordering::Acquire) {
        let frame = match video.next_frame() {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(e) => {
                counters.unreadable.fetch_add(1, Ordering::Relaxed);
                if last_warning.is_none_or(|t| t.elapsed() >= WARN_EVERY) {
                    tracing::warn!(error = %e, skipped = counters.unreadable.load(Ordering::Relaxed), "video frame skipped");
                    last_warning = Some(Instant::now());
                }
                // A folder moves on to its next file; a Y4M stream ends after an error.
                if video.kind() == super::video::VideoKind::Y4m {
                    break;
                }
                continue;
            }
        };
        let face = match tracker.track(&frame, frame_time(index, fps)) {
            Ok(face) => face,
            Err(e) => {
                counters.unreadable.fetch_add(1, Ordering::Relaxed);
                tracing::error!(error = %e, "the tracker failed; the video stops");
                break;
            }
        };
        let mut out = face_frame(face.as_ref(), Instant::now());
        out.sender_time = Some(frame_time(index, fps));
        counters.frames.fetch_add(1, Ordering::Relaxed);
        counters
            .faces
            .fetch_add(u64::from(face.is_some()), Ordering::Relaxed);
        tracing::trace!(frame = index, face = face.is_some(), "video frame tracked");
        sink.frame(out);
        index += 1;
        // Wait for the next frame's time, ticking the sink meanwhile.
        let due = start + period.mul_f64(index as f64);
        loop {
            let now = Instant::now();
            sink.tick(now);
            if now >= due || stop.load(Ordering::Acquire) {
                break;
            }
            std::thread::sleep((due - now).min(TICK));
        }
    }
    counters.finished.store(true, Ordering::Release);
    tracing::info!(
        frames = counters.frames.load(Ordering::Relaxed),
        faces = counters.faces.load(Ordering::Relaxed),
        "the video has ended"
    );
    // Keep ticking until stopped, so that time-based logic (tracking loss) goes on.
    while !stop.load(Ordering::Acquire) {
        sink.tick(Instant::now());
        std::thread::sleep(TICK);
    }
}

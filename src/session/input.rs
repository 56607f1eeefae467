//! Where a run's frames come from: the network listeners, a webcam, or a recording or a video
//! played in real time.

use std::path::Path;

use super::StartError;
use crate::arkit::FrameSink;
use crate::arkit::Protocol;
use crate::config::Config;
use crate::control::telemetry::InputCounters;
use crate::control::{AppEvent, Notify, Topic};
use crate::ingest::{self, IngestConfig};
use crate::record::{self, Recording, ReplayOptions};
use crate::webcam::camera::{self, CameraRequest, WebcamInput};
use crate::webcam::play::VideoPlayer;
use crate::webcam::video::{is_video, VideoSource};

/// The frame rate of a video that states none (a folder of frames).
const DEFAULT_VIDEO_FPS: f64 = 30.0;

/// A recording (or a video) to play instead of listening, and how fast.
#[derive(Debug, Clone, Copy)]
pub struct Replay<'a> {
    /// The `.fwrec` file or Live Link Face CSV; or a video (a folder of numbered PNG or JPEG
    /// frames, or a Y4M file), whose face the webcam tracker follows.
    pub file: &'a Path,
    /// Playback speed (1 is real time).
    pub speed: f64,
}

/// Where frames come from: the network, a webcam, a recording or a video. Each stops when
/// dropped.
pub enum Input {
    /// UDP listeners.
    Network(ingest::IngestHandle),
    /// A webcam, tracked live.
    Webcam(WebcamInput),
    /// A recording played in real time.
    Replay(record::ReplayHandle),
    /// A video played in real time through the webcam tracker.
    Video(VideoPlayer),
}

impl Input {
    /// Starts the input thread: a replay when `replay` names a file, else the webcam when
    /// `[webcam] enabled`, else the network listeners of `config.ingest`. Every frame goes to
    /// `sink`; a webcam's changes (open, missing, unplugged) also go to `notify`.
    pub fn start(
        config: &Config,
        replay: Option<Replay<'_>>,
        sink: Box<dyn FrameSink>,
        notify: Option<Notify>,
    ) -> Result<Input, StartError> {
        Ok(match replay {
            Some(Replay { file, speed }) if is_video(file) => {
                let video = VideoSource::open(file)?;
                let fps = video.stated_fps().unwrap_or(DEFAULT_VIDEO_FPS);
                tracing::info!(
                    file = %file.display(),
                    fps,
                    frames = video.len_hint(),
                    "tracking a video instead of listening"
                );
                Input::Video(VideoPlayer::spawn(video, fps, speed, sink)?)
            }
            Some(Replay { file, speed }) => {
                let recording = Recording::load(file).map_err(|source| StartError::Recording {
                    path: file.to_path_buf(),
                    source,
                })?;
                tracing::info!(
                    file = %file.display(),
                    format = %recording.format(),
                    items = recording.len(),
                    seconds = recording.duration().as_secs_f64(),
                    "replaying instead of listening"
                );
                let options = ReplayOptions {
                    speed,
                    ..ReplayOptions::default()
                };
                Input::Replay(
                    record::spawn_replay(recording, options, sink).map_err(|source| {
                        StartError::Recording {
                            path: file.to_path_buf(),
                            source,
                        }
                    })?,
                )
            }
            None if config.webcam.enabled => Input::Webcam(start_webcam(config, sink, notify)?),
            None => Input::Network(ingest::spawn(
                IngestConfig::from_section(&config.ingest),
                sink,
            )?),
        })
    }

    /// Whether the input is live (the network or a webcam, not a replay or a video).
    pub fn is_live(&self) -> bool {
        matches!(self, Input::Network(_) | Input::Webcam(_))
    }

    /// Frames committed and malformed datagrams so far.
    pub fn counts(&self) -> (u64, u64) {
        match self {
            Input::Network(h) => {
                let s = h.stats();
                (s.frames, s.malformed_datagrams + s.oversized_datagrams)
            }
            Input::Replay(h) => {
                let s = h.stats();
                (s.frames, s.malformed)
            }
            Input::Video(v) => {
                let s = v.stats();
                (s.frames, s.unreadable)
            }
            Input::Webcam(w) => {
                let s = w.stats();
                (s.tracked, s.undecodable)
            }
        }
    }

    /// The totals the control panel shows.
    pub fn panel_counters(&self) -> InputCounters {
        match self {
            Input::Network(h) => {
                let s = h.stats();
                let n = h.net_stats();
                // Every phone protocol's counters (VMC and Face Cap have none of their own).
                let phones = || {
                    Protocol::FAMILIES
                        .into_iter()
                        .filter_map(|p| n.phone(p).copied())
                };
                InputCounters {
                    // Every datagram received, the rejected ones included.
                    datagrams: n.datagrams,
                    frames: s.frames + phones().map(|p| p.frames).sum::<u64>(),
                    malformed: s.malformed_datagrams
                        + s.oversized_datagrams
                        + phones()
                            .map(|p| p.malformed + p.truncated + p.oversized + p.unsupported)
                            .sum::<u64>(),
                    rejected: n.rejected(),
                    dropped: 0,
                }
            }
            Input::Replay(h) => {
                let s = h.stats();
                InputCounters {
                    datagrams: s.datagrams,
                    frames: s.frames,
                    malformed: s.malformed,
                    ..Default::default()
                }
            }
            Input::Video(v) => {
                let s = v.stats();
                InputCounters {
                    frames: s.frames,
                    malformed: s.unreadable,
                    ..Default::default()
                }
            }
            Input::Webcam(w) => {
                let s = w.stats();
                InputCounters {
                    // The camera's frames are what arrives; the tracked ones are committed.
                    datagrams: s.camera_frames,
                    frames: s.tracked,
                    malformed: s.undecodable,
                    ..Default::default()
                }
            }
        }
    }

    /// What the input is, for the control panel.
    pub fn label(&self) -> String {
        match self {
            Input::Network(h) => {
                let listening: Vec<String> = h
                    .listeners()
                    .iter()
                    .map(|l| format!("{} {}", l.kind.listener_label(), l.addr))
                    .collect();
                format!("listening: {}", listening.join(", "))
            }
            Input::Replay(_) => "replaying a recording".to_string(),
            Input::Webcam(w) => {
                let s = w.stats();
                if s.camera.is_none() && s.problem.is_some() {
                    // The webcam card and the messages say what and what to do.
                    format!(
                        "webcam: no camera yet (trying again every {} s)",
                        camera::RETRY.as_secs()
                    )
                } else {
                    s.summary()
                }
            }
            Input::Video(v) => {
                let s = v.stats();
                format!(
                    "tracking a video: {} frames, a face in {}",
                    s.frames, s.faces
                )
            }
        }
    }

    /// Whether a replay or a video has played everything (never true for the network).
    pub fn finished(&self) -> bool {
        match self {
            Input::Network(_) | Input::Webcam(_) => false,
            Input::Replay(h) => h.stats().finished,
            Input::Video(v) => v.stats().finished,
        }
    }

    /// Stops the input thread and waits for it.
    pub fn shutdown(self) {
        match self {
            Input::Network(h) => h.shutdown(),
            Input::Replay(h) => {
                h.shutdown();
            }
            Input::Video(v) => v.shutdown(),
            Input::Webcam(w) => w.shutdown(),
        }
    }
}

/// Starts following the camera `[webcam]` names; a camera that is not there yet is waited for.
/// Each change of the camera goes to `notify`'s panel as a message, when there is one.
pub fn start_webcam(
    config: &Config,
    sink: Box<dyn FrameSink>,
    notify: Option<Notify>,
) -> Result<WebcamInput, StartError> {
    let section = &config.webcam;
    let request = CameraRequest {
        width: section.width,
        height: section.height,
        fps: section.fps,
    };
    tracing::info!(
        camera = section.device().unwrap_or("the first"),
        width = request.width,
        height = request.height,
        fps = request.fps,
        "tracking the webcam instead of listening for a phone"
    );
    let open = camera::opener(section.device().map(str::to_owned), request);
    let on_status: camera::OnStatus = Box::new(move |status| {
        if let Some(notify) = &notify {
            notify(AppEvent::Message {
                topic: Topic::Webcam,
                error: matches!(status, camera::CameraStatus::Problem(_)),
                text: status.to_string(),
            });
        }
    });
    Ok(WebcamInput::start(open, sink, on_status)?)
}

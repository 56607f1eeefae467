//! `facewire listen`: each frame as the phone sent it (or the webcam tracker read it), one JSON
//! line, with the tracking state facewire derives from them; with the webcam, a line a second
//! on the camera and the tracker too.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::CommandError;
use crate::arkit::{FaceFrame, FrameSink, TrackingFlag};
use crate::calibrate::{Conditioner, LossReason, Output, TrackingState};
use crate::config::Config;
use crate::session::{self, Input, Replay};
use crate::webcam::camera::WebcamStats;

/// How often `listen` says how the webcam and its tracker are doing.
const WEBCAM_REPORT: Duration = Duration::from_secs(1);

/// How long `listen` waits for more once a replay or a video has ended.
const ENDED_QUIET: Duration = Duration::from_millis(200);

/// What `listen` prints: the frames as the phone sent them, and the tracking state facewire
/// derives from them. Frames stay inline: they travel through a bounded channel, not a heap.
#[allow(clippy::large_enum_variant)]
enum Heard {
    /// A raw committed frame.
    Frame(FaceFrame),
    /// A tracking state change, with the time it was noticed and why the face was lost.
    State(TrackingState, Instant, Option<LossReason>),
}

/// Forwards raw frames to the printer and runs a conditioner beside them for the state.
struct ListenSink {
    tx: mpsc::SyncSender<Heard>,
    core: Conditioner,
}

impl ListenSink {
    fn states(&mut self, out: Output, now: Instant) {
        for &state in out.states() {
            let _ = self.tx.try_send(Heard::State(state, now, out.reason));
        }
    }
}

impl FrameSink for ListenSink {
    fn frame(&mut self, frame: FaceFrame) {
        let _ = self.tx.try_send(Heard::Frame(frame));
        let out = self.core.on_frame(&frame, frame.received);
        self.states(out, frame.received);
    }

    fn tick(&mut self, now: Instant) {
        let out = self.core.on_tick(now);
        self.states(out, now);
    }
}

/// Listens as `config.ingest` says (or on `port` alone), follows the webcam when `[webcam]
/// enabled`, or plays `replay`, as a live run would ([`Input::start`]), and writes a JSON line
/// to `out` for every frame and tracking state change (and each second, the webcam's state),
/// until `count` frames are printed, the replay ends or `out` closes.
pub fn listen(
    config: &Config,
    port: Option<u16>,
    replay: Option<Replay<'_>>,
    count: Option<u64>,
    out: &mut impl Write,
) -> Result<(), CommandError> {
    let (tx, rx) = mpsc::sync_channel::<Heard>(256);
    let start = Instant::now();
    let sink = Box::new(ListenSink {
        tx,
        core: Conditioner::new(config.smoothing, config.tracking, start),
    });
    let mut config = config.clone();
    if let Some(p) = port {
        config.ingest.listen = vec![SocketAddr::from(([0, 0, 0, 0], p))];
    }
    let input = Input::start(&config, replay, sink, None)?;
    // A network input says on the terminal what to do while no phone sends.
    let _connect = match &input {
        Input::Network(handle) => session::watch_connection(
            handle.probe(),
            handle.listeners(),
            config.ingest.phone,
            None,
            false,
        ),
        _ => None,
    };
    let mut printed = 0u64;
    let mut reported = Instant::now();
    while count.is_none_or(|n| printed < n) {
        // A replay or a video that has ended hands on its last frames at once: print what
        // comes, and end when nothing more does.
        let ended = input.finished();
        let wait = if ended { ENDED_QUIET } else { WEBCAM_REPORT };
        let line = match rx.recv_timeout(wait) {
            Ok(Heard::Frame(frame)) => {
                printed += 1;
                Some(frame_json(&frame, start))
            }
            Ok(Heard::State(state, at, reason)) => {
                let mut v = serde_json::json!({ "t": seconds(at, start), "state": state });
                if let Some(reason) = reason {
                    v["reason"] = serde_json::json!(reason);
                }
                Some(v)
            }
            Err(mpsc::RecvTimeoutError::Timeout) if ended => break,
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let mut lines: Vec<serde_json::Value> = line.into_iter().collect();
        if let Input::Webcam(webcam) = &input {
            if reported.elapsed() >= WEBCAM_REPORT {
                reported = Instant::now();
                lines.push(webcam_json(&webcam.stats(), reported, start));
            }
        }
        let written = lines
            .iter()
            .try_for_each(|line| writeln!(out, "{line}"))
            .and_then(|_| out.flush());
        if written.is_err() {
            break;
        }
    }
    input.shutdown();
    Ok(())
}

/// How the webcam and its tracker are doing, as a JSON line.
pub fn webcam_json(stats: &WebcamStats, now: Instant, start: Instant) -> serde_json::Value {
    let one = |v: f32| (f64::from(v) * 10.0).round() / 10.0;
    let mut v = serde_json::json!({
        "t": seconds(now, start),
        "webcam": {
            "camera_frames": stats.camera_frames,
            "tracked": stats.tracked,
            "faces": stats.faces,
            "camera_fps": one(stats.camera_fps),
            "tracker_fps": one(stats.tracker_fps),
            "tracker_ms": one(stats.tracker_ms),
            "latency_ms": one(stats.latency_ms),
        },
    });
    if let Some(camera) = &stats.camera {
        v["webcam"]["camera"] = serde_json::json!({
            "name": camera.name,
            "device": camera.id,
            "width": camera.width,
            "height": camera.height,
            "fps": one(camera.fps),
            "format": camera.layout.name(),
        });
    }
    if let Some(problem) = &stats.problem {
        v["webcam"]["problem"] = serde_json::json!(problem);
    }
    v
}

/// Seconds from `start` to `t`, rounded to the microsecond.
fn seconds(t: Instant, start: Instant) -> f64 {
    (t.saturating_duration_since(start).as_secs_f64() * 1e6).round() / 1e6
}

/// One frame as a JSON line: time, source, sender, present weights, poses.
pub fn frame_json(frame: &FaceFrame, start: Instant) -> serde_json::Value {
    let weights: serde_json::Map<String, serde_json::Value> = frame
        .present
        .iter()
        .map(|c| {
            (
                c.name().to_string(),
                serde_json::json!(round6(frame.weights[c.index()])),
            )
        })
        .collect();
    let mut v = serde_json::json!({
        "t": seconds(frame.received, start),
        "source": frame.protocol.name(),
        "from": frame.from.to_string(),
        "weights": weights,
    });
    let quat = |q: glam::Quat| serde_json::json!([q.x, q.y, q.z, q.w].map(round6));
    if let Some(q) = frame.head {
        v["head"] = quat(q);
    }
    if let Some(q) = frame.left_eye {
        v["left_eye"] = quat(q);
    }
    if let Some(q) = frame.right_eye {
        v["right_eye"] = quat(q);
    }
    if let Some(t) = frame.sender_time {
        v["sender_time"] = serde_json::json!(t);
    }
    if frame.tracking != TrackingFlag::Unknown {
        v["tracking"] = serde_json::json!(frame.tracking);
    }
    v
}

/// `v` rounded to 6 decimals, so that a weight prints as `0.000241` rather than the 20 digits
/// of the `f32` widened to `f64`.
fn round6(v: f32) -> f64 {
    (f64::from(v) * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arkit::{Channel, Protocol};
    use crate::calibrate::at;

    #[test]
    fn a_frame_prints_what_it_carries() {
        let t0 = Instant::now();
        let mut f = FaceFrame::empty(
            Protocol::LiveLinkFace,
            "10.0.0.2:5000".parse().unwrap(),
            at(t0, 0.5),
        );
        f.set(Channel::JawOpen, 0.25);
        f.sender_time = Some(3.0);
        let v = frame_json(&f, t0);
        assert_eq!(v["t"], 0.5);
        assert_eq!(v["source"], "livelinkface");
        assert_eq!(v["weights"]["jawOpen"], 0.25);
        assert_eq!(v["sender_time"], 3.0);
        assert!(v.get("head").is_none());
        assert!(v.get("tracking").is_none());
    }

    #[test]
    fn weights_and_rotations_print_with_six_decimals() {
        let t0 = Instant::now();
        let mut f = FaceFrame::empty(Protocol::Vmc, "10.0.0.2:5000".parse().unwrap(), t0);
        f.set(Channel::EyeBlinkLeft, 0.000_241_447_82);
        f.set(Channel::JawOpen, 1.0);
        f.head = Some(glam::Quat::from_rotation_y(0.3));
        let v = frame_json(&f, t0);
        assert_eq!(v["weights"]["eyeBlinkLeft"], 0.000241);
        assert_eq!(v["weights"]["jawOpen"], 1.0);
        let head: Vec<f64> = serde_json::from_value(v["head"].clone()).unwrap();
        assert_eq!(head, [0.0, 0.149438, 0.0, 0.988771]);
        let line = v.to_string();
        assert!(line.contains("\"eyeBlinkLeft\":0.000241,"), "{line}");
        assert!(line.contains("[0.0,0.149438,0.0,0.988771]"), "{line}");
    }
}

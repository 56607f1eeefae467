//! `facewire track`: the webcam tracker on a video (a folder of numbered PNG or JPEG frames, or a
//! Y4M file), one line per frame.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::listen::frame_json;
use super::CommandError;
use crate::webcam::model::Networks;
use crate::webcam::track::{face_frame, Tracker};
use crate::webcam::video::{frame_time, VideoSource};

/// The flags of `facewire track`.
#[derive(Debug, clap::Args)]
pub struct TrackArgs {
    /// The video: a folder of numbered PNG or JPEG frames (frame_0001.png, ...) or a .y4m file.
    #[arg(long, value_name = "PATH")]
    pub video: PathBuf,
    /// Frames a second, for the times printed and the tracker's smoothing (default: the rate a
    /// Y4M file states, else 30).
    #[arg(long, value_name = "N", value_parser = parse_fps)]
    pub fps: Option<f64>,
    /// One JSON object a line, as `facewire listen` prints a frame (weights by their ARKit
    /// names, the head as a quaternion x, y, z, w), plus `"frame"` (from 0) and `"face"`: true
    /// or false.
    #[arg(long)]
    pub json: bool,
    /// With --json: also the 478 landmarks in pixels (`"landmarks": [[x, y, z], ...]`, x right,
    /// y down, z into the picture) and the face's presence score (`"presence"`), to see what
    /// the tracker saw.
    #[arg(long, requires = "json")]
    pub landmarks: bool,
}

/// A frame rate from 1 to 1000.
fn parse_fps(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() && (1.0..=1000.0).contains(&f) => Ok(f),
        _ => Err(format!(
            "{text} is not a frame rate from 1 to 1000, e.g. 30 or 29.97"
        )),
    }
}

/// What a `track` run read, for its summary.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TrackSummary {
    /// Frames read.
    pub frames: u64,
    /// Frames with a face.
    pub faces: u64,
    /// Frames the detector ran on.
    pub detections: u64,
    /// Mean tracking time per frame.
    pub mean_ms: f64,
    /// Median tracking time.
    pub p50_ms: f64,
    /// 99th percentile of the tracking time.
    pub p99_ms: f64,
    /// Slowest frame.
    pub max_ms: f64,
}

/// Runs `facewire track`: reads the video, tracks each frame and writes a line per frame to
/// `out` (JSON with `--json`, else a short text line), then a summary to standard error.
pub fn track_command(args: &TrackArgs, out: &mut dyn Write) -> Result<TrackSummary, CommandError> {
    let mut video = VideoSource::open(&args.video)?;
    let fps = args.fps.or(video.stated_fps()).unwrap_or(30.0);
    let networks = Arc::new(Networks::load()?);
    let mut tracker = Tracker::new(networks);
    let start = Instant::now();
    let mut summary = TrackSummary::default();
    let mut total = Duration::ZERO;
    // Each frame's tracking time in microseconds, for the percentiles (4 bytes a frame).
    let mut times: Vec<u32> = Vec::with_capacity(video.len_hint().unwrap_or(0));
    let mut index = 0u64;
    while let Some(frame) = video.next_frame()? {
        let t = frame_time(index, fps);
        let began = Instant::now();
        let face = tracker.track(&frame, t)?;
        let took = began.elapsed();
        total += took;
        times.push(took.as_micros().min(u128::from(u32::MAX)) as u32);
        summary.max_ms = summary.max_ms.max(took.as_secs_f64() * 1e3);
        let mut face_frame = face_frame(face.as_ref(), start + Duration::from_secs_f64(t));
        face_frame.sender_time = Some(t);
        let line = if args.json {
            let mut v = frame_json(&face_frame, start);
            // A video, not a network sender: no address.
            v["source"] = serde_json::json!("video");
            if let Some(fields) = v.as_object_mut() {
                fields.remove("from");
            }
            v["frame"] = serde_json::json!(index);
            v["face"] = serde_json::json!(face.is_some());
            if let (true, Some(f)) = (args.landmarks, &face) {
                let round = |x: f32| (f64::from(x) * 10.0).round() / 10.0;
                let points: Vec<[f64; 3]> = f
                    .landmarks
                    .iter()
                    .map(|p| [round(p[0]), round(p[1]), round(p[2])])
                    .collect();
                v["landmarks"] = serde_json::json!(points);
                v["presence"] = serde_json::json!((f64::from(f.presence) * 1e4).round() / 1e4);
            }
            v.to_string()
        } else {
            match &face {
                None => format!("{t:9.3} s  frame {index:5}  no face"),
                Some(f) => {
                    let pose = match &f.fit {
                        Some(fit) => {
                            let [yaw, pitch, roll] = fit.pose.yaw_pitch_roll();
                            format!("yaw {yaw:6.1}  pitch {pitch:6.1}  roll {roll:6.1}")
                        }
                        None => format!("{:38}", "no head pose"),
                    };
                    let w = |c| face_frame.get(c).unwrap_or(0.0);
                    use crate::arkit::Channel::*;
                    format!(
                        "{t:9.3} s  frame {index:5}  face {:.2}  {pose}  blink {:.2} {:.2}  jaw \
                         {:.2}  smile {:.2} {:.2}",
                        f.presence,
                        w(EyeBlinkLeft),
                        w(EyeBlinkRight),
                        w(JawOpen),
                        w(MouthSmileLeft),
                        w(MouthSmileRight),
                    )
                }
            }
        };
        if writeln!(out, "{line}").is_err() {
            // The reader went away (a closed pipe): stop quietly.
            break;
        }
        summary.frames += 1;
        summary.faces += u64::from(face.is_some());
        index += 1;
    }
    summary.detections = tracker.counts().1;
    if summary.frames > 0 {
        summary.mean_ms = total.as_secs_f64() * 1e3 / summary.frames as f64;
    }
    times.sort_unstable();
    let at = |q: f64| {
        let i = ((times.len() as f64 - 1.0) * q).round() as usize;
        times.get(i).map_or(0.0, |&us| f64::from(us) / 1e3)
    };
    summary.p50_ms = at(0.5);
    summary.p99_ms = at(0.99);
    Ok(summary)
}

/// `facewire webcam --list`: the cameras there are, one a line (number, name, device, the
/// frame formats facewire reads), then how to choose one.
pub fn list_cameras(out: &mut dyn Write) -> Result<(), CommandError> {
    let cameras = crate::webcam::camera::list()?;
    if cameras.is_empty() {
        return Err(crate::webcam::camera::CameraError::NoCamera.into());
    }
    let width = cameras.iter().map(|c| c.name.len()).max().unwrap_or(0);
    for c in &cameras {
        let layouts: Vec<&str> = c.layouts.iter().map(|l| l.name()).collect();
        let layouts = if layouts.is_empty() {
            "no format facewire reads".to_string()
        } else {
            layouts.join(", ")
        };
        writeln!(out, "{}  {:width$}  {}  {layouts}", c.index, c.name, c.id)
            .map_err(CommandError::Output)?;
    }
    writeln!(
        out,
        "use one with: facewire run --webcam {} (or in the config file: [webcam] enabled = \
         true, device = \"{}\")",
        cameras[0].index, cameras[0].index
    )
    .map_err(CommandError::Output)?;
    Ok(())
}

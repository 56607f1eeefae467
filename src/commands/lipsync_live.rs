//! `facewire lipsync --live` and `--list-devices`: the microphone's mouth shapes as they are
//! spoken, and the audio inputs to choose from.

use std::io::Write;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::lipsync::lip_frame_json;
use super::CommandError;
use crate::audio::{self, AudioStatus, Capture};
use crate::lipsync::profile::Profile;
use crate::lipsync::{LipFrame, LipSettings, LipSync};

/// What `--live` does.
#[derive(Debug, Clone)]
pub(super) struct Live<'a> {
    /// The input asked for; `None`: the default.
    pub device: Option<&'a str>,
    /// The analysis settings.
    pub settings: LipSettings,
    /// JSON lines ([`lip_frame_json`]) instead of a level meter.
    pub json: bool,
    /// Stop after this many seconds of audio (at most [`LIMIT_GRACE`] later when audio stops
    /// coming).
    pub seconds: Option<f64>,
    /// Redraw the meter on one line (the output is a terminal).
    pub in_place: bool,
}

/// What the audio thread hands the printing one.
enum Event {
    /// One analysis hop.
    Frame(LipFrame),
    /// The input opened, was lost or came back.
    Status(AudioStatus),
}

/// Events waiting to be printed. When printing falls behind, the audio thread waits for room
/// (the device's buffer takes up the delay; an overrun is recovered).
const QUEUE: usize = 256;

/// How much longer than `--seconds` the command waits when audio stops coming.
const LIMIT_GRACE: Duration = Duration::from_secs(2);

/// The meter's span: from this level (dB full scale) to 0 dB.
const METER_FLOOR_DB: f32 = -60.0;

/// The meter's width, characters.
const METER_CELLS: usize = 20;

/// Analyses the input `live` names and writes a line per hop to `out` until Ctrl-C or
/// `live.seconds`; the input's status goes to the log. Returns the number of hops written.
pub(super) fn lipsync_live(live: &Live<'_>, out: &mut impl Write) -> Result<usize, CommandError> {
    let (tx, rx) = mpsc::sync_channel(QUEUE);
    let status_tx = tx.clone();
    let settings = live.settings;
    // The analysis restarts when the input comes back at another rate; `offset` keeps the
    // time going on.
    let mut analysis: Option<(u32, LipSync)> = None;
    let (mut offset, mut last) = (0.0, 0.0);
    let on_samples = move |samples: &[f32], rate: u32| {
        if analysis.as_ref().map(|(r, _)| *r) != Some(rate) {
            offset = last;
            analysis = Some((rate, LipSync::new(rate, Profile::builtin(), settings)));
        }
        if let Some((_, lip)) = analysis.as_mut() {
            lip.push(samples, |mut frame| {
                frame.t += offset;
                last = frame.t;
                // An error: printing has ended and the capture is being stopped.
                let _ = tx.send(Event::Frame(frame));
            });
        }
    };
    let on_status = move |status| {
        let _ = status_tx.send(Event::Status(status));
    };
    let capture = Capture::start(live.device, on_samples, on_status)?;
    let printed = print(live, &rx, out);
    // The receiver goes first, so that an audio thread waiting for room sees the end.
    drop(rx);
    drop(capture);
    printed
}

/// Writes the events of `rx` to `out` until `live.seconds` of audio have passed (or that and
/// [`LIMIT_GRACE`] on the clock) or the capture ends.
fn print(
    live: &Live<'_>,
    rx: &mpsc::Receiver<Event>,
    out: &mut impl Write,
) -> Result<usize, CommandError> {
    let started = Instant::now();
    let limit = live
        .seconds
        .map(|s| Duration::from_secs_f64(s) + LIMIT_GRACE);
    let mut lines = 0;
    // A meter line is on screen without its newline.
    let mut open_line = false;
    let result = loop {
        let wait = match limit.map(|l| l.saturating_sub(started.elapsed())) {
            Some(left) if left.is_zero() => break Ok(lines),
            Some(left) => left.min(Duration::from_millis(250)),
            None => Duration::from_millis(250),
        };
        let event = match rx.recv_timeout(wait) {
            Ok(event) => event,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => break Ok(lines),
        };
        // The hops written (0 or 1).
        let written = match event {
            Event::Frame(frame) if live.seconds.is_some_and(|s| frame.t > s) => break Ok(lines),
            Event::Frame(frame) if live.json => {
                writeln!(out, "{}", lip_frame_json(&frame)).map(|()| 1)
            }
            Event::Frame(frame) if live.in_place => {
                open_line = true;
                write!(out, "\r{}\x1b[K", meter_line(&frame))
                    .and_then(|()| out.flush())
                    .map(|()| 1)
            }
            Event::Frame(frame) => writeln!(out, "{}", meter_line(&frame)).map(|()| 1),
            Event::Status(status) => {
                // Clear the meter, so that the log line does not land on it.
                let cleared = if std::mem::take(&mut open_line) {
                    write!(out, "\r\x1b[K").and_then(|()| out.flush())
                } else {
                    Ok(())
                };
                report(&status);
                cleared.map(|()| 0)
            }
        };
        match written {
            Ok(n) => lines += n,
            // The reader has gone (`| head`): done.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => break Ok(lines),
            Err(e) => break Err(CommandError::Output(e)),
        }
    };
    if open_line {
        writeln!(out).map_err(CommandError::Output)?;
    }
    result
}

/// Says `status` in the log.
fn report(status: &AudioStatus) {
    match status {
        AudioStatus::Open { device, rate } => {
            tracing::info!(device = %device, rate, "listening (Ctrl-C stops)");
        }
        AudioStatus::Lost { device, reason } => tracing::warn!(
            device = %device,
            reason = %reason,
            "audio input stopped; trying again every {} s",
            audio::RETRY.as_secs()
        ),
        AudioStatus::Back { device, rate } => {
            tracing::info!(device = %device, rate, "audio input is back");
        }
    }
}

/// A hop as text: time, level with a meter from [`METER_FLOOR_DB`] to 0 dB, viseme.
fn meter_line(frame: &LipFrame) -> String {
    let level = ((frame.volume_db - METER_FLOOR_DB) / -METER_FLOOR_DB).clamp(0.0, 1.0);
    let filled = (level * METER_CELLS as f32).round() as usize;
    format!(
        "{:8.3} s  {:6.1} dB [{}{}] {}",
        frame.t,
        frame.volume_db,
        "#".repeat(filled),
        ".".repeat(METER_CELLS - filled),
        frame.viseme.name()
    )
}

/// Writes the audio inputs to `out`, a line each, the default marked with `*`.
pub(super) fn list_devices(out: &mut impl Write) -> Result<(), CommandError> {
    let devices = audio::input_devices()?;
    let text = device_list(&devices);
    out.write_all(text.as_bytes()).map_err(CommandError::Output)
}

/// The text of `--list-devices`.
fn device_list(devices: &[audio::DeviceInfo]) -> String {
    if devices.is_empty() {
        return format!("no audio inputs found: {}\n", audio::missing_input_fix());
    }
    let width = devices.iter().map(|d| d.name.len()).max().unwrap_or(0);
    let mut text = String::new();
    for d in devices {
        let mark = if d.default { '*' } else { ' ' };
        let line = format!("{mark} {:width$}  {}", d.name, d.description);
        text.push_str(line.trim_end());
        text.push('\n');
    }
    if devices.iter().any(|d| d.default) {
        text.push_str("* the default input\n");
    }
    text.push_str(
        "choose one with --device NAME or [lipsync] device = \"NAME\" (a part of a name or \
         description will do)\n",
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lipsync::Viseme;

    fn frame(t: f64, volume_db: f32, viseme: Viseme) -> LipFrame {
        LipFrame {
            t,
            volume_db,
            viseme,
            weights: [0.0; crate::lipsync::VISEMES],
            gate: (-50.0, -30.0),
            closure: 0.0,
        }
    }

    #[test]
    fn the_meter_spans_sixty_decibels() {
        assert_eq!(
            meter_line(&frame(1.5, -30.0, Viseme::Aa)),
            "   1.500 s   -30.0 dB [##########..........] aa"
        );
        assert_eq!(
            meter_line(&frame(0.032, -120.0, Viseme::Sil)),
            "   0.032 s  -120.0 dB [....................] sil"
        );
        assert!(meter_line(&frame(2.0, 3.0, Viseme::Oh)).contains("[####################] oh"));
    }

    #[test]
    fn the_device_list_marks_the_default() {
        let devices = [
            audio::DeviceInfo {
                name: "default".into(),
                description: "Default ALSA Output (currently PipeWire Media Server)".into(),
                default: true,
            },
            audio::DeviceInfo {
                name: "null".into(),
                description: String::new(),
                default: false,
            },
        ];
        let text = device_list(&devices);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "* default  Default ALSA Output (currently PipeWire Media Server)"
        );
        assert_eq!(lines[1], "  null");
        assert_eq!(lines[2], "* the default input");
        assert!(lines[3].contains("--device NAME"), "{text}");
        assert!(device_list(&[]).starts_with("no audio inputs found: "));
    }

    #[test]
    fn the_null_device_gives_silent_json_lines_for_the_seconds_asked() {
        if let Err(e) = audio::input_devices() {
            eprintln!("note: skipping a live lip-sync test: {e}");
            return;
        }
        if cfg!(not(target_os = "linux")) {
            return;
        }
        let live = Live {
            device: Some("null"),
            settings: LipSettings::default(),
            json: true,
            seconds: Some(0.5),
            in_place: false,
        };
        let mut out = Vec::new();
        let lines = lipsync_live(&live, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), lines);
        // Hops end at 32 ms, 48 ms, ... up to half a second.
        assert_eq!(lines, 30, "{text}");
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["viseme"], "sil", "{line}");
            assert_eq!(v["volume"], -120.0, "{line}");
        }
    }
}

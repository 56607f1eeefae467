//! `facewire lipsync`: the mouth shapes of a WAV file's speech (or the microphone's), one line
//! per analysis hop.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use super::lipsync_live::{lipsync_live, list_devices, Live};
use super::CommandError;
use crate::config::Config;
use crate::lipsync::{analyze, plot, wav, LipFrame, LipSettings, Viseme};

/// The flags of `facewire lipsync`.
#[derive(Debug, clap::Args)]
pub struct LipsyncArgs {
    /// The WAV file (any common sample rate, mono or stereo).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present_any = ["live", "list_devices"],
        conflicts_with_all = ["live", "list_devices"]
    )]
    pub wav: Option<PathBuf>,
    /// The microphone instead, as it is spoken, until Ctrl-C (or --seconds); with the
    /// `[lipsync]` settings.
    #[arg(long, conflicts_with = "list_devices")]
    pub live: bool,
    /// With --live: the input (a name, or a part of a name or description, as --list-devices
    /// prints them) instead of `[lipsync] device`.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["wav", "list_devices"])]
    pub device: Option<String>,
    /// With --live: stop after this many seconds of audio (or two seconds later, when audio
    /// stops coming).
    #[arg(
        long,
        value_name = "N",
        conflicts_with_all = ["wav", "list_devices"],
        value_parser = parse_seconds
    )]
    pub seconds: Option<f64>,
    /// Lists the audio inputs, marking the default.
    #[arg(long)]
    pub list_devices: bool,
    /// One JSON object a line: t, volume (dB), viseme, open (the jaw opening, 0 to 1), closure,
    /// gate and every viseme's weight.
    #[arg(long)]
    pub json: bool,
    /// Also draws the timeline into this PNG: the waveform, the level against the gate, and
    /// each viseme's weight in a lane of its own.
    #[arg(long, value_name = "PNG", requires = "wav")]
    pub plot: Option<PathBuf>,
}

/// A positive, finite number of seconds.
fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 => Ok(s),
        _ => Err(format!(
            "{text} is not a positive number of seconds, e.g. 5 or 0.5"
        )),
    }
}

/// Runs `facewire lipsync` with `config`'s `[lipsync]` settings, writing to `out` (standard
/// output: the live meter updates in place when that is a terminal).
pub fn lipsync_command(
    args: &LipsyncArgs,
    config: &Config,
    out: &mut impl Write,
) -> Result<(), CommandError> {
    if args.list_devices {
        return list_devices(out);
    }
    if args.live {
        let live = Live {
            device: args.device.as_deref().or(config.lipsync.device()),
            settings: config.lipsync.settings(),
            json: args.json,
            seconds: args.seconds,
            in_place: !args.json && std::io::stdout().is_terminal(),
        };
        lipsync_live(&live, out)?;
        return Ok(());
    }
    if let Some(file) = &args.wav {
        lipsync_wav(file, args.json, &config.lipsync.settings(), out)?;
    }
    if let (Some(file), Some(png)) = (&args.wav, &args.plot) {
        let (width, height) = plot::plot_wav(file, png, &config.lipsync.settings())?;
        tracing::info!(file = %png.display(), width, height, "plot written");
    }
    Ok(())
}

/// `value` rounded to three decimals, as JSON.
fn rounded(value: f32) -> serde_json::Value {
    serde_json::json!((f64::from(value) * 1000.0).round() / 1000.0)
}

/// One frame as a JSON object: `t` (seconds), `volume` (dB), `viseme` (the shape shown),
/// `open` (the jaw opening the lip-sync layer applies, 0 to 1), `closure` (how closed the
/// closure detector holds the lips, 0 to 1), `gate` (floor and ceiling in use, dB) and
/// `visemes` (every viseme's weight).
pub fn lip_frame_json(frame: &LipFrame) -> serde_json::Value {
    let weights: serde_json::Map<String, serde_json::Value> = Viseme::ALL
        .iter()
        .map(|v| (v.name().to_string(), rounded(frame.weights[v.index()])))
        .collect();
    serde_json::json!({
        "t": (frame.t * 1000.0).round() / 1000.0,
        "volume": rounded(frame.volume_db),
        "viseme": frame.viseme.name(),
        "open": rounded(frame.open()),
        "closure": rounded(frame.closure),
        "gate": [rounded(frame.gate.0), rounded(frame.gate.1)],
        "visemes": weights,
    })
}

/// Analyses the WAV file `file` with the built-in vowel profile and writes a line per hop to
/// `out`: JSON ([`lip_frame_json`]) with `json`, else `t`, level and viseme in columns. Returns
/// the number of lines.
pub fn lipsync_wav(
    file: &Path,
    json: bool,
    settings: &LipSettings,
    out: &mut impl Write,
) -> Result<usize, CommandError> {
    let audio = wav::read_mono(file)?;
    tracing::info!(
        file = %file.display(),
        rate = audio.rate,
        seconds = audio.samples.len() as f64 / f64::from(audio.rate.max(1)),
        "analysing"
    );
    let frames = analyze(&audio.samples, audio.rate, Default::default(), *settings);
    for frame in &frames {
        let line = if json {
            lip_frame_json(frame).to_string()
        } else {
            format!(
                "{:8.3} s  {:6.1} dB  {}",
                frame.t,
                frame.volume_db,
                frame.viseme.name()
            )
        };
        writeln!(out, "{line}").map_err(CommandError::Output)?;
    }
    Ok(frames.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `facewire lipsync`'s flags alone.
    #[derive(Debug, clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: LipsyncArgs,
    }

    fn parse(flags: &[&str]) -> Result<LipsyncArgs, clap::Error> {
        use clap::Parser;
        Cli::try_parse_from(std::iter::once("lipsync").chain(flags.iter().copied())).map(|c| c.args)
    }

    #[test]
    fn a_wav_file_the_microphone_or_the_device_list() {
        let live = parse(&["--live", "--device", "USB", "--seconds", "1.5", "--json"]).unwrap();
        assert!(live.live && live.json && live.wav.is_none());
        assert_eq!(
            (live.device.as_deref(), live.seconds),
            (Some("USB"), Some(1.5))
        );
        assert!(parse(&["--list-devices"]).unwrap().list_devices);
        assert!(parse(&["--wav", "a.wav"]).unwrap().wav.is_some());
        for wrong in [
            &[][..],
            &["--json"],
            &["--wav", "a.wav", "--live"],
            &["--live", "--list-devices"],
            &["--wav", "a.wav", "--device", "USB"],
            &["--list-devices", "--seconds", "2"],
            &["--live", "--seconds", "0"],
            &["--live", "--seconds", "inf"],
        ] {
            assert!(parse(wrong).is_err(), "{wrong:?}");
        }
        let zero = parse(&["--live", "--seconds", "0"])
            .unwrap_err()
            .to_string();
        assert!(zero.contains("not a positive number of seconds"), "{zero}");
    }

    #[test]
    fn a_tone_burst_prints_a_line_per_hop_with_every_viseme() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("burst.wav");
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate: 16_000,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut w = hound::WavWriter::create(&path, spec).unwrap();
        // Half a second of silence, then half a second of a loud buzz.
        for i in 0..16_000u32 {
            let s = if i < 8_000 {
                0.0
            } else {
                0.5 * (2.0 * std::f32::consts::PI * 220.0 * i as f32 / 16_000.0).sin()
            };
            w.write_sample((s * 32767.0) as i16).unwrap();
        }
        w.finalize().unwrap();
        let mut out = Vec::new();
        let lines = lipsync_wav(&path, true, &LipSettings::default(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), lines);
        assert!((60..=64).contains(&lines), "{lines}");
        let parsed: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(parsed[0]["viseme"], "sil");
        assert_eq!(parsed[0]["volume"], -120.0);
        assert_ne!(
            parsed[lines - 1]["viseme"],
            "sil",
            "the buzz opens the mouth"
        );
        for v in Viseme::ALL {
            assert!(parsed[5]["visemes"][v.name()].is_number(), "{v:?}");
        }
        let mut plain = Vec::new();
        lipsync_wav(&path, false, &LipSettings::default(), &mut plain).unwrap();
        assert!(String::from_utf8(plain).unwrap().contains(" dB  sil"));
    }
}

//! `facewire lipsync`: the mouth shapes of a WAV file's speech (or the microphone's), one line
//! per analysis hop.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::StartError;
use crate::config::Config;
use crate::lipsync::{analyze, plot, wav, LipFrame, LipSettings, Viseme};

/// The flags of `facewire lipsync`.
#[derive(Debug, clap::Args)]
pub struct LipsyncArgs {
    /// The WAV file (any common sample rate, mono or stereo).
    #[arg(long, value_name = "FILE", required = true)]
    pub wav: Option<PathBuf>,
    /// One JSON object a line: t, volume (dB), viseme and every viseme's weight.
    #[arg(long)]
    pub json: bool,
    /// Also draws the timeline into this PNG: the waveform, the level against the gate, and
    /// each viseme's weight in a lane of its own.
    #[arg(long, value_name = "PNG", requires = "wav")]
    pub plot: Option<PathBuf>,
}

/// Runs `facewire lipsync` with `config`'s `[lipsync]` settings, writing to `out`.
pub fn lipsync_command(
    args: &LipsyncArgs,
    config: &Config,
    out: &mut impl Write,
) -> Result<(), StartError> {
    let _ = config;
    if let Some(file) = &args.wav {
        lipsync_wav(file, args.json, out)?;
    }
    if let (Some(file), Some(png)) = (&args.wav, &args.plot) {
        let (width, height) = plot::plot_wav(file, png, &LipSettings::default())?;
        tracing::info!(file = %png.display(), width, height, "plot written");
    }
    Ok(())
}

/// `value` rounded to three decimals, as JSON.
fn rounded(value: f32) -> serde_json::Value {
    serde_json::json!((f64::from(value) * 1000.0).round() / 1000.0)
}

/// One frame as a JSON object: `t` (seconds), `volume` (dB), `viseme` (the shape shown) and
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
        "visemes": weights,
    })
}

/// Analyses the WAV file `file` with the built-in vowel profile and writes a line per hop to
/// `out`: JSON ([`lip_frame_json`]) with `json`, else `t`, level and viseme in columns. Returns
/// the number of lines.
pub fn lipsync_wav(file: &Path, json: bool, out: &mut impl Write) -> Result<usize, StartError> {
    let audio = wav::read_mono(file)?;
    tracing::info!(
        file = %file.display(),
        rate = audio.rate,
        seconds = audio.samples.len() as f64 / f64::from(audio.rate.max(1)),
        "analysing"
    );
    let frames = analyze(
        &audio.samples,
        audio.rate,
        Default::default(),
        LipSettings::default(),
    );
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
        writeln!(out, "{line}").map_err(StartError::Output)?;
    }
    Ok(frames.len())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let lines = lipsync_wav(&path, true, &mut out).unwrap();
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
        lipsync_wav(&path, false, &mut plain).unwrap();
        assert!(String::from_utf8(plain).unwrap().contains(" dB  sil"));
    }
}

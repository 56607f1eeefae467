//! Lip sync from audio on synthetic speech: espeak-ng (a test-time tool, not shipped) says the
//! five Japanese vowels with silences of known length between them.

use std::path::Path;
use std::process::Command;

use facewire::lipsync::{analyze, wav, LipFrame, LipSettings, Viseme};

/// The vowels in order, as espeak-ng's Japanese voice reads them.
const VOWELS: [(&str, Viseme); 5] = [
    ("あああ", Viseme::Aa),
    ("いいい", Viseme::Ih),
    ("ううう", Viseme::Ou),
    ("えええ", Viseme::Ee),
    ("おおお", Viseme::Oh),
];

/// Seconds of silence around each vowel.
const GAP: f64 = 0.5;

/// `text` spoken by espeak-ng's Japanese `voice` into `out`; `None` (with a note) when
/// espeak-ng is not installed.
fn speak(text: &str, voice: &str, pitch: u32, out: &Path) -> Option<wav::Mono> {
    let status = Command::new("espeak-ng")
        .args(["-v", voice, "-p", &pitch.to_string(), "-s", "130", "-w"])
        .arg(out)
        .arg(text)
        .status();
    match status {
        Ok(s) if s.success() => Some(wav::read_mono(out).unwrap()),
        _ => {
            eprintln!(
                "note: espeak-ng is missing; skipping a lip-sync test (apt-get install espeak-ng)"
            );
            None
        }
    }
}

/// A vowel and where its sound starts and ends, seconds.
type Span = (Viseme, f64, f64);

/// The five vowels with [`GAP`] seconds of silence before, between and after them, and where
/// each vowel's samples lie (seconds).
fn vowels_with_gaps(voice: &str, pitch: u32) -> Option<(wav::Mono, Vec<Span>)> {
    let dir = tempfile::tempdir().unwrap();
    let mut samples = Vec::new();
    let mut rate = 0;
    let mut spans = Vec::new();
    for (i, (text, viseme)) in VOWELS.iter().enumerate() {
        let vowel = speak(text, voice, pitch, &dir.path().join(format!("{i}.wav")))?;
        rate = vowel.rate;
        // espeak-ng pads its output with silence: keep the sound alone, so the gaps are exact.
        let loud = |s: &&f32| s.abs() > 1e-3;
        let first = vowel.samples.iter().position(|s| loud(&s)).unwrap_or(0);
        let last = vowel.samples.iter().rposition(|s| loud(&s)).unwrap_or(0);
        samples.extend(std::iter::repeat_n(0.0, (GAP * f64::from(rate)) as usize));
        let start = samples.len() as f64 / f64::from(rate);
        samples.extend_from_slice(&vowel.samples[first..=last.max(first)]);
        let end = samples.len() as f64 / f64::from(rate);
        spans.push((*viseme, start, end));
    }
    samples.extend(std::iter::repeat_n(0.0, (GAP * f64::from(rate)) as usize));
    Some((wav::Mono { samples, rate }, spans))
}

/// The viseme shown most often in frames whose window ends between `from` and `to`.
fn dominant(frames: &[LipFrame], from: f64, to: f64) -> (Viseme, f64) {
    let inside: Vec<&LipFrame> = frames.iter().filter(|f| f.t > from && f.t <= to).collect();
    let mut best = (Viseme::Sil, 0.0);
    for v in Viseme::ALL {
        let share =
            inside.iter().filter(|f| f.viseme == v).count() as f64 / inside.len().max(1) as f64;
        if share > best.1 {
            best = (v, share);
        }
    }
    best
}

/// Checks `voice` at `pitch`: each vowel's own viseme shown at least `share` of its middle.
fn check_voice(voice: &str, pitch: u32, min_share: f64) {
    let Some((audio, spans)) = vowels_with_gaps(voice, pitch) else {
        return;
    };
    let frames = analyze(
        &audio.samples,
        audio.rate,
        Default::default(),
        LipSettings::default(),
    );
    for &(viseme, start, end) in &spans {
        // The window trails the sound by 32 ms and a vowel's edges fade: judge its middle.
        let (shown, share) = dominant(&frames, start + 0.08, end - 0.05);
        assert_eq!(
            shown, viseme,
            "{voice} p{pitch}: {viseme:?} read as {shown:?}"
        );
        assert!(
            share >= min_share,
            "{voice} p{pitch}: {viseme:?} only {share:.2} of the time"
        );
        // The mouth of that shape opens well during the vowel.
        let peak = frames
            .iter()
            .filter(|f| f.t > start && f.t <= end)
            .map(|f| f.weights[viseme.index()])
            .fold(0.0f32, f32::max);
        assert!(peak > 0.5, "{voice} p{pitch}: {viseme:?} peaks at {peak}");
    }
    // The silences between read `sil`, once the last sound's window has passed.
    for pair in spans.windows(2) {
        let (silent, share) = dominant(&frames, pair[0].2 + 0.05, pair[1].1);
        assert_eq!(
            silent,
            Viseme::Sil,
            "{voice} p{pitch}: gap read as {silent:?}"
        );
        assert!(share > 0.9, "{share}");
    }
}

#[test]
fn espeak_vowels_are_read_as_their_visemes_and_the_gaps_as_silence() {
    // A pitch and speed the built-in profile was not made from; and a female variant, further
    // from it, still dominant in every vowel.
    check_voice("ja", 40, 0.8);
    check_voice("ja+f2", 60, 0.6);
}

#[test]
fn a_held_vowel_does_not_chatter() {
    let Some((audio, spans)) = vowels_with_gaps("ja", 45) else {
        return;
    };
    let frames = analyze(
        &audio.samples,
        audio.rate,
        Default::default(),
        LipSettings::default(),
    );
    // Each shape is held at least the minimum hold before another vowel replaces it.
    let hold = f64::from(LipSettings::default().hold);
    let mut since = (Viseme::Sil, 0.0);
    for f in &frames {
        if f.viseme != since.0 {
            if since.0 != Viseme::Sil && f.viseme != Viseme::Sil {
                assert!(
                    f.t - since.1 >= hold - 1e-9,
                    "{:?} held only {:.3} s",
                    since.0,
                    f.t - since.1
                );
            }
            since = (f.viseme, f.t);
        }
    }
    assert_eq!(spans.len(), 5);
}

#[test]
fn the_lipsync_command_prints_json_lines_for_a_wav_file() {
    let Some((audio, spans)) = vowels_with_gaps("ja", 40) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vowels.wav");
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: audio.rate,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut w = hound::WavWriter::create(&path, spec).unwrap();
    for s in &audio.samples {
        w.write_sample(*s).unwrap();
    }
    w.finalize().unwrap();
    let output = Command::new(crate::support::facewire_bin())
        .args(["lipsync", "--json", "--wav"])
        .arg(&path)
        .env("FACEWIRE_LOG", "warn")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let lines: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (_, start, end) = spans[0];
    let middle = (start + end) / 2.0;
    let at = |t: f64| {
        lines
            .iter()
            .find(|l| l["t"].as_f64().unwrap() >= t)
            .unwrap()
    };
    assert_eq!(at(middle)["viseme"], "aa", "{}", at(middle));
    assert!(at(middle)["visemes"]["aa"].as_f64().unwrap() > 0.5);
    assert_eq!(at(start / 2.0)["viseme"], "sil");
}

#[test]
fn the_lipsync_command_plots_the_timeline_into_a_png() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("buzz.wav");
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 48_000,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut w = hound::WavWriter::create(&path, spec).unwrap();
    // A second of silence, then two of a buzz with a voice's harmonics.
    for i in 0..3 * 48_000u32 {
        let t = i as f32 / 48_000.0;
        let s: f32 = if i < 48_000 {
            0.0
        } else {
            (1..=20)
                .map(|k| (2.0 * std::f32::consts::PI * 140.0 * k as f32 * t).sin() / k as f32)
                .sum::<f32>()
                * 0.25
        };
        w.write_sample((s.clamp(-1.0, 1.0) * 32767.0) as i16)
            .unwrap();
    }
    w.finalize().unwrap();
    let png = dir.path().join("timeline.png");
    let output = Command::new(crate::support::facewire_bin())
        .args(["lipsync", "--wav"])
        .arg(&path)
        .arg("--plot")
        .arg(&png)
        .env("FACEWIRE_LOG", "warn")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(!output.stdout.is_empty(), "the lines are still printed");
    let image = facewire::image::RgbaImage::load_png(&png).unwrap();
    let layout = facewire::lipsync::plot::Layout::new(image.width);
    assert_eq!(
        image.width, 800,
        "three seconds at 240 pixels a second, at least 800"
    );
    assert_eq!(image.height, layout.height);
}

#[test]
fn the_mouth_opens_within_60_ms_of_each_espeak_vowel() {
    use facewire::lipsync::latency::{onset_latency, openness};
    let Some((audio, spans)) = vowels_with_gaps("ja", 40) else {
        return;
    };
    let frames = analyze(
        &audio.samples,
        audio.rate,
        Default::default(),
        LipSettings::default(),
    );
    for &(viseme, start, end) in &spans {
        // Each vowel's own frames: from the silence before it to its end.
        let own: Vec<LipFrame> = frames
            .iter()
            .filter(|f| f.t > start - GAP / 2.0 && f.t <= end)
            .copied()
            .collect();
        let open = onset_latency(&own, start, openness).unwrap();
        assert!(
            open.as_secs_f64() < 0.060,
            "{viseme:?}: open after {open:?}"
        );
        // A vowel whose onset reads as another shows its own once the hold lets it: 100 ms
        // more at most.
        let shape = onset_latency(&own, start, |f| f.weights[viseme.index()]).unwrap();
        let hold = f64::from(LipSettings::default().hold);
        assert!(
            shape.as_secs_f64() < 0.060 + hold,
            "{viseme:?}: its shape after {shape:?}"
        );
    }
}

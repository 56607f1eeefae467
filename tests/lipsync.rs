//! Lip sync from audio on synthetic speech: espeak-ng (a test-time tool, not shipped) says the
//! five Japanese vowels with silences of known length between them. `lipsync --live` reads ALSA's
//! null device (silence) and its file plugin (a raw file as capture input), no sound card needed.

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

/// [`vowels_with_gaps`] and every hop of its analysis with the built-in profile and settings.
fn analysed_vowels(voice: &str, pitch: u32) -> Option<(Vec<Span>, Vec<LipFrame>)> {
    let (audio, spans) = vowels_with_gaps(voice, pitch)?;
    let frames = analyze(
        &audio.samples,
        audio.rate,
        Default::default(),
        LipSettings::default(),
    );
    Some((spans, frames))
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
    let Some((spans, frames)) = analysed_vowels(voice, pitch) else {
        return;
    };
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
    let Some((spans, frames)) = analysed_vowels("ja", 45) else {
        return;
    };
    // Each shape is held at least the minimum hold before another vowel replaces it, but for
    // the first 50 ms of a sound, whose attack may read as another vowel.
    let hold = f64::from(LipSettings::default().hold);
    let mut since = (Viseme::Sil, 0.0);
    let mut onset = 0.0;
    for f in &frames {
        if since.0 == Viseme::Sil && f.viseme != Viseme::Sil {
            onset = f.t;
        }
        if f.viseme != since.0 {
            let settling = f.t - onset < 0.05 + 1e-9;
            if since.0 != Viseme::Sil && f.viseme != Viseme::Sil && !settling {
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

/// A WAV file of `audio` at `path`, 32-bit float.
fn write_wav(path: &Path, audio: &wav::Mono) {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: audio.rate,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut w = hound::WavWriter::create(path, spec).unwrap();
    for s in &audio.samples {
        w.write_sample(*s).unwrap();
    }
    w.finalize().unwrap();
}

/// The pixels of `image` dark enough to be the inside of an open mouth.
fn mouth_inside(image: &facewire::image::RgbaImage) -> usize {
    let mut n = 0;
    for y in 0..image.height {
        for x in 0..image.width {
            let [r, g, b, _] = image.pixel(x, y);
            if r < 140 && g < 70 && b < 70 && r > g {
                n += 1;
            }
        }
    }
    n
}

#[test]
fn a_headless_run_with_a_wav_opens_the_mouth_during_a_and_closes_it_in_silence() {
    let dir = tempfile::tempdir().unwrap();
    let Some(vowel) = speak("あああああああ", "ja", 40, &dir.path().join("a.wav")) else {
        return;
    };
    // A second of silence, "aaa" for about a second, a second of silence.
    let rate = vowel.rate;
    let second = vec![0.0; rate as usize];
    let mut samples = second.clone();
    samples.extend(&vowel.samples);
    samples.extend(&second);
    let speaking = vowel.samples.len() as f64 / f64::from(rate);
    assert!(speaking > 0.8, "espeak-ng's vowel lasts {speaking} s");
    let file = dir.path().join("silence-a-silence.wav");
    write_wav(&file, &wav::Mono { samples, rate });
    // Without idle life, which would blink and breathe in the silences (no phone sends).
    let config = crate::pipeline::live_config(dir.path());
    let text = std::fs::read_to_string(&config).unwrap();
    // `enabled = true` appears once, in [idle].
    let calm = text.replace("\nenabled = true\n", "\nenabled = false\n");
    assert_ne!(
        calm, text,
        "config/facewire.toml no longer turns idle life on"
    );
    std::fs::write(&config, calm).unwrap();
    let port = crate::pipeline::free_udp_port();
    let run = |seconds: f64, name: &str| {
        let out = dir.path().join(name);
        let output = Command::new(crate::support::facewire_bin())
            .arg("--config")
            .arg(&config)
            .args(["run", "--headless", "--size", "240x240", "--morph", "cpu"])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--exit-after", &seconds.to_string(), "--lipsync-wav"])
            .arg(&file)
            .arg("--out")
            .arg(&out)
            .env("FACEWIRE_LOG", "warn")
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        facewire::image::RgbaImage::load_png(&out).unwrap()
    };
    let silent = run(0.5, "silent.png");
    // Well inside the vowel, whatever the start-up takes.
    let open = run(1.0 + speaking / 2.0, "open.png");
    let (closed, opened) = (mouth_inside(&silent), mouth_inside(&open));
    assert!(
        opened > closed + 40,
        "the mouth opens during \"a\": {closed} dark pixels in silence, {opened} in the vowel"
    );
    // In silence the face is the neutral one.
    let neutral = dir.path().join("neutral.png");
    let output = Command::new(crate::support::facewire_bin())
        .arg("--config")
        .arg(&config)
        .args(["snapshot", "--size", "240x240", "--morph", "cpu", "--out"])
        .arg(&neutral)
        .env("FACEWIRE_LOG", "warn")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let neutral = facewire::image::RgbaImage::load_png(&neutral).unwrap();
    let changed = crate::support::changed_pixels(&silent, &neutral, 8);
    assert!(
        changed.len() < 20,
        "{} pixels differ from the neutral face in silence",
        changed.len()
    );
}

/// Runs `facewire lipsync` with `flags` (and `env`), or `None` with a note when this machine
/// has no audio library to open inputs with.
fn lipsync_run(flags: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Option<std::process::Output> {
    let output = Command::new(crate::support::facewire_bin())
        .arg("lipsync")
        .args(flags)
        .envs(env.iter().copied())
        .env("FACEWIRE_LOG", "warn")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() && stderr.contains("cannot load libasound.so.2") {
        assert!(stderr.contains("libasound2 package"), "{stderr}");
        eprintln!("note: no libasound.so.2 here; skipping a live lip-sync test ({flags:?})");
        return None;
    }
    Some(output)
}

/// The JSON lines of `output`.
fn json_lines(output: &std::process::Output) -> Vec<serde_json::Value> {
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_live_command_reads_silence_from_the_null_device() {
    let flags = ["--live", "--device", "null", "--seconds", "1", "--json"];
    let Some(output) = lipsync_run(&flags, &[]) else {
        return;
    };
    let lines = json_lines(&output);
    // A hop every 16 ms, the first window ending at 32 ms, up to one second.
    assert_eq!(lines.len(), 61, "{output:?}");
    for line in &lines {
        assert_eq!(line["viseme"], "sil", "{line}");
        assert_eq!(line["volume"], -120.0, "{line}");
    }
    assert_eq!(lines[60]["t"], 0.992);
}

/// An ALSA configuration (for `ALSA_CONFIG_PATH`) in `dir` whose capture device
/// `facewire_test` plays `samples` (mono float at 48 kHz, what facewire asks for) through ALSA's
/// file plugin over the null device.
fn alsa_microphone(dir: &Path, samples: &[f32]) -> std::path::PathBuf {
    let raw = dir.join("capture.raw");
    let bytes: Vec<u8> = samples.iter().flat_map(|s| s.to_ne_bytes()).collect();
    std::fs::write(&raw, bytes).unwrap();
    let conf = dir.join("asound.conf");
    std::fs::write(
        &conf,
        format!(
            "pcm.facewire_test {{\n  type file\n  slave.pcm {{ type null }}\n  file \"/dev/null\"\n  \
             infile \"{}\"\n  format \"raw\"\n}}\n",
            raw.display()
        ),
    )
    .unwrap();
    conf
}

#[test]
fn the_live_command_analyses_what_alsa_captures() {
    // ALSA's file plugin plays a raw file as its capture input; a configuration of our own
    // (ALSA_CONFIG_PATH) names it. facewire asks for mono float at 48 kHz, which the null
    // device beneath takes: 0.3 s of silence, 0.4 s of a loud buzz, then silence.
    let dir = tempfile::tempdir().unwrap();
    let rate = 48_000.0;
    let samples = (0..(0.7 * rate) as usize).map(|i| {
        let t = i as f32 / rate;
        if t < 0.3 {
            0.0
        } else {
            0.5 * (2.0 * std::f32::consts::PI * 220.0 * t).sin()
        }
    });
    let samples: Vec<f32> = samples.collect();
    let conf = alsa_microphone(dir.path(), &samples);
    let flags = [
        "--live",
        "--device",
        "facewire_test",
        "--seconds",
        "1",
        "--json",
    ];
    let Some(output) = lipsync_run(&flags, &[("ALSA_CONFIG_PATH", conf.as_os_str())]) else {
        return;
    };
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 61, "{output:?}");
    let at = |t: f64| {
        lines
            .iter()
            .find(|l| l["t"].as_f64().unwrap() >= t)
            .unwrap()
    };
    let volume = |t: f64| at(t)["volume"].as_f64().unwrap();
    assert_eq!(volume(0.25), -120.0, "{}", at(0.25));
    for t in [0.4, 0.5, 0.6] {
        assert!(volume(t) > -20.0, "{}", at(t));
        assert_ne!(
            at(t)["viseme"],
            "sil",
            "the buzz opens the mouth: {}",
            at(t)
        );
    }
    assert!(volume(0.85) < -60.0, "{}", at(0.85));
}

#[test]
fn the_device_list_and_an_unknown_device() {
    let Some(list) = lipsync_run(&["--list-devices"], &[]) else {
        return;
    };
    assert!(list.status.success(), "{list:?}");
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(text.lines().any(|l| l.starts_with("  null ")), "{text}");
    assert!(text.contains("--device NAME"), "{text}");

    let flags = [
        "--live",
        "--device",
        "facewire-no-such-input",
        "--seconds",
        "1",
    ];
    let wrong = lipsync_run(&flags, &[]).unwrap();
    assert!(!wrong.status.success());
    assert!(wrong.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        stderr.contains("no audio input matches \"facewire-no-such-input\"; the inputs are:"),
        "{stderr}"
    );
    assert!(stderr.contains("\n  null "), "{stderr}");
}

#[test]
fn calibrate_vowels_from_a_take_saves_them_into_the_performers_profile() {
    let Some((audio, spans)) = vowels_with_gaps("ja", 55) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let take = dir.path().join("take.wav");
    write_wav(&take, &audio);
    let profiles = dir.path().join("profiles");
    let calibrate = || {
        Command::new(crate::support::facewire_bin())
            .args(["calibrate", "--performer", "bob", "--yes", "--vowels-from"])
            .arg(&take)
            .arg("--profiles")
            .arg(&profiles)
            .env("FACEWIRE_LOG", "warn")
            .output()
            .unwrap()
    };
    let output = calibrate();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    // Each vowel found where it was said, and read back as itself.
    for (viseme, start, _) in &spans {
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(viseme.name()))
            .unwrap_or_else(|| panic!("{viseme:?} in {stdout}"));
        let found: f64 = line
            .split_whitespace()
            .nth(1)
            .unwrap()
            .split('-')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!((found - start).abs() < 0.1, "{line}: said at {start}");
        assert!(!line.ends_with(" 0%"), "{line}");
    }
    let saved = facewire::calibrate::Profile::load_named(&profiles, "bob").unwrap();
    let voice = saved.vowels.expect("the vowels are saved");
    assert!(voice.floor_db < voice.ceiling_db);
    // A take with a vowel missing is refused with what to do, and nothing changes.
    let mut short = audio.clone();
    short
        .samples
        .truncate((spans[3].1 * f64::from(audio.rate)) as usize);
    write_wav(&take, &short);
    let output = calibrate();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("heard 3 of the five vowels"), "{stderr}");
    let again = facewire::calibrate::Profile::load_named(&profiles, "bob").unwrap();
    assert_eq!(again.vowels, Some(voice));
}

#[test]
fn calibrate_vowels_records_the_take_from_the_microphone() {
    // The microphone is ALSA's file plugin playing an espeak-ng take (see
    // the_live_command_analyses_what_alsa_captures): mono float at 48 kHz.
    let Some((audio, _)) = vowels_with_gaps("ja", 45) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut at_48k = Vec::new();
    facewire::lipsync::resample::Resampler::new(audio.rate, 48_000)
        .push(&audio.samples, &mut at_48k);
    let conf = alsa_microphone(dir.path(), &at_48k);
    let config = dir.path().join("facewire.toml");
    std::fs::write(&config, "[lipsync]\ndevice = \"facewire_test\"\n").unwrap();
    let profiles = dir.path().join("profiles");
    let output = Command::new(crate::support::facewire_bin())
        .arg("--config")
        .arg(&config)
        .args(["calibrate", "--performer", "carol", "--yes", "--vowels"])
        .arg("--profiles")
        .arg(&profiles)
        .env("ALSA_CONFIG_PATH", &conf)
        .env("FACEWIRE_LOG", "warn")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if stderr.contains("cannot load libasound.so.2") {
        eprintln!("note: no libasound.so.2 here; skipping the microphone vowel take");
        return;
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("Say  aaaaa") && stdout.contains("Say  ooooo"),
        "{stdout}"
    );
    assert!(stdout.contains("saved"), "{stdout}");
    let saved = facewire::calibrate::Profile::load_named(&profiles, "carol").unwrap();
    assert!(saved.vowels.is_some());
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
    let layout = facewire::lipsync::plot::Layout::new(image.width, false);
    assert_eq!(
        image.width, 800,
        "three seconds at 240 pixels a second, at least 800"
    );
    assert_eq!(image.height, layout.height);
}

#[test]
fn the_mouth_opens_within_40_ms_of_each_espeak_vowel() {
    use facewire::lipsync::latency::{onset_latency, openness};
    let Some((spans, frames)) = analysed_vowels("ja", 40) else {
        return;
    };
    for &(viseme, start, end) in &spans {
        // Each vowel's own frames: from the silence before it to its end.
        let own: Vec<LipFrame> = frames
            .iter()
            .filter(|f| f.t > start - GAP / 2.0 && f.t <= end)
            .copied()
            .collect();
        let open = onset_latency(&own, start, openness).unwrap();
        assert!(
            open.as_secs_f64() <= 0.040,
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

/// Labelled English speech made by `benches/speech.py` (espeak-ng's voices en-us, en and
/// en-us+f3 at two speeds, with every phone's start and end) in a new folder, and its takes;
/// `None` (with a note) without Python 3 or libespeak-ng.
fn labelled_speech() -> Option<(tempfile::TempDir, Vec<facewire::lipsync::labels::Labelled>)> {
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/speech.py");
    let output = match Command::new("python3")
        .arg(&script)
        .arg(dir.path())
        .output()
    {
        Ok(output) => output,
        Err(e) => {
            eprintln!("note: python3 is not available ({e}); skipping the labelled-speech test");
            return None;
        }
    };
    if output.status.code() == Some(2) {
        eprintln!(
            "note: {}; skipping the labelled-speech test",
            String::from_utf8_lossy(&output.stderr).trim()
        );
        return None;
    }
    assert!(output.status.success(), "{output:?}");
    let mut wavs: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "wav"))
        .collect();
    wavs.sort();
    assert!(wavs.len() >= 30, "{} takes", wavs.len());
    let takes = wavs
        .iter()
        .map(|p| facewire::lipsync::labels::Labelled::load(p).unwrap())
        .collect();
    Some((dir, takes))
}

#[test]
fn the_lips_close_on_p_b_and_m_and_rest_in_silence_at_two_levels() {
    use facewire::lipsync::labels::{stream, PhoneClass};
    let Some((_dir, takes)) = labelled_speech() else {
        return;
    };
    let profile = facewire::lipsync::profile::Profile::default();
    for (level, gain) in [("the recorded level", 1.0), ("20 dB quieter", 0.1)] {
        let readings = stream(&takes, gain, &profile, LipSettings::default());
        let class = |c: PhoneClass| readings[c.index()];
        let open = class(PhoneClass::OpenVowel).mean_open();
        let closed = class(PhoneClass::Bilabial).mean_open();
        let silence = class(PhoneClass::Silence).share(Viseme::Sil);
        assert!(
            open >= 1.5 * closed,
            "{level}: open vowels open {open:.3}, p b m {closed:.3}: ratio {:.2} under 1.5",
            open / closed.max(1e-9)
        );
        assert!(silence >= 0.9, "{level}: silence reads sil {silence:.3}");
        // The automatic level opens a quiet voice as far as a loud one.
        assert!(open >= 0.35, "{level}: open vowels only open {open:.3}");
        // Vowels keep their identity: open vowels read aa, close ones ih or ee.
        let open_vowels = class(PhoneClass::OpenVowel);
        assert_eq!(open_vowels.mostly(), Viseme::Aa, "{level}");
        let close = class(PhoneClass::CloseVowel);
        let front = close.share(Viseme::Ih) + close.share(Viseme::Ee);
        assert!(
            front >= 0.6,
            "{level}: close vowels read ih or ee {front:.2}"
        );
    }
}

#[test]
fn every_json_line_carries_the_jaw_opening_and_the_plot_shows_the_closures() {
    use facewire::lipsync::labels::PhoneClass;
    use facewire::lipsync::plot::{Layout, CLOSED};
    let Some((dir, takes)) = labelled_speech() else {
        return;
    };
    // "Bob bought a big map for Pam.", its phones beside it.
    let wav = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "wav"))
        .min()
        .unwrap();
    let take = facewire::lipsync::labels::Labelled::load(&wav).unwrap();
    assert!(!takes.is_empty());
    let png = dir.path().join("timeline.png");
    let output = Command::new(crate::support::facewire_bin())
        .args(["lipsync", "--json", "--wav"])
        .arg(&wav)
        .arg("--plot")
        .arg(&png)
        .env("FACEWIRE_LOG", "warn")
        .output()
        .unwrap();
    let lines = json_lines(&output);
    assert!(lines.len() > 50, "{} lines", lines.len());
    let mut bilabial_closed = 0;
    for line in &lines {
        let open = line["open"]
            .as_f64()
            .unwrap_or_else(|| panic!("no open in {line}"));
        assert!((0.0..=1.0).contains(&open), "{line}");
        let t = line["t"].as_f64().unwrap();
        let phone = take.phone_at(facewire::lipsync::labels::window_centre(t));
        if phone.is_some_and(|p| PhoneClass::of(p) == PhoneClass::Bilabial)
            && line["closure"].as_f64().unwrap() > 0.5
        {
            bilabial_closed += 1;
        }
    }
    assert!(
        bilabial_closed >= 3,
        "{bilabial_closed} closed hops in p, b and m"
    );
    // The timeline has the phones row (labels beside the WAV), and its closure strip is lit
    // inside p, b and m.
    let image = facewire::image::RgbaImage::load_png(&png).unwrap();
    let layout = Layout::new(image.width, true);
    assert_eq!(image.height, layout.height);
    let duration = take.audio.samples.len() as f64 / f64::from(take.audio.rate);
    let lit_in_closures = take
        .phones
        .iter()
        .filter(|p| PhoneClass::of(&p.2) == PhoneClass::Bilabial)
        .filter(|p| {
            let (a, b) = (
                layout.column(p.0, duration),
                layout.column(p.1 + 0.03, duration),
            );
            (a..=b).any(|x| image.pixel(x, layout.closed.bottom() - 1) == CLOSED)
        })
        .count();
    assert!(lit_in_closures >= 3, "{lit_in_closures} closures lit");
}

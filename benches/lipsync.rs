//! Lip sync from audio: the CPU one second of 48 kHz speech-like audio costs (resampling,
//! analysis, classification, smoothing), and how quickly the mouth answers a vowel, in audio
//! time (printed before the timings: it depends on the samples, not on the machine).
//!
//! Run with `cargo bench --bench lipsync`; figures are recorded in BENCHMARKS.md. The latency of
//! espeak-ng's vowels is printed too where espeak-ng is installed.

#![allow(missing_docs)]

use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use facewire::lipsync::latency::{buzz, onset_latency, openness};
use facewire::lipsync::{analyze, wav, LipFrame, LipSettings, LipSync, Viseme};

const RATE: u32 = 48_000;

/// One second of speech-like audio at 48 kHz: vowel-like buzzes of different pitch and
/// formants, 150 to 220 ms each, with short silences between them.
fn speech_like() -> Vec<f32> {
    let segments: [(f64, f32, [f32; 2]); 4] = [
        (0.18, 120.0, [750.0, 1200.0]),
        (0.22, 150.0, [300.0, 2300.0]),
        (0.15, 135.0, [450.0, 800.0]),
        (0.20, 170.0, [500.0, 1900.0]),
    ];
    let mut out = Vec::with_capacity(RATE as usize);
    for (seconds, f0, formants) in segments {
        out.extend(std::iter::repeat_n(0.0, (0.06 * f64::from(RATE)) as usize));
        out.extend(buzz(RATE, seconds, f0, formants, 0.4));
    }
    out.resize(RATE as usize, 0.0);
    out
}

/// Milliseconds, rounded to one decimal.
fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 10_000.0).round() / 10.0
}

/// The slowest of the mouth's opening and of `viseme`'s own weight, over onsets at several
/// phases of the 16 ms hop, for `sound` after half a second of silence.
fn slowest(sound: &[f32], rate: u32, viseme: Viseme) -> Option<(Duration, Duration)> {
    let mut worst = (Duration::ZERO, Duration::ZERO);
    for phase in [0.0, 0.004, 0.008, 0.012] {
        let onset = 0.5 + phase;
        let mut samples = vec![0.0; (onset * f64::from(rate)).round() as usize];
        let onset = samples.len() as f64 / f64::from(rate);
        samples.extend_from_slice(sound);
        let frames = analyze(&samples, rate, Default::default(), LipSettings::default());
        let open = onset_latency(&frames, onset, openness)?;
        let own = onset_latency(&frames, onset, |f: &LipFrame| f.weights[viseme.index()])?;
        worst = (worst.0.max(open), worst.1.max(own));
    }
    Some(worst)
}

/// espeak-ng's Japanese voice holding `text`, its leading and trailing silence cut.
fn espeak(text: &str, out: &Path) -> Option<wav::Mono> {
    let status = Command::new("espeak-ng")
        .args(["-v", "ja", "-p", "40", "-s", "130", "-w"])
        .arg(out)
        .arg(text)
        .status()
        .ok()?;
    if !status.success() {
        return None;
    }
    let mut audio = wav::read_mono(out).ok()?;
    let first = audio.samples.iter().position(|s| s.abs() > 1e-3)?;
    let last = audio.samples.iter().rposition(|s| s.abs() > 1e-3)?;
    audio.samples = audio.samples[first..=last].to_vec();
    Some(audio)
}

/// Prints the onset latency in audio time: of the test buzz, and of espeak-ng's five vowels
/// where espeak-ng is installed.
fn report_latency() {
    let a = buzz(RATE, 0.4, 130.0, [750.0, 1200.0], 0.5);
    match slowest(&a, RATE, Viseme::Aa) {
        Some((open, own)) => println!(
            "onset latency, audio time, worst of 4 hop phases: buzz \"a\" (48 kHz): mouth open {} ms, aa {} ms",
            ms(open),
            ms(own)
        ),
        None => println!("onset latency: the buzz never opened the mouth"),
    }
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    for (i, (text, viseme)) in [
        ("あああ", Viseme::Aa),
        ("いいい", Viseme::Ih),
        ("ううう", Viseme::Ou),
        ("えええ", Viseme::Ee),
        ("おおお", Viseme::Oh),
    ]
    .into_iter()
    .enumerate()
    {
        let Some(audio) = espeak(text, &dir.path().join(format!("{i}.wav"))) else {
            println!("note: espeak-ng is missing; no latency of its vowels");
            return;
        };
        match slowest(&audio.samples, audio.rate, viseme) {
            Some((open, own)) => println!(
                "onset latency, audio time: espeak-ng {} ({} Hz): mouth open {} ms, {} {} ms",
                viseme.name(),
                audio.rate,
                ms(open),
                viseme.name(),
                ms(own)
            ),
            None => println!(
                "onset latency: espeak-ng {} never opened the mouth",
                viseme.name()
            ),
        }
    }
}

fn bench_lipsync(c: &mut Criterion) {
    report_latency();
    let audio = speech_like();
    let mut group = c.benchmark_group("lipsync_one_second_48khz");
    group.bench_function("at_once", |b| {
        let mut sync = LipSync::new(RATE, Default::default(), LipSettings::default());
        b.iter(|| {
            sync.push(black_box(&audio), |f| {
                black_box(f);
            })
        });
    });
    // As a microphone delivers it: 10 ms blocks.
    group.bench_function("in_10ms_blocks", |b| {
        let mut sync = LipSync::new(RATE, Default::default(), LipSettings::default());
        b.iter(|| {
            for block in audio.chunks(RATE as usize / 100) {
                sync.push(black_box(block), |f| {
                    black_box(f);
                });
            }
        });
    });
    group.finish();
}

criterion_group!(benches, bench_lipsync);
criterion_main!(benches);

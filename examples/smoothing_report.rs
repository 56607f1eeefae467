//! Measures jitter and lag of raw, EMA and One Euro smoothing on a real Live Link Face take and
//! draws raw against filtered for jawOpen and eyeBlinkLeft.
//!
//! ```sh
//! cargo run --release --example smoothing_report -- --out docs/images/smoothing.png [--sweep]
//! ```
//!
//! The take is `protocols/livelinkface_csv_MySlate_3_Jason_Millers_iPhone.csv` under
//! `$FACEWIRE_FIXTURES` (default `../shared/fixtures`). Definitions of the figures are in
//! BENCHMARKS.md ("Smoothing") and next to the functions below.

use std::path::PathBuf;
use std::process::ExitCode;

use facewire::arkit::Channel;
use facewire::calibrate::filter::Filter;
use facewire::calibrate::settings::{DEFAULT_BROWS, DEFAULT_EYES, DEFAULT_JAW, DEFAULT_WEIGHTS};
use facewire::calibrate::FilterSpec;
use facewire::image::RgbaImage;
use facewire::record::llf_csv;
use font8x8::UnicodeFonts;

/// The take's name under the fixtures folder.
const TAKE: &str = "protocols/livelinkface_csv_MySlate_3_Jason_Millers_iPhone.csv";

/// The EMA the comparison uses: the time constant of the earlier default.
const EMA: FilterSpec = FilterSpec::ema(0.03);

/// Standard deviation of the zero-phase Gaussian reference, in frames.
const REFERENCE_SIGMA: f64 = 2.0;

/// Below this reference speed (units per second) a sample is "still".
const STILL_SPEED: f64 = 0.2;

/// Above this raw speed (units per second) a sample is "fast".
const FAST_SPEED: f64 = 2.0;

/// Frames added on each side of a fast sample, so that the start and end of a motion count.
const FAST_DILATE: usize = 3;

/// The figures of one filter on one channel.
#[derive(Debug, Clone, Copy)]
struct Figures {
    /// RMS of filtered − reference over still samples.
    jitter: f64,
    /// Shift (ms) that best aligns the filtered signal with the raw one over fast samples.
    lag_ms: f64,
    /// Time (ms) to reach 50% of a 0 → 1 step sampled at 60 Hz.
    step_ms: f64,
    /// RMS out / RMS in for white noise (σ = 0.01) on a still value at 60 Hz.
    noise: f64,
}

fn main() -> ExitCode {
    let mut out = PathBuf::from("docs/images/smoothing.png");
    let mut sweep = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--out" => match args.next() {
                Some(p) => out = PathBuf::from(p),
                None => return fail("--out needs a path"),
            },
            "--sweep" => sweep = true,
            other => {
                return fail(&format!(
                    "unknown argument `{other}` (use --out PATH, --sweep)"
                ))
            }
        }
    }
    let dir = std::env::var_os("FACEWIRE_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures"));
    let path = dir.join(TAKE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => return fail(&format!("{}: {e} (set FACEWIRE_FIXTURES)", path.display())),
    };
    let rows = match llf_csv::parse(&text) {
        Ok(r) => r,
        Err(e) => return fail(&format!("{}: {e}", path.display())),
    };
    let times: Vec<f64> = rows.iter().map(|r| r.time).collect();
    let series = |c: Channel| -> Vec<f64> {
        rows.iter()
            .map(|r| f64::from(r.weights[c.index()]))
            .collect()
    };
    println!(
        "take: {} rows, {:.2} s",
        rows.len(),
        times.last().copied().unwrap_or(0.0)
    );

    let channels = [
        (Channel::JawOpen, DEFAULT_JAW, "jaw"),
        (Channel::EyeBlinkLeft, DEFAULT_EYES, "eyes"),
        (Channel::BrowInnerUp, DEFAULT_BROWS, "brows"),
        (Channel::MouthSmileLeft, DEFAULT_WEIGHTS, "other"),
    ];
    println!();
    println!("| channel (group) | filter | jitter (RMS) | lag on fast motion | 50% of a step | white-noise gain |");
    println!("|---|---|---|---|---|---|");
    for (c, euro, group) in channels {
        let raw = series(c);
        for (name, spec) in [
            ("raw", FilterSpec::NONE),
            ("EMA τ = 30 ms", EMA),
            ("One Euro (default)", euro),
        ] {
            let f = measure(&times, &raw, spec);
            println!(
                "| {c} ({group}) | {name}{} | {:.5} | {:.1} ms | {:.1} ms | {:.2} |",
                describe(spec),
                f.jitter,
                f.lag_ms,
                f.step_ms,
                f.noise
            );
        }
    }

    if sweep {
        println!();
        println!("One Euro sweep (d_cutoff = 1 Hz): jitter / lag ms / noise gain");
        for (c, _, _) in channels {
            let raw = series(c);
            println!("{c}:");
            for min_cutoff in [0.5f32, 1.0, 1.5, 2.0, 3.0, 5.0] {
                let mut line = format!("  min_cutoff {min_cutoff:>3}:");
                for beta in [0.0f32, 0.5, 1.0, 2.0, 4.0, 8.0] {
                    let f = measure(&times, &raw, FilterSpec::one_euro(min_cutoff, beta, 1.0));
                    line += &format!("  b{beta}: {:.4}/{:.0}/{:.2}", f.jitter, f.lag_ms, f.noise);
                }
                println!("{line}");
            }
            for tau in [0.01f32, 0.02, 0.03, 0.05, 0.08] {
                let f = measure(&times, &raw, FilterSpec::ema(tau));
                println!(
                    "  EMA tau {tau}: {:.4}/{:.0}/{:.2}",
                    f.jitter, f.lag_ms, f.noise
                );
            }
        }
    }

    let image = plot(
        &times,
        &[
            (Channel::JawOpen, series(Channel::JawOpen), DEFAULT_JAW),
            (
                Channel::EyeBlinkLeft,
                series(Channel::EyeBlinkLeft),
                DEFAULT_EYES,
            ),
        ],
    );
    if let Some(parent) = out.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    if let Err(e) = image.save_png(&out) {
        return fail(&format!("{}: {e}", out.display()));
    }
    println!();
    println!("plot written to {}", out.display());
    ExitCode::SUCCESS
}

fn fail(message: &str) -> ExitCode {
    eprintln!("smoothing_report: {message}");
    ExitCode::FAILURE
}

fn describe(spec: FilterSpec) -> String {
    match spec.filter {
        facewire::calibrate::FilterKind::OneEuro => format!(
            ": min_cutoff {}, beta {}, d_cutoff {}",
            spec.min_cutoff, spec.beta, spec.d_cutoff
        ),
        _ => String::new(),
    }
}

/// Runs `spec` over `x` sampled at `t` (seconds).
fn run(t: &[f64], x: &[f64], spec: FilterSpec) -> Vec<f64> {
    let mut f = Filter::new(spec);
    let mut prev = t.first().copied().unwrap_or(0.0);
    t.iter()
        .zip(x)
        .map(|(&ti, &xi)| {
            let y = f.step(xi as f32, (ti - prev) as f32);
            prev = ti;
            f64::from(y)
        })
        .collect()
}

/// Zero-phase Gaussian smoothing (σ in samples), the reference a perfect, lag-free smoother
/// would approach.
fn gaussian(x: &[f64], sigma: f64) -> Vec<f64> {
    let radius = (3.0 * sigma).ceil() as isize;
    let n = x.len() as isize;
    (0..n)
        .map(|i| {
            let (mut sum, mut weight) = (0.0, 0.0);
            for k in -radius..=radius {
                let j = i + k;
                if (0..n).contains(&j) {
                    let w = (-(k * k) as f64 / (2.0 * sigma * sigma)).exp();
                    sum += w * x[j as usize];
                    weight += w;
                }
            }
            sum / weight
        })
        .collect()
}

/// Central-difference speed, units per second.
fn speed(t: &[f64], x: &[f64]) -> Vec<f64> {
    let n = x.len();
    (0..n)
        .map(|i| {
            let (a, b) = (i.saturating_sub(1), (i + 1).min(n - 1));
            if b > a {
                (x[b] - x[a]) / (t[b] - t[a])
            } else {
                0.0
            }
        })
        .collect()
}

/// `x` at time `at`, linearly interpolated (clamped at the ends).
fn sample(t: &[f64], x: &[f64], at: f64) -> f64 {
    match t.iter().position(|&ti| ti >= at) {
        None => *x.last().unwrap_or(&0.0),
        Some(0) => x[0],
        Some(i) => {
            let s = (at - t[i - 1]) / (t[i] - t[i - 1]);
            x[i - 1] + s * (x[i] - x[i - 1])
        }
    }
}

fn measure(t: &[f64], raw: &[f64], spec: FilterSpec) -> Figures {
    let y = run(t, raw, spec);
    let reference = gaussian(raw, REFERENCE_SIGMA);
    let ref_speed = speed(t, &reference);
    // Jitter: RMS of filtered − reference where the reference is still.
    let still: Vec<usize> = (0..raw.len())
        .filter(|&i| ref_speed[i].abs() < STILL_SPEED)
        .collect();
    let jitter = (still
        .iter()
        .map(|&i| (y[i] - reference[i]).powi(2))
        .sum::<f64>()
        / still.len().max(1) as f64)
        .sqrt();
    // Lag: the shift s (0..200 ms, 0.25 ms steps) minimising Σ (y(t) − raw(t − s))² over fast
    // samples; for equal energies this is the shift maximising their cross-correlation.
    let raw_speed = speed(t, raw);
    let mut fast = vec![false; raw.len()];
    for (i, v) in raw_speed.iter().enumerate() {
        if v.abs() > FAST_SPEED {
            let lo = i.saturating_sub(FAST_DILATE);
            let hi = (i + FAST_DILATE).min(raw.len() - 1);
            fast[lo..=hi].iter_mut().for_each(|f| *f = true);
        }
    }
    let mut best = (f64::INFINITY, 0.0);
    for step in 0..=800 {
        let s = step as f64 * 0.25e-3;
        let err: f64 = (0..raw.len())
            .filter(|&i| fast[i])
            .map(|i| (y[i] - sample(t, raw, t[i] - s)).powi(2))
            .sum();
        if err < best.0 {
            best = (err, s);
        }
    }
    // 50% of a step, at 60 Hz.
    let dt = 1.0 / 60.0;
    let st: Vec<f64> = (0..120).map(|i| i as f64 * dt).collect();
    let sx: Vec<f64> = (0..120).map(|i| if i < 10 { 0.0 } else { 1.0 }).collect();
    let sy = run(&st, &sx, spec);
    let step_ms = (10..120).find(|&i| sy[i] >= 0.5).map_or(f64::NAN, |i| {
        let before = if i == 10 { 0.0 } else { sy[i - 1] };
        let frac = if i == 10 {
            0.0
        } else {
            (0.5 - before) / (sy[i] - before)
        };
        ((i - 10) as f64 - 1.0 + frac).max(0.0) * dt * 1000.0
    });
    // White-noise gain: deterministic Gaussian noise (σ = 0.01) on 0.3 for 10 s at 60 Hz.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut uniform = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let nt: Vec<f64> = (0..600).map(|i| i as f64 * dt).collect();
    let nx: Vec<f64> = (0..600)
        .map(|_| {
            let (u1, u2) = (uniform().max(1e-12), uniform());
            0.3 + 0.01 * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        })
        .collect();
    let ny = run(&nt, &nx, spec);
    let rms = |v: &[f64]| (v[60..].iter().map(|x| (x - 0.3).powi(2)).sum::<f64>() / 540.0).sqrt();
    Figures {
        jitter,
        lag_ms: best.1 * 1000.0,
        step_ms,
        noise: rms(&ny) / rms(&nx),
    }
}

// ---- drawing ----

const WIDTH: u32 = 1200;
const PANEL_HEIGHT: u32 = 360;
const MARGIN_LEFT: u32 = 70;
const MARGIN_RIGHT: u32 = 20;
const MARGIN_TOP: u32 = 40;
const MARGIN_BOTTOM: u32 = 50;
const BACKGROUND: [u8; 4] = [255, 255, 255, 255];
const AXIS: [u8; 4] = [40, 40, 40, 255];
const GRID: [u8; 4] = [225, 225, 225, 255];
const RAW: [u8; 4] = [150, 150, 150, 255];
const EMA_COLOR: [u8; 4] = [31, 119, 180, 255];
const EURO_COLOR: [u8; 4] = [230, 110, 0, 255];

fn plot(t: &[f64], panels: &[(Channel, Vec<f64>, FilterSpec)]) -> RgbaImage {
    let height = PANEL_HEIGHT * panels.len() as u32;
    let mut img = RgbaImage::filled(WIDTH, height, BACKGROUND);
    let t_max = t.last().copied().unwrap_or(1.0).max(1e-3).ceil();
    for (p, (channel, raw, euro)) in panels.iter().enumerate() {
        let top = p as u32 * PANEL_HEIGHT + MARGIN_TOP;
        let bottom = (p as u32 + 1) * PANEL_HEIGHT - MARGIN_BOTTOM;
        let (left, right) = (MARGIN_LEFT, WIDTH - MARGIN_RIGHT);
        let px = |time: f64| left as f64 + (time / t_max) * (right - left) as f64;
        let py = |v: f64| bottom as f64 - v.clamp(-0.05, 1.05) * (bottom - top) as f64;
        // Grid and y labels.
        for k in 0..=4 {
            let v = k as f64 * 0.25;
            let y = py(v);
            line(&mut img, left as f64, y, right as f64, y, GRID, 1);
            text(&mut img, 8, y as u32 - 4, &format!("{v:.2}"), 1, AXIS);
        }
        // X ticks every second.
        for s in 0..=(t_max as u32) {
            let x = px(s as f64);
            line(&mut img, x, bottom as f64, x, bottom as f64 + 6.0, AXIS, 1);
            text(
                &mut img,
                x as u32 - 4,
                bottom + 10,
                &format!("{s}"),
                1,
                AXIS,
            );
        }
        text(
            &mut img,
            (left + right) / 2 - 40,
            bottom + 26,
            "time (s)",
            1,
            AXIS,
        );
        // Axes.
        line(
            &mut img,
            left as f64,
            top as f64,
            left as f64,
            bottom as f64,
            AXIS,
            1,
        );
        line(
            &mut img,
            left as f64,
            bottom as f64,
            right as f64,
            bottom as f64,
            AXIS,
            1,
        );
        text(&mut img, left, top - 28, &channel.to_string(), 2, AXIS);
        // Curves.
        let ema = run(t, raw, EMA);
        let one_euro = run(t, raw, *euro);
        for (series, colour, thickness) in [
            (raw, RAW, 3),
            (&ema, EMA_COLOR, 1),
            (&one_euro, EURO_COLOR, 1),
        ] {
            for i in 1..t.len() {
                line(
                    &mut img,
                    px(t[i - 1]),
                    py(series[i - 1]),
                    px(t[i]),
                    py(series[i]),
                    colour,
                    thickness,
                );
            }
        }
        // Legend.
        let lx = right - 330;
        let entries = [
            ("raw (Live Link Face)".to_string(), RAW),
            ("EMA tau 30 ms".to_string(), EMA_COLOR),
            (
                format!(
                    "One Euro {}/{}/{}",
                    euro.min_cutoff, euro.beta, euro.d_cutoff
                ),
                EURO_COLOR,
            ),
        ];
        for (k, (label, colour)) in entries.iter().enumerate() {
            let y = top + 8 + k as u32 * 18;
            line(
                &mut img,
                lx as f64,
                y as f64 + 4.0,
                lx as f64 + 30.0,
                y as f64 + 4.0,
                *colour,
                3,
            );
            text(&mut img, lx + 38, y, label, 1, AXIS);
        }
    }
    img
}

fn put(img: &mut RgbaImage, x: i64, y: i64, rgba: [u8; 4]) {
    if x < 0 || y < 0 || x >= img.width as i64 || y >= img.height as i64 {
        return;
    }
    let i = (y as usize * img.width as usize + x as usize) * 4;
    img.data[i..i + 4].copy_from_slice(&rgba);
}

/// A line from (x0, y0) to (x1, y1), `thickness` pixels wide, one dot per pixel step.
fn line(img: &mut RgbaImage, x0: f64, y0: f64, x1: f64, y1: f64, rgba: [u8; 4], thickness: i64) {
    let steps = (x1 - x0).abs().max((y1 - y0).abs()).ceil().max(1.0) as usize;
    let half = thickness / 2;
    for s in 0..=steps {
        let f = s as f64 / steps as f64;
        let x = (x0 + f * (x1 - x0)).round() as i64;
        let y = (y0 + f * (y1 - y0)).round() as i64;
        for dx in -half..thickness - half {
            for dy in -half..thickness - half {
                put(img, x + dx, y + dy, rgba);
            }
        }
    }
}

/// `s` in the 8x8 bitmap font, each font pixel a `scale`-pixel square.
fn text(img: &mut RgbaImage, x: u32, y: u32, s: &str, scale: u32, rgba: [u8; 4]) {
    for (n, c) in s.chars().enumerate() {
        let glyph = font8x8::BASIC_FONTS.get(c).unwrap_or([0; 8]);
        for (row, bits) in glyph.iter().enumerate() {
            for col in 0..8 {
                if bits & (1 << col) != 0 {
                    for dx in 0..scale {
                        for dy in 0..scale {
                            put(
                                img,
                                (x + (n as u32 * 8 + col) * scale + dx) as i64,
                                (y + row as u32 * scale + dy) as i64,
                                rgba,
                            );
                        }
                    }
                }
            }
        }
    }
}

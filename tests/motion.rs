//! Motion at the display rate against real captures: Live Link Face takes at 60 Hz, thinned to
//! what a 30 Hz phone sends, drawn at 144 Hz, compared with the 60 Hz truth.
//!
//! The captures are third-party fixtures (`protocols/`, see `shared/fixtures/PROVENANCE.md`):
//! think-biq/LLV's `dao` take (head and eyes; BSD-2-Clause) and JMTechArt's Live Link Face CSV
//! export (eyes and weights, head rotation off; MIT).
//!
//! `cargo test --test tests motion -- --ignored --nocapture` prints the tables in BENCHMARKS.md
//! ("Head motion at the display rate").

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use facewire::app::motion::{Motion, MotionMode, MotionSettings};
use facewire::arkit::{FaceFrame, COUNT};
use facewire::ingest::livelink;
use facewire::record::{self, Recording};
use glam::{Quat, Vec3};

use crate::support;

/// The display rate of the measurements, Hz.
const DISPLAY_HZ: f64 = 144.0;

/// Draws this early in a take are not measured: the period estimate is still settling.
const WARM_UP: f64 = 0.25;

/// A 60 Hz take: every frame with its time on the sender's clock, seconds from the first.
struct Take {
    /// Its name in the tables.
    name: &'static str,
    /// The frames, in order.
    frames: Vec<FaceFrame>,
    /// Each frame's time, seconds after the first frame.
    times: Vec<f64>,
}

/// The `protocols/` fixtures folder, or `None` (with a note) when the fixtures are absent.
fn captures() -> Option<std::path::PathBuf> {
    support::fixtures("motion captures").map(|dir| dir.join("protocols"))
}

/// The datagrams of an LLV "tape": gzip( u8 version = 6, u32 BE count, count × (u32 BE size,
/// datagram) ).
fn tape(path: &Path) -> Vec<Vec<u8>> {
    crate::support::llv_tape(&std::fs::read(path).unwrap())
}

/// The LLV `dao` take: 180 frames at 60 Hz (3.1 s, one 8-frame hole), head and eyes moving.
fn dao() -> Option<Take> {
    let path = captures()?.join("livelinkface_llv_dao.gesichter");
    let from: SocketAddr = "192.168.1.40:50000".parse().unwrap();
    let base = record::base_instant();
    let mut frames = Vec::new();
    let mut times = Vec::new();
    let mut first = None;
    for datagram in tape(&path) {
        let mut frame = livelink::decode(&datagram, from, base).unwrap().frame;
        let sender = frame.sender_time.expect("a timecode");
        let t = sender - *first.get_or_insert(sender);
        frame.received = base + Duration::from_secs_f64(t);
        frames.push(frame);
        times.push(t);
    }
    Some(Take {
        name: "LLV dao",
        frames,
        times,
    })
}

/// The Live Link Face CSV take: 328 rows at 60 Hz (5.5 s), eyes and weights (no head).
fn csv() -> Option<Take> {
    let path = captures()?.join("livelinkface_csv_MySlate_3_Jason_Millers_iPhone.csv");
    let recording = Recording::load(&path).unwrap();
    let frames: Vec<FaceFrame> = record::frames(&recording).collect();
    let first = frames[0].received;
    let times = frames
        .iter()
        .map(|f| f.received.duration_since(first).as_secs_f64())
        .collect();
    Some(Take {
        name: "LLF CSV",
        frames,
        times,
    })
}

/// A rotation of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// The head.
    Head,
    /// The performer's left eye.
    LeftEye,
}

impl Part {
    fn of(self, frame: &FaceFrame) -> Option<Quat> {
        match self {
            Part::Head => frame.head,
            Part::LeftEye => frame.left_eye,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Part::Head => "head",
            Part::LeftEye => "left eye",
        }
    }
}

/// The angle between two rotations in degrees (accurate for small angles too).
fn angle_deg(a: Quat, b: Quat) -> f64 {
    let d = a.conjugate() * b;
    let v = Vec3::new(d.x, d.y, d.z).length();
    (2.0 * f64::from(v).atan2(f64::from(d.w.abs()))).to_degrees()
}

impl Take {
    /// The truth at `t` seconds: the two 60 Hz frames around it blended (rotations along the
    /// shortest arc, weights linearly); `None` outside the take or inside a hole in it.
    fn truth(&self, t: f64) -> Option<(Option<Quat>, Option<Quat>, [f32; COUNT])> {
        let after = self.times.partition_point(|&x| x <= t);
        if after == 0 || after >= self.times.len() {
            return None;
        }
        let (i, j) = (after - 1, after);
        let span = self.times[j] - self.times[i];
        if span > 1.5 / 60.0 {
            return None;
        }
        let f = ((t - self.times[i]) / span) as f32;
        let (a, b) = (&self.frames[i], &self.frames[j]);
        let rotation = |p: Part| match (p.of(a), p.of(b)) {
            (Some(qa), Some(qb)) => Some(qa.slerp(qb, f)),
            _ => None,
        };
        let mut weights = [0.0; COUNT];
        for (k, w) in weights.iter_mut().enumerate() {
            *w = (a.weights[k] + (b.weights[k] - a.weights[k]) * f).clamp(0.0, 1.0);
        }
        Some((rotation(Part::Head), rotation(Part::LeftEye), weights))
    }
}

/// What a phone sends and how it arrives.
#[derive(Debug, Clone, Copy)]
struct Input {
    /// The sender's rate: 60 sends every frame of the take, 30 every other one.
    hz: u32,
    /// Network jitter: each frame arrives up to this many milliseconds late (uniform,
    /// deterministic).
    jitter_ms: f64,
}

/// One draw.
struct Draw {
    /// Its time, seconds after the take's first frame.
    t: f64,
    /// The frame drawn.
    frame: FaceFrame,
    /// The latency `Motion` said it added, seconds.
    latency: f64,
}

/// A deterministic uniform number in `[0, 1)` for index `k` (splitmix64).
fn uniform(k: u64) -> f64 {
    let mut z = k.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Plays `take` as `input` through `Motion` and draws at 144 Hz the way the stage does: before
/// each draw it takes the newest frame that has arrived (the hand-off keeps only the newest).
fn play(take: &Take, input: Input, mode: MotionMode) -> Vec<Draw> {
    let base = record::base_instant() + Duration::from_secs(10);
    let step = (60 / input.hz.clamp(1, 60)) as usize;
    // Frame numbers, not indices: a hole in the take keeps the 30 Hz phase.
    let sent: Vec<(f64, FaceFrame)> = take
        .frames
        .iter()
        .zip(&take.times)
        .filter(|(_, &t)| ((t * 60.0).round() as usize).is_multiple_of(step))
        .enumerate()
        .map(|(k, (frame, &t))| {
            let arrival = t + input.jitter_ms / 1000.0 * uniform(k as u64);
            let mut frame = *frame;
            frame.received = base + Duration::from_secs_f64(arrival);
            (arrival, frame)
        })
        .collect();
    let mut motion = Motion::new(MotionSettings {
        mode,
        ..MotionSettings::default()
    });
    let end = take.times.last().copied().unwrap_or(0.0) + 0.1;
    let mut next = 0;
    let mut draws = Vec::new();
    let mut n = 0u32;
    loop {
        let t = f64::from(n) / DISPLAY_HZ;
        n += 1;
        if t > end {
            break;
        }
        let mut newest = None;
        while next < sent.len() && sent[next].0 <= t {
            newest = Some(sent[next].1);
            next += 1;
        }
        if let Some(frame) = newest {
            motion.push(&frame);
        }
        if let Some(frame) = motion.sample(base + Duration::from_secs_f64(t)) {
            draws.push(Draw {
                t,
                frame,
                latency: motion.latency().as_secs_f64(),
            });
        }
    }
    draws
}

/// Errors of a run against the truth.
#[derive(Debug, Clone, Copy)]
struct Score {
    /// RMS angle against the truth shifted by the latency the method states, degrees.
    rms: f64,
    /// The largest such angle, degrees.
    max: f64,
    /// RMS angle against the unshifted truth (what the viewer sees against the phone), degrees.
    rms_now: f64,
    /// The constant shift of the truth that fits the draws best, milliseconds.
    best_lag_ms: f64,
    /// RMS weight error (all 52 channels) against the shifted truth.
    weights_rms: f64,
    /// The largest rotation between two consecutive draws, degrees.
    max_draw_step: f64,
    /// The mean latency stated, milliseconds.
    latency_ms: f64,
}

/// RMS and max angle of `draws` against the truth at `t - shift(draw)`; weights too.
fn errors(
    take: &Take,
    part: Part,
    draws: &[Draw],
    shift: impl Fn(&Draw) -> f64,
) -> (f64, f64, f64) {
    let (mut sum, mut max, mut n) = (0.0, 0.0f64, 0usize);
    let (mut wsum, mut wn) = (0.0, 0usize);
    for draw in draws.iter().filter(|d| d.t >= WARM_UP) {
        let Some((head, left_eye, weights)) = take.truth(draw.t - shift(draw)) else {
            continue;
        };
        let truth = match part {
            Part::Head => head,
            Part::LeftEye => left_eye,
        };
        if let (Some(want), Some(got)) = (truth, part.of(&draw.frame)) {
            let e = angle_deg(want, got);
            sum += e * e;
            max = max.max(e);
            n += 1;
        }
        for (k, w) in weights.iter().enumerate() {
            if draw
                .frame
                .present
                .contains(facewire::arkit::Channel::ALL[k])
            {
                let e = f64::from(draw.frame.weights[k] - w);
                wsum += e * e;
                wn += 1;
            }
        }
    }
    assert!(n > 100, "{}: {n} draws measured", take.name);
    (
        (sum / n as f64).sqrt(),
        max,
        (wsum / wn.max(1) as f64).sqrt(),
    )
}

fn score(take: &Take, part: Part, draws: &[Draw]) -> Score {
    let (rms, max, weights_rms) = errors(take, part, draws, |d| d.latency);
    let (rms_now, _, _) = errors(take, part, draws, |_| 0.0);
    // 0 to 80 ms in 2 ms steps, then 0.5 ms steps around the best (the error is smooth in the
    // shift).
    let rms_at = |ms: f64| errors(take, part, draws, |_| ms / 1000.0).0;
    let best = |candidates: &mut dyn Iterator<Item = f64>| {
        candidates
            .map(|ms| (ms, rms_at(ms)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map_or(0.0, |(ms, _)| ms)
    };
    let coarse = best(&mut (0..=40).map(|k| f64::from(k) * 2.0));
    let best_lag_ms = best(&mut (-4..=4).map(|k| (coarse + f64::from(k) * 0.5).max(0.0)));
    let max_draw_step = draws
        .windows(2)
        .filter(|w| w[0].t >= WARM_UP)
        .filter_map(|w| Some(angle_deg(part.of(&w[0].frame)?, part.of(&w[1].frame)?)))
        .fold(0.0, f64::max);
    let measured: Vec<f64> = draws
        .iter()
        .filter(|d| d.t >= WARM_UP)
        .map(|d| d.latency)
        .collect();
    Score {
        rms,
        max,
        rms_now,
        best_lag_ms,
        weights_rms,
        max_draw_step,
        latency_ms: measured.iter().sum::<f64>() / measured.len().max(1) as f64 * 1000.0,
    }
}

const MODES: [MotionMode; 3] = [
    MotionMode::Off,
    MotionMode::Interpolate,
    MotionMode::Extrapolate,
];

#[test]
fn interpolation_follows_a_real_head_better_than_stepping() {
    let Some(take) = dao() else { return };
    for input in [
        Input {
            hz: 30,
            jitter_ms: 0.0,
        },
        Input {
            hz: 30,
            jitter_ms: 8.0,
        },
        Input {
            hz: 60,
            jitter_ms: 0.0,
        },
    ] {
        for part in [Part::Head, Part::LeftEye] {
            let [off, interpolate, extrapolate] =
                MODES.map(|mode| score(&take, part, &play(&take, input, mode)));
            let what = format!("{} at {input:?}", part.name());
            assert!(
                interpolate.rms < off.rms / 2.0,
                "{what}: interpolate {interpolate:?} against stepping {off:?}"
            );
            assert!(
                interpolate.rms < extrapolate.rms,
                "{what}: interpolate {interpolate:?} against extrapolate {extrapolate:?}"
            );
            assert!(interpolate.weights_rms < off.weights_rms, "{what}: weights");
            // The stated latency is the true one: the best-fitting shift is within 3 ms of it
            // plus the network's mean delay (half the jitter).
            let network_ms = input.jitter_ms / 2.0;
            assert!(
                (interpolate.best_lag_ms - interpolate.latency_ms - network_ms).abs() < 3.0,
                "{what}: {interpolate:?}"
            );
            let period = 1000.0 / f64::from(input.hz);
            assert!(
                (interpolate.latency_ms - period).abs() < 2.0,
                "{what}: latency {} ms, one period is {period} ms",
                interpolate.latency_ms
            );
            assert_eq!(off.latency_ms, 0.0);
            assert_eq!(extrapolate.latency_ms, 0.0);
        }
    }
}

#[test]
fn interpolation_draws_a_real_take_without_steps() {
    let Some(take) = dao() else { return };
    let input = Input {
        hz: 30,
        jitter_ms: 0.0,
    };
    let off = play(&take, input, MotionMode::Off);
    let smooth = play(&take, input, MotionMode::Interpolate);
    // Stepping holds a pose for four or five draws: most draws do not move at all.
    let still = |draws: &[Draw]| {
        draws
            .windows(2)
            .filter(|w| w[0].t >= WARM_UP)
            .filter(|w| w[0].frame.head == w[1].frame.head)
            .count()
    };
    let moving_draws = smooth.iter().filter(|d| d.t >= WARM_UP).count();
    assert!(still(&off) > moving_draws / 2, "stepping holds poses");
    assert!(
        still(&smooth) < moving_draws / 20,
        "interpolation moves every draw"
    );
    let (s_off, s_smooth) = (
        score(&take, Part::Head, &off),
        score(&take, Part::Head, &smooth),
    );
    assert!(
        s_smooth.max_draw_step < s_off.max_draw_step,
        "largest step per draw: interpolate {s_smooth:?}, stepping {s_off:?}"
    );
}

#[test]
fn interpolation_follows_real_eyes_and_weights_better_than_stepping() {
    let Some(take) = csv() else { return };
    let input = Input {
        hz: 30,
        jitter_ms: 0.0,
    };
    let off = score(&take, Part::LeftEye, &play(&take, input, MotionMode::Off));
    let smooth = score(
        &take,
        Part::LeftEye,
        &play(&take, input, MotionMode::Interpolate),
    );
    assert!(smooth.rms < off.rms / 2.0, "{smooth:?} against {off:?}");
    assert!(
        smooth.weights_rms < off.weights_rms / 2.0,
        "{smooth:?} against {off:?}"
    );
}

/// The largest rotation of the truth itself between two consecutive draws, degrees.
fn truth_draw_step(take: &Take, part: Part) -> f64 {
    let rotation = |t: f64| {
        let (head, left_eye, _) = take.truth(t)?;
        match part {
            Part::Head => head,
            Part::LeftEye => left_eye,
        }
    };
    let end = take.times.last().copied().unwrap_or(0.0);
    let draws = (WARM_UP * DISPLAY_HZ) as u32..(end * DISPLAY_HZ) as u32;
    draws
        .filter_map(|n| {
            let (t0, t1) = (f64::from(n) / DISPLAY_HZ, f64::from(n + 1) / DISPLAY_HZ);
            Some(angle_deg(rotation(t0)?, rotation(t1)?))
        })
        .fold(0.0, f64::max)
}

/// Prints the tables of BENCHMARKS.md, "Head motion at the display rate".
#[test]
#[ignore = "prints the benchmark tables; run with --ignored --nocapture"]
fn motion_report() {
    let takes: Vec<(Take, Part)> = [
        dao().map(|t| (t, Part::Head)),
        dao().map(|t| (t, Part::LeftEye)),
        csv().map(|t| (t, Part::LeftEye)),
    ]
    .into_iter()
    .flatten()
    .collect();
    if takes.is_empty() {
        return;
    }
    for jitter_ms in [0.0, 8.0] {
        if jitter_ms > 0.0 {
            println!("\nEach frame arriving 0–{jitter_ms} ms late (uniform):\n");
        }
        println!("| take, rotation | input | method | added latency | RMS error | max error | RMS error, unshifted | best-fit lag | largest step per draw | weights RMS |");
        println!("|---|---|---|---|---|---|---|---|---|---|");
        for (take, part) in &takes {
            if jitter_ms == 0.0 {
                println!(
                    "| {}, {} | the 60 Hz take itself | truth | | | | | | {:.2}° | |",
                    take.name,
                    part.name(),
                    truth_draw_step(take, *part)
                );
            }
            for hz in [30, 60] {
                let input = Input { hz, jitter_ms };
                for mode in MODES {
                    let s = score(take, *part, &play(take, input, mode));
                    println!(
                        "| {}, {} | {hz} Hz | {mode} | {:.1} ms | {:.2}° | {:.2}° | {:.2}° | {:.1} ms | {:.2}° | {:.4} |",
                        take.name,
                        part.name(),
                        s.latency_ms,
                        s.rms,
                        s.max,
                        s.rms_now,
                        s.best_lag_ms,
                        s.max_draw_step,
                        s.weights_rms
                    );
                }
            }
        }
    }
}

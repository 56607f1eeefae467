//! calibrate integration tests: smoothing, the tracking-loss sequence and the Live Link Face CSV
//! reader, driven by synthetic instants (deterministic, no sleeping).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use facewire::arkit::{Channel, FaceFrame, Protocol, TrackingFlag};
use facewire::calibrate::{
    at, Calibrator, Conditioner, FilterSpec, Flag, GroupConfig, Groups, LossReason, Phase, Routine,
    SmoothingConfig, TrackingConfig, TrackingState, STEPS,
};
use facewire::config::Config;
use facewire::record::llf_csv;
use glam::Quat;

fn from() -> SocketAddr {
    "127.0.0.1:9".parse().unwrap()
}

fn frame(t: Instant, jaw: f32) -> FaceFrame {
    let mut f = FaceFrame::empty(Protocol::Vmc, from(), t);
    f.set(Channel::JawOpen, jaw);
    f.set(Channel::EyeBlinkLeft, 1.0 - jaw);
    f.head = Some(Quat::from_rotation_y(jaw));
    f
}

/// A conditioner that has been tracking for a second of 60 Hz frames with a moving jaw, so it
/// is in `Tracking` at `t0 + 1 s`. Returns the time of the last frame.
fn tracking(c: &mut Conditioner, t0: Instant) -> Instant {
    let mut last = t0;
    for i in 0..=60 {
        last = at(t0, i as f64 / 60.0);
        let f = frame(last, 0.5 + 0.3 * (i as f32 * 0.2).sin());
        c.on_frame(&f, last);
    }
    assert_eq!(c.state(), TrackingState::Tracking);
    last
}

/// Ticks every 10 ms from `start` for `seconds`, collecting state changes and frames.
fn tick_for(
    c: &mut Conditioner,
    start: Instant,
    seconds: f64,
) -> (Vec<(Instant, TrackingState)>, Vec<FaceFrame>) {
    let mut states = Vec::new();
    let mut frames = Vec::new();
    let steps = (seconds / 0.01).round() as usize;
    for i in 1..=steps {
        let now = at(start, i as f64 * 0.01);
        let out = c.on_tick(now);
        states.extend(out.states().iter().map(|s| (now, *s)));
        frames.extend(out.frame);
    }
    (states, frames)
}

fn names(states: &[(Instant, TrackingState)]) -> Vec<TrackingState> {
    states.iter().map(|(_, s)| *s).collect()
}

#[test]
fn silence_goes_stale_holds_fades_and_rests_at_neutral() {
    let t0 = Instant::now();
    let cfg = TrackingConfig::default();
    let mut c = Conditioner::new(SmoothingConfig::default(), cfg, t0);
    let last = tracking(&mut c, t0);
    let held = c.calibrator().state().unwrap().weights[Channel::JawOpen.index()];
    let (states, frames) = tick_for(&mut c, last, 2.0);
    use TrackingState::*;
    assert_eq!(names(&states), [Stale, Hold, Fade, Neutral]);
    // Silence is noticed by the first tick at or after stale_after.
    let stale = states[0].0.duration_since(last).as_secs_f32();
    assert!(
        stale >= cfg.stale_after && stale < cfg.stale_after + 0.011,
        "{stale}"
    );
    // The face is frozen (stale_after + hold) before it starts to move: under half a second.
    let fade = states[2].0.duration_since(last).as_secs_f32();
    assert!(fade < 0.5, "{fade}");
    // Frames keep coming while the pose changes, and the fade is monotone towards 0.
    let jaws: Vec<f32> = frames
        .iter()
        .map(|f| f.get(Channel::JawOpen).unwrap())
        .collect();
    assert!(jaws.len() >= 30, "{}", jaws.len());
    assert!((jaws[0] - held).abs() < 1e-6, "{} vs {held}", jaws[0]);
    assert!(jaws.windows(2).all(|w| w[1] <= w[0] + 1e-6), "{jaws:?}");
    let last_frame = frames.last().unwrap();
    assert_eq!(last_frame.get(Channel::JawOpen), Some(0.0));
    assert_eq!(last_frame.get(Channel::EyeBlinkLeft), Some(0.0));
    assert!(last_frame.head.unwrap().angle_between(Quat::IDENTITY) < 1e-4);
    assert_eq!(last_frame.tracking, TrackingFlag::Lost);
    // Once neutral, nothing more is sent.
    let (more, frames) = tick_for(&mut c, at(last, 2.0), 0.5);
    assert!(more.is_empty() && frames.is_empty());
}

#[test]
fn frozen_identical_frames_count_as_lost() {
    let t0 = Instant::now();
    let cfg = TrackingConfig::default();
    let mut c = Conditioner::new(SmoothingConfig::default(), cfg, t0);
    let last = tracking(&mut c, t0);
    let repeat = frame(last, 0.42);
    let mut seen = Vec::new();
    let mut reason = None;
    for i in 1..=60 {
        let now = at(last, i as f64 / 60.0);
        let mut f = repeat;
        f.received = now;
        let out = c.on_frame(&f, now);
        reason = reason.or(out.reason);
        seen.extend(out.states().iter().map(|s| (now, *s)));
        // Ticks between frames must not mistake the repeats for silence.
        let out = c.on_tick(now + Duration::from_millis(8));
        seen.extend(out.states().iter().map(|s| (now, *s)));
    }
    assert_eq!(reason, Some(LossReason::Frozen));
    assert_eq!(seen[0].1, TrackingState::Stale);
    let after = seen[0].0.duration_since(last).as_secs_f32();
    assert!(
        after >= cfg.frozen_after - 0.02 && after < cfg.frozen_after + 0.02,
        "{after}"
    );
    // A frame that changes brings the face back.
    let now = at(last, 1.1);
    let out = c.on_frame(&frame(now, 0.1), now);
    assert_eq!(out.states(), [TrackingState::Reacquire]);
}

#[test]
fn sender_lost_flag_counts_at_once() {
    let t0 = Instant::now();
    let mut c = Conditioner::new(SmoothingConfig::default(), TrackingConfig::default(), t0);
    let last = tracking(&mut c, t0);
    let now = at(last, 1.0 / 60.0);
    let mut f = frame(now, 0.9);
    f.tracking = TrackingFlag::Lost;
    let out = c.on_frame(&f, now);
    assert_eq!(out.states(), [TrackingState::Stale, TrackingState::Hold]);
    assert_eq!(out.reason, Some(LossReason::SenderLost));
    // The held frame is the last live pose, not the lost frame's values.
    let held = out.frame.unwrap().get(Channel::JawOpen).unwrap();
    assert!((held - 0.9).abs() > 0.05, "{held}");
    // More lost frames do not reacquire even though they change.
    let later = at(now, 0.05);
    let mut g = frame(later, 0.3);
    g.tracking = TrackingFlag::Lost;
    assert!(c.on_frame(&g, later).states().is_empty());
    assert_eq!(c.state(), TrackingState::Hold);
}

#[test]
fn reacquire_eases_back_without_a_pop() {
    let t0 = Instant::now();
    let cfg = TrackingConfig::default();
    let mut c = Conditioner::new(SmoothingConfig::off(), cfg, t0);
    tracking(&mut c, t0);
    let (_, _) = tick_for(&mut c, at(t0, 1.0), 2.0);
    assert_eq!(c.state(), TrackingState::Neutral);
    // The face returns at full jaw (from neutral 0), live (never bit-identical twice in a
    // row): frames at 60 Hz with ticks between.
    let back = at(t0, 4.0);
    let mut outputs: Vec<(Instant, f32)> = Vec::new();
    let mut states = Vec::new();
    for i in 0..60 {
        let now = at(back, i as f64 / 60.0);
        let live = if i % 2 == 0 { 1.0 } else { 0.999 };
        let out = c.on_frame(&frame(now, live), now);
        states.extend_from_slice(out.states());
        outputs.extend(out.frame.map(|f| (now, f.get(Channel::JawOpen).unwrap())));
        let tick = now + Duration::from_millis(8);
        let out = c.on_tick(tick);
        states.extend_from_slice(out.states());
        outputs.extend(out.frame.map(|f| (tick, f.get(Channel::JawOpen).unwrap())));
    }
    assert_eq!(states, [TrackingState::Reacquire, TrackingState::Tracking]);
    assert_eq!(
        outputs[0].1, 0.0,
        "the first reacquired frame shows the neutral pose"
    );
    // smoothstep's steepest slope is 1.5, so over dt the eased value moves by at most
    // 1.5 · dt / ease_in times the distance (1.0 here).
    for w in outputs.windows(2) {
        let dt = w[1].0.duration_since(w[0].0).as_secs_f32();
        // Plus the live signal's own change of 0.001.
        let bound = 1.5 * dt / cfg.ease_in + 0.001 + 1e-4;
        assert!(
            (w[1].1 - w[0].1).abs() <= bound,
            "jump {} over {dt} s exceeds {bound}",
            w[1].1 - w[0].1
        );
    }
    assert!(outputs.last().unwrap().1 >= 0.999);
}

#[test]
fn no_nan_or_out_of_range_value_leaves_the_stage() {
    let t0 = Instant::now();
    let mut c = Conditioner::new(SmoothingConfig::default(), TrackingConfig::default(), t0);
    let garbage = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1e30,
        -1e30,
        f32::MAX,
        f32::MIN_POSITIVE,
        0.5,
    ];
    let sender_times = [
        Some(f64::NAN),
        Some(-1e300),
        Some(1e300),
        Some(0.0),
        None,
        Some(f64::INFINITY),
        Some(5.0),
        Some(4.0),
    ];
    let quats = [
        Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0),
        Quat::from_xyzw(0.0, 0.0, 0.0, 0.0),
        Quat::from_xyzw(1e30, 1e30, 0.0, 1.0),
        Quat::from_xyzw(f32::INFINITY, 0.0, 0.0, 0.0),
        Quat::from_rotation_x(0.4),
    ];
    let mut now = t0;
    let mut produced = 0;
    for i in 0..400 {
        // Irregular receive times, including repeats of the same instant.
        now += Duration::from_micros([0, 1, 16_000, 700_000, 3][i % 5]);
        let mut f = FaceFrame::empty(Protocol::LiveLinkFace, from(), now);
        for (k, ch) in Channel::ALL.iter().enumerate() {
            f.set(*ch, garbage[(i + k) % garbage.len()]);
        }
        f.head = Some(quats[i % quats.len()]);
        f.left_eye = Some(quats[(i + 1) % quats.len()]);
        f.sender_time = sender_times[i % sender_times.len()];
        if i % 7 == 0 {
            f.tracking = TrackingFlag::Lost;
        }
        let outs = [
            c.on_frame(&f, now),
            c.on_tick(now + Duration::from_millis(5)),
        ];
        for out in outs.iter().filter_map(|o| o.frame) {
            produced += 1;
            for w in out.weights {
                assert!(w.is_finite() && (0.0..=1.0).contains(&w), "weight {w}");
            }
            for q in [out.head, out.left_eye, out.right_eye]
                .into_iter()
                .flatten()
            {
                assert!(q.is_finite() && (q.length() - 1.0).abs() < 1e-4, "{q}");
            }
        }
    }
    assert!(produced > 100, "{produced}");
}

#[test]
fn sender_timestamps_time_the_filters() {
    // Twelve frames arrive in one burst (the same receive instant) but were taken 1/60 s apart:
    // with the sender's clock the EMA advances 0.2 s; with receive time it would not move.
    let t0 = Instant::now();
    let run = |clock_ok: bool| {
        let mut cal = Calibrator::new(SmoothingConfig::ema(0.1, 0.1));
        let mut f = frame(t0, 0.0);
        f.sender_time = Some(100.0);
        cal.apply(&f);
        let mut last = 0.0;
        for i in 1..=12 {
            let mut f = frame(t0 + Duration::from_micros(i), 1.0);
            f.sender_time = Some(if clock_ok {
                100.0 + i as f64 / 60.0
            } else {
                // Backwards: not trusted.
                100.0 - i as f64
            });
            last = cal.apply(&f).get(Channel::JawOpen).unwrap();
        }
        (last, cal.clock_fallbacks())
    };
    let (with_sender, fallbacks) = run(true);
    let expected = 1.0 - (-0.2f32 / 0.1).exp();
    assert!((with_sender - expected).abs() < 1e-3, "{with_sender}");
    assert_eq!(fallbacks, 0);
    let (with_receive, fallbacks) = run(false);
    assert!(with_receive < 0.01, "{with_receive}");
    assert_eq!(fallbacks, 12);
}

#[test]
fn an_absurd_sender_clock_falls_back_to_receive_time() {
    let t0 = Instant::now();
    let mut cal = Calibrator::new(SmoothingConfig::ema(0.1, 0.1));
    let mut f = frame(t0, 0.0);
    f.sender_time = Some(0.0);
    cal.apply(&f);
    // The sender claims an hour passed; the receive clock says 0.2 s.
    let mut g = frame(at(t0, 0.2), 1.0);
    g.sender_time = Some(3600.0);
    let out = cal.apply(&g).get(Channel::JawOpen).unwrap();
    let expected = 1.0 - (-0.2f32 / 0.1).exp();
    assert!((out - expected).abs() < 1e-3, "{out}");
    assert_eq!(cal.clock_fallbacks(), 1);
}

#[test]
fn normalisation_applies_to_opted_in_groups_only() {
    let mut smoothing = SmoothingConfig::off();
    let mut groups = Groups::empty();
    let mut visemes = GroupConfig::new(
        &[Channel::MouthFunnel, Channel::MouthPucker],
        FilterSpec::NONE,
    );
    visemes.normalize = true;
    groups.insert("visemes", visemes);
    smoothing.groups = groups;
    let mut cal = Calibrator::new(smoothing);
    let mut f = FaceFrame::empty(Protocol::Vmc, from(), Instant::now());
    f.set(Channel::MouthFunnel, 0.9);
    f.set(Channel::MouthPucker, 0.6);
    f.set(Channel::JawOpen, 0.9);
    f.set(Channel::MouthClose, 0.6);
    let out = cal.apply(&f);
    assert!((out.get(Channel::MouthFunnel).unwrap() - 0.6).abs() < 1e-6);
    assert!((out.get(Channel::MouthPucker).unwrap() - 0.4).abs() < 1e-6);
    // Independent controls outside the group keep their values.
    assert_eq!(out.get(Channel::JawOpen), Some(0.9));
    assert_eq!(out.get(Channel::MouthClose), Some(0.6));
    // Below a sum of 1 nothing changes.
    f.set(Channel::MouthFunnel, 0.3);
    f.set(Channel::MouthPucker, 0.2);
    assert_eq!(cal.apply(&f).get(Channel::MouthPucker), Some(0.2));
}

#[test]
fn the_conditioner_reports_frames_and_states() {
    let t0 = Instant::now();
    let mut core = Conditioner::new(SmoothingConfig::default(), TrackingConfig::default(), t0);
    let mut frames = 0usize;
    let mut states = Vec::new();
    let mut take = |out: facewire::calibrate::Output| {
        frames += usize::from(out.frame.is_some());
        states.extend_from_slice(out.states());
    };
    for i in 0..30 {
        let t = at(t0, i as f64 / 60.0);
        take(core.on_frame(&frame(t, 0.1 * (i % 3) as f32), t));
    }
    for i in 0..200 {
        take(core.on_tick(at(t0, 0.5 + i as f64 * 0.01)));
    }
    use TrackingState::*;
    assert_eq!(states, [Reacquire, Tracking, Stale, Hold, Fade, Neutral]);
    assert!(frames > 30);
    assert_eq!(
        serde_json::to_string(&TrackingState::Reacquire).unwrap(),
        "\"reacquire\""
    );
}

#[test]
fn config_groups_are_validated_with_positions() {
    let text = "[smoothing.groups.eyes]\nchannels = [\"eyeBlinkLeft\", \"eyeBlnkRight\"]\n";
    let err = Config::parse(text, "f.toml").unwrap_err().to_string();
    assert!(err.starts_with("f.toml:2:"), "{err}");
    assert!(err.contains("did you mean `eyeBlinkRight`?"), "{err}");
    let text = "[tracking]\nhold = 0.1\nfade = -2\n";
    let err = Config::parse(text, "f.toml").unwrap_err().to_string();
    assert!(err.starts_with("f.toml:3:1:"), "{err}");
    let text = "[smoothing.groups.a]\nchannels = [\"jawOpen\"]\n\n[smoothing.groups.b]\nchannels = [\"JawOpen\"]\n";
    let err = Config::parse(text, "f.toml").unwrap_err().to_string();
    assert!(err.starts_with("f.toml:5:1:"), "{err}");
    let text = "[tracking]\nstale_afer = 1\n";
    let err = Config::parse(text, "f.toml").unwrap_err().to_string();
    assert!(err.contains("did you mean `stale_after`?"), "{err}");
}

#[test]
fn live_link_face_csv_sample_reads_and_smooths() {
    let Some(dir) = crate::support::fixtures("the Live Link Face CSV sample") else {
        return;
    };
    let path = dir.join("protocols/livelinkface_csv_MySlate_3_Jason_Millers_iPhone.csv");
    let text = std::fs::read_to_string(path).unwrap();
    let rows = llf_csv::parse(&text).unwrap();
    assert_eq!(rows.len(), 328);
    // 327 frames at 60 fps, give or take the drifting subframe.
    assert!(
        (rows[327].time - 327.0 / 60.0).abs() < 0.01,
        "{}",
        rows[327].time
    );
    assert!(rows.windows(2).all(|w| w[1].time > w[0].time));
    assert_eq!(rows[0].present.len(), 52);
    // Head rotation is off in this take; the eyes are on.
    assert!(rows.iter().all(|r| r.head.is_none()));
    assert!(rows.iter().any(|r| r.left_eye.is_some()));
    let jaw_max = rows
        .iter()
        .map(|r| r.weights[Channel::JawOpen.index()])
        .fold(0.0f32, f32::max);
    assert!((jaw_max - 0.815_662_1).abs() < 1e-6, "{jaw_max}");
    // Through the conditioner, timed by the sender's clock: every frame comes out and the take
    // ends in Tracking.
    let t0 = Instant::now();
    let mut c = Conditioner::new(SmoothingConfig::default(), TrackingConfig::default(), t0);
    let mut out_frames = 0;
    for r in &rows {
        let f = r.to_frame(t0, from());
        if c.on_frame(&f, f.received).frame.is_some() {
            out_frames += 1;
        }
    }
    assert_eq!(out_frames, rows.len());
    assert_eq!(c.state(), TrackingState::Tracking);
    assert_eq!(c.calibrator().clock_fallbacks(), 0);
}

/// The whole tracking-loss sequence on tokio's paused clock: the ingest thread's 10 ms ticks and
/// 60 Hz frames are simulated by advancing virtual time, so the timings are exact.
#[tokio::test(start_paused = true)]
async fn tracking_loss_sequence_on_paused_tokio_time() {
    use tokio::time::{advance, Instant as Virtual};

    let tick = Duration::from_millis(10);
    let now = || Virtual::now().into_std();
    let t0 = now();
    let mut core = Conditioner::new(SmoothingConfig::off(), TrackingConfig::default(), t0);
    let mut log: Vec<(TrackingState, Duration)> = Vec::new();
    let mut weights: Vec<(Duration, f32)> = Vec::new();
    let record = |out: facewire::calibrate::Output,
                  at: Instant,
                  log: &mut Vec<(TrackingState, Duration)>,
                  weights: &mut Vec<(Duration, f32)>| {
        for &s in out.states() {
            log.push((s, at - t0));
        }
        if let Some(f) = out.frame {
            weights.push((at - t0, f.get(Channel::JawOpen).unwrap_or(0.0)));
        }
    };

    // Half a second of live data (values move, as a real tracker's do).
    let mut i = 0u32;
    while now() - t0 < Duration::from_millis(500) {
        advance(tick).await;
        let out = if i.is_multiple_of(2) {
            let jaw = 0.6 + 0.02 * ((i / 2) % 3) as f32;
            let t = now();
            core.on_frame(&frame(t, jaw), t)
        } else {
            core.on_tick(now())
        };
        record(out, now(), &mut log, &mut weights);
        i += 1;
    }
    let last_frame = log.iter().map(|(_, t)| *t).max().unwrap_or_default();
    assert_eq!(core.state(), TrackingState::Tracking, "{log:?}");
    let silence_from = now() - t0 - tick;
    assert!(last_frame <= silence_from + tick);

    // Two seconds of silence: stale after 0.15 s, hold 0.2 s, fade 0.6 s, then neutral.
    for _ in 0..200 {
        advance(tick).await;
        let out = core.on_tick(now());
        record(out, now(), &mut log, &mut weights);
    }
    let when = |state: TrackingState| {
        log.iter()
            .rev()
            .find(|(s, _)| *s == state)
            .map(|(_, t)| t.as_secs_f32() - silence_from.as_secs_f32())
            .unwrap_or_else(|| panic!("never entered {state:?}: {log:?}"))
    };
    let stale = when(TrackingState::Stale);
    assert!((0.14..0.19).contains(&stale), "stale after {stale} s");
    let fade = when(TrackingState::Fade);
    assert!(
        (fade - stale - 0.2).abs() < 0.03,
        "hold lasted {} s",
        fade - stale
    );
    let neutral = when(TrackingState::Neutral);
    assert!(
        (neutral - fade - 0.6).abs() < 0.03,
        "fade lasted {} s",
        neutral - fade
    );
    assert!(
        stale + 0.2 < 0.5,
        "a frozen face never shows for more than half a second"
    );
    let faded: Vec<f32> = weights
        .iter()
        .filter(|(t, _)| t.as_secs_f32() - silence_from.as_secs_f32() > fade)
        .map(|(_, w)| *w)
        .collect();
    assert!(
        faded.windows(2).all(|w| w[1] <= w[0] + 1e-6),
        "the fade goes one way: {faded:?}"
    );
    assert_eq!(faded.last().copied(), Some(0.0), "the fade ends at neutral");

    // The face comes back at 0.8: the ease in never jumps.
    let back = now() - t0;
    let mut shown = 0.0f32;
    let mut max_step = 0.0f32;
    for k in 0..60 {
        advance(tick).await;
        let out = if k % 2 == 0 {
            let t = now();
            core.on_frame(&frame(t, 0.8 + 0.001 * (k % 4) as f32), t)
        } else {
            core.on_tick(now())
        };
        if let Some(f) = out.frame {
            let w = f.get(Channel::JawOpen).unwrap_or(0.0);
            max_step = max_step.max((w - shown).abs());
            shown = w;
        }
        record(out, now(), &mut log, &mut weights);
    }
    assert!(
        log.iter()
            .any(|(s, t)| *s == TrackingState::Reacquire && *t > back),
        "{log:?}"
    );
    assert_eq!(core.state(), TrackingState::Tracking, "{log:?}");
    // 0.8 over a 0.3 s ease at 20 ms frames is 0.053 a frame on average; the eased curve is
    // steepest in the middle at 1.5 times that.
    assert!(max_step < 0.1, "the ease jumped by {max_step}");
    assert!((shown - 0.8).abs() < 0.01, "live again at {shown}");
}

/// A performance `seconds` long starting at `start`, at 60 Hz: the Live Link Face CSV sample
/// (looped) when the fixtures are there, else a synthetic face that opens its jaw and blinks.
fn take(start: Instant, seconds: f64) -> Vec<FaceFrame> {
    let rows = crate::support::fixtures("the Live Link Face CSV take").map(|dir| {
        let path = dir.join("protocols/livelinkface_csv_MySlate_3_Jason_Millers_iPhone.csv");
        llf_csv::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
    });
    let count = (seconds * 60.0) as usize;
    (0..count)
        .map(|i| {
            let t = at(start, i as f64 / 60.0);
            match &rows {
                Some(rows) => {
                    let mut f = rows[i % rows.len()].to_frame(t, from());
                    f.received = t;
                    f
                }
                None => {
                    let mut f = frame(t, 0.5 + 0.5 * (i as f32 * 0.1).sin());
                    for c in Channel::ALL {
                        if f.get(c).is_none() {
                            f.set(c, 0.5 + 0.5 * (i as f32 * 0.07 + c.index() as f32).sin());
                        }
                    }
                    f
                }
            }
        })
        .collect()
}

#[test]
fn calibration_waits_for_the_phone_and_redoes_a_step_whose_take_stopped() {
    let steps = &STEPS[..2];
    let prepare = Duration::from_secs(1);
    let (p, d0, d1) = (
        prepare.as_secs_f64(),
        steps[0].duration.as_secs_f64(),
        steps[1].duration.as_secs_f64(),
    );
    let mut r = Routine::with_steps(steps, prepare);
    let t0 = Instant::now();
    // No phone for three seconds: the routine waits at the first step.
    r.tick(at(t0, 3.0));
    assert_eq!(r.prompt().phase, Phase::Waiting);
    assert_eq!(r.prompt().step, 0);
    // The take starts, and stops halfway through the second step's recording.
    let start = at(t0, 3.0);
    let played = p + d0 + p + d1 / 2.0;
    for f in take(start, played) {
        r.feed(&f, f.received);
    }
    assert_eq!((r.prompt().step, r.prompt().phase), (1, Phase::Record));
    let second = steps[1].channels[0];
    assert!(!r.samples(1, second).unwrap().is_empty());
    let stopped = at(start, played);
    r.tick(stopped + Duration::from_secs(1));
    let prompt = r.prompt();
    assert_eq!((prompt.step, prompt.phase), (1, Phase::Waiting));
    assert!(prompt.instruction.contains("stopped sending"), "{prompt:?}");
    assert!(
        r.samples(1, second).unwrap().is_empty(),
        "the interrupted step's samples are dropped"
    );
    assert!(
        !r.samples(0, Channel::JawOpen).unwrap().is_empty(),
        "the finished step is kept"
    );
    // Ten seconds of silence do not count as recording time.
    r.tick(stopped + Duration::from_secs(11));
    assert_eq!((r.prompt().step, r.prompt().phase), (1, Phase::Waiting));
    // The phone comes back: the step starts over from its countdown and finishes.
    let resumed = stopped + Duration::from_secs(12);
    let frames = take(resumed, p / 2.0);
    for f in &frames {
        r.feed(f, f.received);
    }
    assert_eq!((r.prompt().step, r.prompt().phase), (1, Phase::Prepare));
    for f in take(frames.last().unwrap().received, p + d1 + 0.5) {
        r.feed(&f, f.received);
    }
    assert!(r.is_done());
    let calibration = r.result("tester", None);
    let no_data: Vec<_> = calibration
        .summary
        .rows
        .iter()
        .filter(|row| row.flag == Some(Flag::NoData))
        .map(|row| row.channel.name())
        .collect();
    assert!(no_data.is_empty(), "saved without data: {no_data:?}");
}

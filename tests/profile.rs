//! Profile and calibration routine tests: the profile file (round trip, atomic saves, errors),
//! the guided routine on a scripted performer, offline calibration from recordings, and the
//! interactive driver with a fake UI.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use facewire::arkit::{Channel, FaceFrame, Protocol, COUNT};
use facewire::calibrate::driver::{drive, Decision, RoutineUi};
use facewire::calibrate::offline::{calibrate_offline, OfflineError, RestSource};
use facewire::calibrate::profile::{ChannelProfile, Profile, ProfileError};
use facewire::calibrate::routine::{Flag, Phase, Prompt, Routine, StepKind};
use facewire::calibrate::{Calibrator, ChannelRange, SmoothingConfig, Step, Summary, STEPS};

fn from() -> SocketAddr {
    "127.0.0.1:9".parse().unwrap()
}

fn cal(neutral: f32, min: f32, max: f32) -> ChannelProfile {
    ChannelProfile { neutral, min, max }
}

fn sample_profile(name: &str) -> Profile {
    let mut p = Profile::new(name);
    p.set(Channel::JawOpen, cal(0.12, 0.12, 0.72));
    p.set(Channel::EyeBlinkLeft, cal(0.1, 0.03, 0.83));
    p
}

#[test]
fn a_profile_remaps_and_passes_degenerate_ranges_through() {
    let mut p = sample_profile("alice");
    p.set(Channel::MouthFunnel, cal(0.3, 0.3, 0.3));
    assert_eq!(p.degenerate(), vec![Channel::MouthFunnel]);
    let mut calibrator = Calibrator::new(SmoothingConfig::off());
    calibrator.set_ranges(p.ranges());
    let mut raw = FaceFrame::empty(Protocol::Vmc, from(), Instant::now());
    raw.set(Channel::JawOpen, 0.42);
    raw.set(Channel::MouthFunnel, 0.37);
    raw.set(Channel::EyeBlinkLeft, 0.9);
    raw.set(Channel::TongueOut, 0.25);
    let out = calibrator.apply(&raw);
    let jaw = out.get(Channel::JawOpen).unwrap();
    assert!((jaw - 0.5).abs() < 1e-5, "{jaw}");
    assert_eq!(out.get(Channel::MouthFunnel), Some(0.37));
    assert_eq!(out.get(Channel::EyeBlinkLeft), Some(1.0));
    assert_eq!(out.get(Channel::TongueOut), Some(0.25));
    // A resting jaw maps to 0, so the avatar's mouth is closed when the performer's is.
    assert_eq!(p.ranges()[Channel::JawOpen.index()].apply(0.12), 0.0);
}

#[test]
fn profiles_round_trip_through_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = sample_profile("alice");
    p.smoothing = Some(SmoothingConfig::ema(0.05, 0.1));
    let path = p.save(dir.path()).unwrap();
    assert_eq!(path, dir.path().join("alice.toml"));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("[channels.jawOpen]"), "{text}");
    assert!(
        !text.contains("tongueOut"),
        "only calibrated channels are written:\n{text}"
    );
    assert_eq!(Profile::load_named(dir.path(), "alice").unwrap(), p);
    assert_eq!(Profile::list(dir.path()), vec!["alice".to_string()]);
    // Saving again replaces the file and leaves nothing else behind.
    p.set(Channel::TongueOut, cal(0.0, 0.0, 0.5));
    p.save(dir.path()).unwrap();
    assert_eq!(Profile::load_named(dir.path(), "alice").unwrap(), p);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn an_interrupted_save_keeps_the_previous_profile() {
    let dir = tempfile::tempdir().unwrap();
    let old = sample_profile("alice");
    let path = old.save(dir.path()).unwrap();
    let before = std::fs::read(&path).unwrap();

    // The temporary file cannot be created: something already occupies its name.
    let tmp = dir
        .path()
        .join(format!(".alice.toml.{}.tmp", std::process::id()));
    std::fs::create_dir(&tmp).unwrap();
    std::fs::write(tmp.join("occupied"), b"x").unwrap();
    let mut new = old.clone();
    new.set(Channel::JawOpen, cal(0.2, 0.2, 0.9));
    let err = new.save(dir.path()).unwrap_err();
    assert!(matches!(err, ProfileError::Write { .. }), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    std::fs::remove_dir_all(&tmp).unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    assert_eq!(Profile::load(&path).unwrap(), old);

    // The rename itself fails (the target is a folder): the temporary file is cleaned up.
    let other = tempfile::tempdir().unwrap();
    std::fs::create_dir(other.path().join("bob.toml")).unwrap();
    std::fs::write(other.path().join("bob.toml").join("keep"), b"x").unwrap();
    let err = sample_profile("bob").save(other.path()).unwrap_err();
    assert!(
        err.to_string().contains("cannot write the profile"),
        "{err}"
    );
    let names: Vec<_> = std::fs::read_dir(other.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["bob.toml".to_string()]);
}

#[test]
fn unknown_performers_list_the_existing_profiles() {
    let dir = tempfile::tempdir().unwrap();
    let err = Profile::load_named(dir.path(), "alice")
        .unwrap_err()
        .to_string();
    assert!(err.contains("no profiles yet"), "{err}");
    assert!(
        err.contains("facewire calibrate --performer alice"),
        "{err}"
    );

    sample_profile("alice").save(dir.path()).unwrap();
    sample_profile("bob-2").save(dir.path()).unwrap();
    std::fs::write(dir.path().join("README.md"), "not a profile").unwrap();
    match Profile::load_named(dir.path(), "alcie") {
        Err(ProfileError::NotFound {
            existing,
            suggestion,
            ..
        }) => {
            assert_eq!(existing, vec!["alice".to_string(), "bob-2".to_string()]);
            assert_eq!(suggestion.as_deref(), Some("alice"));
        }
        other => panic!("expected NotFound, got {other:?}"),
    }
    let err = Profile::load_named(dir.path(), "alcie")
        .unwrap_err()
        .to_string();
    assert!(err.contains("existing profiles: alice, bob-2"), "{err}");
    assert!(err.contains("did you mean `alice`?"), "{err}");
    assert!(matches!(
        Profile::load_named(dir.path(), "../alice"),
        Err(ProfileError::BadName { .. })
    ));
}

#[test]
fn bad_profile_files_are_located_with_suggestions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("carol.toml");
    std::fs::write(
        &path,
        "version = 1\nperformer = \"carol\"\n\n[channels.jawOpen]\nneutral = 0.1\nmin = 0.1\nmax = 0.7\n\n[channels.eyeBlinkLetf]\nmin = 0.0\nmax = 0.8\n",
    )
    .unwrap();
    let err = Profile::load(&path).unwrap_err().to_string();
    let prefix = format!("{}:9:11:", path.display());
    assert!(err.starts_with(&prefix), "{err}");
    assert!(err.contains("did you mean `eyeBlinkLeft`?"), "{err}");

    std::fs::write(
        &path,
        "version = 1\n\n[smoothing.weights]\nfilter = \"ema\"\ntua = 0.1\n",
    )
    .unwrap();
    let err = Profile::load(&path).unwrap_err().to_string();
    assert!(err.contains(":5:1:"), "{err}");
    assert!(err.contains("did you mean `tau`?"), "{err}");

    std::fs::write(
        &path,
        "version = 1\n\n[smoothing.weights]\nfilter = \"ema\"\ntau = 99.0\n",
    )
    .unwrap();
    let err = Profile::load(&path).unwrap_err().to_string();
    assert!(err.contains(":5:1:"), "{err}");
    assert!(err.contains("out of range"), "{err}");

    // A profile without `performer` takes its file name.
    std::fs::write(&path, "version = 1\n").unwrap();
    assert_eq!(Profile::load(&path).unwrap().performer, "carol");
}

/// Deterministic noise in [-0.005, 0.005].
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.01
    }
}

/// A scripted performer who follows the prompt: jaw rests at 0.12 and opens to 0.7 (with one
/// tracker spike to 1.0), blinks reach 0.85 and rest at 0.1 (0.03 with eyes wide), the tongue
/// never moves, and every other targeted channel rests at 0.02 and reaches 0.6 in its step.
struct Performer {
    noise: Noise,
    frames: usize,
    spiked: bool,
    jaw_open: f32,
}

impl Performer {
    fn new() -> Performer {
        Performer {
            noise: Noise(7),
            frames: 0,
            spiked: false,
            jaw_open: 0.7,
        }
    }

    fn frame(&mut self, prompt: &Prompt, t: Instant) -> FaceFrame {
        self.frames += 1;
        let step = STEPS.get(prompt.step).map_or("done", |s| s.id);
        let mut f = FaceFrame::empty(Protocol::Vmc, from(), t);
        for c in Channel::ALL {
            f.set(c, 0.02 + self.noise.next().abs());
        }
        f.set(Channel::JawOpen, 0.12 + self.noise.next());
        let blink = match step {
            // Closed for 12 frames out of every 30.
            "blink" if self.frames % 30 < 12 => 0.85,
            "eyes-wide" => 0.03,
            _ => 0.1,
        };
        f.set(Channel::EyeBlinkLeft, blink);
        f.set(Channel::EyeBlinkRight, blink);
        f.set(Channel::TongueOut, 0.0);
        if let Some(s) = STEPS.get(prompt.step) {
            if s.kind == StepKind::Extreme && !matches!(step, "blink" | "tongue-out") {
                for c in s.channels {
                    f.set(*c, 0.6 + self.noise.next());
                }
            }
        }
        if step == "jaw-open" {
            let spike = prompt.phase == Phase::Record && prompt.progress > 0.5 && !self.spiked;
            self.spiked |= spike;
            let v = if spike { 1.0 } else { self.jaw_open };
            f.set(Channel::JawOpen, v);
        }
        f
    }
}

/// Runs `routine` to completion with `performer` at 60 Hz of synthetic time from `t0`; returns
/// the time reached and every frame sent.
fn perform(
    routine: &mut Routine,
    performer: &mut Performer,
    t0: Instant,
) -> (Instant, Vec<FaceFrame>) {
    let mut t = t0;
    let mut sent = Vec::new();
    routine.tick(t);
    let mut guard = 0;
    while !routine.is_done() && guard < 100_000 {
        t += Duration::from_micros(16_667);
        let f = performer.frame(&routine.prompt(), t);
        routine.feed(&f, t);
        sent.push(f);
        guard += 1;
    }
    assert!(routine.is_done());
    (t, sent)
}

#[test]
fn the_routine_on_a_scripted_performer_gives_robust_ranges() {
    let mut routine = Routine::new();
    let mut performer = Performer::new();
    perform(&mut routine, &mut performer, Instant::now());
    assert!(performer.spiked, "the script must include the spike");
    let mut old = Profile::new("dana");
    old.set(Channel::TongueOut, cal(0.0, 0.0, 0.4));
    old.set(Channel::MouthRollLower, cal(0.05, 0.05, 0.6));
    let result = routine.result("dana", Some(&old));
    let p = &result.profile;

    let jaw = p.channel(Channel::JawOpen);
    assert!((jaw.neutral - 0.12).abs() < 0.01, "{jaw:?}");
    assert!((jaw.min - 0.12).abs() < 0.01, "{jaw:?}");
    assert!(
        (jaw.max - 0.7).abs() < 0.01,
        "the spike to 1.0 must not set the range: {jaw:?}"
    );
    let r = jaw.range();
    assert_eq!(r.apply(0.12 - 0.004), 0.0, "a resting jaw maps to 0");
    assert!(r.apply(0.7) > 0.98);

    for blink in [Channel::EyeBlinkLeft, Channel::EyeBlinkRight] {
        let b = p.channel(blink);
        assert!((b.neutral - 0.1).abs() < 1e-3, "{b:?}");
        // The open reference is the usual open eye over the whole routine (0.1), not the
        // eyes-wide step's 0.03: an open eye reads open.
        assert!((b.min - 0.1).abs() < 1e-3, "{b:?}");
        assert_eq!(b.range().apply(0.1), 0.0, "{b:?}");
        assert_eq!(
            b.range().apply(0.85),
            1.0,
            "a real blink still closes: {b:?}"
        );
    }
    let smile = p.channel(Channel::MouthSmileLeft);
    assert!(
        smile.min < 0.03 && (smile.max - 0.6).abs() < 0.01,
        "{smile:?}"
    );

    // The tongue never moved: flagged, and the old calibration is kept.
    let row = result.summary.row(Channel::TongueOut).unwrap();
    assert_eq!(row.flag, Some(Flag::BarelyMoved));
    assert_eq!(row.new, ChannelRange { min: 0.0, max: 0.4 });
    assert_eq!(p.channel(Channel::TongueOut), cal(0.0, 0.0, 0.4));
    assert_eq!(result.summary.flagged().count(), 1, "{}", result.summary);
    // Channels no step targets keep the old profile's calibration.
    assert_eq!(p.channel(Channel::MouthRollLower), cal(0.05, 0.05, 0.6));
    assert!(result.summary.row(Channel::MouthRollLower).is_none());
    let table = result.summary.to_string();
    assert!(table.contains("barely moved"), "{table}");
    assert!(table.lines().any(|l| l.starts_with("jawOpen")), "{table}");
}

#[test]
fn redoing_a_step_replaces_its_samples() {
    let jaw_step = STEPS.iter().position(|s| s.id == "jaw-open").unwrap();
    let mut routine = Routine::new();
    let mut performer = Performer::new();
    let (t, _) = perform(&mut routine, &mut performer, Instant::now());
    assert!(routine.samples(jaw_step, Channel::JawOpen).unwrap().len() > 100);

    routine.redo(jaw_step);
    assert!(!routine.is_done());
    assert_eq!(routine.current(), Some(jaw_step));
    assert!(routine
        .samples(jaw_step, Channel::JawOpen)
        .unwrap()
        .is_empty());
    performer.jaw_open = 0.5;
    perform(&mut routine, &mut performer, t);
    let samples = routine.samples(jaw_step, Channel::JawOpen).unwrap();
    assert!(
        samples.iter().all(|v| (v - 0.5).abs() < 0.01),
        "{samples:?}"
    );
    let jaw = routine
        .result("dana", None)
        .profile
        .channel(Channel::JawOpen);
    assert!((jaw.max - 0.5).abs() < 0.01, "{jaw:?}");
}

#[test]
fn a_recording_of_the_routine_calibrates_offline_alike() {
    let mut routine = Routine::new();
    let mut performer = Performer::new();
    let (_, frames) = perform(&mut routine, &mut performer, Instant::now());
    let offline = calibrate_offline(frames, None, "dana", None).unwrap();
    let jaw = offline.profile.channel(Channel::JawOpen);
    assert!((jaw.min - 0.12).abs() < 0.01, "{jaw:?}");
    assert!((jaw.max - 0.7).abs() < 0.01, "{jaw:?}");
    let blink = offline.profile.channel(Channel::EyeBlinkLeft);
    assert_eq!(blink.range().apply(0.85), 1.0, "{blink:?}");
    assert!(blink.range().apply(0.1) < 0.15, "{blink:?}");
    assert_eq!(
        offline.summary.row(Channel::TongueOut).unwrap().flag,
        Some(Flag::BarelyMoved)
    );
    assert!(offline.profile.channels[Channel::TongueOut.index()].is_none());
}

#[test]
fn offline_calibration_from_a_live_link_face_csv() {
    let Some(dir) = crate::support::fixtures("live link face csv") else {
        return;
    };
    let path = dir.join("protocols/livelinkface_csv_MySlate_3_Jason_Millers_iPhone.csv");
    let recording = facewire::record::Recording::load(&path).unwrap();
    let frames: Vec<FaceFrame> = facewire::record::frames(&recording).collect();
    assert!(frames.len() > 100);
    let mut lo = [f32::INFINITY; COUNT];
    let mut hi = [f32::NEG_INFINITY; COUNT];
    for f in &frames {
        for c in f.present.iter() {
            lo[c.index()] = lo[c.index()].min(f.weights[c.index()]);
            hi[c.index()] = hi[c.index()].max(f.weights[c.index()]);
        }
    }
    let result = calibrate_offline(frames.iter().copied(), None, "jason", None).unwrap();
    assert!(!result.summary.rows.is_empty());
    let mut calibrated = 0;
    for row in &result.summary.rows {
        let i = row.channel.index();
        match row.flag {
            None => {
                calibrated += 1;
                assert!(
                    row.new.min >= lo[i] && row.new.max <= hi[i] && row.new.min < row.new.max,
                    "{}: {:?} outside {}..{}",
                    row.channel,
                    row.new,
                    lo[i],
                    hi[i]
                );
                assert_eq!(result.profile.channels[i].map(|c| c.range()), Some(row.new));
            }
            Some(_) => assert!(result.profile.channels[i].is_none(), "{}", row.channel),
        }
    }
    assert!(calibrated > 0, "{}", result.summary);
    let jaw = &result.summary.row(Channel::JawOpen).unwrap();
    assert_eq!(jaw.flag, None, "{}", result.summary);
    let widest = hi[Channel::JawOpen.index()];
    assert!(jaw.new.apply(widest) >= 0.95, "{:?} vs {widest}", jaw.new);
    // The profile survives a save and load.
    let tmp = tempfile::tempdir().unwrap();
    result.profile.save(tmp.path()).unwrap();
    assert_eq!(
        Profile::load_named(tmp.path(), "jason").unwrap(),
        result.profile
    );
}

/// Two short steps, so the real-time driver finishes quickly.
static SHORT: [Step; 2] = [
    Step {
        id: "neutral",
        title: "Neutral face",
        instruction: "Relax.",
        channels: &Channel::ALL,
        duration: Duration::from_millis(300),
        kind: StepKind::Neutral,
    },
    Step {
        id: "jaw-open",
        title: "Jaw open wide",
        instruction: "Open wide.",
        channels: &[Channel::JawOpen],
        duration: Duration::from_millis(300),
        kind: StepKind::Extreme,
    },
];

/// A UI that tells the frame source which step is shown, asks to redo the jaw once, then saves.
struct FakeUi {
    step: Arc<AtomicUsize>,
    shown: Vec<(usize, Phase)>,
    reviews: usize,
}

impl RoutineUi for FakeUi {
    fn show(&mut self, prompt: &Prompt) {
        self.step.store(prompt.step, Ordering::Relaxed);
        if self.shown.last() != Some(&(prompt.step, prompt.phase)) {
            self.shown.push((prompt.step, prompt.phase));
        }
    }

    fn review(&mut self, summary: &Summary) -> Decision {
        self.reviews += 1;
        assert!(summary.row(Channel::JawOpen).is_some(), "{summary}");
        if self.reviews == 1 {
            Decision::Redo(1)
        } else {
            Decision::Save
        }
    }
}

#[test]
fn the_driver_runs_the_routine_on_a_channel_and_returns_a_calibration() {
    let step = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    let shown_step = step.clone();
    let producer = std::thread::spawn(move || loop {
        let mut f = FaceFrame::empty(Protocol::Vmc, from(), Instant::now());
        let jaw = if shown_step.load(Ordering::Relaxed) == 1 {
            0.6
        } else {
            0.1
        };
        f.set(Channel::JawOpen, jaw);
        if tx.send(f).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    });
    let mut ui = FakeUi {
        step,
        shown: Vec::new(),
        reviews: 0,
    };
    let routine = Routine::with_steps(&SHORT, Duration::from_millis(50));
    let result = drive(routine, &rx, &mut ui, None, "erin").unwrap();
    drop(rx);
    producer.join().unwrap();
    let calibration = result.expect("the fake UI saves");
    assert_eq!(ui.reviews, 2);
    let finished: Vec<_> = ui
        .shown
        .iter()
        .filter(|(_, p)| *p == Phase::Finished)
        .collect();
    assert_eq!(finished.len(), 2, "{:?}", ui.shown);
    assert!(ui.shown.contains(&(1, Phase::Record)), "{:?}", ui.shown);
    let jaw = calibration.summary.row(Channel::JawOpen).unwrap();
    assert_eq!(jaw.flag, None, "{}", calibration.summary);
    assert!((jaw.new.min - 0.1).abs() < 1e-6 && (jaw.new.max - 0.6).abs() < 1e-6);
    assert_eq!(calibration.profile.performer, "erin");
}

#[test]
fn a_closed_frame_source_ends_the_routine_with_an_error() {
    let (tx, rx) = mpsc::channel::<FaceFrame>();
    drop(tx);
    let mut ui = FakeUi {
        step: Arc::new(AtomicUsize::new(0)),
        shown: Vec::new(),
        reviews: 0,
    };
    let routine = Routine::with_steps(&SHORT, Duration::from_millis(50));
    assert!(drive(routine, &rx, &mut ui, None, "erin").is_err());
}

/// The channels a resting face must leave at rest: mouth, jaw, cheeks and eyelids.
fn rests(c: Channel) -> bool {
    let name = c.name();
    ["mouth", "jaw", "cheek", "eyeBlink"]
        .iter()
        .any(|p| name.starts_with(p))
}

#[test]
fn a_live_link_face_take_rests_at_its_neutral_hold() {
    let Some(dir) = crate::support::fixtures("the rest of a live link face csv") else {
        return;
    };
    let path = dir.join("protocols/livelinkface_csv_MySlate_3_Jason_Millers_iPhone.csv");
    let recording = facewire::record::Recording::load(&path).unwrap();
    let frames: Vec<FaceFrame> = facewire::record::frames(&recording).collect();
    let result = calibrate_offline(frames.iter().copied(), None, "jason", None).unwrap();
    let rest = result.summary.rest.clone().unwrap();
    // The take opens with about 1.6 s of neutral face before the performer moves.
    assert_eq!(rest.source, RestSource::Found);
    assert!(rest.start >= 0.0 && rest.end < 1.6, "{rest}");
    assert!(rest.end - rest.start >= 0.4 && rest.frames >= 25, "{rest}");
    let t0 = frames[0].received;
    let resting: Vec<&FaceFrame> = frames
        .iter()
        .filter(|f| {
            let t = f.received.duration_since(t0).as_secs_f64();
            t >= rest.start && t <= rest.end
        })
        .collect();
    assert_eq!(resting.len(), rest.frames);
    // Every channel reads its rest there: under 0.05 on average and in nine frames of ten
    // (tracker jitter moves a narrow channel such as mouthLeft by a few hundredths).
    let mut checked = 0;
    for c in Channel::ALL.into_iter().filter(|c| rests(*c)) {
        let range = result.profile.channel(c).range();
        let reads: Vec<f32> = resting
            .iter()
            .map(|f| range.apply(f.weights[c.index()]))
            .collect();
        let mean = reads.iter().sum::<f32>() / reads.len() as f32;
        let high = reads.iter().filter(|w| **w >= 0.05).count();
        assert!(mean < 0.05, "{c} reads {mean} at rest\n{}", result.summary);
        assert!(
            high * 10 <= reads.len(),
            "{c}: {reads:?}\n{}",
            result.summary
        );
        // So does the whole opening hold, half of its frames at least.
        let mut hold: Vec<f32> = frames
            .iter()
            .filter(|f| f.received.duration_since(t0).as_secs_f64() < 1.5)
            .map(|f| range.apply(f.weights[c.index()]))
            .collect();
        hold.sort_by(f32::total_cmp);
        let median = hold[hold.len() / 2];
        assert!(median < 0.05, "{c} reads {median} in the opening hold");
        checked += 1;
    }
    assert!(checked >= 30, "{checked}");
    // The brows rest lowered on this performer: the rest is theirs, not a frown.
    let brow = result.profile.channel(Channel::BrowDownLeft);
    assert!(brow.neutral > 0.25, "{brow:?}");
    assert!(
        brow.range()
            .apply(resting[0].weights[Channel::BrowDownLeft.index()])
            < 0.05
    );
    // The widest jaw still reaches the top.
    let widest = frames
        .iter()
        .map(|f| f.weights[Channel::JawOpen.index()])
        .fold(f32::NEG_INFINITY, f32::max);
    let jaw = result.profile.channel(Channel::JawOpen).range();
    assert!(jaw.apply(widest) >= 0.95, "{jaw:?} vs {widest}");
    // The review shows where the neutral face is and what it reads.
    let review = result.summary.to_string();
    assert!(review.contains("neutral face: 0."), "{review}");
    assert!(review.contains("at rest: browDown"), "{review}");
    assert!(review.contains("jawOpen 0.0"), "{review}");

    // A named neutral is used as named; one outside the take is refused.
    let named = calibrate_offline(frames.iter().copied(), None, "jason", Some(3.0)).unwrap();
    let rest = named.summary.rest.unwrap();
    assert_eq!(rest.source, RestSource::Named);
    assert!(rest.start >= 3.0 && rest.end < 3.5, "{rest}");
    let err = calibrate_offline(frames.iter().copied(), None, "jason", Some(60.0)).unwrap_err();
    assert!(matches!(err, OfflineError::NothingAt { .. }), "{err}");
    assert!(err.to_string().contains("which lasts 5."), "{err}");
}

/// A synthetic take at 60 Hz on four channels (every other one still at 0.02): `(seconds,
/// pose)` segments, each a linear move from the previous pose to its own (0 s: a jump), or a
/// hold when equal. Holds and the ends of moves are exact.
fn take(segments: &[(f64, [f32; 4])], channels: [Channel; 4]) -> Vec<FaceFrame> {
    let t0 = Instant::now();
    let mut frames = Vec::new();
    let mut from_pose = segments[0].1;
    let mut t = 0.0;
    for (seconds, pose) in segments {
        let n = (seconds * 60.0).round() as usize;
        for i in 0..n {
            let k = (i + 1) as f32 / n as f32;
            let mut f = FaceFrame::empty(Protocol::Vmc, from(), t0 + Duration::from_secs_f64(t));
            for c in Channel::ALL {
                f.set(c, 0.02);
            }
            for (j, c) in channels.iter().enumerate() {
                let v = if k >= 1.0 {
                    pose[j]
                } else {
                    from_pose[j] + (pose[j] - from_pose[j]) * k
                };
                f.set(*c, v);
            }
            frames.push(f);
            t += 1.0 / 60.0;
        }
        from_pose = *pose;
    }
    frames
}

#[test]
fn a_synthetic_take_calibrates_exactly_from_its_rest() {
    use Channel::*;
    let channels = [JawOpen, EyeBlinkLeft, BrowDownLeft, MouthSmileLeft];
    let rest = [0.1, 0.05, 0.3, 0.08];
    let top = [0.85, 0.9, 0.8, 0.7];
    let only = |j: usize| {
        let mut p = rest;
        p[j] = top[j];
        p
    };
    let fidget = [0.3, 0.4, 0.5, 0.3];
    let mut segments = vec![
        // Settling in, then a 1.4 s neutral hold.
        (0.0, fidget),
        (0.3, [0.2, 0.1, 0.4, 0.2]),
        (0.3, rest),
        (1.4, rest),
    ];
    for j in 0..4 {
        segments.extend([(0.3, only(j)), (0.6, only(j)), (0.3, rest), (0.2, fidget)]);
    }
    // A long, perfectly still wide-open jaw: as still as the rest, but not a rest.
    segments.extend([(0.3, only(0)), (2.0, only(0)), (0.3, fidget)]);
    let frames = take(&segments, channels);
    let result = calibrate_offline(frames.iter().copied(), None, "synthetic", None).unwrap();
    let found = result.summary.rest.clone().unwrap();
    // The hold runs from the end of the settling move (frame 35, 0.583 s) to 2 s.
    assert!(found.start >= 0.58 && found.end <= 2.0, "{found}");
    for (j, c) in channels.iter().enumerate() {
        let p = result.profile.channel(*c);
        assert_eq!(p.neutral, rest[j], "{c}");
        assert_eq!(p.range().apply(rest[j]), 0.0, "{c}: {p:?}");
        assert_eq!(p.range().apply(top[j]), 1.0, "{c}: {p:?}");
        assert_eq!(result.summary.row(*c).unwrap().flag, None, "{c}");
    }
    // What never moved is flagged and left alone.
    assert_eq!(
        result.summary.row(TongueOut).unwrap().flag,
        Some(Flag::BarelyMoved)
    );
    // Naming a moment of the hold gives the same profile; naming the held jaw makes the jaw's
    // rest its extreme, so it barely moves.
    let named = calibrate_offline(frames.iter().copied(), None, "synthetic", Some(1.2)).unwrap();
    assert_eq!(named.profile.channels, result.profile.channels);
    let held = calibrate_offline(frames.iter().copied(), None, "synthetic", Some(8.5)).unwrap();
    assert_eq!(
        held.summary.row(JawOpen).unwrap().flag,
        Some(Flag::BarelyMoved),
        "{}",
        held.summary
    );
}

/// Ctrl-C during the guided routine ends `facewire calibrate` with status 130, saying that
/// nothing was saved; it first says how long the routine takes.
#[cfg(unix)]
#[test]
fn ctrl_c_during_calibration_says_nothing_was_saved() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("facewire.toml");
    // One listener on a free loopback port, no API: nothing another test uses.
    std::fs::write(
        &config,
        "[api]\nenabled = false\n\n[ingest]\nlisten = [\"127.0.0.1:0\"]\nifacialmocap = []\n\
         facemotion3d = []\nlivelinkface = []\nvtubestudio = []\nopenseeface = []\n",
    )
    .unwrap();
    let mut child = Command::new(crate::support::facewire_bin())
        .arg("--config")
        .arg(&config)
        .args(["calibrate", "--performer", "alice", "--no-window"])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, lines) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    while !seen
        .iter()
        .any(|l: &String| l.contains("Waiting for the phone"))
    {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => seen.push(line),
            Err(_) => {
                let _ = child.kill();
                panic!("the routine never waited for the phone: {seen:?}");
            }
        }
    }
    assert!(
        seen.iter()
            .any(|l| l.contains("22 steps, 1 min 51 s once face data arrives")),
        "{seen:?}"
    );
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("calibration interrupted; nothing saved"),
        "{stderr}"
    );
    assert!(!dir.path().join("profiles/alice.toml").exists());
}

//! What the control panel shows about the running pipeline, gathered without GL: the newest raw,
//! calibrated and mixed frames, the mixer's newest report and the tracking state (written by the
//! ingest thread), the input's counters turned into rates, and rolling windows of sample ages and
//! frame times (kept by the render thread).
//!
//! The ingest side writes through [`Telemetry`], a mutex held for a copy of one frame or the swap
//! of one pointer; the panel reads a [`TelemetrySnapshot`] a few times a second (the mixer report
//! is shared, not copied). Nothing here grows with the number of packets: the windows have a
//! fixed capacity.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::arkit::{FaceFrame, Protocol};
use crate::calibrate::TrackingState;
use crate::lipsync::{LipFrame, LipMode};
use crate::mixer::MixerReport;

/// The ingest side's view of the stream, shared with the render thread.
#[derive(Debug)]
pub struct Telemetry {
    shared: Mutex<TelemetrySnapshot>,
}

/// A copy of what [`Telemetry`] holds at one moment. Cloning it is cheap: the mixer report is
/// shared.
#[derive(Debug, Clone)]
pub struct TelemetrySnapshot {
    /// The newest frame as the phone sent it (before calibration).
    pub raw: Option<FaceFrame>,
    /// The newest calibrated (conditioned) tracking frame.
    pub calibrated: Option<FaceFrame>,
    /// The newest final frame: the mixer's output, handed to the renderer.
    pub mixed: Option<FaceFrame>,
    /// The mixer's newest report: what each layer contributed, the rest pose first.
    pub mix: Option<Arc<MixerReport>>,
    /// The tracking state.
    pub tracking: TrackingState,
    /// When the tracking state last changed.
    pub tracking_since: Instant,
    /// Tracking state changes so far.
    pub tracking_changes: u64,
    /// The newest lip-sync hop and when it came.
    pub lip: Option<(LipFrame, Instant)>,
    /// Lip sync's input, while a run has one.
    pub lip_source: Option<LipSourceState>,
}

/// What lip sync listens to and how it is doing, for the panel.
#[derive(Debug, Clone, PartialEq)]
pub struct LipSourceState {
    /// How it mixes.
    pub mode: LipMode,
    /// The device or file.
    pub source: String,
    /// Whether it is a live microphone (which can record the performer's vowels).
    pub microphone: bool,
    /// What went wrong, while it is wrong (no device, device lost).
    pub problem: Option<String>,
    /// The gate it starts from, dB (each hop carries the one in use: [`LipFrame::gate`]).
    pub gate: (f32, f32),
    /// Whose vowels: "built-in" or the performer's name.
    pub voice: String,
    /// While recording the performer's vowels: what to say now.
    pub prompt: Option<String>,
}

impl TelemetrySnapshot {
    /// The protocol and address of the newest raw frame's sender.
    pub fn source(&self) -> Option<(Protocol, SocketAddr)> {
        self.raw.map(|f| (f.protocol, f.from))
    }
}

impl Telemetry {
    /// Empty telemetry: no frame yet, tracking neutral since `now`.
    pub fn new(now: Instant) -> Arc<Telemetry> {
        Arc::new(Telemetry {
            shared: Mutex::new(TelemetrySnapshot {
                raw: None,
                calibrated: None,
                mixed: None,
                mix: None,
                tracking: TrackingState::Neutral,
                tracking_since: now,
                tracking_changes: 0,
                lip: None,
                lip_source: None,
            }),
        })
    }

    fn with<R>(&self, f: impl FnOnce(&mut TelemetrySnapshot) -> R) -> R {
        f(&mut self.shared.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Records a frame as received, before calibration.
    pub fn record_raw(&self, frame: &FaceFrame) {
        self.with(|s| s.raw = Some(*frame));
    }

    /// Records the calibrated (conditioned) tracking frame.
    pub fn record_calibrated(&self, frame: &FaceFrame) {
        self.with(|s| s.calibrated = Some(*frame));
    }

    /// Records the final frame: the mixer's output, as handed to the renderer.
    pub fn record_mixed(&self, frame: &FaceFrame) {
        self.with(|s| s.mixed = Some(*frame));
    }

    /// Records the mixer's newest report, replacing the previous one. The report is moved into
    /// a shared pointer outside the lock, and the previous one is freed outside it too.
    pub fn record_mix(&self, report: MixerReport) {
        let report = Arc::new(report);
        let previous = self.with(|s| s.mix.replace(report));
        drop(previous);
    }

    /// Keeps the newest lip-sync hop.
    pub fn record_lip(&self, frame: &LipFrame) {
        let now = Instant::now();
        self.with(|s| s.lip = Some((*frame, now)));
    }

    /// Records lip sync's input and its state (replacing the previous).
    pub fn record_lip_source(&self, state: LipSourceState) {
        self.with(|s| s.lip_source = Some(state));
    }

    /// Changes the recorded lip-sync input's state, when there is one.
    pub fn update_lip_source(&self, change: impl FnOnce(&mut LipSourceState)) {
        self.with(|s| {
            if let Some(state) = s.lip_source.as_mut() {
                change(state);
            }
        });
    }

    /// Records a tracking state change at `at`.
    pub fn record_tracking(&self, state: TrackingState, at: Instant) {
        self.with(|s| {
            s.tracking = state;
            s.tracking_since = at;
            s.tracking_changes += 1;
        });
    }

    /// The mixer's newest report, shared.
    pub fn mix(&self) -> Option<Arc<MixerReport>> {
        self.with(|s| s.mix.clone())
    }

    /// A copy of the current values (the mixer report shared, not copied).
    pub fn snapshot(&self) -> TelemetrySnapshot {
        self.with(|s| s.clone())
    }
}

/// The input's running totals, as its handle reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InputCounters {
    /// Datagrams received (or recorded items replayed).
    pub datagrams: u64,
    /// Complete frames committed.
    pub frames: u64,
    /// Datagrams that were not valid for their protocol (malformed or oversized).
    pub malformed: u64,
    /// Datagrams refused by the sender lock or allow-list.
    pub rejected: u64,
    /// Frames the hand-off to the renderer dropped because it was full.
    pub dropped: u64,
}

/// Per-second rates from running totals, averaged over about one second.
#[derive(Debug, Clone, Default)]
pub struct RateMeter {
    /// Samples of (time, totals), oldest first, spanning a little over `span`.
    samples: VecDeque<(Instant, InputCounters)>,
}

/// Rates derived by [`RateMeter`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct InputRates {
    /// Datagrams per second.
    pub datagrams: f64,
    /// Frames per second.
    pub frames: f64,
}

impl RateMeter {
    /// The span rates are averaged over.
    pub const SPAN: Duration = Duration::from_secs(1);
    /// The most samples kept (a panel refreshing faster than this many times per span only
    /// shortens the span).
    const CAPACITY: usize = 64;

    /// Adds the totals read at `now` and returns the rates over the last span (zero until two
    /// samples are apart).
    pub fn update(&mut self, now: Instant, totals: InputCounters) -> InputRates {
        // Totals that went backwards (a restarted input) start over.
        if self.samples.back().is_some_and(|(t, c)| {
            now < *t || totals.datagrams < c.datagrams || totals.frames < c.frames
        }) {
            self.samples.clear();
        }
        self.samples.push_back((now, totals));
        while self.samples.len() > Self::CAPACITY
            || (self.samples.len() > 2
                && self
                    .samples
                    .get(1)
                    .is_some_and(|(t, _)| now.saturating_duration_since(*t) >= Self::SPAN))
        {
            self.samples.pop_front();
        }
        let (Some((t0, c0)), Some((t1, c1))) = (self.samples.front(), self.samples.back()) else {
            return InputRates::default();
        };
        let dt = t1.saturating_duration_since(*t0).as_secs_f64();
        if dt <= 0.0 {
            return InputRates::default();
        }
        InputRates {
            datagrams: (c1.datagrams - c0.datagrams) as f64 / dt,
            frames: (c1.frames - c0.frames) as f64 / dt,
        }
    }
}

/// A fixed-size window of the most recent durations, with percentiles.
#[derive(Debug, Clone)]
pub struct Window {
    values: VecDeque<Duration>,
    capacity: usize,
}

impl Window {
    /// A window keeping the last `capacity` values (at least 1).
    pub fn new(capacity: usize) -> Window {
        Window {
            values: VecDeque::with_capacity(capacity.max(1)),
            capacity: capacity.max(1),
        }
    }

    /// Adds a value, forgetting the oldest when full.
    pub fn push(&mut self, value: Duration) {
        if self.values.len() == self.capacity {
            self.values.pop_front();
        }
        self.values.push_back(value);
    }

    /// How many values the window holds.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Forgets every value.
    pub fn clear(&mut self) {
        self.values.clear();
    }

    /// The `p`th percentiles (0 to 100) of the values, nearest rank; `None` when empty.
    pub fn percentiles<const N: usize>(&self, p: [f64; N]) -> Option<[Duration; N]> {
        if self.values.is_empty() {
            return None;
        }
        let mut sorted: Vec<Duration> = self.values.iter().copied().collect();
        sorted.sort_unstable();
        let last = sorted.len() - 1;
        Some(p.map(|p| {
            let rank = ((p.clamp(0.0, 100.0) / 100.0) * last as f64).round() as usize;
            sorted[rank.min(last)]
        }))
    }
}

/// What the stage measures as it draws: how old the newest sample was when a frame used it, how
/// long the draw took on the CPU, and the time between frames.
#[derive(Debug, Clone)]
pub struct DrawStats {
    /// Age of the newest sample at each draw that used a new one.
    pub sample_age: Window,
    /// CPU time from the start of a draw to the end of the buffer swap.
    pub draw_time: Window,
    /// Time between the starts of consecutive draws.
    pub interval: Window,
    last_start: Option<Instant>,
    /// Frames drawn.
    pub frames: u64,
    /// Wall time of each control panel refresh (building, painting and swapping it).
    pub panel_time: Window,
    /// Control panel refreshes.
    pub panel_frames: u64,
}

impl Default for DrawStats {
    fn default() -> Self {
        DrawStats {
            sample_age: Window::new(Self::CAPACITY),
            draw_time: Window::new(Self::CAPACITY),
            interval: Window::new(Self::CAPACITY),
            last_start: None,
            frames: 0,
            panel_time: Window::new(Self::CAPACITY),
            panel_frames: 0,
        }
    }
}

impl DrawStats {
    /// Draws remembered: about five seconds at 120 frames per second.
    pub const CAPACITY: usize = 600;

    /// Records a draw that started at `start` and ended at `end`; `sample` is when the newest
    /// sample it used was received, when it used a new one.
    pub fn record(&mut self, start: Instant, end: Instant, sample: Option<Instant>) {
        if let Some(last) = self.last_start.replace(start) {
            self.interval.push(start.saturating_duration_since(last));
        }
        self.draw_time.push(end.saturating_duration_since(start));
        if let Some(received) = sample {
            self.sample_age
                .push(start.saturating_duration_since(received));
        }
        self.frames += 1;
    }

    /// Records a control panel refresh that took `took`.
    pub fn record_panel(&mut self, took: Duration) {
        self.panel_time.push(took);
        self.panel_frames += 1;
    }

    /// Forgets the interval since the last draw (after the stage slept on purpose, so a still
    /// face does not read as a slow frame).
    pub fn idle(&mut self) {
        self.last_start = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arkit::Channel;
    use crate::mixer::{BlendMode, Fade, Layer, Mixer, Region, RegionMask, LAYER_TRACKING};

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn telemetry_keeps_the_newest_frames_and_state() {
        let t0 = Instant::now();
        let t = Telemetry::new(t0);
        assert!(t.snapshot().raw.is_none());
        let mut f = FaceFrame::empty(Protocol::Vmc, "10.0.0.2:39539".parse().unwrap(), t0);
        f.set(Channel::JawOpen, 0.25);
        t.record_raw(&f);
        f.set(Channel::JawOpen, 0.5);
        t.record_calibrated(&f);
        t.record_tracking(TrackingState::Tracking, t0 + ms(5));
        let s = t.snapshot();
        assert_eq!(s.raw.unwrap().get(Channel::JawOpen), Some(0.25));
        assert_eq!(s.calibrated.unwrap().get(Channel::JawOpen), Some(0.5));
        assert_eq!(s.tracking, TrackingState::Tracking);
        assert_eq!(s.tracking_changes, 1);
        assert_eq!(
            s.source(),
            Some((Protocol::Vmc, "10.0.0.2:39539".parse().unwrap()))
        );
        assert!(s.mixed.is_none() && s.mix.is_none(), "nothing mixed yet");
    }

    #[test]
    fn telemetry_keeps_the_newest_mixed_frame_and_report() {
        let t0 = Instant::now();
        let t = Telemetry::new(t0);
        let mut mixer = Mixer::new(vec![
            Layer::new(
                LAYER_TRACKING,
                BlendMode::Override,
                RegionMask::ALL,
                Fade::new(true, Duration::ZERO, Duration::ZERO),
            ),
            Layer::new(
                "smile",
                BlendMode::Add,
                RegionMask::of(&[Region::MouthJaw]),
                Fade::new(true, Duration::ZERO, Duration::ZERO),
            ),
        ]);
        mixer
            .layer_mut("smile")
            .unwrap()
            .values
            .set(Channel::MouthSmileLeft, 0.5);
        let mut f = FaceFrame::empty(Protocol::Vmc, "10.0.0.2:39539".parse().unwrap(), t0);
        f.set(Channel::MouthSmileLeft, 0.25);
        t.record_calibrated(&f);
        mixer.set_tracking(&f);
        let mixed = mixer.mix(t0);
        t.record_mixed(&mixed);
        t.record_mix(mixer.report());
        let s = t.snapshot();
        assert_eq!(
            s.calibrated.unwrap().get(Channel::MouthSmileLeft),
            Some(0.25)
        );
        assert_eq!(s.mixed.unwrap().get(Channel::MouthSmileLeft), Some(0.75));
        let report = s.mix.clone().unwrap();
        let names: Vec<&str> = report.layers.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["rest", LAYER_TRACKING, "smile"]);
        // Snapshots share the report rather than copying it.
        let again = t.snapshot();
        assert!(Arc::ptr_eq(
            s.mix.as_ref().unwrap(),
            again.mix.as_ref().unwrap()
        ));
        // A newer report replaces the older one; snapshots already taken keep theirs.
        mixer.set_active("smile", false, t0);
        mixer.mix(t0);
        t.record_mix(mixer.report());
        let newer = t.snapshot().mix.unwrap();
        assert!(!Arc::ptr_eq(&report, &newer));
        assert_eq!(newer.layers[2].contribution.weight, 0.0);
        assert_eq!(report.layers[2].contribution.weight, 1.0);
        assert_eq!(
            Arc::strong_count(&report),
            3,
            "held by `report`, `s` and `again` only"
        );
    }

    #[test]
    fn rates_average_over_about_a_second() {
        let mut meter = RateMeter::default();
        let t0 = Instant::now();
        let mut rates = InputRates::default();
        // 60 frames and 120 datagrams per second, sampled every 250 ms for three seconds.
        for step in 0..=12u64 {
            let totals = InputCounters {
                datagrams: step * 30,
                frames: step * 15,
                ..InputCounters::default()
            };
            rates = meter.update(t0 + ms(step * 250), totals);
        }
        assert!((rates.frames - 60.0).abs() < 1e-6, "{rates:?}");
        assert!((rates.datagrams - 120.0).abs() < 1e-6, "{rates:?}");
        assert!(meter.samples.len() <= 6, "old samples are forgotten");
        // The input stops: the rate falls to zero within the span.
        let still = InputCounters {
            datagrams: 360,
            frames: 180,
            ..InputCounters::default()
        };
        for step in 13..=20u64 {
            rates = meter.update(t0 + ms(step * 250), still);
        }
        assert_eq!(rates.frames, 0.0);
        // Totals that go backwards start a new measurement instead of a negative rate.
        let rates = meter.update(t0 + ms(5_250), InputCounters::default());
        assert_eq!(rates, InputRates::default());
    }

    #[test]
    fn windows_report_nearest_rank_percentiles_and_stay_bounded() {
        let mut w = Window::new(100);
        assert!(w.percentiles([50.0]).is_none());
        for v in 1..=200u64 {
            w.push(ms(v));
        }
        assert_eq!(w.len(), 100, "only the newest hundred are kept");
        let [p50, p99, p100] = w.percentiles([50.0, 99.0, 100.0]).unwrap();
        assert_eq!(p50, ms(151));
        assert_eq!(p99, ms(199));
        assert_eq!(p100, ms(200));
    }

    #[test]
    fn draw_stats_measure_age_time_and_interval() {
        let mut d = DrawStats::default();
        let t0 = Instant::now();
        d.record(t0, t0 + ms(3), Some(t0 - ms(10)));
        d.record(t0 + ms(16), t0 + ms(20), None);
        d.idle();
        d.record(t0 + ms(1000), t0 + ms(1002), Some(t0 + ms(990)));
        assert_eq!(d.frames, 3);
        assert_eq!(d.interval.len(), 1, "the idle gap is not a frame interval");
        assert_eq!(d.interval.percentiles([50.0]).unwrap(), [ms(16)]);
        assert_eq!(
            d.sample_age.percentiles([0.0, 100.0]).unwrap(),
            [ms(10), ms(10)]
        );
        assert_eq!(d.draw_time.percentiles([100.0]).unwrap(), [ms(4)]);
    }
}

//! The ingest-side chain of a live run, from each decoded frame to the hand-off:
//!
//! ```text
//! frame ─▶ raw tap, telemetry ─▶ Conditioner (calibrate, smooth, tracking loss)
//!       ─▶ Mixer (tracking layer, regions held by expressions; [layers]; its sources: lip sync,
//!          idle life, expressions, the API's injected values) ─▶ forward as VMC, telemetry,
//!          bridge, wake
//! lip-sync hop (audio thread), key, panel button, VMC key, API ─▶ command ─▶ the mixer's
//!          sources (see crate::stack) ─▶ their news ─▶ the expressions' watch, the API, the stage
//! tick (every 10 ms) ─▶ the sources move on (idle life, fades, lip sync's timeout)
//! ```
//!
//! [`LiveSink`] is a [`FrameSink`]: the ingest thread (or a replay) calls it for every frame and
//! every few milliseconds. Commands from the control panel and the config watcher arrive
//! through a channel and are carried out at the next tick.

use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, watch};

use super::StartError;
use crate::api::{ApiEmitter, ApiEvent, InjectedStore};
use crate::arkit::{FaceFrame, FrameSink, COUNT};
use crate::bridge::FrameSender;
use crate::calibrate::{
    ChannelRange, Conditioner, NeutralPose, Output, Profile, SmoothingConfig, TrackingConfig,
    TrackingState, TrackingSummary,
};
use crate::config::Config;
use crate::control::telemetry::Telemetry;
use crate::control::{AppEvent, Notify, Topic};
use crate::expressions::{
    Expression, ExpressionInput, ExpressionNews, ExpressionStatus, Key, TriggerSource,
};
use crate::lipsync::LipFrame;
use crate::session::forward::Forwarder;
use crate::stack::{live_mixer, restack, LiveMixer, SourceInput, SourceNews, StackConfig};

/// The tracking state as last reported, and how many changes there were: a snapshot the chain
/// keeps current.
pub type TrackingWatch = watch::Receiver<TrackingSummary>;

/// The expressions and their states: a snapshot the chain keeps current.
pub type ExpressionsWatch = watch::Receiver<Vec<ExpressionStatus>>;

/// The API's side of the chain: the values plugins inject and where events go.
#[derive(Clone)]
pub struct ApiLink {
    /// The injected values, mixed in as the top layer.
    pub injected: InjectedStore,
    /// Tracking changes and hotkeys triggered outside the API go to its subscribers.
    pub events: ApiEmitter,
}

/// How often the mixed frame and the mixer's report are published for the control panel.
const REPORT_PERIOD: Duration = Duration::from_millis(100);

/// What the rest of the program asks of the ingest thread; carried out at its next tick.
pub enum SessionCommand {
    /// Take the newest raw frame as the performer's neutral.
    CaptureNeutral,
    /// Use this profile from now on (`None`: no profile).
    Profile(Option<Box<Profile>>),
    /// Copy raw frames to the calibration routine (`None`: stop).
    Tap(Option<mpsc::SyncSender<FaceFrame>>),
    /// New smoothing and tracking settings (a reloaded configuration).
    Settings(Box<(SmoothingConfig, TrackingConfig)>),
    /// A new layer stack (a reloaded configuration).
    Layers(Box<StackConfig>),
    /// The avatar changed: the VRM preset expressions it has.
    Presets(Vec<Expression>),
    /// One hop of lip sync: the visemes for the lip-sync layer.
    Lip(LipFrame),
    /// A trigger, a key or a release for the expressions.
    Expression(ExpressionInput),
    /// Answer once every command sent before this one is carried out and what follows from
    /// it published (the expressions' states in their watch), so that the sender (the API)
    /// can wait for its trigger to show. A dropped receiver is no error.
    Done(oneshot::Sender<()>),
}

/// Makes the conditioner's neutral pose (a performer's, or all zeros) the mixer's rest pose.
fn rest_from(mixer: &mut LiveMixer, core: &Conditioner) {
    let n = core.neutral();
    mixer.set_rest(n.weights, n.head, [n.left_eye, n.right_eye]);
}

/// Where the chain's output and news go besides the hand-off.
pub struct Outputs {
    /// The hand-off to the render thread (`None`: no front-end draws, as in the relay).
    pub sender: Option<FrameSender>,
    /// The control panel's telemetry, when there is a panel.
    pub telemetry: Option<Arc<Telemetry>>,
    /// The stage's events (tracking state, outcomes of commands), when there is a window.
    pub notify: Option<Notify>,
    /// Whether to wake the stage for each frame (it renders only on change).
    pub wake: bool,
    /// The tracking state, kept current for the headless report and the API.
    pub tracking: watch::Sender<TrackingSummary>,
    /// The expressions and their states, kept current for the panel and the API.
    pub expressions: watch::Sender<Vec<ExpressionStatus>>,
    /// The API's injected values and events, while it runs.
    pub api: Option<ApiLink>,
}

/// The ingest-side chain of a live run. See the module documentation.
pub struct LiveSink {
    core: Conditioner,
    mixer: LiveMixer,
    forwarder: Option<Forwarder>,
    out: Outputs,
    commands: mpsc::Receiver<SessionCommand>,
    /// The main smoothing settings (a profile may override them).
    smoothing: SmoothingConfig,
    /// The profile in use, updated when a neutral is captured.
    profile: Option<Profile>,
    /// Where profiles are saved.
    profiles: PathBuf,
    /// The newest frame as received.
    last_raw: Option<FaceFrame>,
    /// The calibration routine's copy of the raw frames.
    tap: Option<mpsc::SyncSender<FaceFrame>>,
    /// When the mixer's report was last published.
    last_report: Option<Instant>,
    /// The stack as configured, without the avatar's presets.
    stack: StackConfig,
    /// The avatar's VRM preset expressions.
    presets: Vec<Expression>,
    /// Whether the face counted as found at the last tracking change (for the API's event).
    face_found: bool,
    /// Senders waiting for the commands before their [`SessionCommand::Done`] to be carried
    /// out; answered once the sources' news is published.
    done: Vec<oneshot::Sender<()>>,
}

impl LiveSink {
    /// The chain for `config` with `profile` applied (saving captured neutrals into
    /// `profiles`), delivering to `out` and taking commands from `commands`; `presets` are the
    /// avatar's VRM preset expressions.
    pub fn new(
        config: &Config,
        profile: Option<&Profile>,
        profiles: PathBuf,
        out: Outputs,
        commands: mpsc::Receiver<SessionCommand>,
        presets: Vec<Expression>,
    ) -> Result<LiveSink, StartError> {
        let now = Instant::now();
        let mut core = Conditioner::new(config.smoothing, config.tracking, now);
        if let Some(profile) = profile {
            profile.apply_to(&mut core, &config.smoothing);
        }
        let forwarder = Forwarder::new(&config.forward)?;
        if forwarder.is_some() {
            tracing::info!(to = ?config.forward.to, "forwarding the mixed stream as VMC");
        }
        let stack = StackConfig::of(config);
        let full = stack.clone().with_presets(presets.clone());
        let injected = out.api.as_ref().map(|api| api.injected.clone());
        let mut mixer = live_mixer(&full, injected, now);
        rest_from(&mut mixer, &core);
        let mut sink = LiveSink {
            core,
            mixer,
            forwarder,
            out,
            commands,
            smoothing: config.smoothing,
            profile: profile.cloned(),
            profiles,
            last_raw: None,
            tap: None,
            last_report: None,
            stack,
            presets,
            face_found: false,
            done: Vec::new(),
        };
        sink.mixer.advance(now);
        sink.hear_sources();
        Ok(sink)
    }

    /// Copies every raw frame to `tap` from the start (the calibration routine's input).
    pub fn with_tap(mut self, tap: mpsc::SyncSender<FaceFrame>) -> LiveSink {
        self.tap = Some(tap);
        self
    }

    fn tell(&self, event: AppEvent) {
        if let Some(notify) = &self.out.notify {
            notify(event);
        }
    }

    fn report(&self, topic: Topic, result: Result<String, String>) {
        let (error, text) = match result {
            Ok(text) => (false, text),
            Err(text) => (true, text),
        };
        self.tell(AppEvent::Message { topic, error, text });
    }

    fn command(&mut self, command: SessionCommand, now: Instant) {
        match command {
            SessionCommand::CaptureNeutral => {
                let result = super::neutral::capture_neutral(
                    &mut self.core,
                    self.last_raw.as_ref(),
                    self.profile.as_mut(),
                    &self.profiles,
                    now,
                );
                self.report(Topic::Calibration, result);
            }
            SessionCommand::Profile(profile) => {
                match &profile {
                    Some(p) => p.apply_to(&mut self.core, &self.smoothing),
                    None => {
                        self.core.set_ranges([ChannelRange::default(); COUNT]);
                        self.core.set_neutral(NeutralPose::default());
                        self.core.set_smoothing(self.smoothing);
                    }
                }
                self.profile = profile.map(|p| *p);
                rest_from(&mut self.mixer, &self.core);
            }
            SessionCommand::Tap(tap) => self.tap = tap,
            SessionCommand::Settings(settings) => {
                let (smoothing, tracking) = *settings;
                self.smoothing = smoothing;
                self.core.set_smoothing(smoothing);
                self.core.set_tracking(tracking);
            }
            SessionCommand::Layers(stack) => {
                self.stack = *stack;
                self.restack(now);
            }
            SessionCommand::Presets(presets) => {
                self.presets = presets;
                self.restack(now);
            }
            SessionCommand::Lip(frame) => {
                if let Some(t) = &self.out.telemetry {
                    t.record_lip(&frame);
                }
                self.mixer.input(&SourceInput::Lip(frame), now);
            }
            SessionCommand::Expression(input) => {
                self.mixer.input(&SourceInput::Expression(input), now);
            }
            SessionCommand::Done(reply) => self.done.push(reply),
        }
    }

    /// Rebuilds the mixer's stack from the configured stack and the avatar's presets at `now`.
    fn restack(&mut self, now: Instant) {
        let full = self.stack.clone().with_presets(self.presets.clone());
        restack(&mut self.mixer, &full, now);
    }

    /// Passes on what the mixer's sources reported: the expressions' states to their watch,
    /// hotkeys others triggered to the API, refused triggers to the stage.
    fn hear_sources(&mut self) {
        for news in self.mixer.take_news() {
            match news {
                SourceNews::Expression(ExpressionNews::States(states)) => {
                    self.out.expressions.send_if_modified(|now| {
                        let changed = *now != states;
                        if changed {
                            *now = states;
                        }
                        changed
                    });
                }
                SourceNews::Expression(ExpressionNews::Triggered { name }) => {
                    if let Some(api) = &self.out.api {
                        api.events.emit(ApiEvent::HotkeyTriggered {
                            hotkey: super::api_host::expression_hotkey(&name),
                            model: None,
                            by_api: false,
                        });
                    }
                }
                SourceNews::Expression(ExpressionNews::Refused(error)) => {
                    self.report(Topic::Expressions, Err(error.to_string()));
                }
            }
        }
    }

    /// Hands on what the conditioner produced: state changes, then its frame through the mixer.
    fn deliver(&mut self, out: Output) {
        for &state in out.states() {
            self.tracking_changed(state);
        }
        if let (Some(frame), Some((values, presence))) = (out.frame, out.layer) {
            if let Some(t) = &self.out.telemetry {
                t.record_calibrated(&frame);
            }
            // The tracking layer fades out over the rest pose when the face is lost; regions
            // an expression holds rest there.
            self.mixer.set_tracking_layer(&values, presence);
            let mixed = self.mixer.mix(values.received);
            self.emit(mixed);
        }
    }

    fn tracking_changed(&mut self, state: TrackingState) {
        let found = matches!(state, TrackingState::Tracking | TrackingState::Reacquire);
        if found != self.face_found {
            self.face_found = found;
            if let Some(api) = &self.out.api {
                api.events
                    .emit(ApiEvent::TrackingStatusChanged { face_found: found });
            }
        }
        self.out.tracking.send_modify(|log| {
            log.state = state;
            log.changes += 1;
        });
        if let Some(t) = &self.out.telemetry {
            t.record_tracking(state, Instant::now());
        }
        self.tell(AppEvent::Tracking(state));
    }

    /// Sends a mixed frame on: forwarded, recorded for the panel, handed off, the stage woken.
    fn emit(&mut self, frame: FaceFrame) {
        if let Some(f) = self.forwarder.as_mut() {
            f.send(&frame);
        }
        if let Some(t) = &self.out.telemetry {
            // The panel redraws ten times a second: the report (which allocates) is built no
            // more often than that.
            let due = self
                .last_report
                .is_none_or(|at| frame.received.saturating_duration_since(at) >= REPORT_PERIOD);
            t.record_mixed(&frame);
            if due {
                self.last_report = Some(frame.received);
                t.record_mix(self.mixer.report());
            }
        }
        if let Some(sender) = &mut self.out.sender {
            sender.send(frame);
        }
        if self.out.wake {
            self.tell(AppEvent::FrameReady);
        }
    }
}

impl FrameSink for LiveSink {
    fn frame(&mut self, frame: FaceFrame) {
        if let Some(t) = &self.out.telemetry {
            t.record_raw(&frame);
        }
        self.last_raw = Some(frame);
        if let Some(tap) = &self.tap {
            // The routine needs the phone's own values, before any profile or smoothing; if it
            // falls behind, frames are dropped rather than queued without bound.
            if let Err(mpsc::TrySendError::Disconnected(_)) = tap.try_send(frame) {
                self.tap = None;
            }
        }
        let out = self.core.on_frame(&frame, frame.received);
        self.deliver(out);
    }

    fn tick(&mut self, now: Instant) {
        while let Ok(command) = self.commands.try_recv() {
            self.command(command, now);
        }
        self.mixer.advance(now);
        self.hear_sources();
        for reply in self.done.drain(..) {
            // The sender may have stopped waiting.
            let _ = reply.send(());
        }
        let out = self.core.on_tick(now);
        let made = out.frame.is_some();
        self.deliver(out);
        if !made && self.mixer.due(now) {
            let mixed = self.mixer.mix(now);
            self.emit(mixed);
        }
    }

    fn key(&mut self, name: &str, pressed: bool) {
        match Key::parse(name) {
            Ok(key) => self.command(
                SessionCommand::Expression(ExpressionInput::Key {
                    key,
                    pressed,
                    source: TriggerSource::Vmc,
                }),
                Instant::now(),
            ),
            Err(error) => tracing::debug!(key = name, %error, "a VMC key facewire does not know"),
        }
        self.hear_sources();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::LAYER_API;
    use crate::arkit::{Channel, Protocol};
    use crate::bridge;
    use crate::calibrate::at;
    use crate::config::LayerSpec;
    use crate::expressions::Trigger;
    use crate::lipsync::LipMode;
    use crate::mixer::{BlendMode, Region, RegionMask, LAYER_IDLE, LAYER_LIPSYNC, LAYER_TRACKING};
    use crate::stack::build_stack;

    fn phone(t: Instant, jaw: f32, blink: f32) -> FaceFrame {
        let mut f = FaceFrame::empty(Protocol::Vmc, "10.0.0.2:5000".parse().unwrap(), t);
        f.set(Channel::JawOpen, jaw);
        f.set(Channel::EyeBlinkLeft, blink);
        f.head = Some(glam::Quat::from_rotation_y(0.3));
        f
    }

    type Chain = (
        LiveSink,
        bridge::FrameReceiver,
        mpsc::Sender<SessionCommand>,
    );

    fn chain(config: &Config) -> Chain {
        chain_with(config, None, Vec::new())
    }

    fn chain_with(config: &Config, api: Option<ApiLink>, presets: Vec<Expression>) -> Chain {
        let (sender, receiver) = bridge::channel(1024);
        let (commands, rx) = mpsc::channel();
        let outputs = Outputs {
            sender: Some(sender),
            telemetry: None,
            notify: None,
            wake: false,
            tracking: watch::channel(Default::default()).0,
            expressions: watch::channel(Vec::new()).0,
            api,
        };
        let dir = std::env::temp_dir();
        (
            LiveSink::new(config, None, dir, outputs, rx, presets).unwrap(),
            receiver,
            commands,
        )
    }

    fn drain(rx: &mut bridge::FrameReceiver) -> Vec<FaceFrame> {
        let mut all = Vec::new();
        rx.take_each(|f| all.push(*f));
        all
    }

    #[test]
    fn a_lost_face_fades_out_in_the_mixer_as_the_conditioner_alone_shows_it() {
        // Without idle life: the face ends at the still neutral, as the conditioner makes it.
        let mut config = Config {
            smoothing: SmoothingConfig::off(),
            ..Config::default()
        };
        config.idle.enabled = false;
        let t0 = Instant::now();
        let (mut sink, mut rx, _commands) = chain(&config);
        let mut alone = Conditioner::new(config.smoothing, config.tracking, t0);
        let mut expected = Vec::new();
        // Half a second of face, then two seconds of silence with ticks every 10 ms.
        for i in 0..30 {
            let t = at(t0, i as f64 / 60.0);
            // Values that change a little, as a live face's do (repeats would read as frozen).
            let f = phone(t, 0.6 - 0.001 * i as f32, 0.2);
            sink.frame(f);
            expected.extend(alone.on_frame(&f, t).frame);
        }
        for i in 1..=200 {
            let t = at(t0, 0.5 + i as f64 * 0.01);
            sink.tick(t);
            expected.extend(alone.on_tick(t).frame);
        }
        let got = drain(&mut rx);
        assert_eq!(got.len(), expected.len());
        // The same frames, within rounding (the mixer normalises rotations its own way).
        for (g, e) in got.iter().zip(&expected) {
            assert_eq!(g.present, e.present);
            for c in g.present.iter() {
                assert!((g.weights[c.index()] - e.weights[c.index()]).abs() < 1e-6);
            }
            let (gh, eh) = (g.head.unwrap(), e.head.unwrap());
            assert!(gh.dot(eh).abs() > 1.0 - 1e-6, "{gh:?} {eh:?}");
        }
        let last = got.last().unwrap();
        assert_eq!(
            last.get(Channel::JawOpen),
            Some(0.0),
            "faded to the rest pose"
        );
        let tracking = &sink.mixer.report().layers[1];
        assert_eq!(tracking.name, LAYER_TRACKING);
        assert_eq!(
            tracking.contribution.weight, 0.0,
            "the tracking layer faded out"
        );
        let held = tracking.contribution.weights[Channel::JawOpen.index()];
        assert!(
            (held - 0.571).abs() < 1e-6,
            "it keeps the held pose: {held}"
        );
    }

    #[test]
    fn a_second_layer_drives_the_mouth_while_the_phone_drives_the_eyes() {
        let mut config = Config {
            smoothing: SmoothingConfig::off(),
            ..Config::default()
        };
        config.layers.order = vec![LAYER_TRACKING.into(), "mouth".into()];
        config.layers.specs.insert(
            LAYER_TRACKING.into(),
            LayerSpec {
                regions: RegionMask::of(&[Region::Eyes, Region::Gaze, Region::HeadPose]),
                ..LayerSpec::default()
            },
        );
        let mut mouth = LayerSpec {
            mode: BlendMode::Override,
            regions: RegionMask::of(&[Region::MouthJaw]),
            ..LayerSpec::default()
        };
        mouth.values.insert("jawOpen".into(), 0.9);
        config.layers.specs.insert("mouth".into(), mouth);
        let t0 = Instant::now();
        let (mut sink, mut rx, commands) = chain(&config);
        for i in 0..30 {
            sink.frame(phone(at(t0, i as f64 / 60.0), 0.1 + 0.001 * i as f32, 0.8));
        }
        let last = *drain(&mut rx).last().unwrap();
        assert_eq!(
            last.get(Channel::JawOpen),
            Some(0.9),
            "the mouth layer's jaw"
        );
        assert_eq!(
            last.get(Channel::EyeBlinkLeft),
            Some(0.8),
            "the phone's blink"
        );
        assert!(last.head.is_some(), "the phone's head");
        // A reloaded stack without the mouth layer gives the jaw back to the phone... which
        // this stack's tracking layer does not drive: the jaw leaves the frame.
        let mut plain = config.layers.clone();
        plain.order.pop();
        plain.specs.remove("mouth");
        commands
            .send(SessionCommand::Layers(Box::new(StackConfig {
                layers: plain,
                ..StackConfig::of(&config)
            })))
            .unwrap();
        sink.tick(at(t0, 0.6));
        sink.frame(phone(at(t0, 0.61), 0.2, 0.8));
        let last = *drain(&mut rx).last().unwrap();
        assert_eq!(last.get(Channel::JawOpen), None);
        assert_eq!(last.get(Channel::EyeBlinkLeft), Some(0.8));
    }

    fn lip(t: f64, aa: f32) -> SessionCommand {
        let mut weights = [0.0; crate::arkit::VISEMES];
        weights[crate::lipsync::Viseme::Aa.index()] = aa;
        weights[0] = 1.0 - aa;
        SessionCommand::Lip(LipFrame {
            t,
            volume_db: -30.0,
            viseme: crate::lipsync::Viseme::Aa,
            weights,
            gate: (-50.0, -30.0),
            closure: 0.0,
        })
    }

    #[test]
    fn audio_fades_the_lip_layer_in_and_its_end_fades_it_out() {
        let config = Config::default();
        assert_eq!(config.lipsync.mode, LipMode::WhenLost);
        let t0 = Instant::now();
        let (mut sink, mut rx, commands) = chain(&config);
        // No phone, no audio: nothing to show.
        sink.tick(t0);
        assert!(drain(&mut rx)
            .iter()
            .all(|f| f.get(Channel::JawOpen).is_none()));
        // Audio saying "a" for half a second, a hop every 16 ms.
        for i in 0..30 {
            commands.send(lip(i as f64 * 0.016, 1.0)).unwrap();
            sink.tick(at(t0, 0.016 * f64::from(i)));
        }
        let last = *drain(&mut rx).last().expect("frames while audio comes");
        assert!(last.get(Channel::JawOpen).unwrap() > 0.6, "{last:?}");
        assert!(last.visemes[crate::lipsync::Viseme::Aa.index()] > 0.99);
        // The audio stops: within a second the layer is gone and the mouth rests.
        for i in 1..=100 {
            sink.tick(at(t0, 0.48 + 0.01 * f64::from(i)));
        }
        let last = *drain(&mut rx).last().unwrap();
        assert!(last.get(Channel::JawOpen).unwrap_or(0.0) < 1e-6, "{last:?}");
        assert_eq!(last.visemes, [0.0; crate::arkit::VISEMES]);
    }

    /// Half a second of a live face, then `silence` seconds of ticks every 10 ms; the frames.
    fn face_then_silence(config: &Config, silence: f64) -> Vec<FaceFrame> {
        let t0 = Instant::now();
        let (mut sink, mut rx, _commands) = chain(config);
        for i in 0..30 {
            let t = at(t0, i as f64 / 60.0);
            sink.frame(phone(t, 0.6 - 0.001 * i as f32, 0.2));
            sink.tick(t);
        }
        let ticks = (silence * 100.0) as u32;
        for i in 1..=ticks {
            sink.tick(at(t0, 0.5 + f64::from(i) * 0.01));
        }
        drain(&mut rx)
    }

    /// The head's turn in degrees.
    fn degrees(q: glam::Quat) -> f32 {
        q.angle_between(glam::Quat::IDENTITY).to_degrees()
    }

    #[test]
    fn tracking_loss_now_ends_in_idle_life_not_a_still_neutral() {
        let config = Config {
            smoothing: SmoothingConfig::off(),
            ..Config::default()
        };
        assert!(config.idle.enabled, "idle life is on by default");
        let frames = face_then_silence(&config, 12.0);
        // While the face tracks, the phone's frames pass as before: the idle layer has no
        // weight and adds nothing (the phone's head is 0.3 rad, its blink 0.2).
        let live = &frames[20];
        assert_eq!(live.get(Channel::EyeBlinkLeft), Some(0.2));
        assert_eq!(live.get(Channel::EyeLookOutLeft), None);
        assert!(
            live.head
                .unwrap()
                .dot(glam::Quat::from_rotation_y(0.3))
                .abs()
                > 1.0 - 1e-6
        );
        // Long after the loss (the default fade is well under 2 s), frames keep coming.
        let lost: Vec<&FaceFrame> = frames
            .iter()
            .filter(|f| f.received >= frames[0].received + Duration::from_secs(3))
            .collect();
        assert!(
            lost.len() > 400,
            "the mixer makes frames while idle animates: {}",
            lost.len()
        );
        // The mouth rests; the eyes blink (fully); the head breathes; the eyes glance.
        assert!(lost.iter().all(|f| f.get(Channel::JawOpen) == Some(0.0)));
        let blinks = lost
            .iter()
            .map(|f| f.get(Channel::EyeBlinkLeft).unwrap())
            .fold(0.0f32, f32::max);
        assert!(blinks > 0.9, "a blink in 9 s: {blinks}");
        let turns: Vec<f32> = lost.iter().map(|f| degrees(f.head.unwrap())).collect();
        let (lo, hi) = turns
            .iter()
            .fold((f32::MAX, 0.0f32), |(lo, hi), &d| (lo.min(d), hi.max(d)));
        assert!(hi - lo > 0.2, "the head moves: {lo}..{hi} degrees");
        assert!(hi < 3.0, "but only a little: {hi} degrees");
        let glance = lost
            .iter()
            .map(|f| degrees(f.left_eye.unwrap()))
            .fold(0.0f32, f32::max);
        assert!(
            (1.0..=8.0).contains(&glance),
            "the eyes glance: {glance} degrees"
        );
        for f in &frames {
            assert!(f
                .weights
                .iter()
                .all(|w| w.is_finite() && (0.0..=1.0).contains(w)));
            for q in [f.head, f.left_eye, f.right_eye].into_iter().flatten() {
                assert!(q.is_finite() && (q.length() - 1.0).abs() < 1e-4);
            }
        }
    }

    #[test]
    fn idle_life_off_keeps_the_still_neutral() {
        let mut config = Config {
            smoothing: SmoothingConfig::off(),
            ..Config::default()
        };
        config.idle.enabled = false;
        let frames = face_then_silence(&config, 5.0);
        let last = frames.last().unwrap();
        assert!(
            frames.last().unwrap().received < frames[0].received + Duration::from_secs(3),
            "no frames once the face has faded"
        );
        assert_eq!(last.get(Channel::EyeBlinkLeft), Some(0.0));
        assert_eq!(last.get(Channel::EyeLookOutLeft), None);
        assert!(last.head.unwrap().dot(glam::Quat::IDENTITY).abs() > 1.0 - 1e-6);
    }

    #[test]
    fn idle_life_shows_before_a_phone_connects_and_can_stay_faintly_under_tracking() {
        let t0 = Instant::now();
        let (mut sink, mut rx, commands) = chain(&Config::default());
        for i in 0..800 {
            sink.tick(at(t0, f64::from(i) * 0.01));
        }
        let waiting = drain(&mut rx);
        assert!(waiting.len() > 300, "{}", waiting.len());
        assert!(waiting
            .iter()
            .any(|f| f.get(Channel::EyeBlinkLeft) > Some(0.9)));
        // A reload that keeps a fifth of idle life under tracking: the phone's still head
        // now breathes a little.
        let mut stack = StackConfig::of(&Config::default());
        stack.idle.under_tracking = 0.2;
        commands
            .send(SessionCommand::Layers(Box::new(stack)))
            .unwrap();
        let mut turns = Vec::new();
        for i in 0..400 {
            let t = at(t0, 8.0 + f64::from(i) * 0.01);
            let mut f = phone(t, 0.1 + 0.001 * (i % 2) as f32, 0.0);
            f.head = Some(glam::Quat::IDENTITY);
            sink.frame(f);
            sink.tick(t);
        }
        for f in drain(&mut rx).iter().skip(100) {
            turns.push(degrees(f.head.unwrap()));
        }
        let hi = turns.iter().copied().fold(0.0f32, f32::max);
        assert!(
            hi > 0.01 && hi < 0.5,
            "a faint sway under tracking: {hi} degrees"
        );
        assert_eq!(sink.mixer.weight(LAYER_IDLE), Some(0.2));
    }

    #[test]
    fn the_idle_layer_goes_where_the_order_lists_it_else_on_top() {
        let mut stack = StackConfig::default();
        let names = |stack: &StackConfig| -> Vec<String> {
            build_stack(stack).into_iter().map(|l| l.name).collect()
        };
        assert_eq!(names(&stack), [LAYER_TRACKING, LAYER_LIPSYNC, LAYER_IDLE]);
        stack.layers.order = vec![LAYER_IDLE.into(), LAYER_TRACKING.into()];
        assert_eq!(names(&stack), [LAYER_IDLE, LAYER_TRACKING, LAYER_LIPSYNC]);
        stack.idle.enabled = false;
        let layers = build_stack(&stack);
        assert_eq!(layers[0].name, LAYER_IDLE, "the listed place stays");
        assert_eq!(layers[0].weight(), 0.0, "but drives nothing");
        stack.layers.order = vec![LAYER_TRACKING.into()];
        assert_eq!(names(&stack), [LAYER_TRACKING, LAYER_LIPSYNC, LAYER_IDLE]);
        assert_eq!(build_stack(&stack)[2].weight(), 0.0, "off, in its place");
    }

    /// A configuration with `toml`'s expressions, smoothing and idle life off.
    fn with_expressions(toml: &str) -> Config {
        let mut config = Config::parse(toml, "test.toml").unwrap();
        config.smoothing = SmoothingConfig::off();
        config.idle.enabled = false;
        config
    }

    const ANGRY_AND_SMILE: &str = r#"
[expressions.angry]
values = { browDownLeft = 0.9, browDownRight = 0.9 }
holds = ["brows"]
key = "F3"
fade_in = 0.2
fade_out = 0.2

[expressions.smile]
values = { mouthSmileLeft = 0.8 }
key = "F1"
fade_in = 0.2
fade_out = 0.2

[expressions.wink]
values = { eyeBlinkLeft = 1.0 }
mode = "hold"
layer = "wink"
key = "F4"
fade_in = 0.1
fade_out = 0.1
"#;

    /// The phone with raised brows, an open jaw and a smile of 0.1, at `t`.
    fn raised(t: Instant, i: u32) -> FaceFrame {
        let mut f = phone(t, 0.5 + 0.001 * (i % 2) as f32, 0.0);
        f.set(Channel::BrowInnerUp, 0.8);
        f.set(Channel::BrowOuterUpLeft, 0.6);
        f.set(Channel::MouthSmileLeft, 0.1);
        f
    }

    fn key(name: &str, pressed: bool) -> SessionCommand {
        SessionCommand::Expression(ExpressionInput::Key {
            key: Key::parse(name).unwrap(),
            pressed,
            source: TriggerSource::Key,
        })
    }

    /// Streams the raised-brow face from `from` for `secs` seconds at 60 Hz, ticking too; the
    /// last frame mixed.
    fn stream(
        sink: &mut LiveSink,
        rx: &mut bridge::FrameReceiver,
        t0: Instant,
        from: f64,
        secs: f64,
    ) -> FaceFrame {
        let n = (secs * 60.0) as u32;
        for i in 0..n {
            let t = at(t0, from + f64::from(i) / 60.0);
            sink.tick(t);
            sink.frame(raised(t, i));
        }
        *drain(rx).last().unwrap()
    }

    #[test]
    fn a_key_fades_an_expression_in_and_it_holds_its_regions_from_the_phone() {
        let config = with_expressions(ANGRY_AND_SMILE);
        let t0 = Instant::now();
        let (mut sink, mut rx, commands) = chain(&config);
        let before = stream(&mut sink, &mut rx, t0, 0.0, 0.5);
        assert_eq!(
            before.get(Channel::BrowInnerUp),
            Some(0.8),
            "the phone's brows"
        );
        // The expression's channels are in the frame at the rest value while it is off.
        assert_eq!(before.get(Channel::BrowDownLeft), Some(0.0));
        // F3 goes down: angry fades in over 0.2 s.
        commands.send(key("F3", true)).unwrap();
        let mid = stream(&mut sink, &mut rx, t0, 0.5, 0.1);
        let brow = mid.get(Channel::BrowDownLeft).unwrap();
        assert!(brow > 0.05 && brow < 0.85, "half way: {brow}");
        let on = stream(&mut sink, &mut rx, t0, 0.6, 0.5);
        assert_eq!(on.get(Channel::BrowDownLeft), Some(0.9));
        // The brows are held at rest: the phone's raised brows no longer show...
        assert!(on.get(Channel::BrowInnerUp).unwrap() < 1e-6, "{on:?}");
        assert!(on.get(Channel::BrowOuterUpLeft).unwrap() < 1e-6);
        // ... while the jaw and the smile are still the phone's.
        assert!((on.get(Channel::JawOpen).unwrap() - 0.5).abs() < 0.01);
        assert!((on.get(Channel::MouthSmileLeft).unwrap() - 0.1).abs() < 1e-6);
        let statuses = sink.out.expressions.borrow().clone();
        let angry = statuses.iter().find(|e| e.name == "angry").unwrap();
        assert!(angry.on && angry.weight == 1.0, "{angry:?}");
        // A toggle: letting go of F3 keeps it; pressing again switches it off.
        commands.send(key("F3", false)).unwrap();
        let kept = stream(&mut sink, &mut rx, t0, 1.1, 0.2);
        assert_eq!(kept.get(Channel::BrowDownLeft), Some(0.9));
        commands.send(key("F3", true)).unwrap();
        let off = stream(&mut sink, &mut rx, t0, 1.3, 0.5);
        assert_eq!(
            off.get(Channel::BrowInnerUp),
            Some(0.8),
            "the phone has the brows again"
        );
        assert_eq!(off.get(Channel::BrowDownLeft), Some(0.0));
    }

    #[test]
    fn expressions_on_one_layer_replace_each_other_and_a_hold_key_stacks_on_its_own() {
        let config = with_expressions(ANGRY_AND_SMILE);
        let t0 = Instant::now();
        let (mut sink, mut rx, commands) = chain(&config);
        stream(&mut sink, &mut rx, t0, 0.0, 0.2);
        let expression = |name: &str, trigger| {
            SessionCommand::Expression(ExpressionInput::Trigger {
                name: name.into(),
                trigger,
                source: TriggerSource::Panel,
                fade: None,
            })
        };
        commands.send(expression("Smile", Trigger::Toggle)).unwrap();
        let smiling = stream(&mut sink, &mut rx, t0, 0.2, 0.5);
        assert_eq!(smiling.get(Channel::MouthSmileLeft), Some(0.8));
        // Angry on the same layer: the smile fades out as it fades in.
        commands.send(expression("angry", Trigger::On)).unwrap();
        let angry = stream(&mut sink, &mut rx, t0, 0.7, 0.5);
        assert_eq!(angry.get(Channel::BrowDownLeft), Some(0.9));
        assert!((angry.get(Channel::MouthSmileLeft).unwrap() - 0.1).abs() < 1e-6);
        // The wink is on its own layer: it stacks, while its key is held.
        commands.send(key("F4", true)).unwrap();
        let wink = stream(&mut sink, &mut rx, t0, 1.2, 0.3);
        assert_eq!(wink.get(Channel::EyeBlinkLeft), Some(1.0));
        assert_eq!(wink.get(Channel::BrowDownLeft), Some(0.9));
        commands.send(key("F4", false)).unwrap();
        let open = stream(&mut sink, &mut rx, t0, 1.5, 0.3);
        assert_eq!(open.get(Channel::EyeBlinkLeft), Some(0.0));
        // Everything off at once.
        commands
            .send(SessionCommand::Expression(ExpressionInput::ReleaseAll))
            .unwrap();
        let plain = stream(&mut sink, &mut rx, t0, 1.8, 0.5);
        assert_eq!(plain.get(Channel::BrowDownLeft), Some(0.0));
        // An unknown name changes nothing.
        commands.send(expression("angyr", Trigger::On)).unwrap();
        let same = stream(&mut sink, &mut rx, t0, 2.3, 0.2);
        assert_eq!(same.get(Channel::BrowDownLeft), Some(0.0));
    }

    #[test]
    fn a_reload_keeps_an_expression_that_is_on_and_presets_join_the_stack() {
        let config = with_expressions(ANGRY_AND_SMILE);
        let t0 = Instant::now();
        let (mut sink, mut rx, commands) = chain(&config);
        commands.send(key("F1", true)).unwrap();
        let smiling = stream(&mut sink, &mut rx, t0, 0.0, 0.5);
        assert_eq!(smiling.get(Channel::MouthSmileLeft), Some(0.8));
        // The configuration is saved with a stronger smile: it stays on, at the new value.
        let stronger = with_expressions(
            &ANGRY_AND_SMILE.replace("mouthSmileLeft = 0.8", "mouthSmileLeft = 0.9"),
        );
        commands
            .send(SessionCommand::Layers(Box::new(StackConfig::of(&stronger))))
            .unwrap();
        let after = stream(&mut sink, &mut rx, t0, 0.5, 0.1);
        assert_eq!(after.get(Channel::MouthSmileLeft), Some(0.9));
        // A VRM avatar's presets join the stack after the configured expressions.
        let presets = crate::expressions::vrm_presets(|n| n == "happy");
        commands.send(SessionCommand::Presets(presets)).unwrap();
        stream(&mut sink, &mut rx, t0, 0.6, 0.1);
        let names: Vec<String> = sink.mixer.layers().iter().map(|l| l.name.clone()).collect();
        assert_eq!(
            names,
            [
                LAYER_TRACKING,
                LAYER_LIPSYNC,
                LAYER_IDLE,
                "expression:angry",
                "expression:smile",
                "expression:wink",
                "expression:happy"
            ]
        );
        assert_eq!(sink.mixer.weight("expression:smile"), Some(1.0));
    }

    #[test]
    fn the_stack_section_lists_every_layer_at_the_place_frames_carry_its_weight() {
        let mut config = with_expressions(ANGRY_AND_SMILE);
        config.idle.enabled = true;
        config.layers.order = vec![LAYER_IDLE.into(), LAYER_TRACKING.into()];
        let stack =
            StackConfig::of(&config).with_presets(crate::expressions::vrm_presets(|_| true));
        let names: Vec<String> = build_stack(&stack).into_iter().map(|l| l.name).collect();
        let section = stack.section();
        assert_eq!(section.order, names);
        assert_eq!(names.last().map(String::as_str), Some(LAYER_API));
        let happy = section.specs.get("expression:happy").unwrap();
        assert_eq!(happy.targets.get("vrm:happy"), Some(&1.0));
        // Without the API, no layer for it.
        let mut off = stack.clone();
        off.api = false;
        assert!(!build_stack(&off).iter().any(|l| l.name == LAYER_API));
    }

    fn api() -> ApiLink {
        let (events, _) = tokio::sync::broadcast::channel(8);
        ApiLink {
            injected: InjectedStore::new(),
            events: crate::api::ApiEmitter::for_tests(events),
        }
    }

    fn inject(store: &InjectedStore, name: &str, value: f32, now: Instant) {
        let param = crate::api::params::lookup(name).unwrap();
        store
            .lock()
            .inject(
                1,
                crate::api::InjectMode::Set,
                &[crate::api::ParamValue {
                    param,
                    value,
                    weight: 1.0,
                }],
                false,
                now,
            )
            .unwrap();
    }

    #[test]
    fn injected_values_are_the_top_layer_over_the_phone_and_lapse_after_a_second() {
        let config = with_expressions("");
        let link = api();
        let store = link.injected.clone();
        let t0 = Instant::now();
        let (mut sink, mut rx, _commands) = chain_with(&config, Some(link), Vec::new());
        // No phone: a plugin's jawOpen alone makes frames.
        inject(&store, "jawOpen", 0.7, t0);
        for i in 0..30 {
            sink.tick(at(t0, f64::from(i) * 0.01));
        }
        let frames = drain(&mut rx);
        assert!(
            !frames.is_empty(),
            "injected values make frames without a phone"
        );
        assert_eq!(frames.last().unwrap().get(Channel::JawOpen), Some(0.7));
        // Over the phone (once it has eased in): the injected channel wins, the others are
        // the phone's.
        inject(&store, "jawOpen", 0.7, at(t0, 0.3));
        let over = stream(&mut sink, &mut rx, t0, 0.3, 0.6);
        assert_eq!(over.get(Channel::JawOpen), Some(0.7));
        assert_eq!(over.get(Channel::BrowInnerUp), Some(0.8));
        // Not sent again: a second later the phone's jaw is back.
        let lapsed = stream(&mut sink, &mut rx, t0, 0.9, 1.0);
        assert!(
            (lapsed.get(Channel::JawOpen).unwrap() - 0.5).abs() < 0.01,
            "{lapsed:?}"
        );
        // VTube Studio's own names work too: MouthOpen drives the jaw.
        inject(&store, "MouthOpen", 1.0, at(t0, 1.9));
        let open = stream(&mut sink, &mut rx, t0, 1.9, 0.2);
        assert!(open.get(Channel::JawOpen).unwrap() > 0.9, "{open:?}");
    }

    #[test]
    fn an_api_fade_time_lasts_one_change_and_keys_fade_by_the_expression_s_own() {
        let config = with_expressions(ANGRY_AND_SMILE);
        let t0 = Instant::now();
        let (mut sink, mut rx, commands) = chain(&config);
        stream(&mut sink, &mut rx, t0, 0.0, 0.1);
        commands
            .send(SessionCommand::Expression(ExpressionInput::Trigger {
                name: "smile".into(),
                trigger: Trigger::On,
                source: TriggerSource::Api,
                fade: Some(Duration::from_secs(1)),
            }))
            .unwrap();
        // Smile's own fade is 0.2 s; the plugin asked for a second: half way at 0.5 s.
        let half = stream(&mut sink, &mut rx, t0, 0.1, 0.5);
        let w = sink.mixer.weight("expression:smile").unwrap();
        assert!(
            w > 0.3 && w < 0.7,
            "half way through a second: {w} ({half:?})"
        );
        stream(&mut sink, &mut rx, t0, 0.6, 0.7);
        assert_eq!(sink.mixer.weight("expression:smile"), Some(1.0));
        // Its key switches it off with its own 0.2 s.
        commands.send(key("F1", true)).unwrap();
        stream(&mut sink, &mut rx, t0, 1.3, 0.25);
        assert_eq!(sink.mixer.weight("expression:smile"), Some(0.0));
    }

    #[test]
    fn done_is_answered_once_the_trigger_before_it_shows_in_the_states() {
        let config = with_expressions(ANGRY_AND_SMILE);
        let t0 = Instant::now();
        let (mut sink, _rx, commands) = chain(&config);
        sink.tick(t0);
        let states = sink.out.expressions.subscribe();
        commands
            .send(SessionCommand::Expression(ExpressionInput::Trigger {
                name: "smile".into(),
                trigger: Trigger::On,
                source: TriggerSource::Api,
                fade: None,
            }))
            .unwrap();
        let (done, mut applied) = oneshot::channel();
        commands.send(SessionCommand::Done(done)).unwrap();
        assert!(applied.try_recv().is_err(), "not before the chain's tick");
        sink.tick(at(t0, 0.01));
        applied.try_recv().expect("answered at the tick");
        let smile = states.borrow().iter().find(|e| e.name == "smile").cloned();
        assert!(smile.is_some_and(|e| e.on), "the state is published first");
        // A sender that stopped waiting is no error.
        let (done, applied) = oneshot::channel();
        drop(applied);
        commands.send(SessionCommand::Done(done)).unwrap();
        sink.tick(at(t0, 0.02));
    }

    #[test]
    fn idle_life_switched_off_by_a_reload_fades_out() {
        let t0 = Instant::now();
        let config = Config::default();
        let (mut sink, mut rx, commands) = chain(&config);
        for i in 0..300 {
            sink.tick(at(t0, f64::from(i) * 0.01));
        }
        assert_eq!(sink.mixer.weight(LAYER_IDLE), Some(1.0));
        let mut off = StackConfig::of(&config);
        off.idle.enabled = false;
        commands
            .send(SessionCommand::Layers(Box::new(off)))
            .unwrap();
        let mut weights = Vec::new();
        for i in 0..300 {
            sink.tick(at(t0, 3.0 + f64::from(i) * 0.01));
            weights.push(sink.mixer.weight(LAYER_IDLE).unwrap());
        }
        drain(&mut rx);
        // It fades (no jump from 1 to 0), then it is gone and idle life stops.
        assert!(weights.windows(2).all(|w| w[0] - w[1] < 0.2), "{weights:?}");
        assert!(weights.iter().any(|w| *w > 0.1 && *w < 0.9));
        assert_eq!(weights.last(), Some(&0.0));
        // Idle life stops: its layer's values no longer move.
        let idle = |sink: &LiveSink| {
            let layers = sink.mixer.layers();
            layers.iter().find(|l| l.name == LAYER_IDLE).unwrap().values
        };
        let before = idle(&sink);
        for i in 0..100 {
            sink.tick(at(t0, 6.0 + f64::from(i) * 0.01));
        }
        assert_eq!(idle(&sink), before);
    }
}

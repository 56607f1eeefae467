//! The audio side of lip sync in a live run: the microphone (or a WAV file played in real time)
//! through [`LipSync`], each hop's visemes sent to the chain on the ingest thread, where they
//! fill the mixer's lip-sync layer. It also records the performer's vowels on request (the
//! panel's "Record my vowels") and takes a performer's voice when their profile is chosen.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{Notify, SessionCommand, StartError};
use crate::audio::{AudioStatus, Capture};
use crate::calibrate::Profile;
use crate::config::LipsyncConfig;
use crate::control::telemetry::{LipSourceState, Telemetry};
use crate::control::Topic;
use crate::control::{AppEvent, ControlError};
use crate::lipsync::calibration::{learn_take, prompts, Voice};
use crate::lipsync::profile::Profile as Vowels;
use crate::lipsync::{wav, LipMode, LipSync};

/// Where a live run's lip sync listens.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum LipInput<'a> {
    /// Nowhere: no lip sync in this run.
    #[default]
    None,
    /// The microphone (`[lipsync] device`, else the default input).
    Microphone,
    /// A WAV file played in real time as if it were the microphone.
    Wav(&'a Path),
}

/// How often the WAV player hands on audio: about one capture period of a microphone.
const CHUNK: Duration = Duration::from_millis(10);
/// Silence played after a WAV file ends, so the mouth closes.
const TAIL: Duration = Duration::from_millis(400);
/// The longest vowel take kept, seconds of audio (a bound on memory at any rate).
const MAX_TAKE: usize = 30;

/// What the audio thread and the rest of the run share.
#[derive(Default)]
struct Shared {
    /// A voice to switch to at the next block (`Some(None)`: the built-in one).
    voice: Option<Option<Voice>>,
    /// While the performer's vowels are recorded: the samples so far and their rate.
    take: Option<(Vec<f32>, u32)>,
}

/// Audio in, visemes out to the chain: a [`LipSync`] whose frames become commands.
struct Feed {
    sync: LipSync,
    rate: u32,
    config: LipsyncConfig,
    voice: Option<Voice>,
    commands: mpsc::Sender<SessionCommand>,
    shared: Arc<Mutex<Shared>>,
}

impl Feed {
    fn new(
        rate: u32,
        config: &LipsyncConfig,
        voice: Option<Voice>,
        commands: mpsc::Sender<SessionCommand>,
        shared: Arc<Mutex<Shared>>,
    ) -> Feed {
        Feed {
            sync: Feed::analyser(rate, config, voice.as_ref()),
            rate,
            config: config.clone(),
            voice,
            commands,
            shared,
        }
    }

    fn analyser(rate: u32, config: &LipsyncConfig, voice: Option<&Voice>) -> LipSync {
        match voice {
            Some(v) => LipSync::new(rate, v.profile.clone(), v.settings(config.settings())),
            None => LipSync::new(rate, Vowels::builtin(), config.settings()),
        }
    }

    /// Analyses `samples` (at `rate` Hz); `false` once the chain is gone.
    fn push(&mut self, samples: &[f32], rate: u32) -> bool {
        let mut rebuild = rate != self.rate;
        {
            let mut shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(voice) = shared.voice.take() {
                self.voice = voice;
                rebuild = true;
            }
            if let Some((take, take_rate)) = shared.take.as_mut() {
                *take_rate = rate;
                if take.len() + samples.len() <= MAX_TAKE * rate as usize {
                    take.extend_from_slice(samples);
                }
            }
        }
        if rebuild {
            self.rate = rate;
            self.sync = Feed::analyser(rate, &self.config, self.voice.as_ref());
        }
        let mut alive = true;
        let commands = &self.commands;
        self.sync.push(samples, |frame| {
            alive &= commands.send(SessionCommand::Lip(frame)).is_ok();
        });
        alive
    }
}

/// A running lip-sync input; dropping it stops it.
pub struct LipSource {
    stop: Arc<AtomicBool>,
    /// The WAV player.
    thread: Option<JoinHandle<()>>,
    /// The microphone.
    capture: Option<Capture>,
    shared: Arc<Mutex<Shared>>,
    telemetry: Option<Arc<Telemetry>>,
}

impl Drop for LipSource {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Some(mut c) = self.capture.take() {
            c.stop();
        }
    }
}

/// The name a voice goes by in the panel.
fn voice_name(voice: Option<&Voice>, performer: Option<&str>) -> String {
    match (voice, performer) {
        (Some(_), Some(p)) => format!("{p}'s own"),
        (Some(_), None) => "the performer's own".into(),
        (None, _) => "built-in".into(),
    }
}

/// Starts lip sync from `input` with `config`'s settings and the performer's `profile` (their
/// vowels, when it has them), sending each hop to `commands` and its state to `telemetry`.
/// `None` when lip sync is off or there is no input. A microphone that cannot be opened is
/// said once (and shown in the panel); the run goes on without it.
pub fn start_lipsync(
    config: &LipsyncConfig,
    input: LipInput<'_>,
    profile: Option<&Profile>,
    commands: mpsc::Sender<SessionCommand>,
    telemetry: Option<Arc<Telemetry>>,
) -> Result<Option<LipSource>, StartError> {
    if config.mode == LipMode::Off {
        if let LipInput::Wav(file) = input {
            tracing::warn!(
                file = %file.display(),
                "lip sync is off ([lipsync] mode = \"off\"), so the WAV file is not played; \
                 set mode = \"always\" (or when_lost, blend) to use it"
            );
        }
        return Ok(None);
    }
    let voice = profile.and_then(|p| p.vowels.clone());
    let shared = Arc::new(Mutex::new(Shared::default()));
    let stop = Arc::new(AtomicBool::new(false));
    // The gate it starts from: with the automatic level, each frame carries the one in use.
    let start = voice
        .as_ref()
        .map_or(config.settings(), |v| v.settings(config.settings()));
    let gate = (start.floor_db, start.ceiling_db);
    let mut state = LipSourceState {
        mode: config.mode,
        source: String::new(),
        microphone: false,
        problem: None,
        gate,
        voice: voice_name(voice.as_ref(), profile.map(|p| p.performer.as_str())),
        prompt: None,
    };
    let mut source = LipSource {
        stop: Arc::clone(&stop),
        thread: None,
        capture: None,
        shared: Arc::clone(&shared),
        telemetry: telemetry.clone(),
    };
    match input {
        LipInput::None => return Ok(None),
        LipInput::Microphone => {
            let mut feed = Feed::new(48_000, config, voice, commands, Arc::clone(&shared));
            let status_telemetry = telemetry.clone();
            let started = Capture::start(
                config.device(),
                move |samples, rate| {
                    feed.push(samples, rate);
                },
                move |status| {
                    match &status {
                        AudioStatus::Lost { .. } => tracing::warn!(%status, "lip sync"),
                        _ => tracing::info!(%status, "lip sync"),
                    }
                    if let Some(t) = &status_telemetry {
                        let problem =
                            matches!(status, AudioStatus::Lost { .. }).then(|| status.to_string());
                        t.update_lip_source(|s| s.problem = problem);
                    }
                },
            );
            state.microphone = true;
            match started {
                Ok(capture) => {
                    tracing::info!(
                        device = capture.device(),
                        rate = capture.rate(),
                        mode = config.mode.name(),
                        "lip sync from the microphone"
                    );
                    state.source = capture.device().to_string();
                    source.capture = Some(capture);
                }
                Err(error) => {
                    tracing::warn!(
                        "lip sync has no microphone: {error}; facewire goes on without it"
                    );
                    state.source = "no microphone".into();
                    state.problem = Some(error.to_string());
                }
            }
        }
        LipInput::Wav(file) => {
            let audio = wav::read_mono(file)?;
            let lead = Duration::from_secs_f32(config.lead_ms / 1000.0);
            let feed = Feed::new(audio.rate, config, voice, commands, Arc::clone(&shared));
            tracing::info!(
                file = %file.display(),
                rate = audio.rate,
                seconds = audio.samples.len() as f64 / f64::from(audio.rate.max(1)),
                mode = config.mode.name(),
                "lip sync from a WAV file"
            );
            let name = file.to_path_buf();
            state.source = name.display().to_string();
            source.thread = Some(
                std::thread::Builder::new()
                    .name("facewire-lipsync".into())
                    .spawn(move || play(audio, lead, feed, &stop, &name))
                    .map_err(StartError::Thread)?,
            );
        }
    }
    if let Some(t) = &telemetry {
        t.record_lip_source(state);
    }
    Ok(Some(source))
}

impl LipSource {
    /// Uses `profile`'s vowels from now on (`None`, or a profile without them: the built-in
    /// ones).
    pub fn set_voice(&self, profile: Option<&Profile>) {
        let voice = profile.and_then(|p| p.vowels.clone());
        let name = voice_name(voice.as_ref(), profile.map(|p| p.performer.as_str()));
        self.shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .voice = Some(voice);
        if let Some(t) = &self.telemetry {
            t.update_lip_source(|s| s.voice = name);
        }
    }

    /// Whether it listens to a microphone that is open.
    pub fn has_microphone(&self) -> bool {
        self.capture.is_some()
    }

    /// Records `performer`'s vowels from the microphone on a thread of its own, prompting in
    /// the panel; saves them into their profile in `profiles`, uses them from then on, and
    /// tells the outcome through `notify`.
    pub fn record_vowels(
        &self,
        performer: String,
        profiles: PathBuf,
        notify: Notify,
    ) -> Result<(), ControlError> {
        if self.capture.is_none() {
            return Err(ControlError::NoMicrophone);
        }
        let shared = Arc::clone(&self.shared);
        let telemetry = self.telemetry.clone();
        let prompt = move |text: Option<String>| {
            if let Some(t) = &telemetry {
                t.update_lip_source(|s| s.prompt = text);
            }
        };
        let set_voice = {
            let shared = Arc::clone(&self.shared);
            let telemetry = self.telemetry.clone();
            move |voice: Voice, name: String| {
                let gate = (voice.floor_db, voice.ceiling_db);
                shared.lock().unwrap_or_else(PoisonError::into_inner).voice = Some(Some(voice));
                if let Some(t) = &telemetry {
                    t.update_lip_source(|s| {
                        s.voice = name;
                        s.gate = gate;
                    });
                }
            }
        };
        std::thread::Builder::new()
            .name("facewire-vowels".into())
            .spawn(move || {
                shared.lock().unwrap_or_else(PoisonError::into_inner).take = Some((Vec::new(), 0));
                for (text, time) in prompts() {
                    prompt(Some(text));
                    std::thread::sleep(time);
                }
                let take = shared
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take
                    .take()
                    .unwrap_or_default();
                prompt(None);
                let result = save_take(&take.0, take.1, &performer, &profiles).map(|voice| {
                    set_voice(voice, format!("{performer}'s own"));
                    format!("{performer}'s vowels recorded and saved; lip sync uses them now")
                });
                let (error, text) = match result {
                    Ok(text) => (false, text),
                    Err(text) => (true, text),
                };
                notify(AppEvent::Message {
                    topic: Topic::Calibration,
                    error,
                    text,
                });
            })
            .map_err(|source| ControlError::Thread {
                what: "recording the vowels",
                source,
            })?;
        Ok(())
    }
}

/// Learns a vowel take and saves it into `performer`'s profile.
fn save_take(
    samples: &[f32],
    rate: u32,
    performer: &str,
    profiles: &Path,
) -> Result<Voice, String> {
    let take = learn_take(samples, rate.max(1)).map_err(|e| e.to_string())?;
    crate::calibrate::Profile::store_voice(profiles, performer, take.voice.clone())
        .map_err(|e| e.to_string())?;
    Ok(take.voice)
}

/// Plays `audio` into `feed` in real time, `lead` ahead of the clock, then a short silence.
fn play(audio: wav::Mono, lead: Duration, mut feed: Feed, stop: &AtomicBool, file: &Path) {
    let rate = f64::from(audio.rate.max(1));
    let tail = (TAIL.as_secs_f64() * rate) as usize;
    let total = audio.samples.len() + tail;
    let start = Instant::now();
    let mut fed = 0usize;
    let mut chunk = Vec::new();
    while fed < total && !stop.load(Ordering::Relaxed) {
        let due = ((start.elapsed() + lead).as_secs_f64() * rate) as usize;
        let end = due.min(total);
        if end > fed {
            chunk.clear();
            for i in fed..end {
                chunk.push(audio.samples.get(i).copied().unwrap_or(0.0));
            }
            if !feed.push(&chunk, audio.rate) {
                return;
            }
            fed = end;
        }
        std::thread::sleep(CHUNK);
    }
    tracing::info!(file = %file.display(), "the lip-sync WAV file ended");
}

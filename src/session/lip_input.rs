//! The audio side of lip sync in a live run: a WAV file played in real time (or the
//! microphone) through [`LipSync`], each hop's visemes sent to the chain on the ingest thread,
//! where they fill the mixer's lip-sync layer.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{SessionCommand, StartError};
use crate::config::LipsyncConfig;
use crate::lipsync::profile::Profile;
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

/// A running lip-sync input; dropping it stops it.
pub struct LipSource {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for LipSource {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Audio in, visemes out to the chain: a [`LipSync`] whose frames become commands.
struct Feed {
    sync: LipSync,
    commands: mpsc::Sender<SessionCommand>,
}

impl Feed {
    /// Analyses `samples`; `false` once the chain is gone.
    fn push(&mut self, samples: &[f32]) -> bool {
        let mut alive = true;
        let commands = &self.commands;
        self.sync.push(samples, |frame| {
            alive &= commands.send(SessionCommand::Lip(frame)).is_ok();
        });
        alive
    }
}

/// Starts lip sync from `input` with `config`'s settings and `profile`'s vowels, sending each
/// hop to `commands`; `None` when lip sync is off or there is no input.
pub fn start_lipsync(
    config: &LipsyncConfig,
    input: LipInput<'_>,
    profile: Profile,
    commands: mpsc::Sender<SessionCommand>,
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
    match input {
        LipInput::None => Ok(None),
        LipInput::Microphone => Ok(None),
        LipInput::Wav(file) => {
            let audio = wav::read_mono(file)?;
            let lead = Duration::from_secs_f32(config.lead_ms / 1000.0);
            let feed = Feed {
                sync: LipSync::new(audio.rate, profile, config.settings()),
                commands,
            };
            tracing::info!(
                file = %file.display(),
                rate = audio.rate,
                seconds = audio.samples.len() as f64 / f64::from(audio.rate.max(1)),
                mode = config.mode.name(),
                "lip sync from a WAV file"
            );
            let stop = Arc::new(AtomicBool::new(false));
            let flag = Arc::clone(&stop);
            let name = file.to_path_buf();
            let thread = std::thread::Builder::new()
                .name("facewire-lipsync".into())
                .spawn(move || play(audio, lead, feed, &flag, &name))
                .map_err(StartError::Output)?;
            Ok(Some(LipSource {
                stop,
                thread: Some(thread),
            }))
        }
    }
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
            if !feed.push(&chunk) {
                return;
            }
            fed = end;
        }
        std::thread::sleep(CHUNK);
    }
    tracing::info!(file = %file.display(), "the lip-sync WAV file ended");
}

//! One take of the performer's vowels from the microphone, prompted on the terminal: "a", "i",
//! "u", "e", "o", each for a little over a second, then silence.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

use super::CommandError;
use crate::audio::Capture;
use crate::config::Config;
use crate::lipsync::calibration::prompts;
use crate::lipsync::wav::Mono;

/// The longest take kept, seconds (a bound on memory whatever the device's rate).
const MAX_SECONDS: usize = 30;

/// Records the take from `[lipsync] device` (else the default input), prompting on `out`.
pub fn record_take(config: &Config, out: &mut impl Write) -> Result<Mono, CommandError> {
    let samples = Arc::new(Mutex::new((Vec::<f32>::new(), 0u32)));
    let sink = Arc::clone(&samples);
    let mut capture = Capture::start(
        config.lipsync.device(),
        move |block, rate| {
            let mut take = sink.lock().unwrap_or_else(PoisonError::into_inner);
            take.1 = rate;
            if take.0.len() + block.len() <= MAX_SECONDS * rate as usize {
                take.0.extend_from_slice(block);
            }
        },
        |status| tracing::warn!(%status, "audio input"),
    )?;
    let say = |out: &mut dyn Write, text: &str| -> Result<(), CommandError> {
        writeln!(out, "{text}").map_err(CommandError::Output)?;
        out.flush().map_err(CommandError::Output)
    };
    say(
        out,
        &format!(
            "Recording from {}: say each vowel steadily while it is shown.",
            capture.device()
        ),
    )?;
    for (text, time) in prompts() {
        say(out, &format!("  {text}"))?;
        std::thread::sleep(time);
    }
    capture.stop();
    let (samples, rate) =
        std::mem::take(&mut *samples.lock().unwrap_or_else(PoisonError::into_inner));
    Ok(Mono {
        samples,
        rate: rate.max(1),
    })
}

//! `facewire calibrate --vowels` and `--vowels-from FILE`: the performer's own vowels for lip
//! sync, learnt from one take of them saying "a, i, u, e, o" and saved into their profile.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::CommandError;
use crate::calibrate::Profile;
use crate::config::Config;
use crate::lipsync::calibration::{learn_take, Take};
use crate::lipsync::{analyze, wav};

/// The vowel flags of `facewire calibrate`.
#[derive(Debug, Default, clap::Args)]
pub struct VowelArgs {
    /// Record the performer's vowels for lip sync from the microphone ([lipsync] device) and
    /// save them into their profile, instead of calibrating the face.
    #[arg(long)]
    pub vowels: bool,
    /// Learn the performer's vowels from a WAV file of them saying "a", "i", "u", "e", "o",
    /// about a second each with a short silence between them.
    #[arg(long, value_name = "FILE", conflicts_with = "vowels")]
    pub vowels_from: Option<PathBuf>,
}

impl VowelArgs {
    /// Whether a vowel calibration was asked for.
    pub fn wanted(&self) -> bool {
        self.vowels || self.vowels_from.is_some()
    }
}

/// How well a take's own vowels read back with what was learnt from it: for each vowel, the
/// share of its hops shown as that vowel.
pub fn readback(take: &Take, samples: &[f32], rate: u32, config: &Config) -> Vec<f64> {
    let settings = take.voice.settings(config.lipsync.settings());
    let frames = analyze(samples, rate, take.voice.profile.clone(), settings);
    take.spans
        .iter()
        .map(|span| {
            let inside: Vec<_> = frames
                .iter()
                .filter(|f| f.t > span.start + 0.05 && f.t <= span.end)
                .collect();
            let right = inside.iter().filter(|f| f.viseme == span.viseme).count();
            right as f64 / inside.len().max(1) as f64
        })
        .collect()
}

/// Learns `performer`'s vowels from the take `samples` (`rate` Hz), prints what was found to
/// `out`, and, when `confirm` agrees, saves them into their profile in `profiles` (made if
/// they have none). Returns the saved profile's path, `None` when not saved.
pub fn save_vowels(
    samples: &[f32],
    rate: u32,
    config: &Config,
    profiles: &Path,
    performer: &str,
    out: &mut impl Write,
    confirm: impl FnOnce() -> std::io::Result<bool>,
) -> Result<Option<PathBuf>, CommandError> {
    let take = learn_take(samples, rate)?;
    let read = readback(&take, samples, rate, config);
    let w =
        |out: &mut dyn Write, line: String| writeln!(out, "{line}").map_err(CommandError::Output);
    w(out, format!("{performer}'s vowels:"))?;
    for (span, share) in take.spans.iter().zip(&read) {
        w(
            out,
            format!(
                "  {:<3} {:6.2}-{:5.2} s   read back {:3.0}%",
                span.viseme.name(),
                span.start,
                span.end,
                share * 100.0
            ),
        )?;
    }
    w(
        out,
        format!(
            "  room noise {:.0} dB; the mouth opens from {:.0} dB (floor) to {:.0} dB (ceiling)",
            take.noise_db, take.voice.floor_db, take.voice.ceiling_db
        ),
    )?;
    if read.iter().any(|s| *s < 0.5) {
        w(
            out,
            "  some vowels read back poorly: hold each one steadily for about a second, or try \
             again closer to the microphone"
                .into(),
        )?;
    }
    if !confirm().map_err(CommandError::Output)? {
        w(out, "not saved".into())?;
        return Ok(None);
    }
    let path = Profile::store_voice(profiles, performer, take.voice)?;
    w(out, format!("saved {}", path.display()))?;
    Ok(Some(path))
}

/// `facewire calibrate --performer NAME --vowels-from FILE` (or `--vowels`): see
/// [`save_vowels`]; asks before saving unless `yes`.
pub fn calibrate_vowels(
    args: &VowelArgs,
    config: &Config,
    profiles: &Path,
    performer: &str,
    yes: bool,
) -> Result<Option<PathBuf>, CommandError> {
    let mut out = std::io::stdout().lock();
    let audio = match &args.vowels_from {
        Some(file) => wav::read_mono(file)?,
        None => super::vowel_take::record_take(config, &mut out)?,
    };
    save_vowels(
        &audio.samples,
        audio.rate,
        config,
        profiles,
        performer,
        &mut out,
        || {
            if yes {
                Ok(true)
            } else {
                super::args::confirm("Save these vowels? [Y/n] ")
            }
        },
    )
}

/// After a face calibration on the terminal: asks whether to record `performer`'s vowels for
/// lip sync too, and does when they agree. Nothing is asked when lip sync is off, when the
/// input lip sync would record from (`[lipsync] device`, else the default) does not open (said
/// in one line), or when `quiet` (a scripted or offline calibration).
pub fn offer_vowels(
    config: &Config,
    profiles: &Path,
    performer: &str,
    quiet: bool,
) -> Result<(), CommandError> {
    if quiet || config.lipsync.mode == crate::lipsync::LipMode::Off {
        return Ok(());
    }
    if let Err(e) = crate::audio::probe_input(config.lipsync.device()) {
        tracing::debug!(error = %e, "no microphone for the vowels");
        println!(
            "lip sync: no microphone, so no vowels to record now (with one: facewire calibrate \
             --performer {performer} --vowels)"
        );
        return Ok(());
    }
    if !super::args::confirm("Record your vowels for lip sync now (about 15 seconds)? [Y/n] ")
        .map_err(CommandError::Output)?
    {
        println!(
            "later: facewire calibrate --performer {performer} --vowels, or the control panel"
        );
        return Ok(());
    }
    let args = VowelArgs {
        vowels: true,
        vowels_from: None,
    };
    match calibrate_vowels(&args, config, profiles, performer, false) {
        Ok(_) => Ok(()),
        // The face is saved: a failed take is said, not fatal.
        Err(e) => {
            println!(
                "the vowels were not saved: {}",
                crate::diagnostic::with_causes(&e)
            );
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_microphone_nothing_is_asked() {
        let mut config = Config::default();
        config.lipsync.device = "facewire-no-such-input".into();
        // Were it to open, the offer would wait for an answer on standard input.
        assert!(crate::audio::probe_input(config.lipsync.device()).is_err());
        let dir = tempfile::tempdir().unwrap();
        offer_vowels(&config, dir.path(), "alice", false).unwrap();
        assert!(!dir.path().join("alice.toml").exists());
    }
}

//! Phone-labelled speech and what lip sync makes of it, by class of phone: the measure behind
//! the lip-sync benchmark and tests.
//!
//! A take is a WAV file with a JSON file of the same name beside it (`benches/speech.py` makes
//! them with espeak-ng): `{"phones": [[start_s, end_s, "m"], ...]}`, the phones named by
//! espeak-ng's mnemonics. Each hop of the analysis is judged by the phone at its window's
//! centre.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::features::{SAMPLE_RATE, WINDOW};
use super::{LipFrame, Viseme, VISEMES};

/// What kind of sound a phone is, as lip sync should show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PhoneClass {
    /// A pause: the mouth at rest.
    Silence,
    /// An open vowel (`a`, `A:`, `aI`, `V`, ...): the jaw well open.
    OpenVowel,
    /// A mid or central vowel (`E`, `@`, `3:`, `eI`).
    MidVowel,
    /// A close front vowel (`i:`, `I`).
    CloseVowel,
    /// A rounded vowel (`u:`, `U`, `O:`, `oU`).
    RoundedVowel,
    /// `p`, `b`, `m`: the lips closed.
    Bilabial,
    /// `f`, `v`: the lower lip against the upper teeth.
    Labiodental,
    /// Every other consonant.
    OtherConsonant,
}

impl PhoneClass {
    /// Every class, in the order reports list them.
    pub const ALL: [PhoneClass; 8] = [
        PhoneClass::Silence,
        PhoneClass::OpenVowel,
        PhoneClass::MidVowel,
        PhoneClass::CloseVowel,
        PhoneClass::RoundedVowel,
        PhoneClass::Bilabial,
        PhoneClass::Labiodental,
        PhoneClass::OtherConsonant,
    ];

    /// Its place in [`PhoneClass::ALL`].
    pub fn index(self) -> usize {
        PhoneClass::ALL.iter().position(|c| *c == self).unwrap_or(0)
    }

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            PhoneClass::Silence => "silence",
            PhoneClass::OpenVowel => "open vowels",
            PhoneClass::MidVowel => "mid vowels",
            PhoneClass::CloseVowel => "close vowels",
            PhoneClass::RoundedVowel => "rounded vowels",
            PhoneClass::Bilabial => "p b m",
            PhoneClass::Labiodental => "f v",
            PhoneClass::OtherConsonant => "other consonants",
        }
    }

    /// The class of an espeak-ng phone mnemonic (its English phoneme table; stress marks and
    /// length marks other than `:` are ignored).
    pub fn of(phone: &str) -> PhoneClass {
        let p = phone.trim_matches(|c: char| matches!(c, '\'' | ',' | '%' | '='));
        if p.is_empty() || p.starts_with('_') {
            return PhoneClass::Silence;
        }
        match p {
            "p" | "b" | "m" => PhoneClass::Bilabial,
            "f" | "v" => PhoneClass::Labiodental,
            "a" | "a#" | "aa" | "A:" | "A@" | "A" | "aI" | "aI@" | "aI3" | "aU" | "aU@" | "V"
            | "0" => PhoneClass::OpenVowel,
            "E" | "e" | "e@" | "eI" | "3:" | "3" | "@" | "@L" | "@2" | "@5" | "a2" => {
                PhoneClass::MidVowel
            }
            "i" | "i:" | "I" | "I2" | "I#" | "i@" | "i@3" | "I@" => PhoneClass::CloseVowel,
            "u:" | "u" | "U" | "u@" | "U@" | "O:" | "O" | "O@" | "o@" | "oU" | "OI" | "o" => {
                PhoneClass::RoundedVowel
            }
            _ => PhoneClass::OtherConsonant,
        }
    }
}

/// Why a labelled take cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum LabelError {
    /// The WAV file.
    #[error(transparent)]
    Wav(#[from] super::wav::WavError),
    /// The labels file cannot be read.
    #[error("{path}: {cause}")]
    Read {
        /// The labels file.
        path: PathBuf,
        /// Why.
        cause: std::io::Error,
    },
    /// The labels file is not the JSON expected.
    #[error("{path}: {cause} (expected {{\"phones\": [[start_s, end_s, \"phone\"], ...]}})")]
    Parse {
        /// The labels file.
        path: PathBuf,
        /// Why.
        cause: serde_json::Error,
    },
}

#[derive(Deserialize)]
struct LabelFile {
    phones: Vec<(f64, f64, String)>,
}

/// A take and its phones.
#[derive(Debug, Clone)]
pub struct Labelled {
    /// The speech.
    pub audio: super::wav::Mono,
    /// `(start, end, phone)` in seconds, in order.
    pub phones: Vec<(f64, f64, String)>,
}

impl Labelled {
    /// Reads `wav` and the `.json` labels beside it.
    pub fn load(wav: &Path) -> Result<Labelled, LabelError> {
        let audio = super::wav::read_mono(wav)?;
        let path = wav.with_extension("json");
        let text = crate::fsutil::read_text(&path).map_err(|cause| LabelError::Read {
            path: path.clone(),
            cause,
        })?;
        let file: LabelFile =
            serde_json::from_str(&text).map_err(|cause| LabelError::Parse { path, cause })?;
        Ok(Labelled {
            audio,
            phones: file.phones,
        })
    }

    /// The phone sounding at `t` seconds, if any is labelled there.
    pub fn phone_at(&self, t: f64) -> Option<&str> {
        let i = self.phones.partition_point(|p| p.1 <= t);
        self.phones
            .get(i)
            .filter(|p| p.0 <= t)
            .map(|p| p.2.as_str())
    }
}

/// The centre of the window a hop ending at `t` analysed, seconds.
pub fn window_centre(t: f64) -> f64 {
    t - WINDOW as f64 / 2.0 / f64::from(SAMPLE_RATE)
}

/// What lip sync showed during one class of phone.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ClassReading {
    /// Hops judged.
    pub hops: usize,
    /// The sum of their jaw opening ([`LipFrame::open`]).
    pub open_sum: f64,
    /// How many read each viseme, [`Viseme::ALL`] order.
    pub visemes: [usize; VISEMES],
}

impl ClassReading {
    /// The mean jaw opening, 0 when no hop was judged.
    pub fn mean_open(&self) -> f64 {
        if self.hops == 0 {
            0.0
        } else {
            self.open_sum / self.hops as f64
        }
    }

    /// The share of hops that read `viseme`.
    pub fn share(&self, viseme: Viseme) -> f64 {
        if self.hops == 0 {
            0.0
        } else {
            self.visemes[viseme.index()] as f64 / self.hops as f64
        }
    }

    /// The viseme most hops read.
    pub fn mostly(&self) -> Viseme {
        Viseme::ALL
            .into_iter()
            .max_by_key(|v| self.visemes[v.index()])
            .unwrap_or(Viseme::Sil)
    }
}

/// Readings per class ([`PhoneClass::ALL`] order) of `frames`, the analysis of `take`.
pub fn tally(take: &Labelled, frames: &[LipFrame]) -> [ClassReading; 8] {
    let mut out = [ClassReading::default(); 8];
    add(&mut out, take, frames);
    out
}

/// What lip sync shows for each class when it hears `takes` one after another at `gain` times
/// their level, as a microphone would: one [`LipSync`](super::LipSync) for all of them, so the
/// automatic level carries from take to take. The takes must share one sample rate.
pub fn stream(
    takes: &[Labelled],
    gain: f32,
    profile: &super::profile::Profile,
    settings: super::LipSettings,
) -> [ClassReading; 8] {
    let mut readings = [ClassReading::default(); 8];
    let Some(rate) = takes.first().map(|t| t.audio.rate) else {
        return readings;
    };
    let mut sync = super::LipSync::new(rate, profile.clone(), settings);
    let mut start = 0.0;
    let mut samples = Vec::new();
    for take in takes.iter().filter(|t| t.audio.rate == rate) {
        samples.clear();
        samples.extend(take.audio.samples.iter().map(|s| s * gain));
        let mut frames = Vec::with_capacity(samples.len() / 256 + 1);
        sync.push(&samples, |mut f| {
            f.t -= start;
            frames.push(f);
        });
        add(&mut readings, take, &frames);
        start += take.audio.samples.len() as f64 / f64::from(rate);
    }
    readings
}

/// Adds the readings of `frames` (the analysis of `take`) to `into`.
pub fn add(into: &mut [ClassReading; 8], take: &Labelled, frames: &[LipFrame]) {
    for f in frames {
        let Some(phone) = take.phone_at(window_centre(f.t)) else {
            continue;
        };
        let r = &mut into[PhoneClass::of(phone).index()];
        r.hops += 1;
        r.open_sum += f64::from(f.open());
        r.visemes[f.viseme.index()] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn espeak_phones_fall_into_their_classes() {
        use PhoneClass::*;
        for (phone, class) in [
            ("_", Silence),
            ("_:", Silence),
            ("m", Bilabial),
            ("b", Bilabial),
            ("v", Labiodental),
            ("A:", OpenVowel),
            ("aI", OpenVowel),
            ("'a", OpenVowel),
            ("i:", CloseVowel),
            ("u:", RoundedVowel),
            ("oU", RoundedVowel),
            ("@", MidVowel),
            ("t", OtherConsonant),
            ("tS", OtherConsonant),
        ] {
            assert_eq!(PhoneClass::of(phone), class, "{phone}");
        }
    }

    #[test]
    fn hops_are_judged_by_the_phone_at_their_windows_centre() {
        let take = Labelled {
            audio: super::super::wav::Mono {
                rate: 16_000,
                samples: Vec::new(),
            },
            phones: vec![
                (0.0, 0.1, "_".into()),
                (0.1, 0.2, "m".into()),
                (0.2, 0.3, "a".into()),
            ],
        };
        assert_eq!(take.phone_at(0.15), Some("m"));
        assert_eq!(take.phone_at(0.2), Some("a"));
        assert_eq!(take.phone_at(0.35), None);
        // A hop ending at 0.215 s analysed 0.183 to 0.215 s: its centre is in the m.
        assert_eq!(take.phone_at(window_centre(0.215)), Some("m"));
        assert_eq!(take.phone_at(window_centre(0.217)), Some("a"));
    }
}

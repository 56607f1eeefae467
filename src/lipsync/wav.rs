//! WAV files as mono samples: any common sample rate, 8 to 32-bit integer or 32-bit float,
//! channels averaged.

use std::path::{Path, PathBuf};

/// Why a WAV file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum WavError {
    /// The file is missing, unreadable or not a WAV file hound understands.
    #[error("cannot read the WAV file {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: hound::Error,
    },
    /// The file's header gives a sample rate no audio has (0 Hz in a damaged file).
    #[error(
        "{} says its sample rate is {rate} Hz; facewire reads {MIN_RATE} to {MAX_RATE} Hz (the \
         file is damaged, or not audio: export it again)",
        path.display()
    )]
    BadRate {
        /// The file.
        path: PathBuf,
        /// The rate its header gives.
        rate: u32,
    },
    /// The file holds more audio than facewire analyses at once.
    #[error("{} is longer than {} minutes; cut it into shorter files", path.display(), MAX_SECONDS / 60)]
    TooLong {
        /// The file.
        path: PathBuf,
    },
}

/// The longest file read, in seconds.
const MAX_SECONDS: u64 = 30 * 60;

/// The lowest sample rate read, in Hz (telephone audio is 8000).
const MIN_RATE: u32 = 4_000;

/// The highest sample rate read, in Hz.
const MAX_RATE: u32 = 768_000;

/// Mono audio: samples from -1 to 1 at `rate` Hz.
#[derive(Debug, Clone, PartialEq)]
pub struct Mono {
    /// The samples.
    pub samples: Vec<f32>,
    /// Samples per second.
    pub rate: u32,
}

/// Reads `path` as mono: every channel averaged into one.
pub fn read_mono(path: &Path) -> Result<Mono, WavError> {
    let failed = |source| WavError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = hound::WavReader::open(path).map_err(failed)?;
    let spec = reader.spec();
    let channels = usize::from(spec.channels.max(1));
    if !(MIN_RATE..=MAX_RATE).contains(&spec.sample_rate) {
        return Err(WavError::BadRate {
            path: path.to_path_buf(),
            rate: spec.sample_rate,
        });
    }
    if u64::from(reader.duration()) > MAX_SECONDS * u64::from(spec.sample_rate) {
        return Err(WavError::TooLong {
            path: path.to_path_buf(),
        });
    }
    let interleaved: Vec<f32> = match spec.sample_format {
        hound::SampleFormat::Float => reader.samples::<f32>().collect::<Result<_, _>>(),
        hound::SampleFormat::Int => {
            let scale = 1.0 / (1u64 << (spec.bits_per_sample.clamp(1, 32) - 1)) as f32;
            reader
                .samples::<i32>()
                .map(|s| s.map(|s| s as f32 * scale))
                .collect::<Result<_, _>>()
        }
    }
    .map_err(failed)?;
    let samples = interleaved
        .chunks(channels)
        .map(|frame| {
            let s = frame.iter().sum::<f32>() / channels as f32;
            if s.is_finite() {
                s.clamp(-1.0, 1.0)
            } else {
                0.0
            }
        })
        .collect();
    Ok(Mono {
        samples,
        rate: spec.sample_rate,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stereo_int_and_float_files_read_as_mono() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stereo.wav");
        let spec = hound::WavSpec {
            channels: 2,
            sample_rate: 44_100,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut w = hound::WavWriter::create(&path, spec).unwrap();
        for (l, r) in [(16384i16, 0i16), (-32768, -32768), (0, 0)] {
            w.write_sample(l).unwrap();
            w.write_sample(r).unwrap();
        }
        w.finalize().unwrap();
        let mono = read_mono(&path).unwrap();
        assert_eq!(mono.rate, 44_100);
        assert_eq!(mono.samples, [0.25, -1.0, 0.0]);

        let float = dir.path().join("float.wav");
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate: 16_000,
            bits_per_sample: 32,
            sample_format: hound::SampleFormat::Float,
        };
        let mut w = hound::WavWriter::create(&float, spec).unwrap();
        for s in [0.5f32, f32::NAN, 3.0] {
            w.write_sample(s).unwrap();
        }
        w.finalize().unwrap();
        assert_eq!(read_mono(&float).unwrap().samples, [0.5, 0.0, 1.0]);
    }

    #[test]
    fn a_rate_of_zero_is_named_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("zero.wav");
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate: 16_000,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut w = hound::WavWriter::create(&path, spec).unwrap();
        for _ in 0..100 {
            w.write_sample(0i16).unwrap();
        }
        w.finalize().unwrap();
        // The canonical header keeps the rate at bytes 24..28 and the byte rate (rate times
        // block size) after it.
        let mut bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes[24..28], 16_000u32.to_le_bytes());
        bytes[24..32].copy_from_slice(&[0; 8]);
        std::fs::write(&path, bytes).unwrap();
        let e = read_mono(&path).unwrap_err().to_string();
        assert!(e.contains("sample rate is 0 Hz"), "{e}");
        assert!(!e.contains("minutes"), "{e}");
    }

    #[test]
    fn a_missing_or_foreign_file_names_itself() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("notes.wav");
        std::fs::write(&text, "not audio").unwrap();
        for path in [dir.path().join("missing.wav"), text] {
            let e = read_mono(&path).unwrap_err().to_string();
            assert!(e.contains(&path.display().to_string()), "{e}");
        }
    }
}

//! Audio input on its own thread: the default input device or one chosen by name, delivered as
//! mono `f32` samples at the device's rate, reopened when the device goes away and comes back.
//!
//! - `alsa` (Linux): ALSA's `libasound.so.2`, loaded at run time, so that facewire builds without
//!   ALSA's development files and runs (without audio input) where the library is missing.
//! - `cpal_backend` (macOS, Windows): cpal.
//!
//! [`Capture::start`] fails at once when the input cannot be opened, so that the caller can say
//! so and carry on without audio; a later loss goes to its status callback, and the thread tries
//! again every [`RETRY`] until the device is back.

#[cfg(target_os = "linux")]
mod alsa;
#[cfg(target_os = "linux")]
use alsa as backend;

#[cfg(not(target_os = "linux"))]
mod cpal_backend;
#[cfg(not(target_os = "linux"))]
use cpal_backend as backend;

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long the thread waits between attempts to reopen a lost device.
pub const RETRY: Duration = Duration::from_secs(2);

/// How long a device may deliver nothing before it counts as lost.
const STALL: Duration = Duration::from_secs(2);

/// How often a thread waiting to retry looks at its stop flag.
const STOP_POLL: Duration = Duration::from_millis(50);

/// An audio input as the system lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The name that opens it (ALSA's PCM name on Linux, the device's name elsewhere).
    pub name: String,
    /// What the system says about it, on one line; may be empty.
    pub description: String,
    /// Whether this is the system's default input.
    pub default: bool,
}

/// Why audio input is unavailable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AudioError {
    /// The system's audio library could not be loaded (Linux: `libasound.so.2`).
    #[error("cannot load {library} ({reason}): {}", library_fix())]
    Library {
        /// The library's file name.
        library: &'static str,
        /// The loader's message.
        reason: String,
    },
    /// There is no default input device, or it cannot be opened.
    #[error("no default audio input ({reason}): {}", missing_input_fix())]
    NoDefault {
        /// The system's message.
        reason: String,
    },
    /// No input device matches the name asked for.
    #[error("no audio input matches \"{wanted}\"; {}", available_list(available))]
    NoMatch {
        /// The name (or part of one) asked for.
        wanted: String,
        /// The inputs there are.
        available: Vec<DeviceInfo>,
    },
    /// The system refused access to the device.
    #[error(
        "no permission to use the audio input {device} ({reason}): {}",
        permission_fix()
    )]
    Permission {
        /// The device.
        device: String,
        /// The system's message.
        reason: String,
    },
    /// Another program holds the device.
    #[error(
        "the audio input {device} is busy ({reason}): close the program using it, or choose \
         another input with [lipsync] device (facewire lipsync --list-devices shows them)"
    )]
    Busy {
        /// The device.
        device: String,
        /// The system's message.
        reason: String,
    },
    /// The device could not be opened or set up for another reason.
    #[error("cannot open the audio input {device}: {reason}")]
    Open {
        /// The device.
        device: String,
        /// What failed.
        reason: String,
    },
    /// The list of devices could not be read.
    #[error("cannot list the audio inputs: {reason}")]
    List {
        /// The system's message.
        reason: String,
    },
    /// The capture thread could not be started.
    #[error("cannot start the audio thread: {reason}")]
    Thread {
        /// The system's message.
        reason: String,
    },
}

/// What to install when the audio library is missing.
fn library_fix() -> &'static str {
    if cfg!(target_os = "linux") {
        "Linux needs the libasound2 package at run time (Debian/Ubuntu: sudo apt install \
         libasound2, or libasound2t64 on newer Ubuntu; Fedora: sudo dnf install alsa-lib); on \
         PipeWire or PulseAudio systems the default input also needs their ALSA plugin \
         (pipewire-alsa, or PulseAudio's: libasound2-plugins on Debian/Ubuntu, \
         alsa-plugins-pulseaudio on Fedora)"
    } else {
        "reinstall facewire"
    }
}

/// What to check when there is no default input, or no input at all.
pub fn missing_input_fix() -> &'static str {
    if cfg!(target_os = "linux") {
        "plug in a microphone, or on PipeWire or PulseAudio systems install their ALSA plugin \
         (pipewire-alsa, or PulseAudio's: libasound2-plugins on Debian/Ubuntu, \
         alsa-plugins-pulseaudio on Fedora); facewire lipsync --list-devices shows the inputs \
         there are, and [lipsync] device chooses one"
    } else {
        "plug in a microphone or choose an input in the system's sound settings; facewire \
         lipsync --list-devices shows the inputs there are, and [lipsync] device chooses one"
    }
}

/// What to change when the system refuses access.
fn permission_fix() -> &'static str {
    if cfg!(target_os = "linux") {
        "add your user to the audio group (sudo usermod -aG audio $USER, then log in again), or \
         use the default input through PipeWire or PulseAudio"
    } else if cfg!(target_os = "macos") {
        "allow your terminal (or facewire) to use the microphone in System Settings > Privacy & \
         Security > Microphone, then start facewire again"
    } else {
        "turn on Settings > Privacy & security > Microphone > Let desktop apps access your \
         microphone, then start facewire again"
    }
}

/// The inputs there are, for an error message: one a line, each with its description.
fn available_list(available: &[DeviceInfo]) -> String {
    if available.is_empty() {
        return format!("there are no audio inputs at all: {}", missing_input_fix());
    }
    let width = available.iter().map(|d| d.name.len()).max().unwrap_or(0);
    let mut text = String::from("the inputs are:");
    for d in available {
        text.push_str(&format!("\n  {:width$}  {}", d.name, d.description));
        text.truncate(text.trim_end().len());
    }
    text.push_str(
        "\nuse one of these names (or a part of its name or description) with --device or \
         [lipsync] device",
    );
    text
}

/// The device `wanted` names among `devices`: the one with that name (ignoring case), else the
/// first whose name or description contains it (ignoring case). An empty `wanted` names nothing.
pub fn find_device<'a>(devices: &'a [DeviceInfo], wanted: &str) -> Option<&'a DeviceInfo> {
    let wanted = wanted.trim().to_lowercase();
    if wanted.is_empty() {
        return None;
    }
    devices
        .iter()
        .find(|d| d.name.to_lowercase() == wanted)
        .or_else(|| {
            devices.iter().find(|d| {
                d.name.to_lowercase().contains(&wanted)
                    || d.description.to_lowercase().contains(&wanted)
            })
        })
}

/// The audio inputs the system lists, in its order.
pub fn input_devices() -> Result<Vec<DeviceInfo>, AudioError> {
    backend::input_devices()
}

/// Whether `device` (a name, or a part of a name or description, as [`find_device`] matches
/// it; `None`: the default input) opens now: opens it, closes it again and returns its name.
/// A machine without a sound card, or without the input asked for, fails here as
/// [`Capture::start`] would.
pub fn probe_input(device: Option<&str>) -> Result<String, AudioError> {
    let source = backend::open(device)?;
    Ok(source.name().to_owned())
}

/// What happens to a running capture, for its status callback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AudioStatus {
    /// The input opened and samples are flowing (said once, at the start).
    Open {
        /// The device's name.
        device: String,
        /// Samples per second.
        rate: u32,
    },
    /// The input stopped (unplugged, suspended, its sound server gone); the thread tries to
    /// open it again every [`RETRY`].
    Lost {
        /// The device's name.
        device: String,
        /// Why, as the system said it.
        reason: String,
    },
    /// The input is back after a loss.
    Back {
        /// The device's name.
        device: String,
        /// Samples per second (a device may come back at another rate).
        rate: u32,
    },
}

impl fmt::Display for AudioStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AudioStatus::Open { device, rate } => {
                write!(f, "audio input {device} open at {rate} Hz")
            }
            AudioStatus::Lost { device, reason } => write!(
                f,
                "audio input {device} stopped ({reason}); trying again every {} s",
                RETRY.as_secs()
            ),
            AudioStatus::Back { device, rate } => {
                write!(f, "audio input {device} is back, at {rate} Hz")
            }
        }
    }
}

/// An open input, as the capture thread uses it.
trait Source {
    /// The device's name.
    fn name(&self) -> &str;
    /// Samples per second.
    fn rate(&self) -> u32;
    /// Waits a short while (about 100 ms at most) for audio and appends what came to `out` as
    /// mono samples; nothing appended is no error. An error means the device is gone.
    fn read(&mut self, out: &mut Vec<f32>) -> Result<(), String>;
}

/// Appends the mono mix of `interleaved` frames of `channels` samples to `out`, each sample
/// turned into -1 to 1 by `to_f32`. A trailing partial frame is dropped.
fn mix_to_mono<T: Copy>(
    interleaved: &[T],
    channels: usize,
    to_f32: impl Fn(T) -> f32,
    out: &mut Vec<f32>,
) {
    let channels = channels.max(1);
    let scale = 1.0 / channels as f32;
    out.extend(
        interleaved
            .chunks_exact(channels)
            .map(|frame| frame.iter().map(|&s| to_f32(s)).sum::<f32>() * scale),
    );
}

/// Audio input running on its own thread (named `facewire-audio`). Dropping it stops and joins
/// the thread.
///
/// The thread reports through the callbacks only (and logs at debug level): showing a loss is
/// the caller's choice.
pub struct Capture {
    /// Set to ask the thread to end.
    stop: Arc<AtomicBool>,
    /// The thread; `None` once joined.
    thread: Option<JoinHandle<()>>,
    /// The device opened first.
    device: String,
    /// Its rate at the start.
    rate: u32,
}

impl Capture {
    /// Opens `device` (a name, or a part of a name or description, as [`find_device`] matches
    /// it; `None`: the default input) and starts the thread, which calls `on_samples` with each
    /// block of mono samples (-1 to 1) and their rate, and `on_status` when the input opens,
    /// is lost and comes back. Fails when the input cannot be opened now.
    pub fn start(
        device: Option<&str>,
        on_samples: impl FnMut(&[f32], u32) + Send + 'static,
        on_status: impl FnMut(AudioStatus) + Send + 'static,
    ) -> Result<Capture, AudioError> {
        let wanted = device.map(str::to_owned);
        Capture::spawn(
            move || backend::open(wanted.as_deref()),
            RETRY,
            on_samples,
            on_status,
        )
    }

    /// [`Capture::start`] with the way to open the input and the retry interval given.
    fn spawn<S: Source + 'static>(
        open: impl FnMut() -> Result<S, AudioError> + Send + 'static,
        retry: Duration,
        on_samples: impl FnMut(&[f32], u32) + Send + 'static,
        on_status: impl FnMut(AudioStatus) + Send + 'static,
    ) -> Result<Capture, AudioError> {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let worker = Worker {
            stop: stop.clone(),
            retry,
            on_samples,
            on_status,
        };
        let thread = thread::Builder::new()
            .name("facewire-audio".into())
            .spawn(move || worker.run(open, ready_tx))
            .map_err(|e| AudioError::Thread {
                reason: e.to_string(),
            })?;
        let opened = ready_rx.recv().unwrap_or_else(|_| {
            Err(AudioError::Thread {
                reason: "the audio thread ended before opening the input".into(),
            })
        });
        match opened {
            Ok((device, rate)) => Ok(Capture {
                stop,
                thread: Some(thread),
                device,
                rate,
            }),
            Err(e) => {
                let _ = thread.join();
                Err(e)
            }
        }
    }

    /// The device opened at the start.
    pub fn device(&self) -> &str {
        &self.device
    }

    /// The rate at the start, samples per second.
    pub fn rate(&self) -> u32 {
        self.rate
    }

    /// Stops the thread and waits for it; idempotent.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            if thread.join().is_err() {
                tracing::error!("the audio thread panicked");
            }
        }
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The capture thread's state.
struct Worker<D, S> {
    stop: Arc<AtomicBool>,
    retry: Duration,
    on_samples: D,
    on_status: S,
}

impl<D, T> Worker<D, T>
where
    D: FnMut(&[f32], u32),
    T: FnMut(AudioStatus),
{
    /// Opens the input, says how that went through `ready`, then reads until stopped,
    /// reopening the input after a loss.
    fn run<S: Source>(
        mut self,
        mut open: impl FnMut() -> Result<S, AudioError>,
        ready: mpsc::SyncSender<Result<(String, u32), AudioError>>,
    ) {
        let mut source = match open() {
            Ok(source) => source,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let (device, rate) = (source.name().to_owned(), source.rate());
        tracing::debug!(device = %device, rate, "audio input open");
        let _ = ready.send(Ok((device.clone(), rate)));
        (self.on_status)(AudioStatus::Open { device, rate });
        while let Some(reason) = self.read_until_lost(&mut source) {
            let device = source.name().to_owned();
            drop(source);
            tracing::debug!(device = %device, reason = %reason, "audio input lost");
            (self.on_status)(AudioStatus::Lost {
                device: device.clone(),
                reason,
            });
            match self.reopen(&mut open) {
                Some(back) => source = back,
                None => return,
            }
            let (device, rate) = (source.name().to_owned(), source.rate());
            tracing::debug!(device = %device, rate, "audio input back");
            (self.on_status)(AudioStatus::Back { device, rate });
        }
    }

    /// Reads and hands on samples until stopped (`None`) or the input is lost (why).
    fn read_until_lost(&mut self, source: &mut impl Source) -> Option<String> {
        let mut samples = Vec::new();
        let mut last_audio = Instant::now();
        while !self.stop.load(Ordering::Relaxed) {
            samples.clear();
            if let Err(reason) = source.read(&mut samples) {
                return Some(reason);
            }
            if !samples.is_empty() {
                last_audio = Instant::now();
                (self.on_samples)(&samples, source.rate());
            } else if last_audio.elapsed() >= STALL {
                return Some(format!("no audio for {} s", STALL.as_secs()));
            }
        }
        None
    }

    /// Tries `open` every `retry` until it works (the input) or the capture is stopped (`None`).
    fn reopen<S>(&self, open: &mut impl FnMut() -> Result<S, AudioError>) -> Option<S> {
        loop {
            let deadline = Instant::now() + self.retry;
            while Instant::now() < deadline {
                if self.stop.load(Ordering::Relaxed) {
                    return None;
                }
                thread::sleep(STOP_POLL.min(deadline.saturating_duration_since(Instant::now())));
            }
            if self.stop.load(Ordering::Relaxed) {
                return None;
            }
            match open() {
                Ok(source) => return Some(source),
                Err(e) => tracing::debug!(cause = %e, "audio input still unavailable"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use super::*;

    fn info(name: &str, description: &str) -> DeviceInfo {
        DeviceInfo {
            name: name.into(),
            description: description.into(),
            default: name == "default",
        }
    }

    fn listing() -> Vec<DeviceInfo> {
        vec![
            info(
                "default",
                "Default ALSA Output (currently PipeWire Media Server)",
            ),
            info("pipewire", "PipeWire Sound Server"),
            info("hw:CARD=USB,DEV=0", "Blue Yeti, USB Audio"),
            info("plughw:CARD=USB,DEV=0", "Blue Yeti, USB Audio"),
            info(
                "null",
                "Discard all samples (playback) or generate zero samples (capture)",
            ),
        ]
    }

    #[test]
    fn a_device_is_found_by_its_name_or_a_part_of_its_name_or_description() {
        let devices = listing();
        let name = |w: &str| find_device(&devices, w).map(|d| d.name.as_str());
        assert_eq!(name("NULL"), Some("null"));
        assert_eq!(name(" default "), Some("default"));
        // A part of a name or description: the first in the system's order.
        assert_eq!(name("yeti"), Some("hw:CARD=USB,DEV=0"));
        assert_eq!(name("plughw"), Some("plughw:CARD=USB,DEV=0"));
        assert_eq!(name("media server"), Some("default"));
        // The exact name wins over an earlier partial match.
        assert_eq!(name("pipewire"), Some("pipewire"));
        assert_eq!(name("headset"), None);
        assert_eq!(name(""), None);
    }

    #[test]
    fn a_name_that_matches_nothing_lists_the_inputs_there_are() {
        let e = AudioError::NoMatch {
            wanted: "headset".into(),
            available: listing(),
        };
        let text = e.to_string();
        assert!(
            text.starts_with("no audio input matches \"headset\""),
            "{text}"
        );
        let width = "plughw:CARD=USB,DEV=0".len();
        assert!(
            text.contains(&format!(
                "\n  {:width$}  PipeWire Sound Server\n",
                "pipewire"
            )),
            "{text}"
        );
        assert!(text.contains("--device or [lipsync] device"), "{text}");
        let none = AudioError::NoMatch {
            wanted: "headset".into(),
            available: Vec::new(),
        };
        assert!(none
            .to_string()
            .contains("there are no audio inputs at all"));
    }

    #[test]
    fn each_error_names_its_fix() {
        let library = AudioError::Library {
            library: "libasound.so.2",
            reason: "libasound.so.2: cannot open shared object file".into(),
        }
        .to_string();
        let no_default = AudioError::NoDefault {
            reason: "No such file or directory".into(),
        }
        .to_string();
        let permission = AudioError::Permission {
            device: "hw:0".into(),
            reason: "Permission denied".into(),
        }
        .to_string();
        let busy = AudioError::Busy {
            device: "hw:0".into(),
            reason: "Device or resource busy".into(),
        }
        .to_string();
        assert!(busy.contains("close the program using it"), "{busy}");
        assert!(no_default.contains("--list-devices"), "{no_default}");
        if cfg!(target_os = "linux") {
            assert!(library.contains("sudo apt install libasound2"), "{library}");
            assert!(library.contains("libasound2t64"), "{library}");
            assert!(library.contains("alsa-lib"), "{library}");
            assert!(library.contains("pipewire-alsa"), "{library}");
            assert!(no_default.contains("pipewire-alsa"), "{no_default}");
            assert!(permission.contains("audio group"), "{permission}");
        } else {
            assert!(permission.contains("Microphone"), "{permission}");
        }
    }

    #[test]
    fn channels_are_averaged_into_mono() {
        let mut out = vec![9.0];
        mix_to_mono(&[0.5f32, -0.5, 1.0, 0.0, 0.25], 2, |s| s, &mut out);
        assert_eq!(out, [9.0, 0.0, 0.5], "the partial last frame is dropped");
        out.clear();
        mix_to_mono(&[i16::MIN, 16384], 1, |s| f32::from(s) / 32768.0, &mut out);
        assert_eq!(out, [-1.0, 0.5]);
    }

    /// A device that plays a script: each read's outcome, then silence.
    struct Scripted {
        name: String,
        rate: u32,
        reads: VecDeque<Result<Vec<f32>, String>>,
    }

    impl Source for Scripted {
        fn name(&self) -> &str {
            &self.name
        }
        fn rate(&self) -> u32 {
            self.rate
        }
        fn read(&mut self, out: &mut Vec<f32>) -> Result<(), String> {
            match self.reads.pop_front() {
                Some(Ok(samples)) => out.extend(samples),
                Some(Err(reason)) => return Err(reason),
                None => {
                    thread::sleep(Duration::from_millis(5));
                    out.push(0.0);
                }
            }
            Ok(())
        }
    }

    #[test]
    fn a_lost_device_is_reported_retried_and_reported_back() {
        // The first open works; the device is lost after one block; two reopens fail; the
        // third comes back at another rate.
        let opens = Arc::new(Mutex::new(0));
        let counted = opens.clone();
        let open = move || {
            let mut n = counted.lock().unwrap();
            *n += 1;
            match *n {
                1 => Ok(Scripted {
                    name: "mic".into(),
                    rate: 48_000,
                    reads: VecDeque::from([Ok(vec![0.5; 4]), Err("unplugged".into())]),
                }),
                2 | 3 => Err(AudioError::Open {
                    device: "mic".into(),
                    reason: "No such device".into(),
                }),
                _ => Ok(Scripted {
                    name: "mic".into(),
                    rate: 44_100,
                    reads: VecDeque::from([Ok(vec![0.25; 2])]),
                }),
            }
        };
        let (samples_tx, samples_rx) = mpsc::channel();
        let (status_tx, status_rx) = mpsc::channel();
        let started = Instant::now();
        let mut capture = Capture::spawn(
            open,
            Duration::from_millis(20),
            move |s: &[f32], rate| {
                let _ = samples_tx.send((s.to_vec(), rate));
            },
            move |status| {
                let _ = status_tx.send(status);
            },
        )
        .unwrap();
        assert_eq!((capture.device(), capture.rate()), ("mic", 48_000));
        let wait = Duration::from_secs(5);
        assert_eq!(
            status_rx.recv_timeout(wait).unwrap(),
            AudioStatus::Open {
                device: "mic".into(),
                rate: 48_000
            }
        );
        assert_eq!(
            samples_rx.recv_timeout(wait).unwrap(),
            (vec![0.5; 4], 48_000)
        );
        let lost = status_rx.recv_timeout(wait).unwrap();
        assert_eq!(
            lost,
            AudioStatus::Lost {
                device: "mic".into(),
                reason: "unplugged".into()
            }
        );
        assert!(
            lost.to_string().contains("trying again every 2 s"),
            "{lost}"
        );
        assert_eq!(
            status_rx.recv_timeout(wait).unwrap(),
            AudioStatus::Back {
                device: "mic".into(),
                rate: 44_100
            }
        );
        assert_eq!(
            samples_rx.recv_timeout(wait).unwrap(),
            (vec![0.25; 2], 44_100)
        );
        assert_eq!(*opens.lock().unwrap(), 4);
        assert!(
            started.elapsed() >= Duration::from_millis(60),
            "three waits"
        );
        capture.stop();
        capture.stop();
    }

    #[test]
    fn a_failed_first_open_fails_the_start() {
        let open = || -> Result<Scripted, AudioError> {
            Err(AudioError::NoDefault {
                reason: "No such file or directory".into(),
            })
        };
        let err = Capture::spawn(open, RETRY, |_: &[f32], _| {}, |_| {})
            .err()
            .unwrap();
        assert!(matches!(err, AudioError::NoDefault { .. }), "{err:?}");
    }

    #[test]
    fn a_device_that_goes_quiet_counts_as_lost_and_stopping_ends_the_retries() {
        struct Quiet;
        impl Source for Quiet {
            fn name(&self) -> &str {
                "quiet"
            }
            fn rate(&self) -> u32 {
                16_000
            }
            fn read(&mut self, _: &mut Vec<f32>) -> Result<(), String> {
                thread::sleep(Duration::from_millis(20));
                Ok(())
            }
        }
        let mut first = true;
        let open = move || {
            if std::mem::take(&mut first) {
                Ok(Quiet)
            } else {
                Err(AudioError::NoDefault {
                    reason: "gone".into(),
                })
            }
        };
        let (status_tx, status_rx) = mpsc::channel();
        let capture = Capture::spawn(
            open,
            Duration::from_secs(60),
            |_: &[f32], _| {},
            move |s| {
                let _ = status_tx.send(s);
            },
        )
        .unwrap();
        let wait = Duration::from_secs(5);
        assert!(matches!(
            status_rx.recv_timeout(wait).unwrap(),
            AudioStatus::Open { .. }
        ));
        match status_rx.recv_timeout(wait).unwrap() {
            AudioStatus::Lost { reason, .. } => assert_eq!(reason, "no audio for 2 s"),
            other => panic!("{other:?}"),
        }
        // The thread now waits a minute before retrying; dropping the capture ends it at once.
        let dropped = Instant::now();
        drop(capture);
        assert!(dropped.elapsed() < Duration::from_secs(1));
    }
}

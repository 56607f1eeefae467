//! Audio input on macOS and Windows (every system but Linux) through cpal: its callback hands
//! blocks of mono samples to the capture thread through a bounded channel.

use std::sync::mpsc;
use std::time::Duration;

use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};
use cpal::{Data, ErrorKind, FromSample, InputCallbackInfo, SampleFormat, SizedSample};

use super::{find_device, mix_to_mono, AudioError, DeviceInfo, Source};

/// How long one read waits for audio.
const WAIT: Duration = Duration::from_millis(100);

/// Blocks waiting for the capture thread; a callback finding the queue full drops its block.
const QUEUE: usize = 64;

/// The description of `device`, less its name (which the listing shows already).
fn describe(device: &cpal::Device) -> String {
    let Ok(description) = device.description() else {
        return String::new();
    };
    let full = description.to_string();
    full.strip_prefix(description.name())
        .unwrap_or(&full)
        .trim()
        .to_owned()
}

/// The input devices of the default host and what to list for them.
fn devices(host: &cpal::Host) -> Result<Vec<(cpal::Device, DeviceInfo)>, AudioError> {
    let default = host.default_input_device().and_then(|d| d.id().ok());
    let devices = host.input_devices().map_err(|e| AudioError::List {
        reason: e.to_string(),
    })?;
    Ok(devices
        .map(|device| {
            let info = DeviceInfo {
                name: device.to_string(),
                description: describe(&device),
                default: default.is_some() && device.id().ok() == default,
            };
            (device, info)
        })
        .collect())
}

/// The input devices of the system's default host.
pub(super) fn input_devices() -> Result<Vec<DeviceInfo>, AudioError> {
    Ok(devices(&cpal::default_host())?
        .into_iter()
        .map(|(_, info)| info)
        .collect())
}

/// `error`, met while opening `device` (the default input when `default`), sorted by its fix.
fn open_error(device: &str, default: bool, error: &cpal::Error) -> AudioError {
    let (device, reason) = (device.to_owned(), error.to_string());
    match error.kind() {
        ErrorKind::PermissionDenied => AudioError::Permission { device, reason },
        ErrorKind::DeviceBusy => AudioError::Busy { device, reason },
        ErrorKind::DeviceNotAvailable | ErrorKind::HostUnavailable if default => {
            AudioError::NoDefault { reason }
        }
        _ => AudioError::Open { device, reason },
    }
}

/// Appends the mono mix of `data` to `out` when its samples are of type `T`.
fn mix<T>(data: &Data, channels: usize, out: &mut Vec<f32>)
where
    T: SizedSample,
    f32: FromSample<T>,
{
    if let Some(samples) = data.as_slice::<T>() {
        mix_to_mono(samples, channels, f32::from_sample_, out);
    }
}

/// Opens `wanted` (as [`find_device`] matches it) or the default input, and starts its stream.
pub(super) fn open(wanted: Option<&str>) -> Result<Input, AudioError> {
    let host = cpal::default_host();
    let wanted = wanted.map(str::trim).filter(|w| !w.is_empty());
    let default = wanted.is_none();
    let device = match wanted {
        None => host
            .default_input_device()
            .ok_or_else(|| AudioError::NoDefault {
                reason: "the system has no default input".into(),
            })?,
        Some(wanted) => {
            let (devices, infos): (Vec<_>, Vec<_>) = devices(&host)?.into_iter().unzip();
            let found = find_device(&infos, wanted)
                .and_then(|found| infos.iter().position(|d| std::ptr::eq(d, found)));
            match found {
                Some(index) => devices.into_iter().nth(index).expect("listed"),
                None => {
                    return Err(AudioError::NoMatch {
                        wanted: wanted.to_owned(),
                        available: infos,
                    })
                }
            }
        }
    };
    let name = device.to_string();
    let config = device
        .default_input_config()
        .map_err(|e| open_error(&name, default, &e))?;
    let format = config.sample_format();
    if ![
        SampleFormat::F32,
        SampleFormat::I16,
        SampleFormat::I32,
        SampleFormat::U16,
    ]
    .contains(&format)
    {
        return Err(AudioError::Open {
            device: name,
            reason: format!("its sample format {format:?} is not one facewire reads"),
        });
    }
    let channels = usize::from(config.channels()).max(1);
    let rate = config.sample_rate();
    let (samples_tx, samples) = mpsc::sync_channel(QUEUE);
    let (lost_tx, lost) = mpsc::channel();
    let on_data = move |data: &Data, _: &InputCallbackInfo| {
        let mut block = Vec::with_capacity(data.len() / channels);
        match format {
            SampleFormat::F32 => mix::<f32>(data, channels, &mut block),
            SampleFormat::I16 => mix::<i16>(data, channels, &mut block),
            SampleFormat::I32 => mix::<i32>(data, channels, &mut block),
            _ => mix::<u16>(data, channels, &mut block),
        }
        // A full queue means the capture thread is behind: this block is dropped.
        let _ = samples_tx.try_send(block);
    };
    let on_error = move |error: cpal::Error| match error.kind() {
        ErrorKind::DeviceNotAvailable
        | ErrorKind::StreamInvalidated
        | ErrorKind::HostUnavailable => {
            let _ = lost_tx.send(error.to_string());
        }
        _ => tracing::debug!(cause = %error, "audio input stream"),
    };
    let stream = device
        .build_input_stream_raw(config.config(), format, on_data, on_error, None)
        .map_err(|e| open_error(&name, default, &e))?;
    stream.play().map_err(|e| open_error(&name, default, &e))?;
    Ok(Input {
        name,
        rate,
        _stream: stream,
        samples,
        lost,
    })
}

/// A playing input stream.
pub(super) struct Input {
    name: String,
    rate: u32,
    /// Dropping the stream stops it.
    _stream: cpal::Stream,
    /// Blocks of mono samples from the stream's callback.
    samples: mpsc::Receiver<Vec<f32>>,
    /// Why the stream ended, from its error callback.
    lost: mpsc::Receiver<String>,
}

impl Source for Input {
    fn name(&self) -> &str {
        &self.name
    }

    fn rate(&self) -> u32 {
        self.rate
    }

    fn read(&mut self, out: &mut Vec<f32>) -> Result<(), String> {
        if let Ok(reason) = self.lost.try_recv() {
            return Err(reason);
        }
        match self.samples.recv_timeout(WAIT) {
            Ok(block) => {
                out.extend(block);
                while let Ok(block) = self.samples.try_recv() {
                    out.extend(block);
                }
                Ok(())
            }
            Err(mpsc::RecvTimeoutError::Timeout) => Ok(()),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err("the stream ended".into()),
        }
    }
}

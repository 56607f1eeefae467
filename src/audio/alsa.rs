//! Linux audio input through ALSA, with `libasound.so.2` loaded at run time: building facewire
//! needs no ALSA development files, and a machine without the library runs everything but
//! audio input.
//!
//! The only `unsafe` outside `render/`: the library's functions ([`Lib`]), the device hints'
//! list ([`Hints`]) and the PCM handle ([`Pcm`]), each with one owner that frees it in `Drop`.

#![expect(unsafe_code)]

use std::ffi::{c_char, c_int, c_long, c_uint, c_ulong, c_void, CStr, CString};
use std::ptr::{self, NonNull};
use std::sync::OnceLock;

use super::{find_device, mix_to_mono, AudioError, DeviceInfo, Source};

/// The library, by the name its runtime package installs (no `-dev` symlink needed).
const LIBRARY: &str = "libasound.so.2";

/// The PCM that opens when no device is named.
const DEFAULT: &str = "default";

/// How long one read waits for audio, milliseconds.
const WAIT_MS: c_int = 100;

/// The rate asked for: most devices and sound servers run at 48 kHz, so nothing converts twice
/// before the analyser resamples.
const RATE: c_uint = 48_000;

// Constants of alsa/pcm.h.
const STREAM_CAPTURE: c_int = 1;
const NONBLOCK: c_int = 1;
const ACCESS_RW_INTERLEAVED: c_int = 3;

// Error numbers (Linux's errno values), negated in ALSA's return codes.
const EPERM: c_int = 1;
const ENOENT: c_int = 2;
const ENXIO: c_int = 6;
const EAGAIN: c_int = 11;
const EACCES: c_int = 13;
const EBUSY: c_int = 16;
const ENODEV: c_int = 19;
const EINVAL: c_int = 22;

/// A sample format facewire reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// 32-bit float, -1 to 1.
    F32,
    /// Signed 16-bit.
    I16,
    /// Signed 32-bit.
    I32,
}

impl Format {
    /// The formats to ask for, best first, each with its `snd_pcm_format_t` in this machine's
    /// byte order.
    const PREFERRED: [(Format, c_int); 3] = if cfg!(target_endian = "little") {
        [(Format::F32, 14), (Format::I16, 2), (Format::I32, 10)]
    } else {
        [(Format::F32, 15), (Format::I16, 3), (Format::I32, 11)]
    };

    /// Bytes a sample.
    fn size(self) -> usize {
        match self {
            Format::I16 => 2,
            Format::F32 | Format::I32 => 4,
        }
    }
}

/// Appends the samples in `bytes` (native byte order) to `out` as -1 to 1.
fn decode(format: Format, bytes: &[u8], out: &mut Vec<f32>) {
    match format {
        Format::F32 => out.extend(bytes.chunks_exact(4).map(|b| {
            let s = f32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
            if s.is_finite() {
                s.clamp(-1.0, 1.0)
            } else {
                0.0
            }
        })),
        Format::I16 => out.extend(
            bytes
                .chunks_exact(2)
                .map(|b| f32::from(i16::from_ne_bytes([b[0], b[1]])) / 32_768.0),
        ),
        Format::I32 => out.extend(
            bytes
                .chunks_exact(4)
                .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as f32 / 2_147_483_648.0),
        ),
    }
}

/// An opaque `snd_pcm_t`.
#[repr(C)]
struct SndPcm {
    _opaque: [u8; 0],
}

/// An opaque `snd_pcm_hw_params_t`.
#[repr(C)]
struct SndHwParams {
    _opaque: [u8; 0],
}

/// `libasound.so.2` and the functions facewire calls, with their C signatures from alsa/pcm.h,
/// alsa/control.h and alsa/error.h.
struct Lib {
    pcm_open: unsafe extern "C" fn(*mut *mut SndPcm, *const c_char, c_int, c_int) -> c_int,
    pcm_close: unsafe extern "C" fn(*mut SndPcm) -> c_int,
    hw_params_malloc: unsafe extern "C" fn(*mut *mut SndHwParams) -> c_int,
    hw_params_free: unsafe extern "C" fn(*mut SndHwParams),
    hw_params_any: unsafe extern "C" fn(*mut SndPcm, *mut SndHwParams) -> c_int,
    hw_params_set_access: unsafe extern "C" fn(*mut SndPcm, *mut SndHwParams, c_int) -> c_int,
    hw_params_set_format: unsafe extern "C" fn(*mut SndPcm, *mut SndHwParams, c_int) -> c_int,
    hw_params_set_channels_near:
        unsafe extern "C" fn(*mut SndPcm, *mut SndHwParams, *mut c_uint) -> c_int,
    hw_params_set_rate_near:
        unsafe extern "C" fn(*mut SndPcm, *mut SndHwParams, *mut c_uint, *mut c_int) -> c_int,
    hw_params_set_period_size_near:
        unsafe extern "C" fn(*mut SndPcm, *mut SndHwParams, *mut c_ulong, *mut c_int) -> c_int,
    hw_params_set_buffer_size_near:
        unsafe extern "C" fn(*mut SndPcm, *mut SndHwParams, *mut c_ulong) -> c_int,
    hw_params: unsafe extern "C" fn(*mut SndPcm, *mut SndHwParams) -> c_int,
    pcm_prepare: unsafe extern "C" fn(*mut SndPcm) -> c_int,
    pcm_readi: unsafe extern "C" fn(*mut SndPcm, *mut c_void, c_ulong) -> c_long,
    pcm_wait: unsafe extern "C" fn(*mut SndPcm, c_int) -> c_int,
    pcm_recover: unsafe extern "C" fn(*mut SndPcm, c_int, c_int) -> c_int,
    strerror: unsafe extern "C" fn(c_int) -> *const c_char,
    name_hint: unsafe extern "C" fn(c_int, *const c_char, *mut *mut *mut c_void) -> c_int,
    name_get_hint: unsafe extern "C" fn(*const c_void, *const c_char) -> *mut c_char,
    name_free_hint: unsafe extern "C" fn(*mut *mut c_void) -> c_int,
    /// Keeps the functions above loaded; never unloaded, as the one `Lib` is a static.
    _library: libloading::Library,
}

extern "C" {
    /// The C library's `free`, for the strings `snd_device_name_get_hint` allocates.
    fn free(ptr: *mut c_void);
}

/// The function `name` of `library`, as the function pointer type `F`.
fn symbol<F: Copy>(library: &libloading::Library, name: &[u8]) -> Result<F, libloading::Error> {
    // SAFETY: every caller passes as `F` the pointer type of `name`'s C declaration (the fields
    // of `Lib`), and the pointer lives in a `Lib` beside the library it points into.
    unsafe { library.get::<F>(name).map(|f| *f) }
}

impl Lib {
    /// The library, loaded on first use; the error names the package to install.
    fn get() -> Result<&'static Lib, AudioError> {
        static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();
        match LIB.get_or_init(|| Lib::load(LIBRARY).map_err(|e| e.to_string())) {
            Ok(lib) => Ok(lib),
            Err(reason) => Err(AudioError::Library {
                library: LIBRARY,
                reason: reason.clone(),
            }),
        }
    }

    /// Loads `file` and looks up every function.
    fn load(file: &str) -> Result<Lib, libloading::Error> {
        // SAFETY: loading libasound runs only its own initialisers, which set up ALSA's state.
        let library = unsafe { libloading::Library::new(file)? };
        Ok(Lib {
            pcm_open: symbol(&library, b"snd_pcm_open\0")?,
            pcm_close: symbol(&library, b"snd_pcm_close\0")?,
            hw_params_malloc: symbol(&library, b"snd_pcm_hw_params_malloc\0")?,
            hw_params_free: symbol(&library, b"snd_pcm_hw_params_free\0")?,
            hw_params_any: symbol(&library, b"snd_pcm_hw_params_any\0")?,
            hw_params_set_access: symbol(&library, b"snd_pcm_hw_params_set_access\0")?,
            hw_params_set_format: symbol(&library, b"snd_pcm_hw_params_set_format\0")?,
            hw_params_set_channels_near: symbol(
                &library,
                b"snd_pcm_hw_params_set_channels_near\0",
            )?,
            hw_params_set_rate_near: symbol(&library, b"snd_pcm_hw_params_set_rate_near\0")?,
            hw_params_set_period_size_near: symbol(
                &library,
                b"snd_pcm_hw_params_set_period_size_near\0",
            )?,
            hw_params_set_buffer_size_near: symbol(
                &library,
                b"snd_pcm_hw_params_set_buffer_size_near\0",
            )?,
            hw_params: symbol(&library, b"snd_pcm_hw_params\0")?,
            pcm_prepare: symbol(&library, b"snd_pcm_prepare\0")?,
            pcm_readi: symbol(&library, b"snd_pcm_readi\0")?,
            pcm_wait: symbol(&library, b"snd_pcm_wait\0")?,
            pcm_recover: symbol(&library, b"snd_pcm_recover\0")?,
            strerror: symbol(&library, b"snd_strerror\0")?,
            name_hint: symbol(&library, b"snd_device_name_hint\0")?,
            name_get_hint: symbol(&library, b"snd_device_name_get_hint\0")?,
            name_free_hint: symbol(&library, b"snd_device_name_free_hint\0")?,
            _library: library,
        })
    }

    /// ALSA's words for the error `code` (negative).
    fn message(&self, code: c_int) -> String {
        // SAFETY: snd_strerror takes any number and returns a static string (or null).
        let text = unsafe { (self.strerror)(code) };
        if text.is_null() {
            return format!("error {code}");
        }
        // SAFETY: a non-null result of snd_strerror is a NUL-terminated static string.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    }
}

/// The list `snd_device_name_hint` returns, freed in `Drop`.
struct Hints {
    lib: &'static Lib,
    list: NonNull<*mut c_void>,
}

impl Hints {
    /// The PCM hints of every card.
    fn pcm(lib: &'static Lib) -> Result<Hints, AudioError> {
        let mut list = ptr::null_mut();
        // SAFETY: `list` is a valid place for the result; the interface name is NUL-terminated.
        let code = unsafe { (lib.name_hint)(-1, c"pcm".as_ptr(), &mut list) };
        match NonNull::new(list) {
            Some(list) if code >= 0 => Ok(Hints { lib, list }),
            _ => Err(AudioError::List {
                reason: lib.message(code.min(-ENOENT)),
            }),
        }
    }

    /// The hint's value of `id` (`NAME`, `DESC`, `IOID`), if it has one.
    fn value(&self, hint: *mut c_void, id: &CStr) -> Option<String> {
        // SAFETY: `hint` is an entry of this live list and `id` is NUL-terminated.
        let text = unsafe { (self.lib.name_get_hint)(hint, id.as_ptr()) };
        if text.is_null() {
            return None;
        }
        // SAFETY: a non-null result is a NUL-terminated string that ALSA allocated with malloc
        // for us to free; it is read once, then freed.
        let value = unsafe {
            let value = CStr::from_ptr(text).to_string_lossy().into_owned();
            free(text.cast());
            value
        };
        Some(value)
    }

    /// The capture devices in the list, in its order.
    fn inputs(&self) -> Vec<DeviceInfo> {
        let mut devices = Vec::new();
        for index in 0.. {
            // SAFETY: the list is an array ended by a null entry, and reading stops there.
            let hint = unsafe { *self.list.as_ptr().add(index) };
            if hint.is_null() {
                break;
            }
            let Some(name) = self.value(hint, c"NAME") else {
                continue;
            };
            // No IOID: both directions.
            if self.value(hint, c"IOID").is_some_and(|io| io != "Input") {
                continue;
            }
            let description = self.value(hint, c"DESC").unwrap_or_default();
            devices.push(DeviceInfo {
                default: name == DEFAULT,
                description: one_line(&description),
                name,
            });
        }
        devices
    }
}

impl Drop for Hints {
    fn drop(&mut self) {
        // SAFETY: the list came from snd_device_name_hint and is freed once, here.
        unsafe { (self.lib.name_free_hint)(self.list.as_ptr()) };
    }
}

/// An ALSA description's lines joined on one line.
fn one_line(description: &str) -> String {
    description
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The capture devices ALSA lists.
pub(super) fn input_devices() -> Result<Vec<DeviceInfo>, AudioError> {
    let lib = Lib::get()?;
    Ok(Hints::pcm(lib)?.inputs())
}

/// Opens `wanted` (found by [`find_device`], else tried as an ALSA PCM name such as `hw:1,0`),
/// or the default input.
pub(super) fn open(wanted: Option<&str>) -> Result<Pcm, AudioError> {
    let lib = Lib::get()?;
    let Some(wanted) = wanted.map(str::trim).filter(|w| !w.is_empty()) else {
        // A machine with no sound card lists only `null`: say so without asking ALSA to open
        // `default`, which would print its configuration errors on the terminal first.
        if let Ok(hints) = Hints::pcm(lib) {
            if hints.inputs().iter().all(|d| d.name == "null") {
                return Err(AudioError::NoDefault {
                    reason: "this machine has no sound card or sound server".into(),
                });
            }
        }
        return Pcm::open(lib, DEFAULT).map_err(|f| f.error(lib, DEFAULT));
    };
    let devices = Hints::pcm(lib).map(|h| h.inputs()).unwrap_or_default();
    let listed = find_device(&devices, wanted).map(|d| d.name.clone());
    let name = listed.clone().unwrap_or_else(|| wanted.to_owned());
    Pcm::open(lib, &name).map_err(|failure| {
        let missing = [-ENOENT, -ENODEV, -ENXIO].contains(&failure.code);
        if listed.is_none() && missing && name != DEFAULT {
            AudioError::NoMatch {
                wanted: wanted.to_owned(),
                available: devices,
            }
        } else {
            failure.error(lib, &name)
        }
    })
}

/// A failed ALSA call while opening: the step and its code.
#[derive(Debug)]
struct Failure {
    /// What was being done.
    step: &'static str,
    /// ALSA's code (negative).
    code: c_int,
}

impl Failure {
    /// The error to show for opening `device`.
    fn error(&self, lib: &Lib, device: &str) -> AudioError {
        let reason = match self.step {
            "" => lib.message(self.code),
            step => format!("{step}: {}", lib.message(self.code)),
        };
        let device = device.to_owned();
        match -self.code {
            EACCES | EPERM => AudioError::Permission { device, reason },
            EBUSY => AudioError::Busy { device, reason },
            ENOENT | ENODEV | ENXIO if device == DEFAULT => AudioError::NoDefault { reason },
            _ => AudioError::Open { device, reason },
        }
    }
}

/// `code` as a result: negative codes fail with `step`.
fn check(code: c_int, step: &'static str) -> Result<(), Failure> {
    if code < 0 {
        Err(Failure { step, code })
    } else {
        Ok(())
    }
}

/// A `snd_pcm_hw_params_t`, freed in `Drop`.
struct HwParams {
    lib: &'static Lib,
    params: NonNull<SndHwParams>,
}

impl HwParams {
    fn new(lib: &'static Lib) -> Result<HwParams, Failure> {
        let mut params = ptr::null_mut();
        // SAFETY: `params` is a valid place for the result.
        let code = unsafe { (lib.hw_params_malloc)(&mut params) };
        check(code, "allocating hardware parameters")?;
        let params = NonNull::new(params).ok_or(Failure {
            step: "allocating hardware parameters",
            code: -EINVAL,
        })?;
        Ok(HwParams { lib, params })
    }
}

impl Drop for HwParams {
    fn drop(&mut self) {
        // SAFETY: allocated by snd_pcm_hw_params_malloc and freed once, here.
        unsafe { (self.lib.hw_params_free)(self.params.as_ptr()) };
    }
}

/// An open capture PCM: the one owner of its handle, which it closes in `Drop`. Used on the
/// thread that opened it only (it is neither `Send` nor `Sync`).
pub(super) struct Pcm {
    lib: &'static Lib,
    handle: NonNull<SndPcm>,
    /// The PCM's name.
    name: String,
    format: Format,
    channels: usize,
    rate: u32,
    /// Frames one read asks for (about 10 ms).
    period: usize,
    /// Room for one read, as it comes.
    bytes: Vec<u8>,
    /// One read's samples, interleaved.
    samples: Vec<f32>,
}

impl Pcm {
    /// Opens `name` for capture (non-blocking) and sets it up: interleaved, the first of
    /// [`Format::PREFERRED`] it takes, channels near 1, rate near [`RATE`], reads of about
    /// 10 ms.
    fn open(lib: &'static Lib, name: &str) -> Result<Pcm, Failure> {
        let c_name = CString::new(name).map_err(|_| Failure {
            step: "the name has a NUL character",
            code: -EINVAL,
        })?;
        let mut handle = ptr::null_mut();
        // SAFETY: `handle` is a valid place for the result and `c_name` is NUL-terminated.
        let code =
            unsafe { (lib.pcm_open)(&mut handle, c_name.as_ptr(), STREAM_CAPTURE, NONBLOCK) };
        check(code, "")?;
        let handle = NonNull::new(handle).ok_or(Failure {
            step: "opening",
            code: -EINVAL,
        })?;
        // From here on, dropping `pcm` closes the handle.
        let mut pcm = Pcm {
            lib,
            handle,
            name: name.to_owned(),
            format: Format::F32,
            channels: 1,
            rate: RATE,
            period: 0,
            bytes: Vec::new(),
            samples: Vec::new(),
        };
        pcm.configure()?;
        Ok(pcm)
    }

    /// Negotiates the hardware parameters and prepares the PCM.
    fn configure(&mut self) -> Result<(), Failure> {
        let lib = self.lib;
        let params = HwParams::new(lib)?;
        let (pcm, p) = (self.handle.as_ptr(), params.params.as_ptr());
        let mut channels: c_uint = 1;
        let mut rate: c_uint = RATE;
        let mut period: c_ulong = c_ulong::from(RATE / 100);
        let mut buffer: c_ulong;
        let mut dir: c_int = 0;
        // SAFETY: `pcm` is this open PCM and `p` parameters allocated for it; every pointer
        // passed is to a local that outlives the call.
        let format = unsafe {
            check(
                (lib.hw_params_any)(pcm, p),
                "reading the hardware parameters",
            )?;
            check(
                (lib.hw_params_set_access)(pcm, p, ACCESS_RW_INTERLEAVED),
                "setting interleaved access",
            )?;
            // A refused format leaves the parameters as they were.
            let format = Format::PREFERRED
                .into_iter()
                .find(|&(_, code)| (lib.hw_params_set_format)(pcm, p, code) >= 0)
                .map(|(format, _)| format)
                .ok_or(Failure {
                    step: "no sample format facewire reads (float, 16 or 32 bit)",
                    code: -EINVAL,
                })?;
            check(
                (lib.hw_params_set_channels_near)(pcm, p, &mut channels),
                "setting the channels",
            )?;
            check(
                (lib.hw_params_set_rate_near)(pcm, p, &mut rate, &mut dir),
                "setting the sample rate",
            )?;
            period = period.max(1);
            dir = 0;
            check(
                (lib.hw_params_set_period_size_near)(pcm, p, &mut period, &mut dir),
                "setting the period",
            )?;
            buffer = period * 8;
            check(
                (lib.hw_params_set_buffer_size_near)(pcm, p, &mut buffer),
                "setting the buffer",
            )?;
            check((lib.hw_params)(pcm, p), "applying the hardware parameters")?;
            check((lib.pcm_prepare)(pcm), "preparing")?;
            format
        };
        self.format = format;
        self.channels = channels.max(1) as usize;
        self.rate = rate;
        self.period = (period as usize).clamp(1, buffer.max(1) as usize);
        self.bytes = vec![0; self.period * self.channels * format.size()];
        tracing::debug!(
            device = %self.name,
            format = ?format,
            channels,
            rate,
            period,
            buffer,
            "ALSA capture set up"
        );
        Ok(())
    }

    /// Brings the PCM back after the error `code` of a read or wait (an overrun or a suspend);
    /// other errors mean the device is gone.
    fn recover(&mut self, code: c_int) -> Result<(), String> {
        // SAFETY: the handle is this open PCM.
        let recovered = unsafe { (self.lib.pcm_recover)(self.handle.as_ptr(), code, 1) };
        if recovered < 0 {
            return Err(self.lib.message(code));
        }
        tracing::debug!(device = %self.name, cause = %self.lib.message(code), "audio input recovered");
        Ok(())
    }
}

impl Source for Pcm {
    fn name(&self) -> &str {
        &self.name
    }

    fn rate(&self) -> u32 {
        self.rate
    }

    fn read(&mut self, out: &mut Vec<f32>) -> Result<(), String> {
        let pcm = self.handle.as_ptr();
        // Some plugins count frames they do not write (the null device beneath the file
        // plugin): those read as silence, not as the last read again.
        self.bytes.fill(0);
        // SAFETY: `bytes` holds `period` frames of this PCM's format and channels, and readi
        // writes at most the frames asked for. A read comes first: it restarts a PCM that a
        // recovery left prepared, which a wait would not.
        let frames = unsafe {
            (self.lib.pcm_readi)(pcm, self.bytes.as_mut_ptr().cast(), self.period as c_ulong)
        };
        if frames > 0 {
            let len = frames as usize * self.channels * self.format.size();
            self.samples.clear();
            decode(self.format, &self.bytes[..len], &mut self.samples);
            mix_to_mono(&self.samples, self.channels, |s| s, out);
            return Ok(());
        }
        let code = c_int::try_from(frames).unwrap_or(-EINVAL);
        if code == 0 || code == -EAGAIN {
            // SAFETY: the handle is this open PCM.
            let waited = unsafe { (self.lib.pcm_wait)(pcm, WAIT_MS) };
            if waited >= 0 {
                return Ok(());
            }
            return self.recover(waited);
        }
        self.recover(code)
    }
}

impl Drop for Pcm {
    fn drop(&mut self) {
        // SAFETY: the handle is open, owned by this value alone, and closed once, here.
        unsafe { (self.lib.pcm_close)(self.handle.as_ptr()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audio::{AudioStatus, Capture};
    use std::sync::mpsc;
    use std::time::Duration;

    /// The library, or `None` with a note when this machine lacks it.
    fn lib() -> Option<&'static Lib> {
        match Lib::get() {
            Ok(lib) => Some(lib),
            Err(e) => {
                eprintln!("note: skipping an ALSA test: {e}");
                None
            }
        }
    }

    #[test]
    fn samples_are_decoded_to_minus_one_to_one() {
        let mut out = Vec::new();
        let bytes: Vec<u8> = [i16::MIN, 0, 16_384]
            .iter()
            .flat_map(|s| s.to_ne_bytes())
            .collect();
        decode(Format::I16, &bytes, &mut out);
        assert_eq!(out, [-1.0, 0.0, 0.5]);
        out.clear();
        let bytes: Vec<u8> = [i32::MIN, 1 << 30]
            .iter()
            .flat_map(|s| s.to_ne_bytes())
            .collect();
        decode(Format::I32, &bytes, &mut out);
        assert_eq!(out, [-1.0, 0.5]);
        out.clear();
        let bytes: Vec<u8> = [0.25f32, 3.0, f32::NAN, -0.5]
            .iter()
            .flat_map(|s| s.to_ne_bytes())
            .collect();
        decode(Format::F32, &bytes, &mut out);
        assert_eq!(out, [0.25, 1.0, 0.0, -0.5]);
    }

    #[test]
    fn descriptions_are_put_on_one_line() {
        assert_eq!(
            one_line("HDA Intel PCH, ALC892 Analog\nFront microphone\n"),
            "HDA Intel PCH, ALC892 Analog, Front microphone"
        );
    }

    #[test]
    fn a_missing_library_names_the_package() {
        let e = Lib::load("libasound-facewire-missing.so.2").err().unwrap();
        let e = AudioError::Library {
            library: LIBRARY,
            reason: e.to_string(),
        };
        let text = e.to_string();
        assert!(text.starts_with("cannot load libasound.so.2 ("), "{text}");
        assert!(text.contains("libasound-facewire-missing.so.2"), "{text}");
        assert!(text.contains("libasound2 package at run time"), "{text}");
    }

    #[test]
    fn errors_opening_are_sorted_by_their_fix() {
        let Some(lib) = lib() else { return };
        let error = |code: c_int, device| {
            Failure {
                step: "",
                code: -code,
            }
            .error(lib, device)
        };
        assert!(matches!(
            error(EACCES, "hw:0"),
            AudioError::Permission { .. }
        ));
        assert!(matches!(error(EBUSY, "hw:0"), AudioError::Busy { .. }));
        assert!(matches!(
            error(ENOENT, DEFAULT),
            AudioError::NoDefault { .. }
        ));
        assert!(matches!(error(ENODEV, "hw:0"), AudioError::Open { .. }));
        let text = error(EBUSY, "hw:0").to_string();
        assert!(
            text.contains("hw:0 is busy (Device or resource busy)"),
            "{text}"
        );
    }

    #[test]
    fn the_null_device_is_listed_and_reads_silence() {
        let Some(_) = lib() else { return };
        let devices = input_devices().unwrap();
        assert!(devices.iter().any(|d| d.name == "null"), "{devices:?}");
        let mut pcm = open(Some("NULL")).unwrap();
        assert_eq!(pcm.name(), "null");
        assert_eq!(
            (pcm.format, pcm.channels, pcm.rate()),
            (Format::F32, 1, RATE)
        );
        let mut samples = Vec::new();
        for _ in 0..20 {
            pcm.read(&mut samples).unwrap();
        }
        assert!(samples.len() >= 4_800, "{}", samples.len());
        assert!(samples.iter().all(|&s| s == 0.0));
        drop(pcm);
        // Closed and opened again.
        open(Some("null")).unwrap();
    }

    #[test]
    fn an_unknown_name_lists_the_inputs() {
        let Some(_) = lib() else { return };
        match open(Some("facewire-no-such-input")) {
            Err(AudioError::NoMatch { wanted, available }) => {
                assert_eq!(wanted, "facewire-no-such-input");
                assert!(available.iter().any(|d| d.name == "null"), "{available:?}");
            }
            other => panic!("{:?}", other.map(|p| p.name.clone())),
        }
    }

    #[test]
    fn a_capture_of_the_null_device_starts_delivers_and_stops() {
        let Some(_) = lib() else { return };
        let (tx, rx) = mpsc::sync_channel(4);
        let (status_tx, status_rx) = mpsc::channel();
        let capture = Capture::start(
            Some("null"),
            move |samples, rate| {
                let _ = tx.try_send((samples.len(), samples.iter().all(|&s| s == 0.0), rate));
            },
            move |status| {
                let _ = status_tx.send(status);
            },
        )
        .unwrap();
        assert_eq!((capture.device(), capture.rate()), ("null", RATE));
        let (len, silent, rate) = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(len > 0 && silent && rate == RATE, "{len} {silent} {rate}");
        assert_eq!(
            status_rx.recv_timeout(Duration::from_secs(5)).unwrap(),
            AudioStatus::Open {
                device: "null".into(),
                rate: RATE
            }
        );
        drop(capture);
        assert!(rx.iter().count() <= 4, "the thread has ended");
    }
}

//! Cameras on Linux, through Video4Linux2 (the `linuxvideo` crate: no C headers or system
//! libraries needed to build or run).
//!
//! Every `/dev/video*` node that captures video is a camera; a USB camera's second node (its
//! metadata) is not. Frames are Motion JPEG where the camera offers it (what USB cameras give at
//! full frame rate), else YUYV, else RGB, BGR, NV12 or grey.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use linuxvideo::format::{PixFormat, PixelFormat};
use linuxvideo::stream::ReadStream;
use linuxvideo::{BufType, CapabilityFlags, Device, Fract};
use rustix::event::{poll, PollFd, PollFlags, Timespec};

use super::camera::{
    Camera, CameraError, CameraInfo, CameraMode, CameraRequest, PixelLayout, RawFrame, MAX_SIDE,
};

/// The system's format for each layout facewire reads.
fn pixel_format(layout: PixelLayout) -> PixelFormat {
    match layout {
        PixelLayout::Mjpeg => PixelFormat::MJPG,
        PixelLayout::Yuyv => PixelFormat::YUYV,
        PixelLayout::Rgb => PixelFormat::RGB3,
        PixelLayout::Bgr => PixelFormat::BGR3,
        PixelLayout::Nv12 => PixelFormat::from_fourcc(*b"NV12"),
        PixelLayout::Gray => PixelFormat::from_fourcc(*b"GREY"),
    }
}

/// The layout of a system format, for those facewire reads.
fn layout(format: PixelFormat) -> Option<PixelLayout> {
    PixelLayout::ALL.into_iter().find(|&l| {
        pixel_format(l) == format || (l == PixelLayout::Mjpeg && format == PixelFormat::JPEG)
    })
}

/// The `/dev/video*` nodes, in number order.
fn nodes() -> Result<Vec<PathBuf>, CameraError> {
    let entries = match std::fs::read_dir("/dev") {
        Ok(entries) => entries,
        Err(e) => {
            return Err(CameraError::List {
                reason: format!("/dev: {e}"),
            })
        }
    };
    let mut nodes: Vec<(u32, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name();
            let number = name.to_str()?.strip_prefix("video")?.parse().ok()?;
            Some((number, entry.path()))
        })
        .collect();
    nodes.sort();
    Ok(nodes.into_iter().map(|(_, path)| path).collect())
}

/// An open error as the camera error that names its fix.
fn open_error(device: &Path, e: &io::Error) -> CameraError {
    let device = device.display().to_string();
    let reason = e.to_string();
    match e.raw_os_error() {
        Some(libc_code) if libc_code == rustix::io::Errno::BUSY.raw_os_error() => {
            CameraError::Busy { device, reason }
        }
        Some(code)
            if code == rustix::io::Errno::ACCESS.raw_os_error()
                || code == rustix::io::Errno::PERM.raw_os_error() =>
        {
            CameraError::Permission { device, reason }
        }
        _ => CameraError::Open { device, reason },
    }
}

/// The layouts a device offers that facewire reads (best first), and every format it offers.
fn layouts(device: &Device) -> (Vec<PixelLayout>, Vec<String>) {
    let mut offered = Vec::new();
    let mut found = Vec::new();
    for format in device.formats(BufType::VIDEO_CAPTURE).flatten() {
        offered.push(format.pixel_format().to_string());
        if let Some(l) = layout(format.pixel_format()) {
            found.push(l);
        }
    }
    found.sort_by_key(|l| *l as u8);
    found.dedup();
    (found, offered)
}

/// Whether a device captures video (not a metadata or output node).
fn captures_video(device: &Device) -> bool {
    device
        .capabilities()
        .map(|c| {
            let flags = c.device_capabilities();
            flags.contains(CapabilityFlags::VIDEO_CAPTURE)
                && flags.contains(CapabilityFlags::STREAMING)
        })
        .unwrap_or(false)
}

/// The cameras there are. A node that cannot be opened for want of permission makes the whole
/// list fail with that, when no other camera opens (so the fix is named).
pub fn list() -> Result<Vec<CameraInfo>, CameraError> {
    let mut cameras = Vec::new();
    let mut refused = None;
    for path in nodes()? {
        let device = match Device::open(&path) {
            Ok(device) => device,
            Err(e) => {
                match open_error(&path, &e) {
                    error @ CameraError::Permission { .. } => refused = Some(error),
                    other => {
                        tracing::debug!(node = %path.display(), error = %other, "video node skipped")
                    }
                }
                continue;
            }
        };
        if !captures_video(&device) {
            continue;
        }
        let name = device
            .capabilities()
            .map(|c| c.card().trim().to_string())
            .unwrap_or_default();
        let (layouts, _) = layouts(&device);
        cameras.push(CameraInfo {
            index: cameras.len(),
            name: if name.is_empty() {
                path.display().to_string()
            } else {
                name
            },
            id: path.display().to_string(),
            layouts,
        });
    }
    match (cameras.is_empty(), refused) {
        (true, Some(error)) => Err(error),
        _ => Ok(cameras),
    }
}

/// Opens `info`'s camera at the nearest it offers to `request`.
pub fn open(info: &CameraInfo, request: CameraRequest) -> Result<Box<dyn Camera>, CameraError> {
    let path = Path::new(&info.id);
    let device = Device::open(path).map_err(|e| open_error(path, &e))?;
    let (found, offered) = layouts(&device);
    let Some(&chosen) = found.first() else {
        return Err(CameraError::NoLayout {
            device: info.id.clone(),
            offered: if offered.is_empty() {
                "nothing".into()
            } else {
                offered.join(", ")
            },
        });
    };
    let format = PixFormat::new(request.width, request.height, pixel_format(chosen));
    let capture = device
        .video_capture(format)
        .map_err(|e| open_error(path, &e))?;
    let negotiated = capture.format();
    let Some(got) = layout(negotiated.pixel_format()) else {
        return Err(CameraError::NoLayout {
            device: info.id.clone(),
            offered: negotiated.pixel_format().to_string(),
        });
    };
    let (width, height) = (negotiated.width(), negotiated.height());
    let stride = negotiated.bytes_per_line() as usize;
    if !(1..=MAX_SIDE).contains(&width) || !(1..=MAX_SIDE).contains(&height) {
        return Err(CameraError::Open {
            device: info.id.clone(),
            reason: format!("it gives {width}x{height} frames"),
        });
    }
    // A camera that cannot change its rate keeps its own; that is no reason to fail.
    let fps = match capture.set_frame_interval(Fract::new(1, request.fps.max(1))) {
        Ok(interval) if interval.numerator() > 0 => {
            interval.denominator() as f32 / interval.numerator() as f32
        }
        _ => 0.0,
    };
    let stream = capture.into_stream().map_err(|e| open_error(path, &e))?;
    Ok(Box::new(V4lCamera {
        stream,
        mode: CameraMode {
            name: info.name.clone(),
            id: info.id.clone(),
            width,
            height,
            fps,
            layout: got,
        },
        stride,
    }))
}

/// A streaming V4L2 camera.
struct V4lCamera {
    stream: ReadStream,
    mode: CameraMode,
    stride: usize,
}

impl Camera for V4lCamera {
    fn mode(&self) -> &CameraMode {
        &self.mode
    }

    fn read(&mut self, wait: Duration) -> Result<Option<RawFrame>, String> {
        let timeout = Timespec::try_from(wait).unwrap_or(Timespec {
            tv_sec: 0,
            tv_nsec: 100_000_000,
        });
        let ready = {
            let mut fds = [PollFd::new(&self.stream, PollFlags::IN)];
            match poll(&mut fds, Some(&timeout)) {
                Ok(0) => return Ok(None),
                Ok(_) => fds[0].revents(),
                Err(rustix::io::Errno::INTR) => return Ok(None),
                Err(e) => return Err(e.to_string()),
            }
        };
        if ready.intersects(PollFlags::ERR | PollFlags::HUP | PollFlags::NVAL) {
            return Err("the camera went away".into());
        }
        let mode = &self.mode;
        let stride = self.stride;
        self.stream
            .dequeue(|buffer| {
                if buffer.is_error() {
                    // A damaged frame: skip it, the next one is on its way.
                    return Ok(None);
                }
                Ok(Some(RawFrame {
                    layout: mode.layout,
                    width: mode.width,
                    height: mode.height,
                    stride,
                    data: buffer.to_vec(),
                }))
            })
            .map_err(|e| e.to_string())
    }
}

//! Cameras on Windows (Media Foundation) and macOS (AVFoundation), through nokhwa's own
//! backends (no system development files needed to build).
//!
//! Frames come as the camera gives them (Motion JPEG, YUYV, NV12, RGB, BGR or grey) and are
//! turned into RGB by [`super::camera::RawFrame::decode`], like the Linux cameras'.

use std::time::Duration;

use nokhwa::utils::{
    ApiBackend, CameraFormat, CameraIndex, FrameFormat, RequestedFormat, RequestedFormatType,
    Resolution,
};

use super::camera::{
    Camera, CameraError, CameraInfo, CameraMode, CameraRequest, PixelLayout, RawFrame, MAX_SIDE,
};

/// The formats facewire reads, best first.
static FORMATS: [FrameFormat; 6] = [
    FrameFormat::MJPEG,
    FrameFormat::YUYV,
    FrameFormat::NV12,
    FrameFormat::RAWRGB,
    FrameFormat::RAWBGR,
    FrameFormat::GRAY,
];

/// The layout of a frame in `format` of `width` x `height` holding `len` bytes. AVFoundation
/// reports its 4:2:0 frames as YUYV too: their size tells them apart.
fn layout(format: FrameFormat, width: u32, height: u32, len: usize) -> PixelLayout {
    let pixels = width as usize * height as usize;
    match format {
        FrameFormat::MJPEG => PixelLayout::Mjpeg,
        FrameFormat::YUYV if len < pixels * 2 && len >= pixels * 3 / 2 => PixelLayout::Nv12,
        FrameFormat::YUYV => PixelLayout::Yuyv,
        FrameFormat::NV12 => PixelLayout::Nv12,
        FrameFormat::RAWRGB => PixelLayout::Rgb,
        FrameFormat::RAWBGR => PixelLayout::Bgr,
        FrameFormat::GRAY => PixelLayout::Gray,
    }
}

/// Asks macOS for the camera permission the first time; false while it is not granted.
fn permitted() -> bool {
    #[cfg(target_os = "macos")]
    {
        if !nokhwa::nokhwa_check() {
            nokhwa::nokhwa_initialize(|_| {});
            return nokhwa::nokhwa_check();
        }
    }
    true
}

/// A nokhwa error as the camera error that names its fix.
fn open_error(device: &str, error: &nokhwa::NokhwaError) -> CameraError {
    let device = device.to_string();
    let reason = error.to_string();
    let lower = reason.to_lowercase();
    if lower.contains("denied") || lower.contains("permission") || lower.contains("authoriz") {
        CameraError::Permission { device, reason }
    } else if lower.contains("in use") || lower.contains("busy") || lower.contains("0xc00d3704") {
        // 0xC00D3704: MF_E_HW_MFT_FAILED_START_STREAMING, another program holds the camera.
        CameraError::Busy { device, reason }
    } else {
        CameraError::Open { device, reason }
    }
}

/// The cameras there are.
pub fn list() -> Result<Vec<CameraInfo>, CameraError> {
    if !permitted() {
        return Err(CameraError::Permission {
            device: "the camera".into(),
            reason: "not allowed yet".into(),
        });
    }
    let cameras = nokhwa::query(ApiBackend::Auto).map_err(|e| CameraError::List {
        reason: e.to_string(),
    })?;
    Ok(cameras
        .iter()
        .enumerate()
        .map(|(index, c)| CameraInfo {
            index,
            name: c.human_name(),
            id: c.index().as_string(),
            // Listed only once a camera is open.
            layouts: Vec::new(),
        })
        .collect())
}

/// Opens `info`'s camera at the nearest it offers to `request`.
pub fn open(info: &CameraInfo, request: CameraRequest) -> Result<Box<dyn Camera>, CameraError> {
    let index = info
        .id
        .parse::<u32>()
        .map(CameraIndex::Index)
        .unwrap_or_else(|_| CameraIndex::String(info.id.clone()));
    let wanted = CameraFormat::new(
        Resolution::new(request.width, request.height),
        FrameFormat::MJPEG,
        request.fps,
    );
    let format = RequestedFormat::with_formats(RequestedFormatType::Closest(wanted), &FORMATS);
    let mut camera = nokhwa::Camera::new(index, format).map_err(|e| open_error(&info.name, &e))?;
    camera
        .open_stream()
        .map_err(|e| open_error(&info.name, &e))?;
    let got = camera.camera_format();
    let (width, height) = (got.resolution().width(), got.resolution().height());
    if !(1..=MAX_SIDE).contains(&width) || !(1..=MAX_SIDE).contains(&height) {
        return Err(CameraError::Open {
            device: info.name.clone(),
            reason: format!("it gives {width}x{height} frames"),
        });
    }
    Ok(Box::new(NativeCamera {
        mode: CameraMode {
            name: info.name.clone(),
            id: info.id.clone(),
            width,
            height,
            fps: got.frame_rate() as f32,
            layout: layout(
                got.format(),
                width,
                height,
                width as usize * height as usize * 2,
            ),
        },
        camera,
    }))
}

/// A streaming camera.
struct NativeCamera {
    mode: CameraMode,
    camera: nokhwa::Camera,
}

impl Camera for NativeCamera {
    fn mode(&self) -> &CameraMode {
        &self.mode
    }

    /// Waits for the next frame (the platform's own wait, a frame's time at most while the
    /// camera streams).
    fn read(&mut self, _wait: Duration) -> Result<Option<RawFrame>, String> {
        let buffer = self.camera.frame().map_err(|e| e.to_string())?;
        let resolution = buffer.resolution();
        let (width, height) = (resolution.width(), resolution.height());
        let data = buffer.buffer().to_vec();
        Ok(Some(RawFrame {
            layout: layout(buffer.source_frame_format(), width, height, data.len()),
            width,
            height,
            stride: 0,
            data,
        }))
    }
}

impl Drop for NativeCamera {
    fn drop(&mut self) {
        let _ = self.camera.stop_stream();
    }
}

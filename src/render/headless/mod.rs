//! Headless rendering: an OpenGL context without a visible window, drawing into an offscreen
//! framebuffer that reads back as an image (snapshots, sheets, `run --headless`, image tests).
//!
//! # Platforms
//!
//! - Linux: EGL's device platform, no X server (see `egl.rs` for the device choice and
//!   [`DEVICE_ENV`]).
//! - Windows: WGL on a hidden window of facewire's own (see `wgl.rs`): Windows has no EGL, and
//!   WGL cannot make a context current without a window.
//! - macOS has neither: there a headless context cannot be made, and asking for one says so
//!   (the stage window works; snapshots, sheets and `run --headless` need Linux or Windows).

#![expect(unsafe_code)]

use std::cell::Cell;
use std::fmt;
use std::mem::ManuallyDrop;
use std::rc::Rc;

use glow::HasContext;

#[cfg(all(not(target_os = "macos"), not(windows)))]
mod egl;
#[cfg(windows)]
mod wgl;

#[cfg(all(not(target_os = "macos"), not(windows)))]
use egl::Platform;
#[cfg(target_os = "macos")]
use unavailable::Platform;
#[cfg(windows)]
use wgl::Platform;

/// The platform on macOS, which has no EGL and no WGL: no value of it exists, so a
/// [`HeadlessContext`] is never made there.
#[cfg(target_os = "macos")]
mod unavailable {
    use super::super::RenderError;

    /// No platform.
    pub(super) enum Platform {}

    impl Platform {
        /// Says that macOS cannot render headless.
        pub(super) fn create() -> Result<(Platform, glow::Context, String), RenderError> {
            Err(RenderError::NoDevice(
                "macOS has no EGL, which headless rendering (snapshots, sheets, run --headless) \
                 needs; the stage window works (facewire run)"
                    .into(),
            ))
        }

        pub(super) fn make_current(&self) -> Result<(), RenderError> {
            match *self {}
        }

        pub(super) fn release(&self) {
            match *self {}
        }
    }
}

use super::check_gl;
use super::debug::gl_string;
use super::objects::{Framebuffer, Renderbuffer};
use super::{is_software_renderer, RenderError};
use crate::image::RgbaImage;

/// The environment variable that selects the EGL device on Linux (`software` or unset).
pub const DEVICE_ENV: &str = "FACEWIRE_EGL_DEVICE";

/// MSAA samples [`HeadlessContext::new`] asks for on a hardware device (fewer when the driver
/// allows fewer).
pub const DEFAULT_SAMPLES: u32 = 4;

/// A current OpenGL context with an offscreen RGBA8 + depth framebuffer.
///
/// The context is current on the creating thread (the type is neither `Send` nor `Sync`).
/// Drop every [`super::Renderer`] made on it before dropping it. With several contexts on one
/// thread, call [`HeadlessContext::make_current`] before using one again.
pub struct HeadlessContext {
    /// The framebuffers and renderbuffers (dropped by hand, while the context is current).
    targets: ManuallyDrop<Targets>,
    /// The GL functions (dropped by hand, while the context is current).
    gl: ManuallyDrop<Rc<glow::Context>>,
    /// The platform's context, display and surface (dropped after the GL objects).
    platform: Platform,
    /// Framebuffer width in pixels.
    width: u32,
    /// Framebuffer height in pixels.
    height: u32,
    /// MSAA samples of the draw framebuffer (0: not multisampled).
    samples: u32,
    /// Which device the context runs on, for logs.
    device: String,
    /// The fence after the last frame handed over by [`HeadlessContext::end_frame`], not yet
    /// waited for (deleted on drop).
    in_flight: Cell<Option<glow::Fence>>,
}

/// The offscreen framebuffers.
struct Targets {
    /// The framebuffer drawn into (multisampled when `samples > 0`).
    draw: Framebuffer,
    /// Its colour attachment.
    _color: Renderbuffer,
    /// Its depth attachment.
    _depth: Renderbuffer,
    /// The single-sampled framebuffer the multisampled one resolves into, and its colour.
    resolve: Option<(Framebuffer, Renderbuffer)>,
}

impl fmt::Debug for HeadlessContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeadlessContext")
            .field("width", &self.width)
            .field("height", &self.height)
            .field("samples", &self.samples)
            .field("device", &self.device)
            .finish_non_exhaustive()
    }
}

impl HeadlessContext {
    /// A `width` x `height` headless context: 4x MSAA ([`DEFAULT_SAMPLES`]) on a hardware
    /// device, none on a software rasteriser, where 4x MSAA triples the frame time (measured
    /// at 1280x720 on llvmpipe: about 35 ms without, 110 ms with). Use
    /// [`HeadlessContext::with_samples`] to choose explicitly.
    pub fn new(width: u32, height: u32) -> Result<HeadlessContext, RenderError> {
        Self::create(width, height, None)
    }

    /// A `width` x `height` headless context with `samples` MSAA samples (0 or 1: none;
    /// clamped to the driver's maximum).
    pub fn with_samples(
        width: u32,
        height: u32,
        samples: u32,
    ) -> Result<HeadlessContext, RenderError> {
        Self::create(width, height, Some(samples))
    }

    /// Creates the context on the platform; `samples: None` picks by renderer.
    fn create(
        width: u32,
        height: u32,
        samples: Option<u32>,
    ) -> Result<HeadlessContext, RenderError> {
        let (platform, gl, device) = Platform::create()?;
        let samples = samples.unwrap_or_else(|| {
            if is_software_renderer(&gl_string(&gl, glow::RENDERER)) {
                0
            } else {
                DEFAULT_SAMPLES
            }
        });
        let gl = Rc::new(gl);
        let (targets, samples) = create_targets(&gl, width, height, samples)?;
        let ctx = HeadlessContext {
            targets: ManuallyDrop::new(targets),
            gl: ManuallyDrop::new(gl),
            platform,
            width,
            height,
            samples,
            device,
            in_flight: Cell::new(None),
        };
        ctx.bind();
        Ok(ctx)
    }

    /// The GL functions of this context.
    pub fn gl(&self) -> Rc<glow::Context> {
        Rc::clone(&self.gl)
    }

    /// Framebuffer size in pixels.
    pub fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    /// MSAA samples of the draw framebuffer (0 when not multisampled).
    pub fn samples(&self) -> u32 {
        self.samples
    }

    /// Which device or platform the context runs on (for logs).
    pub fn device(&self) -> &str {
        &self.device
    }

    /// Makes this context current on the calling thread again (needed only when another
    /// context was made current on it since).
    pub fn make_current(&self) -> Result<(), RenderError> {
        self.platform.make_current()
    }

    /// Binds the offscreen framebuffer for drawing and reading and sets the viewport to its
    /// size.
    pub fn bind(&self) {
        // SAFETY: the framebuffer belongs to this context, which is current.
        unsafe {
            self.gl
                .bind_framebuffer(glow::FRAMEBUFFER, Some(self.targets.draw.raw()));
            self.gl
                .viewport(0, 0, self.width as i32, self.height as i32);
        }
    }

    /// Waits until every GL command issued so far has finished (`glFinish`), so a frame's cost
    /// is paid inside the frame that issued it (frame pacing and benchmarks).
    pub fn finish(&self) {
        // SAFETY: the context owning this GL function table is current on this thread.
        unsafe { self.gl.finish() };
    }

    /// Ends a frame without waiting for it: hands the frame to the GL, then waits until the
    /// frame before it has been drawn. The CPU prepares a frame (morphing, vertex work) while
    /// the rasteriser still draws the previous one, and at most one frame is ever queued. On
    /// llvmpipe at 1280x720 this drew the default head about a tenth faster than
    /// [`HeadlessContext::finish`] after every frame.
    pub fn end_frame(&self) {
        let gl = &**self.gl;
        // SAFETY: the context owning this GL function table is current on this thread; the
        // fence waited for and deleted is this context's, made by the previous call and
        // deleted only here (or on drop).
        unsafe {
            let fence = gl.fence_sync(glow::SYNC_GPU_COMMANDS_COMPLETE, 0).ok();
            gl.flush();
            if let Some(previous) = self.in_flight.replace(fence) {
                // A second per try, ten tries; a lost context returns at once (WAIT_FAILED).
                for _ in 0..10 {
                    let status =
                        gl.client_wait_sync(previous, glow::SYNC_FLUSH_COMMANDS_BIT, 1_000_000_000);
                    if status != glow::TIMEOUT_EXPIRED {
                        break;
                    }
                }
                gl.delete_sync(previous);
            }
        }
    }

    /// Reads the rendered image back: resolves MSAA if needed, then `glReadPixels` with a pack
    /// alignment of 1, rows flipped to top-down. Leaves the offscreen framebuffer bound.
    pub fn read_rgba(&self) -> RgbaImage {
        let gl = &**self.gl;
        let (w, h) = (self.width as i32, self.height as i32);
        if let Some((resolve, _)) = &self.targets.resolve {
            // SAFETY: both framebuffers belong to this context and have this size.
            unsafe {
                gl.bind_framebuffer(glow::READ_FRAMEBUFFER, Some(self.targets.draw.raw()));
                gl.bind_framebuffer(glow::DRAW_FRAMEBUFFER, Some(resolve.raw()));
                gl.blit_framebuffer(
                    0,
                    0,
                    w,
                    h,
                    0,
                    0,
                    w,
                    h,
                    glow::COLOR_BUFFER_BIT,
                    glow::NEAREST,
                );
                gl.bind_framebuffer(glow::READ_FRAMEBUFFER, Some(resolve.raw()));
            }
        } else {
            // SAFETY: the framebuffer belongs to this context.
            unsafe { gl.bind_framebuffer(glow::READ_FRAMEBUFFER, Some(self.targets.draw.raw())) };
        }
        let image = read_pixels(gl, self.width, self.height);
        // SAFETY: the framebuffer belongs to this context.
        unsafe { gl.bind_framebuffer(glow::FRAMEBUFFER, Some(self.targets.draw.raw())) };
        check_gl!(gl, "reading the headless framebuffer");
        image
    }
}

/// Reads `width` x `height` RGBA8 pixels from the bound read framebuffer with a pack alignment
/// of 1 and flips the rows to top-down.
pub(crate) fn read_pixels(gl: &glow::Context, width: u32, height: u32) -> RgbaImage {
    let row = width as usize * 4;
    let mut data = vec![0u8; row * height as usize];
    // SAFETY: `data` holds exactly width * height * 4 bytes and the pack alignment is 1, so the
    // driver writes inside it; no pixel pack buffer is bound by facewire.
    unsafe {
        gl.pixel_store_i32(glow::PACK_ALIGNMENT, 1);
        gl.read_pixels(
            0,
            0,
            width as i32,
            height as i32,
            glow::RGBA,
            glow::UNSIGNED_BYTE,
            glow::PixelPackData::Slice(Some(&mut data)),
        );
    }
    flip_rows(&mut data, row);
    RgbaImage {
        width,
        height,
        data,
    }
}

impl Drop for HeadlessContext {
    fn drop(&mut self) {
        if let Err(e) = self.make_current() {
            tracing::warn!(error = %e, "headless context could not be made current to clean up");
        }
        // SAFETY: neither field is used after this point; the context is current (or lost,
        // in which case the deletes are no-ops), and both go before the context itself. The
        // fence is this context's and deleted once.
        unsafe {
            if let Some(fence) = self.in_flight.take() {
                self.gl.delete_sync(fence);
            }
            ManuallyDrop::drop(&mut self.targets);
            ManuallyDrop::drop(&mut self.gl);
        }
        self.platform.release();
    }
}

/// Creates the offscreen framebuffers; returns them with the sample count actually used.
fn create_targets(
    gl: &Rc<glow::Context>,
    width: u32,
    height: u32,
    samples: u32,
) -> Result<(Targets, u32), RenderError> {
    // SAFETY: querying limits on the current context.
    let (max_size, max_samples) = unsafe {
        (
            gl.get_parameter_i32(glow::MAX_RENDERBUFFER_SIZE).max(1) as u32,
            gl.get_parameter_i32(glow::MAX_SAMPLES).max(0) as u32,
        )
    };
    if width == 0 || height == 0 || width > max_size || height > max_size {
        return Err(RenderError::Create {
            what: "framebuffer",
            message: format!("size {width}x{height} is outside 1..={max_size}"),
        });
    }
    let samples = if samples >= 2 {
        samples.min(max_samples)
    } else {
        0
    };
    let samples = if samples >= 2 { samples } else { 0 };
    let (w, h) = (width as i32, height as i32);

    let storage = |rb: &Renderbuffer, format: u32, samples: u32| {
        // SAFETY: the renderbuffer is fresh and owned by the caller; the size is in range.
        unsafe {
            gl.bind_renderbuffer(glow::RENDERBUFFER, Some(rb.raw()));
            if samples > 0 {
                gl.renderbuffer_storage_multisample(
                    glow::RENDERBUFFER,
                    samples as i32,
                    format,
                    w,
                    h,
                );
            } else {
                gl.renderbuffer_storage(glow::RENDERBUFFER, format, w, h);
            }
            gl.bind_renderbuffer(glow::RENDERBUFFER, None);
        }
    };
    let attach = |fb: &Framebuffer, point: u32, rb: &Renderbuffer| {
        // SAFETY: both objects are fresh and owned by the caller.
        unsafe {
            gl.bind_framebuffer(glow::FRAMEBUFFER, Some(fb.raw()));
            gl.framebuffer_renderbuffer(
                glow::FRAMEBUFFER,
                point,
                glow::RENDERBUFFER,
                Some(rb.raw()),
            );
        }
    };
    let complete = || {
        // SAFETY: a framebuffer is bound by `attach`.
        let status = unsafe { gl.check_framebuffer_status(glow::FRAMEBUFFER) };
        if status == glow::FRAMEBUFFER_COMPLETE {
            Ok(())
        } else {
            Err(RenderError::Framebuffer { status })
        }
    };

    let draw = Framebuffer::new(gl)?;
    let color = Renderbuffer::new(gl)?;
    let depth = Renderbuffer::new(gl)?;
    storage(&color, glow::RGBA8, samples);
    storage(&depth, glow::DEPTH_COMPONENT24, samples);
    attach(&draw, glow::COLOR_ATTACHMENT0, &color);
    attach(&draw, glow::DEPTH_ATTACHMENT, &depth);
    complete()?;
    let resolve = if samples > 0 {
        let fb = Framebuffer::new(gl)?;
        let rb = Renderbuffer::new(gl)?;
        storage(&rb, glow::RGBA8, 0);
        attach(&fb, glow::COLOR_ATTACHMENT0, &rb);
        complete()?;
        Some((fb, rb))
    } else {
        None
    };
    check_gl!(gl, "creating the headless framebuffers");
    tracing::debug!(width, height, samples, "headless framebuffer created");
    Ok((
        Targets {
            draw,
            _color: color,
            _depth: depth,
            resolve,
        },
        samples,
    ))
}

/// Reverses the order of `row`-byte rows in place (GL reads bottom-up; images are top-down).
fn flip_rows(data: &mut [u8], row: usize) {
    if row == 0 {
        return;
    }
    let rows = data.len() / row;
    for y in 0..rows / 2 {
        let (top, bottom) = data.split_at_mut((rows - 1 - y) * row);
        top[y * row..(y + 1) * row].swap_with_slice(&mut bottom[..row]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flip_rows_reverses_rows() {
        let mut d = vec![1, 1, 2, 2, 3, 3];
        flip_rows(&mut d, 2);
        assert_eq!(d, [3, 3, 2, 2, 1, 1]);
        let mut e = vec![1, 2, 3, 4];
        flip_rows(&mut e, 2);
        assert_eq!(e, [3, 4, 1, 2]);
        flip_rows(&mut [], 0);
    }
}

//! The stage window: a winit window with a GL context and surface (GLX first, EGL as the
//! fallback on X11), created inside `ApplicationHandler::resumed`.
//!
//! # Transparency
//!
//! A transparent window needs a framebuffer config with an alpha-capable visual. GLX offers one
//! (a depth-32 ARGB visual); EGL on X11 with Mesa does not. When transparency is asked for and
//! no config offers it, the window is created opaque, [`GlWindow::has_alpha`] returns false and
//! one warning says that the chroma background is drawn instead.
//!
//! # Drop order
//!
//! Deleting GL objects needs this window's context current, so drop every [`super::Renderer`]
//! made on it first: in the application struct, declare the renderer field **before** the
//! `GlWindow` field (fields drop in declaration order), or `take()` both in that order. Dropping
//! the `GlWindow` itself makes its context current, releases the GL functions, then drops the
//! context, the surface and finally the window.
//!
//! The config is chosen by hand instead of through `glutin_winit::DisplayBuilder`, because that
//! builder's picker must return a config even when the platform lists none (an empty iterator,
//! which EGL on X11 gives for a transparent template); here that case is an error, never a panic.

#![expect(unsafe_code)]

use std::fmt;
use std::mem::ManuallyDrop;
use std::num::NonZeroU32;
use std::rc::Rc;

use glow::HasContext;
use glutin::config::{Api, Config, ConfigTemplateBuilder};
use glutin::context::PossiblyCurrentContext;
use glutin::display::{Display, DisplayApiPreference};
use glutin::prelude::*;
use glutin::surface::{Surface, SurfaceAttributesBuilder, SwapInterval, WindowSurface};
use raw_window_handle::{HasDisplayHandle, HasWindowHandle, RawWindowHandle};
use winit::dpi::PhysicalSize;
use winit::event_loop::ActiveEventLoop;
use winit::window::Window;

use super::debug::{create_core_context, load_context};
use super::headless::read_pixels;
use super::{DrawTarget, RenderError};
use crate::image::RgbaImage;

/// What the stage window should look like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowOptions {
    /// Window title (what OBS's window capture lists).
    pub title: String,
    /// Inner width in physical pixels.
    pub width: u32,
    /// Inner height in physical pixels.
    pub height: u32,
    /// Ask for a transparent (alpha) framebuffer; see [`GlWindow::has_alpha`] for the outcome.
    pub transparent: bool,
    /// Wait for vertical blank on swap.
    pub vsync: bool,
    /// Where to place the window's top-left corner on the screen, in physical pixels (`None`:
    /// where the window manager puts it).
    pub position: Option<(i32, i32)>,
    /// Prefer a multisampled (4x MSAA) framebuffer. On a software rasteriser the window is made
    /// without samples whatever this says: it would shade and store every sample on the CPU.
    pub multisample: bool,
}

impl Default for WindowOptions {
    fn default() -> Self {
        WindowOptions {
            title: "facewire".to_owned(),
            width: 1280,
            height: 720,
            transparent: false,
            vsync: true,
            position: None,
            multisample: true,
        }
    }
}

/// Owns the window, its GL context and surface, and the loaded GL functions.
pub struct GlWindow {
    /// The GL functions (dropped by hand, while the context is current).
    gl: ManuallyDrop<Rc<glow::Context>>,
    /// The context (dropped before the surface).
    context: PossiblyCurrentContext,
    /// The window surface (dropped before the window).
    surface: Surface<WindowSurface>,
    /// The window (dropped last).
    window: Window,
    /// Whether the framebuffer has usable alpha (a transparent request that was honoured).
    has_alpha: bool,
    /// Current surface size in physical pixels (0 while minimised).
    size: (u32, u32),
    /// The GL display, for loading functions into other GL bindings (the panel's egui).
    display: Display,
    /// MSAA samples of the window's framebuffer (0: none).
    samples: u8,
}

impl fmt::Debug for GlWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GlWindow")
            .field("window", &self.window.id())
            .field("has_alpha", &self.has_alpha)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

/// Creates the window, a GL core context (4.5, else 3.3) and its surface, makes the context
/// current and loads GL. Call it from `ApplicationHandler::resumed`.
///
/// The config is chosen in this order of preference: transparency as asked, depth 24 or more,
/// alpha 8, 4x MSAA (then 2x, then none, then more than 4). A config without a depth buffer is
/// never used.
///
/// The window is shown once its context works. When the context turns out to be a software
/// rasteriser (llvmpipe, softpipe, SwiftShader) on a multisampled framebuffer, the window is made
/// again without samples: a software rasteriser stores and resolves every sample, which made
/// each frame of the default head about 1.6 times as expensive under Xvfb.
pub fn create(
    event_loop: &ActiveEventLoop,
    options: &WindowOptions,
) -> Result<GlWindow, RenderError> {
    let first = build(event_loop, options, options.multisample)?;
    let window = if first.samples > 0 && first.is_software() {
        let samples = first.samples;
        drop(first);
        let second = build(event_loop, options, false)?;
        tracing::info!(
            samples,
            now = second.samples,
            "software rasteriser: the window is made without multisampling to save CPU"
        );
        second
    } else {
        first
    };
    if window.samples > 0 && window.is_software() {
        // No config without samples: at least rasterise single-sampled.
        window.set_multisample(false);
    }
    window.window.set_visible(true);
    Ok(window)
}

/// [`create`]'s one attempt: the window (hidden), the context and the surface, with a
/// multisampled config when `multisample` and one is offered.
fn build(
    event_loop: &ActiveEventLoop,
    options: &WindowOptions,
    multisample: bool,
) -> Result<GlWindow, RenderError> {
    let mut attributes = Window::default_attributes()
        .with_title(options.title.clone())
        .with_inner_size(PhysicalSize::new(
            options.width.max(1),
            options.height.max(1),
        ))
        .with_transparent(options.transparent)
        .with_visible(false);
    if let Some((x, y)) = options.position {
        attributes = attributes.with_position(winit::dpi::PhysicalPosition::new(x, y));
    }

    // WGL needs the window before the display; everywhere else the window is made after the
    // config, so that it gets the config's X visual.
    let early_window = if cfg!(windows) {
        Some(
            event_loop
                .create_window(attributes.clone())
                .map_err(|e| window_error("creating the window", e))?,
        )
    } else {
        None
    };
    let early_handle = match &early_window {
        Some(w) => Some(
            w.window_handle()
                .map_err(|e| window_error("getting the window handle", e))?
                .as_raw(),
        ),
        None => None,
    };
    let display_handle = event_loop
        .display_handle()
        .map_err(|e| window_error("getting the display handle", e))?
        .as_raw();
    // SAFETY: the display handle comes from the live event loop, which outlives the window.
    let display = unsafe { Display::new(display_handle, display_preference(early_handle)) }
        .map_err(|source| RenderError::Platform {
            what: "opening the GL display",
            source,
        })?;

    let mut template = ConfigTemplateBuilder::new().with_api(Api::OPENGL);
    if let Some(handle) = early_handle {
        template = template.compatible_with_native_window(handle);
    }
    // SAFETY: the template is fully built; the display is initialised.
    let configs: Vec<Config> = unsafe { display.find_configs(template.build()) }
        .map_err(|source| RenderError::Platform {
            what: "listing GL configs",
            source,
        })?
        .collect();
    let (config, has_alpha) =
        pick_config(configs, options.transparent, multisample).ok_or_else(|| {
            RenderError::NoConfig("the display offers no OpenGL config with a depth buffer".into())
        })?;
    if options.transparent && !has_alpha {
        tracing::warn!(
            "transparent window requested, but this platform offers no alpha framebuffer \
             (EGL on X11 never does; GLX needs a 32-bit ARGB visual): the window is opaque and \
             the chroma background colour is drawn instead"
        );
    }
    tracing::debug!(
        alpha = config.alpha_size(),
        depth = config.depth_size(),
        samples = config.num_samples(),
        transparent = ?config.supports_transparency(),
        "window GL config chosen"
    );

    let window = match early_window {
        Some(w) => w,
        None => glutin_winit::finalize_window(event_loop, attributes, &config)
            .map_err(|e| window_error("creating the window", e))?,
    };
    let raw_window = window
        .window_handle()
        .map_err(|e| window_error("getting the window handle", e))?
        .as_raw();

    // SAFETY: the config belongs to this display and the window handle is alive.
    let not_current = unsafe { create_core_context(&display, &config, Some(raw_window)) }?;

    let size = window.inner_size();
    let (w, h) = non_zero(size.width, size.height);
    let surface_attributes =
        SurfaceAttributesBuilder::<WindowSurface>::new().build(raw_window, w, h);
    // SAFETY: the window handle stays valid while the surface lives (the window drops last).
    let surface = unsafe { display.create_window_surface(&config, &surface_attributes) }.map_err(
        |source| RenderError::Platform {
            what: "creating the window surface",
            source,
        },
    )?;
    let context = not_current
        .make_current(&surface)
        .map_err(|source| RenderError::Platform {
            what: "making the window context current",
            source,
        })?;
    let api = match &display {
        #[cfg(all(
            unix,
            not(any(target_os = "macos", target_os = "ios", target_os = "android"))
        ))]
        Display::Glx(_) => "GLX",
        #[cfg(not(any(target_os = "macos", target_os = "ios")))]
        Display::Egl(_) => "EGL",
        #[allow(unreachable_patterns)]
        _ => "native",
    };
    // SAFETY: the context is current on this thread and the loader is the display's own.
    let gl = unsafe { load_context(|s| display.get_proc_address(s), api) }?;

    let gl_window = GlWindow {
        gl: ManuallyDrop::new(Rc::new(gl)),
        context,
        surface,
        window,
        has_alpha,
        size: (size.width, size.height),
        display,
        samples: config.num_samples(),
    };
    gl_window.set_vsync(options.vsync);
    Ok(gl_window)
}

impl GlWindow {
    /// Whether the context renders on the CPU (llvmpipe, softpipe, SwiftShader).
    fn is_software(&self) -> bool {
        super::is_software_renderer(&self.renderer())
    }

    /// The driver's name for the renderer (`GL_RENDERER`).
    pub fn renderer(&self) -> String {
        super::debug::gl_string(&self.gl, glow::RENDERER)
    }

    /// The window.
    pub fn window(&self) -> &Window {
        &self.window
    }

    /// The GL functions of this window's context.
    pub fn gl(&self) -> Rc<glow::Context> {
        Rc::clone(&self.gl)
    }

    /// Loads this context's GL functions into egui's GL bindings (its own `glow` version).
    ///
    /// Call it with this window's context current; the functions are valid while the window
    /// lives.
    pub(crate) fn load_egui_gl(&self) -> egui_glow::glow::Context {
        // SAFETY: the caller keeps this window's context current, and the loader is the
        // display's own, so every pointer belongs to that context.
        unsafe {
            egui_glow::glow::Context::from_loader_function_cstr(|s| {
                self.display.get_proc_address(s)
            })
        }
    }

    /// Whether the framebuffer keeps alpha (a transparent window was asked for and the platform
    /// honoured it).
    pub fn has_alpha(&self) -> bool {
        self.has_alpha
    }

    /// The surface size in physical pixels (0 in a dimension while minimised).
    pub fn size(&self) -> (u32, u32) {
        self.size
    }

    /// A [`DrawTarget`] for this window: its size, `clear_color`, and alpha when the window has
    /// it.
    pub fn draw_target(&self, clear_color: [f32; 4]) -> DrawTarget {
        DrawTarget {
            width: self.size.0,
            height: self.size.1,
            clear_color,
            alpha: self.has_alpha,
        }
    }

    /// Resizes the surface (call it on `WindowEvent::Resized`). A zero size (minimised) is
    /// remembered but leaves the surface alone.
    pub fn resize(&mut self, width: u32, height: u32) {
        self.size = (width, height);
        if let (Some(w), Some(h)) = (NonZeroU32::new(width), NonZeroU32::new(height)) {
            self.surface.resize(&self.context, w, h);
        }
    }

    /// Makes the context current on this thread with the window surface.
    pub fn make_current(&self) -> Result<(), RenderError> {
        self.context
            .make_current(&self.surface)
            .map_err(|source| RenderError::Platform {
                what: "making the window context current",
                source,
            })
    }

    /// Binds the window's default framebuffer for drawing (undoing any FBO binding).
    pub fn bind(&self) {
        // SAFETY: framebuffer 0 always exists on a window context, which is current.
        unsafe { self.gl.bind_framebuffer(glow::FRAMEBUFFER, None) }
    }

    /// Reads the back buffer (the frame drawn but not yet presented) as a top-down image, for
    /// screenshots and tests. Call it before [`GlWindow::swap_buffers`].
    pub fn read_rgba(&self) -> RgbaImage {
        let (width, height) = self.size;
        // SAFETY: framebuffer 0 always exists on a window context, which is current.
        unsafe {
            self.gl.bind_framebuffer(glow::READ_FRAMEBUFFER, None);
            self.gl.read_buffer(glow::BACK);
        }
        read_pixels(&self.gl, width, height)
    }

    /// Presents the frame.
    pub fn swap_buffers(&self) -> Result<(), RenderError> {
        self.surface
            .swap_buffers(&self.context)
            .map_err(|source| RenderError::Platform {
                what: "swapping buffers",
                source,
            })
    }

    /// Turns multisampled rasterisation on or off (on by default when the framebuffer has
    /// samples).
    pub fn set_multisample(&self, on: bool) {
        // SAFETY: enabling or disabling a capability on the current context has no
        // preconditions; GL_MULTISAMPLE is core in 3.3.
        unsafe {
            if on {
                self.gl.enable(glow::MULTISAMPLE);
            } else {
                self.gl.disable(glow::MULTISAMPLE);
            }
        }
    }

    /// Turns waiting for vertical blank on or off; a refusal is logged, not fatal.
    pub fn set_vsync(&self, vsync: bool) {
        let interval = if vsync {
            SwapInterval::Wait(NonZeroU32::MIN)
        } else {
            SwapInterval::DontWait
        };
        if let Err(e) = self.surface.set_swap_interval(&self.context, interval) {
            tracing::warn!(vsync, error = %e, "could not set the swap interval");
        }
    }
}

impl Drop for GlWindow {
    fn drop(&mut self) {
        if let Err(e) = self.make_current() {
            tracing::warn!(error = %e, "window context could not be made current to clean up");
        }
        // SAFETY: the field is not used after this point, and it goes while the context is
        // current (glow unregisters its debug callback on drop).
        unsafe { ManuallyDrop::drop(&mut self.gl) };
        if let Err(e) = self.context.make_not_current_in_place() {
            tracing::debug!(error = %e, "releasing the window context failed");
        }
    }
}

/// Wraps a winit or raw-window-handle error.
fn window_error(what: &'static str, e: impl std::error::Error) -> RenderError {
    RenderError::Window {
        what,
        source: e.to_string().into(),
    }
}

/// The GL platforms to try, in order, on this operating system.
#[allow(unused_variables)]
fn display_preference(window: Option<RawWindowHandle>) -> DisplayApiPreference {
    #[cfg(all(
        unix,
        not(any(target_os = "macos", target_os = "ios", target_os = "android"))
    ))]
    return DisplayApiPreference::GlxThenEgl(Box::new(
        winit::platform::x11::register_xlib_error_hook,
    ));
    #[cfg(windows)]
    return DisplayApiPreference::WglThenEgl(window);
    #[cfg(target_os = "macos")]
    return DisplayApiPreference::Cgl;
}

/// Picks the best config, or `None` when none has a depth buffer. Returns whether the chosen
/// config gives the window usable alpha (only ever true when `transparent` was asked).
fn pick_config(
    configs: Vec<Config>,
    transparent: bool,
    multisample: bool,
) -> Option<(Config, bool)> {
    let candidates = configs.into_iter().filter(|c| c.depth_size() >= 16);
    let best = candidates.max_by_key(|c| {
        config_score(
            c.supports_transparency() == Some(true),
            c.alpha_size(),
            c.depth_size(),
            c.num_samples(),
            transparent,
            multisample,
        )
    })?;
    let has_alpha =
        transparent && best.supports_transparency() == Some(true) && best.alpha_size() >= 8;
    Some((best, has_alpha))
}

/// The preference order of [`pick_config`] as a sortable key (larger is better).
fn config_score(
    supports_transparency: bool,
    alpha: u8,
    depth: u8,
    samples: u8,
    transparent: bool,
    multisample: bool,
) -> (bool, bool, bool, u8) {
    let samples_rank = match samples {
        0 | 1 if !multisample => 4,
        4 => 3,
        2 => 2,
        0 | 1 => 1,
        _ => 0,
    };
    (
        supports_transparency == transparent,
        depth >= 24,
        alpha >= 8,
        samples_rank,
    )
}

/// Width and height as non-zero values (at least 1).
fn non_zero(width: u32, height: u32) -> (NonZeroU32, NonZeroU32) {
    (
        NonZeroU32::new(width).unwrap_or(NonZeroU32::MIN),
        NonZeroU32::new(height).unwrap_or(NonZeroU32::MIN),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_prefers_transparency_then_depth_alpha_and_4x_msaa() {
        let want = |t, a, d, s| config_score(t, a, d, s, true, true);
        assert!(want(true, 8, 24, 0) > want(false, 8, 24, 4));
        assert!(want(true, 8, 24, 0) > want(true, 8, 16, 4));
        assert!(want(true, 8, 24, 4) > want(true, 8, 24, 0));
        assert!(want(true, 8, 24, 0) > want(true, 8, 24, 8));
        // Without a transparency request, an opaque visual wins.
        let plain = |t, a, d, s| config_score(t, a, d, s, false, true);
        assert!(plain(false, 8, 24, 0) > plain(true, 8, 24, 4));
        // Without multisampling wanted, no samples win over any, after the other needs.
        let single = |t, a, d, s| config_score(t, a, d, s, false, false);
        assert!(single(false, 8, 24, 0) > single(false, 8, 24, 4));
        assert!(single(false, 8, 24, 1) > single(false, 8, 24, 2));
        assert!(single(false, 8, 24, 4) > single(false, 8, 16, 0));
    }

    #[test]
    fn empty_config_lists_are_an_error_not_a_panic() {
        assert!(pick_config(Vec::new(), true, true).is_none());
        assert!(pick_config(Vec::new(), false, false).is_none());
        assert_eq!(non_zero(0, 5).0.get(), 1);
    }
}

//! The headless context's platform on Windows: WGL on a hidden window of our own.
//!
//! Windows has no EGL and no surfaceless contexts: WGL makes a context current only with a
//! device context, and reaches its modern entry points (`wglCreateContextAttribsARB` for a core
//! profile, `wglChoosePixelFormatARB`) only through a window. So a small window that is never
//! shown carries the context; everything is drawn into the offscreen framebuffer as on Linux,
//! and the window's own 1x1 surface is never presented.

use std::ffi::OsStr;
use std::num::{NonZeroIsize, NonZeroU32};
use std::os::windows::ffi::OsStrExt;

use glutin::api::wgl::context::PossiblyCurrentContext;
use glutin::api::wgl::display::Display;
use glutin::api::wgl::surface::Surface;
use glutin::config::{Api, ConfigSurfaceTypes, ConfigTemplateBuilder};
use glutin::prelude::*;
use glutin::surface::{SurfaceAttributesBuilder, WindowSurface};
use raw_window_handle::{
    RawDisplayHandle, RawWindowHandle, Win32WindowHandle, WindowsDisplayHandle,
};
use windows_sys::Win32::Foundation::HWND;
use windows_sys::Win32::System::LibraryLoader::GetModuleHandleW;
use windows_sys::Win32::UI::WindowsAndMessaging::{
    CreateWindowExW, DefWindowProcW, DestroyWindow, RegisterClassExW, CS_OWNDC, WNDCLASSEXW,
    WS_CLIPCHILDREN, WS_CLIPSIBLINGS, WS_POPUP,
};

use super::super::debug::{create_core_context, load_context, preferred_offscreen_config};
use super::super::RenderError;

/// The window class of the hidden window.
const CLASS: &str = "facewire offscreen";

/// A WGL context current with the hidden window's surface.
///
/// Fields drop in order: the context before the surface it draws to, both before the display,
/// and the window last.
pub(super) struct Platform {
    /// The WGL context.
    context: PossiblyCurrentContext,
    /// The hidden window's surface (its device context).
    surface: Surface<WindowSurface>,
    /// The WGL display (opengl32.dll and the extension functions).
    _display: Display,
    /// The hidden window.
    _window: HiddenWindow,
}

impl Platform {
    /// A core context on a hidden window, its GL functions and a description for logs.
    pub(super) fn create() -> Result<(Platform, glow::Context, String), RenderError> {
        let platform = |what: &'static str| move |source| RenderError::Platform { what, source };
        let window = HiddenWindow::new()?;
        let handle = window.handle();
        let display_handle = RawDisplayHandle::Windows(WindowsDisplayHandle::new());
        // SAFETY: the handle names the live hidden window, made with this module's instance.
        let display = unsafe { Display::new(display_handle, Some(handle)) }
            .map_err(platform("loading WGL (opengl32.dll)"))?;
        let template = ConfigTemplateBuilder::new()
            .with_api(Api::OPENGL)
            .with_surface_type(ConfigSurfaceTypes::WINDOW)
            .compatible_with_native_window(handle)
            .build();
        // SAFETY: the template is fully built and names the live hidden window.
        let configs: Vec<_> = unsafe { display.find_configs(template) }
            .map_err(platform("listing WGL pixel formats"))?
            .collect();
        let config = preferred_offscreen_config(&configs)
            .ok_or_else(|| RenderError::NoConfig("WGL offers no OpenGL pixel format".into()))?;
        let one = NonZeroU32::MIN;
        let surface_attributes =
            SurfaceAttributesBuilder::<WindowSurface>::new().build(handle, one, one);
        // SAFETY: the config was found for this window, which outlives the surface (the
        // surface is dropped before the window in `Platform`).
        let surface = unsafe { display.create_window_surface(&config, &surface_attributes) }
            .map_err(platform("creating the hidden window's WGL surface"))?;

        // SAFETY: the config belongs to this display and the handle to the live window.
        let not_current = unsafe { create_core_context(&display, &config, Some(handle)) }?;
        let context = not_current
            .make_current(&surface)
            .map_err(platform("making the headless context current"))?;
        // SAFETY: the context is current on this thread; the loader is WGL's own
        // (wglGetProcAddress, then opengl32.dll's exports).
        let gl = unsafe { load_context(|s| display.get_proc_address(s), "WGL") }?;
        let label = "WGL core context on a hidden window".to_owned();
        tracing::info!(device = %label, "headless WGL context created");
        let platform = Platform {
            context,
            surface,
            _display: display,
            _window: window,
        };
        Ok((platform, gl, label))
    }

    /// Makes the context current on the calling thread.
    pub(super) fn make_current(&self) -> Result<(), RenderError> {
        self.context
            .make_current(&self.surface)
            .map_err(|source| RenderError::Platform {
                what: "making the headless context current",
                source,
            })
    }

    /// Releases the context from the calling thread (before it is dropped).
    pub(super) fn release(&self) {
        if let Err(e) = self.context.make_not_current_in_place() {
            tracing::debug!(error = %e, "releasing the headless context failed");
        }
    }
}

/// A window that is never shown, destroyed on drop (on the thread that made it, since the
/// headless context is neither `Send` nor `Sync`).
struct HiddenWindow {
    /// The window.
    hwnd: NonZeroIsize,
    /// The module that registered its class.
    instance: NonZeroIsize,
}

impl HiddenWindow {
    /// Registers the class (once per process; a second registration fails harmlessly) and
    /// makes a 1x1 popup window without `WS_VISIBLE`.
    fn new() -> Result<HiddenWindow, RenderError> {
        let class: Vec<u16> = OsStr::new(CLASS).encode_wide().chain(Some(0)).collect();
        let failed = |what: &'static str| RenderError::Window {
            what,
            source: Box::new(std::io::Error::last_os_error()),
        };
        // SAFETY: a null name asks for the executable's own module, which lives as long as
        // the process.
        let instance = NonZeroIsize::new(unsafe { GetModuleHandleW(std::ptr::null()) })
            .ok_or_else(|| failed("finding facewire's module handle"))?;
        let description = WNDCLASSEXW {
            cbSize: std::mem::size_of::<WNDCLASSEXW>() as u32,
            style: CS_OWNDC,
            lpfnWndProc: Some(DefWindowProcW),
            cbClsExtra: 0,
            cbWndExtra: 0,
            hInstance: instance.get(),
            hIcon: 0,
            hCursor: 0,
            hbrBackground: 0,
            lpszMenuName: std::ptr::null(),
            lpszClassName: class.as_ptr(),
            hIconSm: 0,
        };
        // SAFETY: the description is fully initialised and its strings outlive the call; a
        // repeated registration returns 0 and leaves the first one in place.
        unsafe { RegisterClassExW(&description) };
        // SAFETY: the class is registered above with this instance; no parent, menu or
        // creation data.
        let hwnd: HWND = unsafe {
            CreateWindowExW(
                0,
                class.as_ptr(),
                class.as_ptr(),
                WS_POPUP | WS_CLIPSIBLINGS | WS_CLIPCHILDREN,
                0,
                0,
                1,
                1,
                0,
                0,
                instance.get(),
                std::ptr::null(),
            )
        };
        let hwnd = NonZeroIsize::new(hwnd).ok_or_else(|| failed("creating the hidden window"))?;
        Ok(HiddenWindow { hwnd, instance })
    }

    /// The window's raw handle, for glutin.
    fn handle(&self) -> RawWindowHandle {
        let mut handle = Win32WindowHandle::new(self.hwnd);
        handle.hinstance = Some(self.instance);
        RawWindowHandle::Win32(handle)
    }
}

impl Drop for HiddenWindow {
    fn drop(&mut self) {
        // SAFETY: the window was made by this value on this thread and is destroyed once.
        unsafe { DestroyWindow(self.hwnd.get()) };
    }
}

//! GL diagnostics: asking for a core context, loading the function pointers, logging the
//! driver, `KHR_debug` into tracing and the debug-build `glGetError` check behind `check_gl!`.

#![expect(unsafe_code)]

use glow::HasContext;
use glutin::config::GlConfig;
use glutin::context::{ContextApi, ContextAttributesBuilder, GlProfile, Version};
use glutin::display::GlDisplay;
use raw_window_handle::RawWindowHandle;

use super::RenderError;

/// Asks `display` for a core-profile context of OpenGL 4.5, else 3.3 (with debug output in
/// debug builds), for `window` or for none (offscreen).
///
/// # Safety
///
/// `config` must belong to `display`, and `window`, when given, must be a live window.
pub(crate) unsafe fn create_core_context<D: GlDisplay>(
    display: &D,
    config: &D::Config,
    window: Option<RawWindowHandle>,
) -> Result<D::NotCurrentContext, RenderError> {
    let mut last_error = None;
    for (major, minor) in [(4, 5), (3, 3)] {
        let attributes = ContextAttributesBuilder::new()
            .with_context_api(ContextApi::OpenGl(Some(Version::new(major, minor))))
            .with_profile(GlProfile::Core)
            .with_debug(cfg!(debug_assertions))
            .build(window);
        // SAFETY: the caller guarantees the config's display and the window.
        match unsafe { display.create_context(config, &attributes) } {
            Ok(context) => return Ok(context),
            Err(e) => {
                tracing::debug!(major, minor, error = %e, "GL core context request refused");
                last_error = Some(e);
            }
        }
    }
    Err(RenderError::Platform {
        what: "creating a GL 4.5 or 3.3 core context",
        source: last_error
            .unwrap_or_else(|| glutin::error::ErrorKind::NotSupported("no context").into()),
    })
}

/// The config an offscreen context prefers: RGBA8 with a 24-bit depth buffer, else the first
/// one (facewire draws into its own framebuffer, so any desktop-GL config will do).
pub(crate) fn preferred_offscreen_config<C: GlConfig + Clone>(configs: &[C]) -> Option<C> {
    configs
        .iter()
        .find(|c| c.alpha_size() >= 8 && c.depth_size() >= 24)
        .or(configs.first())
        .cloned()
}

/// Loads the GL functions of the current context through `loader`, checks that it is at least
/// OpenGL 3.3 (not ES), routes `KHR_debug` messages into tracing and logs the driver at info
/// level. `api` names the platform (`"EGL device"`, `"GLX"`, ...) in that log line.
///
/// # Safety
///
/// The context the loader belongs to must be current on this thread, and `loader` must return
/// valid function pointers (or null) for that context.
pub(crate) unsafe fn load_context<F>(loader: F, api: &str) -> Result<glow::Context, RenderError>
where
    F: FnMut(&std::ffi::CStr) -> *const std::ffi::c_void,
{
    // SAFETY: the caller guarantees a current context and a loader for it.
    let mut gl = unsafe { glow::Context::from_loader_function_cstr(loader) };
    let version = gl.version();
    if version.is_embedded || (version.major, version.minor) < (3, 3) {
        return Err(RenderError::Unsupported {
            found: gl_string(&gl, glow::VERSION),
        });
    }
    install_debug_output(&mut gl);
    tracing::info!(
        api,
        renderer = %gl_string(&gl, glow::RENDERER),
        version = %gl_string(&gl, glow::VERSION),
        glsl = %gl_string(&gl, glow::SHADING_LANGUAGE_VERSION),
        vendor = %gl_string(&gl, glow::VENDOR),
        "OpenGL context created"
    );
    Ok(gl)
}

/// A `glGetString` value.
pub(crate) fn gl_string(gl: &glow::Context, name: u32) -> String {
    // SAFETY: glGetString with a valid enum on a loaded context has no preconditions; glow
    // copies the driver's string.
    unsafe { gl.get_parameter_string(name) }
}

/// Routes `KHR_debug` messages into tracing, when the context supports it. Debug builds also
/// make the output synchronous, so a message is logged from inside the GL call that caused it.
fn install_debug_output(gl: &mut glow::Context) {
    if !gl.supports_debug() {
        tracing::debug!("KHR_debug is not available; GL messages are not logged");
        return;
    }
    // SAFETY: the context is current (the caller's contract), the callback is 'static and
    // thread-safe, and glow unregisters it before the glow::Context is dropped.
    unsafe {
        gl.enable(glow::DEBUG_OUTPUT);
        if cfg!(debug_assertions) {
            gl.enable(glow::DEBUG_OUTPUT_SYNCHRONOUS);
        }
        gl.debug_message_callback(log_debug_message);
    }
}

/// The `KHR_debug` callback: one tracing event per message, at a level following its severity.
fn log_debug_message(source: u32, kind: u32, id: u32, severity: u32, message: &str) {
    let source = match source {
        glow::DEBUG_SOURCE_API => "api",
        glow::DEBUG_SOURCE_WINDOW_SYSTEM => "window-system",
        glow::DEBUG_SOURCE_SHADER_COMPILER => "shader-compiler",
        glow::DEBUG_SOURCE_THIRD_PARTY => "third-party",
        glow::DEBUG_SOURCE_APPLICATION => "application",
        _ => "other",
    };
    let kind = match kind {
        glow::DEBUG_TYPE_ERROR => "error",
        glow::DEBUG_TYPE_DEPRECATED_BEHAVIOR => "deprecated",
        glow::DEBUG_TYPE_UNDEFINED_BEHAVIOR => "undefined-behaviour",
        glow::DEBUG_TYPE_PORTABILITY => "portability",
        glow::DEBUG_TYPE_PERFORMANCE => "performance",
        glow::DEBUG_TYPE_MARKER => "marker",
        glow::DEBUG_TYPE_PUSH_GROUP | glow::DEBUG_TYPE_POP_GROUP => "group",
        _ => "other",
    };
    match severity {
        glow::DEBUG_SEVERITY_HIGH => {
            tracing::error!(target: "facewire::gl", source, kind, id, "{message}")
        }
        glow::DEBUG_SEVERITY_MEDIUM => {
            tracing::warn!(target: "facewire::gl", source, kind, id, "{message}")
        }
        glow::DEBUG_SEVERITY_LOW => {
            tracing::debug!(target: "facewire::gl", source, kind, id, "{message}")
        }
        _ => tracing::trace!(target: "facewire::gl", source, kind, id, "{message}"),
    }
}

/// Logs every pending `glGetError` value (at most 8, in case the context is lost and keeps
/// reporting). Used through `check_gl!`, which compiles it out of release builds.
#[cfg_attr(not(debug_assertions), allow(dead_code))]
pub(crate) fn check_errors(gl: &glow::Context, what: &str, file: &str, line: u32) {
    for _ in 0..8 {
        // SAFETY: glGetError has no preconditions on a loaded context.
        let error = unsafe { gl.get_error() };
        if error == glow::NO_ERROR {
            return;
        }
        let name = match error {
            glow::INVALID_ENUM => "GL_INVALID_ENUM",
            glow::INVALID_VALUE => "GL_INVALID_VALUE",
            glow::INVALID_OPERATION => "GL_INVALID_OPERATION",
            glow::INVALID_FRAMEBUFFER_OPERATION => "GL_INVALID_FRAMEBUFFER_OPERATION",
            glow::OUT_OF_MEMORY => "GL_OUT_OF_MEMORY",
            _ => "unknown GL error",
        };
        tracing::error!(target: "facewire::gl", error = name, code = error, file, line, "GL error while {what}");
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::render::check_gl;
    use crate::render::headless::HeadlessContext;

    /// A log sink shared between the subscriber and the test.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn gl_errors_reach_the_log() {
        let sink = Sink::default();
        let writer = sink.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            // The callsites checked below fire only in this test, so no other test thread can
            // have cached "nobody listens" for them; still recompute, in case one did.
            tracing::callsite::rebuild_interest_cache();
            let ctx = HeadlessContext::new(8, 8).expect("headless context");
            let gl = ctx.gl();
            // SAFETY: an invalid enum only raises GL_INVALID_ENUM; nothing is bound.
            unsafe { gl.bind_buffer(0x1234, None) };
            check_gl!(&gl, "binding a buffer to a made-up target");
        });
        let log = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        if cfg!(debug_assertions) {
            assert!(
                log.contains("GL_INVALID_ENUM"),
                "check_gl! did not log: {log}"
            );
            assert!(
                log.contains("facewire::gl") && log.contains("source=\"api\""),
                "no KHR_debug message: {log}"
            );
        }
    }
}

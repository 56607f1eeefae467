//! The only GL code: contexts (window and headless EGL), shader programs, the avatar renderer
//! with its CPU and GPU morph paths, and the camera.
//!
//! # Colour and alpha
//!
//! Textures are uploaded as `SRGB8_ALPHA8`, so the shader samples linear colour; lighting runs
//! in linear space and the fragment shader encodes the result to sRGB itself.
//! `GL_FRAMEBUFFER_SRGB` stays disabled everywhere, so the window's default framebuffer and the
//! headless FBO (plain RGBA8) receive exactly the same bytes. Clear colours from the config are
//! straight (not premultiplied) sRGB-encoded RGBA; when a [`DrawTarget`] asks for alpha, the
//! clear colour is premultiplied and every opaque surface writes alpha 1, so the output is
//! premultiplied everywhere (no colour channel above its alpha).
//!
//! # Morph paths
//!
//! [`MorphMode`] (the config's `render.morph`) resolves once per [`Renderer`] to a
//! [`MorphPath`]: the CPU path blends sparsely with [`crate::avatar::blend::CpuBlender`] and
//! uploads the interleaved positions and normals with `glBufferSubData`, only when a mesh's
//! weights changed; the GPU path keeps every delta in an RGBA32F buffer texture and uploads only
//! the list of non-zero weights as uniforms, and the vertex shader sums them. Both sum the same
//! targets in the same order, so their images agree (on llvmpipe they are bit-identical). Skinning
//! (in the vertex shader on both paths) and node transforms apply after morphing; normals are
//! morphed, then renormalised in the shader.
//!
//! # Ownership and drop order
//!
//! Every GL object has exactly one owner that deletes it in `Drop`, holding an
//! `Rc<glow::Context>`. Deleting needs the GL context current, so owners of GL objects (the
//! [`Renderer`]) must be dropped **before** the context owner ([`headless::HeadlessContext`] or
//! [`window::GlWindow`]): declare the renderer field before the context field in a struct
//! (fields drop in declaration order), or drop it explicitly first. Everything here holds an
//! `Rc` and stays on the thread that created the context.

mod camera;
mod debug;
mod effects;
pub mod headless;
mod lod;
mod materials;
mod morph;
mod nodes;
mod objects;
pub mod overlay;
pub mod panel;
mod passes;
mod primitives;
mod renderer;
mod shader;
mod skins;
mod variants;
pub mod window;
mod wrinkles;

pub use camera::{Camera, FRAMING_FOV_Y, FRAMING_MARGIN};
pub use morph::MAX_ACTIVE_TARGETS;
pub use renderer::Renderer;
pub use wrinkles::WrinkleMap;

/// Checks `glGetError` after a GL call, in debug builds only (it compiles to nothing in release
/// builds, because `glGetError` stalls the pipeline). Logs every pending error with the file,
/// line and a short description of what was being done.
macro_rules! check_gl {
    ($gl:expr, $what:expr) => {
        #[cfg(debug_assertions)]
        {
            $crate::render::debug::check_errors($gl, $what, file!(), line!());
        }
    };
}
pub(crate) use check_gl;

/// Errors creating contexts, windows, shaders and GL objects.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// EGL or the windowing system's GL platform failed (display, config, context or surface).
    #[error("{what}")]
    Platform {
        /// What was being done.
        what: &'static str,
        /// glutin's error.
        #[source]
        source: glutin::error::Error,
    },
    /// No EGL device could be used for a headless context.
    #[error("no usable EGL device for headless rendering: {0}")]
    NoDevice(String),
    /// No framebuffer configuration fits (depth buffer, OpenGL API).
    #[error("no suitable framebuffer configuration: {0}")]
    NoConfig(String),
    /// The window could not be created, or its handle could not be obtained.
    #[error("{what}")]
    Window {
        /// What was being done.
        what: &'static str,
        /// The windowing error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The context's OpenGL version is below what facewire needs.
    #[error("OpenGL {found} is too old: facewire needs 3.3 core or newer")]
    Unsupported {
        /// The version string the driver reported.
        found: String,
    },
    /// A shader failed to compile; `log` is the driver's info log.
    #[error("compiling the {stage} shader failed:\n{log}")]
    Compile {
        /// Which shader (`vertex` or `fragment`).
        stage: &'static str,
        /// The driver's info log.
        log: String,
    },
    /// A program failed to link; `log` is the driver's info log.
    #[error("linking the shader program failed:\n{log}")]
    Link {
        /// The driver's info log.
        log: String,
    },
    /// Creating a GL object (buffer, texture, framebuffer, ...) failed.
    #[error("creating a GL {what} failed: {message}")]
    Create {
        /// The kind of object.
        what: &'static str,
        /// The driver's message.
        message: String,
    },
    /// Replacement texture pixels that do not fit (wrong byte count, unknown texture).
    #[error("replacing a texture failed: {0}")]
    Texture(String),
    /// A framebuffer is incomplete.
    #[error("framebuffer incomplete (status 0x{status:04x})")]
    Framebuffer {
        /// The `glCheckFramebufferStatus` value.
        status: u32,
    },
}

pub use crate::config::{LodMode, MorphMode, ParseLodModeError, ParseMorphModeError};

/// The morph implementation a [`Renderer`] actually uses, resolved once at construction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MorphPath {
    /// Sparse blend on the CPU, uploaded with `glBufferSubData` when the weights change.
    Cpu,
    /// All deltas in a buffer texture; the vertex shader sums the non-zero weights.
    Gpu,
}

impl MorphMode {
    /// Resolves the mode against the `GL_RENDERER` string: `Auto` picks [`MorphPath::Cpu`] on
    /// llvmpipe, softpipe and SwiftShader and [`MorphPath::Gpu`] otherwise.
    pub fn resolve(self, gl_renderer: &str) -> MorphPath {
        match self {
            MorphMode::Cpu => MorphPath::Cpu,
            MorphMode::Gpu => MorphPath::Gpu,
            MorphMode::Auto => {
                if is_software_renderer(gl_renderer) {
                    MorphPath::Cpu
                } else {
                    MorphPath::Gpu
                }
            }
        }
    }
}

/// Whether a `GL_RENDERER` string names a software rasteriser.
pub fn is_software_renderer(gl_renderer: &str) -> bool {
    let name = gl_renderer.to_ascii_lowercase();
    ["llvmpipe", "softpipe", "swiftshader"]
        .iter()
        .any(|s| name.contains(s))
}

/// The lowest and highest morph weight that reaches the GPU.
pub const WEIGHT_RANGE: (f32, f32) = (-1.0, 2.0);

/// Makes a morph weight safe for the GPU: non-finite values become 0 and the rest are clamped
/// to [`WEIGHT_RANGE`] (ARKit weights live in 0..=1; a little overshoot is allowed for
/// exaggeration, and negative weights for targets sculpted the other way).
pub fn sanitize_weight(w: f32) -> f32 {
    if w.is_finite() {
        w.clamp(WEIGHT_RANGE.0, WEIGHT_RANGE.1)
    } else {
        0.0
    }
}

/// Where and how one frame is drawn: the viewport, the background and whether alpha is kept.
///
/// [`Renderer::draw`] draws into the framebuffer currently bound for drawing (the window's
/// default framebuffer, or the headless FBO after [`headless::HeadlessContext::bind`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DrawTarget {
    /// Viewport width in pixels.
    pub width: u32,
    /// Viewport height in pixels.
    pub height: u32,
    /// Background colour: straight (not premultiplied) sRGB-encoded RGBA, each 0 to 1.
    pub clear_color: [f32; 4],
    /// Whether the output keeps alpha. When true, the background is written premultiplied with
    /// the clear colour's alpha; when false, the background is opaque whatever its alpha says
    /// (a chroma-key background).
    pub alpha: bool,
}

impl DrawTarget {
    /// The clear colour actually written: premultiplied when alpha is kept, opaque otherwise.
    /// Non-finite components become 0 and everything is clamped to 0..=1.
    pub fn effective_clear(&self) -> [f32; 4] {
        let c = self.clear_color.map(|v| {
            if v.is_finite() {
                v.clamp(0.0, 1.0)
            } else {
                0.0
            }
        });
        if self.alpha {
            [c[0] * c[3], c[1] * c[3], c[2] * c[3], c[3]]
        } else {
            [c[0], c[1], c[2], 1.0]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn morph_mode_parses_and_resolves() {
        assert_eq!("auto".parse::<MorphMode>(), Ok(MorphMode::Auto));
        assert_eq!(" GPU ".parse::<MorphMode>(), Ok(MorphMode::Gpu));
        assert_eq!("cpu".parse::<MorphMode>(), Ok(MorphMode::Cpu));
        assert!("fast".parse::<MorphMode>().is_err());
        let llvmpipe = "llvmpipe (LLVM 15.0.6, 256 bits)";
        assert_eq!(MorphMode::Auto.resolve(llvmpipe), MorphPath::Cpu);
        assert_eq!(
            MorphMode::Auto.resolve("Google SwiftShader"),
            MorphPath::Cpu
        );
        assert_eq!(
            MorphMode::Auto.resolve("NVIDIA H200/PCIe/SSE2"),
            MorphPath::Gpu
        );
        assert_eq!(MorphMode::Gpu.resolve(llvmpipe), MorphPath::Gpu);
        assert_eq!(MorphMode::Cpu.resolve("AMD Radeon"), MorphPath::Cpu);
    }

    #[test]
    fn morph_mode_deserializes_lowercase() {
        #[derive(serde::Deserialize)]
        struct Render {
            morph: MorphMode,
        }
        let r: Render = toml::from_str("morph = \"gpu\"").unwrap();
        assert_eq!(r.morph, MorphMode::Gpu);
        assert!(toml::from_str::<Render>("morph = \"GPU\"").is_err());
        assert_eq!(MorphMode::Cpu.to_string(), "cpu");
    }

    #[test]
    fn weights_are_sanitized() {
        assert_eq!(sanitize_weight(f32::NAN), 0.0);
        assert_eq!(sanitize_weight(f32::INFINITY), 0.0);
        assert_eq!(sanitize_weight(f32::NEG_INFINITY), 0.0);
        assert_eq!(sanitize_weight(1e30), 2.0);
        assert_eq!(sanitize_weight(-1e30), -1.0);
        assert_eq!(sanitize_weight(0.25), 0.25);
    }

    #[test]
    fn clear_colour_is_premultiplied_only_with_alpha() {
        let mut t = DrawTarget {
            width: 1,
            height: 1,
            clear_color: [0.0, 1.0, 0.5, 0.5],
            alpha: true,
        };
        assert_eq!(t.effective_clear(), [0.0, 0.5, 0.25, 0.5]);
        t.alpha = false;
        assert_eq!(t.effective_clear(), [0.0, 1.0, 0.5, 1.0]);
        t.clear_color = [f32::NAN, 2.0, -1.0, 0.0];
        assert_eq!(t.effective_clear(), [0.0, 1.0, 0.0, 1.0]);
    }
}

//! Shader compilation: GLSL from `shaders/`, with `#version` and `#define`s prepended at run
//! time, linked into a [`Program`] owner; failures carry the driver's info log.

#![expect(unsafe_code)]

use std::fmt::Write as _;
use std::rc::Rc;

use glow::HasContext;

use super::objects::Program;
use super::RenderError;

/// The GLSL version line every shader starts with (GL 3.3 core is the baseline; macOS's 4.1
/// core accepts it as well).
const VERSION: &str = "#version 330 core\n";

/// The avatar vertex shader (morphing, transforms).
pub(crate) const AVATAR_VERT: &str = include_str!("../../shaders/avatar.vert.glsl");
/// The avatar fragment shader (texture, lighting, sRGB encoding).
pub(crate) const AVATAR_FRAG: &str = include_str!("../../shaders/avatar.frag.glsl");
/// The overlay vertex shader (a screen-space quad).
pub(crate) const OVERLAY_VERT: &str = include_str!("../../shaders/overlay.vert.glsl");
/// The overlay fragment shader (premultiplied image).
pub(crate) const OVERLAY_FRAG: &str = include_str!("../../shaders/overlay.frag.glsl");

/// Builds the full source: the version line, one `#define NAME VALUE` per define, a `#line`
/// directive so driver messages point at the file's own line numbers, then the body.
fn with_preamble(body: &str, defines: &[(&str, String)]) -> String {
    let mut source = String::with_capacity(body.len() + 256);
    source.push_str(VERSION);
    for (name, value) in defines {
        let _ = writeln!(source, "#define {name} {value}");
    }
    source.push_str("#line 1\n");
    source.push_str(body);
    source
}

/// Compiles and links a program from vertex and fragment bodies with the given defines.
pub(crate) fn build_program(
    gl: &Rc<glow::Context>,
    vertex: &str,
    fragment: &str,
    defines: &[(&str, String)],
) -> Result<Program, RenderError> {
    let program = Program::new(gl)?;
    let vs = compile(
        gl,
        glow::VERTEX_SHADER,
        "vertex",
        &with_preamble(vertex, defines),
    )?;
    let fs = match compile(
        gl,
        glow::FRAGMENT_SHADER,
        "fragment",
        &with_preamble(fragment, defines),
    ) {
        Ok(fs) => fs,
        Err(e) => {
            // SAFETY: `vs` was created above on this context and is not used again.
            unsafe { gl.delete_shader(vs) };
            return Err(e);
        }
    };
    // SAFETY: all three objects were created on this (current) context; the shaders are
    // detached and deleted once linking is done, as the program keeps its own copy.
    let (linked, log) = unsafe {
        gl.attach_shader(program.raw(), vs);
        gl.attach_shader(program.raw(), fs);
        gl.link_program(program.raw());
        let linked = gl.get_program_link_status(program.raw());
        let log = gl.get_program_info_log(program.raw());
        gl.detach_shader(program.raw(), vs);
        gl.detach_shader(program.raw(), fs);
        gl.delete_shader(vs);
        gl.delete_shader(fs);
        (linked, log)
    };
    if !linked {
        return Err(RenderError::Link { log });
    }
    if !log.trim().is_empty() {
        tracing::debug!(log = %log.trim(), "shader program linked with messages");
    }
    Ok(program)
}

/// Compiles one shader; on failure the shader is deleted and the info log returned.
fn compile(
    gl: &glow::Context,
    kind: u32,
    stage: &'static str,
    source: &str,
) -> Result<glow::Shader, RenderError> {
    // SAFETY: plain object creation and compilation on the current context; the shader is
    // deleted on failure, otherwise handed to the caller, who deletes it.
    unsafe {
        let shader = gl
            .create_shader(kind)
            .map_err(|message| RenderError::Create {
                what: "shader",
                message,
            })?;
        gl.shader_source(shader, source);
        gl.compile_shader(shader);
        if gl.get_shader_compile_status(shader) {
            Ok(shader)
        } else {
            let log = gl.get_shader_info_log(shader);
            gl.delete_shader(shader);
            Err(RenderError::Compile { stage, log })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preamble_puts_version_first_and_defines_before_the_body() {
        let s = with_preamble("void main() {}\n", &[("MORPH_GPU", "1".into())]);
        assert!(s.starts_with("#version 330 core\n#define MORPH_GPU 1\n#line 1\n"));
        assert!(s.ends_with("void main() {}\n"));
        for source in [AVATAR_VERT, AVATAR_FRAG] {
            assert!(!source
                .lines()
                .any(|l| l.trim_start().starts_with("#version")));
        }
    }
}

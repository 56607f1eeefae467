//! 2D overlays drawn over the avatar: an RGBA image (prompt text, progress bars) placed in
//! pixels on the framebuffer, blended with premultiplied alpha.

#![expect(unsafe_code)]

use std::rc::Rc;

use glow::HasContext;

use super::objects::{Program, Texture, VertexArray};
use super::shader::{build_program, OVERLAY_FRAG, OVERLAY_VERT};
use super::RenderError;
use crate::image::RgbaImage;

/// One overlay image and the GL objects that draw it.
pub struct Overlay {
    gl: Rc<glow::Context>,
    program: Program,
    // A bound vertex array is required by core profiles even when no attribute is read.
    vao: VertexArray,
    texture: Texture,
    u_rect: Option<glow::UniformLocation>,
    u_image: Option<glow::UniformLocation>,
    size: (u32, u32),
}

impl Overlay {
    /// Creates an empty overlay on the current context.
    pub fn new(gl: Rc<glow::Context>) -> Result<Overlay, RenderError> {
        let program = build_program(&gl, OVERLAY_VERT, OVERLAY_FRAG, &[])?;
        let vao = VertexArray::new(&gl)?;
        let texture = Texture::new(&gl)?;
        // SAFETY: the program was linked on this current context; the names are literals.
        let (u_rect, u_image) = unsafe {
            (
                gl.get_uniform_location(program.raw(), "u_rect"),
                gl.get_uniform_location(program.raw(), "u_image"),
            )
        };
        // SAFETY: the texture is fresh and bound only for setting its sampling parameters.
        unsafe {
            gl.bind_texture(glow::TEXTURE_2D, Some(texture.raw()));
            for (name, value) in [
                (glow::TEXTURE_MIN_FILTER, glow::NEAREST),
                (glow::TEXTURE_MAG_FILTER, glow::NEAREST),
                (glow::TEXTURE_WRAP_S, glow::CLAMP_TO_EDGE),
                (glow::TEXTURE_WRAP_T, glow::CLAMP_TO_EDGE),
            ] {
                gl.tex_parameter_i32(glow::TEXTURE_2D, name, value as i32);
            }
            gl.bind_texture(glow::TEXTURE_2D, None);
        }
        Ok(Overlay {
            gl,
            program,
            vao,
            texture,
            u_rect,
            u_image,
            size: (0, 0),
        })
    }

    /// Replaces the image (straight alpha, sRGB-encoded, rows top to bottom). Call it only when
    /// the picture changes: it uploads the whole image.
    pub fn set_image(&mut self, image: &RgbaImage) {
        let expected = image.width as usize * image.height as usize * 4;
        if image.data.len() != expected || image.width == 0 || image.height == 0 {
            tracing::warn!(
                width = image.width,
                height = image.height,
                "overlay image has a wrong size; ignored"
            );
            return;
        }
        let gl = &self.gl;
        // SAFETY: `data` holds exactly width * height * 4 bytes (checked above) and the unpack
        // alignment is 1, so the driver reads inside the slice.
        unsafe {
            gl.bind_texture(glow::TEXTURE_2D, Some(self.texture.raw()));
            gl.pixel_store_i32(glow::UNPACK_ALIGNMENT, 1);
            gl.tex_image_2d(
                glow::TEXTURE_2D,
                0,
                glow::RGBA8 as i32,
                image.width as i32,
                image.height as i32,
                0,
                glow::RGBA,
                glow::UNSIGNED_BYTE,
                glow::PixelUnpackData::Slice(Some(&image.data)),
            );
            gl.bind_texture(glow::TEXTURE_2D, None);
        }
        self.size = (image.width, image.height);
    }

    /// The current image's size in pixels ((0, 0) before the first image).
    pub fn size(&self) -> (u32, u32) {
        self.size
    }

    /// Draws the image 1:1 with its top-left corner at pixel (`x`, `y`) of a `viewport`-sized
    /// framebuffer (top-left origin). Changes GL state: binds the overlay program, its vertex
    /// array and texture unit 0, enables blending (ONE, ONE_MINUS_SRC_ALPHA) and disables depth
    /// testing and culling; it leaves blending on and depth testing off.
    pub fn draw(&self, viewport: (u32, u32), x: i32, y: i32) {
        let (w, h) = self.size;
        let (vw, vh) = (viewport.0.max(1) as f32, viewport.1.max(1) as f32);
        if w == 0 || h == 0 {
            return;
        }
        let left = 2.0 * x as f32 / vw - 1.0;
        let right = 2.0 * (x as f32 + w as f32) / vw - 1.0;
        let top = 1.0 - 2.0 * y as f32 / vh;
        let bottom = 1.0 - 2.0 * (y as f32 + h as f32) / vh;
        let gl = &self.gl;
        // SAFETY: every object used belongs to this current context; the draw reads no buffers.
        unsafe {
            gl.disable(glow::DEPTH_TEST);
            gl.disable(glow::CULL_FACE);
            gl.enable(glow::BLEND);
            gl.blend_func(glow::ONE, glow::ONE_MINUS_SRC_ALPHA);
            gl.use_program(Some(self.program.raw()));
            gl.uniform_4_f32(self.u_rect.as_ref(), left, top, right, bottom);
            gl.uniform_1_i32(self.u_image.as_ref(), 0);
            gl.active_texture(glow::TEXTURE0);
            gl.bind_texture(glow::TEXTURE_2D, Some(self.texture.raw()));
            gl.bind_vertex_array(Some(self.vao.raw()));
            gl.draw_arrays(glow::TRIANGLE_STRIP, 0, 4);
            gl.bind_vertex_array(None);
            gl.bind_texture(glow::TEXTURE_2D, None);
            gl.use_program(None);
        }
    }
}

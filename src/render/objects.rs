//! Owners of GL objects: each holds the context and deletes its object in `Drop`.

#![expect(unsafe_code)]

use std::rc::Rc;

use glow::HasContext;

use super::RenderError;

/// Declares an owner type for one kind of GL object.
macro_rules! gl_owner {
    ($(#[$doc:meta])* $name:ident, $raw:ty, $what:literal, $create:ident, $delete:ident) => {
        $(#[$doc])*
        pub(crate) struct $name {
            /// The context that created the object; it must be current when this drops.
            gl: Rc<glow::Context>,
            /// The object's name.
            raw: $raw,
        }

        impl $name {
            /// Creates the object on the current context.
            pub(crate) fn new(gl: &Rc<glow::Context>) -> Result<Self, RenderError> {
                // SAFETY: creating an object only needs a current context, which every
                // holder of the Rc<glow::Context> keeps current on this thread.
                let raw = unsafe { gl.$create() }.map_err(|message| RenderError::Create {
                    what: $what,
                    message,
                })?;
                Ok($name { gl: Rc::clone(gl), raw })
            }

            /// The raw GL name, valid while `self` lives.
            pub(crate) fn raw(&self) -> $raw {
                self.raw
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                // SAFETY: `raw` was created by this context and is deleted exactly once, here;
                // the drop-order rule (owners before the context) keeps the context current.
                unsafe { self.gl.$delete(self.raw) }
            }
        }
    };
}

gl_owner!(
    /// A buffer object (vertex, index or texture buffer).
    Buffer, glow::Buffer, "buffer", create_buffer, delete_buffer
);
gl_owner!(
    /// A vertex array object.
    VertexArray, glow::VertexArray, "vertex array", create_vertex_array, delete_vertex_array
);
gl_owner!(
    /// A texture object.
    Texture, glow::Texture, "texture", create_texture, delete_texture
);
gl_owner!(
    /// A framebuffer object.
    Framebuffer, glow::Framebuffer, "framebuffer", create_framebuffer, delete_framebuffer
);
gl_owner!(
    /// A renderbuffer object.
    Renderbuffer, glow::Renderbuffer, "renderbuffer", create_renderbuffer, delete_renderbuffer
);
gl_owner!(
    /// A linked shader program.
    Program, glow::Program, "program", create_program, delete_program
);

/// Views a slice of plain numbers as bytes, for buffer uploads.
pub(crate) fn bytes_of<T: Pod>(data: &[T]) -> &[u8] {
    // SAFETY: `Pod` is only implemented for primitive numeric types, which have no padding and
    // no invalid bit patterns, so every byte of the slice is initialised; the length covers
    // exactly the slice's memory and the lifetime is tied to the input.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) }
}

/// Plain numeric types that may be viewed as bytes.
pub(crate) trait Pod: Copy {}
impl Pod for f32 {}
impl Pod for u32 {}
impl Pod for u16 {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_of_is_native_endian() {
        let v = [1.0f32, -2.5];
        let b = bytes_of(&v);
        assert_eq!(b.len(), 8);
        assert_eq!(&b[4..8], &(-2.5f32).to_ne_bytes());
        assert_eq!(bytes_of(&[7u32]), &7u32.to_ne_bytes());
    }
}

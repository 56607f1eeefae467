//! One camera or video frame: 8-bit RGB, rows top to bottom.

/// One image, 8-bit RGB, rows top to bottom, no padding between rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Width in pixels (at least 1).
    pub width: u32,
    /// Height in pixels (at least 1).
    pub height: u32,
    /// `width * height * 3` bytes: red, green, blue for each pixel, row by row.
    pub rgb: Vec<u8>,
}

impl Frame {
    /// A frame of `width` x `height` filled with one colour.
    pub fn filled(width: u32, height: u32, rgb: [u8; 3]) -> Frame {
        let n = width as usize * height as usize;
        let mut data = Vec::with_capacity(n * 3);
        for _ in 0..n {
            data.extend_from_slice(&rgb);
        }
        Frame {
            width,
            height,
            rgb: data,
        }
    }

    /// The pixel at (`x`, `y`); callers keep both inside the frame.
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 3] {
        let i = (y as usize * self.width as usize + x as usize) * 3;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }
}

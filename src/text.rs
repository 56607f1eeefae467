//! CPU drawing into RGBA images: text in the public-domain 8x8 bitmap font (`font8x8`), filled
//! rectangles and line wrapping, shared by the contact sheet ([`crate::sheet`]), the on-stage
//! cards ([`crate::app::hud`]) and the connect card's terminal text ([`crate::connect`]).

use font8x8::UnicodeFonts;

use crate::image::RgbaImage;

/// Width and height of one glyph at scale 1, in pixels (also the advance: the font leaves its
/// own one-pixel spacing inside the cell).
pub const GLYPH: u32 = 8;

/// A rectangle in image pixels, top-left origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rect {
    /// Left edge.
    pub x: u32,
    /// Top edge.
    pub y: u32,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

impl Rect {
    /// One past the right edge.
    pub fn right(&self) -> u32 {
        self.x.saturating_add(self.width)
    }

    /// One past the bottom edge.
    pub fn bottom(&self) -> u32 {
        self.y.saturating_add(self.height)
    }
}

/// The 8x8 bitmap of `c`: basic Latin, Latin-1, Greek and hiragana come from the font; control
/// characters and anything the font lacks draw as `?`.
pub fn glyph(c: char) -> [u8; 8] {
    let fallback = || font8x8::BASIC_FONTS.get('?').unwrap_or([0; 8]);
    if c.is_control() {
        return fallback();
    }
    font8x8::BASIC_FONTS
        .get(c)
        .or_else(|| font8x8::LATIN_FONTS.get(c))
        .or_else(|| font8x8::GREEK_FONTS.get(c))
        .or_else(|| font8x8::HIRAGANA_FONTS.get(c))
        .unwrap_or_else(fallback)
}

/// Width of `text` drawn at `scale`, in pixels.
pub fn text_width(text: &str, scale: u32) -> u32 {
    (text.chars().count() as u32)
        .saturating_mul(GLYPH)
        .saturating_mul(scale)
}

/// Fills `rect` (clipped to the image) with `rgba`.
pub fn fill(image: &mut RgbaImage, rect: Rect, rgba: [u8; 4]) {
    let x0 = rect.x.min(image.width) as usize;
    let x1 = rect.right().min(image.width) as usize;
    let width = image.width as usize;
    for y in rect.y..rect.bottom().min(image.height) {
        let row = y as usize * width;
        for pixel in image.data[(row + x0) * 4..(row + x1) * 4].chunks_exact_mut(4) {
            pixel.copy_from_slice(&rgba);
        }
    }
}

/// Draws `text` with its top-left corner at (`x`, `y`), each font pixel a `scale` x `scale`
/// square of `rgba`; pixels outside the image are skipped.
pub fn draw_text(image: &mut RgbaImage, x: u32, y: u32, text: &str, scale: u32, rgba: [u8; 4]) {
    let scale = scale.max(1);
    let mut left = x;
    for c in text.chars() {
        let bits = glyph(c);
        for (row, line) in bits.iter().enumerate() {
            for column in 0..GLYPH {
                // font8x8 stores each row least significant bit first: bit 0 is the leftmost
                // pixel.
                if line & (1 << column) == 0 {
                    continue;
                }
                let rect = Rect {
                    x: left.saturating_add(column * scale),
                    y: y.saturating_add(row as u32 * scale),
                    width: scale,
                    height: scale,
                };
                fill(image, rect, rgba);
            }
        }
        left = left.saturating_add(GLYPH * scale);
    }
}

/// Splits `text` into lines of at most `width` characters, breaking between words; a word
/// longer than a line is split across lines, so nothing is lost.
pub fn wrap_chars(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut line_len = 0;
    for word in text.split_whitespace() {
        let mut chars: Vec<char> = word.chars().collect();
        let fits = if line_len == 0 {
            chars.len() <= width
        } else {
            line_len + 1 + chars.len() <= width
        };
        if !fits && line_len > 0 {
            lines.push(std::mem::take(&mut line));
            line_len = 0;
        }
        while chars.len() > width {
            let rest = chars.split_off(width);
            lines.push(chars.into_iter().collect());
            chars = rest;
        }
        if line_len > 0 {
            line.push(' ');
            line_len += 1;
        }
        line_len += chars.len();
        line.extend(chars);
    }
    if line_len > 0 {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glyphs_come_from_the_font_with_a_fallback() {
        assert_ne!(glyph('A'), [0; 8]);
        assert_eq!(glyph(' '), [0; 8]);
        assert_eq!(glyph('\u{7}'), glyph('?'));
        assert_eq!(glyph('\u{4e00}'), glyph('?'));
        assert_ne!(glyph('é'), glyph('?'));
    }

    #[test]
    fn text_is_drawn_left_to_right_and_clipped() {
        let mut image = RgbaImage::filled(20, 10, [0, 0, 0, 255]);
        // 'I' in font8x8 has a vertical bar in its middle columns.
        draw_text(&mut image, 0, 0, "I", 1, [255, 255, 255, 255]);
        let lit = |image: &RgbaImage, x0: u32, x1: u32| {
            (0..image.height)
                .flat_map(|y| (x0..x1).map(move |x| (x, y)))
                .filter(|&(x, y)| image.pixel(x, y)[0] == 255)
                .count()
        };
        assert!(lit(&image, 0, 8) > 0);
        assert_eq!(lit(&image, 8, 20), 0);
        // Drawing past the edges must not panic and only touches pixels inside.
        draw_text(&mut image, 16, 6, "WWW", 3, [255, 255, 255, 255]);
        draw_text(
            &mut image,
            u32::MAX - 4,
            u32::MAX - 4,
            "W",
            2,
            [9, 9, 9, 255],
        );
        assert!(lit(&image, 16, 20) > 0);
    }

    #[test]
    fn the_font_is_drawn_with_its_left_column_first() {
        // 'L' has its vertical stroke on the left: more lit pixels in the left half.
        let mut image = RgbaImage::filled(8, 8, [0, 0, 0, 255]);
        draw_text(&mut image, 0, 0, "L", 1, [255, 255, 255, 255]);
        let count = |x0: u32, x1: u32| {
            (0..8)
                .flat_map(|y| (x0..x1).map(move |x| (x, y)))
                .filter(|&(x, y)| image.pixel(x, y)[0] == 255)
                .count()
        };
        assert!(count(0, 4) > count(4, 8));
    }

    #[test]
    fn wrapping_breaks_between_words_and_splits_long_ones() {
        assert_eq!(
            wrap_chars("one two three four five six", 9),
            ["one two", "three", "four five", "six"]
        );
        assert_eq!(wrap_chars("abcdefghij xy", 4), ["abcd", "efgh", "ij", "xy"]);
        assert_eq!(wrap_chars("ab abcdefgh", 4), ["ab", "abcd", "efgh"]);
        assert_eq!(wrap_chars("  ", 10), Vec::<String>::new());
        for line in wrap_chars("localport=39539,49983,49993,11111,11125 and more", 12) {
            assert!(line.chars().count() <= 12, "{line}");
        }
    }
}

//! CPU drawing into the contact sheet image: filled rectangles, panel blits and text in the
//! public-domain 8x8 bitmap font (`font8x8`), with label measuring and fitting.

use font8x8::UnicodeFonts;

use crate::image::RgbaImage;

/// Width and height of one glyph at scale 1, in pixels (also the advance: the font leaves its
/// own one-pixel spacing inside the cell).
pub const GLYPH: u32 = 8;

/// What a label is cut down with when it does not fit even at scale 1.
const ELLIPSIS: &str = "..";

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

/// A label cut to fit a width: the text to draw and its integer scale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    /// The text, shortened in the middle with `..` when it did not fit.
    pub text: String,
    /// Pixel scale of the 8x8 glyphs (1 or more).
    pub scale: u32,
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

/// Fits `text` into `max_width` pixels: at the largest scale from `max_scale` down to 1 at
/// which it fits whole, else at scale 1 shortened in the middle (`mou..erDownRight`), keeping
/// two thirds of what fits from the end, where names carry their side (`Left`, `_R`).
pub fn fit(text: &str, max_width: u32, max_scale: u32) -> Fitted {
    for scale in (1..=max_scale.max(1)).rev() {
        if text_width(text, scale) <= max_width {
            return Fitted {
                text: text.to_owned(),
                scale,
            };
        }
    }
    let room = (max_width / GLYPH) as usize;
    let chars: Vec<char> = text.chars().collect();
    let marker = ELLIPSIS.chars().count();
    let text = if room <= marker {
        chars.iter().take(room).collect()
    } else {
        let keep = room - marker;
        let head = keep / 3;
        let tail = keep - head;
        let mut out: String = chars[..head].iter().collect();
        out.push_str(ELLIPSIS);
        out.extend(&chars[chars.len() - tail..]);
        out
    };
    Fitted { text, scale: 1 }
}

/// A label laid out on one or two lines at one scale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wrapped {
    /// One or two lines; the second is shortened in the middle when nothing else fits.
    pub lines: Vec<String>,
    /// Pixel scale of the 8x8 glyphs (1 or more).
    pub scale: u32,
}

/// Where a name may break across lines: before an uppercase letter that follows a lowercase
/// letter or digit (`mouthLower|Down`), after a separator (`Fcl_|EYE`), and where digits begin
/// (`Key|12`). Returns character indices, ascending.
pub fn break_points(text: &str) -> Vec<usize> {
    let chars: Vec<char> = text.chars().collect();
    (1..chars.len())
        .filter(|&i| {
            let (a, b) = (chars[i - 1], chars[i]);
            (b.is_uppercase() && (a.is_lowercase() || a.is_ascii_digit()))
                || (matches!(a, '_' | '.' | '-' | ' ' | ':' | '|') && !matches!(b, ' '))
                || (b.is_ascii_digit() && a.is_alphabetic())
        })
        .collect()
}

/// Lays `text` out in `max_width` pixels on at most two lines: at the largest scale from
/// `max_scale` down to 1 at which it fits whole on one line, or on two lines split at a word
/// boundary (the longest first line that leaves a second line that fits); failing all that, at
/// scale 1 split at the last boundary that fits (or wherever the first line is full), with the
/// second line shortened in the middle.
pub fn wrap(text: &str, max_width: u32, max_scale: u32) -> Wrapped {
    let chars: Vec<char> = text.chars().collect();
    let split = |i: usize| -> (String, String) {
        let first: String = chars[..i].iter().collect();
        let second: String = chars[i..].iter().collect();
        (first.trim_end().to_owned(), second.trim_start().to_owned())
    };
    let breaks = break_points(text);
    for scale in (1..=max_scale.max(1)).rev() {
        if text_width(text, scale) <= max_width {
            return Wrapped {
                lines: vec![text.to_owned()],
                scale,
            };
        }
        let fitting =
            breaks.iter().rev().map(|&i| split(i)).find(|(a, b)| {
                text_width(a, scale) <= max_width && text_width(b, scale) <= max_width
            });
        if let Some((a, b)) = fitting {
            return Wrapped {
                lines: vec![a, b],
                scale,
            };
        }
    }
    let per_line = (max_width / GLYPH) as usize;
    let at = breaks
        .iter()
        .rev()
        .copied()
        .find(|&i| text_width(&split(i).0, 1) <= max_width)
        .unwrap_or(per_line.min(chars.len()));
    let (first, second) = split(at);
    let mut lines = vec![first];
    if !second.is_empty() {
        lines.push(fit(&second, max_width, 1).text);
    }
    Wrapped { lines, scale: 1 }
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

/// Copies `source` into `image` with its top-left corner at (`x`, `y`), clipped.
pub fn blit(image: &mut RgbaImage, source: &RgbaImage, x: u32, y: u32) {
    if x >= image.width || y >= image.height {
        return;
    }
    let columns = source.width.min(image.width - x) as usize;
    let rows = source.height.min(image.height - y);
    for row in 0..rows {
        let from = row as usize * source.width as usize * 4;
        let to = ((y + row) as usize * image.width as usize + x as usize) * 4;
        image.data[to..to + columns * 4].copy_from_slice(&source.data[from..from + columns * 4]);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_prefers_the_largest_scale_that_fits() {
        let f = fit("jawOpen", 200, 2);
        assert_eq!((f.text.as_str(), f.scale), ("jawOpen", 2));
        // 19 characters: 304 px at 2x, 152 px at 1x.
        let f = fit("mouthLowerDownRight", 240, 2);
        assert_eq!((f.text.as_str(), f.scale), ("mouthLowerDownRight", 1));
    }

    #[test]
    fn fit_shortens_in_the_middle_and_keeps_the_side() {
        let f = fit("BlendShape.mouthLowerDownRight", 120, 2);
        assert_eq!(f.scale, 1);
        assert_eq!(text_width(&f.text, 1), 120);
        assert!(f.text.contains(".."), "{}", f.text);
        assert!(f.text.starts_with("Blen"), "{}", f.text);
        assert!(f.text.ends_with("Right"), "{}", f.text);
    }

    #[test]
    fn fit_handles_tiny_widths_and_wide_characters() {
        assert_eq!(fit("abcdef", 8, 2).text, "a");
        assert_eq!(fit("abcdef", 0, 2).text, "");
        // Width counts characters, not bytes.
        assert_eq!(text_width("äöü", 1), 24);
        let f = fit("ääääääääää", 48, 1);
        assert_eq!(f.text.chars().count(), 6);
    }

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
    fn fill_and_blit_clip_to_the_image() {
        let mut image = RgbaImage::filled(4, 4, [0, 0, 0, 255]);
        fill(
            &mut image,
            Rect {
                x: 2,
                y: 2,
                width: 10,
                height: 10,
            },
            [1, 2, 3, 4],
        );
        assert_eq!(image.pixel(3, 3), [1, 2, 3, 4]);
        assert_eq!(image.pixel(1, 1), [0, 0, 0, 255]);
        let source = RgbaImage::filled(3, 3, [7, 7, 7, 255]);
        blit(&mut image, &source, 3, 0);
        assert_eq!(image.pixel(3, 0), [7, 7, 7, 255]);
        assert_eq!(image.pixel(2, 0), [0, 0, 0, 255]);
        blit(&mut image, &source, 9, 9);
    }

    #[test]
    fn names_break_at_word_boundaries() {
        assert_eq!(break_points("mouthLowerDown"), [5, 10]);
        assert_eq!(break_points("Fcl_EYE_Close_L"), [4, 8, 14]);
        assert_eq!(break_points("Key 12"), [4]);
        assert_eq!(break_points("ABC"), Vec::<usize>::new());
    }

    #[test]
    fn wrap_prefers_one_line_then_two_at_the_larger_scale() {
        let w = wrap("jawOpen", 200, 2);
        assert_eq!((w.lines.len(), w.scale), (1, 2));
        // 19 characters; 12 fit per line at 2x in 196 px.
        let w = wrap("mouthLowerDownRight", 196, 2);
        assert_eq!(w.scale, 2);
        assert_eq!(w.lines, ["mouthLower", "DownRight"]);
        // 10 fit per line at 1x in 84 px.
        let w = wrap("mouthLowerDownRight", 84, 1);
        assert_eq!(w.lines, ["mouthLower", "DownRight"]);
        let w = wrap("eyeBlinkLeft", 116, 1);
        assert_eq!(w.lines, ["eyeBlinkLeft"]);
    }

    #[test]
    fn wrap_shortens_what_two_lines_cannot_hold() {
        let w = wrap("BlendShape.mouthLowerDownRight", 84, 2);
        assert_eq!(w.scale, 1);
        assert_eq!(w.lines.len(), 2);
        assert_eq!(w.lines[0], "Blend");
        assert!(w.lines[1].ends_with("Right"), "{:?}", w.lines);
        assert!(
            w.lines.iter().all(|l| text_width(l, 1) <= 84),
            "{:?}",
            w.lines
        );
        // No boundary at all: split where the first line is full.
        let w = wrap("abcdefghijklmnopqrstuvwxyz", 80, 1);
        assert_eq!(w.lines[0], "abcdefghij");
        assert!(text_width(&w.lines[1], 1) <= 80);
        // Degenerate widths do not panic.
        let w = wrap("abc", 0, 2);
        assert!(w.lines.iter().all(|l| l.is_empty()));
    }
}

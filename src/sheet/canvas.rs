//! The contact sheet's own drawing helpers: panel blits, and fitting and wrapping labels for
//! the 8x8 bitmap font of [`crate::text`].

use crate::image::RgbaImage;
use crate::text::{text_width, GLYPH};

/// What a label is cut down with when it does not fit even at scale 1.
const ELLIPSIS: &str = "..";

/// A label cut to fit a width: the text to draw and its integer scale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    /// The text, shortened in the middle with `..` when it did not fit.
    pub text: String,
    /// Pixel scale of the 8x8 glyphs (1 or more).
    pub scale: u32,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::{fill, Rect};

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

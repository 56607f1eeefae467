//! On-stage text cards (the calibration routine's prompts), laid out and drawn on the CPU into
//! an RGBA image that `render::overlay` puts over the avatar.

use crate::image::RgbaImage;
use crate::text::{draw_text, fill, text_width, Rect, GLYPH};

/// What one prompt card says.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptCard {
    /// The step's name, in large letters ("Blink").
    pub title: String,
    /// What to do ("Close both eyes fully, then open them.").
    pub instruction: String,
    /// A short status ("get ready: 2", "recording", "done").
    pub status: String,
    /// 1-based step number.
    pub step: usize,
    /// Number of steps.
    pub steps: usize,
    /// Progress through this step, 0 to 1.
    pub progress: f32,
}

/// Scale of the title's 8x8 glyphs.
const TITLE_SCALE: u32 = 4;
/// Scale of the instruction and status text.
const TEXT_SCALE: u32 = 3;
/// Padding inside the card, in pixels.
const PAD: u32 = 24;
/// Height of the progress bar, in pixels.
const BAR: u32 = 18;
/// Card background: a dark, slightly see-through grey.
const CARD: [u8; 4] = [24, 26, 30, 215];
/// Main text colour.
const TEXT: [u8; 4] = [240, 240, 240, 255];
/// Secondary text colour.
const MUTED: [u8; 4] = [170, 176, 186, 255];
/// Progress bar colours: track and fill.
const TRACK: [u8; 4] = [70, 74, 82, 255];
const FILL: [u8; 4] = [90, 200, 120, 255];

/// Splits `text` into lines of at most `max_width` pixels at `scale`, breaking between words
/// (a word longer than a line is cut).
pub fn wrap_words(text: &str, max_width: u32, scale: u32) -> Vec<String> {
    let max_chars = (max_width / (GLYPH * scale.max(1))).max(1) as usize;
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut word: String = word.chars().take(max_chars).collect();
        let needed = if line.is_empty() {
            word.chars().count()
        } else {
            line.chars().count() + 1 + word.chars().count()
        };
        if needed > max_chars && !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&std::mem::take(&mut word));
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// Where a card goes on a `viewport`-sized stage, and how wide it is: a third of the stage
/// (320 to 520 pixels) at the left edge, vertically centred, so it leaves the face, which the
/// camera frames in the middle, in view.
pub fn prompt_placement(viewport: (u32, u32), card_height: u32) -> (i32, i32) {
    let x = 24;
    let y = (viewport.1 as i32 - card_height as i32) / 2;
    (x, y.max(0))
}

/// The card width for a stage `viewport_width` pixels wide.
pub fn prompt_width(viewport_width: u32) -> u32 {
    (viewport_width / 3).clamp(320, 520)
}

/// Draws `card` `width` pixels wide (at least 320): the step counter, the title, the wrapped
/// instruction, the status and a progress bar; every line is wrapped to fit.
pub fn render_prompt(card: &PromptCard, width: u32) -> RgbaImage {
    let width = width.max(320);
    let inner = width - 2 * PAD;
    let line_h = GLYPH * TEXT_SCALE + 8;
    let lines = wrap_words(&card.instruction, inner, TEXT_SCALE);
    let counter = format!("step {} of {}", card.step, card.steps);
    // The title in large letters when it fits on one line, else smaller and wrapped; the
    // status wrapped too: nothing is cut off at the card's edge.
    let title_scale = if text_width(&card.title, TITLE_SCALE) <= inner {
        TITLE_SCALE
    } else {
        TEXT_SCALE
    };
    let title_lines = wrap_words(&card.title, inner, title_scale);
    let title_h = GLYPH * title_scale + 8;
    let status_lines = wrap_words(&card.status, inner, TEXT_SCALE);
    let height = PAD
        + GLYPH * 2
        + 10
        + title_h * title_lines.len() as u32
        + 8
        + line_h * lines.len() as u32
        + 8
        + line_h * status_lines.len() as u32
        + BAR
        + PAD;
    let mut image = RgbaImage::filled(width, height, CARD);
    let mut y = PAD;
    draw_text(&mut image, PAD, y, &counter, 2, MUTED);
    y += GLYPH * 2 + 10;
    for line in &title_lines {
        draw_text(&mut image, PAD, y, line, title_scale, TEXT);
        y += title_h;
    }
    y += 8;
    for line in &lines {
        draw_text(&mut image, PAD, y, line, TEXT_SCALE, TEXT);
        y += line_h;
    }
    y += 8;
    for line in &status_lines {
        draw_text(&mut image, PAD, y, line, TEXT_SCALE, MUTED);
        y += line_h;
    }
    fill(
        &mut image,
        Rect {
            x: PAD,
            y,
            width: inner,
            height: BAR,
        },
        TRACK,
    );
    let progress = if card.progress.is_finite() {
        card.progress.clamp(0.0, 1.0)
    } else {
        0.0
    };
    fill(
        &mut image,
        Rect {
            x: PAD,
            y,
            width: (inner as f32 * progress).round() as u32,
            height: BAR,
        },
        FILL,
    );
    image
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(progress: f32) -> PromptCard {
        PromptCard {
            title: "Blink".into(),
            instruction: "Close both eyes fully, then open them again. Repeat a few times.".into(),
            status: "recording".into(),
            step: 2,
            steps: 21,
            progress,
        }
    }

    #[test]
    fn words_wrap_within_the_width() {
        let lines = wrap_words("one two three four five six", 8 * 3 * 9, 3);
        assert_eq!(lines, vec!["one two", "three", "four five", "six"]);
        for l in &lines {
            assert!(text_width(l, 3) <= 8 * 3 * 9);
        }
        assert_eq!(wrap_words("", 100, 1), Vec::<String>::new());
        assert_eq!(wrap_words("abcdefghij", 8 * 4, 1), vec!["abcd"]);
    }

    #[test]
    fn long_titles_and_statuses_wrap_inside_the_card() {
        let long = PromptCard {
            title: "Waiting for the phone".into(),
            status: "done: review the summary in the terminal".into(),
            ..card(0.5)
        };
        let image = render_prompt(&long, 320);
        // Nothing is drawn into the right padding: every line ends inside the card.
        for y in 0..image.height {
            for x in image.width - PAD + 1..image.width {
                assert_eq!(
                    image.pixel(x, y),
                    CARD,
                    "text at ({x}, {y}) spills past the edge"
                );
            }
        }
        assert!(
            image.height > render_prompt(&card(0.5), 320).height,
            "the card grew"
        );
    }

    #[test]
    fn progress_bar_fills_in_proportion() {
        let empty = render_prompt(&card(0.0), 500);
        let half = render_prompt(&card(0.5), 500);
        let full = render_prompt(&card(f32::NAN), 500);
        assert_eq!((empty.width, empty.height), (half.width, half.height));
        let bar_y = half.height - PAD - BAR / 2;
        let inner = half.width - 2 * PAD;
        assert_eq!(half.pixel(PAD + inner / 4, bar_y), FILL);
        assert_eq!(half.pixel(PAD + inner * 3 / 4, bar_y), TRACK);
        assert_eq!(empty.pixel(PAD + 1, bar_y), TRACK);
        assert_eq!(
            full.pixel(PAD + 1, bar_y),
            TRACK,
            "NaN progress shows as empty"
        );
    }

    #[test]
    fn card_fits_narrow_and_wide_stages() {
        assert_eq!(prompt_width(640), 320);
        assert_eq!(prompt_width(1280), 426);
        assert_eq!(prompt_width(3840), 520);
        assert_eq!(render_prompt(&card(0.3), 200).width, 320);
        assert_eq!(prompt_placement((1280, 720), 300), (24, 210));
        assert_eq!(prompt_placement((1280, 200), 300), (24, 0));
        let c = render_prompt(&card(0.3), prompt_width(1280));
        let text_pixels = c.data.chunks_exact(4).filter(|p| *p == TEXT).count();
        assert!(text_pixels > 500, "title and instruction are drawn");
    }
}

//! The sheet's labelling: the title row with its badge legend, and each panel's label strip
//! with its name, caption and side badge.

use super::canvas::{fit, wrap};
use super::layout::{
    label_scale, name_area, SheetLayout, CAPTION_GAP, GAP, LABEL_PAD, LINE_GAP, TITLE_GAP,
    TITLE_PAD,
};
use super::{SheetEntry, Side};
use crate::image::RgbaImage;
use crate::text::{draw_text, fill, text_width, Rect, GLYPH};

/// Horizontal margin inside a label strip and the title row, in pixels.
const MARGIN: u32 = 6;

/// Label strip colour.
const LABEL_COLOR: [u8; 4] = [35, 39, 46, 255];
/// Target names and the title.
const TEXT_COLOR: [u8; 4] = [236, 239, 243, 255];
/// Captions (channel names, notes) and the title's details.
const CAPTION_COLOR: [u8; 4] = [141, 153, 166, 255];
/// Badge of the avatar's left side (blue, as rigs colour left controls).
const LEFT_COLOR: [u8; 4] = [47, 111, 214, 255];
/// Badge of the avatar's right side (red, as rigs colour right controls).
const RIGHT_COLOR: [u8; 4] = [210, 70, 60, 255];

/// Side length of a badge drawn at glyph `scale`.
fn badge_size(scale: u32) -> u32 {
    GLYPH * scale + 4
}

/// Draws a side badge with its top-left corner at (`x`, `y`).
fn draw_badge(image: &mut RgbaImage, x: u32, y: u32, side: Side, scale: u32) {
    let size = badge_size(scale);
    let color = match side {
        Side::Left => LEFT_COLOR,
        Side::Right => RIGHT_COLOR,
    };
    fill(
        image,
        Rect {
            x,
            y,
            width: size,
            height: size,
        },
        color,
    );
    let text = side.letter().to_string();
    // Glyphs sit in the left seven columns of their cell; nudge by one font pixel to centre.
    draw_text(image, x + 2 + scale / 2, y + 2, &text, scale, TEXT_COLOR);
}

/// Draws the label strip of `entry` into `rect` (as wide as the picture above it).
pub(super) fn draw_label(image: &mut RgbaImage, rect: Rect, entry: &SheetEntry) {
    fill(image, rect, LABEL_COLOR);
    let scale = label_scale(rect.width);
    let badge = badge_size(scale);
    let area_top = rect.y + LABEL_PAD;
    // Without a caption the name has the whole strip.
    let area = if entry.caption.is_some() {
        name_area(scale)
    } else {
        rect.height.saturating_sub(2 * LABEL_PAD)
    };
    // Names are centred in what the badge leaves free.
    let reserved = if entry.side.is_some() { badge + 4 } else { 0 };
    let room = rect.width.saturating_sub(2 * MARGIN + reserved);
    let room_x = match entry.side {
        Some(side) if !side.on_viewers_right() => rect.x + MARGIN + reserved,
        _ => rect.x + MARGIN,
    };
    let name = wrap(&entry.name, room, scale);
    let lines = name.lines.len() as u32;
    let block = lines * GLYPH * name.scale + lines.saturating_sub(1) * LINE_GAP * name.scale;
    let mut y = area_top + area.saturating_sub(block) / 2;
    for line in &name.lines {
        let width = text_width(line, name.scale);
        let x = room_x + room.saturating_sub(width) / 2;
        draw_text(image, x, y, line, name.scale, TEXT_COLOR);
        y += (GLYPH + LINE_GAP) * name.scale;
    }
    if let Some(caption) = &entry.caption {
        let room = rect.width.saturating_sub(2 * MARGIN);
        // On narrow panels the channel name matters more than the word saying it is one.
        let text = match caption.strip_prefix("ARKit ") {
            Some(rest) if text_width(caption, 1) > room => rest,
            _ => caption.as_str(),
        };
        let line = fit(text, room, 1);
        let width = text_width(&line.text, 1);
        draw_text(
            image,
            rect.x + rect.width.saturating_sub(width) / 2,
            area_top + area + CAPTION_GAP,
            &line.text,
            1,
            CAPTION_COLOR,
        );
    }
    if let Some(side) = entry.side {
        let x = if side.on_viewers_right() {
            rect.right().saturating_sub(MARGIN + badge)
        } else {
            rect.x + MARGIN
        };
        draw_badge(
            image,
            x,
            area_top + area.saturating_sub(badge) / 2,
            side,
            scale,
        );
    }
}

/// Draws the title row: the title and the summary on the left, the badge legend on the right
/// when some panel is sided and there is room for it.
pub(super) fn draw_title(
    image: &mut RgbaImage,
    layout: &SheetLayout,
    title: &str,
    summary: &str,
    sided: bool,
) {
    let rect = layout.title;
    let scale = label_scale(layout.panel);
    let left = rect.x + GAP + MARGIN;
    let heading_y = rect.y + TITLE_PAD;
    let detail_y = heading_y + GLYPH * (scale + 1) + TITLE_GAP;
    let legend_left = "avatar's left   ";
    let legend_right = "avatar's right";
    let legend_note = "front view: the avatar's left is on your right";
    let badge = badge_size(scale);
    let legend_width =
        (2 * (badge + 4) + text_width(legend_left, scale) + text_width(legend_right, scale))
            .max(text_width(legend_note, scale));
    let full = rect.width.saturating_sub(2 * (GAP + MARGIN));
    let with_legend = full.saturating_sub(legend_width + 24);
    let show_legend = sided && with_legend >= text_width(summary, scale).min(240 * scale);
    let room = if show_legend { with_legend } else { full };
    let heading = fit(title, room, scale + 1);
    draw_text(
        image,
        left,
        heading_y,
        &heading.text,
        heading.scale,
        TEXT_COLOR,
    );
    let detail = fit(summary, room, scale);
    draw_text(
        image,
        left,
        detail_y,
        &detail.text,
        detail.scale,
        CAPTION_COLOR,
    );
    if show_legend {
        let start = rect.right().saturating_sub(GAP + MARGIN + legend_width);
        let badge_y = heading_y + (GLYPH * (scale + 1)).saturating_sub(badge) / 2;
        let text_y = badge_y + 2;
        let mut x = start;
        for (side, text) in [(Side::Left, legend_left), (Side::Right, legend_right)] {
            draw_badge(image, x, badge_y, side, scale);
            x += badge + 4;
            draw_text(image, x, text_y, text, scale, CAPTION_COLOR);
            x += text_width(text, scale);
        }
        draw_text(image, start, detail_y, legend_note, scale, CAPTION_COLOR);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sheet::layout::label_height;
    use crate::sheet::{Drive, SheetOptions, SHEET_COLOR};

    /// Pixels of `rect` whose colour is `rgba`.
    fn count(image: &RgbaImage, rect: Rect, rgba: [u8; 4]) -> usize {
        (rect.y..rect.bottom())
            .flat_map(|y| (rect.x..rect.right()).map(move |x| (x, y)))
            .filter(|&(x, y)| image.pixel(x, y) == rgba)
            .count()
    }

    #[test]
    fn labels_put_the_badge_on_the_side_the_face_shows_it() {
        for (panel, side) in [
            (256, Side::Left),
            (256, Side::Right),
            (96, Side::Left),
            (96, Side::Right),
        ] {
            let rect = Rect {
                x: 0,
                y: 0,
                width: panel,
                height: label_height(panel),
            };
            let mut image = RgbaImage::filled(panel, rect.height, [0, 0, 0, 255]);
            let entry = SheetEntry {
                name: "mouthLowerDownLeft".to_owned(),
                caption: Some("ARKit mouthLowerDownLeft".to_owned()),
                side: Some(side),
                drive: Drive::Weights,
                targets: Vec::new(),
            };
            draw_label(&mut image, rect, &entry);
            let half = panel / 2;
            let left = Rect {
                width: half,
                ..rect
            };
            let right = Rect {
                x: half,
                width: half,
                ..rect
            };
            let color = match side {
                Side::Left => LEFT_COLOR,
                Side::Right => RIGHT_COLOR,
            };
            let (l, r) = (count(&image, left, color), count(&image, right, color));
            match side {
                Side::Left => assert!(r > 0 && l == 0, "{panel} {side:?}: {l} {r}"),
                Side::Right => assert!(l > 0 && r == 0, "{panel} {side:?}: {l} {r}"),
            }
            assert!(count(&image, rect, TEXT_COLOR) > 50);
            assert!(count(&image, rect, CAPTION_COLOR) > 20);
        }
    }

    #[test]
    fn the_title_row_fits_narrow_and_wide_sheets() {
        for columns in [1, 8] {
            let options = SheetOptions {
                panel: 64,
                columns,
                ..SheetOptions::default()
            };
            let layout = SheetLayout::new(20, &options).unwrap();
            let mut image = RgbaImage::filled(layout.width, layout.height, SHEET_COLOR);
            draw_title(
                &mut image,
                &layout,
                "a very long model name that cannot possibly fit.glb",
                "52 morph targets, 52/52 ARKit channels; all at weight 1",
                true,
            );
            assert!(count(&image, layout.title, TEXT_COLOR) > 30);
            // Nothing spills under the title row.
            let below = Rect {
                x: 0,
                y: layout.title.bottom(),
                width: layout.width,
                height: layout.height - layout.title.bottom(),
            };
            assert_eq!(
                count(&image, below, SHEET_COLOR) as u32,
                below.width * below.height
            );
        }
    }
}

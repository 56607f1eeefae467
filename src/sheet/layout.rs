//! Where everything goes on a sheet: the grid of pictures and label strips under the title
//! row, and the heights of the title row and the label strips.

use super::{SheetError, SheetOptions, MAX_SHEET_SIDE};
use crate::text::{Rect, GLYPH};

/// Space around and between cells, in pixels.
pub(super) const GAP: u32 = 4;
/// Padding above and below the title row's text, in pixels.
pub(super) const TITLE_PAD: u32 = 8;
/// Space between the title and its detail line, in pixels.
pub(super) const TITLE_GAP: u32 = 6;
/// Panels at least this wide get 2x names and badges.
const BIG_LABEL_PANEL: u32 = 192;
/// Padding above and below the text of a label strip, in pixels.
pub(super) const LABEL_PAD: u32 = 5;
/// Space between the two lines of a wrapped name at scale 1, in pixels.
pub(super) const LINE_GAP: u32 = 2;
/// Space between the name and the caption, in pixels.
pub(super) const CAPTION_GAP: u32 = 4;

/// Where everything goes on a sheet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SheetLayout {
    /// Sheet width in pixels.
    pub width: u32,
    /// Sheet height in pixels.
    pub height: u32,
    /// Panels per row.
    pub columns: u32,
    /// Rows of panels.
    pub rows: u32,
    /// Picture size in pixels (square).
    pub panel: u32,
    /// Number of panels.
    pub panels: usize,
    /// The title row.
    pub title: Rect,
    /// Height of the label strip under each picture, in pixels.
    pub label_height: u32,
}

/// Glyph scale of names and badges for pictures `panel` pixels wide: 2x from
/// [`BIG_LABEL_PANEL`] up, else 1x. One scale for the whole sheet keeps the labels even; a name
/// that two lines cannot hold at 2x drops to 1x on its own.
pub(super) fn label_scale(panel: u32) -> u32 {
    if panel >= BIG_LABEL_PANEL {
        2
    } else {
        1
    }
}

/// Height of the name area of a label strip: two lines of names at `scale`.
pub(super) fn name_area(scale: u32) -> u32 {
    2 * GLYPH * scale + LINE_GAP * scale
}

/// Height of the title row over pictures `panel` pixels wide: the title one scale above the
/// labels, the detail line at the labels' scale.
pub(super) fn title_height(panel: u32) -> u32 {
    let scale = label_scale(panel);
    2 * TITLE_PAD + GLYPH * (scale + 1) + TITLE_GAP + GLYPH * scale
}

/// Height of a label strip for pictures `panel` pixels wide: padding, two name lines, the
/// caption.
pub(super) fn label_height(panel: u32) -> u32 {
    LABEL_PAD + name_area(label_scale(panel)) + CAPTION_GAP + GLYPH + LABEL_PAD
}

impl SheetLayout {
    /// The layout of `panels` panels under `options` (which must be valid).
    pub fn new(panels: usize, options: &SheetOptions) -> Result<SheetLayout, SheetError> {
        options.validate()?;
        let count = panels.max(1) as u64;
        let columns = u64::from(options.columns).min(count);
        let rows = count.div_ceil(columns);
        let panel = u64::from(options.panel);
        let gap = u64::from(GAP);
        let width = columns * (panel + gap) + gap;
        let label = u64::from(label_height(options.panel));
        let title = title_height(options.panel);
        let height = u64::from(title) + rows * (panel + label + gap) + gap;
        let limit = u64::from(MAX_SHEET_SIDE);
        if width > limit || height > limit {
            return Err(SheetError::TooLarge {
                panels,
                width,
                height,
            });
        }
        Ok(SheetLayout {
            width: width as u32,
            height: height as u32,
            columns: columns as u32,
            rows: rows as u32,
            panel: options.panel,
            panels,
            title: Rect {
                x: 0,
                y: 0,
                width: width as u32,
                height: title,
            },
            label_height: label as u32,
        })
    }

    /// The cell (picture and label) of panel `index`, row by row.
    fn cell(&self, index: usize) -> (u32, u32) {
        let column = index as u32 % self.columns;
        let row = index as u32 / self.columns;
        (
            GAP + column * (self.panel + GAP),
            self.title.bottom() + row * (self.panel + self.label_height + GAP),
        )
    }

    /// The picture of panel `index`.
    pub fn picture(&self, index: usize) -> Rect {
        let (x, y) = self.cell(index);
        Rect {
            x,
            y,
            width: self.panel,
            height: self.panel,
        }
    }

    /// The label strip under the picture of panel `index`.
    pub fn label(&self, index: usize) -> Rect {
        let (x, y) = self.cell(index);
        Rect {
            x,
            y: y + self.panel,
            width: self.panel,
            height: self.label_height,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_is_a_grid_under_the_title() {
        let options = SheetOptions {
            panel: 128,
            ..SheetOptions::default()
        };
        let layout = SheetLayout::new(53, &options).unwrap();
        assert_eq!((layout.columns, layout.rows), (8, 7));
        assert_eq!(layout.width, 8 * (128 + GAP) + GAP);
        assert_eq!(
            layout.height,
            title_height(128) + 7 * (128 + label_height(128) + GAP) + GAP
        );
        let mut rects = Vec::new();
        for i in 0..53 {
            let (p, l) = (layout.picture(i), layout.label(i));
            assert_eq!((p.width, p.height), (128, 128));
            assert_eq!((l.x, l.y), (p.x, p.bottom()));
            assert!(p.y >= layout.title.bottom());
            assert!(l.right() <= layout.width && l.bottom() <= layout.height);
            rects.push(Rect {
                height: p.height + l.height,
                ..p
            });
        }
        for (i, a) in rects.iter().enumerate() {
            for b in &rects[i + 1..] {
                let apart =
                    a.right() <= b.x || b.right() <= a.x || a.bottom() <= b.y || b.bottom() <= a.y;
                assert!(apart, "{a:?} overlaps {b:?}");
            }
        }
        assert_eq!(layout.picture(8).x, layout.picture(0).x);
        assert!(layout.picture(8).y > layout.picture(0).y);
        // Fewer panels than columns: the sheet narrows to them.
        let small = SheetLayout::new(3, &options).unwrap();
        assert_eq!(small.columns, 3);
        assert_eq!(small.rows, 1);
    }
}

//! Where the control panel opens: inside the screen that holds the stage, beside the stage when
//! there is room, else over it.

/// A rectangle on the desktop, in physical pixels: left, top, width, height.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Area {
    /// Left edge.
    pub x: i32,
    /// Top edge.
    pub y: i32,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

impl Area {
    fn right(self) -> i32 {
        self.x.saturating_add_unsigned(self.width)
    }

    fn bottom(self) -> i32 {
        self.y.saturating_add_unsigned(self.height)
    }
}

/// The gap between the stage and the panel beside it.
const GAP: i32 = 8;

/// The top-left corner for a panel of `size` next to `stage` on `screen`: to the right of the
/// stage if it fits there, else to its left, else over the stage at the screen's right edge;
/// always moved
/// so that as much of the panel as possible lies on the screen (its top-left corner first).
pub fn panel_position(stage: Area, screen: Area, size: (u32, u32)) -> (i32, i32) {
    let (w, h) = (size.0 as i32, size.1 as i32);
    let x = if stage.right() + GAP + w <= screen.right() {
        stage.right() + GAP
    } else if stage.x - GAP - w >= screen.x {
        stage.x - GAP - w
    } else {
        // Over the stage, at the screen's right edge: the face in the middle stays visible.
        screen.right() - w
    };
    let clamp = |v: i32, lo: i32, hi: i32| v.min(hi).max(lo);
    (
        clamp(x, screen.x, screen.right() - w),
        clamp(stage.y, screen.y, screen.bottom() - h),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCREEN: Area = Area {
        x: 0,
        y: 0,
        width: 1920,
        height: 1080,
    };

    fn stage(x: i32, y: i32) -> Area {
        Area {
            x,
            y,
            width: 1280,
            height: 720,
        }
    }

    #[test]
    fn beside_the_stage_when_there_is_room_else_over_it() {
        // A 1280-wide stage at the left of a 1920-wide screen leaves 640: too little for 900.
        assert_eq!(panel_position(stage(0, 0), SCREEN, (900, 760)), (1020, 0));
        // A narrower panel fits to the right.
        assert_eq!(panel_position(stage(0, 40), SCREEN, (600, 760)), (1288, 40));
        // A stage at the right leaves room on its left.
        let right = Area {
            x: 1000,
            ..stage(0, 0)
        };
        let right = Area {
            width: 900,
            ..right
        };
        assert_eq!(panel_position(right, SCREEN, (900, 760)), (92, 0));
    }

    #[test]
    fn the_panel_stays_on_the_screen_that_holds_the_stage() {
        // A second screen to the right of the first.
        let second = Area { x: 1920, ..SCREEN };
        let (x, y) = panel_position(stage(1920 + 600, 500), second, (900, 760));
        assert!(x >= 1920 && x + 900 <= 1920 + 1920, "{x}");
        assert!(y >= 0 && y + 760 <= 1080, "{y}");
        // A screen smaller than the panel: its top-left corner stays visible.
        let small = Area {
            width: 800,
            height: 600,
            ..SCREEN
        };
        assert_eq!(panel_position(stage(0, 0), small, (900, 760)), (0, 0));
    }
}

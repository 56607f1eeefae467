//! Where the stage and the control panel open: both on the screen that holds the stage, side by
//! side without overlapping whenever the screen allows it.
//!
//! At first start the stage takes the screen's top-left corner and the panel the room beside
//! it, narrowed to that room (its rows wrap) down to [`PANEL_MIN_WIDTH`]; a screen too small
//! even for that gets a smaller stage (its aspect kept). A panel opened later goes beside the
//! stage where it fits, else over the stage at the screen's right edge.

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

    /// Whether the two share any pixel.
    pub fn overlaps(self, other: Area) -> bool {
        self.x < other.right()
            && other.x < self.right()
            && self.y < other.bottom()
            && other.y < self.bottom()
    }

    /// Whether it lies wholly inside `outer`.
    pub fn inside(self, outer: Area) -> bool {
        self.x >= outer.x
            && self.y >= outer.y
            && self.right() <= outer.right()
            && self.bottom() <= outer.bottom()
    }
}

/// The gap between the stage and the panel beside it; it also leaves room for the window
/// manager's borders.
const GAP: i32 = 8;

/// Room kept under a window for the window manager's title bar and a taskbar.
const FRAME: u32 = 48;

/// The narrowest the panel opens at: every section still fits, its rows wrapped.
pub const PANEL_MIN_WIDTH: u32 = 560;

/// The lowest the panel opens at.
const PANEL_MIN_HEIGHT: u32 = 420;

/// The panel's height on `screen`: `preferred`, or less so that it fits with its frame.
fn panel_height(screen: Area, preferred: u32) -> u32 {
    preferred
        .min(screen.height.saturating_sub(FRAME))
        .max(PANEL_MIN_HEIGHT.min(screen.height))
}

/// The panel beside `stage` on `screen`: to its right, else to its left, as wide as `preferred`
/// or as the room there allows (not below [`PANEL_MIN_WIDTH`]); `None` when neither side has
/// that much room.
fn beside(stage: Area, screen: Area, preferred: (u32, u32)) -> Option<Area> {
    let height = panel_height(screen, preferred.1);
    let y = stage.y.min(screen.bottom() - height as i32).max(screen.y);
    let right_room = screen.right() - stage.right() - GAP;
    let left_room = stage.x - GAP - screen.x;
    let fits = |room: i32| room >= PANEL_MIN_WIDTH as i32;
    let width = |room: i32| preferred.0.min(room as u32);
    if fits(right_room) {
        Some(Area {
            x: stage.right() + GAP,
            y,
            width: width(right_room),
            height,
        })
    } else if fits(left_room) {
        let w = width(left_room);
        Some(Area {
            x: stage.x - GAP - w as i32,
            y,
            width: w,
            height,
        })
    } else {
        None
    }
}

/// The panel's place and size for `stage`, already open on `screen`: beside it if there is room
/// (see [`beside`]), else over the stage at the screen's right edge at `preferred` size (the
/// face in the middle stays visible); always moved so that as much of it as possible lies on
/// the screen, its top-left corner first.
pub fn panel_area(stage: Area, screen: Area, preferred: (u32, u32)) -> Area {
    if let Some(area) = beside(stage, screen, preferred) {
        return area;
    }
    let height = panel_height(screen, preferred.1);
    let (w, h) = (preferred.0 as i32, height as i32);
    let clamp = |v: i32, lo: i32, hi: i32| v.min(hi).max(lo);
    Area {
        x: clamp(screen.right() - w, screen.x, screen.right() - w),
        y: clamp(stage.y, screen.y, screen.bottom() - h),
        width: preferred.0,
        height,
    }
}

/// Where the stage (`stage` inner size) and the panel (`preferred` size) open together on
/// `screen`: the stage at the screen's top-left corner, the panel beside it (see [`beside`]).
/// When even the narrowest panel has no room beside it, the stage is made smaller, keeping its
/// aspect, so that both fit; the second value says whether it was.
pub fn first_start(screen: Area, stage: (u32, u32), preferred: (u32, u32)) -> (Area, Area, bool) {
    let (sw, sh) = (stage.0.max(1), stage.1.max(1));
    // The stage's height with its title bar fits the screen, its width leaves the panel room.
    let max_w = screen
        .width
        .saturating_sub(PANEL_MIN_WIDTH + GAP as u32)
        .max(1);
    let max_h = screen.height.saturating_sub(FRAME).max(1);
    let scale = (max_w as f64 / sw as f64)
        .min(max_h as f64 / sh as f64)
        .min(1.0);
    let shrunk = scale < 1.0;
    let stage = Area {
        x: screen.x,
        y: screen.y,
        width: ((sw as f64 * scale).floor() as u32).max(1),
        height: ((sh as f64 * scale).floor() as u32).max(1),
    };
    let panel = panel_area(stage, screen, preferred);
    (stage, panel, shrunk)
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

    const PANEL: (u32, u32) = (900, 760);

    fn stage(x: i32, y: i32) -> Area {
        Area {
            x,
            y,
            width: 1280,
            height: 720,
        }
    }

    #[test]
    fn beside_the_stage_narrowed_to_the_room_there() {
        // A 1280-wide stage at the left of a 1920-wide screen leaves 632: the panel takes it.
        let panel = panel_area(stage(0, 0), SCREEN, PANEL);
        assert_eq!(
            panel,
            Area {
                x: 1288,
                y: 0,
                width: 632,
                height: 760
            }
        );
        assert!(!panel.overlaps(stage(0, 0)) && panel.inside(SCREEN));
        // A narrower panel keeps its width.
        assert_eq!(panel_area(stage(0, 40), SCREEN, (600, 760)).width, 600);
        // A stage at the right leaves room on its left.
        let right = Area {
            x: 1000,
            width: 900,
            ..stage(0, 0)
        };
        let panel = panel_area(right, SCREEN, PANEL);
        assert_eq!((panel.x, panel.width), (92, 900));
        // No room either side: over the stage, at the screen's right edge.
        let middle = Area {
            x: 400,
            ..stage(0, 0)
        };
        assert_eq!(panel_area(middle, SCREEN, PANEL).x, 1920 - 900);
    }

    #[test]
    fn the_panel_stays_on_the_screen_that_holds_the_stage() {
        // A second screen to the right of the first.
        let second = Area { x: 1920, ..SCREEN };
        let panel = panel_area(stage(1920 + 600, 500), second, PANEL);
        assert!(panel.inside(second), "{panel:?}");
        // A screen lower than the panel: it is made lower to fit.
        let small = Area {
            width: 800,
            height: 600,
            ..SCREEN
        };
        let panel = panel_area(stage(0, 0), small, PANEL);
        assert_eq!((panel.x, panel.y), (0, 0));
        assert_eq!(panel.height, 600 - FRAME);
    }

    #[test]
    fn at_first_start_both_are_on_the_screen_and_apart() {
        for (width, height) in [
            (1920, 1080),
            (2560, 1440),
            (1600, 900),
            (1366, 768),
            (1280, 720),
        ] {
            let screen = Area {
                x: 0,
                y: 0,
                width,
                height,
            };
            let (stage, panel, shrunk) = first_start(screen, (1280, 720), PANEL);
            assert!(stage.inside(screen), "{width}x{height}: {stage:?}");
            assert!(panel.inside(screen), "{width}x{height}: {panel:?}");
            assert!(
                !stage.overlaps(panel),
                "{width}x{height}: {stage:?} {panel:?}"
            );
            assert!(panel.width >= PANEL_MIN_WIDTH);
            // The stage keeps its size where it fits, and its aspect always.
            assert_eq!(shrunk, stage.width < 1280, "{width}x{height}");
            let aspect = stage.width as f64 / stage.height as f64;
            assert!(
                (aspect - 16.0 / 9.0).abs() < 0.01,
                "{width}x{height}: {aspect}"
            );
        }
        let (stage, panel, shrunk) = first_start(SCREEN, (1280, 720), PANEL);
        assert!(!shrunk);
        assert_eq!((stage.x, stage.y, stage.width), (0, 0, 1280));
        assert_eq!((panel.x, panel.width), (1288, 632));
    }
}

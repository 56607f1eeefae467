//! Where the stage and the control panel open on the desktop (see [`crate::app::placement`]).

use winit::event_loop::ActiveEventLoop;
use winit::monitor::MonitorHandle;

use super::StageApp;
use crate::app::{first_start, panel_area, Area};
use crate::render;

/// The area `monitor` covers on the desktop.
fn screen(monitor: &MonitorHandle) -> Area {
    Area {
        x: monitor.position().x,
        y: monitor.position().y,
        width: monitor.size().width,
        height: monitor.size().height,
    }
}

/// Places the stage about to open (`opts`) and the panel that opens with it side by side on the
/// primary screen, both on it, and returns the panel's area; the stage opens smaller on a screen
/// too small for both (said in the log).
pub(super) fn lay_out_with_panel(
    event_loop: &ActiveEventLoop,
    opts: &mut render::window::WindowOptions,
) -> Option<Area> {
    let monitor = event_loop
        .primary_monitor()
        .or_else(|| event_loop.available_monitors().next())?;
    let screen = screen(&monitor);
    let panel = render::panel::PanelOptions::default();
    let (stage, area, shrunk) = first_start(
        screen,
        (opts.width, opts.height),
        (panel.width, panel.height),
    );
    if shrunk {
        tracing::info!(
            screen = %format!("{}x{}", screen.width, screen.height),
            stage = %format!("{}x{}", stage.width, stage.height),
            "the stage opens smaller so that the control panel fits beside it; P hides the \
             panel, and [window] width and height set the stage's size"
        );
    }
    opts.position = Some((stage.x, stage.y));
    opts.width = stage.width;
    opts.height = stage.height;
    Some(area)
}

impl StageApp {
    /// The panel's window: where it was laid out with the stage at first start; else beside the
    /// stage if the stage's screen has room, else over it; never off the screen (window
    /// managers may still move it).
    pub(super) fn panel_options(&mut self) -> render::panel::PanelOptions {
        let defaults = render::panel::PanelOptions::default();
        let area = self.panel.area.take().or_else(|| {
            let window = self.display.window.as_ref()?.window();
            let at = window.outer_position().ok()?;
            let size = window.outer_size();
            let stage = Area {
                x: at.x,
                y: at.y,
                width: size.width,
                height: size.height,
            };
            let screen = window.current_monitor().map_or(stage, |m| screen(&m));
            Some(panel_area(stage, screen, (defaults.width, defaults.height)))
        });
        match area {
            Some(area) => render::panel::PanelOptions {
                position: Some((area.x, area.y)),
                width: area.width,
                height: area.height,
                ..defaults
            },
            None => defaults,
        }
    }
}

//! The control panel's window: a second winit window with its own GL context, painting egui
//! through `egui_glow` and taking input through `egui-winit`. What it shows is
//! [`crate::panel`]'s; this module only hosts it.
//!
//! The panel never waits for vertical blank (that would halve the stage's rate when both
//! windows swap); the application redraws it a few times a second and on input.

use std::sync::Arc;
use std::time::Duration;

use winit::event::WindowEvent;
use winit::event_loop::ActiveEventLoop;
use winit::window::WindowId;

use super::window::{GlWindow, WindowOptions};
use super::RenderError;
use crate::image::RgbaImage;

/// The panel's window, its egui context, input state and painter.
pub struct PanelWindow {
    /// egui's painter (its GL objects are deleted in `Drop`, with the context current).
    painter: egui_glow::Painter,
    /// Input from winit, turned into egui's.
    input: egui_winit::State,
    /// The egui context.
    ctx: egui::Context,
    /// The window and its context (dropped after the painter).
    window: GlWindow,
}

impl std::fmt::Debug for PanelWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PanelWindow")
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}

/// How the panel looks on screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PanelOptions {
    /// The window title.
    pub title: String,
    /// Inner width in physical pixels.
    pub width: u32,
    /// Inner height in physical pixels.
    pub height: u32,
    /// Where to place it (`None`: where the window manager puts it).
    pub position: Option<(i32, i32)>,
}

impl Default for PanelOptions {
    fn default() -> Self {
        PanelOptions {
            title: "facewire panel".into(),
            width: 900,
            height: 760,
            position: None,
        }
    }
}

impl PanelWindow {
    /// Opens the panel window. Leaves its context current.
    pub fn create(
        event_loop: &ActiveEventLoop,
        options: &PanelOptions,
    ) -> Result<PanelWindow, RenderError> {
        let window = super::window::create(
            event_loop,
            &WindowOptions {
                title: options.title.clone(),
                width: options.width,
                height: options.height,
                transparent: false,
                vsync: false,
                position: options.position,
                // egui smooths its own edges; samples would only cost time.
                multisample: false,
            },
        )?;
        let gl = Arc::new(window.load_egui_gl());
        // No dithering: it only moves gradients and soft edges by a fraction of a level (the
        // panel's flat fills are left alone), and on a software rasteriser its noise per
        // fragment cost about a tenth of each refresh.
        let painter =
            egui_glow::Painter::new(gl, "", None, false).map_err(|e| RenderError::Create {
                what: "egui painter",
                message: e.to_string(),
            })?;
        let ctx = egui::Context::default();
        let input = egui_winit::State::new(
            ctx.clone(),
            egui::ViewportId::ROOT,
            event_loop,
            Some(window.window().scale_factor() as f32),
            event_loop.system_theme(),
            Some(painter.max_texture_side()),
        );
        Ok(PanelWindow {
            painter,
            input,
            ctx,
            window,
        })
    }

    /// Asks for a redraw (a `RedrawRequested` event for this window).
    pub fn request_redraw(&self) {
        self.window.window().request_redraw();
    }

    /// The window's id, to route events.
    pub fn id(&self) -> WindowId {
        self.window.window().id()
    }

    /// Passes a window event to egui. Returns whether the panel should be redrawn.
    pub fn on_event(&mut self, event: &WindowEvent) -> bool {
        if let WindowEvent::Resized(size) = event {
            self.window.resize(size.width, size.height);
        }
        self.input
            .on_window_event(self.window.window(), event)
            .repaint
    }

    /// Runs `ui` for one frame and draws the result. With `capture`, also returns the frame as
    /// an image (read before it is shown). Returns when egui wants the next frame at the
    /// latest (animations), or `None`.
    pub fn draw(
        &mut self,
        ui: impl FnMut(&mut egui::Ui),
        capture: bool,
    ) -> Result<(Option<Duration>, Option<RgbaImage>), RenderError> {
        let (width, height) = self.window.size();
        if width == 0 || height == 0 {
            // Minimised: nothing to show, and egui's input waits for the next frame.
            return Ok((None, None));
        }
        self.window.make_current()?;
        let window = self.window.window();
        let raw = self.input.take_egui_input(window);
        let mut output = self.ctx.run_ui(raw, ui);
        self.input
            .handle_platform_output(window, std::mem::take(&mut output.platform_output));
        let clipped = self.ctx.tessellate(output.shapes, output.pixels_per_point);
        self.window.bind();
        let background = self
            .ctx
            .global_style()
            .visuals
            .panel_fill
            .to_normalized_gamma_f32();
        self.painter.clear([width, height], background);
        self.painter.paint_and_update_textures(
            [width, height],
            output.pixels_per_point,
            &clipped,
            &mut output.textures_delta,
        );
        let image = capture.then(|| self.window.read_rgba());
        self.window.swap_buffers()?;
        let delay = output
            .viewport_output
            .get(&egui::ViewportId::ROOT)
            .map(|v| v.repaint_delay)
            .filter(|d| *d < Duration::from_secs(3600));
        Ok((delay, image))
    }
}

impl Drop for PanelWindow {
    fn drop(&mut self) {
        if let Err(error) = self.window.make_current() {
            tracing::warn!(%error, "panel context could not be made current to clean up");
        }
        self.painter.destroy();
    }
}

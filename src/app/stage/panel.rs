//! The control panel beside the stage: opening and closing its window, the model it draws from
//! the telemetry and the controls, and drawing it.

use std::time::{Duration, Instant};

use winit::event_loop::ActiveEventLoop;

use super::StageApp;
use crate::app::motion::MotionMode;
use crate::app::STAGE_HOTKEYS;
use crate::control::telemetry::InputCounters;
use crate::diagnostic::with_causes;
use crate::panel::{PanelModel, Timings};
use crate::render;

impl StageApp {
    pub(super) fn open_panel(&mut self, event_loop: &ActiveEventLoop) {
        self.panel.wanted = false;
        let options = self.panel_options();
        match render::panel::PanelWindow::create(event_loop, &options) {
            Ok(panel) => {
                tracing::info!("control panel open");
                self.panel.window = Some(panel);
                self.panel.due = Instant::now();
                self.watch_frame_rate();
            }
            Err(error) => {
                tracing::warn!(error = %with_causes(&error), "the control panel cannot open; the stage runs without it");
            }
        }
    }

    pub(super) fn close_panel(&mut self) {
        self.panel.window = None;
        self.panel.wanted = false;
        self.watch_frame_rate();
        tracing::info!("control panel closed (P on the stage opens it again)");
    }

    /// What the panel shows now.
    pub(super) fn panel_model(&mut self, now: Instant) -> Option<PanelModel> {
        let scene = self.display.scene.as_ref()?;
        let telemetry = self.telemetry.snapshot();
        let (mut counters, input, can_calibrate, profiles, profile) = match &self.controls {
            Some(c) => (
                c.counters(),
                c.input_label(),
                c.can_calibrate(),
                c.profiles(),
                c.profile(),
            ),
            None => (
                InputCounters::default(),
                String::new(),
                false,
                Vec::new(),
                None,
            ),
        };
        let (models, model) = self
            .controls
            .as_ref()
            .map(|c| (c.models(), c.model()))
            .unwrap_or_default();
        counters.dropped = self.frames.counters().snapshot().dropped;
        let rates = self.rates.update(now, counters);
        let fps = self
            .display
            .stats
            .interval
            .percentiles([50.0])
            .map(|[p50]| p50.as_secs_f64())
            .filter(|s| *s > 0.0)
            .map(|s| 1.0 / s);
        let look = if self.panel.state.tab == crate::panel::Tab::Look {
            super::super::look::view(scene, &self.options.config.folder)
        } else {
            crate::panel::LookView::default()
        };
        Some(PanelModel {
            look,
            rows: crate::panel::channel_rows(
                &telemetry,
                scene.mapping(),
                scene.avatar(),
                scene.pose(),
            ),
            targets: crate::panel::target_weights(scene.avatar(), scene.pose()),
            avatar: format!(
                "{} ({:?} morph path)",
                scene.avatar().source,
                scene.morph_path()
            ),
            telemetry,
            counters,
            rates,
            input,
            timings: Timings {
                sample_age: self.display.stats.sample_age.percentiles([50.0, 99.0]),
                draw_time: self.display.stats.draw_time.percentiles([50.0, 99.0]),
                fps,
                motion_latency: (self.display.motion.settings().mode != MotionMode::Off)
                    .then(|| self.display.motion.latency()),
            },
            advice: self.display.advice.clone(),
            profiles,
            profile,
            models,
            model,
            can_calibrate,
            routine: self.routine.clone(),
            connect: self.cards.connect().map(|card| crate::panel::ConnectView {
                card: card.clone(),
                waiting: self.cards.waiting(),
                on_stage: self.cards.shown(),
                phone: self
                    .controls
                    .as_ref()
                    .map(|c| c.phone())
                    .unwrap_or_default(),
            }),
            hotkeys: STAGE_HOTKEYS,
            plugins: self.panel.plugins.waiting(),
            expressions: self
                .controls
                .as_ref()
                .map(|c| c.expressions())
                .unwrap_or_default(),
            now,
        })
    }

    /// Draws the panel; with `capture`, returns the frame drawn.
    pub(super) fn draw_panel(&mut self, capture: bool) -> Option<crate::image::RgbaImage> {
        let now = Instant::now();
        let model = self.panel_model(now)?;
        let panel = self.panel.window.as_mut()?;
        let state = &mut self.panel.state;
        let mut actions = Vec::new();
        let result = panel.draw(
            |ui| actions.extend(crate::panel::show(ui, &model, state)),
            capture,
        );
        self.display.stats.record_panel(now.elapsed());
        let image = match result {
            Ok((wanted, image)) => {
                if let Some(delay) = wanted {
                    self.panel.due = self
                        .panel
                        .due
                        .min(now + delay.max(Duration::from_millis(16)));
                }
                image
            }
            Err(error) => {
                tracing::warn!(error = %with_causes(&error), "the control panel failed to draw; closing it");
                self.panel.window = None;
                None
            }
        };
        for action in actions {
            self.act(action);
        }
        image
    }
}

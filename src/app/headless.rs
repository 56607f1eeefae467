//! The offscreen loop of `facewire run --headless` and what it reports on exit.

use std::time::{Duration, Instant};

use super::{wants_redraw, Scene};
use crate::app::motion::{Motion, MotionSettings};
use crate::bridge::FrameReceiver;
use crate::render::{self, DrawTarget};

/// What a headless run reports on exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct HeadlessReport {
    /// Frames rendered.
    pub frames_drawn: u64,
    /// Frames the ingest side committed.
    pub frames_received: u64,
    /// Frames dropped because the hand-off queue was full.
    pub frames_dropped: u64,
    /// Datagrams that were not valid OSC.
    pub malformed: u64,
    /// Age of the newest sample when a frame using it was drawn, in microseconds.
    pub sample_age_us: AgeStats,
    /// The tracking state at exit and how often it changed.
    pub tracking: crate::calibrate::TrackingSummary,
}

/// Median and 99th percentile of sample ages, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct AgeStats {
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
}

/// How a headless run draws: its frame rate and background.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadlessPace {
    /// Frames per second (0: as many as the renderer draws).
    pub fps: u32,
    /// Background colour (straight RGBA).
    pub background: [f32; 4],
    /// Whether the output keeps alpha (premultiplied).
    pub premultiplied: bool,
    /// Draw only the first frame and then when a new frame arrived or `before_draw` reported a
    /// change (`window.render_on_change`).
    pub render_on_change: bool,
    /// How frames are blended at draw time (`window.motion`).
    pub motion: crate::app::motion::MotionMode,
}

/// How many sample ages a headless run keeps for its report: ten minutes of a 60 Hz phone.
pub const AGE_WINDOW: usize = 36_000;

/// Renders offscreen at `pace.fps` until `until` returns true, calling `before_draw` (for
/// reloads at a frame boundary; it returns whether it changed anything) and taking the newest
/// frame from `frames` before each draw. With `pace.render_on_change`, a tick with neither a new
/// frame nor a change draws nothing. Returns the last image, the number of frames drawn and the
/// sample ages (microseconds) of the frames that used a new sample (the last [`AGE_WINDOW`] of
/// them, so that a run of hours keeps a bounded record).
pub fn run_headless(
    scene: &mut Scene,
    ctx: &render::headless::HeadlessContext,
    frames: &mut FrameReceiver,
    pace: &HeadlessPace,
    mut before_draw: impl FnMut(&mut Scene) -> bool,
    mut until: impl FnMut() -> bool,
) -> (crate::image::RgbaImage, u64, Vec<u64>) {
    // 0 frames per second: as many as the renderer can draw.
    let period = match pace.fps {
        0 => Duration::ZERO,
        fps => Duration::from_secs_f64(1.0 / fps as f64),
    };
    let (width, height) = ctx.size();
    let target = DrawTarget {
        width,
        height,
        clear_color: pace.background,
        alpha: pace.premultiplied,
    };
    let mut motion = Motion::new(MotionSettings {
        mode: pace.motion,
        ..MotionSettings::default()
    });
    let mut ages = Vec::new();
    let mut aged = 0usize;
    let mut drawn = 0u64;
    let mut next = Instant::now();
    let mut first = true;
    loop {
        let new_frame = frames.take_each(|f| motion.push(f));
        if let Some(frame) = new_frame {
            let age = frame.received.elapsed().as_micros() as u64;
            if ages.len() < AGE_WINDOW {
                ages.push(age);
            } else {
                ages[aged % AGE_WINDOW] = age;
            }
            aged += 1;
        }
        let now = Instant::now();
        let moving = motion.settles_at().is_some_and(|at| now <= at)
            || scene.springs_moving()
            || scene.model_moving(now);
        let changed = before_draw(scene) || first || moving;
        first = false;
        if wants_redraw(pace.render_on_change, new_frame.is_some(), changed) {
            scene.set_frame(motion.sample(now).as_ref());
            ctx.bind();
            scene.draw(&target);
            ctx.end_frame();
            drawn += 1;
        }
        if until() {
            break;
        }
        next += period;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now;
        }
    }
    (ctx.read_rgba(), drawn, ages)
}

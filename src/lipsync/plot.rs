//! A picture of lip sync over time (`facewire lipsync --plot`): the waveform, the level against
//! the gate's floor and ceiling (moving with the automatic level), the viseme shown, how closed
//! the closure detector holds the lips, the phones spoken when the take is labelled, and each
//! viseme's weight in a lane of its own colour, over a time axis in seconds.

use std::path::Path;

use super::labels::{Labelled, PhoneClass};
use super::{analyze, wav, Level, LipFrame, LipSettings, Viseme, VISEMES};
use crate::image::{ImageError, RgbaImage};
use crate::text::{draw_text, fill, text_width, Rect, GLYPH};

/// Why a plot could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The WAV file could not be read.
    #[error(transparent)]
    Wav(#[from] wav::WavError),
    /// The PNG could not be written.
    #[error(transparent)]
    Image(#[from] ImageError),
}

/// Each viseme's colour, in [`Viseme::ALL`] order: `sil` grey, then red, yellow, blue, green
/// and purple for `aa`, `ih`, `ou`, `ee` and `oh`.
pub const COLOURS: [[u8; 4]; VISEMES] = [
    [128, 134, 146, 255],
    [235, 87, 87, 255],
    [242, 201, 76, 255],
    [86, 160, 240, 255],
    [111, 207, 151, 255],
    [187, 107, 217, 255],
];

const BACKGROUND: [u8; 4] = [20, 22, 26, 255];
const PANEL: [u8; 4] = [32, 35, 41, 255];
const GRID: [u8; 4] = [58, 62, 72, 255];
const MINOR: [u8; 4] = [42, 45, 53, 255];
const TEXT: [u8; 4] = [232, 234, 238, 255];
const MUTED: [u8; 4] = [150, 156, 168, 255];
const WAVE: [u8; 4] = [160, 196, 232, 255];
const LEVEL: [u8; 4] = [245, 245, 245, 255];
const GATE: [u8; 4] = [255, 176, 72, 255];
/// The gate's band between floor and ceiling: [`GATE`] faintly over [`PANEL`].
const GATE_BAND: [u8; 4] = [58, 50, 42, 255];
/// The closure detector's strip, and the phones that close the lips (p, b, m).
pub const CLOSED: [u8; 4] = [255, 105, 150, 255];

/// Text scale of labels (16-pixel glyphs) and of the small print (8-pixel glyphs).
const LABEL: u32 = 2;
const SMALL: u32 = 1;
/// The label column on the left and the margin on the right, pixels.
const LEFT: u32 = 96;
const RIGHT: u32 = 16;
/// Heights of the title, the waveform, the level, the strip of the viseme shown, each viseme
/// lane and the time axis; the gap between panels and between lanes.
const TITLE: u32 = 36;
const WAVE_H: u32 = 120;
const LEVEL_H: u32 = 96;
const SHOWN_H: u32 = 18;
const CLOSED_H: u32 = 12;
const PHONES_H: u32 = 14;
const LANE_H: u32 = 40;
const AXIS_H: u32 = 34;
const GAP: u32 = 12;
const LANE_GAP: u32 = 4;
/// The narrowest plot drawn.
const MIN_WIDTH: u32 = 320;
/// The level lane's top, dB full scale.
const LEVEL_TOP_DB: f32 = 0.0;

/// Where each part of a plot lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The whole image's width.
    pub width: u32,
    /// The whole image's height.
    pub height: u32,
    /// The waveform.
    pub wave: Rect,
    /// The level in dB, with the gate's floor and ceiling.
    pub level: Rect,
    /// The viseme shown at each moment, as a strip of its colour.
    pub shown: Rect,
    /// How closed the closure detector holds the lips, as a bar.
    pub closed: Rect,
    /// The phones spoken, when the take is labelled.
    pub phones: Option<Rect>,
    /// The `sil` lane; the lanes of the other visemes follow below it.
    first_lane: Rect,
    /// The time axis: ticks and their labels.
    pub axis: Rect,
}

impl Layout {
    /// The layout of a plot `width` pixels wide (at least 320), with a row of phones when
    /// `phones`.
    pub fn new(width: u32, phones: bool) -> Layout {
        let width = width.max(MIN_WIDTH);
        let inner = width - LEFT - RIGHT;
        let row = |y: u32, height: u32| Rect {
            x: LEFT,
            y,
            width: inner,
            height,
        };
        let wave = row(TITLE, WAVE_H);
        let level = row(wave.bottom() + GAP, LEVEL_H);
        let shown = row(level.bottom() + GAP, SHOWN_H);
        let closed = row(shown.bottom() + LANE_GAP, CLOSED_H);
        let phones = phones.then(|| row(closed.bottom() + LANE_GAP, PHONES_H));
        let above_lanes = phones.unwrap_or(closed).bottom();
        let first_lane = row(above_lanes + LANE_GAP * 2, LANE_H);
        let lanes_bottom = first_lane.y + VISEMES as u32 * (LANE_H + LANE_GAP) - LANE_GAP;
        let axis = row(lanes_bottom, AXIS_H);
        Layout {
            width,
            height: axis.bottom() + GAP,
            wave,
            level,
            shown,
            closed,
            phones,
            first_lane,
            axis,
        }
    }

    /// Every panel from the top down: the waveform, the level, the viseme shown, the closure
    /// strip, the phones when there are any, and the lanes.
    fn panels(&self) -> Vec<Rect> {
        [self.wave, self.level, self.shown, self.closed]
            .into_iter()
            .chain(self.phones)
            .chain(Viseme::ALL.map(|v| self.lane(v)))
            .collect()
    }

    /// The lane of `viseme`'s weight.
    pub fn lane(&self, viseme: Viseme) -> Rect {
        Rect {
            y: self.first_lane.y + viseme.index() as u32 * (LANE_H + LANE_GAP),
            ..self.first_lane
        }
    }

    /// The column of time `t` (seconds) in a plot of `duration` seconds.
    pub fn column(&self, t: f64, duration: f64) -> u32 {
        let inner = f64::from(self.wave.width);
        let x = (t / duration.max(1e-9) * inner).clamp(0.0, inner - 1.0);
        self.wave.x + x as u32
    }
}

/// A one-pixel horizontal line from `x0` to `x1` (exclusive) at `y`.
fn hline(image: &mut RgbaImage, x0: u32, x1: u32, y: u32, rgba: [u8; 4]) {
    let rect = Rect {
        x: x0,
        y,
        width: x1.saturating_sub(x0),
        height: 1,
    };
    fill(image, rect, rgba);
}

/// A one-pixel vertical line at `x` from `y0` to `y1` (inclusive, either order).
fn vline(image: &mut RgbaImage, x: u32, y0: u32, y1: u32, rgba: [u8; 4]) {
    let (top, bottom) = (y0.min(y1), y0.max(y1));
    let rect = Rect {
        x,
        y: top,
        width: 1,
        height: bottom - top + 1,
    };
    fill(image, rect, rgba);
}

/// `text` at `scale`, centred vertically in `rect` and right-aligned to `right`.
fn label_right(image: &mut RgbaImage, right: u32, y: u32, text: &str, scale: u32, rgba: [u8; 4]) {
    let x = right.saturating_sub(text_width(text, scale));
    let y = y.saturating_sub(GLYPH * scale / 2);
    draw_text(image, x, y, text, scale, rgba);
}

/// The label of a lane or panel: in the label column, centred on the panel's middle; in small
/// print beside a panel too thin for the label size.
fn panel_label(image: &mut RgbaImage, panel: Rect, text: &str, rgba: [u8; 4]) {
    let middle = panel.y + panel.height / 2;
    let scale = if panel.height >= GLYPH * LABEL {
        LABEL
    } else {
        SMALL
    };
    label_right(image, LEFT - 10, middle, text, scale, rgba);
}

/// What the frames say about one column: each viseme's largest weight, the loudest level, the
/// strongest closure, and the viseme shown and the gate of the last frame (the frame held from
/// before the column when none ends inside it).
#[derive(Clone, Copy)]
struct Column {
    weights: [f32; VISEMES],
    volume_db: f32,
    closure: f32,
    shown: Viseme,
    gate: (f32, f32),
}

impl Column {
    fn of(f: &LipFrame) -> Column {
        Column {
            weights: f.weights,
            volume_db: f.volume_db,
            closure: f.closure,
            shown: f.viseme,
            gate: f.gate,
        }
    }
}

/// The [`Column`] of each plot column, `None` before the first frame. Frames are taken as
/// known from their time (the end of their window) until the next frame.
fn columns(frames: &[LipFrame], columns: u32, duration: f64) -> Vec<Option<Column>> {
    let mut out = Vec::with_capacity(columns as usize);
    let mut next = 0;
    let mut held: Option<&LipFrame> = None;
    for c in 0..columns {
        let end = f64::from(c + 1) / f64::from(columns) * duration;
        let mut column: Option<Column> = held.map(Column::of);
        let mut first_inside = true;
        while let Some(f) = frames.get(next).filter(|f| f.t < end) {
            match (&mut column, first_inside) {
                (Some(col), false) => {
                    for (w, v) in col.weights.iter_mut().zip(f.weights) {
                        *w = w.max(v);
                    }
                    col.volume_db = col.volume_db.max(f.volume_db);
                    col.closure = col.closure.max(f.closure);
                    col.shown = f.viseme;
                    col.gate = f.gate;
                }
                _ => column = Some(Column::of(f)),
            }
            first_inside = false;
            held = Some(f);
            next += 1;
        }
        out.push(column);
    }
    out
}

/// Draws the lip-sync timeline of `samples` (mono, at `rate` Hz) analysed into `frames` with
/// `settings`: a title with the settings, the waveform (min and max per column, scaled to its
/// peak), the level in dB against the gate, the viseme shown, the closure detector's strip,
/// the `phones` spoken (`(start_s, end_s, phone)`, espeak-ng's names; the row is left out when
/// there are none), one lane per viseme with its weight as a filled band, and a time axis with a
/// tick every second. `width` is the image's width (at least 320); the height follows from the
/// layout ([`Layout::new`]).
pub fn plot(
    samples: &[f32],
    rate: u32,
    frames: &[LipFrame],
    phones: &[(f64, f64, String)],
    settings: &LipSettings,
    width: u32,
) -> RgbaImage {
    let layout = Layout::new(width, !phones.is_empty());
    let mut image = RgbaImage::filled(layout.width, layout.height, BACKGROUND);
    let rate = rate.max(1);
    let duration = (samples.len() as f64 / f64::from(rate))
        .max(frames.last().map_or(0.0, |f| f.t))
        .max(1e-3);
    let inner = layout.wave.width;

    draw_text(&mut image, 8, 10, "lip sync", LABEL, TEXT);
    let gate = match settings.level {
        Level::Auto => "gate follows the voice".to_string(),
        Level::Fixed => format!(
            "gate {:.0} to {:.0} dB",
            settings.floor_db, settings.ceiling_db
        ),
    };
    let details = format!(
        "{duration:.2} s   {gate}   attack {:.0} ms, release {:.0} ms, hold {:.0} ms",
        settings.attack * 1000.0,
        settings.release * 1000.0,
        settings.hold * 1000.0,
    );
    let details_x = 8 + text_width("lip sync", LABEL) + 16;
    draw_text(
        &mut image,
        details_x,
        10 + GLYPH / 2,
        &details,
        SMALL,
        MUTED,
    );

    for panel in layout.panels() {
        fill(&mut image, panel, PANEL);
    }
    draw_grid(&mut image, &layout, duration);

    draw_wave(&mut image, layout.wave, samples, rate, duration);
    panel_label(&mut image, layout.wave, "wave", MUTED);

    let cols = columns(frames, inner, duration);
    draw_level(&mut image, layout.level, &cols);

    panel_label(&mut image, layout.shown, "shown", MUTED);
    for (i, col) in cols.iter().enumerate() {
        let Some(col) = col else { continue };
        let rect = Rect {
            x: layout.shown.x + i as u32,
            width: 1,
            ..layout.shown
        };
        let colour = COLOURS[col.shown.index()];
        if col.shown == Viseme::Sil {
            // Silence as a thin line, so the vowels stand out.
            let middle = rect.y + rect.height / 2;
            vline(&mut image, rect.x, middle - 1, middle + 1, colour);
        } else {
            fill(&mut image, rect, colour);
        }
    }

    panel_label(&mut image, layout.closed, "closed", CLOSED);
    for (i, col) in cols.iter().enumerate() {
        let Some(col) = col else { continue };
        let h = (col.closure.clamp(0.0, 1.0) * layout.closed.height as f32).round() as u32;
        if h > 0 {
            let rect = Rect {
                x: layout.closed.x + i as u32,
                y: layout.closed.bottom() - h,
                width: 1,
                height: h,
            };
            fill(&mut image, rect, CLOSED);
        }
    }
    if let Some(row) = layout.phones {
        draw_phones(&mut image, &layout, row, phones, duration);
    }

    for v in Viseme::ALL {
        let lane = layout.lane(v);
        let colour = COLOURS[v.index()];
        panel_label(&mut image, lane, v.name(), colour);
        for (i, col) in cols.iter().enumerate() {
            let Some(col) = col else { continue };
            let w = col.weights[v.index()].clamp(0.0, 1.0);
            let h = (w * lane.height as f32).round() as u32;
            if h > 0 {
                let rect = Rect {
                    x: lane.x + i as u32,
                    y: lane.bottom() - h,
                    width: 1,
                    height: h,
                };
                fill(&mut image, rect, colour);
            }
        }
    }
    image
}

/// Vertical lines through every panel and ticks on the axis: every second (labelled, skipping
/// labels that would crowd) and every tenth of a second where there is room.
fn draw_grid(image: &mut RgbaImage, layout: &Layout, duration: f64) {
    let px_per_s = f64::from(layout.wave.width) / duration;
    let panels = layout.panels();
    let axis_y = layout.axis.y + 4;
    if px_per_s / 10.0 >= 6.0 {
        let tenths = (duration * 10.0).floor() as u32;
        for k in (0..=tenths).filter(|k| k % 10 != 0) {
            let x = layout.column(f64::from(k) / 10.0, duration);
            for p in &panels {
                vline(image, x, p.y, p.bottom() - 1, MINOR);
            }
            vline(image, x, axis_y, axis_y + 3, MUTED);
        }
    }
    // Label every `step` seconds so that labels keep apart.
    let widest = text_width(&format!("{} s", duration.floor()), LABEL) + 12;
    let step = ((f64::from(widest) / px_per_s).ceil() as u32).max(1);
    for s in 0..=duration.floor() as u32 {
        let x = layout.column(f64::from(s), duration);
        for p in &panels {
            vline(image, x, p.y, p.bottom() - 1, GRID);
        }
        vline(image, x, axis_y, axis_y + 7, TEXT);
        if s % step == 0 {
            let text = format!("{s} s");
            let half = text_width(&text, LABEL) / 2;
            let left = x.saturating_sub(half).max(layout.wave.x);
            let left = left.min(layout.wave.right().saturating_sub(2 * half));
            draw_text(image, left, axis_y + 12, &text, LABEL, MUTED);
        }
    }
}

/// The waveform: each column's smallest and largest sample, scaled so the peak nearly fills
/// the panel.
fn draw_wave(image: &mut RgbaImage, panel: Rect, samples: &[f32], rate: u32, duration: f64) {
    let peak = samples
        .iter()
        .filter(|s| s.is_finite())
        .fold(0.0f32, |m, s| m.max(s.abs()))
        .max(1e-3);
    let middle = panel.y + panel.height / 2;
    hline(image, panel.x, panel.right(), middle, GRID);
    let half = (panel.height / 2 - 2) as f32;
    let y = |s: f32| {
        let v = (s / peak).clamp(-1.0, 1.0) * half;
        (middle as f32 - v).round() as u32
    };
    let per_column = duration * f64::from(rate) / f64::from(panel.width);
    for c in 0..panel.width {
        let from = (f64::from(c) * per_column) as usize;
        let to = ((f64::from(c + 1) * per_column).ceil() as usize).min(samples.len());
        let Some(span) = samples.get(from..to.max(from + 1).min(samples.len())) else {
            continue;
        };
        let (lo, hi) = span
            .iter()
            .filter(|s| s.is_finite())
            .fold((0.0f32, 0.0f32), |(lo, hi), &s| (lo.min(s), hi.max(s)));
        vline(image, panel.x + c, y(hi), y(lo), WAVE);
    }
    let db = 20.0 * peak.log10();
    let note = format!("peak {db:.0} dB");
    label_right(image, LEFT - 10, middle + 20, &note, SMALL, MUTED);
}

/// The level lane: the gate's band between floor and ceiling as it moved, its lines and last
/// values, and the analysed level as a line.
fn draw_level(image: &mut RgbaImage, panel: Rect, cols: &[Option<Column>]) {
    let lowest_floor = cols
        .iter()
        .flatten()
        .map(|c| c.gate.0.min(c.gate.1))
        .fold(f32::INFINITY, f32::min);
    // From a little below the floor (at least -70 dB) up to 0 dB, in whole tens.
    let bottom_db = ((lowest_floor - 20.0).clamp(-120.0, -70.0) / 10.0).floor() * 10.0;
    let span = LEVEL_TOP_DB - bottom_db;
    let y = |db: f32| {
        let f = ((LEVEL_TOP_DB - db) / span).clamp(0.0, 1.0);
        panel.y + (f * (panel.height - 1) as f32).round() as u32
    };
    for (i, col) in cols.iter().enumerate() {
        let Some(col) = col else { continue };
        let (floor, ceiling) = (y(col.gate.0), y(col.gate.1));
        let x = panel.x + i as u32;
        vline(image, x, ceiling, floor, GATE_BAND);
    }
    // The gate's lines, then the level over them.
    let mut last: Option<(u32, u32)> = None;
    for (i, col) in cols.iter().enumerate() {
        let Some(col) = col else {
            last = None;
            continue;
        };
        let now = (y(col.gate.0), y(col.gate.1));
        let x = panel.x + i as u32;
        let before = last.unwrap_or(now);
        vline(image, x, before.0, now.0, GATE);
        vline(image, x, before.1, now.1, GATE);
        last = Some(now);
    }
    let mut last: Option<u32> = None;
    for (i, col) in cols.iter().enumerate() {
        let Some(col) = col else {
            last = None;
            continue;
        };
        let now = y(col.volume_db);
        let x = panel.x + i as u32;
        vline(image, x, last.unwrap_or(now), now, LEVEL);
        last = Some(now);
    }
    // The gate's last values inside the panel at its right end, the ceiling above its line and
    // the floor below its own, each on a patch of the panel's colour that keeps it legible over
    // the level line.
    if let Some(end) = cols.iter().rev().flatten().next() {
        let (floor_db, ceiling_db) = end.gate;
        let (floor, ceiling) = (y(floor_db), y(ceiling_db));
        let right = panel.right() - 6;
        let mut gate_label = |y: u32, text: &str| {
            let width = text_width(text, SMALL);
            let patch = Rect {
                x: right.saturating_sub(width + 3),
                y: y.saturating_sub(GLYPH / 2 + 2),
                width: width + 6,
                height: GLYPH + 3,
            };
            fill(image, patch, PANEL);
            label_right(image, right, y, text, SMALL, GATE);
        };
        gate_label(
            ceiling.saturating_sub(8).max(panel.y + GLYPH / 2 + 2),
            &format!("ceiling {ceiling_db:.0} dB"),
        );
        gate_label(
            (floor + 8).min(panel.bottom() - GLYPH / 2 - 2),
            &format!("floor {floor_db:.0} dB"),
        );
    }
    let label_x = LEFT - 10;
    label_right(image, label_x, panel.y + 4, "0 dB", SMALL, MUTED);
    label_right(
        image,
        label_x,
        panel.bottom() - 4,
        &format!("{bottom_db:.0} dB"),
        SMALL,
        MUTED,
    );
    panel_label(image, panel, "level", MUTED);
}

/// The phones row: a tick where each phone starts and its name centred over it where it fits;
/// p, b and m in [`CLOSED`]'s colour, vowels bright, other consonants muted, pauses unmarked.
fn draw_phones(
    image: &mut RgbaImage,
    layout: &Layout,
    row: Rect,
    phones: &[(f64, f64, String)],
    duration: f64,
) {
    panel_label(image, row, "phones", MUTED);
    let mut free_from = row.x;
    for (start, end, phone) in phones {
        let class = PhoneClass::of(phone);
        if class == PhoneClass::Silence {
            continue;
        }
        let colour = match class {
            PhoneClass::Bilabial => CLOSED,
            PhoneClass::OpenVowel
            | PhoneClass::MidVowel
            | PhoneClass::CloseVowel
            | PhoneClass::RoundedVowel => TEXT,
            _ => MUTED,
        };
        let (x0, x1) = (
            layout.column(*start, duration),
            layout.column(*end, duration),
        );
        vline(image, x0, row.y, row.y + 2, GRID);
        if class == PhoneClass::Bilabial {
            // The closure's span as an underline.
            hline(image, x0, x1.max(x0 + 1), row.bottom() - 1, CLOSED);
        }
        let name = phone.trim_matches(|c: char| matches!(c, '\'' | ',' | '%' | '='));
        let width = text_width(name, SMALL);
        let centre = (x0 + x1) / 2;
        let left = centre.saturating_sub(width / 2).max(row.x);
        if left >= free_from && left + width <= row.right() {
            draw_text(image, left, row.y + 3, name, SMALL, colour);
            free_from = left + width + 2;
        }
    }
}

/// Returns the image's width and height.
pub fn plot_wav(
    wav_path: &Path,
    png: &Path,
    settings: &LipSettings,
) -> Result<(u32, u32), PlotError> {
    let audio = wav::read_mono(wav_path)?;
    let frames = analyze(&audio.samples, audio.rate, Default::default(), *settings);
    let seconds = audio.samples.len() as f64 / f64::from(audio.rate.max(1));
    let width = (seconds * 240.0).clamp(800.0, 4000.0) as u32;
    // Phone labels beside the WAV (as benches/speech.py writes them) add the phones row; a
    // take without them, or with labels that do not read, is drawn without it.
    let phones = wav_path
        .with_extension("json")
        .is_file()
        .then(|| Labelled::load(wav_path).ok())
        .flatten()
        .map(|l| l.phones)
        .unwrap_or_default();
    let image = plot(
        &audio.samples,
        audio.rate,
        &frames,
        &phones,
        settings,
        width,
    );
    image.save_png(png)?;
    Ok((image.width, image.height))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Half a second of silence, then half a second of a buzz with a voice's harmonics, at
    /// 16 kHz.
    fn silence_then_buzz() -> Vec<f32> {
        let rate = 16_000.0;
        (0..16_000)
            .map(|i| {
                if i < 8_000 {
                    return 0.0;
                }
                let t = i as f32 / rate;
                (1..=20)
                    .map(|k| {
                        let k = k as f32;
                        (2.0 * std::f32::consts::PI * 140.0 * k * t).sin() / k
                    })
                    .sum::<f32>()
                    * 0.25
            })
            .collect()
    }

    /// Pixels of `rgba` in the column `x` of `rect`.
    fn lit(image: &RgbaImage, rect: Rect, x: u32, rgba: [u8; 4]) -> usize {
        (rect.y..rect.bottom())
            .filter(|&y| image.pixel(x, y) == rgba)
            .count()
    }

    #[test]
    fn the_buzz_fills_a_vowel_lane_and_the_silence_the_sil_lane() {
        let samples = silence_then_buzz();
        let settings = LipSettings::default();
        let frames = analyze(&samples, 16_000, Default::default(), settings);
        let image = plot(&samples, 16_000, &frames, &[], &settings, 900);
        let layout = Layout::new(900, false);
        assert_eq!((image.width, image.height), (900, layout.height));
        let quiet = layout.column(0.3, 1.0);
        let loud = layout.column(0.85, 1.0);
        let vowels = &Viseme::ALL[1..];
        let vowel_pixels = |x: u32| -> usize {
            vowels
                .iter()
                .map(|&v| lit(&image, layout.lane(v), x, COLOURS[v.index()]))
                .sum()
        };
        assert_eq!(vowel_pixels(quiet), 0, "no vowel in the silence");
        assert!(
            vowel_pixels(loud) > LANE_H as usize / 2,
            "a vowel lane more than half full in the buzz"
        );
        let sil = layout.lane(Viseme::Sil);
        assert_eq!(lit(&image, sil, quiet, COLOURS[0]), LANE_H as usize);
        assert!(lit(&image, sil, loud, COLOURS[0]) < LANE_H as usize / 4);
        // The waveform is flat in the silence and spans the panel in the buzz.
        let wave = |x: u32| lit(&image, layout.wave, x, WAVE);
        assert!(wave(quiet) <= 1, "{}", wave(quiet));
        assert!(wave(loud) > WAVE_H as usize / 2, "{}", wave(loud));
        // The shown strip is filled with a vowel's colour in the buzz.
        let shown = image.pixel(loud, layout.shown.y);
        assert!(vowels.iter().any(|v| COLOURS[v.index()] == shown));
    }

    #[test]
    fn the_layout_stacks_panels_without_overlap() {
        for phones in [false, true] {
            let l = Layout::new(100, phones);
            assert_eq!(l.width, MIN_WIDTH);
            assert_eq!(l.phones.is_some(), phones);
            let mut rects = l.panels();
            rects.push(l.axis);
            assert_eq!(rects.len(), 4 + usize::from(phones) + VISEMES + 1);
            for pair in rects.windows(2) {
                assert!(pair[0].bottom() <= pair[1].y, "{pair:?}");
            }
            assert!(l.axis.bottom() <= l.height);
        }
        let l = Layout::new(100, false);
        assert_eq!(l.column(0.0, 2.0), l.wave.x);
        assert_eq!(l.column(2.0, 2.0), l.wave.right() - 1);
    }

    #[test]
    fn a_plot_is_written_as_a_png_of_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let wav_path = dir.path().join("buzz.wav");
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate: 16_000,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut w = hound::WavWriter::create(&wav_path, spec).unwrap();
        for s in silence_then_buzz() {
            w.write_sample((s.clamp(-1.0, 1.0) * 32767.0) as i16)
                .unwrap();
        }
        w.finalize().unwrap();
        let png = dir.path().join("plot.png");
        let (width, height) = plot_wav(&wav_path, &png, &LipSettings::default()).unwrap();
        let back = RgbaImage::load_png(&png).unwrap();
        assert_eq!((back.width, back.height), (width, height));
        assert_eq!(width, 800, "a second of audio takes the narrowest width");
        assert!(plot_wav(&dir.path().join("none.wav"), &png, &LipSettings::default()).is_err());
    }
}

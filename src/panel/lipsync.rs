//! The panel's lip-sync section: the mode and the input, the level against the gate, a bar
//! per viseme, and the recording of the performer's own vowels.

use std::time::{Duration, Instant};

use egui::{Color32, RichText};

use super::PanelAction;
use crate::arkit::Viseme;
use crate::control::telemetry::TelemetrySnapshot;
use crate::lipsync::LipMode;

/// The level meter's range, dB full scale.
const METER_DB: (f32, f32) = (-80.0, 0.0);
/// A hop older than this is not shown as the current level.
const STALE: Duration = Duration::from_millis(500);
/// The colour of a problem.
const PROBLEM: Color32 = Color32::from_rgb(220, 150, 40);
/// The colour of the level and the viseme bars.
const LEVEL: Color32 = Color32::from_rgb(90, 160, 200);

/// Where `db` lies on the meter, 0 to 1.
fn on_meter(db: f32) -> f32 {
    let at = (db - METER_DB.0) / (METER_DB.1 - METER_DB.0);
    if at.is_finite() {
        at.clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// What a mode does, in a few words.
fn mode_hint(mode: LipMode) -> &'static str {
    match mode {
        LipMode::Off => "off",
        LipMode::WhenLost => "drives the mouth while the phone does not see your face",
        LipMode::Blend => "opens the mouth as far as the phone or your voice, whichever is wider",
        LipMode::Always => "owns the mouth; the phone drives the rest",
    }
}

/// Lays the section out; `has_profile`: a performer profile is in use (the vowels are saved
/// into it).
pub(super) fn section(
    ui: &mut egui::Ui,
    telemetry: &TelemetrySnapshot,
    has_profile: bool,
    now: Instant,
    actions: &mut Vec<PanelAction>,
) {
    let Some(source) = &telemetry.lip_source else {
        return;
    };
    let title = format!("Lip sync: {} ({})", source.mode.name(), source.source);
    egui::CollapsingHeader::new(RichText::new(title).strong())
        .id_salt("lipsync")
        .default_open(source.problem.is_none() || source.prompt.is_some())
        .show(ui, |ui| {
            ui.label(RichText::new(mode_hint(source.mode)).weak());
            if let Some(problem) = &source.problem {
                ui.label(RichText::new(problem).color(PROBLEM));
            }
            let frame = telemetry
                .lip
                .filter(|(_, at)| now.saturating_duration_since(*at) <= STALE)
                .map(|(f, _)| f);
            // The gate in use: the newest hop's (it follows the voice), else where it starts.
            let gate = frame.map_or(source.gate, |f| f.gate);
            ui.horizontal(|ui| {
                ui.label("Level");
                let width = 220.0;
                let response = super::bar(ui, frame.map(|f| on_meter(f.volume_db)), LEVEL, width);
                // The gate: the mouth opens from the floor mark to the ceiling mark.
                let rect = response.rect;
                for (db, color) in [
                    (gate.0, Color32::from_gray(160)),
                    (gate.1, Color32::from_rgb(60, 170, 90)),
                ] {
                    let x = rect.left() + rect.width() * on_meter(db);
                    ui.painter()
                        .vline(x, rect.y_range(), egui::Stroke::new(2.0, color));
                }
                ui.monospace(frame.map_or_else(
                    || "   -  dB".to_string(),
                    |f| format!("{:5.1} dB", f.volume_db),
                ));
            })
            .response
            .on_hover_text(format!(
                "the mouth opens from {:.0} dB (grey mark) to {:.0} dB (green mark)",
                gate.0, gate.1
            ));
            ui.horizontal_wrapped(|ui| {
                for v in Viseme::ALL {
                    let weight = frame.map(|f| f.weights[v.index()]);
                    let shown = frame.is_some_and(|f| f.viseme == v);
                    let name = RichText::new(v.name()).monospace();
                    ui.label(if shown { name.strong() } else { name });
                    super::bar(ui, weight, LEVEL, 48.0)
                        .on_hover_text(weight.map_or("-".into(), |w| format!("{w:.2}")));
                }
            });
            ui.horizontal_wrapped(|ui| {
                ui.label(format!("Vowels: {}", source.voice));
                let recording = source.prompt.is_some();
                let can = source.microphone && has_profile && !recording;
                if ui
                    .add_enabled(can, egui::Button::new("Record my vowels"))
                    .on_hover_text(
                        "Say a, i, u, e, o as prompted; they are saved into the performer's \
                         profile",
                    )
                    .on_disabled_hover_text(if !source.microphone {
                        "needs a microphone (not a WAV file)"
                    } else if recording {
                        "recording"
                    } else {
                        "choose a performer profile first"
                    })
                    .clicked()
                {
                    actions.push(PanelAction::RecordVowels);
                }
            });
            if let Some(prompt) = &source.prompt {
                ui.label(RichText::new(prompt).strong().size(18.0));
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_meter_spans_eighty_decibels() {
        assert_eq!(on_meter(-120.0), 0.0);
        assert_eq!(on_meter(-40.0), 0.5);
        assert_eq!(on_meter(3.0), 1.0);
        assert_eq!(on_meter(f32::NAN), 0.0);
    }
}

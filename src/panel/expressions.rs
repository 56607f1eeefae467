//! The panel's expressions section: each expression with its key, mode and weight, a button
//! switching it, and "All off".

use egui::{Color32, RichText};

use super::PanelAction;
use crate::expressions::ExpressionMode;
use crate::expressions::ExpressionStatus;

/// The colour of an expression's weight bar.
const WEIGHT: Color32 = Color32::from_rgb(200, 130, 180);

/// The mode in a word.
fn mode_name(mode: ExpressionMode) -> &'static str {
    match mode {
        ExpressionMode::Toggle => "toggle",
        ExpressionMode::Hold => "hold",
    }
}

/// The section's title: how many expressions there are and how many are on.
fn title(expressions: &[ExpressionStatus]) -> String {
    let on = expressions.iter().filter(|e| e.on).count();
    format!("Expressions: {on} of {} on", expressions.len())
}

/// Lays the section out; nothing when there are no expressions.
pub(super) fn section(
    ui: &mut egui::Ui,
    expressions: &[ExpressionStatus],
    actions: &mut Vec<PanelAction>,
) {
    if expressions.is_empty() {
        return;
    }
    egui::CollapsingHeader::new(RichText::new(title(expressions)).strong())
        .id_salt("expressions")
        .default_open(false)
        .show(ui, |ui| {
            egui::Grid::new("expressions_grid")
                .num_columns(5)
                .spacing([12.0, 2.0])
                .show(ui, |ui| {
                    for e in expressions {
                        let button = egui::Button::new(&e.name).selected(e.on);
                        let hover = if e.mode == ExpressionMode::Hold {
                            "switch it on or off (a hold expression's key holds it only while \
                             down; here it toggles)"
                        } else {
                            "switch it on or off"
                        };
                        if ui.add(button).on_hover_text(hover).clicked() {
                            actions.push(PanelAction::ToggleExpression(e.name.clone()));
                        }
                        ui.monospace(e.key.map_or_else(|| "-".to_string(), |k| k.to_string()));
                        ui.label(RichText::new(mode_name(e.mode)).weak());
                        ui.label(RichText::new(&e.layer).weak())
                            .on_hover_text("expressions on one layer replace each other");
                        super::bar(ui, Some(e.weight), WEIGHT, 80.0)
                            .on_hover_text(format!("{:.2}", e.weight));
                        ui.end_row();
                    }
                });
            let any_on = expressions.iter().any(|e| e.on || e.weight > 0.0);
            if ui
                .add_enabled(any_on, egui::Button::new("All off"))
                .on_hover_text("switch every expression off")
                .clicked()
            {
                actions.push(PanelAction::ExpressionsOff);
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_counts_those_on() {
        let status = |name: &str, on| ExpressionStatus {
            name: name.into(),
            key: None,
            mode: ExpressionMode::Toggle,
            layer: "face".into(),
            on,
            weight: if on { 1.0 } else { 0.0 },
        };
        assert_eq!(
            title(&[status("smile", true), status("angry", false)]),
            "Expressions: 1 of 2 on"
        );
        assert_eq!(mode_name(ExpressionMode::Hold), "hold");
    }
}

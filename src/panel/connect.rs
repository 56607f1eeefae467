//! The panel's connect section: this PC's addresses, what to enter in each app and, while no
//! data arrives, what to check, with commands that can be selected and copied.

use egui::{Color32, RichText};

use super::PanelAction;
use crate::connect::ConnectCard;

/// The connect card as the panel shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectView {
    /// The card with its current hints.
    pub card: ConnectCard,
    /// No frame has arrived yet: the section opens and shows the hints.
    pub waiting: bool,
    /// The phone asked for data now (`ingest.phone`; empty for none).
    pub phone: String,
    /// The card is wanted on the stage (`[window] connect_card`, `C` on the stage).
    pub on_stage: bool,
}

/// The colour of a hint: what to check.
const HINT: Color32 = Color32::from_rgb(220, 150, 40);

/// Lays out the section: open while facewire waits for the phone, folded (as "Connect another
/// phone") once data flows.
pub(super) fn section(
    ui: &mut egui::Ui,
    view: &ConnectView,
    phone: &mut Option<String>,
    actions: &mut Vec<PanelAction>,
) {
    let card = &view.card;
    if let Some(webcam) = card.webcam_state() {
        egui::CollapsingHeader::new(RichText::new(card.title()).strong())
            .id_salt(("connect", view.waiting))
            .default_open(view.waiting)
            .show(ui, |ui| {
                ui.add(egui::Label::new(card.subtitle()).wrap());
                match &webcam.camera {
                    Some(camera) => ui.add(egui::Label::new(RichText::new(camera).strong()).wrap()),
                    None => ui.label(RichText::new("No camera yet").color(HINT)),
                };
                if let Some(rates) = &webcam.rates {
                    ui.label(rates);
                }
                if let Some(problem) = &webcam.problem {
                    ui.add(egui::Label::new(RichText::new(problem).color(HINT)).wrap());
                }
            });
        return;
    }
    let title = if view.waiting {
        card.title()
    } else {
        "Connect another phone"
    };
    egui::CollapsingHeader::new(RichText::new(title).strong())
        .id_salt(("connect", view.waiting))
        .default_open(view.waiting)
        .show(ui, |ui| {
            if view.waiting {
                let mut on_stage = view.on_stage;
                ui.checkbox(&mut on_stage, "Show on the stage")
                    .on_hover_text(
                    "the card over the avatar while no phone sends (C on the stage); off for a \
                     stream driven by the microphone, the API or the expressions",
                );
                if on_stage != view.on_stage {
                    actions.push(PanelAction::ShowConnectCard(on_stage));
                }
            }
            ui.horizontal_wrapped(|ui| {
                ui.label("This PC:");
                match card.addresses().split_first() {
                    Some((first, rest)) => {
                        ui.label(RichText::new(first.describe()).strong().monospace());
                        for other in rest {
                            ui.label(RichText::new(other.describe()).weak().monospace());
                        }
                    }
                    None => {
                        ui.label("no network address found (is the PC on a network?)");
                    }
                }
            });
            // One block per app: its name and port, then what to enter, wrapped to the panel's
            // width (a narrow panel beside the stage cuts nothing off).
            for row in card.apps() {
                ui.horizontal_wrapped(|ui| {
                    ui.label(RichText::new(row.app).strong());
                    ui.label(RichText::new(format!("UDP {}", row.port)).monospace());
                });
                ui.indent(("connect-app", row.app), |ui| {
                    ui.add(egui::Label::new(RichText::new(&row.enter).monospace()).wrap());
                });
            }
            for note in card.notes() {
                ui.label(RichText::new(note).weak());
            }
            if !card.apps().is_empty() {
                ui.label(RichText::new(crate::connect::NO_PHONE).weak());
            }
            phone_field(ui, view, phone, actions);
            if view.waiting {
                for hint in card.hints() {
                    ui.label(RichText::new(&hint.text).color(HINT));
                    for command in &hint.commands {
                        ui.add(
                            egui::Label::new(RichText::new(command).monospace())
                                .selectable(true)
                                .wrap(),
                        );
                    }
                }
            }
        });
}

/// The phone's address: iFacialMocap, Facemotion3d, VTube Studio and MeowFace stream once
/// facewire asks the phone, so it must know where the phone is. Applied at once; saved into
/// the configuration on request. `edited` holds the text while it differs from the one in use.
fn phone_field(
    ui: &mut egui::Ui,
    view: &ConnectView,
    edited: &mut Option<String>,
    actions: &mut Vec<PanelAction>,
) {
    ui.horizontal_wrapped(|ui| {
        ui.label("Phone's address:");
        let text = edited.get_or_insert_with(|| view.phone.clone());
        ui.add(
            egui::TextEdit::singleline(text)
                .hint_text("e.g. 192.168.1.23")
                .desired_width(140.0),
        );
        let address = text.trim().to_string();
        let changed = address != view.phone;
        if ui
            .add_enabled(changed, egui::Button::new("Apply"))
            .on_hover_text("ask this phone for data from now on")
            .clicked()
        {
            actions.push(PanelAction::SetPhone {
                address: address.clone(),
                save: false,
            });
        }
        if ui
            .button("Save")
            .on_hover_text("ask this phone, and keep it in the configuration ([ingest] phone)")
            .clicked()
        {
            actions.push(PanelAction::SetPhone {
                address,
                save: true,
            });
        }
    });
    ui.label(
        RichText::new(
            "iFacialMocap, Facemotion3d, VTube Studio and MeowFace send once facewire asks the \
             phone; empty asks the phone that sends first.",
        )
        .weak()
        .small(),
    );
}

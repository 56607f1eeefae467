//! The panel's "Look" tab: the mapping's face-shape sliders by group, the colours (on the
//! default head), and the preset buttons: load, save as, reset, random.

use egui::Color32;

use super::PanelAction;
use crate::look::{Blush, Colors, Srgb, DEFAULT_BLUSH_STRENGTH};

/// One slider as the tab shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SliderView {
    /// Its name in the mapping and in presets.
    pub name: String,
    /// Its label.
    pub label: String,
    /// Its group (a heading in the tab).
    pub group: String,
    /// Its range.
    pub min: f32,
    /// Its range.
    pub max: f32,
    /// Its value now.
    pub value: f32,
}

/// The look as the tab shows it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LookView {
    /// The mapping's sliders with the look's values, in the mapping's order.
    pub sliders: Vec<SliderView>,
    /// The look's colours.
    pub colors: Colors,
    /// The colours a look that sets none shows (the default head's own).
    pub own_colors: [Srgb; 4],
    /// Whether the colours apply (the default head; other avatars keep their textures).
    pub colors_apply: bool,
    /// The presets in the looks folder beside the configuration.
    pub presets: Vec<String>,
    /// That folder, as the tab names it.
    pub presets_dir: String,
}

/// What the Look tab asks of the stage.
#[derive(Debug, Clone, PartialEq)]
pub enum LookAction {
    /// Set slider `index` (in the mapping's order) to a value.
    Slider(usize, f32),
    /// Use these colours.
    Colors(Colors),
    /// Every slider at its default, the avatar's own colours.
    Reset,
    /// A random but plausible look from this seed.
    Random(u64),
    /// Save the look as NAME.toml in the looks folder beside the configuration.
    Save(String),
    /// Wear the preset of this name.
    Load(String),
}

/// What the tab keeps between refreshes.
#[derive(Debug, Clone, Default)]
pub struct LookTabState {
    /// The name typed for "save as".
    pub save_name: String,
    /// Random looks drawn so far (each button press a new seed).
    pub draws: u64,
}

fn rgb(c: Srgb) -> [u8; 3] {
    [c.r, c.g, c.b]
}

fn srgb([r, g, b]: [u8; 3]) -> Srgb {
    Srgb { r, g, b }
}

/// Lays the tab out.
pub fn tab(
    ui: &mut egui::Ui,
    view: &LookView,
    state: &mut LookTabState,
    actions: &mut Vec<PanelAction>,
) {
    ui.horizontal(|ui| {
        egui::ComboBox::from_id_salt("look-presets")
            .selected_text("Wear a preset…")
            .show_ui(ui, |ui| {
                for name in &view.presets {
                    if ui.selectable_label(false, name).clicked() {
                        actions.push(PanelAction::Look(LookAction::Load(name.clone())));
                    }
                }
                if view.presets.is_empty() {
                    ui.label(format!("no presets in {} yet", view.presets_dir));
                }
            });
        if ui
            .button("Reset")
            .on_hover_text("every slider at 0, the avatar's own colours")
            .clicked()
        {
            actions.push(PanelAction::Look(LookAction::Reset));
        }
        if ui
            .button("Random")
            .on_hover_text("a random but plausible face")
            .clicked()
        {
            state.draws += 1;
            let seed = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(state.draws) ^ state.draws;
            actions.push(PanelAction::Look(LookAction::Random(seed)));
        }
        ui.separator();
        ui.add(
            egui::TextEdit::singleline(&mut state.save_name)
                .hint_text("preset name")
                .desired_width(110.0),
        );
        let name = state.save_name.trim();
        if ui
            .add_enabled(!name.is_empty(), egui::Button::new("Save as"))
            .on_hover_text(format!(
                "writes {}/NAME.toml: slider names and values, colours",
                view.presets_dir
            ))
            .clicked()
        {
            actions.push(PanelAction::Look(LookAction::Save(name.to_string())));
        }
    });
    ui.separator();
    if view.sliders.is_empty() {
        ui.label(
            "This avatar's mapping has no face-shape sliders. A tech artist declares them in \
             [sliders.NAME] tables of the mapping file (see config/mappings/example.toml).",
        );
    }
    egui::ScrollArea::vertical()
        .auto_shrink([false, false])
        .show(ui, |ui| {
            if view.colors_apply {
                colors(ui, view, actions);
            }
            let mut group: Option<&str> = None;
            for (index, s) in view.sliders.iter().enumerate() {
                if group != Some(s.group.as_str()) {
                    group = Some(s.group.as_str());
                    ui.add_space(4.0);
                    ui.strong(&s.group);
                }
                let mut value = s.value;
                let slider = egui::Slider::new(&mut value, s.min..=s.max)
                    .text(&s.label)
                    .fixed_decimals(2);
                if ui.add(slider).changed() {
                    actions.push(PanelAction::Look(LookAction::Slider(index, value)));
                }
            }
        });
}

/// The colour pickers: skin, hair, iris and blush (with its strength).
fn colors(ui: &mut egui::Ui, view: &LookView, actions: &mut Vec<PanelAction>) {
    ui.strong("Colours");
    let mut colors = view.colors;
    let own = view.own_colors;
    let mut changed = false;
    ui.horizontal(|ui| {
        let mut pick = |ui: &mut egui::Ui, label: &str, value: &mut Option<Srgb>, own: Srgb| {
            ui.label(label);
            let mut c = rgb(value.unwrap_or(own));
            if egui::color_picker::color_edit_button_srgb(ui, &mut c).changed() {
                *value = Some(srgb(c));
                changed = true;
            }
        };
        pick(ui, "skin", &mut colors.skin, own[0]);
        pick(ui, "hair", &mut colors.hair, own[1]);
        pick(ui, "eyes", &mut colors.iris, own[2]);
        let mut blush = colors.blush.map(|b| Some(b.color)).unwrap_or(None);
        let before = blush;
        pick(ui, "blush", &mut blush, own[3]);
        let mut strength = colors.blush.map_or(DEFAULT_BLUSH_STRENGTH, |b| b.strength);
        let strength_changed = ui
            .add(egui::Slider::new(&mut strength, 0.0..=1.0).fixed_decimals(2))
            .on_hover_text("how strongly the blush shows")
            .changed();
        if blush != before || strength_changed {
            colors.blush = Some(Blush {
                color: blush.unwrap_or(own[3]),
                strength,
            });
            changed = true;
        }
    });
    if changed {
        actions.push(PanelAction::Look(LookAction::Colors(colors)));
    }
    ui.colored_label(
        Color32::GRAY,
        "colours repaint the default head's texture; the stage shows them in a moment",
    );
}

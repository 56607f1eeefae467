//! `facewire sheet`'s command-line arguments.

use std::path::PathBuf;

/// `facewire sheet`: the contact sheet of a model's targets, of its look sliders, or of
/// combinations of channels.
#[derive(Debug, clap::Args)]
pub struct SheetArgs {
    /// Avatar file (.glb, .gltf or .vrm); default: the configured model.
    #[arg(long, value_name = "PATH")]
    pub model: Option<PathBuf>,
    /// Mapping file (which channels drive which targets and nodes).
    #[arg(long, value_name = "PATH")]
    pub mapping: Option<PathBuf>,
    /// Look preset every panel wears: a name in config/looks or a path.
    #[arg(long, value_name = "NAME|PATH")]
    pub look: Option<String>,
    /// Draw each face-shape slider at its two ends instead of the targets.
    #[arg(long, conflicts_with_all = ["combos", "combo"])]
    pub looks: bool,
    /// Draw the built-in combinations of channels (a laugh, a smile with a blink, a pucker with
    /// the jaw open, ...) instead of the targets.
    #[arg(long)]
    pub combos: bool,
    /// A combination of your own, drawn instead of the targets (after the built-in ones with
    /// --combos): NAME:CHANNEL=VALUE,... with values from 0 to 1 (repeatable).
    #[arg(long, value_name = "NAME:CHANNEL=VALUE,...")]
    pub combo: Vec<super::Combo>,
    /// Output PNG.
    #[arg(long, value_name = "PNG", default_value = "sheet.png")]
    pub out: PathBuf,
    /// Size of each panel's picture in pixels.
    #[arg(long, default_value_t = super::DEFAULT_PANEL)]
    pub size: u32,
    /// Panels per row.
    #[arg(long, default_value_t = super::DEFAULT_COLUMNS)]
    pub columns: u32,
    /// What the camera frames: targets (the part the targets move) or model (all of it).
    #[arg(long, default_value = "targets")]
    pub framing: super::Framing,
    /// Morph path: auto, gpu or cpu.
    #[arg(long, value_name = "MODE")]
    pub morph: Option<crate::config::MorphMode>,
}

impl SheetArgs {
    /// The combinations to draw: the built-in ones with `--combos`, then each `--combo`; empty
    /// for a sheet of targets or sliders.
    pub fn combinations(&self) -> Vec<super::Combo> {
        let mut out = if self.combos {
            super::Combo::built_in()
        } else {
            Vec::new()
        };
        out.extend(self.combo.iter().cloned());
        out
    }
}

//! `facewire sheet`'s command-line arguments.

use std::path::PathBuf;

/// `facewire sheet`: the contact sheet of a model's targets, or of its look sliders.
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
    #[arg(long)]
    pub looks: bool,
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

//! The labelled contact sheet of a model's morph targets (`facewire sheet`).
//!
//! One headless render of the neutral face and one per distinct target at weight 1, in a grid
//! under a title row, each labelled with its target name, its ARKit channel and a left/right cue.
//!
//! # Reading the sheet
//!
//! Panels are front views through one camera (see [`Framing`]): the avatar's left appears on
//! the viewer's right, as when facing a person. Sided targets carry a badge at the end of their
//! label on the side of the panel where that side of the face appears: a blue `L` on the right
//! end for the avatar's left, a red `R` on the left end for the avatar's right (the usual
//! rigging colours), so a reader can check at a glance that the motion is on the badge's side.
//!
//! # Which panels
//!
//! Targets whose name is an ARKit channel (in any dialect, see
//! [`crate::mapping::channel_for_target`]) are posed through that channel with the avatar's
//! automatic mapping, exactly as live tracking would drive them (including the eye nodes turned
//! by `eyeLook*`), one panel per channel, in ARKit's canonical order. Perfect-sync avatars
//! repeat the same names on several meshes (face, teeth, lashes): the channel moves them all in
//! one panel. The default head's face-shape ("look") targets and every corrective target
//! (`a*b`, see [`crate::avatar::correctives`]) are not expressions and get no panel. Every other
//! named target follows, in file order, one panel per distinct name with
//! every target of that name on every mesh at weight 1. Unnamed targets get one panel each.
//!
//! # Combinations
//!
//! `facewire sheet --combos` draws named combinations of channels instead (see [`Combo`]): the
//! neutral face, then one panel per combination, posed through the mapping as live tracking
//! would pose it, with the corrective targets (`a*b`) the weights drive. A laugh or a squint
//! under lowered brows shows there what no single-target panel can: where two targets that move
//! the same skin add up wrong.
//!
//! # Rendering
//!
//! The sheet drives a [`Renderer`] directly rather than through [`crate::app::Scene`], whose
//! camera always frames the whole model: [`Framing::Targets`] needs its own framing.

mod args;
mod canvas;
mod combos;
mod labels;
mod layout;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Instant;

use glam::{Mat4, Vec3};

use crate::arkit::{Channel, FaceFrame, Protocol};
use crate::avatar::correctives::Correctives;
use crate::avatar::{Aabb, Avatar, MorphTarget, Pose};
use crate::image::RgbaImage;
use crate::mapping::{channel_for_target, CompiledMapping};
use crate::render::headless::HeadlessContext;
use crate::render::{Camera, DrawTarget, MorphMode, RenderError, Renderer};

use labels::{draw_label, draw_title};

pub use crate::text::{draw_text, fill, text_width, Rect, GLYPH};
pub use args::SheetArgs;
pub use canvas::{fit, wrap, Fitted, Wrapped};
pub use combos::{combo_entries, combo_pose, posed_bounds, Combo, ComboError};
pub use layout::SheetLayout;

/// Default panel size in pixels (square).
pub const DEFAULT_PANEL: u32 = 256;
/// Default number of panel columns.
pub const DEFAULT_COLUMNS: u32 = 8;
/// Default panel background: a neutral mid-grey (`#3a3f47`), sRGB-encoded RGBA.
pub const DEFAULT_BACKGROUND: [f32; 4] = [58.0 / 255.0, 63.0 / 255.0, 71.0 / 255.0, 1.0];
/// Smallest accepted panel size in pixels.
pub const MIN_PANEL: u32 = 64;
/// Largest accepted panel size in pixels.
pub const MAX_PANEL: u32 = 2048;
/// Most accepted columns.
pub const MAX_COLUMNS: u32 = 64;
/// Largest sheet side in pixels.
pub const MAX_SHEET_SIDE: u32 = 16384;

/// Colour between cells and behind the title.
const SHEET_COLOR: [u8; 4] = [22, 25, 29, 255];

/// Errors rendering a contact sheet.
#[derive(Debug, thiserror::Error)]
pub enum SheetError {
    /// The panel size is outside [`MIN_PANEL`]..=[`MAX_PANEL`].
    #[error("panel size {0} px is outside {MIN_PANEL}..={MAX_PANEL}")]
    PanelSize(u32),
    /// The column count is 0 or above [`MAX_COLUMNS`].
    #[error("columns must be 1 to {MAX_COLUMNS}, not {0}")]
    Columns(u32),
    /// The sheet would exceed [`MAX_SHEET_SIDE`] on a side.
    #[error(
        "a sheet of {panels} panels would be {width}x{height} px, over the {MAX_SHEET_SIDE} px \
         limit; use more columns or smaller panels"
    )]
    TooLarge {
        /// Number of panels.
        panels: usize,
        /// Width it would have.
        width: u64,
        /// Height it would have.
        height: u64,
    },
    /// Creating the headless context or uploading the model failed.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// A look sheet of a mapping without face-shape sliders.
    #[error(
        "the mapping has no face-shape sliders to draw; declare them in its [sliders] tables \
         (see config/mappings/example.toml)"
    )]
    NoSliders,
}

/// How to render a sheet.
#[derive(Debug, Clone, PartialEq)]
pub struct SheetOptions {
    /// Width and height of each picture, in pixels.
    pub panel: u32,
    /// Panels per row (fewer when the model has fewer panels).
    pub columns: u32,
    /// Which morph path renders the panels.
    pub morph: MorphMode,
    /// Picture background: straight sRGB-encoded RGBA, each 0 to 1 (alpha is ignored: the
    /// sheet is opaque).
    pub background: [f32; 4],
    /// The title; `None`: the model's file name.
    pub title: Option<String>,
    /// What the camera frames (the same for every panel).
    pub framing: Framing,
    /// The look every panel wears (slider values and, on the default head, colours).
    pub look: Option<crate::look::Look>,
    /// Panels of the look sliders (each at its two ends) instead of the targets.
    pub looks: bool,
    /// Panels of these combinations of channels instead of the targets (when not empty).
    pub combos: Vec<Combo>,
}

/// What the sheet's camera frames. Either way it is one front camera for every panel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Framing {
    /// The part of the model its morph targets move (see [`moving_bounds`]): the face of a
    /// full-body avatar, so small motions stay visible. On a combinations sheet, the part its
    /// combinations move ([`posed_bounds`]). The whole model when no target moves anything.
    #[default]
    Targets,
    /// The whole model in its rest pose, as the stage window frames it.
    Model,
}

/// The error for a framing that is not `targets` or `model`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown framing {0:?} (expected \"targets\" or \"model\")")]
pub struct ParseFramingError(pub String);

impl std::str::FromStr for Framing {
    type Err = ParseFramingError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "targets" | "face" => Ok(Framing::Targets),
            "model" => Ok(Framing::Model),
            _ => Err(ParseFramingError(s.to_owned())),
        }
    }
}

impl std::fmt::Display for Framing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Framing::Targets => "targets",
            Framing::Model => "model",
        })
    }
}

/// A vertex counts as moving when its delta is at least this fraction of the largest delta
/// any target makes. Sculpted and scanned shape sets move most of the head by a hair in every
/// shape (ICT-FaceKit's `cheekSquint` reaches the neck); motion this small is invisible at
/// sheet scale and framing it would shrink every face.
const MOVING_FRACTION: f32 = 0.1;
/// A target's own strongest motion always counts: the threshold for a target never exceeds
/// this fraction of its largest delta, so a target that only moves a little (a pupil, an eye
/// turning) next to one that moves a lot (a jaw, a body shape) is still framed where it moves.
const OWN_FRACTION: f32 = 0.5;

/// The region [`Framing::Targets`] frames: the rest-pose world bounds of every vertex some morph
/// target visibly moves (both where it rests and where the full delta takes it), grown by a
/// margin and to at least a quarter of the whole model's size on each axis, so a model that
/// moves only its lips still shows the face around them. `None` when no target moves any
/// vertex.
///
/// A vertex moves visibly when its world-space delta is at least 10% of the largest delta of
/// any target, or half of its own target's largest delta if that is smaller. Deltas that are
/// export noise (under 1e-4 of the model's size) never count.
pub fn moving_bounds(avatar: &Avatar) -> Option<Aabb> {
    let whole = avatar.bounds()?;
    let extent = whole.size().max_element();
    if !extent.is_finite() || extent <= 0.0 {
        return None;
    }
    let noise = extent * 1e-4;
    let world = avatar.world_transforms(&avatar.rest_pose());
    // Every target of every drawn mesh, with its node's world transform.
    let targets: Vec<(&Mat4, &[Vec3], &MorphTarget)> = avatar
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(index, node)| {
            let mesh = node.mesh.and_then(|m| avatar.meshes.get(m))?;
            Some((world.get(index)?, mesh))
        })
        .flat_map(|(transform, mesh)| {
            mesh.primitives.iter().flat_map(move |prim| {
                prim.targets
                    .iter()
                    .map(move |target| (transform, prim.positions.as_slice(), target))
            })
        })
        .collect();
    let moved = |transform: &Mat4, p: Vec3, d: Vec3| {
        let from = transform.transform_point3(p);
        let to = transform.transform_point3(p + d);
        let length = (to - from).length();
        (from, to, if length.is_finite() { length } else { 0.0 })
    };
    let largest_of = |(transform, positions, target): &(&Mat4, &[Vec3], &MorphTarget)| {
        positions
            .iter()
            .zip(&target.positions)
            .map(|(p, d)| moved(transform, *p, *d).2)
            .fold(0.0f32, f32::max)
    };
    let largest: Vec<f32> = targets.iter().map(largest_of).collect();
    let overall = largest.iter().copied().fold(0.0f32, f32::max);
    let mut bounds: Option<Aabb> = None;
    let mut include = |q: Vec3| {
        if !q.is_finite() {
            return;
        }
        bounds = Some(match bounds {
            None => Aabb { min: q, max: q },
            Some(b) => Aabb {
                min: b.min.min(q),
                max: b.max.max(q),
            },
        });
    };
    for ((transform, positions, target), own) in targets.iter().zip(&largest) {
        let threshold = (overall * MOVING_FRACTION)
            .min(own * OWN_FRACTION)
            .max(noise);
        for (p, d) in positions.iter().zip(&target.positions) {
            let (from, to, length) = moved(transform, *p, *d);
            if length > threshold {
                include(from);
                include(to);
            }
        }
    }
    Some(framed(bounds?, whole))
}

/// The box a sheet frames around `moving` (what the panels move) on a model whose bounds are
/// `whole`: a margin of 8% of its largest side, and at least a quarter of the model each way.
pub(crate) fn framed(moving: Aabb, whole: Aabb) -> Aabb {
    let margin = Vec3::splat(moving.size().max_element() * 0.08);
    let least = whole.size() * 0.25;
    let half = (moving.size() * 0.5 + margin).max(least * 0.5);
    let center = moving.center();
    Aabb {
        min: center - half,
        max: center + half,
    }
}

impl Default for SheetOptions {
    fn default() -> Self {
        SheetOptions {
            panel: DEFAULT_PANEL,
            columns: DEFAULT_COLUMNS,
            morph: MorphMode::Auto,
            background: DEFAULT_BACKGROUND,
            title: None,
            framing: Framing::Targets,
            look: None,
            looks: false,
            combos: Vec::new(),
        }
    }
}

impl SheetOptions {
    /// Checks the panel size and column count.
    pub fn validate(&self) -> Result<(), SheetError> {
        if !(MIN_PANEL..=MAX_PANEL).contains(&self.panel) {
            return Err(SheetError::PanelSize(self.panel));
        }
        if !(1..=MAX_COLUMNS).contains(&self.columns) {
            return Err(SheetError::Columns(self.columns));
        }
        Ok(())
    }
}

/// A side of the avatar's face (its own left and right, not the viewer's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The avatar's left: on the viewer's right in a front view.
    Left,
    /// The avatar's right: on the viewer's left in a front view.
    Right,
}

impl Side {
    /// The badge letter.
    pub fn letter(self) -> char {
        match self {
            Side::Left => 'L',
            Side::Right => 'R',
        }
    }

    /// Whether this side appears on the viewer's right in a front view.
    pub fn on_viewers_right(self) -> bool {
        self == Side::Left
    }
}

/// The side an ARKit channel acts on, from its canonical name (`eyeBlinkLeft`, `jawRight`).
/// Directional channels (`jawLeft`, `mouthRight`) count as sided: their motion is towards that
/// side.
pub fn side_of_channel(channel: Channel) -> Option<Side> {
    let name = channel.name();
    if name.ends_with("Left") {
        Some(Side::Left)
    } else if name.ends_with("Right") {
        Some(Side::Right)
    } else {
        None
    }
}

/// The side a target name acts on: through its ARKit channel when it maps to one, else from
/// rig naming conventions: a `Left`/`Right` suffix (camel or Pascal case: `SmileLeft`), a
/// `left`/`right`/`L`/`R` (any case) suffix after `_`, `.`, `-` or a space (`Smile_L`,
/// `smile.l`, `Smile_Right`), or the same as a prefix (`L_Smile`, `Left_Smile`). Words that only
/// end in the letters (`Upright`) are not sided.
pub fn side_of_name(name: &str) -> Option<Side> {
    if let Some(channel) = channel_for_target(name) {
        return side_of_channel(channel);
    }
    let name = name.trim();
    let side_word = |word: &str| match word.to_ascii_lowercase().as_str() {
        "l" | "left" => Some(Side::Left),
        "r" | "right" => Some(Side::Right),
        _ => None,
    };
    let is_separator = |c: char| matches!(c, '_' | '.' | '-' | ' ');
    if let Some((_, last)) = name.rsplit_once(is_separator) {
        if let Some(side) = side_word(last) {
            return Some(side);
        }
    }
    if let Some((first, rest)) = name.split_once(is_separator) {
        if !rest.is_empty() {
            if let Some(side) = side_word(first) {
                return Some(side);
            }
        }
    }
    for (suffix, side) in [("Left", Side::Left), ("Right", Side::Right)] {
        if let Some(stem) = name.strip_suffix(suffix) {
            if !stem.is_empty() {
                return Some(side);
            }
        }
    }
    None
}

/// One target of one mesh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TargetRef {
    /// Mesh index in the avatar.
    pub mesh: usize,
    /// Target index in that mesh.
    pub target: usize,
}

/// What poses a panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drive {
    /// The rest pose.
    Neutral,
    /// A frame with this channel at 1, through the avatar's automatic mapping.
    Channel(Channel),
    /// The panel's [`SheetEntry::targets`] set to weight 1 directly.
    Weights,
    /// A face-shape slider of the mapping at its upper (`up`) or lower end.
    Slider {
        /// Its index in the mapping's sliders.
        index: usize,
        /// The upper end (else the lower).
        up: bool,
    },
    /// A combination of channels through the mapping (see [`combo_pose`]).
    Combo {
        /// Its index in [`SheetOptions::combos`].
        index: usize,
    },
}

/// One panel of the sheet.
#[derive(Debug, Clone, PartialEq)]
pub struct SheetEntry {
    /// The main label: the target's name (the first one met, for channel panels), `neutral`,
    /// or `<mesh> #<index>` for an unnamed target.
    pub name: String,
    /// The second label line: `ARKit <channel>` when the channel is spelt differently from
    /// `name`, `not ARKit` for targets no channel drives, and how many meshes the panel moves
    /// when more than one.
    pub caption: Option<String>,
    /// The avatar's side the target acts on, if it is sided.
    pub side: Option<Side>,
    /// What poses the panel.
    pub drive: Drive,
    /// Every target the panel sets to 1 (for channel panels: every target the channel drives).
    pub targets: Vec<TargetRef>,
}

impl SheetEntry {
    /// The ARKit channel that drives the panel, if any.
    pub fn channel(&self) -> Option<Channel> {
        match self.drive {
            Drive::Channel(channel) => Some(channel),
            _ => None,
        }
    }

    /// Number of distinct meshes the panel moves.
    pub fn mesh_count(&self) -> usize {
        let mut meshes: Vec<usize> = self.targets.iter().map(|t| t.mesh).collect();
        meshes.sort_unstable();
        meshes.dedup();
        meshes.len()
    }
}

/// The panels of `avatar`'s sheet, in order: the neutral face, then one per ARKit channel some
/// target maps to (canonical order), then one per other distinct target name (file order), then
/// one per unnamed target.
pub fn sheet_entries(avatar: &Avatar) -> Vec<SheetEntry> {
    let mut by_channel: Vec<Option<SheetEntry>> = vec![None; crate::arkit::COUNT];
    let mut others: Vec<SheetEntry> = Vec::new();
    let mut by_name: HashMap<&str, usize> = HashMap::new();
    let mut unnamed: Vec<SheetEntry> = Vec::new();
    let correctives = Correctives::resolve(avatar);
    let looks = crate::headgen::look::target_names();
    for (mesh, m) in avatar.meshes.iter().enumerate() {
        if avatar.mesh_is_coarser_level(mesh) {
            // The sheet draws level 0; a coarser level repeats its targets.
            continue;
        }
        for (target, name) in m.target_names.iter().enumerate() {
            let r = TargetRef { mesh, target };
            let corrective = correctives
                .list
                .iter()
                .any(|c| c.mesh == mesh && c.target == target);
            if corrective || looks.contains(&name.as_str()) {
                // Not an expression: a face shape, or a fix that follows its two inputs.
                continue;
            }
            if name.trim().is_empty() {
                let owner = m
                    .name
                    .as_deref()
                    .filter(|n| !n.trim().is_empty())
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("mesh {mesh}"));
                unnamed.push(SheetEntry {
                    name: format!("{owner} #{target}"),
                    caption: None,
                    side: None,
                    drive: Drive::Weights,
                    targets: vec![r],
                });
            } else if let Some(channel) = channel_for_target(name) {
                by_channel[channel.index()]
                    .get_or_insert_with(|| SheetEntry {
                        name: name.clone(),
                        caption: None,
                        side: side_of_channel(channel),
                        drive: Drive::Channel(channel),
                        targets: Vec::new(),
                    })
                    .targets
                    .push(r);
            } else if let Some(&index) = by_name.get(name.as_str()) {
                others[index].targets.push(r);
            } else {
                by_name.insert(name, others.len());
                others.push(SheetEntry {
                    name: name.clone(),
                    caption: None,
                    side: side_of_name(name),
                    drive: Drive::Weights,
                    targets: vec![r],
                });
            }
        }
    }
    let neutral = SheetEntry {
        name: "neutral".to_owned(),
        caption: Some("rest pose".to_owned()),
        side: None,
        drive: Drive::Neutral,
        targets: Vec::new(),
    };
    let mut entries: Vec<SheetEntry> = std::iter::once(neutral)
        .chain(by_channel.into_iter().flatten())
        .chain(others)
        .chain(unnamed)
        .collect();
    for entry in entries.iter_mut().skip(1) {
        entry.caption = caption(entry);
    }
    entries
}

/// [`sheet_entries`], with the captions of targets that `mapping` drives through a VRM
/// expression saying from which channels (`<- eyeBlinkLeft +1`).
pub fn sheet_entries_with(avatar: &Avatar, mapping: &CompiledMapping) -> Vec<SheetEntry> {
    let mut entries = sheet_entries(avatar);
    for entry in entries.iter_mut() {
        if let Some(via) = expression_caption(avatar, mapping, entry) {
            entry.caption = Some(via);
        }
    }
    entries
}

/// For a panel of targets no channel names but a VRM expression of `mapping` moves (the ARKit
/// fallback, or a mapping file's `vrm:` entry): `<- <channel> +<more>`, the first channel that
/// drives the expression and how many others, so the sheet says how the phone reaches it.
fn expression_caption(
    avatar: &Avatar,
    mapping: &CompiledMapping,
    entry: &SheetEntry,
) -> Option<String> {
    if entry.drive != Drive::Weights {
        return None;
    }
    let expressions = &avatar.vrm.as_ref()?.expressions;
    let binding = mapping.expressions.iter().find(|b| {
        b.binds.iter().any(|bind| {
            entry
                .targets
                .iter()
                .any(|t| t.mesh == bind.mesh && t.target == bind.target)
        })
    })?;
    expressions.get(binding.expression)?;
    let sources = &mapping.drivers.get(binding.driver)?.sources;
    let (first, _) = sources.first()?;
    Some(match sources.len() {
        1 => format!("<- {first}"),
        n => format!("<- {first} +{}", n - 1),
    })
}

/// The second label line of a target panel.
fn caption(entry: &SheetEntry) -> Option<String> {
    let mut parts = Vec::new();
    match entry.drive {
        Drive::Channel(channel) if entry.name != channel.name() => {
            parts.push(format!("ARKit {}", channel.name()));
        }
        Drive::Weights => parts.push("not ARKit".to_owned()),
        _ => {}
    }
    let meshes = entry.mesh_count();
    if meshes > 1 {
        parts.push(format!("{meshes} meshes"));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// The model's name for the title: the file name of [`Avatar::source`].
fn model_name(source: &str) -> String {
    Path::new(source)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| "model".to_owned())
}

/// The title's detail line: how many targets, how many ARKit channels they cover.
fn summary(avatar: &Avatar, entries: &[SheetEntry]) -> String {
    let panels = entries.len().saturating_sub(1);
    let channels = entries.iter().filter(|e| e.channel().is_some()).count();
    // The coarser levels of detail repeat the finest level's targets: not counted.
    let finest = || {
        avatar
            .meshes
            .iter()
            .enumerate()
            .filter(|&(i, _)| !avatar.mesh_is_coarser_level(i))
            .map(|(_, m)| m)
    };
    let total: usize = finest().map(|m| m.target_count()).sum();
    let meshes = finest().filter(|m| m.target_count() > 0).count();
    let mut out = format!(
        "{panels} morph target{}",
        if panels == 1 { "" } else { "s" }
    );
    if total != panels {
        let plural = if meshes == 1 { "" } else { "es" };
        out.push_str(&format!(" ({total} on {meshes} mesh{plural})"));
    }
    out.push_str(&format!(
        ", {channels}/{} ARKit channels; all at weight 1",
        crate::arkit::COUNT
    ));
    out
}

/// The pose of `entry`'s panel: the rest pose, then its channel at 1 through `mapping` (which
/// also turns the eye nodes for `eyeLook*`) or its targets at weight 1.
pub fn panel_pose(entry: &SheetEntry, mapping: &CompiledMapping, rest: &Pose) -> Pose {
    let mut pose = rest.clone();
    match entry.drive {
        // A slider panel is posed by [`look_panel_pose`], a combination by [`combo_pose`].
        Drive::Neutral | Drive::Slider { .. } | Drive::Combo { .. } => {}
        Drive::Channel(channel) => {
            let mut frame = FaceFrame::empty(
                Protocol::Vmc,
                SocketAddr::from(([127, 0, 0, 1], 0)),
                Instant::now(),
            );
            frame.set(channel, 1.0);
            mapping.apply(&frame, &mut pose);
        }
        Drive::Weights => {
            for t in &entry.targets {
                if let Some(w) = pose
                    .weights
                    .get_mut(t.mesh)
                    .and_then(|m| m.get_mut(t.target))
                {
                    *w = 1.0;
                }
            }
        }
    }
    pose
}

/// The panels of a look sheet: the neutral face, then each of `mapping`'s face-shape sliders
/// at its lower and its upper end.
pub fn look_entries(mapping: &CompiledMapping) -> Vec<SheetEntry> {
    let mut entries = vec![SheetEntry {
        name: "neutral".into(),
        caption: None,
        side: None,
        drive: Drive::Neutral,
        targets: Vec::new(),
    }];
    for (index, slider) in mapping.sliders().iter().enumerate() {
        let targets: Vec<TargetRef> = slider
            .influences
            .iter()
            .map(|i| TargetRef {
                mesh: i.mesh,
                target: i.target,
            })
            .collect();
        for (up, value) in [(false, slider.min), (true, slider.max)] {
            entries.push(SheetEntry {
                name: slider.name.clone(),
                caption: Some(format!("{} at {value:+}", slider.label)),
                side: None,
                drive: Drive::Slider { index, up },
                targets: targets.clone(),
            });
        }
    }
    entries
}

/// [`panel_pose`] on top of a look: `rest` already wears `base`; a slider panel moves its
/// slider to its end; the correctives and the wrinkle maps follow the panel's weights.
pub fn look_panel_pose(
    entry: &SheetEntry,
    mapping: &CompiledMapping,
    rest: &Pose,
    base: &crate::mapping::SliderValues,
    correctives: &crate::avatar::correctives::Correctives,
) -> Pose {
    let mut pose = panel_pose(entry, mapping, rest);
    if let Drive::Slider { index, up } = entry.drive {
        if let Some(slider) = mapping.sliders().iter().nth(index) {
            let mut values = base.clone();
            values.set(index, if up { slider.max } else { slider.min });
            mapping.sliders().apply(&values, &mut pose);
        }
    }
    correctives.apply(&mut pose);
    crate::mapping::wrinkles::apply(&mapping.wrinkles, &mut pose);
    pose
}

/// Renders the contact sheet of `avatar` with its automatic mapping (see the module docs for
/// what it shows). Creates its own headless GL context on the calling thread.
pub fn render_sheet(avatar: Avatar, options: &SheetOptions) -> Result<RgbaImage, SheetError> {
    let mapping = CompiledMapping::auto(&avatar);
    render_sheet_with(avatar, &mapping, options)
}

/// Renders the contact sheet of `avatar`, driving ARKit-named panels through `mapping` (so eye
/// nodes turn as the mapping file says).
pub fn render_sheet_with(
    avatar: Avatar,
    mapping: &CompiledMapping,
    options: &SheetOptions,
) -> Result<RgbaImage, SheetError> {
    let entries = if options.looks {
        look_entries(mapping)
    } else if !options.combos.is_empty() {
        combo_entries(&options.combos)
    } else {
        sheet_entries_with(&avatar, mapping)
    };
    if entries.len() < 2 && options.looks {
        return Err(SheetError::NoSliders);
    }
    let layout = SheetLayout::new(entries.len(), options)?;
    let title = options
        .title
        .clone()
        .unwrap_or_else(|| model_name(&avatar.source));
    let mut sheet = RgbaImage::filled(layout.width, layout.height, SHEET_COLOR);
    let sided = entries.iter().any(|e| e.side.is_some());
    draw_title(
        &mut sheet,
        &layout,
        &title,
        &if options.looks {
            format!(
                "{} face-shape sliders, each at its two ends",
                mapping.sliders().len()
            )
        } else if !options.combos.is_empty() {
            format!(
                "{} combination{} of ARKit channels through the mapping, correctives applied",
                options.combos.len(),
                if options.combos.len() == 1 { "" } else { "s" }
            )
        } else {
            summary(&avatar, &entries)
        },
        sided,
    );

    let started = Instant::now();
    let look = options.look.clone().unwrap_or_default();
    let base = look.values(mapping.sliders());
    let mut rest = avatar.rest_pose();
    mapping.sliders().apply(&base, &mut rest);
    let correctives = crate::avatar::correctives::Correctives::resolve(&avatar);
    let pose_of = |entry: &SheetEntry| match entry.drive {
        Drive::Combo { index } => match options.combos.get(index) {
            Some(combo) => combo_pose(combo, mapping, &rest, &correctives),
            None => rest.clone(),
        },
        _ => look_panel_pose(entry, mapping, &rest, &base, &correctives),
    };
    let poses: Vec<Pose> = entries.iter().map(pose_of).collect();
    let bounds = match options.framing {
        // A combinations sheet frames what its panels move: the face, close up.
        Framing::Targets if !options.combos.is_empty() && !options.looks => {
            posed_bounds(&avatar, &rest, &poses)
                .or_else(|| moving_bounds(&avatar))
                .or_else(|| avatar.bounds())
        }
        Framing::Targets => moving_bounds(&avatar).or_else(|| avatar.bounds()),
        Framing::Model => avatar.bounds(),
    }
    .unwrap_or(Aabb {
        min: Vec3::splat(-0.5),
        max: Vec3::splat(0.5),
    });
    let camera = Camera::framing(bounds, 1.0);
    let ctx = HeadlessContext::new(options.panel, options.panel)?;
    // Declared after the context, so it is dropped first, while the context is alive.
    let mut renderer = Renderer::new(ctx.gl(), &avatar, options.morph)?;
    // The sheet shows each target on the most detailed level.
    renderer.set_lod(crate::config::LodMode::Fixed(0));
    let wrinkles: Vec<crate::render::WrinkleMap> =
        mapping.wrinkles.iter().map(Into::into).collect();
    if let Err(error) = renderer.set_wrinkles(&avatar, &wrinkles) {
        tracing::warn!(%error, "the sheet is drawn without wrinkle maps");
    }
    if let Some(atlas) = crate::look::default_head_atlas(&avatar) {
        let palette = crate::look::palette_of(&look.colors);
        if palette != crate::headgen::texture::Palette::DEFAULT {
            let texture = crate::avatar::Texture {
                width: crate::headgen::texture::SIZE,
                height: crate::headgen::texture::SIZE,
                rgba: crate::headgen::texture::paint_with(&palette).into(),
                sampler: avatar.textures[atlas].sampler,
            };
            renderer.replace_texture(atlas, &texture)?;
        }
    }
    let target = DrawTarget {
        width: options.panel,
        height: options.panel,
        clear_color: options.background,
        alpha: false,
    };
    for (index, (entry, pose)) in entries.iter().zip(&poses).enumerate() {
        ctx.bind();
        renderer.draw(pose, &camera, &target);
        let picture = ctx.read_rgba();
        let at = layout.picture(index);
        canvas::blit(&mut sheet, &picture, at.x, at.y);
        draw_label(&mut sheet, layout.label(index), entry);
        tracing::trace!(panel = index, name = %entry.name, "sheet panel drawn");
    }
    let morph = renderer.morph_path();
    drop(renderer);
    tracing::info!(
        panels = entries.len(),
        width = layout.width,
        height = layout.height,
        ?morph,
        framing = %options.framing,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "contact sheet rendered"
    );
    Ok(sheet)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::Mesh;

    fn mesh(name: &str, targets: &[&str]) -> Mesh {
        Mesh {
            name: Some(name.to_owned()),
            target_names: targets.iter().map(|s| (*s).to_owned()).collect(),
            default_weights: vec![0.0; targets.len()],
            primitives: Vec::new(),
        }
    }

    fn avatar(meshes: Vec<Mesh>) -> Avatar {
        Avatar {
            source: "models/test head.glb".to_owned(),
            meshes,
            ..Avatar::default()
        }
    }

    #[test]
    fn sidedness_follows_channels_and_rig_conventions() {
        let cases = [
            ("eyeBlinkLeft", Some(Side::Left)),
            ("EyeBlinkRight", Some(Side::Right)),
            ("eyeBlink_L", Some(Side::Left)),
            ("BlendShape.mouthSmileRight", Some(Side::Right)),
            ("jawLeft", Some(Side::Left)),
            ("jawOpen", None),
            ("browInnerUp", None),
            ("Fcl_EYE_Close_L", Some(Side::Left)),
            ("Fcl_EYE_Close_R", Some(Side::Right)),
            ("Smile.L", Some(Side::Left)),
            ("smile.r", Some(Side::Right)),
            ("Smile-L", Some(Side::Left)),
            ("SneerLeft", Some(Side::Left)),
            ("Sneer_right", Some(Side::Right)),
            ("L_Brow_Raise", Some(Side::Left)),
            ("Right_Brow_Raise", Some(Side::Right)),
            ("Key 1", None),
            ("Upright", None),
            ("Bright", None),
            ("Left", None),
            ("L", None),
            ("", None),
            ("Cheek_Lift", None),
        ];
        for (name, want) in cases {
            assert_eq!(side_of_name(name), want, "{name:?}");
        }
    }

    #[test]
    fn badges_sit_where_the_side_appears_in_a_front_view() {
        assert!(Side::Left.on_viewers_right());
        assert!(!Side::Right.on_viewers_right());
        assert_eq!(side_of_channel(Channel::EyeBlinkLeft), Some(Side::Left));
        assert_eq!(side_of_channel(Channel::MouthRight), Some(Side::Right));
        assert_eq!(side_of_channel(Channel::TongueOut), None);
    }

    #[test]
    fn entries_dedupe_names_across_meshes_in_arkit_order() {
        let a = avatar(vec![
            mesh(
                "Face",
                &[
                    "jawOpen",
                    "Smile_L",
                    "",
                    "eyeBlinkRight",
                    "eyeBlinkLeft",
                    "Key",
                ],
            ),
            mesh("Teeth", &["jawOpen", "Smile_L"]),
            mesh("Lashes", &["EyeBlinkLeft", "eyeBlink_R"]),
        ]);
        let entries = sheet_entries(&a);
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "neutral",
                "eyeBlinkLeft",
                "eyeBlinkRight",
                "jawOpen",
                "Smile_L",
                "Key",
                "Face #2"
            ]
        );
        assert_eq!(entries[0].drive, Drive::Neutral);
        assert!(entries[0].targets.is_empty());

        let blink = &entries[1];
        assert_eq!(blink.drive, Drive::Channel(Channel::EyeBlinkLeft));
        assert_eq!(blink.side, Some(Side::Left));
        assert_eq!(
            blink.targets,
            [
                TargetRef { mesh: 0, target: 4 },
                TargetRef { mesh: 2, target: 0 }
            ]
        );
        assert_eq!(blink.caption.as_deref(), Some("2 meshes"));
        assert_eq!(entries[2].side, Some(Side::Right));

        let jaw = &entries[3];
        assert_eq!(jaw.channel(), Some(Channel::JawOpen));
        assert_eq!(jaw.side, None);
        assert_eq!(jaw.mesh_count(), 2);

        let smile = &entries[4];
        assert_eq!(smile.drive, Drive::Weights);
        assert_eq!(smile.side, Some(Side::Left));
        assert_eq!(
            smile.targets,
            [
                TargetRef { mesh: 0, target: 1 },
                TargetRef { mesh: 1, target: 1 }
            ]
        );
        assert_eq!(smile.caption.as_deref(), Some("not ARKit, 2 meshes"));

        let unnamed = &entries[6];
        assert_eq!(unnamed.targets, [TargetRef { mesh: 0, target: 2 }]);
        assert_eq!(unnamed.drive, Drive::Weights);
    }

    #[test]
    fn captions_name_the_channel_when_spelt_differently() {
        let a = avatar(vec![mesh(
            "Face",
            &["BlendShape.jawOpen", "eyeBlink_L", "mouthFunnel"],
        )]);
        let entries = sheet_entries(&a);
        let caption = |name: &str| {
            entries
                .iter()
                .find(|e| e.name == name)
                .and_then(|e| e.caption.clone())
        };
        assert_eq!(
            caption("BlendShape.jawOpen").as_deref(),
            Some("ARKit jawOpen")
        );
        assert_eq!(caption("eyeBlink_L").as_deref(), Some("ARKit eyeBlinkLeft"));
        assert_eq!(caption("mouthFunnel"), None);
        assert_eq!(caption("neutral").as_deref(), Some("rest pose"));
    }

    #[test]
    fn a_model_without_targets_has_only_the_neutral_panel() {
        let entries = sheet_entries(&Avatar::default());
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].drive, Drive::Neutral);
        let nameless = Avatar {
            meshes: vec![Mesh {
                name: None,
                ..mesh("", &["", ""])
            }],
            ..Avatar::default()
        };
        let entries = sheet_entries(&nameless);
        assert_eq!(entries[1].name, "mesh 0 #0");
        assert_eq!(entries[2].name, "mesh 0 #1");
    }

    #[test]
    fn the_summary_counts_targets_and_channels() {
        let a = avatar(vec![
            mesh("Face", &["jawOpen", "Key"]),
            mesh("Teeth", &["jawOpen"]),
        ]);
        let s = summary(&a, &sheet_entries(&a));
        assert_eq!(
            s,
            "2 morph targets (3 on 2 meshes), 1/52 ARKit channels; all at weight 1"
        );
        assert_eq!(model_name(&a.source), "test head.glb");
        assert_eq!(model_name(""), "model");
    }

    #[test]
    fn coarser_levels_of_detail_are_neither_panels_nor_counted() {
        use crate::avatar::{LodGroup, Node};
        let node = |mesh: usize| Node {
            mesh: Some(mesh),
            ..Node::default()
        };
        let a = Avatar {
            nodes: vec![node(0), node(1)],
            roots: vec![0, 1],
            lods: vec![LodGroup {
                levels: vec![0, 1],
                coverage: Vec::new(),
            }],
            ..avatar(vec![
                mesh("Face", &["jawOpen", "Key"]),
                mesh("Face_LOD1", &["jawOpen", "Key"]),
            ])
        };
        let entries = sheet_entries(&a);
        assert_eq!(entries.len(), 3);
        assert!(entries
            .iter()
            .all(|e| e.targets.iter().all(|t| t.mesh == 0)));
        assert_eq!(
            summary(&a, &entries),
            "2 morph targets, 1/52 ARKit channels; all at weight 1"
        );
    }

    #[test]
    fn options_are_validated() {
        assert!(SheetOptions::default().validate().is_ok());
        let bad = |panel, columns| SheetOptions {
            panel,
            columns,
            ..SheetOptions::default()
        };
        assert!(matches!(
            bad(8, 8).validate(),
            Err(SheetError::PanelSize(8))
        ));
        assert!(matches!(
            bad(256, 0).validate(),
            Err(SheetError::Columns(0))
        ));
        assert!(matches!(
            SheetLayout::new(10_000, &bad(2048, 8)),
            Err(SheetError::TooLarge { .. })
        ));
    }

    /// A square of four vertices at z = 0 on one node, whose single target moves vertex 0.
    fn quad_avatar(names: &[&str], delta: Vec3) -> Avatar {
        use crate::avatar::{MorphTarget, Node, Primitive};
        let positions = vec![
            Vec3::new(-1.0, -1.0, 0.0),
            Vec3::new(1.0, -1.0, 0.0),
            Vec3::new(1.0, 1.0, 0.0),
            Vec3::new(-1.0, 1.0, 0.0),
        ];
        let mut moved = vec![Vec3::ZERO; 4];
        moved[0] = delta;
        let prim = Primitive {
            normals: vec![Vec3::Z; 4],
            uvs: vec![glam::Vec2::ZERO; 4],
            indices: vec![0, 1, 2, 0, 2, 3],
            targets: names
                .iter()
                .map(|_| MorphTarget {
                    positions: moved.clone().into(),
                    ..MorphTarget::default()
                })
                .collect(),
            positions,
            material: None,
            ..Primitive::default()
        };
        let mut m = mesh("Face", names);
        m.primitives.push(prim);
        Avatar {
            source: "quad.glb".to_owned(),
            nodes: vec![Node {
                name: Some("Face".to_owned()),
                translation: Vec3::new(0.0, 10.0, 0.0),
                mesh: Some(0),
                ..Node::default()
            }],
            roots: vec![0],
            meshes: vec![m],
            ..Avatar::default()
        }
    }

    #[test]
    fn panel_poses_drive_channels_and_raw_targets() {
        let a = avatar(vec![
            mesh("Face", &["jawOpen", "Key", "eyeBlinkLeft"]),
            mesh("Teeth", &["jawOpen", "Key"]),
        ]);
        let entries = sheet_entries(&a);
        let mapping = CompiledMapping::auto(&a);
        let rest = a.rest_pose();
        let pose_of = |name: &str| {
            let entry = entries.iter().find(|e| e.name == name).unwrap();
            panel_pose(entry, &mapping, &rest)
        };
        assert_eq!(pose_of("neutral"), rest);
        let jaw = pose_of("jawOpen");
        assert_eq!(jaw.weights, [vec![1.0, 0.0, 0.0], vec![1.0, 0.0]]);
        let key = pose_of("Key");
        assert_eq!(key.weights, [vec![0.0, 1.0, 0.0], vec![0.0, 1.0]]);
        // A hand-made entry pointing outside the avatar changes nothing and does not panic.
        let stray = SheetEntry {
            targets: vec![
                TargetRef { mesh: 7, target: 0 },
                TargetRef { mesh: 0, target: 9 },
            ],
            ..entries[1].clone()
        };
        let stray = SheetEntry {
            drive: Drive::Weights,
            ..stray
        };
        assert_eq!(panel_pose(&stray, &mapping, &rest), rest);
    }

    #[test]
    fn moving_bounds_frame_what_targets_move() {
        let a = quad_avatar(&["Key"], Vec3::new(0.0, 0.0, 0.5));
        let whole = a.bounds().unwrap();
        assert_eq!(whole.min, Vec3::new(-1.0, 9.0, 0.0));
        let b = moving_bounds(&a).unwrap();
        // Only vertex 0 (at (-1, 9, 0) in the world) moves: the box is around it, grown to a
        // quarter of the model and a margin, not the whole quad.
        let center = b.center();
        assert!(
            (center - Vec3::new(-1.0, 9.0, 0.25)).length() < 1e-5,
            "{b:?}"
        );
        assert!(b.size().x >= 0.5 - 1e-5 && b.size().x < 2.0, "{b:?}");
        assert!(b.size().z > 0.5, "{b:?}");
        // Nothing moves: no region.
        let still = quad_avatar(&["Key"], Vec3::ZERO);
        assert_eq!(moving_bounds(&still), None);
        assert_eq!(moving_bounds(&Avatar::default()), None);
    }

    #[test]
    fn tiny_deltas_do_not_widen_the_framing() {
        // "Key" moves vertex 0 by 0.5 and drags the opposite corner, vertex 2 (at (1, 11, 0) in
        // the world), by 2% of that, as scanned shape sets move the rest of the head.
        let mut a = quad_avatar(&["Key"], Vec3::new(0.0, 0.0, 0.5));
        a.meshes[0].primitives[0].targets[0].positions[2] = Vec3::new(0.0, 0.0, 0.01);
        let alone = moving_bounds(&quad_avatar(&["Key"], Vec3::new(0.0, 0.0, 0.5))).unwrap();
        let b = moving_bounds(&a).unwrap();
        assert_eq!(b, alone, "the drag widens the framing");
        assert!(b.max.x < 0.0 && b.max.y < 10.0, "{b:?}");

        // The same small motion as a target of its own is all that target does: it counts.
        let mut a = quad_avatar(&["Key", "Small"], Vec3::new(0.0, 0.0, 0.5));
        let small = &mut a.meshes[0].primitives[0].targets[1].positions;
        small[0] = Vec3::ZERO;
        small[2] = Vec3::new(0.0, 0.0, 0.01);
        let b = moving_bounds(&a).unwrap();
        assert!(
            b.min.x <= -1.0 && b.max.x >= 1.0 && b.min.y <= 9.0 && b.max.y >= 11.0,
            "{b:?}"
        );
    }

    #[test]
    fn framing_parses_and_prints() {
        assert_eq!("targets".parse::<Framing>(), Ok(Framing::Targets));
        assert_eq!(" Face ".parse::<Framing>(), Ok(Framing::Targets));
        assert_eq!("MODEL".parse::<Framing>(), Ok(Framing::Model));
        assert!("head".parse::<Framing>().is_err());
        assert_eq!(Framing::Model.to_string(), "model");
        assert_eq!(SheetOptions::default().framing, Framing::Targets);
    }
}

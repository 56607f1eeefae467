//! The control panel's contents, drawn with egui and free of GL and winit: what the stream
//! reads (raw, calibrated, each mixer layer's part, the final mixed value and the avatar target
//! weights each of the 52 channels drives), the mixer's layers, where the stream comes from and
//! how healthy it is, the draw timings, the actions (capture a neutral, run the calibration
//! routine, choose the performer profile, reload the mapping, open the configuration folder),
//! and every mapping, configuration or profile error verbatim.
//!
//! [`PanelModel`] is what one refresh shows; [`show`] lays it out and returns the actions the
//! user asked for. `render::panel` hosts it in its own window.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use egui::{Color32, RichText};

use crate::calibrate::{Decision, TrackingState};
use crate::control::telemetry::{InputCounters, InputRates, TelemetrySnapshot};
use crate::control::{RoutineView, Topic};
use crate::mixer::LayerReport;

mod api;
mod connect;
mod expressions;
mod lipsync;
mod look;
mod rows;

pub use api::{Approvals, PluginRequest};
pub use connect::ConnectView;
pub use look::{LookAction, LookTabState, LookView, SliderView};
pub use rows::{
    channel_rows, layer_columns, layers_line, target_label, target_weights, ChannelRow, LayerCell,
};

/// What the user asked for with one click.
#[derive(Debug, Clone, PartialEq)]
pub enum PanelAction {
    /// Take the face as it is now as the performer's neutral (and re-centre the head).
    CaptureNeutral,
    /// Start the guided calibration routine.
    StartCalibration,
    /// Answer the routine's review.
    Review(Decision),
    /// Use this performer profile (`None`: no profile, identity ranges).
    ChooseProfile(Option<String>),
    /// Read the mapping file again.
    ReloadMapping,
    /// Open the folder holding the configuration in the file manager.
    OpenConfigFolder,
    /// Show this avatar instead (`None`: the built-in default head).
    SwitchModel(Option<std::path::PathBuf>),
    /// Record the performer's vowels for lip sync from the microphone.
    RecordVowels,
    /// Forget the messages shown.
    ClearMessages,
    /// Answer a stream tool asking for a token of the API.
    AnswerPlugin {
        /// The request ([`PluginRequest::id`]).
        id: u64,
        /// Allow it (`false`: deny).
        allow: bool,
    },
    /// Ask the phone at `address` for data (empty: the phone that sends first), and with
    /// `save` keep it in the configuration.
    SetPhone {
        /// As typed.
        address: String,
        /// Save it as `[ingest] phone`.
        save: bool,
    },
    /// Switch this expression on or off (hold ones too: the panel's buttons toggle).
    ToggleExpression(String),
    /// Switch every expression off.
    ExpressionsOff,
    /// Change the look (the Look tab).
    Look(LookAction),
    /// Show (`true`) or hide the connect card on the stage.
    ShowConnectCard(bool),
}

/// One line (or block) in the panel's message list: errors verbatim, with file, line and column
/// as the parser wrote them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// What it is about.
    pub topic: Topic,
    /// Whether it reports a failure.
    pub error: bool,
    /// The text, verbatim.
    pub text: String,
    /// When it was posted.
    pub at: Instant,
}

/// The panel's messages: the newest few, an error of a topic replaced by the next report on it.
#[derive(Debug, Clone, Default)]
pub struct Messages {
    list: VecDeque<Message>,
}

impl Messages {
    /// The most messages kept.
    pub const CAPACITY: usize = 24;

    /// Posts a message. A success on a topic removes that topic's earlier errors (the problem
    /// is fixed); the list keeps the newest [`Messages::CAPACITY`].
    pub fn post(&mut self, topic: Topic, error: bool, text: impl Into<String>, at: Instant) {
        if !error {
            self.list.retain(|m| m.topic != topic || !m.error);
        }
        self.list.retain(|m| m.topic != topic || m.error != error);
        self.list.push_back(Message {
            topic,
            error,
            text: text.into(),
            at,
        });
        while self.list.len() > Self::CAPACITY {
            self.list.pop_front();
        }
    }

    /// The messages, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Message> {
        self.list.iter()
    }

    /// Whether any message is an error.
    pub fn has_errors(&self) -> bool {
        self.list.iter().any(|m| m.error)
    }

    /// Forgets every message.
    pub fn clear(&mut self) {
        self.list.clear();
    }
}

/// Timings of the stage as the panel shows them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timings {
    /// Age of the newest sample when drawn: median and 99th percentile.
    pub sample_age: Option<[Duration; 2]>,
    /// CPU time of a stage frame: median and 99th percentile.
    pub draw_time: Option<[Duration; 2]>,
    /// Frames per second over the recent frames.
    pub fps: Option<f64>,
    /// What motion smoothing adds to the sample age (interpolation's delay), if anything.
    pub motion_latency: Option<Duration>,
}

/// Everything one refresh of the panel shows.
#[derive(Debug, Clone)]
pub struct PanelModel {
    /// The stream as the ingest side last saw it.
    pub telemetry: TelemetrySnapshot,
    /// The input's totals.
    pub counters: InputCounters,
    /// The input's rates.
    pub rates: InputRates,
    /// What the input is (listening addresses, or the recording replayed).
    pub input: String,
    /// The avatar drawn and the morph path.
    pub avatar: String,
    /// The stage's timings.
    pub timings: Timings,
    /// Advice once the stage has kept drawing well below its cap (a software rasteriser).
    pub advice: Option<String>,
    /// The meters.
    pub rows: Vec<ChannelRow>,
    /// Every target weight drawn.
    pub targets: Vec<(String, f32)>,
    /// Performer profiles found.
    pub profiles: Vec<String>,
    /// The profile in use.
    pub profile: Option<String>,
    /// The avatars offered (`render.models_dir`).
    pub models: Vec<std::path::PathBuf>,
    /// The avatar in use (`None`: the default head).
    pub model: Option<std::path::PathBuf>,
    /// Whether the calibration routine can start (a live input, not a replay).
    pub can_calibrate: bool,
    /// The routine.
    pub routine: RoutineView,
    /// The connect card, once listening started (`None` for a replay).
    pub connect: Option<ConnectView>,
    /// The stage's hotkeys, one per line.
    pub hotkeys: &'static [(&'static str, &'static str)],
    /// Stream tools waiting for the performer to allow or deny them.
    pub plugins: Vec<PluginRequest>,
    /// The expressions and their states (empty without a live input).
    pub expressions: Vec<crate::expressions::ExpressionStatus>,
    /// The look: sliders, colours and presets (filled while the Look tab shows).
    pub look: LookView,
    /// When this model was made (ages are shown relative to it).
    pub now: Instant,
}

/// Which list the panel shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tab {
    /// The 52 channels with raw, calibrated, layer, final and target meters.
    #[default]
    Channels,
    /// Every avatar target weight.
    Targets,
    /// Face-shape sliders, colours and look presets.
    Look,
    /// The stage's hotkeys.
    Help,
}

/// What the panel remembers between refreshes.
#[derive(Debug, Clone, Default)]
pub struct PanelState {
    /// The list shown.
    pub tab: Tab,
    /// Show only rows whose name contains this (case-insensitive).
    pub filter: String,
    /// Show only channels that read above zero.
    pub active_only: bool,
    /// The step chosen for "redo".
    pub redo_step: usize,
    /// Messages.
    pub messages: Messages,
    /// The Look tab's own state.
    pub look: LookTabState,
    /// The phone's address as being typed (`None`: the one in use).
    pub phone: Option<String>,
}

/// The colour of a tracking state's badge.
fn state_color(state: TrackingState) -> Color32 {
    match state {
        TrackingState::Tracking => Color32::from_rgb(60, 170, 90),
        TrackingState::Reacquire => Color32::from_rgb(90, 160, 200),
        TrackingState::Stale | TrackingState::Hold => Color32::from_rgb(220, 170, 40),
        TrackingState::Fade | TrackingState::Neutral => Color32::from_rgb(200, 80, 70),
    }
}

/// What a tracking state means to a streamer; `source` is what tracks ("the phone", "the
/// webcam").
fn state_hint(state: TrackingState, source: &str) -> String {
    match state {
        TrackingState::Tracking => format!("{source} sees your face"),
        TrackingState::Reacquire => "face found again, easing in".into(),
        TrackingState::Stale => format!("no fresh data from {source}"),
        TrackingState::Hold => "holding the last pose".into(),
        TrackingState::Fade => "fading to neutral".into(),
        TrackingState::Neutral => format!("waiting for {source}"),
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// A horizontal bar of `value` (0 to 1) in `color`, `width` points wide, without text.
fn bar(ui: &mut egui::Ui, value: Option<f32>, color: Color32, width: f32) -> egui::Response {
    let height = ui.text_style_height(&egui::TextStyle::Body) * 0.7;
    let (rect, response) = ui.allocate_exact_size(egui::vec2(width, height), egui::Sense::hover());
    let painter = ui.painter();
    painter.rect_filled(rect, 2.0, ui.visuals().extreme_bg_color);
    if let Some(v) = value.filter(|v| v.is_finite()) {
        let mut fill = rect;
        fill.set_width(rect.width() * v.clamp(0.0, 1.0));
        painter.rect_filled(fill, 2.0, color);
    }
    response
}

/// A horizontal meter of `value` (0 to 1) in `color`, `width` points wide, with the value
/// written beside it ("-" when absent).
fn meter(ui: &mut egui::Ui, value: Option<f32>, color: Color32, width: f32) {
    bar(ui, value, color, width);
    let text = value.map_or_else(|| "  -  ".to_string(), |v| format!("{v:.2}"));
    ui.monospace(text);
}

/// `name` cut to at most `max` characters, the last of them "…" when it was longer.
fn truncated(name: &str, max: usize) -> String {
    if name.chars().count() <= max {
        return name.to_string();
    }
    let mut out: String = name.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The share of the panel's height the status, cards and actions take before they scroll.
const TOP_SHARE: f32 = 0.5;

/// The least height they get, however small the window.
const TOP_MIN_HEIGHT: f32 = 120.0;

/// Lays the panel out in `ui` and returns the actions asked for.
pub fn show(ui: &mut egui::Ui, model: &PanelModel, state: &mut PanelState) -> Vec<PanelAction> {
    let mut actions = Vec::new();
    // The window is cleared to the panels' fill colour, so the panels draw no fill of their
    // own (on a software rasteriser each fill is a blended pass over the whole window); the
    // plugins' prompt alone has a tint. A stream tool asking for a token waits on the performer: its prompt sits above
    // everything else, outside the scrolling part, so a long connect card cannot hide it.
    if !model.plugins.is_empty() {
        egui::Panel::top("plugins")
            .frame(
                egui::Frame::side_top_panel(ui.style())
                    .fill(Color32::from_rgba_unmultiplied(220, 150, 40, 40)),
            )
            .show(ui, |ui| api::section(ui, &model.plugins, &mut actions));
    }
    // The status, the cards and the actions take at most about half the window and scroll
    // past that, so the tabs and their lists below stay on screen however much the cards say.
    egui::CentralPanel::default()
        .frame(egui::Frame::central_panel(ui.style()).fill(Color32::TRANSPARENT))
        .show(ui, |ui| {
            let top_limit = (ui.available_height() * TOP_SHARE).max(TOP_MIN_HEIGHT);
            egui::ScrollArea::vertical()
                .id_salt("top")
                .max_height(top_limit)
                .auto_shrink([false, true])
                .show(ui, |ui| {
                    status(ui, model);
                    if let Some(view) = &model.connect {
                        connect::section(ui, view, &mut state.phone, &mut actions);
                    }
                    lipsync::section(
                        ui,
                        &model.telemetry,
                        model.profile.is_some(),
                        model.now,
                        &mut actions,
                    );
                    expressions::section(ui, &model.expressions, &mut actions);
                    ui.separator();
                    controls(ui, model, state, &mut actions);
                    routine(ui, model, state, &mut actions);
                    messages(ui, model, state, &mut actions);
                });
            ui.separator();
            ui.horizontal_wrapped(|ui| {
                ui.selectable_value(&mut state.tab, Tab::Channels, "Channels");
                ui.selectable_value(&mut state.tab, Tab::Targets, "Avatar targets");
                ui.selectable_value(&mut state.tab, Tab::Look, "Look");
                ui.selectable_value(&mut state.tab, Tab::Help, "Hotkeys");
                if matches!(state.tab, Tab::Channels | Tab::Targets) {
                    ui.separator();
                    ui.label("Filter:");
                    ui.add(egui::TextEdit::singleline(&mut state.filter).desired_width(120.0));
                    ui.checkbox(&mut state.active_only, "moving only");
                }
            });
            ui.separator();
            match state.tab {
                Tab::Channels => channels(ui, model, state),
                Tab::Targets => targets(ui, model, state),
                Tab::Look => look::tab(ui, &model.look, &mut state.look, &mut actions),
                Tab::Help => help(ui, model),
            }
        });
    actions
}

fn status(ui: &mut egui::Ui, model: &PanelModel) {
    let t = &model.telemetry;
    let webcam = model
        .connect
        .as_ref()
        .is_some_and(|c| c.card.webcam_state().is_some());
    let source = if webcam { "the webcam" } else { "the phone" };
    ui.horizontal_wrapped(|ui| {
        let state = t.tracking;
        ui.label(
            RichText::new(format!(" {} ", state.name()))
                .strong()
                .color(Color32::WHITE)
                .background_color(state_color(state)),
        );
        let since = model.now.saturating_duration_since(t.tracking_since);
        ui.label(format!(
            "{} (for {:.0} s)",
            state_hint(state, source),
            since.as_secs_f64()
        ));
        ui.separator();
        match t.source() {
            Some((protocol, from)) => ui.label(format!("{} from {}", protocol.name(), from)),
            None => ui.label("no sender yet"),
        };
    });
    ui.horizontal_wrapped(|ui| {
        let c = &model.counters;
        ui.label(if webcam {
            format!(
                "{:.0} camera frames/s, {:.0} tracked/s",
                model.rates.datagrams, model.rates.frames
            )
        } else {
            format!(
                "{:.0} packets/s, {:.0} frames/s",
                model.rates.datagrams, model.rates.frames
            )
        });
        ui.separator();
        let normal = ui.visuals().text_color();
        let warn = |n: u64| {
            if n > 0 {
                Color32::from_rgb(220, 150, 40)
            } else {
                normal
            }
        };
        ui.label(RichText::new(format!("malformed {}", c.malformed)).color(warn(c.malformed)));
        ui.label(RichText::new(format!("rejected {}", c.rejected)).color(warn(c.rejected)));
        // Frames the stage did not draw because a newer one was waiting: not network loss.
        ui.label(format!("skipped {}", c.dropped)).on_hover_text(
            "frames the stage did not draw because a newer one had arrived (not network loss)",
        );
        ui.label(format!("frames {}", c.frames));
    });
    ui.horizontal_wrapped(|ui| {
        let tm = &model.timings;
        match tm.sample_age {
            Some([p50, p99]) => ui.label(format!("sample age p50 {} p99 {}", ms(p50), ms(p99))),
            None => ui.label("sample age -"),
        };
        if let Some(latency) = tm.motion_latency {
            ui.label(format!("(motion smoothing adds {})", ms(latency)));
        }
        ui.separator();
        match tm.draw_time {
            Some([p50, p99]) => ui.label(format!("frame time p50 {} p99 {}", ms(p50), ms(p99))),
            None => ui.label("frame time -"),
        };
        if let Some(fps) = tm.fps {
            ui.label(format!("{fps:.0} fps"));
        }
    });
    if let Some(advice) = &model.advice {
        ui.label(RichText::new(advice).color(Color32::from_rgb(220, 150, 40)));
    }
    if let Some(report) = &t.mix {
        ui.label(layers_line(report));
    }
    ui.label(RichText::new(format!("{}  |  {}", model.input, model.avatar)).weak());
}

fn controls(
    ui: &mut egui::Ui,
    model: &PanelModel,
    state: &mut PanelState,
    actions: &mut Vec<PanelAction>,
) {
    ui.horizontal_wrapped(|ui| {
        let has_face = model.telemetry.raw.is_some();
        if ui
            .add_enabled(has_face, egui::Button::new("Capture neutral"))
            .on_hover_text(
                "Relax your face and look straight ahead, then click (hotkey N on the stage)",
            )
            .on_disabled_hover_text("no face data yet")
            .clicked()
        {
            actions.push(PanelAction::CaptureNeutral);
        }
        let idle = model.routine == RoutineView::Idle;
        if ui
            .add_enabled(
                idle && model.can_calibrate,
                egui::Button::new("Run calibration"),
            )
            .on_hover_text("The guided routine: follow the prompts on the stage")
            .clicked()
        {
            actions.push(PanelAction::StartCalibration);
        }
        ui.separator();
        ui.label("Profile:");
        let mut chosen = model.profile.clone();
        egui::ComboBox::from_id_salt("profile")
            .selected_text(chosen.clone().unwrap_or_else(|| "(none)".into()))
            .show_ui(ui, |ui| {
                ui.selectable_value(&mut chosen, None, "(none)");
                for name in &model.profiles {
                    ui.selectable_value(&mut chosen, Some(name.clone()), name);
                }
            });
        if chosen != model.profile {
            actions.push(PanelAction::ChooseProfile(chosen));
        }
        ui.separator();
        ui.label("Avatar:");
        let name = |path: &Option<std::path::PathBuf>| match path {
            Some(p) => p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
            None => "(default head)".to_string(),
        };
        let mut avatar = model.model.clone();
        egui::ComboBox::from_id_salt("avatar")
            .selected_text(name(&avatar))
            .show_ui(ui, |ui| {
                ui.selectable_value(&mut avatar, None, name(&None));
                for path in &model.models {
                    let path = Some(path.clone());
                    let label = name(&path);
                    ui.selectable_value(&mut avatar, path, label);
                }
            })
            .response
            .on_hover_text("the avatars in render.models_dir; the calibration stays");
        if avatar != model.model {
            actions.push(PanelAction::SwitchModel(avatar));
        }
        ui.separator();
        if ui.button("Reload mapping").clicked() {
            actions.push(PanelAction::ReloadMapping);
        }
        if ui.button("Open config folder").clicked() {
            actions.push(PanelAction::OpenConfigFolder);
        }
    });
    let _ = state;
}

fn routine(
    ui: &mut egui::Ui,
    model: &PanelModel,
    state: &mut PanelState,
    actions: &mut Vec<PanelAction>,
) {
    match &model.routine {
        RoutineView::Idle => {}
        RoutineView::Running {
            step,
            steps,
            title,
            status,
            progress,
        } => {
            ui.separator();
            ui.label(
                RichText::new(format!("Calibration step {step} of {steps}: {title}")).strong(),
            );
            ui.add(egui::ProgressBar::new(*progress).text(status.as_str()));
        }
        RoutineView::Review { summary, steps } => {
            ui.separator();
            ui.label(RichText::new("Calibration finished: review the ranges").strong());
            egui::ScrollArea::vertical()
                .id_salt("summary")
                .max_height(160.0)
                .show(ui, |ui| {
                    ui.monospace(summary.as_str());
                });
            ui.horizontal(|ui| {
                if ui.button("Save profile").clicked() {
                    actions.push(PanelAction::Review(Decision::Save));
                }
                if ui.button("Discard").clicked() {
                    actions.push(PanelAction::Review(Decision::Cancel));
                }
                if !steps.is_empty() {
                    state.redo_step = state.redo_step.min(steps.len() - 1);
                    egui::ComboBox::from_id_salt("redo")
                        .selected_text(format!(
                            "{}: {}",
                            state.redo_step + 1,
                            steps[state.redo_step]
                        ))
                        .show_ui(ui, |ui| {
                            for (i, s) in steps.iter().enumerate() {
                                ui.selectable_value(
                                    &mut state.redo_step,
                                    i,
                                    format!("{}: {s}", i + 1),
                                );
                            }
                        });
                    if ui.button("Redo step").clicked() {
                        actions.push(PanelAction::Review(Decision::Redo(state.redo_step)));
                    }
                }
            });
        }
    }
}

fn messages(
    ui: &mut egui::Ui,
    model: &PanelModel,
    state: &mut PanelState,
    actions: &mut Vec<PanelAction>,
) {
    if state.messages.iter().next().is_none() {
        return;
    }
    ui.separator();
    for m in state.messages.iter() {
        let age = model.now.saturating_duration_since(m.at).as_secs();
        let color = if m.error {
            Color32::from_rgb(230, 90, 80)
        } else {
            ui.visuals().text_color()
        };
        ui.horizontal_wrapped(|ui| {
            ui.label(RichText::new(format!("[{}] {age} s ago", m.topic.label())).weak());
            ui.label(RichText::new(&m.text).monospace().color(color));
        });
    }
    if ui.small_button("Clear messages").clicked() {
        actions.push(PanelAction::ClearMessages);
    }
}

fn matches(filter: &str, name: &str) -> bool {
    filter.is_empty()
        || name
            .to_ascii_lowercase()
            .contains(&filter.to_ascii_lowercase())
}

/// The longest layer name a column header shows (longer ones end in "…").
const LAYER_HEADER_CHARS: usize = 7;

fn channels(ui: &mut egui::Ui, model: &PanelModel, state: &PanelState) {
    let raw_color = Color32::from_rgb(130, 130, 140);
    let cal_color = Color32::from_rgb(70, 150, 230);
    let layer_color = Color32::from_rgb(170, 120, 220);
    let final_color = Color32::from_rgb(80, 190, 120);
    let target_color = Color32::from_rgb(230, 140, 60);
    let columns: Vec<&LayerReport> = model
        .telemetry
        .mix
        .as_deref()
        .map(|r| layer_columns(r).collect())
        .unwrap_or_default();
    // The meters share what the names, the layer columns and the drives leave of the panel's
    // width, so a panel narrowed beside the stage cuts nothing off.
    let layer_width = 44.0;
    let room = ui.available_width() - 320.0 - columns.len() as f32 * (layer_width + 8.0);
    // Too narrow for three meters with their numbers and the layers: the raw values (the
    // phone's own, before calibration) become a bar alone, their number on hover.
    let widest = if columns.is_empty() { 90.0 } else { 56.0 };
    let raw_numbers = room / 3.0 - 44.0 >= 24.0;
    let raw_bar = 28.0;
    // A narrow panel shows the targets' weights as bars alone, so each row stays one line.
    let narrow = ui.available_width() < 800.0;
    let value_width = if raw_numbers {
        (room / 3.0 - 44.0).clamp(16.0, widest)
    } else {
        ((room - raw_bar - 8.0) / 2.0 - 44.0).clamp(16.0, widest)
    };
    egui::ScrollArea::vertical()
        .id_salt("channels")
        .show(ui, |ui| {
            egui::Grid::new("meters")
                .striped(true)
                .num_columns(5 + columns.len())
                .show(ui, |ui| {
                    ui.label(RichText::new("channel").strong());
                    ui.label(RichText::new("raw").strong())
                        .on_hover_text("as the phone or webcam sent it, before calibration");
                    ui.label(RichText::new("calibrated").strong());
                    for layer in &columns {
                        let c = &layer.contribution;
                        ui.label(
                            RichText::new(truncated(&layer.name, LAYER_HEADER_CHARS))
                                .small()
                                .strong(),
                        )
                        .on_hover_text(format!(
                            "layer `{}`: {}, weight {:.2}",
                            layer.name, c.mode, c.weight
                        ));
                    }
                    ui.label(RichText::new("final").strong());
                    ui.label(RichText::new("drives").strong());
                    ui.end_row();
                    for row in &model.rows {
                        let name = row.channel.name();
                        if !matches(&state.filter, name) || (state.active_only && !row.moving()) {
                            continue;
                        }
                        ui.monospace(name);
                        if raw_numbers {
                            ui.horizontal(|ui| meter(ui, row.raw, raw_color, value_width));
                        } else {
                            let raw = row
                                .raw
                                .map_or_else(|| "-".to_string(), |v| format!("raw {v:.2}"));
                            bar(ui, row.raw, raw_color, raw_bar).on_hover_text(raw);
                        }
                        ui.horizontal(|ui| meter(ui, row.calibrated, cal_color, value_width));
                        for (layer, cell) in columns.iter().zip(&row.layers) {
                            match cell {
                                Some(cell) => {
                                    bar(ui, Some(cell.scaled()), layer_color, layer_width)
                                        .on_hover_text(format!(
                                            "{}: {:.2} × weight {:.2} = {:.2}",
                                            layer.name,
                                            cell.value,
                                            cell.weight,
                                            cell.scaled()
                                        ));
                                }
                                None => {
                                    ui.label("");
                                }
                            }
                        }
                        ui.horizontal(|ui| meter(ui, row.mixed, final_color, value_width));
                        ui.horizontal_wrapped(|ui| {
                            if row.targets.is_empty() {
                                ui.label(RichText::new("(nothing)").weak());
                            }
                            // Narrow, a row stays one line: the first target and how many
                            // more, all of them on hover.
                            let shown = if narrow { 1 } else { row.targets.len() };
                            for (target, weight) in row.targets.iter().take(shown) {
                                ui.label(RichText::new(target.as_str()).small());
                                if narrow {
                                    bar(ui, Some(*weight), target_color, 18.0);
                                } else {
                                    meter(ui, Some(*weight), target_color, 50.0);
                                }
                            }
                            let more = row.targets.len().saturating_sub(shown);
                            if more > 0 {
                                let all: Vec<String> = row
                                    .targets
                                    .iter()
                                    .map(|(t, w)| format!("{t}: {w:.2}"))
                                    .collect();
                                ui.label(RichText::new(format!("+{more}")).small().weak())
                                    .on_hover_text(all.join("\n"));
                            }
                        });
                        ui.end_row();
                    }
                });
        });
}

fn targets(ui: &mut egui::Ui, model: &PanelModel, state: &PanelState) {
    let color = Color32::from_rgb(230, 140, 60);
    egui::ScrollArea::vertical()
        .id_salt("targets")
        .show(ui, |ui| {
            egui::Grid::new("target-weights")
                .striped(true)
                .num_columns(2)
                .show(ui, |ui| {
                    for (name, weight) in &model.targets {
                        if !matches(&state.filter, name) || (state.active_only && *weight <= 0.01) {
                            continue;
                        }
                        ui.monospace(name.as_str());
                        ui.horizontal(|ui| meter(ui, Some(*weight), color, 160.0));
                        ui.end_row();
                    }
                });
        });
}

fn help(ui: &mut egui::Ui, model: &PanelModel) {
    ui.label("Keys on the stage window:");
    egui::Grid::new("hotkeys").striped(true).show(ui, |ui| {
        for (key, what) in model.hotkeys {
            ui.monospace(*key);
            ui.label(*what);
            ui.end_row();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arkit::{Channel, FaceFrame, Protocol};
    use crate::avatar::{Avatar, Mesh, Pose};
    use crate::control::telemetry::Telemetry;
    use crate::mapping::{CompiledMapping, Driver, TargetBinding};
    use crate::mixer::{BlendMode, Fade, Layer, Mixer, Region, RegionMask, LAYER_TRACKING};
    use egui::{Event, Pos2, RawInput, Rect};

    fn avatar() -> Avatar {
        Avatar {
            source: "test.glb".into(),
            meshes: vec![Mesh {
                name: Some("Face".into()),
                target_names: vec!["jawOpen".into(), "smile".into()],
                default_weights: vec![0.0, 0.0],
                primitives: Vec::new(),
            }],
            ..Avatar::default()
        }
    }

    fn mapping() -> CompiledMapping {
        let mut m = CompiledMapping::auto(&Avatar::default());
        m.drivers = vec![
            Driver::identity(Channel::JawOpen),
            Driver {
                sources: vec![
                    (Channel::MouthSmileLeft.into(), 0.5),
                    (Channel::MouthSmileRight.into(), 0.5),
                ],
                ..Driver::identity(Channel::MouthSmileLeft)
            },
        ];
        m.targets = vec![
            TargetBinding {
                mesh: 0,
                target: 0,
                driver: 0,
            },
            TargetBinding {
                mesh: 0,
                target: 1,
                driver: 1,
            },
        ];
        m
    }

    fn model(with_face: bool, routine: RoutineView) -> PanelModel {
        model_mixed(with_face, routine, None)
    }

    /// A fixed-pose layer, always on at `gain`, driving `values` inside `regions`.
    fn layer(
        name: &str,
        mode: BlendMode,
        regions: &[Region],
        gain: f32,
        values: &[(Channel, f32)],
    ) -> Layer {
        let mut layer = Layer::new(
            name,
            mode,
            RegionMask::of(regions),
            Fade::new(true, Duration::ZERO, Duration::ZERO),
        );
        layer.gain = gain;
        for &(c, v) in values {
            layer.values.set(c, v);
        }
        layer
    }

    /// The panel's model; with `layers`, the calibrated frame goes through a mixer of the
    /// tracking layer and `layers`, and the mixed frame and the report are published too.
    fn model_mixed(
        with_face: bool,
        routine: RoutineView,
        layers: Option<Vec<Layer>>,
    ) -> PanelModel {
        let now = Instant::now();
        let telemetry = Telemetry::new(now);
        let mut raw = FaceFrame::empty(Protocol::Vmc, "10.0.0.2:39539".parse().unwrap(), now);
        if with_face {
            raw.set(Channel::JawOpen, 0.5);
            raw.set(Channel::MouthSmileLeft, 0.25);
            telemetry.record_raw(&raw);
            raw.set(Channel::JawOpen, 0.75);
            telemetry.record_calibrated(&raw);
            telemetry.record_tracking(TrackingState::Tracking, now);
        }
        if let Some(layers) = layers {
            let mut stack = vec![layer(
                LAYER_TRACKING,
                BlendMode::Override,
                &Region::ALL,
                1.0,
                &[],
            )];
            stack.extend(layers);
            let mut mixer = Mixer::new(stack);
            if with_face {
                mixer.set_tracking(&raw);
            }
            telemetry.record_mixed(&mixer.mix(now));
            telemetry.record_mix(mixer.report());
        }
        let snapshot = telemetry.snapshot();
        let avatar = avatar();
        let pose = Pose {
            weights: vec![vec![0.75, 0.125]],
            rotations: Vec::new(),
            translations: Vec::new(),
            materials: Vec::new(),
            wrinkles: [0.0; crate::avatar::MAX_WRINKLE_MAPS],
        };
        PanelModel {
            rows: channel_rows(&snapshot, &mapping(), &avatar, &pose),
            targets: target_weights(&avatar, &pose),
            telemetry: snapshot,
            counters: InputCounters {
                malformed: 3,
                ..InputCounters::default()
            },
            rates: InputRates {
                datagrams: 60.0,
                frames: 60.0,
            },
            input: "listening: VMC and Face Cap 0.0.0.0:39539".into(),
            avatar: "test.glb".into(),
            timings: Timings {
                sample_age: Some([Duration::from_millis(8), Duration::from_millis(21)]),
                ..Timings::default()
            },
            advice: None,
            profiles: vec!["alice".into()],
            profile: None,
            models: vec!["models/alice.vrm".into()],
            model: None,
            can_calibrate: true,
            routine,
            connect: None,
            hotkeys: &[("N", "capture the neutral")],
            plugins: Vec::new(),
            expressions: Vec::new(),
            look: LookView::default(),
            now,
        }
    }

    /// Runs the panel for one pass with `events`, returning the texts drawn (with their
    /// rectangles) and the actions asked for.
    fn pass(
        ctx: &egui::Context,
        model: &PanelModel,
        state: &mut PanelState,
        events: Vec<Event>,
    ) -> (Vec<(String, Rect)>, Vec<PanelAction>) {
        pass_at(ctx, model, state, events, egui::vec2(900.0, 760.0))
    }

    /// [`pass`] on a panel of `size`.
    fn pass_at(
        ctx: &egui::Context,
        model: &PanelModel,
        state: &mut PanelState,
        events: Vec<Event>,
        size: egui::Vec2,
    ) -> (Vec<(String, Rect)>, Vec<PanelAction>) {
        let input = RawInput {
            screen_rect: Some(Rect::from_min_size(Pos2::ZERO, size)),
            events,
            ..RawInput::default()
        };
        let mut actions = Vec::new();
        let mut output = ctx.run_ui(input, |ui| actions.extend(show(ui, model, state)));
        output.textures_delta.clear();
        let mut texts = Vec::new();
        let shapes = std::mem::take(&mut output.shapes);
        let mut stack: Vec<egui::Shape> = shapes.into_iter().map(|c| c.shape).collect();
        while let Some(shape) = stack.pop() {
            match shape {
                egui::Shape::Vec(inner) => stack.extend(inner),
                egui::Shape::Text(t) => {
                    texts.push((
                        t.galley.text().to_string(),
                        t.galley.rect.translate(t.pos.to_vec2()),
                    ));
                }
                _ => {}
            }
        }
        (texts, actions)
    }

    fn click(
        ctx: &egui::Context,
        model: &PanelModel,
        state: &mut PanelState,
        label: &str,
    ) -> Vec<PanelAction> {
        click_at(ctx, model, state, label, egui::vec2(900.0, 760.0))
    }

    /// Clicks the text `label` on a panel of `size`, returning the actions asked for.
    fn click_at(
        ctx: &egui::Context,
        model: &PanelModel,
        state: &mut PanelState,
        label: &str,
        size: egui::Vec2,
    ) -> Vec<PanelAction> {
        // Panels size themselves from the previous pass: let the layout settle first.
        pass_at(ctx, model, state, Vec::new(), size);
        let (texts, _) = pass_at(ctx, model, state, Vec::new(), size);
        let (_, rect) = texts
            .iter()
            .find(|(t, _)| t == label)
            .unwrap_or_else(|| panic!("no `{label}` on the panel: {texts:?}"));
        let pos = rect.center();
        let press = |pressed| Event::PointerButton {
            pos,
            button: egui::PointerButton::Primary,
            pressed,
            modifiers: egui::Modifiers::default(),
        };
        let mut actions = pass_at(
            ctx,
            model,
            state,
            vec![Event::PointerMoved(pos), press(true)],
            size,
        )
        .1;
        actions.extend(pass_at(ctx, model, state, vec![press(false)], size).1);
        actions
    }

    /// A connect card listing every phone app, as a panel waiting for the phone shows it.
    fn waiting_card() -> ConnectView {
        use crate::connect::{AddressKind, ConnectCard, LanAddress};
        use crate::ingest::BoundListener;
        let lan = [LanAddress {
            ip: "192.168.178.20".parse().unwrap(),
            interface: "wlp2s0".into(),
            kind: AddressKind::Lan,
        }];
        let listeners: Vec<BoundListener> = Protocol::FAMILIES
            .into_iter()
            .map(|kind| BoundListener {
                kind,
                addr: format!("0.0.0.0:{}", crate::ingest::default_port(kind))
                    .parse()
                    .unwrap(),
            })
            .collect();
        ConnectView {
            card: ConnectCard::new(&listeners, &lan, None),
            waiting: true,
            phone: String::new(),
            on_stage: true,
        }
    }

    /// [`waiting_card`] after ten seconds without a datagram: with every hint, firewall
    /// commands included.
    fn card_with_hints() -> ConnectView {
        use crate::connect::{hints, HintInput, Os};
        use crate::ingest::ListenerReport;
        let mut view = waiting_card();
        let reports: Vec<ListenerReport> = Protocol::FAMILIES
            .into_iter()
            .map(|kind| {
                let port = crate::ingest::default_port(kind);
                ListenerReport::new(kind, format!("0.0.0.0:{port}").parse().unwrap())
            })
            .collect();
        let addresses = view.card.addresses().to_vec();
        view.card.set_hints(hints(&HintInput {
            elapsed: Duration::from_secs(10),
            frames: 0,
            reports: &reports,
            addresses: &addresses,
            phone: None,
            os: Os::Linux,
        }));
        assert!(view.card.hints().len() >= 2, "{:?}", view.card.hints());
        view
    }

    #[test]
    fn the_plugin_prompt_and_the_tabs_stay_on_screen_while_no_phone_is_there() {
        // The panel as it opens beside the default 1280x720 stage (its preferred size is
        // render::panel::PanelOptions' default, 900x760) on a 1920x1080 and a 1280x720 screen.
        for (w, h) in [(1920, 1080), (1280, 720)] {
            let screen = crate::app::Area {
                x: 0,
                y: 0,
                width: w,
                height: h,
            };
            let (_, panel, _) = crate::app::first_start(screen, (1280, 720), (900, 760));
            let size = egui::vec2(panel.width as f32, panel.height as f32);
            let ctx = egui::Context::default();
            let mut state = PanelState::default();
            let mut m = model(false, RoutineView::Idle);
            m.connect = Some(card_with_hints());
            m.plugins = vec![PluginRequest {
                id: 7,
                plugin: "Streamer.bot".into(),
                developer: "Streamer.bot".into(),
            }];
            pass_at(&ctx, &m, &mut state, Vec::new(), size);
            let (texts, _) = pass_at(&ctx, &m, &mut state, Vec::new(), size);
            let on_screen = |label: &str| {
                texts.iter().any(|(t, rect)| {
                    t.contains(label)
                        && rect.min.y >= 0.0
                        && rect.max.y <= size.y
                        && rect.max.x <= size.x + 0.5
                })
            };
            for label in [
                "wants a token",
                "Allow",
                "Deny",
                "Channels",
                "Avatar targets",
                "Look",
                "Hotkeys",
                "raw",
                "eyeBlinkLeft",
            ] {
                assert!(
                    on_screen(label),
                    "at {w}x{h} (panel {size:?}) `{label}` is not on screen: {texts:?}"
                );
            }
            // The top part scrolls: what it cannot show is reachable by scrolling, not cut off
            // below the tabs.
            let tabs = texts.iter().find(|(t, _)| t == "Channels").unwrap().1;
            assert!(tabs.min.y < size.y * 0.7, "tabs at {:?} of {size:?}", tabs);
            let allow = click_at(&ctx, &m, &mut state, "Allow", size);
            assert_eq!(
                allow,
                vec![PanelAction::AnswerPlugin { id: 7, allow: true }],
                "at {w}x{h}"
            );
        }
    }

    #[test]
    fn the_connect_card_can_be_taken_off_the_stage_from_the_panel() {
        let ctx = egui::Context::default();
        let mut state = PanelState::default();
        let mut m = model(false, RoutineView::Idle);
        m.connect = Some(waiting_card());
        let hide = click(&ctx, &m, &mut state, "Show on the stage");
        assert_eq!(hide, vec![PanelAction::ShowConnectCard(false)]);
        m.connect.as_mut().unwrap().on_stage = false;
        let show = click(&ctx, &m, &mut state, "Show on the stage");
        assert_eq!(show, vec![PanelAction::ShowConnectCard(true)]);
    }

    #[test]
    fn a_panel_narrowed_beside_the_stage_cuts_nothing_off() {
        let mouth = &[Region::MouthJaw];
        let lip = &[(Channel::JawOpen, 0.4)];
        let layers = vec![
            layer(
                "grin",
                BlendMode::Add,
                mouth,
                0.42,
                &[(Channel::MouthSmileLeft, 1.0)],
            ),
            layer("lipsync", BlendMode::Override, mouth, 1.0, lip),
            layer("idle", BlendMode::Add, mouth, 0.2, lip),
        ];
        let widths = [crate::app::PANEL_MIN_WIDTH as f32, 632.0, 900.0];
        for (width, mix) in widths
            .into_iter()
            .flat_map(|w| [(w, None), (w, Some(layers.clone()))])
        {
            let ctx = egui::Context::default();
            let mut state = PanelState::default();
            let mut m = model_mixed(true, RoutineView::Idle, mix);
            m.connect = Some(waiting_card());
            // Tall enough that the top part shows whole: this is about the width.
            let size = egui::vec2(width, 1800.0);
            pass_at(&ctx, &m, &mut state, Vec::new(), size);
            let (texts, _) = pass_at(&ctx, &m, &mut state, Vec::new(), size);
            let all: String = texts.iter().map(|(t, _)| t.as_str()).collect();
            assert!(all.contains("UDP 39539"), "the card is shown: {all}");
            assert!(all.contains("Phone's address:"), "no phone field: {all}");
            assert!(
                texts.iter().any(|(t, _)| t == "raw"),
                "at {width} px the raw column is gone"
            );
            let cut: Vec<String> = texts
                .iter()
                .filter(|(_, rect)| rect.max.x > width + 0.5)
                .map(|(text, rect)| format!("`{text}` ({:.0}..{:.0})", rect.min.x, rect.max.x))
                .collect();
            assert!(cut.is_empty(), "at {width} px these are cut: {cut:?}");
        }
    }

    #[test]
    fn meters_join_raw_calibrated_and_the_targets_driven() {
        let m = model(true, RoutineView::Idle);
        let jaw = &m.rows[Channel::JawOpen.index()];
        assert_eq!((jaw.raw, jaw.calibrated), (Some(0.5), Some(0.75)));
        assert_eq!(jaw.targets, vec![("jawOpen".to_string(), 0.75)]);
        let right = &m.rows[Channel::MouthSmileRight.index()];
        assert_eq!(
            right.raw, None,
            "a channel the sender did not send reads as absent"
        );
        assert_eq!(right.targets, vec![("smile".to_string(), 0.125)]);
        assert!(m.rows[Channel::EyeBlinkLeft.index()].targets.is_empty());
        assert_eq!(m.rows.len(), 52);
    }

    #[test]
    fn rows_show_each_layers_part_and_the_final_value() {
        // Without a mixer report: no layer cells, no final value.
        let plain = model(true, RoutineView::Idle);
        assert!(plain
            .rows
            .iter()
            .all(|r| r.layers.is_empty() && r.mixed.is_none()));
        let smile = layer(
            "smile",
            BlendMode::Add,
            &[Region::MouthJaw],
            0.5,
            &[(Channel::MouthSmileLeft, 0.5)],
        );
        let m = model_mixed(true, RoutineView::Idle, Some(vec![smile]));
        let left = &m.rows[Channel::MouthSmileLeft.index()];
        assert_eq!(
            left.layers,
            vec![Some(LayerCell {
                value: 0.5,
                weight: 0.5
            })],
            "one column, for `smile` only: rest and tracking have none"
        );
        assert_eq!(left.layers[0].unwrap().scaled(), 0.25);
        assert_eq!(left.calibrated, Some(0.25));
        assert_eq!(left.mixed, Some(0.5), "0.25 from the phone, plus 0.5 × 0.5");
        for row in &m.rows {
            assert_eq!(row.layers.len(), 1, "{:?}", row.channel);
            if row.channel != Channel::MouthSmileLeft {
                assert_eq!(row.layers[0], None, "{:?} has no smile part", row.channel);
            }
        }
        let jaw = &m.rows[Channel::JawOpen.index()];
        assert_eq!((jaw.calibrated, jaw.mixed), (Some(0.75), Some(0.75)));
        let brow = &m.rows[Channel::BrowInnerUp.index()];
        assert_eq!(
            brow.mixed, None,
            "no layer drives the brows: no final value"
        );
    }

    #[test]
    fn a_row_moves_when_its_final_value_does() {
        let row = |raw, calibrated, mixed| ChannelRow {
            channel: Channel::JawOpen,
            raw,
            calibrated,
            layers: Vec::new(),
            mixed,
            targets: Vec::new(),
        };
        assert!(!row(None, None, None).moving());
        assert!(!row(Some(0.0), Some(0.005), Some(0.0)).moving());
        assert!(row(Some(0.3), None, None).moving());
        assert!(row(None, Some(0.3), None).moving());
        assert!(
            row(Some(0.0), Some(0.0), Some(0.4)).moving(),
            "a layer moves it"
        );
    }

    #[test]
    fn the_layers_line_lists_the_stack_bottom_to_top() {
        let m = model_mixed(
            true,
            RoutineView::Idle,
            Some(vec![
                layer(
                    "smile",
                    BlendMode::Add,
                    &[Region::MouthJaw],
                    0.42,
                    &[(Channel::MouthSmileLeft, 1.0)],
                ),
                layer(
                    "wink",
                    BlendMode::Override,
                    &[Region::Eyes, Region::Brows],
                    1.0,
                    &[(Channel::EyeBlinkLeft, 1.0), (Channel::BrowDownLeft, 0.5)],
                ),
            ]),
        );
        let report = m.telemetry.mix.as_deref().unwrap();
        assert_eq!(
            layers_line(report),
            "layers: rest · tracking 1.00 · smile 0.42 (add, mouth) · wink 1.00 (eyes, brows)"
        );
        let columns: Vec<&str> = layer_columns(report).map(|l| l.name.as_str()).collect();
        assert_eq!(columns, ["smile", "wink"]);
    }

    #[test]
    fn long_layer_names_are_cut_with_an_ellipsis() {
        assert_eq!(truncated("smile", 7), "smile");
        assert_eq!(truncated("sevench", 7), "sevench");
        assert_eq!(truncated("eyebrows_raised", 7), "eyebro…");
        assert_eq!(truncated("überraschung", 5), "über…");
    }

    #[test]
    fn layer_columns_fit_the_panel_and_only_appear_with_layers() {
        let headers = |m: &PanelModel| {
            let ctx = egui::Context::default();
            let mut state = PanelState::default();
            pass(&ctx, m, &mut state, Vec::new());
            pass(&ctx, m, &mut state, Vec::new()).0
        };
        // Only rest and tracking: just the final column.
        let plain = model_mixed(true, RoutineView::Idle, Some(Vec::new()));
        let texts = headers(&plain);
        let all: Vec<&str> = texts.iter().map(|(t, _)| t.as_str()).collect();
        assert!(all.contains(&"final"), "{all:?}");
        assert!(all.contains(&"layers: rest · tracking 1.00"), "{all:?}");
        // Three more layers with long names: narrow columns, the panel no wider.
        let mouth = &[Region::MouthJaw];
        let m = model_mixed(
            true,
            RoutineView::Idle,
            Some(vec![
                layer(
                    "grin",
                    BlendMode::Add,
                    mouth,
                    0.42,
                    &[(Channel::MouthSmileLeft, 1.0)],
                ),
                layer(
                    "lipsync_visemes",
                    BlendMode::Override,
                    mouth,
                    1.0,
                    &[(Channel::JawOpen, 0.3)],
                ),
                layer(
                    "idle_breathing",
                    BlendMode::Max,
                    mouth,
                    0.2,
                    &[(Channel::JawOpen, 0.1)],
                ),
            ]),
        );
        let texts = headers(&m);
        let all: Vec<&str> = texts.iter().map(|(t, _)| t.as_str()).collect();
        for expected in [
            "channel",
            "calibrated",
            "grin",
            "lipsyn…",
            "idle_b…",
            "final",
            "drives",
        ] {
            assert!(
                all.contains(&expected),
                "`{expected}` is not on the panel: {all:?}"
            );
        }
        let x = |label: &str| texts.iter().find(|(t, _)| t == label).unwrap().1.min.x;
        assert!(x("calibrated") < x("grin") && x("grin") < x("lipsyn…"));
        assert!(x("idle_b…") < x("final") && x("final") < x("drives"));
        for (text, rect) in &texts {
            assert!(
                rect.max.x <= 900.0,
                "`{text}` ends at {} of 900",
                rect.max.x
            );
        }
        assert!(
            x("drives") < 700.0,
            "the targets keep room: {}",
            x("drives")
        );
    }

    #[test]
    fn the_panel_shows_state_source_meters_and_messages() {
        let ctx = egui::Context::default();
        let mut state = PanelState::default();
        state.messages.post(
            Topic::Mapping,
            true,
            "mapping.toml:3:9: unknown channel `jawOpn`\n  hint: did you mean `jawOpen`?",
            Instant::now(),
        );
        let mut m = model(true, RoutineView::Idle);
        m.advice = Some("the stage draws 32 of its 60 frames a second".into());
        pass(&ctx, &m, &mut state, Vec::new());
        let (texts, actions) = pass(&ctx, &m, &mut state, Vec::new());
        assert!(actions.is_empty());
        let all: Vec<&str> = texts.iter().map(|(t, _)| t.as_str()).collect();
        for expected in [
            " tracking ",
            "the stage draws 32 of its 60 frames a second",
            "vmc from 10.0.0.2:39539",
            "60 packets/s, 60 frames/s",
            "malformed 3",
            "sample age p50 8.0 ms p99 21.0 ms",
            "jawOpen",
            "0.50",
            "0.75",
            "mapping.toml:3:9: unknown channel `jawOpn`\n  hint: did you mean `jawOpen`?",
        ] {
            assert!(
                all.contains(&expected),
                "`{expected}` is not on the panel: {all:?}"
            );
        }
    }

    #[test]
    fn expression_buttons_toggle_and_switch_all_off() {
        use crate::expressions::{ExpressionMode, Key};
        let ctx = egui::Context::default();
        let mut state = PanelState::default();
        let mut m = model(true, RoutineView::Idle);
        let status = |name: &str, key: &str, mode, on: bool| crate::expressions::ExpressionStatus {
            name: name.into(),
            key: Some(Key::parse(key).unwrap()),
            mode,
            layer: "face".into(),
            on,
            weight: if on { 0.8 } else { 0.0 },
        };
        m.expressions = vec![
            status("smile", "F1", ExpressionMode::Toggle, true),
            status("wink", "F4", ExpressionMode::Hold, false),
        ];
        // The section starts closed (the channel table keeps its room); its title opens it.
        let (texts, _) = pass(&ctx, &m, &mut state, Vec::new());
        assert!(!texts.iter().any(|(t, _)| t == "All off"));
        assert!(click(&ctx, &m, &mut state, "Expressions: 1 of 2 on").is_empty());
        assert_eq!(
            click(&ctx, &m, &mut state, "wink"),
            vec![PanelAction::ToggleExpression("wink".into())]
        );
        assert_eq!(
            click(&ctx, &m, &mut state, "All off"),
            vec![PanelAction::ExpressionsOff]
        );
        let (texts, _) = pass(&ctx, &m, &mut state, Vec::new());
        let all: Vec<&str> = texts.iter().map(|(t, _)| t.as_str()).collect();
        for shown in ["Expressions: 1 of 2 on", "F1", "F4", "hold", "toggle"] {
            assert!(
                all.contains(&shown),
                "`{shown}` is not on the panel: {all:?}"
            );
        }
        // Nothing on: "All off" asks for nothing.
        m.expressions.truncate(1);
        m.expressions[0].on = false;
        m.expressions[0].weight = 0.0;
        assert!(click(&ctx, &m, &mut state, "All off").is_empty());
    }

    #[test]
    fn buttons_ask_for_their_actions() {
        let ctx = egui::Context::default();
        let mut state = PanelState::default();
        let m = model(true, RoutineView::Idle);
        assert_eq!(
            click(&ctx, &m, &mut state, "Capture neutral"),
            vec![PanelAction::CaptureNeutral]
        );
        assert_eq!(
            click(&ctx, &m, &mut state, "Run calibration"),
            vec![PanelAction::StartCalibration]
        );
        assert_eq!(
            click(&ctx, &m, &mut state, "Reload mapping"),
            vec![PanelAction::ReloadMapping]
        );
        // Without face data there is nothing to capture.
        let still = model(false, RoutineView::Idle);
        assert!(click(&ctx, &still, &mut state, "Capture neutral").is_empty());
        // The review answers the routine.
        let review = model(
            true,
            RoutineView::Review {
                summary: "jawOpen 0.02..0.81".into(),
                steps: vec!["Neutral".into(), "Jaw open".into()],
            },
        );
        assert_eq!(
            click(&ctx, &review, &mut state, "Save profile"),
            vec![PanelAction::Review(Decision::Save)]
        );
        assert_eq!(
            click(&ctx, &review, &mut state, "Redo step"),
            vec![PanelAction::Review(Decision::Redo(0))]
        );
    }

    #[test]
    fn messages_replace_their_topic_and_stay_bounded() {
        let now = Instant::now();
        let mut m = Messages::default();
        m.post(Topic::Mapping, true, "bad", now);
        m.post(Topic::Config, true, "also bad", now);
        assert!(m.has_errors());
        m.post(Topic::Mapping, false, "reloaded", now);
        let texts: Vec<&str> = m.iter().map(|x| x.text.as_str()).collect();
        assert_eq!(
            texts,
            ["also bad", "reloaded"],
            "the fix clears the mapping error"
        );
        for i in 0..100 {
            m.post(Topic::General, i % 2 == 0, format!("{i}"), now);
        }
        assert!(m.iter().count() <= Messages::CAPACITY);
    }
}

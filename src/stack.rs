//! The mixer's stack as configured: `[layers]` with the sources of weights that are layers of
//! their own (lip sync, idle life, each expression, the API's injected values), bottom to top.
//! The session's chain builds its mixer from it; the stage resolves the layers' avatar-space
//! `targets` against it.

use std::time::Duration;

use crate::api::LAYER_API;
use crate::config::{Config, IdleConfig, LayersSection, LipsyncConfig, DEFAULT_FADE};
use crate::expressions::{with_presets, Expression};
use crate::idle::{self, LAYER_IDLE};
use crate::lipsync::face::{self, LAYER_LIPSYNC};
use crate::mixer::{BlendMode, Fade, Layer, RegionMask, LAYER_TRACKING};

/// The sections of the configuration that make up the mixer's stack: its layers and the
/// sources of weights that are layers of their own.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StackConfig {
    /// `[layers]`: the order and the fixed poses.
    pub layers: LayersSection,
    /// `[lipsync]`: the lip-sync layer.
    pub lipsync: LipsyncConfig,
    /// `[idle]`: the idle layer.
    pub idle: IdleConfig,
    /// `[expressions]` (its file's included), then the avatar's VRM presets once
    /// [`StackConfig::with_presets`] adds them: a layer each.
    pub expressions: Vec<Expression>,
    /// `[api] enabled`: the layer of injected values on top.
    pub api: bool,
}

impl StackConfig {
    /// The stack's sections of `config`.
    pub fn of(config: &Config) -> StackConfig {
        StackConfig {
            layers: config.layers.clone(),
            lipsync: config.lipsync.clone(),
            idle: config.idle.clone(),
            expressions: config.expressions.all(),
            api: config.api.enabled,
        }
    }

    /// This stack with the avatar's VRM `presets` after its expressions (a configured
    /// expression of the same name wins).
    pub fn with_presets(mut self, presets: Vec<Expression>) -> StackConfig {
        self.expressions = with_presets(self.expressions, presets);
        self
    }

    /// The stack as `[layers]` would list it: every layer of [`build_stack`] in its order,
    /// with `[layers]`'s tables and one for each expression, for
    /// [`crate::mapping::LayerTargets::compile`] to resolve the avatar-space `targets` at the
    /// places the mixer's frames carry their weights.
    pub fn section(&self) -> LayersSection {
        let mut section = self.layers.clone();
        section.order = build_stack(self).into_iter().map(|l| l.name).collect();
        for expression in &self.expressions {
            section
                .specs
                .insert(expression.layer_name(), expression.layer_spec());
        }
        section
    }
}

/// The layers of `section`, bottom to top, as the mixer takes them. Fades start at rest: a
/// layer enabled at start is at full weight from the first frame.
pub fn build_layers(section: &LayersSection) -> Vec<Layer> {
    section
        .order
        .iter()
        .map(|name| {
            let spec = section.spec(name);
            let tracking = name == LAYER_TRACKING;
            let secs = |v: Option<f32>| Duration::from_secs_f32(v.unwrap_or(DEFAULT_FADE));
            let fade = if tracking {
                Fade::new(true, Duration::ZERO, Duration::ZERO)
            } else {
                Fade::new(
                    spec.enabled.unwrap_or(true),
                    secs(spec.fade_in),
                    secs(spec.fade_out),
                )
            };
            let mut layer = Layer::new(name, spec.mode, spec.regions, fade);
            layer.gain = spec.weight;
            for (channel, value) in spec.channel_values() {
                layer.values.set(channel, value);
            }
            layer
        })
        .collect()
}

/// The whole stack: `[layers]` bottom to top, with the lip-sync layer (unless `[lipsync]` is
/// off) and then the idle layer (off while `[idle]` is off), each where `layers.order` lists
/// it, else on top; then one layer per expression (off), then the API's layer of injected values
/// (when `[api]` is on). Every layer of `layers.order` keeps its place (its index in
/// [`FaceFrame::layer_weights`]).
pub fn build_stack(stack: &StackConfig) -> Vec<Layer> {
    let mut layers = build_layers(&stack.layers);
    let lip = face::layer(stack.lipsync.mode, stack.lipsync.strength);
    place(&mut layers, LAYER_LIPSYNC, lip);
    // Idle life switched off keeps its place, off: a reload that turns it off fades it out,
    // and the layers above keep their places.
    let mut idle = idle::layer(stack.idle.under_tracking);
    if !stack.idle.enabled {
        let (fade_in, fade_out) = idle.fade.times();
        idle.fade = Fade::new(false, fade_in, fade_out);
    }
    place(&mut layers, LAYER_IDLE, Some(idle));
    layers.extend(stack.expressions.iter().map(Expression::layer));
    if stack.api {
        layers.push(Layer::new(
            LAYER_API,
            BlendMode::Override,
            RegionMask::ALL,
            Fade::new(true, Duration::ZERO, Duration::ZERO),
        ));
    }
    layers
}

/// Puts `layer` (a source's layer, `None` when the source is off) where `layers` lists `name`,
/// else on top.
fn place(layers: &mut Vec<Layer>, name: &str, layer: Option<Layer>) {
    match (layers.iter().position(|l| l.name == name), layer) {
        (Some(i), Some(layer)) => layers[i] = layer,
        // Off: the listed place stays, an empty layer that drives nothing.
        (Some(i), None) => layers[i].fade = Fade::new(false, Duration::ZERO, Duration::ZERO),
        (None, Some(layer)) => layers.push(layer),
        (None, None) => {}
    }
}

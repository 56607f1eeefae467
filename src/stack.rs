//! The mixer's stack as configured: `[layers]` with the sources of weights that fill layers of
//! their own (lip sync, idle life, each expression, the API's injected values), bottom to top,
//! and the one place where those sources are registered with the mixer. The session's chain
//! builds its mixer here; the stage resolves the layers' avatar-space `targets` against the
//! same layout.

use std::time::{Duration, Instant};

use crate::api::{InjectedStore, InjectionSource};
use crate::arkit::FaceFrame;
use crate::config::{Config, IdleConfig, LayersSection, LipsyncConfig, DEFAULT_FADE};
use crate::expressions::{
    with_presets, Expression, ExpressionInput, ExpressionNews, ExpressionSource,
};
use crate::idle::{IdleSource, LAYER_IDLE};
use crate::lipsync::face::{LipSyncSource, LAYER_LIPSYNC};
use crate::lipsync::LipFrame;
use crate::mixer::{
    Fade, Held, Kit, Layer, LayerValues, Mixer, Own, Place, Source, LAYER_TRACKING,
};

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
            idle: config.idle,
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

/// The run's sources of weights as the mixer knows them: configured from a [`StackConfig`],
/// told [`SourceInput`]s, reporting [`SourceNews`].
#[derive(Debug)]
pub enum Sources {}

impl Kit for Sources {
    type Config = StackConfig;
    type Input = SourceInput;
    type News = SourceNews;
}

/// The mixer of a live run, with its sources registered.
pub type LiveMixer = Mixer<Sources>;

/// What the run's sources are told.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceInput {
    /// One hop of lip sync: the visemes for the lip-sync layer.
    Lip(LipFrame),
    /// A trigger, a key or a release for the expressions.
    Expression(ExpressionInput),
}

/// What the run's sources report.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceNews {
    /// From the expressions.
    Expression(ExpressionNews),
}

impl From<ExpressionNews> for SourceNews {
    fn from(news: ExpressionNews) -> SourceNews {
        SourceNews::Expression(news)
    }
}

/// A seed for idle life that differs from run to run.
fn idle_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

impl Source<Sources> for LipSyncSource {
    fn configure(&mut self, config: &StackConfig, _now: Instant) -> Vec<Layer> {
        let lipsync = &config.lipsync;
        LipSyncSource::configure(self, lipsync.mode, lipsync.strength)
            .into_iter()
            .collect()
    }

    fn place(&self) -> Place {
        Place::Named(LAYER_LIPSYNC)
    }

    fn input(&mut self, input: &SourceInput, now: Instant, own: &mut Own<'_, Sources>) {
        if let SourceInput::Lip(frame) = input {
            self.hop(frame, now, own);
        }
    }

    fn advance(&mut self, now: Instant, own: &mut Own<'_, Sources>) {
        LipSyncSource::advance(self, now, own);
    }
}

impl Source<Sources> for IdleSource {
    fn configure(&mut self, config: &StackConfig, _now: Instant) -> Vec<Layer> {
        vec![IdleSource::configure(self, config.idle, idle_seed())]
    }

    fn place(&self) -> Place {
        Place::Named(LAYER_IDLE)
    }

    fn advance(&mut self, now: Instant, own: &mut Own<'_, Sources>) {
        IdleSource::advance(self, now, own);
    }
}

impl Source<Sources> for ExpressionSource {
    fn configure(&mut self, config: &StackConfig, now: Instant) -> Vec<Layer> {
        ExpressionSource::configure(self, config.expressions.clone(), now)
    }

    fn place(&self) -> Place {
        Place::Top
    }

    fn input(&mut self, input: &SourceInput, now: Instant, own: &mut Own<'_, Sources>) {
        if let SourceInput::Expression(input) = input {
            ExpressionSource::input(self, input, now, own);
        }
    }

    fn advance(&mut self, now: Instant, own: &mut Own<'_, Sources>) {
        ExpressionSource::advance(self, now, own);
    }

    fn held(&self, now: Instant) -> Held {
        ExpressionSource::held(self, now)
    }
}

impl Source<Sources> for InjectionSource {
    fn configure(&mut self, config: &StackConfig, _now: Instant) -> Vec<Layer> {
        InjectionSource::configure(self, config.api)
            .into_iter()
            .collect()
    }

    fn place(&self) -> Place {
        Place::Top
    }

    fn live(&self, now: Instant) -> bool {
        InjectionSource::live(self, now)
    }

    fn over(&mut self, below: &FaceFrame, now: Instant) -> Option<LayerValues> {
        InjectionSource::over(self, below, now)
    }
}

/// The mixer of a live run for `stack` at `now`: `[layers]` bottom to top, with the sources
/// registered once, in this order: lip sync (unless `[lipsync]` is off) and idle life (off while
/// `[idle]` is off), each where `layers.order` lists it, else on top; then the expressions, one
/// layer each (off); then the values plugins inject (`injected`, when the API runs and
/// `[api]` is on). Every layer of `layers.order` keeps its place (its index in
/// [`crate::arkit::FaceFrame::layer_weights`]).
pub fn live_mixer(stack: &StackConfig, injected: Option<InjectedStore>, now: Instant) -> LiveMixer {
    let mut sources: Vec<Box<dyn Source<Sources>>> = vec![
        Box::new(LipSyncSource::new()),
        Box::new(IdleSource::new()),
        Box::new(ExpressionSource::new()),
    ];
    if let Some(store) = injected {
        sources.push(Box::new(InjectionSource::new(store)));
    }
    Mixer::with_sources(build_layers(&stack.layers), sources, stack, now)
}

/// Takes a new `stack` (a reloaded configuration, another avatar's presets) into `mixer` at
/// `now`: layers that stay keep their weights, expressions that stay keep their states.
pub fn restack(mixer: &mut LiveMixer, stack: &StackConfig, now: Instant) {
    mixer.configure(build_layers(&stack.layers), stack, now);
}

/// The whole stack as [`live_mixer`] lays it out, with the API's layer when `[api]` is on.
pub fn build_stack(stack: &StackConfig) -> Vec<Layer> {
    let injected = stack.api.then(InjectedStore::new);
    live_mixer(stack, injected, Instant::now())
        .layers()
        .to_vec()
}

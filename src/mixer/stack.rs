//! The stack of layers and its mix, with a report of what each layer contributed.

use std::time::{Duration, Instant};

use glam::Quat;

use super::layer::{rotation, unit, BlendMode, Fade, Layer, LayerValues};
use super::region::{Region, RegionMask};
use super::source::{blend_weight, lay_out, Held, Kit, Own, Part, Source};
use crate::arkit::{ChannelMask, FaceFrame, Params, TrackingFlag, COUNT, MAX_LAYERS, VISEMES};

/// The name of the layer the phone's conditioned frames fill.
pub const LAYER_TRACKING: &str = "tracking";
/// The name of the pose under every layer (the performer's neutral).
pub const LAYER_REST: &str = "rest";

/// The lip-sync layer: the mouth shapes read from the microphone.
pub const LAYER_LIPSYNC: &str = "lipsync";

/// The idle layer: blinks, breathing and glances while the face is lost.
pub const LAYER_IDLE: &str = "idle";

/// The shortest interval between two frames the mixer makes up while a layer fades or changes
/// without a new phone frame, about one 60 Hz display frame.
pub const FRAME_INTERVAL: Duration = Duration::from_millis(16);

/// What one layer brings to the mix, for the control panel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Contribution {
    /// The layer's value of each channel it drives (0 elsewhere).
    pub weights: [f32; COUNT],
    /// The channels it drives (carried and inside its mask).
    pub present: ChannelMask,
    /// The weight it blends with.
    pub weight: f32,
    /// How it blends.
    pub mode: BlendMode,
    /// The face regions it may drive.
    pub mask: RegionMask,
}

/// One layer in a [`MixerReport`].
#[derive(Debug, Clone, PartialEq)]
pub struct LayerReport {
    /// Its name.
    pub name: String,
    /// What it brings.
    pub contribution: Contribution,
}

/// What each layer of the last mix contributed, bottom to top (the rest pose first).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MixerReport {
    /// The layers.
    pub layers: Vec<LayerReport>,
}

/// The stack of layers over the rest pose, with the sources that fill layers of their own
/// (their types named by `K`). See the module documentation.
pub struct Mixer<K: Kit = ()> {
    /// The pose under every layer.
    rest: LayerValues,
    /// The layers, bottom to top.
    layers: Vec<Layer>,
    /// Which layer the phone fills, if the stack has one.
    tracking: Option<usize>,
    /// The newest tracking frame, for its metadata (protocol, sender, times, flag).
    meta: Option<FaceFrame>,
    /// How present the tracked face is, 0 to 1: the tracking layer's weight is multiplied by
    /// it, so a lost face fades the layer out over the rest pose.
    presence: f32,
    /// Whether a value or a setting changed since the last mix.
    changed: bool,
    /// When the last mix was made.
    last_mix: Option<Instant>,
    /// The sources, in the order they were registered, with their layers' places.
    parts: Vec<Part<K>>,
    /// What the sources reported since it was last taken.
    news: Vec<K::News>,
}

impl<K: Kit> std::fmt::Debug for Mixer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mixer")
            .field("layers", &self.layers)
            .field("sources", &self.parts.len())
            .finish_non_exhaustive()
    }
}

impl Mixer {
    /// A mixer of `layers` (bottom to top) over a rest pose of all zeros and identity rotations,
    /// without sources. The layer named [`LAYER_TRACKING`], if any, receives the phone's frames.
    pub fn new(layers: Vec<Layer>) -> Mixer {
        Mixer::with_sources(layers, Vec::new(), &(), Instant::now())
    }

    /// A mixer with only the tracking layer (override, every region, always on): it passes the
    /// phone's frames through unchanged.
    pub fn tracking_only() -> Mixer {
        Mixer::new(vec![Layer::new(
            LAYER_TRACKING,
            BlendMode::Override,
            RegionMask::ALL,
            Fade::new(true, Duration::ZERO, Duration::ZERO),
        )])
    }
}

impl<K: Kit> Mixer<K> {
    /// A mixer of `base` (the layers of `[layers]`, bottom to top) with `sources` registered,
    /// each laying out its layers as `config` makes them at `now` where it says, in the order
    /// given; over a rest pose of all zeros and identity rotations. The layer named
    /// [`LAYER_TRACKING`], if any, receives the phone's frames.
    pub fn with_sources(
        base: Vec<Layer>,
        sources: Vec<Box<dyn Source<K>>>,
        config: &K::Config,
        now: Instant,
    ) -> Mixer<K> {
        let mut parts: Vec<Part<K>> = sources
            .into_iter()
            .map(|source| Part { source, at: 0..0 })
            .collect();
        let layers = Self::lay_out_parts(&mut parts, base, config, now);
        let tracking = layers.iter().position(|l| l.name == LAYER_TRACKING);
        let mut rest = LayerValues {
            present: ChannelMask::ALL,
            ..LayerValues::default()
        };
        rest.head = Some(Quat::IDENTITY);
        rest.left_eye = Some(Quat::IDENTITY);
        rest.right_eye = Some(Quat::IDENTITY);
        // A stack with fixed poses has something to show before the phone sends anything.
        let changed = layers
            .iter()
            .any(|l| l.name != LAYER_TRACKING && !l.values.present.is_empty());
        Mixer {
            rest,
            layers,
            tracking,
            meta: None,
            presence: 1.0,
            changed,
            last_mix: None,
            parts,
            news: Vec::new(),
        }
    }

    /// Asks every source for its layers as `config` makes them at `now` and lays them out over
    /// `base`, noting each source's range.
    fn lay_out_parts(
        parts: &mut [Part<K>],
        base: Vec<Layer>,
        config: &K::Config,
        now: Instant,
    ) -> Vec<Layer> {
        let own = parts
            .iter_mut()
            .map(|p| (p.source.place(), p.source.configure(config, now)))
            .collect();
        let (layers, ranges) = lay_out(base, own);
        for (part, at) in parts.iter_mut().zip(ranges) {
            part.at = at;
        }
        layers
    }

    /// A new configuration at `now`: `base` (the layers of `[layers]`) and every source's
    /// layers as `config` makes them, laid out again as [`Mixer::replace_layers`] takes them
    /// (a layer that keeps its name keeps its weight and fades to its new state).
    pub fn configure(&mut self, base: Vec<Layer>, config: &K::Config, now: Instant) {
        let layers = Self::lay_out_parts(&mut self.parts, base, config, now);
        self.replace_layers(layers, now);
    }

    /// Offers `input` at `now` to every source; the one it is meant for takes it.
    pub fn input(&mut self, input: &K::Input, now: Instant) {
        self.each_source(|source, own| source.input(input, now, own));
    }

    /// Moves every source on to `now`, before a mix may be made.
    pub fn advance(&mut self, now: Instant) {
        self.each_source(|source, own| {
            source.advance(now, own);
            if source.live(now) {
                // Its values over the layers below change with them.
                own.touch();
            }
        });
    }

    /// Calls `f` with every source and its own layers, in the order they were registered.
    fn each_source(&mut self, mut f: impl FnMut(&mut dyn Source<K>, &mut Own<'_, K>)) {
        let tracked = self.tracked();
        for part in &mut self.parts {
            let mut own = Own::new(
                &mut self.layers[part.at.clone()],
                tracked,
                &mut self.changed,
                &mut self.news,
            );
            f(part.source.as_mut(), &mut own);
        }
    }

    /// What the sources reported since this was last asked, oldest first.
    pub fn take_news(&mut self) -> Vec<K::News> {
        std::mem::take(&mut self.news)
    }

    /// Replaces the stack with `layers` (a reloaded configuration) at `now`. A layer that was
    /// there before under the same name keeps its weight, which then fades towards the new
    /// layer's state with the new times, so a reload never pops; the tracking layer keeps the
    /// phone's newest values.
    pub fn replace_layers(&mut self, mut layers: Vec<Layer>, now: Instant) {
        for layer in &mut layers {
            let Some(old) = self.layers.iter().find(|l| l.name == layer.name) else {
                continue;
            };
            let mut fade = old.fade;
            let (fade_in, fade_out) = layer.fade.times();
            fade.set(layer.fade.is_on(), now);
            fade.set_times(fade_in, fade_out);
            layer.fade = fade;
            if layer.name == LAYER_TRACKING {
                layer.values = old.values;
            }
        }
        self.tracking = layers.iter().position(|l| l.name == LAYER_TRACKING);
        self.layers = layers;
        self.changed = true;
    }

    /// The layers, bottom to top.
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// The layer named `name`, to change its values, mask or fade (tests: a source reaches its
    /// own layers through [`super::Own`]). Counts as a change: the next [`Mixer::due`] is true.
    #[cfg(test)]
    pub(crate) fn layer_mut(&mut self, name: &str) -> Option<&mut Layer> {
        self.changed = true;
        self.layers.iter_mut().find(|l| l.name == name)
    }

    /// Fades the layer named `name` in (`true`) or out from `now`; `false` when there is none
    /// (tests).
    #[cfg(test)]
    pub(crate) fn set_active(&mut self, name: &str, on: bool, now: Instant) -> bool {
        match self.layer_mut(name) {
            Some(layer) => {
                layer.fade.set(on, now);
                true
            }
            None => false,
        }
    }

    /// Replaces the rest pose's channel values (a performer's neutral) and rotations.
    /// Counts as a change only when the pose differs.
    pub fn set_rest(&mut self, weights: [f32; COUNT], head: Quat, eyes: [Quat; 2]) {
        let safe = |q: Quat| Some(rotation(Some(q)).unwrap_or(Quat::IDENTITY));
        let rest = LayerValues {
            weights: weights.map(unit),
            head: safe(head),
            left_eye: safe(eyes[0]),
            right_eye: safe(eyes[1]),
            ..self.rest
        };
        if rest != self.rest {
            self.rest = rest;
            self.changed = true;
        }
    }

    /// Takes the phone's newest conditioned frame into the tracking layer, at full presence.
    pub fn set_tracking(&mut self, frame: &FaceFrame) {
        self.set_tracking_layer(frame, 1.0);
    }

    /// Takes the tracking layer's values and how present the face is (1 while tracked, falling
    /// to 0 as a lost face fades out; see [`crate::calibrate::Output::layer`]).
    /// The regions a source holds (an expression that holds the mouth) move towards the rest
    /// pose first, so the phone no longer drives them.
    pub fn set_tracking_layer(&mut self, frame: &FaceFrame, presence: f32) {
        self.presence = unit(presence);
        self.meta = Some(*frame);
        let held = self.held(frame.received);
        let mut frame = *frame;
        if !held.is_empty() {
            let rest = &self.rest;
            let eyes = [rest.left_eye, rest.right_eye].map(|q| q.unwrap_or(Quat::IDENTITY));
            let head = rest.head.unwrap_or(Quat::IDENTITY);
            held.hold_frame(&mut frame, &rest.weights, head, eyes);
        }
        if let Some(i) = self.tracking {
            self.layers[i].values = LayerValues::from_frame(&frame);
        }
        self.changed = true;
    }

    /// How far the sources hold each region from tracking at `now`.
    pub fn held(&self, now: Instant) -> Held {
        self.parts.iter().fold(Held::default(), |held, part| {
            held.max(part.source.held(now))
        })
    }

    /// Whether a frame should be made at `now` without a new phone frame: a layer changed or
    /// is fading, and the last mix is at least [`FRAME_INTERVAL`] old.
    pub fn due(&self, now: Instant) -> bool {
        let animating = self.changed || self.layers.iter().any(|l| l.fade.moving());
        animating
            && self
                .last_mix
                .is_none_or(|t| now.saturating_duration_since(t) >= FRAME_INTERVAL)
    }

    /// Mixes the stack at `now`. The frame carries the newest tracking frame's protocol,
    /// sender, sender time and flag; it is received at `now`, or at the tracking frame's own
    /// instant when that is later. Before any tracking frame, it comes from `0.0.0.0:0`.
    /// A source's values computed over the layers below (see [`Source::over`]) are made as
    /// the mix reaches its first layer.
    pub fn mix(&mut self, now: Instant) -> FaceFrame {
        let mut out = self.meta.unwrap_or_else(|| {
            FaceFrame::empty(
                crate::arkit::Protocol::Vmc,
                std::net::SocketAddr::from(([0, 0, 0, 0], 0)),
                now,
            )
        });
        out.received = now.max(out.received);
        out.weights = self.rest.weights;
        out.present = ChannelMask::EMPTY;
        out.head = None;
        out.left_eye = None;
        out.right_eye = None;
        for layer in &mut self.layers {
            layer.fade.advance(now);
        }
        out.layer_weights = [0.0; MAX_LAYERS];
        out.visemes = [0.0; VISEMES];
        out.params = Params::EMPTY;
        for i in 0..self.layers.len() {
            if let Some(part) = self
                .parts
                .iter_mut()
                .find(|p| p.at.start == i && !p.at.is_empty())
            {
                let mut below = out;
                for w in &mut below.weights {
                    *w = unit(*w);
                }
                if let Some(v) = part.source.over(&below, now) {
                    self.layers[i].values = v;
                }
            }
            let w = self.weight_of(i);
            let layer = &self.layers[i];
            blend_layer(&mut out, layer, w, &self.rest);
            if let Some(slot) = out.layer_weights.get_mut(i) {
                *slot = w;
            }
            if let Some(visemes) = layer.values.visemes {
                if layer.mask.contains(Region::MouthJaw) {
                    for (slot, v) in out.visemes.iter_mut().zip(visemes) {
                        *slot = slot.max(unit(v * w));
                    }
                }
            }
            if let Some(params) = layer.values.params.filter(|_| w > 0.0) {
                out.params = params;
            }
        }
        for w in &mut out.weights {
            *w = unit(*w);
        }
        for q in [&mut out.head, &mut out.left_eye, &mut out.right_eye] {
            if q.is_some() {
                *q = Some(rotation(*q).unwrap_or(Quat::IDENTITY));
            }
        }
        if self.meta.is_none() {
            out.tracking = TrackingFlag::Unknown;
        }
        self.changed = false;
        self.last_mix = Some(now);
        out
    }

    /// The weight layer `i` blends with now.
    fn weight_of(&self, i: usize) -> f32 {
        if Some(i) == self.tracking {
            self.layers[i].weight() * self.presence
        } else {
            blend_weight(&self.layers[i], self.tracked())
        }
    }

    /// The weight the layer named `name` blends with now (its gain and fade, scaled by how
    /// absent the face is for a `when_lost` layer); `None` when there is none. Unlike
    /// `Mixer::layer_mut`, asking is not a change (tests).
    #[cfg(test)]
    pub(crate) fn weight(&self, name: &str) -> Option<f32> {
        let i = self.layers.iter().position(|l| l.name == name)?;
        Some(self.weight_of(i))
    }

    /// How present the tracked face is, 0 to 1: 0 before the phone's first frame.
    pub fn tracked(&self) -> f32 {
        if self.meta.is_some() {
            self.presence
        } else {
            0.0
        }
    }

    /// What each layer brings to the mix at its current weight, the rest pose first.
    pub fn report(&self) -> MixerReport {
        let mut layers = Vec::with_capacity(self.layers.len() + 1);
        layers.push(LayerReport {
            name: LAYER_REST.to_string(),
            contribution: Contribution {
                weights: self.rest.weights,
                present: self.rest.present,
                weight: 1.0,
                mode: BlendMode::Override,
                mask: RegionMask::ALL,
            },
        });
        for (i, layer) in self.layers.iter().enumerate() {
            let present = driven(layer);
            let mut weights = [0.0; COUNT];
            for c in present.iter() {
                weights[c.index()] = layer.values.weights[c.index()];
            }
            layers.push(LayerReport {
                name: layer.name.clone(),
                contribution: Contribution {
                    weights,
                    present,
                    weight: self.weight_of(i),
                    mode: layer.mode,
                    mask: layer.mask,
                },
            });
        }
        MixerReport { layers }
    }
}

/// The channels `layer` drives: those it carries, inside its mask.
fn driven(layer: &Layer) -> ChannelMask {
    let mut mask = ChannelMask::EMPTY;
    for c in layer.values.present.iter() {
        if layer.mask.covers(c) {
            mask.insert(c);
        }
    }
    mask
}

/// Blends `layer` into `out`. The channels and rotations it drives become present even at
/// weight 0, so a faded-out layer shows the rest pose rather than dropping the channel.
fn blend_layer(out: &mut FaceFrame, layer: &Layer, w: f32, rest: &LayerValues) {
    let present = driven(layer);
    out.present = out.present.union(present);
    for c in present.iter() {
        let i = c.index();
        let (v, x) = (out.weights[i], layer.values.weights[i]);
        out.weights[i] = match layer.mode {
            BlendMode::Override if w >= 1.0 => x,
            BlendMode::Override => v + (x - v) * w,
            BlendMode::Add => v + x * w,
            BlendMode::Max => v.max(x * w),
        };
    }
    let poses = [
        (
            Region::HeadPose,
            &mut out.head,
            layer.values.head,
            rest.head,
        ),
        (
            Region::Gaze,
            &mut out.left_eye,
            layer.values.left_eye,
            rest.left_eye,
        ),
        (
            Region::Gaze,
            &mut out.right_eye,
            layer.values.right_eye,
            rest.right_eye,
        ),
    ];
    for (region, slot, value, rest) in poses {
        let Some(x) = value.filter(|_| layer.mask.contains(region)) else {
            continue;
        };
        let v = slot.or(rest).unwrap_or(Quat::IDENTITY);
        *slot = Some(blend_rotation(v, x, w, layer.mode));
    }
}

/// Rotation `v` blended with `x` by weight `w`.
fn blend_rotation(v: Quat, x: Quat, w: f32, mode: BlendMode) -> Quat {
    match mode {
        BlendMode::Override if w >= 1.0 => x,
        BlendMode::Override if w <= 0.0 => v,
        BlendMode::Override => v.slerp(x, w),
        BlendMode::Add => v * Quat::IDENTITY.slerp(x, w),
        BlendMode::Max => {
            let scaled = Quat::IDENTITY.slerp(x, w);
            if turn(scaled) > turn(v) {
                scaled
            } else {
                v
            }
        }
    }
}

/// The angle of a rotation, in radians, in [0, π].
fn turn(q: Quat) -> f32 {
    2.0 * q.w.abs().min(1.0).acos()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arkit::{Channel, Protocol};
    use crate::calibrate::at;

    fn on(name: &str, mode: BlendMode, mask: RegionMask) -> Layer {
        Layer::new(
            name,
            mode,
            mask,
            Fade::new(true, Duration::from_millis(200), Duration::from_millis(200)),
        )
    }

    fn phone(t: Instant, pairs: &[(Channel, f32)]) -> FaceFrame {
        let mut f = FaceFrame::empty(Protocol::LiveLinkFace, "10.0.0.2:5000".parse().unwrap(), t);
        for &(c, v) in pairs {
            f.set(c, v);
        }
        f
    }

    fn with_values(mut layer: Layer, pairs: &[(Channel, f32)]) -> Layer {
        for &(c, v) in pairs {
            layer.values.set(c, v);
        }
        layer
    }

    #[test]
    fn tracking_alone_passes_the_phone_through() {
        let t0 = Instant::now();
        let mut m = Mixer::tracking_only();
        let mut f = phone(t0, &[(Channel::JawOpen, 0.3), (Channel::EyeBlinkLeft, 0.7)]);
        f.head = Some(Quat::from_rotation_y(0.4));
        f.sender_time = Some(1.5);
        m.set_tracking(&f);
        let out = m.mix(t0);
        let mut expected = f;
        expected.layer_weights[0] = 1.0;
        assert_eq!(out, expected, "the tracking layer alone changes nothing");
    }

    #[test]
    fn plugin_parameters_reach_the_frame_from_the_topmost_layer_in_the_mix() {
        let t0 = Instant::now();
        let key = crate::arkit::ParamKey::of("ChatHype");
        let carrying = |name: &str, value: f32| {
            let mut layer = on(name, BlendMode::Override, RegionMask::ALL);
            let mut params = Params::EMPTY;
            params.push(key, value);
            layer.values.params = Some(params);
            layer
        };
        let mut m = Mixer::new(vec![
            on(LAYER_TRACKING, BlendMode::Override, RegionMask::ALL),
            carrying("low", 0.2),
            carrying("top", 0.7),
        ]);
        m.set_tracking(&phone(t0, &[(Channel::JawOpen, 0.4)]));
        assert_eq!(m.mix(t0).params.get(key), Some(0.7));
        // A layer out of the mix carries nothing; the one below it then does.
        m.layer_mut("top").unwrap().gain = 0.0;
        assert_eq!(m.mix(t0).params.get(key), Some(0.2));
        m.layer_mut("low").unwrap().gain = 0.0;
        assert!(m.mix(t0).params.is_empty());
    }

    #[test]
    fn override_add_and_max() {
        let t0 = Instant::now();
        let base = |mode| {
            let mut m = Mixer::new(vec![
                on(LAYER_TRACKING, BlendMode::Override, RegionMask::ALL),
                with_values(
                    on("top", mode, RegionMask::ALL),
                    &[(Channel::JawOpen, 0.5), (Channel::MouthSmileLeft, 0.2)],
                ),
            ]);
            m.set_tracking(&phone(
                t0,
                &[(Channel::JawOpen, 0.4), (Channel::MouthSmileLeft, 0.6)],
            ));
            m.layer_mut("top").unwrap().gain = 0.5;
            m.mix(t0)
        };
        let o = base(BlendMode::Override);
        assert!((o.weights[Channel::JawOpen.index()] - 0.45).abs() < 1e-6);
        assert!((o.weights[Channel::MouthSmileLeft.index()] - 0.4).abs() < 1e-6);
        let a = base(BlendMode::Add);
        assert!((a.weights[Channel::JawOpen.index()] - 0.65).abs() < 1e-6);
        assert!((a.weights[Channel::MouthSmileLeft.index()] - 0.7).abs() < 1e-6);
        let x = base(BlendMode::Max);
        assert!((x.weights[Channel::JawOpen.index()] - 0.4).abs() < 1e-6);
        assert!((x.weights[Channel::MouthSmileLeft.index()] - 0.6).abs() < 1e-6);
        // A full add saturates at 1, never beyond.
        let mut m = Mixer::new(vec![
            on(LAYER_TRACKING, BlendMode::Override, RegionMask::ALL),
            with_values(
                on("top", BlendMode::Add, RegionMask::ALL),
                &[(Channel::JawOpen, 0.9)],
            ),
        ]);
        m.set_tracking(&phone(t0, &[(Channel::JawOpen, 0.8)]));
        assert_eq!(m.mix(t0).get(Channel::JawOpen), Some(1.0));
    }

    #[test]
    fn region_masks_limit_what_a_layer_drives() {
        let t0 = Instant::now();
        // The phone drives only the eyes; a second layer drives only the mouth.
        let mut m = Mixer::new(vec![
            on(
                LAYER_TRACKING,
                BlendMode::Override,
                RegionMask::of(&[Region::Eyes, Region::Gaze]),
            ),
            with_values(
                on(
                    "mouth",
                    BlendMode::Override,
                    RegionMask::of(&[Region::MouthJaw]),
                ),
                &[(Channel::JawOpen, 0.8), (Channel::EyeBlinkLeft, 1.0)],
            ),
        ]);
        let mut f = phone(
            t0,
            &[
                (Channel::JawOpen, 0.1),
                (Channel::EyeBlinkLeft, 0.6),
                (Channel::BrowInnerUp, 0.9),
            ],
        );
        f.head = Some(Quat::from_rotation_y(0.3));
        f.left_eye = Some(Quat::from_rotation_x(0.1));
        m.set_tracking(&f);
        let out = m.mix(t0);
        assert_eq!(
            out.get(Channel::JawOpen),
            Some(0.8),
            "the mouth layer's jaw"
        );
        assert_eq!(
            out.get(Channel::EyeBlinkLeft),
            Some(0.6),
            "the phone's blink"
        );
        assert_eq!(
            out.get(Channel::BrowInnerUp),
            None,
            "brows: no layer drives them"
        );
        assert_eq!(out.head, None, "head pose: outside both masks");
        assert_eq!(out.left_eye, f.left_eye, "gaze: the phone's");
    }

    #[test]
    fn a_frame_carries_the_weights_of_layers_beyond_the_configured_order() {
        // Eight configured layers, then two that other sources add (lip sync, expressions).
        let layers: Vec<Layer> = (0..10)
            .map(|i| {
                let mut l = Layer::new(
                    &format!("l{i}"),
                    BlendMode::Add,
                    RegionMask::ALL,
                    Fade::new(true, Duration::ZERO, Duration::ZERO),
                );
                l.gain = 0.05 * (i + 1) as f32;
                l
            })
            .collect();
        let mut m = Mixer::new(layers);
        let out = m.mix(Instant::now());
        assert!((out.layer_weights[9] - 0.5).abs() < 1e-6);
        assert!((out.layer_weights[7] - 0.4).abs() < 1e-6);
        assert_eq!(out.layer_weights[10], 0.0);
    }

    #[test]
    fn layer_order_decides_who_wins() {
        let t0 = Instant::now();
        let a = |v| {
            with_values(
                on("a", BlendMode::Override, RegionMask::ALL),
                &[(Channel::JawOpen, v)],
            )
        };
        let b = |v| {
            with_values(
                on("b", BlendMode::Override, RegionMask::ALL),
                &[(Channel::JawOpen, v)],
            )
        };
        let mut m = Mixer::new(vec![a(0.2), b(0.9)]);
        assert_eq!(m.mix(t0).get(Channel::JawOpen), Some(0.9));
        let mut m = Mixer::new(vec![b(0.9), a(0.2)]);
        assert_eq!(m.mix(t0).get(Channel::JawOpen), Some(0.2));
    }

    #[test]
    fn fades_run_on_the_instants_given_and_rest_shows_beneath() {
        let t0 = Instant::now();
        let mut layer = with_values(
            on("smile", BlendMode::Override, RegionMask::ALL),
            &[(Channel::MouthSmileLeft, 1.0)],
        );
        layer.fade = Fade::new(
            false,
            Duration::from_millis(400),
            Duration::from_millis(400),
        );
        let mut m = Mixer::new(vec![layer]);
        let mut rest = [0.0; COUNT];
        rest[Channel::MouthSmileLeft.index()] = 0.2;
        m.set_rest(rest, Quat::IDENTITY, [Quat::IDENTITY; 2]);
        // Off: the channel it carries shows the rest value.
        assert_eq!(m.mix(t0).get(Channel::MouthSmileLeft), Some(0.2));
        assert!(m.set_active("smile", true, t0));
        assert!(m.due(at(t0, 0.02)));
        let half = m.mix(at(t0, 0.2)).get(Channel::MouthSmileLeft).unwrap();
        assert!((half - 0.6).abs() < 1e-5, "{half}");
        // The clock stands still (paused): so does the fade.
        assert_eq!(m.mix(at(t0, 0.2)).get(Channel::MouthSmileLeft), Some(half));
        assert_eq!(m.mix(at(t0, 0.4)).get(Channel::MouthSmileLeft), Some(1.0));
        assert!(!m.due(at(t0, 1.0)), "nothing moves any more");
        assert!(!m.set_active("frown", true, t0));
    }

    #[test]
    fn a_new_stack_keeps_weights_and_the_phones_values() {
        let t0 = Instant::now();
        let smile = |on_at_start: bool| {
            let mut l = with_values(
                on("smile", BlendMode::Override, RegionMask::ALL),
                &[(Channel::MouthSmileLeft, 1.0)],
            );
            l.fade = Fade::new(
                on_at_start,
                Duration::from_millis(400),
                Duration::from_millis(400),
            );
            l
        };
        let mut m = Mixer::new(vec![
            on(LAYER_TRACKING, BlendMode::Override, RegionMask::ALL),
            smile(true),
        ]);
        assert!(m.due(t0), "a fixed pose shows before the phone sends");
        m.set_tracking(&phone(t0, &[(Channel::JawOpen, 0.7)]));
        assert_eq!(m.mix(t0).get(Channel::MouthSmileLeft), Some(1.0));
        // The reloaded stack turns the smile off: it fades from where it was, not from 0.
        m.replace_layers(
            vec![
                on(LAYER_TRACKING, BlendMode::Override, RegionMask::ALL),
                smile(false),
            ],
            t0,
        );
        let out = m.mix(at(t0, 0.2));
        assert_eq!(
            out.get(Channel::JawOpen),
            Some(0.7),
            "the phone's values stay"
        );
        let half = out.get(Channel::MouthSmileLeft).unwrap();
        assert!((half - 0.5).abs() < 1e-5, "{half}");
        assert_eq!(m.mix(at(t0, 0.4)).get(Channel::MouthSmileLeft), Some(0.0));
    }

    #[test]
    fn nothing_unsafe_leaves_the_mixer() {
        let t0 = Instant::now();
        let mut m = Mixer::new(vec![
            on(LAYER_TRACKING, BlendMode::Override, RegionMask::ALL),
            on("add", BlendMode::Add, RegionMask::ALL),
            on("max", BlendMode::Max, RegionMask::ALL),
        ]);
        let mut f = phone(t0, &[]);
        for c in Channel::ALL {
            f.set(c, [f32::NAN, f32::INFINITY, -3.0, 1e30][c.index() % 4]);
        }
        f.head = Some(Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0));
        f.left_eye = Some(Quat::from_xyzw(0.0, 0.0, 0.0, 0.0));
        f.right_eye = Some(Quat::from_xyzw(0.0, 0.0, 3.0, 0.0));
        m.set_tracking(&f);
        for name in ["add", "max"] {
            let layer = m.layer_mut(name).unwrap();
            layer.gain = f32::NAN;
            for c in Channel::ALL {
                layer.values.set(c, f32::INFINITY);
            }
            layer.values.head = Some(Quat::from_xyzw(f32::INFINITY, 0.0, 0.0, 0.0));
        }
        let mut rest = [f32::NAN; COUNT];
        rest[0] = f32::NEG_INFINITY;
        m.set_rest(
            rest,
            Quat::from_xyzw(f32::NAN, 0.0, 0.0, 0.0),
            [Quat::IDENTITY; 2],
        );
        let out = m.mix(t0);
        assert!(out
            .weights
            .iter()
            .all(|w| w.is_finite() && (0.0..=1.0).contains(w)));
        for q in [out.head, out.left_eye, out.right_eye]
            .into_iter()
            .flatten()
        {
            assert!(q.is_finite() && (q.length() - 1.0).abs() < 1e-4, "{q:?}");
        }
        assert_eq!(
            out.right_eye.map(|q| q.z),
            Some(1.0),
            "a long rotation is normalised"
        );
    }

    #[test]
    fn a_when_lost_layer_weighs_by_absence_with_a_floor_under_tracking() {
        let t0 = Instant::now();
        let mut idle = with_values(
            on("idle", BlendMode::Add, RegionMask::ALL),
            &[(Channel::EyeBlinkLeft, 1.0)],
        );
        idle.when_lost = true;
        let mut m = Mixer::new(vec![
            on(LAYER_TRACKING, BlendMode::Override, RegionMask::ALL),
            idle,
        ]);
        // No phone yet: the layer is fully on.
        assert_eq!(m.weight("idle"), Some(1.0));
        assert_eq!(m.mix(t0).get(Channel::EyeBlinkLeft), Some(1.0));
        // The face tracked: gone without a floor, at the floor with one.
        m.set_tracking_layer(&phone(t0, &[(Channel::EyeBlinkLeft, 0.1)]), 1.0);
        assert_eq!(m.weight("idle"), Some(0.0));
        assert_eq!(m.mix(t0).get(Channel::EyeBlinkLeft), Some(0.1));
        m.layer_mut("idle").unwrap().under_tracking = 0.25;
        assert_eq!(m.weight("idle"), Some(0.25));
        let blink = m.mix(t0).get(Channel::EyeBlinkLeft).unwrap();
        assert!((blink - 0.35).abs() < 1e-6, "{blink}");
        // Half lost: the absence wins over the floor; a junk floor counts as 0.
        m.set_tracking_layer(&phone(t0, &[(Channel::EyeBlinkLeft, 0.1)]), 0.4);
        assert!((m.weight("idle").unwrap() - 0.6).abs() < 1e-6);
        m.layer_mut("idle").unwrap().under_tracking = f32::NAN;
        m.set_tracking_layer(&phone(t0, &[(Channel::EyeBlinkLeft, 0.1)]), 1.0);
        assert_eq!(m.weight("idle"), Some(0.0));
        assert_eq!(m.weight("nothing"), None);
        // A layer that is not `when_lost` ignores the floor.
        let mut plain = on("plain", BlendMode::Add, RegionMask::ALL);
        plain.under_tracking = 0.5;
        let m = Mixer::new(vec![plain]);
        assert_eq!(m.weight("plain"), Some(1.0));
    }

    #[test]
    fn rotations_blend_by_mode() {
        let t0 = Instant::now();
        let turn_by = |mode, gain| {
            let mut top = on("top", mode, RegionMask::ALL);
            top.values.head = Some(Quat::from_rotation_y(0.4));
            top.gain = gain;
            let mut m = Mixer::new(vec![
                on(LAYER_TRACKING, BlendMode::Override, RegionMask::ALL),
                top,
            ]);
            let mut f = phone(t0, &[]);
            f.head = Some(Quat::from_rotation_y(0.2));
            m.set_tracking(&f);
            let (axis, angle) = m.mix(t0).head.unwrap().to_axis_angle();
            angle * axis.y.signum()
        };
        assert!((turn_by(BlendMode::Override, 0.5) - 0.3).abs() < 1e-4);
        assert!((turn_by(BlendMode::Add, 0.5) - 0.4).abs() < 1e-4);
        assert!((turn_by(BlendMode::Max, 0.5) - 0.2).abs() < 1e-4);
        assert!((turn_by(BlendMode::Max, 1.0) - 0.4).abs() < 1e-4);
    }

    #[test]
    fn the_report_shows_each_layers_part() {
        let t0 = Instant::now();
        let mut m = Mixer::new(vec![
            on(LAYER_TRACKING, BlendMode::Override, RegionMask::ALL),
            with_values(
                on("mouth", BlendMode::Add, RegionMask::of(&[Region::MouthJaw])),
                &[(Channel::JawOpen, 0.3), (Channel::EyeBlinkLeft, 0.5)],
            ),
        ]);
        m.set_tracking(&phone(t0, &[(Channel::EyeBlinkLeft, 0.4)]));
        m.layer_mut("mouth").unwrap().gain = 0.25;
        let out = m.mix(t0);
        assert_eq!(
            out.layer_weights[..3],
            [1.0, 0.25, 0.0],
            "each layer's weight crosses"
        );
        let r = m.report();
        let names: Vec<&str> = r.layers.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, [LAYER_REST, LAYER_TRACKING, "mouth"]);
        let mouth = &r.layers[2].contribution;
        assert!(mouth.present.contains(Channel::JawOpen));
        assert!(!mouth.present.contains(Channel::EyeBlinkLeft), "masked out");
        assert_eq!(mouth.weights[Channel::JawOpen.index()], 0.3);
        assert_eq!(mouth.mode, BlendMode::Add);
    }
}

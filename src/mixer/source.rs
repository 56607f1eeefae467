//! Sources of weights: the parts of the mixer that fill layers of their own (idle life, lip
//! sync, expressions, the values plugins inject, and any later one), each behind one small
//! interface and registered once with the mixer.
//!
//! A source says what its layers are (values, region mask, blend mode, fade, gain) and where
//! they go in the order; the mixer lays them out, hands each source its own layers every tick
//! and offers it the run's inputs. Nothing outside the mixer finds a layer by its name: a
//! source reaches its layers through [`Own`], by their place among its own.
//!
//! What a run's sources are configured from, what they are told and what they report are the
//! run's own types, named once by a [`Kit`]; the mixer only passes them on.

use std::ops::Range;
use std::time::Instant;

use glam::Quat;

use super::layer::{unit, Fade, Layer, LayerValues};
use super::region::{Region, RegionMask};
use crate::arkit::{FaceFrame, COUNT};

/// The types a run's sources share: what configures them, what they are told, what they report.
pub trait Kit {
    /// What a source builds its layers from (a run's configuration).
    type Config;
    /// An input a source may take (a lip-sync hop, a trigger).
    type Input;
    /// What a source reports (an outcome for the control panel or the API).
    type News;
}

/// A mixer without sources: nothing configures, nothing is told, nothing reported.
impl Kit for () {
    type Config = ();
    type Input = ();
    type News = ();
}

/// Where a source's layers go in the stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Where `[layers] order` lists this name, else on top. A source placed so has at most one
    /// layer; when it has none (switched off), a listed place stays as an empty layer that is
    /// off.
    Named(&'static str),
    /// On top, after the sources registered before it.
    Top,
}

/// How far each face region is held from tracking, 0 (the phone drives it) to 1 (held at the
/// rest pose): what a source that holds regions (an expression that holds the mouth) asks of
/// the tracking layer.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Held {
    /// Per region, [`Region::ALL`] order.
    weights: [f32; Region::ALL.len()],
}

impl Held {
    /// How far `region` is held, 0 to 1.
    pub fn weight(&self, region: Region) -> f32 {
        self.weights[region.index()]
    }

    /// Holds `region` at least as far as `weight` (made finite and kept in [0, 1]).
    pub fn hold(&mut self, region: Region, weight: f32) {
        let slot = &mut self.weights[region.index()];
        *slot = slot.max(unit(weight));
    }

    /// The largest hold of either, region by region.
    pub fn max(mut self, other: Held) -> Held {
        for (a, b) in self.weights.iter_mut().zip(other.weights) {
            *a = a.max(b);
        }
        self
    }

    /// Whether no region is held.
    pub fn is_empty(&self) -> bool {
        self.weights.iter().all(|w| *w <= 0.0)
    }

    /// The regions held at all (weight above 0).
    pub fn mask(&self) -> RegionMask {
        let held: Vec<Region> = Region::ALL
            .into_iter()
            .filter(|r| self.weight(*r) > 0.0)
            .collect();
        RegionMask::of(&held)
    }

    /// Moves the tracked `frame`'s held channels and rotations towards the rest pose by how far
    /// each region is held, so the tracking layer no longer drives them: present channels
    /// towards `rest` (the performer's neutral), the head towards `rest_head`, the eyes (gaze)
    /// towards `rest_eyes`. Held values come out finite and in [0, 1]; the others are left as
    /// they are (the mixer makes them safe).
    pub fn hold_frame(
        &self,
        frame: &mut FaceFrame,
        rest: &[f32; COUNT],
        rest_head: Quat,
        rest_eyes: [Quat; 2],
    ) {
        if self.is_empty() {
            return;
        }
        for c in frame.present.iter() {
            let w = self.weight(Region::of(c));
            if w > 0.0 {
                let i = c.index();
                let v = unit(frame.weights[i]);
                frame.weights[i] = unit(v + (unit(rest[i]) - v) * w);
            }
        }
        let toward = |q: Option<Quat>, rest: Quat, w: f32| {
            let q = q?;
            if w <= 0.0 || !q.is_finite() || !rest.is_finite() {
                return Some(q);
            }
            Some(q.normalize().slerp(rest.normalize(), w).normalize())
        };
        frame.head = toward(frame.head, rest_head, self.weight(Region::HeadPose));
        let gaze = self.weight(Region::Gaze);
        frame.left_eye = toward(frame.left_eye, rest_eyes[0], gaze);
        frame.right_eye = toward(frame.right_eye, rest_eyes[1], gaze);
    }
}

/// One source of weights. See the module documentation.
pub trait Source<K: Kit>: Send {
    /// Its layers as `config` makes them, bottom to top, with their fades as they stand at
    /// `now`. Called when the mixer is built and at every new configuration; a layer that keeps
    /// its name keeps its weight, which then fades towards the new layer's state.
    fn configure(&mut self, config: &K::Config, now: Instant) -> Vec<Layer>;

    /// Where its layers go.
    fn place(&self) -> Place;

    /// Takes `input` at `now` if it is one of its own, changing its layers through `own`.
    fn input(&mut self, input: &K::Input, now: Instant, own: &mut Own<'_, K>) {
        let _ = (input, now, own);
    }

    /// Moves it on to `now`, before a mix may be made.
    fn advance(&mut self, now: Instant, own: &mut Own<'_, K>) {
        let _ = (now, own);
    }

    /// Whether it changes the mix at `now` though none of its layers was touched (values
    /// computed over the layers below it, which move with them).
    fn live(&self, now: Instant) -> bool {
        let _ = now;
        false
    }

    /// The values of its first layer made from what the layers below it mix to at `now`
    /// (weights clamped); `None` keeps its values. For a source whose effect depends on what it
    /// lies over, such as values a plugin adds to the face.
    fn over(&mut self, below: &FaceFrame, now: Instant) -> Option<LayerValues> {
        let _ = (below, now);
        None
    }

    /// How far it holds each face region from tracking at `now`.
    fn held(&self, now: Instant) -> Held {
        let _ = now;
        Held::default()
    }
}

/// A source's own layers while it changes them, with what it may read of the rest of the
/// mixer. Reaching a layer mutably counts as a change of the mix.
pub struct Own<'a, K: Kit> {
    layers: &'a mut [Layer],
    tracked: f32,
    changed: &'a mut bool,
    news: &'a mut Vec<K::News>,
}

impl<'a, K: Kit> Own<'a, K> {
    pub(super) fn new(
        layers: &'a mut [Layer],
        tracked: f32,
        changed: &'a mut bool,
        news: &'a mut Vec<K::News>,
    ) -> Own<'a, K> {
        Own {
            layers,
            tracked,
            changed,
            news,
        }
    }

    /// Its layers, in the order it gave them.
    pub fn layers(&self) -> &[Layer] {
        self.layers
    }

    /// Counts as a change of the mix though no layer was reached.
    pub(super) fn touch(&mut self) {
        *self.changed = true;
    }

    /// Its layer `i`, to change; counts as a change of the mix.
    pub fn layer_mut(&mut self, i: usize) -> Option<&mut Layer> {
        *self.changed = true;
        self.layers.get_mut(i)
    }

    /// Fades its layer `i` in (`true`) or out from `now`.
    pub fn set_active(&mut self, i: usize, on: bool, now: Instant) {
        if let Some(layer) = self.layer_mut(i) {
            layer.fade.set(on, now);
        }
    }

    /// The weight its layer `i` blends with now (0 when it has none).
    pub fn weight(&self, i: usize) -> f32 {
        self.layers
            .get(i)
            .map_or(0.0, |layer| blend_weight(layer, self.tracked))
    }

    /// How present the tracked face is, 0 to 1.
    pub fn tracked(&self) -> f32 {
        self.tracked
    }

    /// Reports `news` to whoever runs the mixer.
    pub fn tell(&mut self, news: K::News) {
        self.news.push(news);
    }
}

/// The weight `layer` blends with when the tracked face is `tracked` present: its gain and
/// fade, scaled by how absent the face is for a `when_lost` layer (never below its
/// `under_tracking`). Not for the tracking layer, which the face's presence scales instead.
pub(super) fn blend_weight(layer: &Layer, tracked: f32) -> f32 {
    let presence = if layer.when_lost {
        (1.0 - tracked).max(unit(layer.under_tracking))
    } else {
        1.0
    };
    layer.weight() * presence
}

/// A registered source and the places of its layers in the stack.
pub(super) struct Part<K: Kit> {
    pub(super) source: Box<dyn Source<K>>,
    pub(super) at: Range<usize>,
}

/// Lays `parts` (each source's layers with its place) out over `base` (the layers of
/// `[layers]`), bottom to top, and returns the stack with each part's range in it, in the
/// order of `parts`.
pub(super) fn lay_out(
    mut layers: Vec<Layer>,
    parts: Vec<(Place, Vec<Layer>)>,
) -> (Vec<Layer>, Vec<Range<usize>>) {
    let mut ranges = Vec::with_capacity(parts.len());
    for (place, mut own) in parts {
        let listed = match place {
            Place::Named(name) => layers.iter().position(|l| l.name == name),
            Place::Top => None,
        };
        match listed {
            Some(i) if own.is_empty() => {
                // Off: the listed place stays, an empty layer that drives nothing.
                layers[i].fade = Fade::new(false, Default::default(), Default::default());
                ranges.push(i..i);
            }
            Some(i) => {
                own.truncate(1);
                layers[i] = own.remove(0);
                ranges.push(i..i + 1);
            }
            None => {
                let start = layers.len();
                layers.extend(own);
                ranges.push(start..layers.len());
            }
        }
    }
    (layers, ranges)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::arkit::{Channel, Protocol};
    use crate::calibrate::at;
    use crate::mixer::{BlendMode, Mixer, LAYER_TRACKING};

    /// A kit whose configuration switches the test source on or off and whose input is a jaw
    /// opening; the source reports each opening it takes.
    enum Test {}

    impl Kit for Test {
        type Config = bool;
        type Input = f32;
        type News = f32;
    }

    /// One layer, `jaw`, placed where `[layers] order` lists it; holds the brows while on.
    struct Jaw;

    impl Source<Test> for Jaw {
        fn configure(&mut self, on: &bool, _now: Instant) -> Vec<Layer> {
            let fade = Fade::new(true, Duration::from_millis(100), Duration::ZERO);
            let mouth = RegionMask::of(&[Region::MouthJaw]);
            on.then(|| Layer::new("jaw", BlendMode::Override, mouth, fade))
                .into_iter()
                .collect()
        }

        fn place(&self) -> Place {
            Place::Named("jaw")
        }

        fn input(&mut self, open: &f32, _now: Instant, own: &mut Own<'_, Test>) {
            if let Some(layer) = own.layer_mut(0) {
                layer.values.set(Channel::JawOpen, *open);
                own.tell(*open);
            }
        }

        fn held(&self, _now: Instant) -> Held {
            let mut held = Held::default();
            held.hold(Region::Brows, 1.0);
            held
        }
    }

    /// A layer on top whose values are the layer below's jaw, halved.
    struct Half;

    impl Source<Test> for Half {
        fn configure(&mut self, _: &bool, _now: Instant) -> Vec<Layer> {
            let fade = Fade::new(true, Duration::ZERO, Duration::ZERO);
            vec![Layer::new(
                "half",
                BlendMode::Override,
                RegionMask::ALL,
                fade,
            )]
        }

        fn place(&self) -> Place {
            Place::Top
        }

        fn over(&mut self, below: &FaceFrame, _now: Instant) -> Option<LayerValues> {
            let mut values = LayerValues::default();
            values.set(
                Channel::JawOpen,
                below.weights[Channel::JawOpen.index()] * 0.5,
            );
            Some(values)
        }
    }

    fn base(order: &[&str]) -> Vec<Layer> {
        let fade = Fade::new(true, Duration::ZERO, Duration::ZERO);
        order
            .iter()
            .map(|n| Layer::new(n, BlendMode::Override, RegionMask::ALL, fade))
            .collect()
    }

    fn names<K: Kit>(mixer: &Mixer<K>) -> Vec<&str> {
        mixer.layers().iter().map(|l| l.name.as_str()).collect()
    }

    #[test]
    fn sources_take_their_places_their_inputs_and_report() {
        let t0 = Instant::now();
        let sources: Vec<Box<dyn Source<Test>>> = vec![Box::new(Jaw), Box::new(Half)];
        let mut mixer = Mixer::with_sources(base(&[LAYER_TRACKING]), sources, &true, t0);
        assert_eq!(
            names(&mixer),
            [LAYER_TRACKING, "jaw", "half"],
            "on top, in order"
        );
        let mut face = FaceFrame::empty(Protocol::Vmc, "10.0.0.2:5000".parse().unwrap(), t0);
        face.set(Channel::BrowInnerUp, 0.8);
        face.set(Channel::EyeBlinkLeft, 0.4);
        mixer.set_tracking(&face);
        mixer.input(&0.6, t0);
        assert_eq!(mixer.take_news(), [0.6]);
        assert!(mixer.take_news().is_empty(), "news is taken once");
        let out = mixer.mix(at(t0, 0.2));
        // The top source made its values from the jaw below it.
        assert!((out.get(Channel::JawOpen).unwrap() - 0.3).abs() < 1e-6);
        // The held brows rest; the eyes pass.
        assert_eq!(out.get(Channel::BrowInnerUp), Some(0.0));
        assert_eq!(out.get(Channel::EyeBlinkLeft), Some(0.4));

        // Listed in the order, the jaw goes there; a new configuration keeps its weight.
        let listed = base(&["jaw", LAYER_TRACKING]);
        mixer.configure(listed.clone(), &true, at(t0, 0.3));
        assert_eq!(names(&mixer), ["jaw", LAYER_TRACKING, "half"]);
        assert_eq!(mixer.weight("jaw"), Some(1.0));
        // Switched off, its listed place stays, off and empty; its input goes nowhere.
        mixer.configure(listed, &false, at(t0, 0.4));
        assert_eq!(names(&mixer), ["jaw", LAYER_TRACKING, "half"]);
        mixer.input(&0.9, at(t0, 0.4));
        assert!(mixer.take_news().is_empty());
        mixer.mix(at(t0, 0.5));
        assert_eq!(mixer.weight("jaw"), Some(0.0));
    }

    #[test]
    fn holds_combine_by_region_and_stay_in_range() {
        let mut a = Held::default();
        a.hold(Region::Eyes, 0.3);
        a.hold(Region::Eyes, f32::NAN);
        let mut b = Held::default();
        b.hold(Region::Eyes, 7.0);
        b.hold(Region::Gaze, 0.5);
        let both = a.max(b);
        assert_eq!(both.weight(Region::Eyes), 1.0);
        assert_eq!(both.weight(Region::Gaze), 0.5);
        assert_eq!(both.mask(), RegionMask::of(&[Region::Eyes, Region::Gaze]));
        assert!(Held::default().is_empty());
    }
}

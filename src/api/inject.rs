//! Parameter values injected by plugins (`InjectParameterDataRequest`): per channel, the value
//! set or added, its weight and when it was last sent; values not re-sent within a second lapse.
//! Pure and clocked by the instants it is given.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::custom::CustomParam;
use super::params::Param;
use crate::arkit::{Channel, ChannelMask, FaceFrame, ParamKey, Params, COUNT};
use crate::mixer::{BlendMode, Fade, Layer, LayerValues, RegionMask};

/// How long an injected value holds without being sent again, as VTube Studio.
pub const LAPSE: Duration = Duration::from_secs(1);

/// The largest magnitude a value may have, as VTube Studio.
pub const VALUE_LIMIT: f64 = 1_000_000.0;

/// How injected values combine with tracking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InjectMode {
    /// Replaces tracking by the value's weight; one plugin owns a channel at a time.
    #[default]
    Set,
    /// Adds to the channel; any number of plugins may add, and the weight is not used.
    Add,
}

/// One value of a request, validated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParamValue {
    /// The parameter.
    pub param: &'static Param,
    /// Its value.
    pub value: f32,
    /// Its weight against tracking in `set` mode, in [0, 1].
    pub weight: f32,
}

/// One value of a request for a parameter a plugin created, validated. It drives no channel:
/// it is kept for `ParameterValueRequest` and `InputParameterListRequest`.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomValue {
    /// The parameter's key ([`super::CustomParam::key`]).
    pub key: String,
    /// Its value.
    pub value: f32,
    /// Its weight against the parameter's default in `set` mode, in [0, 1].
    pub weight: f32,
}

/// Why a request's values were refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InjectError {
    /// Another plugin sets this channel.
    #[error("{channel} is set by another plugin")]
    Owned {
        /// The channel.
        channel: Channel,
    },
    /// Another plugin sets this parameter (one a plugin created).
    #[error("{key} is set by another plugin")]
    OwnedParam {
        /// The parameter's key.
        key: String,
    },
}

/// A value set on one channel.
#[derive(Debug, Clone, Copy, PartialEq)]
struct SetEntry {
    value: f32,
    weight: f32,
    owner: u64,
    at: Instant,
}

/// The injected values of every plugin: pure, clocked by the instants given.
#[derive(Debug, Clone)]
pub struct Injected {
    set: [Option<SetEntry>; COUNT],
    /// Per (plugin session, channel): its change and when it was sent.
    add: HashMap<(u64, usize), (f32, Instant)>,
    /// Per parameter name: the last value sent and when, for `ParameterValueRequest`.
    last: HashMap<&'static str, (f32, Instant)>,
    /// Per parameter a plugin created (by key): the value set.
    custom_set: HashMap<String, SetEntry>,
    /// Per (plugin session, parameter a plugin created): its change and when it was sent.
    custom_add: HashMap<(u64, String), (f32, Instant)>,
    /// The parameters plugins created, in the order they were created: what mappings may read.
    declared: Vec<Declared>,
    face_found: Option<Instant>,
}

/// A parameter a plugin created, as the mix needs it.
#[derive(Debug, Clone, PartialEq)]
struct Declared {
    /// Its key (the name in lower case).
    key: String,
    /// The key frames carry its value under.
    frame_key: ParamKey,
    /// Its range: the value at `min` reads 0 in a mapping, at `max` 1.
    min: f32,
    max: f32,
    /// Its value while no plugin sends one.
    default: f32,
}

impl Default for Injected {
    fn default() -> Injected {
        Injected {
            set: [None; COUNT],
            add: HashMap::new(),
            last: HashMap::new(),
            custom_set: HashMap::new(),
            custom_add: HashMap::new(),
            declared: Vec::new(),
            face_found: None,
        }
    }
}

fn live(at: Instant, now: Instant) -> bool {
    now.saturating_duration_since(at) <= LAPSE
}

impl Injected {
    /// Nothing injected.
    pub fn new() -> Injected {
        Injected::default()
    }

    /// Applies one request's values from plugin session `owner` at `now`; `face_found` holds
    /// the tracking-lost state off for a second. All or nothing: a channel set by another
    /// plugin refuses the whole request.
    pub fn inject(
        &mut self,
        owner: u64,
        mode: InjectMode,
        values: &[ParamValue],
        face_found: bool,
        now: Instant,
    ) -> Result<(), InjectError> {
        self.inject_all(owner, mode, values, &[], face_found, now)
    }

    /// [`Injected::inject`] with values for parameters plugins created (`custom`) too. All or
    /// nothing: a channel or parameter set by another plugin refuses the whole request.
    pub fn inject_all(
        &mut self,
        owner: u64,
        mode: InjectMode,
        values: &[ParamValue],
        custom: &[CustomValue],
        face_found: bool,
        now: Instant,
    ) -> Result<(), InjectError> {
        self.expire(now);
        if mode == InjectMode::Set {
            for v in values {
                for (channel, _) in v.param.targets {
                    if let Some(e) = &self.set[channel.index()] {
                        if e.owner != owner {
                            return Err(InjectError::Owned { channel: *channel });
                        }
                    }
                }
            }
            for v in custom {
                if self
                    .custom_set
                    .get(&v.key)
                    .is_some_and(|e| e.owner != owner)
                {
                    return Err(InjectError::OwnedParam { key: v.key.clone() });
                }
            }
        }
        let mut sums: HashMap<usize, f32> = HashMap::new();
        for v in values {
            for (channel, curve) in v.param.targets {
                match mode {
                    InjectMode::Set => {
                        self.set[channel.index()] = Some(SetEntry {
                            value: curve.value(v.value),
                            weight: v.weight.clamp(0.0, 1.0),
                            owner,
                            at: now,
                        });
                    }
                    InjectMode::Add => {
                        *sums.entry(channel.index()).or_default() += curve.change(v.value)
                    }
                }
            }
            self.last.insert(v.param.name, (v.value, now));
        }
        for (i, d) in sums {
            self.add.insert((owner, i), (d.clamp(-1.0, 1.0), now));
        }
        let mut custom_sums: HashMap<&str, f32> = HashMap::new();
        for v in custom {
            match mode {
                InjectMode::Set => {
                    let entry = SetEntry {
                        value: v.value,
                        weight: v.weight.clamp(0.0, 1.0),
                        owner,
                        at: now,
                    };
                    self.custom_set.insert(v.key.clone(), entry);
                }
                InjectMode::Add => *custom_sums.entry(&v.key).or_default() += v.value,
            }
        }
        for (key, d) in custom_sums {
            self.custom_add.insert((owner, key.to_string()), (d, now));
        }
        if face_found {
            self.face_found = Some(now);
        }
        Ok(())
    }

    /// The value of the parameter a plugin created with key `key` and rest value `default` at
    /// `now`: the default, moved towards the value set by its weight, plus what is added (as
    /// in VTube Studio, not clamped to its range).
    pub fn custom_value(&self, key: &str, default: f32, now: Instant) -> f32 {
        let mut v = default;
        if let Some(e) = self.custom_set.get(key).filter(|e| live(e.at, now)) {
            v += (e.value - v) * e.weight;
        }
        for ((_, k), (d, at)) in &self.custom_add {
            if k == key && live(*at, now) {
                v += d;
            }
        }
        v
    }

    /// Drops every value sent for the parameter with key `key` and the parameter itself (it was
    /// deleted).
    pub fn forget(&mut self, key: &str) {
        self.custom_set.remove(key);
        self.custom_add.retain(|(_, k), _| k != key);
        self.declared.retain(|d| d.key != key);
    }

    /// Makes the parameter `param` readable by mappings (`param:NAME`), or updates its range and
    /// default when it is known already.
    pub fn declare(&mut self, param: &CustomParam) {
        let d = Declared {
            key: param.key(),
            frame_key: ParamKey::of(&param.name),
            min: param.min,
            max: param.max,
            default: param.default,
        };
        match self.declared.iter_mut().find(|x| x.key == d.key) {
            Some(x) => *x = d,
            None => self.declared.push(d),
        }
    }

    /// The parameters plugins created, placed within their ranges, at `now`, as frames carry
    /// them: those a plugin sends a value for first, then the others at their defaults, at most
    /// [`crate::arkit::PARAMS`].
    fn params(&self, now: Instant) -> (Params, bool) {
        let sent = |d: &Declared| {
            self.custom_set.get(&d.key).is_some_and(|e| live(e.at, now))
                || self
                    .custom_add
                    .iter()
                    .any(|((_, k), (_, at))| *k == d.key && live(*at, now))
        };
        let mut out = Params::EMPTY;
        let mut any_sent = false;
        for first in [true, false] {
            for d in self.declared.iter().filter(|d| sent(d) == first) {
                let v = self.custom_value(&d.key, d.default, now);
                let span = d.max - d.min;
                let placed = if span.abs() > f32::EPSILON {
                    (v - d.min) / span
                } else {
                    0.0
                };
                out.push(d.frame_key, placed);
                any_sent |= first;
            }
        }
        (out, any_sent)
    }

    /// Drops everything plugin session `owner` injected (it disconnected).
    pub fn release(&mut self, owner: u64) {
        for slot in &mut self.set {
            if slot.is_some_and(|e| e.owner == owner) {
                *slot = None;
            }
        }
        self.add.retain(|(o, _), _| *o != owner);
        self.custom_set.retain(|_, e| e.owner != owner);
        self.custom_add.retain(|(o, _), _| *o != owner);
    }

    /// Forgets values older than [`LAPSE`] at `now`, so memory stays bounded.
    fn expire(&mut self, now: Instant) {
        for slot in &mut self.set {
            if slot.is_some_and(|e| !live(e.at, now)) {
                *slot = None;
            }
        }
        self.add.retain(|_, (_, at)| live(*at, now));
        self.last.retain(|_, (_, at)| live(*at, now));
        self.custom_set.retain(|_, e| live(e.at, now));
        self.custom_add.retain(|_, (_, at)| live(*at, now));
        if self.face_found.is_some_and(|at| !live(at, now)) {
            self.face_found = None;
        }
    }

    /// The value last sent for `param` that has not lapsed at `now`, else its rest value.
    pub fn param_value(&self, param: &Param, now: Instant) -> f32 {
        match self.last.get(param.name) {
            Some((v, at)) if live(*at, now) => *v,
            _ => param.default,
        }
    }

    /// What is injected at `now`: values sent within the last second.
    pub fn values(&self, now: Instant) -> InjectedValues {
        let mut out = InjectedValues::default();
        for (i, slot) in self.set.iter().enumerate() {
            if let Some(e) = slot.filter(|e| live(e.at, now)) {
                out.set.set(Channel::ALL[i], e.value);
                out.weight[i] = e.weight;
            }
        }
        for ((_, i), (d, at)) in &self.add {
            if live(*at, now) {
                out.add[*i] = (out.add[*i] + d).clamp(-1.0, 1.0);
                out.added.insert(Channel::ALL[*i]);
            }
        }
        out.face_found = self.face_found.is_some_and(|at| live(at, now));
        (out.params, out.params_sent) = self.params(now);
        out
    }
}

/// The injected values at one instant, ready to mix over the tracked face.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InjectedValues {
    /// Channels set by a plugin (`present`) and their values.
    pub set: LayerValues,
    /// The weight of each set channel against what is below it, canonical order.
    pub weight: [f32; COUNT],
    /// Changes added by plugins, summed and clamped to [-1, 1], canonical order.
    pub add: [f32; COUNT],
    /// The channels some plugin adds to.
    pub added: ChannelMask,
    /// Whether a plugin said within the last second that the face is found (`faceFound`):
    /// tracking loss should be held off.
    pub face_found: bool,
    /// The parameters plugins created, as frames carry them.
    pub params: Params,
    /// Whether a plugin sends a value for one of them.
    pub params_sent: bool,
}

impl Default for InjectedValues {
    fn default() -> InjectedValues {
        InjectedValues {
            set: LayerValues::default(),
            weight: [0.0; COUNT],
            add: [0.0; COUNT],
            added: ChannelMask::EMPTY,
            face_found: false,
            params: Params::EMPTY,
            params_sent: false,
        }
    }
}

impl InjectedValues {
    /// Whether nothing is injected.
    pub fn is_empty(&self) -> bool {
        self.set.present.is_empty() && self.added.is_empty()
    }

    /// The channels injected, set or added.
    pub fn channels(&self) -> ChannelMask {
        self.set.present.union(self.added)
    }

    /// Mixes the injected values into `frame`: a set channel becomes `v + (x − v)·w`, then the
    /// added changes are added; results are clamped to [0, 1] and the channels made present.
    pub fn apply(&self, frame: &mut FaceFrame) {
        for c in self.channels().iter() {
            let i = c.index();
            let below = if frame.present.contains(c) {
                frame.weights[i]
            } else {
                0.0
            };
            let mut v = below;
            if let Some(x) = self.set.get(c) {
                v += (x - v) * self.weight[i];
            }
            if self.added.contains(c) {
                v += self.add[i];
            }
            frame.weights[i] = if v.is_finite() {
                v.clamp(0.0, 1.0)
            } else {
                below
            };
            frame.present.insert(c);
        }
    }

    /// The values of a mixer layer that, blended in `override` mode at weight 1 over `below`,
    /// gives what [`InjectedValues::apply`] gives: the injected channels only.
    pub fn layer_over(&self, below: &FaceFrame) -> LayerValues {
        let mut mixed = *below;
        self.apply(&mut mixed);
        let mut layer = LayerValues::default();
        for c in self.channels().iter() {
            layer.set(c, mixed.weights[c.index()]);
        }
        layer.params = Some(self.params);
        layer
    }
}

/// [`Injected`] shared between the API's connections and the live run that mixes it in.
#[derive(Debug, Clone, Default)]
pub struct InjectedStore(Arc<Mutex<Injected>>);

impl InjectedStore {
    /// An empty store.
    pub fn new() -> InjectedStore {
        InjectedStore::default()
    }

    /// The store, locked; a panic elsewhere while it was held does not make it unusable.
    pub fn lock(&self) -> MutexGuard<'_, Injected> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// What is injected at `now` (see [`Injected::values`]).
    pub fn values(&self, now: Instant) -> InjectedValues {
        self.lock().values(now)
    }

    /// Whether some value is injected at `now` (not yet lapsed), a channel's or a created
    /// parameter's.
    pub fn active(&self, now: Instant) -> bool {
        let v = self.values(now);
        !v.is_empty() || v.params_sent
    }
}

/// The values plugins inject as a source of the mixer: one layer on top of the stack
/// (override, every region, always on) whose values are made over what the layers below it
/// mix to, as long as something is injected and for one mix after.
#[derive(Debug, Clone)]
pub struct InjectionSource {
    store: InjectedStore,
    /// Whether values were injected at the last mix (their lapse needs one more mix).
    injecting: bool,
    /// The created parameters' values at the last mix.
    params: Params,
}

impl InjectionSource {
    /// The source of the values in `store`.
    pub fn new(store: InjectedStore) -> InjectionSource {
        InjectionSource {
            store,
            injecting: false,
            params: Params::EMPTY,
        }
    }

    /// Its layer (named [`super::LAYER_API`]) when `enabled` (`[api] enabled`), else none.
    pub fn configure(&self, enabled: bool) -> Option<Layer> {
        enabled.then(|| {
            Layer::new(
                super::LAYER_API,
                BlendMode::Override,
                RegionMask::ALL,
                Fade::new(true, Duration::ZERO, Duration::ZERO),
            )
        })
    }

    /// Whether the injected values change the mix at `now` whether or not the phone sends.
    pub fn live(&self, now: Instant) -> bool {
        self.injecting || self.store.active(now)
    }

    /// Its layer's values over `below` at `now`; `None` (the values stay) while nothing is
    /// injected and nothing lapsed since the last mix.
    pub fn over(&mut self, below: &FaceFrame, now: Instant) -> Option<LayerValues> {
        let injected = self.store.values(now);
        let injecting = !injected.is_empty() || injected.params_sent;
        if !injecting && !self.injecting && injected.params == self.params {
            return None;
        }
        self.injecting = injecting;
        self.params = injected.params;
        Some(injected.layer_over(below))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::params::lookup;
    use crate::calibrate::at;

    fn value(name: &str, value: f32, weight: f32) -> ParamValue {
        ParamValue {
            param: lookup(name).unwrap(),
            value,
            weight,
        }
    }

    fn frame() -> FaceFrame {
        FaceFrame::empty(
            crate::arkit::Protocol::Vmc,
            "127.0.0.1:1".parse().unwrap(),
            Instant::now(),
        )
    }

    #[test]
    fn set_values_hold_for_a_second_then_lapse() {
        let t0 = Instant::now();
        let mut s = Injected::new();
        s.inject(1, InjectMode::Set, &[value("jawOpen", 0.7, 1.0)], false, t0)
            .unwrap();
        let v = s.values(at(t0, 0.5));
        assert_eq!(v.set.get(Channel::JawOpen), Some(0.7));
        assert_eq!(v.weight[Channel::JawOpen.index()], 1.0);
        assert!(!s.values(at(t0, 0.999)).is_empty());
        assert!(s.values(at(t0, 1.001)).is_empty());
        // Sending again keeps it.
        s.inject(
            1,
            InjectMode::Set,
            &[value("jawOpen", 0.2, 1.0)],
            false,
            at(t0, 0.9),
        )
        .unwrap();
        assert_eq!(s.values(at(t0, 1.5)).set.get(Channel::JawOpen), Some(0.2));
        assert_eq!(s.param_value(lookup("JawOpen").unwrap(), at(t0, 1.5)), 0.2);
        assert_eq!(s.param_value(lookup("JawOpen").unwrap(), at(t0, 3.0)), 0.0);
    }

    #[test]
    fn vts_names_map_onto_channels() {
        let t0 = Instant::now();
        let mut s = Injected::new();
        s.inject(
            1,
            InjectMode::Set,
            &[
                value("MouthOpen", 0.6, 1.0),
                value("EyeOpenLeft", 0.25, 1.0),
                value("MouthSmile", 0.5, 0.5),
                value("MouthX", -0.4, 1.0),
            ],
            true,
            t0,
        )
        .unwrap();
        let v = s.values(t0);
        assert_eq!(v.set.get(Channel::JawOpen), Some(0.6));
        assert_eq!(v.set.get(Channel::EyeBlinkLeft), Some(0.75));
        assert_eq!(v.set.get(Channel::MouthSmileRight), Some(0.5));
        assert_eq!(v.weight[Channel::MouthSmileLeft.index()], 0.5);
        assert_eq!(v.set.get(Channel::MouthLeft), Some(0.4));
        assert_eq!(v.set.get(Channel::MouthRight), Some(0.0));
        assert!(v.face_found);
        assert!(!s.values(at(t0, 2.0)).face_found);
    }

    #[test]
    fn one_plugin_owns_a_set_channel_and_any_may_add() {
        let t0 = Instant::now();
        let mut s = Injected::new();
        s.inject(1, InjectMode::Set, &[value("jawOpen", 0.5, 1.0)], false, t0)
            .unwrap();
        let e = s
            .inject(
                2,
                InjectMode::Set,
                &[value("MouthOpen", 0.1, 1.0)],
                false,
                t0,
            )
            .unwrap_err();
        assert_eq!(
            e,
            InjectError::Owned {
                channel: Channel::JawOpen
            }
        );
        // Once lapsed, another plugin may take it.
        s.inject(
            2,
            InjectMode::Set,
            &[value("jawOpen", 0.1, 1.0)],
            false,
            at(t0, 1.5),
        )
        .unwrap();
        s.inject(
            1,
            InjectMode::Add,
            &[value("jawOpen", 0.2, 1.0)],
            false,
            at(t0, 1.5),
        )
        .unwrap();
        s.inject(
            3,
            InjectMode::Add,
            &[value("jawOpen", 0.3, 1.0)],
            false,
            at(t0, 1.5),
        )
        .unwrap();
        let v = s.values(at(t0, 1.5));
        assert!((v.add[Channel::JawOpen.index()] - 0.5).abs() < 1e-6);
        s.release(2);
        s.release(3);
        let v = s.values(at(t0, 1.5));
        assert_eq!(v.set.get(Channel::JawOpen), None);
        assert!((v.add[Channel::JawOpen.index()] - 0.2).abs() < 1e-6);
    }

    #[test]
    fn applied_over_tracking_by_weight() {
        let t0 = Instant::now();
        let mut s = Injected::new();
        s.inject(
            1,
            InjectMode::Set,
            &[value("jawOpen", 1.0, 0.25)],
            false,
            t0,
        )
        .unwrap();
        s.inject(
            1,
            InjectMode::Add,
            &[value("EyeOpenRight", 0.5, 1.0)],
            false,
            t0,
        )
        .unwrap();
        let mut f = frame();
        f.weights[Channel::JawOpen.index()] = 0.2;
        f.weights[Channel::EyeBlinkRight.index()] = 0.8;
        f.present.insert(Channel::JawOpen);
        f.present.insert(Channel::EyeBlinkRight);
        let v = s.values(t0);
        let layer = v.layer_over(&f);
        v.apply(&mut f);
        assert!((f.weights[Channel::JawOpen.index()] - 0.4).abs() < 1e-6);
        // Opening the eye by 0.5 takes 0.5 off the blink.
        assert!((f.weights[Channel::EyeBlinkRight.index()] - 0.3).abs() < 1e-6);
        assert!((layer.get(Channel::JawOpen).unwrap() - 0.4).abs() < 1e-6);
        assert_eq!(layer.get(Channel::MouthClose), None);
    }

    fn declared(name: &str, min: f32, max: f32, default: f32) -> CustomParam {
        CustomParam {
            name: name.into(),
            plugin: "p".into(),
            developer: "d".into(),
            explanation: String::new(),
            min,
            max,
            default,
        }
    }

    #[test]
    fn created_parameters_reach_the_mix_within_their_range_those_sent_first() {
        let t0 = Instant::now();
        let mut s = Injected::new();
        assert!(s.values(t0).params.is_empty());
        s.declare(&declared("HeartRate", 60.0, 180.0, 90.0));
        s.declare(&declared("Flat", 1.0, 1.0, 1.0));
        let key = |n: &str| ParamKey::of(n);
        let v = s.values(t0);
        assert_eq!(v.params.get(key("heartrate")), Some(0.25));
        // An empty range reads 0 rather than dividing by zero.
        assert_eq!(v.params.get(key("flat")), Some(0.0));
        assert!(!v.params_sent);
        let heart = |value: f32| CustomValue {
            key: "heartrate".into(),
            value,
            weight: 1.0,
        };
        s.inject_all(1, InjectMode::Set, &[], &[heart(240.0)], false, t0)
            .unwrap();
        let v = s.values(t0);
        assert_eq!(
            v.params.get(key("HEARTRATE")),
            Some(1.0),
            "kept within [0, 1]"
        );
        assert!(v.params_sent);
        // Declaring again changes the range; the value lapses back to the default.
        s.declare(&declared("HeartRate", 0.0, 100.0, 50.0));
        assert_eq!(
            s.values(at(t0, 1.5)).params.get(key("heartrate")),
            Some(0.5)
        );
        // More parameters than a frame carries: those a plugin sends go first.
        for i in 0..crate::arkit::PARAMS + 8 {
            s.declare(&declared(&format!("Extra{i}"), 0.0, 1.0, 0.0));
        }
        let last = format!("Extra{}", crate::arkit::PARAMS + 7);
        let sent = CustomValue {
            key: last.to_ascii_lowercase(),
            value: 0.6,
            weight: 1.0,
        };
        s.inject_all(1, InjectMode::Add, &[], &[sent], false, t0)
            .unwrap();
        let v = s.values(t0);
        assert_eq!(v.params.len(), crate::arkit::PARAMS);
        assert!((v.params.get(key(&last)).unwrap() - 0.6).abs() < 1e-6);
        s.forget("heartrate");
        assert_eq!(s.values(t0).params.get(key("heartrate")), None);
    }

    #[test]
    fn custom_parameters_are_set_by_one_added_by_many_and_lapse() {
        let t0 = Instant::now();
        let mut s = Injected::new();
        let custom = |value: f32, weight: f32| CustomValue {
            key: "heartrate".into(),
            value,
            weight,
        };
        s.inject_all(1, InjectMode::Set, &[], &[custom(120.0, 0.5)], false, t0)
            .unwrap();
        // Half way from the default (60) to 120.
        assert_eq!(s.custom_value("heartrate", 60.0, t0), 90.0);
        let e = s
            .inject_all(2, InjectMode::Set, &[], &[custom(80.0, 1.0)], false, t0)
            .unwrap_err();
        assert_eq!(
            e,
            InjectError::OwnedParam {
                key: "heartrate".into()
            }
        );
        s.inject_all(2, InjectMode::Add, &[], &[custom(5.0, 1.0)], false, t0)
            .unwrap();
        s.inject_all(3, InjectMode::Add, &[], &[custom(5.0, 1.0)], false, t0)
            .unwrap();
        assert_eq!(s.custom_value("heartrate", 60.0, t0), 100.0);
        // Custom parameters drive no channel.
        assert!(s.values(t0).is_empty());
        s.release(3);
        assert_eq!(s.custom_value("heartrate", 60.0, t0), 95.0);
        assert_eq!(s.custom_value("heartrate", 60.0, at(t0, 1.5)), 60.0);
        s.inject_all(1, InjectMode::Set, &[], &[custom(70.0, 1.0)], false, t0)
            .unwrap();
        s.forget("heartrate");
        assert_eq!(s.custom_value("heartrate", 60.0, t0), 60.0);
    }

    #[test]
    fn the_store_is_shared() {
        let store = InjectedStore::new();
        let other = store.clone();
        let t0 = Instant::now();
        store
            .lock()
            .inject(
                1,
                InjectMode::Set,
                &[value("tongueOut", 1.0, 1.0)],
                false,
                t0,
            )
            .unwrap();
        assert_eq!(other.values(t0).set.get(Channel::TongueOut), Some(1.0));
    }
}

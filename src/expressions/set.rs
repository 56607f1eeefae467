//! The expressions at run time: triggers, the layer rule, fades, the regions held from
//! tracking, and what the mixer and the API need from them.

use std::time::Instant;

use glam::Quat;

use super::{layer_name, Expression, ExpressionMode, Key};
use crate::arkit::{FaceFrame, COUNT};
use crate::diagnostic::nearest;
use crate::mixer::LayersSection;
use crate::mixer::{Fade, Layer, Mixer, Region, RegionMask};

/// What happened to a key, a chat command or an API call for an expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Trigger {
    /// Flip it, whatever its mode (an API toggle, a chat command).
    Toggle,
    /// Its key went down: a toggle expression flips, a hold expression comes on.
    Press,
    /// Its key came up: a hold expression goes off, a toggle expression stays as it is.
    Release,
    /// Switch it on.
    On,
    /// Switch it off.
    Off,
}

/// Why a trigger was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpressionError {
    /// No expression has that name.
    #[error("no expression `{name}`{}", suggestion.as_ref().map(|s| format!("; did you mean `{s}`?")).unwrap_or_default())]
    Unknown {
        /// The name asked for.
        name: String,
        /// The nearest name there is, if close.
        suggestion: Option<String>,
    },
}

/// The expressions a trigger started or stopped fading, by name: what the mixer must be told.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Change {
    /// Expressions now fading in.
    pub fade_in: Vec<String>,
    /// Expressions now fading out (switched off, or replaced on their layer).
    pub fade_out: Vec<String>,
}

impl Change {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.fade_in.is_empty() && self.fade_out.is_empty()
    }

    /// Fades the expressions' layers of `mixer` in and out from `now`. Returns the names whose
    /// layer the mixer does not have (it was built without them).
    pub fn apply(&self, mixer: &mut Mixer, now: Instant) -> Vec<String> {
        let mut missing = Vec::new();
        let changes = self
            .fade_out
            .iter()
            .map(|n| (n, false))
            .chain(self.fade_in.iter().map(|n| (n, true)));
        for (name, on) in changes {
            if !mixer.set_active(&layer_name(name), on, now) {
                missing.push(name.clone());
            }
        }
        missing
    }
}

/// An expression as a hotkey of the API (VTube Studio's `HotkeysInCurrentModelRequest`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hotkey {
    /// A stable id: `expression:NAME`.
    pub id: String,
    /// The expression's name.
    pub name: String,
    /// Its stage key, if it has one.
    pub key: Option<Key>,
}

/// How far each face region is held from tracking, 0 (the phone drives it) to 1 (held at rest),
/// while expressions that hold it fade in and out.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct HeldRegions {
    /// Per region, [`Region::ALL`] order.
    weights: [f32; Region::ALL.len()],
}

/// The place of `region` in [`Region::ALL`].
fn index(region: Region) -> usize {
    Region::ALL
        .iter()
        .position(|r| *r == region)
        .unwrap_or_default()
}

/// A weight made finite and kept in [0, 1].
fn unit(v: f32) -> f32 {
    if v.is_finite() {
        v.clamp(0.0, 1.0)
    } else {
        0.0
    }
}

impl HeldRegions {
    /// How far `region` is held, 0 to 1.
    pub fn weight(&self, region: Region) -> f32 {
        self.weights[index(region)]
    }

    /// The regions held at all (weight above 0).
    pub fn mask(&self) -> RegionMask {
        let held: Vec<Region> = Region::ALL
            .into_iter()
            .filter(|r| self.weight(*r) > 0.0)
            .collect();
        RegionMask::of(&held)
    }

    /// Whether no region is held.
    pub fn is_empty(&self) -> bool {
        self.weights.iter().all(|w| *w <= 0.0)
    }

    /// Moves the tracked `frame`'s held channels and rotations towards the rest pose by how far
    /// each region is held, so the tracking layer no longer drives them: present channels
    /// towards `rest` (the performer's neutral), the head towards `rest_head`, the eyes (gaze)
    /// towards `rest_eyes`. Held values come out finite and in [0, 1]; the others are left as
    /// they are (the mixer makes them safe). For the chain to call before the mixer takes the
    /// frame.
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

/// One expression and its fading weight.
#[derive(Debug, Clone)]
struct Entry {
    expression: Expression,
    fade: Fade,
}

impl Entry {
    /// Its fade as it stands at `now` (without moving the stored one).
    fn fade_at(&self, now: Instant) -> Fade {
        let mut fade = self.fade;
        fade.advance(now);
        fade
    }
}

/// The expressions and their states. See the module documentation.
#[derive(Debug, Clone, Default)]
pub struct ExpressionSet {
    entries: Vec<Entry>,
}

impl ExpressionSet {
    /// The set of `expressions`, all off. Of two with the same name, the first is kept.
    pub fn new(expressions: Vec<Expression>) -> ExpressionSet {
        let mut entries: Vec<Entry> = Vec::with_capacity(expressions.len());
        for expression in expressions {
            if entries.iter().any(|e| e.expression.name == expression.name) {
                tracing::warn!(
                    expression = %expression.name,
                    "a second expression of the same name is ignored"
                );
                continue;
            }
            let fade = Fade::new(false, expression.fade_in, expression.fade_out);
            entries.push(Entry { expression, fade });
        }
        ExpressionSet { entries }
    }

    /// Replaces the expressions (a reloaded configuration) at `now`. One that was there before
    /// under the same name keeps its state and weight, and fades on with its new times. The
    /// change names the ones that were on and are gone, whose layers the mixer should fade out
    /// (`Mixer::replace_layers` keeps a layer's weight only while its name stays).
    pub fn replace(&mut self, expressions: Vec<Expression>, now: Instant) -> Change {
        let mut next = ExpressionSet::new(expressions);
        let mut change = Change::default();
        for entry in &mut next.entries {
            if let Some(old) = self
                .entries
                .iter()
                .find(|e| e.expression.name == entry.expression.name)
            {
                let mut fade = old.fade_at(now);
                fade.set_times(entry.expression.fade_in, entry.expression.fade_out);
                entry.fade = fade;
            }
        }
        for old in &self.entries {
            let known = next
                .entries
                .iter()
                .any(|e| e.expression.name == old.expression.name);
            if !known && old.fade.is_on() {
                change.fade_out.push(old.expression.name.clone());
            }
        }
        *self = next;
        change
    }

    /// The expressions, in the order given.
    pub fn expressions(&self) -> impl Iterator<Item = &Expression> {
        self.entries.iter().map(|e| &e.expression)
    }

    /// The expression named `name`.
    pub fn get(&self, name: &str) -> Option<&Expression> {
        self.entries
            .iter()
            .map(|e| &e.expression)
            .find(|e| e.name == name)
    }

    /// Sets the fade times of the expression called `name` (exactly, or else in another letter
    /// case) for its next change: `Some` for this change alone (VTube Studio's `fadeTime`),
    /// `None` for its own times again. Returns its name and the times now in use, for the
    /// mixer's layer to follow; `None` when there is no such expression.
    pub fn set_fade(
        &mut self,
        name: &str,
        fade: Option<std::time::Duration>,
    ) -> Option<(String, std::time::Duration, std::time::Duration)> {
        let entry = match self.entries.iter().position(|e| e.expression.name == name) {
            Some(i) => &mut self.entries[i],
            None => self
                .entries
                .iter_mut()
                .find(|e| e.expression.name.eq_ignore_ascii_case(name))?,
        };
        let (fade_in, fade_out) = match fade {
            Some(f) => (f, f),
            None => (entry.expression.fade_in, entry.expression.fade_out),
        };
        entry.fade.set_times(fade_in, fade_out);
        Some((entry.expression.name.clone(), fade_in, fade_out))
    }

    /// Whether the expression named `name` is switched on (it may still be fading in).
    pub fn is_on(&self, name: &str) -> bool {
        self.entries
            .iter()
            .any(|e| e.expression.name == name && e.fade.is_on())
    }

    /// The expression bound to `key`.
    pub fn by_key(&self, key: &Key) -> Option<&Expression> {
        self.expressions().find(|e| e.key.as_ref() == Some(key))
    }

    /// Applies `trigger` to the expression called `name` (exactly, or else in another letter
    /// case) at `now`. Switching one on fades out any other on its layer.
    pub fn trigger(
        &mut self,
        name: &str,
        trigger: Trigger,
        now: Instant,
    ) -> Result<Change, ExpressionError> {
        let i = self
            .entries
            .iter()
            .position(|e| e.expression.name == name)
            .or_else(|| {
                self.entries
                    .iter()
                    .position(|e| e.expression.name.eq_ignore_ascii_case(name))
            })
            .ok_or_else(|| ExpressionError::Unknown {
                name: name.to_string(),
                suggestion: nearest(name, self.expressions().map(|e| e.name.as_str()))
                    .map(str::to_string),
            })?;
        let current = self.entries[i].fade.is_on();
        let hold = self.entries[i].expression.mode == ExpressionMode::Hold;
        let wanted = match trigger {
            Trigger::Toggle => !current,
            Trigger::Press => hold || !current,
            Trigger::Release if hold => false,
            Trigger::Release => current,
            Trigger::On => true,
            Trigger::Off => false,
        };
        let mut change = Change::default();
        if wanted == current {
            return Ok(change);
        }
        if wanted {
            let layer = self.entries[i].expression.layer.clone();
            for (j, other) in self.entries.iter_mut().enumerate() {
                if j != i && other.expression.layer == layer && other.fade.is_on() {
                    other.fade.set(false, now);
                    change.fade_out.push(other.expression.name.clone());
                }
            }
        }
        let entry = &mut self.entries[i];
        entry.fade.set(wanted, now);
        if wanted {
            change.fade_in.push(entry.expression.name.clone());
        } else {
            change.fade_out.push(entry.expression.name.clone());
        }
        tracing::debug!(
            expression = %entry.expression.name,
            ?trigger,
            on = wanted,
            replaced = ?&change.fade_out,
            "expression triggered"
        );
        Ok(change)
    }

    /// Switches every expression off from `now` (VTube Studio's RemoveAllExpressions).
    pub fn release_all(&mut self, now: Instant) -> Change {
        let mut change = Change::default();
        for entry in &mut self.entries {
            if entry.fade.is_on() {
                entry.fade.set(false, now);
                change.fade_out.push(entry.expression.name.clone());
            }
        }
        change
    }

    /// The expressions that are on or still fading out at `now`, with their weights (0 to 1).
    pub fn active(&self, now: Instant) -> Vec<(String, f32)> {
        self.entries
            .iter()
            .filter_map(|e| {
                let fade = e.fade_at(now);
                (fade.is_on() || fade.weight() > 0.0)
                    .then(|| (e.expression.name.clone(), unit(fade.weight())))
            })
            .collect()
    }

    /// Whether any expression's weight is still moving at `now`.
    pub fn moving(&self, now: Instant) -> bool {
        self.entries.iter().any(|e| e.fade_at(now).moving())
    }

    /// One mixer layer per expression, in the set's order, named `expression:NAME`: its values,
    /// mask and blend mode, and its fade as it stands at `now` (its times are the
    /// expression's), to put on top of the stack. After that, [`Change::apply`] keeps the
    /// mixer's fades in step with the set's.
    pub fn layers(&self, now: Instant) -> Vec<Layer> {
        self.entries
            .iter()
            .map(|e| {
                let mut layer = e.expression.layer();
                layer.fade = e.fade_at(now);
                layer
            })
            .collect()
    }

    /// `base` (the `[layers]` section the stack is built from) with every expression's layer
    /// appended to its order and its table added, so that
    /// [`crate::mapping::LayerTargets::compile`] resolves the expressions' `targets` at their
    /// places in the stack. The stack must be built the same way: `base`'s layers, then
    /// [`ExpressionSet::layers`].
    pub fn stacked_on(&self, base: &LayersSection) -> LayersSection {
        let mut section = base.clone();
        for expression in self.expressions() {
            let name = expression.layer_name();
            section.order.push(name.clone());
            section.specs.insert(name, expression.layer_spec());
        }
        section
    }

    /// How far each face region is held from tracking at `now`: per region, the largest weight
    /// of the expressions that hold it.
    pub fn held_regions(&self, now: Instant) -> HeldRegions {
        let mut held = HeldRegions::default();
        for entry in &self.entries {
            if entry.expression.holds == RegionMask::NONE {
                continue;
            }
            let w = unit(entry.fade_at(now).weight());
            for region in entry.expression.holds.regions() {
                let slot = &mut held.weights[index(region)];
                *slot = slot.max(w);
            }
        }
        held
    }

    /// Every expression as an API hotkey, in the set's order.
    pub fn hotkeys(&self) -> Vec<Hotkey> {
        self.expressions()
            .map(|e| Hotkey {
                id: e.layer_name(),
                name: e.name.clone(),
                key: e.key,
            })
            .collect()
    }
}

//! The expressions at run time: triggers, the layer rule, fades, the regions held from
//! tracking, and what the mixer and the API need from them.

use std::time::Instant;

use super::{Expression, ExpressionMode, Key};
use crate::diagnostic::nearest;
use crate::mixer::LayersSection;
use crate::mixer::{Fade, Held, Kit, Layer, Own, RegionMask};

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

    /// Fades the layers of `set`'s expressions (`own`, one per expression in the set's order,
    /// as [`ExpressionSet::layers`] made them) in and out from `now`. Returns the names that
    /// have no layer there (the stack was built without them).
    pub fn apply<K: Kit>(
        &self,
        set: &ExpressionSet,
        own: &mut Own<'_, K>,
        now: Instant,
    ) -> Vec<String> {
        let mut missing = Vec::new();
        let changes = self
            .fade_out
            .iter()
            .map(|n| (n, false))
            .chain(self.fade_in.iter().map(|n| (n, true)));
        for (name, on) in changes {
            match set.index(name).filter(|i| *i < own.layers().len()) {
                Some(i) => own.set_active(i, on, now),
                None => missing.push(name.clone()),
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

    /// The place of the expression called `name` (exactly) in the set's order: its layer's
    /// place among [`ExpressionSet::layers`].
    pub fn index(&self, name: &str) -> Option<usize> {
        self.entries.iter().position(|e| e.expression.name == name)
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
                    .then(|| (e.expression.name.clone(), fade.weight().clamp(0.0, 1.0)))
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
    pub fn held_regions(&self, now: Instant) -> Held {
        let mut held = Held::default();
        for entry in &self.entries {
            if entry.expression.holds == RegionMask::NONE {
                continue;
            }
            let w = entry.fade_at(now).weight();
            for region in entry.expression.holds.regions() {
                held.hold(region, w);
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

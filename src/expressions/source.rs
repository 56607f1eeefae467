//! The expressions as a source of the mixer: a layer each, switched by triggers from keys, the
//! control panel, a VMC sender's keys and the API, holding the regions they hold from tracking,
//! and reporting their states as they change.

use std::time::{Duration, Instant};

use super::{Expression, ExpressionError, ExpressionSet, ExpressionStatus, Key, Trigger};
use crate::mixer::{Held, Kit, Layer, Own};

/// What set an expression off: the API reports hotkeys others triggered as events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriggerSource {
    /// A key on the stage (or a global hotkey).
    Key,
    /// A button of the control panel.
    Panel,
    /// A key pressed on a VMC sender (`/VMC/Ext/Key`).
    Vmc,
    /// A plugin of the API (which reports it itself).
    Api,
}

/// What the expressions are told.
#[derive(Debug, Clone, PartialEq)]
pub enum ExpressionInput {
    /// Switch the expression `name` (any letter case) on or off.
    Trigger {
        /// The expression.
        name: String,
        /// What happened to it.
        trigger: Trigger,
        /// Who asked.
        source: TriggerSource,
        /// A fade time for this change alone (the API's `fadeTime`); `None`: the expression's.
        fade: Option<Duration>,
    },
    /// A key went down (`pressed`) or up: the expression bound to it follows.
    Key {
        /// The key, with its modifiers.
        key: Key,
        /// Down or up.
        pressed: bool,
        /// Where it was pressed.
        source: TriggerSource,
    },
    /// Switch every expression off.
    ReleaseAll,
}

/// What the expressions report.
#[derive(Debug, Clone, PartialEq)]
pub enum ExpressionNews {
    /// An expression was switched by something other than the API (which reports its own):
    /// the API tells its subscribers of the hotkey.
    Triggered {
        /// The expression's name.
        name: String,
    },
    /// A trigger was refused.
    Refused(ExpressionError),
    /// The expressions and their states changed (a trigger, a fade that moved, a new set).
    States(Vec<ExpressionStatus>),
}

/// The expressions as a source of the mixer. Its layers are one per expression, in the set's
/// order, on top of the stack.
#[derive(Debug)]
pub struct ExpressionSource {
    set: ExpressionSet,
    /// The states last reported.
    published: Option<Vec<ExpressionStatus>>,
    /// Whether a fade was moving at the last step (its end is reported too).
    moving: bool,
}

impl Default for ExpressionSource {
    fn default() -> ExpressionSource {
        ExpressionSource::new()
    }
}

impl ExpressionSource {
    /// No expressions yet; [`ExpressionSource::configure`] gives them.
    pub fn new() -> ExpressionSource {
        ExpressionSource {
            set: ExpressionSet::new(Vec::new()),
            published: None,
            moving: false,
        }
    }

    /// The expressions as they are now.
    pub fn set(&self) -> &ExpressionSet {
        &self.set
    }

    /// Takes `expressions` (the configured ones, then the avatar's presets) at `now`: those
    /// that stay keep their states, those that were on and are gone fade out with their layers.
    /// Returns their layers, with their fades as they stand.
    pub fn configure(&mut self, expressions: Vec<Expression>, now: Instant) -> Vec<Layer> {
        let gone = self.set.replace(expressions, now);
        if !gone.is_empty() {
            tracing::info!(expressions = ?gone.fade_out, "expressions removed while on");
        }
        self.published = None;
        self.set.layers(now)
    }

    /// Carries out `input` at `now` on its layers `own`.
    pub fn input<K: Kit>(&mut self, input: &ExpressionInput, now: Instant, own: &mut Own<'_, K>)
    where
        K::News: From<ExpressionNews>,
    {
        let (name, trigger, source, fade) = match input {
            ExpressionInput::Trigger {
                name,
                trigger,
                source,
                fade,
            } => (name.clone(), *trigger, *source, *fade),
            ExpressionInput::Key {
                key,
                pressed,
                source,
            } => {
                let Some(name) = self.set.by_key(key).map(|e| e.name.clone()) else {
                    tracing::debug!(%key, "no expression on this key");
                    return;
                };
                let trigger = if *pressed {
                    Trigger::Press
                } else {
                    Trigger::Release
                };
                (name, trigger, *source, None)
            }
            ExpressionInput::ReleaseAll => {
                self.set.release_all(now).apply(&self.set, own, now);
                self.report(now, own);
                return;
            }
        };
        // The expression's own name (the input may spell it in another letter case).
        let mut name = name;
        if let Some((own_name, fade_in, fade_out)) = self.set.set_fade(&name, fade) {
            if let Some(layer) = self.set.index(&own_name).and_then(|i| own.layer_mut(i)) {
                layer.fade.set_times(fade_in, fade_out);
            }
            name = own_name;
        }
        let change = match self.set.trigger(&name, trigger, now) {
            Ok(change) => change,
            Err(error) => {
                tracing::warn!(%error, ?source, "expression not triggered");
                own.tell(ExpressionNews::Refused(error).into());
                return;
            }
        };
        let missing = change.apply(&self.set, own, now);
        if !missing.is_empty() {
            tracing::warn!(expressions = ?missing, "the mixer has no layer for these expressions");
        }
        if source != TriggerSource::Api && !change.is_empty() {
            own.tell(ExpressionNews::Triggered { name }.into());
        }
        self.report(now, own);
    }

    /// Moves on to `now`: while a fade moves (and once after), the states are reported.
    pub fn advance<K: Kit>(&mut self, now: Instant, own: &mut Own<'_, K>)
    where
        K::News: From<ExpressionNews>,
    {
        let moving = self.set.moving(now);
        if moving || self.moving || self.published.is_none() {
            self.report(now, own);
        }
        self.moving = moving;
    }

    /// How far the expressions hold each region from tracking at `now`.
    pub fn held(&self, now: Instant) -> Held {
        self.set.held_regions(now)
    }

    /// The expressions and their states at `now`.
    pub fn states(&self, now: Instant) -> Vec<ExpressionStatus> {
        let active = self.set.active(now);
        self.set
            .expressions()
            .map(|e| ExpressionStatus {
                name: e.name.clone(),
                key: e.key,
                mode: e.mode,
                layer: e.layer.clone(),
                on: self.set.is_on(&e.name),
                weight: active
                    .iter()
                    .find(|(n, _)| *n == e.name)
                    .map_or(0.0, |(_, w)| *w),
            })
            .collect()
    }

    /// Reports the states at `now` if they differ from those last reported.
    fn report<K: Kit>(&mut self, now: Instant, own: &mut Own<'_, K>)
    where
        K::News: From<ExpressionNews>,
    {
        let states = self.states(now);
        if self.published.as_ref() != Some(&states) {
            self.published = Some(states.clone());
            own.tell(ExpressionNews::States(states).into());
        }
    }
}

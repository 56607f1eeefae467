//! The mixer: an ordered stack of named layers in ARKit space, between conditioning and the
//! hand-off to the render thread.
//!
//! Every source of weights is a layer: the phone's conditioned frame is the `tracking` layer;
//! fixed poses from `[layers]` in `facewire.toml` are layers too. Lip sync, expressions, idle
//! life and the API's injected values are [`Source`]s: parts of the mixer registered once,
//! each filling layers of its own and told the run's inputs through the mixer. A layer has values (ARKit channels and,
//! optionally, head and eye rotations), a mask of face [`Region`]s, a [`BlendMode`] and a
//! weight that fades in and out ([`Fade`]). The stack is mixed bottom to top over the `rest`
//! pose (the performer's neutral): each channel starts at its rest value and every layer whose
//! mask covers it and that carries it blends its value in by its weight.
//!
//! The mixer is pure: time comes in as the instants it is given, so it runs the same on the
//! ingest thread, in a replay and in tests with a paused clock. Nothing it outputs is NaN,
//! infinite or outside [0, 1], whatever a layer was given.

mod layer;
mod region;
mod section;
mod source;
mod stack;

pub use layer::{BlendMode, Fade, Layer, LayerValues};
pub use region::{Region, RegionMask, REGION_NAMES};
pub use section::{LayerSpec, LayersSection, DEFAULT_FADE};
pub use source::{Held, Kit, Own, Place, Source};
pub use stack::{
    Contribution, LayerReport, Mixer, MixerReport, LAYER_IDLE, LAYER_LIPSYNC, LAYER_REST,
    LAYER_TRACKING,
};

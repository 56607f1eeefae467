//! A look on the stage: its slider values, applied after the mapping every frame, and its
//! colours, which repaint the default head's colour atlas on a worker thread (painting a
//! 1024² atlas takes a while; the stage keeps drawing the old colours until it is done).

use std::sync::mpsc::{self, Receiver, TryRecvError};

use glam::Vec3;

use crate::avatar::{Avatar, Pose, Texture};
use crate::headgen::texture::{self, Palette};
use crate::looks::{Colors, Look, Srgb};
use crate::mapping::{CompiledSliders, SliderValues};

/// The look in use and the state of its colours.
pub(super) struct LookState {
    /// The look as set (kept to re-resolve it when the mapping and its sliders change).
    look: Look,
    /// Its slider values against the mapping's sliders.
    values: SliderValues,
    /// The default head's colour texture, when the avatar is the default head.
    atlas: Option<usize>,
    /// The palette the atlas shows (or is being painted in).
    palette: Palette,
    /// A repaint under way: its palette and where the pixels will come from.
    pending: Option<(Palette, Receiver<Vec<u8>>)>,
}

impl LookState {
    /// No look (every slider at its default, the avatar's own colours) for `avatar`.
    pub(super) fn new(avatar: &Avatar, sliders: &CompiledSliders) -> LookState {
        LookState {
            look: Look::default(),
            values: SliderValues::defaults(sliders),
            atlas: default_head_atlas(avatar),
            palette: Palette::DEFAULT,
            pending: None,
        }
    }

    /// The look in use.
    pub(super) fn look(&self) -> &Look {
        &self.look
    }

    /// Sets `look` (values against `sliders`); a colour change starts a repaint.
    pub(super) fn set(&mut self, look: Look, sliders: &CompiledSliders) {
        self.values = look.values(sliders);
        let palette = palette_of(&look.colors);
        self.look = look;
        let target = self.pending.as_ref().map_or(self.palette, |(p, _)| *p);
        if self.atlas.is_some() && palette != target {
            let (send, receive) = mpsc::channel();
            let spawned = std::thread::Builder::new()
                .name("facewire-paint".into())
                .spawn(move || {
                    let _ = send.send(texture::paint_with(&palette));
                });
            match spawned {
                Ok(_) => self.pending = Some((palette, receive)),
                Err(error) => tracing::warn!(%error, "could not start painting the look's colours"),
            }
        }
    }

    /// Re-resolves the look's values against a new mapping's sliders.
    pub(super) fn resolve(&mut self, sliders: &CompiledSliders) {
        self.values = self.look.values(sliders);
    }

    /// Sets the sliders' targets and nodes in `pose`.
    pub(super) fn apply(&self, sliders: &CompiledSliders, pose: &mut Pose) {
        sliders.apply(&self.values, pose);
    }

    /// The repainted atlas, once a repaint has finished (`wait`: blocks until it has): the
    /// texture index and its new pixels.
    pub(super) fn painted(&mut self, avatar: &Avatar, wait: bool) -> Option<(usize, Texture)> {
        let (palette, receive) = self.pending.as_ref()?;
        let pixels = if wait {
            receive.recv().ok()
        } else {
            match receive.try_recv() {
                Ok(pixels) => Some(pixels),
                Err(TryRecvError::Empty) => return None,
                Err(TryRecvError::Disconnected) => None,
            }
        };
        let palette = *palette;
        self.pending = None;
        let atlas = self.atlas?;
        let pixels = pixels?;
        self.palette = palette;
        let sampler = avatar.textures.get(atlas)?.sampler;
        Some((
            atlas,
            Texture {
                width: texture::SIZE,
                height: texture::SIZE,
                rgba: pixels,
                sampler,
            },
        ))
    }
}

/// The default head's colour atlas: the texture its `Skin` material samples, when the avatar
/// is the default head.
fn default_head_atlas(avatar: &Avatar) -> Option<usize> {
    let default_head = avatar.source == crate::headgen::DEFAULT_HEAD
        || avatar.source.ends_with("/default_head.glb");
    if !default_head {
        return None;
    }
    let skin = avatar
        .materials
        .iter()
        .find(|m| m.name.as_deref() == Some("Skin"))?;
    let atlas = skin.base_color_texture?;
    let t = avatar.textures.get(atlas)?;
    (t.width == texture::SIZE && t.height == texture::SIZE).then_some(atlas)
}

/// An 8-bit sRGB colour as the painter takes it.
fn rgb(c: Srgb) -> Vec3 {
    Vec3::new(c.r as f32, c.g as f32, c.b as f32) / 255.0
}

/// The painter's palette for a look's colours; unset ones keep the default head's.
pub(super) fn palette_of(colors: &Colors) -> Palette {
    let d = Palette::DEFAULT;
    Palette {
        skin: colors.skin.map_or(d.skin, rgb),
        hair: colors.hair.map_or(d.hair, rgb),
        iris: colors.iris.map_or(d.iris, rgb),
        blush: colors.blush.map_or(d.blush, |b| rgb(b.color)),
        blush_strength: colors.blush.map_or(d.blush_strength, |b| b.strength),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::looks::Blush;

    #[test]
    fn no_colours_is_the_default_palette() {
        assert_eq!(palette_of(&Colors::default()), Palette::DEFAULT);
        let p = palette_of(&Colors {
            hair: Some(Srgb::hex(0x203040)),
            blush: Some(Blush {
                color: Srgb::hex(0xff0000),
                strength: 0.25,
            }),
            ..Colors::default()
        });
        assert_eq!(p.skin, Palette::DEFAULT.skin);
        assert_eq!(p.hair, Vec3::new(32.0, 48.0, 64.0) / 255.0);
        assert_eq!((p.blush, p.blush_strength), (Vec3::X, 0.25));
    }

    #[test]
    fn only_the_default_head_is_repainted() {
        let head =
            crate::avatar::load_slice(crate::app::DEFAULT_HEAD_GLB, crate::headgen::DEFAULT_HEAD)
                .unwrap();
        assert!(default_head_atlas(&head).is_some());
        let mut other = head.clone();
        other.source = "avatars/someone.vrm".into();
        assert!(default_head_atlas(&other).is_none());
    }
}

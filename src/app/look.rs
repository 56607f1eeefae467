//! A look on the stage: its slider values, applied after the mapping every frame, and its
//! colours, which repaint the default head's colour atlas on a worker thread (painting a
//! 1024² atlas takes a while; the stage keeps drawing the old colours until it is done).

use std::path::Path;
use std::sync::mpsc::{self, Receiver, TryRecvError};

use crate::avatar::{Avatar, Pose, Texture};
use crate::headgen::texture::{self, Palette};
use crate::look::{default_head_atlas, palette_of, Look};
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
    /// A finished repaint waiting to be uploaded: the texture index and its pixels.
    ready: Option<(usize, Texture)>,
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
            ready: None,
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

    /// Whether a repaint is under way.
    pub(super) fn painting(&self) -> bool {
        self.pending.is_some()
    }

    /// Collects a finished repaint (`wait`: waits for one under way); returns whether one
    /// waits to be uploaded.
    pub(super) fn poll(&mut self, avatar: &Avatar, wait: bool) -> bool {
        if let Some((palette, receive)) = self.pending.as_ref() {
            let pixels = if wait {
                Some(receive.recv().ok())
            } else {
                match receive.try_recv() {
                    Ok(pixels) => Some(Some(pixels)),
                    Err(TryRecvError::Empty) => None,
                    Err(TryRecvError::Disconnected) => Some(None),
                }
            };
            if let Some(pixels) = pixels {
                let palette = *palette;
                self.pending = None;
                let atlas = self
                    .atlas
                    .and_then(|a| Some((a, avatar.textures.get(a)?.sampler)));
                if let (Some((atlas, sampler)), Some(rgba)) = (atlas, pixels) {
                    self.palette = palette;
                    self.ready = Some((
                        atlas,
                        Texture {
                            width: texture::SIZE,
                            height: texture::SIZE,
                            rgba: rgba.into(),
                            sampler,
                        },
                    ));
                }
            }
        }
        self.ready.is_some()
    }

    /// The repainted atlas waiting to be uploaded: its texture index and pixels.
    pub(super) fn take_ready(&mut self) -> Option<(usize, Texture)> {
        self.ready.take()
    }
}

/// The Look tab's view of `scene`: its sliders with the look's values, colours and the presets
/// in the `looks` folder of `config_folder` (the configuration's folder).
pub(super) fn view(scene: &super::Scene, config_folder: &Path) -> crate::panel::LookView {
    let sliders = scene.mapping().sliders();
    let look = scene.look();
    let values = look.values(sliders);
    let d = texture::Palette::DEFAULT;
    let own = |c: glam::Vec3| {
        let b = |v: f32| (v.clamp(0.0, 1.0) * 255.0).round() as u8;
        crate::look::Srgb {
            r: b(c.x),
            g: b(c.y),
            b: b(c.z),
        }
    };
    crate::panel::LookView {
        sliders: sliders
            .iter()
            .enumerate()
            .map(|(i, s)| crate::panel::SliderView {
                name: s.name.clone(),
                label: s.label.clone(),
                group: s.group.clone(),
                min: s.min,
                max: s.max,
                value: values.get(i).unwrap_or(s.default),
            })
            .collect(),
        colors: look.colors,
        own_colors: [own(d.skin), own(d.hair), own(d.iris), own(d.blush)],
        colors_apply: default_head_atlas(scene.avatar()).is_some(),
        presets: crate::look::list(&config_folder.join(crate::look::DIR_NAME)),
        presets_dir: config_folder
            .join(crate::look::DIR_NAME)
            .display()
            .to_string(),
    }
}

/// Carries out a Look tab action on `scene`, saving and finding presets in the `looks` folder
/// of `config_folder` (the configuration's folder); returns the message to show, if any.
pub(super) fn act(
    scene: &mut super::Scene,
    action: crate::panel::LookAction,
    config_folder: &Path,
) -> Option<Result<String, String>> {
    use crate::panel::LookAction;
    let sliders = scene.mapping().sliders();
    let ranges = sliders.ranges();
    let mut look = scene.look().clone();
    match action {
        LookAction::Slider(index, value) => {
            let name = sliders.iter().nth(index)?.name.clone();
            look.set(&name, value);
        }
        LookAction::Colors(colors) => look.colors = colors,
        LookAction::Reset => look = Look::default(),
        LookAction::Random(seed) => look = Look::random(seed, &ranges),
        LookAction::Save(name) => {
            let saved = crate::look::validate_name(&name)
                .and_then(|()| {
                    let path = config_folder
                        .join(crate::look::DIR_NAME)
                        .join(format!("{name}.toml"));
                    look.save(&path).map(|()| path)
                })
                .map(|path| format!("look saved as {}", path.display()))
                .map_err(|e| e.to_string());
            return Some(saved);
        }
        LookAction::Load(name) => {
            let loaded = crate::look::resolve(&name, config_folder)
                .and_then(|path| Look::load(&path, &ranges));
            match loaded {
                Ok(l) => look = l,
                Err(e) => return Some(Err(e.to_string())),
            }
            scene.set_look(look);
            return Some(Ok(format!("wearing the look `{name}`")));
        }
    }
    scene.set_look(look);
    None
}

//! The scene: the avatar, its compiled mapping, the GL renderer and the user's framing, and
//! swapping in a reloaded mapping at a frame boundary.

use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::arkit::FaceFrame;
use crate::avatar::correctives::Correctives;
use crate::avatar::spring::SpringSim;
use crate::avatar::{Avatar, Pose};
use crate::config::{CameraConfig, LayersSection};
use crate::look::Look;
use crate::mapping::{CompiledMapping, LayerTargetError, LayerTargets};
use crate::render::{Camera, DrawTarget, MorphPath, RenderError, Renderer, WrinkleMap};

use super::look::LookState;
use super::model_move::ModelMover;

/// Everything needed to draw the avatar: the model, its compiled mapping, the GL renderer and
/// the camera. Owns the renderer, so it must be dropped while its GL context is current.
pub struct Scene {
    avatar: Avatar,
    mapping: CompiledMapping,
    renderer: Renderer,
    rest: Pose,
    pose: Pose,
    /// What the camera frames every frame, computed once: a humanoid's bust, or the rest-pose
    /// bounds of any other avatar.
    bounds: crate::avatar::Aabb,
    /// Bounds of every expression the targets can make: the clip planes hold them.
    reach: crate::avatar::Aabb,
    /// The user's framing on top of the automatic one.
    camera: CameraConfig,
    /// The mixer's layers' own target values, applied after the mapping.
    layers: LayerTargets,
    /// The avatar's spring bones, while they are on and it has any.
    springs: Option<SpringSim>,
    /// When the springs last stepped.
    stepped: Option<Instant>,
    /// The wrinkle maps the renderer draws (the mapping's, when it could use them).
    wrinkle_maps: Vec<WrinkleMap>,
    /// The look: face-shape slider values and colours.
    look: LookState,
    /// The avatar's corrective targets (`a*b`), set from their inputs after everything else.
    correctives: Correctives,
    /// Where plugins of the API put the avatar on the stage.
    mover: ModelMover,
}

impl Scene {
    /// Uploads `avatar` to the current GL context; the avatar it keeps has no texture pixels
    /// and no morph deltas (the renderer holds them).
    pub fn new(
        gl: Rc<glow::Context>,
        mut avatar: Avatar,
        morph: crate::config::MorphMode,
    ) -> Result<Scene, RenderError> {
        let renderer = Renderer::new(gl, &avatar, morph)?;
        avatar.release_texture_pixels();
        let mapping = CompiledMapping::auto(&avatar);
        let rest = avatar.rest_pose();
        let bounds = avatar.bounds().unwrap_or(crate::avatar::Aabb {
            min: glam::Vec3::splat(-0.5),
            max: glam::Vec3::splat(0.5),
        });
        let reach = avatar.deformation_bounds().unwrap_or(bounds);
        // A humanoid is framed from the chest up; anything else as a whole.
        let bust = crate::avatar::Bust::of(&avatar);
        if let Some(bust) = &bust {
            tracing::info!(head = %bust.head, neck = %bust.neck, chest = %bust.chest, head_top = bust.head_top, "framing the humanoid's bust");
        }
        let bounds = bust.map_or(bounds, |b| b.region());
        // The renderer holds the deltas now, and everything measured from them is measured.
        avatar.release_target_deltas();
        Ok(Scene {
            bounds,
            reach,
            camera: CameraConfig::default(),
            layers: LayerTargets::default(),
            springs: SpringSim::for_avatar(&avatar),
            stepped: None,
            wrinkle_maps: Vec::new(),
            look: LookState::new(&avatar, mapping.sliders()),
            correctives: Correctives::resolve(&avatar),
            mover: ModelMover::new(Instant::now()),
            pose: rest.clone(),
            rest,
            mapping,
            renderer,
            avatar,
        })
    }

    /// The morph path the renderer chose.
    pub fn morph_path(&self) -> MorphPath {
        self.renderer.morph_path()
    }

    /// Sets the level-of-detail mode (`render.lod`) for the frames to come.
    pub fn set_lod(&mut self, mode: crate::config::LodMode) {
        self.renderer.set_lod(mode);
    }

    /// The loaded avatar.
    pub fn avatar(&self) -> &Avatar {
        &self.avatar
    }

    /// The mapping in use.
    pub fn mapping(&self) -> &CompiledMapping {
        &self.mapping
    }

    /// The pose drawn last (or about to be drawn).
    pub fn pose(&self) -> &Pose {
        &self.pose
    }

    /// Sets the pose from a mixed frame (`None`: the rest pose): the mapping, then the
    /// layers' own target values, then the spring bones, moved on by the time since the last
    /// frame. [`Scene::set_frame_at`] with the time now.
    pub fn set_frame(&mut self, frame: Option<&FaceFrame>) {
        self.set_frame_at(frame, Instant::now());
    }

    /// [`Scene::set_frame`] for a frame drawn at `now`. The first frame, like a still snapshot,
    /// shows the spring bones at rest.
    pub fn set_frame_at(&mut self, frame: Option<&FaceFrame>, now: Instant) {
        self.pose.clone_from(&self.rest);
        if let Some(frame) = frame {
            self.mapping.apply(frame, &mut self.pose);
            self.layers.apply(frame, &mut self.pose);
        }
        self.look.apply(self.mapping.sliders(), &mut self.pose);
        self.finish_pose();
        if let Some(springs) = self.springs.as_mut() {
            let elapsed = self.stepped.map_or(std::time::Duration::ZERO, |at| {
                now.saturating_duration_since(at)
            });
            springs.step(&self.avatar, &mut self.pose, elapsed);
            self.stepped = Some(now);
        }
    }

    /// Turns the spring bones on or off (`render.spring_bones`); on, they start from rest.
    pub fn set_spring_bones(&mut self, on: bool) {
        self.springs = if on {
            SpringSim::for_avatar(&self.avatar)
        } else {
            None
        };
        self.stepped = None;
    }

    /// Whether spring bones move this avatar (on, and it has some).
    pub fn has_spring_bones(&self) -> bool {
        self.springs.is_some()
    }

    /// Whether some spring bone still swings, so a frame drawn now would differ from the last.
    pub fn springs_moving(&self) -> bool {
        self.springs.as_ref().is_some_and(SpringSim::is_moving)
    }

    /// Resolves the avatar-space `targets` of every layer of `stack` (its `[layers]` tables and
    /// its expressions, with this avatar's VRM presets) against the avatar, at the places the
    /// mixer's frames carry their weights; on an error the layers in use stay.
    pub fn set_stack(&mut self, stack: &crate::stack::StackConfig) -> Result<(), LayerTargetError> {
        let presets = crate::session::avatar_presets(&self.avatar);
        self.set_layers(&stack.clone().with_presets(presets).section())
    }

    /// Resolves the `targets` of the layers in `section` against the avatar; on an error the
    /// layers in use stay.
    pub fn set_layers(&mut self, section: &LayersSection) -> Result<(), LayerTargetError> {
        self.layers = LayerTargets::compile(section, &self.avatar)?;
        Ok(())
    }

    /// Sets the user's framing (zoom, offset, orbit, field of view); out-of-range values are
    /// clamped when drawing.
    pub fn set_camera(&mut self, camera: CameraConfig) {
        self.camera = camera;
    }

    /// The user's framing.
    pub fn camera(&self) -> &CameraConfig {
        &self.camera
    }

    /// Moves the avatar on the stage to `to` (a plugin's `MoveModelRequest`), eased over
    /// `over` from where it stands at `now`.
    pub fn move_model(&mut self, to: crate::api::ModelPosition, over: Duration, now: Instant) {
        self.mover.move_to(to, over, now);
    }

    /// Whether the avatar is moving on the stage at `now`, so a frame drawn now would differ.
    pub fn model_moving(&self, now: Instant) -> bool {
        self.mover.moving(now)
    }

    /// Where plugins have put the avatar, and the move under way: for another scene (a new
    /// avatar) to go on from.
    pub fn mover(&self) -> ModelMover {
        self.mover
    }

    /// Goes on from `mover` (the scene this one replaces).
    pub fn set_mover(&mut self, mover: ModelMover) {
        self.mover = mover;
    }

    /// Replaces the mapping (for example with one compiled from a mapping file), with the
    /// wrinkle maps it declares; maps the renderer cannot use are dropped with an error logged
    /// (the rest of the mapping still applies).
    pub fn set_mapping(&mut self, mut mapping: CompiledMapping) {
        let maps: Vec<WrinkleMap> = mapping.wrinkles.iter().map(WrinkleMap::from).collect();
        if maps != self.wrinkle_maps {
            match self.renderer.set_wrinkles(&self.avatar, &maps) {
                Ok(()) => self.wrinkle_maps = maps,
                Err(error) => {
                    tracing::error!(%error, "wrinkle maps not drawn");
                    mapping.wrinkles.clear();
                    // The renderer kept the maps it had; keep the weights in step with them.
                    if !self.wrinkle_maps.is_empty() {
                        let _ = self.renderer.set_wrinkles(&self.avatar, &[]);
                        self.wrinkle_maps.clear();
                    }
                }
            }
        }
        self.mapping = mapping;
        self.look.resolve(self.mapping.sliders());
    }

    /// Sets the pose directly in avatar space: starts from the rest pose, then `edit` changes
    /// weights or rotations (for tools that drive targets no channel maps to).
    pub fn set_pose(&mut self, edit: impl FnOnce(&mut Pose)) {
        self.pose.clone_from(&self.rest);
        self.look.apply(self.mapping.sliders(), &mut self.pose);
        edit(&mut self.pose);
        self.finish_pose();
    }

    /// What follows from the targets' weights: the correctives' weights, then the wrinkle
    /// maps' strengths.
    fn finish_pose(&mut self) {
        self.correctives.apply(&mut self.pose);
        crate::mapping::wrinkles::apply(&self.mapping.wrinkles, &mut self.pose);
    }

    /// Sets the look: its slider values from the next frame on, its colours (on the default
    /// head) once they are painted ([`Scene::update_look`] uploads them).
    pub fn set_look(&mut self, look: Look) {
        self.look.set(look, self.mapping.sliders());
    }

    /// Whether the look's colours are being painted, or are painted and wait for
    /// [`Scene::update_look`] (which needs the GL context; this does not).
    pub fn look_changing(&mut self) -> (bool, bool) {
        let ready = self.look.poll(&self.avatar, false);
        (self.look.painting(), ready)
    }

    /// The look in use.
    pub fn look(&self) -> &Look {
        self.look.look()
    }

    /// Uploads the look's repainted colours once they are ready (`wait`: waits for them).
    /// Returns whether the picture changed.
    pub fn update_look(&mut self, wait: bool) -> bool {
        self.look.poll(&self.avatar, wait);
        let Some((index, texture)) = self.look.take_ready() else {
            return false;
        };
        match self.renderer.replace_texture(index, &texture) {
            Ok(()) => true,
            Err(error) => {
                tracing::error!(%error, "the look's colours could not be uploaded");
                false
            }
        }
    }

    /// Draws the current pose into the bound framebuffer.
    pub fn draw(&mut self, target: &DrawTarget) {
        let aspect = target.width as f32 / target.height.max(1) as f32;
        let camera = Camera::framed(self.bounds, aspect, &self.camera).reaching(self.reach);
        let camera = self.mover.camera(camera, Instant::now());
        self.renderer.draw(&self.pose, &camera, target);
    }

    /// Draws the scene into the whole of `ctx` (which must be the context the scene was made
    /// in) over `clear_color` (`alpha`: keep the background transparent) and reads it back.
    pub fn draw_image(
        &mut self,
        ctx: &crate::render::headless::HeadlessContext,
        clear_color: [f32; 4],
        alpha: bool,
    ) -> crate::image::RgbaImage {
        let (width, height) = ctx.size();
        ctx.bind();
        self.draw(&DrawTarget {
            width,
            height,
            clear_color,
            alpha,
        });
        ctx.read_rgba()
    }
}

/// Swaps in a reloaded mapping at a frame boundary: `parsed` is the mapping file as re-read
/// from disk, or why it could not be read. A mapping that fails to parse or to compile against
/// the avatar is reported and the last good one keeps running. Returns what happened, in words
/// (the error verbatim, with its file, line and column, on failure).
pub fn reload_mapping(
    scene: &mut Scene,
    parsed: Result<crate::mapping::MappingFile, crate::mapping::MappingError>,
) -> Result<String, String> {
    let compiled = parsed.map_err(|e| e.to_string()).and_then(|file| {
        CompiledMapping::compile(&file, scene.avatar())
            .map(|m| (m, file.path.clone()))
            .map_err(|e| e.to_string())
    });
    match compiled {
        Ok((mapping, path)) => {
            let targets = mapping.targets.len();
            scene.set_mapping(mapping);
            tracing::info!(mapping = %path, targets, "mapping reloaded");
            Ok(format!("{path}: reloaded, {targets} targets driven"))
        }
        Err(error) => {
            tracing::error!(%error, "mapping reload failed; keeping the last good mapping");
            Err(format!("{error}\n(the last good mapping keeps running)"))
        }
    }
}

/// Swaps in a reloaded look preset at a frame boundary: `parsed` is the preset as re-read from
/// disk, or why it could not be read. A preset that fails to parse or whose sliders the mapping
/// does not have is reported (every problem, with its file, line and column) and the last good
/// look stays. Returns what happened, in words.
pub fn reload_look(
    scene: &mut Scene,
    parsed: Result<crate::look::LookFile, crate::look::LookError>,
) -> Result<String, String> {
    let checked = parsed.map_err(|e| e.to_string()).and_then(|file| {
        let problems = file.check(&scene.mapping().sliders().ranges());
        if problems.is_empty() {
            Ok(file)
        } else {
            Err(problems
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n"))
        }
    });
    match checked {
        Ok(file) => {
            let sliders = file.look.sliders.len();
            scene.set_look(file.look);
            tracing::info!(look = %file.path, sliders, "look reloaded");
            Ok(format!("{}: reloaded, {sliders} sliders set", file.path))
        }
        Err(error) => {
            tracing::error!(%error, "look reload failed; keeping the last good look");
            Err(format!("{error}\n(the last good look stays)"))
        }
    }
}

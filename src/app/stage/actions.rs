//! The stage's answers to the control panel: its actions (calibration, profiles, avatars,
//! expressions, plugins asking for the API) and swapping in another avatar, with messages
//! posted back to the panel.

use std::time::Instant;

use super::super::{reload_mapping, Scene};
use super::StageApp;
use crate::control::Topic;
use crate::diagnostic::with_causes;
use crate::panel::PanelAction;

impl StageApp {
    /// Posts a message to the panel (and the log).
    pub(super) fn post(&mut self, topic: Topic, result: Result<String, String>) {
        match result {
            Ok(text) => {
                tracing::info!(topic = ?topic, %text, "panel");
                self.panel
                    .state
                    .messages
                    .post(topic, false, text, Instant::now());
            }
            Err(text) => {
                tracing::warn!(topic = ?topic, %text, "panel");
                self.panel
                    .state
                    .messages
                    .post(topic, true, text, Instant::now());
            }
        }
        self.panel.due = Instant::now();
    }

    /// Carries out what the panel (or a stage hotkey) asked for.
    pub(super) fn act(&mut self, action: PanelAction) {
        if let PanelAction::ShowConnectCard(shown) = action {
            self.show_connect_card(shown);
            return;
        }
        if let PanelAction::Look(action) = action {
            if let Some(scene) = self.display.scene.as_mut() {
                let result = super::super::look::act(scene, action, &self.options.config.folder);
                self.display.dirty = true;
                if let Some(result) = result {
                    self.post(Topic::Look, result);
                }
            }
            return;
        }
        let Some(controls) = self.controls.as_mut() else {
            tracing::info!(?action, "no live input to act on");
            return;
        };
        match action {
            PanelAction::CaptureNeutral => controls.capture_neutral(),
            PanelAction::StartCalibration => {
                if let Err(e) = controls.start_calibration() {
                    self.post(Topic::Calibration, Err(with_causes(&e)));
                }
            }
            PanelAction::Review(decision) => controls.review(decision),
            PanelAction::RecordVowels => {
                if let Err(e) = controls.record_vowels() {
                    self.post(Topic::Calibration, Err(with_causes(&e)));
                }
            }
            PanelAction::ChooseProfile(name) => {
                let result = controls.choose_profile(name.as_deref());
                self.post(Topic::Profile, result.map_err(|e| with_causes(&e)));
            }
            PanelAction::ReloadMapping => {
                let Some(scene) = self.display.scene.as_mut() else {
                    return;
                };
                let result = match &self.options.mapping_path {
                    Some(path) => reload_mapping(scene, crate::mapping::MappingFile::load(path)),
                    None => Ok(
                        "no mapping file is in use: the built-in mapping is compiled \
                                from the avatar's target names (set render.mapping to edit one)"
                            .to_string(),
                    ),
                };
                self.display.dirty = true;
                self.post(Topic::Mapping, result);
            }
            PanelAction::OpenConfigFolder => {
                let folder = controls.config_folder();
                let result = crate::fsutil::open_in_file_manager(&folder)
                    .map(|()| format!("opened {}", folder.display()))
                    .map_err(|e| format!("cannot open {}: {e}", folder.display()));
                self.post(Topic::General, result);
            }
            PanelAction::ClearMessages => self.panel.state.messages.clear(),
            PanelAction::SetPhone { address, save } => {
                let result = controls.set_phone(&address, save);
                if result.is_ok() {
                    // The field shows the address in use again.
                    self.panel.state.phone = None;
                }
                self.post(Topic::Config, result.map_err(|e| with_causes(&e)));
            }
            PanelAction::AnswerPlugin { id, allow } => {
                let result = self.panel.plugins.answer(id, allow);
                self.post(Topic::Api, result.map_err(|e| e.to_string()));
            }
            PanelAction::ToggleExpression(name) => {
                controls.trigger_expression(&name, crate::expressions::Trigger::Toggle);
            }
            PanelAction::ExpressionsOff => controls.release_expressions(),
            PanelAction::SwitchModel(path) => {
                let name = path.as_ref().map_or_else(
                    || "the default head".to_string(),
                    |p| p.display().to_string(),
                );
                controls.switch_model(path);
                self.post(Topic::Avatar, Ok(format!("loading {name}")));
            }
            PanelAction::Look(_) | PanelAction::ShowConnectCard(_) => {}
        }
    }

    /// Shows `loaded` instead of the current avatar, with the stage's camera and layers; the
    /// current one stays when it cannot be drawn.
    pub(super) fn swap_model(
        &mut self,
        loaded: crate::control::LoadedModel,
    ) -> Result<String, String> {
        let Some(window) = self.display.window.as_ref() else {
            return Err("the stage is not open yet".into());
        };
        window.make_current().map_err(|e| with_causes(&e))?;
        let name = loaded.path.as_ref().map_or_else(
            || "the default head".to_string(),
            |p| p.display().to_string(),
        );
        let mut scene = Scene::new(window.gl(), loaded.avatar, self.options.config.render.morph)
            .map_err(|e| format!("cannot draw {name}: {}", with_causes(&e)))?;
        scene.set_lod(self.options.config.render.lod);
        scene.set_mapping(loaded.mapping);
        scene.set_camera(self.options.config.camera);
        if let Err(e) = scene.set_stack(&self.stack) {
            tracing::warn!(error = %e, "layer targets left out for the new avatar");
        }
        if let Some(controls) = self.controls.as_mut() {
            controls.set_presets(crate::session::avatar_presets(scene.avatar()));
        }
        self.options.mapping_path =
            crate::session::mapping_for(&self.options.config, loaded.path.as_deref());
        // Where plugins put the avatar stays.
        if let Some(old) = &self.display.scene {
            scene.set_mover(old.mover());
        }
        // The old scene's GL objects go while the stage's context is current.
        self.display.scene = Some(scene);
        self.display.dirty = true;
        self.watch_frame_rate();
        tracing::info!(model = %name, "avatar swapped in");
        Ok(format!("{name} in use"))
    }
}

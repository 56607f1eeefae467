//! The control panel's side of a live run: counters and labels of the input, profiles, neutral
//! capture and the calibration routine started from the panel.

use std::path::{Path, PathBuf};
use std::sync::mpsc;

use super::chain::{ExpressionsWatch, SessionCommand};
use super::input::Input;
use super::Notify;
use super::PanelRoutineUi;
use crate::arkit::FaceFrame;
use crate::calibrate::{self, Decision, Profile};
use crate::config::Config;
use crate::control::telemetry::InputCounters;
use crate::control::{AppEvent, Controls, RoutineView, Topic};
use crate::expressions::ExpressionStatus;
use crate::expressions::{ExpressionInput, Key, Trigger, TriggerSource};

/// The running calibration routine started from the panel.
struct PanelRoutine {
    /// The performer's review decisions.
    decisions: mpsc::Sender<Decision>,
    /// The routine's thread.
    thread: std::thread::JoinHandle<()>,
}

/// The control panel's side of `run`: the input, the ingest thread's commands, the profiles.
/// Dropping it stops the input and ends a routine still running.
pub struct LiveControls {
    /// The input (dropped with the controls, which stops it).
    input: Option<Input>,
    commands: mpsc::Sender<SessionCommand>,
    notify: Notify,
    profiles: PathBuf,
    /// The profile in use, by performer name.
    profile: Option<String>,
    routine: Option<PanelRoutine>,
    config_folder: PathBuf,
    /// The configuration, for loading another avatar.
    config: Config,
    /// The avatar in use (`None`: the default head).
    model: Option<PathBuf>,
    /// Watches the avatar file in use.
    model_watch: Option<crate::watch::FileWatcher>,
    /// Lip sync's audio input, while it runs.
    lipsync: Option<super::LipSource>,
    /// The avatar the API reports, while it runs.
    api: Option<super::ApiModel>,
    /// The expressions and their states, as the chain publishes them.
    expressions: ExpressionsWatch,
}

/// Watches `path` and sends each saved version to the stage; `None` (logged) when it cannot.
fn watch(config: &Config, path: &Path, notify: &Notify) -> Option<crate::watch::FileWatcher> {
    let notify = notify.clone();
    super::watch_model(config, path, move |loaded| {
        notify(AppEvent::Model(loaded.map(Box::new)));
    })
    .map_err(|error| tracing::warn!(error = %error, "the avatar file is not watched"))
    .ok()
}

impl LiveControls {
    /// Controls over `input`, sending commands to its chain and events to the stage.
    /// `config` names the avatar in use (watched for changes) and the folder of avatars the
    /// panel offers.
    pub fn new(
        input: Input,
        commands: mpsc::Sender<SessionCommand>,
        notify: Notify,
        profiles: PathBuf,
        profile: Option<String>,
        config_folder: PathBuf,
        config: &Config,
    ) -> LiveControls {
        let model = Some(config.render.model.clone()).filter(|p| !p.as_os_str().is_empty());
        LiveControls {
            model_watch: model.as_deref().and_then(|p| watch(config, p, &notify)),
            model,
            config: config.clone(),
            input: Some(input),
            commands,
            notify,
            profiles,
            profile,
            routine: None,
            config_folder,
            lipsync: None,
            api: None,
            expressions: tokio::sync::watch::channel(Vec::new()).1,
        }
    }

    /// Keeps lip sync's input with the controls (it stops with them), so the panel can record
    /// vowels and a chosen profile's voice applies.
    pub fn with_lipsync(mut self, lipsync: Option<super::LipSource>) -> LiveControls {
        self.lipsync = lipsync;
        self
    }

    /// Reads the expressions' states from `states` (the chain's), for the panel.
    pub fn with_expressions(mut self, states: ExpressionsWatch) -> LiveControls {
        self.expressions = states;
        self
    }

    /// Sends `command` to the chain; a chain that ended (the input stopped) is logged.
    fn send(&self, command: SessionCommand) {
        if self.commands.send(command).is_err() {
            tracing::debug!("the input has stopped; the expression command is dropped");
        }
    }
}

impl LiveControls {
    /// Tells the API (`api`, while it runs) of every avatar swapped in.
    pub fn with_api(mut self, api: Option<super::ApiModel>) -> LiveControls {
        self.api = api;
        self
    }
}

impl Drop for LiveControls {
    fn drop(&mut self) {
        if let Some(input) = self.input.take() {
            input.shutdown();
        }
        // The input's end closes the routine's frames; a review waiting for a decision ends
        // when its channel closes.
        if let Some(routine) = self.routine.take() {
            drop(routine.decisions);
            let _ = routine.thread.join();
        }
    }
}

impl Controls for LiveControls {
    fn expression_key(&mut self, key: Key, pressed: bool) {
        self.send(SessionCommand::Expression(ExpressionInput::Key {
            key,
            pressed,
            source: TriggerSource::Key,
        }));
    }

    fn trigger_expression(&mut self, name: &str, trigger: Trigger) {
        self.send(SessionCommand::Expression(ExpressionInput::Trigger {
            name: name.to_string(),
            trigger,
            source: TriggerSource::Panel,
            fade: None,
        }));
    }

    fn release_expressions(&mut self) {
        self.send(SessionCommand::Expression(ExpressionInput::ReleaseAll));
    }

    fn expressions(&self) -> Vec<ExpressionStatus> {
        self.expressions.borrow().clone()
    }

    /// Called as each avatar is swapped in: the chain gets its presets, plugins hear of it.
    fn set_presets(&mut self, presets: Vec<crate::expressions::Expression>) {
        let _ = self.commands.send(SessionCommand::Presets(presets));
        if let Some(api) = &self.api {
            api.swapped(self.model.as_deref());
        }
    }

    fn counters(&self) -> InputCounters {
        self.input
            .as_ref()
            .map(Input::panel_counters)
            .unwrap_or_default()
    }

    fn input_label(&self) -> String {
        self.input.as_ref().map(Input::label).unwrap_or_default()
    }

    fn can_calibrate(&self) -> bool {
        self.input.as_ref().is_some_and(Input::is_live)
            && self.routine.as_ref().is_none_or(|r| r.thread.is_finished())
    }

    fn profiles(&self) -> Vec<String> {
        Profile::list(&self.profiles)
    }

    fn profile(&self) -> Option<String> {
        self.profile.clone()
    }

    fn capture_neutral(&mut self) {
        let _ = self.commands.send(SessionCommand::CaptureNeutral);
    }

    fn choose_profile(&mut self, name: Option<&str>) -> Result<String, String> {
        let profile = match name {
            Some(name) => {
                Some(Profile::load_named(&self.profiles, name).map_err(|e| e.to_string())?)
            }
            None => None,
        };
        let text = match &profile {
            Some(p) => format!(
                "profile {} in use ({})",
                p.performer,
                Profile::path_in(&self.profiles, &p.performer).display()
            ),
            None => "no profile: raw ranges in use".to_string(),
        };
        self.profile = profile.as_ref().map(|p| p.performer.clone());
        if let Some(lip) = &self.lipsync {
            lip.set_voice(profile.as_ref());
        }
        let _ = self
            .commands
            .send(SessionCommand::Profile(profile.map(Box::new)));
        Ok(text)
    }

    fn record_vowels(&mut self) -> Result<(), String> {
        let Some(lip) = &self.lipsync else {
            return Err("lip sync is off ([lipsync] mode) or has no input".into());
        };
        let Some(performer) = self.profile.clone() else {
            return Err("choose a performer profile first: the vowels are saved into it".into());
        };
        lip.record_vowels(performer, self.profiles.clone(), self.notify.clone())
    }

    fn start_calibration(&mut self) -> Result<(), String> {
        if !self.can_calibrate() {
            return Err(
                "calibration needs live input from the phone (not a replay), and one \
                 routine at a time"
                    .into(),
            );
        }
        if let Some(old) = self.routine.take() {
            let _ = old.thread.join();
        }
        let performer = self
            .profile
            .clone()
            .unwrap_or_else(|| "performer".to_string());
        let old = Profile::load_named(&self.profiles, &performer).ok();
        let (raw_tx, raw_rx) = mpsc::sync_channel::<FaceFrame>(1024);
        let (decisions, decision_rx) = mpsc::channel();
        let _ = self.commands.send(SessionCommand::Tap(Some(raw_tx)));
        let notify = self.notify.clone();
        let commands = self.commands.clone();
        let dir = self.profiles.clone();
        let next = if self.lipsync.as_ref().is_some_and(|l| l.has_microphone()) {
            "; for lip sync, press \"Record my vowels\" in the lip-sync section next"
        } else {
            ""
        };
        let thread = std::thread::Builder::new()
            .name("facewire-calibrate".into())
            .spawn(move || {
                let ui_notify = notify.clone();
                let mut ui =
                    PanelRoutineUi::new(Box::new(move |event| ui_notify(event)), decision_rx);
                let outcome = calibrate::run_routine(raw_rx, &mut ui, old.as_ref(), &performer);
                let _ = commands.send(SessionCommand::Tap(None));
                notify(AppEvent::Prompt(None));
                notify(AppEvent::Routine(RoutineView::Idle));
                let (error, text) = match outcome {
                    Ok(Some(calibration)) => match calibration.profile.save(&dir) {
                        Ok(path) => {
                            let _ = commands
                                .send(SessionCommand::Profile(Some(Box::new(calibration.profile))));
                            (
                                false,
                                format!("calibration saved to {} and in use{next}", path.display()),
                            )
                        }
                        Err(e) => (true, format!("calibration not saved: {e}")),
                    },
                    Ok(None) => (false, "calibration discarded".to_string()),
                    Err(e) => (true, format!("calibration stopped: {e}")),
                };
                notify(AppEvent::Message {
                    topic: Topic::Calibration,
                    error,
                    text,
                });
            })
            .map_err(|e| format!("cannot start the calibration routine: {e}"))?;
        self.profile = Some(self.profile.clone().unwrap_or_else(|| "performer".into()));
        self.routine = Some(PanelRoutine { decisions, thread });
        Ok(())
    }

    fn review(&mut self, decision: Decision) {
        if let Some(routine) = &self.routine {
            let _ = routine.decisions.send(decision);
        }
    }

    fn config_folder(&self) -> PathBuf {
        self.config_folder.clone()
    }

    fn models(&self) -> Vec<PathBuf> {
        super::models_in(&self.config.render.models_dir)
    }

    fn model(&self) -> Option<PathBuf> {
        self.model.clone()
    }

    fn switch_model(&mut self, path: Option<PathBuf>) {
        self.model_watch = path
            .as_deref()
            .and_then(|p| watch(&self.config, p, &self.notify));
        self.model.clone_from(&path);
        let config = self.config.clone();
        let notify = self.notify.clone();
        let loader = std::thread::Builder::new()
            .name("facewire-model".into())
            .spawn(move || {
                let loaded = super::load_model_at(&config, path.as_deref());
                notify(AppEvent::Model(loaded.map(Box::new)));
            });
        if let Err(error) = loader {
            self.notify.as_ref()(AppEvent::Message {
                topic: Topic::Avatar,
                error: true,
                text: format!("cannot load the avatar: {error}"),
            });
        }
    }
}

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
use crate::control::{AppEvent, ControlError, Controls, RoutineView, Topic};
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
    /// The configuration file the run started with, where the panel's settings are saved.
    config_path: Option<PathBuf>,
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
            config_path: None,
        }
    }

    /// Keeps lip sync's input with the controls (it stops with them), so the panel can record
    /// vowels and a chosen profile's voice applies.
    pub fn with_lipsync(mut self, lipsync: Option<super::LipSource>) -> LiveControls {
        self.lipsync = lipsync;
        self
    }

    /// Saves the panel's settings (the phone's address) into `path`, the configuration file
    /// the run started with.
    pub fn with_config_path(mut self, path: Option<&Path>) -> LiveControls {
        self.config_path = path.map(Path::to_path_buf);
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

    fn choose_profile(&mut self, name: Option<&str>) -> Result<String, ControlError> {
        let profile = match name {
            Some(name) => Some(Profile::load_named(&self.profiles, name)?),
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

    fn record_vowels(&mut self) -> Result<(), ControlError> {
        let Some(lip) = &self.lipsync else {
            return Err(ControlError::NoLipSync);
        };
        let Some(performer) = self.profile.clone() else {
            return Err(ControlError::NoPerformer);
        };
        lip.record_vowels(performer, self.profiles.clone(), self.notify.clone())
    }

    fn start_calibration(&mut self) -> Result<(), ControlError> {
        if !self.can_calibrate() {
            return Err(ControlError::NotLive);
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
            .map_err(|source| ControlError::Thread {
                what: "the calibration routine",
                source,
            })?;
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

    fn phone(&self) -> String {
        match &self.input {
            Some(Input::Network(handle)) => handle.phone().map(|ip| ip.to_string()),
            _ => self.config.ingest.phone.map(|ip| ip.to_string()),
        }
        .unwrap_or_default()
    }

    fn set_phone(&mut self, address: &str, save: bool) -> Result<String, ControlError> {
        let phone = parse_phone(address)?;
        let Some(Input::Network(handle)) = &self.input else {
            return Err(ControlError::NoNetworkInput);
        };
        handle.set_phone(phone);
        self.config.ingest.phone = phone;
        let asked = match phone {
            Some(ip) => format!("asking the phone at {ip} for data"),
            None => "asking the phone that sends first for data".to_string(),
        };
        if !save {
            return Ok(asked);
        }
        let Some(path) = &self.config_path else {
            return Err(ControlError::NoConfigFile { asked });
        };
        match save_phone(path, phone) {
            Ok(()) => Ok(format!(
                "{asked}; saved as [ingest] phone in {}",
                path.display()
            )),
            Err(e) => Err(ControlError::NotSaved {
                asked,
                source: Box::new(e),
            }),
        }
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

/// The phone's address as typed in the panel: an IP address, or empty for none.
fn parse_phone(text: &str) -> Result<Option<std::net::IpAddr>, ControlError> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse()
        .map(Some)
        .map_err(|_| ControlError::NotAnAddress(crate::diagnostic::excerpt(text)))
}

/// Why the phone's address could not be saved into the configuration file.
#[derive(Debug, thiserror::Error)]
pub enum SavePhoneError {
    /// The file could not be read, edited or written.
    #[error(transparent)]
    File(#[from] crate::tomlfile::TomlFileError),
    /// The edited file would not load.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The edited file loads, but with another phone.
    #[error("the new [ingest] phone did not take")]
    DidNotTake,
}

/// Writes `phone` into the configuration file at `path` as `[ingest] phone` (removed for
/// `None`), keeping everything else as written; the result must load before it replaces the
/// file.
pub fn save_phone(path: &Path, phone: Option<std::net::IpAddr>) -> Result<(), SavePhoneError> {
    let mut file = crate::tomlfile::TomlFile::read(path)?;
    let text = phone.map(|ip| ip.to_string());
    file.set_key("ingest", "phone", text.as_ref())?;
    let label = path.display().to_string();
    let parsed = Config::parse(&file.text(), &label)?;
    if parsed.ingest.phone != phone {
        return Err(SavePhoneError::DidNotTake);
    }
    Ok(file.write()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_phone_is_saved_into_the_configuration_with_its_comments() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("facewire.toml");
        let text = "# mine\n[ingest]\n# where the phone is\nlisten = [\"0.0.0.0:39539\"]\n";
        std::fs::write(&path, text).unwrap();
        let ip: std::net::IpAddr = "192.168.1.23".parse().unwrap();
        save_phone(&path, Some(ip)).unwrap();
        let saved = std::fs::read_to_string(&path).unwrap();
        assert!(
            saved.starts_with("# mine\n[ingest]\n# where the phone is\n"),
            "{saved}"
        );
        let config = Config::load(&path).unwrap();
        assert_eq!(config.ingest.phone, Some(ip));
        save_phone(&path, None).unwrap();
        assert_eq!(Config::load(&path).unwrap().ingest.phone, None);
        // A broken file is left alone, with the reason.
        std::fs::write(&path, "[ingest\n").unwrap();
        assert!(matches!(
            save_phone(&path, Some(ip)),
            Err(SavePhoneError::File(_) | SavePhoneError::Config(_))
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "[ingest\n");
    }

    #[test]
    fn a_typed_phone_is_an_ip_address_or_empty() {
        assert_eq!(parse_phone("  ").unwrap(), None);
        assert_eq!(
            parse_phone(" 192.168.1.23 ").unwrap(),
            Some("192.168.1.23".parse().unwrap())
        );
        let error = parse_phone("192.168.1").unwrap_err();
        assert!(matches!(&error, ControlError::NotAnAddress(typed) if typed == "192.168.1"));
        let text = error.to_string();
        assert!(text.contains("not an IP address") && text.contains("192.168.1.23"));
        // What was typed is quoted escaped, so no escape sequence reaches the panel or log.
        let error = parse_phone("\u{1b}[2J").unwrap_err().to_string();
        assert!(
            error.contains("\\u{1b}") && !error.contains('\u{1b}'),
            "{error}"
        );
    }
}

//! The live run as the API's host: answers from the state the chain keeps (expressions,
//! tracking) and the avatar shown, hands triggers to the chain as commands, model switches and
//! token requests to the stage. Nothing here blocks the API's thread: a trigger comes back as
//! [`Applied`], done when the chain has carried it out and published the expressions' states.

use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;

use super::chain::{ExpressionsWatch, SessionCommand, TrackingWatch};
use super::Notify;
use crate::api::{
    ApiEmitter, ApiEvent, ApiHandle, ApiHost, Applied, Approval, ExpressionState, HostError,
    Hotkey, ModelInfo, ModelMove, ModelPosition,
};
use crate::calibrate::TrackingState;
use crate::config::Config;
use crate::control::AppEvent;
use crate::expressions::{ExpressionInput, Trigger, TriggerSource};

/// The model ID of the built-in default head.
pub const DEFAULT_HEAD_ID: &str = "facewire-default-head";

/// The ID of the hotkey that switches every expression off.
pub const REMOVE_ALL_ID: &str = "remove-all-expressions";

/// Whether the file at `path` is the built-in default head (`models/default_head.glb`, as
/// `render.models_dir` lists it): its name and size are the built-in one's.
fn is_default_head(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str())
        == Path::new(crate::headgen::DEFAULT_HEAD)
            .file_name()
            .and_then(|n| n.to_str())
        && std::fs::metadata(path)
            .is_ok_and(|m| m.len() == crate::headgen::DEFAULT_HEAD_GLB.len() as u64)
}

/// Whether `a` and `b` name the same file (as written, or once resolved).
fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || a.canonicalize()
            .ok()
            .zip(b.canonicalize().ok())
            .is_some_and(|(a, b)| a == b)
}

/// The avatar `path` (`None`: the default head) as the API names it: its path is its ID. The
/// default head's file is the default head, whichever way it was loaded.
pub fn model_info(path: Option<&Path>) -> ModelInfo {
    match path.filter(|p| !is_default_head(p)) {
        None => ModelInfo {
            id: DEFAULT_HEAD_ID.into(),
            name: "default head".into(),
            file: String::new(),
        },
        Some(path) => ModelInfo {
            id: path.display().to_string(),
            name: path
                .file_stem()
                .map_or_else(String::new, |s| s.to_string_lossy().into_owned()),
            file: path
                .file_name()
                .map_or_else(String::new, |s| s.to_string_lossy().into_owned()),
        },
    }
}

/// The avatar shown, as the API reports it. The stage's controls tell it of every avatar
/// swapped in, and plugins hear of it as `ModelLoadedEvent`.
#[derive(Clone)]
pub struct ApiModel {
    shown: Arc<Mutex<Option<PathBuf>>>,
    /// Where `ModelLoadedEvent`s go, once the server runs.
    events: Arc<OnceLock<ApiEmitter>>,
}

/// The API's hotkey of the expression `name`: it toggles the expression; its ID is the
/// expression's layer name and its file the expression's name.
pub(super) fn expression_hotkey(name: &str) -> Hotkey {
    Hotkey {
        id: crate::expressions::layer_name(name),
        name: name.to_string(),
        action: "ToggleExpression".into(),
        description: format!("expression {name}"),
        file: name.to_string(),
    }
}

impl ApiModel {
    /// The avatar at `path` (`None`: the default head) is shown now.
    pub fn swapped(&self, path: Option<&Path>) {
        *self.shown.lock().unwrap_or_else(PoisonError::into_inner) = path.map(Path::to_path_buf);
        tracing::debug!(model = %model_info(path).id, "plugins hear of the avatar swapped in");
        if let Some(events) = self.events.get() {
            events.emit(ApiEvent::ModelLoaded {
                loaded: true,
                model: model_info(path),
            });
        }
    }

    /// Sends `ModelLoadedEvent`s to `events` from now on.
    pub fn attach(&self, events: ApiEmitter) {
        let _ = self.events.set(events);
    }

    fn shown(&self) -> Option<PathBuf> {
        self.shown
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The API of a live run: the server (it stops when this is dropped) and the avatar it reports.
pub struct LiveApi {
    /// The server.
    pub handle: ApiHandle,
    /// The avatar shown; the stage's controls keep it current.
    pub model: ApiModel,
}

/// The live run as the API sees it.
pub struct SessionHost {
    commands: mpsc::Sender<SessionCommand>,
    expressions: ExpressionsWatch,
    tracking: TrackingWatch,
    model: ApiModel,
    models_dir: PathBuf,
    /// The stage, in a window run: it loads avatars and asks the performer about plugins.
    stage: Option<Notify>,
    /// The front-end that draws the avatar (the stage, or a headless run's offscreen loop):
    /// plugins' moves go there.
    front: Option<Notify>,
    /// Where the avatar stands on the stage, as the last move left it.
    position: Mutex<ModelPosition>,
}

impl SessionHost {
    /// A host sending commands to the chain, reading the state it keeps, with `stage` (a
    /// window run) switching avatars and asking for approval there, and moving the avatar on
    /// `front` (the stage, or a headless run's offscreen loop; a relay draws nothing).
    pub fn new(
        config: &Config,
        commands: mpsc::Sender<SessionCommand>,
        expressions: ExpressionsWatch,
        tracking: TrackingWatch,
        stage: Option<Notify>,
        front: Option<Notify>,
    ) -> SessionHost {
        let shown = Some(config.render.model.clone()).filter(|p| !p.as_os_str().is_empty());
        SessionHost {
            commands,
            expressions,
            tracking,
            model: ApiModel {
                shown: Arc::new(Mutex::new(shown)),
                events: Arc::new(OnceLock::new()),
            },
            models_dir: config.render.models_dir.clone(),
            stage,
            front,
            position: Mutex::new(ModelPosition::default()),
        }
    }

    /// The avatar the API reports, for the stage's controls to keep current.
    pub fn model(&self) -> ApiModel {
        self.model.clone()
    }

    fn send(&self, command: SessionCommand) -> Result<(), HostError> {
        self.commands
            .send(command)
            .map_err(|_| HostError::Failed("the run is ending".into()))
    }

    /// Sends `input` to the expressions, then asks the chain to say when it is carried out.
    fn express(&self, input: ExpressionInput) -> Result<Applied, HostError> {
        self.send(SessionCommand::Expression(input))?;
        let (done, applied) = oneshot::channel();
        self.send(SessionCommand::Done(done))?;
        Ok(Applied::when(applied))
    }

    /// The expression called `name` (any letter case), as the chain spells it.
    fn expression(&self, name: &str) -> Option<String> {
        self.expressions
            .borrow()
            .iter()
            .find(|e| e.name.eq_ignore_ascii_case(name))
            .map(|e| e.name.clone())
    }

    /// The avatars by path, each once: the default head, those in `render.models_dir` (its
    /// file of the default head is the default head), then the one shown if it is elsewhere.
    fn paths(&self) -> Vec<Option<PathBuf>> {
        let mut paths: Vec<Option<PathBuf>> = vec![None];
        let listed = super::models_in(&self.models_dir).into_iter();
        for path in listed.chain(self.model.shown()) {
            let known =
                is_default_head(&path) || paths.iter().flatten().any(|p| same_file(p, &path));
            if !known {
                paths.push(Some(path));
            }
        }
        paths
    }
}

impl ApiHost for SessionHost {
    fn current_model(&self) -> Option<ModelInfo> {
        Some(model_info(self.model.shown().as_deref()))
    }

    fn available_models(&self) -> Vec<ModelInfo> {
        self.paths()
            .iter()
            .map(|p| model_info(p.as_deref()))
            .collect()
    }

    fn load_model(&self, id: &str) -> Result<(), HostError> {
        let Some(stage) = &self.stage else {
            return Err(HostError::Failed(
                "a headless run keeps the avatar it started with".into(),
            ));
        };
        if id.is_empty() {
            return Err(HostError::Failed(format!(
                "facewire always shows an avatar; load the default head ({DEFAULT_HEAD_ID}) instead"
            )));
        }
        let path = self
            .paths()
            .into_iter()
            .find(|p| model_info(p.as_deref()).id == id)
            .ok_or(HostError::NotFound)?;
        tracing::info!(model = id, "a plugin switches the avatar");
        stage(AppEvent::LoadModel(path));
        Ok(())
    }

    fn hotkeys(&self) -> Vec<Hotkey> {
        let log = self.expressions.borrow();
        let mut hotkeys: Vec<Hotkey> = log.iter().map(|e| expression_hotkey(&e.name)).collect();
        hotkeys.push(Hotkey {
            id: REMOVE_ALL_ID.into(),
            name: "Remove all expressions".into(),
            action: "RemoveAllExpressions".into(),
            description: "switches every expression off".into(),
            file: String::new(),
        });
        hotkeys
    }

    fn trigger_hotkey(&self, id: &str) -> Result<Applied, HostError> {
        if id == REMOVE_ALL_ID {
            return self.express(ExpressionInput::ReleaseAll);
        }
        let name = self
            .hotkeys()
            .into_iter()
            .find(|h| h.id == id && h.action == "ToggleExpression")
            .map(|h| h.name)
            .ok_or(HostError::NotFound)?;
        self.express(ExpressionInput::Trigger {
            name,
            trigger: Trigger::Toggle,
            source: TriggerSource::Api,
            fade: None,
        })
    }

    fn expressions(&self) -> Vec<ExpressionState> {
        self.expressions
            .borrow()
            .iter()
            .map(|e| ExpressionState {
                file: e.name.clone(),
                name: e.name.clone(),
                active: e.on,
            })
            .collect()
    }

    /// Fades over `fade` for this change alone; keys and the panel keep the expression's own.
    fn set_expression(
        &self,
        file: &str,
        active: bool,
        fade: Duration,
    ) -> Result<Applied, HostError> {
        let name = self.expression(file).ok_or(HostError::NotFound)?;
        self.express(ExpressionInput::Trigger {
            name,
            trigger: if active { Trigger::On } else { Trigger::Off },
            source: TriggerSource::Api,
            fade: Some(fade),
        })
    }

    fn tracking(&self) -> bool {
        matches!(
            self.tracking.borrow().state,
            TrackingState::Tracking | TrackingState::Reacquire
        )
    }

    fn model_position(&self) -> ModelPosition {
        *self.position.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn move_model(&self, m: &ModelMove) -> Result<(), HostError> {
        let to = {
            let mut at = self.position.lock().unwrap_or_else(PoisonError::into_inner);
            *at = at.moved(m);
            *at
        };
        tracing::debug!(?to, over = ?m.over, "a plugin moves the avatar");
        if let Some(front) = &self.front {
            front(AppEvent::MoveModel { to, over: m.over });
        }
        Ok(())
    }

    fn approve(&self, plugin: &str, developer: &str) -> Approval {
        let Some(stage) = &self.stage else {
            tracing::info!(
                plugin,
                developer,
                "token request denied: a headless run cannot ask (list the plugin in [api] approve)"
            );
            return Approval::Deny;
        };
        let (reply, answer) = oneshot::channel();
        stage(AppEvent::ApiApproval {
            plugin: plugin.to_string(),
            developer: developer.to_string(),
            reply,
        });
        Approval::Later(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expressions::ExpressionMode;
    use crate::expressions::ExpressionStatus;

    fn host(stage: Option<Notify>) -> (SessionHost, mpsc::Receiver<SessionCommand>) {
        let (commands, rx) = mpsc::channel();
        let (_, expressions) = tokio::sync::watch::channel(vec![ExpressionStatus {
            name: "Smile".into(),
            key: None,
            mode: ExpressionMode::Toggle,
            layer: "face".into(),
            on: true,
            weight: 1.0,
        }]);
        let (_, tracking) = tokio::sync::watch::channel(Default::default());
        let host = SessionHost::new(
            &Config::default(),
            commands,
            expressions,
            tracking,
            stage.clone(),
            stage,
        );
        (host, rx)
    }

    #[test]
    fn expressions_are_hotkeys_and_triggers_become_commands() {
        let (host, rx) = host(None);
        let hotkeys = host.hotkeys();
        assert_eq!(hotkeys.len(), 2);
        assert_eq!(hotkeys[0].id, crate::expressions::layer_name("Smile"));
        assert_eq!(hotkeys[0].file, "Smile");
        assert_eq!(hotkeys[1].action, "RemoveAllExpressions");
        let applied = host.trigger_hotkey(&hotkeys[0].id).unwrap();
        assert!(matches!(
            rx.try_recv().unwrap(),
            SessionCommand::Expression(ExpressionInput::Trigger { ref name, trigger: Trigger::Toggle, source: TriggerSource::Api, fade: None }) if name == "Smile"
        ));
        // The answer waits for the chain to say the trigger is carried out.
        let SessionCommand::Done(done) = rx.try_recv().unwrap() else {
            panic!("no Done after the trigger");
        };
        done.send(()).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        assert!(rt.block_on(applied.wait(Duration::from_secs(5))));
        // A run that ends (its commands dropped) counts as done at once.
        let applied = host.trigger_hotkey(REMOVE_ALL_ID).unwrap();
        assert!(matches!(
            rx.try_recv().unwrap(),
            SessionCommand::Expression(ExpressionInput::ReleaseAll)
        ));
        drop(rx.try_recv().unwrap());
        assert!(rt.block_on(applied.wait(Duration::from_secs(5))));
        assert!(matches!(
            host.trigger_hotkey("nothing"),
            Err(HostError::NotFound)
        ));
        host.set_expression("smile", false, Duration::ZERO).unwrap();
        assert!(matches!(
            rx.try_recv().unwrap(),
            SessionCommand::Expression(ExpressionInput::Trigger {
                trigger: Trigger::Off,
                ..
            })
        ));
        assert!(host.expressions()[0].active);
        assert!(!host.tracking());
    }

    #[test]
    fn a_headless_run_denies_and_keeps_its_avatar() {
        let (host, _rx) = host(None);
        assert!(matches!(host.approve("p", "d"), Approval::Deny));
        assert_eq!(host.current_model().unwrap().id, DEFAULT_HEAD_ID);
        assert!(matches!(
            host.load_model(DEFAULT_HEAD_ID),
            Err(HostError::Failed(_))
        ));
    }

    #[test]
    fn moves_reach_the_front_end_as_where_the_avatar_goes() {
        let (tx, rx) = std::sync::mpsc::channel();
        let tx = Mutex::new(tx);
        let notify: Notify = Arc::new(move |event| {
            let _ = tx.lock().unwrap().send(event);
        });
        let (stage, _commands) = host(Some(notify));
        let mv = |relative, x, rotation| ModelMove {
            over: Duration::from_millis(500),
            relative,
            x,
            y: None,
            rotation,
            size: None,
        };
        stage.move_model(&mv(false, Some(0.5), Some(90.0))).unwrap();
        stage
            .move_model(&mv(true, Some(-0.2), Some(-100.0)))
            .unwrap();
        let to: Vec<ModelPosition> = rx
            .try_iter()
            .filter_map(|e| match e {
                AppEvent::MoveModel { to, over } => {
                    assert_eq!(over, Duration::from_millis(500));
                    Some(to)
                }
                _ => None,
            })
            .collect();
        assert_eq!(to.len(), 2);
        assert_eq!((to[0].x, to[0].rotation), (0.5, 90.0));
        assert!((to[1].x - 0.3).abs() < 1e-6);
        assert_eq!(to[1].rotation, 350.0);
        assert_eq!(stage.model_position(), to[1]);
        // A relay draws nothing: the move is answered and kept.
        let (relay, _commands) = host(None);
        relay.move_model(&mv(false, Some(1.0), None)).unwrap();
        assert_eq!(relay.model_position().x, 1.0);
    }

    #[test]
    fn every_model_is_listed_once_and_the_default_head_s_file_is_the_default_head() {
        let dir = tempfile::tempdir().unwrap();
        let models = dir.path().join("models");
        std::fs::create_dir_all(&models).unwrap();
        // The repository's models folder has the default head's file beside the others.
        std::fs::write(
            models.join("default_head.glb"),
            crate::headgen::DEFAULT_HEAD_GLB,
        )
        .unwrap();
        std::fs::write(models.join("alicia.vrm"), b"glTF").unwrap();
        let mut config = Config::default();
        config.render.models_dir = models.clone();
        // Started with a model of the folder, spelled another way.
        config.render.model = models.join(".").join("alicia.vrm");
        let (commands, _rx) = mpsc::channel();
        let (_, expressions) = tokio::sync::watch::channel(Vec::new());
        let (_, tracking) = tokio::sync::watch::channel(Default::default());
        let host = SessionHost::new(&config, commands, expressions, tracking, None, None);
        let ids: Vec<String> = host.available_models().into_iter().map(|m| m.id).collect();
        assert_eq!(ids.len(), 2, "{ids:?}");
        assert_eq!(ids[0], DEFAULT_HEAD_ID);
        assert!(ids[1].ends_with("alicia.vrm"), "{ids:?}");
        // The default head loaded from its file is reported as the default head.
        host.model().swapped(Some(&models.join("default_head.glb")));
        assert_eq!(host.current_model().unwrap().id, DEFAULT_HEAD_ID);
        assert_eq!(host.available_models().len(), 2);
        // Another file of the same name is a model of its own.
        std::fs::write(dir.path().join("default_head.glb"), b"other").unwrap();
        assert_ne!(
            model_info(Some(&dir.path().join("default_head.glb"))).id,
            DEFAULT_HEAD_ID
        );
    }

    #[test]
    fn a_window_run_asks_the_stage() {
        let (tx, rx) = std::sync::mpsc::channel();
        let tx = Mutex::new(tx);
        let notify: Notify = Arc::new(move |event| {
            let _ = tx.lock().unwrap().send(event);
        });
        let (host, _commands) = host(Some(notify));
        let Approval::Later(mut answer) = host.approve("Streamer.bot", "Streamer.bot") else {
            panic!("not asked");
        };
        let Ok(AppEvent::ApiApproval { plugin, reply, .. }) = rx.try_recv() else {
            panic!("the stage was not asked");
        };
        assert_eq!(plugin, "Streamer.bot");
        reply.send(true).unwrap();
        assert_eq!(answer.try_recv(), Ok(true));
        host.load_model(DEFAULT_HEAD_ID).unwrap();
        assert!(matches!(rx.try_recv(), Ok(AppEvent::LoadModel(None))));
        assert_eq!(host.load_model("elsewhere.vrm"), Err(HostError::NotFound));
        let model = host.model();
        let (events, mut heard) = tokio::sync::broadcast::channel(8);
        model.attach(ApiEmitter::for_tests(events));
        model.swapped(Some(Path::new("models/Alicia.vrm")));
        assert!(matches!(
            heard.try_recv(),
            Ok(ApiEvent::ModelLoaded { loaded: true, ref model }) if model.file == "Alicia.vrm"
        ));
        let current = host.current_model().unwrap();
        assert_eq!(current.file, "Alicia.vrm");
        assert!(host.available_models().contains(&current));
    }
}

//! One plugin's connection (its session, in VTube Studio's words): authentication, every
//! request the API answers, and the events it subscribed to. Transport-free: text in, text out.
//! The requests about input parameters are in `parameters.rs`.

mod parameters;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use tokio::sync::{broadcast, oneshot};

use super::custom::CustomParams;
use super::protocol::{self, ErrorId, Request};
use super::{
    valid_name, ApiEvent, ApiHost, Applied, Approval, HostError, Hotkey, InjectedStore, ModelInfo,
    ModelMove, TokenStore, MOVE_TIME_LIMIT, POSITION_LIMIT, ROTATION_LIMIT, SIZE_LIMIT,
};

/// The same hotkey runs at most once per this long (VTube Studio: once per 5 frames).
pub(super) const HOTKEY_COOLDOWN: Duration = Duration::from_millis(83);

/// The events a plugin may subscribe to.
pub(super) const EVENTS: [&str; 3] = [
    "ModelLoadedEvent",
    "TrackingStatusChangedEvent",
    "HotkeyTriggeredEvent",
];

/// Requests that need an authenticated session.
const AUTHENTICATED: [&str; 16] = [
    "CurrentModelRequest",
    "AvailableModelsRequest",
    "ModelLoadRequest",
    "MoveModelRequest",
    "HotkeysInCurrentModelRequest",
    "HotkeyTriggerRequest",
    "ExpressionStateRequest",
    "ExpressionActivationRequest",
    "FaceFoundRequest",
    "InputParameterListRequest",
    "ParameterValueRequest",
    "InjectParameterDataRequest",
    "ParameterCreationRequest",
    "ParameterDeletionRequest",
    "EventSubscriptionRequest",
    "StatisticsRequest",
];

/// What every session shares.
pub(super) struct Shared {
    /// The live run.
    pub host: Arc<dyn ApiHost>,
    /// The tokens file.
    pub tokens: TokenStore,
    /// Where injected values go.
    pub injected: InjectedStore,
    /// The parameters plugins created (kept in the tokens file too).
    pub custom: Mutex<CustomParams>,
    /// Plugin names approved without asking.
    pub approve: Vec<String>,
    /// Events to subscribed sessions.
    pub events: broadcast::Sender<ApiEvent>,
    /// When each hotkey last ran.
    pub cooldowns: Mutex<HashMap<String, Instant>>,
    /// When the server started, for `StatisticsRequest`.
    pub started: Instant,
    /// Sessions authenticated now (the plugins connected), for `StatisticsRequest`.
    pub plugins: AtomicUsize,
}

/// What handling a message leads to.
#[derive(Debug)]
pub(super) enum Step {
    /// Send this.
    Reply(String),
    /// Send `reply` once `applied` is done (the run carried out what was asked), so that the
    /// plugin's next request sees it; the connection reads nothing else meanwhile.
    After {
        /// The answer.
        reply: String,
        /// What it waits for.
        applied: Applied,
    },
    /// The host asks the user; answer with [`Plugin::answered`] when `answer` resolves.
    Ask {
        /// The token request's ID.
        request_id: String,
        /// `pluginName`.
        plugin: String,
        /// `pluginDeveloper`.
        developer: String,
        /// The host's answer.
        answer: oneshot::Receiver<bool>,
    },
}

/// One connected plugin.
#[derive(Debug)]
pub(super) struct Plugin {
    /// Its ID, the owner of the values it injects.
    pub id: u64,
    /// The plugin it authenticated as (`pluginName`, `pluginDeveloper`).
    auth: Option<(String, String)>,
    /// Whether a token request waits for the host's answer.
    asking: bool,
    /// Subscribed events: their config and the subscribing request's ID.
    subscriptions: BTreeMap<&'static str, (Map<String, Value>, String)>,
    /// Whether the last message was refused before it was read (bad JSON or envelope).
    refused: bool,
}

fn str_field<'a>(data: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    data.get(key).and_then(Value::as_str)
}

fn model_fields(model: Option<&ModelInfo>) -> Value {
    json!({
        "modelLoaded": model.is_some(),
        "modelName": model.map_or("", |m| m.name.as_str()),
        "modelID": model.map_or("", |m| m.id.as_str()),
    })
}

/// A `MoveModelRequest`'s data, checked as VTube Studio does: `timeInSeconds` (0 to 2) and
/// `valuesAreRelativeToModel` are needed (301), the values given must be numbers within their
/// ranges (302).
fn model_move(data: &Map<String, Value>) -> Result<ModelMove, (ErrorId, &'static str)> {
    let missing = (
        ErrorId::MoveModelRequestMissingFields,
        "timeInSeconds and valuesAreRelativeToModel are needed.",
    );
    let range = |text| (ErrorId::MoveModelRequestValuesOutOfRange, text);
    let time = match data.get("timeInSeconds") {
        None | Some(Value::Null) => return Err(missing),
        Some(t) => t
            .as_f64()
            .filter(|t| (0.0..=MOVE_TIME_LIMIT.as_secs_f64()).contains(t))
            .ok_or(range("timeInSeconds must be a number from 0 to 2."))?,
    };
    let Some(relative) = data
        .get("valuesAreRelativeToModel")
        .and_then(Value::as_bool)
    else {
        return Err(missing);
    };
    let value = |key: &str, limit: f32, text| match data.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .filter(|v| v.abs() <= f64::from(limit))
            .map(|v| Some(v as f32))
            .ok_or(range(text)),
    };
    Ok(ModelMove {
        over: Duration::from_secs_f64(time),
        relative,
        x: value(
            "positionX",
            POSITION_LIMIT,
            "positionX must be a number from -1000 to 1000.",
        )?,
        y: value(
            "positionY",
            POSITION_LIMIT,
            "positionY must be a number from -1000 to 1000.",
        )?,
        rotation: value(
            "rotation",
            ROTATION_LIMIT,
            "rotation must be a number from -360 to 360.",
        )?,
        size: value(
            "size",
            SIZE_LIMIT,
            "size must be a number from -100 to 100.",
        )?,
    })
}

/// `step`, sent once `applied` is done.
fn after(step: Step, applied: Applied) -> Step {
    match step {
        Step::Reply(reply) => Step::After { reply, applied },
        other => other,
    }
}

fn merge(mut a: Value, b: Value) -> Value {
    if let (Value::Object(a), Value::Object(b)) = (&mut a, b) {
        a.extend(b);
    }
    a
}

/// An `f32` as the JSON number with the same shortest decimal form (0.6, not
/// 0.6000000238418579).
fn number(v: f32) -> Value {
    format!("{v}")
        .parse::<f64>()
        .map_or(Value::Null, |x| json!(x))
}

impl Plugin {
    /// A session not yet authenticated.
    pub fn new(id: u64) -> Plugin {
        Plugin {
            id,
            auth: None,
            asking: false,
            subscriptions: BTreeMap::new(),
            refused: false,
        }
    }

    /// Whether the last message handled was refused before it was read (not JSON, a bad
    /// envelope); clears the flag.
    pub fn take_refused(&mut self) -> bool {
        std::mem::take(&mut self.refused)
    }

    /// Whether the session has authenticated.
    pub fn authenticated(&self) -> bool {
        self.auth.is_some()
    }

    /// The session ends: what it injected goes, and it no longer counts as a plugin connected.
    pub fn close(&mut self, shared: &Shared) {
        shared.injected.lock().release(self.id);
        if self.auth.take().is_some() {
            shared.plugins.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Answers one message at `now`.
    pub fn handle(&mut self, shared: &Shared, text: &str, now: Instant) -> Step {
        let request = match protocol::parse(text) {
            Ok(r) => r,
            Err(r) => {
                self.refused = true;
                tracing::debug!(
                    session = self.id,
                    error = r.error.code(),
                    "refused a message"
                );
                return Step::Reply(protocol::error(&r.request_id, r.error, &r.message));
            }
        };
        let id = request.request_id.as_str();
        let kind = request.message_type.as_str();
        tracing::trace!(session = self.id, request = kind, "request");
        let reply = |data: Value| {
            let kind = kind.strip_suffix("Request").unwrap_or(kind);
            Step::Reply(protocol::message(id, &format!("{kind}Response"), data))
        };
        let fail = |error: ErrorId, text: &str| Step::Reply(protocol::error(id, error, text));
        match kind {
            "APIStateRequest" => {
                return reply(json!({
                    "active": true,
                    "vTubeStudioVersion": env!("CARGO_PKG_VERSION"),
                    "currentSessionAuthenticated": self.authenticated(),
                }))
            }
            "AuthenticationTokenRequest" => return self.token_request(shared, &request),
            "AuthenticationRequest" => return self.authenticate(shared, &request),
            "ColorTintRequest" => {
                return fail(
                    ErrorId::RequestTypeUnknown,
                    "facewire has no Live2D ArtMeshes to tint: ColorTintRequest is not offered.",
                )
            }
            k if !AUTHENTICATED.contains(&k) => {
                return fail(
                    ErrorId::RequestTypeUnknown,
                    &format!("{k} is not a request facewire knows."),
                )
            }
            _ if !self.authenticated() => {
                return fail(
                    ErrorId::RequestRequiresAuthentication,
                    "This request requires an authenticated session.",
                )
            }
            _ => {}
        }
        let data = &request.data;
        let host = &*shared.host;
        match kind {
            "CurrentModelRequest" => {
                let model = host.current_model();
                let at = host.model_position();
                reply(merge(
                    model_fields(model.as_ref()),
                    json!({
                        "vtsModelName": model.as_ref().map_or("", |m| m.file.as_str()),
                        "vtsModelIconName": "",
                        "live2DModelName": "",
                        "modelLoadTime": 0,
                        "timeSinceModelLoaded": 0,
                        "numberOfLive2DParameters": 0,
                        "numberOfLive2DArtmeshes": 0,
                        "hasPhysicsFile": false,
                        "numberOfTextures": 0,
                        "textureResolution": 0,
                        "modelPosition": {
                            "positionX": number(at.x),
                            "positionY": number(at.y),
                            "rotation": number(at.rotation),
                            "size": number(at.size),
                        },
                    }),
                ))
            }
            "AvailableModelsRequest" => {
                let current = host.current_model().map(|m| m.id);
                let models: Vec<Value> = host
                    .available_models()
                    .iter()
                    .map(|m| {
                        json!({
                            "modelLoaded": current.as_deref() == Some(m.id.as_str()),
                            "modelName": m.name,
                            "modelID": m.id,
                            "vtsModelName": m.file,
                            "vtsModelIconName": "",
                        })
                    })
                    .collect();
                reply(json!({"numberOfModels": models.len(), "availableModels": models}))
            }
            "ModelLoadRequest" => {
                let model_id = match data.get("modelID") {
                    None | Some(Value::Null) => {
                        return fail(ErrorId::ModelIdMissing, "modelID is missing.")
                    }
                    Some(Value::String(s)) => s.as_str(),
                    Some(_) => return fail(ErrorId::ModelIdInvalid, "modelID is not a string."),
                };
                if !model_id.is_empty() && !host.available_models().iter().any(|m| m.id == model_id)
                {
                    return fail(ErrorId::ModelIdNotFound, "No model has this ID.");
                }
                match host.load_model(model_id) {
                    Ok(()) => reply(json!({"modelID": model_id})),
                    Err(HostError::NotFound) => {
                        fail(ErrorId::ModelIdNotFound, "No model has this ID.")
                    }
                    Err(e) => fail(ErrorId::CannotCurrentlyChangeModel, &e.to_string()),
                }
            }
            "MoveModelRequest" => {
                if host.current_model().is_none() {
                    return fail(
                        ErrorId::MoveModelRequestNoModelLoaded,
                        "No model is loaded.",
                    );
                }
                let m = match model_move(data) {
                    Ok(m) => m,
                    Err((id, text)) => return fail(id, text),
                };
                match host.move_model(&m) {
                    Ok(()) => reply(json!({})),
                    Err(HostError::NoModel) => fail(
                        ErrorId::MoveModelRequestNoModelLoaded,
                        "No model is loaded.",
                    ),
                    Err(e) => fail(ErrorId::InternalServerError, &e.to_string()),
                }
            }
            "HotkeysInCurrentModelRequest" => {
                let current = host.current_model();
                match str_field(data, "modelID").filter(|s| !s.is_empty()) {
                    Some(m) if current.as_ref().is_none_or(|c| c.id != m) => {
                        let Some(other) = host.available_models().into_iter().find(|x| x.id == m)
                        else {
                            return fail(ErrorId::ModelIdNotFound, "No model has this ID.");
                        };
                        // Only the current model's hotkeys are known.
                        return reply(json!({
                            "modelLoaded": false, "modelName": other.name, "modelID": other.id,
                            "availableHotkeys": [],
                        }));
                    }
                    _ => {}
                }
                let hotkeys: Vec<Value> = if current.is_some() {
                    host.hotkeys().iter().map(hotkey_json).collect()
                } else {
                    Vec::new()
                };
                reply(merge(
                    model_fields(current.as_ref()),
                    json!({"availableHotkeys": hotkeys}),
                ))
            }
            "HotkeyTriggerRequest" => self.trigger(shared, data, now, &reply, &fail),
            "ExpressionStateRequest" => {
                let file = match data.get("expressionFile") {
                    None | Some(Value::Null) => "",
                    Some(Value::String(s)) => s.as_str(),
                    Some(_) => {
                        return fail(
                            ErrorId::ExpressionStateRequestInvalidFilename,
                            "expressionFile is not a string.",
                        )
                    }
                };
                let details = data.get("details").and_then(Value::as_bool) == Some(true);
                let current = host.current_model();
                let all = if current.is_some() {
                    host.expressions()
                } else {
                    Vec::new()
                };
                if !file.is_empty() && !all.iter().any(|e| e.file == file) {
                    return fail(
                        ErrorId::ExpressionStateRequestFileNotFound,
                        "The model has no such expression.",
                    );
                }
                let hotkeys = if details { host.hotkeys() } else { Vec::new() };
                let expressions: Vec<Value> = all
                    .iter()
                    .filter(|e| file.is_empty() || e.file == file)
                    .map(|e| {
                        let used: Vec<Value> = hotkeys
                            .iter()
                            .filter(|h| h.file == e.file)
                            .map(|h| json!({"name": h.name, "id": h.id}))
                            .collect();
                        json!({
                            "name": e.name,
                            "file": e.file,
                            "active": e.active,
                            "deactivateWhenKeyIsLetGo": false,
                            "autoDeactivateAfterSeconds": false,
                            "secondsRemaining": 0,
                            "usedInHotkeys": used,
                            "parameters": [],
                        })
                    })
                    .collect();
                reply(merge(
                    model_fields(current.as_ref()),
                    json!({"expressions": expressions}),
                ))
            }
            "ExpressionActivationRequest" => {
                let Some(file) = str_field(data, "expressionFile").filter(|f| !f.is_empty()) else {
                    return fail(
                        ErrorId::ExpressionActivationRequestInvalidFilename,
                        "expressionFile is missing or empty.",
                    );
                };
                if host.current_model().is_none() {
                    return fail(
                        ErrorId::ExpressionActivationRequestNoModelLoaded,
                        "No model is loaded.",
                    );
                }
                if !host.expressions().iter().any(|e| e.file == file) {
                    return fail(
                        ErrorId::ExpressionActivationRequestFileNotFound,
                        "The model has no such expression.",
                    );
                }
                let active = data.get("active").and_then(Value::as_bool).unwrap_or(true);
                let fade = data
                    .get("fadeTime")
                    .and_then(Value::as_f64)
                    .filter(|f| f.is_finite())
                    .unwrap_or(0.25)
                    .clamp(0.0, 2.0);
                match host.set_expression(file, active, Duration::from_secs_f64(fade)) {
                    Ok(applied) => after(reply(json!({})), applied),
                    Err(HostError::NoModel) => fail(
                        ErrorId::ExpressionActivationRequestNoModelLoaded,
                        "No model is loaded.",
                    ),
                    Err(HostError::NotFound) => fail(
                        ErrorId::ExpressionActivationRequestFileNotFound,
                        "The model has no such expression.",
                    ),
                    Err(e) => fail(ErrorId::InternalServerError, &e.to_string()),
                }
            }
            "FaceFoundRequest" => reply(json!({"found": host.tracking()})),
            "StatisticsRequest" => reply(json!({
                "uptime": now.saturating_duration_since(shared.started).as_millis() as u64,
                "framerate": 0,
                "vTubeStudioVersion": env!("CARGO_PKG_VERSION"),
                "allowedPlugins": shared.tokens.allowed().unwrap_or_else(|e| {
                    tracing::warn!(cause = %e, "cannot read the API tokens");
                    0
                }),
                "connectedPlugins": shared.plugins.load(Ordering::Relaxed),
                "startedWithSteam": false,
                "windowWidth": 0,
                "windowHeight": 0,
                "windowIsFullscreen": false,
            })),
            "InputParameterListRequest" => self.parameter_list(shared, now, &reply),
            "ParameterValueRequest" => self.parameter_value(shared, data, now, &reply, &fail),
            "InjectParameterDataRequest" => self.inject(shared, data, now, &reply, &fail),
            "ParameterCreationRequest" => self.create_param(shared, data, &reply, &fail),
            "ParameterDeletionRequest" => self.delete_param(shared, data, &reply, &fail),
            "EventSubscriptionRequest" => self.subscribe(id, data, &reply, &fail),
            _ => fail(ErrorId::InternalServerError, "Unhandled request."),
        }
    }

    fn token_request(&mut self, shared: &Shared, request: &Request) -> Step {
        let id = request.request_id.as_str();
        let data = &request.data;
        let fail = |error: ErrorId, text: &str| Step::Reply(protocol::error(id, error, text));
        let Some(plugin) = str_field(data, "pluginName").filter(|n| valid_name(n)) else {
            return fail(
                ErrorId::TokenRequestPluginNameInvalid,
                "pluginName must be 3 to 32 characters.",
            );
        };
        let Some(developer) = str_field(data, "pluginDeveloper").filter(|n| valid_name(n)) else {
            return fail(
                ErrorId::TokenRequestDeveloperNameInvalid,
                "pluginDeveloper must be 3 to 32 characters.",
            );
        };
        if !matches!(
            data.get("pluginIcon"),
            None | Some(Value::Null) | Some(Value::String(_))
        ) {
            return fail(
                ErrorId::TokenRequestPluginIconInvalid,
                "pluginIcon must be a base64 PNG or JPG.",
            );
        }
        if self.asking {
            return fail(
                ErrorId::TokenRequestCurrentlyOngoing,
                "A token request of this session waits for an answer.",
            );
        }
        let (plugin, developer) = (plugin.trim().to_string(), developer.trim().to_string());
        if shared.approve.iter().any(|a| a.trim() == plugin) {
            tracing::info!(plugin = %plugin, developer = %developer, "API plugin approved by the config");
            return Step::Reply(self.answered(shared, id, &plugin, &developer, true));
        }
        match shared.host.approve(&plugin, &developer) {
            Approval::Allow => Step::Reply(self.answered(shared, id, &plugin, &developer, true)),
            Approval::Deny => Step::Reply(self.answered(shared, id, &plugin, &developer, false)),
            Approval::Later(answer) => {
                self.asking = true;
                Step::Ask {
                    request_id: id.to_string(),
                    plugin,
                    developer,
                    answer,
                }
            }
        }
    }

    /// The answer to a token request once the host decided (`allowed`).
    pub fn answered(
        &mut self,
        shared: &Shared,
        request_id: &str,
        plugin: &str,
        developer: &str,
        allowed: bool,
    ) -> String {
        self.asking = false;
        if !allowed {
            tracing::info!(plugin, developer, "API plugin denied a token");
            return protocol::error(
                request_id,
                ErrorId::TokenRequestDenied,
                "User has denied API access for your plugin.",
            );
        }
        match shared.tokens.issue(plugin, developer) {
            Ok(token) => {
                tracing::info!(plugin, developer, file = %shared.tokens.path().display(), "API plugin given a token");
                protocol::message(
                    request_id,
                    "AuthenticationTokenResponse",
                    json!({"authenticationToken": token}),
                )
            }
            Err(e) => {
                tracing::warn!(plugin, cause = %e, "cannot store an API token");
                protocol::error(
                    request_id,
                    ErrorId::InternalServerError,
                    "facewire could not store the token.",
                )
            }
        }
    }

    fn authenticate(&mut self, shared: &Shared, request: &Request) -> Step {
        let id = request.request_id.as_str();
        let data = &request.data;
        let fail = |error: ErrorId, text: &str| Step::Reply(protocol::error(id, error, text));
        let Some(plugin) = str_field(data, "pluginName").map(str::trim) else {
            return fail(
                ErrorId::AuthenticationPluginNameMissing,
                "pluginName is missing.",
            );
        };
        let Some(developer) = str_field(data, "pluginDeveloper").map(str::trim) else {
            return fail(
                ErrorId::AuthenticationPluginDeveloperMissing,
                "pluginDeveloper is missing.",
            );
        };
        let Some(token) = str_field(data, "authenticationToken") else {
            return fail(
                ErrorId::AuthenticationTokenMissing,
                "authenticationToken is missing.",
            );
        };
        let ok = match shared.tokens.check(plugin, developer, token) {
            Ok(ok) => ok,
            Err(e) => {
                tracing::warn!(cause = %e, "cannot read the API tokens");
                return fail(
                    ErrorId::InternalServerError,
                    "facewire could not read its tokens.",
                );
            }
        };
        // A plugin revoked by hand loses the parameters it created.
        shared.prune_custom();
        let reason = if ok {
            tracing::info!(
                session = self.id,
                plugin,
                developer,
                "API plugin authenticated"
            );
            if self.auth.is_none() {
                shared.plugins.fetch_add(1, Ordering::Relaxed);
            }
            self.auth = Some((plugin.to_string(), developer.to_string()));
            "Token valid. The plugin is authenticated for the duration of this session."
        } else {
            tracing::info!(
                session = self.id,
                plugin,
                developer,
                "API plugin sent an unknown token"
            );
            "Token invalid or revoked. Request a new token."
        };
        Step::Reply(protocol::message(
            id,
            "AuthenticationResponse",
            json!({"authenticated": ok, "reason": reason}),
        ))
    }

    fn trigger(
        &mut self,
        shared: &Shared,
        data: &Map<String, Value>,
        now: Instant,
        reply: &dyn Fn(Value) -> Step,
        fail: &dyn Fn(ErrorId, &str) -> Step,
    ) -> Step {
        let host = &*shared.host;
        if str_field(data, "itemInstanceID").is_some_and(|s| !s.is_empty()) {
            return fail(
                ErrorId::HotkeyExecutionFailedBecauseLive2DItemNotFound,
                "facewire has no Live2D items.",
            );
        }
        let Some(model) = host.current_model() else {
            return fail(
                ErrorId::HotkeyExecutionFailedBecauseNoModelLoaded,
                "No model is loaded.",
            );
        };
        let wanted = str_field(data, "hotkeyID").unwrap_or("");
        let hotkeys = host.hotkeys();
        let Some(hotkey) = hotkeys.iter().find(|h| h.id == wanted).or_else(|| {
            hotkeys
                .iter()
                .find(|h| !h.name.is_empty() && h.name.eq_ignore_ascii_case(wanted))
        }) else {
            return fail(
                ErrorId::HotkeyIdNotFoundInModel,
                "The model has no hotkey with this ID or name.",
            );
        };
        {
            let mut cooldowns = shared.cooldowns.lock().unwrap_or_else(|p| p.into_inner());
            cooldowns.retain(|_, at| now.saturating_duration_since(*at) < HOTKEY_COOLDOWN);
            if cooldowns.contains_key(&hotkey.id) {
                return fail(
                    ErrorId::HotkeyCooldownNotOver,
                    "This hotkey was triggered a moment ago.",
                );
            }
            cooldowns.insert(hotkey.id.clone(), now);
        }
        match host.trigger_hotkey(&hotkey.id) {
            Ok(applied) => {
                // No subscriber is no error.
                let _ = shared.events.send(ApiEvent::HotkeyTriggered {
                    hotkey: hotkey.clone(),
                    model: Some(model),
                    by_api: true,
                });
                after(reply(json!({"hotkeyID": hotkey.id})), applied)
            }
            Err(HostError::NoModel) => fail(
                ErrorId::HotkeyExecutionFailedBecauseNoModelLoaded,
                "No model is loaded.",
            ),
            Err(HostError::NotFound) => fail(
                ErrorId::HotkeyIdNotFoundInModel,
                "The model has no hotkey with this ID or name.",
            ),
            Err(HostError::Busy) => fail(
                ErrorId::HotkeyExecutionFailedBecauseBadState,
                "The hotkey cannot run right now.",
            ),
            Err(HostError::Failed(e)) => fail(ErrorId::HotkeyUnknownExecutionFailure, &e),
        }
    }

    fn subscribe(
        &mut self,
        request_id: &str,
        data: &Map<String, Value>,
        reply: &dyn Fn(Value) -> Step,
        fail: &dyn Fn(ErrorId, &str) -> Step,
    ) -> Step {
        let name = str_field(data, "eventName").unwrap_or("");
        let on = data
            .get("subscribe")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let known = EVENTS.iter().find(|e| **e == name).copied();
        match (on, known) {
            (false, None) if name.is_empty() => self.subscriptions.clear(),
            (_, None) => {
                return fail(
                    ErrorId::EventSubscriptionRequestEventTypeUnknown,
                    &format!("facewire offers no event called \"{name}\"."),
                )
            }
            (true, Some(e)) => {
                let config = match data.get("config") {
                    Some(Value::Object(c)) => c.clone(),
                    _ => Map::new(),
                };
                self.subscriptions
                    .insert(e, (config, request_id.to_string()));
            }
            (false, Some(e)) => {
                self.subscriptions.remove(e);
            }
        }
        let names: Vec<&str> = self.subscriptions.keys().copied().collect();
        reply(json!({"subscribedEventCount": names.len(), "subscribedEvents": names}))
    }

    /// The message for `event`, when this session subscribed to it and its config lets it
    /// through.
    pub fn event(&self, event: &ApiEvent) -> Option<String> {
        let (name, data) = match event {
            ApiEvent::ModelLoaded { loaded, model } => {
                let (config, _) = self.subscriptions.get("ModelLoadedEvent")?;
                if let Some(ids) = config.get("modelID").and_then(Value::as_array) {
                    if !ids.is_empty() && !ids.iter().any(|i| i.as_str() == Some(&model.id)) {
                        return None;
                    }
                }
                (
                    "ModelLoadedEvent",
                    json!({"modelLoaded": loaded, "modelName": model.name, "modelID": model.id}),
                )
            }
            ApiEvent::TrackingStatusChanged { face_found } => {
                self.subscriptions.get("TrackingStatusChangedEvent")?;
                (
                    "TrackingStatusChangedEvent",
                    json!({"faceFound": face_found, "leftHandFound": false, "rightHandFound": false}),
                )
            }
            ApiEvent::HotkeyTriggered {
                hotkey,
                model,
                by_api,
            } => {
                let (config, _) = self.subscriptions.get("HotkeyTriggeredEvent")?;
                let only = str_field(config, "onlyForAction").filter(|a| !a.is_empty());
                if only.is_some_and(|a| a != hotkey.action) {
                    return None;
                }
                if *by_api
                    && config
                        .get("ignoreHotkeysTriggeredByAPI")
                        .and_then(Value::as_bool)
                        == Some(true)
                {
                    return None;
                }
                (
                    "HotkeyTriggeredEvent",
                    json!({
                        "hotkeyID": hotkey.id,
                        "hotkeyName": hotkey.name,
                        "hotkeyAction": hotkey.action,
                        "hotkeyFile": hotkey.file,
                        "hotkeyTriggeredByAPI": by_api,
                        "modelID": model.as_ref().map_or("", |m| m.id.as_str()),
                        "modelName": model.as_ref().map_or("", |m| m.name.as_str()),
                        "isLive2DItem": false,
                    }),
                )
            }
        };
        let (_, request_id) = self.subscriptions.get(name)?;
        Some(protocol::message(request_id, name, data))
    }
}

fn hotkey_json(h: &Hotkey) -> Value {
    json!({
        "name": h.name,
        "type": h.action,
        "description": h.description,
        "file": h.file,
        "hotkeyID": h.id,
        "keyCombination": [],
        "onScreenButtonID": -1,
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::api::{ExpressionState, Hotkey, ModelPosition};
    use crate::arkit::Channel;
    use crate::calibrate::at;

    /// A host that records what it is asked.
    #[derive(Default)]
    pub struct FakeHost {
        pub calls: Mutex<Vec<String>>,
        pub approve: Mutex<Option<bool>>,
        pub position: Mutex<ModelPosition>,
    }

    impl ApiHost for FakeHost {
        fn current_model(&self) -> Option<ModelInfo> {
            Some(ModelInfo {
                id: "m1".into(),
                name: "Alicia".into(),
                file: "Alicia.vrm".into(),
            })
        }
        fn available_models(&self) -> Vec<ModelInfo> {
            vec![self.current_model().unwrap()]
        }
        fn load_model(&self, id: &str) -> Result<(), HostError> {
            self.calls.lock().unwrap().push(format!("load {id}"));
            Ok(())
        }
        fn hotkeys(&self) -> Vec<Hotkey> {
            vec![Hotkey {
                id: "h1".into(),
                name: "Smile".into(),
                action: "ToggleExpression".into(),
                description: "Toggles an expression".into(),
                file: "happy".into(),
            }]
        }
        fn trigger_hotkey(&self, id: &str) -> Result<Applied, HostError> {
            self.calls.lock().unwrap().push(format!("hotkey {id}"));
            Ok(Applied::now())
        }
        fn expressions(&self) -> Vec<ExpressionState> {
            vec![ExpressionState {
                file: "happy".into(),
                name: "Happy".into(),
                active: false,
            }]
        }
        fn set_expression(
            &self,
            file: &str,
            active: bool,
            fade: Duration,
        ) -> Result<Applied, HostError> {
            self.calls
                .lock()
                .unwrap()
                .push(format!("expression {file} {active} {}", fade.as_secs_f32()));
            Ok(Applied::now())
        }
        fn tracking(&self) -> bool {
            true
        }
        fn model_position(&self) -> ModelPosition {
            *self.position.lock().unwrap()
        }
        fn move_model(&self, m: &ModelMove) -> Result<(), HostError> {
            let mut at = self.position.lock().unwrap();
            *at = at.moved(m);
            self.calls
                .lock()
                .unwrap()
                .push(format!("move {}", m.over.as_secs_f32()));
            Ok(())
        }
        fn approve(&self, _plugin: &str, _developer: &str) -> Approval {
            match *self.approve.lock().unwrap() {
                Some(true) => Approval::Allow,
                Some(false) => Approval::Deny,
                None => Approval::Later(oneshot::channel().1),
            }
        }
    }

    fn shared(dir: &std::path::Path, host: Arc<FakeHost>) -> Shared {
        Shared {
            host,
            tokens: TokenStore::open(&dir.join("tokens.toml")).unwrap(),
            injected: InjectedStore::new(),
            custom: Mutex::default(),
            approve: vec!["Approved Plugin".into()],
            events: broadcast::channel(8).0,
            cooldowns: Mutex::new(HashMap::new()),
            started: Instant::now(),
            plugins: AtomicUsize::new(0),
        }
    }

    fn request(kind: &str, data: Value) -> String {
        json!({"apiName": "VTubeStudioPublicAPI", "apiVersion": "1.0", "requestID": "r",
               "messageType": kind, "data": data})
        .to_string()
    }

    fn answer(step: Step) -> Value {
        match step {
            Step::Reply(text) | Step::After { reply: text, .. } => {
                serde_json::from_str(&text).unwrap()
            }
            Step::Ask { .. } => panic!("asked"),
        }
    }

    fn error_id(v: &Value) -> u64 {
        assert_eq!(v["messageType"], "APIError", "{v}");
        v["data"]["errorID"].as_u64().unwrap()
    }

    fn login(s: &mut Plugin, sh: &Shared, now: Instant) {
        let names = json!({"pluginName": "Approved Plugin", "pluginDeveloper": "Someone"});
        let r = answer(s.handle(
            sh,
            &request("AuthenticationTokenRequest", names.clone()),
            now,
        ));
        let token = r["data"]["authenticationToken"]
            .as_str()
            .unwrap()
            .to_string();
        let mut auth = names;
        auth["authenticationToken"] = json!(token);
        let r = answer(s.handle(sh, &request("AuthenticationRequest", auth), now));
        assert_eq!(r["data"]["authenticated"], true, "{r}");
    }

    #[test]
    fn requests_need_authentication() {
        let dir = tempfile::tempdir().unwrap();
        let sh = shared(dir.path(), Arc::default());
        let mut s = Plugin::new(1);
        let now = Instant::now();
        let r = answer(s.handle(
            &sh,
            &request("HotkeysInCurrentModelRequest", json!({})),
            now,
        ));
        assert_eq!(error_id(&r), 8);
        assert_eq!(r["requestID"], "r");
        let r = answer(s.handle(&sh, &request("NoSuchRequest", json!({})), now));
        assert_eq!(error_id(&r), 7);
        let r = answer(s.handle(&sh, &request("APIStateRequest", json!(null)), now));
        assert_eq!(r["messageType"], "APIStateResponse");
        assert_eq!(r["data"]["currentSessionAuthenticated"], false);
        let r = answer(s.handle(
            &sh,
            &request(
                "AuthenticationRequest",
                json!({"pluginName": "Approved Plugin", "pluginDeveloper": "Someone",
                       "authenticationToken": "guess"}),
            ),
            now,
        ));
        assert_eq!(r["data"]["authenticated"], false);
        login(&mut s, &sh, now);
        let r = answer(s.handle(&sh, &request("APIStateRequest", json!({})), now));
        assert_eq!(r["data"]["currentSessionAuthenticated"], true);
    }

    #[test]
    fn statistics_count_the_plugins_allowed_and_those_connected() {
        let dir = tempfile::tempdir().unwrap();
        let sh = shared(dir.path(), Arc::default());
        let t0 = Instant::now();
        let stats = |s: &mut Plugin| {
            let r = answer(s.handle(&sh, &request("StatisticsRequest", json!({})), t0));
            (
                r["data"]["allowedPlugins"].as_u64().unwrap(),
                r["data"]["connectedPlugins"].as_u64().unwrap(),
            )
        };
        let mut first = Plugin::new(1);
        login(&mut first, &sh, t0);
        assert_eq!(stats(&mut first), (1, 1));
        // A connection that has not authenticated is no plugin yet.
        let mut second = Plugin::new(2);
        answer(second.handle(&sh, &request("APIStateRequest", json!({})), t0));
        assert_eq!(stats(&mut first), (1, 1));
        // The same plugin again: still one allowed, two connected; another one allowed.
        login(&mut second, &sh, t0);
        assert_eq!(stats(&mut first), (1, 2));
        sh.tokens.issue("Other Plugin", "Someone").unwrap();
        assert_eq!(stats(&mut first), (2, 2));
        second.close(&sh);
        assert_eq!(stats(&mut first), (2, 1));
    }

    #[test]
    fn token_requests_are_checked_and_asked() {
        let dir = tempfile::tempdir().unwrap();
        let host = Arc::new(FakeHost::default());
        let sh = shared(dir.path(), host.clone());
        let mut s = Plugin::new(1);
        let now = Instant::now();
        let ask = |name: &str, dev: &str| {
            request(
                "AuthenticationTokenRequest",
                json!({"pluginName": name, "pluginDeveloper": dev}),
            )
        };
        assert_eq!(
            error_id(&answer(s.handle(&sh, &ask("ab", "Someone"), now))),
            52
        );
        assert_eq!(
            error_id(&answer(s.handle(&sh, &ask("Plugin", &"x".repeat(33)), now))),
            53
        );
        *host.approve.lock().unwrap() = Some(false);
        assert_eq!(
            error_id(&answer(s.handle(&sh, &ask("Plugin", "Someone"), now))),
            50
        );
        *host.approve.lock().unwrap() = None;
        let Step::Ask { request_id, .. } = s.handle(&sh, &ask("Plugin", "Someone"), now) else {
            panic!("not asked");
        };
        assert_eq!(request_id, "r");
        assert_eq!(
            error_id(&answer(s.handle(&sh, &ask("Plugin", "Someone"), now))),
            51
        );
        let r: Value =
            serde_json::from_str(&s.answered(&sh, "r", "Plugin", "Someone", true)).unwrap();
        assert_eq!(r["messageType"], "AuthenticationTokenResponse");
        assert!(matches!(
            s.handle(&sh, &ask("Plugin", "Someone"), now),
            Step::Ask { .. }
        ));
    }

    #[test]
    fn hotkeys_are_listed_and_triggered_by_id_or_name() {
        let dir = tempfile::tempdir().unwrap();
        let host = Arc::new(FakeHost::default());
        let sh = shared(dir.path(), host.clone());
        let mut events = sh.events.subscribe();
        let mut s = Plugin::new(1);
        let t0 = Instant::now();
        login(&mut s, &sh, t0);
        let r = answer(s.handle(&sh, &request("HotkeysInCurrentModelRequest", json!({})), t0));
        assert_eq!(r["data"]["availableHotkeys"][0]["hotkeyID"], "h1");
        assert_eq!(r["data"]["availableHotkeys"][0]["type"], "ToggleExpression");
        let trigger = |id: &str| request("HotkeyTriggerRequest", json!({"hotkeyID": id}));
        // The answer waits until the host has carried the trigger out.
        let step = s.handle(&sh, &trigger("h1"), t0);
        assert!(matches!(step, Step::After { .. }), "{step:?}");
        let r = answer(step);
        assert_eq!(r["data"]["hotkeyID"], "h1");
        assert_eq!(error_id(&answer(s.handle(&sh, &trigger("h1"), t0))), 203);
        let r = answer(s.handle(&sh, &trigger("SMILE"), at(t0, 0.1)));
        assert_eq!(r["data"]["hotkeyID"], "h1");
        assert_eq!(error_id(&answer(s.handle(&sh, &trigger("nope"), t0))), 202);
        assert_eq!(*host.calls.lock().unwrap(), ["hotkey h1", "hotkey h1"]);
        assert!(matches!(
            events.try_recv(),
            Ok(ApiEvent::HotkeyTriggered { by_api: true, .. })
        ));
    }

    #[test]
    fn injected_values_reach_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let sh = shared(dir.path(), Arc::default());
        let mut s = Plugin::new(1);
        let t0 = Instant::now();
        login(&mut s, &sh, t0);
        let inject = |data: Value| request("InjectParameterDataRequest", data);
        let r = answer(s.handle(
            &sh,
            &inject(json!({"parameterValues": [{"id": "jawOpen", "value": 0.5},
                                               {"id": "EyeOpenLeft", "value": 0.0, "weight": 0.5}]})),
            t0,
        ));
        assert_eq!(r["messageType"], "InjectParameterDataResponse", "{r}");
        let v = sh.injected.values(t0);
        assert_eq!(v.set.get(Channel::JawOpen), Some(0.5));
        assert_eq!(v.set.get(Channel::EyeBlinkLeft), Some(1.0));
        assert_eq!(v.weight[Channel::EyeBlinkLeft.index()], 0.5);
        assert!(sh.injected.values(at(t0, 1.5)).is_empty());
        let bad = [
            (json!({"parameterValues": []}), 450),
            (
                json!({"parameterValues": [{"id": "jawOpen", "value": 2e6}]}),
                451,
            ),
            (
                json!({"parameterValues": [{"id": "jawOpen", "value": "x"}]}),
                451,
            ),
            (
                json!({"parameterValues": [{"id": "jawOpen", "value": 1, "weight": 2}]}),
                452,
            ),
            (
                json!({"parameterValues": [{"id": "FaceAngleX", "value": 1}]}),
                453,
            ),
            (
                json!({"mode": "mul", "parameterValues": [{"id": "jawOpen", "value": 1}]}),
                455,
            ),
        ];
        for (data, id) in bad {
            assert_eq!(error_id(&answer(s.handle(&sh, &inject(data), t0))), id);
        }
        let mut other = Plugin::new(2);
        login(&mut other, &sh, t0);
        let r = answer(other.handle(
            &sh,
            &inject(json!({"parameterValues": [{"id": "MouthOpen", "value": 0.1}]})),
            t0,
        ));
        assert_eq!(error_id(&r), 454);
        let r = answer(s.handle(
            &sh,
            &request("ParameterValueRequest", json!({"name": "jaw_open"})),
            t0,
        ));
        assert_eq!(r["data"]["name"], "jawOpen");
        assert_eq!(r["data"]["value"], 0.5);
    }

    /// Logs `s` in as `plugin` (approved by the host) at `now`.
    fn login_as(s: &mut Plugin, sh: &Shared, plugin: &str, now: Instant) {
        let names = json!({"pluginName": plugin, "pluginDeveloper": "Someone"});
        let r = answer(s.handle(
            sh,
            &request("AuthenticationTokenRequest", names.clone()),
            now,
        ));
        let mut auth = names;
        auth["authenticationToken"] = r["data"]["authenticationToken"].clone();
        let r = answer(s.handle(sh, &request("AuthenticationRequest", auth), now));
        assert_eq!(r["data"]["authenticated"], true, "{r}");
    }

    #[test]
    fn plugins_create_delete_and_inject_parameters_of_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let host = Arc::new(FakeHost::default());
        *host.approve.lock().unwrap() = Some(true);
        let sh = shared(dir.path(), host);
        let t0 = Instant::now();
        let mut me = Plugin::new(1);
        login_as(&mut me, &sh, "Heart Rate", t0);
        let create = |name: &str| {
            request(
                "ParameterCreationRequest",
                json!({"parameterName": name, "explanation": "beats per minute",
                       "min": 40, "max": 200, "defaultValue": 60}),
            )
        };
        let r = answer(me.handle(&sh, &create("HeartRate"), t0));
        assert_eq!(r["messageType"], "ParameterCreationResponse", "{r}");
        assert_eq!(r["data"]["parameterName"], "HeartRate");
        let refused = [
            (create("Bad Name"), 350),
            (create("MouthOpen"), 354),
            (create("FaceAngleX"), 354),
            (
                request(
                    "ParameterCreationRequest",
                    json!({"parameterName": "NoValues"}),
                ),
                351,
            ),
            (
                request(
                    "ParameterCreationRequest",
                    json!({"parameterName": "Explained", "explanation": "x".repeat(300),
                           "min": 0, "max": 1, "defaultValue": 0}),
                ),
                353,
            ),
        ];
        for (message, id) in refused {
            assert_eq!(error_id(&answer(me.handle(&sh, &message, t0))), id);
        }
        // Another plugin can neither take its name nor delete it.
        let mut other = Plugin::new(2);
        login_as(&mut other, &sh, "Bonk Plugin", t0);
        assert_eq!(
            error_id(&answer(other.handle(&sh, &create("heartrate"), t0))),
            352
        );
        let delete =
            |name: &str| request("ParameterDeletionRequest", json!({"parameterName": name}));
        assert_eq!(
            error_id(&answer(other.handle(&sh, &delete("HeartRate"), t0))),
            402
        );
        assert_eq!(
            error_id(&answer(other.handle(&sh, &delete("MouthOpen"), t0))),
            403
        );
        assert_eq!(
            error_id(&answer(other.handle(&sh, &delete("Nothing"), t0))),
            401
        );

        // Injected like a built-in parameter: one plugin sets it, any may add.
        let inject = |mode: &str, value: f64| {
            request(
                "InjectParameterDataRequest",
                json!({"mode": mode, "parameterValues": [
                    {"id": "HeartRate", "value": value, "weight": 1},
                    {"id": "jawOpen", "value": 0.2}]}),
            )
        };
        let r = answer(me.handle(&sh, &inject("set", 120.0), t0));
        assert_eq!(r["messageType"], "InjectParameterDataResponse", "{r}");
        assert_eq!(sh.injected.values(t0).set.get(Channel::JawOpen), Some(0.2));
        assert_eq!(
            error_id(&answer(other.handle(&sh, &inject("set", 80.0), t0))),
            454
        );
        let add = request(
            "InjectParameterDataRequest",
            json!({"mode": "add", "parameterValues": [{"id": "HeartRate", "value": 5}]}),
        );
        answer(other.handle(&sh, &add, t0));
        let value = |s: &mut Plugin, t: Instant| {
            let r = answer(s.handle(
                &sh,
                &request("ParameterValueRequest", json!({"name": "heartrate"})),
                t,
            ));
            assert_eq!(r["data"]["addedBy"], "Heart Rate", "{r}");
            r["data"]["value"].as_f64().unwrap()
        };
        assert_eq!(value(&mut me, t0), 125.0);
        // Listed among the custom parameters, with its plugin.
        let r = answer(me.handle(&sh, &request("InputParameterListRequest", json!({})), t0));
        let listed: Vec<&Value> = r["data"]["customParameters"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["name"] == "HeartRate")
            .collect();
        assert_eq!(listed.len(), 1, "{r}");
        assert_eq!(listed[0]["addedBy"], "Heart Rate");
        assert_eq!(listed[0]["min"], 40.0);
        assert_eq!(listed[0]["defaultValue"], 60.0);
        // Not sent again: back to its default after a second.
        assert_eq!(value(&mut me, at(t0, 1.5)), 60.0);
        // Kept in the tokens file, for the next run.
        assert_eq!(sh.tokens.parameters().unwrap().len(), 1);
        // Deleted by its plugin: no longer injectable.
        let r = answer(me.handle(&sh, &delete("HEARTRATE"), t0));
        assert_eq!(r["data"]["parameterName"], "HeartRate", "{r}");
        assert_eq!(
            error_id(&answer(me.handle(&sh, &inject("set", 1.0), t0))),
            453
        );
        assert!(sh.tokens.parameters().unwrap().is_empty());
    }

    #[test]
    fn events_follow_subscriptions_and_their_config() {
        let dir = tempfile::tempdir().unwrap();
        let sh = shared(dir.path(), Arc::default());
        let mut s = Plugin::new(1);
        let t0 = Instant::now();
        login(&mut s, &sh, t0);
        let sub = |name: &str, on: bool, config: Value| {
            request(
                "EventSubscriptionRequest",
                json!({"eventName": name, "subscribe": on, "config": config}),
            )
        };
        let lost = ApiEvent::TrackingStatusChanged { face_found: false };
        assert!(s.event(&lost).is_none());
        let r = answer(s.handle(&sh, &sub("TrackingStatusChangedEvent", true, json!({})), t0));
        assert_eq!(r["data"]["subscribedEventCount"], 1);
        let e: Value = serde_json::from_str(&s.event(&lost).unwrap()).unwrap();
        assert_eq!(e["messageType"], "TrackingStatusChangedEvent");
        assert_eq!(e["data"]["faceFound"], false);
        assert_eq!(
            error_id(&answer(s.handle(
                &sh,
                &sub("TestEvent", true, json!({})),
                t0
            ))),
            950
        );
        answer(s.handle(
            &sh,
            &sub(
                "HotkeyTriggeredEvent",
                true,
                json!({"onlyForAction": "CalibrateCam"}),
            ),
            t0,
        ));
        let hotkey = ApiEvent::HotkeyTriggered {
            hotkey: FakeHost::default().hotkeys()[0].clone(),
            model: None,
            by_api: false,
        };
        assert!(s.event(&hotkey).is_none());
        answer(s.handle(&sh, &sub("HotkeyTriggeredEvent", true, json!({})), t0));
        assert!(s.event(&hotkey).is_some());
        let r = answer(s.handle(&sh, &sub("", false, json!({})), t0));
        assert_eq!(r["data"]["subscribedEventCount"], 0);
        assert!(s.event(&lost).is_none());
    }

    #[test]
    fn moves_are_checked_and_the_current_model_says_where_it_stands() {
        let dir = tempfile::tempdir().unwrap();
        let host = Arc::new(FakeHost::default());
        let sh = shared(dir.path(), host.clone());
        let mut s = Plugin::new(1);
        let t0 = Instant::now();
        login(&mut s, &sh, t0);
        let send = |s: &mut Plugin, data: Value| {
            answer(s.handle(&sh, &request("MoveModelRequest", data), t0))
        };
        let r = send(
            &mut s,
            json!({"timeInSeconds": 0.2, "valuesAreRelativeToModel": false,
                   "positionX": 0.1, "positionY": -0.7, "rotation": 16.3, "size": -22.5}),
        );
        assert_eq!(r["messageType"], "MoveModelResponse", "{r}");
        // Relative: only the rotation changes, turning past 360 and back to the positive form.
        send(
            &mut s,
            json!({"timeInSeconds": 0, "valuesAreRelativeToModel": true, "rotation": -20}),
        );
        let r = answer(s.handle(&sh, &request("CurrentModelRequest", json!({})), t0));
        let at = &r["data"]["modelPosition"];
        assert_eq!(at["positionX"], 0.1, "{r}");
        assert_eq!(at["positionY"], -0.7, "{r}");
        assert!(
            (at["rotation"].as_f64().unwrap() - 356.3).abs() < 1e-3,
            "{r}"
        );
        assert_eq!(at["size"], -22.5, "{r}");
        let refused = [
            (json!({"valuesAreRelativeToModel": false}), 301),
            (json!({"timeInSeconds": 1}), 301),
            (
                json!({"timeInSeconds": 3, "valuesAreRelativeToModel": false}),
                302,
            ),
            (
                json!({"timeInSeconds": 1, "valuesAreRelativeToModel": false, "positionX": 1001}),
                302,
            ),
            (
                json!({"timeInSeconds": 1, "valuesAreRelativeToModel": false, "rotation": -361}),
                302,
            ),
            (
                json!({"timeInSeconds": 1, "valuesAreRelativeToModel": false, "size": "big"}),
                302,
            ),
        ];
        for (data, id) in refused {
            assert_eq!(error_id(&send(&mut s, data)), id);
        }
        assert_eq!(*host.calls.lock().unwrap(), ["move 0.2", "move 0"]);
        // Color tints have no ArtMeshes to work on.
        let r = answer(s.handle(&sh, &request("ColorTintRequest", json!({})), t0));
        assert_eq!(error_id(&r), 7);
        assert!(r["data"]["message"].as_str().unwrap().contains("ArtMesh"));
    }

    #[test]
    fn expressions_and_models() {
        let dir = tempfile::tempdir().unwrap();
        let host = Arc::new(FakeHost::default());
        let sh = shared(dir.path(), host.clone());
        let mut s = Plugin::new(1);
        let t0 = Instant::now();
        login(&mut s, &sh, t0);
        let r = answer(s.handle(
            &sh,
            &request("ExpressionStateRequest", json!({"details": true})),
            t0,
        ));
        assert_eq!(r["data"]["expressions"][0]["file"], "happy");
        assert_eq!(r["data"]["expressions"][0]["usedInHotkeys"][0]["id"], "h1");
        let r = answer(s.handle(
            &sh,
            &request(
                "ExpressionActivationRequest",
                json!({"expressionFile": "happy", "active": true, "fadeTime": 9}),
            ),
            t0,
        ));
        assert_eq!(r["messageType"], "ExpressionActivationResponse");
        let r = answer(s.handle(
            &sh,
            &request(
                "ExpressionActivationRequest",
                json!({"expressionFile": "sad"}),
            ),
            t0,
        ));
        assert_eq!(error_id(&r), 651);
        let r = answer(s.handle(&sh, &request("CurrentModelRequest", json!({})), t0));
        assert_eq!(r["data"]["modelID"], "m1");
        let r = answer(s.handle(
            &sh,
            &request("ModelLoadRequest", json!({"modelID": "m2"})),
            t0,
        ));
        assert_eq!(error_id(&r), 152);
        let r = answer(s.handle(&sh, &request("ModelLoadRequest", json!({})), t0));
        assert_eq!(error_id(&r), 150);
        let r = answer(s.handle(
            &sh,
            &request("ModelLoadRequest", json!({"modelID": "m1"})),
            t0,
        ));
        assert_eq!(r["data"]["modelID"], "m1");
        assert_eq!(
            *host.calls.lock().unwrap(),
            ["expression happy true 2", "load m1"]
        );
        let r = answer(s.handle(&sh, &request("InputParameterListRequest", json!({})), t0));
        assert_eq!(r["data"]["defaultParameters"][0]["name"], "MouthOpen");
        assert_eq!(r["data"]["customParameters"].as_array().unwrap().len(), 52);
    }
}

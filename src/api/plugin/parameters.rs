//! The requests about input parameters: the list, one value, injected values, and the
//! parameters plugins create and delete.

use std::time::Instant;

use serde_json::{json, Map, Value};

use super::{merge, model_fields, number, str_field, Plugin, Shared, Step};
use crate::api::custom::{CreateError, CustomParam, CustomParams, DeleteError, NewParam};
use crate::api::params::{self, Param};
use crate::api::protocol::ErrorId;
use crate::api::{CustomValue, InjectError, InjectMode, ParamValue};

fn param_json(p: &Param, value: f32) -> Value {
    json!({
        "name": p.name,
        "addedBy": "facewire",
        "value": number(value),
        "min": number(p.min),
        "max": number(p.max),
        "defaultValue": number(p.default),
    })
}

fn custom_json(p: &CustomParam, value: f32) -> Value {
    json!({
        "name": p.name,
        "addedBy": p.plugin,
        "value": number(value),
        "min": number(p.min),
        "max": number(p.max),
        "defaultValue": number(p.default),
    })
}

impl Shared {
    /// The parameters plugins created, locked.
    fn custom(&self) -> std::sync::MutexGuard<'_, CustomParams> {
        self.custom.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps the parameters plugins created in the tokens file.
    fn save_custom(&self, custom: &CustomParams) {
        if let Err(e) = self.tokens.save_parameters(custom.all()) {
            tracing::warn!(cause = %e, "cannot store the parameters plugins created");
        }
    }

    /// Drops the parameters of plugins whose token was revoked (their entry removed from the
    /// tokens file), as VTube Studio does.
    pub(super) fn prune_custom(&self) {
        let Ok(allowed) = self.tokens.allowed_plugins() else {
            return;
        };
        let mut custom = self.custom();
        let gone = custom.retain_allowed(allowed);
        if !gone.is_empty() {
            for p in &gone {
                self.injected.lock().forget(&p.key());
            }
            tracing::info!(
                parameters = gone.len(),
                "parameters of revoked plugins removed"
            );
            self.save_custom(&custom);
        }
    }
}

/// `text` with its first letter in upper case, for an error's message.
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
}

impl Plugin {
    /// `InputParameterListRequest`: every parameter and its value at `now`.
    pub(super) fn parameter_list(
        &self,
        shared: &Shared,
        now: Instant,
        reply: &dyn Fn(Value) -> Step,
    ) -> Step {
        let created = shared.custom().all().to_vec();
        let injected = shared.injected.lock();
        let (mut defaults, mut custom) = (Vec::new(), Vec::new());
        for p in params::all() {
            let entry = param_json(p, injected.param_value(p, now));
            if p.vts {
                defaults.push(entry);
            } else {
                custom.push(entry);
            }
        }
        for p in &created {
            custom.push(custom_json(
                p,
                injected.custom_value(&p.key(), p.default, now),
            ));
        }
        drop(injected);
        reply(merge(
            model_fields(shared.host.current_model().as_ref()),
            json!({"customParameters": custom, "defaultParameters": defaults}),
        ))
    }

    /// `ParameterValueRequest`: one parameter and its value at `now`.
    pub(super) fn parameter_value(
        &self,
        shared: &Shared,
        data: &Map<String, Value>,
        now: Instant,
        reply: &dyn Fn(Value) -> Step,
        fail: &dyn Fn(ErrorId, &str) -> Step,
    ) -> Step {
        let name = str_field(data, "name").unwrap_or("");
        if let Some(p) = params::lookup(name) {
            let value = shared.injected.lock().param_value(p, now);
            return reply(param_json(p, value));
        }
        let Some(p) = shared.custom().get(name).cloned() else {
            return fail(
                ErrorId::ParameterValueRequestParameterNotFound,
                "No parameter has this name.",
            );
        };
        let value = shared
            .injected
            .lock()
            .custom_value(&p.key(), p.default, now);
        reply(custom_json(&p, value))
    }

    /// `InjectParameterDataRequest`: values for built-in parameters and those plugins created.
    pub(super) fn inject(
        &mut self,
        shared: &Shared,
        data: &Map<String, Value>,
        now: Instant,
        reply: &dyn Fn(Value) -> Step,
        fail: &dyn Fn(ErrorId, &str) -> Step,
    ) -> Step {
        let mode = match data.get("mode") {
            None | Some(Value::Null) => InjectMode::Set,
            Some(Value::String(m)) if m == "set" => InjectMode::Set,
            Some(Value::String(m)) if m == "add" => InjectMode::Add,
            Some(_) => {
                return fail(
                    ErrorId::InjectDataModeUnknown,
                    "mode must be \"set\" or \"add\".",
                )
            }
        };
        let face_found = data.get("faceFound").and_then(Value::as_bool) == Some(true);
        let Some(list) = data
            .get("parameterValues")
            .and_then(Value::as_array)
            .filter(|l| !l.is_empty())
        else {
            return fail(
                ErrorId::InjectDataNoDataProvided,
                "parameterValues is missing or empty.",
            );
        };
        let mut values = Vec::with_capacity(list.len());
        let mut custom = Vec::new();
        let created = shared.custom();
        for item in list {
            let id = item.get("id").and_then(Value::as_str).unwrap_or("");
            let param = params::lookup(id);
            let key = param
                .is_none()
                .then(|| created.get(id).map(CustomParam::key))
                .flatten();
            if param.is_none() && key.is_none() {
                return fail(
                    ErrorId::InjectDataParamNameNotFound,
                    &format!("No parameter is called \"{id}\"."),
                );
            }
            let Some(value) = item
                .get("value")
                .and_then(Value::as_f64)
                .filter(|v| v.is_finite() && v.abs() <= crate::api::inject::VALUE_LIMIT)
            else {
                return fail(
                    ErrorId::InjectDataValueInvalid,
                    "Values must be numbers between -1000000 and 1000000.",
                );
            };
            let weight = match item.get("weight") {
                None | Some(Value::Null) => 1.0,
                Some(w) => match w.as_f64().filter(|w| (0.0..=1.0).contains(w)) {
                    Some(w) => w,
                    None => {
                        return fail(
                            ErrorId::InjectDataWeightInvalid,
                            "Weights must be numbers between 0 and 1.",
                        )
                    }
                },
            };
            match (param, key) {
                (Some(param), _) => values.push(ParamValue {
                    param,
                    value: value as f32,
                    weight: weight as f32,
                }),
                (None, Some(key)) => custom.push(CustomValue {
                    key,
                    value: value as f32,
                    weight: weight as f32,
                }),
                (None, None) => unreachable!("refused above"),
            }
        }
        drop(created);
        let result = shared
            .injected
            .lock()
            .inject_all(self.id, mode, &values, &custom, face_found, now);
        match result {
            Ok(()) => reply(json!({})),
            Err(InjectError::Owned { channel }) => fail(
                ErrorId::InjectDataParamControlledByOtherPlugin,
                &format!("Another plugin sets {channel}."),
            ),
            Err(InjectError::OwnedParam { key }) => {
                let name = shared.custom().get(&key).map_or(key, |p| p.name.clone());
                fail(
                    ErrorId::InjectDataParamControlledByOtherPlugin,
                    &format!("Another plugin sets {name}."),
                )
            }
        }
    }

    /// `ParameterCreationRequest`: a parameter of this plugin's, created or set anew.
    pub(super) fn create_param(
        &mut self,
        shared: &Shared,
        data: &Map<String, Value>,
        reply: &dyn Fn(Value) -> Step,
        fail: &dyn Fn(ErrorId, &str) -> Step,
    ) -> Step {
        let Some((plugin, developer)) = self.auth.clone() else {
            return fail(
                ErrorId::RequestRequiresAuthentication,
                "This request requires an authenticated session.",
            );
        };
        let Some(name) = str_field(data, "parameterName") else {
            return fail(
                ErrorId::CustomParamNameInvalid,
                "parameterName is missing or not a string.",
            );
        };
        let explanation = match data.get("explanation") {
            None | Some(Value::Null) => "",
            Some(Value::String(e)) => e.as_str(),
            Some(_) => {
                return fail(
                    ErrorId::CustomParamExplanationTooLong,
                    "explanation must be a string shorter than 256 characters.",
                )
            }
        };
        let number = |key: &str| data.get(key).and_then(Value::as_f64).unwrap_or(f64::NAN);
        let new = NewParam {
            name,
            explanation,
            min: number("min"),
            max: number("max"),
            default: number("defaultValue"),
        };
        let mut custom = shared.custom();
        let made = custom
            .create((&plugin, &developer), &new)
            .map(|(p, changed)| {
                shared.injected.lock().declare(p);
                (p.name.clone(), changed)
            });
        match made {
            Ok((name, changed)) => {
                if changed {
                    shared.save_custom(&custom);
                    tracing::info!(parameter = %name, plugin = %plugin, "a plugin created a parameter");
                }
                reply(json!({"parameterName": name}))
            }
            Err(e) => {
                let id = match e {
                    CreateError::Name => ErrorId::CustomParamNameInvalid,
                    CreateError::Values => ErrorId::CustomParamValuesInvalid,
                    CreateError::Taken { .. } => ErrorId::CustomParamAlreadyCreatedByOtherPlugin,
                    CreateError::Explanation => ErrorId::CustomParamExplanationTooLong,
                    CreateError::Reserved(_) => ErrorId::CustomParamDefaultParamNameNotAllowed,
                    CreateError::PluginLimit => ErrorId::CustomParamLimitPerPluginExceeded,
                    CreateError::TotalLimit => ErrorId::CustomParamLimitTotalExceeded,
                };
                fail(id, &format!("{}.", capitalised(&e.to_string())))
            }
        }
    }

    /// `ParameterDeletionRequest`: a parameter this plugin created, deleted.
    pub(super) fn delete_param(
        &mut self,
        shared: &Shared,
        data: &Map<String, Value>,
        reply: &dyn Fn(Value) -> Step,
        fail: &dyn Fn(ErrorId, &str) -> Step,
    ) -> Step {
        let Some((plugin, developer)) = self.auth.clone() else {
            return fail(
                ErrorId::RequestRequiresAuthentication,
                "This request requires an authenticated session.",
            );
        };
        let name = str_field(data, "parameterName").unwrap_or("");
        let mut custom = shared.custom();
        match custom.delete((&plugin, &developer), name) {
            Ok(gone) => {
                shared.injected.lock().forget(&gone.key());
                shared.save_custom(&custom);
                tracing::info!(parameter = %gone.name, plugin = %plugin, "a plugin deleted a parameter");
                reply(json!({"parameterName": gone.name}))
            }
            Err(e) => {
                let id = match e {
                    DeleteError::Name => ErrorId::CustomParamDeletionNameInvalid,
                    DeleteError::NotFound => ErrorId::CustomParamDeletionNotFound,
                    DeleteError::Owned { .. } => ErrorId::CustomParamDeletionCreatedByOtherPlugin,
                    DeleteError::Reserved(_) => {
                        ErrorId::CustomParamDeletionCannotDeleteDefaultParam
                    }
                };
                fail(id, &format!("{}.", capitalised(&e.to_string())))
            }
        }
    }
}

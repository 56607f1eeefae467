//! VTube Studio's message envelope: requests checked field by field, responses and `APIError`s
//! with the error IDs of VTube Studio's `ErrorID.cs`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

/// The `apiName` of every message.
pub const API_NAME: &str = "VTubeStudioPublicAPI";
/// The `apiVersion` of every message.
pub const API_VERSION: &str = "1.0";

/// VTube Studio's error IDs (`Files/ErrorID.cs`), those this server answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum ErrorId {
    /// Something went wrong on our side.
    InternalServerError = 0,
    /// The message is not a JSON object.
    JsonInvalid = 2,
    /// `apiName` is not `VTubeStudioPublicAPI`.
    ApiNameInvalid = 3,
    /// `apiVersion` is not `1.0`.
    ApiVersionInvalid = 4,
    /// `requestID` is not 1 to 64 ASCII characters.
    RequestIdInvalid = 5,
    /// `messageType` is missing or empty.
    RequestTypeMissingOrEmpty = 6,
    /// `messageType` names no request this server knows.
    RequestTypeUnknown = 7,
    /// The session has not authenticated.
    RequestRequiresAuthentication = 8,
    /// The user (or the host) denied the plugin a token.
    TokenRequestDenied = 50,
    /// This session already waits for an answer to a token request.
    TokenRequestCurrentlyOngoing = 51,
    /// `pluginName` is not 3 to 32 characters.
    TokenRequestPluginNameInvalid = 52,
    /// `pluginDeveloper` is not 3 to 32 characters.
    TokenRequestDeveloperNameInvalid = 53,
    /// `pluginIcon` is not a string.
    TokenRequestPluginIconInvalid = 54,
    /// `authenticationToken` is missing.
    AuthenticationTokenMissing = 100,
    /// `pluginName` is missing.
    AuthenticationPluginNameMissing = 101,
    /// `pluginDeveloper` is missing.
    AuthenticationPluginDeveloperMissing = 102,
    /// `modelID` is missing.
    ModelIdMissing = 150,
    /// `modelID` is not a string.
    ModelIdInvalid = 151,
    /// No model has that ID.
    ModelIdNotFound = 152,
    /// A model cannot be loaded right now.
    CannotCurrentlyChangeModel = 154,
    /// No model is loaded.
    HotkeyExecutionFailedBecauseNoModelLoaded = 201,
    /// No hotkey of the model has that ID or name.
    HotkeyIdNotFoundInModel = 202,
    /// The same hotkey was triggered too soon after the last time.
    HotkeyCooldownNotOver = 203,
    /// The hotkey cannot run right now.
    HotkeyExecutionFailedBecauseBadState = 205,
    /// The hotkey failed.
    HotkeyUnknownExecutionFailure = 206,
    /// Live2D items are not offered.
    HotkeyExecutionFailedBecauseLive2DItemNotFound = 207,
    /// No model is loaded to move.
    MoveModelRequestNoModelLoaded = 300,
    /// `timeInSeconds` or `valuesAreRelativeToModel` is missing.
    MoveModelRequestMissingFields = 301,
    /// A value is out of its range (time 0 to 2 s, positions ±1000, rotation ±360, size ±100).
    MoveModelRequestValuesOutOfRange = 302,
    /// `parameterName` is not 4 to 32 letters and digits.
    CustomParamNameInvalid = 350,
    /// `min`, `max` or `defaultValue` is not a number within ±1 000 000.
    CustomParamValuesInvalid = 351,
    /// Another plugin created a parameter of that name.
    CustomParamAlreadyCreatedByOtherPlugin = 352,
    /// `explanation` is 256 characters or longer.
    CustomParamExplanationTooLong = 353,
    /// The name is a default parameter's.
    CustomParamDefaultParamNameNotAllowed = 354,
    /// The plugin created 100 parameters already.
    CustomParamLimitPerPluginExceeded = 355,
    /// Plugins created 300 parameters already.
    CustomParamLimitTotalExceeded = 356,
    /// `parameterName` is missing or not a parameter name.
    CustomParamDeletionNameInvalid = 400,
    /// No plugin created a parameter of that name.
    CustomParamDeletionNotFound = 401,
    /// Another plugin created it.
    CustomParamDeletionCreatedByOtherPlugin = 402,
    /// Default parameters cannot be deleted.
    CustomParamDeletionCannotDeleteDefaultParam = 403,
    /// `parameterValues` is missing or empty.
    InjectDataNoDataProvided = 450,
    /// A value is not a number within ±1 000 000.
    InjectDataValueInvalid = 451,
    /// A weight is not a number from 0 to 1.
    InjectDataWeightInvalid = 452,
    /// No parameter has that ID.
    InjectDataParamNameNotFound = 453,
    /// Another plugin sets that parameter.
    InjectDataParamControlledByOtherPlugin = 454,
    /// `mode` is neither `set` nor `add`.
    InjectDataModeUnknown = 455,
    /// No parameter has that name.
    ParameterValueRequestParameterNotFound = 500,
    /// `expressionFile` is not a string.
    ExpressionStateRequestInvalidFilename = 600,
    /// The model has no such expression.
    ExpressionStateRequestFileNotFound = 601,
    /// `expressionFile` is missing or empty.
    ExpressionActivationRequestInvalidFilename = 650,
    /// The model has no such expression.
    ExpressionActivationRequestFileNotFound = 651,
    /// No model is loaded.
    ExpressionActivationRequestNoModelLoaded = 652,
    /// `eventName` names no event this server offers.
    EventSubscriptionRequestEventTypeUnknown = 950,
}

impl ErrorId {
    /// The number sent as `errorID`.
    pub fn code(self) -> u32 {
        self as u32
    }
}

/// A request whose envelope is valid.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// `requestID`, or one made up when the request had none.
    pub request_id: String,
    /// `messageType`.
    pub message_type: String,
    /// `data`, an empty object when missing or null.
    pub data: Map<String, Value>,
}

/// A request refused before it was read: the answer's request ID, error and message.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The request's ID, or one made up.
    pub request_id: String,
    /// Why.
    pub error: ErrorId,
    /// Said to the plugin.
    pub message: String,
}

/// A request ID for a request that had none (VTube Studio makes one up too).
fn made_up_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("facewire-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Whether `id` is a valid request ID: 1 to 64 ASCII characters.
fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.is_ascii()
}

/// Checks a message's envelope, in VTube Studio's order: JSON, `apiName`, `apiVersion`,
/// `requestID`, `messageType`.
pub fn parse(text: &str) -> Result<Request, Refusal> {
    let refuse = |request_id: String, error: ErrorId, message: &str| Refusal {
        request_id,
        error,
        message: message.to_string(),
    };
    let Ok(Value::Object(mut message)) = serde_json::from_str::<Value>(text) else {
        return Err(refuse(
            made_up_id(),
            ErrorId::JsonInvalid,
            "The message is not a JSON object.",
        ));
    };
    let request_id = match message.get("requestID") {
        None | Some(Value::Null) => Ok(made_up_id()),
        Some(Value::String(id)) if valid_id(id) => Ok(id.clone()),
        Some(_) => Err(()),
    };
    let reply_id = request_id.clone().unwrap_or_else(|()| made_up_id());
    if message.get("apiName").and_then(Value::as_str) != Some(API_NAME) {
        return Err(refuse(
            reply_id,
            ErrorId::ApiNameInvalid,
            "apiName must be \"VTubeStudioPublicAPI\".",
        ));
    }
    if message.get("apiVersion").and_then(Value::as_str) != Some(API_VERSION) {
        return Err(refuse(
            reply_id,
            ErrorId::ApiVersionInvalid,
            "apiVersion must be \"1.0\".",
        ));
    }
    let Ok(request_id) = request_id else {
        return Err(refuse(
            reply_id,
            ErrorId::RequestIdInvalid,
            "requestID must be 1 to 64 ASCII characters.",
        ));
    };
    let message_type = match message.get("messageType").and_then(Value::as_str) {
        Some(t) if !t.trim().is_empty() => t.to_string(),
        _ => {
            return Err(refuse(
                request_id,
                ErrorId::RequestTypeMissingOrEmpty,
                "messageType is missing or empty.",
            ))
        }
    };
    let data = match message.remove("data") {
        Some(Value::Object(data)) => data,
        _ => Map::new(),
    };
    Ok(Request {
        request_id,
        message_type,
        data,
    })
}

/// Milliseconds since the Unix epoch, for `timestamp`.
fn timestamp() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A message to a plugin: a response, an event or an error.
pub fn message(request_id: &str, message_type: &str, data: Value) -> String {
    json!({
        "apiName": API_NAME,
        "apiVersion": API_VERSION,
        "timestamp": timestamp(),
        "requestID": request_id,
        "messageType": message_type,
        "data": data,
    })
    .to_string()
}

/// An `APIError` answering `request_id`.
pub fn error(request_id: &str, error: ErrorId, text: &str) -> String {
    message(
        request_id,
        "APIError",
        json!({ "errorID": error.code(), "message": text }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> Refusal {
        parse(text).unwrap_err()
    }

    #[test]
    fn a_valid_request_is_read() {
        let r = parse(
            r#"{"apiName":"VTubeStudioPublicAPI","apiVersion":"1.0","requestID":"abc",
                "messageType":"APIStateRequest","unknown":1}"#,
        )
        .unwrap();
        assert_eq!(r.request_id, "abc");
        assert_eq!(r.message_type, "APIStateRequest");
        assert!(r.data.is_empty());
        let r = parse(
            r#"{"apiName":"VTubeStudioPublicAPI","apiVersion":"1.0",
                "messageType":"X","data":{"a":1}}"#,
        )
        .unwrap();
        assert!(r.request_id.starts_with("facewire-"));
        assert_eq!(r.data["a"], 1);
    }

    #[test]
    fn envelope_errors_carry_vtube_studios_ids() {
        assert_eq!(refused("{").error, ErrorId::JsonInvalid);
        assert_eq!(refused("[1,2]").error, ErrorId::JsonInvalid);
        assert_eq!(refused("").error, ErrorId::JsonInvalid);
        assert_eq!(
            refused(r#"{"apiName":"Other","apiVersion":"1.0","messageType":"X"}"#).error,
            ErrorId::ApiNameInvalid
        );
        assert_eq!(
            refused(r#"{"apiName":"VTubeStudioPublicAPI","apiVersion":"2.0","messageType":"X"}"#)
                .error,
            ErrorId::ApiVersionInvalid
        );
        let long = "x".repeat(65);
        let r = refused(&format!(
            r#"{{"apiName":"VTubeStudioPublicAPI","apiVersion":"1.0","requestID":"{long}","messageType":"X"}}"#
        ));
        assert_eq!(r.error, ErrorId::RequestIdInvalid);
        assert_ne!(r.request_id, long);
        assert_eq!(
            refused(r#"{"apiName":"VTubeStudioPublicAPI","apiVersion":"1.0","requestID":7,"messageType":"X"}"#)
                .error,
            ErrorId::RequestIdInvalid
        );
        let r = refused(
            r#"{"apiName":"VTubeStudioPublicAPI","apiVersion":"1.0","requestID":"q","messageType":" "}"#,
        );
        assert_eq!(r.error, ErrorId::RequestTypeMissingOrEmpty);
        assert_eq!(r.request_id, "q");
    }

    #[test]
    fn errors_are_api_error_messages() {
        let e: Value =
            serde_json::from_str(&error("q", ErrorId::RequestRequiresAuthentication, "m")).unwrap();
        assert_eq!(e["messageType"], "APIError");
        assert_eq!(e["requestID"], "q");
        assert_eq!(e["apiName"], API_NAME);
        assert_eq!(e["data"]["errorID"], 8);
        assert!(e["timestamp"].as_u64().unwrap() > 1_600_000_000_000);
    }
}

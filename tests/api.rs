//! The VTube Studio-compatible API over real loopback WebSockets, driven by tokio-tungstenite's
//! client: authentication and tokens across a restart, hotkeys against a recording host,
//! injected parameters, events, and hostile clients.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use facewire::api::{
    spawn, ApiConfig, ApiEvent, ApiHandle, ApiHost, Applied, Approval, ExpressionState, HostError,
    Hotkey, InjectedStore, Limits, ModelInfo, ModelMove, ModelPosition,
};
use facewire::arkit::Channel;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// How long a test waits for something that should happen within milliseconds.
const WAIT: Duration = Duration::from_secs(10);

type Client = WebSocketStream<TcpStream>;

/// A host that records what it is asked; token requests not in `approve` wait for the test.
#[derive(Default)]
struct RecordingHost {
    calls: Mutex<Vec<String>>,
    asked: Mutex<Vec<oneshot::Sender<bool>>>,
}

impl ApiHost for RecordingHost {
    fn current_model(&self) -> Option<ModelInfo> {
        Some(ModelInfo {
            id: "d8ee771d2909873b1aa0226d03ef4f51".into(),
            name: "Alicia".into(),
            file: "AliciaSolid.vrm".into(),
        })
    }
    fn available_models(&self) -> Vec<ModelInfo> {
        self.current_model().into_iter().collect()
    }
    fn load_model(&self, id: &str) -> Result<(), HostError> {
        self.calls.lock().unwrap().push(format!("load {id}"));
        Ok(())
    }
    fn hotkeys(&self) -> Vec<Hotkey> {
        vec![
            Hotkey {
                id: "h-smile".into(),
                name: "Smile".into(),
                action: "ToggleExpression".into(),
                description: "Toggles an expression".into(),
                file: "Joy".into(),
            },
            Hotkey {
                id: "h-calibrate".into(),
                name: "Recentre".into(),
                action: "CalibrateCam".into(),
                description: "Captures the neutral face".into(),
                file: String::new(),
            },
        ]
    }
    fn trigger_hotkey(&self, id: &str) -> Result<Applied, HostError> {
        self.calls.lock().unwrap().push(format!("hotkey {id}"));
        Ok(Applied::now())
    }
    fn expressions(&self) -> Vec<ExpressionState> {
        vec![ExpressionState {
            file: "Joy".into(),
            name: "Joy".into(),
            active: false,
        }]
    }
    fn set_expression(
        &self,
        file: &str,
        active: bool,
        _fade: Duration,
    ) -> Result<Applied, HostError> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("expression {file} {active}"));
        Ok(Applied::now())
    }
    fn tracking(&self) -> bool {
        true
    }
    fn model_position(&self) -> ModelPosition {
        ModelPosition::default()
    }
    fn move_model(&self, m: &ModelMove) -> Result<(), HostError> {
        self.calls.lock().unwrap().push(format!("move {:?}", m.x));
        Ok(())
    }
    fn approve(&self, _plugin: &str, _developer: &str) -> Approval {
        let (tx, rx) = oneshot::channel();
        self.asked.lock().unwrap().push(tx);
        Approval::Later(rx)
    }
}

struct Server {
    handle: ApiHandle,
    host: Arc<RecordingHost>,
    injected: InjectedStore,
    _dir: Option<tempfile::TempDir>,
}

fn config(dir: &std::path::Path) -> ApiConfig {
    ApiConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        approve: vec!["Streamer.bot".into()],
        tokens: dir.join("api_tokens.toml"),
        ..ApiConfig::default()
    }
}

fn start_in(dir: &std::path::Path, limits: Limits) -> Server {
    let host = Arc::new(RecordingHost::default());
    let injected = InjectedStore::new();
    let handle = spawn(&config(dir), host.clone(), injected.clone(), limits).expect("starts");
    Server {
        handle,
        host,
        injected,
        _dir: None,
    }
}

fn start(limits: Limits) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let mut s = start_in(dir.path(), limits);
    s._dir = Some(dir);
    s
}

async fn connect(server: &Server) -> Client {
    let addr = server.handle.local_addr();
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (ws, _) = tokio_tungstenite::client_async(format!("ws://{addr}"), tcp)
        .await
        .expect("handshake");
    ws
}

fn request(kind: &str, data: Value) -> String {
    json!({"apiName": "VTubeStudioPublicAPI", "apiVersion": "1.0", "requestID": kind,
           "messageType": kind, "data": data})
    .to_string()
}

/// The next text message, parsed.
async fn next(ws: &mut Client) -> Value {
    loop {
        match tokio::time::timeout(WAIT, ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => return serde_json::from_str(t.as_str()).unwrap(),
            Ok(Some(Ok(Message::Ping(_) | Message::Pong(_)))) => continue,
            other => panic!("no message: {other:?}"),
        }
    }
}

async fn ask(ws: &mut Client, kind: &str, data: Value) -> Value {
    ws.send(Message::text(request(kind, data))).await.unwrap();
    let r = next(ws).await;
    assert_eq!(r["requestID"], kind, "{r}");
    r
}

fn error_id(v: &Value) -> u64 {
    assert_eq!(v["messageType"], "APIError", "{v}");
    v["data"]["errorID"].as_u64().unwrap()
}

const STREAMER_BOT: (&str, &str) = ("Streamer.bot", "Streamer.bot");

async fn token(ws: &mut Client, (plugin, developer): (&str, &str)) -> String {
    let r = ask(
        ws,
        "AuthenticationTokenRequest",
        json!({"pluginName": plugin, "pluginDeveloper": developer}),
    )
    .await;
    r["data"]["authenticationToken"]
        .as_str()
        .unwrap_or_else(|| panic!("no token: {r}"))
        .to_string()
}

async fn authenticate(ws: &mut Client, (plugin, developer): (&str, &str), token: &str) -> bool {
    let r = ask(
        ws,
        "AuthenticationRequest",
        json!({"pluginName": plugin, "pluginDeveloper": developer, "authenticationToken": token}),
    )
    .await;
    r["data"]["authenticated"].as_bool().unwrap()
}

async fn login(server: &Server) -> Client {
    let mut ws = connect(server).await;
    let t = token(&mut ws, STREAMER_BOT).await;
    assert!(authenticate(&mut ws, STREAMER_BOT, &t).await);
    ws
}

#[tokio::test]
async fn plugins_authenticate_and_tokens_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_in(dir.path(), Limits::default());
    let mut ws = connect(&server).await;
    let r = ask(&mut ws, "APIStateRequest", json!({})).await;
    assert_eq!(r["messageType"], "APIStateResponse");
    assert_eq!(r["data"]["active"], true);
    assert_eq!(r["data"]["currentSessionAuthenticated"], false);
    let r = ask(&mut ws, "HotkeysInCurrentModelRequest", json!({})).await;
    assert_eq!(error_id(&r), 8, "unauthenticated requests are refused");
    let r = ask(&mut ws, "SomeFutureRequest", json!({})).await;
    assert_eq!(error_id(&r), 7);

    // Approved by name in the config: a token at once.
    let t = token(&mut ws, STREAMER_BOT).await;
    assert!(!authenticate(&mut ws, STREAMER_BOT, "not-the-token").await);
    assert!(!authenticate(&mut ws, ("Streamer.bot", "Someone else"), &t).await);
    assert!(authenticate(&mut ws, STREAMER_BOT, &t).await);
    let r = ask(&mut ws, "APIStateRequest", json!({})).await;
    assert_eq!(r["data"]["currentSessionAuthenticated"], true);

    // Not in the list: the host is asked and answers later.
    let mut other = connect(&server).await;
    other
        .send(Message::text(request(
            "AuthenticationTokenRequest",
            json!({"pluginName": "Mix It Up", "pluginDeveloper": "SaviorXTanren"}),
        )))
        .await
        .unwrap();
    let deadline = Instant::now() + WAIT;
    let sender = loop {
        if let Some(tx) = server.host.asked.lock().unwrap().pop() {
            break tx;
        }
        assert!(Instant::now() < deadline, "the host was not asked");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    // The session keeps answering while it waits.
    let r = ask(&mut other, "APIStateRequest", json!({})).await;
    assert_eq!(r["messageType"], "APIStateResponse");
    sender.send(true).unwrap();
    let r = next(&mut other).await;
    assert_eq!(r["messageType"], "AuthenticationTokenResponse", "{r}");
    let mix_it_up = r["data"]["authenticationToken"]
        .as_str()
        .unwrap()
        .to_string();
    drop((ws, other));

    // A restart keeps both tokens.
    drop(server);
    let server = start_in(dir.path(), Limits::default());
    let mut ws = connect(&server).await;
    assert!(authenticate(&mut ws, STREAMER_BOT, &t).await);
    let mut other = connect(&server).await;
    assert!(authenticate(&mut other, ("Mix It Up", "SaviorXTanren"), &mix_it_up).await);
}

#[tokio::test]
async fn hotkeys_are_listed_and_triggered() {
    let server = start(Limits::default());
    let mut ws = login(&server).await;
    let r = ask(&mut ws, "HotkeysInCurrentModelRequest", json!({})).await;
    assert_eq!(r["data"]["modelLoaded"], true);
    assert_eq!(r["data"]["modelName"], "Alicia");
    let hotkeys = r["data"]["availableHotkeys"].as_array().unwrap();
    assert_eq!(hotkeys.len(), 2);
    assert_eq!(hotkeys[1]["hotkeyID"], "h-calibrate");
    assert_eq!(hotkeys[1]["type"], "CalibrateCam");

    let r = ask(
        &mut ws,
        "EventSubscriptionRequest",
        json!({"eventName": "HotkeyTriggeredEvent", "subscribe": true, "config": {}}),
    )
    .await;
    assert_eq!(
        r["data"]["subscribedEvents"],
        json!(["HotkeyTriggeredEvent"])
    );

    // By name, in any letter case.
    let r = ask(
        &mut ws,
        "HotkeyTriggerRequest",
        json!({"hotkeyID": "recentre"}),
    )
    .await;
    assert_eq!(r["messageType"], "HotkeyTriggerResponse");
    assert_eq!(r["data"]["hotkeyID"], "h-calibrate");
    let e = next(&mut ws).await;
    assert_eq!(e["messageType"], "HotkeyTriggeredEvent");
    assert_eq!(e["data"]["hotkeyTriggeredByAPI"], true);
    assert_eq!(e["data"]["hotkeyAction"], "CalibrateCam");

    let r = ask(
        &mut ws,
        "HotkeyTriggerRequest",
        json!({"hotkeyID": "h-smile"}),
    )
    .await;
    assert_eq!(r["data"]["hotkeyID"], "h-smile");
    next(&mut ws).await;
    let r = ask(
        &mut ws,
        "HotkeyTriggerRequest",
        json!({"hotkeyID": "nothing"}),
    )
    .await;
    assert_eq!(error_id(&r), 202);
    assert_eq!(
        *server.host.calls.lock().unwrap(),
        ["hotkey h-calibrate", "hotkey h-smile"]
    );

    // Events the host pushes.
    ask(
        &mut ws,
        "EventSubscriptionRequest",
        json!({"eventName": "TrackingStatusChangedEvent", "subscribe": true}),
    )
    .await;
    server
        .handle
        .emit(ApiEvent::TrackingStatusChanged { face_found: false });
    let e = next(&mut ws).await;
    assert_eq!(e["messageType"], "TrackingStatusChangedEvent");
    assert_eq!(e["data"]["faceFound"], false);

    let r = ask(
        &mut ws,
        "ExpressionActivationRequest",
        json!({"expressionFile": "Joy", "active": true}),
    )
    .await;
    assert_eq!(r["messageType"], "ExpressionActivationResponse", "{r}");
    assert_eq!(
        server.host.calls.lock().unwrap().last().unwrap(),
        "expression Joy true"
    );
}

#[tokio::test]
async fn injected_parameters_reach_the_store_and_lapse() {
    let server = start(Limits::default());
    let mut ws = login(&server).await;
    let r = ask(
        &mut ws,
        "InjectParameterDataRequest",
        json!({"faceFound": true, "mode": "set", "parameterValues": [
            {"id": "jawOpen", "value": 0.3},
            {"id": "EyeOpenLeft", "value": 0.2, "weight": 0.5},
        ]}),
    )
    .await;
    assert_eq!(r["messageType"], "InjectParameterDataResponse", "{r}");
    let v = server.injected.values(Instant::now());
    assert_eq!(v.set.get(Channel::JawOpen), Some(0.3));
    assert!((v.set.get(Channel::EyeBlinkLeft).unwrap() - 0.8).abs() < 1e-6);
    assert_eq!(v.weight[Channel::EyeBlinkLeft.index()], 0.5);
    assert!(v.face_found);

    // VTube Studio's MouthOpen drives the same channel.
    ask(
        &mut ws,
        "InjectParameterDataRequest",
        json!({"parameterValues": [{"id": "MouthOpen", "value": 0.6}]}),
    )
    .await;
    let sent = Instant::now();
    let v = server.injected.values(sent);
    assert_eq!(v.set.get(Channel::JawOpen), Some(0.6));
    let r = ask(
        &mut ws,
        "ParameterValueRequest",
        json!({"name": "MouthOpen"}),
    )
    .await;
    assert_eq!(r["data"]["value"], 0.6);

    let r = ask(
        &mut ws,
        "InjectParameterDataRequest",
        json!({"parameterValues": [{"id": "NoSuchParam", "value": 1}]}),
    )
    .await;
    assert_eq!(error_id(&r), 453);

    // Not sent again: gone after a second.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(server.injected.values(Instant::now()).is_empty());
}

#[tokio::test]
async fn custom_parameters_are_created_injected_and_kept_across_a_restart() {
    // A mapping that reads the parameter (loaded first: injected values lapse in a second).
    let avatar =
        facewire::avatar::load_slice(facewire::headgen::DEFAULT_HEAD_GLB, "default head").unwrap();
    let file = facewire::mapping::MappingFile::parse(
        "version = 1\n[map]\ncheekPuff = \"param:ChatHype\"\n",
        "hype.toml",
    )
    .unwrap();
    let mapping = facewire::mapping::CompiledMapping::compile(&file, &avatar).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let server = start_in(dir.path(), Limits::default());
    let mut ws = connect(&server).await;
    let t = token(&mut ws, STREAMER_BOT).await;
    assert!(authenticate(&mut ws, STREAMER_BOT, &t).await);
    let r = ask(
        &mut ws,
        "ParameterCreationRequest",
        json!({"parameterName": "ChatHype", "explanation": "how lively the chat is",
               "min": 0, "max": 10, "defaultValue": 1}),
    )
    .await;
    assert_eq!(r["messageType"], "ParameterCreationResponse", "{r}");
    drop(ws);
    drop(server);

    // After a restart the parameter is still there: injected and read back at once.
    let server = start_in(dir.path(), Limits::default());
    // Frames carry it for mappings (`param:ChatHype`), placed within its range: its default
    // of 1 in 0..10 until a plugin sends a value.
    let chat_hype = facewire::arkit::ParamKey::of("chathype");
    let carried = || server.injected.values(Instant::now()).params.get(chat_hype);
    assert_eq!(carried(), Some(0.1));
    let mut ws = connect(&server).await;
    assert!(authenticate(&mut ws, STREAMER_BOT, &t).await);
    let r = ask(
        &mut ws,
        "InjectParameterDataRequest",
        json!({"parameterValues": [{"id": "ChatHype", "value": 7.5}]}),
    )
    .await;
    assert_eq!(r["messageType"], "InjectParameterDataResponse", "{r}");
    assert_eq!(carried(), Some(0.75));
    // (Taken now: an injected value lapses a second after it was sent.)
    let params = server.injected.values(Instant::now()).params;
    // A mapping that reads it moves its target by it.
    let mut frame = facewire::arkit::FaceFrame::empty(
        facewire::arkit::Protocol::Vmc,
        "127.0.0.1:1".parse().unwrap(),
        Instant::now(),
    );
    frame.params = params;
    let mut pose = avatar.rest_pose();
    mapping.apply(&frame, &mut pose);
    let puff = avatar.meshes[0]
        .target_names
        .iter()
        .position(|n| n == "cheekPuff")
        .unwrap();
    assert!(
        (pose.weights[0][puff] - 0.75).abs() < 1e-6,
        "{:?}",
        pose.weights[0][puff]
    );
    let r = ask(
        &mut ws,
        "ParameterValueRequest",
        json!({"name": "ChatHype"}),
    )
    .await;
    assert_eq!(r["data"]["value"], 7.5, "{r}");
    assert_eq!(r["data"]["addedBy"], "Streamer.bot", "{r}");
    // Its values drive no ARKit channel.
    assert!(server.injected.values(Instant::now()).is_empty());
    let r = ask(
        &mut ws,
        "ParameterDeletionRequest",
        json!({"parameterName": "ChatHype"}),
    )
    .await;
    assert_eq!(r["data"]["parameterName"], "ChatHype", "{r}");
    assert_eq!(carried(), None, "a deleted parameter is no longer carried");
    let r = ask(
        &mut ws,
        "ParameterValueRequest",
        json!({"name": "ChatHype"}),
    )
    .await;
    assert_eq!(error_id(&r), 500);
}

#[tokio::test]
async fn malformed_and_oversized_messages() {
    let server = start(Limits::default());
    let mut ws = connect(&server).await;
    ws.send(Message::text("{not json")).await.unwrap();
    assert_eq!(error_id(&next(&mut ws).await), 2);
    ws.send(Message::binary(vec![0xff, 0xfe, 0x00]))
        .await
        .unwrap();
    assert_eq!(error_id(&next(&mut ws).await), 2);
    ws.send(Message::text(
        json!({"apiName": "Other", "apiVersion": "1.0", "messageType": "APIStateRequest"})
            .to_string(),
    ))
    .await
    .unwrap();
    assert_eq!(error_id(&next(&mut ws).await), 3);
    // Binary frames holding UTF-8 are requests like text ones.
    ws.send(Message::binary(
        request("APIStateRequest", json!({})).into_bytes(),
    ))
    .await
    .unwrap();
    assert_eq!(next(&mut ws).await["messageType"], "APIStateResponse");
    assert_eq!(server.handle.stats().malformed, 3);

    // Past 64 KiB: the connection closes with 1009.
    let huge = request("APIStateRequest", json!({"pad": "x".repeat(100 * 1024)}));
    let _ = ws.send(Message::text(huge)).await;
    let closed = tokio::time::timeout(WAIT, async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Close(frame))) => return frame.map(|f| f.code),
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return None,
            }
        }
    })
    .await
    .expect("the connection closes");
    if let Some(code) = closed {
        assert_eq!(code, CloseCode::Size);
    }
    assert_eq!(server.handle.stats().oversized, 1);

    // The server carries on.
    let mut ws = connect(&server).await;
    let r = ask(&mut ws, "APIStateRequest", json!({})).await;
    assert_eq!(r["messageType"], "APIStateResponse");
}

#[tokio::test]
async fn many_connections_are_capped_and_the_server_keeps_answering() {
    let server = start(Limits {
        max_connections: 16,
        ..Limits::default()
    });
    let addr = server.handle.local_addr();
    let mut open = Vec::new();
    let mut refused = 0;
    for _ in 0..200 {
        let tcp = TcpStream::connect(addr).await.unwrap();
        match tokio_tungstenite::client_async(format!("ws://{addr}"), tcp).await {
            Ok((ws, _)) => open.push(ws),
            Err(_) => refused += 1,
        }
    }
    // Those beyond the cap are told so and closed.
    let mut told = 0;
    let mut kept = Vec::new();
    for mut ws in open {
        let first = tokio::time::timeout(Duration::from_millis(200), ws.next()).await;
        match first {
            Ok(Some(Ok(Message::Close(Some(f))))) if f.code == CloseCode::Again => told += 1,
            Ok(other) => panic!("unexpected {other:?}"),
            Err(_) => kept.push(ws),
        }
    }
    assert_eq!(kept.len(), 16, "refused {refused}, told {told}");
    let stats = server.handle.stats();
    assert_eq!(stats.refused_full, 184, "{stats:?}");
    assert!(told > 0, "refusals say why");
    // Those served still answer; once they go, room is made for others.
    let r = ask(&mut kept[0], "APIStateRequest", json!({})).await;
    assert_eq!(r["messageType"], "APIStateResponse");
    for mut ws in kept {
        let _ = ws.close(None).await;
    }
    let deadline = Instant::now() + WAIT;
    loop {
        let mut ws = connect(&server).await;
        ws.send(Message::text(request("APIStateRequest", json!({}))))
            .await
            .unwrap();
        if let Ok(Some(Ok(Message::Text(_)))) =
            tokio::time::timeout(Duration::from_millis(500), ws.next()).await
        {
            break;
        }
        assert!(Instant::now() < deadline, "no room after the others left");
    }
}

#[tokio::test]
async fn a_client_that_does_not_read_is_dropped() {
    let server = start(Limits {
        queue: 8,
        ..Limits::default()
    });
    let addr = server.handle.local_addr();
    // A small receive buffer so that unread answers back up quickly.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let tcp = socket.connect(addr).await.unwrap();
    let (mut slow, _) = tokio_tungstenite::client_async(format!("ws://{addr}"), tcp)
        .await
        .unwrap();
    let t = {
        let mut ws = connect(&server).await;
        token(&mut ws, STREAMER_BOT).await
    };
    slow.send(Message::text(request(
        "AuthenticationRequest",
        json!({"pluginName": "Streamer.bot", "pluginDeveloper": "Streamer.bot",
               "authenticationToken": t}),
    )))
    .await
    .unwrap();
    // Large answers, never read.
    let deadline = Instant::now() + WAIT;
    let mut sent = 0;
    while server.handle.stats().dropped_slow == 0 {
        assert!(
            Instant::now() < deadline,
            "not dropped after {sent} requests"
        );
        let send = slow.send(Message::text(request(
            "InputParameterListRequest",
            json!({}),
        )));
        match tokio::time::timeout(Duration::from_millis(100), send).await {
            Ok(Ok(())) => sent += 1,
            // The server closed it, or our own send buffer is full: wait for the count.
            _ => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    assert_eq!(server.handle.stats().dropped_slow, 1);
    // Everyone else is still answered.
    let mut ws = login(&server).await;
    let r = ask(&mut ws, "InputParameterListRequest", json!({})).await;
    assert_eq!(r["data"]["defaultParameters"][0]["name"], "MouthOpen");
}

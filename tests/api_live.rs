//! The API of a real `facewire run --headless` or `facewire relay`, driven by an independent
//! WebSocket client and by VTubeStudioJS: authentication, hotkeys of the shipped expressions and
//! the expression state right after them, injected `jawOpen` in the frame drawn, the avatar
//! moved in it, models listed once and statistics, a flood of connections while the stage keeps
//! drawing, and a port already in use.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use facewire::image::RgbaImage;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use crate::pipeline::{free_udp_port, phones_off};
use crate::support::{changed_pixels, facewire_bin, repo};

type Client = WebSocketStream<TcpStream>;

/// The plugin the test configuration approves without asking.
const PLUGIN: (&str, &str) = ("facewire tests", "facewire");
/// How long one answer may take.
const WAIT: Duration = Duration::from_secs(10);

fn out_dir(name: &str) -> PathBuf {
    let dir = repo().join("target/api-live-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A TCP port free now and not handed to another test of this run: the tests run at once, and
/// two runs told the same port would serve one API to both.
fn free_tcp_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut given = GIVEN.lock().unwrap_or_else(|p| p.into_inner());
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// A quiet configuration (no phone listeners, no idle life, the shipped expressions) whose API
/// listens on `api`, with `extra` appended; written into `dir`.
fn config(dir: &Path, api: SocketAddr, extra: &str) -> PathBuf {
    let path = dir.join("facewire.toml");
    let tokens = dir.join("api_tokens.toml");
    let expressions = repo().join("config/expressions.toml");
    let toml = format!(
        "[idle]\nenabled = false\n\n[expressions]\nfile = {:?}\n\n\
         [api]\nlisten = \"{api}\"\napprove = [\"{}\"]\ntokens = {:?}\n{extra}",
        expressions.display().to_string(),
        PLUGIN.0,
        tokens.display().to_string()
    );
    std::fs::write(&path, phones_off(&toml)).unwrap();
    path
}

/// `facewire --config CONFIG ARGS...` from the repository, its log written to `dir/log.txt`.
fn facewire(dir: &Path, config: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(facewire_bin());
    cmd.current_dir(repo())
        .env("FACEWIRE_LOG", "info")
        .arg("--config")
        .arg(config)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.join("log.txt")).unwrap());
    cmd
}

/// A headless run for `seconds` at 160x160 drawn into `dir/last.png`, listening for phones on
/// a port nothing sends to.
fn headless(dir: &Path, config: &Path, seconds: &str, extra: &[&str]) -> Child {
    let listen = format!("127.0.0.1:{}", free_udp_port());
    let out = dir.join("last.png");
    let mut args = vec![
        "run",
        "--headless",
        "--exit-after",
        seconds,
        "--size",
        "160x160",
        "--morph",
        "cpu",
        "--listen",
        &listen,
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    facewire(dir, config, &args).spawn().unwrap()
}

/// Waits for `child` and returns its report; panics with its log when it failed.
fn report(child: Child, dir: &Path) -> Value {
    let output = child.wait_with_output().unwrap();
    let log = std::fs::read_to_string(dir.join("log.txt")).unwrap_or_default();
    assert!(output.status.success(), "facewire failed:\n{log}");
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("no report ({e}):\n{log}"))
}

/// Connects to the API as soon as it listens.
async fn connect(addr: SocketAddr) -> Client {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(tcp) = TcpStream::connect(addr).await {
            let (ws, _) = tokio_tungstenite::client_async(format!("ws://{addr}"), tcp)
                .await
                .expect("handshake");
            return ws;
        }
        assert!(
            Instant::now() < deadline,
            "the API never listened on {addr}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn request(kind: &str, data: Value) -> Message {
    Message::text(
        json!({"apiName": "VTubeStudioPublicAPI", "apiVersion": "1.0", "requestID": kind,
               "messageType": kind, "data": data})
        .to_string(),
    )
}

/// Sends a request and returns its answer; `None` once the run has ended.
async fn try_ask(ws: &mut Client, kind: &str, data: Value) -> Option<Value> {
    ws.send(request(kind, data)).await.ok()?;
    loop {
        match tokio::time::timeout(WAIT, ws.next()).await.ok()?? {
            Ok(Message::Text(t)) => return serde_json::from_str(t.as_str()).ok(),
            Ok(Message::Ping(_) | Message::Pong(_)) => continue,
            _ => return None,
        }
    }
}

async fn ask(ws: &mut Client, kind: &str, data: Value) -> Value {
    let answer = try_ask(ws, kind, data)
        .await
        .unwrap_or_else(|| panic!("no answer to {kind}"));
    assert_eq!(answer["requestID"], kind, "{answer}");
    answer
}

/// A token for [`PLUGIN`] (approved by the configuration) and the authentication with it.
async fn authenticate(ws: &mut Client) {
    let data = json!({"pluginName": PLUGIN.0, "pluginDeveloper": PLUGIN.1});
    let r = ask(ws, "AuthenticationTokenRequest", data).await;
    let token = r["data"]["authenticationToken"]
        .as_str()
        .unwrap_or_else(|| panic!("no token: {r}"))
        .to_string();
    let data = json!({"pluginName": PLUGIN.0, "pluginDeveloper": PLUGIN.1,
                      "authenticationToken": token});
    let r = ask(ws, "AuthenticationRequest", data).await;
    assert_eq!(r["data"]["authenticated"], true, "{r}");
}

/// Whether the expression `file` is active, as `ExpressionStateRequest` reports it.
async fn active(ws: &mut Client, file: &str) -> Option<bool> {
    let r = ask(
        ws,
        "ExpressionStateRequest",
        json!({"expressionFile": file}),
    )
    .await;
    r["data"]["expressions"]
        .as_array()
        .unwrap_or_else(|| panic!("no expressions: {r}"))
        .iter()
        .find(|e| e["file"] == file)
        .and_then(|e| e["active"].as_bool())
}

/// `facewire relay` (no window, no GL) for at most `seconds`, listening for phones on a port
/// nothing sends to.
fn relay(dir: &Path, config: &Path, seconds: &str) -> Child {
    let listen = format!("127.0.0.1:{}", free_udp_port());
    let args = ["relay", "--exit-after", seconds, "--listen", &listen];
    facewire(dir, config, &args).spawn().unwrap()
}

/// A snapshot of `weights` through `config`, as the headless run draws it.
fn snapshot(dir: &Path, config: &Path, weights: &str, name: &str) -> RgbaImage {
    let out = dir.join(name);
    let args = [
        "snapshot",
        "--weights",
        weights,
        "--morph",
        "cpu",
        "--size",
        "160x160",
        "--out",
        out.to_str().unwrap(),
    ];
    let status = facewire(dir, config, &args).status().unwrap();
    assert!(status.success(), "snapshot {weights} failed");
    RgbaImage::load_png(&out).unwrap()
}

#[tokio::test]
async fn a_plugin_drives_a_headless_run() {
    let dir = out_dir("drive");
    let api: SocketAddr = format!("127.0.0.1:{}", free_tcp_port()).parse().unwrap();
    let config = config(&dir, api, "");
    let mut child = headless(&dir, &config, "6", &[]);
    let mut ws = connect(api).await;

    // Nothing but the state and authentication before authenticating.
    let r = ask(&mut ws, "HotkeysInCurrentModelRequest", json!({})).await;
    assert_eq!(r["messageType"], "APIError", "{r}");
    assert_eq!(r["data"]["errorID"], 8, "{r}");
    authenticate(&mut ws).await;

    let r = ask(&mut ws, "HotkeysInCurrentModelRequest", json!({})).await;
    let hotkeys = r["data"]["availableHotkeys"].as_array().unwrap().clone();
    let names: Vec<&str> = hotkeys.iter().filter_map(|h| h["name"].as_str()).collect();
    for name in ["smile", "surprised", "angry", "wink"] {
        assert!(names.contains(&name), "{name} is not a hotkey: {names:?}");
    }
    let r = ask(
        &mut ws,
        "HotkeyTriggerRequest",
        json!({"hotkeyID": "smile"}),
    )
    .await;
    assert_eq!(r["messageType"], "HotkeyTriggerResponse", "{r}");
    // The answer came once the chain had taken the trigger: the state shows it at once.
    assert_eq!(active(&mut ws, "smile").await, Some(true));
    let r = ask(
        &mut ws,
        "HotkeyTriggerRequest",
        json!({"hotkeyID": "remove all expressions"}),
    )
    .await;
    assert_eq!(r["messageType"], "HotkeyTriggerResponse", "{r}");
    let r = ask(&mut ws, "FaceFoundRequest", json!({})).await;
    assert_eq!(r["data"]["found"], false, "no phone sends: {r}");

    // jawOpen = 1 until the run ends: its last frame shows the mouth open.
    let inject = json!({"mode": "set", "parameterValues": [{"id": "jawOpen", "value": 1.0}]});
    let mut injected = 0;
    while child.try_wait().unwrap().is_none() {
        match try_ask(&mut ws, "InjectParameterDataRequest", inject.clone()).await {
            Some(r) if r["messageType"] == "InjectParameterDataResponse" => injected += 1,
            Some(r) => panic!("injection refused: {r}"),
            None => break,
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(injected > 10, "only {injected} injections");
    let report = report(child, &dir);
    assert!(report["frames_drawn"].as_u64().unwrap() > 10, "{report}");

    let got = RgbaImage::load_png(&dir.join("last.png")).unwrap();
    let open = snapshot(&dir, &config, "jawOpen=1", "open.png");
    let closed = snapshot(&dir, &config, "jawOpen=0", "closed.png");
    let moved = changed_pixels(&open, &closed, 8).len();
    let off_open = changed_pixels(&got, &open, 8).len();
    let off_closed = changed_pixels(&got, &closed, 8).len();
    assert!(moved > 100, "jawOpen barely moves the head: {moved} pixels");
    assert!(
        off_open * 10 < off_closed,
        "the last frame is not the open mouth: {off_open} pixels off it, {off_closed} off the \
         closed one (see {})",
        dir.display()
    );
}

#[tokio::test]
async fn an_expression_state_request_sees_the_activation_answered_just_before_it() {
    let dir = out_dir("state-after-activation");
    let api: SocketAddr = format!("127.0.0.1:{}", free_tcp_port()).parse().unwrap();
    let config = config(&dir, api, "");
    let mut child = relay(&dir, &config, "30");
    let mut ws = connect(api).await;
    authenticate(&mut ws).await;
    // As pyvts and VTubeStudioJS do: the state is asked the moment the answer comes.
    for round in 0..10 {
        let on = round % 2 == 0;
        let r = ask(
            &mut ws,
            "ExpressionActivationRequest",
            json!({"expressionFile": "smile", "active": on, "fadeTime": 0.5}),
        )
        .await;
        assert_eq!(r["messageType"], "ExpressionActivationResponse", "{r}");
        assert_eq!(active(&mut ws, "smile").await, Some(on), "round {round}");
    }
    // A hotkey too: each trigger toggles, and the next state request sees it.
    for round in 0..4 {
        let before = active(&mut ws, "angry").await.unwrap();
        let r = ask(
            &mut ws,
            "HotkeyTriggerRequest",
            json!({"hotkeyID": "angry"}),
        )
        .await;
        assert_eq!(r["messageType"], "HotkeyTriggerResponse", "{r}");
        assert_eq!(
            active(&mut ws, "angry").await,
            Some(!before),
            "round {round}"
        );
        // Past the hotkey's cooldown.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test]
async fn models_are_listed_once_and_statistics_count_the_plugins() {
    let dir = out_dir("models-and-statistics");
    let api: SocketAddr = format!("127.0.0.1:{}", free_tcp_port()).parse().unwrap();
    let config = config(&dir, api, "");
    let mut child = relay(&dir, &config, "30");
    let mut ws = connect(api).await;
    authenticate(&mut ws).await;
    // The repository's models folder holds the default head's file: listed once, as the
    // default head.
    let r = ask(&mut ws, "AvailableModelsRequest", json!({})).await;
    let ids: Vec<&str> = r["data"]["availableModels"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["modelID"].as_str())
        .collect();
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "a model listed twice: {r}");
    let heads = ids
        .iter()
        .filter(|i| **i == "facewire-default-head")
        .count();
    assert_eq!(heads, 1, "{r}");
    assert_eq!(r["data"]["numberOfModels"], ids.len(), "{r}");

    // One plugin allowed (its token in the file) and connected; a connection that has not
    // authenticated is no plugin.
    let _idle = connect(api).await;
    let r = ask(&mut ws, "StatisticsRequest", json!({})).await;
    assert_eq!(r["data"]["allowedPlugins"], 1, "{r}");
    assert_eq!(r["data"]["connectedPlugins"], 1, "{r}");
    let mut second = connect(api).await;
    authenticate(&mut second).await;
    let r = ask(&mut ws, "StatisticsRequest", json!({})).await;
    assert_eq!(r["data"]["connectedPlugins"], 2, "{r}");
    drop(second);
    let deadline = Instant::now() + WAIT;
    loop {
        let r = ask(&mut ws, "StatisticsRequest", json!({})).await;
        if r["data"]["connectedPlugins"] == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "a plugin gone still counts: {r}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The middle (mean x and y, in pixels) of what differs from the top-left pixel (the
/// background) in `image`.
fn middle_of_avatar(image: &RgbaImage) -> (f64, f64) {
    let background = image.pixel(0, 0);
    let (mut sx, mut sy, mut n) = (0.0, 0.0, 0.0);
    for y in 0..image.height {
        for x in 0..image.width {
            let p = image.pixel(x, y);
            if p.iter().zip(background).any(|(a, b)| a.abs_diff(b) > 8) {
                sx += f64::from(x);
                sy += f64::from(y);
                n += 1.0;
            }
        }
    }
    assert!(n > 100.0, "no avatar drawn");
    (sx / n, sy / n)
}

#[tokio::test]
async fn a_plugin_moves_the_avatar_on_a_headless_stage() {
    let dir = out_dir("move");
    let api: SocketAddr = format!("127.0.0.1:{}", free_tcp_port()).parse().unwrap();
    let config = config(&dir, api, "");
    let child = headless(&dir, &config, "3", &[]);
    let mut ws = connect(api).await;
    authenticate(&mut ws).await;
    // To the right half of the window and down a little, at once; then half as large, turned,
    // over a moment (relative to where it is).
    let r = ask(
        &mut ws,
        "MoveModelRequest",
        json!({"timeInSeconds": 0, "valuesAreRelativeToModel": false,
               "positionX": 0.5, "positionY": -0.2}),
    )
    .await;
    assert_eq!(r["messageType"], "MoveModelResponse", "{r}");
    let r = ask(
        &mut ws,
        "MoveModelRequest",
        json!({"timeInSeconds": 0.3, "valuesAreRelativeToModel": true,
               "rotation": 30, "size": -33.4}),
    )
    .await;
    assert_eq!(r["messageType"], "MoveModelResponse", "{r}");
    let r = ask(&mut ws, "CurrentModelRequest", json!({})).await;
    let at = &r["data"]["modelPosition"];
    assert_eq!(at["positionX"], 0.5, "{r}");
    assert_eq!(at["positionY"], -0.2, "{r}");
    assert_eq!(at["rotation"], 30.0, "{r}");
    let r = ask(
        &mut ws,
        "MoveModelRequest",
        json!({"timeInSeconds": 5, "valuesAreRelativeToModel": false}),
    )
    .await;
    assert_eq!(r["data"]["errorID"], 302, "{r}");
    let report = report(child, &dir);
    assert!(report["frames_drawn"].as_u64().unwrap() > 5, "{report}");

    // The last frame drawn shows the head there: its middle a quarter of the width right of
    // the window's middle, a tenth of the height below it.
    let got = RgbaImage::load_png(&dir.join("last.png")).unwrap();
    let rest = snapshot(&dir, &config, "jawOpen=0", "rest.png");
    let (gx, gy) = middle_of_avatar(&got);
    let (rx, ry) = middle_of_avatar(&rest);
    let (w, h) = (f64::from(got.width), f64::from(got.height));
    assert!(
        (gx - rx - 0.25 * w).abs() < 0.06 * w && (gy - ry - 0.1 * h).abs() < 0.06 * h,
        "the head's middle moved from ({rx:.0}, {ry:.0}) to ({gx:.0}, {gy:.0}), not by \
         ({:.0}, {:.0}) (see {})",
        0.25 * w,
        0.1 * h,
        dir.display()
    );
    // Half as large: about a quarter of the pixels.
    let area = |image: &RgbaImage| {
        let background = image.pixel(0, 0);
        (0..image.height)
            .flat_map(|y| (0..image.width).map(move |x| (x, y)))
            .filter(|&(x, y)| {
                image
                    .pixel(x, y)
                    .iter()
                    .zip(background)
                    .any(|(a, b)| a.abs_diff(b) > 8)
            })
            .count() as f64
    };
    let ratio = area(&got) / area(&rest);
    assert!(ratio > 0.15 && ratio < 0.4, "{ratio} of the area at rest");
}

/// Waits for `child` at most `limit`; `None` (and the child killed) when it takes longer.
fn wait_at_most(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The version of VTubeStudioJS the test drives facewire with.
const VTUBESTUDIO_JS: &str = "vtubestudio@3.11.0";

/// Node and the `vtubestudio` package, installed once under `target/vtubestudio-js` (never in
/// the repository): the `node_modules` folder and the arguments Node needs for a WebSocket
/// (Node 20 has it behind `--experimental-websocket`). `None`, with the reason printed, when
/// Node, npm or the registry is not available.
fn vtubestudio_js() -> Option<(PathBuf, Vec<&'static str>)> {
    let works = |args: &[&str]| {
        Command::new("node")
            .args(args)
            .args([
                "-e",
                "process.exit(typeof WebSocket === 'function' ? 0 : 1)",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let flags = if works(&[]) {
        vec![]
    } else if works(&["--experimental-websocket"]) {
        vec!["--experimental-websocket"]
    } else {
        eprintln!("skipped: no Node with a WebSocket (Node 20 or later) to run VTubeStudioJS");
        return None;
    };
    let dir = repo().join("target/vtubestudio-js");
    let modules = dir.join("node_modules");
    if !modules.join("vtubestudio/package.json").is_file() {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("package.json"),
            r#"{"name": "facewire-vtubestudio-js-test", "private": true}"#,
        )
        .unwrap();
        let install = Command::new("npm")
            .current_dir(&dir)
            .args(["install", "--no-audit", "--no-fund", "--fetch-retries=1"])
            .args(["--fetch-timeout=20000", VTUBESTUDIO_JS])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        let Ok(mut install) = install else {
            eprintln!("skipped: npm is not installed, so VTubeStudioJS cannot be fetched");
            return None;
        };
        match wait_at_most(&mut install, Duration::from_secs(180)) {
            Some(status) if status.success() => {}
            status => {
                let mut why = String::new();
                if let Some(mut err) = install.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut err, &mut why);
                }
                let status = status.map_or("timed out".to_string(), |s| s.to_string());
                eprintln!(
                    "skipped: npm could not install {VTUBESTUDIO_JS} ({status}); is the \
                     registry reachable?\n{why}"
                );
                return None;
            }
        }
    }
    Some((modules, flags))
}

#[test]
fn vtubestudio_js_drives_a_relay() {
    let Some((modules, flags)) = vtubestudio_js() else {
        return;
    };
    let dir = out_dir("vtubestudio-js");
    let api: SocketAddr = format!("127.0.0.1:{}", free_tcp_port()).parse().unwrap();
    let config = config(&dir, api, "");
    let mut relay = relay(&dir, &config, "60");
    // The client retries its connection every few seconds: wait for the API to listen first.
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(api).is_err() {
        assert!(Instant::now() < deadline, "the API never listened on {api}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let script = repo().join("tests/vtubestudio_js/drive.js");
    let mut node = Command::new("node")
        .args(&flags)
        .arg(&script)
        .env("NODE_PATH", &modules)
        .env("FACEWIRE_API_PORT", api.port().to_string())
        .env("FACEWIRE_PLUGIN_NAME", PLUGIN.0)
        .env("FACEWIRE_PLUGIN_DEVELOPER", PLUGIN.1)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_at_most(&mut node, Duration::from_secs(40));
    let _ = relay.kill();
    let _ = relay.wait();
    let output = node.wait_with_output().unwrap();
    let log = std::fs::read_to_string(dir.join("log.txt")).unwrap_or_default();
    assert!(
        status.is_some_and(|s| s.success()),
        "VTubeStudioJS failed ({status:?}):\n{}\n{}\nfacewire's log:\n{log}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: Value = String::from_utf8_lossy(&output.stdout)
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no report from the script: {output:?}"));
    assert_eq!(seen["authenticated"], true, "{seen}");
    assert_eq!(seen["currentSessionAuthenticated"], true, "{seen}");
    let hotkeys = seen["hotkeys"].as_array().unwrap();
    assert!(hotkeys.iter().any(|h| h == "angry"), "{seen}");
    assert_eq!(seen["triggered"], "expression:smile", "{seen}");
    assert_eq!(seen["smileActive"], true, "{seen}");
    assert_eq!(seen["created"], "FacewireJsTest", "{seen}");
    assert_eq!(seen["injected"], 7.5, "{seen}");
    assert_eq!(seen["addedBy"], PLUGIN.0, "{seen}");
    assert_eq!(seen["listed"], true, "{seen}");
    assert_eq!(seen["reservedError"], 354, "{seen}");
    assert_eq!(seen["connectedPlugins"], 1, "{seen}");
    assert_eq!(seen["allowedPlugins"], 1, "{seen}");
    assert_eq!(seen["deleted"], "FacewireJsTest", "{seen}");
}

#[tokio::test]
async fn a_thousand_connections_leave_the_stage_drawing() {
    let dir = out_dir("flood");
    let api: SocketAddr = format!("127.0.0.1:{}", free_tcp_port()).parse().unwrap();
    let config = config(&dir, api, "\n[render]\nheadless_fps = 20\n");
    let child = headless(&dir, &config, "8", &[]);
    let mut first = connect(api).await;

    // A thousand clients at once: half only open a socket and idle, a quarter send garbage,
    // a quarter shake hands (at once) and never read.
    let mut sockets = Vec::new();
    let mut shaking = Vec::new();
    for i in 0..1000 {
        let Ok(tcp) = TcpStream::connect(api).await else {
            continue;
        };
        match i % 4 {
            0 | 1 => sockets.push(tcp),
            2 => {
                if tcp.writable().await.is_ok() {
                    let _ = tcp.try_write(b"GET / HTTP/1.1\r\n\r\n\0\xff{{{");
                }
                sockets.push(tcp);
            }
            _ => shaking.push(tokio::time::timeout(
                WAIT,
                tokio_tungstenite::client_async(format!("ws://{api}"), tcp),
            )),
        }
    }
    let connected = sockets.len() + shaking.len();
    let open: Vec<_> = futures_util::future::join_all(shaking)
        .await
        .into_iter()
        .filter_map(|r| r.ok()?.ok())
        .collect();
    assert!(connected > 900, "only {connected} connections opened");
    // A served plugin still gets answers, and injects while the others hang on.
    let r = ask(&mut first, "APIStateRequest", json!({})).await;
    assert_eq!(r["data"]["active"], true, "{r}");
    let report = report(child, &dir);
    drop(sockets);
    drop(open);
    let drawn = report["frames_drawn"].as_u64().unwrap();
    // Eight seconds at 20 frames per second: the stage kept its pace through the flood.
    assert!(drawn >= 120, "{drawn} frames in 8 s at 20 fps: {report}");
    let log = std::fs::read_to_string(dir.join("log.txt")).unwrap();
    assert!(!log.contains("panicked"), "{log}");
}

#[test]
fn a_port_in_use_leaves_the_run_without_the_api() {
    let dir = out_dir("port-in-use");
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let config = config(&dir, taken.local_addr().unwrap(), "");
    let child = headless(&dir, &config, "1", &[]);
    let report = report(child, &dir);
    assert!(report["frames_drawn"].as_u64().unwrap() > 0, "{report}");
    let log = std::fs::read_to_string(dir.join("log.txt")).unwrap();
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("API for stream tools is off"))
        .collect();
    assert_eq!(warnings.len(), 1, "{log}");
    assert!(
        warnings[0].contains("[api] listen") && warnings[0].contains("enabled = false"),
        "{log}"
    );
}

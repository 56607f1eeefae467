//! The Windows build, `facewire.exe`, run under Wine on a private Xvfb display (Mesa's llvmpipe
//! behind Wine's OpenGL): the commands a Windows user starts first, the offscreen ones through
//! the hidden-window WGL context, the stage with its screenshots, the relay and the API over
//! loopback, a taken port, a machine without a camera and Ctrl-C.
//!
//! It runs when `FACEWIRE_WINDOWS_EXE` names a built facewire.exe (`.ci/windows` builds one and
//! sets it) and says so and passes otherwise. Wine 8 lacks `ProcessPrng`, which Rust's standard
//! library takes from bcryptprimitives.dll on every Windows since 10: `.ci/wine-prefix` builds
//! `tests/wine/processprng.c` with mingw-w64 into the test's own Wine prefix (never into a
//! download).
//! A console closed by its window's X cannot be simulated under Wine; Ctrl-C goes through the
//! same handler (ctrlc's `termination` feature takes CTRL_C_EVENT and CTRL_CLOSE_EVENT).

use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use facewire::image::RgbaImage;
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

use crate::pipeline::{free_udp_port, start_xvfb_sized, Xvfb};
use crate::support::{changed_pixels, facewire_bin, repo, vmc_frame};

/// The environment variable naming the Windows build under test.
const EXE_ENV: &str = "FACEWIRE_WINDOWS_EXE";

/// A Wine prefix of the test's own, with the ProcessPrng shim, and a display.
struct Wine {
    exe: PathBuf,
    prefix: tempfile::TempDir,
    display: String,
    _xvfb: Xvfb,
}

impl Wine {
    /// Makes the prefix with the shim (`.ci/wine-prefix`) and starts Xvfb; `None`
    /// with a note when no Windows build is named.
    fn start() -> Option<Wine> {
        let Some(exe) = std::env::var_os(EXE_ENV).map(PathBuf::from) else {
            eprintln!(
                "note: {EXE_ENV} is not set; skipping the Windows build under Wine \
                 (.ci/windows builds facewire.exe and runs this test)"
            );
            return None;
        };
        let exe = std::fs::canonicalize(&exe)
            .unwrap_or_else(|e| panic!("{EXE_ENV}={}: {e}", exe.display()));
        for tool in ["wine", "wineboot", "x86_64-w64-mingw32-gcc", "Xvfb", "xwd"] {
            let found = Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .is_ok_and(|o| o.status.success());
            assert!(
                found,
                "{tool} is missing: apt-get install wine gcc-mingw-w64-x86-64 xvfb"
            );
        }
        let (xvfb, display) = start_xvfb_sized("1920x1080")?;
        let prefix = tempfile::tempdir().unwrap();
        let wine = Wine {
            exe,
            prefix,
            display,
            _xvfb: xvfb,
        };
        // wineboot, then the shim into the prefix's system32.
        let status = Command::new(repo().join(".ci/wine-prefix"))
            .arg(wine.prefix.path())
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), ".ci/wine-prefix: {status}");
        Some(wine)
    }

    /// `command` with this prefix and display.
    fn env<'a>(&self, command: &'a mut Command) -> &'a mut Command {
        command
            .env("WINEPREFIX", self.prefix.path())
            .env("WINEDEBUG", "-all")
            // No Mono or Gecko install prompts; the shim before Wine's own DLL.
            .env("WINEDLLOVERRIDES", "mscoree,mshtml=;bcryptprimitives=n,b")
            .env("DISPLAY", &self.display)
            .env_remove("WAYLAND_DISPLAY")
    }

    /// `wine facewire.exe ARGS` in `dir`.
    fn facewire(&self, dir: &Path, args: &[&str]) -> Command {
        let mut command = Command::new("wine");
        self.env(&mut command)
            .arg(&self.exe)
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null());
        command
    }

    /// Runs `args` in `dir` to the end (at most two minutes) and returns its output.
    fn output(&self, dir: &Path, args: &[&str]) -> Output {
        let mut child = self
            .facewire(dir, args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("facewire.exe {args:?} did not end in two minutes");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        child.wait_with_output().unwrap()
    }

    /// [`Wine::output`], asserting success.
    fn ok(&self, dir: &Path, args: &[&str]) -> Output {
        let output = self.output(dir, args);
        assert!(
            output.status.success(),
            "facewire.exe {args:?}: {}\nstdout:\n{}\nstderr:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// The user's `%APPDATA%` inside the prefix.
    fn appdata(&self) -> PathBuf {
        let users = self.prefix.path().join("drive_c/users");
        let user = std::fs::read_dir(&users)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .find(|n| n != "Public")
            .expect("a user folder in the prefix");
        users.join(user).join("AppData/Roaming")
    }
}

/// A configuration without the API (another run may hold its port) in `dir`.
fn quiet_config(dir: &Path) -> PathBuf {
    let path = dir.join("quiet.toml");
    std::fs::write(&path, "[api]\nenabled = false\n").unwrap();
    path
}

/// Whether `image` shows something in its middle that differs from its corner (a face on the
/// background).
fn shows_a_face(image: &RgbaImage) -> bool {
    let corner = image.pixel(2, 2);
    let (cx, cy) = (image.width / 2, image.height / 2);
    let mut differing = 0;
    for y in cy.saturating_sub(20)..cy + 20 {
        for x in cx.saturating_sub(20)..cx + 20 {
            let p = image.pixel(x, y);
            if p.iter().zip(corner).any(|(a, b)| a.abs_diff(b) > 40) {
                differing += 1;
            }
        }
    }
    differing > 800
}

#[test]
fn the_windows_build_runs_under_wine() {
    let Some(wine) = Wine::start() else {
        return;
    };
    let empty = tempfile::tempdir().unwrap();
    let dir = empty.path();
    let work = tempfile::tempdir().unwrap();

    // The version, then the first start outside a checkout: %APPDATA%\facewire.
    let version = wine.ok(dir, &["--version"]);
    assert!(
        String::from_utf8_lossy(&version.stdout).starts_with("facewire "),
        "{version:?}"
    );
    let config = wine.ok(dir, &["config"]);
    let said = String::from_utf8_lossy(&config.stdout);
    assert!(said.contains(r"AppData\Roaming\facewire"), "{said}");
    let written = wine.appdata().join("facewire/facewire.toml");
    assert!(written.is_file(), "{} was not written", written.display());
    assert!(wine.appdata().join("facewire/models").is_dir());
    wine.ok(dir, &["check"]);

    // Offscreen: the hidden-window WGL context.
    let quiet = quiet_config(work.path());
    let quiet = quiet.to_str().unwrap();
    let snap = work.path().join("snapshot.png");
    wine.ok(
        dir,
        &[
            "--config",
            quiet,
            "snapshot",
            "--size",
            "256x256",
            "--out",
            snap.to_str().unwrap(),
        ],
    );
    let image = RgbaImage::load_png(&snap).unwrap();
    assert_eq!((image.width, image.height), (256, 256));
    assert!(shows_a_face(&image), "the snapshot shows no face");
    // The same picture as the Linux build draws through EGL (both on llvmpipe).
    let linux = work.path().join("linux.png");
    let status = Command::new(facewire_bin())
        .args(["--config", quiet, "snapshot", "--size", "256x256", "--out"])
        .arg(&linux)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "the Linux snapshot: {status}");
    let linux = RgbaImage::load_png(&linux).unwrap();
    let differing = changed_pixels(&image, &linux, 8).len();
    assert!(
        differing < 256 * 256 / 100,
        "{differing} pixels differ between the WGL and the EGL snapshot"
    );
    let sheet = work.path().join("sheet.png");
    wine.ok(
        dir,
        &[
            "--config",
            quiet,
            "sheet",
            "--size",
            "96",
            "--out",
            sheet.to_str().unwrap(),
        ],
    );
    assert!(RgbaImage::load_png(&sheet).unwrap().width >= 96 * 4);
    wine.ok(
        dir,
        &[
            "--config",
            quiet,
            "run",
            "--headless",
            "--size",
            "320x180",
            "--exit-after",
            "2",
        ],
    );

    // The stage and the panel in windows, with their screenshots.
    let shots = work.path().join("shots");
    let output = wine.ok(
        dir,
        &[
            "--config",
            quiet,
            "run",
            "--exit-after",
            "6",
            "--screenshots",
            shots.to_str().unwrap(),
        ],
    );
    let stage = RgbaImage::load_png(&shots.join("stage.png")).unwrap_or_else(|e| {
        panic!(
            "no stage screenshot ({e}):\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let saved = repo().join("target/wine-tests");
    std::fs::create_dir_all(&saved).unwrap();
    stage.save_png(&saved.join("stage.png")).unwrap();
    if let Ok(panel) = RgbaImage::load_png(&shots.join("panel.png")) {
        panel.save_png(&saved.join("panel.png")).unwrap();
    }
    assert_eq!((stage.width, stage.height), (1280, 720));
    let corner = stage.pixel(10, 10);
    assert!(corner[1] > 150 && corner[0] < 40, "stage corner {corner:?}");
    assert!(shows_a_face(&stage), "the stage shows no face");

    // The relay: VMC in on loopback, VMC out, and the API answering a client.
    let (listen, api) = (free_udp_port(), free_tcp_port());
    let renderer = UdpSocket::bind("127.0.0.1:0").unwrap();
    renderer
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let forward = renderer.local_addr().unwrap().to_string();
    let api_config = work.path().join("api.toml");
    std::fs::write(
        &api_config,
        format!("[api]\nenabled = true\nlisten = \"127.0.0.1:{api}\"\n"),
    )
    .unwrap();
    let listen_at = format!("127.0.0.1:{listen}");
    let relay_log = work.path().join("relay.log");
    let mut relay = wine
        .facewire(
            dir,
            &[
                "--config",
                api_config.to_str().unwrap(),
                "relay",
                "--listen",
                &listen_at,
                "--forward",
                &forward,
            ],
        )
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&relay_log).unwrap())
        .spawn()
        .unwrap();
    let answer = api_state(([127, 0, 0, 1], api).into());
    assert!(
        answer.contains("APIStateResponse"),
        "the API answered {answer}"
    );
    let phone = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut jaw_seen = false;
    let mut buf = [0u8; 65536];
    let deadline = Instant::now() + Duration::from_secs(30);
    while !jaw_seen && Instant::now() < deadline {
        let frame = vmc_frame(&[("jawOpen", 0.8)]);
        phone.send_to(&frame, &listen_at).unwrap();
        if let Ok(n) = renderer.recv(&mut buf) {
            jaw_seen = buf[..n].windows(7).any(|w| w == b"JawOpen");
        }
    }
    // Ctrl-C (SIGINT, which Wine hands to the console's handlers as CTRL_C_EVENT) ends it
    // cleanly.
    interrupt(&relay);
    let status = wait(&mut relay, Duration::from_secs(30));
    let log = std::fs::read_to_string(&relay_log).unwrap_or_default();
    assert!(jaw_seen, "nothing forwarded carried JawOpen:\n{log}");
    assert_eq!(status, Some(0), "the relay after Ctrl-C:\n{log}");

    // A taken port is named, with what to do.
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let taken_at = taken.local_addr().unwrap().to_string();
    let output = wine.output(
        dir,
        &[
            "--config",
            quiet,
            "relay",
            "--listen",
            &taken_at,
            "--exit-after",
            "5",
        ],
    );
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{said}");
    assert!(
        said.contains(&taken_at) && said.contains("--listen"),
        "the taken port is not named with a way out:\n{said}"
    );

    // No camera: said, and ended.
    let output = wine.output(dir, &["webcam", "--list"]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(said.contains("camera"), "{said}");
}

/// A free TCP port on loopback.
fn free_tcp_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Asks the API at `addr` for its state (retrying until it listens, a minute at most) and
/// returns the answer's text.
fn api_state(addr: SocketAddr) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(60);
        let tcp = loop {
            if let Ok(tcp) = tokio::net::TcpStream::connect(addr).await {
                break tcp;
            }
            assert!(Instant::now() < deadline, "the API never listened on {addr}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let (mut ws, _) = tokio_tungstenite::client_async(format!("ws://{addr}"), tcp)
            .await
            .expect("handshake");
        let request = r#"{"apiName":"VTubeStudioPublicAPI","apiVersion":"1.0","requestID":"wine","messageType":"APIStateRequest"}"#;
        ws.send(Message::text(request)).await.unwrap();
        match tokio::time::timeout(Duration::from_secs(20), ws.next()).await {
            Ok(Some(Ok(Message::Text(text)))) => text.to_string(),
            other => format!("{other:?}"),
        }
    })
}

/// Sends SIGINT to `child`.
fn interrupt(child: &Child) {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// The exit code of `child` once it ended, `None` (after killing it) when it did not within
/// `limit`.
fn wait(child: &mut Child, limit: Duration) -> Option<i32> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

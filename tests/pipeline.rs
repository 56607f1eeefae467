//! The whole pipeline through the `facewire` binary: snapshot, run --headless, listen, the
//! stage window under Xvfb, and configuration errors.

use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use facewire::image::RgbaImage;

use crate::support::{changed_pixels, facewire_bin, repo, vmc_frame};

pub(crate) fn facewire() -> Command {
    let mut cmd = Command::new(facewire_bin());
    cmd.current_dir(repo()).env("FACEWIRE_LOG", "info");
    cmd
}

fn check(output: Output, what: &str) -> Output {
    assert!(
        output.status.success(),
        "{what} failed: {}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn out_dir(name: &str) -> PathBuf {
    let dir = repo().join("target/pipeline-tests").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn snapshot(weights: &str, morph: &str, size: &str, out: &Path) -> RgbaImage {
    snapshot_with(&[], weights, morph, size, out)
}

fn snapshot_with(extra: &[&str], weights: &str, morph: &str, size: &str, out: &Path) -> RgbaImage {
    check(
        facewire()
            .args([
                "snapshot",
                "--weights",
                weights,
                "--morph",
                morph,
                "--size",
                size,
            ])
            .args(extra)
            .arg("--out")
            .arg(out)
            .output()
            .unwrap(),
        "snapshot",
    );
    RgbaImage::load_png(out).unwrap()
}

/// The bounding box and count of pixels that differ by more than `tol` in any channel.
fn changed_box(a: &RgbaImage, b: &RgbaImage, tol: u8) -> Option<(u32, u32, u32, u32, usize)> {
    let mut bbox: Option<(u32, u32, u32, u32)> = None;
    let mut count = 0;
    for y in 0..a.height {
        for x in 0..a.width {
            let (p, q) = (a.pixel(x, y), b.pixel(x, y));
            if p.iter().zip(q).any(|(u, v)| u.abs_diff(v) > tol) {
                count += 1;
                bbox = Some(match bbox {
                    None => (x, y, x, y),
                    Some((x0, y0, x1, y1)) => (x0.min(x), y0.min(y), x1.max(x), y1.max(y)),
                });
            }
        }
    }
    bbox.map(|(x0, y0, x1, y1)| (x0, y0, x1, y1, count))
}

#[test]
fn jaw_open_changes_the_mouth_region_only() {
    let dir = out_dir("jaw");
    let neutral = snapshot("", "cpu", "400x400", &dir.join("neutral.png"));
    let open = snapshot("jawOpen=1", "cpu", "400x400", &dir.join("jaw_open.png"));
    let (x0, y0, x1, y1, count) =
        changed_box(&neutral, &open, 8).expect("jawOpen=1 must change the image");
    let cx = (x0 + x1) as f32 / 2.0 / 400.0;
    let cy = (y0 + y1) as f32 / 2.0 / 400.0;
    // The mouth sits in the lower middle of the framed face.
    assert!((0.35..0.65).contains(&cx), "change centred at x={cx}");
    assert!(
        cy > 0.5,
        "change centred at y={cy}, expected the lower half"
    );
    assert!(
        (x1 - x0) < 240 && y0 > 150,
        "change spreads over ({x0},{y0})-({x1},{y1})"
    );
    assert!(count > 200, "only {count} pixels changed");
    assert!(
        count < 400 * 400 / 6,
        "{count} pixels changed: more than the mouth"
    );
}

#[test]
fn gpu_and_cpu_snapshots_agree_with_the_head_still_and_turned() {
    let dir = out_dir("paths");
    let weights = "jawOpen=0.7,eyeBlinkLeft=1,mouthSmileRight=0.8,browInnerUp=0.6";
    let mut images = Vec::new();
    for (name, extra) in [("still", &[][..]), ("turned", &["--head", "25,10,-5"][..])] {
        let cpu = snapshot_with(
            extra,
            weights,
            "cpu",
            "320x320",
            &dir.join(format!("{name}_cpu.png")),
        );
        let gpu = snapshot_with(
            extra,
            weights,
            "gpu",
            "320x320",
            &dir.join(format!("{name}_gpu.png")),
        );
        let diff = cpu.compare(&gpu, 1).unwrap();
        assert!(
            diff.fraction_within() >= 0.999,
            "{name}: cpu and gpu differ on {} of {} pixels (max {})",
            diff.pixels_over,
            diff.pixels,
            diff.max_channel
        );
        images.push(cpu);
    }
    // The head rotation is applied: the turned face is a different picture.
    let diff = images[0].compare(&images[1], 8).unwrap();
    assert!(diff.pixels_over > 320 * 320 / 20, "{diff:?}");
}

pub(crate) fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Sends `datagram` to `to` every 20 ms until `child` exits or `limit` passes.
fn feed_until_exit(child: &mut Child, to: SocketAddr, datagram: &[u8], limit: Duration) {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let start = Instant::now();
    while start.elapsed() < limit {
        if child.try_wait().unwrap().is_some() {
            return;
        }
        let _ = sock.send_to(datagram, to);
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    panic!("facewire did not exit within {limit:?}");
}

/// Sends the two datagrams in turn to `to` every 20 ms until `child` exits or `limit` passes.
fn feed_alternating_until_exit(
    child: &mut Child,
    to: SocketAddr,
    datagrams: [Vec<u8>; 2],
    limit: Duration,
) {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let start = Instant::now();
    let mut i = 0;
    while start.elapsed() < limit {
        if child.try_wait().unwrap().is_some() {
            return;
        }
        let _ = sock.send_to(&datagrams[i % 2], to);
        i += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    panic!("facewire did not exit within {limit:?}");
}

/// The text of config/facewire.toml for a copy in another folder: its expressions file (named
/// relative to the file's folder) is the repository's, named by its full path.
pub(crate) fn shipped_config() -> String {
    let text = std::fs::read_to_string(repo().join("config/facewire.toml")).unwrap();
    let line = "file = \"expressions.toml\"";
    assert!(
        text.contains(line),
        "config/facewire.toml no longer has {line}"
    );
    let full = repo().join("config/expressions.toml");
    text.replace(line, &format!("file = {:?}", full.display().to_string()))
}

/// The default configuration, except that a face counts as lost only after 2 s of silence: on a
/// loaded test machine the sending thread can stall longer than the default 0.15 s, and the
/// tests that use this are about the pipeline, not about tracking loss.
pub(crate) fn patient_config(dir: &Path) -> PathBuf {
    let config = dir.join("patient.toml");
    let defaults = shipped_config();
    let patient = defaults.replace("stale_after = 0.15", "stale_after = 2.0");
    assert_ne!(
        patient, defaults,
        "config/facewire.toml no longer sets stale_after = 0.15"
    );
    std::fs::write(&config, phones_off(&patient)).unwrap();
    config
}

/// The phone listeners of `[ingest]` and their usual ports, as config/facewire.toml lists them.
const PHONE_LISTENERS: [(&str, u16); 5] = [
    ("ifacialmocap", 49983),
    ("facemotion3d", 49993),
    ("livelinkface", 11111),
    ("vtubestudio", 11125),
    ("openseeface", 11573),
];

/// `toml` with the phone listeners off. The tests run at once and every listener must bind, so a
/// live run listens only where its test sends (its own OSC port), never on the usual ports.
pub(crate) fn phones_off(toml: &str) -> String {
    if !toml.contains("[ingest]") {
        let off: String = PHONE_LISTENERS
            .iter()
            .map(|(key, _)| format!("{key} = []\n"))
            .collect();
        return format!("{toml}\n[ingest]\n{off}");
    }
    let mut out = toml.to_string();
    for (key, port) in PHONE_LISTENERS {
        let line = format!("{key} = [\"0.0.0.0:{port}\"]");
        assert!(
            out.contains(&line),
            "the configuration no longer has {line}"
        );
        out = out.replace(&line, &format!("{key} = []"));
    }
    out
}

/// config/facewire.toml with the phone listeners off ([`phones_off`]), written into `dir`.
pub(crate) fn live_config(dir: &Path) -> PathBuf {
    let config = dir.join("live.toml");
    let defaults = shipped_config();
    std::fs::write(&config, phones_off(&defaults)).unwrap();
    config
}

#[test]
fn headless_run_over_udp_matches_the_snapshot() {
    let dir = out_dir("run");
    let port = free_udp_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let last = dir.join("last.png");
    let config = patient_config(&dir);
    let mut child = facewire()
        .arg("--config")
        .arg(&config)
        .args(["run", "--headless", "--exit-after", "3", "--morph", "cpu"])
        .args(["--size", "320x320", "--listen", &addr.to_string()])
        .arg("--out")
        .arg(&last)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A real tracker never repeats a value exactly; identical frames would read as a frozen
    // sender and fade to neutral. Alternate between two values a hair apart.
    feed_alternating_until_exit(
        &mut child,
        addr,
        [
            vmc_frame(&[("JawOpen", 1.0)]),
            vmc_frame(&[("JawOpen", 0.9995)]),
        ],
        Duration::from_secs(60),
    );
    let output = child.wait_with_output().unwrap();
    let output = check(output, "run --headless");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert!(report["frames_drawn"].as_u64().unwrap() > 10, "{report}");
    assert!(report["frames_received"].as_u64().unwrap() > 10, "{report}");
    assert_eq!(report["malformed"].as_u64(), Some(0), "{report}");
    assert!(report["frames_dropped"].is_u64(), "{report}");
    assert_eq!(report["tracking"]["state"], "tracking", "{report}");
    let p50 = report["sample_age_us"]["p50"].as_u64().unwrap();
    let p99 = report["sample_age_us"]["p99"].as_u64().unwrap();
    assert!(p50 <= p99, "{report}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&addr.to_string()),
        "no listening line:\n{stderr}"
    );

    let got = RgbaImage::load_png(&last).unwrap();
    let want = snapshot("jawOpen=1", "cpu", "320x320", &dir.join("want.png"));
    let diff = got.compare(&want, 1).unwrap();
    assert!(
        diff.fraction_within() >= 0.999,
        "headless run differs from the snapshot on {} pixels (max {})",
        diff.pixels_over,
        diff.max_channel
    );
}

#[test]
fn listen_prints_frames_as_json_lines() {
    let port = free_udp_port();
    let mut child = facewire()
        .arg("--config")
        .arg(live_config(&out_dir("listen")))
        .args(["listen", "--port", &port.to_string(), "--count", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let to: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    feed_until_exit(
        &mut child,
        to,
        &vmc_frame(&[("jawOpen", 0.5), ("eyeBlink_L", 0.25)]),
        Duration::from_secs(30),
    );
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    assert!(child.wait().unwrap().success());
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Tracking state lines come between the frames: the face is acquired as data arrives.
    let states: Vec<&str> = lines.iter().filter_map(|v| v["state"].as_str()).collect();
    assert!(states.contains(&"reacquire"), "{stdout}");
    let frames: Vec<&serde_json::Value> =
        lines.iter().filter(|v| v.get("source").is_some()).collect();
    assert_eq!(frames.len(), 2, "{stdout}");
    for v in frames {
        assert_eq!(v["source"], "vmc");
        assert!(v["from"].as_str().unwrap().starts_with("127.0.0.1:"));
        assert_eq!(v["weights"]["jawOpen"], 0.5);
        assert_eq!(v["weights"]["eyeBlinkLeft"], 0.25);
        assert!(v["t"].as_f64().unwrap() >= 0.0);
    }
}

#[test]
fn listen_prints_a_replayed_take_and_ends_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let take = dir.path().join("take.csv");
    std::fs::write(&take, llf_csv(0.5)).unwrap();
    let output = check(
        facewire()
            .arg("--config")
            .arg(live_config(&out_dir("listen-replay")))
            .args(["listen", "--speed", "4", "--replay"])
            .arg(&take)
            .output()
            .unwrap(),
        "listen --replay",
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let frames: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v.get("source").is_some())
        .collect();
    // Every row of the take, in order, and then the command ends by itself.
    assert_eq!(frames.len(), 30, "{stdout}");
    let jaw = |v: &serde_json::Value| v["weights"]["jawOpen"].as_f64().unwrap();
    assert!((jaw(&frames[0]) - 0.7).abs() < 1e-3, "{stdout}");
    assert!(
        frames.iter().all(|v| v["source"] == "livelinkface"),
        "{stdout}"
    );
}

#[test]
fn bad_config_is_reported_with_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, "[window]\nwidth = 640\nbackgrond = \"#000000\"\n").unwrap();
    let output = facewire()
        .arg("--config")
        .arg(&path)
        .args(["snapshot", "--out"])
        .arg(dir.path().join("x.png"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bad.toml:3:1"), "{stderr}");
    assert!(stderr.contains("did you mean `background`?"), "{stderr}");
}

#[test]
fn unknown_channel_in_weights_suggests_the_nearest() {
    let dir = tempfile::tempdir().unwrap();
    let output = facewire()
        .args(["snapshot", "--weights", "eyeBlinkLft=1", "--out"])
        .arg(dir.path().join("x.png"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("did you mean `eyeBlinkLeft`?"), "{stderr}");
}

/// Reads an XWD screenshot of a 24-bit TrueColor screen (ZPixmap, 3 or 4 bytes per pixel, red in
/// the high byte, as Xvfb writes it) into RGBA.
fn read_xwd(bytes: &[u8]) -> Option<RgbaImage> {
    let field = |i: usize| -> Option<u32> {
        Some(u32::from_be_bytes(
            bytes.get(i * 4..i * 4 + 4)?.try_into().ok()?,
        ))
    };
    let (width, height) = (field(4)?, field(5)?);
    let byte_order = field(7)?;
    let bytes_per_pixel = field(11)? as usize / 8;
    let stride = field(12)? as usize;
    if !(3..=4).contains(&bytes_per_pixel) || stride < width as usize * bytes_per_pixel {
        return None;
    }
    // The pixels fill the end of the file, after the header, window name and colour map.
    let start = bytes.len().checked_sub(stride * height as usize)?;
    let mut data = Vec::with_capacity(width as usize * height as usize * 4);
    for y in 0..height as usize {
        for x in 0..width as usize {
            let i = start + y * stride + x * bytes_per_pixel;
            let px = bytes.get(i..i + bytes_per_pixel)?;
            let v = if byte_order == 0 {
                px.iter().rev().fold(0u32, |v, &b| (v << 8) | b as u32)
            } else {
                px.iter().fold(0u32, |v, &b| (v << 8) | b as u32)
            };
            data.extend_from_slice(&[(v >> 16) as u8, (v >> 8) as u8, v as u8, 255]);
        }
    }
    Some(RgbaImage {
        width,
        height,
        data,
    })
}

pub(crate) struct Xvfb(Child);

impl Drop for Xvfb {
    fn drop(&mut self) {
        // SIGTERM first, so the server removes its lock and socket; a killed one leaves them.
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

/// Starts a private Xvfb display, or says why not (`None`).
fn start_xvfb() -> Option<(Xvfb, String)> {
    start_xvfb_sized("1600x900")
}

/// [`start_xvfb`] with a screen of `size` (`WIDTHxHEIGHT`).
pub(crate) fn start_xvfb_sized(size: &str) -> Option<(Xvfb, String)> {
    let has = |tool: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has("Xvfb") || !has("xwd") {
        eprintln!(
            "note: Xvfb or xwd is missing; skipping a window test (apt-get install xvfb x11-apps)"
        );
        return None;
    }
    // Xvfb picks a free display itself and writes its number once it accepts connections, so
    // window tests can run in parallel and a display left behind by another run is never used.
    let mut child = Command::new("Xvfb")
        .args([
            "-displayfd",
            "1",
            "-screen",
            "0",
            &format!("{size}x24"),
            "-nolisten",
            "tcp",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut number = String::new();
    let stdout = child.stdout.take().unwrap();
    let xvfb = Xvfb(child);
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut number).unwrap();
    let number = number.trim();
    assert!(
        !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()),
        "Xvfb did not start (it gave no display number)"
    );
    let display = format!(":{number}");
    Some((xvfb, display))
}

/// Starts facewire with `config` and `args` on `display` and waits until its stage is ready.
fn open_stage(display: &str, config: &Path, args: &[&str]) -> (Child, ChildLog) {
    let mut child = facewire()
        .env("DISPLAY", display)
        .arg("--config")
        .arg(config)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut log = ChildLog::new(&mut child);
    if !log.wait_for("stage ready") {
        let _ = child.kill();
        panic!("the stage never became ready:\n{}", log.text);
    }
    (child, log)
}

/// Runs facewire with `args` on `display`, waits for its stage, calls `ready` with the log, lets
/// it draw for `settle`, and returns a screenshot of the display and the child (still running
/// or exited) with its log.
fn screenshot_stage_then(
    display: &str,
    args: &[&str],
    settle: Duration,
    ready: impl FnOnce(&mut ChildLog),
) -> (RgbaImage, Child, String) {
    let config = live_config(&out_dir("window"));
    let (child, mut log) = open_stage(display, &config, args);
    ready(&mut log);
    std::thread::sleep(settle);
    let shot = Command::new("xwd")
        .args(["-root", "-silent", "-display", display])
        .output()
        .unwrap();
    log.drain();
    let screen = read_xwd(&shot.stdout).expect("xwd output of a TrueColor screen");
    (screen, child, log.text)
}

/// What a child writes to stderr, read line by line on a thread.
struct ChildLog {
    lines: std::sync::mpsc::Receiver<String>,
    /// Every line read so far.
    text: String,
}

impl ChildLog {
    /// Takes `child`'s stderr (which must be piped).
    fn new(child: &mut Child) -> ChildLog {
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        ChildLog {
            lines,
            text: String::new(),
        }
    }

    /// Reads until the log holds `what`; false when a minute passes or the child closes its
    /// stderr first.
    fn wait_for(&mut self, what: &str) -> bool {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.text.contains(what) {
            match self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(line) => {
                    self.text.push_str(&line);
                    self.text.push('\n');
                }
                Err(_) => return false,
            }
        }
        true
    }

    /// Adds what has arrived without waiting.
    fn drain(&mut self) {
        for line in self.lines.try_iter() {
            self.text.push_str(&line);
            self.text.push('\n');
        }
    }

    /// Adds everything up to the end of the child's stderr.
    fn rest(&mut self) {
        for line in self.lines.iter() {
            self.text.push_str(&line);
            self.text.push('\n');
        }
    }
}

/// One step of a [`scripted_run`]: once the log satisfies `when`, `then` runs with the log.
pub(crate) struct Step<'a> {
    when: Box<dyn Fn(&str) -> bool + 'a>,
    then: Box<dyn FnMut(&str) + 'a>,
}

/// A [`Step`]: when the log satisfies `when`, do `then`.
pub(crate) fn step<'a>(when: impl Fn(&str) -> bool + 'a, then: impl FnMut(&str) + 'a) -> Step<'a> {
    Step {
        when: Box::new(when),
        then: Box::new(then),
    }
}

/// The steps of a headless run's hot-reload check of `file`: once the renderer is ready and the
/// log says `watching` it, write the first text (a valid change); once `reloaded` shows once,
/// the second (a broken file); once `failed` shows, check that the log locates the error at
/// `location`, then write the third (the fix); then wait for the second reload.
pub(crate) fn reload_steps<'a>(
    file: &'a Path,
    watching: &'a str,
    reloaded: &'a str,
    failed: &'a str,
    location: &'a str,
    [good, broken, fixed]: [&'a str; 3],
) -> Vec<Step<'a>> {
    let write = move |text: &str| std::fs::write(file, text).unwrap();
    let reloads = move |log: &str| log.matches(reloaded).count();
    vec![
        step(
            move |log| log.contains("headless renderer ready") && log.contains(watching),
            move |_| {
                std::thread::sleep(Duration::from_millis(300));
                write(good);
            },
        ),
        step(move |log| reloads(log) == 1, move |_| write(broken)),
        step(
            move |log| log.contains(failed),
            move |log| {
                assert!(log.contains(location), "the error is located:\n{log}");
                write(fixed);
            },
        ),
        step(move |log| reloads(log) == 2, |_| {}),
    ]
}

/// Runs `child` (its stderr piped) to its exit, reading its log every 20 ms and taking `steps`
/// in order, each once the log satisfies it; `tick` runs before each read (to send a frame,
/// say). Panics, with the log, when a minute passes, when the child fails, or when the run
/// ended before every step was taken. Returns the whole log.
pub(crate) fn scripted_run(
    mut child: Child,
    mut tick: impl FnMut(),
    mut steps: Vec<Step>,
) -> String {
    let mut log = ChildLog::new(&mut child);
    let start = Instant::now();
    let mut at = 0;
    while child.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "stuck at step {at}:\n{}",
            log.text
        );
        tick();
        std::thread::sleep(Duration::from_millis(20));
        log.drain();
        if let Some(step) = steps.get_mut(at) {
            if (step.when)(&log.text) {
                (step.then)(&log.text);
                at += 1;
            }
        }
    }
    log.rest();
    assert!(child.wait().unwrap().success(), "{}", log.text);
    assert_eq!(
        at,
        steps.len(),
        "not every step happened within the run:\n{}",
        log.text
    );
    log.text
}

/// A top-level window's title and place on the screen, from `xwininfo -root -tree`.
#[derive(Debug, Clone, PartialEq)]
struct Placed {
    title: String,
    x: i32,
    y: i32,
    width: i32,
    height: i32,
}

/// The top-level windows on `display` that have a title (none when xwininfo is missing).
fn windows_on(display: &str) -> Vec<Placed> {
    let Ok(out) = Command::new("xwininfo")
        .args(["-root", "-tree", "-display", display])
        .output()
    else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut found = Vec::new();
    for line in text.lines() {
        // `     0x1a00002 "facewire": ("facewire" "facewire")  1280x720+0+0  +0+0`
        let Some(start) = line.find('"') else {
            continue;
        };
        let Some(len) = line[start + 1..].find('"') else {
            continue;
        };
        let title = line[start + 1..start + 1 + len].to_string();
        let Some(geometry) = line
            .split_whitespace()
            .rev()
            .nth(1)
            .filter(|g| g.contains('x'))
        else {
            continue;
        };
        let parts: Vec<i32> = geometry
            .split(['x', '+'])
            .filter_map(|v| v.parse().ok())
            .collect();
        if let [width, height, x, y] = parts[..] {
            found.push(Placed {
                title,
                x,
                y,
                width,
                height,
            });
        }
    }
    found
}

/// On a 1920x1080 screen the stage and the control panel open side by side: both wholly on the
/// screen, not overlapping (the panel does not hide the stage's connect card).
#[test]
fn stage_and_panel_open_apart_on_a_1920x1080_screen() {
    let Some((_xvfb, display)) = start_xvfb_sized("1920x1080") else {
        return;
    };
    if Command::new("xwininfo").arg("-version").output().is_err() {
        eprintln!("note: xwininfo is missing; skipping (apt-get install x11-utils)");
        return;
    }
    let config = live_config(&out_dir("window-layout"));
    let listen = format!("127.0.0.1:{}", free_udp_port());
    let mut child = facewire()
        .env("DISPLAY", &display)
        .arg("--config")
        .arg(&config)
        .args(["run", "--exit-after", "20", "--listen", &listen])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut log = ChildLog::new(&mut child);
    let open = log.wait_for("control panel open");
    std::thread::sleep(Duration::from_millis(500));
    let windows = windows_on(&display);
    let _ = child.kill();
    let _ = child.wait();
    assert!(open, "the panel never opened:\n{}", log.text);
    let find = |title: &str| {
        windows
            .iter()
            .find(|w| w.title == title)
            .cloned()
            .unwrap_or_else(|| panic!("no window `{title}`: {windows:?}"))
    };
    let stage = find("facewire");
    let panel = find("facewire panel");
    for w in [&stage, &panel] {
        assert!(
            w.x >= 0 && w.y >= 0 && w.x + w.width <= 1920 && w.y + w.height <= 1080,
            "off the screen: {w:?}"
        );
    }
    let apart = stage.x + stage.width <= panel.x
        || panel.x + panel.width <= stage.x
        || stage.y + stage.height <= panel.y
        || panel.y + panel.height <= stage.y;
    assert!(apart, "the panel covers the stage: {stage:?} {panel:?}");
    assert_eq!(
        (stage.width, stage.height),
        (1280, 720),
        "the stage keeps its size"
    );
}

/// SIGTERM (a service manager, `kill`, a logout) closes the stage window and ends `run` with
/// status 0, as Ctrl-C in its terminal does.
#[cfg(unix)]
#[test]
fn sigterm_closes_the_stage_window_with_status_0() {
    let Some((_xvfb, display)) = start_xvfb() else {
        return;
    };
    let config = live_config(&out_dir("window-sigterm"));
    let listen = format!("127.0.0.1:{}", free_udp_port());
    let (mut child, log) = open_stage(
        &display,
        &config,
        &["run", "--no-panel", "--listen", &listen],
    );
    std::thread::sleep(Duration::from_millis(500));
    let sent = Instant::now();
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if sent.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("the stage still runs 10 s after SIGTERM:\n{}", log.text);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = sent.elapsed();
    assert_eq!(
        status.code(),
        Some(0),
        "after SIGTERM: {status}\n{}",
        log.text
    );
    assert!(took < Duration::from_secs(2), "it took {took:?} to close");
}

#[test]
fn stage_window_shows_the_head_under_xvfb() {
    let Some((_xvfb, display)) = start_xvfb() else {
        return;
    };
    let listen = format!("127.0.0.1:{}", free_udp_port());
    // A phone that streams a neutral face once the connect card shows: the card gives way to
    // the head. (A phone already streaming at start skips the card.)
    let to: SocketAddr = listen.parse().unwrap();
    let mut phone = None;
    let (screen, mut child, log) = screenshot_stage_then(
        &display,
        &[
            "run",
            "--exit-after",
            "8",
            "--listen",
            &listen,
            "--no-panel",
        ],
        Duration::from_millis(1500),
        |log| {
            log.wait_for("Connect your phone");
            phone = Some(std::thread::spawn(move || {
                let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
                let frame = vmc_frame(&[("jawOpen", 0.0)]);
                for _ in 0..300 {
                    let _ = sock.send_to(&frame, to);
                    std::thread::sleep(Duration::from_millis(20));
                }
            }));
        },
    );
    let status = child.wait().unwrap();
    if let Some(phone) = phone {
        phone.join().unwrap();
    }
    assert!(status.success(), "facewire exited with {status}:\n{log}");
    assert!(
        log.contains("Connect your phone"),
        "no connect card:\n{log}"
    );
    assert!(
        log.contains("Connected: face data from VMC"),
        "the first frame is not announced:\n{log}"
    );
    assert!(
        !log.contains("control panel open"),
        "--no-panel opened the panel:\n{log}"
    );
    screen
        .save_png(&out_dir("window").join("screen.png"))
        .unwrap();
    // The window (1280x720 at the top-left) shows the chroma background and a head in the middle.
    let green = screen.pixel(20, 360);
    assert!(
        green[1] > 150 && green[0] < 40 && green[2] < 100,
        "background {green:?} is not the chroma green"
    );
    let centre = screen.pixel(640, 330);
    assert!(
        centre[0] > 100 && centre[1] < 240,
        "centre {centre:?} does not look like the face"
    );
}

/// A Live Link Face CSV of our own: `seconds` at 60 fps, the jaw opening and closing twice a
/// second (between 0.7 and 1.0, so a meter caught at any moment shows it open) and the head
/// turning from side to side.
fn llf_csv(seconds: f64) -> String {
    let mut text = String::from("Timecode,BlendShapeCount,JawOpen,EyeBlinkLeft,HeadYaw\n");
    let frames = (seconds * 60.0) as u32;
    for i in 0..frames {
        let t = f64::from(i) / 60.0;
        let jaw = 0.85 - 0.15 * (t * 4.0 * std::f64::consts::PI).cos();
        let yaw = 0.3 * (t * std::f64::consts::PI).sin();
        text.push_str(&format!(
            "00:00:{:02}:{:02}.000,52,{jaw:.4},0.0,{yaw:.4}\n",
            i / 60,
            i % 60
        ));
    }
    text
}

#[test]
fn stage_and_panel_play_a_replay_and_take_screenshots() {
    // A 1920x1080 screen: the stage at its full size, the panel in the room beside it.
    let Some((_xvfb, display)) = start_xvfb_sized("1920x1080") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("take.csv");
    std::fs::write(&csv, llf_csv(30.0)).unwrap();
    let shots = dir.path().join("shots");
    // The built-in defaults without the API: another test's run may hold its port, and the
    // message saying so would push the jaw's meter below the panel's edge.
    let config = dir.path().join("facewire.toml");
    std::fs::write(&config, "[api]\nenabled = false\n").unwrap();
    let output = check(
        facewire()
            .env("DISPLAY", &display)
            .arg("--config")
            .arg(&config)
            .args(["run", "--exit-after", "6", "--replay"])
            .arg(&csv)
            .arg("--screenshots")
            .arg(&shots)
            .output()
            .unwrap(),
        "run with the panel",
    );
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(log.contains("control panel open"), "{log}");
    let stage = RgbaImage::load_png(&shots.join("stage.png")).unwrap();
    let panel = RgbaImage::load_png(&shots.join("panel.png")).unwrap();
    for (name, image) in [("stage.png", &stage), ("panel.png", &panel)] {
        image.save_png(&out_dir("window").join(name)).unwrap();
    }
    assert_eq!((stage.width, stage.height), (1280, 720));
    assert_eq!((panel.width, panel.height), (1920 - 1280 - 8, 760));
    // The stage shows only the avatar on the chroma background.
    let corner = stage.pixel(10, 10);
    assert!(corner[1] > 150 && corner[0] < 40, "stage corner {corner:?}");
    let centre = stage.pixel(640, 330);
    assert!(
        centre[0] > 100 && centre[1] < 240,
        "stage centre {centre:?}"
    );
    // The panel is drawn: a dark background with light text and coloured meters.
    let background = panel.pixel(panel.width - 5, panel.height - 5);
    assert!(
        background[..3].iter().all(|&c| c < 80),
        "panel background {background:?}"
    );
    let light = (0..panel.height)
        .flat_map(|y| (0..200).map(move |x| (x, y)))
        .filter(|&(x, y)| panel.pixel(x, y)[..3].iter().all(|&c| c > 150))
        .count();
    assert!(
        light > 500,
        "the panel's channel names are missing ({light} light pixels)"
    );
    let blue_meter = (0..panel.height)
        .flat_map(|y| (0..panel.width).map(move |x| (x, y)))
        .filter(|&(x, y)| {
            let p = panel.pixel(x, y);
            p[2] > 180 && p[0] < 120
        })
        .count();
    assert!(
        blue_meter > 50,
        "no calibrated meter shows the jaw moving ({blue_meter} blue pixels)"
    );
}

#[test]
fn calibration_shows_its_prompt_beside_the_face() {
    let Some((_xvfb, display)) = start_xvfb() else {
        return;
    };
    let profiles = tempfile::tempdir().unwrap();
    let listen = format!("127.0.0.1:{}", free_udp_port());
    let profiles_arg = profiles.path().to_string_lossy().to_string();
    // Until the phone's first frame the stage shows the connect card; a phone that streams a
    // neutral face starts the routine and its prompt.
    let to: SocketAddr = listen.parse().unwrap();
    let mut phone = None;
    let (screen, mut child, log) = screenshot_stage_then(
        &display,
        &[
            "calibrate",
            "--performer",
            "tester",
            "--profiles",
            &profiles_arg,
            "--listen",
            &listen,
        ],
        Duration::from_millis(2500),
        |log| {
            log.wait_for("Connect your phone");
            phone = Some(std::thread::spawn(move || {
                let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
                for i in 0..300 {
                    // A live face never repeats a value exactly.
                    let frame = vmc_frame(&[("jawOpen", 0.01 * (i % 2) as f32)]);
                    let _ = sock.send_to(&frame, to);
                    std::thread::sleep(Duration::from_millis(20));
                }
            }));
        },
    );
    let _ = child.kill();
    let _ = child.wait();
    if let Some(phone) = phone {
        phone.join().unwrap();
    }
    screen
        .save_png(&out_dir("window").join("calibrate.png"))
        .unwrap();
    // The card sits at the left, vertically centred: dark, with light text; the face stays
    // visible in the middle.
    let card = screen.pixel(30, 360);
    assert!(
        card[0] < 60 && card[1] < 80 && card[2] < 60,
        "no prompt card at the left: {card:?}\n{log}"
    );
    let light = (24..400)
        .flat_map(|x| (200..520).map(move |y| (x, y)))
        .filter(|&(x, y)| screen.pixel(x, y)[0] > 200)
        .count();
    assert!(light > 300, "the card has no text ({light} light pixels)");
    let centre = screen.pixel(640, 330);
    assert!(
        centre[0] > 100 && centre[1] < 240,
        "centre {centre:?} does not look like the face"
    );
}

#[test]
fn headless_run_replays_a_live_link_face_csv() {
    let Some(fixtures) = crate::support::fixtures("the Live Link Face CSV replay") else {
        return;
    };
    let csv = fixtures.join("protocols/livelinkface_csv_MySlate_3_Jason_Millers_iPhone.csv");
    let output = check(
        facewire()
            .args(["run", "--headless", "--speed", "8", "--size", "160x160"])
            .arg("--replay")
            .arg(&csv)
            .output()
            .unwrap(),
        "run --headless --replay",
    );
    let report: serde_json::Value =
        serde_json::from_str(String::from_utf8(output.stdout).unwrap().trim()).unwrap();
    assert_eq!(report["frames_received"].as_u64(), Some(328), "{report}");
    assert_eq!(report["malformed"].as_u64(), Some(0), "{report}");
    assert!(report["frames_drawn"].as_u64().unwrap() > 0, "{report}");
}

#[test]
fn record_then_replay_reaches_listen() {
    let dir = tempfile::tempdir().unwrap();
    let take = dir.path().join("take.fwrec");
    let port = free_udp_port();
    let mut recorder = facewire()
        .args(["record", "--port", &port.to_string(), "--count", "3"])
        .arg("--out")
        .arg(&take)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let to: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let frames = [0.25f32, 0.5, 0.75].map(|v| vmc_frame(&[("jawOpen", v)]));
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let start = Instant::now();
    // Repeat until the recorder has its three datagrams (it may still be binding at first).
    let mut i = 0;
    while recorder.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "record never finished"
        );
        sock.send_to(&frames[i % 3], to).unwrap();
        i += 1;
        std::thread::sleep(Duration::from_millis(30));
    }
    check(recorder.wait_with_output().unwrap(), "record");

    let listen_port = free_udp_port();
    let mut listener = facewire()
        .arg("--config")
        .arg(live_config(dir.path()))
        .args(["listen", "--port", &listen_port.to_string(), "--count", "3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Replay until the listener has printed its three frames (it may still be binding at first).
    let start = Instant::now();
    while listener.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(30) {
            let _ = listener.kill();
            panic!("listen never saw the replayed frames");
        }
        check(
            facewire()
                .arg("replay")
                .arg(&take)
                .args(["--to", &format!("127.0.0.1:{listen_port}")])
                .output()
                .unwrap(),
            "replay",
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let output = check(listener.wait_with_output().unwrap(), "listen");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let values: Vec<f64> = stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter_map(|v| v["weights"]["jawOpen"].as_f64())
        .collect();
    assert_eq!(values.len(), 3, "{stdout}");
    for v in values {
        assert!([0.25, 0.5, 0.75].contains(&v), "{v}");
    }
}

#[test]
fn calibrate_from_a_recording_then_run_with_the_profile() {
    let Some(fixtures) =
        crate::support::fixtures("offline calibration from the Live Link Face CSV")
    else {
        return;
    };
    let csv = fixtures.join("protocols/livelinkface_csv_MySlate_3_Jason_Millers_iPhone.csv");
    let dir = tempfile::tempdir().unwrap();
    let output = check(
        facewire()
            .args(["calibrate", "--performer", "jason", "--yes", "--profiles"])
            .arg(dir.path())
            .arg("--from")
            .arg(&csv)
            .output()
            .unwrap(),
        "calibrate --from",
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("jawOpen"),
        "the summary lists channels:\n{stdout}"
    );
    let profile = std::fs::read_to_string(dir.path().join("jason.toml")).unwrap();
    assert!(profile.contains("[channels.jawOpen]"), "{profile}");
    assert!(
        stdout.contains("neutral face: 0.") && stdout.contains("at rest: browDown"),
        "the review shows the rest found in the take:\n{stdout}"
    );
    let output = facewire()
        .args(["calibrate", "--performer", "jason", "--yes", "--profiles"])
        .arg(dir.path())
        .arg("--from")
        .arg(&csv)
        .args(["--neutral-at", "60"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no face frames between 60.00 s"),
        "{stderr}"
    );

    let output = check(
        facewire()
            .args(["run", "--headless", "--speed", "8", "--size", "160x160"])
            .args(["--performer", "jason", "--profiles"])
            .arg(dir.path())
            .arg("--replay")
            .arg(&csv)
            .output()
            .unwrap(),
        "run --performer",
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("performer profile loaded"), "{stderr}");

    let output = facewire()
        .args([
            "run",
            "--headless",
            "--exit-after",
            "0",
            "--performer",
            "jasn",
            "--profiles",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("jason"),
        "an unknown name lists the profiles:\n{stderr}"
    );
}

#[test]
fn check_passes_the_default_head_and_locates_mistakes() {
    let output = check(
        facewire().arg("check").output().unwrap(),
        "check of the default head",
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("no problems found"), "{stdout}");

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "version = 1\n[map]\nSmile = \"mouthSmileLft\"\n").unwrap();
    let output = facewire()
        .args(["check", "--mapping"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("bad.toml:3:"), "{stdout}");
    assert!(stdout.contains("mouthSmileLeft"), "{stdout}");
}

#[test]
fn a_saved_mapping_is_swapped_in_and_a_broken_one_keeps_the_last_good() {
    let dir = tempfile::tempdir().unwrap();
    let mapping = dir.path().join("m.toml");
    std::fs::write(&mapping, "version = 1\n").unwrap();
    let out = dir.path().join("last.png");
    let port = free_udp_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let child = facewire()
        .arg("--config")
        .arg(patient_config(dir.path()))
        .args(["run", "--headless", "--exit-after", "12", "--morph", "cpu"])
        .args([
            "--size",
            "200x200",
            "--listen",
            &addr.to_string(),
            "--mapping",
        ])
        .arg(&mapping)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let datagrams = [
        vmc_frame(&[("jawOpen", 1.0)]),
        vmc_frame(&[("jawOpen", 0.9995)]),
    ];
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut i = 0;
    // A valid change (nothing mapped), a broken file, then the fix (everything mapped again).
    let log = scripted_run(
        child,
        || {
            let _ = sock.send_to(&datagrams[i % 2], addr);
            i += 1;
        },
        reload_steps(
            &mapping,
            "watching the mapping",
            "mapping reloaded",
            "mapping reload failed",
            "m.toml:3:",
            [
                "version = 1\n[targets]\nauto = false\n",
                "version = 1\n[targets]\nauto = 3\n",
                "version = 1\n[targets]\nauto = true\n",
            ],
        ),
    );
    // The fixed mapping maps everything again: the jaw follows the phone's jawOpen = 1.
    let got = RgbaImage::load_png(&out).unwrap();
    let open = snapshot(
        "jawOpen=1",
        "cpu",
        "200x200",
        &out_dir("reload").join("open.png"),
    );
    let diff = got.compare(&open, 1).unwrap();
    assert!(diff.fraction_within() >= 0.999, "{diff:?}\n{log}");
}

#[test]
fn a_saved_config_applies_live_settings_and_names_what_needs_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("cfg.toml");
    let original = phones_off(&shipped_config());
    std::fs::write(&config, &original).unwrap();
    let port = free_udp_port();
    let child = facewire()
        .arg("--config")
        .arg(&config)
        .args(["run", "--headless", "--exit-after", "12", "--size", "64x64"])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let write = |text: String| std::fs::write(&config, text).unwrap();
    scripted_run(
        child,
        || {},
        vec![
            step(
                |log| log.contains("watching the configuration"),
                |_| {
                    std::thread::sleep(Duration::from_millis(300));
                    write(original.replace("hold = 0.2", "hold = 0.3"));
                },
            ),
            step(
                |log| log.contains("smoothing and tracking settings reloaded"),
                |_| write(original.replace("hold = 0.2", "hold = \"long\"")),
            ),
            step(
                |log| log.contains("configuration reload failed"),
                |log| {
                    assert!(log.contains("cfg.toml:"), "the error is located:\n{log}");
                    write(original.replace("width = 1280", "width = 1920"));
                },
            ),
            step(
                |log| log.contains("take effect when facewire restarts"),
                |log| {
                    assert!(log.contains("[window]"), "{log}");
                    write(
                        original
                            .replace("width = 1280", "width = 1920")
                            .replace("zoom = 1.0", "zoom = 1.5"),
                    );
                },
            ),
            step(|log| log.contains("camera framing reloaded"), |_| {}),
        ],
    );
}

/// A headless run with nothing in the listed settings but `extra_toml`, listening on a free
/// port that nothing sends to; returns its report.
fn quiet_headless_run(name: &str, extra_toml: &str, args: &[&str]) -> serde_json::Value {
    let dir = out_dir(name);
    let config = dir.join("facewire.toml");
    std::fs::write(&config, phones_off(extra_toml)).unwrap();
    let addr = format!("127.0.0.1:{}", free_udp_port());
    let output = facewire()
        .arg("--config")
        .arg(&config)
        .args(["run", "--headless", "--size", "64x64", "--listen", &addr])
        .args(args)
        .output()
        .unwrap();
    let output = check(output, name);
    serde_json::from_str(String::from_utf8(output.stdout).unwrap().trim()).unwrap()
}

#[test]
fn headless_frame_rate_holds_over_seconds() {
    let report = quiet_headless_run(
        "pace",
        "[render]\nheadless_fps = 20\n",
        &["--exit-after", "3"],
    );
    let drawn = report["frames_drawn"].as_u64().unwrap();
    // Three seconds at 20 frames per second: never more than the grid allows, and the run
    // drew continuously (a loaded machine may draw fewer, never more).
    assert!(
        drawn <= 3 * 20 + 1,
        "{drawn} frames over 3 s at 20 fps: {report}"
    );
    assert!(drawn >= 10, "{report}");
}

#[test]
fn render_on_change_draws_once_while_nothing_arrives() {
    // Without idle life nothing changes while no phone sends: one frame is drawn.
    let report = quiet_headless_run(
        "render-on-change",
        "[window]\nrender_on_change = true\n[idle]\nenabled = false\n",
        &["--exit-after", "2"],
    );
    assert_eq!(report["frames_received"].as_u64(), Some(0), "{report}");
    assert_eq!(report["frames_drawn"].as_u64(), Some(1), "{report}");
    // The flag does the same as the key.
    let report = quiet_headless_run(
        "render-on-change-flag",
        "[idle]\nenabled = false\n",
        &["--exit-after", "1", "--render-on-change"],
    );
    assert_eq!(report["frames_drawn"].as_u64(), Some(1), "{report}");
}

#[test]
fn render_on_change_draws_idle_life_while_no_phone_sends() {
    // With idle life (the default) the face blinks, breathes and glances before a phone
    // connects: those are changes, and they are drawn.
    let report = quiet_headless_run(
        "render-on-change-idle",
        "[window]\nrender_on_change = true\n",
        &["--exit-after", "2"],
    );
    assert_eq!(report["frames_received"].as_u64(), Some(0), "{report}");
    assert!(report["frames_drawn"].as_u64().unwrap() > 10, "{report}");
}

#[test]
fn render_on_change_draws_each_new_frame() {
    let dir = out_dir("render-on-change-frames");
    let port = free_udp_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    // Without motion smoothing, which also draws the in-between frames for one sender period
    // after each frame.
    let config = dir.join("facewire.toml");
    std::fs::write(&config, phones_off("[window]\nmotion = \"off\"\n")).unwrap();
    let mut child = facewire()
        .arg("--config")
        .arg(&config)
        .args([
            "run",
            "--headless",
            "--exit-after",
            "3",
            "--render-on-change",
        ])
        .args(["--size", "64x64", "--listen", &addr.to_string()])
        .arg("--out")
        .arg(dir.join("last.png"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Ten frames a second: far below the 60 frames per second a continuous run draws.
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let start = Instant::now();
    let mut i = 0u32;
    while child.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "facewire did not exit"
        );
        let _ = sock.send_to(
            &vmc_frame(&[("JawOpen", 0.5 + (i % 2) as f32 * 0.01)]),
            addr,
        );
        i += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = check(child.wait_with_output().unwrap(), "run --render-on-change");
    let report: serde_json::Value =
        serde_json::from_str(String::from_utf8(output.stdout).unwrap().trim()).unwrap();
    let drawn = report["frames_drawn"].as_u64().unwrap();
    let received = report["frames_received"].as_u64().unwrap();
    // Each frame is drawn (they come slower than the frame rate); beyond them only the first
    // draw and the frames the conditioner adds while it eases in on the new face.
    assert!(received >= 10, "{report}");
    assert!(drawn + 2 >= received, "{report}");
    assert!(drawn <= received + 30, "{report}");
}

/// The default head's levels of detail: "auto" draws level 0 at the default framing and a
/// coarser level, exactly, when the camera is zoomed out.
#[test]
fn auto_level_of_detail_follows_the_framing() {
    let dir = out_dir("lod");
    let far = dir.join("far.toml");
    std::fs::write(&far, "[camera]\nzoom = 0.3\n").unwrap();
    let shot = |config: Option<&Path>, lod: &str, name: &str| {
        let mut extra = vec!["--lod", lod];
        if let Some(c) = config {
            extra.extend(["--config", c.to_str().unwrap()]);
        }
        snapshot_with(&extra, "", "cpu", "200x200", &dir.join(name))
    };
    let near_auto = shot(None, "auto", "near_auto.png");
    let near_0 = shot(None, "0", "near_0.png");
    assert!(
        changed_pixels(&near_auto, &near_0, 0).is_empty(),
        "auto is not level 0 at the default framing"
    );
    let far_auto = shot(Some(&far), "auto", "far_auto.png");
    let far_levels: Vec<RgbaImage> = (0..3)
        .map(|l| shot(Some(&far), &l.to_string(), &format!("far_{l}.png")))
        .collect();
    assert!(
        !changed_pixels(&far_levels[0], &far_levels[2], 0).is_empty(),
        "the levels draw alike"
    );
    let picked = far_levels
        .iter()
        .position(|img| changed_pixels(img, &far_auto, 0).is_empty());
    assert!(
        matches!(picked, Some(1 | 2)),
        "zoomed out, auto draws level {picked:?} (see {})",
        dir.display()
    );
}

#[test]
fn snapshot_uses_the_configured_camera() {
    let dir = out_dir("camera");
    let config = dir.join("facewire.toml");
    std::fs::write(&config, "[camera]\nzoom = 2.0\norbit_yaw = 30.0\n").unwrap();
    let plain = snapshot("", "cpu", "128x128", &dir.join("plain.png"));
    let framed = snapshot_with(
        &["--config", config.to_str().unwrap()],
        "",
        "cpu",
        "128x128",
        &dir.join("framed.png"),
    );
    let background = plain.pixel(0, 0);
    let head = |img: &RgbaImage| {
        (0..img.height)
            .flat_map(|y| (0..img.width).map(move |x| (x, y)))
            .filter(|&(x, y)| img.pixel(x, y) != background)
            .count()
    };
    let (small, large) = (head(&plain), head(&framed));
    assert!(
        large > small * 2,
        "zoom 2 should fill much more: {small} vs {large}"
    );
}

#[test]
fn a_layer_drives_the_mouth_while_the_phone_drives_the_eyes() {
    let dir = out_dir("layers");
    // The phone (a replayed take of our own): eyes closed, mouth closed, one second at 60 fps.
    // Values move a hair from frame to frame, as a live face's do.
    let mut csv = String::from("Timecode,BlendShapeCount,EyeBlinkLeft,EyeBlinkRight,JawOpen\n");
    for i in 0..60 {
        let blink = if i % 2 == 0 { 1.0 } else { 0.999 };
        csv.push_str(&format!("00:00:00:{i:02}.000,52,{blink},{blink},0.0\n"));
    }
    let take = dir.join("eyes.csv");
    std::fs::write(&take, csv).unwrap();
    // The stack: the phone drives only the upper face; a layer above holds the jaw open.
    let config = dir.join("layers.toml");
    std::fs::write(
        &config,
        "[window]\nmotion = \"off\"\n\n[tracking]\nstale_after = 30.0\nease_in = 0.0\n\n\
         [layers]\norder = [\"tracking\", \"mouth\"]\n\n[layers.tracking]\n\
         regions = [\"eyes\", \"gaze\", \"brows\", \"head\"]\n\n[layers.mouth]\n\
         regions = [\"mouth\"]\nvalues = { jawOpen = 0.9 }\n",
    )
    .unwrap();
    let last = dir.join("last.png");
    check(
        facewire()
            .arg("--config")
            .arg(&config)
            .args(["run", "--headless", "--morph", "cpu", "--size", "256x256"])
            .arg("--replay")
            .arg(&take)
            .arg("--out")
            .arg(&last)
            .output()
            .unwrap(),
        "run --headless with layers",
    );
    let got = RgbaImage::load_png(&last).unwrap();
    let both = snapshot(
        "eyeBlinkLeft=1,eyeBlinkRight=1,jawOpen=0.9",
        "cpu",
        "256x256",
        &dir.join("both.png"),
    );
    let diff = got.compare(&both, 2).unwrap();
    assert!(
        diff.fraction_within() >= 0.999,
        "the frame is not closed eyes with an open jaw: {} pixels differ (max {})",
        diff.pixels_over,
        diff.max_channel
    );
    // And it shows both sources: neither one alone makes it.
    for (alone, what) in [
        ("eyeBlinkLeft=1,eyeBlinkRight=1", "the phone's eyes alone"),
        ("jawOpen=0.9", "the layer's jaw alone"),
    ] {
        let one = snapshot(alone, "cpu", "256x256", &dir.join("alone.png"));
        let changed = changed_pixels(&got, &one, 8);
        assert!(changed.len() > 50, "the frame looks like {what}");
    }
}

/// Runs `snapshot` with `model` and returns its stderr, after checking that it failed.
fn snapshot_error(model: &Path, out: &Path) -> String {
    let output = facewire()
        .args(["snapshot", "--model"])
        .arg(model)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        !output.status.success(),
        "snapshot with {model:?} succeeded"
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn an_unreadable_model_names_the_file_and_gives_the_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.png");
    // A missing file is answered before any load: the name, the avatars folder looked in too,
    // once.
    let missing = dir.path().join("nope.glb");
    let stderr = snapshot_error(&missing, &out);
    assert_eq!(stderr.matches("no avatar ").count(), 1, "{stderr}");
    assert!(stderr.contains("nope.glb"), "{stderr}");
    let folder = repo().join("models");
    assert!(stderr.contains(&folder.display().to_string()), "{stderr}");

    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a model\n").unwrap();
    let parse_error = serde_json::from_str::<serde_json::Value>("not a model\n")
        .unwrap_err()
        .to_string();
    let stderr = snapshot_error(&text, &out);
    assert!(stderr.contains("notes.txt"), "{stderr}");
    // The parser's words once (the place is given as a byte of the JSON, not a line of it).
    let cause = parse_error.split(" at line").next().unwrap();
    assert_eq!(stderr.matches(cause).count(), 1, "{stderr}");
}

#[test]
fn logs_to_a_pipe_carry_no_colour_codes() {
    let output = check(facewire().arg("check").output().unwrap(), "check");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(" INFO "), "no log lines: {stderr}");
    assert!(
        !stderr.contains("\x1b["),
        "colour codes in piped logs: {stderr:?}"
    );
}

#[test]
fn a_log_filter_that_does_not_parse_is_named_and_info_is_used() {
    // snapshot logs at info by default (check, an answer, at warn).
    let dir = tempfile::tempdir().unwrap();
    let output = check(
        facewire()
            .env("FACEWIRE_LOG", "nonsense==")
            .args(["snapshot", "--size", "32x32", "--out"])
            .arg(dir.path().join("x.png"))
            .output()
            .unwrap(),
        "snapshot with a bad FACEWIRE_LOG",
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let notes: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("FACEWIRE_LOG=\"nonsense==\" is not understood"))
        .collect();
    assert_eq!(notes.len(), 1, "{stderr}");
    assert!(notes[0].contains("FACEWIRE_LOG=debug"), "{stderr}");
    assert!(notes[0].contains("info,facewire=trace"), "{stderr}");
    assert!(stderr.contains(" INFO "), "not logging at info: {stderr}");
    assert!(!stderr.contains(" DEBUG "), "logging below info: {stderr}");
}

#[test]
fn a_bare_word_log_filter_is_refused_rather_than_silencing_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let output = check(
        facewire()
            .env("FACEWIRE_LOG", "verbose")
            .args(["snapshot", "--size", "32x32", "--out"])
            .arg(dir.path().join("x.png"))
            .output()
            .unwrap(),
        "snapshot with FACEWIRE_LOG=verbose",
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("FACEWIRE_LOG: `verbose` is no level"),
        "{stderr}"
    );
    assert!(stderr.contains(" INFO "), "not logging at info: {stderr}");
}

#[test]
fn replay_refuses_a_speed_out_of_range_before_announcing_the_replay() {
    let dir = tempfile::tempdir().unwrap();
    let take = dir.path().join("take.csv");
    std::fs::write(&take, llf_csv(0.5)).unwrap();
    let output = facewire()
        .arg("replay")
        .arg(&take)
        .args(["--to", "127.0.0.1:9", "--speed", "1e-300"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("replay speed 1e-300 is outside 0.01 to 100"),
        "{stderr}"
    );
    assert!(!stderr.contains("replaying"), "{stderr}");
    assert!(output.stdout.is_empty());
}

#[test]
fn a_taken_port_stops_the_run_and_names_its_holder_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let output = facewire()
        .arg("--config")
        .arg(live_config(dir.path()))
        .args(["run", "--headless", "--exit-after", "1", "--size", "64x64"])
        .args(["--listen", &addr.to_string()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line:\n{stderr}"));
    assert!(
        line.starts_with(&format!(
            "error: cannot listen for VMC and Face Cap on {addr} (UDP): "
        )),
        "{line}"
    );
    let next = format!("127.0.0.1:{}", addr.port() + 1);
    assert!(
        line.contains(&format!(
            "close it, or move facewire: --listen {next} (or [ingest] listen = [\"{next}\"]), \
             then send to that port"
        )),
        "{line}"
    );
    // A chosen address: partial would not help, so it is not offered.
    assert!(!line.contains("partial"), "{line}");
    // The operating system's words come once, at the end.
    let os = std::io::Error::from(std::io::ErrorKind::AddrInUse).to_string();
    assert_eq!(line.matches("in use").count(), 1, "{line} ({os})");
    // The holder is this test process, when this system lets the lookup see it.
    if facewire::ingest::udp_port_holder(addr.port()).is_some() {
        let exe = std::env::current_exe().unwrap();
        let name = exe.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            line.contains(&format!(
                "the port is taken by {name} (pid {})",
                std::process::id()
            )),
            "{line}"
        );
    }
    drop(taken);
}

#[test]
fn partial_skips_a_taken_usual_port_and_runs_the_others() {
    let dir = tempfile::tempdir().unwrap();
    // The usual VTube Studio port, held here (or by whatever already holds it).
    let usual = "0.0.0.0:11125";
    let _taken = UdpSocket::bind(usual);
    let config = dir.path().join("partial.toml");
    let ingest = "[ingest]\nifacialmocap = []\nfacemotion3d = []\nlivelinkface = []\n\
                  openseeface = []\nvtubestudio = [\"0.0.0.0:11125\"]\n";
    let listen = format!("127.0.0.1:{}", free_udp_port());
    let run = |partial: bool| {
        std::fs::write(&config, format!("{ingest}partial = {partial}\n")).unwrap();
        facewire()
            .arg("--config")
            .arg(&config)
            .args(["run", "--headless", "--exit-after", "1", "--size", "64x64"])
            .args(["--listen", &listen])
            .output()
            .unwrap()
    };
    let output = run(true);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot listen for VTube Studio/MeowFace on {usual} (UDP)"
        )),
        "{stderr}"
    );
    assert!(stderr.contains("the other listeners run"), "{stderr}");
    assert!(stderr.contains(&listen), "the OSC listener runs:\n{stderr}");

    // Without partial the same run stops, and the message offers partial.
    let output = run(false);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("`partial = true` under [ingest] runs the other listeners without it"),
        "{stderr}"
    );
}

/// Two listeners whose ports are taken: one message names both, each with its fix, so that
/// a newcomer fixes them in one go rather than one run at a time.
#[test]
fn every_taken_port_is_listed_in_one_message() {
    let dir = tempfile::tempdir().unwrap();
    let osc = UdpSocket::bind("127.0.0.1:0").unwrap();
    let llf = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (osc_addr, llf_addr) = (osc.local_addr().unwrap(), llf.local_addr().unwrap());
    let config = dir.path().join("taken.toml");
    std::fs::write(
        &config,
        format!(
            "[ingest]\nlisten = [\"{osc_addr}\"]\nifacialmocap = []\nfacemotion3d = []\n\
             livelinkface = [\"{llf_addr}\"]\nvtubestudio = []\nopenseeface = []\n"
        ),
    )
    .unwrap();
    let output = facewire()
        .arg("--config")
        .arg(&config)
        .args(["run", "--headless", "--exit-after", "1", "--size", "64x64"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("2 listeners cannot start"), "{stderr}");
    for addr in [osc_addr, llf_addr] {
        assert!(
            stderr.contains(&format!("on {addr} (UDP)")),
            "{addr}:\n{stderr}"
        );
    }
    assert!(stderr.contains("--listen 127.0.0.1:"), "{stderr}");
    assert!(stderr.contains("[ingest] livelinkface = ["), "{stderr}");
    drop((osc, llf));
}

#[test]
fn the_connect_card_names_the_port_and_then_which_app_sends_to_it() {
    let dir = out_dir("connect-card");
    let port = free_udp_port();
    let config = live_config(&dir);
    let mut child = facewire()
        .arg("--config")
        .arg(&config)
        .args(["run", "--headless", "--exit-after", "7", "--listen"])
        .arg(format!("0.0.0.0:{port}"))
        .arg("--out")
        .arg(dir.join("last.png"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Live Link Face pointed at the VMC port: the packets arrive but do not decode there.
    let to: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    feed_until_exit(
        &mut child,
        to,
        &crate::support::llf_packet(0.5),
        Duration::from_secs(60),
    );
    let output = check(child.wait_with_output().unwrap(), "run with the wrong app");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let card = stderr
        .find("Connect your phone")
        .unwrap_or_else(|| panic!("no connect card: {stderr}"));
    let row = stderr[card..]
        .lines()
        .find(|l| l.contains("VMC senders"))
        .unwrap_or_else(|| panic!("no VMC row: {stderr}"));
    assert!(row.contains(&format!("UDP {port}")), "{row}");
    let hints = stderr[card..]
        .find("No face data yet")
        .unwrap_or_else(|| panic!("no hints after five seconds: {stderr}"));
    // The hint's lines, wrapped for the terminal, read as one text.
    let words = stderr[card + hints..]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let named = format!("Port {port} hears Live Link Face packets");
    let hint = &words[words
        .find(&named)
        .unwrap_or_else(|| panic!("the packets are not named: {stderr}"))..];
    assert!(hint.contains("livelinkface = ["), "{hint}");
    assert!(
        !stderr.contains("firewall"),
        "data arrives, so the firewall is not the problem: {stderr}"
    );
}

/// A GLB of one unlit red square facing +Z, two units wide.
fn red_square_glb() -> Vec<u8> {
    let mut bin = Vec::new();
    for p in [
        [-1.0f32, -1.0, 0.0],
        [1.0, -1.0, 0.0],
        [1.0, 1.0, 0.0],
        [-1.0, 1.0, 0.0],
    ] {
        for c in p {
            bin.extend_from_slice(&c.to_le_bytes());
        }
    }
    for i in [0u16, 1, 2, 0, 2, 3] {
        bin.extend_from_slice(&i.to_le_bytes());
    }
    let json = r#"{"asset":{"version":"2.0"},"scene":0,"scenes":[{"nodes":[0]}],
        "nodes":[{"mesh":0}],
        "meshes":[{"primitives":[{"attributes":{"POSITION":0},"indices":1,"material":0}]}],
        "materials":[{"pbrMetallicRoughness":{"baseColorFactor":[1,0,0,1]},
            "extensions":{"KHR_materials_unlit":{}}}],
        "extensionsUsed":["KHR_materials_unlit"],
        "buffers":[{"byteLength":60}],
        "bufferViews":[{"buffer":0,"byteOffset":0,"byteLength":48},
            {"buffer":0,"byteOffset":48,"byteLength":12}],
        "accessors":[
            {"bufferView":0,"componentType":5126,"count":4,"type":"VEC3",
             "min":[-1,-1,0],"max":[1,1,0]},
            {"bufferView":1,"componentType":5123,"count":6,"type":"SCALAR"}]}"#;
    crate::support::glb(json.as_bytes(), &bin)
}

/// Replaces `path` with `bytes` the way editors save: a new file renamed into place.
fn save_over(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("saving");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[test]
fn a_saved_avatar_swaps_in_and_a_broken_one_keeps_the_last_good() {
    let Some((_xvfb, display)) = start_xvfb() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("avatar.glb");
    std::fs::copy(repo().join("models/default_head.glb"), &model).unwrap();
    let csv = dir.path().join("take.csv");
    std::fs::write(&csv, llf_csv(30.0)).unwrap();
    let shots = dir.path().join("shots");
    let mut child = facewire()
        .env("DISPLAY", &display)
        .arg("--config")
        .arg(live_config(dir.path()))
        .args(["run", "--exit-after", "12", "--model"])
        .arg(&model)
        .arg("--replay")
        .arg(&csv)
        .arg("--screenshots")
        .arg(&shots)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut log = ChildLog::new(&mut child);
    let mut wait_for = |what: &str| {
        assert!(log.wait_for(what), "no `{what}` in the log:\n{}", log.text);
        log.text.clone()
    };
    wait_for("stage ready");
    wait_for("watching the avatar for changes");
    // A broken save: the head stays, and the error says which file.
    save_over(&model, b"glTF, but not really");
    let log_now = wait_for("avatar not swapped");
    let error = log_now
        .lines()
        .find(|l| l.contains("avatar not swapped"))
        .unwrap();
    assert!(error.contains("avatar.glb"), "{error}");
    // A good save: the new avatar is drawn.
    save_over(&model, &red_square_glb());
    wait_for("avatar swapped in");
    let status = child.wait().unwrap();
    assert!(status.success(), "facewire exited with {status}");
    let stage = RgbaImage::load_png(&shots.join("stage.png")).unwrap();
    stage
        .save_png(&out_dir("window").join("swapped.png"))
        .unwrap();
    let centre = stage.pixel(stage.width / 2, stage.height / 2);
    assert!(
        centre[0] > 200 && centre[1] < 80 && centre[2] < 80,
        "the red square is not drawn: {centre:?}"
    );
}

/// Presses and lets go of the key that types `keysym` on `display`, through the X server
/// (XTEST), as a keyboard would.
#[cfg(target_os = "linux")]
fn press_key(display: &str, keysym: u32) {
    use x11rb::connection::Connection;
    use x11rb::protocol::xproto::{ConnectionExt as _, KEY_PRESS_EVENT, KEY_RELEASE_EVENT};
    use x11rb::protocol::xtest::ConnectionExt as _;
    let (conn, screen) = x11rb::connect(Some(display)).unwrap();
    let root = conn.setup().roots[screen].root;
    let (min, max) = (conn.setup().min_keycode, conn.setup().max_keycode);
    let map = conn
        .get_keyboard_mapping(min, max - min + 1)
        .unwrap()
        .reply()
        .unwrap();
    let per = usize::from(map.keysyms_per_keycode);
    let index = map
        .keysyms
        .iter()
        .position(|&s| s == keysym)
        .expect("the display's keymap has the key");
    let keycode = min + (index / per) as u8;
    for kind in [KEY_PRESS_EVENT, KEY_RELEASE_EVENT] {
        conn.xtest_fake_input(kind, keycode, 0, root, 0, 0, 0)
            .unwrap()
            .check()
            .unwrap();
        std::thread::sleep(Duration::from_millis(150));
    }
    conn.flush().unwrap();
}

/// Gives the keyboard focus to the top-level window titled `title` on `display`, as a click
/// on it would under a window manager; `false` when there is no such window.
#[cfg(target_os = "linux")]
fn focus_window(display: &str, title: &str) -> bool {
    use x11rb::connection::Connection;
    use x11rb::protocol::xproto::{AtomEnum, ConnectionExt as _, InputFocus};
    let (conn, screen) = x11rb::connect(Some(display)).unwrap();
    let root = conn.setup().roots[screen].root;
    let tree = conn.query_tree(root).unwrap().reply().unwrap();
    for window in tree.children {
        let name = conn
            .get_property(false, window, AtomEnum::WM_NAME, AtomEnum::STRING, 0, 256)
            .unwrap()
            .reply()
            .map(|r| r.value)
            .unwrap_or_default();
        if name == title.as_bytes() {
            conn.set_input_focus(InputFocus::PARENT, window, x11rb::CURRENT_TIME)
                .unwrap()
                .check()
                .unwrap();
            conn.flush().unwrap();
            return true;
        }
    }
    false
}

/// `C` on the stage takes the connect card off it while no phone sends: what OBS captures is
/// the avatar on the chroma key, not the card.
#[cfg(target_os = "linux")]
#[test]
fn c_on_the_stage_puts_the_connect_card_away() {
    let Some((_xvfb, display)) = start_xvfb() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let shots = dir.path().join("shots");
    let mut child = Command::new(facewire_bin())
        .current_dir(repo())
        .env("DISPLAY", &display)
        .args(["run", "--no-panel", "--exit-after", "8", "--screenshots"])
        .arg(&shots)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut log = ChildLog::new(&mut child);
    assert!(log.wait_for("stage ready"), "{}", log.text);
    std::thread::sleep(Duration::from_millis(500));
    assert!(focus_window(&display, "facewire"), "no stage window");
    const XK_C: u32 = 0x63;
    press_key(&display, XK_C);
    assert!(
        log.wait_for("connect card on the stage"),
        "C did not reach the stage:\n{}",
        log.text
    );
    assert!(child.wait().unwrap().success(), "{}", log.text);
    log.wait_for("panel.png");
    let line = log
        .text
        .lines()
        .find(|l| l.contains("connect card on the stage"))
        .unwrap();
    assert!(line.contains("shown=false"), "{line}");
    let stage = RgbaImage::load_png(&shots.join("stage.png")).unwrap();
    stage
        .save_png(&out_dir("window").join("card-put-away.png"))
        .unwrap();
    // Where the card's lower left part was: the chroma key's green, as configured.
    let corner = stage.pixel(stage.width / 12, stage.height * 5 / 6);
    assert!(
        corner[1] > 150 && corner[0] < 40 && corner[2] < 100,
        "the card is still on the stage: {corner:?}"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn an_expression_key_works_while_another_window_has_the_focus() {
    let Some((_xvfb, display)) = start_xvfb() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("log.txt");
    let mut child = Command::new(facewire_bin())
        .current_dir(repo())
        .env("DISPLAY", &display)
        .env("FACEWIRE_LOG", "facewire=debug")
        .args(["run", "--no-panel", "--exit-after", "8"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let start = Instant::now();
    while !log().contains("registered for the whole desktop") {
        assert!(
            start.elapsed() < Duration::from_secs(30) && child.try_wait().unwrap().is_none(),
            "the shipped expressions' keys are never registered:\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // F3 (angry in the shipped expressions), pressed through the X server with no window of
    // facewire's focused: the desktop hands it to facewire, which switches angry on.
    const XK_F3: u32 = 0xffc0;
    press_key(&display, XK_F3);
    assert!(child.wait().unwrap().success(), "{}", log());
    let text = log();
    assert!(
        text.contains("global expression key") && text.contains("key=F3"),
        "{text}"
    );
    assert!(
        text.contains("expression triggered expression=angry"),
        "{text}"
    );
}

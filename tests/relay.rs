//! `facewire relay`: the live chain without a window or GL, forwarding VMC; a daemon's manners
//! (SIGTERM and SIGINT end it with status 0); and the module layering it proves.

use std::collections::BTreeMap;
use std::net::UdpSocket;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rosc::{OscPacket, OscType};

use crate::support::{facewire_bin, fixtures, repo};

/// One forwarded frame: the blendshape values by name, then the head's rotation.
type Forwarded = (BTreeMap<String, f32>, Vec<f32>);

/// Collects what arrives on `socket` until `child` has exited and nothing more comes.
fn collect(socket: &UdpSocket, child: &mut Child, limit: Duration) -> (Vec<Forwarded>, bool) {
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let start = Instant::now();
    let mut frames = Vec::new();
    let mut buf = [0u8; 65536];
    let mut exited = false;
    while start.elapsed() < limit {
        match socket.recv(&mut buf) {
            Ok(n) => {
                if let Ok((_, packet)) = rosc::decoder::decode_udp(&buf[..n]) {
                    let mut frame = Forwarded::default();
                    flatten(&packet, &mut frame);
                    frames.push(frame);
                }
            }
            Err(_) if exited => break,
            Err(_) => {}
        }
        if !exited {
            exited = child.try_wait().unwrap().is_some();
        }
    }
    (frames, exited)
}

fn flatten(packet: &OscPacket, frame: &mut Forwarded) {
    match packet {
        OscPacket::Bundle(b) => b.content.iter().for_each(|p| flatten(p, frame)),
        OscPacket::Message(m) => match (m.addr.as_str(), m.args.as_slice()) {
            ("/VMC/Ext/Blend/Val", [OscType::String(name), OscType::Float(v)]) => {
                frame.0.insert(name.clone(), *v);
            }
            ("/VMC/Ext/Bone/Pos", [OscType::String(_), rest @ ..]) => {
                frame.1 = rest
                    .iter()
                    .filter_map(|a| match a {
                        OscType::Float(f) => Some(*f),
                        _ => None,
                    })
                    .collect();
            }
            _ => {}
        },
    }
}

/// A configuration that keeps the run to itself: no file watched that a test shares, its own
/// API port, idle life off (it is random), forwarding to `to`.
fn config(dir: &Path, to: &str) -> std::path::PathBuf {
    let path = dir.join("facewire.toml");
    std::fs::write(
        &path,
        format!(
            "[forward]\nto = [\"{to}\"]\n\n[idle]\nenabled = false\n\n[api]\nenabled = false\n\n\
             [ingest]\nlisten = [\"127.0.0.1:0\"]\nifacialmocap = []\nfacemotion3d = []\n\
             livelinkface = []\nvtubestudio = []\nopenseeface = []\n"
        ),
    )
    .unwrap();
    path
}

fn facewire(config: &Path, args: &[&str]) -> Child {
    Command::new(facewire_bin())
        .arg("--config")
        .arg(config)
        .args(args)
        .current_dir(repo())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn relay_forwards_what_a_headless_run_forwards_without_loading_gl() {
    let Some(dir) = fixtures("the relay's replay of a Live Link Face take") else {
        return;
    };
    let take = dir.join("protocols/livelinkface_csv_MySlate_3_Jason_Millers_iPhone.csv");
    let take = take.to_str().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut runs = Vec::new();
    for relay in [true, false] {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = socket.local_addr().unwrap().to_string();
        let config = config(tmp.path(), &to);
        let mut child = if relay {
            facewire(&config, &["relay", "--replay", take])
        } else {
            facewire(
                &config,
                &["run", "--headless", "--size", "64x64", "--replay", take],
            )
        };
        if relay {
            // While it runs: no GL, EGL or X11 library in its address space.
            std::thread::sleep(Duration::from_millis(800));
            if let Ok(maps) = std::fs::read_to_string(format!("/proc/{}/maps", child.id())) {
                for lib in ["libEGL", "libGL", "libX11"] {
                    assert!(!maps.contains(lib), "the relay mapped {lib}");
                }
            }
        }
        let (frames, exited) = collect(&socket, &mut child, Duration::from_secs(60));
        assert!(exited, "the run did not end with its replay");
        let status = child.wait().unwrap();
        assert!(status.success(), "relay={relay}: {status}");
        runs.push(frames);
    }
    let (relayed, headless) = (&runs[0], &runs[1]);
    assert!(relayed.len() > 100, "{} frames relayed", relayed.len());
    // The chain also mixes frames on its clock between the take's (a stale frame held, a
    // fade): those fall where the scheduler lets them. The frames both runs made match in
    // order, to 1e-6.
    let matched = ordered_matches(relayed, headless);
    let least = relayed.len().min(headless.len());
    assert!(
        matched * 100 >= least * 95,
        "{matched} of {} relayed and {} headless frames are the same",
        relayed.len(),
        headless.len()
    );
}

fn same(a: &Forwarded, b: &Forwarded) -> bool {
    a.0.len() == b.0.len()
        && a.0
            .iter()
            .all(|(name, v)| b.0.get(name).is_some_and(|w| (v - w).abs() <= 1e-6))
        && a.1.len() == b.1.len()
        && a.1.iter().zip(&b.1).all(|(x, y)| (x - y).abs() <= 1e-6)
}

/// How many of `a`'s frames have an equal frame in `b` in the same order (each of `b` used
/// once, looking a few frames ahead).
fn ordered_matches(a: &[Forwarded], b: &[Forwarded]) -> usize {
    let mut next = 0;
    let mut matched = 0;
    for frame in a {
        let ahead = (next + 16).min(b.len());
        if let Some(k) = (next..ahead).find(|&k| same(frame, &b[k])) {
            matched += 1;
            next = k + 1;
        }
    }
    matched
}

/// Sends `signal` once the run has started, and returns its status and how long it took to end.
fn stop_with(signal: &str, args: &[&str]) -> (std::process::ExitStatus, Duration) {
    let tmp = tempfile::tempdir().unwrap();
    let config = config(tmp.path(), "127.0.0.1:9");
    let mut child = facewire(&config, args);
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if line.contains("relay running") || line.contains("headless renderer ready") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the run did not start");
    std::thread::sleep(Duration::from_millis(300));
    let sent = Instant::now();
    let ok = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status, sent.elapsed());
        }
        if sent.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("{args:?} still running 10 s after {signal}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(unix)]
#[test]
fn sigterm_and_sigint_end_the_relay_and_a_headless_run_with_status_0() {
    for (signal, args) in [
        ("-TERM", &["relay"][..]),
        ("-INT", &["relay"][..]),
        ("-TERM", &["run", "--headless", "--size", "64x64"][..]),
    ] {
        let (status, took) = stop_with(signal, args);
        assert_eq!(status.code(), Some(0), "{args:?} after {signal}: {status}");
        assert!(took < Duration::from_secs(1), "{args:?} took {took:?}");
    }
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let path = entry.path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// The top-level modules of `src` and which of ours each names (`crate::X`), test modules left
/// out, as `../shared/tools/modgraph.py` reads them.
fn module_graph() -> BTreeMap<String, BTreeMap<String, String>> {
    let src = repo().join("src");
    let files = rust_files(&src);
    let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        let name = rel.file_name().unwrap().to_str().unwrap();
        if name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap();
        let top = top.trim_end_matches(".rs").to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        let text = match text.find("#[cfg(test)]\nmod ") {
            Some(i) => &text[..i],
            None => &text[..],
        };
        let edges = graph.entry(top.clone()).or_default();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            let mut names = Vec::new();
            for (i, _) in code.match_indices("crate::") {
                let rest = &code[i + 7..];
                if let Some(group) = rest.strip_prefix('{') {
                    let group = group.split('}').next().unwrap_or("");
                    names.extend(
                        group
                            .split(',')
                            .filter_map(|p| p.trim().split("::").next().map(str::to_string)),
                    );
                } else {
                    let word: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    names.push(word);
                }
            }
            for m in names {
                if !m.is_empty() && m != top {
                    edges
                        .entry(m)
                        .or_insert_with(|| format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
                }
            }
        }
    }
    graph
}

#[test]
fn no_circle_between_top_level_modules_and_session_names_no_front_end() {
    let graph = module_graph();
    let forbidden = ["app", "panel", "hud", "sheet", "render"];
    for (to, line) in &graph["session"] {
        assert!(
            !forbidden.contains(&to.as_str()),
            "session/ names {to} (a run is assembled without a window): {line}\n\
             (python3 ../shared/tools/modgraph.py src --from session --to {to})"
        );
    }
    // A circle exists when some module reaches itself.
    for start in graph.keys() {
        let mut seen = std::collections::BTreeSet::new();
        let mut stack: Vec<(String, Vec<String>)> = graph[start]
            .keys()
            .map(|m| (m.clone(), vec![start.clone(), m.clone()]))
            .collect();
        while let Some((m, path)) = stack.pop() {
            if &m == start {
                let lines: Vec<String> = path
                    .windows(2)
                    .map(|w| graph[&w[0]][&w[1]].clone())
                    .collect();
                panic!(
                    "top-level modules import each other in a circle: {}\n{}\n\
                     (python3 ../shared/tools/modgraph.py src shows them)",
                    path.join(" -> "),
                    lines.join("\n")
                );
            }
            if !seen.insert(m.clone()) {
                continue;
            }
            if let Some(next) = graph.get(&m) {
                for n in next.keys() {
                    let mut p = path.clone();
                    p.push(n.clone());
                    stack.push((n.clone(), p));
                }
            }
        }
    }
}

/// The sources of weights reach their layers through the mixer's `Own`, by their place among
/// their own; nothing outside `src/mixer` (tests aside) finds a layer by a name string.
#[test]
fn no_layer_is_found_by_name_outside_the_mixer() {
    let src = repo().join("src");
    let files = rust_files(&src);
    let mut found = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        let name = rel.file_name().unwrap().to_str().unwrap();
        if rel.starts_with("mixer") || name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let text = match text.find("#[cfg(test)]\nmod ") {
            Some(i) => &text[..i],
            None => &text[..],
        };
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for call in ["layer_mut(", "set_active(", "mixer.weight("] {
                for (i, _) in code.match_indices(call) {
                    let arg = code[i + call.len()..].trim_start();
                    let by_name = ['"', '&'].iter().any(|c| arg.starts_with(*c))
                        || arg.starts_with("LAYER_")
                        || arg.contains("layer_name(");
                    if by_name {
                        found.push(format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "layers found by name outside src/mixer (a source reaches its own through mixer::Own):\n{}",
        found.join("\n")
    );
}

/// The README's one-PC recipe, word for word (with a configuration of the test's own and an end
/// time): a stand-in renderer holds the VMC receiver's usual port 39539, a phone sends VMC to
/// facewire's moved input, and the stand-in receives the face.
#[test]
fn the_readme_one_pc_relay_recipe_forwards_to_a_renderer_on_39539() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let recipe = readme
        .lines()
        .find(|l| l.starts_with("facewire relay --listen"))
        .expect("the README's one-PC relay command");
    let args: Vec<&str> = recipe.split_whitespace().skip(1).collect();
    let listen = args[args.iter().position(|a| *a == "--listen").unwrap() + 1];
    let port: u16 = listen.rsplit(':').next().unwrap().parse().unwrap();
    assert!(args.contains(&"127.0.0.1:39539"), "{recipe}");
    let renderer = match UdpSocket::bind("127.0.0.1:39539") {
        Ok(socket) => socket,
        Err(e) => {
            eprintln!("note: port 39539 is taken here ({e}); skipping the one-PC recipe test");
            return;
        }
    };
    let tmp = tempfile::tempdir().unwrap();
    let config = config(tmp.path(), "127.0.0.1:9");
    let mut all = vec!["--config", config.to_str().unwrap()];
    all.extend(&args);
    all.extend(["--exit-after", "4"]);
    let mut child = Command::new(facewire_bin())
        .args(&all)
        .current_dir(repo())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The phone: VMC frames to facewire's moved input, 30 a second for two seconds.
    let phone = UdpSocket::bind("127.0.0.1:0").unwrap();
    let sender = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(700));
        for _ in 0..60 {
            let frame = crate::support::vmc_frame(&[("jawOpen", 0.8), ("eyeBlinkLeft", 0.2)]);
            let _ = phone.send_to(&frame, ("127.0.0.1", port));
            std::thread::sleep(Duration::from_millis(33));
        }
    });
    let (frames, exited) = collect(&renderer, &mut child, Duration::from_secs(20));
    sender.join().unwrap();
    assert!(exited, "the relay did not end");
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut stderr);
    }
    assert!(status.success(), "{status}: {stderr}");
    let jaw = frames
        .iter()
        .filter_map(|(weights, _)| weights.get("JawOpen").copied())
        .fold(0.0f32, f32::max);
    assert!(
        jaw > 0.3,
        "the renderer on 39539 saw {} frames, jaw at most {jaw}: {stderr}",
        frames.len()
    );
}

//! Golden replay: a real take (the Live Link Face CSV in ../shared/fixtures) played through the
//! whole `facewire run --headless` pipeline, with the calibrated stream forwarded as VMC. The
//! forwarded values and the final frame of three cuts of the take must match what facewire
//! produced when the goldens were recorded (values within 1e-6, pixels within one level).
//!
//! The stream of the whole take is kept gzipped (`replay_stream.json.gz`); each cut forwards a
//! prefix of it. `FACEWIRE_BLESS=1 cargo test golden` records the goldens anew into `tests/golden/`; do that
//! only when a change of behaviour is intended, and look at the pictures it writes.

use std::io::{Read, Write};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use facewire::image::RgbaImage;
use rosc::{OscPacket, OscType};

use crate::support::{facewire_bin, repo};

/// The take's rows at which the three cuts end (the take has 328 frames).
const CUTS: [usize; 3] = [96, 200, 328];
/// The size of the rendered frames.
const SIZE: &str = "192x192";

fn golden_dir() -> PathBuf {
    repo().join("tests/golden")
}

fn blessing() -> bool {
    std::env::var_os("FACEWIRE_BLESS").is_some_and(|v| v != "0")
}

/// A configuration that makes a replay deterministic: frames drawn as they come (no motion
/// interpolation), no ease-in timed by the wall clock, no tracking loss from a stalled test
/// machine, no idle life (whose frames before the take's first would be forwarded too), the
/// stream forwarded to `to`. Smoothing runs on the take's own timestamps.
fn config(dir: &Path, to: &str) -> PathBuf {
    let path = dir.join("golden.toml");
    std::fs::write(
        &path,
        format!(
            "[window]\nmotion = \"off\"\n\n[tracking]\nstale_after = 30.0\nfrozen_after = 30.0\nease_in = 0.0\n\n\
             [render]\nmorph = \"cpu\"\n\n[forward]\nto = [\"{to}\"]\n\n[idle]\nenabled = false\n"
        ),
    )
    .unwrap();
    path
}

/// One forwarded VMC bundle flattened: each message's address and its numeric arguments, with
/// string arguments kept as names.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Message {
    addr: String,
    names: Vec<String>,
    values: Vec<f64>,
}

fn flatten(packet: &OscPacket, out: &mut Vec<Message>) {
    match packet {
        OscPacket::Message(m) => {
            let mut names = Vec::new();
            let mut values = Vec::new();
            for arg in &m.args {
                match arg {
                    OscType::String(s) => names.push(s.clone()),
                    OscType::Float(f) => values.push(f64::from(*f)),
                    OscType::Double(d) => values.push(*d),
                    OscType::Int(i) => values.push(f64::from(*i)),
                    other => names.push(format!("{other:?}")),
                }
            }
            out.push(Message {
                addr: m.addr.clone(),
                names,
                values,
            });
        }
        OscPacket::Bundle(b) => {
            for p in &b.content {
                flatten(p, out);
            }
        }
    }
}

/// Replays the first `rows` frames of the take headless; returns the final frame and the
/// forwarded bundles, flattened.
fn replay_cut(csv: &str, rows: usize, dir: &Path) -> (RgbaImage, Vec<Vec<Message>>) {
    let mut lines = csv.lines();
    let mut cut = format!("{}\n", lines.next().unwrap());
    for line in lines.take(rows) {
        cut.push_str(line);
        cut.push('\n');
    }
    let take = dir.join(format!("cut{rows}.csv"));
    std::fs::write(&take, cut).unwrap();

    let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
    receiver
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let to = receiver.local_addr().unwrap().to_string();
    let done = Arc::new(AtomicBool::new(false));
    let finished = Arc::clone(&done);
    let collector = std::thread::spawn(move || {
        let mut bundles = Vec::new();
        let mut buf = vec![0u8; 65536];
        let mut quiet = 0;
        // Until the run has ended and the socket has been quiet for half a second.
        while quiet < 10 {
            match receiver.recv(&mut buf) {
                Ok(n) => {
                    quiet = 0;
                    let (_, packet) = rosc::decoder::decode_udp(&buf[..n]).unwrap();
                    let mut messages = Vec::new();
                    flatten(&packet, &mut messages);
                    bundles.push(messages);
                }
                Err(_) if finished.load(Ordering::Relaxed) => quiet += 1,
                Err(_) => {}
            }
        }
        bundles
    });
    let out = dir.join(format!("cut{rows}.png"));
    let output = Command::new(facewire_bin())
        .current_dir(repo())
        .env("FACEWIRE_LOG", "warn")
        .arg("--config")
        .arg(config(dir, &to))
        .args([
            "run",
            "--headless",
            "--speed",
            "4",
            "--size",
            SIZE,
            "--replay",
        ])
        .arg(&take)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    done.store(true, Ordering::Relaxed);
    let bundles = collector.join().unwrap();
    assert!(
        output.status.success(),
        "replay of {rows} rows failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (RgbaImage::load_png(&out).unwrap(), bundles)
}

/// The largest difference between two forwarded streams, or why they cannot be compared.
fn stream_difference(golden: &[Vec<Message>], now: &[Vec<Message>]) -> Result<f64, String> {
    if golden.len() != now.len() {
        return Err(format!(
            "{} bundles forwarded, the golden has {}",
            now.len(),
            golden.len()
        ));
    }
    let mut worst = 0.0f64;
    for (i, (g, n)) in golden.iter().zip(now).enumerate() {
        if g.len() != n.len() {
            return Err(format!(
                "bundle {i}: {} messages, the golden has {}",
                n.len(),
                g.len()
            ));
        }
        for (gm, nm) in g.iter().zip(n) {
            if gm.addr != nm.addr || gm.names != nm.names || gm.values.len() != nm.values.len() {
                return Err(format!("bundle {i}: {nm:?} where the golden has {gm:?}"));
            }
            for (a, b) in gm.values.iter().zip(&nm.values) {
                worst = worst.max((a - b).abs());
            }
        }
    }
    Ok(worst)
}

#[test]
fn a_real_take_replays_as_recorded() {
    let Some(fixtures) = crate::support::fixtures("the golden replay") else {
        return;
    };
    let csv = std::fs::read_to_string(
        fixtures.join("protocols/livelinkface_csv_MySlate_3_Jason_Millers_iPhone.csv"),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let golden = golden_dir();
    let stream = golden.join("replay_stream.json.gz");
    let mut recorded: Option<Vec<Vec<Message>>> = None;
    if !blessing() {
        let bytes = std::fs::read(&stream).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (record the goldens with FACEWIRE_BLESS=1)",
                stream.display()
            )
        });
        let mut text = String::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut text)
            .unwrap();
        recorded = Some(serde_json::from_str(&text).unwrap());
    }
    for rows in CUTS {
        let (image, bundles) = replay_cut(&csv, rows, dir.path());
        assert_eq!(
            bundles.len(),
            rows,
            "one forwarded bundle per frame of the take"
        );
        let picture = golden.join(format!("replay_{rows}.png"));
        let Some(recorded) = &recorded else {
            std::fs::create_dir_all(&golden).unwrap();
            image.save_png(&picture).unwrap();
            eprintln!("recorded {}", picture.display());
            if rows == CUTS[CUTS.len() - 1] {
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
                gz.write_all(serde_json::to_string(&bundles).unwrap().as_bytes())
                    .unwrap();
                std::fs::write(&stream, gz.finish().unwrap()).unwrap();
                eprintln!("recorded {}", stream.display());
            }
            continue;
        };
        let expected =
            RgbaImage::load_png(&picture).unwrap_or_else(|e| panic!("{}: {e}", picture.display()));
        // Each cut forwards a prefix of the whole take's stream.
        let worst = stream_difference(&recorded[..rows.min(recorded.len())], &bundles)
            .unwrap_or_else(|e| panic!("cut of {rows} rows: {e}"));
        assert!(
            worst <= 1e-6,
            "cut of {rows} rows: forwarded values differ by up to {worst:e}"
        );
        let changed = crate::support::changed_pixels(&expected, &image, 1);
        if !changed.is_empty() {
            let seen = repo().join(format!("target/golden-replay_{rows}.png"));
            image.save_png(&seen).unwrap();
            panic!(
                "cut of {rows} rows: {} pixels differ by more than one level from {} \
                 (this run's frame: {})",
                changed.len(),
                picture.display(),
                seen.display()
            );
        }
    }
}

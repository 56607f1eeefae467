//! Draws a model's spring bones through a head turn: the head turns 40 degrees over 0.2 s and
//! holds still, and frames are written at rest, mid-sway, settled, and mid-sway with the
//! springs off, as `rest.png`, `sway.png`, `settled.png` and `off.png` in the output folder.
//!
//! ```sh
//! cargo run --release --example spring_sway -- MODEL.vrm OUT-DIR [SIZE] [ZOOM] [OFFSET-Y]
//! ```
//!
//! ZOOM and OFFSET-Y are `camera.zoom` and `camera.offset_y` (default 1 and 0: the automatic
//! framing, a bust for a humanoid). It also prints how many pixels differ between the mid-sway
//! frames with the springs on and off.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use facewire::app::Scene;
use facewire::arkit::{FaceFrame, Protocol};
use facewire::config::{CameraConfig, MorphMode};
use facewire::image::RgbaImage;
use facewire::render::{headless::HeadlessContext, DrawTarget};
use glam::Quat;

/// The head's turn at `t` seconds: smooth over 0.2 s, then still.
fn turn(t: f32) -> Quat {
    let x = (t / 0.2).clamp(0.0, 1.0);
    Quat::from_rotation_y(40f32.to_radians() * x * x * (3.0 - 2.0 * x))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(model), Some(out)) = (args.first(), args.get(1)) else {
        eprintln!("usage: spring_sway MODEL OUT-DIR [SIZE]");
        return ExitCode::FAILURE;
    };
    let size: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(480);
    let zoom: f32 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let offset_y: f32 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    let out = PathBuf::from(out);
    std::fs::create_dir_all(&out).expect("the output folder can be made");
    // Loaded as a run loads it: the `[pose]` defaults bring a humanoid's arms down.
    let mut config = facewire::config::Config::default();
    config.render.model = PathBuf::from(model);
    let avatar = facewire::session::load_model(&config).expect("the model loads");
    let ctx = HeadlessContext::new(size, size).expect("a headless GL context");
    let mut scene = Scene::new(ctx.gl(), avatar, MorphMode::Cpu).expect("the renderer starts");
    scene.set_camera(CameraConfig {
        zoom,
        offset_y,
        ..CameraConfig::default()
    });
    let target = DrawTarget {
        width: size,
        height: size,
        clear_color: [0.2, 0.22, 0.25, 1.0],
        alpha: false,
    };
    let start = Instant::now();
    let mut frame = FaceFrame::empty(Protocol::Vmc, "127.0.0.1:1".parse().unwrap(), start);
    let mut images: Vec<(&str, RgbaImage)> = Vec::new();
    let mut draw = |scene: &mut Scene, name: &'static str| {
        ctx.bind();
        scene.draw(&target);
        ctx.finish();
        let path = out.join(name);
        let image = ctx.read_rgba();
        image.save_png(&path).expect("the PNG is written");
        println!("wrote {}", path.display());
        images.push((name, image));
    };
    for (springs, shots) in [
        (
            true,
            &[(0, "rest.png"), (15, "sway.png"), (180, "settled.png")][..],
        ),
        (false, &[(15, "off.png")][..]),
    ] {
        scene.set_spring_bones(springs);
        for f in 0..=shots.last().unwrap().0 {
            let t = f as f32 / 60.0;
            frame.head = Some(turn(t));
            scene.set_frame_at(Some(&frame), start + Duration::from_secs_f32(t));
            if let Some(&(_, name)) = shots.iter().find(|&&(at, _)| at == f) {
                draw(&mut scene, name);
            }
        }
    }
    let find = |name: &str| &images.iter().find(|(n, _)| *n == name).unwrap().1;
    let (on, off) = (find("sway.png"), find("off.png"));
    let differ = on
        .data
        .chunks(4)
        .zip(off.data.chunks(4))
        .filter(|(a, b)| a != b)
        .count();
    println!("{differ} pixels differ between sway.png and off.png");
    ExitCode::SUCCESS
}

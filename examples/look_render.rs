//! Renders the generated default head with face-shape ("look") sliders and expression weights
//! set, front view, to PNG files: a quick way to see the look targets (`facewire sheet` shows
//! only the expressions).
//!
//!     cargo run --example look_render -- OUT_DIR NAME=SPEC [NAME=SPEC ...]
//!
//! Each `SPEC` is a comma-separated list of `slider:value` (a look slider from
//! `facewire::headgen::look::LOOK_SLIDERS`, -1 to 1) and `channel:weight` (an ARKit channel
//! name, 0 to 1), e.g. `big=eye_size:1,jawOpen:0.6`. `NAME.png` is written for each, and
//! `sheet.png` puts them side by side. Corrective targets get the product of their two inputs'
//! weights, as the runtime sets them. The head is generated in-process, so it shows the
//! generator's current output even before `facewire gen-head` rewrites the model. With
//! `--yaw DEGREES` the camera orbits the head; `--zoom` (default 2.4)
//! frames the face and `--y` raises the camera with the point it looks at, in head heights
//! (default 0.12, the eyes; about -0.12 frames the mouth).

use facewire::app::Scene;
use facewire::arkit::Channel;
use facewire::avatar::correctives::Correctives;
use facewire::headgen::look::{eye_spacing_shift, LOOK_SLIDERS};
use facewire::image::RgbaImage;
use facewire::render::headless::HeadlessContext;

const SIZE: u32 = 512;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut flag = |name: &str, default: f32| -> f32 {
        match args.iter().position(|a| a == name) {
            Some(i) => {
                let v = args[i + 1].parse().expect("a number");
                args.drain(i..i + 2);
                v
            }
            None => default,
        }
    };
    let yaw = flag("--yaw", 0.0);
    let zoom = flag("--zoom", 2.4);
    let centre_y = flag("--y", 0.12);
    let out = std::path::PathBuf::from(args.first().expect("an output directory"));
    std::fs::create_dir_all(&out).expect("create the output directory");
    let glb = facewire::headgen::generate();
    let mut pictures = Vec::new();
    for spec in &args[1..] {
        let (name, list) = spec.split_once('=').expect("NAME=SPEC");
        let mut avatar = facewire::avatar::load_slice(&glb, "generated head").expect("loads");
        let face = avatar
            .meshes
            .iter()
            .position(|m| m.name.as_deref() == Some("Face"))
            .expect("a Face mesh");
        let mut weights: Vec<(usize, f32)> = Vec::new();
        for item in list.split(',').filter(|s| !s.is_empty()) {
            let (key, value) = item.split_once(':').expect("key:value");
            let value: f32 = value.parse().expect("a number");
            let names = &avatar.meshes[face].target_names;
            let index = |n: &str| names.iter().position(|t| t == n).expect(n);
            if let Some(s) = LOOK_SLIDERS.iter().find(|s| s.name == key) {
                let target = if value >= 0.0 { s.up } else { s.down };
                weights.push((index(target), value.abs()));
                if s.name == "eye_spacing" {
                    // The eyeballs follow their sockets, as the renderer's mapping does it.
                    let shift = eye_spacing_shift(value);
                    for node in &mut avatar.nodes {
                        match node.name.as_deref() {
                            Some("LeftEye") => node.translation.x += shift,
                            Some("RightEye") => node.translation.x -= shift,
                            _ => {}
                        }
                    }
                }
            } else {
                let ch = Channel::parse(key).unwrap_or_else(|| panic!("no channel {key}"));
                weights.push((index(ch.name()), value));
            }
        }
        // Correctives (`look*expression` targets) follow the product of their inputs' weights.
        let correctives = Correctives::resolve(&avatar);
        let ctx = HeadlessContext::new(SIZE, SIZE).expect("headless context");
        let mut scene =
            Scene::new(ctx.gl(), avatar, facewire::config::MorphMode::Cpu).expect("scene");
        let mut camera = *scene.camera();
        camera.orbit_yaw = yaw;
        camera.zoom = zoom;
        camera.offset_y = centre_y;
        scene.set_camera(camera);
        scene.set_pose(|pose| {
            for &(t, w) in &weights {
                pose.weights[face][t] += w;
            }
            correctives.apply(pose);
        });
        let image = scene.draw_image(&ctx, [0.2, 0.22, 0.25, 1.0], false);
        drop(scene);
        image
            .save_png(&out.join(format!("{name}.png")))
            .expect("write the PNG");
        pictures.push(image);
    }
    if !pictures.is_empty() {
        let columns = pictures.len().min(4) as u32;
        let rows = (pictures.len() as u32).div_ceil(columns);
        let mut sheet = RgbaImage::filled(columns * SIZE, rows * SIZE, [0, 0, 0, 255]);
        for (k, p) in pictures.iter().enumerate() {
            let (cx, cy) = ((k as u32 % columns) * SIZE, (k as u32 / columns) * SIZE);
            for y in 0..SIZE {
                let src = (y * SIZE * 4) as usize;
                let dst = (((cy + y) * sheet.width + cx) * 4) as usize;
                sheet.data[dst..dst + (SIZE * 4) as usize]
                    .copy_from_slice(&p.data[src..src + (SIZE * 4) as usize]);
            }
        }
        sheet
            .save_png(&out.join("sheet.png"))
            .expect("write the sheet");
    }
}

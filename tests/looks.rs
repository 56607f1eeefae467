//! Face customisation on the default head: wrinkle maps, face-shape sliders and look presets.

use facewire::app::Scene;
use facewire::arkit::Channel;
use facewire::headgen::DEFAULT_HEAD_GLB;
use facewire::image::RgbaImage;
use facewire::mapping::{CompiledMapping, MappingFile, DEFAULT_HEAD_MAPPING};
use facewire::render::headless::HeadlessContext;

/// The default head's own mapping, or the same without its `[wrinkles]` tables.
fn default_mapping(avatar: &facewire::avatar::Avatar, wrinkles: bool) -> CompiledMapping {
    let text = if wrinkles {
        DEFAULT_HEAD_MAPPING.to_string()
    } else {
        let cut = DEFAULT_HEAD_MAPPING
            .find("[wrinkles.")
            .expect("the default head's mapping declares wrinkle maps");
        DEFAULT_HEAD_MAPPING[..cut].to_string()
    };
    let file = MappingFile::parse(&text, "default_head.toml").expect("parses");
    CompiledMapping::compile(&file, avatar).expect("compiles")
}

/// The default head at `size`² pixels, front view, with `weights`, with or without its wrinkle
/// maps.
fn render(size: u32, weights: &[(Channel, f32)], wrinkles: bool) -> RgbaImage {
    let avatar = facewire::avatar::load_slice(DEFAULT_HEAD_GLB, "default head").expect("loads");
    let ctx = HeadlessContext::new(size, size).expect("headless context");
    let mapping = default_mapping(&avatar, wrinkles);
    let mut scene = Scene::new(ctx.gl(), avatar, facewire::config::MorphMode::Cpu).expect("scene");
    scene.set_mapping(mapping);
    scene.set_frame(Some(&crate::support::frame(weights)));
    let image = scene.draw_image(&ctx, [0.0, 0.7, 0.25, 1.0], false);
    drop(scene);
    image
}

/// The rows on which `a` and `b` differ, and how many pixels differ.
fn differing_rows(a: &RgbaImage, b: &RgbaImage) -> (Vec<u32>, usize) {
    let mut rows = Vec::new();
    let mut count = 0;
    for y in 0..a.height {
        let n = (0..a.width)
            .filter(|&x| a.pixel(x, y) != b.pixel(x, y))
            .count();
        if n > 0 {
            rows.push(y);
            count += n;
        }
    }
    (rows, count)
}

/// The first row with a pixel of the blue iris.
fn iris_top(img: &RgbaImage) -> u32 {
    (0..img.height)
        .find(|&y| {
            (0..img.width).any(|x| {
                let p = img.pixel(x, y);
                p[2] > 150 && p[2] as i32 > p[0] as i32 + 60
            })
        })
        .expect("the irises show")
}

#[test]
fn wrinkle_maps_at_weight_zero_change_no_pixel() {
    // At rest and with expressions that drive no wrinkle, the programs with wrinkle maps draw
    // exactly what the plain programs draw.
    for weights in [
        vec![],
        vec![(Channel::JawOpen, 1.0), (Channel::EyeBlinkLeft, 1.0)],
    ] {
        let with = render(256, &weights, true);
        let without = render(256, &weights, false);
        assert_eq!(differing_rows(&with, &without).1, 0, "{weights:?}");
    }
}

#[test]
fn raised_brows_line_the_forehead_and_nothing_below_the_brows() {
    let size = 512;
    let weights = [(Channel::BrowInnerUp, 1.0)];
    let with = render(size, &weights, true);
    let without = render(size, &weights, false);
    let (rows, count) = differing_rows(&with, &without);
    assert!(
        count > 150,
        "the forehead lines show: {count} pixels differ"
    );
    let eyes = iris_top(&without);
    let lowest = *rows.last().unwrap();
    // The brows sit well above the irises' top; everything the lines change is above them.
    assert!(
        lowest + size / 40 < eyes,
        "a pixel at row {lowest} changed, the irises start at row {eyes}"
    );
}

#[test]
fn a_smile_folds_its_own_side_only_and_a_frown_creases_between_the_brows() {
    let size = 384;
    let smile = [
        (Channel::MouthSmileLeft, 1.0),
        (Channel::CheekSquintLeft, 1.0),
    ];
    let with = render(size, &smile, true);
    let without = render(size, &smile, false);
    // The avatar's left is the viewer's right in a front view.
    let (mut left, mut right) = (0, 0);
    for y in 0..size {
        for x in 0..size {
            if with.pixel(x, y) != without.pixel(x, y) {
                if x >= size / 2 {
                    left += 1;
                } else {
                    right += 1;
                }
            }
        }
    }
    assert!(left > 100 && right == 0, "left {left}, right {right}");
    let frown = [(Channel::BrowDownLeft, 1.0), (Channel::BrowDownRight, 1.0)];
    let with = render(size, &frown, true);
    let without = render(size, &frown, false);
    let (rows, count) = differing_rows(&with, &without);
    assert!(count > 50, "{count}");
    assert!(*rows.last().unwrap() < iris_top(&without) + size / 20);
}

/// A look preset is watched: a valid change shows, an unknown slider is reported at its line
/// and column while the last good look stays, and a fix shows again.
#[test]
fn a_saved_preset_reloads_and_a_broken_one_keeps_the_last_good_look() {
    use crate::pipeline::{reload_steps, scripted_run};
    use std::process::Stdio;

    let dir = tempfile::tempdir().unwrap();
    let preset = dir.path().join("p.toml");
    std::fs::write(&preset, "[colors]\nhair = \"#202020\"\n").unwrap();
    let out = dir.path().join("last.png");
    let port = crate::pipeline::free_udp_port();
    let child = crate::pipeline::facewire()
        .arg("--config")
        .arg(crate::pipeline::patient_config(dir.path()))
        .args(["run", "--headless", "--exit-after", "12", "--morph", "cpu"])
        .args([
            "--size",
            "160x160",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .arg("--look")
        .arg(&preset)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A valid change, an unknown slider, then a fix.
    scripted_run(
        child,
        || {},
        reload_steps(
            &preset,
            "watching the look",
            "look reloaded",
            "look reload failed",
            "p.toml:2:1",
            [
                "[colors]\nhair = \"#e0c080\"\n",
                "[sliders]\nnot_a_slider = 0.5\n",
                "[colors]\nskin = \"#8a5a44\"\n",
            ],
        ),
    );
    // The last look's dark skin shows on the face (the centre of the frame).
    let got = RgbaImage::load_png(&out).unwrap();
    let face = got.pixel(got.width / 2, got.height / 2);
    assert!(
        face[0] < 190 && face[1] < 140,
        "the face is not the look's skin: {face:?}"
    );
}

/// Draws the default head with its own mapping in one scene for each look of `looks`.
fn render_looks(size: u32, looks: &[facewire::look::Look]) -> Vec<RgbaImage> {
    let avatar = facewire::avatar::load_slice(DEFAULT_HEAD_GLB, facewire::headgen::DEFAULT_HEAD)
        .expect("loads");
    let ctx = HeadlessContext::new(size, size).expect("headless context");
    let mapping = default_mapping(&avatar, true);
    let mut scene = Scene::new(ctx.gl(), avatar, facewire::config::MorphMode::Cpu).expect("scene");
    scene.set_mapping(mapping);
    let mut images = Vec::new();
    for look in looks {
        scene.set_look(look.clone());
        scene.update_look(true);
        scene.set_frame(None);
        images.push(scene.draw_image(&ctx, [0.0, 0.7, 0.25, 1.0], false));
    }
    drop(scene);
    images
}

fn slider_names() -> Vec<(String, f32, f32)> {
    let avatar = facewire::avatar::load_slice(DEFAULT_HEAD_GLB, "default head").unwrap();
    default_mapping(&avatar, true)
        .sliders()
        .iter()
        .map(|s| (s.name.clone(), s.min, s.max))
        .collect()
}

#[test]
fn every_slider_at_zero_draws_exactly_the_default_head_and_each_end_reshapes_it() {
    use facewire::look::Look;
    let sliders = slider_names();
    assert!(sliders.len() >= 12, "{sliders:?}");
    let zero = Look {
        sliders: sliders.iter().map(|(n, _, _)| (n.clone(), 0.0)).collect(),
        ..Look::default()
    };
    let mut looks = vec![Look::default(), zero];
    for (name, min, max) in &sliders {
        for end in [*min, *max] {
            looks.push(Look {
                sliders: vec![(name.clone(), end)],
                ..Look::default()
            });
        }
    }
    let images = render_looks(160, &looks);
    assert_eq!(
        differing_rows(&images[0], &images[1]).1,
        0,
        "a preset with every slider at 0 is the default head"
    );
    for (look, image) in looks[2..].iter().zip(&images[2..]) {
        let (_, changed) = differing_rows(&images[0], image);
        assert!(
            changed > 20,
            "{:?} changes only {changed} pixels",
            look.sliders
        );
    }
}

#[test]
fn the_look_sheet_has_the_neutral_face_and_each_slider_at_both_ends() {
    let avatar = facewire::avatar::load_slice(DEFAULT_HEAD_GLB, "default head").unwrap();
    let mapping = default_mapping(&avatar, true);
    let entries = facewire::sheet::look_entries(&mapping);
    let sliders = slider_names();
    assert_eq!(entries.len(), 1 + 2 * sliders.len());
    assert_eq!(entries[0].name, "neutral");
    for (i, (name, min, max)) in sliders.iter().enumerate() {
        let (low, high) = (&entries[1 + 2 * i], &entries[2 + 2 * i]);
        assert_eq!((&low.name, &high.name), (name, name));
        assert!(low
            .caption
            .as_deref()
            .unwrap()
            .ends_with(&format!("{min:+}")));
        assert!(high
            .caption
            .as_deref()
            .unwrap()
            .ends_with(&format!("{max:+}")));
    }
    // The command draws it.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("looks.png");
    let status = crate::pipeline::facewire()
        .args([
            "sheet",
            "--looks",
            "--size",
            "64",
            "--columns",
            "5",
            "--morph",
            "cpu",
        ])
        .arg("--out")
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    let sheet = RgbaImage::load_png(&out).unwrap();
    assert!(sheet.width >= 5 * 64 && sheet.height >= 5 * 64);
}

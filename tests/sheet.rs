//! The contact sheet rendered headlessly: the default head's 53 ARKit panels (grid size, jaw and
//! blink motion on the right part of the right panel, readable labels), a Khronos sample with
//! non-ARKit target names, and the combinations sheet (`--combos`), in process and through the
//! binary.
//!
//! Every test writes its sheet to `target/sheet-tests/*.png` for inspection.

use std::path::PathBuf;

use facewire::arkit::Channel;
use facewire::avatar::Avatar;
use facewire::image::RgbaImage;
use facewire::sheet::{
    combo_entries, render_sheet, sheet_entries, Combo, Drive, Rect, SheetEntry, SheetLayout,
    SheetOptions, Side,
};

/// Picture size of the tests' sheets.
const PANEL: u32 = 128;

fn out_path(name: &str) -> PathBuf {
    let dir = crate::support::repo().join("target/sheet-tests");
    std::fs::create_dir_all(&dir).expect("creating target/sheet-tests");
    dir.join(name)
}

fn options() -> SheetOptions {
    SheetOptions {
        panel: PANEL,
        ..SheetOptions::default()
    }
}

/// Mean absolute channel difference between the same sub-rectangle of two pictures of the
/// sheet. `part` is (x0, y0, x1, y1) in fractions of the picture.
fn mean_difference(image: &RgbaImage, a: Rect, b: Rect, part: (f32, f32, f32, f32)) -> f64 {
    let (fx0, fy0, fx1, fy1) = part;
    let x0 = (a.width as f32 * fx0) as u32;
    let x1 = (a.width as f32 * fx1) as u32;
    let y0 = (a.height as f32 * fy0) as u32;
    let y1 = (a.height as f32 * fy1) as u32;
    let mut sum = 0u64;
    let mut n = 0u64;
    for y in y0..y1 {
        for x in x0..x1 {
            let p = image.pixel(a.x + x, a.y + y);
            let q = image.pixel(b.x + x, b.y + y);
            sum += (0..3).map(|i| p[i].abs_diff(q[i]) as u64).sum::<u64>();
            n += 3;
        }
    }
    sum as f64 / n.max(1) as f64
}

/// Pixels of `rect` bright enough to be label text.
fn light_pixels(image: &RgbaImage, rect: Rect) -> usize {
    (rect.y..rect.bottom())
        .flat_map(|y| (rect.x..rect.right()).map(move |x| (x, y)))
        .filter(|&(x, y)| image.pixel(x, y)[..3].iter().all(|&c| c > 200))
        .count()
}

/// Pixels of `rect` that are clearly blue (the left-side badge).
fn blue_pixels(image: &RgbaImage, rect: Rect) -> usize {
    (rect.y..rect.bottom())
        .flat_map(|y| (rect.x..rect.right()).map(move |x| (x, y)))
        .filter(|&(x, y)| {
            let [r, g, b, _] = image.pixel(x, y);
            b > 180 && r < 90 && g < 150
        })
        .count()
}

fn index_of(entries: &[SheetEntry], channel: Channel) -> usize {
    entries
        .iter()
        .position(|e| e.channel() == Some(channel))
        .unwrap_or_else(|| panic!("no panel for {channel}"))
}

fn default_head() -> Avatar {
    facewire::avatar::load_slice(facewire::headgen::DEFAULT_HEAD_GLB, "default_head.glb")
        .expect("the default head loads")
}

#[test]
fn default_head_sheet_shows_every_channel_on_the_right_side() {
    let avatar = default_head();
    let entries = sheet_entries(&avatar);
    assert_eq!(entries.len(), 53, "neutral + 52 ARKit channels");
    assert_eq!(entries[0].drive, Drive::Neutral);
    for (entry, channel) in entries[1..].iter().zip(Channel::ALL) {
        assert_eq!(entry.channel(), Some(channel), "canonical ARKit order");
    }

    let options = options();
    let layout = SheetLayout::new(entries.len(), &options).unwrap();
    let sheet = render_sheet(avatar, &options).expect("rendering the sheet");
    sheet.save_png(&out_path("default_head.png")).unwrap();
    assert_eq!((sheet.width, sheet.height), (layout.width, layout.height));
    assert_eq!((layout.columns, layout.rows), (8, 7));

    let neutral = layout.picture(0);
    // The jaw opens in the lower half of the face; the upper half barely moves.
    let jaw = layout.picture(index_of(&entries, Channel::JawOpen));
    let jaw_lower = mean_difference(&sheet, jaw, neutral, (0.0, 0.5, 1.0, 1.0));
    let jaw_upper = mean_difference(&sheet, jaw, neutral, (0.0, 0.0, 1.0, 0.5));
    assert!(
        jaw_lower > 1.0 && jaw_lower > 2.0 * jaw_upper,
        "jawOpen: lower {jaw_lower:.2}, upper {jaw_upper:.2}"
    );

    // The avatar's left eye is on the viewer's right in a front view.
    for (channel, right_side) in [
        (Channel::EyeBlinkLeft, true),
        (Channel::EyeBlinkRight, false),
    ] {
        let index = index_of(&entries, channel);
        let blink = layout.picture(index);
        let left = mean_difference(&sheet, blink, neutral, (0.0, 0.0, 0.5, 1.0));
        let right = mean_difference(&sheet, blink, neutral, (0.5, 0.0, 1.0, 1.0));
        let (near, far) = if right_side {
            (right, left)
        } else {
            (left, right)
        };
        assert!(
            near > 0.2 && near > 3.0 * far,
            "{channel}: viewer's left {left:.3}, viewer's right {right:.3}"
        );
        // Its badge sits on the same side of the label.
        let label = layout.label(index);
        let half = label.width / 2;
        let viewer_right = Rect {
            x: label.x + half,
            width: half,
            ..label
        };
        let viewer_left = Rect {
            width: half,
            ..label
        };
        if right_side {
            assert_eq!(entries[index].side, Some(Side::Left));
            assert!(blue_pixels(&sheet, viewer_right) > 20);
            assert_eq!(blue_pixels(&sheet, viewer_left), 0);
        }
    }

    // Every panel differs from neutral somewhere, and every label carries light text.
    for (index, entry) in entries.iter().enumerate() {
        assert!(
            light_pixels(&sheet, layout.label(index)) > 20,
            "label of {} has no text",
            entry.name
        );
        if index > 0 {
            let d = mean_difference(&sheet, layout.picture(index), neutral, (0.0, 0.0, 1.0, 1.0));
            assert!(d > 0.0, "{} looks like neutral", entry.name);
        }
    }
    // The title row has text too.
    assert!(light_pixels(&sheet, layout.title) > 50);
}

#[test]
fn khronos_sample_with_plain_names_gets_one_panel_per_target() {
    let Some(dir) = crate::support::fixtures("the MorphStressTest contact sheet") else {
        return;
    };
    let path = dir.join("gltf/khronos/MorphStressTest/glTF/MorphStressTest.gltf");
    let avatar = facewire::avatar::load(&path).expect("MorphStressTest loads");
    let entries = sheet_entries(&avatar);
    let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        ["neutral", "Key 1", "Key 2", "Key 3", "Key 4", "Key 5", "Key 6", "Key 7", "Key 8"]
    );
    for entry in &entries[1..] {
        assert_eq!(entry.drive, Drive::Weights);
        assert_eq!(entry.side, None);
        assert_eq!(entry.targets.len(), 1);
        assert_eq!(entry.caption.as_deref(), Some("not ARKit"));
    }

    let options = options();
    let layout = SheetLayout::new(entries.len(), &options).unwrap();
    let sheet = render_sheet(avatar, &options).expect("rendering the sheet");
    sheet.save_png(&out_path("morph_stress_test.png")).unwrap();
    assert_eq!((sheet.width, sheet.height), (layout.width, layout.height));
    assert_eq!((layout.columns, layout.rows), (8, 2));
    let neutral = layout.picture(0);
    for (index, entry) in entries.iter().enumerate().skip(1) {
        let d = mean_difference(&sheet, layout.picture(index), neutral, (0.0, 0.0, 1.0, 1.0));
        assert!(d > 0.05, "{} looks like neutral ({d:.3})", entry.name);
        assert!(light_pixels(&sheet, layout.label(index)) > 20);
    }
}

#[test]
fn combination_sheet_has_one_labelled_posed_panel_per_combination() {
    let combos = Combo::built_in();
    let entries = combo_entries(&combos);
    assert_eq!(
        entries.len(),
        combos.len() + 1,
        "neutral + one per combination"
    );
    let options = SheetOptions {
        combos: combos.clone(),
        columns: 4,
        ..options()
    };
    let layout = SheetLayout::new(entries.len(), &options).unwrap();
    let sheet = render_sheet(default_head(), &options).expect("rendering the sheet");
    sheet
        .save_png(&out_path("default_head_combos.png"))
        .unwrap();
    assert_eq!((sheet.width, sheet.height), (layout.width, layout.height));
    assert_eq!((layout.columns, layout.rows), (4, 3));
    let neutral = layout.picture(0);
    for (index, entry) in entries.iter().enumerate() {
        assert!(
            light_pixels(&sheet, layout.label(index)) > 20,
            "label of {} has no text",
            entry.name
        );
        if index > 0 {
            // Every combination moves the face away from neutral.
            let d = mean_difference(&sheet, layout.picture(index), neutral, (0.0, 0.0, 1.0, 1.0));
            assert!(d > 0.2, "{} looks like neutral ({d:.3})", entry.name);
        }
    }
    // The laugh opens the mouth: its lower half changes more than its upper half.
    let laugh = layout.picture(1);
    assert_eq!(entries[1].name, "laugh");
    let lower = mean_difference(&sheet, laugh, neutral, (0.0, 0.55, 1.0, 1.0));
    let upper = mean_difference(&sheet, laugh, neutral, (0.0, 0.0, 1.0, 0.4));
    assert!(
        lower > 2.0 * upper,
        "laugh: lower {lower:.2}, upper {upper:.2}"
    );
    // The wink carries the left badge, on the viewer's right half of its label.
    let wink = entries
        .iter()
        .position(|e| e.name == "wink + smile")
        .unwrap();
    assert_eq!(entries[wink].side, Some(Side::Left));
    let label = layout.label(wink);
    let half = label.width / 2;
    assert!(
        blue_pixels(
            &sheet,
            Rect {
                x: label.x + half,
                width: half,
                ..label
            }
        ) > 20
    );
}

#[test]
fn sheet_command_draws_the_built_in_and_given_combinations() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("combos.png");
    let output = crate::pipeline::facewire()
        .args([
            "sheet",
            "--combos",
            "--combo",
            "open wide:jawOpen=1,mouthStretch_L=0.5,mouthStretch_R=0.5",
            "--combo",
            "eyeBlinkRight=1",
            "--size",
            "64",
            "--columns",
            "5",
            "--morph",
            "cpu",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let sheet = RgbaImage::load_png(&out).unwrap();
    // Neutral, the built-in combinations, then the two given ones.
    let panels = 1 + Combo::built_in().len() + 2;
    let layout = SheetLayout::new(
        panels,
        &SheetOptions {
            panel: 64,
            columns: 5,
            ..SheetOptions::default()
        },
    )
    .unwrap();
    assert_eq!((sheet.width, sheet.height), (layout.width, layout.height));
    for index in 0..panels {
        assert!(
            light_pixels(&sheet, layout.label(index)) > 10,
            "panel {index} has no label"
        );
    }

    // A misspelt channel is refused with a suggestion, before anything is drawn.
    let output = crate::pipeline::facewire()
        .args(["sheet", "--combo", "x:jawOpn=1"])
        .arg("--out")
        .arg(dir.path().join("bad.png"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("did you mean jawOpen"), "{stderr}");
    assert!(!dir.path().join("bad.png").exists());
}

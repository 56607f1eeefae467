//! The contact sheet rendered headlessly: the default head's 53 ARKit panels (grid size, jaw and
//! blink motion on the right part of the right panel, readable labels) and a Khronos sample with
//! non-ARKit target names.
//!
//! Every test writes its sheet to `target/sheet-tests/*.png` for inspection.

use std::path::PathBuf;

use facewire::arkit::Channel;
use facewire::avatar::Avatar;
use facewire::image::RgbaImage;
use facewire::sheet::{
    render_sheet, sheet_entries, Drive, Rect, SheetEntry, SheetLayout, SheetOptions, Side,
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

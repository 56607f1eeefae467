//! Levels of detail (`MSFT_lod`) on a built GLB: fixed levels draw exactly the chosen node, auto
//! mode follows the screen coverage, hidden levels and their subtrees never draw, a broken
//! extension is ignored, and `snapshot --lod` reaches the renderer.
//!
//! The model: a Head with a red Face (level 0) whose levels 1 and 2 are a green quad (a child of
//! the Head, with a magenta Detail child of its own) and a blue quad (a scene root), and a
//! yellow Eye under the Head that always draws. Every material is unlit, so each node is known
//! by its colour.

use facewire::avatar::{load_slice, Avatar, LodGroup};
use facewire::image::RgbaImage;
use facewire::render::headless::HeadlessContext;
use facewire::render::{Camera, DrawTarget, LodMode, MorphMode, Renderer, FRAMING_FOV_Y};
use glam::Vec3;

use super::{context, save};
use crate::support::{facewire_bin, glb, repo};

/// Image size.
const SIZE: u32 = 128;

/// The nodes' colours, in the order of [`colour_of`]'s answers.
const RED: usize = 0;
const GREEN: usize = 1;
const BLUE: usize = 2;
const YELLOW: usize = 3;
const MAGENTA: usize = 4;

/// A quad facing +Z: two triangles around (`x`, `y`, `z`), `half` from the centre to each side.
fn quad(x: f32, y: f32, z: f32, half: f32) -> [[f32; 3]; 6] {
    let (l, r, b, t) = (x - half, x + half, y - half, y + half);
    [
        [l, b, z],
        [r, b, z],
        [r, t, z],
        [l, b, z],
        [r, t, z],
        [l, t, z],
    ]
}

/// The GLB: `face` is the JSON after the Face node's mesh (its extension and extras).
fn model(face: &str) -> Vec<u8> {
    // Meshes: face levels 0..2 (the same square), the eye, the detail.
    let quads = [
        quad(0.0, 0.0, 0.0, 0.5),
        quad(0.0, 0.0, 0.0, 0.5),
        quad(0.0, 0.0, 0.0, 0.5),
        quad(0.0, 0.3, 0.05, 0.08),
        quad(-0.3, -0.3, 0.05, 0.08),
    ];
    let colours = [
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
        [1.0, 1.0, 0.0],
        [1.0, 0.0, 1.0],
    ];
    let mut bin = Vec::new();
    let (mut views, mut accessors, mut meshes, mut materials) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, (q, c)) in quads.iter().zip(colours).enumerate() {
        let offset = bin.len();
        for p in q {
            for v in p {
                bin.extend(v.to_le_bytes());
            }
        }
        let min: Vec<f32> = (0..3)
            .map(|a| q.iter().map(|p| p[a]).fold(f32::MAX, f32::min))
            .collect();
        let max: Vec<f32> = (0..3)
            .map(|a| q.iter().map(|p| p[a]).fold(f32::MIN, f32::max))
            .collect();
        views.push(format!(
            r#"{{"buffer":0,"byteOffset":{offset},"byteLength":72}}"#
        ));
        accessors.push(format!(
            r#"{{"bufferView":{i},"componentType":5126,"count":6,"type":"VEC3","min":{min:?},"max":{max:?}}}"#
        ));
        meshes.push(format!(
            r#"{{"primitives":[{{"attributes":{{"POSITION":{i}}},"material":{i}}}]}}"#
        ));
        materials.push(format!(
            r#"{{"pbrMetallicRoughness":{{"baseColorFactor":[{},{},{},1.0]}},"doubleSided":true,"extensions":{{"KHR_materials_unlit":{{}}}}}}"#,
            c[0], c[1], c[2]
        ));
    }
    let json = format!(
        r#"{{"asset":{{"version":"2.0"}},
        "extensionsUsed":["MSFT_lod","KHR_materials_unlit"],
        "scene":0,"scenes":[{{"nodes":[0,3]}}],
        "nodes":[
            {{"name":"Head","children":[1,2,4]}},
            {{"name":"Face","mesh":0{face}}},
            {{"name":"Face_LOD1","mesh":1,"children":[5]}},
            {{"name":"Face_LOD2","mesh":2}},
            {{"name":"Eye","mesh":3}},
            {{"name":"Detail","mesh":4}}
        ],
        "meshes":[{}],"materials":[{}],"accessors":[{}],"bufferViews":[{}],
        "buffers":[{{"byteLength":{}}}]}}"#,
        meshes.join(","),
        materials.join(","),
        accessors.join(","),
        views.join(","),
        bin.len()
    );
    glb(json.as_bytes(), &bin)
}

/// The Face's extension naming both lower levels, without thresholds.
const LOD: &str = r#","extensions":{"MSFT_lod":{"ids":[2,3]}}"#;

/// Which node colour a pixel shows, if any.
fn colour_of(p: [u8; 4]) -> Option<usize> {
    let on = |c: u8| c > 160;
    let off = |c: u8| c < 60;
    match (p[0], p[1], p[2]) {
        (r, g, b) if on(r) && off(g) && off(b) => Some(RED),
        (r, g, b) if off(r) && on(g) && off(b) => Some(GREEN),
        (r, g, b) if off(r) && off(g) && on(b) => Some(BLUE),
        (r, g, b) if on(r) && on(g) && off(b) => Some(YELLOW),
        (r, g, b) if on(r) && off(g) && on(b) => Some(MAGENTA),
        _ => None,
    }
}

/// How many pixels show each colour.
fn census(image: &RgbaImage) -> [usize; 5] {
    let mut counts = [0; 5];
    for y in 0..image.height {
        for x in 0..image.width {
            if let Some(c) = colour_of(image.pixel(x, y)) {
                counts[c] += 1;
            }
        }
    }
    counts
}

/// A camera on +Z at `distance` from the Face, looking at it with the framing lens.
fn camera_at(distance: f32) -> Camera {
    Camera {
        eye: Vec3::new(0.0, 0.0, distance),
        target: Vec3::ZERO,
        up: Vec3::Y,
        fov_y: FRAMING_FOV_Y,
        aspect: 1.0,
        near: 0.05,
        far: 200.0,
    }
}

fn target() -> DrawTarget {
    DrawTarget {
        width: SIZE,
        height: SIZE,
        clear_color: [0.0, 0.0, 0.0, 1.0],
        alpha: false,
    }
}

/// Draws one frame of `avatar` at rest.
fn draw(
    ctx: &HeadlessContext,
    renderer: &mut Renderer,
    avatar: &Avatar,
    camera: &Camera,
) -> RgbaImage {
    ctx.bind();
    renderer.draw(&avatar.rest_pose(), camera, &target());
    ctx.read_rgba()
}

#[test]
fn the_loader_reads_the_group_of_the_built_model() {
    let avatar = load_slice(&model(LOD), "lod.glb").unwrap();
    assert_eq!(
        avatar.lods,
        [LodGroup {
            levels: vec![1, 2, 3],
            coverage: vec![],
        }]
    );
}

#[test]
fn fixed_levels_draw_exactly_the_chosen_node_and_its_subtree() {
    let ctx = context(SIZE, SIZE);
    let avatar = load_slice(&model(LOD), "lod.glb").unwrap();
    let camera = camera_at(3.0);
    for morph in [MorphMode::Cpu, MorphMode::Gpu] {
        let mut renderer = Renderer::new(ctx.gl(), &avatar, morph).unwrap();
        // Level 5 is past the last: the last level draws.
        for (level, face) in [(0, RED), (1, GREEN), (2, BLUE), (5, BLUE), (0, RED)] {
            renderer.set_lod(LodMode::Fixed(level));
            let image = draw(&ctx, &mut renderer, &avatar, &camera);
            save(&image, &format!("lod_fixed_{level}_{morph}"));
            let counts = census(&image);
            assert_eq!(renderer.lod_levels(), [level.min(2) as usize]);
            assert!(counts[face] > 1000, "level {level}: {counts:?}");
            assert!(counts[YELLOW] > 10, "the eye always draws: {counts:?}");
            for other in [RED, GREEN, BLUE] {
                if other != face {
                    assert_eq!(counts[other], 0, "level {level} shows {other}: {counts:?}");
                }
            }
            // The Detail hangs under level 1 and draws only with it.
            assert_eq!(
                counts[MAGENTA] > 10,
                face == GREEN,
                "level {level}: {counts:?}"
            );
            assert_eq!(colour_of(image.pixel(SIZE / 2, SIZE / 2)), Some(face));
        }
    }
}

#[test]
fn auto_mode_follows_the_screen_coverage() {
    let ctx = context(SIZE, SIZE);
    let avatar = load_slice(&model(LOD), "lod.glb").unwrap();
    let mut renderer = Renderer::new(ctx.gl(), &avatar, MorphMode::Auto).unwrap();
    assert_eq!(renderer.lod(), LodMode::Auto);
    // The Face's bounding sphere has a radius of √0.5; with the 27° lens it covers about 1.0 of
    // the height at 3 units, 0.37 at 8 and 0.15 at 20: the defaults pick levels 0, 1 and 2.
    for (distance, level, face) in [
        (3.0, 0, RED),
        (8.0, 1, GREEN),
        (20.0, 2, BLUE),
        (3.0, 0, RED),
    ] {
        let image = draw(&ctx, &mut renderer, &avatar, &camera_at(distance));
        save(&image, &format!("lod_auto_{distance}"));
        assert_eq!(renderer.lod_levels(), [level], "at {distance}");
        let counts = census(&image);
        assert!(counts[face] > 20, "at {distance}: {counts:?}");
        for other in [RED, GREEN, BLUE] {
            if other != face {
                assert_eq!(counts[other], 0, "at {distance}: {counts:?}");
            }
        }
    }
    // Switching live to a fixed level and back.
    renderer.set_lod(LodMode::Fixed(2));
    let image = draw(&ctx, &mut renderer, &avatar, &camera_at(3.0));
    assert_eq!(renderer.lod_levels(), [2]);
    assert_eq!(census(&image)[RED], 0);
    renderer.set_lod(LodMode::Auto);
    draw(&ctx, &mut renderer, &avatar, &camera_at(3.0));
    assert_eq!(renderer.lod_levels(), [0]);

    // The file's own thresholds: level 1 from 0.9 of the height, level 2 below 0.8, so the
    // face at 3 units (about 1.0) draws level 0 and at 3.4 units (about 0.87) level 1.
    let avatar = load_slice(
        &model(&format!(
            r#"{LOD},"extras":{{"MSFT_screencoverage":[0.9,0.8]}}"#
        )),
        "lod.glb",
    )
    .unwrap();
    assert_eq!(avatar.lods[0].coverage, [0.9, 0.8]);
    let mut renderer = Renderer::new(ctx.gl(), &avatar, MorphMode::Auto).unwrap();
    for (distance, level) in [(3.0, 0), (3.4, 1), (8.0, 2)] {
        draw(&ctx, &mut renderer, &avatar, &camera_at(distance));
        assert_eq!(renderer.lod_levels(), [level], "at {distance}");
    }
}

#[test]
fn a_malformed_extension_is_ignored_and_the_avatar_still_draws() {
    let ctx = context(SIZE, SIZE);
    for broken in [
        r#","extensions":{"MSFT_lod":{"ids":[1,99,-4,"x"]}}"#,
        r#","extensions":{"MSFT_lod":{"ids":{"1":2}}}"#,
        r#","extensions":{"MSFT_lod":[2,3]}"#,
        r#","extensions":{"MSFT_lod":{"ids":[0]}}"#,
    ] {
        let avatar = load_slice(&model(broken), "broken.glb").unwrap();
        assert!(avatar.lods.is_empty(), "{broken}");
        let mut renderer = Renderer::new(ctx.gl(), &avatar, MorphMode::Auto).unwrap();
        assert!(renderer.lod_levels().is_empty());
        let image = draw(&ctx, &mut renderer, &avatar, &camera_at(3.0));
        let counts = census(&image);
        assert!(counts.iter().sum::<usize>() > 1000, "{broken}: {counts:?}");
        assert!(counts[YELLOW] > 10, "{broken}: {counts:?}");
    }
    // Bad thresholds leave the group with the defaults.
    let avatar = load_slice(
        &model(&format!(
            r#"{LOD},"extras":{{"MSFT_screencoverage":[0.1,0.9,-1]}}"#
        )),
        "bad-coverage.glb",
    )
    .unwrap();
    assert_eq!(avatar.lods[0].levels, [1, 2, 3]);
    assert!(avatar.lods[0].coverage.is_empty());
}

#[test]
fn snapshot_takes_the_level_from_the_flag_and_the_config() {
    let dir = repo().join("target/render-tests/lod");
    std::fs::create_dir_all(&dir).unwrap();
    let model_path = dir.join("lod.glb");
    std::fs::write(&model_path, model(LOD)).unwrap();
    let config_path = dir.join("lod1.toml");
    std::fs::write(&config_path, "[render]\nlod = 1\n").unwrap();
    let snapshot = |extra: &[&str], name: &str| {
        let out = dir.join(format!("{name}.png"));
        let output = std::process::Command::new(facewire_bin())
            .current_dir(repo())
            .args(["snapshot", "--size", "96x96", "--transparent", "--model"])
            .arg(&model_path)
            .args(extra)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        census(&RgbaImage::load_png(&out).unwrap())
    };
    let auto = snapshot(&[], "auto");
    assert!(auto[RED] > 100 && auto[BLUE] == 0, "{auto:?}");
    let flag = snapshot(&["--lod", "2"], "flag");
    assert!(flag[BLUE] > 100 && flag[RED] == 0, "{flag:?}");
    let config = config_path.to_str().unwrap();
    let configured = snapshot(&["--config", config], "config");
    assert!(
        configured[GREEN] > 100 && configured[RED] == 0,
        "{configured:?}"
    );
    let flag_wins = snapshot(&["--config", config, "--lod", "auto"], "flag_wins");
    assert!(flag_wins[RED] > 100, "{flag_wins:?}");
}

//! Texture images and samplers: WebP (`EXT_texture_webp`) and KTX2 with Basis Universal
//! (`KHR_texture_basisu`) on GLBs built here, which image a texture is drawn from, hostile
//! images, and the sampler's wrap and filter modes in rendered images.

use std::path::PathBuf;

use facewire::avatar::{self, Avatar, MagFilter, MinFilter, Sampler, Wrap};
use facewire::image::RgbaImage;
use facewire::render::headless::HeadlessContext;
use facewire::render::{Camera, DrawTarget, MorphMode, Renderer};
use glam::{Vec2, Vec3};

const SIZE: u32 = 128;

// ---------------------------------------------------------------------------------------------
// Building GLBs: unlit quads, each drawing one texture.
// ---------------------------------------------------------------------------------------------

/// A GLB under construction: its binary chunk, buffer views, accessors and meshes.
#[derive(Default)]
struct Glb {
    bin: Vec<u8>,
    views: Vec<String>,
    accessors: Vec<String>,
    meshes: Vec<String>,
}

impl Glb {
    /// Appends `bytes` as a buffer view; returns its index.
    fn view(&mut self, bytes: &[u8]) -> usize {
        self.bin.resize(self.bin.len().next_multiple_of(4), 0);
        self.views.push(format!(
            r#"{{"buffer":0,"byteOffset":{},"byteLength":{}}}"#,
            self.bin.len(),
            bytes.len()
        ));
        self.bin.extend_from_slice(bytes);
        self.views.len() - 1
    }

    fn accessor(&mut self, bytes: &[u8], component: u32, count: usize, ty: &str, extra: &str) {
        let view = self.view(bytes);
        self.accessors.push(format!(
            r#"{{"bufferView":{view},"componentType":{component},"count":{count},"type":"{ty}"{extra}}}"#
        ));
    }

    /// An unlit quad from `min` to `max` at z = 0, facing +Z, whose UVs run from `uv_min` (top
    /// left) to `uv_max` (bottom right), drawn with material `material`.
    fn quad(&mut self, min: Vec2, max: Vec2, uv_min: Vec2, uv_max: Vec2, material: usize) {
        let p = [
            Vec3::new(min.x, min.y, 0.0),
            Vec3::new(max.x, min.y, 0.0),
            Vec3::new(max.x, max.y, 0.0),
            Vec3::new(min.x, max.y, 0.0),
        ];
        let uv = [
            Vec2::new(uv_min.x, uv_max.y),
            Vec2::new(uv_max.x, uv_max.y),
            Vec2::new(uv_max.x, uv_min.y),
            Vec2::new(uv_min.x, uv_min.y),
        ];
        let first = self.accessors.len();
        let floats = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|f| f.to_le_bytes()).collect() };
        let positions: Vec<f32> = p.iter().flat_map(|v| v.to_array()).collect();
        let bounds = format!(
            r#","min":[{},{},0],"max":[{},{},0]"#,
            min.x, min.y, max.x, max.y
        );
        self.accessor(&floats(&positions), 5126, 4, "VEC3", &bounds);
        self.accessor(&floats(&[0.0, 0.0, 1.0].repeat(4)), 5126, 4, "VEC3", "");
        let uvs: Vec<f32> = uv.iter().flat_map(|v| v.to_array()).collect();
        self.accessor(&floats(&uvs), 5126, 4, "VEC2", "");
        let indices: Vec<u8> = [0u16, 1, 2, 0, 2, 3]
            .iter()
            .flat_map(|i| i.to_le_bytes())
            .collect();
        self.accessor(&indices, 5123, 6, "SCALAR", "");
        self.meshes.push(format!(
            r#"{{"primitives":[{{"attributes":{{"POSITION":{first},"NORMAL":{},"TEXCOORD_0":{}}},"indices":{},"material":{material}}}]}}"#,
            first + 1,
            first + 2,
            first + 3
        ));
    }

    /// The GLB: one node per mesh, one unlit material per texture (material `i` draws texture
    /// `i`), and `extra` JSON members (`textures`, `images`, `samplers`, extension lists).
    fn build(self, textures: usize, extra: &str) -> Vec<u8> {
        let nodes: Vec<String> = (0..self.meshes.len())
            .map(|m| format!(r#"{{"mesh":{m}}}"#))
            .collect();
        let roots: Vec<String> = (0..self.meshes.len()).map(|m| m.to_string()).collect();
        let materials: Vec<String> = (0..textures)
            .map(|t| {
                format!(
                    r#"{{"pbrMetallicRoughness":{{"baseColorTexture":{{"index":{t}}}}},"extensions":{{"KHR_materials_unlit":{{}}}}}}"#
                )
            })
            .collect();
        let json = format!(
            r#"{{"asset":{{"version":"2.0"}},"scene":0,"scenes":[{{"nodes":[{}]}}],"nodes":[{}],"meshes":[{}],"materials":[{}],"buffers":[{{"byteLength":{}}}],"bufferViews":[{}],"accessors":[{}]{extra}}}"#,
            roots.join(","),
            nodes.join(","),
            self.meshes.join(","),
            materials.join(","),
            self.bin.len().next_multiple_of(4),
            self.views.join(","),
            self.accessors.join(","),
        );
        crate::support::glb(json.as_bytes(), &self.bin)
    }
}

/// The extension lists of a file that requires `extensions` (plus unlit materials).
fn requiring(extensions: &[&str]) -> String {
    let mut used: Vec<String> = extensions.iter().map(|e| format!(r#""{e}""#)).collect();
    let required = used.join(",");
    used.push(r#""KHR_materials_unlit""#.to_owned());
    format!(
        r#","extensionsUsed":[{}],"extensionsRequired":[{required}]"#,
        used.join(",")
    )
}

/// An 8×8 image of four 4×4 quadrants: red top left, green top right, blue bottom left, white
/// bottom right, as `tests/textures/quadrants.png` and its KTX2 encodings hold it.
const QUADRANTS: [[u8; 3]; 4] = [[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 255]];

fn quadrant_pixels() -> Vec<u8> {
    let mut rgba = Vec::new();
    for y in 0..8 {
        for x in 0..8 {
            let c = QUADRANTS[(y / 4) * 2 + x / 4];
            rgba.extend_from_slice(&[c[0], c[1], c[2], 255]);
        }
    }
    rgba
}

/// `rgba` (width × height) as a lossless WebP.
fn webp(rgba: &[u8], width: u32, height: u32) -> Vec<u8> {
    let mut out = Vec::new();
    image_webp::WebPEncoder::new(&mut out)
        .encode(rgba, width, height, image_webp::ColorType::Rgba8)
        .expect("encode WebP");
    out
}

fn png(rgba: &[u8], width: u32, height: u32) -> Vec<u8> {
    RgbaImage {
        width,
        height,
        data: rgba.to_vec(),
    }
    .to_png()
    .expect("encode PNG")
}

fn fixture(name: &str) -> Vec<u8> {
    let path = crate::support::repo().join("tests/textures").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// An uncompressed RGBA8 (sRGB) KTX 2.0 file of one level, laid out as the specification says:
/// header, level index, basic data format descriptor, pixels.
fn rgba8_ktx2(width: u32, height: u32, pixels: &[u8]) -> Vec<u8> {
    let mut dfd: Vec<u32> = vec![92, 0, 2 | (88 << 16), 1 | (1 << 8) | (2 << 16), 0, 4, 0];
    for (channel, offset) in [(0u32, 0u32), (1, 8), (2, 16), (15, 24)] {
        dfd.extend([offset | (7 << 16) | (channel << 24), 0, 0, 255]);
    }
    let dfd: Vec<u8> = dfd.iter().flat_map(|w| w.to_le_bytes()).collect();
    let dfd_offset = 80 + 24;
    let data_offset = (dfd_offset + dfd.len()).next_multiple_of(16);
    let mut out = b"\xABKTX 20\xBB\r\n\x1A\n".to_vec();
    for word in [43u32, 1, width, height, 0, 0, 1, 1, 0] {
        out.extend(word.to_le_bytes());
    }
    for word in [dfd_offset as u32, dfd.len() as u32, 0, 0] {
        out.extend(word.to_le_bytes());
    }
    out.extend([0u8; 16]);
    for word in [data_offset as u64, pixels.len() as u64, pixels.len() as u64] {
        out.extend(word.to_le_bytes());
    }
    out.extend(dfd);
    out.resize(data_offset, 0);
    out.extend_from_slice(pixels);
    out
}

/// A GLB of one unit quad drawing one texture whose image is `image` (`mime`), named by the
/// texture extension `extension` (`None`: by the plain `source`).
fn one_image_glb(image: &[u8], mime: &str, extension: Option<&str>) -> Vec<u8> {
    let mut glb = Glb::default();
    glb.quad(
        Vec2::splat(-1.0),
        Vec2::splat(1.0),
        Vec2::ZERO,
        Vec2::ONE,
        0,
    );
    let view = glb.view(image);
    let (texture, lists) = match extension {
        Some(name) => (
            format!(r#"{{"extensions":{{"{name}":{{"source":0}}}}}}"#),
            requiring(&[name]),
        ),
        None => (r#"{"source":0}"#.to_owned(), requiring(&[])),
    };
    glb.build(
        1,
        &format!(
            r#","textures":[{texture}],"images":[{{"bufferView":{view},"mimeType":"{mime}"}}]{lists}"#
        ),
    )
}

// ---------------------------------------------------------------------------------------------
// Rendering.
// ---------------------------------------------------------------------------------------------

fn out_dir() -> PathBuf {
    let dir = crate::support::repo().join("target/render-tests");
    std::fs::create_dir_all(&dir).expect("create target/render-tests");
    dir
}

/// Renders `avatar` at rest, looking down -Z at the square from (-2, -2) to (2, 2), and saves
/// the image as `textures_{label}.png`.
fn render(avatar: &Avatar, label: &str) -> (Camera, RgbaImage) {
    let camera = Camera::framing(
        avatar::Aabb {
            min: Vec3::new(-2.0, -2.0, 0.0),
            max: Vec3::new(2.0, 2.0, 0.0),
        },
        1.0,
    );
    let ctx = HeadlessContext::new(SIZE, SIZE).expect("headless context");
    let mut renderer = Renderer::new(ctx.gl(), avatar, MorphMode::Auto).expect("renderer");
    ctx.bind();
    renderer.draw(
        &avatar.rest_pose(),
        &camera,
        &DrawTarget {
            width: SIZE,
            height: SIZE,
            clear_color: [0.0, 0.0, 0.0, 1.0],
            alpha: false,
        },
    );
    let image = ctx.read_rgba();
    image
        .save_png(&out_dir().join(format!("textures_{label}.png")))
        .expect("write test PNG");
    (camera, image)
}

/// The colour drawn at world point (x, y, 0).
fn pixel_at(image: &RgbaImage, camera: &Camera, x: f32, y: f32) -> [u8; 3] {
    let ndc = camera.view_proj().project_point3(Vec3::new(x, y, 0.0));
    let px = ((ndc.x * 0.5 + 0.5) * SIZE as f32).clamp(0.0, SIZE as f32 - 1.0) as u32;
    let py = ((0.5 - ndc.y * 0.5) * SIZE as f32).clamp(0.0, SIZE as f32 - 1.0) as u32;
    let p = image.pixel(px, py);
    [p[0], p[1], p[2]]
}

fn assert_near(got: [u8; 3], want: [u8; 3], tolerance: u8, what: &str) {
    let ok = got
        .iter()
        .zip(want)
        .all(|(&g, w)| g.abs_diff(w) <= tolerance);
    assert!(ok, "{what}: got {got:?}, want {want:?} (±{tolerance})");
}

/// Asserts a unit quad showing the quadrant texture, rendered, has each quadrant's colour at
/// its centre (the texture's top row is the quad's top: glTF v = 0 is the image's first row).
fn assert_quadrants_drawn(avatar: &Avatar, label: &str, tolerance: u8) {
    let (camera, image) = render(avatar, label);
    let centres = [(-0.5, 0.5), (0.5, 0.5), (-0.5, -0.5), (0.5, -0.5)];
    for (colour, (x, y)) in QUADRANTS.iter().zip(centres) {
        assert_near(
            pixel_at(&image, &camera, x, y),
            *colour,
            tolerance,
            &format!("{label} at ({x}, {y})"),
        );
    }
}

/// Asserts the decoded texture is 8×8 with each quadrant's colour at every texel, within
/// `tolerance`.
fn assert_quadrant_texels(texture: &avatar::Texture, tolerance: u8, what: &str) {
    assert_eq!((texture.width, texture.height), (8, 8), "{what}");
    for y in 0..8 {
        for x in 0..8 {
            let i = (y * 8 + x) * 4;
            let texel = &texture.rgba[i..i + 4];
            assert_near(
                [texel[0], texel[1], texel[2]],
                QUADRANTS[(y / 4) * 2 + x / 4],
                tolerance,
                &format!("{what}: texel ({x}, {y})"),
            );
            assert_eq!(texel[3], 255, "{what}: alpha at ({x}, {y})");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// WebP.
// ---------------------------------------------------------------------------------------------

#[test]
fn webp_texture_required_by_the_file_loads_exactly_and_draws() {
    // Every texel distinct, alpha included, so an exact match means a lossless round trip.
    let mut rgba = quadrant_pixels();
    for (i, texel) in rgba.chunks_exact_mut(4).enumerate() {
        texel[0] = texel[0].saturating_sub(i as u8);
        texel[3] = 255 - (i % 5) as u8;
    }
    let glb = one_image_glb(&webp(&rgba, 8, 8), "image/webp", Some("EXT_texture_webp"));
    let avatar = avatar::load_slice(&glb, "webp").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(avatar.textures.len(), 1);
    assert_eq!(
        (avatar.textures[0].width, avatar.textures[0].height),
        (8, 8)
    );
    assert_eq!(avatar.textures[0].rgba, rgba);
    assert_eq!(avatar.textures[0].sampler, Sampler::default());

    let opaque = one_image_glb(
        &webp(&quadrant_pixels(), 8, 8),
        "image/webp",
        Some("EXT_texture_webp"),
    );
    let avatar = avatar::load_slice(&opaque, "webp-opaque").unwrap();
    assert_quadrant_texels(&avatar.textures[0], 0, "WebP");
    assert_quadrants_drawn(&avatar, "webp", 2);
}

#[test]
fn lossy_webp_with_alpha_decodes_near_what_libwebp_decodes() {
    let glb = one_image_glb(
        &fixture("quadrants_lossy.webp"),
        "image/webp",
        Some("EXT_texture_webp"),
    );
    let avatar = avatar::load_slice(&glb, "webp-lossy").unwrap_or_else(|e| panic!("{e}"));
    let texture = &avatar.textures[0];
    assert_eq!((texture.width, texture.height), (16, 16));
    // libwebp's dwebp decodes the quadrant centres to these (see tests/textures/README.md).
    let want = [
        ((4, 4), [255, 1, 0, 255]),
        ((12, 4), [0, 255, 1, 255]),
        ((4, 12), [0, 0, 255, 255]),
        ((12, 12), [255, 255, 255, 128]),
    ];
    for ((x, y), rgba) in want {
        let i = (y * 16 + x) * 4;
        let got = &texture.rgba[i..i + 4];
        assert_near(
            [got[0], got[1], got[2]],
            [rgba[0], rgba[1], rgba[2]],
            4,
            &format!("lossy WebP at ({x}, {y})"),
        );
        assert_eq!(got[3], rgba[3], "lossless alpha at ({x}, {y})");
    }
}

#[test]
fn the_extension_image_is_preferred_and_the_plain_source_is_the_fallback() {
    let red: Vec<u8> = [255, 0, 0, 255].repeat(16);
    let blue: Vec<u8> = [0, 0, 255, 255].repeat(16);
    let mut glb = Glb::default();
    let webp_view = glb.view(&webp(&red, 4, 4));
    let png_view = glb.view(&png(&blue, 4, 4));
    let mut corrupt = webp(&red, 4, 4);
    corrupt.truncate(corrupt.len() - 6);
    let corrupt_view = glb.view(&corrupt);
    let images = format!(
        r#","images":[{{"bufferView":{webp_view},"mimeType":"image/webp"}},{{"bufferView":{png_view},"mimeType":"image/png"}},{{"bufferView":{corrupt_view},"mimeType":"image/webp"}}]"#
    );
    // 0: WebP with a PNG fallback; 1: a corrupt WebP with the PNG fallback; 2: an image index
    // the file does not have, with the fallback; 3: the plain source alone.
    let textures = r#","textures":[{"source":1,"extensions":{"EXT_texture_webp":{"source":0}}},{"source":1,"extensions":{"EXT_texture_webp":{"source":2}}},{"source":1,"extensions":{"EXT_texture_webp":{"source":99}}},{"source":1}]"#;
    for t in 0..4 {
        let x = -2.0 + t as f32;
        glb.quad(
            Vec2::new(x, -1.0),
            Vec2::new(x + 1.0, 1.0),
            Vec2::ZERO,
            Vec2::ONE,
            t,
        );
    }
    let glb = glb.build(
        4,
        &format!(
            "{textures}{images}{}",
            r#","extensionsUsed":["EXT_texture_webp","KHR_materials_unlit"]"#
        ),
    );
    let avatar = avatar::load_slice(&glb, "webp-fallback").unwrap_or_else(|e| panic!("{e}"));
    let first = |t: usize| avatar.textures[t].rgba[..4].to_vec();
    assert_eq!(first(0), vec![255, 0, 0, 255], "the WebP image wins");
    assert_eq!(first(1), vec![0, 0, 255, 255], "corrupt WebP: the PNG");
    assert_eq!(first(2), vec![0, 0, 255, 255], "dangling WebP: the PNG");
    assert_eq!(first(3), vec![0, 0, 255, 255], "plain source");
    let (camera, image) = render(&avatar, "webp_fallback");
    assert_near(pixel_at(&image, &camera, -1.5, 0.0), [255, 0, 0], 1, "WebP");
    assert_near(
        pixel_at(&image, &camera, -0.5, 0.0),
        [0, 0, 255],
        1,
        "fallback",
    );
}

// ---------------------------------------------------------------------------------------------
// KTX2 and Basis Universal.
// ---------------------------------------------------------------------------------------------

#[test]
fn ktx2_basis_textures_required_by_the_file_load_and_draw_their_colours() {
    // ETC1S and UASTC are lossy block codecs; on these flat 4x4 blocks the reference encoder
    // stays within a few levels of the source (ETC1S writes 253 for 255).
    // The files were encoded from quadrants.png, which holds exactly the expected texels.
    let source = crate::support::repo().join("tests/textures/quadrants.png");
    let source = RgbaImage::load_png(&source).expect("quadrants.png");
    assert_eq!(source.data, quadrant_pixels());
    for (file, tolerance) in [
        ("quadrants_etc1s.ktx2", 6),
        ("quadrants_uastc_zstd.ktx2", 2),
    ] {
        let glb = one_image_glb(&fixture(file), "image/ktx2", Some("KHR_texture_basisu"));
        let avatar = avatar::load_slice(&glb, file).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_quadrant_texels(&avatar.textures[0], tolerance, file);
        let label = file.trim_end_matches(".ktx2");
        assert_quadrants_drawn(&avatar, label, tolerance + 2);
    }
}

#[test]
fn uncompressed_rgba8_ktx2_loads_exactly() {
    let rgba = quadrant_pixels();
    let glb = one_image_glb(
        &rgba8_ktx2(8, 8, &rgba),
        "image/ktx2",
        Some("KHR_texture_basisu"),
    );
    let avatar = avatar::load_slice(&glb, "ktx2-rgba8").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(avatar.textures[0].rgba, rgba);
}

#[test]
fn a_file_requiring_an_image_extension_is_no_longer_refused() {
    for extension in ["EXT_texture_webp", "KHR_texture_basisu"] {
        // The image is a PNG named by the plain source only: still a valid file to draw.
        let mut glb = Glb::default();
        glb.quad(
            Vec2::splat(-1.0),
            Vec2::splat(1.0),
            Vec2::ZERO,
            Vec2::ONE,
            0,
        );
        let view = glb.view(&png(&quadrant_pixels(), 8, 8));
        let glb = glb.build(
            1,
            &format!(
                r#","textures":[{{"source":0}}],"images":[{{"bufferView":{view},"mimeType":"image/png"}}]{}"#,
                requiring(&[extension])
            ),
        );
        let avatar =
            avatar::load_slice(&glb, extension).unwrap_or_else(|e| panic!("{extension}: {e}"));
        assert_quadrant_texels(&avatar.textures[0], 0, extension);
    }
}

// ---------------------------------------------------------------------------------------------
// Hostile images.
// ---------------------------------------------------------------------------------------------

/// Loads `image` as the file's only texture: the load must succeed, and the texture must be
/// the placeholder or an image within the size limit.
fn load_hostile(image: &[u8], mime: &str, extension: &str, what: &str) -> avatar::Texture {
    let glb = one_image_glb(image, mime, Some(extension));
    let avatar = avatar::load_slice(&glb, what).unwrap_or_else(|e| panic!("{what}: {e}"));
    let texture = avatar.textures[0].clone();
    assert!(
        texture.width <= 8192 && texture.height <= 8192,
        "{what}: {}×{}",
        texture.width,
        texture.height
    );
    assert_eq!(
        texture.rgba.len(),
        texture.width as usize * texture.height as usize * 4,
        "{what}"
    );
    texture
}

fn is_placeholder(texture: &avatar::Texture) -> bool {
    texture.width == 1 && texture.height == 1 && texture.rgba == [255; 4]
}

#[test]
fn corrupt_webp_and_ktx2_images_become_placeholders() {
    let good_webp = webp(&quadrant_pixels(), 8, 8);
    let mut truncated = good_webp.clone();
    truncated.truncate(good_webp.len() / 2);
    let mut not_riff = good_webp.clone();
    not_riff[12..16].copy_from_slice(b"XXXX");
    for (bytes, what) in [(truncated, "truncated WebP"), (not_riff, "bad chunk")] {
        let texture = load_hostile(&bytes, "image/webp", "EXT_texture_webp", what);
        assert!(is_placeholder(&texture), "{what}");
    }

    // A lossless WebP whose header claims 16384×16384 (its largest size): refused before the
    // 1 GiB of pixels is allocated. VP8L packs width-1 and height-1 in 14 bits each after the
    // 0x2f signature at byte 20.
    let mut huge = good_webp.clone();
    let old = u32::from_le_bytes([huge[21], huge[22], huge[23], huge[24]]);
    let bits: u32 = 16383 | (16383 << 14) | (old & 0xf000_0000);
    huge[21..25].copy_from_slice(&bits.to_le_bytes());
    let texture = load_hostile(&huge, "image/webp", "EXT_texture_webp", "huge WebP");
    assert!(is_placeholder(&texture), "huge WebP");

    // A KTX2 header claiming 65536×65536 RGBA8, and one with a level that claims to inflate to
    // a terabyte.
    let texture = load_hostile(
        &rgba8_ktx2(65536, 65536, &[0; 64]),
        "image/ktx2",
        "KHR_texture_basisu",
        "huge KTX2",
    );
    assert!(is_placeholder(&texture), "huge KTX2");
    let mut inflating = fixture("quadrants_uastc_zstd.ktx2");
    inflating[80 + 16..80 + 24].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let texture = load_hostile(&inflating, "image/ktx2", "KHR_texture_basisu", "inflating");
    assert!(is_placeholder(&texture), "inflating KTX2");
}

#[test]
fn every_single_byte_corruption_of_the_basis_files_loads_without_panicking() {
    // Each byte in turn inverted, then set to 0 and to 0xff: the load succeeds every time,
    // with the placeholder or an image within the size limit.
    for file in ["quadrants_etc1s.ktx2", "quadrants_uastc_zstd.ktx2"] {
        let good = fixture(file);
        for i in 0..good.len() {
            for value in [!good[i], 0, 0xff] {
                let mut bytes = good.clone();
                bytes[i] = value;
                let what = format!("{file}, byte {i} = {value:#x}");
                // The header's size is what a byte of it says (a changed width is a new,
                // valid size); `load_hostile` checks the result is bounded and consistent.
                load_hostile(&bytes, "image/ktx2", "KHR_texture_basisu", &what);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Decompression bombs and the decoded-texture budget.
// ---------------------------------------------------------------------------------------------

/// A black one-bit greyscale PNG of `width` × `height`: a few kilobytes on disk, four bytes a
/// pixel once decoded.
fn blank_png(width: u32, height: u32) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::One);
    encoder.set_compression(png::Compression::High);
    let mut writer = encoder.write_header().expect("PNG header");
    let row = (width as usize).div_ceil(8);
    writer
        .write_image_data(&vec![0; row * height as usize])
        .expect("PNG data");
    writer.finish().expect("PNG end");
    out
}

/// A GLB of one quad whose `textures` textures each draw image `texture % images.len()`.
fn many_textures_glb(images: &[Vec<u8>], textures: usize) -> Vec<u8> {
    let mut glb = Glb::default();
    glb.quad(
        Vec2::splat(-1.0),
        Vec2::splat(1.0),
        Vec2::ZERO,
        Vec2::ONE,
        0,
    );
    let images: Vec<String> = images
        .iter()
        .map(|png| {
            let view = glb.view(png);
            format!(r#"{{"bufferView":{view},"mimeType":"image/png"}}"#)
        })
        .collect();
    let list: Vec<String> = (0..textures)
        .map(|t| format!(r#"{{"source":{}}}"#, t % images.len()))
        .collect();
    glb.build(
        textures,
        &format!(
            r#","textures":[{}],"images":[{}]{}"#,
            list.join(","),
            images.join(","),
            requiring(&[])
        ),
    )
}

/// The bytes of decoded pixels `avatar` keeps, each shared buffer counted once.
fn kept_bytes(avatar: &Avatar) -> usize {
    let mut seen = std::collections::HashSet::new();
    avatar
        .textures
        .iter()
        .filter(|t| seen.insert(t.rgba.id()))
        .map(|t| t.rgba.len())
        .sum()
}

#[test]
fn one_small_png_declaring_8192_squared_for_64_textures_is_decoded_once_within_the_budget() {
    // The reported file: a PNG of a few kilobytes declaring 8192×8192, named by every texture.
    // Each texture used to decode (or copy) its own 256 MiB.
    let bomb = blank_png(8192, 8192);
    assert!(bomb.len() < 64 << 10, "the PNG is {} bytes", bomb.len());
    let glb = many_textures_glb(&[bomb], 64);

    let avatar = avatar::load_slice(&glb, "bomb.glb").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(avatar.textures.len(), 64);
    let first = &avatar.textures[0];
    assert_eq!((first.width, first.height), (8192, 8192));
    assert!(avatar
        .textures
        .iter()
        .all(|t| t.rgba.shares_with(&first.rgba)));
    assert_eq!(kept_bytes(&avatar), 256 << 20);
    assert!(kept_bytes(&avatar) as u64 <= avatar::DEFAULT_TEXTURE_BUDGET);
    drop(avatar);

    // Under a 32 MiB budget the one image is shrunk to fit, and the warning says so.
    let limits = avatar::LoadLimits {
        texture_budget: 32 << 20,
    };
    let (avatar, warnings) = crate::support::warnings_during(|| {
        avatar::load_slice_with(&glb, "bomb.glb", &limits).unwrap_or_else(|e| panic!("{e}"))
    });
    let first = &avatar.textures[0];
    assert_eq!((first.width, first.height), (2048, 2048));
    assert!(first.rgba.chunks_exact(4).all(|p| p == [0, 0, 0, 255]));
    assert!(avatar
        .textures
        .iter()
        .all(|t| t.rgba.shares_with(&first.rgba)));
    assert!(kept_bytes(&avatar) <= 32 << 20);
    let shrunk: Vec<&String> = warnings.iter().filter(|w| w.contains("shrunk")).collect();
    assert_eq!(shrunk.len(), 1, "{warnings:#?}");
    for what in [
        "image 0",
        "8192×8192",
        "2048×2048",
        "texture_budget_mb",
        "bomb.glb",
    ] {
        assert!(shrunk[0].contains(what), "{what}: {}", shrunk[0]);
    }

    // The renderer uploads the shared image once for the 64 textures its materials sample.
    let ctx = HeadlessContext::new(SIZE, SIZE).expect("headless context");
    let renderer = Renderer::new(ctx.gl(), &avatar, MorphMode::Auto).expect("renderer");
    assert_eq!(renderer.texture_objects(), 1);
}

#[test]
fn many_distinct_bombs_are_shrunk_until_shrinking_costs_too_much_then_refused() {
    // Twelve different 4096×4096 PNGs (64 MiB each decoded) under a 16 MiB budget: shrinking
    // may decode eight budgets (128 MiB) of full-size pixels, so two are shrunk and the other
    // ten refused before decoding; the avatar loads, within the budget.
    let images: Vec<Vec<u8>> = (0..12).map(|_| blank_png(4096, 4096)).collect();
    let glb = many_textures_glb(&images, 12);
    let limits = avatar::LoadLimits {
        texture_budget: 16 << 20,
    };
    let (avatar, warnings) = crate::support::warnings_during(|| {
        avatar::load_slice_with(&glb, "bombs.glb", &limits).unwrap_or_else(|e| panic!("{e}"))
    });
    assert!(kept_bytes(&avatar) <= 16 << 20, "{}", kept_bytes(&avatar));
    let refused = avatar.textures.iter().filter(|t| is_placeholder(t)).count();
    assert_eq!(refused, 10);
    let shrunk = warnings.iter().filter(|w| w.contains("shrunk")).count();
    assert_eq!(shrunk, 2, "{warnings:#?}");
    let refusals: Vec<&String> = warnings
        .iter()
        .filter(|w| w.contains("refused before decoding"))
        .collect();
    assert_eq!(refusals.len(), 10, "{warnings:#?}");
    assert!(refusals[0].contains("image 2"), "{}", refusals[0]);
}

// ---------------------------------------------------------------------------------------------
// Samplers.
// ---------------------------------------------------------------------------------------------

/// An 8×1 texture: red on the left half, blue on the right.
fn red_blue() -> Vec<u8> {
    let mut data = [255, 0, 0, 255].repeat(4);
    data.extend([0, 0, 255, 255].repeat(4));
    data
}

#[test]
fn clamp_repeat_and_mirror_differ_beyond_the_unit_square() {
    // Three quads, u running 0..2 across each: repeat draws red, blue, red, blue; clamp draws
    // red, blue, then the last texel (blue) stretched; mirrored repeat draws red, blue, blue,
    // red.
    let mut glb = Glb::default();
    let view = glb.view(&png(&red_blue(), 8, 1));
    for (t, y) in [(0, 1.0), (1, -0.5), (2, -2.0)] {
        glb.quad(
            Vec2::new(-2.0, y),
            Vec2::new(2.0, y + 1.0),
            Vec2::ZERO,
            Vec2::new(2.0, 1.0),
            t,
        );
    }
    let glb = glb.build(
        3,
        &format!(
            r#","samplers":[{{"wrapS":10497}},{{"wrapS":33071}},{{"wrapS":33648,"wrapT":33071,"magFilter":9728,"minFilter":9729}}],"textures":[{{"source":0,"sampler":0}},{{"source":0,"sampler":1}},{{"source":0,"sampler":2}}],"images":[{{"bufferView":{view},"mimeType":"image/png"}}]{}"#,
            requiring(&[])
        ),
    );
    let avatar = avatar::load_slice(&glb, "wrap").unwrap_or_else(|e| panic!("{e}"));
    let samplers: Vec<Sampler> = avatar.textures.iter().map(|t| t.sampler).collect();
    assert_eq!(samplers[0], Sampler::default());
    assert_eq!(samplers[1].wrap_s, Wrap::ClampToEdge);
    assert_eq!(samplers[1].wrap_t, Wrap::Repeat);
    assert_eq!(
        samplers[2],
        Sampler {
            wrap_s: Wrap::MirroredRepeat,
            wrap_t: Wrap::ClampToEdge,
            mag_filter: MagFilter::Nearest,
            min_filter: MinFilter::Linear,
        }
    );
    let (camera, image) = render(&avatar, "wrap");
    let (red, blue) = ([255, 0, 0], [0, 0, 255]);
    // Quarter centres of each quad: u = 0.25, 0.75, 1.25, 1.75.
    let xs = [-1.5, -0.5, 0.5, 1.5];
    for (y, want, what) in [
        (1.5, [red, blue, red, blue], "repeat"),
        (0.0, [red, blue, blue, blue], "clamp"),
        (-1.5, [red, blue, blue, red], "mirrored repeat"),
    ] {
        for (x, colour) in xs.iter().zip(want) {
            assert_near(
                pixel_at(&image, &camera, *x, y),
                colour,
                2,
                &format!("{what} at x {x}"),
            );
        }
    }
}

#[test]
fn nearest_magnification_keeps_hard_texel_edges() {
    // A 2×2 black and white checker magnified over a big quad: linear filtering blends the
    // texels into a ramp of greys, nearest keeps only black and white.
    let checker = [
        [0, 0, 0, 255],
        [255, 255, 255, 255],
        [255, 255, 255, 255],
        [0, 0, 0, 255],
    ]
    .concat();
    let mut greys = Vec::new();
    for (label, sampler) in [
        ("linear", r#"{"magFilter":9729,"minFilter":9729}"#),
        ("nearest", r#"{"magFilter":9728,"minFilter":9728}"#),
    ] {
        let mut glb = Glb::default();
        let view = glb.view(&png(&checker, 2, 2));
        glb.quad(
            Vec2::splat(-2.0),
            Vec2::splat(2.0),
            Vec2::ZERO,
            Vec2::ONE,
            0,
        );
        let glb = glb.build(
            1,
            &format!(
                r#","samplers":[{sampler}],"textures":[{{"source":0,"sampler":0}}],"images":[{{"bufferView":{view},"mimeType":"image/png"}}]{}"#,
                requiring(&[])
            ),
        );
        let avatar = avatar::load_slice(&glb, label).unwrap();
        let (_, image) = render(&avatar, &format!("magnify_{label}"));
        let grey = image
            .data
            .chunks_exact(4)
            .filter(|p| (16..240).contains(&p[0]))
            .count();
        greys.push(grey);
    }
    let pixels = (SIZE * SIZE) as usize;
    assert!(
        greys[0] > pixels / 4,
        "linear: only {} grey pixels",
        greys[0]
    );
    assert_eq!(greys[1], 0, "nearest: grey pixels between texels");
}

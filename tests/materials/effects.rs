//! Emission on unlit quads, MToon's rim light and matcap on spheres, and a VRM expression's
//! material binds driven through the mapping into the renderer.

use std::time::Instant;

use super::{
    assert_near, camera_on, context, flat_scene, linear, pixel_at, quad_mesh, red_blue, render,
    render_glb, save, sphere, srgb, srgb3, unlit, Glb, SIZE,
};
use facewire::arkit::{Channel, FaceFrame, Protocol};
use facewire::avatar::vrm::{MaterialBind, MaterialRef, Override};
use facewire::avatar::{self, Expression, Preset, Vrm, VrmVersion};
use facewire::image::RgbaImage;
use facewire::mapping::CompiledMapping;
use facewire::render::{Camera, MorphMode, Renderer};
use glam::{Vec2, Vec3};

#[test]
fn emission_adds_to_the_base_colour_exactly() {
    let mut glb = Glb::default();
    let grey = glb.png(&RgbaImage::filled(2, 2, [188, 188, 188, 255]));
    let meshes: Vec<String> = [(-3.0, -1.1), (-0.9, 0.9), (1.1, 3.0)]
        .iter()
        .enumerate()
        .map(|(m, &(x0, x1))| {
            quad_mesh(
                &mut glb,
                Vec2::new(x0, -1.0),
                Vec2::new(x1, 1.0),
                0.0,
                m,
                "",
            )
        })
        .collect();
    let base = [0.2, 0.2, 0.2, 1.0];
    let materials = [
        unlit("glowing", base, r#","emissiveFactor":[0.5,0.25,0]"#),
        unlit("plain", base, ""),
        unlit(
            "textured",
            base,
            r#","emissiveFactor":[1,1,1],"emissiveTexture":{"index":0}"#,
        ),
    ];
    let extra = format!(
        r#","extensionsUsed":["KHR_materials_unlit"],"textures":[{{"source":0}}],"images":[{{"bufferView":{grey},"mimeType":"image/png"}}]"#
    );
    let camera = camera_on(Vec3::new(-3.0, -1.0, 0.0), Vec3::new(3.0, 1.0, 0.0));
    let (avatar, image) = render_glb(
        &glb.build(&flat_scene(&meshes, &materials, &extra)),
        "emission",
        &camera,
        MorphMode::Auto,
    );
    assert_eq!(avatar.materials[0].emissive, [0.5, 0.25, 0.0]);
    assert_eq!(avatar.materials[2].emissive_texture, Some(0));
    let at = |x: f32| pixel_at(&image, &camera, Vec3::new(x, 0.0, 0.0));
    assert_near(at(-2.0), srgb3([0.7, 0.45, 0.2]), 2.0, "emissive factor");
    assert_near(at(0.0), srgb3([0.2; 3]), 2.0, "no emission");
    assert_near(
        at(2.0),
        srgb3([0.2 + linear(188); 3]),
        2.0,
        "emissive texture times factor",
    );
}

/// A sphere with a black VRM 1.0 MToon material (so only what is added shows) and `extra`
/// members of the extension; `images` are its textures, in order.
fn black_mtoon_sphere(extra: &str, images: &[RgbaImage]) -> Vec<u8> {
    let mut glb = Glb::default();
    let mesh = sphere(&mut glb, 0);
    let views: Vec<usize> = images.iter().map(|i| glb.png(i)).collect();
    let material = format!(
        r#"{{"pbrMetallicRoughness":{{"baseColorFactor":[0,0,0,1]}},"extensions":{{"VRMC_materials_mtoon":{{"specVersion":"1.0","shadeColorFactor":[0,0,0],"shadingToonyFactor":0.9{extra}}}}}}}"#
    );
    let textures: Vec<String> = (0..views.len())
        .map(|i| format!(r#"{{"source":{i}}}"#))
        .collect();
    let sources: Vec<String> = views
        .iter()
        .map(|v| format!(r#"{{"bufferView":{v},"mimeType":"image/png"}}"#))
        .collect();
    let mut body = r#","extensionsUsed":["VRMC_materials_mtoon"]"#.to_owned();
    if !views.is_empty() {
        body.push_str(&format!(
            r#","textures":[{}],"images":[{}]"#,
            textures.join(","),
            sources.join(",")
        ));
    }
    glb.build(&flat_scene(&[mesh], &[material], &body))
}

/// The point of the unit sphere whose normal is `right`, `up`, `back` in the camera's basis.
fn on_sphere(camera: &Camera, right: f32, up: f32, back: f32) -> Vec3 {
    let (r, u, f) = camera.basis();
    (right * r + up * u - back * f).normalize()
}

#[test]
fn mtoon_rim_light_brightens_the_edges_by_the_fresnel_term() {
    let camera = camera_on(Vec3::splat(-1.0), Vec3::splat(1.0));
    let rim = r#","parametricRimColorFactor":[0,1,0],"parametricRimFresnelPowerFactor":2,"parametricRimLiftFactor":0"#;
    let (avatar, image) = render_glb(
        &black_mtoon_sphere(&format!(r#"{rim},"rimLightingMixFactor":0"#), &[]),
        "mtoon_rim",
        &camera,
        MorphMode::Auto,
    );
    let toon = avatar.materials[0].toon.as_ref().unwrap();
    assert_eq!(
        (toon.rim_color, toon.rim_fresnel_power),
        ([0.0, 1.0, 0.0], 2.0)
    );
    let fresnel = |p: Vec3| (1.0 - p.dot((camera.eye - p).normalize())).clamp(0.0, 1.0);
    let centre = on_sphere(&camera, 0.0, 0.0, 1.0);
    let edge = on_sphere(&camera, 0.9, 0.0, 0.44);
    let (c, e) = (
        pixel_at(&image, &camera, centre),
        pixel_at(&image, &camera, edge),
    );
    assert!(e[1] > c[1] + 80, "edge {e:?}, centre {c:?}");
    for p in [centre, edge] {
        let want = [0.0, srgb(fresnel(p).powi(2)), 0.0];
        assert_near(pixel_at(&image, &camera, p), want, 4.0, "rim");
    }

    // With the lighting mixed in fully, the shaded side keeps only the ambient's share.
    let (_, mixed) = render_glb(
        &black_mtoon_sphere(&format!(r#"{rim},"rimLightingMixFactor":1"#), &[]),
        "mtoon_rim_lit",
        &camera,
        MorphMode::Auto,
    );
    let lit = on_sphere(&camera, -0.6, 0.3, 0.74);
    let shaded = on_sphere(&camera, 0.8, -0.3, 0.5);
    for (p, light, what) in [(lit, 1.0, "lit side"), (shaded, 0.15, "shaded side")] {
        let want = [0.0, srgb(light * fresnel(p).powi(2)), 0.0];
        assert_near(pixel_at(&mixed, &camera, p), want, 4.0, what);
    }
}

/// A 4x4 matcap: the top row blue, the middle red, the rest green.
fn matcap() -> RgbaImage {
    let (r, g, b) = ([200, 0, 0, 255], [0, 200, 0, 255], [0, 0, 200, 255]);
    let rows = [[b, b, b, b], [g, r, r, g], [g, r, r, g], [g, g, g, g]];
    RgbaImage {
        width: 4,
        height: 4,
        data: rows.iter().flatten().flatten().copied().collect(),
    }
}

#[test]
fn mtoon_matcap_colours_the_sphere_by_its_view_normal() {
    let camera = camera_on(Vec3::splat(-1.0), Vec3::splat(1.0));
    let extra = r#","matcapFactor":[1,1,1],"matcapTexture":{"index":0},"rimLightingMixFactor":0"#;
    let (avatar, image) = render_glb(
        &black_mtoon_sphere(extra, &[matcap()]),
        "mtoon_matcap",
        &camera,
        MorphMode::Auto,
    );
    assert_eq!(
        avatar.materials[0].toon.as_ref().unwrap().matcap_texture,
        Some(0)
    );
    // The middle texels at the centre; the outer ones towards the silhouette, the top row
    // where the surface faces up (perspective moves the edges' samples a little, so they are
    // checked for the colour that dominates).
    let side = 0.375 / 0.495;
    let back = (1.0f32 - side * side).sqrt();
    let at = |right, up, back| pixel_at(&image, &camera, on_sphere(&camera, right, up, back));
    assert_near(at(0.0, 0.0, 1.0), [200.0, 0.0, 0.0], 8.0, "centre: red");
    let dominant = |p: [u8; 3]| (0..3).max_by_key(|&k| p[k]).unwrap();
    for (right, up, want, what) in [
        (side, 0.0, 1, "right: green"),
        (-side, 0.0, 1, "left: green"),
        (0.0, side, 2, "top: blue"),
        (0.0, -side, 1, "bottom: green"),
    ] {
        let p = at(right, up, back);
        assert!(dominant(p) == want && p[want] > 150, "{what}: {p:?}");
    }
}

/// The frame of a smile at `w`.
fn smile(w: f32) -> FaceFrame {
    let mut f = FaceFrame::empty(
        Protocol::Vmc,
        "127.0.0.1:1".parse().unwrap(),
        Instant::now(),
    );
    f.set(Channel::MouthSmileLeft, w);
    f.set(Channel::MouthSmileRight, w);
    f
}

#[test]
fn an_expressions_material_binds_change_the_drawn_colour_and_texture_offset() {
    // Two unlit quads: "Face", white; "Eyes", the red and blue texture.
    let mut glb = Glb::default();
    let view = glb.png(&red_blue());
    let face = quad_mesh(
        &mut glb,
        Vec2::new(-1.0, 0.2),
        Vec2::new(1.0, 1.0),
        0.0,
        0,
        "",
    );
    let eyes = quad_mesh(
        &mut glb,
        Vec2::new(-1.0, -1.0),
        Vec2::new(1.0, -0.2),
        0.0,
        1,
        "",
    );
    let materials = [
        unlit("Face", [1.0; 4], ""),
        r#"{"name":"Eyes","pbrMetallicRoughness":{"baseColorTexture":{"index":0}},"extensions":{"KHR_materials_unlit":{}}}"#.to_owned(),
    ];
    let extra = format!(
        r#","extensionsUsed":["KHR_materials_unlit"],"textures":[{{"source":0}}],"images":[{{"bufferView":{view},"mimeType":"image/png"}}]"#
    );
    let glb = glb.build(&flat_scene(&[face, eyes], &materials, &extra));
    let mut avatar = avatar::load_slice(&glb, "material_binds").unwrap();
    let bind = |material, property: &str, value: &[f32]| MaterialBind {
        material,
        property: property.into(),
        value: value.to_vec(),
    };
    avatar.vrm = Some(Vrm {
        version: VrmVersion::V1,
        spec_version: None,
        title: None,
        author: None,
        expressions: vec![Expression {
            name: "happy".into(),
            preset: Some(Preset::Happy),
            binds: vec![],
            material_binds: vec![
                bind(
                    MaterialRef::Name("Face".into()),
                    "color",
                    &[1.0, 0.0, 0.0, 1.0],
                ),
                bind(
                    MaterialRef::Index(1),
                    "textureTransform",
                    &[1.0, 1.0, 0.5, 0.0],
                ),
            ],
            is_binary: false,
            overrides: [Override::None; 3],
        }],
        humanoid: vec![],
        look_at: None,
        skipped: 0,
    });
    let mapping = CompiledMapping::auto(&avatar);
    let camera = camera_on(Vec3::splat(-1.0), Vec3::splat(1.0));
    let ctx = context(SIZE);
    let mut renderer = Renderer::new(ctx.gl(), &avatar, MorphMode::Auto).expect("renderer");
    let rest = avatar.rest_pose();
    let mut pose = rest.clone();
    let mut draw = |w: f32| {
        pose.clone_from(&rest);
        mapping.apply(&smile(w), &mut pose);
        let image = render(&ctx, &mut renderer, &pose, &camera, SIZE);
        save(&image, &format!("material_binds_{w}"));
        image
    };
    let (red, blue) = ([255.0, 0.0, 0.0], [0.0, 0.0, 255.0]);
    let face_at = |image: &RgbaImage| pixel_at(image, &camera, Vec3::new(0.0, 0.6, 0.0));
    let eyes_at = |image: &RgbaImage, x| pixel_at(image, &camera, Vec3::new(x, -0.6, 0.0));

    let neutral = draw(0.0);
    assert_near(face_at(&neutral), [255.0; 3], 1.0, "neutral face");
    assert_near(eyes_at(&neutral, -0.5), red, 2.0, "neutral eyes, left");
    let half = draw(0.5);
    assert_near(
        face_at(&half),
        [255.0, srgb(0.5), srgb(0.5)],
        2.0,
        "half-way",
    );
    let full = draw(1.0);
    assert_near(face_at(&full), red, 1.0, "smiling face");
    // The texture moved by half its width: blue on the left, red on the right.
    assert_near(eyes_at(&full, -0.5), blue, 2.0, "smiling eyes, left");
    assert_near(eyes_at(&full, 0.5), red, 2.0, "smiling eyes, right");
}

#[test]
fn the_isbinary_fixtures_meters_move_with_their_expressions() {
    // The VRM specification's override test model shows which expressions are on by moving
    // texture transforms: each meter slides its texture, the validation window picks a tile.
    let Some(dir) = crate::support::fixtures("VRMC_vrm_expressions_isBinary_Overrides") else {
        return;
    };
    let path = dir.join(
        "vrm/vrm-specification/VRMC_vrm_expressions_isBinary_Overrides/\
         VRMC_vrm_expressions_isBinary_Overrides.vrm",
    );
    let avatar = avatar::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(avatar.materials[2].name.as_deref(), Some("Meter Happy"));
    let mapping = CompiledMapping::auto(&avatar);
    let mut pose = avatar.rest_pose();
    let rest = avatar.rest_pose();
    assert!((rest.materials[2].uv_offset.x - 0.500_976_56).abs() < 1e-6);
    mapping.apply(&smile(1.0), &mut pose);
    // The happy meter's offset goes to its bind's value; the window keeps its tile size and
    // moves to the last column; the blink meter stays.
    assert!(
        (pose.materials[2].uv_offset.x - 0.000_976_56).abs() < 1e-6,
        "{:?}",
        pose.materials[2]
    );
    assert_eq!(pose.materials[0].uv_scale, Vec2::splat(0.125));
    assert_eq!(pose.materials[0].uv_offset, Vec2::new(0.875, 0.0));
    assert_eq!(pose.materials[3], rest.materials[3]);
}

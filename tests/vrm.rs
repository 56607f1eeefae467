//! VRM avatars: every fixture's expressions, binds and humanoid bones checked against its own
//! JSON (read here independently of the loader), Godette turned to face the camera, the ARKit →
//! VRM fallback, mapping files naming expressions and humanoid bones, and Godette rendered by
//! `facewire snapshot`.
//!
//! Fixtures: Godette by SirRichard94 (VRM adaptation by Lyuma), CC-BY-3.0; cryptovoxels.vrm from
//! madjin/vrm-samples; the VRM 1.0 samples by pixiv Inc. (VRM Public License 1.0); the
//! VRM-Addon-for-Blender exporter outputs by saturday06 (MIT). See the fixtures' PROVENANCE.md.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use facewire::arkit::Channel;
use facewire::avatar::{self, Avatar, MorphBind, Preset, VrmVersion};
use facewire::image::RgbaImage;
use facewire::mapping::{self, CompiledMapping, MappingFile};
use glam::{EulerRot, Quat, Vec3};
use serde_json::Value;

use crate::support::{facewire_bin, fixtures, frame, repo};

const GODETTE: &str = "vrm/godot-vrm/Godette_vrm_v4.vrm";

/// Godette's face mesh targets, from `meshes[0].primitives[0].extras.targetNames`.
const BLINK_LEFT: usize = 3;
const BLINK_RIGHT: usize = 4;
const AH: usize = 5;
const OH: usize = 9;
const LOOK_UP: usize = 10;
const LOOK_LEFT: usize = 12;

/// `fixtures/<rel>`, or `None` (with a note) when the fixtures are absent.
fn fixture(rel: &str) -> Option<PathBuf> {
    fixtures("VRM tests").map(|dir| dir.join(rel))
}

/// Every `.vrm` file under `dir`, sorted.
fn vrm_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "vrm") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The JSON chunk of a GLB file.
fn glb_json(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..4], b"glTF", "{}", path.display());
    let len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    assert_eq!(&bytes[16..20], b"JSON");
    serde_json::from_slice(&bytes[20..20 + len]).unwrap()
}

/// Godette, loaded once for every test that needs her.
fn godette() -> Option<&'static Avatar> {
    static AVATAR: OnceLock<Option<Avatar>> = OnceLock::new();
    AVATAR
        .get_or_init(|| fixture(GODETTE).map(|p| avatar::load(&p).unwrap()))
        .as_ref()
}

/// Mesh `mesh`'s weights after `mapping` applies `values` to the rest pose.
fn weights_of(
    avatar: &Avatar,
    mapping: &CompiledMapping,
    values: &[(Channel, f32)],
    mesh: usize,
) -> Vec<f32> {
    let mut pose = avatar.rest_pose();
    mapping.apply(&frame(values), &mut pose);
    pose.weights[mesh].clone()
}

/// The face mesh's weights with only the named targets set (the rest 0).
fn only(pairs: &[(usize, f32)]) -> Vec<f32> {
    let mut w = vec![0.0; 15];
    for &(t, v) in pairs {
        w[t] = v;
    }
    w
}

fn compile(text: &str, avatar: &Avatar) -> CompiledMapping {
    CompiledMapping::compile(&MappingFile::parse(text, "vrm.toml").unwrap(), avatar).unwrap()
}

/// The VRM 1.0 preset name a VRM 0.x `presetName` stands for, written out by hand from the two
/// specifications' tables.
fn v1_name_of_v0(preset: &str) -> Option<&'static str> {
    Some(match preset {
        "neutral" => "neutral",
        "a" => "aa",
        "i" => "ih",
        "u" => "ou",
        "e" => "ee",
        "o" => "oh",
        "blink" => "blink",
        "blink_l" => "blinkLeft",
        "blink_r" => "blinkRight",
        "joy" => "happy",
        "angry" => "angry",
        "sorrow" => "sad",
        "fun" => "relaxed",
        "lookup" => "lookUp",
        "lookdown" => "lookDown",
        "lookleft" => "lookLeft",
        "lookright" => "lookRight",
        _ => return None,
    })
}

/// What a test expects of one expression: name, preset (1.0 name), binary, binds, material
/// bind count, overrides (`none`/`block`/`blend` for blink, look-at, mouth).
type Expected = (
    String,
    Option<String>,
    bool,
    Vec<MorphBind>,
    usize,
    [String; 3],
);

fn n(v: &Value) -> usize {
    v.as_u64().unwrap() as usize
}

/// The expressions of a VRM 0.x extension, read straight from the JSON.
fn expected_v0(vrm: &Value) -> Vec<Expected> {
    let groups = vrm["blendShapeMaster"]["blendShapeGroups"]
        .as_array()
        .unwrap();
    groups
        .iter()
        .map(|g| {
            let binds = g["binds"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| MorphBind {
                    mesh: n(&b["mesh"]),
                    target: n(&b["index"]),
                    weight: b["weight"].as_f64().unwrap() as f32 / 100.0,
                })
                .collect();
            let none = || "none".to_owned();
            (
                g["name"].as_str().unwrap().to_owned(),
                v1_name_of_v0(g["presetName"].as_str().unwrap()).map(str::to_owned),
                g["isBinary"].as_bool().unwrap(),
                binds,
                g["materialValues"].as_array().unwrap().len(),
                [none(), none(), none()],
            )
        })
        .collect()
}

/// The expressions of a VRM 1.0 extension, read straight from the JSON (binds name a node; the
/// node's mesh is looked up in `nodes`), sorted by name.
fn expected_v1(vrm: &Value, nodes: &[Value]) -> Vec<Expected> {
    let mut out = Vec::new();
    for kind in ["preset", "custom"] {
        let Some(table) = vrm["expressions"][kind].as_object() else {
            continue;
        };
        for (name, e) in table {
            let binds = e["morphTargetBinds"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|b| MorphBind {
                            mesh: n(&nodes[n(&b["node"])]["mesh"]),
                            target: n(&b["index"]),
                            weight: b["weight"].as_f64().unwrap() as f32,
                        })
                        .collect()
                })
                .unwrap_or_default();
            let count = |key: &str| e[key].as_array().map_or(0, Vec::len);
            let mode = |key: &str| e[key].as_str().unwrap_or("none").to_owned();
            out.push((
                name.clone(),
                (kind == "preset").then(|| name.clone()),
                e["isBinary"].as_bool().unwrap_or(false),
                binds,
                count("materialColorBinds") + count("textureTransformBinds"),
                [
                    mode("overrideBlink"),
                    mode("overrideLookAt"),
                    mode("overrideMouth"),
                ],
            ));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The loaded avatar's expressions in the same shape.
fn actual(avatar: &Avatar, sort: bool) -> Vec<Expected> {
    let mode = |o: avatar::vrm::Override| {
        match o {
            avatar::vrm::Override::None => "none",
            avatar::vrm::Override::Block => "block",
            avatar::vrm::Override::Blend => "blend",
        }
        .to_owned()
    };
    let mut out: Vec<Expected> = avatar
        .vrm
        .as_ref()
        .unwrap()
        .expressions
        .iter()
        .map(|e| {
            (
                e.name.clone(),
                e.preset.map(|p| p.name().to_owned()),
                e.is_binary,
                e.binds.clone(),
                e.material_binds.len(),
                e.overrides.map(mode),
            )
        })
        .collect();
    if sort {
        out.sort_by(|a, b| a.0.cmp(&b.0));
    }
    out
}

#[test]
fn every_fixture_matches_its_own_json() {
    let Some(dir) = fixture("vrm") else { return };
    let files = vrm_files(&dir);
    assert_eq!(files.len(), 10, "{files:?}");
    for path in files {
        let label = path.display().to_string();
        let json = glb_json(&path);
        let avatar = avatar::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let vrm = avatar
            .vrm
            .as_ref()
            .unwrap_or_else(|| panic!("{label}: no VRM"));
        assert_eq!(vrm.skipped, 0, "{label}: a valid file skips nothing");
        let ext = &json["extensions"];
        let (expected, humanoid, title) = if let Some(v1) = ext.get("VRMC_vrm") {
            assert_eq!(vrm.version, VrmVersion::V1, "{label}");
            let nodes = json["nodes"].as_array().unwrap();
            let bones: Vec<(String, usize)> = v1["humanoid"]["humanBones"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(name, b)| (name.clone(), n(&b["node"])))
                .collect();
            (expected_v1(v1, nodes), bones, v1["meta"]["name"].as_str())
        } else {
            let v0 = &ext["VRM"];
            assert_eq!(vrm.version, VrmVersion::V0, "{label}");
            let bones: Vec<(String, usize)> = v0["humanoid"]["humanBones"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| (b["bone"].as_str().unwrap().to_owned(), n(&b["node"])))
                .collect();
            (expected_v0(v0), bones, v0["meta"]["title"].as_str())
        };
        let sort = vrm.version == VrmVersion::V1;
        assert_eq!(actual(&avatar, sort), expected, "{label}");
        let mut bones = vrm.humanoid.clone();
        let mut humanoid = humanoid;
        bones.sort();
        humanoid.sort();
        assert_eq!(bones, humanoid, "{label}");
        assert_eq!(vrm.title.as_deref(), title, "{label}");
        // Every fixture compiles its automatic mapping and survives a full frame.
        let mapping = CompiledMapping::auto(&avatar);
        let mut pose = avatar.rest_pose();
        let all: Vec<(Channel, f32)> = Channel::ALL.iter().map(|&c| (c, 1.0)).collect();
        mapping.apply(&frame(&all), &mut pose);
        assert!(
            pose.weights
                .iter()
                .flatten()
                .all(|w| (0.0..=1.0).contains(w)),
            "{label}"
        );
    }
}

#[test]
fn godette_reads_as_written_by_hand() {
    let Some(g) = godette() else { return };
    let vrm = g.vrm.as_ref().unwrap();
    assert_eq!(vrm.version, VrmVersion::V0);
    assert_eq!(vrm.title.as_deref(), Some("Low-Poly Godette"));
    assert_eq!(vrm.author.as_deref(), Some("SirRichard94"));
    assert_eq!(vrm.expressions.len(), 17);
    let names: Vec<&str> = vrm.expressions.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Neutral",
            "A",
            "I",
            "U",
            "E",
            "O",
            "Blink",
            "Joy",
            "Angry",
            "Sorrow",
            "Fun",
            "LookUp",
            "LookDown",
            "LookLeft",
            "LookRight",
            "Blink_L",
            "Blink_R"
        ]
    );
    let joy = &vrm.expressions[vrm.preset(Preset::Happy).unwrap()];
    assert_eq!(joy.name, "Joy");
    let bind = |target, weight| MorphBind {
        mesh: 0,
        target,
        weight,
    };
    assert_eq!(joy.binds, [bind(OH, 0.5), bind(LOOK_UP, 0.25)]);
    let blink_l = &vrm.expressions[vrm.expression("Blink_L").unwrap()];
    assert_eq!(blink_l.preset, Some(Preset::BlinkLeft));
    assert!(blink_l.is_binary);
    assert_eq!(blink_l.binds, [bind(BLINK_LEFT, 1.0)]);
    let angry = &vrm.expressions[vrm.expression("Angry").unwrap()];
    assert_eq!(angry.binds.len(), 4);
    assert_eq!(vrm.humanoid_bone("head"), Some(5));
    assert_eq!(vrm.humanoid_bone("neck"), Some(4));
    assert_eq!(vrm.humanoid_bone("hips"), Some(1));
    assert_eq!(vrm.humanoid_bone("leftEye"), None);
    assert_eq!(vrm.humanoid.len(), 45);
    assert_eq!(g.meshes[0].target_names[AH], "ah");
}

#[test]
fn cryptovoxels_has_no_expressions_and_still_maps() {
    let Some(path) = fixture("vrm/vrm-samples/cryptovoxels.vrm") else {
        return;
    };
    let avatar = avatar::load(&path).unwrap();
    let vrm = avatar.vrm.as_ref().unwrap();
    assert_eq!(vrm.version, VrmVersion::V0);
    assert!(vrm.expressions.is_empty());
    assert_eq!(vrm.humanoid_bone("head"), Some(42));
    assert!(avatar.meshes.iter().all(|m| m.target_count() == 0));
    let m = CompiledMapping::auto(&avatar);
    assert!(m.expressions.is_empty() && m.targets.is_empty());
    assert_eq!(m.head, Some(42), "the humanoid head turns");
    let report = mapping::check(&MappingFile::default(), &avatar);
    assert!(!report.has_errors(), "{report}");
}

#[test]
fn vrm1_binds_name_nodes_and_sum_per_target() {
    let Some(path) = fixture("vrm/vrm-addon-for-blender/expression_migration.vrm") else {
        return;
    };
    let avatar = avatar::load(&path).unwrap();
    let vrm = avatar.vrm.as_ref().unwrap();
    // Read by hand from the file: node 1 ("Mesh2") holds mesh 1 ("mesh_2", targets Key10, Key11).
    let e = |name: &str| &vrm.expressions[vrm.expression(name).unwrap()];
    let bind = |target, weight| MorphBind {
        mesh: 1,
        target,
        weight,
    };
    assert_eq!(e("happy").binds, [bind(0, 0.5)]);
    assert_eq!(e("custom_e").binds, [bind(1, 1.0), bind(1, 1.0)]);
    assert!(e("relaxed").is_binary && e("custom_d").is_binary);
    use avatar::vrm::Override::*;
    assert_eq!(e("sad").overrides, [None, Blend, Block]);
    assert_eq!(e("custom_d").overrides, [Block, None, None]);
    assert_eq!(e("custom_a").overrides, [None, Block, Blend]);
    assert_eq!(vrm.expressions.len(), 24);
    assert_eq!(vrm.humanoid_bone("head"), Some(2));

    // custom_e binds Key11 twice: its binds add up before the clamp.
    let m = compile(
        "version = 1\n[map]\n\"vrm:custom_e\" = \"jawOpen\"\n",
        &avatar,
    );
    let w = weights_of(&avatar, &m, &[(Channel::JawOpen, 0.3)], 1);
    assert!((w[1] - 0.6).abs() < 1e-6, "{w:?}");
    let w = weights_of(&avatar, &m, &[(Channel::JawOpen, 0.8)], 1);
    assert_eq!(w[1], 1.0, "clamped");
}

#[test]
fn vrm1_is_binary_and_override_samples_behave_as_their_readmes_say() {
    let dir = "vrm/vrm-specification";
    let Some(overrides) = fixture(&format!(
        "{dir}/VRMC_vrm_expressions_isBinary_Overrides/VRMC_vrm_expressions_isBinary_Overrides.vrm"
    )) else {
        return;
    };
    let overridden = overrides.parent().unwrap().parent().unwrap().join(
        "VRMC_vrm_expressions_isBinary_Overridden/VRMC_vrm_expressions_isBinary_Overridden.vrm",
    );
    let text = "version = 1\n[map]\n\"vrm:happy\" = \"mouthSmileLeft\"\n\"vrm:blink\" = \"eyeBlinkLeft\"\n";
    let weights = |avatar: &Avatar, m: &CompiledMapping, smile: f32| {
        let vrm = avatar.vrm.as_ref().unwrap();
        let w = m.expression_weights(&frame(&[
            (Channel::MouthSmileLeft, smile),
            (Channel::EyeBlinkLeft, 1.0),
        ]));
        let of = |p| w.iter().find(|(e, _)| Some(*e) == vrm.preset(p)).unwrap().1;
        (of(Preset::Happy), of(Preset::Blink))
    };

    // "Overrides": happy is binary and blends blink away; its binary value is what counts.
    let avatar = avatar::load(&overrides).unwrap();
    let vrm = avatar.vrm.as_ref().unwrap();
    let happy = &vrm.expressions[vrm.preset(Preset::Happy).unwrap()];
    let blink = &vrm.expressions[vrm.preset(Preset::Blink).unwrap()];
    assert!(happy.is_binary && !blink.is_binary);
    assert_eq!(happy.overrides[0], avatar::vrm::Override::Blend);
    assert_eq!(happy.material_binds.len(), 2);
    let m = compile(text, &avatar);
    assert_eq!(weights(&avatar, &m, 0.3), (0.0, 1.0));
    assert_eq!(weights(&avatar, &m, 0.6), (1.0, 0.0));

    // "Overridden": blink is binary; any effect from happy suppresses it entirely.
    let avatar = avatar::load(&overridden).unwrap();
    let vrm = avatar.vrm.as_ref().unwrap();
    let happy = &vrm.expressions[vrm.preset(Preset::Happy).unwrap()];
    let blink = &vrm.expressions[vrm.preset(Preset::Blink).unwrap()];
    assert!(!happy.is_binary && blink.is_binary);
    let m = compile(text, &avatar);
    assert_eq!(weights(&avatar, &m, 0.0), (0.0, 1.0));
    assert_eq!(weights(&avatar, &m, 0.1), (0.1, 0.0));
}

#[test]
fn godette_faces_plus_z_after_load() {
    let Some(g) = godette() else { return };
    let world = g.world_transforms(&g.rest_pose());
    let face = g.nodes.iter().position(|n| n.mesh == Some(0)).unwrap();
    let prim = &g.meshes[0].primitives[0];
    let points: Vec<Vec3> = prim
        .positions
        .iter()
        .map(|&p| world[face].transform_point3(p))
        .collect();
    let mean = |pred: &dyn Fn(usize) -> bool| {
        let picked: Vec<Vec3> = (0..points.len())
            .filter(|&v| pred(v))
            .map(|v| points[v])
            .collect();
        picked.iter().copied().sum::<Vec3>() / picked.len() as f32
    };
    let centre = mean(&|_| true);
    let moves = |t: usize| move |v: usize| prim.targets[t].positions[v].length() > 1e-5;
    let left_lid = mean(&moves(BLINK_LEFT));
    let right_lid = mean(&moves(BLINK_RIGHT));
    let mouth = mean(&moves(AH));
    // The eyelids and mouth are in front of the head's centre (+Z, towards the camera).
    for (what, p) in [
        ("left lid", left_lid),
        ("right lid", right_lid),
        ("mouth", mouth),
    ] {
        assert!(p.z > centre.z + 0.1, "{what} at {p}, head centre {centre}");
    }
    // The avatar's left eye (blink_left, Blink_L) is on the avatar's left, +X when facing +Z.
    assert!(
        left_lid.x > 0.03 && right_lid.x < -0.03,
        "{left_lid} {right_lid}"
    );
    // The head bone looks the same way: its frame carries the half turn.
    let head = g.vrm.as_ref().unwrap().humanoid_bone("head").unwrap();
    let forward = world[head].transform_vector3(Vec3::NEG_Z);
    assert!(
        forward.z > 0.9,
        "the file's -Z forward now points {forward}"
    );
}

#[test]
fn godette_head_turns_the_way_the_stream_says() {
    let Some(g) = godette() else { return };
    let m = CompiledMapping::auto(g);
    let head = g.vrm.as_ref().unwrap().humanoid_bone("head").unwrap();
    assert_eq!(m.head, Some(head));
    let rest = g.world_transforms(&g.rest_pose())[head]
        .to_scale_rotation_translation()
        .1;
    for q in [
        Quat::from_rotation_x(0.35),
        Quat::from_rotation_y(-0.5),
        Quat::from_rotation_z(0.25),
        Quat::from_euler(EulerRot::YXZ, 0.4, 0.2, -0.1),
    ] {
        let mut f = frame(&[]);
        f.head = Some(q);
        let mut pose = g.rest_pose();
        m.apply(&f, &mut pose);
        let now = g.world_transforms(&pose)[head]
            .to_scale_rotation_translation()
            .1;
        // In avatar space the head turned by exactly the stream's rotation, as the default
        // head does: pitching about +X tips the face (+Z) down.
        let delta = now * rest.inverse();
        assert!(
            delta.abs_diff_eq(q, 1e-4) || delta.abs_diff_eq(-q, 1e-4),
            "{q} became {delta}"
        );
    }
    let mut f = frame(&[]);
    f.head = Some(Quat::from_rotation_x(0.35));
    let mut pose = g.rest_pose();
    m.apply(&f, &mut pose);
    let face = g.world_transforms(&pose)[head].transform_vector3(Vec3::NEG_Z);
    assert!(
        face.y < -0.2 && face.z > 0.8,
        "pitch down: the face points {face}"
    );
}

#[test]
fn the_fallback_drives_godettes_presets() {
    use Channel::*;
    let Some(g) = godette() else { return };
    let m = CompiledMapping::auto(g);
    // Godette has no eye bones, so the look-at presets are driven too; Neutral and Fun
    // (relaxed) have no fallback.
    assert_eq!(m.expressions.len(), 15);
    assert_eq!(m.left_eye, None);
    let w = |values: &[(Channel, f32)]| weights_of(g, &m, values, 0);
    assert_eq!(w(&[(JawOpen, 1.0)]), only(&[(AH, 1.0)]));
    assert_eq!(
        w(&[(EyeBlinkLeft, 1.0), (EyeBlinkRight, 1.0)]),
        only(&[(BLINK_LEFT, 1.0), (BLINK_RIGHT, 1.0)])
    );
    // The performer's left eye closes the avatar's left eye (Blink_L).
    assert_eq!(w(&[(EyeBlinkLeft, 1.0)]), only(&[(BLINK_LEFT, 1.0)]));
    assert_eq!(
        w(&[(MouthSmileLeft, 1.0), (MouthSmileRight, 1.0)]),
        only(&[(OH, 0.5), (LOOK_UP, 0.25)]),
        "Joy"
    );
    assert_eq!(
        w(&[(EyeLookOutLeft, 1.0), (EyeLookInRight, 1.0)]),
        only(&[(LOOK_LEFT, 1.0)])
    );
    // A rounded mouth is O and U rather than A.
    let rounded = w(&[(JawOpen, 0.6), (MouthFunnel, 0.8)]);
    assert!((rounded[AH] - 0.2).abs() < 1e-6, "{rounded:?}");
    assert!((rounded[OH] - 0.8).abs() < 1e-6, "{rounded:?}");
}

#[test]
fn godettes_sheet_says_which_channels_reach_each_target() {
    let Some(g) = godette() else { return };
    let m = CompiledMapping::auto(g);
    let entries = facewire::sheet::sheet_entries_with(g, &m);
    let caption = |name: &str| {
        entries
            .iter()
            .find(|e| e.name == name)
            .and_then(|e| e.caption.clone())
    };
    // The fallback drives Blink_L from both eyes, A from the jaw and two rounding channels,
    // U from the pucker alone; the hair-ball toggle is no expression's.
    assert_eq!(caption("blink_left").as_deref(), Some("<- eyeBlinkLeft +1"));
    assert_eq!(caption("ah").as_deref(), Some("<- jawOpen +2"));
    assert_eq!(caption("uu").as_deref(), Some("<- mouthPucker"));
    assert_eq!(caption("HideHairBalls").as_deref(), Some("not ARKit"));
}

#[test]
fn a_mapping_file_overrides_one_preset_and_names_humanoid_bones() {
    use Channel::*;
    let Some(g) = godette() else { return };
    let text = "version = 1\n[map.\"vrm:aa\"]\nsources = \"mouthClose\"\n[neck]\nnode = \"neck\"\ngain = [0.4, 0.4, 0.4]\n[head]\ngain = [0.6, 0.6, 0.6]\n";
    let m = compile(text, g);
    let w = |values: &[(Channel, f32)]| weights_of(g, &m, values, 0);
    assert_eq!(w(&[(JawOpen, 1.0)]), only(&[]), "jawOpen no longer opens A");
    assert_eq!(w(&[(MouthClose, 1.0)]), only(&[(AH, 1.0)]));
    assert_eq!(
        w(&[(EyeBlinkLeft, 1.0), (EyeBlinkRight, 1.0)]),
        only(&[(BLINK_LEFT, 1.0), (BLINK_RIGHT, 1.0)]),
        "the other presets keep the fallback"
    );
    assert_eq!((m.neck, m.head), (Some(4), Some(5)));

    let error = CompiledMapping::compile(
        &MappingFile::parse(
            "version = 1\n[map]\n\"vrm:hapy\" = \"mouthSmileLeft\"\n",
            "vrm.toml",
        )
        .unwrap(),
        g,
    )
    .unwrap_err()
    .to_string();
    assert!(error.starts_with("vrm.toml:3:1:"), "{error}");
    assert!(error.contains("did you mean `vrm:happy`?"), "{error}");
}

#[test]
fn the_readme_mapping_compiles_against_godette() {
    use Channel::*;
    let Some(g) = godette() else { return };
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let section = &readme[readme.find("### VRM avatars").unwrap()..];
    let start = section.find("```toml\n").unwrap() + "```toml\n".len();
    let text = &section[start..start + section[start..].find("```").unwrap()];
    let m = compile(text, g);
    assert_eq!(m.neck, Some(4));
    let fun = g.vrm.as_ref().unwrap().expression("Fun").unwrap();
    assert!(m.expressions.iter().any(|e| e.expression == fun));
    // Fun binds U at 50% and look_up at 25%.
    assert_eq!(
        weights_of(g, &m, &[(CheekSquintLeft, 1.0)], 0),
        only(&[(7, 0.5), (LOOK_UP, 0.25)])
    );
}

#[test]
fn check_reports_what_drives_godette() {
    let Some(model) = fixture(GODETTE) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("facewire.toml");
    std::fs::write(&config, "").unwrap();
    let output = Command::new(facewire_bin())
        .current_dir(repo())
        .arg("check")
        .arg("--config")
        .arg(&config)
        .arg("--model")
        .arg(&model)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains("expression `vrm:Fun` (preset relaxed) is driven by nothing"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("target `ah`"),
        "ah is driven through A: {stdout}"
    );
    assert!(stdout.contains("target `HideHairBalls`"), "{stdout}");
}

#[test]
fn godette_snapshot_closes_her_eyes_and_opens_her_mouth() {
    let Some(model) = fixture(GODETTE) else {
        return;
    };
    let dir = repo().join("target/vrm-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("facewire.toml");
    std::fs::write(&config, "").unwrap();
    let snapshot = |weights: &str, name: &str| {
        let out = dir.join(name);
        let output = Command::new(facewire_bin())
            .current_dir(repo())
            .arg("snapshot")
            .arg("--config")
            .arg(&config)
            .arg("--model")
            .arg(&model)
            .args(["--size", "240x240", "--morph", "cpu", "--weights", weights])
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        RgbaImage::load_png(&out).unwrap()
    };
    let neutral = snapshot("", "godette_neutral.png");
    let moved = snapshot(
        "jawOpen=1,eyeBlinkLeft=1,eyeBlinkRight=1",
        "godette_blink_jaw.png",
    );
    let mut changed = Vec::new();
    for y in 0..neutral.height {
        for x in 0..neutral.width {
            let (a, b) = (neutral.pixel(x, y), moved.pixel(x, y));
            if a.iter().zip(b).any(|(u, v)| u.abs_diff(v) > 8) {
                changed.push((x, y));
            }
        }
    }
    // She is framed as a bust: the face is large, in the middle across and the upper middle
    // down. Had the loader left her facing away, the eyes and mouth would be hidden and
    // nothing would change.
    assert!(changed.len() > 400, "only {} pixels changed", changed.len());
    let (w, h) = (neutral.width as f32, neutral.height as f32);
    for &(x, y) in &changed {
        let (fx, fy) = (x as f32 / w, y as f32 / h);
        assert!(
            (0.25..0.75).contains(&fx) && (0.3..0.7).contains(&fy),
            "a change at ({x}, {y}) is outside the face"
        );
    }
    let span = |f: fn(&(u32, u32)) -> u32| {
        let values = changed.iter().map(f);
        values.clone().max().unwrap() - values.min().unwrap()
    };
    assert!(span(|p| p.0) as f32 > 0.25 * w, "the eyes are far apart");
}

#[test]
fn a_layer_sets_an_expression_through_its_binds() {
    use facewire::config::{LayerSpec, LayersSection};
    use facewire::mapping::LayerTargets;
    let Some(godette) = godette() else { return };
    let vrm = godette.vrm.as_ref().unwrap();
    let joy = vrm
        .expressions
        .iter()
        .find(|e| e.name.eq_ignore_ascii_case("joy"))
        .expect("Godette has Joy");
    let mut layers = LayersSection::default();
    layers.order.push("happy".into());
    let mut spec = LayerSpec::default();
    spec.targets.insert("vrm:Joy".into(), 0.5);
    layers.specs.insert("happy".into(), spec);
    let targets = LayerTargets::compile(&layers, godette).unwrap();
    let mut f = frame(&[]);
    f.layer_weights[1] = 1.0;
    let mut pose = godette.rest_pose();
    targets.apply(&f, &mut pose);
    for bind in &joy.binds {
        let w = pose.weights[bind.mesh][bind.target];
        assert!((w - 0.5 * bind.weight).abs() < 1e-6, "{w} for {bind:?}");
    }
    // A misspelt expression names the nearest one.
    layers.specs.get_mut("happy").unwrap().targets = [("vrm:Jy".to_string(), 1.0)].into();
    let e = LayerTargets::compile(&layers, godette)
        .unwrap_err()
        .to_string();
    assert!(e.contains("did you mean `vrm:Joy`?"), "{e}");
}

/// `model` loaded as a run loads it: with the configuration's `[pose]` (the default, arms
/// relaxed, unless `more` says otherwise).
fn load_as_run(model: &Path, more: &str) -> Avatar {
    let text = format!(
        "[render]\nmodel = {:?}\n{more}",
        model.display().to_string()
    );
    let config = facewire::config::Config::parse(&text, "facewire.toml").unwrap();
    facewire::session::load_model(&config).unwrap()
}

/// `facewire snapshot` of `model` at `size` (`WxH`) with an empty configuration: no `[camera]`
/// values, the default `[pose]`.
fn plain_snapshot(model: &Path, size: &str, weights: &str, name: &str) -> RgbaImage {
    let dir = repo().join("target/vrm-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("empty.toml");
    std::fs::write(&config, "").unwrap();
    let out = dir.join(name);
    let output = Command::new(facewire_bin())
        .current_dir(repo())
        .arg("snapshot")
        .arg("--config")
        .arg(&config)
        .arg("--model")
        .arg(model)
        .args(["--size", size, "--morph", "cpu", "--weights", weights])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    RgbaImage::load_png(&out).unwrap()
}

/// World positions of each arm's upper arm (the shoulder joint) and hand, left then right.
fn shoulders_and_hands(avatar: &Avatar) -> Vec<(Vec3, Vec3)> {
    use facewire::avatar::{Bone, Humanoid, Side};
    let h = Humanoid::detect(avatar).expect("a humanoid");
    let world = avatar.world_transforms(&avatar.rest_pose());
    let at = |bone| world[h.bone(bone).unwrap()].w_axis.truncate();
    [Side::Left, Side::Right]
        .into_iter()
        .map(|s| (at(Bone::UpperArm(s)), at(Bone::Hand(s))))
        .collect()
}

#[test]
fn godette_is_framed_as_a_bust_with_her_arms_down() {
    use facewire::avatar::Bust;
    use facewire::render::Camera;
    let (Some(model), Some(modelled)) = (fixture(GODETTE), godette()) else {
        return;
    };
    // Modelled in a T-pose: the hands at shoulder height, far out.
    for (shoulder, hand) in shoulders_and_hands(modelled) {
        assert!((hand.y - shoulder.y).abs() < 0.05, "{shoulder} {hand}");
    }
    // Loaded for a run, the arms hang: hands well below the shoulders, a little forward,
    // each on its own side.
    let relaxed = load_as_run(&model, "");
    let arms = shoulders_and_hands(&relaxed);
    for &(shoulder, hand) in &arms {
        let reach = (hand - shoulder).length();
        assert!(shoulder.y - hand.y > 0.8 * reach, "{shoulder} {hand}");
        assert!(hand.z > shoulder.z, "forward: {shoulder} {hand}");
    }
    assert!(
        arms[0].1.x > 0.0 && arms[1].1.x < 0.0,
        "left on +X: {arms:?}"
    );
    // `as_modelled` keeps the T-pose.
    let kept = load_as_run(&model, "[pose]\narms = \"as_modelled\"\n");
    assert_eq!(shoulders_and_hands(&kept), shoulders_and_hands(modelled));

    // Framed from the chest up: the face (her head bone sits low, at the chin, under a big
    // chibi head) in the upper half, the head across a good part of the picture, a little
    // room above it and the body running off the bottom.
    let bust = Bust::of(&relaxed).expect("Godette has a bust");
    let camera = Camera::framed(bust.region(), 1.0, &Default::default());
    let face = bust.head + Vec3::Y * 0.4 * (bust.head_top - bust.head.y);
    let head = camera.view_proj().project_point3(face);
    assert!(head.y > 0.0, "face at {head}");
    let top = camera
        .view_proj()
        .project_point3(Vec3::new(0.0, bust.head_top, face.z));
    assert!((0.6..1.0).contains(&top.y), "top of the head at {top}");
    let image = plain_snapshot(&model, "240x240", "", "godette_bust.png");
    let background = image.pixel(0, 0);
    let covered = |x: u32, y: u32| {
        let p = image.pixel(x, y);
        p.iter()
            .zip(background)
            .take(3)
            .any(|(a, b)| a.abs_diff(b) > 24)
    };
    let row = |y: u32| (0..image.width).filter(|&x| covered(x, y)).count() as f32;
    let width = image.width as f32;
    assert_eq!(row(0), 0.0, "room above the head");
    let first = (0..image.height).find(|&y| row(y) > 0.0).unwrap();
    assert!(first < image.height / 5, "the head starts at row {first}");
    let head_row = ((1.0 - head.y) * 0.5 * image.height as f32) as u32;
    assert!(
        row(head_row) > 0.4 * width,
        "the head is {} of {width} pixels wide",
        row(head_row)
    );
    assert!(row(image.height - 1) > 0.3 * width, "cut at the chest");
}

#[test]
fn vrm1_fixtures_lower_their_arms_and_are_framed_as_a_bust_where_they_draw_one() {
    use facewire::avatar::Bust;
    let Some(root) = fixtures("VRM tests") else {
        return;
    };
    let mut files = vrm_files(&root.join("vrm/vrm-specification"));
    files.extend(
        vrm_files(&root.join("vrm/vrm-addon-for-blender"))
            .into_iter()
            .filter(|p| p.to_string_lossy().contains("vrm1")),
    );
    assert!(files.len() >= 4, "{files:?}");
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy();
        let avatar = load_as_run(file, "");
        assert_eq!(avatar.vrm.as_ref().unwrap().version, VrmVersion::V1);
        for (shoulder, hand) in shoulders_and_hands(&avatar) {
            assert!(hand.y < shoulder.y - 0.05, "{name}: {shoulder} {hand}");
            assert!(hand.z > shoulder.z, "{name}: forward {shoulder} {hand}");
        }
        // These samples are test cards on a humanoid rig: no head mesh, so the bones size the
        // bust where the card stands in front of it; where the card is nowhere near the head
        // (a triangle at the feet), the whole model is framed as before.
        let bust = Bust::of(&avatar);
        if name.contains("modifier_shapekey") {
            assert_eq!(bust, None, "{name}: nothing drawn at the head");
        } else {
            let bust = bust.unwrap_or_else(|| panic!("{name}: framed as a bust"));
            let region = bust.region();
            let bounds = avatar.bounds().unwrap();
            assert!(
                region.min.y > bounds.min.y,
                "{name}: cut above the card's foot"
            );
            assert!(
                (region.min.y..=region.max.y).contains(&bust.head.y),
                "{name}"
            );
        }
        let image = plain_snapshot(file, "120x120", "", &format!("{name}.png"));
        let background = image.pixel(0, 0);
        let drawn = (0..image.height)
            .flat_map(|y| (0..image.width).map(move |x| (x, y)))
            .filter(|&(x, y)| image.pixel(x, y) != background)
            .count();
        assert!(drawn > 120 * 120 / 10, "{name}: {drawn} pixels drawn");
    }
}

#[test]
fn the_default_head_is_no_humanoid_and_keeps_its_framing_and_pose() {
    use facewire::avatar::{rest_pose, Bust, Humanoid};
    // It has `Head` and `Neck` nodes but nothing below them: no chest, no arms.
    let config = facewire::config::Config::default();
    let mut head = facewire::session::load_model(&config).unwrap();
    assert!(head.find_node("Head").is_some() && head.find_node("Neck").is_some());
    assert_eq!(Humanoid::detect(&head), None);
    assert_eq!(Bust::of(&head), None);
    let before = head.nodes.iter().map(|n| n.rotation).collect::<Vec<_>>();
    assert!(rest_pose::relax(&mut head, &Default::default()).is_empty());
    assert_eq!(
        head.nodes.iter().map(|n| n.rotation).collect::<Vec<_>>(),
        before
    );
}

/// Godette's spring bones stepped at `hz` for `seconds` while her head turns 40 degrees about
/// Y over the first 0.2 s and then holds still; returns the simulation, the last pose and the
/// drawn tail of each joint after every frame.
fn godette_head_turn(
    g: &Avatar,
    hz: u32,
    seconds: f32,
) -> (avatar::spring::SpringSim, avatar::Pose, Vec<Vec<Vec3>>) {
    let head = g.vrm.as_ref().unwrap().humanoid_bone("head").unwrap();
    let rig = g.springs.as_ref().expect("Godette has spring bones");
    let mut sim = avatar::spring::SpringSim::for_avatar(g).unwrap();
    let mut pose = g.rest_pose();
    let mut tails = Vec::new();
    let frames = (seconds * hz as f32).round() as u32;
    for f in 0..=frames {
        let x = (f as f32 / hz as f32 / 0.2).min(1.0);
        pose.rotations[head] = Quat::from_rotation_y(40f32.to_radians() * x * x * (3.0 - 2.0 * x));
        let dt = if f == 0 { 0.0 } else { 1.0 / hz as f64 };
        sim.step(g, &mut pose, std::time::Duration::from_secs_f64(dt));
        let world = g.world_transforms(&pose);
        tails.push(
            rig.springs
                .iter()
                .flat_map(|s| &s.joints)
                .map(|j| world[j.node].transform_point3(j.tail))
                .collect(),
        );
    }
    (sim, pose, tails)
}

#[test]
fn godette_springs_match_her_secondary_animation() {
    let (Some(g), Some(path)) = (godette(), fixture(GODETTE)) else {
        return;
    };
    let json = glb_json(&path);
    let secondary = &json["extensions"]["VRM"]["secondaryAnimation"];
    let rig = g.springs.as_ref().unwrap();
    // One spring per root bone, every descendant of a root a joint.
    let groups = secondary["boneGroups"].as_array().unwrap();
    let roots: Vec<u64> = groups
        .iter()
        .flat_map(|b| b["bones"].as_array().unwrap())
        .map(|b| b.as_u64().unwrap())
        .collect();
    assert_eq!(rig.springs.len(), roots.len());
    for (spring, &root) in rig.springs.iter().zip(&roots) {
        assert_eq!(spring.joints[0].node as u64, root);
        assert_eq!(spring.center, None);
    }
    let first = rig.springs[0].joints[0].settings;
    assert_eq!(
        first.stiffness,
        groups[0]["stiffiness"].as_f64().unwrap() as f32
    );
    assert_eq!(first.hit_radius, 0.02);
    assert_eq!(first.gravity_dir, Vec3::NEG_Y);
    // Two collider groups of two spheres each, on the chest and the head.
    let sizes: Vec<usize> = rig.collider_groups.iter().map(Vec::len).collect();
    assert_eq!(sizes, vec![2, 2]);
    let head_sphere = rig.colliders[rig.collider_groups[1][0]];
    assert_eq!(head_sphere.node, 5);
    let z = secondary["colliderGroups"][1]["colliders"][0]["offset"]["z"]
        .as_f64()
        .unwrap() as f32;
    match head_sphere.shape {
        avatar::spring::ColliderShape::Sphere { offset, radius } => {
            assert!((radius - 0.15).abs() < 1e-6);
            assert_eq!(offset.z, -z, "UniVRM's Z is mirrored");
        }
        other => panic!("{other:?}"),
    }
    assert!(rig.skipped.is_empty(), "{:?}", rig.skipped);
}

#[test]
fn godettes_hair_swings_after_a_head_turn_and_settles() {
    let Some(g) = godette() else {
        return;
    };
    let (sim, _, tails) = godette_head_turn(g, 60, 6.0);
    let settled = tails.last().unwrap();
    // At the end of the turn (0.2 s) the hair trails behind where it comes to rest.
    let lag = tails[12]
        .iter()
        .zip(settled)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, f32::max);
    assert!(lag > 0.01, "the hair lags by at most {lag} m");
    // Three seconds in, every tail is within a millimetre of where it ends and barely moves.
    for frame in &tails[180..] {
        for (t, end) in frame.iter().zip(settled) {
            assert!(t.distance(*end) < 1e-3, "{t} is not yet at {end}");
        }
    }
    for pair in tails[180..].windows(2) {
        for (a, b) in pair[0].iter().zip(&pair[1]) {
            assert!(a.distance(*b) < 1e-4);
        }
    }
    assert!(!sim.is_moving());
}

#[test]
fn godettes_springs_end_alike_at_30_and_144_hz_and_outside_her_colliders() {
    let Some(g) = godette() else {
        return;
    };
    let (_, _, slow) = godette_head_turn(g, 30, 2.0);
    let (_, pose, fast) = godette_head_turn(g, 144, 2.0);
    for (a, b) in slow.last().unwrap().iter().zip(fast.last().unwrap()) {
        assert!(a.distance(*b) < 5e-4, "{a} at 30 Hz, {b} at 144 Hz");
    }
    // No tail ends inside a collider its spring avoids.
    let rig = g.springs.as_ref().unwrap();
    let world = g.world_transforms(&pose);
    for spring in &rig.springs {
        for joint in &spring.joints {
            let tail = world[joint.node].transform_point3(joint.tail);
            for &c in spring
                .collider_groups
                .iter()
                .flat_map(|&k| &rig.collider_groups[k])
            {
                let collider = rig.colliders[c];
                let avatar::spring::ColliderShape::Sphere { offset, radius } = collider.shape
                else {
                    unreachable!("VRM 0.x colliders are spheres")
                };
                let centre = world[collider.node].transform_point3(offset);
                let gap = tail.distance(centre) - radius - joint.settings.hit_radius;
                assert!(
                    gap > -1e-3,
                    "joint {} is {gap} m inside collider {c}",
                    joint.node
                );
            }
        }
    }
}

#[test]
fn a_mapping_files_pose_section_is_the_avatars_own() {
    let Some(model) = fixture(GODETTE) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mapping = dir.path().join("godette.toml");
    let config = |pose: &str| {
        let text = format!(
            "[render]\nmodel = {:?}\nmapping = {:?}\n{pose}",
            model.display().to_string(),
            mapping.display().to_string()
        );
        facewire::config::Config::parse(&text, "facewire.toml").unwrap()
    };
    // The mapping keeps the arms as modelled although facewire.toml relaxes them.
    std::fs::write(&mapping, "version = 1\n[pose]\narms = \"as_modelled\"\n").unwrap();
    let (kept, _) = facewire::session::load_avatar(&config("")).unwrap();
    for (shoulder, hand) in shoulders_and_hands(&kept) {
        assert!(
            (hand.y - shoulder.y).abs() < 0.1,
            "T-pose kept: {shoulder} {hand}"
        );
    }
    // A mapping without [pose] leaves it to facewire.toml.
    std::fs::write(&mapping, "version = 1\n").unwrap();
    let (relaxed, _) = facewire::session::load_avatar(&config("")).unwrap();
    for (shoulder, hand) in shoulders_and_hands(&relaxed) {
        assert!(hand.y < shoulder.y - 0.2, "relaxed: {shoulder} {hand}");
    }
    let (kept, _) =
        facewire::session::load_avatar(&config("[pose]\narms = \"as_modelled\"\n")).unwrap();
    for (shoulder, hand) in shoulders_and_hands(&kept) {
        assert!((hand.y - shoulder.y).abs() < 0.1, "{shoulder} {hand}");
    }
    // A bad value is located in the mapping file.
    std::fs::write(&mapping, "version = 1\n\n[pose]\narm_down_degrees = 120\n").unwrap();
    let Err(err) = facewire::session::load_avatar(&config("")) else {
        panic!("arm_down_degrees = 120 is out of range");
    };
    let err = err.to_string();
    assert!(err.contains("godette.toml:4:1:"), "{err}");
    assert!(err.contains("use 0 to 90 degrees"), "{err}");
}

#[test]
fn godettes_vrm_presets_are_expressions_without_configuration() {
    let Some(g) = godette() else { return };
    let presets = facewire::session::avatar_presets(g);
    let names: Vec<&str> = presets.iter().map(|e| e.name.as_str()).collect();
    // VRM 0.x Joy, Angry, Sorrow and Fun answer to happy, angry, sad and relaxed; Godette has
    // no surprised.
    assert_eq!(names, ["happy", "angry", "sad", "relaxed"]);
    let config = facewire::config::Config::default();
    let stack = facewire::stack::StackConfig::of(&config).with_presets(presets);
    let section = stack.section();
    let targets = mapping::LayerTargets::compile(&section, g).unwrap();
    // The frame carries the happy layer's weight at its place in the stack: at full weight
    // Joy's binds show (oh at 0.5, look-up at 0.25), at half weight half of them.
    let place = section
        .order
        .iter()
        .position(|n| n == "expression:happy")
        .unwrap();
    for (weight, oh, up) in [(1.0, 0.5, 0.25), (0.5, 0.25, 0.125), (0.0, 0.0, 0.0)] {
        let mut f = frame(&[]);
        f.layer_weights[place] = weight;
        let mut pose = g.rest_pose();
        targets.apply(&f, &mut pose);
        assert!(
            (pose.weights[0][OH] - oh).abs() < 1e-6,
            "{weight}: {:?}",
            pose.weights[0]
        );
        assert!((pose.weights[0][LOOK_UP] - up).abs() < 1e-6);
    }
}

/// The panel's "drives" column names what each channel moves on a VRM avatar: its expressions
/// (the blinks, the mouth's vowels) and its eye bones, never "(nothing)" for a channel that
/// moves the face.
#[test]
fn the_panel_names_what_each_channel_drives_on_a_vrm_avatar() {
    let Some(avatar) = godette() else {
        return;
    };
    let mapping = CompiledMapping::auto(avatar);
    let telemetry = facewire::control::telemetry::Telemetry::new(std::time::Instant::now());
    let face = frame(&[
        (Channel::EyeBlinkLeft, 1.0),
        (Channel::JawOpen, 0.6),
        (Channel::EyeLookUpLeft, 0.5),
    ]);
    telemetry.record_mixed(&face);
    let mut pose = avatar.rest_pose();
    mapping.apply(&face, &mut pose);
    let rows = facewire::panel::channel_rows(&telemetry.snapshot(), &mapping, avatar, &pose);
    let drives = |c: Channel| rows[c.index()].targets.clone();
    for channel in [
        Channel::EyeBlinkLeft,
        Channel::JawOpen,
        Channel::EyeLookUpLeft,
    ] {
        assert!(
            !drives(channel).is_empty(),
            "{channel:?} drives nothing on the panel"
        );
    }
    // The blink names Godette's expression at the weight it has now.
    let blink = drives(Channel::EyeBlinkLeft);
    assert!(
        blink
            .iter()
            .any(|(name, w)| name.starts_with("expression ") && *w > 0.9),
        "{blink:?}"
    );
}

/// A VRM 1.0 model of 18 nodes (a root drawing one triangle, then a chain of 17 hanging from
/// it) whose one spring is the chain, with `colliders` and `groups` as given.
fn vrm1_with_colliders(colliders: Value, groups: Value) -> Vec<u8> {
    let positions: Vec<u8> = [-0.5f32, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0, 0.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let mut nodes = vec![serde_json::json!({"name": "root", "mesh": 0, "children": [1]})];
    for n in 1..18 {
        let mut node =
            serde_json::json!({"name": format!("hair{n}"), "translation": [0.0, -0.05, 0.0]});
        if n < 17 {
            node["children"] = serde_json::json!([n + 1]);
        }
        nodes.push(node);
    }
    let joints: Vec<Value> = (1..18).map(|n| serde_json::json!({"node": n})).collect();
    let root = serde_json::json!({
        "asset": {"version": "2.0"},
        "extensionsUsed": ["VRMC_vrm", "VRMC_springBone"],
        "extensions": {
            "VRMC_vrm": {"specVersion": "1.0", "meta": {"name": "hostile colliders"}},
            "VRMC_springBone": {
                "specVersion": "1.0",
                "colliders": colliders,
                "colliderGroups": groups,
                "springs": [{"name": "hair", "joints": joints, "colliderGroups": [0]}]
            }
        },
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": nodes,
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}}]}],
        "buffers": [{"byteLength": positions.len()}],
        "bufferViews": [{"buffer": 0, "byteLength": positions.len()}],
        "accessors": [{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
                       "min": [-0.5, 0.0, 0.0], "max": [0.5, 1.0, 0.0]}]
    });
    crate::support::glb(root.to_string().as_bytes(), &positions)
}

#[test]
fn invalid_vrm1_colliders_are_dropped_before_the_springs_and_snapshot_see_them() {
    // Every kind of invalid collider, in a group a spring uses and in one no spring uses.
    let sphere = |node: Value, radius: Value| serde_json::json!({"node": node, "shape": {"sphere": {"offset": [0, 0, 0], "radius": radius}}});
    let colliders = serde_json::json!([
        sphere(serde_json::json!(0), serde_json::json!(0.1)),
        sphere(serde_json::json!(18), serde_json::json!(0.1)),
        sphere(serde_json::json!(-3), serde_json::json!(0.1)),
        {"node": 0, "shape": {}},
        {"node": 0},
        sphere(serde_json::json!(0), serde_json::json!(-1.0)),
        {"node": 0, "shape": {"sphere": {"offset": [0, 0], "radius": 0.1}}},
        {"node": 0, "shape": {"capsule": {"offset": [0, 0, 0], "tail": [0, 1], "radius": 0.1}}}
    ]);
    let groups = serde_json::json!([
        {"colliders": [0, 1, 2, 3]},
        {"colliders": [4, 5, 6, 7]}
    ]);
    let glb = vrm1_with_colliders(colliders, groups);
    let avatar = avatar::load_slice(&glb, "colliders.vrm").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(avatar.nodes.len(), 18);
    let rig = avatar.springs.as_ref().expect("the chain is a spring");
    assert_eq!(rig.colliders.len(), 1, "{:?}", rig.colliders);
    assert_eq!(rig.colliders[0].node, 0);
    assert_eq!(rig.collider_groups, vec![vec![0], vec![]]);
    assert_eq!(rig.skipped.len(), 7, "{:#?}", rig.skipped);

    // The simulation steps through a head turn.
    let mut sim = avatar::spring::SpringSim::for_avatar(&avatar).expect("joints");
    let mut pose = avatar.rest_pose();
    for f in 0..30 {
        pose.rotations[0] = Quat::from_rotation_y(f as f32 * 0.02);
        sim.step(
            &avatar,
            &mut pose,
            std::time::Duration::from_secs_f32(1.0 / 60.0),
        );
    }
    assert!(pose.rotations.iter().all(|r| r.is_finite()));

    // `facewire snapshot` draws it, with and without spring bones.
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("colliders.vrm");
    std::fs::write(&model, &glb).unwrap();
    let config = dir.path().join("empty.toml");
    std::fs::write(&config, "").unwrap();
    for extra in [None, Some("--no-springs")] {
        let out = dir.path().join("out.png");
        let output = Command::new(facewire_bin())
            .current_dir(repo())
            .arg("snapshot")
            .arg("--config")
            .arg(&config)
            .arg("--model")
            .arg(&model)
            .args(["--size", "64x64", "--morph", "cpu", "--out"])
            .arg(&out)
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{extra:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{extra:?}: {stderr}");
        assert!(
            stderr.contains("collider 1 names node 18"),
            "the dropped collider is named: {stderr}"
        );
        assert!(out.is_file());
    }
}

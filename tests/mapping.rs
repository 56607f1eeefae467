//! Mapping integration tests: every construct of the mapping language, the automatic mapping,
//! error positions and the check report.

use facewire::arkit::Channel;
use facewire::avatar::{Avatar, Mesh, Node, Pose};
use facewire::mapping::{self, CompiledMapping, MappingFile};
use glam::{Quat, Vec3};

use crate::support::frame;

fn node(name: &str, mesh: Option<usize>) -> Node {
    Node {
        name: Some(name.into()),
        mesh,
        ..Node::default()
    }
}

/// A hand-made avatar with `_L`/`_R` ARKit names, some custom targets and a skeleton.
fn avatar() -> Avatar {
    let names = [
        "eyeBlink_L",
        "eyeBlink_R",
        "jawOpen",
        "Smile",
        "V_AA",
        "V_EE",
        "V_OH",
        "JawClosedLips",
    ];
    Avatar {
        source: "hand-made".into(),
        nodes: vec![
            node("Face", Some(0)),
            node("Head", None),
            node("Neck", None),
            node("Jaw", None),
            node("LeftEye", None),
            node("RightEye", None),
        ],
        roots: vec![0, 1, 2, 3, 4, 5],
        meshes: vec![Mesh {
            name: Some("Face".into()),
            target_names: names.iter().map(|s| s.to_string()).collect(),
            default_weights: vec![0.0; names.len()],
            primitives: vec![],
        }],
        ..Avatar::default()
    }
}

fn compile(body: &str) -> CompiledMapping {
    let text = format!("version = 1\n{body}");
    let file = MappingFile::parse(&text, "m.toml").unwrap();
    CompiledMapping::compile(&file, &avatar()).unwrap()
}

fn pose_of(m: &CompiledMapping, values: &[(Channel, f32)]) -> Pose {
    let a = avatar();
    let mut pose = a.rest_pose();
    m.apply(&frame(values), &mut pose);
    pose
}

fn weight(m: &CompiledMapping, values: &[(Channel, f32)], target: &str) -> f32 {
    let index = avatar().meshes[0]
        .target_names
        .iter()
        .position(|n| n == target)
        .unwrap();
    pose_of(m, values).weights[0][index]
}

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() < 1e-5
}

fn error(body: &str) -> String {
    let text = format!("version = 1\n{body}");
    match MappingFile::parse(&text, "m.toml") {
        Err(e) => e.to_string(),
        Ok(file) => CompiledMapping::compile(&file, &avatar())
            .unwrap_err()
            .to_string(),
    }
}

#[test]
fn auto_mapping_reads_underscore_dialects() {
    let m = CompiledMapping::auto(&avatar());
    use Channel::*;
    assert_eq!(m.targets.len(), 3);
    let values = [(EyeBlinkLeft, 0.7), (EyeBlinkRight, 0.2), (JawOpen, 0.4)];
    assert!(close(weight(&m, &values, "eyeBlink_L"), 0.7));
    assert!(close(weight(&m, &values, "eyeBlink_R"), 0.2));
    assert!(close(weight(&m, &values, "jawOpen"), 0.4));
    assert_eq!(weight(&m, &values, "Smile"), 0.0);
    assert_eq!(
        (m.head, m.left_eye, m.right_eye),
        (Some(1), Some(4), Some(5))
    );
    assert_eq!((m.neck, m.jaw), (None, None));
}

#[test]
fn short_form_maps_and_overrides_auto() {
    let m = compile("[map]\nSmile = \"mouthSmileLeft\"\neyeBlink_L = \"eyeBlinkRight\"\n");
    use Channel::*;
    assert!(close(weight(&m, &[(MouthSmileLeft, 0.6)], "Smile"), 0.6));
    // The explicit entry replaced the automatic eyeBlink_L ← eyeBlinkLeft binding.
    assert_eq!(weight(&m, &[(EyeBlinkLeft, 0.9)], "eyeBlink_L"), 0.0);
    assert!(close(
        weight(&m, &[(EyeBlinkRight, 0.3)], "eyeBlink_L"),
        0.3
    ));
    // Short forms clamp to [0, 1].
    assert_eq!(weight(&m, &[(MouthSmileLeft, 1.7)], "Smile"), 1.0);
    // Targets whose sources are absent stay at rest.
    assert_eq!(weight(&m, &[(JawOpen, 0.5)], "Smile"), 0.0);
}

#[test]
fn full_form_with_sources_gain_offset_and_clamp() {
    let m = compile(
        "[map.Smile]\nsources = { mouthSmileLeft = 0.5, MouthSmile_R = 0.5 }\ngain = 2.0\noffset = -0.1\nclamp = [0.0, 0.8]\n",
    );
    use Channel::*;
    let w = |l, r| weight(&m, &[(MouthSmileLeft, l), (MouthSmileRight, r)], "Smile");
    assert!(close(w(0.2, 0.2), 0.3)); // (0.1 + 0.1) * 2 - 0.1
    assert_eq!(w(1.0, 1.0), 0.8); // clamped high
    assert_eq!(w(0.0, 0.0), 0.0); // -0.1 clamped low
                                  // A missing source counts as 0 while the other is present.
    assert!(close(weight(&m, &[(MouthSmileLeft, 0.4)], "Smile"), 0.3));
    // Arrays of names weigh every source 1.
    let m = compile(
        "[map]\nSmile = { sources = [\"mouthSmileLeft\", \"mouthSmileRight\"], clamp = [0, 2] }\n",
    );
    assert!(close(
        weight(
            &m,
            &[(MouthSmileLeft, 0.4), (MouthSmileRight, 0.5)],
            "Smile"
        ),
        0.9
    ));
}

#[test]
fn one_channel_drives_several_targets() {
    let m = compile("[map]\nSmile = \"jawOpen\"\nV_AA = { sources = \"jawOpen\", gain = 0.5 }\n");
    let values = [(Channel::JawOpen, 0.8)];
    assert!(close(weight(&m, &values, "jawOpen"), 0.8));
    assert!(close(weight(&m, &values, "Smile"), 0.8));
    assert!(close(weight(&m, &values, "V_AA"), 0.4));
}

#[test]
fn every_curve_shapes_the_response() {
    let at = |curve: &str, x: f32| {
        let m = compile(&format!(
            "[map.Smile]\nsources = \"jawOpen\"\ncurve = {curve}\n"
        ));
        weight(&m, &[(Channel::JawOpen, x)], "Smile")
    };
    assert!(close(at("\"linear\"", 0.3), 0.3));
    assert!(close(at("\"smoothstep\"", 0.25), 0.15625));
    let points = "{ points = [[0.0, 0.0], [0.5, 0.1], [1.0, 1.0]] }";
    assert!(close(at(points, 0.25), 0.05));
    assert!(close(at(points, 0.75), 0.55));
    let spline = "{ spline = [[0.0, 0.0], [0.5, 0.1], [1.0, 1.0]] }";
    assert!(close(at(spline, 0.5), 0.1));
    let (a, b) = (at(spline, 0.25), at(spline, 0.75));
    assert!(a > 0.0 && a < 0.1 && b > 0.1 && b < 1.0, "{a} {b}");
}

#[test]
fn correctives_combine_by_product_and_min() {
    use Channel::*;
    let m = compile(
        "[map.JawClosedLips]\nsources = [\"jawOpen\", \"mouthClose\"]\ncombine = \"product\"\n\
         [map.Smile]\nsources = [\"jawOpen\", \"mouthClose\"]\ncombine = \"min\"\n",
    );
    let v = [(JawOpen, 0.8), (MouthClose, 0.5)];
    assert!(close(weight(&m, &v, "JawClosedLips"), 0.4));
    assert!(close(weight(&m, &v, "Smile"), 0.5));
    // Either source at 0 (or missing) keeps the corrective off.
    assert_eq!(weight(&m, &[(JawOpen, 0.8)], "JawClosedLips"), 0.0);
    assert_eq!(weight(&m, &[(JawOpen, 0.8)], "Smile"), 0.0);
}

#[test]
fn groups_normalise_or_not() {
    use Channel::*;
    let map = "[map]\nV_AA = \"jawOpen\"\nV_EE = \"mouthStretchLeft\"\nV_OH = \"mouthFunnel\"\n";
    let v = [(JawOpen, 0.9), (MouthStretchLeft, 0.6), (MouthFunnel, 0.0)];
    let free = compile(&format!(
        "{map}[groups.visemes]\ntargets = [\"V_AA\", \"V_EE\", \"V_OH\"]\n"
    ));
    assert!(close(weight(&free, &v, "V_AA"), 0.9));
    assert!(close(weight(&free, &v, "V_EE"), 0.6));
    let norm = compile(&format!(
        "{map}[groups.visemes]\ntargets = [\"V_AA\", \"V_EE\", \"V_OH\"]\nmode = \"normalise\"\n"
    ));
    assert!(close(weight(&norm, &v, "V_AA"), 0.6));
    assert!(close(weight(&norm, &v, "V_EE"), 0.4));
    // Below a sum of 1 normalisation changes nothing.
    let low = [(JawOpen, 0.3), (MouthStretchLeft, 0.2)];
    assert!(close(weight(&norm, &low, "V_AA"), 0.3));
    assert!(close(weight(&norm, &low, "V_EE"), 0.2));
}

#[test]
fn exclusive_groups_keep_the_largest() {
    use Channel::*;
    let map = "[map]\nV_AA = \"jawOpen\"\nV_EE = \"mouthStretchLeft\"\n";
    let v = [(JawOpen, 0.9), (MouthStretchLeft, 0.6)];
    let hard = compile(&format!(
        "{map}[groups.g]\ntargets = [\"V_AA\", \"V_EE\"]\nmode = \"exclusive\"\n"
    ));
    assert!(close(weight(&hard, &v, "V_AA"), 0.9));
    assert_eq!(weight(&hard, &v, "V_EE"), 0.0);
    let soft = compile(&format!(
        "{map}[groups.g]\ntargets = [\"V_AA\", \"V_EE\"]\nmode = \"soft-exclusive\"\nsharpness = 2.0\n"
    ));
    assert!(close(weight(&soft, &v, "V_AA"), 0.9));
    assert!(close(
        weight(&soft, &v, "V_EE"),
        0.6 * (0.6f32 / 0.9).powi(2)
    ));
    // Equal members both keep their weight: nothing jumps when the lead changes.
    let tie = [(JawOpen, 0.5), (MouthStretchLeft, 0.5)];
    assert!(close(weight(&soft, &tie, "V_EE"), 0.5));
}

#[test]
fn jaw_bone_follows_jaw_open() {
    let m = compile("[jaw]\nnode = \"Jaw\"\ndegrees = 30.0\naxis = \"x\"\n");
    let pose = pose_of(&m, &[(Channel::JawOpen, 0.5)]);
    let expected = Quat::from_rotation_x(15f32.to_radians());
    assert!(pose.rotations[3].angle_between(expected) < 1e-5);
    // The chin (at -Y, +Z of the pivot) moves down.
    let chin = pose.rotations[3] * Vec3::new(0.0, -0.5, 1.0);
    assert!(chin.y < -0.5);
    assert_eq!(pose_of(&m, &[]).rotations[3], Quat::IDENTITY);
}

#[test]
fn head_and_neck_gains_limits_and_axes() {
    let m = compile(
        "[head]\nnode = \"Head\"\ngain = [1.0, 0.5, 1.0]\nlimit_degrees = [10, 90, 90]\n\
         [neck]\nnode = \"Neck\"\ngain = [0.0, 0.0, 1.0]\naxes = [\"x\", \"y\", \"-z\"]\n",
    );
    let mut f = frame(&[]);
    f.head = Some(Quat::from_rotation_y(0.6));
    let a = avatar();
    let mut pose = a.rest_pose();
    m.apply(&f, &mut pose);
    assert!(pose.rotations[1].angle_between(Quat::from_rotation_y(0.3)) < 1e-5);
    assert!(pose.rotations[2].angle_between(Quat::IDENTITY) < 1e-5);
    // Pitch is limited to 10 degrees.
    f.head = Some(Quat::from_rotation_x(0.5));
    let mut pose = a.rest_pose();
    m.apply(&f, &mut pose);
    assert!(pose.rotations[1].angle_between(Quat::from_rotation_x(10f32.to_radians())) < 1e-5);
    // Roll goes to the neck about -Z.
    f.head = Some(Quat::from_rotation_z(0.2));
    let mut pose = a.rest_pose();
    m.apply(&f, &mut pose);
    assert!(pose.rotations[2].angle_between(Quat::from_rotation_z(-0.2)) < 1e-5);
}

#[test]
fn eyes_follow_eye_look_channels() {
    let m = compile("[eyes]\nleft = \"LeftEye\"\nright = \"RightEye\"\nhorizontal_degrees = 30\n");
    let pose = pose_of(&m, &[(Channel::EyeLookOutLeft, 1.0)]);
    let gaze = pose.rotations[4] * Vec3::Z;
    assert!(close(gaze.x, 30f32.to_radians().sin()), "{gaze}");
}

#[test]
fn weights_stay_finite_for_any_input() {
    let m = compile(
        "[map.Smile]\nsources = { jawOpen = 10000.0, mouthClose = -10000.0 }\ngain = 10000\ncombine = \"product\"\ncurve = { spline = [[-1, 0], [0, 0.5], [1, 1]] }\n",
    );
    let mut f = frame(&[]);
    f.head = Some(Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0));
    for v in [f32::NAN, f32::INFINITY, f32::MAX, -f32::MAX, 1e30, 0.5] {
        f.set(Channel::JawOpen, v);
        f.set(Channel::MouthClose, v);
        f.set(Channel::EyeBlinkLeft, v);
        let a = avatar();
        let mut pose = a.rest_pose();
        m.apply(&f, &mut pose);
        assert!(
            pose.weights[0].iter().all(|w| w.is_finite()),
            "{v}: {:?}",
            pose.weights
        );
        assert!(pose.rotations.iter().all(|q| q.is_finite()));
    }
}

#[test]
fn error_positions_and_suggestions() {
    // Each error: (body after the version line, expected "line:column", expected text).
    let cases = [
        (
            "[map]\nSmile = \"eyeBlinkLft\"\n",
            "3:9",
            "unknown channel `eyeBlinkLft`; did you mean `eyeBlinkLeft`?",
        ),
        (
            "[map]\nSmle = \"jawOpen\"\n",
            "3:1",
            "unknown target `Smle`; did you mean `Smile`?",
        ),
        (
            "[map.Smile]\nsource = \"jawOpen\"\n",
            "3:1",
            "did you mean `sources`?",
        ),
        (
            "[map.Smile]\nsources = { jawOpn = 1.0 }\n",
            "3:13",
            "did you mean `jawOpen`?",
        ),
        (
            "[map.Smile]\nsources = \"jawOpen\"\ncurve = \"smothstep\"\n",
            "4:9",
            "did you mean `smoothstep`?",
        ),
        (
            "[map.Smile]\nsources = \"jawOpen\"\ncurve = { points = [[0, 0], [0, 1]] }\n",
            "4:9",
            "increase strictly",
        ),
        (
            "[map.Smile]\nsources = \"jawOpen\"\ncurve = { point = [[0, 0], [1, 1]] }\n",
            "4:11",
            "did you mean `points`?",
        ),
        (
            "[map.Smile]\nsources = \"jawOpen\"\nclamp = [1, 0]\n",
            "4:9",
            "low bound is above",
        ),
        (
            "[map.Smile]\nsources = \"jawOpen\"\ncombine = \"prod\"\n",
            "4:11",
            "product",
        ),
        (
            "[groups.v]\ntargets = [\"V_AA\", \"V_EX\"]\n",
            "3:20",
            "unknown target `V_EX`; did you mean `V_EE`?",
        ),
        (
            "[groups.v]\ntargets = [\"V_AA\"]\nmode = \"normalised\"\n",
            "4:8",
            "normalise",
        ),
        (
            "[head]\nnode = \"Haed\"\n",
            "3:8",
            "unknown node `Haed`; did you mean `Head`?",
        ),
        ("[jaw]\nnode = \"Jw\"\n", "3:8", "did you mean `Jaw`?"),
        (
            "[jaw]\nnode = \"Jaw\"\naxis = \"w\"\n",
            "4:8",
            "not an axis",
        ),
        (
            "[head]\naxes = [\"x\", \"x\", \"z\"]\n",
            "3:1",
            "each of x, y and z once",
        ),
        (
            "[head]\nlimit_degrees = [10, 500, 10]\n",
            "3:1",
            "between 0 and 180",
        ),
        ("[neck]\nnod = \"Neck\"\n", "3:1", "did you mean `node`?"),
        ("[mapp]\n", "2:2", "did you mean `map`?"),
    ];
    for (body, at, text) in cases {
        let err = error(body);
        assert!(err.starts_with(&format!("m.toml:{at}:")), "{body:?}: {err}");
        assert!(err.contains(text), "{body:?}: {err}");
    }
}

#[test]
fn version_one_files_still_read() {
    let text = "version = 1\n[targets]\nauto = true\n[head]\nnode = \"Head\"\n[eyes]\nleft = \"LeftEye\"\nright = \"RightEye\"\nhorizontal_degrees = 25.0\nup_degrees = 20.0\ndown_degrees = 25.0\n";
    let file = MappingFile::parse(text, "v1.toml").unwrap();
    let a = avatar();
    assert_eq!(
        CompiledMapping::compile(&file, &a).unwrap(),
        CompiledMapping::auto(&a)
    );
}

#[test]
fn the_default_head_auto_maps_and_checks_clean() {
    let avatar =
        facewire::avatar::load_slice(facewire::headgen::DEFAULT_HEAD_GLB, "default_head.glb")
            .unwrap();
    let auto = CompiledMapping::auto(&avatar);
    assert_eq!(auto.driven_mask(), facewire::arkit::ChannelMask::ALL);
    let file = MappingFile::parse(mapping::DEFAULT_HEAD_MAPPING, "default_head.toml").unwrap();
    // The file adds face-shape sliders and wrinkle maps to what the automatic mapping does.
    let compiled = CompiledMapping::compile(&file, &avatar).unwrap();
    assert_eq!(compiled.wrinkles.len(), 4);
    let compiled = CompiledMapping {
        wrinkles: Vec::new(),
        sliders: Default::default(),
        ..compiled
    };
    assert_eq!(compiled, auto);
    let report = mapping::check(&file, &avatar);
    assert!(!report.has_errors(), "{report}");
    assert_eq!(report.unused_channels().count(), 0, "{report}");
}

#[test]
fn the_example_file_parses() {
    let text = std::fs::read_to_string(crate::support::repo().join("config/mappings/example.toml"))
        .unwrap();
    MappingFile::parse(&text, "example.toml").unwrap();
}

#[test]
fn check_lists_errors_unused_channels_undriven_targets_and_groups() {
    let a = avatar();
    let text = "version = 1\n[map]\nSmle = \"jawOpen\"\n[head]\nnode = \"Haed\"\n";
    let report = mapping::check_text(text, "m.toml", &a);
    assert!(report.has_errors());
    let shown = report.to_string();
    assert_eq!(shown.lines().count(), 2, "{shown}");
    assert!(
        shown
            .lines()
            .next()
            .unwrap()
            .starts_with("error: m.toml:3:1:"),
        "{shown}"
    );
    assert!(shown.contains("m.toml:5:8:"), "{shown}");

    let text = "version = 1\n[map]\nV_AA = \"jawOpen\"\nV_EE = \"mouthFunnel\"\n[groups.v]\ntargets = [\"V_AA\", \"V_EE\"]\n";
    let report = mapping::check_text(text, "m.toml", &a);
    assert!(!report.has_errors(), "{report}");
    let shown = report.to_string();
    assert!(shown.contains("warning: group `v` can sum to 2"), "{shown}");
    assert!(
        shown.contains("channel `mouthSmileLeft` drives nothing"),
        "{shown}"
    );
    assert!(
        !shown.contains("channel `mouthFunnel` drives nothing"),
        "{shown}"
    );
    assert!(
        shown.contains("target `Smile` (mesh `Face`) is driven by nothing"),
        "{shown}"
    );
    assert!(!shown.contains("target `V_AA`"), "{shown}");
    assert!(shown.lines().all(|l| l.starts_with("error: ")
        || l.starts_with("warning: ")
        || l.starts_with("note: ")));
}

#[test]
fn check_suggests_targets_across_spelling_dialects() {
    let glb = std::fs::read(crate::support::repo().join("models/default_head.glb")).unwrap();
    let head = facewire::avatar::load_slice(&glb, "default head").unwrap();
    let text = "version = 1\n[map]\nMouthSmile_R = \"mouthSmileRight\"\n";
    let shown = mapping::check_text(text, "m.toml", &head).to_string();
    assert!(
        shown.contains("did you mean `mouthSmileRight`?"),
        "the _R dialect is the right side: {shown}"
    );
}

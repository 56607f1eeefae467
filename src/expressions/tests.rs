//! The runtime with simulated time, the mixer it feeds, and the shipped expressions.

use std::time::{Duration, Instant};

use glam::Quat;

use super::*;
use crate::arkit::{FaceFrame, Protocol, COUNT};
use crate::calibrate::at;
use crate::mixer::{Kit, Layer, Mixer, Own, Place, Source, LAYER_TRACKING};

/// A mixer whose only source applies the [`Change`]s it is given to the layers of a set laid
/// out like the test's own, reporting the names it found no layer for.
enum Apply {}

impl Kit for Apply {
    type Config = ();
    type Input = Change;
    type News = Vec<String>;
}

struct Applier(ExpressionSet);

impl Source<Apply> for Applier {
    fn configure(&mut self, _: &(), now: Instant) -> Vec<Layer> {
        self.0.layers(now)
    }

    fn place(&self) -> Place {
        Place::Top
    }

    fn input(&mut self, change: &Change, now: Instant, own: &mut Own<'_, Apply>) {
        let missing = change.apply(&self.0, own, now);
        own.tell(missing);
    }
}

/// The tracking layer with `set`'s layers on top, as the set stands at `now`.
fn mixer_of(set: &ExpressionSet, now: Instant) -> Mixer<Apply> {
    let tracking = Mixer::tracking_only().layers().to_vec();
    let source = Box::new(Applier(set.clone()));
    Mixer::with_sources(tracking, vec![source], &(), now)
}

/// Applies `change` to `mixer`'s expression layers; the names without a layer.
fn apply(mixer: &mut Mixer<Apply>, change: &Change, now: Instant) -> Vec<String> {
    mixer.input(change, now);
    mixer.take_news().concat()
}

fn expression(name: &str, layer: &str, values: &[(Channel, f32)]) -> Expression {
    let mut e = Expression::new(name);
    e.layer = layer.to_string();
    e.values = values.to_vec();
    e.fade_in = Duration::from_millis(400);
    e.fade_out = Duration::from_millis(200);
    e
}

fn weight(set: &ExpressionSet, name: &str, now: Instant) -> f32 {
    set.active(now)
        .into_iter()
        .find(|(n, _)| n == name)
        .map_or(0.0, |(_, w)| w)
}

fn smoothstep(s: f32) -> f32 {
    s * s * (3.0 - 2.0 * s)
}

#[test]
fn a_fade_in_reaches_one_at_its_time_along_a_smoothstep() {
    let t0 = Instant::now();
    let mut set = ExpressionSet::new(vec![expression(
        "smile",
        "face",
        &[(Channel::MouthSmileLeft, 0.8)],
    )]);
    assert!(set.active(t0).is_empty());
    let change = set.trigger("smile", Trigger::On, t0).unwrap();
    assert_eq!(change.fade_in, ["smile"]);
    assert!(change.fade_out.is_empty());
    for s in [0.0, 0.1, 0.25, 0.5, 0.75, 0.9] {
        let w = weight(&set, "smile", at(t0, 0.4 * s));
        assert!((w - smoothstep(s as f32)).abs() < 1e-5, "{s}: {w}");
    }
    assert_eq!(weight(&set, "smile", at(t0, 0.4)), 1.0);
    assert!(set.moving(at(t0, 0.39)));
    assert!(!set.moving(at(t0, 0.4)));
    // The mixer layer carries the same weight, with the expression's times.
    let layer = &set.layers(at(t0, 0.2))[0];
    assert!((layer.weight() - 0.5).abs() < 1e-5);
    assert_eq!(
        layer.fade.times(),
        (Duration::from_millis(400), Duration::from_millis(200))
    );
    // Off: gone after the fade-out time.
    set.trigger("smile", Trigger::Off, at(t0, 1.0)).unwrap();
    assert!((weight(&set, "smile", at(t0, 1.1)) - 0.5).abs() < 1e-5);
    assert!(set.active(at(t0, 1.2)).is_empty());
}

#[test]
fn a_new_expression_replaces_the_one_on_its_layer_and_stacks_on_others() {
    let t0 = Instant::now();
    let mut set = ExpressionSet::new(vec![
        expression("happy", "face", &[(Channel::MouthSmileLeft, 1.0)]),
        expression("angry", "face", &[(Channel::BrowDownLeft, 1.0)]),
        expression("blush", "cheeks", &[(Channel::CheekPuff, 0.3)]),
    ]);
    set.trigger("happy", Trigger::On, t0).unwrap();
    set.trigger("blush", Trigger::On, t0).unwrap();
    let change = set.trigger("angry", Trigger::On, at(t0, 1.0)).unwrap();
    assert_eq!(change.fade_in, ["angry"]);
    assert_eq!(change.fade_out, ["happy"]);
    // Crossfade: happy out over its 0.2 s, angry in over its 0.4 s; blush stays.
    let mid = at(t0, 1.1);
    assert!((weight(&set, "happy", mid) - 0.5).abs() < 1e-5);
    assert!((weight(&set, "angry", mid) - smoothstep(0.25)).abs() < 1e-5);
    assert_eq!(weight(&set, "blush", mid), 1.0);
    let names: Vec<String> = set
        .active(at(t0, 1.4))
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["angry", "blush"]);
    // Switching on what is already on changes nothing.
    assert!(set
        .trigger("angry", Trigger::On, at(t0, 2.0))
        .unwrap()
        .is_empty());
    let all = set.release_all(at(t0, 2.0));
    assert_eq!(all.fade_out, ["angry", "blush"]);
    assert!(set.active(at(t0, 2.4)).is_empty());
}

#[test]
fn hold_is_on_while_pressed_and_toggle_flips() {
    let t0 = Instant::now();
    let mut wink = expression("wink", "wink", &[(Channel::EyeBlinkLeft, 1.0)]);
    wink.mode = ExpressionMode::Hold;
    let smile = expression("smile", "face", &[(Channel::MouthSmileLeft, 1.0)]);
    let mut set = ExpressionSet::new(vec![wink, smile]);
    let on = |set: &ExpressionSet| -> Vec<String> {
        set.active(at(t0, 100.0))
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    };

    let c = set.trigger("wink", Trigger::Press, t0).unwrap();
    assert_eq!(c.fade_in, ["wink"]);
    // Key repeat: a second press while held changes nothing.
    assert!(set.trigger("wink", Trigger::Press, t0).unwrap().is_empty());
    assert_eq!(on(&set), ["wink"]);
    let c = set.trigger("wink", Trigger::Release, t0).unwrap();
    assert_eq!(c.fade_out, ["wink"]);
    assert!(on(&set).is_empty());

    set.trigger("smile", Trigger::Press, t0).unwrap();
    assert!(set
        .trigger("smile", Trigger::Release, t0)
        .unwrap()
        .is_empty());
    assert_eq!(on(&set), ["smile"]);
    set.trigger("smile", Trigger::Press, t0).unwrap();
    assert!(on(&set).is_empty());

    // Toggle flips a hold expression too (the API, chat commands).
    set.trigger("wink", Trigger::Toggle, t0).unwrap();
    assert_eq!(on(&set), ["wink"]);
    set.trigger("wink", Trigger::Toggle, t0).unwrap();
    assert!(on(&set).is_empty());
}

#[test]
fn held_regions_follow_the_fade_and_are_released_after_it() {
    let t0 = Instant::now();
    let mut angry = expression("angry", "face", &[(Channel::BrowDownLeft, 0.9)]);
    angry.holds = RegionMask::of(&[Region::Brows, Region::HeadPose]);
    let mut set = ExpressionSet::new(vec![angry]);
    assert!(set.held_regions(t0).is_empty());
    set.trigger("angry", Trigger::On, t0).unwrap();
    assert!(set.held_regions(t0).is_empty());
    let half = set.held_regions(at(t0, 0.2));
    assert!((half.weight(Region::Brows) - 0.5).abs() < 1e-5);
    assert_eq!(half.weight(Region::MouthJaw), 0.0);
    assert_eq!(
        half.mask(),
        RegionMask::of(&[Region::Brows, Region::HeadPose])
    );
    assert_eq!(set.held_regions(at(t0, 0.4)).weight(Region::Brows), 1.0);
    set.trigger("angry", Trigger::Off, at(t0, 5.0)).unwrap();
    let fading = set.held_regions(at(t0, 5.1));
    assert!((fading.weight(Region::Brows) - 0.5).abs() < 1e-5);
    let released = set.held_regions(at(t0, 5.2));
    assert!(released.is_empty());
    assert_eq!(released.mask(), RegionMask::NONE);
}

fn phone(t: Instant, pairs: &[(Channel, f32)]) -> FaceFrame {
    let mut f = FaceFrame::empty(Protocol::LiveLinkFace, "10.0.0.2:5000".parse().unwrap(), t);
    for &(c, v) in pairs {
        f.set(c, v);
    }
    f
}

#[test]
fn held_regions_move_the_tracked_frame_to_rest() {
    let t0 = Instant::now();
    let mut angry = expression("angry", "face", &[(Channel::BrowDownLeft, 0.9)]);
    angry.holds = RegionMask::of(&[Region::Brows, Region::HeadPose]);
    let mut set = ExpressionSet::new(vec![angry]);
    set.trigger("angry", Trigger::On, t0).unwrap();
    let mut rest = [0.0; COUNT];
    rest[Channel::BrowInnerUp.index()] = 0.2;
    let tracked = |t| {
        let mut f = phone(t, &[(Channel::BrowInnerUp, 0.8), (Channel::JawOpen, 0.6)]);
        f.head = Some(Quat::from_rotation_y(0.5));
        f
    };
    let eyes = [Quat::IDENTITY; 2];
    let mut f = tracked(t0);
    set.held_regions(at(t0, 0.2))
        .hold_frame(&mut f, &rest, Quat::IDENTITY, eyes);
    assert!((f.get(Channel::BrowInnerUp).unwrap() - 0.5).abs() < 1e-5);
    assert_eq!(f.get(Channel::JawOpen), Some(0.6));
    assert!((f.head.unwrap().angle_between(Quat::IDENTITY) - 0.25).abs() < 1e-4);
    let mut f = tracked(t0);
    set.held_regions(at(t0, 1.0))
        .hold_frame(&mut f, &rest, Quat::IDENTITY, eyes);
    assert!((f.get(Channel::BrowInnerUp).unwrap() - 0.2).abs() < 1e-6);
    assert!(f.head.unwrap().angle_between(Quat::IDENTITY) < 1e-3);
    // Nothing held: the frame is untouched.
    let mut f = tracked(t0);
    crate::mixer::Held::default().hold_frame(&mut f, &rest, Quat::IDENTITY, eyes);
    assert_eq!(f.get(Channel::BrowInnerUp), Some(0.8));
}

#[test]
fn changes_drive_the_mixer_layers() {
    let t0 = Instant::now();
    let mut set = ExpressionSet::new(vec![
        expression("happy", "face", &[(Channel::MouthSmileLeft, 0.8)]),
        expression("angry", "face", &[(Channel::BrowDownLeft, 1.0)]),
    ]);
    let mut mixer = mixer_of(&set, t0);
    mixer.set_tracking(&phone(t0, &[(Channel::MouthSmileLeft, 0.1)]));
    let change = set.trigger("happy", Trigger::On, t0).unwrap();
    assert!(apply(&mut mixer, &change, t0).is_empty());
    let out = mixer.mix(at(t0, 0.2));
    let expected = 0.1 + (0.8 - 0.1) * 0.5;
    assert!((out.get(Channel::MouthSmileLeft).unwrap() - expected).abs() < 1e-5);
    let out = mixer.mix(at(t0, 0.4));
    assert!((out.get(Channel::MouthSmileLeft).unwrap() - 0.8).abs() < 1e-6);
    // Replaced: happy fades out, angry in, in the mixer as in the set.
    let change = set.trigger("angry", Trigger::On, at(t0, 1.0)).unwrap();
    apply(&mut mixer, &change, at(t0, 1.0));
    let now = at(t0, 1.5);
    let out = mixer.mix(now);
    assert!((out.get(Channel::MouthSmileLeft).unwrap() - 0.1).abs() < 1e-6);
    assert_eq!(out.get(Channel::BrowDownLeft), Some(1.0));
    let report = mixer.report();
    for (name, w) in [("expression:happy", 0.0), ("expression:angry", 1.0)] {
        let layer = report.layers.iter().find(|l| l.name == name).unwrap();
        assert_eq!(layer.contribution.weight, w, "{name}");
        assert_eq!(weight(&set, &name["expression:".len()..], now), w);
    }
    // A mixer built without the expressions' layers says which are missing.
    let mut bare = mixer_of(&ExpressionSet::new(Vec::new()), t0);
    assert_eq!(apply(&mut bare, &change, t0), ["happy", "angry"]);
}

#[test]
fn nothing_is_nan_or_out_of_range_whatever_the_triggers_and_times() {
    let t0 = Instant::now();
    let mut odd = expression("odd", "face", &[(Channel::JawOpen, 1.0)]);
    odd.fade_in = Duration::ZERO;
    odd.fade_out = Duration::ZERO;
    odd.holds = RegionMask::ALL;
    let mut hold = expression("hold", "face", &[(Channel::EyeBlinkLeft, 1.0)]);
    hold.mode = ExpressionMode::Hold;
    hold.holds = RegionMask::of(&[Region::Eyes]);
    let mut set = ExpressionSet::new(vec![
        odd,
        hold,
        expression("c", "other", &[(Channel::CheekPuff, 0.5)]),
    ]);
    let mut mixer = mixer_of(&set, t0);
    let triggers = [
        Trigger::Press,
        Trigger::Toggle,
        Trigger::Release,
        Trigger::On,
        Trigger::Off,
    ];
    let names = ["odd", "hold", "c"];
    // A made-up sequence, with times that jump back as well as forward.
    let mut seed = 12345u32;
    for step in 0..500 {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
        let name = names[(seed >> 8) as usize % names.len()];
        let trigger = triggers[(seed >> 16) as usize % triggers.len()];
        let t = at(t0, (step as f64 * 0.013) % 3.7);
        let change = set.trigger(name, trigger, t).unwrap();
        apply(&mut mixer, &change, t);
        for (_, w) in set.active(t) {
            assert!(w.is_finite() && (0.0..=1.0).contains(&w));
        }
        let held = set.held_regions(t);
        for r in Region::ALL {
            assert!((0.0..=1.0).contains(&held.weight(r)));
        }
        let mut f = phone(
            t,
            &[(Channel::EyeBlinkLeft, f32::NAN), (Channel::JawOpen, 2.0)],
        );
        f.head = Some(Quat::from_xyzw(0.0, 0.0, 0.0, 0.0));
        held.hold_frame(&mut f, &[0.5; COUNT], Quat::IDENTITY, [Quat::IDENTITY; 2]);
        for c in f
            .present
            .iter()
            .filter(|c| held.weight(Region::of(*c)) > 0.0)
        {
            let v = f.weights[c.index()];
            assert!(v.is_finite() && (0.0..=1.0).contains(&v), "{c:?} {v}");
        }
        mixer.set_tracking(&f);
        let out = mixer.mix(t);
        assert!(out
            .weights
            .iter()
            .all(|v| v.is_finite() && (0.0..=1.0).contains(v)));
        assert!(out.layer_weights.iter().all(|v| (0.0..=1.0).contains(v)));
    }
}

#[test]
fn unknown_names_suggest_the_nearest() {
    let mut set = ExpressionSet::new(vec![expression("angry", "face", &[])]);
    let e = set
        .trigger("angyr", Trigger::Toggle, Instant::now())
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "no expression `angyr`; did you mean `angry`?"
    );
    // Another letter case finds it.
    assert!(!set
        .trigger("ANGRY", Trigger::On, Instant::now())
        .unwrap()
        .is_empty());
    let e = set
        .trigger("zzzzzz", Trigger::On, Instant::now())
        .unwrap_err();
    assert_eq!(e.to_string(), "no expression `zzzzzz`");
}

#[test]
fn hotkeys_list_every_expression_with_its_key() {
    let mut a = expression("smile", "face", &[]);
    a.key = Some(Key::parse("F1").unwrap());
    let b = expression("blush", "cheeks", &[]);
    let set = ExpressionSet::new(vec![a, b.clone(), b]);
    let hotkeys = set.hotkeys();
    assert_eq!(hotkeys.len(), 2, "the duplicate name is dropped");
    assert_eq!(hotkeys[0].id, "expression:smile");
    assert_eq!(hotkeys[0].key.map(|k| k.to_string()).as_deref(), Some("F1"));
    assert_eq!(hotkeys[1].key, None);
    let f1 = Key::parse("f1").unwrap();
    assert_eq!(set.by_key(&f1).map(|e| e.name.as_str()), Some("smile"));
    assert!(set.by_key(&Key::parse("F2").unwrap()).is_none());
}

#[test]
fn a_reload_keeps_the_state_of_expressions_that_stay() {
    let t0 = Instant::now();
    let mut set = ExpressionSet::new(vec![
        expression("smile", "face", &[(Channel::MouthSmileLeft, 1.0)]),
        expression("blush", "cheeks", &[(Channel::CheekPuff, 1.0)]),
    ]);
    set.trigger("smile", Trigger::On, t0).unwrap();
    set.trigger("blush", Trigger::On, t0).unwrap();
    let mut slower = expression("smile", "face", &[(Channel::MouthSmileLeft, 0.5)]);
    slower.fade_in = Duration::from_millis(800);
    let change = set.replace(vec![slower], at(t0, 0.2));
    assert_eq!(change.fade_out, ["blush"]);
    // Halfway in progress at the reload (0.2 of 0.4 s); the rest at the new 0.8 s rate.
    assert!((weight(&set, "smile", at(t0, 0.2)) - 0.5).abs() < 1e-5);
    assert!((weight(&set, "smile", at(t0, 0.6)) - 1.0).abs() < 1e-5);
    assert!(set.get("blush").is_none());
}

#[test]
fn expression_targets_resolve_through_the_layers_mechanism() {
    let glb = include_bytes!("../../models/default_head.glb");
    let avatar = crate::avatar::load_slice(glb, "default head").unwrap();
    let mut smile = expression("smile", "face", &[]);
    smile.targets.insert("mouthSmileLeft".into(), 0.7);
    let set = ExpressionSet::new(vec![smile]);
    let base = crate::config::LayersSection::default();
    let stacked = set.stacked_on(&base);
    assert_eq!(stacked.order, [LAYER_TRACKING, "expression:smile"]);
    let targets = crate::mapping::LayerTargets::compile(&stacked, &avatar).unwrap();
    assert!(!targets.is_empty());
    // The mixer's weight for the expression's layer (index 1) moves the target.
    let mut frame = phone(Instant::now(), &[]);
    frame.layer_weights[1] = 1.0;
    let mut pose = avatar.rest_pose();
    targets.apply(&frame, &mut pose);
    let (mesh, target) = crate::mapping::find_targets(&avatar, "mouthSmileLeft")[0];
    assert!((pose.weights[mesh][target] - 0.7).abs() < 1e-6);
}

#[test]
fn the_shipped_expressions_parse() {
    let root = env!("CARGO_MANIFEST_DIR");
    let path = format!("{root}/config/expressions.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let shipped = ExpressionsSection::parse_file(&text, &path).unwrap();
    let set = ExpressionSet::new(shipped.expressions());
    let names: Vec<&str> = set.expressions().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["angry", "smile", "surprised", "wink"]);
    let angry = set.get("angry").unwrap();
    assert!(angry.holds.contains(Region::Brows));
    assert!(angry.values.len() >= 2);
    assert_eq!(set.get("wink").unwrap().mode, ExpressionMode::Hold);
    let keys: Vec<String> = set
        .hotkeys()
        .iter()
        .filter_map(|h| h.key.map(|k| k.to_string()))
        .collect();
    assert_eq!(keys.len(), 4);
    // facewire.toml names the file beside it, and loads the same expressions wherever facewire
    // runs.
    let config = crate::config::Config::load(std::path::Path::new(&format!(
        "{root}/config/facewire.toml"
    )))
    .unwrap();
    assert_eq!(
        config
            .expressions
            .file
            .as_ref()
            .map(|f| f.get_ref().as_str()),
        Some("expressions.toml")
    );
    assert_eq!(config.expressions.all(), shipped.expressions());
}

#[test]
fn the_documented_example_is_valid() {
    let doc = include_str!("../../docs/expressions.md");
    let start = doc.find("```toml\n").unwrap() + "```toml\n".len();
    let text = &doc[start..start + doc[start..].find("```").unwrap()];
    let section = ExpressionsSection::parse_file(text, "docs/expressions.md").unwrap();
    assert!(section.specs.len() >= 3);
}

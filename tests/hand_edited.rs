//! Hand-edited files under mutation: the configuration, the default head's mapping, a look
//! preset, the expressions and a performer profile, each mutated many times (lines dropped,
//! doubled and swapped, numbers made huge, negative or not numbers, brackets and quotes broken,
//! the text cut short). Every mutant either reads or is refused with a message at its line and
//! column, never a panic; whatever reads holds only finite values, and a mapping drives no
//! weight beyond its largest magnitude. A hot reload that panicked would take the stage down
//! mid-stream.

use crate::support::{fuzz_cases, fuzz_seed, Rng};
use facewire::arkit::{Channel, FaceFrame};
use facewire::avatar::{Avatar, Pose};
use facewire::calibrate::profile::Profile;
use facewire::config::{Config, ExpressionsSection};
use facewire::look::Look;
use facewire::mapping::{self, CompiledMapping, MappingFile, DEFAULT_HEAD_MAPPING};

/// Numbers a slip of the keyboard (or a hostile file) puts where a number was.
const NUMBERS: &[&str] = &[
    "-1",
    "0",
    "-0.0",
    "1e39",
    "-1e39",
    "1e-45",
    "nan",
    "inf",
    "-inf",
    "99999999999",
    "3",
    "-3.5",
    "0x10",
    "1_0",
    "\"1\"",
    "[]",
    "{}",
    "true",
];

/// Characters that break TOML's structure.
const BREAKERS: &[char] = &[
    '[', ']', '{', '}', '=', '"', '\'', ',', '.', '#', '\n', 'x', ' ',
];

/// Whole lines a careless edit adds.
const LINES: &[&str] = &[
    "[map]",
    "[sliders.eye_size]",
    "[wrinkles.forehead]",
    "weights = { browInnerUp = 1e30 }",
    "curve = { points = [[0.0, 0.0]] }",
    "curve = { points = [[1.0, 0.0], [0.0, 1.0]] }",
    "curve = { spline = [[0.0, nan], [1.0, 1.0]] }",
    "jawOpen = { from = \"jawOpen\", gain = inf }",
    "eye_size = 1e38",
    "x = {",
    "[[",
    "version = 99",
];

/// Replaces the `n`-th run of digits (with its sign and fraction) in `text` with `with`.
fn replace_number(text: &str, n: usize, with: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut found = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let mut start = i;
            if start > 0 && bytes[start - 1] == b'-' {
                start -= 1;
            }
            let mut end = i;
            while end < bytes.len() && (bytes[end].is_ascii_digit() || bytes[end] == b'.') {
                end += 1;
            }
            if found == n {
                return Some(format!("{}{with}{}", &text[..start], &text[end..]));
            }
            found += 1;
            i = end;
        } else {
            i += 1;
        }
    }
    None
}

/// One to three random edits of `text`.
fn mutate(text: &str, rng: &mut Rng) -> String {
    let mut out = text.to_string();
    for _ in 0..=rng.below(3) {
        let mut lines: Vec<String> = out.lines().map(str::to_string).collect();
        if lines.is_empty() {
            lines.push(String::new());
        }
        let at = rng.below(lines.len());
        out = match rng.below(7) {
            0 => {
                lines.remove(at);
                lines.join("\n")
            }
            1 => {
                let line = lines[at].clone();
                lines.insert(at, line);
                lines.join("\n")
            }
            2 => {
                let other = rng.below(lines.len());
                lines.swap(at, other);
                lines.join("\n")
            }
            3 => {
                let count = out.bytes().filter(u8::is_ascii_digit).count().max(1);
                let with = NUMBERS[rng.below(NUMBERS.len())];
                replace_number(&out, rng.below(count), with).unwrap_or(out)
            }
            4 => {
                let mut chars: Vec<char> = out.chars().collect();
                if !chars.is_empty() {
                    let i = rng.below(chars.len());
                    chars[i] = BREAKERS[rng.below(BREAKERS.len())];
                }
                chars.into_iter().collect()
            }
            5 => {
                lines.insert(at, LINES[rng.below(LINES.len())].to_string());
                lines.join("\n")
            }
            _ => {
                let cut = rng.below(out.len() + 1);
                let cut = (0..=cut)
                    .rev()
                    .find(|&c| out.is_char_boundary(c))
                    .unwrap_or(0);
                out[..cut].to_string()
            }
        };
    }
    out
}

fn default_head() -> Avatar {
    facewire::avatar::load_slice(facewire::headgen::DEFAULT_HEAD_GLB, "default head")
        .expect("loads")
}

/// A frame with every channel at `value`, the head and eyes turned by it.
fn frame(value: f32) -> FaceFrame {
    let all: Vec<(Channel, f32)> = Channel::ALL.iter().map(|&c| (c, value)).collect();
    let mut f = crate::support::frame(&all);
    let turn = glam::Quat::from_euler(glam::EulerRot::YXZ, value, -value * 0.5, value * 0.3);
    f.head = Some(turn);
    f.left_eye = Some(turn);
    f.right_eye = Some(turn);
    f
}

/// Panics with `what` when a value the renderer would receive is not finite, or a weight is
/// beyond the largest magnitude a mapping may write.
fn assert_finite(pose: &Pose, what: &str) {
    let limit = mapping::file::MAX_MAGNITUDE;
    for (m, weights) in pose.weights.iter().enumerate() {
        if let Some(t) = weights
            .iter()
            .position(|w| !w.is_finite() || w.abs() > limit)
        {
            panic!("{what}: weight {t} of mesh {m} is {}", weights[t]);
        }
    }
    assert!(
        pose.rotations.iter().all(|q| q.is_finite()),
        "{what}: a rotation"
    );
    assert!(
        pose.translations.iter().all(|t| t.is_finite()),
        "{what}: a translation"
    );
    assert!(
        pose.wrinkles.iter().all(|w| (0.0..=1.0).contains(w)),
        "{what}: wrinkles {:?}",
        pose.wrinkles
    );
}

/// Panics unless `message` starts with `file:LINE:COLUMN:`.
fn assert_located(message: &str, file: &str) {
    let rest = message.strip_prefix(file).and_then(|r| r.strip_prefix(':'));
    let located = rest.is_some_and(|r| {
        let mut parts = r.splitn(3, ':');
        let line = parts.next().and_then(|l| l.parse::<u32>().ok());
        let column = parts.next().and_then(|c| c.parse::<u32>().ok());
        line.is_some_and(|l| l > 0) && column.is_some_and(|c| c > 0)
    });
    assert!(located, "not located at a line and column: {message}");
}

/// Runs `check` on `cases` mutants of `seed_text`, naming the mutant that panicked.
fn fuzz(name: &str, seed_text: &str, cases: u64, seed: u64, check: impl Fn(&str) -> bool) {
    let mut rng = Rng(fuzz_seed(seed));
    let mut read = 0;
    for case in 0..cases {
        let text = mutate(seed_text, &mut rng);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&text)));
        match outcome {
            Ok(true) => read += 1,
            Ok(false) => {}
            Err(_) => panic!("{name}: mutant {case} panicked:\n{text}"),
        }
    }
    eprintln!("{name}: {read} of {cases} mutants read, the rest were refused");
    // The mutations are small: a good share must still read, or they test nothing past the
    // TOML parser; and some must be refused, or they test nothing at all.
    assert!(read > 0 && read < cases, "{name}: {read} of {cases} read");
}

#[test]
fn mutated_mappings_read_or_are_refused_and_drive_finite_values() {
    let avatar = default_head();
    fuzz(
        "mapping",
        DEFAULT_HEAD_MAPPING,
        fuzz_cases(400),
        0x6d61_7070,
        |text| {
            let report = mapping::check_text(text, "m.toml", &avatar);
            let file = match MappingFile::parse(text, "m.toml") {
                Ok(file) => file,
                Err(e) => {
                    assert!(report.has_errors(), "parse failed, check found nothing");
                    assert_located(&e.to_string(), "m.toml");
                    return false;
                }
            };
            let compiled = match CompiledMapping::compile(&file, &avatar) {
                Ok(compiled) => compiled,
                Err(e) => {
                    assert_located(&e.to_string(), "m.toml");
                    return false;
                }
            };
            for value in [0.0, 0.5, 1.0] {
                let mut pose = avatar.rest_pose();
                compiled.apply(&frame(value), &mut pose);
                let mut look = Look::default();
                for range in compiled.sliders.ranges() {
                    look.set(&range.name, range.max);
                }
                compiled
                    .sliders
                    .apply(&look.values(&compiled.sliders), &mut pose);
                mapping::wrinkles::apply(&compiled.wrinkles, &mut pose);
                assert_finite(&pose, &format!("all channels at {value}"));
            }
            true
        },
    );
}

#[test]
fn mutated_looks_read_or_are_refused_and_drive_finite_values() {
    let avatar = default_head();
    let file = MappingFile::parse(DEFAULT_HEAD_MAPPING, "default_head.toml").unwrap();
    let compiled = CompiledMapping::compile(&file, &avatar).unwrap();
    let ranges = compiled.sliders.ranges();
    let text = std::fs::read_to_string(crate::support::repo().join("config/looks/round.toml"))
        .expect("config/looks/round.toml");
    fuzz("look", &text, fuzz_cases(1500), 0x6c6f_6f6b, |text| {
        let look = match Look::parse(text, "round.toml", &ranges) {
            Ok(look) => look,
            Err(e) => {
                assert_located(&e.to_string(), "round.toml");
                return false;
            }
        };
        let mut pose = avatar.rest_pose();
        compiled
            .sliders
            .apply(&look.values(&compiled.sliders), &mut pose);
        assert_finite(&pose, "the look");
        true
    });
}

#[test]
fn mutated_configurations_expressions_and_profiles_read_or_are_refused() {
    let text = std::fs::read_to_string(crate::support::repo().join("config/facewire.toml"))
        .expect("config/facewire.toml");
    fuzz(
        "configuration",
        &text,
        fuzz_cases(600),
        0x636f_6e66,
        |text| match Config::parse(text, "facewire.toml") {
            Ok(_) => true,
            Err(e) => {
                assert_located(&e.to_string(), "facewire.toml");
                false
            }
        },
    );

    let text = std::fs::read_to_string(crate::support::repo().join("config/expressions.toml"))
        .expect("config/expressions.toml");
    fuzz("expressions", &text, fuzz_cases(600), 0x6578_7072, |text| {
        match ExpressionsSection::parse_file(text, "expressions.toml") {
            Ok(section) => {
                for spec in section.specs.values() {
                    let values = spec.values.values().chain(spec.targets.values());
                    let fades = [&spec.fade_in, &spec.fade_out];
                    assert!(values.map(|v| *v.get_ref()).all(f32::is_finite), "{spec:?}");
                    assert!(
                        fades
                            .iter()
                            .flat_map(|f| f.as_ref())
                            .all(|f| f.get_ref().is_finite()),
                        "{spec:?}"
                    );
                }
                true
            }
            Err(e) => {
                assert_located(&e.to_string(), "expressions.toml");
                false
            }
        }
    });

    let mut profile = Profile::new("fuzz");
    for (k, &c) in Channel::ALL.iter().enumerate().step_by(5) {
        profile.channels[c.index()] = Some(facewire::calibrate::profile::ChannelProfile {
            neutral: 0.01 * k as f32,
            min: 0.02 * k as f32,
            max: 0.5 + 0.01 * k as f32,
        });
    }
    fuzz(
        "profile",
        &profile.to_toml(),
        fuzz_cases(1500),
        0x7072_6f66,
        |text| {
            let read = match Profile::parse(text, "fuzz.toml") {
                Ok(read) => read,
                Err(e) => {
                    assert_located(&e.to_string(), "fuzz.toml");
                    return false;
                }
            };
            for c in read.channels.iter().flatten() {
                let range = c.range();
                for raw in [-1.0, 0.0, 0.3, 1.0, 2.0, f32::NAN] {
                    let w = range.apply(raw);
                    assert!((0.0..=1.0).contains(&w), "{c:?} turned {raw} into {w}");
                }
            }
            true
        },
    );
}

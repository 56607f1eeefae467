//! Reading a look preset: the TOML walked key by key with every position kept, so that every
//! problem is reported at once and the names can be held against the mapping's sliders later.

use std::ops::Range;

use toml_edit::{ImDocument, Item, TableLike, Value};

use super::{Blush, Colors, Look, LookError, Srgb, COLOR_FORM, DEFAULT_BLUSH_STRENGTH};
use crate::diagnostic::{nearest, Located};
use crate::mapping::file::MAX_MAGNITUDE;
use crate::mapping::SliderRange;

/// The tables a preset has.
const TABLES: [&str; 2] = ["sliders", "colors"];

/// The keys of `[colors]`.
const COLOR_KEYS: [&str; 5] = ["skin", "hair", "iris", "blush", "blush_strength"];

/// A preset file read without the mapping: its look, and where each slider entry is written.
#[derive(Debug, Clone, PartialEq)]
pub struct LookFile {
    /// What it says.
    pub look: Look,
    /// Where it came from, for error messages.
    pub path: String,
    text: String,
    /// Per entry of `look.sliders`: the byte ranges of its key and of its value.
    spans: Vec<(Range<usize>, Range<usize>)>,
}

/// Collects located problems of one file.
struct Problems<'a> {
    path: &'a str,
    text: &'a str,
    found: Vec<Located>,
}

impl Problems<'_> {
    fn push(&mut self, span: Span, message: String, hint: Option<String>) {
        let offset = span.map_or(0, |s| s.start);
        self.found
            .push(Located::at(self.path, self.text, offset, message, hint));
    }
}

/// A slider value: an integer or a finite float of magnitude at most [`MAX_MAGNITUDE`].
fn number(item: &Item) -> Result<f32, String> {
    let v = match item {
        Item::Value(Value::Float(f)) => *f.value(),
        Item::Value(Value::Integer(i)) => *i.value() as f64,
        other => return Err(format!("a number, not {}", article(other.type_name()))),
    };
    if v.is_finite() && v.abs() <= MAX_MAGNITUDE as f64 {
        Ok(v as f32)
    } else {
        Err(format!("a finite number, not {v}"))
    }
}

fn article(type_name: &str) -> String {
    let an = type_name.starts_with(['a', 'e', 'i', 'o', 'u']);
    format!("{} {type_name}", if an { "an" } else { "a" })
}

/// Where something is written, if known.
type Span = Option<Range<usize>>;

/// The key's and the item's spans in `table` for entry `name`.
fn entry<'t>(table: &'t dyn TableLike, name: &str) -> Option<(Span, Span, &'t Item)> {
    let (key, item) = table.get_key_value(name)?;
    let key_span = key.span();
    let item_span = item.span().or_else(|| key_span.clone());
    Some((key_span, item_span, item))
}

impl LookFile {
    /// Parses preset text (`path` labels errors); the error lists every problem.
    pub fn parse(text: &str, path: &str) -> Result<LookFile, LookError> {
        match LookFile::parse_all(text, path) {
            (Some(file), problems) if problems.is_empty() => Ok(file),
            (_, problems) => Err(LookError::Invalid(problems)),
        }
    }

    /// Reads and parses a preset file.
    pub fn load(path: &std::path::Path) -> Result<LookFile, LookError> {
        let text = crate::fsutil::read_text(path).map_err(|cause| LookError::Read {
            path: path.to_path_buf(),
            cause,
        })?;
        LookFile::parse(&text, &path.display().to_string())
    }

    /// Parses preset text, reading past every problem: the file without the entries that have
    /// one (none when the text is not TOML) and every problem, in file order.
    pub fn parse_all(text: &str, path: &str) -> (Option<LookFile>, Vec<Located>) {
        let mut problems = Problems {
            path,
            text,
            found: Vec::new(),
        };
        let doc = match ImDocument::parse(text) {
            Ok(doc) => doc,
            Err(e) => {
                problems.push(e.span(), e.message().trim().to_string(), None);
                return (None, problems.found);
            }
        };
        let mut look = Look::default();
        let mut spans = Vec::new();
        let root = doc.as_table();
        for (name, _) in root.iter() {
            let Some((key_span, item_span, item)) = entry(root, name) else {
                continue;
            };
            let table = item.as_table_like();
            match (name, table) {
                ("sliders", Some(table)) => {
                    for (slider, _) in table.iter() {
                        let Some((key_span, value_span, value)) = entry(table, slider) else {
                            continue;
                        };
                        match number(value) {
                            Ok(v) => {
                                look.sliders.push((slider.to_string(), v));
                                spans.push((
                                    key_span.unwrap_or_default(),
                                    value_span.unwrap_or_default(),
                                ));
                            }
                            Err(what) => problems.push(
                                value_span,
                                format!("sliders.{slider} must be {what}"),
                                Some("for example eye_size = 0.4".into()),
                            ),
                        }
                    }
                }
                ("colors", Some(table)) => look.colors = colors(table, &mut problems),
                ("sliders" | "colors", None) => problems.push(
                    item_span,
                    format!("`{name}` must be a table, [{name}]"),
                    Some(format!(
                        "write [{name}] on a line of its own, its entries below"
                    )),
                ),
                _ => {
                    let message = match nearest(name, TABLES) {
                        Some(best) => format!("unknown key `{name}`; did you mean `{best}`?"),
                        None => format!("unknown key `{name}`"),
                    };
                    problems.push(
                        key_span,
                        message,
                        Some("a look preset has a [sliders] and a [colors] table".into()),
                    );
                }
            }
        }
        let mut found = problems.found;
        found.sort_by_key(|p| (p.line, p.column));
        let file = LookFile {
            look,
            path: path.to_string(),
            text: text.to_string(),
            spans,
        };
        (Some(file), found)
    }

    /// Holds the slider entries against the mapping's sliders: every name must be one of
    /// theirs (the nearest suggested) and every value in its slider's range. The problems, in
    /// file order.
    pub fn check(&self, sliders: &[SliderRange]) -> Vec<Located> {
        let mut problems = Problems {
            path: &self.path,
            text: &self.text,
            found: Vec::new(),
        };
        for ((name, value), (key, at)) in self.look.sliders.iter().zip(&self.spans) {
            let Some(range) = sliders.iter().find(|s| s.name == *name) else {
                let names = sliders.iter().map(|s| s.name.as_str());
                let (message, hint) = match nearest(name, names) {
                    Some(best) => (
                        format!("unknown slider `{name}`; did you mean `{best}`?"),
                        None,
                    ),
                    None if sliders.is_empty() => (
                        format!("unknown slider `{name}`: the mapping has no sliders"),
                        Some("sliders are defined by [sliders.NAME] tables in the mapping".into()),
                    ),
                    None => (
                        format!("unknown slider `{name}`"),
                        Some(format!(
                            "the mapping's sliders are {}",
                            sliders
                                .iter()
                                .map(|s| format!("`{}`", s.name))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )),
                    ),
                };
                problems.push(Some(key.clone()), message, hint);
                continue;
            };
            if !(range.min..=range.max).contains(value) {
                problems.push(
                    Some(at.clone()),
                    format!(
                        "{name} = {value} is out of range; {name} goes from {} to {}",
                        range.min, range.max
                    ),
                    Some(format!("{name} is {} at rest", range.default)),
                );
            }
        }
        problems.found
    }
}

/// `[colors]`, each bad entry reported and left out.
fn colors(table: &dyn TableLike, problems: &mut Problems) -> Colors {
    let mut colors = Colors::default();
    let mut blush_color = None;
    let mut strength: Option<(f32, Span)> = None;
    for (name, _) in table.iter() {
        let Some((key_span, at, item)) = entry(table, name) else {
            continue;
        };
        if name == "blush_strength" {
            match number(item) {
                Ok(v) if (0.0..=1.0).contains(&v) => strength = Some((v, key_span)),
                Ok(v) => problems.push(
                    at,
                    format!("colors.blush_strength = {v} is out of range"),
                    Some("use 0 (none) to 1 (full)".into()),
                ),
                Err(what) => problems.push(
                    at,
                    format!("colors.blush_strength must be {what}"),
                    Some("use 0 (none) to 1 (full)".into()),
                ),
            }
            continue;
        }
        let slot = match name {
            "skin" => &mut colors.skin,
            "hair" => &mut colors.hair,
            "iris" => &mut colors.iris,
            "blush" => &mut blush_color,
            _ => {
                let message = match nearest(name, COLOR_KEYS) {
                    Some(best) => format!("unknown colour `{name}`; did you mean `{best}`?"),
                    None => format!("unknown colour `{name}`"),
                };
                problems.push(
                    key_span,
                    message,
                    Some(format!("colours are {}", COLOR_KEYS.join(", "))),
                );
                continue;
            }
        };
        let parsed = match item {
            Item::Value(Value::String(s)) => s.value().parse::<Srgb>().map_err(|e| e.to_string()),
            other => Err(format!(
                "colors.{name} must be a string, not {}",
                article(other.type_name())
            )),
        };
        match parsed {
            Ok(c) => *slot = Some(c),
            Err(message) => problems.push(
                at,
                format!("colors.{name}: {message}"),
                Some(format!("write {COLOR_FORM}")),
            ),
        }
    }
    colors.blush = blush_color.map(|color| Blush {
        color,
        strength: strength.as_ref().map_or(DEFAULT_BLUSH_STRENGTH, |s| s.0),
    });
    if let (None, Some((_, at))) = (blush_color, strength) {
        problems.push(
            at,
            "colors.blush_strength without colors.blush".into(),
            Some("add blush = \"#rrggbb\", or drop blush_strength".into()),
        );
    }
    colors
}

#[cfg(test)]
mod tests {
    use super::super::tests::ranges;
    use super::*;

    fn problems(text: &str) -> Vec<String> {
        match Look::parse(text, "a.toml", &ranges()) {
            Ok(look) => panic!("no problems found: {look:?}"),
            Err(e) => e.problems().iter().map(Located::one_line).collect(),
        }
    }

    #[test]
    fn the_syntax_reads_without_the_mapping() {
        let text = "[sliders]\neye_size = 0.4\njaw_width = -1\n[colors]\nskin = \"#f1c6a8\"\n\
                    blush = \"#FF8A80\"\n";
        let file = LookFile::parse(text, "a.toml").unwrap();
        assert_eq!(
            file.look.sliders,
            [
                ("eye_size".to_string(), 0.4),
                ("jaw_width".to_string(), -1.0)
            ]
        );
        assert_eq!(file.look.colors.skin, Some(Srgb::hex(0xf1c6a8)));
        assert_eq!(
            file.look.colors.blush,
            Some(Blush {
                color: Srgb::hex(0xff8a80),
                strength: DEFAULT_BLUSH_STRENGTH
            })
        );
        // Checking against sliders it does not know is the second step.
        assert_eq!(file.check(&ranges()), []);
        let unknown = file.check(&ranges()[..1]);
        assert_eq!(unknown.len(), 1);
        assert_eq!((unknown[0].line, unknown[0].column), (3, 1));
        // Inline and dotted forms read the same.
        let inline = LookFile::parse(
            "sliders = { eye_size = 0.4, jaw_width = -1 }\ncolors.skin = \"#f1c6a8\"\n\
             colors.blush = \"#ff8a80\"\n",
            "b.toml",
        )
        .unwrap();
        assert_eq!(inline.look, file.look);
    }

    #[test]
    fn every_problem_is_listed_with_its_line_column_and_the_nearest_name() {
        let text = "[sliders]\n\
                    eye_sise = 0.4\n\
                    jaw_width = 1.5\n\
                    nose_length = \"long\"\n\
                    chin_length = nan\n\
                    [colors]\n\
                    skin = \"f1c6a8\"\n\
                    hiar = \"#2e2420\"\n\
                    iris = 3\n\
                    blush_strength = 2.0\n\
                    [slider]\n\
                    x = 1\n";
        let found = problems(text);
        let expect = [
            (
                "a.toml:2:1:",
                "unknown slider `eye_sise`; did you mean `eye_size`?",
            ),
            (
                "a.toml:3:13:",
                "jaw_width = 1.5 is out of range; jaw_width goes from -1 to 1",
            ),
            (
                "a.toml:4:15:",
                "sliders.nose_length must be a number, not a string",
            ),
            ("a.toml:5:15:", "must be a finite number, not NaN"),
            (
                "a.toml:7:8:",
                "colors.skin: `f1c6a8` is not a colour; write \"#rrggbb\"",
            ),
            ("a.toml:8:1:", "unknown colour `hiar`; did you mean `hair`?"),
            (
                "a.toml:9:8:",
                "colors.iris must be a string, not an integer",
            ),
            ("a.toml:10:18:", "colors.blush_strength = 2 is out of range"),
            (
                "a.toml:11:2:",
                "unknown key `slider`; did you mean `sliders`?",
            ),
        ];
        assert_eq!(found.len(), expect.len(), "{found:#?}");
        for (f, (at, what)) in found.iter().zip(expect) {
            assert!(f.starts_with(at), "{f} (expected {at})");
            assert!(f.contains(what), "{f} (expected {what})");
        }
    }

    #[test]
    fn odd_files_are_errors_not_panics() {
        let one = |text: &str| {
            let found = problems(text);
            assert_eq!(found.len(), 1, "{found:#?}");
            found.into_iter().next().unwrap()
        };
        assert!(one("[sliders\n").starts_with("a.toml:1:"));
        assert!(one("sliders = 3\n").contains("`sliders` must be a table"));
        assert!(one("[colors]\nblush_strength = 0.3\n").contains("without colors.blush"));
        assert!(one("[sliders]\neye_size = 1e9\n").contains("finite number"));
        assert!(one("[sliders]\nzzz = 0.1\n").contains("the mapping's sliders are `eye_size`"));
        let none = Look::parse("[sliders]\neye_size = 0.1\n", "a.toml", &[]).unwrap_err();
        assert!(
            none.to_string().contains("the mapping has no sliders"),
            "{none}"
        );
    }
}

//! `[expressions]`: faces a key, a chat command or the API switches on and off (a smile, angry
//! brows, a wink), written in `facewire.toml` or in a file it names.
//!
//! ```toml
//! [expressions]
//! file = "expressions.toml"   # optional: more [expressions.NAME] tables there
//!
//! [expressions.angry]
//! values = { browDownLeft = 0.9, browDownRight = 0.9 }
//! holds = ["brows"]
//! key = "F3"
//! ```
//!
//! Every name in this file is checked here, with the line and column of the mistake and the
//! nearest valid name; avatar-space `targets` are checked when the avatar loads, as for
//! `[layers.NAME] targets`.
//!
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use toml::Spanned;

use super::{Expression, ExpressionMode, Key};
use crate::arkit::Channel;
use crate::diagnostic::{nearest, Located};
use crate::mixer::{BlendMode, Region};

/// The fade time of an expression that does not set one, in seconds.
pub const DEFAULT_EXPRESSION_FADE: f32 = 0.3;
/// The longest fade an expression may set, in seconds.
pub const MAX_EXPRESSION_FADE: f32 = 60.0;
/// The layer of an expression that does not name one: expressions on it replace each other.
pub const DEFAULT_EXPRESSION_LAYER: &str = "face";
/// The region names `holds` accepts, for suggestions.
const HOLD_NAMES: [&str; 8] = [
    "eyes", "gaze", "brows", "mouth", "cheeks", "tongue", "head", "all",
];

/// One `[expressions.NAME]` table, as written (positions kept for messages).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExpressionSpec {
    /// ARKit channel values by name (any spelling), 0 to 1.
    pub values: BTreeMap<Spanned<String>, Spanned<f32>>,
    /// Values of the avatar's own morph targets (by name) or VRM expressions (`vrm:NAME`),
    /// 0 to 1, applied after the mapping as `[layers.NAME] targets` are.
    pub targets: BTreeMap<Spanned<String>, Spanned<f32>>,
    /// Seconds to fade in; `None`: [`DEFAULT_EXPRESSION_FADE`].
    pub fade_in: Option<Spanned<f32>>,
    /// Seconds to fade out; `None`: [`DEFAULT_EXPRESSION_FADE`].
    pub fade_out: Option<Spanned<f32>>,
    /// `toggle` (each press flips it) or `hold` (on while the key is down).
    pub mode: ExpressionMode,
    /// Its layer: a new expression on the same layer replaces the old one; `None`:
    /// [`DEFAULT_EXPRESSION_LAYER`].
    pub layer: Option<Spanned<String>>,
    /// Face regions the phone's tracking stops driving while it is on.
    pub holds: Vec<Spanned<String>>,
    /// The stage key that triggers it, e.g. `F1` or `Ctrl+3`.
    pub key: Option<Spanned<String>>,
    /// How its values combine with the layers below: override (the default), add or max.
    pub blend: BlendMode,
}

/// `[expressions]`: an optional file of more expressions and the `[expressions.NAME]` tables.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExpressionsSection {
    /// A file of more `[expressions.NAME]` tables, relative to [`ExpressionsSection::folder`].
    pub file: Option<Spanned<String>>,
    /// The folder `file` is relative to: the configuration's (empty: the working directory).
    pub folder: PathBuf,
    /// The tables by name.
    pub specs: BTreeMap<Spanned<String>, ExpressionSpec>,
    /// The expressions of `file`, as [`ExpressionsSection::resolve`] last read them.
    pub from_file: Vec<Expression>,
}

/// Why expressions could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ExpressionsError {
    /// The file `[expressions] file` names could not be read.
    #[error("cannot read the expressions file {path}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        #[source]
        cause: std::io::Error,
    },
    /// A mistake in a file, with its place.
    #[error(transparent)]
    Invalid(#[from] Located),
}

impl<'de> Deserialize<'de> for ExpressionsSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ExpressionsSection, D::Error> {
        struct Tables;

        impl<'de> Visitor<'de> for Tables {
            type Value = ExpressionsSection;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("`file = \"...\"` and [expressions.NAME] tables")
            }

            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ExpressionsSection, A::Error> {
                let mut section = ExpressionsSection::default();
                while let Some(key) = map.next_key::<Spanned<String>>()? {
                    if key.get_ref() == "file" {
                        section.file = Some(map.next_value()?);
                    } else {
                        let spec: ExpressionSpec = map.next_value()?;
                        section.specs.insert(key, spec);
                    }
                }
                Ok(section)
            }
        }

        d.deserialize_map(Tables)
    }
}

/// A located problem at `span` of `text`.
fn at(
    path: &str,
    text: &str,
    span: std::ops::Range<usize>,
    message: String,
    hint: impl Into<String>,
) -> Located {
    Located::at(path, text, span.start, message, Some(hint.into()))
}

impl ExpressionsSection {
    /// Checks every table: channel, region and key names, value ranges, fade times, and that
    /// no key is bound twice. An error names the line and column in `text` (the file at
    /// `path`, whose parse made this section) and what to write instead.
    pub fn validate(&self, text: &str, path: &str) -> Result<(), Located> {
        if let Some(file) = &self.file {
            if file.get_ref().trim().is_empty() {
                return Err(at(
                    path,
                    text,
                    file.span(),
                    "[expressions] file is empty".into(),
                    "name a file of [expressions.NAME] tables, e.g. \
                     file = \"expressions.toml\", or remove the line",
                ));
            }
        }
        let mut keys: Vec<(Key, &str)> = Vec::new();
        for (name, spec) in &self.specs {
            check_spec(name, spec, text, path)?;
            let Some(written) = &spec.key else { continue };
            // check_spec has parsed it.
            let Ok(key) = Key::parse(written.get_ref()) else {
                continue;
            };
            if let Some((_, other)) = keys.iter().find(|(k, _)| *k == key) {
                return Err(at(
                    path,
                    text,
                    written.span(),
                    format!(
                        "key {key} is bound to both `{other}` and `{}`",
                        name.get_ref()
                    ),
                    "give each expression its own key",
                ));
            }
            keys.push((key, name.get_ref()));
        }
        Ok(())
    }

    /// Parses a file of `[expressions.NAME]` tables (the shape they have in `facewire.toml`);
    /// `path` only labels errors.
    pub fn parse_file(text: &str, path: &str) -> Result<ExpressionsSection, Located> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            #[serde(default)]
            expressions: ExpressionsSection,
        }
        let file: File = toml::from_str(text).map_err(|e| Located::from_toml(path, text, &e))?;
        if let Some(nested) = &file.expressions.file {
            return Err(at(
                path,
                text,
                nested.span(),
                "an expressions file cannot name another file".into(),
                "move its tables into this file",
            ));
        }
        file.expressions.validate(text, path)?;
        Ok(file.expressions)
    }

    /// The runtime expressions of this section and, when it names one, of its file (read
    /// now, relative to [`ExpressionsSection::folder`]). A name or key defined in both is an
    /// error located in the file.
    pub fn load(&self) -> Result<Vec<Expression>, ExpressionsError> {
        let mut expressions = self.expressions();
        expressions.extend(self.load_file()?);
        Ok(expressions)
    }

    /// Reads the file this section names (if any) into [`ExpressionsSection::from_file`]. A
    /// file that cannot be read is located at the `file` key of `text` (the file at `path`
    /// this section was parsed from); a mistake in the file is located in the file.
    pub fn resolve(&mut self, text: &str, path: &str) -> Result<(), Located> {
        self.from_file = match self.load_file() {
            Ok(found) => found,
            Err(ExpressionsError::Invalid(located)) => return Err(located),
            Err(ExpressionsError::Read { path: file, cause }) => {
                let span = self.file.as_ref().map_or(0..0, Spanned::span);
                return Err(at(
                    path,
                    text,
                    span,
                    format!("cannot read the expressions file {file}: {cause}"),
                    "the path is relative to the folder of the configuration file; fix it, or \
                     remove the line to use only the [expressions.NAME] tables here",
                ));
            }
        };
        Ok(())
    }

    /// Every expression: this section's tables, then those read from its file by
    /// [`ExpressionsSection::resolve`].
    pub fn all(&self) -> Vec<Expression> {
        let mut all = self.expressions();
        all.extend(self.from_file.iter().cloned());
        all
    }

    /// The file this section names, resolved against [`ExpressionsSection::folder`].
    pub fn file_path(&self) -> Option<PathBuf> {
        let file = self.file.as_ref()?.get_ref().trim();
        Some(self.folder.join(file))
    }

    /// The expressions of the file this section names (none when it names none), read now.
    fn load_file(&self) -> Result<Vec<Expression>, ExpressionsError> {
        let inline = self.expressions();
        let mut expressions = Vec::new();
        let Some(file) = self.file_path() else {
            return Ok(expressions);
        };
        let path = &*file.to_string_lossy();
        let text = crate::fsutil::read_text(&file).map_err(|cause| ExpressionsError::Read {
            path: path.to_string(),
            cause,
        })?;
        let extra = ExpressionsSection::parse_file(&text, path)?;
        for (name, spec) in &extra.specs {
            if self.specs.contains_key(name.get_ref().as_str()) {
                return Err(at(
                    path,
                    &text,
                    name.span(),
                    format!(
                        "expression `{}` is also defined in facewire.toml",
                        name.get_ref()
                    ),
                    "rename one of them, or keep it in one place",
                )
                .into());
            }
            let expression = Expression::from_spec(name.get_ref(), spec);
            if let (Some(key), Some(written)) = (expression.key, &spec.key) {
                if let Some(other) = inline.iter().find(|e| e.key == Some(key)) {
                    return Err(at(
                        path,
                        &text,
                        written.span(),
                        format!(
                            "key {key} is bound to both `{}` and `{}`",
                            other.name, expression.name
                        ),
                        "give each expression its own key",
                    )
                    .into());
                }
            }
            expressions.push(expression);
        }
        tracing::debug!(
            file = path,
            count = extra.specs.len(),
            "expressions read from their file"
        );
        Ok(expressions)
    }

    /// The runtime expressions of the tables in this section (not its file), by name.
    /// Validation has checked them; anything it would reject is left out.
    pub fn expressions(&self) -> Vec<Expression> {
        self.specs
            .iter()
            .map(|(name, spec)| Expression::from_spec(name.get_ref(), spec))
            .collect()
    }
}

/// Checks one table.
fn check_spec(
    name: &Spanned<String>,
    spec: &ExpressionSpec,
    text: &str,
    path: &str,
) -> Result<(), Located> {
    let id = name.get_ref();
    if id.trim().is_empty() {
        return Err(at(
            path,
            text,
            name.span(),
            "an expression with an empty name".into(),
            "name it, e.g. [expressions.smile]",
        ));
    }
    if spec.values.is_empty() && spec.targets.is_empty() && spec.holds.is_empty() {
        return Err(at(
            path,
            text,
            name.span(),
            format!("[expressions.{id}] does nothing"),
            "give it values (ARKit channels), targets (the avatar's morph targets or vrm:NAME) \
             or holds (face regions)",
        ));
    }
    for (channel, value) in &spec.values {
        if Channel::parse(channel.get_ref()).is_none() {
            let hint = match nearest(channel.get_ref(), Channel::ALL.map(Channel::name)) {
                Some(best) => format!("did you mean `{best}`?"),
                None => "use ARKit names such as jawOpen or mouthSmileLeft".into(),
            };
            return Err(at(
                path,
                text,
                channel.span(),
                format!("[expressions.{id}] unknown channel `{}`", channel.get_ref()),
                hint,
            ));
        }
        let v = *value.get_ref();
        if !v.is_finite() || !(0.0..=1.0).contains(&v) {
            return Err(at(
                path,
                text,
                value.span(),
                format!(
                    "[expressions.{id}] {} = {v} is out of range",
                    channel.get_ref()
                ),
                "channel values run from 0 to 1",
            ));
        }
    }
    for (target, value) in &spec.targets {
        if target.get_ref().trim().is_empty() {
            return Err(at(
                path,
                text,
                target.span(),
                format!("[expressions.{id}] names an empty target"),
                "write the avatar's morph target name, or vrm:NAME for a VRM expression",
            ));
        }
        let v = *value.get_ref();
        if !v.is_finite() || !(0.0..=1.0).contains(&v) {
            return Err(at(
                path,
                text,
                value.span(),
                format!(
                    "[expressions.{id}] target {} = {v} is out of range",
                    target.get_ref()
                ),
                "target values run from 0 to 1",
            ));
        }
    }
    for (key, fade) in [("fade_in", &spec.fade_in), ("fade_out", &spec.fade_out)] {
        let Some(fade) = fade else { continue };
        let v = *fade.get_ref();
        let message = if v.is_finite() && v < 0.0 {
            format!("[expressions.{id}] {key} = {v} is negative")
        } else if !v.is_finite() || v > MAX_EXPRESSION_FADE {
            format!("[expressions.{id}] {key} = {v} is out of range")
        } else {
            continue;
        };
        return Err(at(
            path,
            text,
            fade.span(),
            message,
            format!("use 0 to {MAX_EXPRESSION_FADE} seconds, e.g. {key} = 0.3"),
        ));
    }
    if let Some(layer) = &spec.layer {
        if layer.get_ref().trim().is_empty() {
            return Err(at(
                path,
                text,
                layer.span(),
                format!("[expressions.{id}] layer is empty"),
                format!(
                    "name a layer (expressions on the same one replace each other), or remove \
                     the line for \"{DEFAULT_EXPRESSION_LAYER}\""
                ),
            ));
        }
    }
    for region in &spec.holds {
        let r = region.get_ref();
        if r.trim().eq_ignore_ascii_case("all") || Region::parse(r).is_some() {
            continue;
        }
        let hint = match nearest(r, HOLD_NAMES) {
            Some(best) => format!("did you mean `{best}`?"),
            None => format!("use {}", crate::mixer::REGION_NAMES),
        };
        return Err(at(
            path,
            text,
            region.span(),
            format!("[expressions.{id}] holds an unknown face region `{r}`"),
            hint,
        ));
    }
    if let Some(key) = &spec.key {
        if let Err(e) = Key::parse(key.get_ref()) {
            return Err(at(
                path,
                text,
                key.span(),
                format!("[expressions.{id}] {e}"),
                e.hint(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::line_column;

    fn parse(text: &str) -> Result<ExpressionsSection, Located> {
        ExpressionsSection::parse_file(text, "x.toml")
    }

    #[test]
    fn a_table_parses_with_every_field() {
        let text = "[expressions.angry]\nvalues = { BrowDown_L = 0.9, browDownRight = 0.9 }\n\
                    targets = { \"vrm:angry\" = 0.5 }\nfade_in = 0.2\nfade_out = 0.5\n\
                    mode = \"hold\"\nlayer = \"mood\"\nholds = [\"brows\", \"Cheeks\"]\n\
                    key = \"ctrl+f3\"\nblend = \"max\"\n";
        let section = parse(text).unwrap();
        let spec = section.specs.get("angry").unwrap();
        assert_eq!(spec.mode, ExpressionMode::Hold);
        assert_eq!(spec.blend, BlendMode::Max);
        let (line, column) = line_column(text, spec.key.as_ref().unwrap().span().start);
        assert_eq!((line, column), (9, 7));
        let e = &section.expressions()[0];
        assert_eq!(e.name, "angry");
        assert_eq!(e.key.unwrap().to_string(), "Ctrl+F3");
        assert_eq!(e.layer, "mood");
        assert_eq!(e.fade_in.as_secs_f32(), 0.2);
        assert_eq!(e.values[0], (Channel::BrowDownLeft, 0.9));
    }

    /// The error for `text`, as `line:column: message (hint: ...)`.
    fn error(text: &str) -> String {
        let e = parse(text).unwrap_err();
        format!(
            "{}:{}: {} (hint: {})",
            e.line,
            e.column,
            e.message,
            e.hint.unwrap_or_default()
        )
    }

    #[test]
    fn mistakes_are_located_with_a_suggestion() {
        let cases = [
            (
                "[expressions.a]\nvalues = { jawOpn = 0.5 }\n",
                "2:12: [expressions.a] unknown channel `jawOpn` (hint: did you mean `jawOpen`?)",
            ),
            (
                "[expressions.a]\nvalues = { jawOpen = 0.5 }\nholds = [\"mouth\", \"brow5\"]\n",
                "3:19: [expressions.a] holds an unknown face region `brow5` (hint: did you mean \
                 `brows`?)",
            ),
            (
                "[expressions.a]\nvalues = { jawOpen = 0.5 }\nkey = \"F13x\"\n",
                "3:7: [expressions.a] unknown key `F13x` (hint: did you mean `F13`?)",
            ),
            (
                "[expressions.a]\nvalues = { jawOpen = 0.5 }\n  fade_in = -0.5\n",
                "3:13: [expressions.a] fade_in = -0.5 is negative (hint: use 0 to 60 seconds, \
                 e.g. fade_in = 0.3)",
            ),
            (
                "[expressions.a]\nvalues = { jawOpen = 1.5 }\n",
                "2:22: [expressions.a] jawOpen = 1.5 is out of range (hint: channel values run \
                 from 0 to 1)",
            ),
            (
                "[expressions.a]\nvalues = { jawOpen = 1 }\nkey = \"F1\"\n\
                 [expressions.b]\nvalues = { jawOpen = 1 }\nkey = \"f1\"\n",
                "6:7: key F1 is bound to both `a` and `b` (hint: give each expression its own \
                 key)",
            ),
            (
                "[expressions.quiet]\nfade_in = 1\n",
                "1:14: [expressions.quiet] does nothing",
            ),
            (
                "[expressions.a]\nvalues = { jawOpen = 1 }\nlayer = \"\"\n",
                "3:9: [expressions.a] layer is empty",
            ),
        ];
        for (text, expected) in cases {
            let e = error(text);
            assert!(
                e.starts_with(expected),
                "{text}\n=> {e}\nexpected {expected}"
            );
        }
    }

    #[test]
    fn serde_mistakes_are_located_too() {
        let e = error("[expressions.a]\nvalues = { jawOpen = 1 }\nmood = \"hold\"\n");
        assert!(e.starts_with("3:1: unknown field `mood`"), "{e}");
        assert!(e.contains("did you mean `mode`?"), "{e}");
        let e = error("[expressions.a]\nvalues = { jawOpen = 1 }\nmode = \"press\"\n");
        assert!(e.starts_with("3:8: unknown variant `press`"), "{e}");
        let e = error("[expressions]\nfile = \"more.toml\"\n");
        assert!(e.contains("cannot name another file"), "{e}");
    }

    #[test]
    fn a_named_file_adds_its_tables() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("more.toml");
        std::fs::write(
            &file,
            "[expressions.blush]\nvalues = { cheekPuff = 0.3 }\nkey = \"F2\"\n",
        )
        .unwrap();
        let main = format!(
            "[expressions]\nfile = {:?}\n\n[expressions.smile]\nvalues = {{ mouthSmileLeft = 1 }}\n\
             key = \"F1\"\n",
            file.display().to_string()
        );
        let section = parse(&main).unwrap_err();
        // A file may not name a file; facewire.toml's section may.
        assert!(section.message.contains("another file"));
        #[derive(Deserialize)]
        struct Config {
            expressions: ExpressionsSection,
        }
        let config: Config = toml::from_str(&main).unwrap();
        config.expressions.validate(&main, "facewire.toml").unwrap();
        let all = config.expressions.load().unwrap();
        let names: Vec<&str> = all.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["smile", "blush"]);

        // The same key in both places: located in the file.
        std::fs::write(
            &file,
            "[expressions.blush]\nvalues = { cheekPuff = 0.3 }\nkey = \"F1\"\n",
        )
        .unwrap();
        let e = config.expressions.load().unwrap_err().to_string();
        assert!(
            e.contains("more.toml:3:7: key F1 is bound to both `smile` and `blush`"),
            "{e}"
        );
        std::fs::write(&file, "[expressions.smile]\nvalues = { cheekPuff = 0.3 }\n").unwrap();
        let e = config.expressions.load().unwrap_err().to_string();
        assert!(
            e.contains("more.toml:1:14: expression `smile` is also defined"),
            "{e}"
        );
        std::fs::remove_file(&file).unwrap();
        let e = config.expressions.load().unwrap_err();
        assert!(matches!(e, ExpressionsError::Read { .. }), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn a_file_that_never_ends_is_refused_at_its_line() {
        // `/dev/zero` by mistake: refused after a bounded read, located at the `file` line.
        let main = "[expressions]\nfile = \"/dev/zero\"\n";
        #[derive(Deserialize)]
        struct Config {
            expressions: ExpressionsSection,
        }
        let mut config: Config = toml::from_str(main).unwrap();
        let e = config
            .expressions
            .resolve(main, "facewire.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("facewire.toml:2:8: cannot read the expressions file /dev/zero")
                && e.contains("larger than 8 MiB"),
            "{e}"
        );
    }
}

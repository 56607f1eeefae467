//! Errors located in a text file (configuration, mapping, profile): `file:line:column`, and
//! "did you mean" suggestions for misspelt names. Depends on nothing of facewire's.

use std::fmt;

/// A problem at a place in a text file (configuration, mapping, profile): printed as
/// `file:line:column: message`, with a suggested fix on the next line when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The file.
    pub path: String,
    /// 1-based line of the problem.
    pub line: usize,
    /// 1-based column of the problem.
    pub column: usize,
    /// What is wrong.
    pub message: String,
    /// A suggested fix, when there is one.
    pub hint: Option<String>,
}

impl Located {
    /// A problem at byte `offset` of `text`, the contents of `path`.
    pub fn at(
        path: &str,
        text: &str,
        offset: usize,
        message: String,
        hint: Option<String>,
    ) -> Located {
        let (line, column) = line_column(text, offset);
        Located {
            path: path.to_string(),
            line,
            column,
            message,
            hint,
        }
    }

    /// A TOML parse or type error, with a "did you mean" for unknown keys.
    pub fn from_toml(path: &str, text: &str, error: &toml::de::Error) -> Located {
        let mut message = error.message().trim().to_string();
        let mut hint = suggest_for(&message);
        let offset = error.span().map_or(0, |s| s.start);
        // A control character (a NUL, an escape sequence) is named, escaped, since the parser
        // may say nothing of it and printing it raw would reach the terminal.
        let control = text
            .get(offset..)
            .and_then(|t| t.chars().next())
            .filter(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'));
        if let Some(c) = control {
            let named = format!(
                "a control character ({}) is not allowed in TOML, even in a comment",
                c.escape_unicode()
            );
            message = if message.is_empty() {
                named
            } else {
                format!("{message}: {named}")
            };
            hint = Some(format!(
                "delete it; inside a string write it as \\u{:04X}",
                u32::from(c)
            ));
        }
        if message.is_empty() {
            message = "this cannot be read as TOML".to_owned();
        }
        Located::at(path, text, offset, message, hint)
    }

    /// The problem on one line, the hint in parentheses (for reports and logs).
    pub fn one_line(&self) -> String {
        let Located {
            path,
            line,
            column,
            message,
            hint,
        } = self;
        match hint {
            Some(h) => format!("{path}:{line}:{column}: {message} (hint: {h})"),
            None => format!("{path}:{line}:{column}: {message}"),
        }
    }
}

impl fmt::Display for Located {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.path, self.line, self.column, self.message
        )?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Located {}

/// 1-based line and column of byte `offset` in `text`.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map_or(before.chars().count(), |nl| {
        before[nl + 1..].chars().count()
    }) + 1;
    (line, column)
}

/// Where `key = ` first appears at the start of a line, for validation errors after parsing.
pub fn locate_key(text: &str, key: &str) -> (usize, usize) {
    line_column(text, key_offset(text, key).unwrap_or(0))
}

/// Byte offset of the first line that sets `key` (`key = ...`), if any.
pub fn key_offset(text: &str, key: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed
            .strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with('='))
        {
            return Some(offset + (line.len() - trimmed.len()));
        }
        offset += line.len();
    }
    None
}

/// The most characters of bad input a message quotes.
pub const EXCERPT_CHARS: usize = 40;

/// Bad input as a message quotes it: control characters escaped (`\u{1b}`, `\0`, `\t`), so
/// nothing reaches the terminal as a command, and at most [`EXCERPT_CHARS`] characters, the
/// rest said as a length (`... (5242880 bytes in all)`).
pub fn excerpt(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == EXCERPT_CHARS {
            out.push_str(&format!("... ({} bytes in all)", text.len()));
            break;
        }
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

/// Edit distance between two short strings.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(row[j]).min(row[j + 1])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

/// A name in the spelling the dialects of face rigs share: lower case, without separators
/// (`_`, `-`, `.`, spaces), and a trailing side letter (`_L`, `.R`, `-l`) spelt out as `left` or
/// `right`. `MouthSmile_R`, `mouth_smile_right` and `mouthSmileRight` all become
/// `mouthsmileright`.
pub fn canonical_name(name: &str) -> String {
    let lower = name.trim().to_ascii_lowercase();
    let separator = |c: char| matches!(c, '_' | '-' | '.' | ' ');
    let mut chars: Vec<char> = lower.chars().collect();
    let side = match chars.as_slice() {
        [.., sep, 'l'] if separator(*sep) => Some("left"),
        [.., sep, 'r'] if separator(*sep) => Some("right"),
        _ => None,
    };
    if side.is_some() {
        chars.truncate(chars.len() - 2);
    }
    let mut out: String = chars.into_iter().filter(|c| !separator(*c)).collect();
    out.push_str(side.unwrap_or(""));
    out
}

/// The candidate nearest to `word`, if it is close enough to be a plausible typo. Names are
/// compared in their [`canonical_name`] spelling first, so a name written in another rig's
/// dialect (`MouthSmile_R`) finds its match (`mouthSmileRight`) before any edit distance counts.
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let wanted = canonical_name(word);
    candidates
        .into_iter()
        .map(|c| {
            let canonical = canonical_name(c);
            (edit_distance(&wanted, &canonical), canonical.len(), c)
        })
        .filter(|(d, len, _)| *d <= (len / 3).max(2))
        .min_by_key(|(d, _, _)| *d)
        .map(|(_, _, c)| c)
}

/// An error with every cause after it, `error: cause: cause`, for log lines and messages that
/// show one string (as anyhow's `{:#}` does for the command line).
pub fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(cause) = next {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        next = cause.source();
    }
    text
}

/// A "did you mean" for serde's `unknown field `x`, expected one of `a`, `b`` messages.
pub fn suggest_for(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let (field, rest) = rest.split_once('`')?;
    let expected: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
    match nearest(field, expected.iter().copied()) {
        Some(best) => Some(format!("did you mean `{best}`?")),
        None => Some(format!("valid keys here: {}", expected.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_in_a_toml_file_are_named_escaped() {
        for (text, column) in [
            ("[window]\n# a comment \0 with a NUL\n", 13),
            ("[window]\ntitle = \"a\u{1b}[31mred\"\n", 11),
        ] {
            let error = toml::from_str::<toml::Table>(text).unwrap_err();
            let located = Located::from_toml("f.toml", text, &error);
            let shown = located.to_string();
            assert_eq!((located.line, located.column), (2, column), "{shown}");
            assert!(shown.contains("a control character (\\u{"), "{shown}");
            assert!(
                !shown.contains('\0') && !shown.contains('\u{1b}'),
                "{shown:?}"
            );
            assert!(shown.contains("hint: delete it"), "{shown}");
        }
    }

    #[test]
    fn an_excerpt_escapes_control_characters_and_stays_short() {
        assert_eq!(excerpt("0.5"), "0.5");
        assert_eq!(excerpt("a\u{1b}[2Jb\0\t"), "a\\u{1b}[2Jb\\0\\t");
        let long = "x".repeat(5 << 20);
        let quoted = excerpt(&long);
        assert!(quoted.len() < 80, "{}", quoted.len());
        assert!(quoted.ends_with("... (5242880 bytes in all)"), "{quoted}");
    }

    #[test]
    fn suggestions_understand_the_spelling_dialects() {
        let names = [
            "mouthSmileLeft",
            "mouthSmileRight",
            "eyeBlinkLeft",
            "jawOpen",
        ];
        assert_eq!(nearest("MouthSmile_R", names), Some("mouthSmileRight"));
        assert_eq!(nearest("mouth_smile_l", names), Some("mouthSmileLeft"));
        assert_eq!(nearest("EyeBlink.L", names), Some("eyeBlinkLeft"));
        assert_eq!(nearest("JAW-OPEN", names), Some("jawOpen"));
        assert_eq!(canonical_name("Brow_Down_L"), "browdownleft");
        assert_eq!(canonical_name("jaw"), "jaw");
    }

    #[test]
    fn causes_follow_the_error_once_each() {
        #[derive(Debug)]
        struct Outer(std::io::Error);
        impl fmt::Display for Outer {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("cannot open the window")
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let e = Outer(std::io::Error::other("no display"));
        assert_eq!(with_causes(&e), "cannot open the window: no display");
    }

    #[test]
    fn nearest_finds_typos_only() {
        assert_eq!(nearest("widht", ["width", "height"]), Some("width"));
        assert_eq!(nearest("zzzzzz", ["width", "height"]), None);
    }

    #[test]
    fn lines_and_columns_count_characters() {
        let text = "a = 1\nbé = 2\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, text.find('=').unwrap()), (1, 3));
        let second = text.rfind('=').unwrap();
        assert_eq!(line_column(text, second), (2, 4));
        assert_eq!(key_offset(text, "bé"), Some(6));
        assert_eq!(locate_key(text, "missing"), (1, 1));
    }

    #[test]
    fn unknown_fields_get_a_suggestion() {
        let hint = suggest_for("unknown field `widht`, expected one of `width`, `height`");
        assert_eq!(hint.as_deref(), Some("did you mean `width`?"));
        let hint = suggest_for("unknown field `zzzz`, expected `width` or `height`").unwrap();
        assert!(hint.starts_with("valid keys here: width"), "{hint}");
        let located = Located::at("f.toml", "x\ny = 1\n", 2, "bad".into(), Some("fix".into()));
        assert_eq!(located.to_string(), "f.toml:2:1: bad\n  hint: fix");
        assert_eq!(located.one_line(), "f.toml:2:1: bad (hint: fix)");
    }
}

//! The mapping file (TOML): raw serde types, parsed once with positions kept for error messages.

use serde::Deserialize;
use toml::Spanned;

use crate::config::{key_offset, line_column, suggest_for};

/// The mapping format version this build reads.
pub const VERSION: u32 = 1;

/// Errors reading or compiling a mapping file. Every message names the file, line and column.
#[derive(Debug, thiserror::Error)]
pub enum MappingError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file is not valid TOML, has an unknown key, a bad value, or names something the
    /// avatar does not have.
    #[error("{path}:{line}:{column}: {message}{}", hint.as_deref().map(|h| format!("\n  hint: {h}")).unwrap_or_default())]
    Invalid {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
        /// A suggested fix, when there is one.
        hint: Option<String>,
    },
}

/// `[targets]`: which morph targets follow which channels.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TargetsSection {
    /// Every target named after an ARKit channel (any spelling, behind any `Prefix.`) follows
    /// that channel.
    pub auto: bool,
}

impl Default for TargetsSection {
    fn default() -> Self {
        TargetsSection { auto: true }
    }
}

/// `[head]`: the node that turns with the performer's head.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HeadSection {
    /// The node's name (empty: the head does not turn).
    pub node: Spanned<String>,
}

impl Default for HeadSection {
    fn default() -> Self {
        HeadSection {
            node: Spanned::new(0..0, "Head".into()),
        }
    }
}

/// `[eyes]`: the nodes that turn the eyeballs, and how far the eyeLook channels turn them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EyesSection {
    /// The avatar's left eye node (the performer's left).
    pub left: Spanned<String>,
    /// The avatar's right eye node.
    pub right: Spanned<String>,
    /// Degrees an eye turns sideways at eyeLookIn or eyeLookOut = 1.
    pub horizontal_degrees: f32,
    /// Degrees an eye turns up at eyeLookUp = 1.
    pub up_degrees: f32,
    /// Degrees an eye turns down at eyeLookDown = 1.
    pub down_degrees: f32,
}

impl Default for EyesSection {
    fn default() -> Self {
        EyesSection {
            left: Spanned::new(0..0, "LeftEye".into()),
            right: Spanned::new(0..0, "RightEye".into()),
            horizontal_degrees: 25.0,
            up_degrees: 20.0,
            down_degrees: 25.0,
        }
    }
}

/// A whole mapping file, as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MappingFile {
    /// Format version; must be [`VERSION`].
    pub version: Spanned<u32>,
    /// `[targets]`.
    #[serde(default)]
    pub targets: TargetsSection,
    /// `[head]`.
    #[serde(default)]
    pub head: HeadSection,
    /// `[eyes]`.
    #[serde(default)]
    pub eyes: EyesSection,
    /// Where it came from, for error messages.
    #[serde(skip)]
    pub path: String,
    /// Its text, for locating errors found after parsing.
    #[serde(skip)]
    pub text: String,
}

impl Default for MappingFile {
    fn default() -> Self {
        MappingFile {
            version: Spanned::new(0..0, VERSION),
            targets: TargetsSection::default(),
            head: HeadSection::default(),
            eyes: EyesSection::default(),
            path: "(automatic mapping)".into(),
            text: String::new(),
        }
    }
}

impl MappingFile {
    /// Parses mapping TOML; `path` labels errors.
    pub fn parse(text: &str, path: &str) -> Result<MappingFile, MappingError> {
        let mut file: MappingFile = toml::from_str(text).map_err(|e| {
            let message = e.message().trim().to_string();
            let hint = suggest_for(&message);
            let (line, column) = e
                .span()
                .map(|s| line_column(text, s.start))
                .unwrap_or((1, 1));
            MappingError::Invalid {
                path: path.into(),
                line,
                column,
                message,
                hint,
            }
        })?;
        file.path = path.into();
        file.text = text.into();
        if *file.version.get_ref() != VERSION {
            return Err(file.error_at(
                file.version.span(),
                format!(
                    "mapping version {} is not supported",
                    file.version.get_ref()
                ),
                Some(format!("this facewire reads `version = {VERSION}`")),
            ));
        }
        let eyes = &file.eyes;
        for (value, what) in [
            (eyes.horizontal_degrees, "horizontal_degrees"),
            (eyes.up_degrees, "up_degrees"),
            (eyes.down_degrees, "down_degrees"),
        ] {
            if !(0.0..=90.0).contains(&value) {
                let at = key_offset(text, what).unwrap_or(0);
                return Err(file.error_at(
                    at..at,
                    format!("eyes.{what} = {value} is out of range"),
                    Some("use degrees between 0 and 90; 20 to 30 suits most avatars".into()),
                ));
            }
        }
        Ok(file)
    }

    /// Reads and parses a mapping file.
    pub fn load(path: &std::path::Path) -> Result<MappingFile, MappingError> {
        let text = std::fs::read_to_string(path).map_err(|source| MappingError::Read {
            path: path.display().to_string(),
            source,
        })?;
        MappingFile::parse(&text, &path.display().to_string())
    }

    /// An error located at byte range `span` of this file.
    pub fn error_at(
        &self,
        span: std::ops::Range<usize>,
        message: String,
        hint: Option<String>,
    ) -> MappingError {
        let (line, column) = line_column(&self.text, span.start);
        MappingError::Invalid {
            path: self.path.clone(),
            line,
            column,
            message,
            hint,
        }
    }
}

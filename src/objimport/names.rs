//! Target names from OBJ file names: which ARKit shape a file holds, whether it is one half of a
//! shape ARKit has no sides for, and how the imported target is spelled.

use crate::arkit::Channel;

/// Which side of the face a half shape covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Side {
    /// The avatar's left (`_L`, `Left`).
    Left,
    /// The avatar's right (`_R`, `Right`).
    Right,
}

/// What a file name says the file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A whole ARKit shape, in any spelling dialect (`eyeBlink_L`, `EyeBlinkLeft`, `jawOpen`).
    Channel(Channel),
    /// One side of an ARKit shape that has no sides (`browInnerUp_L`, `cheekPuffRight`).
    Half(Channel, Side),
    /// Not an ARKit shape: imported under its own name.
    Other,
}

/// How imported ARKit targets are spelled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NameDialect {
    /// camelCase, ARKit's documented names (`eyeBlinkLeft`).
    #[default]
    Camel,
    /// PascalCase (`EyeBlinkLeft`), as Unreal and perfect-sync VRM avatars spell them.
    Pascal,
    /// ARKit's raw values (`eyeBlink_L`, `jawLeft`), as many sculpting templates name files.
    Raw,
}

impl NameDialect {
    /// Every dialect, with the word that selects it.
    pub const ALL: [(&'static str, NameDialect); 3] = [
        ("camel", NameDialect::Camel),
        ("pascal", NameDialect::Pascal),
        ("raw", NameDialect::Raw),
    ];

    /// The name of `channel` in this dialect.
    pub fn name(self, channel: Channel) -> String {
        match self {
            NameDialect::Camel => channel.name().to_owned(),
            NameDialect::Pascal => channel.pascal_name(),
            NameDialect::Raw => raw_name(channel),
        }
    }
}

impl std::str::FromStr for NameDialect {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        NameDialect::ALL
            .iter()
            .find(|(word, _)| word.eq_ignore_ascii_case(s.trim()))
            .map(|(_, dialect)| *dialect)
            .ok_or_else(|| {
                format!("`{s}` is not a name dialect; write camel (eyeBlinkLeft), pascal (EyeBlinkLeft) or raw (eyeBlink_L)")
            })
    }
}

impl std::fmt::Display for NameDialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let word = NameDialect::ALL
            .iter()
            .find(|(_, d)| d == self)
            .map_or("camel", |(word, _)| word);
        f.write_str(word)
    }
}

/// ARKit's raw value for `channel`: sided shapes end in `_L`/`_R`, except the directional
/// `jawLeft`, `jawRight`, `mouthLeft` and `mouthRight`, which keep their words.
fn raw_name(channel: Channel) -> String {
    use Channel::*;
    let name = channel.name();
    if matches!(channel, JawLeft | JawRight | MouthLeft | MouthRight) {
        return name.to_owned();
    }
    if let Some(stem) = name.strip_suffix("Left") {
        format!("{stem}_L")
    } else if let Some(stem) = name.strip_suffix("Right") {
        format!("{stem}_R")
    } else {
        name.to_owned()
    }
}

/// Whether ARKit gives `channel` separate left and right shapes (`jawLeft` and `mouthRight`
/// count: they are sided by direction).
fn is_sided(channel: Channel) -> bool {
    let name = channel.name();
    name.ends_with("Left") || name.ends_with("Right")
}

/// Splits a side suffix off `name`: `_L`, `.L`, `-L`, ` L`, `Left`, `_Left`, `_left` and the
/// same for the right, in any letter case. A bare `L` needs a separator (`browInnerUpL` is
/// taken as a name of its own).
fn split_side(name: &str) -> Option<(&str, Side)> {
    let lower = name.to_ascii_lowercase();
    for (word, side) in [("left", Side::Left), ("right", Side::Right)] {
        if lower.len() > word.len() && lower.ends_with(word) {
            let stem = name[..name.len() - word.len()].trim_end_matches(['_', '.', '-', ' ']);
            if !stem.is_empty() {
                return Some((stem, side));
            }
        }
    }
    for (letter, side) in [('l', Side::Left), ('r', Side::Right)] {
        let mut chars = lower.chars().rev();
        if chars.next() == Some(letter) && matches!(chars.next(), Some('_' | '.' | '-' | ' ')) {
            let stem = name[..name.len() - 2].trim_end_matches(['_', '.', '-', ' ']);
            if !stem.is_empty() {
                return Some((stem, side));
            }
        }
    }
    None
}

/// Classifies a file stem (the file name without `.obj`).
pub fn classify(stem: &str) -> Shape {
    if let Some(channel) = Channel::parse(stem) {
        return Shape::Channel(channel);
    }
    if let Some((base, side)) = split_side(stem) {
        if let Some(channel) = Channel::parse(base).filter(|c| !is_sided(*c)) {
            return Shape::Half(channel, side);
        }
    }
    Shape::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialects_and_sides_map_to_channels() {
        for stem in [
            "eyeBlink_L",
            "eyeBlinkLeft",
            "EyeBlinkLeft",
            "eyeblink_l",
            "eyeBlink.L",
        ] {
            assert_eq!(
                classify(stem),
                Shape::Channel(Channel::EyeBlinkLeft),
                "{stem}"
            );
        }
        assert_eq!(classify("jawOpen"), Shape::Channel(Channel::JawOpen));
        assert_eq!(classify("mouthLeft"), Shape::Channel(Channel::MouthLeft));
        assert_eq!(
            classify("noseSneer_R"),
            Shape::Channel(Channel::NoseSneerRight)
        );
    }

    #[test]
    fn halves_of_sideless_shapes_are_recognised() {
        let brow = Channel::BrowInnerUp;
        assert_eq!(classify("browInnerUp_L"), Shape::Half(brow, Side::Left));
        assert_eq!(classify("browInnerUp_R"), Shape::Half(brow, Side::Right));
        assert_eq!(classify("BrowInnerUpLeft"), Shape::Half(brow, Side::Left));
        assert_eq!(
            classify("browInnerUp_right"),
            Shape::Half(brow, Side::Right)
        );
        assert_eq!(
            classify("cheekPuff-L"),
            Shape::Half(Channel::CheekPuff, Side::Left)
        );
        assert_eq!(
            classify("jawOpen.R"),
            Shape::Half(Channel::JawOpen, Side::Right)
        );
    }

    #[test]
    fn other_names_stay_other() {
        for stem in [
            "cheekRaiser_L",
            "PupilDilate_R",
            "browInnerUpL",
            "_L",
            "Left",
            "neutral",
            "jawLeft_L",
        ] {
            assert_eq!(classify(stem), Shape::Other, "{stem}");
        }
    }

    #[test]
    fn dialect_spellings() {
        let raw = |c| NameDialect::Raw.name(c);
        assert_eq!(raw(Channel::EyeBlinkLeft), "eyeBlink_L");
        assert_eq!(raw(Channel::MouthSmileRight), "mouthSmile_R");
        assert_eq!(raw(Channel::JawLeft), "jawLeft");
        assert_eq!(raw(Channel::MouthRight), "mouthRight");
        assert_eq!(raw(Channel::CheekPuff), "cheekPuff");
        assert_eq!(
            NameDialect::Pascal.name(Channel::EyeBlinkLeft),
            "EyeBlinkLeft"
        );
        for channel in Channel::ALL {
            for (_, dialect) in NameDialect::ALL {
                assert_eq!(Channel::parse(&dialect.name(channel)), Some(channel));
            }
        }
        assert_eq!("Pascal".parse(), Ok(NameDialect::Pascal));
        assert!("kebab".parse::<NameDialect>().is_err());
        assert_eq!(NameDialect::Raw.to_string(), "raw");
    }
}

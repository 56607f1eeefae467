//! What a driver reads: an ARKit channel (`jawOpen`, in any dialect), a viseme of lip sync
//! from audio (`viseme:aa`) or a parameter a plugin created through the stream-tool API
//! (`param:HeartRate`), parsed by name with the nearest valid name for a mistake.

use std::fmt;

use serde::de::{self, Deserializer};
use serde::Deserialize;

use super::{PARAM_PREFIX, VISEME_PREFIX};
use crate::arkit::{Channel, FaceFrame, ParamName, Viseme};
use crate::diagnostic::nearest;

/// One input of a driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// An ARKit channel of the frame.
    Channel(Channel),
    /// A viseme's weight in the frame ([`FaceFrame::visemes`]): lip sync's weight of that
    /// mouth shape times the lip-sync layer's weight in the mix.
    Viseme(Viseme),
    /// A parameter a plugin created through the stream-tool API ([`FaceFrame::params`]): its
    /// value placed within the range the plugin gave it, 0 at its minimum and 1 at its maximum.
    Param(ParamName),
}

impl From<Channel> for Source {
    fn from(channel: Channel) -> Source {
        Source::Channel(channel)
    }
}

impl From<Viseme> for Source {
    fn from(viseme: Viseme) -> Source {
        Source::Viseme(viseme)
    }
}

/// Every `viseme:NAME` a mapping can write, for suggestions.
fn viseme_names() -> [String; crate::arkit::VISEMES] {
    Viseme::ALL.map(|v| format!("{VISEME_PREFIX}{}", v.name()))
}

impl Source {
    /// The source `name` means: `viseme:` (in any case) and a viseme's name, else an ARKit
    /// channel in any dialect. The error says what is unknown and, where there is a plausible
    /// one, the nearest valid name.
    pub fn parse(name: &str) -> Result<Source, String> {
        let trimmed = name.trim();
        if let Some(param) = prefixed(trimmed, PARAM_PREFIX) {
            return ParamName::new(param).map(Source::Param).ok_or_else(|| {
                format!(
                    "`{param}` is not a parameter name: a plugin's parameter is named with {} to \
                     {} letters and digits, as in `{PARAM_PREFIX}HeartRate`",
                    ParamName::MIN,
                    ParamName::MAX
                )
            });
        }
        if let Some(viseme) = viseme_name(trimmed) {
            return Viseme::parse(viseme).map(Source::Viseme).ok_or_else(|| {
                match nearest(viseme, Viseme::ALL.map(Viseme::name)) {
                    Some(best) => {
                        format!("unknown viseme `{viseme}`; did you mean `{VISEME_PREFIX}{best}`?")
                    }
                    None => format!(
                        "unknown viseme `{viseme}`; visemes are {}",
                        viseme_names().map(|n| format!("`{n}`")).join(", ")
                    ),
                }
            });
        }
        Channel::parse(name).map(Source::Channel).ok_or_else(|| {
            let visemes = viseme_names();
            let candidates = Channel::ALL
                .iter()
                .map(|c| c.name())
                .chain(visemes.iter().map(String::as_str));
            match nearest(name, candidates) {
                Some(best) => format!("unknown channel `{name}`; did you mean `{best}`?"),
                None => format!(
                    "unknown channel `{name}`; sources are ARKit names such as `jawOpen` or \
                     `eyeBlinkLeft`, visemes such as `viseme:aa`, or parameters plugins create, \
                     such as `param:HeartRate`"
                ),
            }
        })
    }

    /// The channel, for a channel source.
    pub fn channel(self) -> Option<Channel> {
        match self {
            Source::Channel(c) => Some(c),
            Source::Viseme(_) | Source::Param(_) => None,
        }
    }

    /// The viseme, for a viseme source.
    pub fn viseme(self) -> Option<Viseme> {
        match self {
            Source::Viseme(v) => Some(v),
            Source::Channel(_) | Source::Param(_) => None,
        }
    }

    /// The parameter, for a plugin parameter's source.
    pub fn param(self) -> Option<ParamName> {
        match self {
            Source::Param(p) => Some(p),
            Source::Channel(_) | Source::Viseme(_) => None,
        }
    }

    /// Its value in `frame`, or `None` when the frame does not carry it: a channel the frame
    /// lacks, any viseme while every viseme weight is 0 (no lip sync in the mix), or a
    /// parameter no plugin has created, so that a target only such a source drives stays at
    /// rest then, as one whose channels are missing does.
    pub fn value(self, frame: &FaceFrame) -> Option<f32> {
        match self {
            Source::Channel(c) => frame.get(c),
            Source::Viseme(v) => frame
                .visemes
                .iter()
                .any(|&w| w != 0.0)
                .then(|| frame.visemes[v.index()]),
            Source::Param(p) => frame.params.get(p.key()),
        }
    }
}

/// The viseme a source name names (`viseme:aa` → `aa`; the prefix in any case), or `None` for
/// a channel name.
fn viseme_name(name: &str) -> Option<&str> {
    prefixed(name, VISEME_PREFIX)
}

/// `name` after `prefix` (in any case), when it starts with it.
fn prefixed<'a>(name: &'a str, prefix: &str) -> Option<&'a str> {
    name.get(..prefix.len())?
        .eq_ignore_ascii_case(prefix)
        .then(|| &name[prefix.len()..])
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Channel(c) => f.write_str(c.name()),
            Source::Viseme(v) => write!(f, "{VISEME_PREFIX}{}", v.name()),
            Source::Param(p) => write!(f, "{PARAM_PREFIX}{p}"),
        }
    }
}

impl<'de> Deserialize<'de> for Source {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Source::parse(&name).map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::frame;
    use super::*;

    #[test]
    fn names_parse_as_channels_in_any_dialect_or_visemes() {
        assert_eq!(
            Source::parse("eyeBlink_L"),
            Ok(Source::Channel(Channel::EyeBlinkLeft))
        );
        assert_eq!(Source::parse("viseme:aa"), Ok(Source::Viseme(Viseme::Aa)));
        assert_eq!(Source::parse("Viseme:OH"), Ok(Source::Viseme(Viseme::Oh)));
        for v in Viseme::ALL {
            let s = Source::Viseme(v);
            assert_eq!(Source::parse(&s.to_string()), Ok(s));
        }
        assert_eq!(Source::Channel(Channel::JawOpen).to_string(), "jawOpen");
    }

    #[test]
    fn mistakes_name_the_nearest_source() {
        let e = Source::parse("viseme:a").unwrap_err();
        assert_eq!(e, "unknown viseme `a`; did you mean `viseme:aa`?");
        let e = Source::parse("viseme:schwa").unwrap_err();
        assert!(
            e.starts_with("unknown viseme `schwa`; visemes are `viseme:sil`"),
            "{e}"
        );
        let e = Source::parse("visme:ou").unwrap_err();
        assert!(e.contains("did you mean `viseme:ou`?"), "{e}");
        let e = Source::parse("jawOpn").unwrap_err();
        assert!(e.contains("did you mean `jawOpen`?"), "{e}");
    }

    #[test]
    fn plugin_parameters_parse_by_name_and_read_what_the_frame_carries() {
        let s = Source::parse("param:HeartRate").unwrap();
        assert_eq!(s.to_string(), "param:HeartRate");
        assert_eq!(Source::parse("PARAM:heartrate"), Ok(s));
        assert_eq!(s.channel(), None);
        assert_eq!(s.viseme(), None);
        for bad in ["param:abc", "param:Heart Rate", "param:", "param:x_y_z_w"] {
            let e = Source::parse(bad).unwrap_err();
            assert!(e.contains("4 to 32 letters and digits"), "{bad}: {e}");
        }
        let mut f = frame(&[(Channel::JawOpen, 0.4)]);
        assert_eq!(s.value(&f), None, "no plugin created it");
        let key = crate::arkit::ParamKey::of("HEARTRATE");
        assert!(f.params.push(key, 0.25));
        assert_eq!(s.value(&f), Some(0.25));
        assert!(!f.params.push(key, 0.5), "one value per parameter");
        assert_eq!(Source::parse("param:Other").unwrap().value(&f), None);
    }

    #[test]
    fn visemes_are_carried_only_while_lip_sync_is_in_the_mix() {
        let mut f = frame(&[(Channel::JawOpen, 0.4)]);
        let aa = Source::Viseme(Viseme::Aa);
        assert_eq!(aa.value(&f), None);
        assert_eq!(Source::Channel(Channel::JawOpen).value(&f), Some(0.4));
        assert_eq!(Source::Channel(Channel::MouthClose).value(&f), None);
        // Silence with lip sync on: `sil` holds the weight and the vowels read 0, not absent.
        f.visemes[Viseme::Sil.index()] = 1.0;
        assert_eq!(aa.value(&f), Some(0.0));
        f.visemes[Viseme::Aa.index()] = 0.8;
        assert_eq!(aa.value(&f), Some(0.8));
    }
}

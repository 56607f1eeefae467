//! Face regions: which part of the face each ARKit channel and each pose belongs to, and the
//! region masks layers use to say what they drive.

use std::fmt;

use serde::{Deserialize, Deserializer};

use crate::arkit::{Channel, ChannelMask};

/// A part of the face a layer can drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Region {
    /// Blinks, squints and wide eyes (`eyeBlink*`, `eyeSquint*`, `eyeWide*`).
    Eyes,
    /// Where the eyes look: `eyeLook*` and the eye rotations.
    Gaze,
    /// `brow*`.
    Brows,
    /// `jaw*` and `mouth*`.
    MouthJaw,
    /// `cheek*` and `noseSneer*`.
    CheeksNose,
    /// `tongueOut`.
    Tongue,
    /// The head rotation.
    HeadPose,
}

impl Region {
    /// Every region, in the order of [`Region::name`]'s table.
    pub const ALL: [Region; 7] = [
        Region::Eyes,
        Region::Gaze,
        Region::Brows,
        Region::MouthJaw,
        Region::CheeksNose,
        Region::Tongue,
        Region::HeadPose,
    ];

    /// The name used in `facewire.toml`.
    pub fn name(self) -> &'static str {
        match self {
            Region::Eyes => "eyes",
            Region::Gaze => "gaze",
            Region::Brows => "brows",
            Region::MouthJaw => "mouth",
            Region::CheeksNose => "cheeks",
            Region::Tongue => "tongue",
            Region::HeadPose => "head",
        }
    }

    /// The region named `name` (as in `facewire.toml`; `jaw` and `nose` are accepted too).
    pub fn parse(name: &str) -> Option<Region> {
        let name = name.trim().to_ascii_lowercase();
        Some(match name.as_str() {
            "eyes" | "blink" => Region::Eyes,
            "gaze" | "look" => Region::Gaze,
            "brows" | "brow" => Region::Brows,
            "mouth" | "jaw" => Region::MouthJaw,
            "cheeks" | "nose" => Region::CheeksNose,
            "tongue" => Region::Tongue,
            "head" => Region::HeadPose,
            _ => return None,
        })
    }

    /// The region a channel belongs to.
    pub fn of(channel: Channel) -> Region {
        let name = channel.name();
        if name.starts_with("eyeLook") {
            Region::Gaze
        } else if name.starts_with("eye") {
            Region::Eyes
        } else if name.starts_with("brow") {
            Region::Brows
        } else if name.starts_with("jaw") || name.starts_with("mouth") {
            Region::MouthJaw
        } else if name.starts_with("tongue") {
            Region::Tongue
        } else {
            Region::CheeksNose
        }
    }

    /// Its place in [`Region::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of regions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RegionMask(u8);

impl RegionMask {
    /// No region.
    pub const NONE: RegionMask = RegionMask(0);
    /// Every region.
    pub const ALL: RegionMask = RegionMask((1 << Region::ALL.len()) - 1);

    /// The set of `regions`.
    pub fn of(regions: &[Region]) -> RegionMask {
        RegionMask(regions.iter().fold(0, |m, r| m | r.bit()))
    }

    /// Whether `region` is in the set.
    pub fn contains(self, region: Region) -> bool {
        self.0 & region.bit() != 0
    }

    /// Whether the set holds `channel`'s region.
    pub fn covers(self, channel: Channel) -> bool {
        self.contains(Region::of(channel))
    }

    /// The channels of the regions in the set.
    pub fn channels(self) -> ChannelMask {
        let mut mask = ChannelMask::EMPTY;
        for c in Channel::ALL {
            if self.covers(c) {
                mask.insert(c);
            }
        }
        mask
    }

    /// The regions in the set, in [`Region::ALL`] order.
    pub fn regions(self) -> impl Iterator<Item = Region> {
        Region::ALL.into_iter().filter(move |r| self.contains(*r))
    }
}

impl Default for RegionMask {
    fn default() -> RegionMask {
        RegionMask::ALL
    }
}

impl fmt::Display for RegionMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == RegionMask::ALL {
            return f.write_str("all");
        }
        let names: Vec<&str> = self.regions().map(Region::name).collect();
        f.write_str(&names.join(", "))
    }
}

/// The region names a configuration may use, for messages.
pub const REGION_NAMES: &str = "eyes, gaze, brows, mouth, cheeks, tongue, head or all";

impl<'de> Deserialize<'de> for RegionMask {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RegionMask, D::Error> {
        let names = Vec::<String>::deserialize(d)?;
        let mut regions = Vec::new();
        for name in &names {
            if name.trim().eq_ignore_ascii_case("all") {
                return Ok(RegionMask::ALL);
            }
            match Region::parse(name) {
                Some(r) => regions.push(r),
                None => {
                    return Err(serde::de::Error::custom(format!(
                        "unknown face region `{name}`: use {REGION_NAMES}"
                    )))
                }
            }
        }
        Ok(RegionMask::of(&regions))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_channel_has_the_region_its_name_says() {
        assert_eq!(Region::of(Channel::EyeBlinkLeft), Region::Eyes);
        assert_eq!(Region::of(Channel::EyeWideRight), Region::Eyes);
        assert_eq!(Region::of(Channel::EyeLookInLeft), Region::Gaze);
        assert_eq!(Region::of(Channel::BrowInnerUp), Region::Brows);
        assert_eq!(Region::of(Channel::JawOpen), Region::MouthJaw);
        assert_eq!(Region::of(Channel::MouthSmileLeft), Region::MouthJaw);
        assert_eq!(Region::of(Channel::CheekPuff), Region::CheeksNose);
        assert_eq!(Region::of(Channel::NoseSneerRight), Region::CheeksNose);
        assert_eq!(Region::of(Channel::TongueOut), Region::Tongue);
        let counts: Vec<usize> = Region::ALL
            .iter()
            .map(|r| RegionMask::of(&[*r]).channels().len())
            .collect();
        // eyes 6, gaze 8, brows 5, mouth and jaw 27, cheeks and nose 5, tongue 1, head 0.
        assert_eq!(counts, [6, 8, 5, 27, 5, 1, 0]);
        assert_eq!(RegionMask::ALL.channels(), ChannelMask::ALL);
    }

    #[test]
    fn masks_parse_from_names() {
        #[derive(Deserialize)]
        struct T {
            regions: RegionMask,
        }
        let t: T = toml::from_str("regions = [\"mouth\", \"Tongue\"]").unwrap();
        assert!(t.regions.contains(Region::MouthJaw));
        assert!(t.regions.contains(Region::Tongue));
        assert!(!t.regions.contains(Region::Eyes));
        assert_eq!(t.regions.to_string(), "mouth, tongue");
        let t: T = toml::from_str("regions = [\"all\"]").unwrap();
        assert_eq!(t.regions, RegionMask::ALL);
        let e = toml::from_str::<T>("regions = [\"lips\"]").err().unwrap();
        assert!(e.to_string().contains("unknown face region `lips`"), "{e}");
    }
}

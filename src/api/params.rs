//! Input parameter names the API takes: VTube Studio's default inputs that have an ARKit
//! meaning, mapped onto the 52 channels, and the 52 ARKit names themselves in any spelling.

use crate::arkit::Channel;

/// How a parameter's value becomes a channel's value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Curve {
    /// The value itself.
    Same,
    /// One minus the value (an openness driving a blink).
    Inverted,
    /// How far the value rises above `pivot`, times `scale` (0 below it).
    Above {
        /// The neutral value.
        pivot: f32,
        /// Channel units per parameter unit.
        scale: f32,
    },
    /// How far the value falls below `pivot`, times `scale` (0 above it).
    Below {
        /// The neutral value.
        pivot: f32,
        /// Channel units per parameter unit.
        scale: f32,
    },
}

impl Curve {
    /// The channel's value for parameter value `v` (`set` mode), clamped to [0, 1].
    pub fn value(self, v: f32) -> f32 {
        let x = match self {
            Curve::Same => v,
            Curve::Inverted => 1.0 - v,
            Curve::Above { pivot, scale } => (v - pivot) * scale,
            Curve::Below { pivot, scale } => (pivot - v) * scale,
        };
        x.clamp(0.0, 1.0)
    }

    /// The change of the channel's value for a change `d` of the parameter (`add` mode),
    /// clamped to [-1, 1].
    pub fn change(self, d: f32) -> f32 {
        let x = match self {
            Curve::Same => d,
            Curve::Inverted => -d,
            Curve::Above { scale, .. } => (d * scale).max(0.0),
            Curve::Below { scale, .. } => (-d * scale).max(0.0),
        };
        x.clamp(-1.0, 1.0)
    }
}

/// One input parameter: its name, range and the channels it drives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Param {
    /// The name clients send (`MouthOpen`, `jawOpen`).
    pub name: &'static str,
    /// The smallest useful value.
    pub min: f32,
    /// The largest useful value.
    pub max: f32,
    /// The value at rest.
    pub default: f32,
    /// The channels it drives and how.
    pub targets: &'static [(Channel, Curve)],
    /// Whether it is one of VTube Studio's default inputs (else an ARKit channel).
    pub vts: bool,
}

const fn above(pivot: f32, scale: f32) -> Curve {
    Curve::Above { pivot, scale }
}

const fn below(pivot: f32, scale: f32) -> Curve {
    Curve::Below { pivot, scale }
}

const fn vts(
    name: &'static str,
    min: f32,
    max: f32,
    default: f32,
    targets: &'static [(Channel, Curve)],
) -> Param {
    Param {
        name,
        min,
        max,
        default,
        targets,
        vts: true,
    }
}

use Channel as C;
use Curve::{Inverted, Same};

/// VTube Studio's default inputs with an ARKit meaning. Gaze: X positive looks to the
/// performer's right, Y positive looks up. Brows: 0.5 is at rest, 1 raised, 0 lowered.
/// `docs/api.md` has the same table.
pub const VTS_PARAMS: [Param; 17] = [
    vts("MouthOpen", 0.0, 1.0, 0.0, &[(C::JawOpen, Same)]),
    vts(
        "MouthSmile",
        0.0,
        1.0,
        0.0,
        &[(C::MouthSmileLeft, Same), (C::MouthSmileRight, Same)],
    ),
    vts(
        "MouthX",
        -1.0,
        1.0,
        0.0,
        &[
            (C::MouthRight, above(0.0, 1.0)),
            (C::MouthLeft, below(0.0, 1.0)),
        ],
    ),
    vts("EyeOpenLeft", 0.0, 1.0, 1.0, &[(C::EyeBlinkLeft, Inverted)]),
    vts(
        "EyeOpenRight",
        0.0,
        1.0,
        1.0,
        &[(C::EyeBlinkRight, Inverted)],
    ),
    vts(
        "EyeLeftX",
        -1.0,
        1.0,
        0.0,
        &[
            (C::EyeLookInLeft, above(0.0, 1.0)),
            (C::EyeLookOutLeft, below(0.0, 1.0)),
        ],
    ),
    vts(
        "EyeRightX",
        -1.0,
        1.0,
        0.0,
        &[
            (C::EyeLookOutRight, above(0.0, 1.0)),
            (C::EyeLookInRight, below(0.0, 1.0)),
        ],
    ),
    vts(
        "EyeLeftY",
        -1.0,
        1.0,
        0.0,
        &[
            (C::EyeLookUpLeft, above(0.0, 1.0)),
            (C::EyeLookDownLeft, below(0.0, 1.0)),
        ],
    ),
    vts(
        "EyeRightY",
        -1.0,
        1.0,
        0.0,
        &[
            (C::EyeLookUpRight, above(0.0, 1.0)),
            (C::EyeLookDownRight, below(0.0, 1.0)),
        ],
    ),
    vts(
        "Brows",
        0.0,
        1.0,
        0.5,
        &[
            (C::BrowInnerUp, above(0.5, 2.0)),
            (C::BrowOuterUpLeft, above(0.5, 2.0)),
            (C::BrowOuterUpRight, above(0.5, 2.0)),
            (C::BrowDownLeft, below(0.5, 2.0)),
            (C::BrowDownRight, below(0.5, 2.0)),
        ],
    ),
    vts(
        "BrowLeftY",
        0.0,
        1.0,
        0.5,
        &[
            (C::BrowOuterUpLeft, above(0.5, 2.0)),
            (C::BrowDownLeft, below(0.5, 2.0)),
        ],
    ),
    vts(
        "BrowRightY",
        0.0,
        1.0,
        0.5,
        &[
            (C::BrowOuterUpRight, above(0.5, 2.0)),
            (C::BrowDownRight, below(0.5, 2.0)),
        ],
    ),
    vts("CheekPuff", 0.0, 1.0, 0.0, &[(C::CheekPuff, Same)]),
    vts("TongueOut", 0.0, 1.0, 0.0, &[(C::TongueOut, Same)]),
    vts(
        "FaceAngry",
        0.0,
        1.0,
        0.0,
        &[(C::BrowDownLeft, Same), (C::BrowDownRight, Same)],
    ),
    vts(
        "VoiceVolumePlusMouthOpen",
        0.0,
        1.0,
        0.0,
        &[(C::JawOpen, Same)],
    ),
    vts(
        "VoiceFrequencyPlusMouthSmile",
        0.0,
        1.0,
        0.0,
        &[(C::MouthSmileLeft, Same), (C::MouthSmileRight, Same)],
    ),
];

/// VTube Studio's default inputs that facewire does not offer (head pose, mouse, voice,
/// hands): no plugin may create a parameter of these names, as in VTube Studio.
pub const VTS_RESERVED: [&str; 26] = [
    "FacePositionX",
    "FacePositionY",
    "FacePositionZ",
    "FaceAngleX",
    "FaceAngleY",
    "FaceAngleZ",
    "MousePositionX",
    "MousePositionY",
    "VoiceFrequency",
    "VoiceVolume",
    "HandLeftFound",
    "HandRightFound",
    "BothHandsFound",
    "HandDistance",
    "HandLeftPositionX",
    "HandLeftPositionY",
    "HandLeftPositionZ",
    "HandRightPositionX",
    "HandRightPositionY",
    "HandRightPositionZ",
    "HandLeftAngleX",
    "HandLeftAngleZ",
    "HandRightAngleX",
    "HandRightAngleZ",
    "HandLeftOpen",
    "HandRightOpen",
];

/// The ARKit channels as parameters, one per channel, canonical names.
fn arkit_params() -> &'static [Param; crate::arkit::COUNT] {
    static TABLE: std::sync::OnceLock<[Param; crate::arkit::COUNT]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        Channel::ALL.map(|c| Param {
            name: c.name(),
            min: 0.0,
            max: 1.0,
            default: 0.0,
            targets: ARKIT_TARGETS[c.index()],
            vts: false,
        })
    })
}

/// Each channel driving itself, as a static slice per channel.
const ARKIT_TARGETS: [&[(Channel, Curve)]; crate::arkit::COUNT] = {
    macro_rules! same {
        ($($i:expr),*) => { [$(&[(Channel::ALL[$i], Curve::Same)]),*] };
    }
    same!(
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
        25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
        48, 49, 50, 51
    )
};

/// The parameter called `name`: a VTube Studio default input (exact name, any letter case), or
/// an ARKit channel in any spelling (`jawOpen`, `JawOpen`, `jaw_open`, `eyeBlink_L`).
pub fn lookup(name: &str) -> Option<&'static Param> {
    VTS_PARAMS
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case(name))
        .or_else(|| Channel::parse(name).map(|c| &arkit_params()[c.index()]))
}

/// Every parameter: VTube Studio's inputs first, then the ARKit channels in canonical order.
pub fn all() -> impl Iterator<Item = &'static Param> {
    VTS_PARAMS.iter().chain(arkit_params().iter())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_in_any_spelling() {
        assert_eq!(lookup("MouthOpen").unwrap().targets[0].0, Channel::JawOpen);
        assert_eq!(lookup("mouthopen").unwrap().name, "MouthOpen");
        for spelling in ["jawOpen", "JawOpen", "jaw_open", "JAWOPEN"] {
            let p = lookup(spelling).unwrap();
            assert_eq!(p.name, "jawOpen");
            assert!(!p.vts);
        }
        assert_eq!(lookup("eyeBlink_L").unwrap().name, "eyeBlinkLeft");
        assert!(lookup("FaceAngleX").is_none());
        assert!(lookup("").is_none());
        // CheekPuff and TongueOut are both a VTube Studio input and an ARKit name: the input
        // wins, and drives the same channel.
        assert!(lookup("CheekPuff").unwrap().vts);
        assert_eq!(all().count(), VTS_PARAMS.len() + 52);
    }

    #[test]
    fn every_arkit_parameter_drives_its_own_channel() {
        for c in Channel::ALL {
            let p = lookup(c.name()).unwrap();
            assert_eq!(p.targets, &[(c, Curve::Same)]);
        }
    }

    #[test]
    fn curves_set_and_add() {
        assert_eq!(Curve::Inverted.value(0.25), 0.75);
        assert_eq!(Curve::Inverted.change(0.25), -0.25);
        let up = above(0.5, 2.0);
        let down = below(0.5, 2.0);
        assert_eq!(up.value(1.0), 1.0);
        assert_eq!(up.value(0.25), 0.0);
        assert_eq!(down.value(0.25), 0.5);
        assert_eq!(down.value(0.75), 0.0);
        assert_eq!(up.change(0.1), 0.2);
        assert_eq!(up.change(-0.1), 0.0);
        assert_eq!(down.change(-0.1), 0.2);
        assert_eq!(Curve::Same.value(7.0), 1.0);
        assert_eq!(Curve::Same.change(-7.0), -1.0);
    }
}

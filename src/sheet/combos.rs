//! The combinations sheet (`facewire sheet --combos`): named sets of ARKit channel values, each
//! drawn in one panel through the mapping with the corrective targets they drive.
//!
//! One target at a time cannot show what goes wrong when two of them move the same skin: a
//! smile's corners and an open jaw, a squint under lowered brows. The built-in combinations
//! ([`Combo::built_in`]) are the ones a performer makes all the time; `--combo
//! 'NAME:CHANNEL=VALUE,...'` adds one's own.

use std::net::SocketAddr;
use std::time::Instant;

use glam::Vec3;

use super::{side_of_channel, Drive, SheetEntry, Side};
use crate::arkit::{Channel, FaceFrame, Protocol};
use crate::avatar::correctives::Correctives;
use crate::avatar::{Aabb, Avatar, Pose};
use crate::mapping::CompiledMapping;

/// A named set of channel values.
#[derive(Debug, Clone, PartialEq)]
pub struct Combo {
    /// The panel's name (`laugh`).
    pub name: String,
    /// Each channel once, with its value (0 to 1), in the order given.
    pub weights: Vec<(Channel, f32)>,
}

/// The built-in combinations, in sheet order. Both sides move together unless the name says a
/// wink.
const BUILT_IN: [(&str, &[(Channel, f32)]); 11] = {
    use Channel::*;
    [
        (
            "laugh",
            &[
                (JawOpen, 0.7),
                (MouthSmileLeft, 1.0),
                (MouthSmileRight, 1.0),
            ],
        ),
        (
            "big laugh",
            &[
                (JawOpen, 1.0),
                (MouthSmileLeft, 1.0),
                (MouthSmileRight, 1.0),
            ],
        ),
        (
            "smile + blink",
            &[
                (MouthSmileLeft, 1.0),
                (MouthSmileRight, 1.0),
                (EyeBlinkLeft, 1.0),
                (EyeBlinkRight, 1.0),
            ],
        ),
        (
            "wink + smile",
            &[
                (EyeBlinkLeft, 1.0),
                (MouthSmileLeft, 1.0),
                (MouthSmileRight, 1.0),
            ],
        ),
        ("funnel + jaw", &[(MouthFunnel, 1.0), (JawOpen, 0.5)]),
        ("pucker + jaw", &[(MouthPucker, 1.0), (JawOpen, 0.4)]),
        (
            "jaw + stretch",
            &[
                (JawOpen, 0.6),
                (MouthStretchLeft, 1.0),
                (MouthStretchRight, 1.0),
            ],
        ),
        (
            "press + smile",
            &[
                (MouthPressLeft, 1.0),
                (MouthPressRight, 1.0),
                (MouthSmileLeft, 1.0),
                (MouthSmileRight, 1.0),
            ],
        ),
        (
            "puff + smile",
            &[
                (CheekPuff, 1.0),
                (MouthSmileLeft, 1.0),
                (MouthSmileRight, 1.0),
            ],
        ),
        (
            "brows up + squint",
            &[
                (BrowInnerUp, 1.0),
                (EyeSquintLeft, 1.0),
                (EyeSquintRight, 1.0),
            ],
        ),
        (
            "frown + squint",
            &[
                (BrowDownLeft, 1.0),
                (BrowDownRight, 1.0),
                (EyeSquintLeft, 1.0),
                (EyeSquintRight, 1.0),
            ],
        ),
    ]
};

/// Errors in a `--combo` specification.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ComboError {
    /// No channel values after the name.
    #[error("combination {0:?} sets no channel (expected NAME:CHANNEL=VALUE,...)")]
    Empty(String),
    /// An item is not `CHANNEL=VALUE`.
    #[error("{item:?} in combination {combo:?} is not CHANNEL=VALUE")]
    Syntax {
        /// The combination's name.
        combo: String,
        /// The item.
        item: String,
    },
    /// A name that is no ARKit channel in any dialect.
    #[error(
        "{name:?} in combination {combo:?} is not an ARKit channel{}",
        suggestion.map(|s| format!(" (did you mean {s}?)")).unwrap_or_default()
    )]
    UnknownChannel {
        /// The combination's name.
        combo: String,
        /// The name as written.
        name: String,
        /// The nearest channel name, when one is close.
        suggestion: Option<&'static str>,
    },
    /// A value that is not a number from 0 to 1.
    #[error("{item:?} in combination {combo:?}: the value must be a number from 0 to 1")]
    Value {
        /// The combination's name.
        combo: String,
        /// The item.
        item: String,
    },
    /// The same channel twice.
    #[error("{channel} is set twice in combination {combo:?}")]
    Repeated {
        /// The combination's name.
        combo: String,
        /// The channel.
        channel: Channel,
    },
}

impl Combo {
    /// The built-in combinations: a laugh (the jaw open with both corners smiling) and one with
    /// the jaw wide open, a smile with a blink and with a wink, funnel and pucker with the jaw open, the jaw
    /// open with stretched corners, pressed lips and puffed cheeks with a smile, the inner brows
    /// raised and the brows lowered over squinting eyes.
    pub fn built_in() -> Vec<Combo> {
        BUILT_IN
            .iter()
            .map(|(name, weights)| Combo {
                name: (*name).to_owned(),
                weights: weights.to_vec(),
            })
            .collect()
    }

    /// Reads `NAME:CHANNEL=VALUE,...` (channels in any dialect, values 0 to 1). Without a
    /// `NAME:` the name is the [`Combo::caption`].
    pub fn parse(spec: &str) -> Result<Combo, ComboError> {
        let (name, list) = match spec.split_once(':') {
            Some((name, list)) => (name.trim().to_owned(), list),
            None => (String::new(), spec),
        };
        let mut weights: Vec<(Channel, f32)> = Vec::new();
        let label = || {
            if name.is_empty() {
                spec.trim().to_owned()
            } else {
                name.clone()
            }
        };
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some((channel, value)) = item.split_once('=') else {
                return Err(ComboError::Syntax {
                    combo: label(),
                    item: item.to_owned(),
                });
            };
            let channel_name = channel.trim();
            let channel =
                Channel::parse(channel_name).ok_or_else(|| ComboError::UnknownChannel {
                    combo: label(),
                    name: channel_name.to_owned(),
                    suggestion: crate::diagnostic::nearest(
                        channel_name,
                        Channel::ALL.map(Channel::name),
                    ),
                })?;
            let value = value
                .trim()
                .parse::<f32>()
                .ok()
                .filter(|v| (0.0..=1.0).contains(v))
                .ok_or_else(|| ComboError::Value {
                    combo: label(),
                    item: item.to_owned(),
                })?;
            if weights.iter().any(|&(c, _)| c == channel) {
                return Err(ComboError::Repeated {
                    combo: label(),
                    channel,
                });
            }
            weights.push((channel, value));
        }
        if weights.is_empty() {
            return Err(ComboError::Empty(label()));
        }
        let mut combo = Combo { name, weights };
        if combo.name.is_empty() {
            combo.name = combo.caption();
        }
        Ok(combo)
    }

    /// The values in short: a left and right pair at the same value once, its stem followed by
    /// `LR` (`jawOpen .7, mouthSmileLR 1`).
    pub fn caption(&self) -> String {
        let number = |v: f32| {
            let text = format!("{v}");
            match text.strip_prefix("0.") {
                Some(rest) => format!(".{rest}"),
                None => text,
            }
        };
        let mut parts = Vec::new();
        for (k, &(channel, value)) in self.weights.iter().enumerate() {
            let mirror = channel.mirror();
            let paired =
                mirror != channel && self.weights.iter().any(|&(c, v)| c == mirror && v == value);
            if paired {
                let first = self.weights.iter().position(|&(c, _)| c == mirror);
                if first.is_some_and(|f| f < k) {
                    continue;
                }
                let name = channel.name();
                let stem = name
                    .strip_suffix("Left")
                    .or_else(|| name.strip_suffix("Right"))
                    .unwrap_or(name);
                parts.push(format!("{stem}LR {}", number(value)));
            } else {
                parts.push(format!("{} {}", channel.name(), number(value)));
            }
        }
        parts.join(", ")
    }

    /// The side the combination leans to: the side of every channel whose mirror partner is
    /// not set to the same value (`eyeBlinkLeft` in a wink with a smile), when they all share
    /// one; `None` for a balanced combination.
    pub fn side(&self) -> Option<Side> {
        let mut lean = None;
        for &(channel, value) in &self.weights {
            let mirror = channel.mirror();
            if self.weights.contains(&(mirror, value)) {
                continue;
            }
            let Some(side) = side_of_channel(channel) else {
                continue;
            };
            match lean {
                None => lean = Some(side),
                Some(s) if s != side => return None,
                Some(_) => {}
            }
        }
        lean
    }

    /// A frame with the combination's values and nothing else.
    pub fn frame(&self) -> FaceFrame {
        let mut frame = FaceFrame::empty(
            Protocol::Vmc,
            SocketAddr::from(([127, 0, 0, 1], 0)),
            Instant::now(),
        );
        for &(channel, value) in &self.weights {
            frame.set(channel, value);
        }
        frame
    }
}

impl std::str::FromStr for Combo {
    type Err = ComboError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Combo::parse(s)
    }
}

/// The panels of a combinations sheet: the neutral face, then one per combination.
pub fn combo_entries(combos: &[Combo]) -> Vec<SheetEntry> {
    let neutral = SheetEntry {
        name: "neutral".into(),
        caption: Some("rest pose".into()),
        side: None,
        drive: Drive::Neutral,
        targets: Vec::new(),
    };
    std::iter::once(neutral)
        .chain(combos.iter().enumerate().map(|(index, combo)| SheetEntry {
            name: combo.name.clone(),
            caption: Some(combo.caption()),
            side: combo.side(),
            drive: Drive::Combo { index },
            targets: Vec::new(),
        }))
        .collect()
}

/// The pose of a combination's panel: `rest` (which wears the sheet's look), the combination's
/// frame through `mapping` as live tracking drives it, then the correctives and the wrinkle
/// maps that follow from the weights.
pub fn combo_pose(
    combo: &Combo,
    mapping: &CompiledMapping,
    rest: &Pose,
    correctives: &Correctives,
) -> Pose {
    let mut pose = rest.clone();
    mapping.apply(&combo.frame(), &mut pose);
    correctives.apply(&mut pose);
    crate::mapping::wrinkles::apply(&mapping.wrinkles, &mut pose);
    pose
}

/// A vertex counts as moving in [`posed_bounds`] when it moves by at least this fraction of
/// the largest motion of any panel.
const POSED_FRACTION: f32 = 0.1;

/// The region a combinations sheet frames ([`super::Framing::Targets`]): the rest-pose world
/// bounds of every vertex that one of `poses` visibly moves away from `rest` (where it rests and
/// where the pose takes it), grown by a margin and to at least a quarter of the whole model on
/// each axis, like [`super::moving_bounds`] but for the weights the panels really set: the face
/// from the brows to the chin, not the whole head. Node motion (eyes turning) is not counted.
/// `None` when no pose moves anything.
pub fn posed_bounds(avatar: &Avatar, rest: &Pose, poses: &[Pose]) -> Option<Aabb> {
    let whole = avatar.bounds()?;
    let extent = whole.size().max_element();
    if !extent.is_finite() || extent <= 0.0 {
        return None;
    }
    let world = avatar.world_transforms(rest);
    // Per pose, per drawn node: each vertex's rest and posed world positions.
    let mut moves: Vec<(Vec3, Vec3)> = Vec::new();
    for pose in poses {
        for (node, transform) in avatar.nodes.iter().zip(&world) {
            let Some(index) = node.mesh else { continue };
            let (Some(mesh), Some(weights), Some(rest_weights)) = (
                avatar.meshes.get(index),
                pose.weights.get(index),
                rest.weights.get(index),
            ) else {
                continue;
            };
            if avatar.mesh_is_coarser_level(index) {
                continue;
            }
            for prim in &mesh.primitives {
                let mut offsets = vec![Vec3::ZERO; prim.positions.len()];
                for (target, (w, w0)) in prim.targets.iter().zip(weights.iter().zip(rest_weights)) {
                    let dw = w - w0;
                    if dw == 0.0 || !dw.is_finite() {
                        continue;
                    }
                    for (v, d) in target.positions.entries() {
                        if let Some(o) = offsets.get_mut(v as usize) {
                            *o += dw * d;
                        }
                    }
                }
                for (p, o) in prim.positions.iter().zip(&offsets) {
                    if *o != Vec3::ZERO {
                        let from = transform.transform_point3(*p);
                        let to = transform.transform_point3(*p + *o);
                        moves.push((from, to));
                    }
                }
            }
        }
    }
    let length = |(a, b): &(Vec3, Vec3)| {
        let l = (*b - *a).length();
        if l.is_finite() {
            l
        } else {
            0.0
        }
    };
    let largest = moves.iter().map(length).fold(0.0f32, f32::max);
    let threshold = (largest * POSED_FRACTION).max(extent * 1e-4);
    let mut bounds: Option<Aabb> = None;
    for m in moves.iter().filter(|m| length(m) > threshold) {
        for q in [m.0, m.1] {
            bounds = Some(match bounds {
                None => Aabb { min: q, max: q },
                Some(b) => Aabb {
                    min: b.min.min(q),
                    max: b.max.max(q),
                },
            });
        }
    }
    Some(super::framed(bounds?, whole))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Channel::*;

    #[test]
    fn the_built_in_combinations_cover_the_common_pairs() {
        let combos = Combo::built_in();
        let has = |a: Channel, b: Channel| {
            combos.iter().any(|c| {
                c.weights.iter().any(|&(x, _)| x == a) && c.weights.iter().any(|&(x, _)| x == b)
            })
        };
        for (a, b) in [
            (JawOpen, MouthSmileLeft),
            (MouthSmileLeft, EyeBlinkLeft),
            (MouthFunnel, JawOpen),
            (MouthPucker, JawOpen),
            (BrowInnerUp, EyeSquintLeft),
            (BrowDownLeft, EyeSquintLeft),
            (MouthPressLeft, MouthSmileLeft),
            (CheekPuff, MouthSmileLeft),
            (JawOpen, MouthStretchLeft),
        ] {
            assert!(has(a, b), "no built-in combination of {a} and {b}");
        }
        let laugh = &combos[0];
        assert_eq!(laugh.name, "laugh");
        assert_eq!(laugh.caption(), "jawOpen .7, mouthSmileLR 1");
        assert_eq!(laugh.side(), None);
        let wink = combos.iter().find(|c| c.name == "wink + smile").unwrap();
        assert_eq!(wink.side(), Some(Side::Left));
        assert_eq!(wink.caption(), "eyeBlinkLeft 1, mouthSmileLR 1");
        let mut names: Vec<&str> = combos.iter().map(|c| c.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), combos.len(), "names repeat");
    }

    #[test]
    fn specs_parse_in_any_dialect() {
        let c = Combo::parse("grin: jawOpen=0.3, MouthSmile_L=1,mouthSmileRight=1").unwrap();
        assert_eq!(c.name, "grin");
        assert_eq!(
            c.weights,
            [
                (JawOpen, 0.3),
                (MouthSmileLeft, 1.0),
                (MouthSmileRight, 1.0)
            ]
        );
        assert_eq!(c.caption(), "jawOpen .3, mouthSmileLR 1");
        let f = c.frame();
        assert_eq!(f.get(JawOpen), Some(0.3));
        assert_eq!(f.get(MouthSmileRight), Some(1.0));
        assert_eq!(f.get(EyeBlinkLeft), None);
        // Without a name, the caption names it; unequal sides stay apart.
        let c: Combo = "mouthSmileLeft=1,mouthSmileRight=0.5".parse().unwrap();
        assert_eq!(c.name, "mouthSmileLeft 1, mouthSmileRight .5");
        // Both sides move: no badge.
        assert_eq!(c.side(), None);
        let c: Combo = "wink:eyeBlinkRight=1,jawOpen=0.2".parse().unwrap();
        assert_eq!(c.side(), Some(Side::Right));
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        assert_eq!(Combo::parse("x:"), Err(ComboError::Empty("x".to_owned())));
        assert!(matches!(
            Combo::parse("x:jawOpen"),
            Err(ComboError::Syntax { .. })
        ));
        let Err(ComboError::UnknownChannel { suggestion, .. }) = Combo::parse("x:jawOpn=1") else {
            panic!("an unknown channel parsed");
        };
        assert_eq!(suggestion, Some("jawOpen"));
        for bad in [
            "x:jawOpen=2",
            "x:jawOpen=-0.1",
            "x:jawOpen=NaN",
            "x:jawOpen=a",
        ] {
            assert!(
                matches!(Combo::parse(bad), Err(ComboError::Value { .. })),
                "{bad}"
            );
        }
        assert!(matches!(
            Combo::parse("x:jawOpen=1,JawOpen=0.5"),
            Err(ComboError::Repeated { .. })
        ));
    }

    #[test]
    fn entries_start_with_neutral_and_drive_each_combination() {
        let combos = Combo::built_in();
        let entries = combo_entries(&combos);
        assert_eq!(entries.len(), combos.len() + 1);
        assert_eq!(entries[0].drive, Drive::Neutral);
        for (k, (entry, combo)) in entries[1..].iter().zip(&combos).enumerate() {
            assert_eq!(entry.drive, Drive::Combo { index: k });
            assert_eq!(entry.name, combo.name);
            assert_eq!(entry.caption.as_deref(), Some(combo.caption().as_str()));
        }
    }
}

//! The automatic mapping: morph targets named after ARKit channels, the conventional head and
//! eye nodes, and the built-in drivers of the VRM preset expressions.

use super::file::Combine;
use super::{
    BoneDriver, BoneFrames, CompiledMapping, CompiledSliders, Curve, Driver, EyeLook, MappingFile,
};
use crate::arkit::{Channel, Viseme};
use crate::avatar::vrm::Preset;
use crate::avatar::Avatar;

/// The built-in driver of a VRM preset expression from the ARKit channels, used for VRM
/// avatars without perfect sync (see the README's VRM section for the table and its reasons).
///
/// Blink is split exactly: `blink = min(L, R)`, `blinkLeft = L − R`, `blinkRight = R − L`
/// (clamped), so each eyelid's total is its own channel. The performer's left eye drives the
/// avatar's left eye (`blinkLeft`, 0.x `Blink_L`), as everywhere in facewire: the avatar is a
/// puppet, not a mirror image; `lookLeft` likewise means the avatar's own left. `neutral` and
/// `relaxed` have no fallback.
///
/// The vowels `aa`, `ih`, `ou`, `ee` and `oh` also follow lip sync's viseme of the same name:
/// each takes the larger of its ARKit formula and its viseme ([`Driver::max_with`]), so audio
/// opens the mouth as far as it hears and the phone's own mouth still shows when it opens more.
pub fn fallback(preset: Preset) -> Option<Driver> {
    use Channel::*;
    let sum = |sources: &[(Channel, f32)], offset: f32| Driver {
        sources: sources.iter().map(|&(c, w)| (c.into(), w)).collect(),
        combine: Combine::Sum,
        gain: 1.0,
        offset,
        curve: Curve::Linear,
        clamp: Some((0.0, 1.0)),
        max_with: None,
    };
    let vowel = |arkit: Driver, viseme: Viseme| Driver {
        max_with: Some(Box::new(Driver {
            clamp: Some((0.0, 1.0)),
            ..Driver::identity(viseme)
        })),
        ..arkit
    };
    Some(match preset {
        Preset::Blink => Driver {
            combine: Combine::Min,
            ..sum(&[(EyeBlinkLeft, 1.0), (EyeBlinkRight, 1.0)], 0.0)
        },
        Preset::BlinkLeft => sum(&[(EyeBlinkLeft, 1.0), (EyeBlinkRight, -1.0)], 0.0),
        Preset::BlinkRight => sum(&[(EyeBlinkRight, 1.0), (EyeBlinkLeft, -1.0)], 0.0),
        Preset::Aa => vowel(
            sum(
                &[(JawOpen, 1.0), (MouthFunnel, -0.5), (MouthPucker, -0.5)],
                0.0,
            ),
            Viseme::Aa,
        ),
        Preset::Ih => vowel(
            sum(&[(MouthStretchLeft, 0.5), (MouthStretchRight, 0.5)], 0.0),
            Viseme::Ih,
        ),
        Preset::Ou => vowel(sum(&[(MouthPucker, 1.0)], 0.0), Viseme::Ou),
        Preset::Ee => vowel(
            sum(
                &[
                    (MouthUpperUpLeft, 0.25),
                    (MouthUpperUpRight, 0.25),
                    (MouthLowerDownLeft, 0.25),
                    (MouthLowerDownRight, 0.25),
                ],
                0.0,
            ),
            Viseme::Ee,
        ),
        Preset::Oh => vowel(sum(&[(MouthFunnel, 1.0)], 0.0), Viseme::Oh),
        Preset::Happy => sum(&[(MouthSmileLeft, 0.5), (MouthSmileRight, 0.5)], 0.0),
        Preset::Angry => sum(&[(BrowDownLeft, 0.5), (BrowDownRight, 0.5)], 0.0),
        Preset::Sad => sum(
            &[
                (BrowInnerUp, 0.5),
                (MouthFrownLeft, 0.25),
                (MouthFrownRight, 0.25),
            ],
            0.0,
        ),
        // The jaw alone (talking) never reaches the offset; raised brows and wide eyes do.
        Preset::Surprised => sum(
            &[
                (BrowOuterUpLeft, 0.3),
                (BrowOuterUpRight, 0.3),
                (EyeWideLeft, 0.2),
                (EyeWideRight, 0.2),
                (JawOpen, 0.2),
            ],
            -0.2,
        ),
        Preset::LookUp => sum(&[(EyeLookUpLeft, 0.5), (EyeLookUpRight, 0.5)], 0.0),
        Preset::LookDown => sum(&[(EyeLookDownLeft, 0.5), (EyeLookDownRight, 0.5)], 0.0),
        Preset::LookLeft => sum(&[(EyeLookOutLeft, 0.5), (EyeLookInRight, 0.5)], 0.0),
        Preset::LookRight => sum(&[(EyeLookInLeft, 0.5), (EyeLookOutRight, 0.5)], 0.0),
        Preset::Neutral | Preset::Relaxed => return None,
    })
}

/// Parses a morph target name as an ARKit channel, ignoring a `Prefix.` in front.
pub fn channel_for_target(name: &str) -> Option<Channel> {
    Channel::parse(name).or_else(|| {
        let (_, last) = name.rsplit_once(['.', ':', '|'])?;
        Channel::parse(last)
    })
}

impl CompiledMapping {
    /// The automatic mapping of `avatar`: every ARKit-named target, the conventionally named
    /// head and eye nodes (a VRM avatar's humanoid head and eyes) where the avatar has them,
    /// and on a VRM avatar its ARKit-named expressions and the [`fallback`] for its presets.
    pub fn auto(avatar: &Avatar) -> CompiledMapping {
        match Self::build(&MappingFile::default(), avatar) {
            Ok(m) => m,
            // The default file names no node or target explicitly, so nothing can be missing;
            // should that ever change, an empty mapping is still safe to draw.
            Err(_) => CompiledMapping::empty(),
        }
    }

    fn empty() -> CompiledMapping {
        CompiledMapping {
            targets: Vec::new(),
            drivers: Vec::new(),
            groups: Vec::new(),
            head: None,
            head_driver: BoneDriver::default(),
            neck: None,
            neck_driver: BoneDriver::default(),
            left_eye: None,
            right_eye: None,
            eye_look: EyeLook {
                horizontal: 0.0,
                up: 0.0,
                down: 0.0,
                ranges: None,
            },
            jaw: None,
            expressions: Vec::new(),
            expression_slots: Vec::new(),
            frames: BoneFrames::default(),
            wrinkles: Vec::new(),
            sliders: CompiledSliders::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{avatar, frame, vrm_avatar, weights};
    use super::*;

    #[test]
    fn auto_maps_every_dialect_and_the_nodes() {
        let a = avatar();
        let m = CompiledMapping::auto(&a);
        assert_eq!(m.targets.len(), 2);
        assert_eq!(
            m.drivers[m.targets[0].driver].sources,
            [(Channel::JawOpen.into(), 1.0)]
        );
        assert_eq!(
            m.drivers[m.targets[1].driver].sources,
            [(Channel::EyeBlinkLeft.into(), 1.0)]
        );
        assert_eq!(
            (m.head, m.left_eye, m.right_eye),
            (Some(0), Some(1), Some(2))
        );
    }

    #[test]
    fn the_fallback_splits_blinks_and_sums_binds_clamped() {
        use Channel::*;
        let a = vrm_avatar();
        let m = CompiledMapping::auto(&a);
        assert_eq!(m.head, Some(1), "the humanoid head");
        assert_eq!(m.expressions.len(), 5);
        assert_eq!(m.expression_slots, [(0, 0), (0, 1), (0, 2), (0, 3)]);
        let both = weights(&m, &a, &[(EyeBlinkLeft, 1.0), (EyeBlinkRight, 1.0)]);
        assert_eq!(both, [1.0, 1.0, 0.0, 0.0]);
        let half = weights(&m, &a, &[(EyeBlinkLeft, 0.4), (EyeBlinkRight, 0.4)]);
        assert_eq!(half, [0.4, 0.4, 0.0, 0.0]);
        // Left alone: blink = 0, blinkLeft = 1 (binary), blinkRight = 0.
        let left = weights(&m, &a, &[(EyeBlinkLeft, 1.0), (EyeBlinkRight, 0.0)]);
        assert_eq!(left, [1.0, 0.0, 0.0, 0.0]);
        // Binary: 0.3 more on the left snaps to nothing.
        let uneven = weights(&m, &a, &[(EyeBlinkLeft, 0.8), (EyeBlinkRight, 0.5)]);
        assert_eq!(uneven, [0.5, 0.5, 0.0, 0.0]);
        // aa (0.8 on `mouth`) plus happy (0.6 on `mouth`) sums to 1.4 and clamps.
        let w = weights(
            &m,
            &a,
            &[
                (JawOpen, 1.0),
                (MouthSmileLeft, 1.0),
                (MouthSmileRight, 1.0),
            ],
        );
        assert_eq!(w, [0.0, 0.0, 1.0, 0.5]);
        // A frame without any source leaves the rest weights.
        assert_eq!(weights(&m, &a, &[(TongueOut, 1.0)]), [0.0; 4]);
    }

    #[test]
    fn perfect_sync_shapes_skip_the_fallback() {
        use Channel::*;
        let mut a = vrm_avatar();
        a.meshes[0].target_names[3] = "mouthSmileLeft".into();
        let m = CompiledMapping::auto(&a);
        // happy's sources include mouthSmileLeft, which now drives its own shape.
        assert!(m.expressions.iter().all(|e| e.expression != 3));
        assert!(m.expressions.iter().any(|e| e.expression == 4));
        let text = "version = 1\n[targets]\nexpressions = false\n";
        let m = CompiledMapping::compile(&MappingFile::parse(text, "m.toml").unwrap(), &a).unwrap();
        assert!(m.expressions.is_empty());
        assert_eq!(
            weights(&m, &a, &[(MouthSmileLeft, 0.7)]),
            [0.0, 0.0, 0.0, 0.7]
        );
    }

    #[test]
    fn vrm_vowels_follow_their_visemes_or_the_channels_whichever_is_larger() {
        use Channel::*;
        let a = vrm_avatar();
        let m = CompiledMapping::auto(&a);
        // Expression 4 is `A` (preset aa), bound to `mouth` at 0.8.
        let aa = |channels: &[(Channel, f32)], visemes: &[(Viseme, f32)]| {
            let mut f = frame(channels);
            for &(v, w) in visemes {
                f.visemes[v.index()] = w;
            }
            let weights = m.expression_weights(&f);
            weights.iter().find(|(e, _)| *e == 4).map(|&(_, w)| w)
        };
        assert_eq!(aa(&[], &[(Viseme::Aa, 0.8)]), Some(0.8));
        assert_eq!(aa(&[(JawOpen, 0.6)], &[]), Some(0.6));
        assert_eq!(aa(&[(JawOpen, 0.3)], &[(Viseme::Aa, 0.8)]), Some(0.8));
        assert_eq!(aa(&[(JawOpen, 0.9)], &[(Viseme::Aa, 0.2)]), Some(0.9));
        // Another vowel's viseme does not open aa; silence with lip sync on reads 0.
        assert_eq!(aa(&[], &[(Viseme::Oh, 0.7), (Viseme::Sil, 0.3)]), Some(0.0));
        // Neither channels nor lip sync: aa is not driven at all, as before.
        assert_eq!(aa(&[(TongueOut, 1.0)], &[]), None);
        let mut f = frame(&[]);
        f.visemes[Viseme::Aa.index()] = 0.8;
        let mut pose = a.rest_pose();
        m.apply(&f, &mut pose);
        assert!(
            (pose.weights[0][2] - 0.64).abs() < 1e-6,
            "{:?}",
            pose.weights
        );
        // Every vowel's driver reads its own viseme.
        for (preset, viseme) in [
            (Preset::Aa, Viseme::Aa),
            (Preset::Ih, Viseme::Ih),
            (Preset::Ou, Viseme::Ou),
            (Preset::Ee, Viseme::Ee),
            (Preset::Oh, Viseme::Oh),
        ] {
            let mut read = Vec::new();
            fallback(preset)
                .unwrap()
                .each_source(&mut |s, _| read.extend(s.viseme()));
            assert_eq!(read, [viseme], "{preset:?}");
        }
        assert_eq!(m.driven_visemes(), [Viseme::Aa]);
    }

    #[test]
    fn perfect_sync_mouths_take_lip_sync_through_the_channels_only() {
        let mut a = vrm_avatar();
        a.meshes[0].target_names[2] = "jawOpen".into();
        let m = CompiledMapping::auto(&a);
        // jawOpen drives its own shape, so aa is left out, its viseme with it.
        assert!(m.expressions.iter().all(|e| e.expression != 4));
        assert!(m.driven_visemes().is_empty());
    }
}

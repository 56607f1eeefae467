//! Random but plausible looks: a few sliders moved a little, colours from palettes of real skin
//! tones, natural (and now and then fantasy) hair and iris colours. Deterministic for a seed.

use super::{Blush, Colors, Look, Srgb};
use crate::mapping::SliderRange;

/// Skin tones, from very light to very dark.
const SKIN: [u32; 16] = [
    0xffe0bd, 0xffdbac, 0xf9d7c3, 0xf1c6a8, 0xf1c27d, 0xeac086, 0xe0ac69, 0xd1a380, 0xc68642,
    0xa16e4b, 0x8d5524, 0x7d4e2d, 0x6b4423, 0x5c3836, 0x4a2c22, 0x3b2219,
];

/// Natural hair colours: black, browns, auburn and reds, blondes, greys.
const HAIR: [u32; 16] = [
    0x0b0907, 0x1c1512, 0x2e2420, 0x3b3024, 0x4e433f, 0x6a4e42, 0x8d6a4f, 0xa7856a, 0xb89778,
    0xdcc39c, 0xe6cea8, 0xa55728, 0x8d4a43, 0xb55239, 0x9a9a9a, 0xd6d0c8,
];

/// Fantasy hair colours, picked now and then.
const FANTASY_HAIR: [u32; 6] = [0x3b6fd8, 0xd45a9e, 0x7a4fc2, 0x2a9d8f, 0xc8344a, 0xe8e0f5];

/// Iris colours: browns, hazel, amber, greens, blues, grey.
const IRIS: [u32; 12] = [
    0x3b2a1e, 0x4f3422, 0x634e34, 0x8e6f3e, 0x8e7618, 0x497665, 0x3d7a55, 0x1c7847, 0x2e536f,
    0x5d8aa8, 0x6f8fa8, 0x7b8c94,
];

/// Blush colours.
const BLUSH: [u32; 5] = [0xff8a80, 0xf4a7b9, 0xe8828a, 0xd9776b, 0xc9656b];

/// SplitMix64 (Steele, Lea and Flood, 2014): small, fast and good enough for picking looks.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `p`.
    fn chance(&mut self, p: f32) -> bool {
        self.unit() < p
    }

    fn pick(&mut self, palette: &[u32]) -> Srgb {
        Srgb::hex(palette[self.below(palette.len())])
    }
}

/// `v` rounded to two decimals, for tidy preset files.
fn round2(v: f32) -> f32 {
    (v * 100.0).round() / 100.0
}

impl Look {
    /// A random but plausible look for `sliders`, the same for the same seed: two to five
    /// sliders moved from their default, by at most 60% of the way to an end of the range in
    /// nine cases out of ten and 85% in the tenth, to two decimals; a skin tone, a hair colour
    /// (fantasy one time in eight), an iris colour, and blush half the time.
    pub fn random(seed: u64, sliders: &[SliderRange]) -> Look {
        let mut rng = SplitMix64(seed);
        let mut order: Vec<usize> = (0..sliders.len()).collect();
        let moved = (2 + rng.below(4)).min(order.len());
        // A partial Fisher–Yates shuffle: the first `moved` are a random choice.
        for i in 0..moved {
            let j = i + rng.below(order.len() - i);
            order.swap(i, j);
        }
        let mut chosen = order[..moved].to_vec();
        chosen.sort_unstable();
        let mut look = Look::default();
        for i in chosen {
            let s = &sliders[i];
            let reach = if rng.chance(0.1) {
                0.6 + 0.25 * rng.unit()
            } else {
                0.1 + 0.5 * rng.unit()
            };
            let (up, down) = (s.max - s.default, s.default - s.min);
            let upward = if up > 0.0 && down > 0.0 {
                rng.chance(0.5)
            } else {
                up > 0.0
            };
            let v = if upward {
                s.default + reach * up
            } else {
                s.default - reach * down
            };
            let v = round2(v).clamp(s.min, s.max);
            if v != s.default {
                look.sliders.push((s.name.clone(), v));
            }
        }
        let hair = if rng.chance(0.125) {
            rng.pick(&FANTASY_HAIR)
        } else {
            rng.pick(&HAIR)
        };
        look.colors = Colors {
            skin: Some(rng.pick(&SKIN)),
            hair: Some(hair),
            iris: Some(rng.pick(&IRIS)),
            blush: None,
        };
        if rng.chance(0.5) {
            look.colors.blush = Some(Blush {
                color: rng.pick(&BLUSH),
                strength: round2(0.2 + 0.4 * rng.unit()),
            });
        }
        look
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::ranges;
    use super::*;

    #[test]
    fn random_looks_are_deterministic_small_and_in_range() {
        let sliders = ranges();
        assert_eq!(Look::random(7, &sliders), Look::random(7, &sliders));
        assert_ne!(Look::random(7, &sliders), Look::random(8, &sliders));
        let (mut total, mut small) = (0, 0);
        let mut hair = std::collections::HashSet::new();
        for seed in 0..500 {
            let look = Look::random(seed, &sliders);
            assert!((1..=5).contains(&look.sliders.len()), "{look:?}");
            for (name, v) in &look.sliders {
                let s = sliders.iter().find(|s| s.name == *name).unwrap();
                assert!((s.min..=s.max).contains(v), "{name} = {v}");
                assert!(v.abs() <= 0.85, "{name} = {v}");
                total += 1;
                small += usize::from(v.abs() <= 0.6);
            }
            assert!(look.colors.skin.is_some() && look.colors.iris.is_some());
            hair.insert(look.colors.hair.unwrap());
            if let Some(b) = look.colors.blush {
                assert!((0.2..=0.6).contains(&b.strength));
            }
        }
        assert!(small * 10 >= total * 8, "{small} of {total} within 0.6");
        assert!(hair.len() > 15, "{} hair colours", hair.len());
    }

    #[test]
    fn odd_ranges_are_respected() {
        let sliders = [
            SliderRange {
                name: "up_only".into(),
                min: 0.0,
                max: 2.0,
                default: 0.0,
            },
            SliderRange {
                name: "down_only".into(),
                min: -1.0,
                max: 0.5,
                default: 0.5,
            },
        ];
        for seed in 0..100 {
            let look = Look::random(seed, &sliders);
            if let Some(v) = look.get("up_only") {
                assert!(v > 0.0 && v <= 2.0);
            }
            if let Some(v) = look.get("down_only") {
                assert!((-1.0..0.5).contains(&v));
            }
        }
        assert_eq!(Look::random(3, &[]).sliders, []);
    }
}

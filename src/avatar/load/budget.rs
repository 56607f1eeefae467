//! The decoded-texture budget: the bytes of RGBA8 pixels one avatar may keep, planned from the
//! images' headers before any pixel is decoded. An image shared by several textures counts once.
//! When the images do not all fit, the largest are halved (each side, rounded up) until they do,
//! so a file of many oversized images still loads, less sharp, instead of failing or taking
//! gigabytes.
//!
//! A shrunk image is decoded at its full size first (one at a time; [`super::texture::MAX_SIDE`]
//! bounds that size), so shrinking in all may decode at most [`SHRINK_WORK`] budgets of
//! full-size pixels: an image past that is refused, and its textures draw white.

use std::collections::{BinaryHeap, HashMap};

/// How many budgets' worth of full-size pixels shrinking may decode in one load.
pub(super) const SHRINK_WORK: u64 = 8;

/// Bytes of an RGBA8 image of `width` × `height`.
pub(super) fn rgba_bytes(width: u32, height: u32) -> u64 {
    u64::from(width) * u64::from(height) * 4
}

/// Bytes as whole mebibytes, rounded up (for messages).
pub(super) fn mib(bytes: u64) -> u64 {
    bytes.div_ceil(1 << 20)
}

/// `side` halved `shift` times, rounded up, never below 1.
fn halved(side: u32, shift: u32) -> u32 {
    if shift >= 32 {
        1
    } else {
        side.div_ceil(1 << shift).max(1)
    }
}

/// What to do with one image, decided before it is decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Decision {
    /// Decode it at its own size.
    Full,
    /// Decode it, then shrink it to this size.
    Shrink {
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
    },
    /// Do not decode it, for this reason.
    Refuse(String),
}

/// The budget of one load: the plan, and what decoding has used of it.
#[derive(Debug)]
pub(super) struct Budget {
    /// The most bytes of pixels the avatar keeps.
    limit: u64,
    /// The size planned for each image the textures draw from, by image index; `None` for an
    /// image left out (a file with more images than the budget holds at 1×1 each).
    planned: HashMap<usize, Option<(u32, u32)>>,
    /// Bytes planned for images not decoded yet.
    reserved: u64,
    /// Bytes kept by the images decoded so far.
    kept: u64,
    /// Full-size bytes decoded so far to be shrunk.
    shrink_work: u64,
}

impl Budget {
    /// Plans `images` (image index, declared width and height), the images the textures are
    /// expected to draw from, into `limit` bytes: the largest image is halved until the total
    /// fits (of equal sizes, the one listed last, so the first images keep their detail).
    pub(super) fn plan(limit: u64, images: &[(usize, u32, u32)]) -> Budget {
        let mut shifts = vec![0u32; images.len()];
        let mut left_out = vec![false; images.len()];
        let mut total: u64 = images.iter().map(|&(_, w, h)| rgba_bytes(w, h)).sum();
        let mut heap: BinaryHeap<(u64, usize)> = images
            .iter()
            .enumerate()
            .map(|(k, &(_, w, h))| (rgba_bytes(w, h), k))
            .collect();
        while total > limit {
            let Some((bytes, k)) = heap.pop() else {
                break;
            };
            let (_, w, h) = images[k];
            let shift = shifts[k];
            total -= bytes;
            if halved(w, shift) == 1 && halved(h, shift) == 1 {
                left_out[k] = true;
                continue;
            }
            shifts[k] = shift + 1;
            let now = rgba_bytes(halved(w, shift + 1), halved(h, shift + 1));
            total += now;
            heap.push((now, k));
        }
        let planned = images
            .iter()
            .zip(shifts.iter().zip(&left_out))
            .map(|(&(index, w, h), (&shift, &out))| {
                (index, (!out).then(|| (halved(w, shift), halved(h, shift))))
            })
            .collect();
        Budget {
            limit,
            planned,
            reserved: total,
            kept: 0,
            shrink_work: 0,
        }
    }

    /// The budget's size in bytes.
    pub(super) fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes kept by the images decoded so far.
    pub(super) fn kept(&self) -> u64 {
        self.kept
    }

    /// What to do with image `index`, whose header declares `width` × `height`. An image the
    /// plan did not count (a texture's fallback) gets what the plan left over.
    pub(super) fn decide(&mut self, index: usize, width: u32, height: u32) -> Decision {
        let full = rgba_bytes(width, height);
        let target = match self.planned.get(&index) {
            Some(Some(size)) => *size,
            Some(None) => {
                return Decision::Refuse(format!(
                    "the file has more images than the decoded-texture budget of {} MiB holds \
                     even at one pixel each (render.texture_budget_mb); refused before decoding",
                    mib(self.limit)
                ))
            }
            None => {
                let left = self.limit.saturating_sub(self.kept + self.reserved);
                let fits = (0..32)
                    .map(|shift| (halved(width, shift), halved(height, shift)))
                    .find(|&(w, h)| rgba_bytes(w, h) <= left);
                match fits {
                    Some(size) => size,
                    None => {
                        return Decision::Refuse(format!(
                            "{width}×{height} does not fit the {} bytes left of the \
                             decoded-texture budget of {} MiB (render.texture_budget_mb); \
                             refused before decoding",
                            left,
                            mib(self.limit)
                        ))
                    }
                }
            }
        };
        if target == (width, height) {
            return Decision::Full;
        }
        if self.shrink_work + full > SHRINK_WORK * self.limit {
            return Decision::Refuse(format!(
                "{width}×{height} ({} MiB decoded) is over the decoded-texture budget of {} MiB \
                 (render.texture_budget_mb), and shrinking it would mean decoding more than \
                 {} MiB of oversized images in all; refused before decoding",
                mib(full),
                mib(self.limit),
                mib(SHRINK_WORK * self.limit)
            ));
        }
        self.shrink_work += full;
        Decision::Shrink {
            width: target.0,
            height: target.1,
        }
    }

    /// Records how image `index` ended: decoded and kept at `size`, or (`None`) not kept. What
    /// the plan held for it is released either way.
    pub(super) fn settle(&mut self, index: usize, size: Option<(u32, u32)>) {
        if let Some(Some((w, h))) = self.planned.remove(&index) {
            self.reserved = self.reserved.saturating_sub(rgba_bytes(w, h));
        }
        if let Some((w, h)) = size {
            self.kept += rgba_bytes(w, h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn images_that_fit_are_decoded_whole() {
        let mut budget = Budget::plan(64 * MIB, &[(0, 2048, 2048), (3, 1024, 512)]);
        assert_eq!(budget.decide(0, 2048, 2048), Decision::Full);
        budget.settle(0, Some((2048, 2048)));
        assert_eq!(budget.decide(3, 1024, 512), Decision::Full);
        budget.settle(3, Some((1024, 512)));
        assert_eq!(budget.kept(), 18 * MIB);
    }

    #[test]
    fn the_largest_images_are_halved_until_the_plan_fits() {
        // 8192² (256 MiB) and two 4096² (64 MiB each) into 64 MiB: the big one goes to 2048²
        // first, then the others by turns, the last listed first.
        let images = [(0, 4096, 4096), (1, 8192, 8192), (2, 4096, 4096)];
        let mut budget = Budget::plan(64 * MIB, &images);
        let mut kept = 0;
        let mut sizes = Vec::new();
        for &(index, w, h) in &images {
            let size = match budget.decide(index, w, h) {
                Decision::Full => (w, h),
                Decision::Shrink { width, height } => (width, height),
                Decision::Refuse(reason) => panic!("{reason}"),
            };
            budget.settle(index, Some(size));
            kept += rgba_bytes(size.0, size.1);
            sizes.push(size);
        }
        assert!(kept <= 64 * MIB, "{kept}");
        assert_eq!(budget.kept(), kept);
        assert_eq!(sizes, vec![(2048, 2048), (2048, 2048), (2048, 2048)]);
        // Odd sides round up and never reach 0.
        assert_eq!(halved(5, 1), 3);
        assert_eq!(halved(5, 40), 1);
    }

    #[test]
    fn shrinking_is_refused_past_its_work_limit() {
        // Forty 8192² images into 16 MiB: each is planned at 512², but shrinking may decode
        // only eight budgets (128 MiB) of full-size pixels, so none is: 256 MiB each.
        let images: Vec<(usize, u32, u32)> = (0..40).map(|i| (i, 8192, 8192)).collect();
        let mut budget = Budget::plan(16 * MIB, &images);
        let Decision::Refuse(reason) = budget.decide(0, 8192, 8192) else {
            panic!("an 8192² image shrunk with a 128 MiB allowance");
        };
        assert!(reason.contains("render.texture_budget_mb"), "{reason}");
        // 2048² images (16 MiB each) shrink eight at a time, then are refused.
        let images: Vec<(usize, u32, u32)> = (0..20).map(|i| (i, 2048, 2048)).collect();
        let mut budget = Budget::plan(16 * MIB, &images);
        let decisions: Vec<Decision> = images
            .iter()
            .map(|&(i, w, h)| budget.decide(i, w, h))
            .collect();
        let shrunk = decisions
            .iter()
            .filter(|d| matches!(d, Decision::Shrink { .. }))
            .count();
        assert_eq!(shrunk, 8);
        assert!(matches!(decisions[19], Decision::Refuse(_)));
    }

    #[test]
    fn an_image_the_plan_did_not_count_gets_what_is_left() {
        let mut budget = Budget::plan(16 * MIB, &[(0, 1024, 1024)]);
        // 4 MiB planned for image 0, so a 2048² fallback (16 MiB) is halved to fit 12 MiB.
        assert_eq!(
            budget.decide(5, 2048, 2048),
            Decision::Shrink {
                width: 1024,
                height: 1024
            }
        );
        budget.settle(5, Some((1024, 1024)));
        // Image 0 failed to decode: its share is released.
        budget.settle(0, None);
        assert_eq!(budget.decide(6, 2048, 1024), Decision::Full);
        budget.settle(6, Some((2048, 1024)));
        assert_eq!(budget.decide(7, 1024, 1024), Decision::Full);
        budget.settle(7, Some((1024, 1024)));
        assert_eq!(budget.kept(), 16 * MIB);
        // Nothing is left, not even for one pixel.
        assert!(matches!(budget.decide(8, 1, 1), Decision::Refuse(_)));
    }

    #[test]
    fn more_images_than_pixels_leaves_some_out() {
        let images: Vec<(usize, u32, u32)> = (0..10).map(|i| (i, 2, 2)).collect();
        let mut budget = Budget::plan(20, &images);
        let refused = images
            .iter()
            .filter(|&&(i, w, h)| matches!(budget.decide(i, w, h), Decision::Refuse(_)))
            .count();
        assert_eq!(refused, 5);
    }
}

//! Levels of detail (glTF `MSFT_lod` on nodes): which nodes stand in for one another, and which
//! level a given screen coverage picks.
//!
//! A group's level 0 is the node that carries the extension; levels 1, 2, … are the nodes its
//! `ids` list, each (with its subtree) a cheaper replacement for level 0 and its subtree.
//! Exactly one level of a group is drawn each frame; facewire never culls the avatar, so below
//! the last threshold the last level still draws.
//!
//! See: <https://github.com/KhronosGroup/glTF/tree/main/extensions/2.0/Vendor/MSFT_lod>

/// The coverage thresholds used when a group gives none (`extras.MSFT_screencoverage`): level 0
/// from half the viewport's height up, level 1 from a quarter, level 2 (or the last) below.
pub const DEFAULT_COVERAGE: [f32; 2] = [0.5, 0.25];

/// One `MSFT_lod` group: the nodes that replace one another, best first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LodGroup {
    /// Node indices, level 0 (the node carrying the extension) first.
    pub levels: Vec<usize>,
    /// Per level, the smallest screen coverage (the fraction of the viewport's height the
    /// node's bounds cover) at which that level is used, descending. Empty: facewire's
    /// [`DEFAULT_COVERAGE`].
    pub coverage: Vec<f32>,
}

impl LodGroup {
    /// The level drawn at screen coverage `coverage` (a fraction of the viewport's height): the
    /// first level whose threshold it reaches, else the last level. Levels past the end of the
    /// thresholds have none (they take everything below the last one given). A non-finite
    /// coverage picks level 0.
    pub fn level_for(&self, coverage: f32) -> usize {
        let last = self.levels.len().saturating_sub(1);
        if !coverage.is_finite() {
            return 0;
        }
        let thresholds: &[f32] = if self.coverage.is_empty() {
            &DEFAULT_COVERAGE
        } else {
            &self.coverage
        };
        thresholds
            .iter()
            .position(|&t| coverage >= t)
            .unwrap_or(thresholds.len())
            .min(last)
    }

    /// The level a fixed choice `level` draws: that level, or the last one if the group has
    /// fewer.
    pub fn clamp(&self, level: usize) -> usize {
        level.min(self.levels.len().saturating_sub(1))
    }
}

impl super::Avatar {
    /// Whether node `node` lies inside a coarser level of a group (a level past 0, or in such a
    /// level's subtree): drawn only in place of a finer level.
    pub fn in_coarser_level(&self, node: usize) -> bool {
        let coarser = |n: usize| self.lods.iter().any(|g| g.levels[1..].contains(&n));
        let mut at = Some(node);
        // A well-formed hierarchy has no cycles; the step bound guards against one anyway.
        for _ in 0..=self.nodes.len() {
            let Some(n) = at else { return false };
            if coarser(n) {
                return true;
            }
            at = self.nodes.get(n).and_then(|n| n.parent);
        }
        false
    }

    /// Whether mesh `mesh` is drawn only as a coarser level of detail: some node shows it and
    /// every such node lies [`in a coarser level`](Self::in_coarser_level). Lists of what the
    /// avatar's targets do (the control panel's) skip these meshes, which repeat the finest
    /// level's targets under the same names.
    pub fn mesh_is_coarser_level(&self, mesh: usize) -> bool {
        let mut users = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.mesh == Some(mesh))
            .peekable();
        users.peek().is_some() && users.all(|(i, _)| self.in_coarser_level(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_thresholds_pick_by_half_and_quarter() {
        let group = LodGroup {
            levels: vec![4, 5, 6],
            coverage: Vec::new(),
        };
        assert_eq!(group.level_for(2.0), 0);
        assert_eq!(group.level_for(0.5), 0);
        assert_eq!(group.level_for(0.49), 1);
        assert_eq!(group.level_for(0.25), 1);
        assert_eq!(group.level_for(0.1), 2);
        assert_eq!(group.level_for(0.0), 2);
        assert_eq!(group.level_for(f32::NAN), 0);
        assert_eq!(group.level_for(f32::INFINITY), 0);
        let two = LodGroup {
            levels: vec![4, 5],
            coverage: Vec::new(),
        };
        assert_eq!(two.level_for(0.01), 1, "never past the last level");
    }

    #[test]
    fn file_thresholds_and_short_lists() {
        let group = LodGroup {
            levels: vec![0, 1, 2],
            coverage: vec![0.5, 0.2, 0.01],
        };
        assert_eq!(group.level_for(0.6), 0);
        assert_eq!(group.level_for(0.3), 1);
        assert_eq!(group.level_for(0.05), 2);
        // Below the last threshold the last level still draws: the avatar is never culled.
        assert_eq!(group.level_for(0.001), 2);
        let short = LodGroup {
            levels: vec![0, 1, 2],
            coverage: vec![0.3],
        };
        assert_eq!(short.level_for(0.4), 0);
        assert_eq!(short.level_for(0.1), 1);
        assert_eq!(short.clamp(7), 2);
        assert_eq!(short.clamp(1), 1);
        assert_eq!(LodGroup::default().clamp(3), 0);
    }
}

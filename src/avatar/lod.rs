//! Levels of detail (glTF `MSFT_lod` on nodes): which nodes stand in for one another, and which
//! level a given screen coverage picks.
//!
//! A group's level 0 is the node that carries the extension; levels 1, 2, … are the nodes its
//! `ids` list, each (with its subtree) a cheaper replacement for level 0 and its subtree.
//! Exactly one level of a group is drawn each frame; facewire never culls the avatar, so below
//! the last threshold the last level still draws.
//!
//! See: <https://github.com/KhronosGroup/glTF/tree/main/extensions/2.0/Vendor/MSFT_lod>

use std::collections::HashSet;

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
        let coarser: HashSet<usize> = self.coarser_levels().collect();
        let mut at = Some(node);
        // A well-formed hierarchy has no cycles; the step bound guards against one anyway.
        for _ in 0..=self.nodes.len() {
            let Some(n) = at else { return false };
            if coarser.contains(&n) {
                return true;
            }
            at = self.nodes.get(n).and_then(|n| n.parent);
        }
        false
    }

    /// Whether mesh `mesh` is drawn only as a coarser level of detail: some node shows it and
    /// every such node lies [`in a coarser level`](Self::in_coarser_level). Lists of what the
    /// avatar's targets do (the control panel's) skip these meshes, which repeat the finest
    /// level's targets under the same names. Takes time in proportion to the nodes and levels,
    /// however deep the hierarchy.
    pub fn mesh_is_coarser_level(&self, mesh: usize) -> bool {
        let mut users = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.mesh == Some(mesh))
            .peekable();
        if users.peek().is_none() {
            return false;
        }
        let coarser = self.coarser_nodes();
        users.all(|(i, _)| coarser[i])
    }

    /// Every level past 0 of every group.
    fn coarser_levels(&self) -> impl Iterator<Item = usize> + '_ {
        self.lods
            .iter()
            .flat_map(|g| g.levels.iter().skip(1).copied())
    }

    /// Per node, whether it lies inside a coarser level: each such level's subtree, marked once
    /// (indices out of range and repeats skipped, so a malformed hierarchy cannot loop).
    fn coarser_nodes(&self) -> Vec<bool> {
        let mut marked = vec![false; self.nodes.len()];
        let mut stack: Vec<usize> = self.coarser_levels().collect();
        while let Some(n) = stack.pop() {
            if n >= marked.len() || std::mem::replace(&mut marked[n], true) {
                continue;
            }
            stack.extend(self.nodes[n].children.iter().copied());
        }
        marked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::avatar::{Avatar, Node};

    #[test]
    fn coarser_levels_are_found_however_deep_the_hierarchy() {
        // A chain of nodes, each showing mesh 0; the chain from node 5000 down is a coarser
        // level of the group whose finest level is node `depth`. Node 0 shows mesh 1 too, and node 5001 mesh 1 again.
        let depth: usize = 20_000;
        let mut nodes: Vec<Node> = (0..depth)
            .map(|k| Node {
                parent: k.checked_sub(1),
                children: if k + 1 < depth { vec![k + 1] } else { vec![] },
                mesh: Some(0),
                ..Node::default()
            })
            .collect();
        nodes[0].mesh = Some(1);
        nodes[5001].mesh = Some(1);
        nodes.push(Node {
            mesh: Some(2),
            ..Node::default()
        });
        let mut avatar = Avatar {
            nodes,
            roots: vec![0, depth],
            lods: vec![LodGroup {
                levels: vec![depth, 5000],
                coverage: Vec::new(),
            }],
            ..Avatar::default()
        };
        assert!(!avatar.mesh_is_coarser_level(0), "nodes above 5000 show it");
        assert!(!avatar.mesh_is_coarser_level(1), "node 0 shows it");
        assert!(!avatar.mesh_is_coarser_level(2), "level 0 shows it");
        assert!(!avatar.mesh_is_coarser_level(3), "no node shows it");
        assert!(avatar.in_coarser_level(depth - 1) && avatar.in_coarser_level(5000));
        assert!(!avatar.in_coarser_level(4999) && !avatar.in_coarser_level(depth));
        for node in &mut avatar.nodes[..5000] {
            node.mesh = Some(3);
        }
        assert!(
            avatar.mesh_is_coarser_level(0),
            "only the level shows it now"
        );
        assert!(!avatar.mesh_is_coarser_level(3));
    }

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

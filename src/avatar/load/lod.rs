//! `MSFT_lod` on nodes: reads each node's `ids` and `extras.MSFT_screencoverage` into
//! [`LodGroup`]s, keeping only what can be drawn consistently.
//!
//! Hostile or careless files are expected. An id out of range, naming the node itself, repeated,
//! already a level of another group, or an ancestor or descendant of another level of the group
//! is dropped (a level hidden with its subtree must never hide the level chosen); a group left
//! with one level is dropped. A node that is already a level of an earlier group cannot start
//! its own (this also breaks cycles). Coverage that is not a list of finite, non-negative,
//! non-increasing numbers, or that no longer lines up because ids were dropped, is ignored: the
//! group uses the default thresholds. None of this fails the load.
//!
//! The checks are bounded, so that no list of ids makes loading slow: a group keeps at most
//! [`MAX_LEVELS`] levels (the ids after are dropped unread), and the walks up the hierarchy
//! that find related levels take at most [`MAX_STEPS`] steps in all for one file, the groups
//! not yet read when they run out being ignored.
//!
//! The extension's own example keeps the lower levels out of the scene; facewire's files list
//! them in the scene next to level 0. A parentless level the scene does not reach is placed
//! where level 0 is (a child of its parent, or a root), so it draws in its place either way.

use super::{label, Loader};
use crate::avatar::{LodGroup, Node};

/// The name of the extension on a node.
const EXTENSION: &str = "MSFT_lod";

/// The key in a node's `extras` with the per-level coverage thresholds.
const COVERAGE: &str = "MSFT_screencoverage";

/// How many problems are logged one by one before the rest are only counted.
const MAX_WARNINGS: usize = 8;

/// The most levels one group keeps, level 0 included; real files have two to four.
pub(crate) const MAX_LEVELS: usize = 16;

/// The most steps up the hierarchy the relatedness checks of one file take, all groups together:
/// far beyond what a real file needs (its levels times its depth), and a few milliseconds.
pub(crate) const MAX_STEPS: usize = 1 << 20;

/// One node's `MSFT_lod`, as the file gives it.
#[derive(Debug, Clone)]
pub(super) struct RawLod {
    /// The node carrying the extension.
    pub(super) node: usize,
    /// The extension object's `ids`, unchecked (`Null` when absent).
    pub(super) ids: serde_json::Value,
    /// The node's `extras.MSFT_screencoverage`, unchecked.
    pub(super) coverage: Option<serde_json::Value>,
}

impl Loader<'_> {
    /// Every node's `MSFT_lod` extension, unchecked, in node order.
    pub(super) fn raw_lods(&self) -> Vec<RawLod> {
        self.document
            .nodes()
            .filter_map(|node| {
                let extension = node.extension_value(EXTENSION)?;
                let coverage = node.extras().as_ref().and_then(|raw| {
                    let value: serde_json::Value = serde_json::from_str(raw.get()).ok()?;
                    value.get(COVERAGE).cloned()
                });
                Some(RawLod {
                    node: node.index(),
                    ids: extension.get("ids").cloned().unwrap_or_default(),
                    coverage,
                })
            })
            .collect()
    }
}

/// Logs the first [`MAX_WARNINGS`] problems of a file, then counts the rest.
struct Warnings<'a> {
    file: &'a str,
    count: usize,
}

impl Warnings<'_> {
    fn warn(&mut self, node: &str, problem: &str) {
        self.count += 1;
        if self.count <= MAX_WARNINGS {
            tracing::warn!(file = self.file, node, "{EXTENSION}: {problem}");
        }
    }

    fn finish(self) {
        if self.count > MAX_WARNINGS {
            tracing::warn!(
                file = self.file,
                more = self.count - MAX_WARNINGS,
                "{EXTENSION}: further problems not shown"
            );
        }
    }
}

/// Builds the consistent groups out of `raw` (see the module docs), placing unreached
/// parentless levels next to their level 0 in `nodes` and `roots`.
pub(super) fn groups(
    raw: &[RawLod],
    nodes: &mut [Node],
    roots: &mut Vec<usize>,
    file: &str,
) -> Vec<LodGroup> {
    let count = nodes.len();
    let mut reached = vec![false; count];
    for &root in roots.iter() {
        mark_subtree(nodes, root, &mut reached);
    }
    let mut claimed = vec![false; count];
    let mut warnings = Warnings { file, count: 0 };
    let mut groups = Vec::new();
    let mut steps = 0;
    for (read, lod) in raw.iter().enumerate() {
        let first = lod.node;
        if first >= count {
            continue;
        }
        let name = label("node", nodes[first].name.as_deref(), first);
        if steps >= MAX_STEPS {
            warnings.warn(
                &name,
                &format!(
                    "the hierarchy is too deep to check more levels; this group and the {} after it are ignored",
                    raw.len() - read - 1
                ),
            );
            break;
        }
        if claimed[first] {
            warnings.warn(
                &name,
                "the node is already a level of another group; its own levels are ignored",
            );
            continue;
        }
        if !reached[first] {
            warnings.warn(&name, "the node is not in the drawn scene; ignored");
            continue;
        }
        let Some(ids) = lod.ids.as_array() else {
            warnings.warn(&name, "`ids` is not an array; ignored");
            continue;
        };
        let mut levels = vec![first];
        let mut dropped = false;
        for (k, id) in ids.iter().enumerate() {
            if levels.len() == MAX_LEVELS {
                warnings.warn(
                    &name,
                    &format!(
                        "more than {MAX_LEVELS} levels; the last {} ids are dropped",
                        ids.len() - k
                    ),
                );
                dropped = true;
                break;
            }
            let problem = match id.as_u64().map(|i| i as usize) {
                None => Some("an id is not a node index".to_owned()),
                Some(i) if i >= count => Some(format!("id {i} is out of range")),
                Some(i) if levels.contains(&i) => {
                    Some(format!("id {i} names a level of the same group again"))
                }
                Some(i) if claimed[i] => {
                    Some(format!("id {i} is already a level of another group"))
                }
                Some(i) if levels.iter().any(|&l| related(nodes, l, i, &mut steps)) => {
                    Some(if steps >= MAX_STEPS {
                        format!("id {i} could not be checked: the hierarchy is too deep")
                    } else {
                        format!(
                            "id {i} lies inside another level's subtree, or holds one in its own"
                        )
                    })
                }
                Some(i) if !reached[i] && nodes[i].parent.is_some() => Some(format!(
                    "id {i} is the child of a node the scene does not draw"
                )),
                Some(i) => {
                    levels.push(i);
                    None
                }
            };
            if let Some(problem) = problem {
                warnings.warn(&name, &format!("{problem}; that level is dropped"));
                dropped = true;
            }
        }
        if levels.len() < 2 {
            warnings.warn(&name, "no usable lower level; ignored");
            continue;
        }
        let coverage = match &lod.coverage {
            None => Vec::new(),
            Some(_) if dropped => {
                warnings.warn(
                    &name,
                    "coverage ignored, as levels were dropped; using the defaults",
                );
                Vec::new()
            }
            Some(value) => thresholds(value).unwrap_or_else(|| {
                warnings.warn(
                    &name,
                    "MSFT_screencoverage is not a list of finite, non-negative, non-increasing numbers; using the defaults",
                );
                Vec::new()
            }),
        };
        for &level in &levels {
            claimed[level] = true;
        }
        for &level in &levels[1..] {
            if reached[level] {
                continue;
            }
            match nodes[first].parent {
                Some(parent) => {
                    nodes[level].parent = Some(parent);
                    nodes[parent].children.push(level);
                }
                None => roots.push(level),
            }
            mark_subtree(nodes, level, &mut reached);
        }
        groups.push(LodGroup { levels, coverage });
    }
    warnings.finish();
    groups
}

/// The thresholds of an `MSFT_screencoverage` value, or `None` when they are unusable.
fn thresholds(value: &serde_json::Value) -> Option<Vec<f32>> {
    let list = value
        .as_array()?
        .iter()
        .map(|v| v.as_f64().map(|c| c as f32))
        .collect::<Option<Vec<f32>>>()?;
    let usable = list.iter().all(|c| c.is_finite() && *c >= 0.0)
        && list.windows(2).all(|pair| pair[0] >= pair[1]);
    usable.then_some(list)
}

/// Marks `node` and everything below it as reached (indices out of range and repeats are
/// skipped, so a malformed hierarchy cannot loop).
fn mark_subtree(nodes: &[Node], node: usize, reached: &mut [bool]) {
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n >= nodes.len() || std::mem::replace(&mut reached[n], true) {
            continue;
        }
        stack.extend(nodes[n].children.iter().copied());
    }
}

/// Whether `a` and `b` are the same node or one lies in the other's subtree, counting the
/// steps up the hierarchy in `steps`. Once they reach [`MAX_STEPS`] every pair counts as
/// related, so nothing more is accepted unchecked.
fn related(nodes: &[Node], a: usize, b: usize, steps: &mut usize) -> bool {
    is_ancestor(nodes, a, b, steps) || is_ancestor(nodes, b, a, steps)
}

/// Whether `ancestor` is `node` or one of its ancestors (at most `nodes.len()` steps up, and
/// none past [`MAX_STEPS`] in `steps`, which counts them: then `true`).
fn is_ancestor(nodes: &[Node], ancestor: usize, node: usize, steps: &mut usize) -> bool {
    let mut at = Some(node);
    for _ in 0..=nodes.len() {
        if *steps >= MAX_STEPS {
            return true;
        }
        *steps += 1;
        match at {
            Some(n) if n == ancestor => return true,
            Some(n) => at = nodes.get(n).and_then(|n| n.parent),
            None => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avatar::load::load_slice;
    use serde_json::json;

    fn node(parent: Option<usize>, children: Vec<usize>) -> Node {
        Node {
            parent,
            children,
            ..Node::default()
        }
    }

    fn raw(node: usize, ids: serde_json::Value, coverage: Option<serde_json::Value>) -> RawLod {
        RawLod {
            node,
            ids,
            coverage,
        }
    }

    /// A head (0) with a face (1) and two siblings (2, 3), and a loose root (4).
    fn head() -> (Vec<Node>, Vec<usize>) {
        let nodes = vec![
            node(None, vec![1, 2, 3]),
            node(Some(0), vec![]),
            node(Some(0), vec![]),
            node(Some(0), vec![]),
            node(None, vec![]),
        ];
        (nodes, vec![0, 4])
    }

    #[test]
    fn a_group_reads_levels_and_coverage() {
        let (mut nodes, mut roots) = head();
        let groups = groups(
            &[raw(1, json!([2, 3]), Some(json!([0.6, 0.3, 0.0])))],
            &mut nodes,
            &mut roots,
            "t",
        );
        assert_eq!(
            groups,
            [LodGroup {
                levels: vec![1, 2, 3],
                coverage: vec![0.6, 0.3, 0.0],
            }]
        );
        assert_eq!(roots, [0, 4], "levels in the scene stay where they are");
    }

    #[test]
    fn hostile_ids_are_dropped_and_the_rest_kept() {
        let (mut nodes, mut roots) = head();
        let groups = groups(
            &[raw(
                1,
                json!([1, 99, -1, "x", 2.5, 2, 2, 0]),
                Some(json!([0.5, 0.2])),
            )],
            &mut nodes,
            &mut roots,
            "t",
        );
        // 1 is the node itself, 99 out of range, -1, "x" and 2.5 no index, the second 2 a
        // repeat, 0 the face's own parent; the coverage no longer lines up.
        assert_eq!(
            groups,
            [LodGroup {
                levels: vec![1, 2],
                coverage: vec![],
            }]
        );
    }

    #[test]
    fn nothing_usable_means_no_group() {
        let (mut nodes, mut roots) = head();
        for ids in [json!([]), json!({"a": 1}), json!(null), json!([1, 7])] {
            assert!(groups(&[raw(1, ids, None)], &mut nodes, &mut roots, "t").is_empty());
        }
    }

    #[test]
    fn a_node_joins_one_group_and_cycles_break() {
        let (mut nodes, mut roots) = head();
        let groups = groups(
            &[
                raw(1, json!([2]), None),
                // A cycle back to 1, and a second claim on 2.
                raw(2, json!([1]), None),
                raw(3, json!([2]), None),
            ],
            &mut nodes,
            &mut roots,
            "t",
        );
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].levels, [1, 2]);
    }

    #[test]
    fn bad_coverage_falls_back_to_the_defaults() {
        for coverage in [
            json!([0.2, 0.5]),
            json!([0.5, -0.1]),
            json!("0.5"),
            json!([0.5, null]),
            json!([1e39, 0.1]),
        ] {
            let (mut nodes, mut roots) = head();
            let groups = groups(
                &[raw(1, json!([2]), Some(coverage.clone()))],
                &mut nodes,
                &mut roots,
                "t",
            );
            assert_eq!(groups[0].coverage, Vec::<f32>::new(), "{coverage}");
        }
    }

    #[test]
    fn levels_outside_the_scene_take_level_0s_place() {
        // Node 5 is parentless and in no scene; node 6 hangs under it.
        let (mut nodes, mut roots) = head();
        nodes.push(node(None, vec![6]));
        nodes.push(node(Some(5), vec![]));
        let found = groups(&[raw(1, json!([5, 6]), None)], &mut nodes, &mut roots, "t");
        // 6 lies in 5's subtree, so only 5 is a level; it becomes the face's sibling.
        assert_eq!(found[0].levels, [1, 5]);
        assert_eq!(nodes[5].parent, Some(0));
        assert!(nodes[0].children.contains(&5));
        // A root's unreached level becomes a root.
        let (mut nodes, mut roots) = head();
        nodes.push(node(None, vec![]));
        let found = groups(&[raw(4, json!([5]), None)], &mut nodes, &mut roots, "t");
        assert_eq!(found[0].levels, [4, 5]);
        assert_eq!(roots, [0, 4, 5]);
        // A level under an undrawn parent cannot draw in place of level 0.
        let (mut nodes, mut roots) = head();
        nodes.push(node(None, vec![6]));
        nodes.push(node(Some(5), vec![]));
        assert!(groups(&[raw(1, json!([6]), None)], &mut nodes, &mut roots, "t").is_empty());
    }

    #[test]
    fn a_group_keeps_at_most_max_levels() {
        // A root with 40 loose children, the first listing all the others.
        let mut nodes = vec![node(None, (1..=40).collect())];
        nodes.extend((1..=40).map(|_| node(Some(0), vec![])));
        let mut roots = vec![0];
        let ids: Vec<usize> = (2..=40).chain(2..=40).collect();
        let found = groups(
            &[raw(1, json!(ids), Some(json!([0.5, 0.2])))],
            &mut nodes,
            &mut roots,
            "t",
        );
        assert_eq!(found.len(), 1);
        let expected: Vec<usize> = (1..=MAX_LEVELS).collect();
        assert_eq!(found[0].levels, expected);
        assert!(found[0].coverage.is_empty(), "ids were dropped");
    }

    #[test]
    fn a_deep_hierarchy_is_checked_within_the_step_budget() {
        // A root (0) with a chain of `depth` nodes (1..=depth) and `leaves` loose children; each
        // of the deepest `leaves` chain nodes asks for one leaf as its lower level. Every check
        // walks up the whole chain, `leaves * depth` steps in all, beyond the budget: the groups
        // read before it ran out are kept, the rest ignored, and nothing takes long.
        let (depth, leaves) = (3000, 1000);
        let mut nodes = vec![node(None, vec![1])];
        nodes.extend((1..=depth).map(|k| node(Some(k - 1), vec![k + 1])));
        nodes[depth].children.clear();
        nodes[0].children.extend(depth + 1..=depth + leaves);
        nodes.extend((0..leaves).map(|_| node(Some(0), vec![])));
        let mut roots = vec![0];
        let raw: Vec<RawLod> = (0..leaves)
            .map(|k| raw(depth - k, json!([depth + 1 + k]), None))
            .collect();
        assert!(leaves * depth > MAX_STEPS);
        let started = std::time::Instant::now();
        let found = groups(&raw, &mut nodes, &mut roots, "t");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert!(!found.is_empty() && found.len() < leaves, "{}", found.len());
        assert!(
            found.len() >= MAX_STEPS / (2 * depth + 4),
            "{}",
            found.len()
        );
        for (k, group) in found.iter().enumerate() {
            assert_eq!(group.levels, [depth - k, depth + 1 + k]);
        }
    }

    #[test]
    fn the_loader_reads_the_extension_and_ignores_a_broken_one() {
        let doc = |lod: &str| {
            format!(
                r#"{{"asset":{{"version":"2.0"}},"extensionsUsed":["MSFT_lod"],
                "scenes":[{{"nodes":[0,1,2]}}],
                "nodes":[{{"name":"High"{lod}}},{{"name":"Mid"}},{{"name":"Low"}}]}}"#
            )
            .into_bytes()
        };
        let avatar = load_slice(
            &doc(
                r#","extensions":{"MSFT_lod":{"ids":[1,2]}},"extras":{"MSFT_screencoverage":[0.5,0.2,0.01]}"#,
            ),
            "lod",
        )
        .unwrap();
        assert_eq!(
            avatar.lods,
            [LodGroup {
                levels: vec![0, 1, 2],
                coverage: vec![0.5, 0.2, 0.01],
            }]
        );
        for broken in [
            r#","extensions":{"MSFT_lod":{"ids":"all"}}"#,
            r#","extensions":{"MSFT_lod":{"ids":[0, 40]}}"#,
            r#","extensions":{"MSFT_lod":7}"#,
        ] {
            let avatar = load_slice(&doc(broken), "broken").unwrap();
            assert!(avatar.lods.is_empty(), "{broken}");
            assert_eq!(avatar.roots, [0, 1, 2]);
        }
        // Required is fine too: facewire reads the extension.
        let required = String::from_utf8(doc(r#","extensions":{"MSFT_lod":{"ids":[2]}}"#))
            .unwrap()
            .replace(
                r#""extensionsUsed":["MSFT_lod"]"#,
                r#""extensionsUsed":["MSFT_lod"],"extensionsRequired":["MSFT_lod"]"#,
            );
        let avatar = load_slice(required.as_bytes(), "required").unwrap();
        assert_eq!(avatar.lods[0].levels, [0, 2]);
    }
}

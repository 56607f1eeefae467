//! `facewire check`'s report: a mapping file's errors against an avatar, the channels that drive
//! nothing (and the vowel visemes, once the mapping routes any), the targets and VRM expressions
//! nothing drives and the groups that can sum above 1.

use std::fmt;

use super::file::GroupMode;
use super::{CompiledMapping, MappingError, MappingFile};
use crate::arkit::{Channel, Viseme};
use crate::avatar::Avatar;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// The mapping cannot be used.
    Error,
    /// The mapping works but probably not as meant.
    Warning,
    /// Worth knowing, often intended.
    Note,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        })
    }
}

/// One line of a [`CheckReport`].
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    /// An error that stops the mapping compiling (one line, with its position and hint).
    Error(String),
    /// An ARKit channel that drives no target and no node.
    UnusedChannel(Channel),
    /// A vowel viseme that drives nothing while the mapping routes other visemes (a mapping
    /// that routes none leaves lip sync to the ARKit channels, and is not told about each).
    UnusedViseme(Viseme),
    /// A morph target no channel drives (it stays at its rest weight).
    UndrivenTarget {
        /// The target's name.
        target: String,
        /// The mesh's name, or its index.
        mesh: String,
    },
    /// A VRM expression no channel drives (`name` as a mapping file writes it, `vrm:...`).
    UndrivenExpression {
        /// The expression, with the `vrm:` prefix.
        name: String,
        /// Its preset, if it implements one and its name differs from it.
        preset: Option<&'static str>,
    },
    /// A group without normalisation or exclusivity whose members can sum above 1.
    GroupCanExceedOne {
        /// The group's name.
        group: String,
        /// The largest possible sum.
        max_sum: f32,
    },
}

impl Finding {
    /// How serious it is.
    pub fn severity(&self) -> Severity {
        match self {
            Finding::Error(_) => Severity::Error,
            Finding::GroupCanExceedOne { .. } => Severity::Warning,
            Finding::UnusedChannel(_)
            | Finding::UnusedViseme(_)
            | Finding::UndrivenTarget { .. }
            | Finding::UndrivenExpression { .. } => Severity::Note,
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.severity())?;
        match self {
            Finding::Error(e) => f.write_str(e),
            Finding::UnusedChannel(c) => write!(f, "channel `{c}` drives nothing"),
            Finding::UnusedViseme(v) => write!(
                f,
                "viseme `{}{}` drives nothing",
                super::VISEME_PREFIX,
                v.name()
            ),
            Finding::UndrivenTarget { target, mesh } => {
                write!(f, "target `{target}` (mesh {mesh}) is driven by nothing")
            }
            Finding::UndrivenExpression { name, preset } => match preset {
                Some(p) => write!(f, "expression `{name}` (preset {p}) is driven by nothing"),
                None => write!(f, "expression `{name}` is driven by nothing"),
            },
            Finding::GroupCanExceedOne { group, max_sum } => write!(
                f,
                "group `{group}` can sum to {max_sum} (above 1); set mode = \"normalise\" if its \
                 shapes are mutually exclusive"
            ),
        }
    }
}

/// What `facewire check` prints: every finding, errors first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CheckReport {
    /// The findings, errors first, then warnings, then notes.
    pub findings: Vec<Finding>,
}

impl CheckReport {
    /// Whether any finding is an error.
    pub fn has_errors(&self) -> bool {
        self.findings
            .iter()
            .any(|f| f.severity() == Severity::Error)
    }

    /// The channels reported as driving nothing.
    pub fn unused_channels(&self) -> impl Iterator<Item = Channel> + '_ {
        self.findings.iter().filter_map(|f| match f {
            Finding::UnusedChannel(c) => Some(*c),
            _ => None,
        })
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.findings.is_empty() {
            return writeln!(f, "ok: no problems found");
        }
        for finding in &self.findings {
            writeln!(f, "{finding}")?;
        }
        Ok(())
    }
}

/// Checks a parsed mapping file against `avatar`.
pub fn check(file: &MappingFile, avatar: &Avatar) -> CheckReport {
    check_with(file, avatar, Vec::new())
}

/// Only errors, in file order: the mapping cannot be used, and what it would drive is moot.
fn errors_only(mut errors: Vec<MappingError>) -> CheckReport {
    errors.sort_by_key(MappingError::position);
    CheckReport {
        findings: errors
            .iter()
            .map(|e| Finding::Error(e.one_line()))
            .collect(),
    }
}

/// Checks `file` against `avatar`, `errors` (from parsing it) reported with its own.
fn check_with(file: &MappingFile, avatar: &Avatar, mut errors: Vec<MappingError>) -> CheckReport {
    let compiled = match CompiledMapping::build(file, avatar) {
        Ok(m) if errors.is_empty() => m,
        Ok(_) => return errors_only(errors),
        Err(more) => {
            errors.extend(more);
            return errors_only(errors);
        }
    };
    let mut findings = Vec::new();
    for (g, group) in compiled.groups.iter().enumerate() {
        if group.mode != GroupMode::Free {
            continue;
        }
        let max_sum: f32 = group
            .members
            .iter()
            .map(|slots| {
                slots
                    .first()
                    .map_or(0.0, |&slot| max_weight(&compiled, avatar, slot))
            })
            .sum();
        if max_sum > 1.0 + 1e-6 {
            findings.push(Finding::GroupCanExceedOne {
                group: file
                    .groups
                    .0
                    .get(g)
                    .map_or_else(|| group.name.clone(), |(n, _)| n.get_ref().clone()),
                max_sum,
            });
        }
    }
    let driven = compiled.driven_mask();
    for c in Channel::ALL {
        if !driven.contains(c) {
            findings.push(Finding::UnusedChannel(c));
        }
    }
    // `sil` is the mouth at rest, which needs no shape of its own.
    let visemes = compiled.driven_visemes();
    if !visemes.is_empty() {
        for v in Viseme::ALL {
            if v != Viseme::Sil && !visemes.contains(&v) {
                findings.push(Finding::UnusedViseme(v));
            }
        }
    }
    // A corrective (`a*b`) is driven by its two inputs.
    let correctives = crate::avatar::correctives::Correctives::resolve(avatar);
    for (mesh, m) in avatar.meshes.iter().enumerate() {
        for (target, name) in m.target_names.iter().enumerate() {
            let by_target = compiled
                .targets
                .iter()
                .any(|b| b.mesh == mesh && b.target == target)
                || compiled.sliders.drives(mesh, target)
                || correctives.drives(mesh, target);
            if !by_target
                && compiled
                    .expression_slots
                    .binary_search(&(mesh, target))
                    .is_err()
            {
                findings.push(Finding::UndrivenTarget {
                    target: if name.is_empty() {
                        format!("#{target}")
                    } else {
                        name.clone()
                    },
                    mesh: m
                        .name
                        .as_deref()
                        .map_or_else(|| format!("#{mesh}"), |n| format!("`{n}`")),
                });
            }
        }
    }
    if let Some(vrm) = &avatar.vrm {
        for (i, e) in vrm.expressions.iter().enumerate() {
            if !compiled.expressions.iter().any(|b| b.expression == i) {
                findings.push(Finding::UndrivenExpression {
                    name: format!("{}{}", super::EXPRESSION_PREFIX, e.name),
                    preset: e.preset.map(|p| p.name()).filter(|&p| p != e.name),
                });
            }
        }
    }
    findings.sort_by_key(Finding::severity);
    CheckReport { findings }
}

/// The largest weight a slot can take: its driver's clamp, 1 for pass-through bindings, its
/// rest weight when nothing drives it.
fn max_weight(m: &CompiledMapping, avatar: &Avatar, (mesh, target): (usize, usize)) -> f32 {
    match m
        .targets
        .iter()
        .find(|b| b.mesh == mesh && b.target == target)
        .and_then(|b| m.drivers.get(b.driver))
    {
        Some(d) => d.clamp.map_or(1.0, |(_, hi)| hi),
        None => avatar
            .meshes
            .get(mesh)
            .and_then(|m| m.default_weights.get(target))
            .copied()
            .unwrap_or(0.0),
    }
}

/// Parses `text` and checks it against `avatar`. Every error of the file is reported at once,
/// in file order: the entries with a bad value are left out and the rest is still compiled
/// against the avatar (TOML syntax errors come one at a time, the parser stopping at the first).
pub fn check_text(text: &str, path: &str, avatar: &Avatar) -> CheckReport {
    match MappingFile::parse_all(text, path) {
        (Some(file), errors) => check_with(&file, avatar, errors),
        (None, errors) => errors_only(errors),
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{avatar, vrm_avatar};
    use super::*;

    fn findings(text: &str, avatar: &Avatar) -> Vec<String> {
        check_text(text, "m.toml", avatar)
            .findings
            .iter()
            .map(Finding::to_string)
            .collect()
    }

    #[test]
    fn a_viseme_source_drives_its_target_and_the_other_vowels_are_noted() {
        let a = avatar();
        let text = "version = 1\n[map]\nSmile = \"viseme:ee\"\n";
        let found = findings(text, &a);
        assert!(
            !found.iter().any(|f| f.contains("`Smile`")),
            "Smile is driven: {found:?}"
        );
        for v in ["aa", "ih", "ou", "oh"] {
            let note = format!("note: viseme `viseme:{v}` drives nothing");
            assert!(found.contains(&note), "{found:?}");
        }
        assert!(!found
            .iter()
            .any(|f| f.contains("viseme:ee") || f.contains("viseme:sil")));
        // A mapping that routes no viseme is not told about them.
        let found = findings("version = 1\n", &a);
        assert!(!found.iter().any(|f| f.contains("viseme")), "{found:?}");
        // A misspelt viseme is an error with its position.
        let found = findings("version = 1\n[map]\nSmile = \"viseme:eh\"\n", &a);
        assert!(
            found[0].starts_with("error: m.toml:3:9: unknown viseme `eh`"),
            "{found:?}"
        );
    }

    #[test]
    fn every_error_of_the_file_is_listed_with_its_position_in_file_order() {
        let a = avatar();
        let text = "version = 1\n\
                    [map]\n\
                    Smile = \"jawOpn\"\n\
                    Smiel = \"jawOpen\"\n\
                    [map.eyeBlink_L]\n\
                    sources = \"eyeBlinkLeft\"\n\
                    curve = \"smoothstp\"\n\
                    [eyes]\n\
                    up_degrees = 400\n\
                    [head]\n\
                    nod = \"head\"\n";
        let found = findings(text, &a);
        let at: Vec<&str> = found
            .iter()
            .map(|f| f.split(": ").nth(1).unwrap_or(""))
            .collect();
        assert_eq!(
            at,
            [
                "m.toml:3:9",
                "m.toml:4:1",
                "m.toml:7:9",
                "m.toml:9:1",
                "m.toml:11:1"
            ],
            "{found:#?}"
        );
        assert!(found.iter().all(|f| f.starts_with("error: ")), "{found:#?}");
        assert!(found[0].contains("did you mean `jawOpen`?"), "{found:#?}");
        assert!(found[1].contains("did you mean `Smile`?"), "{found:#?}");
        assert!(
            found[2].contains("did you mean `smoothstep`?"),
            "{found:#?}"
        );
        assert!(found[3].contains("eyes.up_degrees = 400"), "{found:#?}");
        assert!(found[4].contains("did you mean `node`?"), "{found:#?}");
        // Run and hot reload keep the first error.
        let first = MappingFile::parse(text, "m.toml").unwrap_err().one_line();
        assert_eq!(format!("error: {first}"), found[0]);
    }

    #[test]
    fn a_syntax_error_or_a_bad_version_stays_one_error() {
        let a = avatar();
        let found = findings(
            "version = 1\n[map]\nSmile = \"jawOpn\nX = \"jawOpen\"\n",
            &a,
        );
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].starts_with("error: m.toml:3:"), "{found:#?}");
        // A version of the wrong type reads as the current one, so the rest is still checked.
        let found = findings("version = \"one\"\n[map]\nSmile = \"jawOpn\"\n", &a);
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found[0].starts_with("error: m.toml:1:11:"), "{found:#?}");
        assert!(found[1].starts_with("error: m.toml:3:9:"), "{found:#?}");
    }

    #[test]
    fn a_vrm_avatar_routes_its_vowel_visemes_through_the_fallback() {
        let a = vrm_avatar();
        let report = check(&MappingFile::default(), &a);
        // The fixture has only the `aa` vowel: the others have no expression to drive.
        let unused: Vec<&Finding> = report
            .findings
            .iter()
            .filter(|f| matches!(f, Finding::UnusedViseme(_)))
            .collect();
        assert_eq!(
            unused,
            [Viseme::Ih, Viseme::Ou, Viseme::Ee, Viseme::Oh]
                .map(Finding::UnusedViseme)
                .iter()
                .collect::<Vec<_>>()
        );
        assert!(!report.has_errors());
    }
}

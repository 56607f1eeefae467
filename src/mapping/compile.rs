//! Compiling a mapping file against an avatar: resolving target, expression and node names
//! (with the nearest name suggested for a mistake) into the index tables of a [`CompiledMapping`].

use super::file::{EyesSection, TargetEntry};
use super::materials::resolve_material_binds;
use super::{
    channel_for_target, fallback, BoneDriver, BoneFrames, CompiledMapping, Curve, Driver,
    ExpressionBinding, EyeLook, Group, JawDriver, MappingError, MappingFile, TargetBinding,
    EXPRESSION_PREFIX,
};
use crate::arkit::ChannelMask;
use crate::avatar::lookat::{LookAt, LookAtKind};
use crate::avatar::vrm::{Preset, Procedural};
use crate::avatar::{Avatar, MorphBind};
use glam::Quat;
use toml::Spanned;

/// Every (mesh, target) slot named `name`: exact matches, else matches ignoring ASCII case.
pub fn find_targets(avatar: &Avatar, name: &str) -> Vec<(usize, usize)> {
    let find = |eq: &dyn Fn(&str) -> bool| -> Vec<(usize, usize)> {
        avatar
            .meshes
            .iter()
            .enumerate()
            .flat_map(|(mesh, m)| {
                m.target_names
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| eq(n))
                    .map(move |(t, _)| (mesh, t))
            })
            .collect()
    };
    let exact = find(&|n| n == name);
    if exact.is_empty() {
        find(&|n| n.eq_ignore_ascii_case(name))
    } else {
        exact
    }
}

/// Every non-empty morph target name of `avatar`, for suggestions.
pub(super) fn target_names(avatar: &Avatar) -> impl Iterator<Item = &str> {
    avatar
        .meshes
        .iter()
        .flat_map(|m| m.target_names.iter().map(String::as_str))
        .filter(|n| !n.is_empty())
}

/// The expression a `[map]` key names (`vrm:happy` → `happy`; the prefix in any case), or
/// `None` for a morph target name.
pub fn expression_name(key: &str) -> Option<&str> {
    let prefix = key.get(..EXPRESSION_PREFIX.len())?;
    prefix
        .eq_ignore_ascii_case(EXPRESSION_PREFIX)
        .then(|| &key[EXPRESSION_PREFIX.len()..])
}

/// The error for a `vrm:` name the avatar has no expression for, with the nearest one.
fn unknown_expression(
    file: &MappingFile,
    avatar: &Avatar,
    name: &Spanned<String>,
    what: &str,
) -> MappingError {
    let n = name.get_ref();
    let Some(vrm) = &avatar.vrm else {
        return file.error_at(
            name.span(),
            format!("{what}`{n}` names a VRM expression, but the model is not a VRM avatar"),
            Some("name the model's morph targets instead (`facewire sheet` lists them)".into()),
        );
    };
    let candidates: Vec<String> = vrm
        .expressions
        .iter()
        .flat_map(|e| {
            std::iter::once(e.name.as_str())
                .chain(e.preset.map(Preset::name))
                .map(|x| format!("{EXPRESSION_PREFIX}{x}"))
        })
        .collect();
    let message = match crate::diagnostic::nearest(n, candidates.iter().map(String::as_str)) {
        Some(best) => format!("{what}unknown expression `{n}`; did you mean `{best}`?"),
        None => format!("{what}unknown expression `{n}`: the model has no expression of that name"),
    };
    file.error_at(
        name.span(),
        message,
        Some(
            "expressions go by the model's own names or the VRM 1.0 preset names \
             (`facewire check` lists them)"
                .into(),
        ),
    )
}

/// Shapes the automatic driver of a look expression by the avatar's range map: the eyeLook
/// channels give a gaze of up to `eyes`' degrees, which the map turns into the weight (its
/// output scale at its input angle, never above 1).
fn look_expression(driver: &mut Driver, preset: Preset, look: &LookAt, eyes: &EyesSection) {
    let (range, degrees) = match preset {
        Preset::LookUp => (look.vertical_up, eyes.up_degrees),
        Preset::LookDown => (look.vertical_down, eyes.down_degrees),
        Preset::LookLeft | Preset::LookRight => (look.horizontal_outer, eyes.horizontal_degrees),
        _ => return,
    };
    if range.input_max_degrees > 0.0 {
        driver.gain *= degrees / range.input_max_degrees * range.output_scale;
        driver.clamp = Some((0.0, range.output_scale.min(1.0)));
    }
}

/// The nodes the head, neck, eye and jaw drivers turn.
struct Bones {
    head: Option<usize>,
    neck: Option<usize>,
    left_eye: Option<usize>,
    right_eye: Option<usize>,
    jaw: Option<usize>,
}

/// Finds the bone nodes: the ones the file names (a node name, or on a VRM avatar a humanoid
/// bone name), else the conventional ones (the humanoid `head`, `leftEye` and `rightEye` of a
/// VRM avatar, else nodes named `Head`, `LeftEye`, `RightEye`; no neck or jaw). Names that
/// match nothing are errors.
fn resolve_bones(
    file: &MappingFile,
    avatar: &Avatar,
    errors: &mut Vec<(usize, MappingError)>,
) -> Bones {
    let humanoid = |bone: &str| {
        avatar
            .vrm
            .as_ref()
            .and_then(|v| v.humanoid_bone(bone))
            .filter(|&n| n < avatar.nodes.len())
    };
    let mut node =
        |written: &Option<Spanned<String>>, conventional: Option<(&str, &str)>, key: &str| {
            let Some(spanned) = written else {
                let (bone, name) = conventional?;
                return humanoid(bone).or_else(|| avatar.find_node(name));
            };
            let name = spanned.get_ref();
            if name.is_empty() {
                return None;
            }
            let found = humanoid(name).or_else(|| avatar.find_node(name));
            if found.is_none() {
                let names = avatar.node_and_bone_names();
                let (message, hint) = match crate::diagnostic::nearest(name, names) {
                    Some(best) => (
                        format!("{key}: unknown node `{name}`; did you mean `{best}`?"),
                        None,
                    ),
                    None if avatar.vrm.is_some() => (
                        format!("{key}: the model has no node or humanoid bone named `{name}`"),
                        Some(format!(
                            "VRM humanoid bones are named like `head`, `neck`, `jaw`, `leftEye`; \
                         set {key} = \"\" if the avatar has no such node"
                        )),
                    ),
                    None => (
                        format!("{key}: the model has no node named `{name}`"),
                        Some(format!("set {key} = \"\" if the avatar has no such node")),
                    ),
                };
                errors.push((
                    spanned.span().start,
                    file.error_at(spanned.span(), message, hint),
                ));
            }
            found
        };
    Bones {
        head: node(&file.head.node, Some(("head", "Head")), "head.node"),
        neck: node(&file.neck.node, None, "neck.node"),
        left_eye: node(&file.eyes.left, Some(("leftEye", "LeftEye")), "eyes.left"),
        right_eye: node(
            &file.eyes.right,
            Some(("rightEye", "RightEye")),
            "eyes.right",
        ),
        jaw: node(&file.jaw.node, None, "jaw.node"),
    }
}

impl CompiledMapping {
    /// Compiles `file` against `avatar`: every target and node it names must exist. The error
    /// is the first problem in file order; [`check`](super::check) lists them all.
    pub fn compile(file: &MappingFile, avatar: &Avatar) -> Result<CompiledMapping, MappingError> {
        Self::build(file, avatar).map_err(|mut errors| errors.swap_remove(0))
    }

    /// Compiles, collecting every error (sorted by position in the file).
    pub(crate) fn build(
        file: &MappingFile,
        avatar: &Avatar,
    ) -> Result<CompiledMapping, Vec<MappingError>> {
        let mut errors: Vec<(usize, MappingError)> = Vec::new();
        let vrm = avatar.vrm.as_ref();
        // Bones first: whether the avatar has eye bones decides the look-at fallback.
        let mut bones = resolve_bones(file, avatar, &mut errors);
        let look_at = vrm.and_then(|v| v.look_at);
        // An avatar that looks around by expressions keeps its eye bones still, unless the
        // mapping names them.
        let expression_look = look_at.filter(|l| l.kind == LookAtKind::Expression);
        if expression_look.is_some() {
            if file.eyes.left.is_none() {
                bones.left_eye = None;
            }
            if file.eyes.right.is_none() {
                bones.right_eye = None;
            }
        }
        let unknown_target = |name: &Spanned<String>, what: &str| {
            let n = name.get_ref();
            let message = match crate::diagnostic::nearest(n, target_names(avatar)) {
                Some(best) => format!("{what}unknown target `{n}`; did you mean `{best}`?"),
                None => format!(
                    "{what}unknown target `{n}`: the model has no morph target of that name"
                ),
            };
            (
                name.span().start,
                file.error_at(
                    name.span(),
                    message,
                    Some("target names are the model's morph target names (`facewire sheet` lists them)".into()),
                ),
            )
        };

        // One slot per morph target: the driver index, automatic first, explicit on top.
        let mut slot_driver: Vec<Vec<Option<usize>>> = avatar
            .meshes
            .iter()
            .map(|m| vec![None; m.target_count()])
            .collect();
        let mut drivers: Vec<Driver> = Vec::new();
        let mut by_channel: [Option<usize>; crate::arkit::COUNT] = [None; crate::arkit::COUNT];
        // Channels that drive a morph target (or expression) named after them.
        let mut named = ChannelMask::EMPTY;
        if file.targets.auto {
            for (mesh, m) in avatar.meshes.iter().enumerate() {
                for (target, name) in m.target_names.iter().enumerate() {
                    if let Some(channel) = channel_for_target(name) {
                        let d = *by_channel[channel.index()].get_or_insert_with(|| {
                            drivers.push(Driver::identity(channel));
                            drivers.len() - 1
                        });
                        slot_driver[mesh][target] = Some(d);
                        named.insert(channel);
                    }
                }
            }
        }
        // One driver per VRM expression, in the same layering: automatic, then explicit.
        let mut expression_driver: Vec<Option<usize>> =
            vec![None; vrm.map_or(0, |v| v.expressions.len())];
        if let Some(vrm) = vrm {
            if file.targets.auto {
                // Custom expressions named after a channel (perfect sync through expressions),
                // unless a morph target of that name already follows the channel.
                let direct = named;
                for (i, e) in vrm.expressions.iter().enumerate() {
                    let channel = match (e.preset, channel_for_target(&e.name)) {
                        (None, Some(channel)) if !direct.contains(channel) => channel,
                        _ => continue,
                    };
                    let d = *by_channel[channel.index()].get_or_insert_with(|| {
                        drivers.push(Driver::identity(channel));
                        drivers.len() - 1
                    });
                    expression_driver[i] = Some(d);
                    named.insert(channel);
                }
            }
            if file.targets.expressions {
                let eye_bones = bones.left_eye.is_some() || bones.right_eye.is_some();
                for preset in Preset::ALL {
                    let Some(i) = vrm.preset(preset) else {
                        continue;
                    };
                    if expression_driver[i].is_some()
                        || (eye_bones && preset.procedural() == Some(Procedural::LookAt))
                    {
                        continue;
                    }
                    let Some(mut driver) = fallback(preset) else {
                        continue;
                    };
                    if let Some(look) = expression_look {
                        look_expression(&mut driver, preset, &look, &file.eyes);
                    }
                    // Only the ARKit formula decides: on a perfect-sync avatar lip sync reaches
                    // the mouth through the channels it writes, and a vowel expression on top
                    // would open it twice.
                    if driver
                        .sources
                        .iter()
                        .filter_map(|(s, _)| s.channel())
                        .any(|c| named.contains(c))
                    {
                        continue;
                    }
                    drivers.push(driver);
                    expression_driver[i] = Some(drivers.len() - 1);
                }
            }
        }
        for (name, entry) in &file.map.0 {
            let driver = match entry {
                TargetEntry::Short(source) => Driver {
                    clamp: Some((0.0, 1.0)),
                    ..Driver::identity(*source)
                },
                TargetEntry::Full(full) => Driver {
                    sources: full.sources.0.clone(),
                    combine: full.combine,
                    gain: full.gain.0,
                    offset: full.offset.0,
                    curve: Curve::from_spec(&full.curve),
                    clamp: Some((full.clamp.0, full.clamp.1)),
                    max_with: None,
                },
            };
            if let Some(expression) = expression_name(name.get_ref()) {
                match vrm.and_then(|v| v.expression(expression)) {
                    Some(i) => {
                        drivers.push(driver);
                        expression_driver[i] = Some(drivers.len() - 1);
                    }
                    None => errors.push((
                        name.span().start,
                        unknown_expression(file, avatar, name, "[map]: "),
                    )),
                }
                continue;
            }
            let slots = find_targets(avatar, name.get_ref());
            if slots.is_empty() {
                errors.push(unknown_target(name, "[map]: "));
                continue;
            }
            drivers.push(driver);
            for (mesh, target) in slots {
                slot_driver[mesh][target] = Some(drivers.len() - 1);
            }
        }
        let targets: Vec<TargetBinding> = slot_driver
            .iter()
            .enumerate()
            .flat_map(|(mesh, ts)| {
                ts.iter().enumerate().filter_map(move |(target, d)| {
                    d.map(|driver| TargetBinding {
                        mesh,
                        target,
                        driver,
                    })
                })
            })
            .collect();

        let mut groups = Vec::new();
        for (name, spec) in &file.groups.0 {
            let mut members = Vec::new();
            for t in &spec.targets {
                let slots = find_targets(avatar, t.get_ref());
                if !slots.is_empty() {
                    members.push(slots);
                } else if expression_name(t.get_ref()).is_some() {
                    errors.push((
                        t.span().start,
                        file.error_at(
                            t.span(),
                            format!(
                                "group `{}`: `{}` is an expression; groups take morph targets",
                                name.get_ref(),
                                t.get_ref()
                            ),
                            Some("list the morph targets the expressions move instead".into()),
                        ),
                    ));
                } else {
                    errors.push(unknown_target(t, &format!("group `{}`: ", name.get_ref())));
                }
            }
            groups.push(Group {
                name: name.get_ref().clone(),
                members,
                mode: spec.mode,
                sharpness: spec.sharpness.0,
            });
        }

        let mut expressions = Vec::new();
        let mut expression_slots = Vec::new();
        for (i, driver) in expression_driver.iter().enumerate() {
            let (Some(driver), Some(e)) = (*driver, vrm.and_then(|v| v.expressions.get(i))) else {
                continue;
            };
            // The loader checked every bind; an avatar built by hand is checked here.
            let binds: Vec<MorphBind> = e
                .binds
                .iter()
                .copied()
                .filter(|b| {
                    b.weight.is_finite()
                        && avatar
                            .meshes
                            .get(b.mesh)
                            .is_some_and(|m| b.target < m.target_count())
                })
                .collect();
            expression_slots.extend(binds.iter().map(|b| (b.mesh, b.target)));
            let material_binds = resolve_material_binds(e, &avatar.materials);
            expressions.push(ExpressionBinding {
                expression: i,
                driver,
                binds,
                material_binds,
                is_binary: e.is_binary,
                procedural: e.preset.and_then(Preset::procedural),
                overrides: e.overrides,
            });
        }
        expression_slots.sort_unstable();
        expression_slots.dedup();

        let frames = if vrm.is_some() {
            let world = avatar.world_transforms(&avatar.rest_pose());
            let frame = |node: Option<usize>| {
                node.and_then(|n| world.get(n))
                    .map(|m| m.to_scale_rotation_translation().1.normalize())
                    .filter(|q| q.is_finite())
                    .unwrap_or(Quat::IDENTITY)
            };
            BoneFrames {
                head: frame(bones.head),
                neck: frame(bones.neck),
                left_eye: frame(bones.left_eye),
                right_eye: frame(bones.right_eye),
                jaw: frame(bones.jaw),
            }
        } else {
            BoneFrames::default()
        };
        let jaw = bones.jaw.map(|n| JawDriver {
            node: n,
            source: file.jaw.channel,
            radians: file.jaw.degrees.0.to_radians(),
            axis: file.jaw.axis.vector(),
        });
        let wrinkles = super::wrinkles::compile(file, avatar, &mut errors);

        let sliders = super::sliders::compile(file, avatar, &mut errors);

        if !errors.is_empty() {
            errors.sort_by_key(|(at, _)| *at);
            return Err(errors.into_iter().map(|(_, e)| e).collect());
        }
        Ok(CompiledMapping {
            targets,
            drivers,
            groups,
            head: bones.head,
            head_driver: BoneDriver::from_section(&file.head),
            neck: bones.neck,
            neck_driver: BoneDriver::from_section(&file.neck),
            left_eye: bones.left_eye,
            right_eye: bones.right_eye,
            eye_look: EyeLook {
                horizontal: file.eyes.horizontal_degrees.to_radians(),
                up: file.eyes.up_degrees.to_radians(),
                down: file.eyes.down_degrees.to_radians(),
                ranges: look_at.filter(|l| l.kind == LookAtKind::Bone),
            },
            jaw,
            expressions,
            expression_slots,
            frames,
            wrinkles,
            sliders,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{avatar, vrm_avatar};
    use super::*;
    use crate::arkit::Channel;

    #[test]
    fn a_missing_node_is_located_and_the_nearest_suggested() {
        let a = avatar();
        let text = "version = 1\n[eyes]\nleft = \"LeftEy\"\n";
        let file = MappingFile::parse(text, "m.toml").unwrap();
        let err = CompiledMapping::compile(&file, &a).unwrap_err().to_string();
        assert!(err.starts_with("m.toml:3:8:"), "{err}");
        assert!(err.contains("did you mean `LeftEye`?"), "{err}");
    }

    #[test]
    fn vrm_names_in_a_file_and_their_mistakes() {
        let a = vrm_avatar();
        let text = "version = 1\n[map.\"vrm:happy\"]\nsources = \"browInnerUp\"\n[head]\nnode = \"HEAD\"\n";
        let m = CompiledMapping::compile(&MappingFile::parse(text, "m.toml").unwrap(), &a).unwrap();
        let happy = m.expressions.iter().find(|e| e.expression == 3).unwrap();
        assert_eq!(
            m.drivers[happy.driver].sources,
            [(Channel::BrowInnerUp.into(), 1.0)]
        );
        assert_eq!(m.head, Some(1));
        let err = |text: &str| {
            CompiledMapping::compile(&MappingFile::parse(text, "m.toml").unwrap(), &a)
                .unwrap_err()
                .to_string()
        };
        let e = err("version = 1\n[map]\n\"vrm:hapy\" = \"jawOpen\"\n");
        assert!(e.starts_with("m.toml:3:1:"), "{e}");
        assert!(e.contains("did you mean `vrm:happy`?"), "{e}");
        let e = err("version = 1\n[groups.g]\ntargets = [\"vrm:Joy\"]\n");
        assert!(e.contains("groups take morph targets"), "{e}");
        let e = err("version = 1\n[neck]\nnode = \"hed\"\n");
        assert!(e.contains("did you mean `head`?"), "{e}");
        let e = err("version = 1\n[jaw]\nnode = \"jaw\"\n");
        assert!(e.contains("no node or humanoid bone named `jaw`"), "{e}");
        let plain = avatar();
        let e = CompiledMapping::compile(
            &MappingFile::parse("version = 1\n[map]\n\"vrm:aa\" = \"jawOpen\"\n", "m.toml")
                .unwrap(),
            &plain,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("not a VRM avatar"), "{e}");
    }

    #[test]
    fn empty_node_names_turn_nothing() {
        let a = avatar();
        let text = "version = 1\n[head]\nnode = \"\"\n[targets]\nauto = false\n";
        let m = CompiledMapping::compile(&MappingFile::parse(text, "m.toml").unwrap(), &a).unwrap();
        assert_eq!(m.head, None);
        assert!(m.targets.is_empty());
        assert_eq!(m.left_eye, Some(1));
    }
}

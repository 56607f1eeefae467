//! The `[smoothing]` and `[tracking]` sections of `facewire.toml`: serde types, defaults and
//! validation with file positions.
//!
//! The types are `Copy` (the groups live in a fixed-size table) so that a configuration can be
//! handed to the ingest thread by value and no per-frame code ever touches the heap.

use std::fmt;
use std::time::Duration;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::arkit::{Channel, ChannelMask};
use crate::diagnostic::{key_offset, line_column, nearest};

/// The most groups `[smoothing.groups]` may hold.
pub const MAX_GROUPS: usize = 16;

/// The longest group name, in bytes.
pub const MAX_GROUP_NAME: usize = 32;

/// Which filter smooths a channel or a rotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FilterKind {
    /// No smoothing: the value passes through.
    None,
    /// Exponential smoothing with time constant `tau`.
    Ema,
    /// The One Euro filter (`min_cutoff`, `beta`, `d_cutoff`).
    OneEuro,
}

/// One filter's settings.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FilterSpec {
    /// Which filter.
    pub filter: FilterKind,
    /// EMA time constant, seconds.
    pub tau: f32,
    /// One Euro cutoff when still, Hz.
    pub min_cutoff: f32,
    /// One Euro speed coefficient: the cutoff grows by `beta` Hz per unit/s of speed (per
    /// radian/s for rotations).
    pub beta: f32,
    /// One Euro cutoff of the speed estimate, Hz.
    pub d_cutoff: f32,
}

impl FilterSpec {
    /// A One Euro filter.
    pub const fn one_euro(min_cutoff: f32, beta: f32, d_cutoff: f32) -> FilterSpec {
        FilterSpec {
            filter: FilterKind::OneEuro,
            tau: DEFAULT_TAU,
            min_cutoff,
            beta,
            d_cutoff,
        }
    }

    /// An exponential filter with time constant `tau` seconds.
    pub const fn ema(tau: f32) -> FilterSpec {
        FilterSpec {
            filter: FilterKind::Ema,
            tau,
            min_cutoff: 1.0,
            beta: 0.0,
            d_cutoff: 1.0,
        }
    }

    /// No smoothing.
    pub const NONE: FilterSpec = FilterSpec {
        filter: FilterKind::None,
        tau: DEFAULT_TAU,
        min_cutoff: 1.0,
        beta: 0.0,
        d_cutoff: 1.0,
    };
}

/// The EMA time constant written in the defaults where the filter is not an EMA.
const DEFAULT_TAU: f32 = 0.03;

/// Defaults of the filter for channels in no group (mouth, cheeks, nose, tongue). Chosen from
/// the measurements in BENCHMARKS.md ("Smoothing").
pub const DEFAULT_WEIGHTS: FilterSpec = FilterSpec::one_euro(2.0, 4.0, 1.0);
/// Defaults for the eyes group (blinks, gaze, squint, wide): fast.
pub const DEFAULT_EYES: FilterSpec = FilterSpec::one_euro(3.0, 4.0, 1.0);
/// Defaults for the jaw group.
pub const DEFAULT_JAW: FilterSpec = FilterSpec::one_euro(2.0, 4.0, 1.0);
/// Defaults for the brows group: slower.
pub const DEFAULT_BROWS: FilterSpec = FilterSpec::one_euro(1.0, 1.0, 1.0);
/// Defaults for head and eye rotations (speed in radians/s).
pub const DEFAULT_ROTATIONS: FilterSpec = FilterSpec::one_euro(1.5, 0.5, 1.0);

impl Default for FilterSpec {
    fn default() -> FilterSpec {
        DEFAULT_WEIGHTS
    }
}

/// Which clock times the filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockSource {
    /// The sender's timestamps where the protocol carries them and they are sane (increasing,
    /// and within a quarter second of the receive clock's step), else the receive time.
    #[default]
    Auto,
    /// Always the time each frame was received.
    Receive,
}

/// A set of channels, written in the file as a list of names in any ARKit spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChannelSet(pub ChannelMask);

impl ChannelSet {
    /// The set of `channels`.
    pub fn of(channels: &[Channel]) -> ChannelSet {
        let mut mask = ChannelMask::EMPTY;
        for c in channels {
            mask.insert(*c);
        }
        ChannelSet(mask)
    }
}

/// One channel name, parsed with [`Channel::parse`]; an unknown name is an error that suggests
/// the nearest channel.
struct ChannelName(Channel);

impl<'de> Deserialize<'de> for ChannelName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        match Channel::parse(&name) {
            Some(c) => Ok(ChannelName(c)),
            None => {
                let hint = nearest(&name, Channel::ALL.iter().map(|c| c.name()))
                    .map(|best| format!("; did you mean `{best}`?"))
                    .unwrap_or_else(|| "; write an ARKit name such as `eyeBlinkLeft`".into());
                Err(de::Error::custom(format!(
                    "`{name}` is not an ARKit channel{hint}"
                )))
            }
        }
    }
}

impl<'de> Deserialize<'de> for ChannelSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct SetVisitor;
        impl<'de> Visitor<'de> for SetVisitor {
            type Value = ChannelSet;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of ARKit channel names")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ChannelSet, A::Error> {
                let mut mask = ChannelMask::EMPTY;
                while let Some(ChannelName(c)) = seq.next_element()? {
                    mask.insert(c);
                }
                Ok(ChannelSet(mask))
            }
        }
        d.deserialize_seq(SetVisitor)
    }
}

/// `[smoothing.groups.NAME]`: a filter shared by a set of channels, with optional
/// normalisation.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GroupConfig {
    /// The channels in the group.
    pub channels: ChannelSet,
    /// Scale the group's weights by `1 / max(1, sum)` after smoothing. Only for mutually
    /// exclusive shapes (visemes): normalising independent controls weakens one whenever
    /// another moves.
    pub normalize: bool,
    /// Which filter.
    pub filter: FilterKind,
    /// EMA time constant, seconds.
    pub tau: f32,
    /// One Euro cutoff when still, Hz.
    pub min_cutoff: f32,
    /// One Euro speed coefficient, Hz per unit/s.
    pub beta: f32,
    /// One Euro cutoff of the speed estimate, Hz.
    pub d_cutoff: f32,
}

impl GroupConfig {
    /// A group of `channels` filtered by `spec`, not normalised.
    pub fn new(channels: &[Channel], spec: FilterSpec) -> GroupConfig {
        GroupConfig {
            channels: ChannelSet::of(channels),
            normalize: false,
            filter: spec.filter,
            tau: spec.tau,
            min_cutoff: spec.min_cutoff,
            beta: spec.beta,
            d_cutoff: spec.d_cutoff,
        }
    }

    /// The group's filter settings.
    pub fn spec(&self) -> FilterSpec {
        FilterSpec {
            filter: self.filter,
            tau: self.tau,
            min_cutoff: self.min_cutoff,
            beta: self.beta,
            d_cutoff: self.d_cutoff,
        }
    }
}

impl Default for GroupConfig {
    fn default() -> GroupConfig {
        GroupConfig::new(&[], FilterSpec::default())
    }
}

/// A group's name, stored inline.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct GroupName {
    /// UTF-8 bytes; the first `len` are used.
    bytes: [u8; MAX_GROUP_NAME],
    /// Length in bytes.
    len: u8,
}

impl GroupName {
    /// `name` if it fits in [`MAX_GROUP_NAME`] bytes.
    pub fn new(name: &str) -> Option<GroupName> {
        if name.len() > MAX_GROUP_NAME {
            return None;
        }
        let mut bytes = [0; MAX_GROUP_NAME];
        bytes[..name.len()].copy_from_slice(name.as_bytes());
        Some(GroupName {
            bytes,
            len: name.len() as u8,
        })
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        // Built from a &str cut at its own length, so always valid UTF-8.
        std::str::from_utf8(&self.bytes[..self.len as usize]).unwrap_or("")
    }
}

impl fmt::Debug for GroupName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// `[smoothing.groups]`: up to [`MAX_GROUPS`] named groups, in file order. Two tables are equal
/// when they hold the same groups, in any order.
#[derive(Debug, Clone, Copy)]
pub struct Groups {
    /// The groups; the first `len` are used.
    items: [(GroupName, GroupConfig); MAX_GROUPS],
    /// How many are used.
    len: usize,
}

impl Groups {
    /// No group.
    pub fn empty() -> Groups {
        Groups {
            items: [(EMPTY_NAME, GroupConfig::new(&[], DEFAULT_WEIGHTS)); MAX_GROUPS],
            len: 0,
        }
    }

    /// Adds or replaces group `name`; `false` when the table is full or the name too long.
    pub fn insert(&mut self, name: &str, group: GroupConfig) -> bool {
        let Some(key) = GroupName::new(name) else {
            return false;
        };
        if let Some(slot) = self.items[..self.len].iter_mut().find(|(n, _)| *n == key) {
            slot.1 = group;
            return true;
        }
        if self.len == MAX_GROUPS {
            return false;
        }
        self.items[self.len] = (key, group);
        self.len += 1;
        true
    }

    /// The groups, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &GroupConfig)> {
        self.items[..self.len].iter().map(|(n, g)| (n.as_str(), g))
    }

    /// The group called `name`.
    pub fn get(&self, name: &str) -> Option<&GroupConfig> {
        self.iter().find(|(n, _)| *n == name).map(|(_, g)| g)
    }

    /// The groups, mutably.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut GroupConfig> {
        self.items[..self.len].iter_mut().map(|(_, g)| g)
    }

    /// Number of groups.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there is no group.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl PartialEq for Groups {
    fn eq(&self, other: &Groups) -> bool {
        self.len == other.len && self.iter().all(|(n, g)| other.get(n) == Some(g))
    }
}

const EMPTY_NAME: GroupName = GroupName {
    bytes: [0; MAX_GROUP_NAME],
    len: 0,
};

impl Default for Groups {
    /// Eyes fast, jaw in between, brows slower; every other channel uses
    /// [`SmoothingConfig::weights`].
    fn default() -> Groups {
        use Channel::*;
        let mut g = Groups::empty();
        g.insert(
            "eyes",
            GroupConfig::new(
                &[
                    EyeBlinkLeft,
                    EyeLookDownLeft,
                    EyeLookInLeft,
                    EyeLookOutLeft,
                    EyeLookUpLeft,
                    EyeSquintLeft,
                    EyeWideLeft,
                    EyeBlinkRight,
                    EyeLookDownRight,
                    EyeLookInRight,
                    EyeLookOutRight,
                    EyeLookUpRight,
                    EyeSquintRight,
                    EyeWideRight,
                ],
                DEFAULT_EYES,
            ),
        );
        g.insert(
            "jaw",
            GroupConfig::new(&[JawForward, JawLeft, JawRight, JawOpen], DEFAULT_JAW),
        );
        g.insert(
            "brows",
            GroupConfig::new(
                &[
                    BrowDownLeft,
                    BrowDownRight,
                    BrowInnerUp,
                    BrowOuterUpLeft,
                    BrowOuterUpRight,
                ],
                DEFAULT_BROWS,
            ),
        );
        g
    }
}

impl<'de> Deserialize<'de> for Groups {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct GroupsVisitor;
        impl<'de> Visitor<'de> for GroupsVisitor {
            type Value = Groups;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table of named channel groups")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Groups, A::Error> {
                let mut groups = Groups::empty();
                while let Some(name) = map.next_key::<String>()? {
                    let group: GroupConfig = map.next_value()?;
                    if name.len() > MAX_GROUP_NAME {
                        return Err(de::Error::custom(format!(
                            "group name `{name}` is longer than {MAX_GROUP_NAME} bytes"
                        )));
                    }
                    if !groups.insert(&name, group) {
                        return Err(de::Error::custom(format!(
                            "more than {MAX_GROUPS} smoothing groups"
                        )));
                    }
                }
                Ok(groups)
            }
        }
        d.deserialize_map(GroupsVisitor)
    }
}

/// `[smoothing]`: how weights and rotations are smoothed, in seconds and hertz rather than
/// per-frame factors so that they mean the same at 30 Hz and 60 Hz.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SmoothingConfig {
    /// Which clock times the filters.
    pub clock: ClockSource,
    /// The filter of every channel in no group.
    pub weights: FilterSpec,
    /// The filter of head and eye rotations.
    pub rotations: FilterSpec,
    /// Channel groups with their own filter; a channel may be in at most one.
    pub groups: Groups,
}

impl Default for SmoothingConfig {
    fn default() -> SmoothingConfig {
        SmoothingConfig {
            clock: ClockSource::Auto,
            weights: DEFAULT_WEIGHTS,
            rotations: DEFAULT_ROTATIONS,
            groups: Groups::default(),
        }
    }
}

impl SmoothingConfig {
    /// Every channel and rotation filtered by `spec`, no groups.
    pub fn uniform(spec: FilterSpec) -> SmoothingConfig {
        SmoothingConfig {
            clock: ClockSource::Auto,
            weights: spec,
            rotations: spec,
            groups: Groups::empty(),
        }
    }

    /// EMA everywhere with time constants `weights` and `rotations` (seconds), no groups: the
    /// simple stage of earlier versions.
    pub fn ema(weights: f32, rotations: f32) -> SmoothingConfig {
        SmoothingConfig {
            clock: ClockSource::Auto,
            weights: FilterSpec::ema(weights),
            rotations: FilterSpec::ema(rotations),
            groups: Groups::empty(),
        }
    }

    /// No smoothing at all.
    pub fn off() -> SmoothingConfig {
        SmoothingConfig::uniform(FilterSpec::NONE)
    }

    /// Checks ranges and that no channel is in two groups. `text` is the file the
    /// configuration came from, used only to locate the offending key.
    pub fn validate(&self, text: &str) -> Result<(), Invalid> {
        check_spec(text, "[smoothing.weights]", &self.weights)?;
        check_spec(text, "[smoothing.rotations]", &self.rotations)?;
        let mut seen = ChannelMask::EMPTY;
        for (name, group) in self.groups.iter() {
            let header = format!("[smoothing.groups.{name}]");
            check_spec(text, &header, &group.spec())?;
            for c in group.channels.0.iter() {
                if seen.contains(c) {
                    let other = self
                        .groups
                        .iter()
                        .find(|(_, g)| g.channels.0.contains(c))
                        .map_or("another group", |(n, _)| n);
                    let at = locate_in_section(text, &header, "channels");
                    return Err(Invalid::at(
                        text,
                        at,
                        format!("channel `{c}` is in group `{other}` and in group `{name}`"),
                        "a channel may be in one smoothing group only; remove it from one",
                    ));
                }
                seen.insert(c);
            }
        }
        Ok(())
    }
}

/// A validation failure, located in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: String,
}

impl Invalid {
    fn at(text: &str, offset: Option<usize>, message: String, hint: &str) -> Invalid {
        let (line, column) = line_column(text, offset.unwrap_or(0));
        Invalid {
            line,
            column,
            message,
            hint: hint.to_string(),
        }
    }
}

/// Byte offset of `key = ` inside the table headed `header` (or, when the header is absent,
/// anywhere), for error positions.
fn locate_in_section(text: &str, header: &str, key: &str) -> Option<usize> {
    if let Some(start) = text.find(header) {
        let body = &text[start..];
        // The section ends at the next table header.
        let end = body[1..]
            .find("\n[")
            .map_or(body.len(), |i| i + 2)
            .min(body.len());
        if let Some(off) = key_offset(&body[..end], key) {
            return Some(start + off);
        }
        return Some(start);
    }
    key_offset(text, key)
}

/// Whether the table under `header` sets `key` itself.
fn sets(text: &str, header: &str, key: &str) -> bool {
    let Some(start) = text.find(header) else {
        return false;
    };
    let body = &text[start..];
    let end = body[1..]
        .find("\n[")
        .map_or(body.len(), |i| i + 2)
        .min(body.len());
    key_offset(&body[..end], key).is_some()
}

/// The keys under `header` that `spec`'s filter does not use, each with why.
fn unused_in(text: &str, header: &str, spec: &FilterSpec) -> Vec<String> {
    let (keys, filter): (&[&str], &str) = match spec.filter {
        FilterKind::OneEuro => (&["tau"], "one_euro"),
        FilterKind::Ema => (&["min_cutoff", "beta", "d_cutoff"], "ema"),
        FilterKind::None => (&["tau", "min_cutoff", "beta", "d_cutoff"], "none"),
    };
    keys.iter()
        .filter(|key| sets(text, header, key))
        .map(|key| format!("{header} {key} does nothing with filter = \"{filter}\""))
        .collect()
}

impl SmoothingConfig {
    /// Keys of `text` (the file this configuration came from) that its filters do not use:
    /// `tau` in a one_euro table, the One Euro keys in an ema table, any in a `none` table.
    /// They are harmless, but a performer tuning them would see nothing change.
    pub fn unused_keys(&self, text: &str) -> Vec<String> {
        let mut out = unused_in(text, "[smoothing.weights]", &self.weights);
        out.extend(unused_in(text, "[smoothing.rotations]", &self.rotations));
        for (name, group) in self.groups.iter() {
            let header = format!("[smoothing.groups.{name}]");
            out.extend(unused_in(text, &header, &group.spec()));
        }
        out
    }
}

fn check_spec(text: &str, header: &str, spec: &FilterSpec) -> Result<(), Invalid> {
    let checks: [(&str, f32, f32, f32, &str); 4] = [
        (
            "tau",
            spec.tau,
            0.0,
            5.0,
            "use seconds between 0 (off) and 5; 0.03 is a good start",
        ),
        (
            "min_cutoff",
            spec.min_cutoff,
            0.01,
            100.0,
            "use hertz between 0.01 and 100; 1 to 3 is typical",
        ),
        (
            "beta",
            spec.beta,
            0.0,
            1000.0,
            "use a value between 0 and 1000; 0 makes the filter a plain low-pass",
        ),
        (
            "d_cutoff",
            spec.d_cutoff,
            0.01,
            100.0,
            "use hertz between 0.01 and 100; 1 is the usual value",
        ),
    ];
    for (key, v, lo, hi, hint) in checks {
        if !(lo..=hi).contains(&v) {
            return Err(Invalid::at(
                text,
                locate_in_section(text, header, key),
                format!("{header} {key} = {v} is out of range"),
                hint,
            ));
        }
    }
    Ok(())
}

/// `[tracking]`: when the face counts as lost and how the avatar leaves and comes back.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrackingConfig {
    /// Seconds without any frame before the face counts as lost.
    pub stale_after: f32,
    /// Seconds of frames that repeat the same values before the face counts as lost (some
    /// senders repeat the last face after losing it).
    pub frozen_after: f32,
    /// Seconds the last live pose is held once the face is lost.
    pub hold: f32,
    /// Seconds of the fade from the held pose to the neutral pose.
    pub fade: f32,
    /// Seconds of the ease from the shown pose back to live values on reacquire.
    pub ease_in: f32,
}

impl Default for TrackingConfig {
    fn default() -> TrackingConfig {
        TrackingConfig {
            stale_after: 0.15,
            frozen_after: 0.25,
            hold: 0.2,
            fade: 0.6,
            ease_in: 0.3,
        }
    }
}

impl TrackingConfig {
    /// [`TrackingConfig::stale_after`] as a duration.
    pub fn stale_after(&self) -> Duration {
        secs(self.stale_after)
    }
    /// [`TrackingConfig::frozen_after`] as a duration.
    pub fn frozen_after(&self) -> Duration {
        secs(self.frozen_after)
    }
    /// [`TrackingConfig::hold`] as a duration.
    pub fn hold(&self) -> Duration {
        secs(self.hold)
    }
    /// [`TrackingConfig::fade`] as a duration.
    pub fn fade(&self) -> Duration {
        secs(self.fade)
    }
    /// [`TrackingConfig::ease_in`] as a duration.
    pub fn ease_in(&self) -> Duration {
        secs(self.ease_in)
    }

    /// Checks every time is in range; `text` locates the offending key.
    pub fn validate(&self, text: &str) -> Result<(), Invalid> {
        for (key, v, lo, hi) in [
            ("stale_after", self.stale_after, 0.02, 60.0),
            ("frozen_after", self.frozen_after, 0.02, 60.0),
            ("hold", self.hold, 0.0, 60.0),
            ("fade", self.fade, 0.0, 60.0),
            ("ease_in", self.ease_in, 0.0, 10.0),
        ] {
            if !(lo..=hi).contains(&v) {
                return Err(Invalid::at(
                    text,
                    locate_in_section(text, "[tracking]", key),
                    format!("[tracking] {key} = {v} s is out of range"),
                    &format!("use seconds between {lo} and {hi}"),
                ));
            }
        }
        Ok(())
    }
}

/// Seconds as a duration; negative or non-finite values give zero.
fn secs(s: f32) -> Duration {
    Duration::try_from_secs_f32(s).unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<SmoothingConfig, toml::de::Error> {
        toml::from_str(text)
    }

    #[test]
    fn groups_parse_in_any_spelling() {
        let cfg = parse(
            "[groups.visemes]\nchannels = [\"JawOpen\", \"mouth_funnel\", \"mouthPucker\"]\nnormalize = true\n",
        )
        .unwrap();
        assert_eq!(cfg.groups.len(), 1);
        let g = cfg.groups.get("visemes").unwrap();
        assert!(g.normalize);
        assert!(g.channels.0.contains(Channel::MouthFunnel));
        assert_eq!(g.channels.0.len(), 3);
        assert_eq!(g.spec(), FilterSpec::default());
    }

    #[test]
    fn unknown_channel_is_located_and_suggested() {
        let text = "[groups.eyes]\nchannels = [\"eyeBlinkLeft\", \"eyeBlnkRight\"]\n";
        let err = parse(text).unwrap_err();
        let (line, column) = line_column(text, err.span().unwrap().start);
        // toml reports the position of the list that holds the bad name.
        assert_eq!((line, column), (2, 12), "{err}");
        assert!(
            err.message().contains("did you mean `eyeBlinkRight`?"),
            "{err}"
        );
    }

    #[test]
    fn a_channel_in_two_groups_is_rejected() {
        let text = "[groups.a]\nchannels = [\"jawOpen\"]\n[groups.b]\nmin_cutoff = 1.0\nchannels = [\"JawOpen\"]\n";
        let full = "[smoothing.groups.a]\nchannels = [\"jawOpen\"]\n[smoothing.groups.b]\nmin_cutoff = 1.0\nchannels = [\"JawOpen\"]\n";
        let cfg = parse(text).unwrap();
        let err = cfg.validate(full).unwrap_err();
        assert_eq!((err.line, err.column), (5, 1), "{err:?}");
        assert!(err.message.contains("jawOpen"), "{err:?}");
    }

    #[test]
    fn ranges_are_checked_in_their_section() {
        let full = "[smoothing.groups.eyes]\nbeta = 1.0\n[smoothing.groups.jaw]\n  beta = -1.0\n";
        let cfg: SmoothingConfig =
            parse("[groups.eyes]\nbeta = 1.0\n[groups.jaw]\nbeta = -1.0\n").unwrap();
        let err = cfg.validate(full).unwrap_err();
        assert_eq!((err.line, err.column), (4, 3), "{err:?}");
        let t = TrackingConfig {
            fade: -1.0,
            ..TrackingConfig::default()
        };
        let err = t.validate("[tracking]\nfade = -1.0\n").unwrap_err();
        assert_eq!(err.line, 2);
    }

    #[test]
    fn default_groups_do_not_overlap() {
        SmoothingConfig::default().validate("").unwrap();
        TrackingConfig::default().validate("").unwrap();
    }

    #[test]
    fn keys_a_filter_does_not_use_are_named() {
        let text = "[smoothing.weights]\nfilter = \"one_euro\"\ntau = 0.05\nbeta = 2.0\n\n\
                    [smoothing.rotations]\nfilter = \"ema\"\ntau = 0.05\nmin_cutoff = 1.0\n";
        #[derive(Deserialize)]
        struct File {
            smoothing: SmoothingConfig,
        }
        let file: File = toml::from_str(text).unwrap();
        let unused = file.smoothing.unused_keys(text);
        assert_eq!(
            unused,
            [
                "[smoothing.weights] tau does nothing with filter = \"one_euro\"",
                "[smoothing.rotations] min_cutoff does nothing with filter = \"ema\"",
            ]
        );
    }
}

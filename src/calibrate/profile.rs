//! Per-performer profiles (`profiles/<name>.toml` beside the configuration): the neutral value and input range of
//! every calibrated channel plus optional smoothing settings, parsed raw and validated once,
//! written atomically through [`crate::tomlfile`] (so what a person wrote in the file stays).
//!
//! A profile is applied as `w = clamp((c - min) / (max - min), 0, 1)` per channel (see
//! [`ChannelRange::apply`]); channels the profile does not name keep the identity range 0..1.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::lipsync::calibration::Voice;
use crate::lipsync::features::COEFFICIENTS;
use crate::lipsync::profile::Profile as VowelProfile;
use toml::Spanned;
use tracing::{info, warn};

use super::settings::{ClockSource, FilterKind, FilterSpec, Invalid, SmoothingConfig};
use super::tracking::{Conditioner, NeutralPose};
use super::{ChannelRange, MIN_RANGE};
use crate::arkit::{Channel, COUNT};
use crate::diagnostic::{nearest, suggest_for};
use crate::tomlfile::{Ordered, TomlFile, TomlFileError, F32};

/// The profile format version this build writes and reads.
pub const PROFILE_VERSION: u32 = 1;

/// The profiles' folder inside the configuration's folder: `config/profiles` in a checkout of
/// the repository, `profiles` beside an installed facewire's `facewire.toml`.
pub const DIR_NAME: &str = "profiles";

/// The longest performer name, in characters.
pub const MAX_NAME: usize = crate::fsutil::MAX_NAME;

/// Errors loading, parsing or saving a profile.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The performer name cannot be a file name.
    #[error("`{name}` is not a usable performer name: {reason}")]
    BadName {
        /// The name as given.
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// No profile of that name exists.
    #[error("no profile for performer `{name}` in {}{}", dir.display(), not_found_tail(existing, suggestion.as_deref(), name))]
    NotFound {
        /// The name asked for.
        name: String,
        /// The folder searched.
        dir: PathBuf,
        /// The profiles that do exist, sorted.
        existing: Vec<String>,
        /// The existing name nearest to `name`, when it looks like a typo.
        suggestion: Option<String>,
    },
    /// The file could not be read.
    #[error("{}: {cause}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's error; part of the message, so not a `source()`.
        cause: std::io::Error,
    },
    /// The file is not valid TOML or holds a bad key or value.
    #[error("{0}")]
    Parse(crate::diagnostic::Located),
    /// The file could not be written (the previous profile, if any, is unchanged).
    #[error("cannot write the profile: {0}")]
    Write(TomlFileError),
}

/// The end of a [`ProfileError::NotFound`] message: the existing profiles and a suggestion.
fn not_found_tail(existing: &[String], suggestion: Option<&str>, name: &str) -> String {
    let mut s = if existing.is_empty() {
        format!(
            "; there are no profiles yet (create one with `facewire calibrate --performer {name}`)"
        )
    } else {
        format!("; existing profiles: {}", existing.join(", "))
    };
    if let Some(best) = suggestion {
        let _ = write!(s, "\n  hint: did you mean `{best}`?");
    }
    s
}

/// One calibrated channel: its resting value and its input range, in raw tracker units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChannelProfile {
    /// The raw value with the face at rest.
    pub neutral: f32,
    /// The raw value that maps to 0.
    pub min: f32,
    /// The raw value that maps to 1.
    pub max: f32,
}

impl ChannelProfile {
    /// The input range.
    pub fn range(&self) -> ChannelRange {
        ChannelRange {
            min: self.min,
            max: self.max,
        }
    }
}

/// A performer's calibration.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The format version ([`PROFILE_VERSION`] for profiles this build writes).
    pub version: u32,
    /// The performer's name (also the file name, without `.toml`).
    pub performer: String,
    /// When the profile was made, RFC 3339 in UTC (`2025-03-01T18:04:05Z`); informational.
    pub created: String,
    /// Per channel, canonical order: `Some` for calibrated channels (the only ones written),
    /// `None` for channels that keep the identity range 0..1.
    pub channels: [Option<ChannelProfile>; COUNT],
    /// The performer's smoothing settings; `None` means the main configuration's.
    pub smoothing: Option<SmoothingConfig>,
    /// The performer's voice for lip sync (`[vowels]`); `None` means the built-in one.
    pub vowels: Option<Voice>,
}

impl Profile {
    /// An empty profile (every channel identity) for `performer`, created now.
    pub fn new(performer: &str) -> Profile {
        Profile {
            version: PROFILE_VERSION,
            performer: performer.to_string(),
            created: now_rfc3339(),
            channels: [None; COUNT],
            smoothing: None,
            vowels: None,
        }
    }

    /// The folder profiles live in by default: [`DIR_NAME`] in `config_folder`, the folder of
    /// the configuration file in use.
    pub fn dir_in(config_folder: &Path) -> PathBuf {
        config_folder.join(DIR_NAME)
    }

    /// The file of performer `name` in `dir` (the name is not checked).
    pub fn path_in(dir: &Path, name: &str) -> PathBuf {
        dir.join(format!("{name}.toml"))
    }

    /// Checks that `name` can be a performer name: 1 to [`MAX_NAME`] letters, digits, `-`, `_`
    /// or `.`, not starting with `.`, so it is a plain file name on every platform and cannot
    /// leave the profiles folder.
    pub fn validate_name(name: &str) -> Result<(), ProfileError> {
        match crate::fsutil::name_problem(name) {
            Some(reason) => Err(ProfileError::BadName {
                name: name.to_string(),
                reason,
            }),
            None => Ok(()),
        }
    }

    /// The performer names that have a profile in `dir`, sorted; empty when the folder does
    /// not exist.
    pub fn list(dir: &Path) -> Vec<String> {
        crate::fsutil::list_names(dir)
    }

    /// Saves `voice` into `performer`'s profile in `dir` (a new profile when they have none),
    /// keeping the rest of it. Returns the file.
    pub fn store_voice(dir: &Path, performer: &str, voice: Voice) -> Result<PathBuf, ProfileError> {
        let mut profile = match Profile::load_named(dir, performer) {
            Ok(p) => p,
            Err(ProfileError::NotFound { .. }) => Profile::new(performer),
            Err(e) => return Err(e),
        };
        profile.vowels = Some(voice);
        profile.save(dir)
    }

    /// Loads performer `name`'s profile from `dir`. An unknown name is a
    /// [`ProfileError::NotFound`] that lists the existing profiles and suggests the nearest.
    pub fn load_named(dir: &Path, name: &str) -> Result<Profile, ProfileError> {
        Profile::validate_name(name)?;
        let path = Profile::path_in(dir, name);
        if !path.is_file() {
            let existing = Profile::list(dir);
            let suggestion = nearest(name, existing.iter().map(String::as_str)).map(str::to_string);
            return Err(ProfileError::NotFound {
                name: name.to_string(),
                dir: dir.to_path_buf(),
                existing,
                suggestion,
            });
        }
        Profile::load(&path)
    }

    /// Reads and parses a profile file. A profile without a `performer` key takes the file
    /// name.
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let text = crate::fsutil::read_text(path).map_err(|cause| ProfileError::Read {
            path: path.to_path_buf(),
            cause,
        })?;
        let mut profile = Profile::parse(&text, &path.display().to_string())?;
        if profile.performer.is_empty() {
            if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
                profile.performer = stem.to_string();
            }
        }
        Ok(profile)
    }

    /// Parses profile text; `path` only labels errors.
    pub fn parse(text: &str, path: &str) -> Result<Profile, ProfileError> {
        let fail = |offset: usize, message: String, hint: Option<String>| {
            ProfileError::Parse(crate::diagnostic::Located::at(
                path, text, offset, message, hint,
            ))
        };
        let from_toml = |e: toml::de::Error| {
            let message = e.message().trim().to_string();
            fail(
                e.span().map_or(0, |s| s.start),
                message.clone(),
                suggest_for(&message),
            )
        };
        // The version is checked before the rest, so that a newer format's unknown keys are
        // reported as a version problem rather than as typos.
        let head: RawVersion = toml::from_str(text).map_err(from_toml)?;
        let Some(version) = head.version else {
            return Err(fail(
                0,
                "the profile has no `version`".into(),
                Some(format!("add `version = {PROFILE_VERSION}` at the top")),
            ));
        };
        if version.get_ref() != &i64::from(PROFILE_VERSION) {
            return Err(fail(
                version.span().start,
                format!("profile version {} is not supported", version.get_ref()),
                Some(format!(
                    "this facewire reads version {PROFILE_VERSION}; recalibrate with `facewire calibrate`"
                )),
            ));
        }
        let raw: RawProfile = toml::from_str(text).map_err(from_toml)?;
        let mut channels = [None; COUNT];
        for (key, value) in &raw.channels {
            let name = key.get_ref();
            let at = key.span().start;
            let Some(channel) = Channel::parse(name) else {
                let hint = nearest(name, Channel::ALL.iter().map(|c| c.name()))
                    .map(|best| format!("did you mean `{best}`?"))
                    .unwrap_or_else(|| "write an ARKit name such as `jawOpen`".into());
                return Err(fail(
                    at,
                    format!("`{name}` is not an ARKit channel"),
                    Some(hint),
                ));
            };
            if channels[channel.index()].is_some() {
                return Err(fail(
                    at,
                    format!("channel `{channel}` appears twice (as `{name}` and another spelling)"),
                    Some("keep one table per channel".into()),
                ));
            }
            let RawChannel { neutral, min, max } = *value.get_ref();
            let neutral = neutral.unwrap_or(min);
            if ![neutral, min, max].iter().all(|v| v.is_finite()) {
                return Err(fail(
                    at,
                    format!("channel `{channel}` has a value that is not a finite number"),
                    Some("write plain numbers such as `min = 0.1`".into()),
                ));
            }
            if max < min {
                return Err(fail(
                    at,
                    format!("channel `{channel}` has max = {max} below min = {min}"),
                    Some("swap them: min is the resting value, max the fullest".into()),
                ));
            }
            channels[channel.index()] = Some(ChannelProfile { neutral, min, max });
        }
        if let Some(smoothing) = &raw.smoothing {
            if let Err(Invalid {
                line,
                column,
                message,
                hint,
            }) = smoothing.validate(text)
            {
                return Err(ProfileError::Parse(crate::diagnostic::Located {
                    path: path.to_string(),
                    line,
                    column,
                    message,
                    hint: Some(hint),
                }));
            }
        }
        let vowels = match &raw.vowels {
            Some(v) => Some(v.voice().map_err(|(key, message, hint)| {
                let at = text
                    .find("[vowels]")
                    .map(|s| s + crate::diagnostic::key_offset(&text[s..], key).unwrap_or(0))
                    .unwrap_or(0);
                fail(at, message, Some(hint))
            })?),
            None => None,
        };
        Ok(Profile {
            version: PROFILE_VERSION,
            performer: raw.performer,
            created: raw.created,
            channels,
            smoothing: raw.smoothing,
            vowels,
        })
    }

    /// The text of a new profile file: [`HEADER`], then the calibrated channels only, in
    /// canonical order.
    pub fn to_toml(&self) -> String {
        crate::tomlfile::to_string(&ProfileTable::of(self), HEADER)
            .expect("a profile is strings and numbers, always TOML")
    }

    /// Writes the profile to `dir/<performer>.toml` atomically (a temporary file renamed over
    /// the old one, so an interrupted save leaves the previous profile intact). An existing
    /// file keeps what was written in it by hand (comments, order, spacing) where its keys
    /// remain; one that is not TOML is replaced. Returns the path.
    pub fn save(&self, dir: &Path) -> Result<PathBuf, ProfileError> {
        Profile::validate_name(&self.performer)?;
        let path = Profile::path_in(dir, &self.performer);
        let mut file = TomlFile::open_or_replace(&path, HEADER).map_err(ProfileError::Write)?;
        file.set(&ProfileTable::of(self))
            .map_err(ProfileError::Write)?;
        file.write().map_err(ProfileError::Write)?;
        info!(performer = %self.performer, path = %path.display(), "profile saved");
        Ok(path)
    }

    /// The calibration of `channel`, or the identity (neutral 0, range 0..1) when it has none.
    pub fn channel(&self, channel: Channel) -> ChannelProfile {
        self.channels[channel.index()].unwrap_or(ChannelProfile {
            neutral: 0.0,
            min: 0.0,
            max: 1.0,
        })
    }

    /// Sets `channel`'s calibration.
    pub fn set(&mut self, channel: Channel, calibration: ChannelProfile) {
        self.channels[channel.index()] = Some(calibration);
    }

    /// The input range of every channel, canonical order (identity where not calibrated).
    pub fn ranges(&self) -> [ChannelRange; COUNT] {
        Channel::ALL.map(|c| self.channel(c).range())
    }

    /// Calibrated channels whose range is degenerate (narrower than [`MIN_RANGE`]): they pass
    /// through unchanged.
    pub fn degenerate(&self) -> Vec<Channel> {
        Channel::ALL
            .into_iter()
            .filter(|c| {
                self.channels[c.index()].is_some_and(|p| {
                    let span = p.max - p.min;
                    !span.is_finite() || span.abs() < MIN_RANGE
                })
            })
            .collect()
    }

    /// The pose the avatar fades to when the face is lost: each channel's neutral value through
    /// its range (so 0 for channels whose range starts at the neutral), rotations identity.
    pub fn neutral_pose(&self) -> NeutralPose {
        let mut pose = NeutralPose::default();
        for c in Channel::ALL {
            let p = self.channel(c);
            pose.weights[c.index()] = p.range().apply(p.neutral);
        }
        pose
    }

    /// The smoothing this profile asks for: its own, else `main`.
    pub fn smoothing_or(&self, main: &SmoothingConfig) -> SmoothingConfig {
        self.smoothing.unwrap_or(*main)
    }

    /// Applies the profile to a conditioner: ranges, neutral pose and smoothing (the profile's,
    /// else `main`). Warns once per degenerate channel, here rather than per frame.
    pub fn apply_to(&self, conditioner: &mut Conditioner, main: &SmoothingConfig) {
        for channel in self.degenerate() {
            let p = self.channel(channel);
            warn!(
                performer = %self.performer,
                %channel,
                min = p.min,
                max = p.max,
                "degenerate range in the profile; the channel passes through unchanged"
            );
        }
        conditioner.set_ranges(self.ranges());
        conditioner.set_neutral(self.neutral_pose());
        conditioner.set_smoothing(self.smoothing_or(main));
        info!(
            performer = %self.performer,
            calibrated = self.channels.iter().filter(|c| c.is_some()).count(),
            own_smoothing = self.smoothing.is_some(),
            "profile applied"
        );
    }
}

/// Only the version, read first.
#[derive(Deserialize)]
struct RawVersion {
    /// `version = N`.
    version: Option<Spanned<i64>>,
}

/// The file as written, before validation.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    /// Checked separately.
    #[allow(dead_code)]
    version: i64,
    /// The performer.
    #[serde(default)]
    performer: String,
    /// When it was made.
    #[serde(default)]
    created: String,
    /// Channel tables keyed by name, with the key's position for errors.
    #[serde(default)]
    channels: BTreeMap<Spanned<String>, Spanned<RawChannel>>,
    /// Optional smoothing.
    #[serde(default)]
    smoothing: Option<SmoothingConfig>,
    /// Optional voice.
    #[serde(default)]
    vowels: Option<RawVowels>,
}

/// The `[vowels]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVowels {
    floor_db: f32,
    ceiling_db: f32,
    aa: Vec<f32>,
    ih: Vec<f32>,
    ou: Vec<f32>,
    ee: Vec<f32>,
    oh: Vec<f32>,
}

impl RawVowels {
    /// The voice, or `(key, message, hint)` for what is wrong.
    fn voice(&self) -> Result<Voice, (&'static str, String, String)> {
        let mut means = [[0.0; COEFFICIENTS]; 5];
        let lists = [
            ("aa", &self.aa),
            ("ih", &self.ih),
            ("ou", &self.ou),
            ("ee", &self.ee),
            ("oh", &self.oh),
        ];
        for (mean, (key, list)) in means.iter_mut().zip(lists) {
            if list.len() != COEFFICIENTS || !list.iter().all(|v| v.is_finite()) {
                return Err((
                    key,
                    format!(
                        "vowels.{key} has {} values; it needs {COEFFICIENTS} finite numbers",
                        list.len()
                    ),
                    "record the vowels again with `facewire calibrate --vowels`".into(),
                ));
            }
            mean.copy_from_slice(list);
        }
        let (floor_db, ceiling_db) = (self.floor_db, self.ceiling_db);
        if !(floor_db.is_finite() && ceiling_db.is_finite() && floor_db < ceiling_db) {
            return Err((
                "floor_db",
                format!("vowels.floor_db = {floor_db} is not below ceiling_db = {ceiling_db}"),
                "the mouth opens from floor_db to ceiling_db, e.g. -50 and -30".into(),
            ));
        }
        Ok(Voice {
            profile: VowelProfile { means },
            floor_db,
            ceiling_db,
        })
    }
}

/// One `[channels.NAME]` table.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChannel {
    /// Resting value; defaults to `min`.
    #[serde(default)]
    neutral: Option<f32>,
    /// Maps to 0.
    min: f32,
    /// Maps to 1.
    max: f32,
}

/// The first lines of a new profile file.
pub const HEADER: &str = "\
# facewire performer profile. Written by `facewire calibrate`; safe to edit by hand.
# Per channel: neutral (the resting raw value), min (maps to 0), max (maps to 1);
# w = clamp((c - min) / (max - min), 0, 1). Channels not listed pass through unchanged.
# [vowels], from `facewire calibrate --vowels`: the lip-sync gate (dB full scale) and the mean
# cepstrum (c1..c12) of each vowel.
";

/// A profile as written.
#[derive(Serialize)]
struct ProfileTable<'a> {
    version: u32,
    performer: &'a str,
    created: &'a str,
    /// The calibrated channels, canonical order.
    #[serde(skip_serializing_if = "Ordered::is_empty")]
    channels: Ordered<&'static str, ChannelTable>,
    #[serde(skip_serializing_if = "Option::is_none")]
    smoothing: Option<SmoothingTable>,
    #[serde(skip_serializing_if = "Option::is_none")]
    vowels: Option<VowelsTable>,
}

/// `[channels.NAME]`.
#[derive(Serialize)]
struct ChannelTable {
    neutral: F32,
    min: F32,
    max: F32,
}

/// `[smoothing]` in the syntax of `facewire.toml`, every key explicit so that it reads back
/// equal (an empty `[smoothing.groups]` table means no groups, not the default groups).
#[derive(Serialize)]
struct SmoothingTable {
    clock: &'static str,
    weights: SpecTable,
    rotations: SpecTable,
    groups: Ordered<String, GroupTable>,
}

/// One filter's settings.
#[derive(Serialize)]
struct SpecTable {
    filter: FilterKind,
    tau: F32,
    min_cutoff: F32,
    beta: F32,
    d_cutoff: F32,
}

/// `[smoothing.groups.NAME]`.
#[derive(Serialize)]
struct GroupTable {
    channels: Vec<&'static str>,
    normalize: bool,
    filter: FilterKind,
    tau: F32,
    min_cutoff: F32,
    beta: F32,
    d_cutoff: F32,
}

/// `[vowels]`.
#[derive(Serialize)]
struct VowelsTable {
    floor_db: F32,
    ceiling_db: F32,
    aa: Vec<F32>,
    ih: Vec<F32>,
    ou: Vec<F32>,
    ee: Vec<F32>,
    oh: Vec<F32>,
}

impl<'a> ProfileTable<'a> {
    fn of(p: &'a Profile) -> ProfileTable<'a> {
        let channels = Channel::ALL
            .iter()
            .zip(&p.channels)
            .filter_map(|(c, p)| {
                p.map(|p| {
                    let table = ChannelTable {
                        neutral: F32(p.neutral),
                        min: F32(p.min),
                        max: F32(p.max),
                    };
                    (c.name(), table)
                })
            })
            .collect();
        ProfileTable {
            version: p.version,
            performer: &p.performer,
            created: &p.created,
            channels: Ordered(channels),
            smoothing: p.smoothing.as_ref().map(SmoothingTable::of),
            vowels: p.vowels.as_ref().map(VowelsTable::of),
        }
    }
}

impl SpecTable {
    fn of(spec: &FilterSpec) -> SpecTable {
        SpecTable {
            filter: spec.filter,
            tau: F32(spec.tau),
            min_cutoff: F32(spec.min_cutoff),
            beta: F32(spec.beta),
            d_cutoff: F32(spec.d_cutoff),
        }
    }
}

impl SmoothingTable {
    fn of(sm: &SmoothingConfig) -> SmoothingTable {
        let groups = sm
            .groups
            .iter()
            .map(|(name, group)| {
                let spec = SpecTable::of(&group.spec());
                let table = GroupTable {
                    channels: group.channels.0.iter().map(|c| c.name()).collect(),
                    normalize: group.normalize,
                    filter: spec.filter,
                    tau: spec.tau,
                    min_cutoff: spec.min_cutoff,
                    beta: spec.beta,
                    d_cutoff: spec.d_cutoff,
                };
                (name.to_string(), table)
            })
            .collect();
        SmoothingTable {
            clock: match sm.clock {
                ClockSource::Auto => "auto",
                ClockSource::Receive => "receive",
            },
            weights: SpecTable::of(&sm.weights),
            rotations: SpecTable::of(&sm.rotations),
            groups: Ordered(groups),
        }
    }
}

impl VowelsTable {
    fn of(v: &Voice) -> VowelsTable {
        // `means` is in the order of `VOWELS`: aa, ih, ou, ee, oh.
        let [aa, ih, ou, ee, oh] = v.profile.means.map(|m| m.iter().map(|&c| F32(c)).collect());
        VowelsTable {
            floor_db: F32(v.floor_db),
            ceiling_db: F32(v.ceiling_db),
            aa,
            ih,
            ou,
            ee,
            oh,
        }
    }
}

/// The current time as RFC 3339 in UTC, to the second.
pub fn now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339(secs)
}

/// `secs` since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Days to civil date (proleptic Gregorian), after Howard Hinnant's `civil_from_days`.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::settings::GroupConfig;

    fn sample() -> Profile {
        let mut p = Profile::new("alice");
        p.created = "2025-03-01T18:04:05Z".into();
        p.set(
            Channel::JawOpen,
            ChannelProfile {
                neutral: 0.12,
                min: 0.12,
                max: 0.71,
            },
        );
        p.set(
            Channel::EyeBlinkLeft,
            ChannelProfile {
                neutral: 0.1,
                min: 0.02,
                max: 0.83,
            },
        );
        p
    }

    #[test]
    fn the_documented_example_parses() {
        let doc = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/config/profiles/README.md"
        ))
        .unwrap();
        let start = doc.find("```toml\n").unwrap() + "```toml\n".len();
        let end = start + doc[start..].find("```").unwrap();
        let p = Profile::parse(&doc[start..end], "README.md").unwrap();
        assert_eq!(p.performer, "alice");
        assert_eq!(p.channel(Channel::JawOpen).max, 0.71);
        assert!(p.smoothing.is_some());
    }

    #[test]
    fn a_bad_vowel_table_is_located() {
        let text = "version = 1\nperformer = \"a\"\n\n[vowels]\nfloor_db = -50.0\n\
                    ceiling_db = -30.0\naa = [1.0]\nih = []\nou = []\nee = []\noh = []\n";
        let err = Profile::parse(text, "a.toml").unwrap_err().to_string();
        assert!(err.starts_with("a.toml:7:1:"), "{err}");
        assert!(err.contains("vowels.aa has 1 values"), "{err}");
        assert!(err.contains("calibrate --vowels"), "{err}");
    }

    #[test]
    fn dates_are_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_740_852_245), "2025-03-01T18:04:05Z");
    }

    #[test]
    fn text_round_trips_with_and_without_smoothing() {
        let mut p = sample();
        assert_eq!(Profile::parse(&p.to_toml(), "p.toml").unwrap(), p);
        p.smoothing = Some(SmoothingConfig::default());
        assert_eq!(Profile::parse(&p.to_toml(), "p.toml").unwrap(), p);
        let mut profile = VowelProfile::builtin();
        profile.means[2][5] = -1.234_567_9;
        p.vowels = Some(Voice {
            profile,
            floor_db: -55.5,
            ceiling_db: -31.25,
        });
        assert_eq!(Profile::parse(&p.to_toml(), "p.toml").unwrap(), p);
        let mut sm = SmoothingConfig::ema(0.05, 0.1);
        sm.groups.insert(
            "my visemes",
            GroupConfig::new(&[Channel::MouthFunnel], FilterSpec::ema(0.02)),
        );
        p.smoothing = Some(sm);
        assert_eq!(Profile::parse(&p.to_toml(), "p.toml").unwrap(), p);
        p.smoothing = Some(SmoothingConfig::off());
        assert_eq!(Profile::parse(&p.to_toml(), "p.toml").unwrap(), p);
    }

    #[test]
    fn saving_again_keeps_what_was_written_by_hand() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = sample();
        let path = p.save(dir.path()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, p.to_toml());
        assert!(text.starts_with(HEADER), "{text}");
        let text = text
            .replace(
                "[channels.jawOpen]\n",
                "# Tuned by hand after the stream.\n[channels.jawOpen]\n",
            )
            .replace("max = 0.71\n", "max = 0.71 # wide open\n")
            + "# The end.\n";
        std::fs::write(&path, &text).unwrap();

        p.set(
            Channel::JawOpen,
            ChannelProfile {
                neutral: 0.12,
                min: 0.12,
                max: 0.8,
            },
        );
        p.channels[Channel::EyeBlinkLeft.index()] = None;
        p.vowels = Some(Voice {
            profile: VowelProfile::builtin(),
            floor_db: -50.0,
            ceiling_db: -30.0,
        });
        p.save(dir.path()).unwrap();
        let saved = std::fs::read_to_string(&path).unwrap();
        assert_eq!(Profile::load(&path).unwrap(), p);
        assert!(
            saved.contains("# Tuned by hand after the stream.\n[channels.jawOpen]\nneutral = 0.12\nmin = 0.12\nmax = 0.8 # wide open\n"),
            "{saved}"
        );
        assert!(!saved.contains("eyeBlinkLeft"), "{saved}");
        assert!(
            saved.contains("# The end.\n\n[vowels]\nfloor_db = -50.0\n"),
            "{saved}"
        );
        // A file that is not TOML is replaced by the profile.
        std::fs::write(&path, "version = [").unwrap();
        p.save(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), p.to_toml());
    }

    #[test]
    fn unknown_channels_are_located_and_suggested() {
        let text = "version = 1\nperformer = \"a\"\n\n[channels.jawOpen]\nmin = 0.1\nmax = 0.7\n\n[channels.jawOpne]\nmin = 0.1\nmax = 0.7\n";
        let err = Profile::parse(text, "a.toml").unwrap_err().to_string();
        assert!(err.starts_with("a.toml:8:11:"), "{err}");
        assert!(err.contains("did you mean `jawOpen`?"), "{err}");
    }

    #[test]
    fn versions_and_values_are_checked() {
        let err = Profile::parse("performer = \"a\"\n", "a.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("no `version`"), "{err}");
        let err = Profile::parse("\nversion = 7\n", "a.toml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("a.toml:2:11:"), "{err}");
        let err = Profile::parse(
            "version = 1\n[channels.jawOpen]\nmin = 0.7\nmax = 0.1\n",
            "a.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("a.toml:2:"), "{err}");
        assert!(err.contains("below"), "{err}");
        let err = Profile::parse(
            "version = 1\n[channels.jawOpen]\nmin = nan\nmax = 0.1\n",
            "a.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("finite"), "{err}");
        let err = Profile::parse(
            "version = 1\n[channels.jawOpen]\nmin = 0.1\nmaks = 0.7\n",
            "a.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("a.toml:4:1:"), "{err}");
        assert!(err.contains("did you mean `max`?"), "{err}");
    }

    #[test]
    fn names_are_plain_file_names() {
        for good in ["alice", "Jason-2", "studio_b.v2", "Zoë"] {
            Profile::validate_name(good).unwrap();
        }
        for bad in ["", "../x", "a/b", "a\\b", ".hidden", "a b", &"x".repeat(65)] {
            assert!(Profile::validate_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ranges_and_neutral_pose_follow_the_profile() {
        let p = sample();
        let ranges = p.ranges();
        assert_eq!(ranges[Channel::JawOpen.index()].min, 0.12);
        assert_eq!(
            ranges[Channel::MouthFunnel.index()],
            ChannelRange::default()
        );
        let pose = p.neutral_pose();
        assert_eq!(pose.weights[Channel::JawOpen.index()], 0.0);
        let blink = pose.weights[Channel::EyeBlinkLeft.index()];
        assert!(blink > 0.0 && blink < 0.2, "{blink}");
    }
}

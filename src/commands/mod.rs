//! The subcommands: their flags ([`cli`]) and their bodies. Each body takes the configuration
//! and its flags, prints its answer, and returns a [`CommandError`]; `main.rs` parses the
//! command line, finds the configuration and dispatches. A live run (the stage, a headless run,
//! the relay) is assembled by [`crate::session`]; the commands here only describe it, or, for
//! the tools (`listen`, `record`, `track`, `lipsync`, the vowel take), run their own loop over
//! session's input and the subsystems.

mod args;
pub mod cli;
mod lipsync;
mod lipsync_live;
mod listen;
mod live;
mod record;
mod tools;
mod track;
mod vowel_take;
mod vowels;

use std::path::{Path, PathBuf};

pub use args::{
    confirm, parse_weights, read_pose_lines, CheckArgs, HeadAngles, PoseLinesError, Size, TakeArgs,
    WeightsError,
};
pub use cli::{Cli, Command};
pub use lipsync::{lip_frame_json, lipsync_command, lipsync_wav, LipsyncArgs};
pub use listen::{frame_json, listen};
pub use live::{calibrate, relay, run};
pub use record::record;
pub use tools::{
    check, config, contact_sheet, gen_head, import_obj, list_cameras_command, listen_command,
    record_command, replay, snapshot, track,
};
pub use track::{list_cameras, track_command, TrackArgs, TrackSummary};
pub use vowels::{calibrate_vowels, offer_vowels, save_vowels, VowelArgs};

use crate::calibrate::{Profile, ProfileError};
use crate::config::Config;

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The run could not start or failed (the avatar, the mapping, the input...).
    #[error(transparent)]
    Start(#[from] crate::session::StartError),
    /// The stage or the offscreen renderer failed.
    #[error(transparent)]
    Live(#[from] crate::app::LiveError),
    /// A performer's profile could not be read, written or named.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// A performer's profile is missing where the configuration keeps them; `note` says where
    /// else to look.
    #[error("{error}\n  note: {note}")]
    ProfileElsewhere {
        /// The missing profile.
        error: ProfileError,
        /// The user's own profiles folder, and whether it has the profile.
        note: String,
    },
    /// `--model NAME` names no avatar.
    #[error(transparent)]
    Model(#[from] crate::session::NoSuchModel),
    /// A recording could not be loaded, played or written.
    #[error("cannot use the recording {}", path.display())]
    Recording {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: crate::record::RecordError,
    },
    /// A recording's playback options are out of range.
    #[error(transparent)]
    ReplayOptions(crate::record::RecordError),
    /// A recording could not calibrate a performer.
    #[error("cannot calibrate from {}", path.display())]
    Offline {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: crate::calibrate::OfflineError,
    },
    /// A video for the webcam tracker could not be read.
    #[error(transparent)]
    Video(#[from] crate::webcam::video::VideoError),
    /// The webcam tracker's networks failed.
    #[error(transparent)]
    Tracker(#[from] crate::webcam::model::ModelError),
    /// No camera to list.
    #[error(transparent)]
    Camera(#[from] crate::webcam::camera::CameraError),
    /// An audio file could not be read.
    #[error(transparent)]
    Wav(#[from] crate::lipsync::wav::WavError),
    /// Audio input could not be opened or listed.
    #[error(transparent)]
    Audio(#[from] crate::audio::AudioError),
    /// A take of the performer's vowels could not be learnt.
    #[error(transparent)]
    Vowels(#[from] crate::lipsync::calibration::VowelError),
    /// A lip-sync plot could not be made.
    #[error(transparent)]
    Plot(#[from] crate::lipsync::plot::PlotError),
    /// `snapshot --weights` does not parse.
    #[error(transparent)]
    Weights(#[from] WeightsError),
    /// `snapshot --frames` does not parse.
    #[error(transparent)]
    Poses(#[from] PoseLinesError),
    /// A contact sheet could not be made.
    #[error(transparent)]
    Sheet(#[from] crate::sheet::SheetError),
    /// An OBJ shape set could not be imported.
    #[error(transparent)]
    Import(#[from] crate::objimport::ImportError),
    /// A picture could not be written.
    #[error(transparent)]
    Image(#[from] crate::image::ImageError),
    /// A file or folder could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `check` found errors in the mapping (the report above says which).
    #[error("the mapping has errors")]
    MappingHasErrors,
    /// A flag that belongs to another kind of run.
    #[error("{0}")]
    Flags(&'static str),
    /// Standard output (or the terminal) could not be written.
    #[error("cannot write the output")]
    Output(#[source] std::io::Error),
}

impl From<serde_json::Error> for CommandError {
    fn from(e: serde_json::Error) -> Self {
        CommandError::Output(e.into())
    }
}

/// `--profiles DIR` when given, else the profiles folder beside the configuration.
pub fn profiles_folder(flag: Option<&Path>, config: &Config) -> PathBuf {
    flag.map_or_else(|| Profile::dir_in(&config.folder), Path::to_path_buf)
}

/// Loads `--performer NAME`'s profile from `dir`. A profile missing there is answered with the
/// user's own profiles folder too when it is not the one searched (a checkout's config/ in
/// use): that it has the profile and how to use it, or that it lacks it too.
pub fn performer_profile(dir: &Path, name: Option<&str>) -> Result<Option<Profile>, CommandError> {
    let Some(name) = name else { return Ok(None) };
    match Profile::load_named(dir, name) {
        Ok(profile) => {
            tracing::info!(performer = name, created = %profile.created, "performer profile loaded");
            Ok(Some(profile))
        }
        Err(error @ ProfileError::NotFound { .. }) => Err(elsewhere(error, dir, name)),
        Err(error) => Err(error.into()),
    }
}

/// A missing profile's error, with the user's own profiles folder named when it is not `dir`.
fn elsewhere(error: ProfileError, dir: &Path, name: &str) -> CommandError {
    let Some(folder) = crate::config::platform_folder() else {
        return error.into();
    };
    let user = Profile::dir_in(&folder);
    let searched = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    if user == searched {
        return error.into();
    }
    let path = Profile::path_in(&user, name);
    let note = if path.is_file() {
        format!(
            "{} has a profile for `{name}`, but the configuration in use keeps its profiles in \
             {} (run facewire from another folder, or give --profiles {})",
            path.display(),
            searched.display(),
            user.display()
        )
    } else {
        format!(
            "not in your own profiles folder, {}, either",
            user.display()
        )
    };
    CommandError::ProfileElsewhere { error, note }
}

/// Calibrates `performer` offline from a recording (`.fwrec` or a Live Link Face CSV), starting
/// from their `old` profile, with the neutral face `take` names or the rest found in the take.
pub fn calibrate_from(
    file: &Path,
    take: &TakeArgs,
    old: Option<&Profile>,
    performer: &str,
) -> Result<crate::calibrate::Calibration, CommandError> {
    let recording =
        crate::record::Recording::load(file).map_err(|source| CommandError::Recording {
            path: file.to_path_buf(),
            source,
        })?;
    let frames = crate::record::frames(&recording);
    crate::calibrate::calibrate_offline(frames, old, performer, take.neutral_at).map_err(|source| {
        CommandError::Offline {
            path: file.to_path_buf(),
            source,
        }
    })
}

//! Which configuration file facewire uses: `--config PATH`, else `config/facewire.toml` beside
//! the program (an unpacked download: the Windows zip or the Linux tarball), else
//! `config/facewire.toml` in the working directory (a checkout of the repository), else
//! `facewire.toml` in the platform's config folder, which the first start fills with the
//! shipped files.
//!
//! Relative paths in the file, and the folders of named things (performers' profiles, look
//! presets, the default head's mapping), are taken from the folder the file is in, so an
//! installed facewire keeps everything beside its configuration wherever it is started.

use std::fmt;
use std::path::{Path, PathBuf};

use super::{Config, ConfigError, DEFAULT_FOLDER, DEFAULT_PATH};

/// The configuration's file name in the platform's config folder.
pub const FILE_NAME: &str = "facewire.toml";

/// The files the first start writes into the platform's config folder, as they ship in the
/// repository's `config/`: the configuration, the expressions it names, the mappings, the look
/// presets and the profiles folder's guide.
pub const SHIPPED: [(&str, &str); 8] = [
    (FILE_NAME, include_str!("../../config/facewire.toml")),
    (
        "expressions.toml",
        include_str!("../../config/expressions.toml"),
    ),
    (
        "mappings/default_head.toml",
        include_str!("../../config/mappings/default_head.toml"),
    ),
    (
        "mappings/example.toml",
        include_str!("../../config/mappings/example.toml"),
    ),
    (
        "looks/round.toml",
        include_str!("../../config/looks/round.toml"),
    ),
    (
        "looks/sharp.toml",
        include_str!("../../config/looks/sharp.toml"),
    ),
    (
        "looks/soft.toml",
        include_str!("../../config/looks/soft.toml"),
    ),
    (
        "profiles/README.md",
        include_str!("../../config/profiles/README.md"),
    ),
];

/// The empty folders the first start makes beside the files: where avatars are dropped
/// (`render.models_dir`).
const SHIPPED_FOLDERS: [&str; 1] = ["models"];

/// Where the configuration in use came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `--config PATH`.
    Flag,
    /// `config/facewire.toml` beside the program (an unpacked download).
    BesideProgram,
    /// `config/facewire.toml` in the working directory (a checkout of the repository).
    WorkingDirectory,
    /// `facewire.toml` in the platform's config folder.
    Platform,
    /// The platform's config folder, filled with the shipped files by this start.
    FirstStart,
    /// No file: the built-in defaults, because there is no platform config folder or it could
    /// not be written (the reason).
    BuiltIn(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Flag => f.write_str("given with --config"),
            Origin::BesideProgram => f.write_str("config/facewire.toml beside the program"),
            Origin::WorkingDirectory => {
                f.write_str("config/facewire.toml in the working directory")
            }
            Origin::Platform => f.write_str("the platform's config folder"),
            Origin::FirstStart => {
                f.write_str("the platform's config folder, written there on this first start")
            }
            Origin::BuiltIn(why) => write!(f, "no file: the built-in defaults ({why})"),
        }
    }
}

/// The configuration in use, the file it was read from and why that one.
#[derive(Debug)]
pub struct Found {
    /// The configuration; its [`Config::folder`] is the file's folder.
    pub config: Config,
    /// The file, `None` for the built-in defaults.
    pub path: Option<PathBuf>,
    /// Why this file.
    pub origin: Origin,
}

/// The platform's config folder for facewire: `$XDG_CONFIG_HOME/facewire` or
/// `~/.config/facewire` on Linux, `%APPDATA%\facewire` on Windows,
/// `~/Library/Application Support/facewire` on macOS; `None` when the system names no home.
pub fn platform_folder() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("facewire"))
}

/// `config/facewire.toml` beside the running program, when there is one: an unpacked download
/// (the Windows zip, the Linux tarball) keeps its configuration, profiles and looks in its own
/// folder, wherever it is started from (a shortcut, a terminal elsewhere). A program built in a
/// checkout (`target/release`) or installed (`/usr/bin`, `~/.cargo/bin`) has none.
pub fn beside_program() -> Option<PathBuf> {
    let program = std::env::current_exe().ok()?;
    let path = program.parent()?.join(DEFAULT_FOLDER).join(FILE_NAME);
    path.is_file().then_some(path)
}

/// Writes the [`SHIPPED`] files that are not there yet into `folder` (made if needed), and
/// makes its `models` folder; a file already there is kept as it is. Returns the files written.
pub fn write_shipped(folder: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for (name, text) in SHIPPED {
        let path = folder.join(name);
        if path.exists() {
            continue;
        }
        crate::fsutil::write_atomic(&path, text.as_bytes())?;
        written.push(path);
    }
    for name in SHIPPED_FOLDERS {
        std::fs::create_dir_all(folder.join(name))?;
    }
    Ok(written)
}

impl Config {
    /// The configuration to use: `--config PATH` (`explicit`) if given; else
    /// [`DEFAULT_PATH`] beside the program ([`beside_program`]) or in the working directory,
    /// the first that exists; else [`FILE_NAME`] in the
    /// platform's config folder ([`platform_folder`]), written there from the shipped files
    /// first when it does not exist. Without a platform folder, or when it cannot be written,
    /// the built-in defaults (whose folder is [`DEFAULT_FOLDER`]).
    pub fn discover(explicit: Option<&Path>) -> Result<Found, ConfigError> {
        Config::discover_in(explicit, beside_program(), platform_folder())
    }

    /// [`Config::discover`] with the program's own configuration (when it has one) and the
    /// platform's config folder given.
    pub fn discover_in(
        explicit: Option<&Path>,
        beside: Option<PathBuf>,
        platform: Option<PathBuf>,
    ) -> Result<Found, ConfigError> {
        let found = |path: PathBuf, origin| {
            Ok(Found {
                config: Config::load(&path)?,
                path: Some(path),
                origin,
            })
        };
        if let Some(path) = explicit {
            return found(path.to_path_buf(), Origin::Flag);
        }
        if let Some(path) = beside {
            return found(path, Origin::BesideProgram);
        }
        if Path::new(DEFAULT_PATH).is_file() {
            return found(DEFAULT_PATH.into(), Origin::WorkingDirectory);
        }
        let built_in = |why: String| Found {
            config: Config::default(),
            path: None,
            origin: Origin::BuiltIn(why),
        };
        let Some(folder) = platform else {
            return Ok(built_in(format!(
                "the system names no home folder, and {DEFAULT_FOLDER}/ is used for profiles"
            )));
        };
        let path = folder.join(FILE_NAME);
        if path.is_file() {
            return found(path, Origin::Platform);
        }
        match write_shipped(&folder) {
            Ok(_) => found(path, Origin::FirstStart),
            Err(error) => Ok(built_in(format!(
                "cannot write {}: {error}",
                folder.display()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_files_are_the_repositorys_config_folder() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
        for (name, text) in SHIPPED {
            let on_disk = std::fs::read_to_string(root.join(name)).unwrap();
            assert_eq!(on_disk, text, "{name}");
        }
        // Every look preset and mapping the repository ships is among them.
        for folder in ["looks", "mappings"] {
            for entry in std::fs::read_dir(root.join(folder)).unwrap() {
                let name = format!("{folder}/{}", entry.unwrap().file_name().to_string_lossy());
                assert!(
                    SHIPPED.iter().any(|(n, _)| *n == name),
                    "{name} is not shipped"
                );
            }
        }
    }

    #[test]
    fn a_first_start_writes_the_shipped_files_and_reads_them_from_there() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("facewire");
        // The tests run in the repository, whose config/facewire.toml wins over the platform's
        // folder: go through the folder's own steps.
        let written = write_shipped(&folder).unwrap();
        assert_eq!(written.len(), SHIPPED.len());
        assert!(folder.join("models").is_dir());
        let config = Config::load(&folder.join(FILE_NAME)).unwrap();
        assert_eq!(config.folder, folder);
        assert_eq!(config.api.tokens, folder.join("api_tokens.toml"));
        assert_eq!(config.render.models_dir, folder.join("models"));
        assert_eq!(
            config.expressions.all().len(),
            4,
            "the expressions file beside it is read"
        );
        // A second start keeps what the performer changed.
        std::fs::write(folder.join(FILE_NAME), "[window]\nwidth = 640\n").unwrap();
        assert!(write_shipped(&folder).unwrap().is_empty());
        assert_eq!(
            Config::load(&folder.join(FILE_NAME)).unwrap().window.width,
            640
        );
    }

    #[test]
    fn a_configuration_beside_the_program_comes_before_the_users_folder() {
        let dir = tempfile::tempdir().unwrap();
        let unpacked = dir.path().join("facewire-1.0-windows-x86_64/config");
        write_shipped(&unpacked).unwrap();
        std::fs::write(unpacked.join(FILE_NAME), "[window]\nwidth = 700\n").unwrap();
        let user = dir.path().join("user");
        let beside = Some(unpacked.join(FILE_NAME));
        let found = Config::discover_in(None, beside.clone(), Some(user.clone())).unwrap();
        assert_eq!(found.origin, Origin::BesideProgram);
        assert_eq!(found.config.window.width, 700);
        assert_eq!(found.config.folder, unpacked);
        assert!(!user.exists(), "the user's folder was written");
        // --config still wins.
        let explicit = dir.path().join("given.toml");
        std::fs::write(&explicit, "").unwrap();
        let found = Config::discover_in(Some(&explicit), beside, Some(user)).unwrap();
        assert_eq!(found.origin, Origin::Flag);
    }

    #[test]
    fn an_unwritable_folder_falls_back_to_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        // A file where the folder should be.
        let blocked = dir.path().join("blocked");
        std::fs::write(&blocked, "").unwrap();
        let explicit = dir.path().join("given.toml");
        std::fs::write(&explicit, "[window]\nwidth = 800\n").unwrap();
        let found = Config::discover_in(Some(&explicit), None, Some(blocked.clone())).unwrap();
        assert_eq!(found.origin, Origin::Flag);
        assert_eq!(found.config.window.width, 800);
        assert_eq!(found.config.folder, dir.path());
        // Without --config the repository's config/facewire.toml wins where the tests run, so
        // the fallback is checked through write_shipped itself.
        assert!(write_shipped(&blocked.join("facewire")).is_err());
    }
}

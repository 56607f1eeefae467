//! The plugins' authentication tokens: random, kept in a TOML file written atomically (through
//! [`crate::tomlfile`], so comments written in it stay), read again on every check so that an
//! entry removed by hand revokes the plugin at once. The parameters plugins created live in the
//! same file, and go with their plugin's entry.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::custom::CustomParam;

/// Why the tokens file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The file exists but could not be read.
    #[error("cannot read {path}: {cause}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        cause: std::io::Error,
    },
    /// The file is not a tokens file.
    #[error("{path} is not a tokens file: {cause}")]
    Parse {
        /// The file.
        path: String,
        /// Why.
        cause: toml::de::Error,
    },
    /// The file could not be written (or, read again to merge into, was no longer TOML); it is
    /// left as it was.
    #[error("{0}")]
    Write(crate::tomlfile::TomlFileError),
    /// The system's random source failed.
    #[error("no random source: {0}")]
    Random(String),
}

/// One plugin allowed in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Entry {
    /// `pluginName`.
    name: String,
    /// `pluginDeveloper`.
    developer: String,
    /// Its token.
    token: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    plugin: Vec<Entry>,
    /// The parameters plugins created (`ParameterCreationRequest`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    parameter: Vec<CustomParam>,
}

impl File {
    fn allows(&self, name: &str, developer: &str) -> bool {
        self.plugin
            .iter()
            .any(|e| e.name == name && e.developer == developer)
    }
}

const HEADER: &str =
    "# Plugins allowed to drive facewire through its VTube Studio-compatible API, and the\n\
# parameters they created. Remove a plugin's entry to revoke it (its parameters go with it);\n\
# it must then ask again.\n\n";

/// The tokens file; checks and issues tokens.
#[derive(Debug)]
pub struct TokenStore {
    path: PathBuf,
    /// Serialises read-modify-write of the file within this process.
    lock: Mutex<()>,
}

impl TokenStore {
    /// The store kept in `path`. Fails when the file exists but is unreadable or not a tokens
    /// file (rather than overwrite it later).
    pub fn open(path: &Path) -> Result<TokenStore, TokenError> {
        let store = TokenStore {
            path: path.to_path_buf(),
            lock: Mutex::new(()),
        };
        store.read()?;
        Ok(store)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<File, TokenError> {
        let text = match crate::fsutil::read_text(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(File::default()),
            Err(cause) => {
                return Err(TokenError::Read {
                    path: self.path.display().to_string(),
                    cause,
                })
            }
        };
        toml::from_str(&text).map_err(|cause| TokenError::Parse {
            path: self.path.display().to_string(),
            cause,
        })
    }

    /// A new random token for `name` by `developer`, stored before it is returned. An earlier
    /// token of theirs is replaced in its place, so a comment written above their entry stays
    /// with it.
    pub fn issue(&self, name: &str, developer: &str) -> Result<String, TokenError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut file = self.read()?;
        let theirs = |e: &Entry| e.name == name && e.developer == developer;
        match file.plugin.iter().position(theirs) {
            Some(at) => {
                file.plugin[at].token.clone_from(&token);
                // Entries repeated by hand go; the first keeps its place.
                let mut first = true;
                file.plugin
                    .retain(|e| !theirs(e) || std::mem::take(&mut first));
            }
            None => file.plugin.push(Entry {
                name: name.to_string(),
                developer: developer.to_string(),
                token: token.clone(),
            }),
        }
        crate::tomlfile::save(&self.path, &file, HEADER).map_err(TokenError::Write)?;
        Ok(token)
    }

    /// The parameters plugins created whose plugin still holds a token.
    pub fn parameters(&self) -> Result<Vec<CustomParam>, TokenError> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let file = self.read()?;
        Ok(file
            .parameter
            .iter()
            .filter(|p| file.allows(&p.plugin, &p.developer))
            .cloned()
            .collect())
    }

    /// Whether `name` by `developer` holds a token, as a test over the file read now.
    pub fn allowed_plugins(&self) -> Result<impl Fn(&str, &str) -> bool, TokenError> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let file = self.read()?;
        Ok(move |name: &str, developer: &str| file.allows(name, developer))
    }

    /// Keeps `params` as the parameters plugins created, replacing those in the file.
    pub fn save_parameters(&self, params: &[CustomParam]) -> Result<(), TokenError> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut file = self.read()?;
        file.parameter = params.to_vec();
        crate::tomlfile::save(&self.path, &file, HEADER).map_err(TokenError::Write)
    }

    /// How many plugins hold a token (the user allowed them and has not revoked them).
    pub fn allowed(&self) -> Result<usize, TokenError> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        Ok(self.read()?.plugin.len())
    }

    /// Whether `token` was issued to `name` by `developer` and is still in the file.
    pub fn check(&self, name: &str, developer: &str, token: &str) -> Result<bool, TokenError> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let file = self.read()?;
        Ok(file.plugin.iter().any(|e| {
            e.name == name && e.developer == developer && same(e.token.as_bytes(), token.as_bytes())
        }))
    }
}

/// Compares two byte strings in time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_survive_a_restart_and_can_be_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config/api_tokens.toml");
        let store = TokenStore::open(&path).unwrap();
        let token = store.issue("Streamer.bot", "Streamer.bot").unwrap();
        assert_eq!(token.len(), 64);
        assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
        let other = store.issue("Mix It Up", "SaviorXTanren").unwrap();
        assert_ne!(token, other);
        assert_eq!(store.allowed().unwrap(), 2);

        let reopened = TokenStore::open(&path).unwrap();
        assert!(reopened
            .check("Streamer.bot", "Streamer.bot", &token)
            .unwrap());
        assert!(!reopened.check("Streamer.bot", "Someone", &token).unwrap());
        assert!(!reopened
            .check("Mix It Up", "SaviorXTanren", &token)
            .unwrap());

        // A new token replaces the old one.
        let again = reopened.issue("Streamer.bot", "Streamer.bot").unwrap();
        assert!(!reopened
            .check("Streamer.bot", "Streamer.bot", &token)
            .unwrap());
        assert!(reopened
            .check("Streamer.bot", "Streamer.bot", &again)
            .unwrap());

        // Removing the entry by hand revokes it.
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# Plugins allowed"));
        let kept: File = toml::from_str(&text).unwrap();
        let kept = File {
            plugin: kept
                .plugin
                .into_iter()
                .filter(|e| e.name != "Streamer.bot")
                .collect(),
            parameter: Vec::new(),
        };
        std::fs::write(&path, toml::to_string(&kept).unwrap()).unwrap();
        assert!(!reopened
            .check("Streamer.bot", "Streamer.bot", &again)
            .unwrap());
        assert!(reopened
            .check("Mix It Up", "SaviorXTanren", &other)
            .unwrap());
    }

    #[test]
    fn comments_written_by_hand_survive_a_new_token() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.toml");
        let store = TokenStore::open(&path).unwrap();
        let first = store.issue("OBS bot", "me").unwrap();
        store.issue("Mix It Up", "SaviorXTanren").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with(HEADER), "{text}");
        let text = text
            .replacen("[[plugin]]", "# My own bot, on the laptop.\n[[plugin]]", 1)
            .replace(HEADER, "# Tokens, edited by hand.\n\n");
        std::fs::write(&path, &text).unwrap();

        let again = store.issue("OBS bot", "me").unwrap();
        store.issue("Streamer.bot", "Streamer.bot").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("# Tokens, edited by hand.\n\n# My own bot, on the laptop.\n[[plugin]]\nname = \"OBS bot\"\n"),
            "{text}"
        );
        assert!(!text.contains(&first) && text.contains(&again), "{text}");
        assert_eq!(text.matches("[[plugin]]").count(), 3, "{text}");
        assert!(store.check("OBS bot", "me", &again).unwrap());
        assert!(!store.check("OBS bot", "me", &first).unwrap());
    }

    #[test]
    fn parameters_are_kept_with_the_tokens_and_go_with_their_plugin() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("api_tokens.toml");
        let store = TokenStore::open(&path).unwrap();
        store.issue("Heart Rate", "Someone").unwrap();
        store.issue("Bonk", "Someone").unwrap();
        let param = |name: &str, plugin: &str| CustomParam {
            name: name.into(),
            plugin: plugin.into(),
            developer: "Someone".into(),
            explanation: "beats per minute".into(),
            min: 40.0,
            max: 200.0,
            default: 60.0,
        };
        let params = [param("HeartRate", "Heart Rate"), param("BonkPower", "Bonk")];
        store.save_parameters(&params).unwrap();
        // A new token keeps them; a restart reads them.
        store.issue("Heart Rate", "Someone").unwrap();
        let reopened = TokenStore::open(&path).unwrap();
        assert_eq!(reopened.parameters().unwrap(), params);
        // Revoking a plugin by hand drops its parameters.
        let text = std::fs::read_to_string(&path).unwrap();
        let mut file: File = toml::from_str(&text).unwrap();
        file.plugin.retain(|e| e.name != "Bonk");
        std::fs::write(&path, toml::to_string(&file).unwrap()).unwrap();
        assert_eq!(reopened.parameters().unwrap(), [params[0].clone()]);
        let allowed = reopened.allowed_plugins().unwrap();
        assert!(allowed("Heart Rate", "Someone"));
        assert!(!allowed("Bonk", "Someone"));
    }

    #[test]
    fn a_damaged_file_is_an_error_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.toml");
        std::fs::write(&path, "not = [toml").unwrap();
        assert!(matches!(
            TokenStore::open(&path),
            Err(TokenError::Parse { .. })
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "not = [toml");
    }
}

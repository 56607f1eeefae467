//! `[api]`: the VTube Studio-compatible WebSocket API for stream automation: where it listens,
//! who may connect, which plugins are approved without asking and where their tokens live.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use serde::Deserialize;

use crate::diagnostic::{key_offset, Located};

/// The port VTube Studio's API listens on by default, which automation tools expect.
pub const DEFAULT_PORT: u16 = 8001;

/// `[api]`. See `docs/api.md`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ApiConfig {
    /// Whether the API server runs.
    pub enabled: bool,
    /// The address and port it listens on; `127.0.0.1:8001` by default, as VTube Studio.
    pub listen: SocketAddr,
    /// Addresses other than loopback that may connect (loopback always may). Listening on an
    /// address other than loopback needs at least one.
    pub allow: Vec<IpAddr>,
    /// Plugin names (`pluginName`) given a token without asking.
    pub approve: Vec<String>,
    /// The file the plugins' tokens are kept in, with the parameters they create
    /// (`api_tokens.toml` beside the configuration).
    pub tokens: PathBuf,
}

impl Default for ApiConfig {
    fn default() -> ApiConfig {
        ApiConfig {
            enabled: true,
            listen: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), DEFAULT_PORT),
            allow: Vec::new(),
            approve: Vec::new(),
            tokens: PathBuf::from("api_tokens.toml"),
        }
    }
}

impl ApiConfig {
    /// Whether a client at `peer` may connect: loopback always, others when listed in `allow`.
    pub fn allows(&self, peer: IpAddr) -> bool {
        let peer = canonical(peer);
        peer.is_loopback() || self.allow.iter().any(|a| canonical(*a) == peer)
    }

    /// Whether `plugin` is approved without asking.
    pub fn approves(&self, plugin: &str) -> bool {
        self.approve.iter().any(|a| a.trim() == plugin.trim())
    }

    /// Checks the values; an error names the key's line and column in `text` (the file at
    /// `path`) and what to use.
    pub fn validate(&self, text: &str, path: &str) -> Result<(), Located> {
        let locate = |key: &str| {
            let section = text.find("[api]");
            section
                .and_then(|s| key_offset(&text[s..], key).map(|k| s + k))
                .or(section)
                .unwrap_or(0)
        };
        let fail = |key: &str, message: String, hint: String| {
            Err(Located::at(path, text, locate(key), message, Some(hint)))
        };
        if self.listen.port() == 0 {
            return fail(
                "listen",
                format!("listen = \"{}\" has no port", self.listen),
                format!(
                    "automation tools expect VTube Studio's port: listen = \"127.0.0.1:{DEFAULT_PORT}\""
                ),
            );
        }
        if !self.listen.ip().is_loopback() && self.allow.is_empty() {
            return fail(
                "listen",
                format!(
                    "listen = \"{}\" opens the API to the network, but no address is allowed",
                    self.listen
                ),
                "list the other PCs that may connect, e.g. allow = [\"192.168.1.20\"], or listen \
                 on loopback: listen = \"127.0.0.1:8001\""
                    .to_string(),
            );
        }
        if let Some(name) = self.approve.iter().find(|n| !valid_name(n)) {
            return fail(
                "approve",
                format!("approve: \"{name}\" is not a plugin name"),
                "plugin names are 3 to 32 characters, as the plugin sends them, e.g. \
                 approve = [\"Streamer.bot\"]"
                    .to_string(),
            );
        }
        if self.tokens.as_os_str().is_empty() {
            return fail(
                "tokens",
                "tokens = \"\" names no file".to_string(),
                "e.g. tokens = \"api_tokens.toml\"".to_string(),
            );
        }
        Ok(())
    }
}

/// Whether `name` is a valid plugin or developer name: 3 to 32 characters, as VTube Studio
/// requires.
pub fn valid_name(name: &str) -> bool {
    (3..=32).contains(&name.trim().chars().count())
}

/// An IPv4-mapped IPv6 address as the IPv4 address it carries.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct File {
        api: ApiConfig,
    }

    fn parse(text: &str) -> Result<ApiConfig, Located> {
        let f: File = toml::from_str(text).expect("toml");
        f.api.validate(text, "f.toml")?;
        Ok(f.api)
    }

    #[test]
    fn defaults_are_vtube_studios_port_on_loopback() {
        let c = parse("[api]\n").unwrap();
        assert_eq!(c, ApiConfig::default());
        assert!(c.enabled);
        assert_eq!(c.listen, "127.0.0.1:8001".parse().unwrap());
        assert_eq!(c.tokens, PathBuf::from("api_tokens.toml"));
    }

    #[test]
    fn values_are_read() {
        let c = parse(
            "[api]\nenabled = false\nlisten = \"0.0.0.0:8002\"\nallow = [\"192.168.1.20\"]\n\
             approve = [\"Streamer.bot\"]\ntokens = \"t.toml\"\n",
        )
        .unwrap();
        assert!(!c.enabled);
        assert_eq!(c.listen.port(), 8002);
        assert!(c.approves("Streamer.bot"));
        assert!(!c.approves("Other plugin"));
        assert!(c.allows("192.168.1.20".parse().unwrap()));
        assert!(c.allows("127.0.0.1".parse().unwrap()));
        assert!(c.allows("::1".parse().unwrap()));
        assert!(c.allows("::ffff:192.168.1.20".parse().unwrap()));
        assert!(!c.allows("192.168.1.21".parse().unwrap()));
    }

    #[test]
    fn the_network_needs_an_allow_list() {
        let text = "[api]\nlisten = \"0.0.0.0:8001\"\n";
        let e = parse(text).unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(e.message.contains("no address is allowed"), "{e}");
        assert!(e.hint.as_deref().unwrap().contains("allow = ["), "{e}");
    }

    #[test]
    fn bad_values_are_located_with_a_suggestion() {
        let e = parse("[api]\nlisten = \"127.0.0.1:0\"\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.hint.as_deref().unwrap().contains("8001"));
        let e = parse("[api]\n\napprove = [\"x\"]\n").unwrap_err();
        assert_eq!(e.line, 3);
        let e = parse("[api]\ntokens = \"\"\n").unwrap_err();
        assert_eq!(e.line, 2);
        let f: Result<File, _> = toml::from_str("[api]\nport = 3\n");
        assert!(f.is_err(), "unknown keys are refused");
    }
}

//! The log filter: `FACEWIRE_LOG` read with a plain-words check, and the subscriber on stderr.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// The filter when `FACEWIRE_LOG` is unset or not understood.
pub const DEFAULT_FILTER: &str = "info";

/// The level names a bare word may be.
const LEVELS: [&str; 6] = ["trace", "debug", "info", "warn", "error", "off"];

/// Why a `FACEWIRE_LOG` value is not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    /// A word names neither a level nor facewire's own modules: read as a target it would
    /// silence every other message.
    #[error(
        "FACEWIRE_LOG: `{0}` is no level (trace, debug, info, warn, error, off); logging is at \
         info. For example FACEWIRE_LOG=debug or FACEWIRE_LOG=info,facewire::ingest=trace"
    )]
    BareWord(String),
    /// The value does not parse as filter directives.
    #[error(
        "FACEWIRE_LOG={0:?} is not understood, so logging is at info; for example \
         FACEWIRE_LOG=debug or FACEWIRE_LOG=info,facewire=trace"
    )]
    Syntax(String),
}

/// Parses a `FACEWIRE_LOG` value. Each comma-separated directive is `LEVEL`, `TARGET=LEVEL` or a
/// target of facewire's own (`facewire`, `facewire::ingest`); any other bare word is refused,
/// since it would turn every other message off.
pub fn parse_filter(spec: &str) -> Result<EnvFilter, FilterError> {
    for directive in spec.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let bare = !directive.contains(['=', '[', '{']);
        let level = LEVELS.iter().any(|l| directive.eq_ignore_ascii_case(l));
        if bare && !level && directive != "facewire" && !directive.starts_with("facewire::") {
            return Err(FilterError::BareWord(directive.to_string()));
        }
    }
    EnvFilter::try_new(spec).map_err(|_| FilterError::Syntax(spec.to_string()))
}

/// Installs the global subscriber: messages on stderr, filtered by `FACEWIRE_LOG` (`default`
/// when it is unset: [`DEFAULT_FILTER`], or `warn` for the commands that print an answer; a value
/// not understood is said on stderr and `default` is used), colours only when stderr is a
/// terminal.
pub fn init(default: &str) {
    let spec = std::env::var("FACEWIRE_LOG").unwrap_or_else(|_| default.to_string());
    let filter = parse_filter(&spec).unwrap_or_else(|error| {
        eprintln!("{error}");
        EnvFilter::new(default)
    });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_targets_and_facewire_modules_are_accepted() {
        for spec in [
            "debug",
            "INFO",
            "info,facewire=trace",
            "warn,facewire::ingest=debug",
            "facewire",
            "facewire::mixer",
            "off",
        ] {
            assert!(parse_filter(spec).is_ok(), "{spec}");
        }
    }

    #[test]
    fn a_bare_word_that_would_silence_everything_is_refused() {
        assert_eq!(
            parse_filter("verbose").unwrap_err(),
            FilterError::BareWord("verbose".into())
        );
        assert_eq!(
            parse_filter("info,loud").unwrap_err(),
            FilterError::BareWord("loud".into())
        );
        assert!(parse_filter("verbose")
            .unwrap_err()
            .to_string()
            .contains("FACEWIRE_LOG=debug"));
        assert!(matches!(
            parse_filter("facewire=notalevel"),
            Err(FilterError::Syntax(_))
        ));
    }
}

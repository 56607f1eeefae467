//! Stage key names for expression hotkeys (`key = "F1"`, `key = "Ctrl+Shift+3"`): parsed,
//! checked against the names facewire knows, and printed in one spelling.

use std::fmt;

use crate::diagnostic::nearest;

/// Every key name an expression may be bound to, in the spelling facewire prints.
pub const KEY_NAMES: [&str; 88] = [
    "F1",
    "F2",
    "F3",
    "F4",
    "F5",
    "F6",
    "F7",
    "F8",
    "F9",
    "F10",
    "F11",
    "F12",
    "F13",
    "F14",
    "F15",
    "F16",
    "F17",
    "F18",
    "F19",
    "F20",
    "F21",
    "F22",
    "F23",
    "F24",
    "0",
    "1",
    "2",
    "3",
    "4",
    "5",
    "6",
    "7",
    "8",
    "9",
    "A",
    "B",
    "C",
    "D",
    "E",
    "F",
    "G",
    "H",
    "I",
    "J",
    "K",
    "L",
    "M",
    "N",
    "O",
    "P",
    "Q",
    "R",
    "S",
    "T",
    "U",
    "V",
    "W",
    "X",
    "Y",
    "Z",
    "Numpad0",
    "Numpad1",
    "Numpad2",
    "Numpad3",
    "Numpad4",
    "Numpad5",
    "Numpad6",
    "Numpad7",
    "Numpad8",
    "Numpad9",
    "Space",
    "Enter",
    "Tab",
    "Backspace",
    "Insert",
    "Delete",
    "Home",
    "End",
    "PageUp",
    "PageDown",
    "Up",
    "Down",
    "Left",
    "Right",
    "Minus",
    "Equal",
    "Comma",
    "Period",
];

/// The modifier names a key may be prefixed with, for messages.
pub const MODIFIER_NAMES: &str = "Ctrl, Shift or Alt";

/// Why a key name does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Nothing was written.
    #[error("an empty key name")]
    Empty,
    /// The key itself is not one facewire knows.
    #[error("unknown key `{name}`")]
    UnknownKey {
        /// The name as written.
        name: String,
        /// The nearest known name, if it is close.
        suggestion: Option<&'static str>,
    },
    /// A `+`-prefix is not Ctrl, Shift or Alt.
    #[error("unknown modifier `{name}`: use {MODIFIER_NAMES}")]
    UnknownModifier {
        /// The modifier as written.
        name: String,
    },
}

impl KeyError {
    /// A suggested fix for messages.
    pub fn hint(&self) -> String {
        match self {
            KeyError::UnknownKey {
                suggestion: Some(best),
                ..
            } => format!("did you mean `{best}`?"),
            KeyError::UnknownModifier { .. } => {
                format!("write modifiers before the key, e.g. \"Ctrl+F1\" ({MODIFIER_NAMES})")
            }
            _ => "use F1 to F24, 0 to 9, A to Z, Numpad0 to Numpad9, Space, arrows (Up, Down, \
                  Left, Right) and the like"
                .to_string(),
        }
    }
}

/// A stage key with its modifiers, e.g. `Ctrl+F1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    /// The key, one of [`KEY_NAMES`].
    pub name: &'static str,
    /// Whether Ctrl (Control) is held.
    pub ctrl: bool,
    /// Whether Shift is held.
    pub shift: bool,
    /// Whether Alt (Option) is held.
    pub alt: bool,
}

impl Key {
    /// Parses `F1`, `ctrl+shift+a`, `Digit3`, `KeyQ`: any letter case, modifiers before the
    /// key joined by `+`. winit's `Digit*` and `Key*` spellings are accepted as aliases.
    pub fn parse(text: &str) -> Result<Key, KeyError> {
        let mut parts: Vec<&str> = text.split('+').map(str::trim).collect();
        let key = parts.pop().unwrap_or_default();
        if key.is_empty() {
            return Err(KeyError::Empty);
        }
        let mut out = Key {
            name: lookup(key).ok_or_else(|| KeyError::UnknownKey {
                name: key.to_string(),
                suggestion: nearest(key, KEY_NAMES),
            })?,
            ctrl: false,
            shift: false,
            alt: false,
        };
        for modifier in parts {
            match modifier.to_ascii_lowercase().as_str() {
                "ctrl" | "control" => out.ctrl = true,
                "shift" => out.shift = true,
                "alt" | "option" => out.alt = true,
                _ => {
                    return Err(KeyError::UnknownModifier {
                        name: modifier.to_string(),
                    })
                }
            }
        }
        Ok(out)
    }
}

/// The known name `key` spells, in any letter case or alias.
fn lookup(key: &str) -> Option<&'static str> {
    let found = |k: &str| {
        KEY_NAMES
            .iter()
            .find(|n| n.eq_ignore_ascii_case(k))
            .copied()
    };
    if let Some(name) = found(key) {
        return Some(name);
    }
    let lower = key.to_ascii_lowercase();
    let alias = match lower.as_str() {
        "return" => "Enter",
        "del" => "Delete",
        "ins" => "Insert",
        "pgup" => "PageUp",
        "pgdn" | "pgdown" => "PageDown",
        "arrowup" => "Up",
        "arrowdown" => "Down",
        "arrowleft" => "Left",
        "arrowright" => "Right",
        "-" => "Minus",
        "=" => "Equal",
        "," => "Comma",
        "." => "Period",
        _ => {
            let stripped = lower
                .strip_prefix("digit")
                .or_else(|| lower.strip_prefix("key").filter(|s| s.len() == 1))?;
            return found(stripped).filter(|n| n.len() == 1);
        }
    };
    Some(alias)
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (held, name) in [
            (self.ctrl, "Ctrl+"),
            (self.shift, "Shift+"),
            (self.alt, "Alt+"),
        ] {
            if held {
                f.write_str(name)?;
            }
        }
        f.write_str(self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_in_any_case_with_modifiers() {
        let k = Key::parse("f1").unwrap();
        assert_eq!(k.to_string(), "F1");
        let k = Key::parse("shift + ctrl+Numpad3").unwrap();
        assert!(k.ctrl && k.shift && !k.alt);
        assert_eq!(k.to_string(), "Ctrl+Shift+Numpad3");
        assert_eq!(Key::parse("Digit7").unwrap().name, "7");
        assert_eq!(Key::parse("KeyQ").unwrap().name, "Q");
        assert_eq!(Key::parse("pgup").unwrap().name, "PageUp");
        assert_eq!(Key::parse("alt+1").unwrap().to_string(), "Alt+1");
    }

    #[test]
    fn unknown_keys_suggest_the_nearest() {
        let e = Key::parse("F13x").unwrap_err();
        assert_eq!(e.to_string(), "unknown key `F13x`");
        assert_eq!(e.hint(), "did you mean `F13`?");
        assert_eq!(
            Key::parse("PageUpp").unwrap_err().hint(),
            "did you mean `PageUp`?"
        );
        assert!(matches!(
            Key::parse("Hyper+F1"),
            Err(KeyError::UnknownModifier { .. })
        ));
        assert_eq!(Key::parse(" "), Err(KeyError::Empty));
        assert_eq!(Key::parse("Ctrl+"), Err(KeyError::Empty));
        // A one-letter key does not swallow longer words.
        assert!(Key::parse("Keyboard").is_err());
        assert_eq!(KEY_NAMES.len(), 24 + 10 + 26 + 10 + 18);
    }
}

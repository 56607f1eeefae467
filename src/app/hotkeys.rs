//! Global hotkeys: the expressions' keys registered with the desktop, so they work while the
//! game or OBS has the keyboard focus, not only on the stage (`[window] global_hotkeys`).
//!
//! The desktop delivers a registered key to facewire alone: on X11 (a passive grab on the root
//! window), on Windows (`RegisterHotKey`) and on macOS. Where registering cannot work (Wayland,
//! no display) or a key is taken by another program, facewire says so once and the stage keys
//! go on working. Presses and releases reach the stage's event loop as
//! [`AppEvent::GlobalKey`]; the stage hands them to the session like its own keys.

use global_hotkey::hotkey::{Code, HotKey, Modifiers};
use global_hotkey::{GlobalHotKeyEvent, GlobalHotKeyManager, HotKeyState};

use super::{AppEvent, Notify};
use crate::expressions::Key;

/// The desktop's hotkey for an expression key: `F1` is `F1`, `A` is `KeyA`, `1` is `Digit1`,
/// `Up` is `ArrowUp`, with Ctrl, Shift and Alt. `None` for a name with no key code.
pub fn hotkey_of(key: &Key) -> Option<HotKey> {
    let name = key.name;
    let code = match name {
        "Space" => Code::Space,
        "Enter" => Code::Enter,
        "Tab" => Code::Tab,
        "Backspace" => Code::Backspace,
        "Insert" => Code::Insert,
        "Delete" => Code::Delete,
        "Home" => Code::Home,
        "End" => Code::End,
        "PageUp" => Code::PageUp,
        "PageDown" => Code::PageDown,
        "Up" => Code::ArrowUp,
        "Down" => Code::ArrowDown,
        "Left" => Code::ArrowLeft,
        "Right" => Code::ArrowRight,
        "Minus" => Code::Minus,
        "Equal" => Code::Equal,
        "Comma" => Code::Comma,
        "Period" => Code::Period,
        _ => {
            let spelled = if name.len() == 1 && name.as_bytes()[0].is_ascii_uppercase() {
                format!("Key{name}")
            } else if name.len() == 1 && name.as_bytes()[0].is_ascii_digit() {
                format!("Digit{name}")
            } else {
                // F1..F24 and Numpad0..Numpad9 are spelled alike.
                name.to_string()
            };
            spelled.parse().ok()?
        }
    };
    let mut mods = Modifiers::empty();
    mods.set(Modifiers::CONTROL, key.ctrl);
    mods.set(Modifiers::SHIFT, key.shift);
    mods.set(Modifiers::ALT, key.alt);
    Some(HotKey::new(Some(mods).filter(|m| !m.is_empty()), code))
}

/// Why the desktop cannot take global hotkeys here, if it cannot.
fn unavailable() -> Option<&'static str> {
    if cfg!(any(target_os = "windows", target_os = "macos")) {
        return None;
    }
    let set = |var: &str| std::env::var_os(var).is_some_and(|v| !v.is_empty());
    if std::env::var("XDG_SESSION_TYPE").is_ok_and(|t| t.eq_ignore_ascii_case("wayland"))
        || (set("WAYLAND_DISPLAY") && !set("DISPLAY"))
    {
        return Some("a Wayland session lets no program take keys for the whole desktop");
    }
    if !set("DISPLAY") {
        return Some("there is no X11 display (DISPLAY is not set)");
    }
    None
}

/// The expression keys registered with the desktop. Dropping it lets them go.
pub struct GlobalKeys {
    manager: GlobalHotKeyManager,
    /// The keys registered, with the desktop's hotkey for each.
    registered: Vec<(Key, HotKey)>,
    /// The keys last asked for (registered or not), so an unchanged list costs nothing.
    wanted: Vec<Key>,
}

impl GlobalKeys {
    /// Starts global hotkeys, their events going to the stage through `notify`; `None` (said
    /// once, with what still works) where the desktop cannot take them.
    pub fn start(notify: Notify) -> Option<GlobalKeys> {
        if let Some(why) = unavailable() {
            tracing::info!(
                reason = why,
                "expression keys work on the stage only: {why} (VMC keys and the API work too)"
            );
            return None;
        }
        let manager = match GlobalHotKeyManager::new() {
            Ok(m) => m,
            Err(error) => {
                tracing::warn!(%error, "global hotkeys unavailable; expression keys work on the stage only");
                return None;
            }
        };
        GlobalHotKeyEvent::set_event_handler(Some(move |event: GlobalHotKeyEvent| {
            notify(AppEvent::GlobalKey {
                id: event.id(),
                pressed: event.state() == HotKeyState::Pressed,
            });
        }));
        Some(GlobalKeys {
            manager,
            registered: Vec::new(),
            wanted: Vec::new(),
        })
    }

    /// Registers exactly `keys` (the expressions' keys now): those no longer wanted are let go,
    /// new ones registered. A key the desktop refuses (another program has it) is said once and
    /// stays a stage key.
    pub fn set_keys(&mut self, mut keys: Vec<Key>) {
        keys.sort_by_key(|k| k.to_string());
        keys.dedup();
        if keys == self.wanted {
            return;
        }
        let (keep, drop): (Vec<_>, Vec<_>) = std::mem::take(&mut self.registered)
            .into_iter()
            .partition(|(k, _)| keys.contains(k));
        self.registered = keep;
        for (key, hotkey) in drop {
            if let Err(error) = self.manager.unregister(hotkey) {
                tracing::debug!(%key, %error, "global hotkey not let go");
            }
        }
        for key in &keys {
            if self.registered.iter().any(|(k, _)| k == key) {
                continue;
            }
            let Some(hotkey) = hotkey_of(key) else {
                continue;
            };
            match self.manager.register(hotkey) {
                Ok(()) => self.registered.push((*key, hotkey)),
                Err(error) => tracing::warn!(
                    %key,
                    %error,
                    "another program holds this key; it triggers its expression on the stage only"
                ),
            }
        }
        if !self.registered.is_empty() {
            let names: Vec<String> = self.registered.iter().map(|(k, _)| k.to_string()).collect();
            tracing::info!(keys = ?names, "expression keys registered for the whole desktop");
        }
        self.wanted = keys;
    }

    /// The expression key registered under the desktop's hotkey `id`.
    pub fn key(&self, id: u32) -> Option<Key> {
        self.registered
            .iter()
            .find(|(_, h)| h.id() == id)
            .map(|(k, _)| *k)
    }
}

impl Drop for GlobalKeys {
    fn drop(&mut self) {
        GlobalHotKeyEvent::set_event_handler(None::<fn(GlobalHotKeyEvent)>);
        let hotkeys: Vec<HotKey> = self.registered.iter().map(|(_, h)| *h).collect();
        if let Err(error) = self.manager.unregister_all(&hotkeys) {
            tracing::debug!(%error, "global hotkeys not let go");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_name_has_a_desktop_hotkey() {
        for name in crate::expressions::KEY_NAMES {
            let key = Key::parse(name).unwrap();
            assert!(hotkey_of(&key).is_some(), "{name}");
        }
        let f1 = hotkey_of(&Key::parse("F1").unwrap()).unwrap();
        assert_eq!(f1, HotKey::new(None, Code::F1));
        let a = hotkey_of(&Key::parse("ctrl+shift+a").unwrap()).unwrap();
        assert_eq!(
            a,
            HotKey::new(Some(Modifiers::CONTROL | Modifiers::SHIFT), Code::KeyA)
        );
        let three = hotkey_of(&Key::parse("Alt+3").unwrap()).unwrap();
        assert_eq!(three, HotKey::new(Some(Modifiers::ALT), Code::Digit3));
        let pad = hotkey_of(&Key::parse("Numpad7").unwrap()).unwrap();
        assert_eq!(pad, HotKey::new(None, Code::Numpad7));
        // Different keys, different ids (the events name keys by id).
        assert_ne!(f1.id(), a.id());
    }
}

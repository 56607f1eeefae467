//! The connect card: which address and port to type into the phone app, and what to check when
//! no data arrives. Free of GL and windowing: the terminal prints it, `hud` draws it on stage.
//!
//! - [`lan`]: this PC's addresses, ordered for a phone ([`lan_addresses`], the pure [`order`]).
//! - [`card`]: [`ConnectCard`], built from the bound listeners, the addresses and the configured
//!   phone: one row per listening app (what to enter in it, the port) and a terminal block.
//! - [`hints`]: what to check when nothing arrives ([`hints()`]): same network, firewall
//!   commands for this OS, packets on the wrong port, senders outside `ingest.allow`.
//! - [`watch`]: [`ConnectWatch`], fed the counters periodically, says when the card changes:
//!   shown at start, hints when they change, gone at the first frame.

pub mod card;
pub mod hints;
pub mod lan;
pub mod watch;

pub use card::{AppRow, ConnectCard, PC_IP_PLACEHOLDER, TITLE};
pub use hints::{hints, Hint, HintInput, HintKind, Os, NO_DATA_HINT};
pub use lan::{is_virtual_interface, lan_addresses, order, AddressKind, Interface, LanAddress};
pub use watch::{ConnectUpdate, ConnectWatch};

/// Splits `text` into lines of at most `width` characters, breaking between words; a word
/// longer than a line is split across lines, so nothing is lost.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut line_len = 0;
    for word in text.split_whitespace() {
        let mut chars: Vec<char> = word.chars().collect();
        let fits = if line_len == 0 {
            chars.len() <= width
        } else {
            line_len + 1 + chars.len() <= width
        };
        if !fits && line_len > 0 {
            lines.push(std::mem::take(&mut line));
            line_len = 0;
        }
        while chars.len() > width {
            let rest = chars.split_off(width);
            lines.push(chars.into_iter().collect());
            chars = rest;
        }
        if line_len > 0 {
            line.push(' ');
            line_len += 1;
        }
        line_len += chars.len();
        line.extend(chars);
    }
    if line_len > 0 {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wrapping_breaks_between_words_and_splits_long_ones() {
        assert_eq!(
            wrap("one two three four five six", 9),
            ["one two", "three", "four five", "six"]
        );
        assert_eq!(wrap("abcdefghij xy", 4), ["abcd", "efgh", "ij", "xy"]);
        assert_eq!(wrap("ab abcdefgh", 4), ["ab", "abcd", "efgh"]);
        assert_eq!(wrap("  ", 10), Vec::<String>::new());
        for line in wrap("localport=39539,49983,49993,11111,11125 and more", 12) {
            assert!(line.chars().count() <= 12, "{line}");
        }
    }
}

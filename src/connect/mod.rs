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

pub use card::{
    AppRow, ConnectCard, WebcamCard, NO_PHONE, NO_PHONE_SHORT, PC_IP_PLACEHOLDER, TITLE,
    WEBCAM_TITLE,
};
pub use hints::{hints, Hint, HintInput, HintKind, Os, NO_DATA_HINT};
pub use lan::{is_virtual_interface, lan_addresses, order, AddressKind, Interface, LanAddress};
pub use watch::{ConnectUpdate, ConnectWatch};

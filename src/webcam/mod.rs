//! Face tracking from a camera image, in Rust: no phone, no tracker to install.
//!
//! A frame travels: a camera or a video ([`video`]) gives an RGB [`Frame`]; the tracker finds the
//! face (the detector, only while no face is followed), reads its 66 landmarks, fits the head's
//! pose against a mean 3D face ([`pose`]) and measures the face's features, which become ARKit
//! channels in a [`crate::arkit::FaceFrame`] like a phone's.
//!
//! The networks are OpenSeeFace's (BSD 2-Clause, models/openseeface/), run by tract.

pub mod camera;
pub mod eyes;
pub mod features;
pub mod frame;
pub mod model;
#[cfg(any(target_os = "windows", target_os = "macos"))]
mod native;
pub mod play;
pub mod pose;
pub mod raw;
pub mod track;
#[cfg(target_os = "linux")]
mod v4l;
pub mod video;

pub use frame::Frame;

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

/// The sender address webcam frames carry: this PC, port 0 (no network is involved).
pub const SOURCE: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0));

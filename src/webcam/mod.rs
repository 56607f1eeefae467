//! Face tracking from a camera image, in Rust: no phone, no tracker to install.
//!
//! A frame travels: a camera or a video ([`video`]) gives an RGB [`Frame`]; the tracker finds the
//! face (the detector, only while no face is followed), reads its 478 landmarks in a crop turned
//! level with the eyes ([`roi`]), smooths them ([`smooth`]), fits the head's pose against a
//! canonical face ([`pose`]) and gives 146 of them to a blendshape model, whose 51 scores are
//! ARKit channels in a [`crate::arkit::FaceFrame`] like a phone's.
//!
//! The networks are MediaPipe's Face Landmarker (Apache-2.0, models/mediapipe/), run by tract.

pub mod camera;
mod canonical_face;
pub mod detect;
pub mod frame;
pub mod model;
#[cfg(any(target_os = "windows", target_os = "macos"))]
mod native;
pub mod play;
pub mod pose;
pub mod raw;
pub mod roi;
mod section;
pub mod smooth;
pub mod track;
#[cfg(target_os = "linux")]
mod v4l;
pub mod video;

pub use frame::Frame;
pub use section::WebcamConfig;

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

/// The sender address webcam frames carry: this PC, port 0 (no network is involved).
pub const SOURCE: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0));

//! Capturing the performer's neutral from the newest raw frame, and saving it into the profile
//! in use.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::arkit::FaceFrame;
use crate::calibrate::{Conditioner, Profile};

/// The newest frame must be at most this old to be captured as a neutral.
pub const NEUTRAL_MAX_AGE: Duration = Duration::from_secs(2);

/// Takes `raw` (the newest frame as received) as the performer's neutral in `core`; with a
/// profile, writes the new ranges into it and saves it in `dir`. Returns what to tell the
/// performer, or why nothing was captured.
pub fn capture_neutral(
    core: &mut Conditioner,
    raw: Option<&FaceFrame>,
    profile: Option<&mut Profile>,
    dir: &Path,
    now: Instant,
) -> Result<String, String> {
    let raw = raw.ok_or("no face data has arrived yet: start the phone app, then capture")?;
    let age = now.saturating_duration_since(raw.received);
    if age > NEUTRAL_MAX_AGE {
        return Err(format!(
            "the newest face data is {:.0} s old: is the phone still sending?",
            age.as_secs_f64()
        ));
    }
    let capture = core.capture_neutral(raw);
    let mut text = format!(
        "neutral captured: {} channels re-zeroed",
        capture.rezeroed.len()
    );
    if !capture.kept.is_empty() {
        let names: Vec<&str> = capture.kept.iter().take(4).map(|c| c.name()).collect();
        text.push_str(&format!(
            "; {} read near full and kept their range ({}{}): relax and capture again",
            capture.kept.len(),
            names.join(", "),
            if capture.kept.len() > 4 { ", ..." } else { "" }
        ));
    }
    if raw.head.is_some() {
        text.push_str("; head re-centred for this session");
    }
    match profile {
        Some(profile) => {
            for c in capture.rezeroed.iter() {
                let range = capture.ranges[c.index()];
                let mut p = profile.channel(c);
                p.neutral = range.min;
                p.min = range.min;
                p.max = range.max;
                profile.set(c, p);
            }
            match profile.save(dir) {
                Ok(path) => text.push_str(&format!("; saved to {}", path.display())),
                Err(e) => return Err(format!("{text}, but the profile was not saved: {e}")),
            }
        }
        None => text.push_str(" (no profile chosen: kept until facewire stops)"),
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arkit::{Channel, Protocol};
    use crate::calibrate::{at, SmoothingConfig, TrackingConfig};

    fn resting(t: Instant) -> FaceFrame {
        let mut f = FaceFrame::empty(Protocol::Vmc, "10.0.0.2:5000".parse().unwrap(), t);
        f.set(Channel::JawOpen, 0.12);
        f.set(Channel::EyeBlinkLeft, 0.05);
        f
    }

    #[test]
    fn nothing_to_capture_without_fresh_data() {
        let t0 = Instant::now();
        let mut core = Conditioner::new(SmoothingConfig::off(), TrackingConfig::default(), t0);
        let dir = tempfile::tempdir().unwrap();
        let e = capture_neutral(&mut core, None, None, dir.path(), t0).unwrap_err();
        assert!(e.contains("no face data"), "{e}");
        let old = resting(t0);
        let e = capture_neutral(&mut core, Some(&old), None, dir.path(), at(t0, 5.0)).unwrap_err();
        assert!(e.contains("5 s old"), "{e}");
    }

    #[test]
    fn a_capture_is_saved_into_the_profile() {
        let t0 = Instant::now();
        let mut core = Conditioner::new(SmoothingConfig::off(), TrackingConfig::default(), t0);
        let dir = tempfile::tempdir().unwrap();
        let mut profile = Profile::new("alice");
        let raw = resting(t0);
        let text =
            capture_neutral(&mut core, Some(&raw), Some(&mut profile), dir.path(), t0).unwrap();
        assert!(text.contains("re-zeroed"), "{text}");
        assert!(text.contains("saved to"), "{text}");
        let saved = Profile::load_named(dir.path(), "alice").unwrap();
        assert!((saved.channel(Channel::JawOpen).neutral - 0.12).abs() < 1e-6);
        let text = capture_neutral(&mut core, Some(&raw), None, dir.path(), t0).unwrap();
        assert!(text.contains("no profile chosen"), "{text}");
    }
}

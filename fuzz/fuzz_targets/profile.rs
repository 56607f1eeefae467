//! A performer profile as it is read: what parses turns every raw value (and NaN) into a
//! weight in 0..=1, and is written back and read again unchanged.

#![no_main]

use facewire::calibrate::profile::Profile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(profile) = Profile::parse(text, "fuzz.toml") else {
        return;
    };
    for c in profile.channels.iter().flatten() {
        let range = c.range();
        for raw in [-1.0, 0.0, 0.3, 1.0, 2.0, f32::NAN, f32::INFINITY] {
            let w = range.apply(raw);
            assert!((0.0..=1.0).contains(&w), "{c:?} turned {raw} into {w}");
        }
    }
    let _ = profile.neutral_pose();
    let written = profile.to_toml();
    let again = Profile::parse(&written, "written.toml")
        .unwrap_or_else(|e| panic!("the profile as written does not read: {e}\n{written}"));
    assert_eq!(again, profile, "written as:\n{written}");
});

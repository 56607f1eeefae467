//! A look preset as it is hot-reloaded: parsed and checked against the default head's sliders,
//! and what reads applied to its pose with finite values, and written back and read again
//! unchanged.

#![no_main]

use facewire::look::Look;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let avatar = facewire_fuzz::default_head();
    let compiled = facewire_fuzz::default_mapping();
    let ranges = compiled.sliders.ranges();
    let Ok(look) = Look::parse(text, "look.toml", &ranges) else {
        return;
    };
    let mut pose = avatar.rest_pose();
    compiled
        .sliders
        .apply(&look.values(&compiled.sliders), &mut pose);
    facewire_fuzz::assert_pose_finite(&pose, "the look");
    let written = look.to_toml();
    let again = Look::parse(&written, "written.toml", &ranges)
        .unwrap_or_else(|e| panic!("the look as written does not read: {e}\n{written}"));
    assert_eq!(again, look, "written as:\n{written}");
});

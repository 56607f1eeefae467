//! A mapping file as it is hot-reloaded: checked (`facewire check`) and parsed, and what parses
//! compiled against the default head and applied to frames with every channel at 0, 0.5 and 1,
//! its sliders at their largest values and its wrinkle maps: every value finite, every weight
//! within the largest magnitude a mapping may write.

#![no_main]

use facewire::look::Look;
use facewire::mapping::{self, CompiledMapping, MappingFile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let avatar = facewire_fuzz::default_head();
    let report = mapping::check_text(text, "m.toml", avatar);
    let Ok(file) = MappingFile::parse(text, "m.toml") else {
        assert!(report.has_errors(), "parse failed, check found nothing");
        return;
    };
    let Ok(compiled) = CompiledMapping::compile(&file, avatar) else {
        return;
    };
    for value in [0.0, 0.5, 1.0] {
        let mut pose = avatar.rest_pose();
        compiled.apply(&facewire_fuzz::frame(value), &mut pose);
        let mut look = Look::default();
        for range in compiled.sliders.ranges() {
            look.set(&range.name, range.max);
        }
        compiled
            .sliders
            .apply(&look.values(&compiled.sliders), &mut pose);
        mapping::wrinkles::apply(&compiled.wrinkles, &mut pose);
        facewire_fuzz::assert_pose_finite(&pose, &format!("all channels at {value}"));
    }
});

//! `facewire.toml` as it is hot-reloaded: parsed and validated, and what reads gives layers and
//! expressions that resolve (or are refused) against the default head, with finite values.

#![no_main]

use facewire::config::Config;
use facewire::mapping::LayerTargets;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(config) = Config::parse(text, "facewire.toml") else {
        return;
    };
    let camera = config.camera.clamped();
    assert!(
        [
            camera.zoom,
            camera.offset_y,
            camera.orbit_yaw,
            camera.orbit_pitch,
            camera.fov
        ]
        .iter()
        .all(|v| v.is_finite()),
        "{camera:?}"
    );
    for expression in config.expressions.all() {
        assert!(
            expression
                .values
                .iter()
                .all(|&(_, v)| (0.0..=1.0).contains(&v)),
            "{expression:?}"
        );
    }
    let stack = facewire::stack::StackConfig::of(&config);
    let _ = LayerTargets::compile(&stack.section(), facewire_fuzz::default_head());
});

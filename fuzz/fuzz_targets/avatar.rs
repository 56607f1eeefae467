//! Any bytes as an avatar file (GLB, glTF JSON, VRM 0.x and 1.0): the load either fails with an
//! error or gives an avatar whose every index is in range and whose values stay finite through
//! everything the stage does with it (see `facewire_fuzz::exercise`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(avatar) = facewire::avatar::load_slice_with(data, "fuzz", &facewire_fuzz::LIMITS) {
        facewire_fuzz::exercise(avatar);
    }
});

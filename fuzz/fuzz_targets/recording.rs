//! A recording as it is read: a `.fwrec` stream or a Live Link Face CSV export is a recording
//! of at most the items a replay takes, or an error; its offsets never go back, and every frame
//! it gives is finite where it carries a value.

#![no_main]

use facewire::record::{llf_csv, Recording};
use libfuzzer_sys::fuzz_target;

/// A small cap, so the fuzzer reaches it.
const MAX: usize = 64;

fn check(recording: &Recording) {
    assert!(recording.len() <= MAX);
    let offsets = recording.offsets();
    assert!(offsets.windows(2).all(|w| w[0] <= w[1]), "{offsets:?}");
    for frame in facewire::record::frames(recording) {
        for c in frame.present.iter() {
            let v = frame.weights[c.index()];
            assert!(v.is_finite(), "{c:?} = {v}");
        }
        for q in [frame.head, frame.left_eye, frame.right_eye].into_iter().flatten() {
            assert!(q.is_finite(), "{q:?}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(recording) = Recording::from_fwrec_reader(data, MAX) {
        check(&recording);
    }
    if let Ok(rows) = llf_csv::parse_reader(data, MAX) {
        check(&Recording::from_llf_rows(rows));
    }
});

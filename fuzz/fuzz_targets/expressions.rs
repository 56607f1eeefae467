//! The expressions file as it is hot-reloaded: parsed and validated, and what reads compiled
//! into expressions and their mixer layers with values in 0..=1 and finite fades, whose avatar
//! targets resolve (or are refused) against the default head.

#![no_main]

use facewire::config::{ExpressionsSection, LayersSection};
use facewire::expressions::ExpressionSet;
use facewire::mapping::LayerTargets;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(section) = ExpressionsSection::parse_file(text, "expressions.toml") else {
        return;
    };
    for spec in section.specs.values() {
        let values = spec.values.values().chain(spec.targets.values());
        assert!(values.map(|v| *v.get_ref()).all(f32::is_finite), "{spec:?}");
        let fades = [&spec.fade_in, &spec.fade_out];
        assert!(
            fades
                .iter()
                .flat_map(|f| f.as_ref())
                .all(|f| f.get_ref().is_finite()),
            "{spec:?}"
        );
    }
    let expressions = section.all();
    for e in &expressions {
        assert!(
            e.values.iter().all(|&(_, v)| (0.0..=1.0).contains(&v)),
            "{e:?}"
        );
        let _ = e.layer();
    }
    let set = ExpressionSet::new(expressions);
    let layers = set.stacked_on(&LayersSection::default());
    let _ = LayerTargets::compile(&layers, facewire_fuzz::default_head());
    let _ = set.hotkeys();
});

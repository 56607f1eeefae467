//! What lip sync shows for each class of phone in labelled speech, at the recorded level and
//! 20 dB quieter: the benchmark of BENCHMARKS.md's lip-sync section.
//!
//! ```sh
//! python3 benches/speech.py /tmp/speech
//! cargo run --release --example lipsync_phones -- /tmp/speech [--fixed]
//! ```
//!
//! Prints, per level, each class's hops, mean jaw opening and the visemes read, then the
//! closure ratio (open vowels' mean opening over p, b and m's) and the share of silent hops
//! that read `sil`.

use std::path::PathBuf;

use facewire::lipsync::labels::{self, Labelled, PhoneClass};
use facewire::lipsync::profile::Profile;
use facewire::lipsync::{Level, LipSettings, Viseme};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `--fixed`: the gate fixed at floor_db and ceiling_db, as before the automatic level.
    let fixed = args.iter().any(|a| a == "--fixed");
    let settings = LipSettings {
        level: if fixed { Level::Fixed } else { Level::Auto },
        ..LipSettings::default()
    };
    let Some(dir) = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map(PathBuf::from)
    else {
        eprintln!("usage: lipsync_phones DIR [--fixed] (DIR made by benches/speech.py)");
        std::process::exit(2);
    };
    let mut takes: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| {
            eprintln!("{}: {e}", dir.display());
            std::process::exit(2)
        })
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "wav"))
        .collect();
    takes.sort();
    let takes: Vec<Labelled> = takes
        .iter()
        .map(|p| {
            Labelled::load(p).unwrap_or_else(|e| {
                eprintln!("{e}");
                std::process::exit(1)
            })
        })
        .collect();
    println!("{} takes from {}", takes.len(), dir.display());
    for (level, gain) in [("recorded level", 1.0f32), ("20 dB quieter", 0.1)] {
        let readings = labels::stream(&takes, gain, &Profile::default(), settings);
        println!("\n{level}:");
        println!(
            "{:<17} {:>6} {:>6}  {}",
            "class",
            "hops",
            "open",
            Viseme::ALL.map(|v| format!("{:>5}", v.name())).join(" ")
        );
        for class in PhoneClass::ALL {
            let r = &readings[class.index()];
            println!(
                "{:<17} {:>6} {:>6.3}  {}",
                class.name(),
                r.hops,
                r.mean_open(),
                Viseme::ALL
                    .map(|v| format!("{:>4.0}%", 100.0 * r.share(v)))
                    .join(" ")
            );
        }
        let open = readings[PhoneClass::OpenVowel.index()].mean_open();
        let closed = readings[PhoneClass::Bilabial.index()].mean_open();
        println!(
            "closure ratio (open vowels / p b m): {:.2}; silence read as sil: {:.1}%",
            open / closed.max(1e-6),
            100.0 * readings[PhoneClass::Silence.index()].share(Viseme::Sil)
        );
    }
}

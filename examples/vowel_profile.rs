//! Prints the mean cepstrum of each vowel in a set of recordings, as the Rust array that
//! `lipsync::profile`'s built-in profile holds.
//!
//! ```sh
//! # each argument: VOWEL=FILE.wav, several files per vowel allowed
//! for v in a i u e o; do for p in 30 50 70; do
//!     espeak-ng -v ja -p $p -s 120 -w /tmp/$v$p.wav "$v$v$v$v$v"
//! done; done   # (with the Japanese kana あ い う え お for a i u e o)
//! cargo run --example vowel_profile -- aa=/tmp/a30.wav aa=/tmp/a50.wav ... oh=/tmp/o70.wav
//! ```

use std::process::ExitCode;

use facewire::lipsync::profile::{Profile, VOWELS};
use facewire::lipsync::{wav, LipSettings, Viseme};

fn main() -> ExitCode {
    let mut recordings: Vec<(Viseme, wav::Mono)> = Vec::new();
    for arg in std::env::args().skip(1) {
        let Some((name, file)) = arg.split_once('=') else {
            eprintln!("`{arg}`: write VOWEL=FILE.wav, e.g. aa=a.wav");
            return ExitCode::from(2);
        };
        let Some(viseme) = Viseme::parse(name).filter(|v| VOWELS.contains(v)) else {
            eprintln!("`{name}` is not one of aa, ih, ou, ee, oh");
            return ExitCode::from(2);
        };
        match wav::read_mono(std::path::Path::new(file)) {
            Ok(mono) => recordings.push((viseme, mono)),
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        }
    }
    let floor = LipSettings::default().floor_db;
    // Learn per file and average the means, so every file counts alike.
    let mut sums = [[0.0f32; 12]; 5];
    let mut counts = [0usize; 5];
    for (viseme, mono) in &recordings {
        let v = VOWELS.iter().position(|x| x == viseme).unwrap_or(0);
        let p = Profile::learn(&[(*viseme, &mono.samples)], mono.rate, floor);
        for (s, m) in sums[v].iter_mut().zip(p.means[v]) {
            *s += m;
        }
        counts[v] += 1;
    }
    println!("const BUILTIN: [[f32; COEFFICIENTS]; 5] = [");
    for v in 0..5 {
        let n = counts[v].max(1) as f32;
        let row: Vec<String> = sums[v].iter().map(|s| format!("{:.3}", s / n)).collect();
        println!("    // {}\n    [{}],", VOWELS[v].name(), row.join(", "));
    }
    println!("];");
    ExitCode::SUCCESS
}

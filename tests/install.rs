//! An installed facewire, started outside a checkout of the repository: the first start fills
//! the platform's config folder with the shipped files and uses them, later starts read them
//! from there, and what it saves lands beside its configuration.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{facewire_bin, repo};

/// `facewire ARGS...` run in `work` with the home folder (and, on Linux, `XDG_CONFIG_HOME`)
/// in `home`.
fn installed(home: &Path, work: &Path, args: &[&str]) -> Output {
    Command::new(facewire_bin())
        .current_dir(work)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("xdg"))
        .env("FACEWIRE_LOG", "info")
        .args(args)
        .output()
        .unwrap()
}

/// Where facewire's platform config folder is for the home folder `home`.
fn platform_folder(home: &Path) -> PathBuf {
    if cfg!(target_os = "macos") {
        home.join("Library/Application Support/facewire")
    } else {
        home.join("xdg/facewire")
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A short Live Link Face CSV export: a relaxed face for two seconds, then the jaw opening and
/// the eyes blinking, at 60 frames a second.
fn take() -> String {
    let mut csv = String::from("Timecode,BlendShapeCount,JawOpen,EyeBlinkLeft,EyeBlinkRight\n");
    for i in 0..300u32 {
        let t = i as f32 / 60.0;
        let (jaw, blink) = if t < 2.0 {
            (0.05, 0.1)
        } else {
            let wave = ((t - 2.0) * 3.0).sin().abs();
            (0.05 + 0.6 * wave, 0.1 + 0.8 * wave)
        };
        csv.push_str(&format!(
            "00:00:{:02}:{:02}.000,61,{jaw:.4},{blink:.4},{blink:.4}\n",
            i / 60,
            i % 60
        ));
    }
    csv
}

#[cfg(unix)]
#[test]
fn a_first_start_outside_the_repository_writes_and_uses_the_platform_config_folder() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let folder = platform_folder(home.path());
    let file = folder.join("facewire.toml");

    // First start: the shipped files are written, said once on stderr, and used.
    let first = installed(home.path(), work.path(), &["config"]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let (stdout, stderr) = (text(&first.stdout), text(&first.stderr));
    let said = format!(
        "first start: wrote the default configuration to {}",
        file.display()
    );
    assert_eq!(stderr.matches(&said).count(), 1, "{stderr}");
    assert!(
        stdout.contains(&format!("configuration: {} (", file.display()))
            && stdout.contains("written there on this first start"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "profiles:      {}",
            folder.join("profiles").display()
        )),
        "{stdout}"
    );
    for shipped in [
        "facewire.toml",
        "expressions.toml",
        "mappings/default_head.toml",
        "looks/round.toml",
        "profiles/README.md",
    ] {
        let written = std::fs::read_to_string(folder.join(shipped)).unwrap();
        let original = std::fs::read_to_string(repo().join("config").join(shipped)).unwrap();
        assert_eq!(written, original, "{shipped}");
    }
    assert!(folder.join("models").is_dir());
    assert!(
        !work.path().join("config").exists(),
        "nothing is written into the working directory"
    );

    // A later start reads the same file, without a word about it.
    let again = installed(home.path(), work.path(), &["config", "--path"]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(text(&again.stdout).trim(), file.display().to_string());
    assert!(
        !text(&again.stderr).contains("first start"),
        "{}",
        text(&again.stderr)
    );

    // The expressions file it names is read beside it, not from the working directory.
    std::fs::remove_file(folder.join("expressions.toml")).unwrap();
    let missing = installed(home.path(), work.path(), &["config"]);
    assert!(!missing.status.success());
    assert!(
        text(&missing.stderr).contains(&format!(
            "cannot read the expressions file {}",
            folder.join("expressions.toml").display()
        )),
        "{}",
        text(&missing.stderr)
    );
    std::fs::copy(
        repo().join("config/expressions.toml"),
        folder.join("expressions.toml"),
    )
    .unwrap();

    // A profile lands in the profiles folder beside the configuration.
    let csv = work.path().join("take.csv");
    std::fs::write(&csv, take()).unwrap();
    let calibrated = installed(
        home.path(),
        work.path(),
        &[
            "calibrate",
            "--performer",
            "newcomer",
            "--yes",
            "--from",
            "take.csv",
        ],
    );
    assert!(calibrated.status.success(), "{}", text(&calibrated.stderr));
    let profile = folder.join("profiles/newcomer.toml");
    assert!(
        text(&calibrated.stdout).contains(&format!("saved {}", profile.display())),
        "{}",
        text(&calibrated.stdout)
    );
    let saved = std::fs::read_to_string(&profile).unwrap();
    assert!(saved.contains("[channels.jawOpen]"), "{saved}");
}

/// Run in a checkout, `config` says that the checkout's config/ shadows the user's own file, and
/// a performer missing from the checkout's profiles but present in the user's folder is named
/// with how to use it.
#[test]
fn a_checkout_says_what_it_shadows_and_where_else_a_profile_is() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = installed(&home, &repo(), &["config"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    let user = platform_folder(&home).join("facewire.toml");
    assert!(
        said.contains("run in a checkout") && said.contains(&user.display().to_string()),
        "{said}"
    );
    assert!(said.contains("does not exist yet"), "{said}");
    // The user's folder has a profile the checkout lacks.
    let profiles = platform_folder(&home).join("profiles");
    std::fs::create_dir_all(&profiles).unwrap();
    std::fs::write(
        profiles.join("zed-only-here.toml"),
        "performer = \"zed-only-here\"\n",
    )
    .unwrap();
    let out = installed(
        &home,
        &repo(),
        &["relay", "--performer", "zed-only-here", "--exit-after", "1"],
    );
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains(&profiles.join("zed-only-here.toml").display().to_string())
            && err.contains("--profiles"),
        "{err}"
    );
}

#[test]
fn commands_that_print_an_answer_log_no_info_lines_beside_it() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    // The first start, so the configuration exists; then each answer on its own.
    installed(home.path(), work.path(), &["config"]);
    for args in [&["config"][..], &["check"][..]] {
        let output = Command::new(facewire_bin())
            .current_dir(work.path())
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path().join("xdg"))
            .env_remove("FACEWIRE_LOG")
            .args(args)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{args:?}: {}",
            text(&output.stderr)
        );
        assert!(!output.stdout.is_empty(), "{args:?} printed no answer");
        let stderr = text(&output.stderr);
        assert!(
            !stderr.contains("INFO"),
            "{args:?} logged info lines:\n{stderr}"
        );
    }
    // FACEWIRE_LOG still turns them on.
    let output = installed(home.path(), work.path(), &["config"]);
    assert!(
        text(&output.stderr).contains("INFO"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn model_names_an_avatar_in_the_avatars_folder_and_a_typo_gets_the_nearest() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    // The first start makes the avatars folder; the user drops an avatar into it.
    installed(home.path(), work.path(), &["config"]);
    let models = platform_folder(home.path()).join("models");
    std::fs::write(models.join("mine.glb"), facewire::headgen::DEFAULT_HEAD_GLB).unwrap();
    let out = work.path().join("mine.png");
    let output = installed(
        home.path(),
        work.path(),
        &[
            "snapshot",
            "--model",
            "mine",
            "--size",
            "64x64",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(out.is_file());
    let output = installed(home.path(), work.path(), &["check", "--model", "mnie.glb"]);
    let said = text(&output.stderr);
    assert!(!output.status.success(), "{said}");
    assert!(said.contains("nearest there: mine.glb"), "{said}");
    assert!(said.contains(&models.display().to_string()), "{said}");
}

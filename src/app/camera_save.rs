//! Saving the stage's camera into the `[camera]` table of the configuration file.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::{CameraConfig, Config};
use crate::tomlfile::{TomlFile, TomlFileError};

/// Errors saving the stage's camera into the configuration file.
#[derive(Debug, thiserror::Error)]
pub enum CameraSaveError {
    /// Reading the file failed, it is not TOML, its `camera` is not a table, or writing it
    /// failed; the file is left as it was.
    #[error("{0}")]
    File(TomlFileError),
    /// The file with the new camera would not load (a setting is invalid, so it did not load
    /// before either); the file is left as it was.
    #[error("the rewritten file would not load, so it was left as it was: {0}")]
    Rewrite(String),
    /// The program started without a configuration file and the default one has appeared since;
    /// it is not overwritten.
    #[error("{path} exists but was not loaded at start; not overwriting it (add the [camera] values by hand)")]
    Exists {
        /// The file that would have been written.
        path: String,
    },
}

/// The `[camera]` table as written: three decimals at most.
#[derive(Serialize)]
struct CameraTable {
    zoom: f64,
    offset_y: f64,
    orbit_yaw: f64,
    orbit_pitch: f64,
    fov: f64,
}

impl CameraTable {
    fn of(camera: &CameraConfig) -> CameraTable {
        // `+ 0.0` turns -0.0 into 0.0.
        let round = |v: f32| (f64::from(v) * 1000.0).round() / 1000.0 + 0.0;
        CameraTable {
            zoom: round(camera.zoom),
            offset_y: round(camera.offset_y),
            orbit_yaw: round(camera.orbit_yaw),
            orbit_pitch: round(camera.orbit_pitch),
            fov: round(camera.fov),
        }
    }
}

/// Rewrites the `[camera]` table of a configuration file's `text` to hold `camera`, through
/// [`crate::tomlfile`]: existing keys get new values (their indentation and the comments around
/// and after them stay), missing keys are added at the end of the table, and a file without the
/// table gets one appended after everything, its closing comments included. Everything else is
/// kept as it was; a file whose lines all end in CRLF keeps CRLF. Fails, with the reason, when
/// `text` is not TOML or its `camera` is not a table.
pub fn rewrite_camera_table(text: &str, camera: &CameraConfig) -> Result<String, TomlFileError> {
    let mut file = TomlFile::parse(Path::new("the configuration"), text)?;
    file.set_table("camera", &CameraTable::of(camera))?;
    Ok(file.text())
}

/// The first lines of a configuration file the camera save creates.
const HEADER: &str = "# facewire configuration: only the stage camera, saved with S on the stage.
# Every other setting keeps its default (see the README).
";

/// Saves `camera` into the configuration file the program started with (`started_with`), or,
/// when it started without one, into [`crate::config::DEFAULT_PATH`] if that does not exist.
/// Only the `[camera]` values change; the result is checked to load before it replaces the
/// file, atomically. Returns the file written.
pub fn save_camera(
    started_with: Option<&Path>,
    camera: &CameraConfig,
) -> Result<PathBuf, CameraSaveError> {
    let camera = camera.clamped();
    let mut file = match started_with {
        Some(path) => TomlFile::read(path).map_err(CameraSaveError::File)?,
        None => {
            let path = PathBuf::from(crate::config::DEFAULT_PATH);
            if path.exists() {
                return Err(CameraSaveError::Exists {
                    path: path.display().to_string(),
                });
            }
            TomlFile::fresh(&path, HEADER)
        }
    };
    file.set_table("camera", &CameraTable::of(&camera))
        .map_err(CameraSaveError::File)?;
    let new_text = file.text();
    let label = file.path().display().to_string();
    let folder = file.path().parent().unwrap_or(Path::new(""));
    match Config::parse_in(&new_text, &label, folder) {
        Ok(parsed) if same_camera(&parsed.camera, &camera) => {}
        Ok(_) => {
            return Err(CameraSaveError::Rewrite(
                "the [camera] values did not take".into(),
            ))
        }
        Err(error) => return Err(CameraSaveError::Rewrite(error.to_string())),
    }
    file.write().map_err(CameraSaveError::File)?;
    Ok(file.path().to_path_buf())
}

/// Whether two cameras agree to the three decimals the file keeps.
fn same_camera(a: &CameraConfig, b: &CameraConfig) -> bool {
    let (a, b) = (
        [a.zoom, a.offset_y, a.orbit_yaw, a.orbit_pitch, a.fov],
        [b.zoom, b.offset_y, b.orbit_yaw, b.orbit_pitch, b.fov],
    );
    a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-3)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# top comment\n[window]\ntitle = \"x\" # keep me\n\n[camera]\n# zoom it\nzoom = 1.0   # magnification\n  fov = 27.0\n\n[render]\nheadless_fps = 30\n";

    fn moved() -> CameraConfig {
        CameraConfig {
            zoom: 1.331,
            offset_y: -0.15,
            orbit_yaw: 20.0,
            orbit_pitch: 5.0,
            fov: 35.0,
        }
    }

    #[test]
    fn saving_rewrites_only_the_camera_values() {
        let out = rewrite_camera_table(FILE, &moved()).unwrap();
        let parsed = Config::parse(&out, "f.toml").unwrap();
        assert!(same_camera(&parsed.camera, &moved()), "{out}");
        assert_eq!(parsed.render.headless_fps, 30);
        assert_eq!(parsed.window.title, "x");
        for kept in [
            "# top comment\n",
            "title = \"x\" # keep me\n",
            "# zoom it\n",
            "zoom = 1.331   # magnification\n",
            "  fov = 35.0\n",
            "\n[render]\nheadless_fps = 30\n",
        ] {
            assert!(out.contains(kept), "lost {kept:?} in:\n{out}");
        }
        // The missing keys go after the table's last key, before the blank line.
        assert!(
            out.contains(
                "fov = 35.0\noffset_y = -0.15\norbit_yaw = 20.0\norbit_pitch = 5.0\n\n[render]"
            ),
            "{out}"
        );
        // Saving again with the same values changes nothing.
        assert_eq!(rewrite_camera_table(&out, &moved()).unwrap(), out);
        // CRLF files keep CRLF, and a file without the table gets one.
        let crlf = rewrite_camera_table("[window]\r\nvsync = true\r\n", &moved()).unwrap();
        assert!(crlf.ends_with("[camera]\r\nzoom = 1.331\r\noffset_y = -0.15\r\norbit_yaw = 20.0\r\norbit_pitch = 5.0\r\nfov = 35.0\r\n"), "{crlf:?}");
        assert!(same_camera(
            &Config::parse(&crlf, "f").unwrap().camera,
            &moved()
        ));
        let no_newline = rewrite_camera_table("[camera]\nzoom = 2.0", &moved()).unwrap();
        assert!(same_camera(
            &Config::parse(&no_newline, "f").unwrap().camera,
            &moved()
        ));
    }

    #[test]
    fn comments_after_values_survive_and_trailing_comments_stay_last() {
        let file = concat!(
            "[window]\n",
            "title = \"a # not a comment\" # the title\n",
            "\n",
            "[camera]\n",
            "zoom = 1.0 # closer\n",
            "offset_y = 0.0#tight\n",
            "\"orbit_yaw\" = 3.0  # quoted key, \"quotes\" # and a second hash\n",
            "# the end of the file\n",
        );
        let out = rewrite_camera_table(file, &moved()).unwrap();
        for kept in [
            "title = \"a # not a comment\" # the title\n",
            "zoom = 1.331 # closer\n",
            "offset_y = -0.15#tight\n",
            "\"orbit_yaw\" = 20.0  # quoted key, \"quotes\" # and a second hash\n",
            "# the end of the file\n",
        ] {
            assert!(out.contains(kept), "lost {kept:?} in:\n{out}");
        }
        let parsed = Config::parse(&out, "f.toml").unwrap();
        assert!(same_camera(&parsed.camera, &moved()), "{out}");
        assert_eq!(parsed.window.title, "a # not a comment");
        assert_eq!(rewrite_camera_table(&out, &moved()).unwrap(), out);
        // A file without the table gets it after everything, its last comment included.
        let appended = rewrite_camera_table("vsync_note = 1 # why\n# last words", &moved());
        assert_eq!(
            appended.unwrap(),
            concat!(
                "vsync_note = 1 # why\n",
                "# last words\n",
                "\n",
                "[camera]\n",
                "zoom = 1.331\n",
                "offset_y = -0.15\n",
                "orbit_yaw = 20.0\n",
                "orbit_pitch = 5.0\n",
                "fov = 35.0\n",
            )
        );
    }

    #[test]
    fn save_camera_writes_the_started_file_and_refuses_broken_results() {
        let dir = std::env::temp_dir().join(format!("facewire-camera-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("facewire.toml");
        std::fs::write(&path, FILE).unwrap();
        assert_eq!(save_camera(Some(&path), &moved()).unwrap(), path);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("# zoom it\n") && text.contains("title = \"x\" # keep me"));
        assert!(same_camera(&Config::load(&path).unwrap().camera, &moved()));
        // Dotted keys are the same table: they get the new values as dotted keys.
        std::fs::write(&path, "camera.zoom = 1.0 # dotted\n").unwrap();
        save_camera(Some(&path), &moved()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("camera.zoom = 1.331 # dotted\n"), "{text}");
        assert!(same_camera(&Config::load(&path).unwrap().camera, &moved()));
        // A file that is not TOML, or whose `camera` is not a table, is left alone.
        for broken in [
            "[camera\nzoom = 1.0\n",
            "camera = 2.0\n",
            "[[camera]]\nzoom = 1.0\n",
        ] {
            std::fs::write(&path, broken).unwrap();
            let err = save_camera(Some(&path), &moved()).unwrap_err();
            assert!(
                matches!(
                    err,
                    CameraSaveError::File(
                        TomlFileError::Parse(_) | TomlFileError::NotATable { .. }
                    )
                ),
                "{err}"
            );
            assert!(err.to_string().contains("facewire.toml"), "{err}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), broken);
        }
        // A file that is TOML but whose other settings are invalid is left alone too.
        let invalid = "[camera]\nzoom = 1.0\n[render]\nheadless_fps = \"fast\"\n";
        std::fs::write(&path, invalid).unwrap();
        assert!(matches!(
            save_camera(Some(&path), &moved()),
            Err(CameraSaveError::Rewrite(_))
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), invalid);
        // A value written as an integer that still holds is kept as written.
        std::fs::write(&path, "[camera]\nfov = 35 # wide\n").unwrap();
        save_camera(Some(&path), &moved()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("[camera]\nfov = 35 # wide\nzoom = 1.331\n"),
            "{text}"
        );
        let missing = dir.join("missing.toml");
        assert!(matches!(
            save_camera(Some(&missing), &moved()),
            Err(CameraSaveError::File(TomlFileError::Read { .. }))
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

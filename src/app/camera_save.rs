//! Saving the stage's camera into the `[camera]` table of the configuration file.

use std::path::{Path, PathBuf};

use crate::config::{CameraConfig, Config};

/// Errors saving the stage's camera into the configuration file.
#[derive(Debug, thiserror::Error)]
pub enum CameraSaveError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file with the new camera would not load (it did not before either, or its
    /// `[camera]` keys are written in a way the line-based rewrite does not follow); the file
    /// is left as it was.
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

/// A camera value as written in the file: three decimals at most, always a TOML float.
fn toml_float(v: f32) -> String {
    let rounded = (f64::from(v) * 1000.0).round() / 1000.0 + 0.0;
    let text = format!("{rounded}");
    if text.contains(['.', 'e', 'E']) {
        text
    } else {
        format!("{text}.0")
    }
}

/// Rewrites the `[camera]` table of a configuration file's `text` to hold `camera`, changing
/// only the values of its keys (indentation and end-of-line comments stay), adding keys that
/// are missing at the end of the table, or appending the table when there is none. Every other
/// line is kept byte for byte.
pub fn rewrite_camera_table(text: &str, camera: &CameraConfig) -> String {
    let values = [
        ("zoom", camera.zoom),
        ("offset_y", camera.offset_y),
        ("orbit_yaw", camera.orbit_yaw),
        ("orbit_pitch", camera.orbit_pitch),
        ("fov", camera.fov),
    ];
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut written = [false; 5];
    let mut out = String::with_capacity(text.len() + 128);
    let mut in_camera = false;
    let mut seen_camera = false;
    // Where the camera table's last key line ends in `out` (or its header), for missing keys.
    let mut insert_at: Option<usize> = None;
    let flush_missing = |out: &mut String, at: Option<usize>, written: &mut [bool; 5]| {
        let Some(at) = at else { return };
        let mut add = String::new();
        for (i, (key, value)) in values.iter().enumerate() {
            if !written[i] {
                add.push_str(&format!("{key} = {}{newline}", toml_float(*value)));
                written[i] = true;
            }
        }
        out.insert_str(at, &add);
    };
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with('[') {
            if in_camera {
                flush_missing(&mut out, insert_at, &mut written);
            }
            let name = trimmed
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or("")
                .trim();
            in_camera = !trimmed.starts_with("[[") && name == "camera";
            out.push_str(line);
            if in_camera {
                seen_camera = true;
                if !line.ends_with('\n') {
                    out.push_str(newline);
                }
                insert_at = Some(out.len());
            }
            continue;
        }
        if in_camera {
            let key_end = trimmed
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(trimmed.len());
            let (key, rest) = trimmed.split_at(key_end);
            let slot = values.iter().position(|(k, _)| *k == key);
            if let (Some(i), Some(value_text)) = (slot, rest.trim_start().strip_prefix('=')) {
                let indent = &line[..line.len() - trimmed.len()];
                let body = value_text.trim_end_matches(['\n', '\r']);
                let comment = body.find('#').map(|at| body[at..].trim_end());
                let ending = &line[line.trim_end_matches(['\n', '\r']).len()..];
                out.push_str(indent);
                out.push_str(&format!("{key} = {}", toml_float(values[i].1)));
                if let Some(comment) = comment {
                    out.push(' ');
                    out.push_str(comment);
                }
                out.push_str(if ending.is_empty() { newline } else { ending });
                written[i] = true;
                insert_at = Some(out.len());
                continue;
            }
        }
        out.push_str(line);
    }
    if in_camera {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push_str(newline);
            insert_at = insert_at.map(|at| at.min(out.len()));
        }
        flush_missing(&mut out, insert_at, &mut written);
    }
    if !seen_camera {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push_str(newline);
        }
        if !out.is_empty() {
            out.push_str(newline);
        }
        out.push_str("[camera]");
        out.push_str(newline);
        let at = out.len();
        flush_missing(&mut out, Some(at), &mut written);
    }
    out
}

/// Saves `camera` into the configuration file the program started with (`started_with`), or,
/// when it started without one, into [`crate::config::DEFAULT_PATH`] if that does not exist.
/// Only the `[camera]` values change; the result is checked to load before it replaces the
/// file, atomically. Returns the file written.
pub fn save_camera(
    started_with: Option<&Path>,
    camera: &CameraConfig,
) -> Result<PathBuf, CameraSaveError> {
    let camera = camera.clamped();
    let (path, text) = match started_with {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| CameraSaveError::Io {
                path: path.display().to_string(),
                source,
            })?;
            (path.to_path_buf(), text)
        }
        None => {
            let path = PathBuf::from(crate::config::DEFAULT_PATH);
            if path.exists() {
                return Err(CameraSaveError::Exists {
                    path: path.display().to_string(),
                });
            }
            let header = "# facewire configuration: only the stage camera, saved with S on the \
                          stage.\n# Every other setting keeps its default (see the README).\n";
            (path, header.to_string())
        }
    };
    let new_text = rewrite_camera_table(&text, &camera);
    let label = path.display().to_string();
    match Config::parse(&new_text, &label) {
        Ok(parsed) if same_camera(&parsed.camera, &camera) => {}
        Ok(_) => {
            return Err(CameraSaveError::Rewrite(
                "the [camera] values did not take; are they written as dotted keys?".into(),
            ))
        }
        Err(error) => return Err(CameraSaveError::Rewrite(error.to_string())),
    }
    crate::fsutil::write_atomic(&path, new_text.as_bytes()).map_err(|source| {
        CameraSaveError::Io {
            path: label,
            source,
        }
    })?;
    Ok(path)
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
        let out = rewrite_camera_table(FILE, &moved());
        let parsed = Config::parse(&out, "f.toml").unwrap();
        assert!(same_camera(&parsed.camera, &moved()), "{out}");
        assert_eq!(parsed.render.headless_fps, 30);
        assert_eq!(parsed.window.title, "x");
        for kept in [
            "# top comment\n",
            "title = \"x\" # keep me\n",
            "# zoom it\n",
            "zoom = 1.331 # magnification\n",
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
        assert_eq!(rewrite_camera_table(&out, &moved()), out);
        // CRLF files keep CRLF, and a file without the table gets one.
        let crlf = rewrite_camera_table("[window]\r\nvsync = true\r\n", &moved());
        assert!(crlf.ends_with("[camera]\r\nzoom = 1.331\r\noffset_y = -0.15\r\norbit_yaw = 20.0\r\norbit_pitch = 5.0\r\nfov = 35.0\r\n"), "{crlf:?}");
        assert!(same_camera(
            &Config::parse(&crlf, "f").unwrap().camera,
            &moved()
        ));
        let no_newline = rewrite_camera_table("[camera]\nzoom = 2.0", &moved());
        assert!(same_camera(
            &Config::parse(&no_newline, "f").unwrap().camera,
            &moved()
        ));
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
        // Dotted keys elsewhere would clash with the table: the file is left alone.
        let dotted = "camera.zoom = 1.0\n";
        std::fs::write(&path, dotted).unwrap();
        assert!(matches!(
            save_camera(Some(&path), &moved()),
            Err(CameraSaveError::Rewrite(_))
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), dotted);
        let missing = dir.join("missing.toml");
        assert!(matches!(
            save_camera(Some(&missing), &moved()),
            Err(CameraSaveError::Io { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! Values typed on the command line: image sizes, head angles, channel weights and the
//! recording to calibrate from.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Instant;

use glam::Quat;

use crate::arkit::{Channel, FaceFrame, Protocol};
use crate::diagnostic::nearest;

/// `calibrate --from FILE [--neutral-at SECONDS]`: calibrating from a recording.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TakeArgs {
    /// Calibrate from a recording (.fwrec or a Live Link Face CSV) instead of live.
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// With --from: the performer's neutral face is the half second starting this many seconds
    /// into the recording (default: the calmest stretch of the take, found in it).
    #[arg(long, value_name = "SECONDS", requires = "from")]
    pub neutral_at: Option<f64>,
}

/// `facewire check`: a mapping held against a model.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Mapping file; default: the configured one (the default head's for the default head).
    #[arg(long, value_name = "PATH")]
    pub mapping: Option<PathBuf>,
    /// Avatar file (.glb, .gltf or .vrm); default: the configured model.
    #[arg(long, value_name = "PATH")]
    pub model: Option<PathBuf>,
}

/// A head rotation typed as `YAW,PITCH,ROLL` in degrees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadAngles(pub Quat);

impl FromStr for HeadAngles {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let v: Vec<f32> = s
            .split(',')
            .map(|p| p.trim().parse::<f32>().ok().filter(|v| v.is_finite()))
            .collect::<Option<_>>()
            .ok_or_else(|| format!("`{s}` is not YAW,PITCH,ROLL in degrees, e.g. 20,-5,0"))?;
        let [yaw, pitch, roll] = v[..] else {
            return Err(format!("`{s}` needs three angles: YAW,PITCH,ROLL"));
        };
        // The avatar looks down +Z with +X on its left: yaw about +Y turns the face towards +X,
        // pitch about +X nods it down, roll about -Z tilts it towards +X.
        Ok(HeadAngles(
            Quat::from_rotation_y(yaw.to_radians())
                * Quat::from_rotation_x(pitch.to_radians())
                * Quat::from_rotation_z(-roll.to_radians()),
        ))
    }
}

/// An image size, `WIDTHxHEIGHT`, each side 16 to 8192 pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size(pub u32, pub u32);

impl FromStr for Size {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (w, h) = s
            .split_once(['x', 'X'])
            .ok_or_else(|| format!("`{s}` is not a size; write WIDTHxHEIGHT, e.g. 800x800"))?;
        let parse = |v: &str, side: &str| {
            let v = v.trim();
            match v.parse::<u32>() {
                Ok(n) if (16..=crate::image::MAX_SIDE).contains(&n) => Ok(n),
                Ok(n) => Err(format!(
                    "the {side} {n} is outside 16 to {} pixels; write WIDTHxHEIGHT, e.g. 800x800",
                    crate::image::MAX_SIDE
                )),
                Err(_) if v.is_empty() => Err(format!(
                    "`{s}` has no {side}; write WIDTHxHEIGHT, e.g. 800x800"
                )),
                Err(_) => Err(format!(
                    "the {side} `{v}` is not a whole number; write WIDTHxHEIGHT, e.g. 800x800"
                )),
            }
        };
        Ok(Size(parse(w, "width")?, parse(h, "height")?))
    }
}

/// Why `--weights` did not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WeightsError {
    /// An item is not `NAME=VALUE`.
    #[error("`{0}`: write NAME=VALUE, e.g. jawOpen=1")]
    Syntax(String),
    /// The name is no ARKit channel.
    #[error("unknown channel `{name}`; {}", match suggestion {
        Some(best) => format!("did you mean `{best}`?"),
        None => "ARKit names like jawOpen, eyeBlinkLeft".to_string(),
    })]
    UnknownChannel {
        /// The name typed.
        name: String,
        /// The nearest channel name, if one is close.
        suggestion: Option<&'static str>,
    },
    /// The value is not a finite number.
    #[error("`{value}` is not a number (in `{item}`)")]
    NotANumber {
        /// The value typed.
        value: String,
        /// The whole item.
        item: String,
    },
    /// The value is outside 0 to 1.
    #[error("`{value}` is out of range (in `{item}`): weights are 0 to 1")]
    OutOfRange {
        /// The value typed.
        value: String,
        /// The whole item.
        item: String,
    },
}

/// Parses `name=value,name=value` (ARKit names in any spelling) into a frame; values must lie in
/// [0, 1].
pub fn parse_weights(spec: &str) -> Result<FaceFrame, WeightsError> {
    let mut frame = FaceFrame::empty(
        Protocol::Vmc,
        SocketAddr::from(([127, 0, 0, 1], 0)),
        Instant::now(),
    );
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, value) = item
            .split_once('=')
            .ok_or_else(|| WeightsError::Syntax(item.to_string()))?;
        let channel = Channel::parse(name).ok_or_else(|| WeightsError::UnknownChannel {
            name: name.to_string(),
            suggestion: nearest(name.trim(), Channel::ALL.map(Channel::name)),
        })?;
        let v: f32 = value
            .trim()
            .parse()
            .ok()
            .filter(|v: &f32| v.is_finite())
            .ok_or_else(|| WeightsError::NotANumber {
                value: value.to_string(),
                item: item.to_string(),
            })?;
        if !(0.0..=1.0).contains(&v) {
            return Err(WeightsError::OutOfRange {
                value: value.trim().to_string(),
                item: item.to_string(),
            });
        }
        frame.set(channel, v);
    }
    Ok(frame)
}

/// Why a frames file (`snapshot --frames`) could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PoseLinesError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not a frame.
    #[error("{}:{line}:{column}: {reason}; write a frame as {{\"weights\": {{\"jawOpen\": 0.5}}, \"head\": [20, 0, -5]}}", path.display())]
    Line {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// The column, from 1.
        column: usize,
        /// What is wrong.
        reason: String,
    },
    /// The file holds no frame.
    #[error("{}: no frames; write one JSON object a line", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
}

/// One line of a frames file.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PoseLine {
    /// Channel weights by ARKit name (any dialect), 0 to 1.
    #[serde(default)]
    weights: std::collections::BTreeMap<String, f64>,
    /// Head rotation, yaw, pitch, roll in degrees.
    #[serde(default)]
    head: Option<[f64; 3]>,
}

/// Reads a frames file for `snapshot --frames`: one JSON object a line with `weights` (ARKit
/// names to 0..1) and `head` (`[yaw, pitch, roll]` in degrees, as `--head`); blank lines and
/// lines starting with `#` are skipped. Errors name the file, line and column.
pub fn read_pose_lines(path: &std::path::Path) -> Result<Vec<FaceFrame>, PoseLinesError> {
    let text = std::fs::read_to_string(path).map_err(|source| PoseLinesError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut frames = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let at = |column: usize, reason: String| PoseLinesError::Line {
            path: path.to_path_buf(),
            line: n + 1,
            column,
            reason,
        };
        let pose: PoseLine =
            serde_json::from_str(line).map_err(|e| at(e.column(), e.to_string()))?;
        let spec: Vec<String> = pose
            .weights
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        let mut frame = parse_weights(&spec.join(",")).map_err(|e| at(1, e.to_string()))?;
        if let Some([yaw, pitch, roll]) = pose.head {
            let angles = format!("{yaw},{pitch},{roll}");
            frame.head = Some(HeadAngles::from_str(&angles).map_err(|e| at(1, e))?.0);
        }
        frames.push(frame);
    }
    if frames.is_empty() {
        return Err(PoseLinesError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(frames)
}

/// Asks `question` on the terminal (stderr) and reads the answer from stdin: Enter, `y` or `yes`
/// mean yes; anything else, or stdin closed, means no.
pub fn confirm(question: &str) -> std::io::Result<bool> {
    use std::io::Write;
    eprint!("{question}");
    std::io::stderr().flush()?;
    let mut line = String::new();
    if std::io::stdin().read_line(&mut line)? == 0 {
        return Ok(false);
    }
    Ok(matches!(
        line.trim().to_ascii_lowercase().as_str(),
        "" | "y" | "yes"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_parse_in_any_spelling_and_mistakes_are_named() {
        let f = parse_weights("jawOpen=1, MouthSmile_L=0.5").unwrap();
        assert_eq!(f.get(Channel::JawOpen), Some(1.0));
        assert_eq!(f.get(Channel::MouthSmileLeft), Some(0.5));
        let e = parse_weights("jawOpn=1").unwrap_err().to_string();
        assert_eq!(e, "unknown channel `jawOpn`; did you mean `jawOpen`?");
        assert!(matches!(
            parse_weights("jawOpen"),
            Err(WeightsError::Syntax(_))
        ));
        assert!(matches!(
            parse_weights("jawOpen=NaN"),
            Err(WeightsError::NotANumber { .. })
        ));
    }

    #[test]
    fn weights_outside_zero_to_one_are_refused_not_clamped() {
        let e = parse_weights("jawOpen=5").unwrap_err();
        assert_eq!(
            e,
            WeightsError::OutOfRange {
                value: "5".to_string(),
                item: "jawOpen=5".to_string(),
            }
        );
        assert_eq!(
            e.to_string(),
            "`5` is out of range (in `jawOpen=5`): weights are 0 to 1"
        );
        assert!(matches!(
            parse_weights("eyeBlinkLeft=0.5,jawOpen=-0.1"),
            Err(WeightsError::OutOfRange { value, .. }) if value == "-0.1"
        ));
        let f = parse_weights("jawOpen=0,eyeBlinkLeft=1").unwrap();
        assert_eq!(f.get(Channel::JawOpen), Some(0.0));
        assert_eq!(f.get(Channel::EyeBlinkLeft), Some(1.0));
    }

    #[test]
    fn sizes_and_angles_parse() {
        assert_eq!("800x600".parse::<Size>(), Ok(Size(800, 600)));
        assert!("8x8".parse::<Size>().is_err());
        assert!("800".parse::<Size>().is_err());
        // Each message names what is wrong with which side.
        let err = |s: &str| s.parse::<Size>().unwrap_err();
        assert!(err("1280x").contains("has no height"), "{}", err("1280x"));
        assert!(err("x720").contains("has no width"));
        assert!(err("12x720").contains("the width 12 is outside 16 to 8192"));
        assert!(err("1280x720x3").contains("the height `720x3` is not a whole number"));
        let q = "90,0,0".parse::<HeadAngles>().unwrap().0;
        assert!(q.dot(Quat::from_rotation_y(90f32.to_radians())).abs() > 1.0 - 1e-6);
        assert!("1,2".parse::<HeadAngles>().is_err());
    }
}

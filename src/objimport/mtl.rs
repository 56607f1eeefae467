//! The part of a Wavefront material library (`.mtl`) a shape set's colours need: each
//! `newmtl`'s diffuse colour (`Kd`) and dissolve (`d`, or `Tr` = 1 - d).
//!
//! Everything else (specular, ambient, emission, transmission filter `Tf`, illumination models,
//! texture maps) is ignored. A library is a convenience beside the geometry, so nothing in it
//! fails an import: a line that cannot be read is a [`Problem`] with its line number, and the
//! rest of the file is still read. `Kd` values are the sRGB 0..1 numbers MTL writers mean;
//! [`srgb_to_linear`] turns them into glTF's linear base colour.

use super::obj::{rest_of_line, MAX_NAME_BYTES};

/// The most problems kept per file; the rest are only counted.
pub const MAX_PROBLEMS: usize = 32;

/// One material of a library.
#[derive(Debug, Clone, PartialEq)]
pub struct MtlMaterial {
    /// The `newmtl` name.
    pub name: String,
    /// The 1-based line of its `newmtl`.
    pub line: usize,
    /// The diffuse colour (`Kd`), sRGB, each channel in 0..=1; `None` when not given.
    pub diffuse: Option<[f32; 3]>,
    /// The opacity: `d`, or 1 - `Tr` when only `Tr` is given, in 0..=1; `None` when neither is.
    pub dissolve: Option<f32>,
}

impl MtlMaterial {
    /// The opacity, 1 (opaque) when the library does not say.
    pub fn opacity(&self) -> f32 {
        self.dissolve.unwrap_or(1.0)
    }
}

/// A line of a library that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The 1-based line number.
    pub line: usize,
    /// What is wrong, and what was done instead.
    pub detail: String,
}

/// A parsed library.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MtlLibrary {
    /// The materials, in file order; a name defined twice keeps its last definition.
    pub materials: Vec<MtlMaterial>,
    /// The first [`MAX_PROBLEMS`] lines that could not be used.
    pub problems: Vec<Problem>,
    /// How many problems there were in all.
    pub problem_count: usize,
}

impl MtlLibrary {
    /// The material called `name`, if any.
    pub fn material(&self, name: &str) -> Option<&MtlMaterial> {
        self.materials.iter().find(|m| m.name == name)
    }

    fn problem(&mut self, line: usize, detail: String) {
        self.problem_count += 1;
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(Problem { line, detail });
        }
    }
}

/// Parses MTL text. Never fails: unusable lines become [`MtlLibrary::problems`].
pub fn parse(bytes: &[u8]) -> MtlLibrary {
    let mut library = MtlLibrary::default();
    // The material the statements are about, by index; `Tr` waits for the end so that `d`
    // wins wherever it is written.
    let mut current: Option<usize> = None;
    let mut transparency: Vec<Option<f32>> = Vec::new();
    for (number, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line_no = number + 1;
        let line = match line.iter().position(|&b| b == b'#') {
            Some(comment) => &line[..comment],
            None => line,
        };
        let mut tokens = line
            .split(|b| b.is_ascii_whitespace())
            .filter(|t| !t.is_empty());
        let Some(keyword) = tokens.next() else {
            continue;
        };
        let args: Vec<&[u8]> = tokens.take(8).collect();
        if keyword == b"newmtl" {
            match rest_of_line(line, b"newmtl") {
                Ok(Some(name)) => {
                    if let Some(old) = library.materials.iter().position(|m| m.name == name) {
                        let first = library.materials[old].line;
                        library.problem(
                            line_no,
                            format!(
                                "`{name}` is defined again (first on line {first}); this \
                                 definition is used"
                            ),
                        );
                        library.materials.remove(old);
                        transparency.remove(old);
                    }
                    library.materials.push(MtlMaterial {
                        name,
                        line: line_no,
                        diffuse: None,
                        dissolve: None,
                    });
                    transparency.push(None);
                    current = Some(library.materials.len() - 1);
                }
                Ok(None) => {
                    library.problem(line_no, "newmtl without a name; ignored".to_owned());
                    current = None;
                }
                Err(detail) => {
                    library.problem(line_no, format!("{detail}; the material is ignored"));
                    current = None;
                }
            }
            continue;
        }
        let statement = String::from_utf8_lossy(keyword);
        if !matches!(keyword, b"Kd" | b"d" | b"Tr") {
            continue;
        }
        let Some(index) = current else {
            library.problem(
                line_no,
                format!("{statement} outside a material (no usable newmtl before it); ignored"),
            );
            continue;
        };
        match keyword {
            b"Kd" => match parse_colour(&args) {
                Ok(rgb) => library.materials[index].diffuse = Some(rgb),
                Err(detail) => library.problem(line_no, format!("Kd: {detail}")),
            },
            b"d" => {
                // `d -halo 0.5`: the halo form's factor depends on the view; its value stands.
                let value = match args.as_slice() {
                    [b"-halo", value, ..] | [value, ..] => parse_unit(value),
                    [] => Err("no value".to_owned()),
                };
                match value {
                    Ok(d) => library.materials[index].dissolve = Some(d),
                    Err(detail) => library.problem(line_no, format!("d: {detail}")),
                }
            }
            _ => match args
                .first()
                .map_or(Err("no value".to_owned()), |v| parse_unit(v))
            {
                Ok(tr) => transparency[index] = Some(tr),
                Err(detail) => library.problem(line_no, format!("Tr: {detail}")),
            },
        }
    }
    for (material, tr) in library.materials.iter_mut().zip(transparency) {
        if material.dissolve.is_none() {
            material.dissolve = tr.map(|tr| 1.0 - tr);
        }
    }
    library
}

/// `Kd r g b` (or `Kd r`, grey), each clamped to 0..=1.
fn parse_colour(args: &[&[u8]]) -> Result<[f32; 3], String> {
    match args {
        [b"spectral", ..] | [b"xyz", ..] => Err(format!(
            "the {} form is not supported; only `Kd r g b` is",
            String::from_utf8_lossy(args[0])
        )),
        [r] => parse_unit(r).map(|r| [r; 3]),
        [r, g, b] => Ok([parse_unit(r)?, parse_unit(g)?, parse_unit(b)?]),
        _ => Err(format!(
            "{} numbers; write `Kd r g b`",
            if args.len() >= 8 {
                "too many".to_owned()
            } else {
                args.len().to_string()
            }
        )),
    }
}

/// One finite number, clamped to 0..=1.
fn parse_unit(token: &[u8]) -> Result<f32, String> {
    let text = String::from_utf8_lossy(&token[..token.len().min(MAX_NAME_BYTES)]).into_owned();
    text.parse::<f32>()
        .ok()
        .filter(|v| v.is_finite())
        .map(|v| v.clamp(0.0, 1.0))
        .ok_or_else(|| format!("`{text}` is not a finite number"))
}

/// An sRGB-encoded channel (0..=1) in linear light, as glTF's base colour factor is.
pub fn srgb_to_linear(c: f32) -> f32 {
    let c = c.clamp(0.0, 1.0);
    if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }
}

/// A linear channel (0..=1) in sRGB encoding, for showing a colour to a person.
pub fn linear_to_srgb(c: f32) -> f32 {
    let c = c.clamp(0.0, 1.0);
    if c <= 0.003_130_8 {
        c * 12.92
    } else {
        1.055 * c.powf(1.0 / 2.4) - 0.055
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn materials_colours_and_dissolve() {
        let text = b"# a library\nnewmtl Skin Tone\nKd 0.6 0.5 0.4\nKa 0 0 0\nillum 2\n\
            map_Kd skin.png\n  newmtl Glass\nKd 0.2\nTr 0.75\n\
            newmtl Lash\r\nKd 0 0 0\r\nd 1\r\nTr 0.5\r\nnewmtl Gone\nd -halo 0\n";
        let library = parse(text);
        assert!(library.problems.is_empty(), "{:?}", library.problems);
        let names: Vec<&str> = library.materials.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["Skin Tone", "Glass", "Lash", "Gone"]);
        let skin = library.material("Skin Tone").unwrap();
        assert_eq!(skin.diffuse, Some([0.6, 0.5, 0.4]));
        assert_eq!(skin.dissolve, None);
        assert_eq!(skin.opacity(), 1.0);
        assert_eq!(skin.line, 2);
        let glass = library.material("Glass").unwrap();
        assert_eq!(glass.diffuse, Some([0.2; 3]));
        assert_eq!(glass.dissolve, Some(0.25), "Tr is 1 - d");
        let lash = library.material("Lash").unwrap();
        assert_eq!(lash.diffuse, Some([0.0; 3]));
        assert_eq!(lash.dissolve, Some(1.0), "d wins over Tr");
        assert_eq!(library.material("Gone").unwrap().opacity(), 0.0);
    }

    #[test]
    fn bad_lines_are_problems_with_their_line_and_the_rest_is_read() {
        let text = b"Kd 1 1 1\nnewmtl A\nKd 0.5 x 0.5\nKd 0.1 0.2\nKd spectral a.rfl\n\
            d\nd inf\nTr nan\nnewmtl\nKd 2 -1 0.5\nnewmtl A\nKd 0.3 0.3 0.3\n\xff\xfe junk\n";
        let library = parse(text);
        let problems: Vec<(usize, &str)> = library
            .problems
            .iter()
            .map(|p| (p.line, p.detail.as_str()))
            .collect();
        let lines: Vec<usize> = problems.iter().map(|p| p.0).collect();
        assert_eq!(lines, [1, 3, 4, 5, 6, 7, 8, 9, 10, 11], "{problems:?}");
        assert!(problems[0].1.contains("outside a material"), "{problems:?}");
        assert!(problems[1].1.contains("`x` is not a finite number"));
        assert!(problems[2].1.contains("2 numbers"));
        assert!(problems[3].1.contains("spectral form is not supported"));
        assert!(problems[7].1.contains("without a name"));
        assert!(problems[8].1.contains("outside a material"));
        assert!(problems[9].1.contains("defined again (first on line 2)"));
        assert_eq!(library.problem_count, 10);
        // The second A replaces the first; out-of-range values are clamped.
        assert_eq!(library.materials.len(), 1);
        assert_eq!(library.materials[0].diffuse, Some([0.3; 3]));
        assert_eq!(
            parse(b"newmtl B\nKd 2 -1 0.5\n").materials[0].diffuse,
            Some([1.0, 0.0, 0.5])
        );
    }

    #[test]
    fn hostile_input_never_panics_and_problems_are_bounded() {
        let mut text = b"newmtl M\n".to_vec();
        for _ in 0..1000 {
            text.extend_from_slice(b"Kd \xff \xff\nd -halo\nTr\n");
        }
        text.extend_from_slice(&[b'x'; 5000]);
        text.extend_from_slice(b"\nnewmtl ");
        text.extend_from_slice(&[b'n'; MAX_NAME_BYTES + 1]);
        let library = parse(&text);
        assert_eq!(library.problems.len(), MAX_PROBLEMS);
        assert_eq!(library.problem_count, 3001);
        assert_eq!(library.materials.len(), 1);
        for bytes in [&b""[..], b"\n\n", b"newmtl", b"Kd", b"d -halo", b"\0\0\0"] {
            let _ = parse(bytes);
        }
    }

    #[test]
    fn srgb_conversion() {
        assert_eq!(srgb_to_linear(0.0), 0.0);
        assert!((srgb_to_linear(1.0) - 1.0).abs() < 1e-6);
        assert!((srgb_to_linear(0.5) - 0.214).abs() < 1e-3);
        assert!((srgb_to_linear(0.6) - 0.3185).abs() < 1e-3);
        for c in [0.0, 0.01, 0.2, 0.5, 0.8, 1.0] {
            assert!((linear_to_srgb(srgb_to_linear(c)) - c).abs() < 1e-5, "{c}");
        }
    }
}

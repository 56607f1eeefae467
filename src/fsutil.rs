//! Small filesystem helpers: atomic writes, bounded reads of the text files people edit.

use std::fs;
use std::io::{self, Read, Write};
use std::path::Path;

/// The largest text file facewire reads as configuration, mapping, profile, look, expressions
/// or tokens: far above any such file a person writes, and small enough that a path naming a
/// device (`/dev/zero`), a pipe that never ends or a video by mistake is refused at once
/// instead of read into memory.
pub const MAX_TEXT_BYTES: u64 = 8 << 20;

/// Reads `path` as UTF-8 text of at most [`MAX_TEXT_BYTES`]. A longer file (or a stream that
/// goes on) is an [`io::ErrorKind::InvalidData`] error that names the limit; what was read is
/// dropped.
pub fn read_text(path: &Path) -> io::Result<String> {
    let file = fs::File::open(path)?;
    let mut text = String::new();
    file.take(MAX_TEXT_BYTES + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_TEXT_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "it is larger than {} MiB, too large for a text file facewire reads; check that the path names the right file",
                MAX_TEXT_BYTES >> 20
            ),
        ));
    }
    Ok(text)
}

/// Reads the regular file `path` whole when it holds at most `limit` bytes. A device, a pipe or
/// a folder (`/dev/zero` given by mistake) is refused before anything is read, and so is a
/// larger file, with its size and the limit in the message; a file that grows past the limit
/// while it is read is cut off there and refused too.
pub fn read_bounded(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let mut file = open_bounded(path, limit)?;
    let mut bytes = Vec::with_capacity(file.size as usize);
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Opens the regular file `path` for reading a piece at a time when it holds at most `limit`
/// bytes, refusing what [`read_bounded`] refuses; reading past `limit` (a file that grows
/// meanwhile) is an error, so a reader never takes in more than `limit` bytes.
pub fn open_bounded(path: &Path, limit: u64) -> io::Result<BoundedFile> {
    // Asked of the path before opening it: Windows refuses to open a folder at all ("access
    // denied"), and opening a FIFO would wait for a writer.
    if !fs::metadata(path)?.is_file() {
        return Err(not_a_file());
    }
    let file = fs::File::open(path)?;
    let size = file.metadata()?.len();
    if size > limit {
        return Err(too_large(size, limit));
    }
    Ok(BoundedFile {
        file,
        size,
        read: 0,
        limit,
    })
}

/// A file opened by [`open_bounded`]: reads fail once more than its limit has been read.
#[derive(Debug)]
pub struct BoundedFile {
    /// The file.
    file: fs::File,
    /// Its size when it was opened.
    size: u64,
    /// Bytes read so far.
    read: u64,
    /// The most bytes it may give.
    limit: u64,
}

impl BoundedFile {
    /// The file's size when it was opened.
    pub fn size(&self) -> u64 {
        self.size
    }
}

impl Read for BoundedFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // One byte past the limit is asked for, to tell a file that grew from one that ends
        // there.
        let room = (self.limit.saturating_add(1) - self.read).min(buf.len() as u64) as usize;
        let n = self.file.read(&mut buf[..room])?;
        self.read += n as u64;
        if self.read > self.limit {
            return Err(too_large(self.read, self.limit));
        }
        Ok(n)
    }
}

/// The error for a file of `size` bytes, more than `limit`.
fn too_large(size: u64, limit: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "it holds {:.1} MiB, more than the {} MiB facewire reads at once",
            size as f64 / f64::from(1 << 20),
            limit >> 20
        ),
    )
}

/// The error for a path that names a device, a pipe or a folder.
fn not_a_file() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "it is not a regular file (a device, a pipe or a folder); give a file's path",
    )
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, flushed to disk,
/// then renamed over the target, so readers never see a half-written file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Opens `folder` in the platform's file manager (`xdg-open`, `open` or `explorer`), without
/// waiting for it.
pub fn open_in_file_manager(folder: &Path) -> std::io::Result<()> {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    let mut child = std::process::Command::new(opener)
        .arg(folder)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    // Reap it when it ends, so no zombie stays behind.
    std::thread::Builder::new()
        .name("facewire-open".into())
        .spawn(move || {
            let _ = child.wait();
        })?;
    Ok(())
}

/// The longest name [`name_problem`] accepts, in characters.
pub const MAX_NAME: usize = 64;

/// Why `name` cannot be the stem of a file facewire keeps in one of its folders (a performer
/// profile, a look preset), or `None` when it can: 1 to [`MAX_NAME`] letters, digits, `-`, `_`
/// or `.`, not starting with `.`, so it is a plain file name on every platform and cannot leave
/// its folder.
pub fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("it is empty")
    } else if name.chars().count() > MAX_NAME {
        Some("it is longer than 64 characters")
    } else if name.contains(['/', '\\']) {
        Some("it contains a path separator")
    } else if name.starts_with('.') {
        Some("it starts with `.`")
    } else if !name
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        Some("use letters, digits, `-`, `_` and `.` only")
    } else {
        None
    }
}

/// The names of the `.toml` files in `dir` that pass [`name_problem`], without the extension,
/// sorted; empty when the folder does not exist (profiles, look presets).
pub fn list_names(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| {
            let name = e.file_name().to_str()?.strip_suffix(".toml")?.to_string();
            name_problem(&name).is_none().then_some(name)
        })
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_reads_refuse_devices_and_large_files_with_their_size() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small");
        std::fs::write(&small, vec![7u8; 1000]).unwrap();
        assert_eq!(read_bounded(&small, 1000).unwrap().len(), 1000);
        let large = dir.path().join("large");
        std::fs::write(&large, vec![7u8; 3 << 20]).unwrap();
        let e = read_bounded(&large, 2 << 20).unwrap_err().to_string();
        assert!(e.contains("3.0 MiB, more than the 2 MiB"), "{e}");
        let e = read_bounded(dir.path(), 1 << 20).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        #[cfg(unix)]
        {
            let e = read_bounded(Path::new("/dev/zero"), 1 << 20)
                .unwrap_err()
                .to_string();
            assert!(e.contains("not a regular file"), "{e}");
        }
    }

    #[test]
    fn text_reads_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small.toml");
        fs::write(&small, "a = 1\n").unwrap();
        assert_eq!(read_text(&small).unwrap(), "a = 1\n");
        let big = dir.path().join("big.toml");
        fs::write(&big, vec![b'#'; MAX_TEXT_BYTES as usize + 1]).unwrap();
        let error = read_text(&big).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert!(error.to_string().contains("larger than 8 MiB"), "{error}");
        #[cfg(unix)]
        {
            // A device that never ends is refused after the limit, not read forever.
            let error = read_text(Path::new("/dev/zero")).unwrap_err();
            assert!(error.to_string().contains("larger than"), "{error}");
        }
        assert_eq!(
            read_text(&dir.path().join("missing")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn a_name_is_a_plain_file_stem() {
        assert_eq!(name_problem("alice-2.b_c"), None);
        assert_eq!(name_problem(""), Some("it is empty"));
        assert_eq!(name_problem("../x"), Some("it contains a path separator"));
        assert_eq!(name_problem(".hidden"), Some("it starts with `.`"));
        assert!(name_problem("a b").is_some());
        assert!(name_problem(&"x".repeat(MAX_NAME + 1)).is_some());
    }

    #[test]
    fn writes_and_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("a.txt");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);
    }
}

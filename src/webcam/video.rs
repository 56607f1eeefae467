//! Video input for offline face tracking: a folder of numbered PNG or JPEG frames, or a Y4M
//! (YUV4MPEG2) file, read one [`Frame`] at a time.
//!
//! Both inputs are what any video tool writes without extra codecs: `ffmpeg -i clip.mp4
//! frames/frame_%04d.png` or `ffmpeg -i clip.mp4 -pix_fmt yuv420p clip.y4m`. A Y4M file is read
//! lazily, one frame at a time, so a long clip never has to fit in memory.
//!
//! Every input is treated as hostile: header values are bounded before anything is allocated
//! from them ([`MAX_DIMENSION`], [`MAX_LINE`]), image decoding runs under [`::image::Limits`], and
//! every failure is a [`VideoError`] that names the file (and the Y4M frame) and says what to do.

use std::cmp::Ordering;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use ::image::{ImageReader, Limits};

use super::Frame;

/// The largest width or height accepted from a Y4M header or an image file, in pixels.
pub use crate::image::MAX_SIDE as MAX_DIMENSION;

/// The longest Y4M stream header or `FRAME` line accepted, in bytes, not counting its `'\n'`.
pub const MAX_LINE: usize = 1024;

/// The most memory one image decode may allocate, in bytes (256 MiB: an 8192 x 8192 RGBA image).
const MAX_DECODE_ALLOC: u64 = 256 * 1024 * 1024;

/// What every Y4M file starts with.
const Y4M_MAGIC: &[u8] = b"YUV4MPEG2 ";

/// Why a video could not be opened or a frame could not be read.
///
/// Every message names the file and says what to do about it. Y4M frame numbers count from 1
/// (the first frame of the file is frame 1).
#[derive(Debug, thiserror::Error)]
pub enum VideoError {
    /// The path could not be opened or read.
    #[error("{}: cannot read it: {source}; check that the path exists and is readable", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The operating system's reason.
        source: io::Error,
    },
    /// The path is neither a folder nor a Y4M file.
    #[error(
        "{}: not a video facewire can read; give a folder of numbered PNG or JPEG frames \
         (frame_0001.png, ...) or a Y4M file (convert with ffmpeg -i {} -pix_fmt yuv420p out.y4m)",
        path.display(),
        path.display()
    )]
    NotVideo {
        /// The file given.
        path: PathBuf,
    },
    /// The folder holds no PNG or JPEG file.
    #[error(
        "{}: no PNG or JPEG files; expected numbered frames such as frame_0001.png",
        path.display()
    )]
    EmptyFolder {
        /// The folder given.
        path: PathBuf,
    },
    /// A frame image could not be decoded (damaged, not really a PNG or JPEG, or over the size
    /// limits).
    #[error("{}: cannot decode the image: {source}; re-export the frame as PNG or JPEG", path.display())]
    Image {
        /// The image file.
        path: PathBuf,
        /// The decoder's reason.
        source: ::image::ImageError,
    },
    /// A frame image decoded to zero pixels.
    #[error("{}: the image has no pixels ({width}x{height}); re-export the frame", path.display())]
    EmptyImage {
        /// The image file.
        path: PathBuf,
        /// The width it decoded to.
        width: u32,
        /// The height it decoded to.
        height: u32,
    },
    /// The Y4M stream header is malformed or out of bounds.
    #[error(
        "{}: bad Y4M header: {reason}; re-export the file (ffmpeg -i {} -pix_fmt yuv420p out.y4m)",
        path.display(),
        path.display()
    )]
    Header {
        /// The Y4M file.
        path: PathBuf,
        /// What is wrong with the header.
        reason: String,
    },
    /// The Y4M file stores more than 8 bits a sample.
    #[error(
        "{}: {bits}-bit Y4M (C{colorspace}) is not supported; convert with ffmpeg -i {} -pix_fmt yuv420p out.y4m",
        path.display(),
        path.display()
    )]
    HighBitDepth {
        /// The Y4M file.
        path: PathBuf,
        /// The colour space as the header states it, without the `C`.
        colorspace: String,
        /// Bits a sample.
        bits: u32,
    },
    /// The Y4M colour space is not one of the supported 8-bit ones.
    #[error(
        "{}: Y4M colour space C{colorspace} is not supported (supported: 420jpeg, 420paldv, \
         420mpeg2, 420, 422, 444, mono); convert with ffmpeg -i {} -pix_fmt yuv420p out.y4m",
        path.display(),
        path.display()
    )]
    UnsupportedColorspace {
        /// The Y4M file.
        path: PathBuf,
        /// The colour space as the header states it, without the `C`.
        colorspace: String,
    },
    /// A Y4M frame does not start with a well-formed `FRAME` line.
    #[error("{} frame {frame}: {reason}: the file is damaged; re-export it", path.display())]
    FrameHeader {
        /// The Y4M file.
        path: PathBuf,
        /// The frame, counting from 1.
        frame: u64,
        /// What is wrong with the line.
        reason: String,
    },
    /// The Y4M file ends inside a frame.
    #[error(
        "{} frame {frame}: the file ends inside the frame (expected {expected} bytes, found \
         {found}): the file is cut short; re-export it",
        path.display()
    )]
    Truncated {
        /// The Y4M file.
        path: PathBuf,
        /// The frame, counting from 1.
        frame: u64,
        /// The bytes of picture data a frame holds.
        expected: usize,
        /// The bytes that were there.
        found: usize,
    },
    /// Reading a Y4M frame failed.
    #[error("{} frame {frame}: cannot read it: {source}; check the file and the disk", path.display())]
    FrameIo {
        /// The Y4M file.
        path: PathBuf,
        /// The frame, counting from 1.
        frame: u64,
        /// The operating system's reason.
        source: io::Error,
    },
}

/// Which kind of input a [`VideoSource`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VideoKind {
    /// A folder of numbered PNG or JPEG frames.
    Folder,
    /// A Y4M (YUV4MPEG2) file.
    Y4m,
}

/// Frames from a folder of numbered images or from a Y4M file, in order.
///
/// After an error, a folder source moves on to the next file (one damaged frame need not end a
/// run), while a Y4M source yields no further frames: its position in the stream is lost.
#[derive(Debug)]
pub struct VideoSource {
    inner: Source,
}

/// The two inputs behind a [`VideoSource`].
#[derive(Debug)]
enum Source {
    Folder(FolderSource),
    Y4m(Y4mSource),
}

/// Whether `path` is a video [`VideoSource::open`] reads (a folder, or a file that starts as a
/// Y4M stream) rather than some other file (a recording).
pub fn is_video(path: &Path) -> bool {
    if path.is_dir() {
        return true;
    }
    let mut magic = [0u8; Y4M_MAGIC.len()];
    File::open(path)
        .and_then(|mut f| read_full(&mut f, &mut magic))
        .is_ok_and(|n| &magic[..n] == Y4M_MAGIC)
}

impl VideoSource {
    /// Opens a folder of numbered frames or a .y4m file (decided by: is a directory → folder;
    /// else the file starts with "YUV4MPEG2 " → Y4M; else an error that says which inputs are
    /// accepted).
    ///
    /// A folder is listed (and its frames ordered) here; a Y4M file has its stream header read
    /// and checked here, its frames later, one [`VideoSource::next_frame`] at a time.
    pub fn open(path: &Path) -> Result<VideoSource, VideoError> {
        let io_error = |source| VideoError::Io {
            path: path.to_path_buf(),
            source,
        };
        let metadata = std::fs::metadata(path).map_err(io_error)?;
        let inner = if metadata.is_dir() {
            Source::Folder(FolderSource::open(path)?)
        } else {
            let mut reader = BufReader::new(File::open(path).map_err(io_error)?);
            let mut magic = [0u8; Y4M_MAGIC.len()];
            let found = read_full(&mut reader, &mut magic).map_err(io_error)?;
            if &magic[..found] != Y4M_MAGIC {
                return Err(VideoError::NotVideo {
                    path: path.to_path_buf(),
                });
            }
            Source::Y4m(Y4mSource::open(path, reader)?)
        };
        Ok(VideoSource { inner })
    }

    /// Which kind of input this is.
    pub fn kind(&self) -> VideoKind {
        match self.inner {
            Source::Folder(_) => VideoKind::Folder,
            Source::Y4m(_) => VideoKind::Y4m,
        }
    }

    /// The frame rate the file states (Y4M's F), if any.
    ///
    /// A folder of images states none, nor does a Y4M file whose `F` is missing or `0:0`.
    pub fn stated_fps(&self) -> Option<f64> {
        match &self.inner {
            Source::Folder(_) => None,
            Source::Y4m(y4m) => y4m.header.fps,
        }
    }

    /// Number of frames when known up front (the folder's file count), None for Y4M.
    pub fn len_hint(&self) -> Option<usize> {
        match &self.inner {
            Source::Folder(folder) => Some(folder.files.len()),
            Source::Y4m(_) => None,
        }
    }

    /// The next frame, Ok(None) at the end.
    ///
    /// Frames may differ in size (a folder's images need not match); each [`Frame`] carries its
    /// own.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, VideoError> {
        match &mut self.inner {
            Source::Folder(folder) => folder.next_frame(),
            Source::Y4m(y4m) => y4m.next_frame(),
        }
    }
}

/// The timestamp of frame `index` at `fps` frames a second, in seconds (index / fps).
///
/// Frame 0 is at 0 s. Callers pass a positive, finite `fps`.
pub fn frame_time(index: u64, fps: f64) -> f64 {
    index as f64 / fps
}

/// Reads into `buf` until it is full or the input ends; returns the bytes read.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Reads one line of at most [`MAX_LINE`] bytes into `line` (cleared first, `'\n'` removed).
///
/// Never reads more than `MAX_LINE + 1 - already_read` bytes, so a line without an end cannot
/// grow the buffer without bound. `already_read` counts bytes of the line the caller consumed
/// before (the Y4M magic).
fn read_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    already_read: usize,
) -> io::Result<Line> {
    line.clear();
    let limit = (MAX_LINE + 1).saturating_sub(already_read) as u64;
    reader.take(limit).read_until(b'\n', line)?;
    if line.last() == Some(&b'\n') {
        line.pop();
        Ok(Line::Complete)
    } else if line.len() as u64 >= limit {
        Ok(Line::TooLong)
    } else if line.is_empty() {
        Ok(Line::End)
    } else {
        Ok(Line::Unterminated)
    }
}

/// How [`read_line`] found a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// A whole line, ending in `'\n'`.
    Complete,
    /// The input ended before any byte of the line.
    End,
    /// The input ended inside the line.
    Unterminated,
    /// The line is longer than [`MAX_LINE`].
    TooLong,
}

/// The limits every frame image is decoded under.
fn decode_limits() -> Limits {
    crate::image::decode_limits(MAX_DECODE_ALLOC)
}

/// Decodes one PNG or JPEG file to an RGB frame, whatever its colour type (grey, alpha, 16-bit).
///
/// The format is guessed from the file's first bytes, then its extension, so a JPEG saved as
/// `.png` still decodes. Alpha is dropped, not blended: frames from a video are opaque.
fn decode_image(path: &Path) -> Result<Frame, VideoError> {
    let image_error = |source| VideoError::Image {
        path: path.to_path_buf(),
        source,
    };
    let io_error = |source| VideoError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = ImageReader::open(path)
        .map_err(io_error)?
        .with_guessed_format()
        .map_err(io_error)?;
    reader.limits(decode_limits());
    let rgb = reader.decode().map_err(image_error)?.into_rgb8();
    let (width, height) = rgb.dimensions();
    if width == 0 || height == 0 {
        return Err(VideoError::EmptyImage {
            path: path.to_path_buf(),
            width,
            height,
        });
    }
    Ok(Frame {
        width,
        height,
        rgb: rgb.into_raw(),
    })
}

/// A folder's image files, ordered, and how far through them we are.
#[derive(Debug)]
struct FolderSource {
    /// The images in frame order.
    files: Vec<PathBuf>,
    /// The index of the next file to decode.
    next: usize,
}

/// One image file of a folder, with what it is ordered by.
#[derive(Debug)]
struct FrameFile {
    /// The last run of digits in the file stem, leading zeros removed (`"0007"` → `"7"`, `"000"`
    /// → `""`), or None when the stem has no digit. Compared by length then text, this orders as
    /// the number would, however many digits it has.
    number: Option<String>,
    /// The file name, the tie-breaker.
    name: OsString,
    /// The whole path.
    path: PathBuf,
}

impl FolderSource {
    /// Lists the PNG and JPEG files of `folder` in frame order.
    fn open(folder: &Path) -> Result<FolderSource, VideoError> {
        let io_error = |source| VideoError::Io {
            path: folder.to_path_buf(),
            source,
        };
        let mut frames = Vec::new();
        for entry in std::fs::read_dir(folder).map_err(io_error)? {
            let path = entry.map_err(io_error)?.path();
            if is_image_name(&path) && path.is_file() {
                frames.push(FrameFile::new(path));
            }
        }
        if frames.is_empty() {
            return Err(VideoError::EmptyFolder {
                path: folder.to_path_buf(),
            });
        }
        frames.sort_by(frame_order);
        Ok(FolderSource {
            files: frames.into_iter().map(|f| f.path).collect(),
            next: 0,
        })
    }

    /// Decodes the next image; the position moves on even when it fails.
    fn next_frame(&mut self) -> Result<Option<Frame>, VideoError> {
        let Some(path) = self.files.get(self.next) else {
            return Ok(None);
        };
        self.next += 1;
        decode_image(path).map(Some)
    }
}

impl FrameFile {
    /// The ordering keys of the file at `path`.
    fn new(path: PathBuf) -> FrameFile {
        let name = path.file_name().map(OsString::from).unwrap_or_default();
        let number = path.file_stem().and_then(|stem| {
            last_digit_run(&stem.to_string_lossy())
                .map(|digits| digits.trim_start_matches('0').to_owned())
        });
        FrameFile { number, name, path }
    }
}

/// Whether `path` has a png, jpg or jpeg extension, in any case.
fn is_image_name(path: &Path) -> bool {
    path.extension()
        .and_then(|ext| ext.to_str())
        .is_some_and(|ext| {
            ["png", "jpg", "jpeg"]
                .iter()
                .any(|known| ext.eq_ignore_ascii_case(known))
        })
}

/// The last run of ASCII digits in `stem` (`"take2_frame_0010"` → `"0010"`), if any.
fn last_digit_run(stem: &str) -> Option<&str> {
    let end = stem.rfind(|c: char| c.is_ascii_digit())? + 1;
    let start = stem[..end]
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| {
            i + stem[i..].chars().next().map_or(1, char::len_utf8)
        });
    Some(&stem[start..end])
}

/// Frame order: by number; files with a number before those without; then by name.
fn frame_order(a: &FrameFile, b: &FrameFile) -> Ordering {
    let by_number = match (&a.number, &b.number) {
        (Some(x), Some(y)) => x.len().cmp(&y.len()).then_with(|| x.cmp(y)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    };
    by_number.then_with(|| a.name.cmp(&b.name))
}

/// How a Y4M colour space lays out its chroma planes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chroma {
    /// Cb and Cr at half width and half height (4:2:0, every siting).
    Half,
    /// Cb and Cr at half width, full height (4:2:2).
    HalfWidth,
    /// Cb and Cr at full size (4:4:4).
    Full,
    /// No chroma planes: grey (mono).
    Mono,
}

impl Chroma {
    /// The chroma layout of an 8-bit colour space named as in the header, without the `C`.
    fn parse(path: &Path, colorspace: &str) -> Result<Chroma, VideoError> {
        match colorspace {
            "420jpeg" | "420paldv" | "420mpeg2" | "420" => Ok(Chroma::Half),
            "422" => Ok(Chroma::HalfWidth),
            "444" => Ok(Chroma::Full),
            "mono" => Ok(Chroma::Mono),
            _ => Err(match high_bit_depth(colorspace) {
                Some(bits) => VideoError::HighBitDepth {
                    path: path.to_path_buf(),
                    colorspace: colorspace.to_owned(),
                    bits,
                },
                None => VideoError::UnsupportedColorspace {
                    path: path.to_path_buf(),
                    colorspace: colorspace.to_owned(),
                },
            }),
        }
    }

    /// The right shifts from luma to chroma coordinates, (x, y); None for mono.
    fn shifts(self) -> Option<(u32, u32)> {
        match self {
            Chroma::Half => Some((1, 1)),
            Chroma::HalfWidth => Some((1, 0)),
            Chroma::Full => Some((0, 0)),
            Chroma::Mono => None,
        }
    }
}

/// The bits a sample of a high-bit-depth colour space (`420p10`, `444p12`, `mono16`), if it is one.
fn high_bit_depth(colorspace: &str) -> Option<u32> {
    let digits = ["420p", "422p", "444p", "mono"]
        .iter()
        .find_map(|prefix| colorspace.strip_prefix(prefix))?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|&bits| bits > 8)
}

/// The facts of a Y4M stream header this reader uses.
#[derive(Debug, Clone, PartialEq)]
struct Y4mHeader {
    width: u32,
    height: u32,
    fps: Option<f64>,
    chroma: Chroma,
}

impl Y4mHeader {
    /// Parses the header's tokens (the line after `"YUV4MPEG2 "`, without its `'\n'`).
    ///
    /// Tokens other than W, H, F and C (interlacing, aspect, extensions) are ignored.
    fn parse(path: &Path, tokens: &[u8]) -> Result<Y4mHeader, VideoError> {
        let bad = |reason: String| VideoError::Header {
            path: path.to_path_buf(),
            reason,
        };
        let text = std::str::from_utf8(tokens)
            .map_err(|_| bad("the header line is not text".to_owned()))?;
        let mut width = None;
        let mut height = None;
        let mut fps = None;
        let mut colorspace = "420jpeg";
        for token in text.split(' ').filter(|t| !t.is_empty()) {
            let mut chars = token.chars();
            let tag = chars.next().unwrap_or(' ');
            let value = chars.as_str();
            match tag {
                'W' => width = Some(parse_dimension(value, "W", "width").map_err(bad)?),
                'H' => height = Some(parse_dimension(value, "H", "height").map_err(bad)?),
                'F' => fps = parse_rate(value).map_err(bad)?,
                'C' => colorspace = value,
                _ => {}
            }
        }
        let width = width.ok_or_else(|| bad("no width (W) in the header".to_owned()))?;
        let height = height.ok_or_else(|| bad("no height (H) in the header".to_owned()))?;
        let chroma = Chroma::parse(path, colorspace)?;
        Ok(Y4mHeader {
            width,
            height,
            fps,
            chroma,
        })
    }

    /// The chroma planes' width and height, None for mono.
    fn chroma_size(&self) -> Option<(usize, usize)> {
        let (sx, sy) = self.chroma.shifts()?;
        let scaled = |n: u32, shift: u32| n.div_ceil(1 << shift) as usize;
        Some((scaled(self.width, sx), scaled(self.height, sy)))
    }

    /// The bytes of picture data in one frame: the luma plane and both chroma planes.
    fn frame_bytes(&self) -> usize {
        let luma = self.width as usize * self.height as usize;
        luma + self.chroma_size().map_or(0, |(cw, ch)| 2 * cw * ch)
    }
}

/// A W or H value: a number from 1 to [`MAX_DIMENSION`].
fn parse_dimension(value: &str, tag: &str, what: &str) -> Result<u32, String> {
    match value.parse::<u32>() {
        Ok(n) if (1..=MAX_DIMENSION).contains(&n) => Ok(n),
        Ok(n) => Err(format!(
            "{tag}{n}: the {what} must be from 1 to {MAX_DIMENSION} pixels"
        )),
        Err(_) => Err(format!("{tag}{value}: the {what} is not a number")),
    }
}

/// An F value, `num:den`; None when either is 0 (an unknown rate).
fn parse_rate(value: &str) -> Result<Option<f64>, String> {
    let bad = || format!("F{value}: the frame rate must be two numbers such as F30000:1001");
    let (num, den) = value.split_once(':').ok_or_else(bad)?;
    let num: u32 = num.parse().map_err(|_| bad())?;
    let den: u32 = den.parse().map_err(|_| bad())?;
    Ok((num > 0 && den > 0).then(|| f64::from(num) / f64::from(den)))
}

/// A Y4M file being read frame by frame.
#[derive(Debug)]
struct Y4mSource {
    /// The file, for messages.
    path: PathBuf,
    /// The stream, positioned at the next `FRAME` line.
    reader: BufReader<File>,
    /// The stream header.
    header: Y4mHeader,
    /// Frames read so far.
    frames_read: u64,
    /// Set at the end of the stream or after an error: no more frames.
    finished: bool,
    /// The last `FRAME` line, kept to reuse its allocation.
    line: Vec<u8>,
    /// The last frame's planes, kept to reuse their allocation.
    planes: Vec<u8>,
}

impl Y4mSource {
    /// Reads the stream header of `path`; `reader` is just past the `"YUV4MPEG2 "` magic.
    fn open(path: &Path, mut reader: BufReader<File>) -> Result<Y4mSource, VideoError> {
        let bad = |reason: &str| VideoError::Header {
            path: path.to_path_buf(),
            reason: reason.to_owned(),
        };
        let mut line = Vec::new();
        let ended = read_line(&mut reader, &mut line, Y4M_MAGIC.len()).map_err(|source| {
            VideoError::Io {
                path: path.to_path_buf(),
                source,
            }
        })?;
        match ended {
            Line::Complete => {}
            Line::TooLong => {
                return Err(bad(&format!(
                    "the header line is longer than {MAX_LINE} bytes"
                )))
            }
            Line::End | Line::Unterminated => {
                return Err(bad("the file ends inside the header line"))
            }
        }
        let header = Y4mHeader::parse(path, &line)?;
        Ok(Y4mSource {
            path: path.to_path_buf(),
            reader,
            header,
            frames_read: 0,
            finished: false,
            line,
            planes: Vec::new(),
        })
    }

    /// Reads and converts the next frame; after an error, or at the end, yields no more.
    fn next_frame(&mut self) -> Result<Option<Frame>, VideoError> {
        if self.finished {
            return Ok(None);
        }
        let result = self.read_frame();
        if !matches!(result, Ok(Some(_))) {
            self.finished = true;
        }
        result
    }

    /// Reads one `FRAME` line and the planes after it.
    fn read_frame(&mut self) -> Result<Option<Frame>, VideoError> {
        let frame = self.frames_read + 1;
        let io_error = |source| VideoError::FrameIo {
            path: self.path.clone(),
            frame,
            source,
        };
        let frame_error = |reason: String| VideoError::FrameHeader {
            path: self.path.clone(),
            frame,
            reason,
        };
        let ended = read_line(&mut self.reader, &mut self.line, 0).map_err(io_error)?;
        match ended {
            Line::End => return Ok(None),
            Line::Complete => {}
            Line::TooLong => {
                return Err(frame_error(format!(
                    "the FRAME line is longer than {MAX_LINE} bytes"
                )))
            }
            Line::Unterminated => {
                return Err(frame_error(
                    "the file ends inside the FRAME line".to_owned(),
                ))
            }
        }
        // `FRAME` alone or followed by parameters (which change nothing this reader uses).
        let is_frame = self
            .line
            .strip_prefix(b"FRAME")
            .is_some_and(|rest| rest.is_empty() || rest.first() == Some(&b' '));
        if !is_frame {
            let start = &self.line[..self.line.len().min(16)];
            return Err(frame_error(format!(
                "expected a FRAME line, found {:?}",
                String::from_utf8_lossy(start)
            )));
        }

        // The buffer grows only as data arrives, so a header that promises a large frame in a
        // small file costs no more memory than the file holds.
        let expected = self.header.frame_bytes();
        self.planes.clear();
        Read::by_ref(&mut self.reader)
            .take(expected as u64)
            .read_to_end(&mut self.planes)
            .map_err(io_error)?;
        if self.planes.len() < expected {
            return Err(VideoError::Truncated {
                path: self.path.clone(),
                frame,
                expected,
                found: self.planes.len(),
            });
        }
        self.frames_read += 1;
        Ok(Some(planes_to_frame(&self.header, &self.planes)))
    }
}

/// Converts one frame's planes (exactly [`Y4mHeader::frame_bytes`] long) to RGB, upsampling
/// chroma by taking the nearest sample.
fn planes_to_frame(header: &Y4mHeader, planes: &[u8]) -> Frame {
    let width = header.width as usize;
    let height = header.height as usize;
    let (luma, chroma) = planes.split_at(width * height);
    let mut rgb = vec![0u8; width * height * 3];
    let rows = rgb
        .chunks_exact_mut(width * 3)
        .zip(luma.chunks_exact(width));
    match header.chroma_size().zip(header.chroma.shifts()) {
        Some(((cw, ch), (sx, sy))) => {
            let (cb, cr) = chroma.split_at(cw * ch);
            for (y, (out, luma_row)) in rows.enumerate() {
                let row = (y >> sy) * cw;
                let (cb_row, cr_row) = (&cb[row..row + cw], &cr[row..row + cw]);
                for (x, (px, &l)) in out.chunks_exact_mut(3).zip(luma_row).enumerate() {
                    px.copy_from_slice(&ycbcr_to_rgb(l, cb_row[x >> sx], cr_row[x >> sx]));
                }
            }
        }
        None => {
            for (out, luma_row) in rows {
                for (px, &l) in out.chunks_exact_mut(3).zip(luma_row) {
                    px.copy_from_slice(&ycbcr_to_rgb(l, 128, 128));
                }
            }
        }
    }
    Frame {
        width: header.width,
        height: header.height,
        rgb,
    }
}

/// One BT.601 limited-range sample (Y 16..235, Cb and Cr 16..240) as RGB, rounded and clamped.
///
/// R = 1.164(Y-16) + 1.596(Cr-128), G = 1.164(Y-16) - 0.392(Cb-128) - 0.813(Cr-128),
/// B = 1.164(Y-16) + 2.017(Cb-128), in 16.16 fixed point.
fn ycbcr_to_rgb(y: u8, cb: u8, cr: u8) -> [u8; 3] {
    /// A coefficient in 16.16 fixed point.
    const fn fixed(c: f64) -> i32 {
        (c * 65536.0 + 0.5) as i32
    }
    const Y: i32 = fixed(1.164);
    const R_CR: i32 = fixed(1.596);
    const G_CB: i32 = fixed(0.392);
    const G_CR: i32 = fixed(0.813);
    const B_CB: i32 = fixed(2.017);
    const HALF: i32 = 1 << 15;
    let l = Y * (i32::from(y) - 16);
    let d = i32::from(cb) - 128;
    let e = i32::from(cr) - 128;
    let channel = |v: i32| ((v + HALF) >> 16).clamp(0, 255) as u8;
    [
        channel(l + R_CR * e),
        channel(l - G_CB * d - G_CR * e),
        channel(l + B_CB * d),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::image::{GrayImage, ImageBuffer, Luma, Rgb, RgbImage, Rgba, RgbaImage};
    use std::fs;

    /// A Y4M stream header line for `params` (everything after the magic, without `'\n'`).
    fn y4m_header(params: &str) -> Vec<u8> {
        format!("YUV4MPEG2 {params}\n").into_bytes()
    }

    /// One frame of planes filled with constant Y, Cb and Cr values.
    fn y4m_frame(frame_line: &str, luma: usize, chroma: usize, yuv: [u8; 3]) -> Vec<u8> {
        let mut bytes = format!("{frame_line}\n").into_bytes();
        bytes.extend(std::iter::repeat_n(yuv[0], luma));
        bytes.extend(std::iter::repeat_n(yuv[1], chroma));
        bytes.extend(std::iter::repeat_n(yuv[2], chroma));
        bytes
    }

    /// Writes `bytes` as `name` in `dir` and returns its path.
    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let path = dir.join(name);
        fs::write(&path, bytes).unwrap();
        path
    }

    /// Opens `path`, expecting an error, and returns its message.
    fn open_error(path: &Path) -> String {
        VideoSource::open(path).unwrap_err().to_string()
    }

    fn assert_near(got: [u8; 3], want: [u8; 3], tolerance: u8) {
        for (g, w) in got.iter().zip(want) {
            assert!(g.abs_diff(w) <= tolerance, "got {got:?}, want {want:?}");
        }
    }

    #[test]
    fn folder_orders_frames_by_their_last_number() {
        let dir = tempfile::tempdir().unwrap();
        // Each frame is 1 pixel wide; its width tells which file it came from.
        let names = [
            "frame_10.png",
            "frame_2.png",
            "take3_frame_0001.png",
            "cover.png",
            "frame_002.PNG",
        ];
        for (i, name) in names.iter().enumerate() {
            RgbImage::new(i as u32 + 1, 1)
                .save(dir.path().join(name))
                .unwrap();
        }
        fs::write(dir.path().join("notes.txt"), "not a frame").unwrap();
        fs::create_dir(dir.path().join("sub.png")).unwrap();

        let mut video = VideoSource::open(dir.path()).unwrap();
        assert_eq!(video.kind(), VideoKind::Folder);
        assert_eq!(video.len_hint(), Some(5));
        assert_eq!(video.stated_fps(), None);
        let mut widths = Vec::new();
        while let Some(frame) = video.next_frame().unwrap() {
            widths.push(frame.width);
        }
        // 0001, then 2 and 002 (tie, by name: "frame_002.PNG" < "frame_2.png"), 10, cover.
        assert_eq!(widths, [3, 5, 2, 1, 4]);
        assert!(video.next_frame().unwrap().is_none());
    }

    #[test]
    fn last_digit_run_takes_the_final_run() {
        assert_eq!(last_digit_run("take2_frame_0010"), Some("0010"));
        assert_eq!(last_digit_run("12"), Some("12"));
        assert_eq!(last_digit_run("img-003-final"), Some("003"));
        assert_eq!(last_digit_run("é7"), Some("7"));
        assert_eq!(last_digit_run("cover"), None);
    }

    #[test]
    fn very_long_numbers_order_without_overflow() {
        let a = FrameFile::new(PathBuf::from("f_99999999999999999999999.png"));
        let b = FrameFile::new(PathBuf::from("f_100000000000000000000000.png"));
        assert_eq!(frame_order(&a, &b), Ordering::Less);
    }

    #[test]
    fn grey_rgba_and_16_bit_png_become_rgb() {
        let dir = tempfile::tempdir().unwrap();
        GrayImage::from_pixel(3, 2, Luma([77]))
            .save(dir.path().join("1.png"))
            .unwrap();
        RgbaImage::from_pixel(2, 3, Rgba([10, 20, 30, 0]))
            .save(dir.path().join("2.png"))
            .unwrap();
        ImageBuffer::<Luma<u16>, Vec<u16>>::from_pixel(2, 2, Luma([65535]))
            .save(dir.path().join("3.png"))
            .unwrap();

        let mut video = VideoSource::open(dir.path()).unwrap();
        let grey = video.next_frame().unwrap().unwrap();
        assert_eq!(grey, Frame::filled(3, 2, [77, 77, 77]));
        let rgba = video.next_frame().unwrap().unwrap();
        assert_eq!(rgba, Frame::filled(2, 3, [10, 20, 30]));
        let deep = video.next_frame().unwrap().unwrap();
        assert_eq!(deep, Frame::filled(2, 2, [255, 255, 255]));
        assert!(video.next_frame().unwrap().is_none());
    }

    #[test]
    fn jpeg_decodes() {
        let dir = tempfile::tempdir().unwrap();
        RgbImage::from_pixel(8, 8, Rgb([200, 40, 40]))
            .save(dir.path().join("img-001.jpg"))
            .unwrap();
        RgbImage::from_pixel(16, 8, Rgb([40, 40, 200]))
            .save(dir.path().join("img-002.JPEG"))
            .unwrap();

        let mut video = VideoSource::open(dir.path()).unwrap();
        let first = video.next_frame().unwrap().unwrap();
        assert_eq!((first.width, first.height), (8, 8));
        assert_near(first.pixel(4, 4), [200, 40, 40], 8);
        let second = video.next_frame().unwrap().unwrap();
        assert_eq!((second.width, second.height), (16, 8));
        assert_near(second.pixel(3, 5), [40, 40, 200], 8);
    }

    #[test]
    fn unreadable_image_names_the_file_and_moves_on() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "frame_1.png", b"\x89PNG\r\n\x1a\nnot really");
        RgbImage::new(2, 2)
            .save(dir.path().join("frame_2.png"))
            .unwrap();

        let mut video = VideoSource::open(dir.path()).unwrap();
        let message = video.next_frame().unwrap_err().to_string();
        assert!(message.contains("frame_1.png"), "{message}");
        assert!(message.contains("cannot decode"), "{message}");
        assert_eq!(video.next_frame().unwrap().unwrap().width, 2);
    }

    #[test]
    fn oversize_image_is_refused_by_the_limits() {
        let dir = tempfile::tempdir().unwrap();
        GrayImage::new(MAX_DIMENSION + 1, 1)
            .save(dir.path().join("wide.png"))
            .unwrap();
        let mut video = VideoSource::open(dir.path()).unwrap();
        let error = video.next_frame().unwrap_err();
        assert!(matches!(error, VideoError::Image { .. }), "{error}");
        assert!(error.to_string().contains("wide.png"), "{error}");
    }

    #[test]
    fn empty_folder_says_what_it_expects() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("readme.txt"), "hi").unwrap();
        let message = open_error(dir.path());
        assert!(
            message.contains(&dir.path().display().to_string()),
            "{message}"
        );
        assert!(
            message
                .contains("no PNG or JPEG files; expected numbered frames such as frame_0001.png"),
            "{message}"
        );
    }

    #[test]
    fn missing_path_is_an_io_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let message = open_error(&dir.path().join("nope.y4m"));
        assert!(message.contains("nope.y4m"), "{message}");
    }

    #[test]
    fn y4m_420jpeg_round_trips_pure_red() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = y4m_header("W4 H2 F25:1 Ip A1:1 C420jpeg");
        bytes.extend(y4m_frame("FRAME", 8, 2, [81, 90, 240]));
        bytes.extend(y4m_frame("FRAME", 8, 2, [235, 128, 128]));
        let path = write(dir.path(), "clip.y4m", &bytes);

        let mut video = VideoSource::open(&path).unwrap();
        assert_eq!(video.kind(), VideoKind::Y4m);
        assert_eq!(video.len_hint(), None);
        assert_eq!(video.stated_fps(), Some(25.0));
        let red = video.next_frame().unwrap().unwrap();
        assert_eq!((red.width, red.height, red.rgb.len()), (4, 2, 24));
        for y in 0..2 {
            for x in 0..4 {
                assert_near(red.pixel(x, y), [255, 0, 0], 3);
            }
        }
        let white = video.next_frame().unwrap().unwrap();
        assert_eq!(white, Frame::filled(4, 2, [255, 255, 255]));
        assert!(video.next_frame().unwrap().is_none());
        assert!(video.next_frame().unwrap().is_none());
    }

    #[test]
    fn y4m_default_colour_space_is_420() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = y4m_header("W2 H2");
        bytes.extend(y4m_frame("FRAME", 4, 1, [16, 128, 128]));
        let path = write(dir.path(), "clip.y4m", &bytes);
        let mut video = VideoSource::open(&path).unwrap();
        assert_eq!(video.stated_fps(), None);
        assert_eq!(
            video.next_frame().unwrap().unwrap(),
            Frame::filled(2, 2, [0, 0, 0])
        );
        assert!(video.next_frame().unwrap().is_none());
    }

    #[test]
    fn y4m_444_uses_every_chroma_sample() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = y4m_header("W2 H1 C444");
        bytes.extend(b"FRAME\n");
        bytes.extend([81, 145]); // Y: red, green
        bytes.extend([90, 54]); // Cb
        bytes.extend([240, 34]); // Cr
        let path = write(dir.path(), "clip.y4m", &bytes);
        let frame = VideoSource::open(&path)
            .unwrap()
            .next_frame()
            .unwrap()
            .unwrap();
        assert_near(frame.pixel(0, 0), [255, 0, 0], 3);
        assert_near(frame.pixel(1, 0), [0, 255, 0], 3);
    }

    #[test]
    fn y4m_422_shares_chroma_across_pairs_of_columns() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = y4m_header("W3 H2 C422");
        bytes.extend(b"FRAME\n");
        bytes.extend([81, 81, 41, 81, 81, 41]); // Y
        bytes.extend([90, 240, 90, 240]); // Cb: 2 x 2
        bytes.extend([240, 110, 240, 110]); // Cr
        let path = write(dir.path(), "clip.y4m", &bytes);
        let frame = VideoSource::open(&path)
            .unwrap()
            .next_frame()
            .unwrap()
            .unwrap();
        for y in 0..2 {
            assert_near(frame.pixel(0, y), [255, 0, 0], 3);
            assert_near(frame.pixel(1, y), [255, 0, 0], 3);
            assert_near(frame.pixel(2, y), [0, 0, 255], 3);
        }
    }

    #[test]
    fn y4m_mono_is_grey() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = y4m_header("W3 H1 Cmono");
        bytes.extend(b"FRAME\n");
        bytes.extend([16, 126, 235]);
        let path = write(dir.path(), "clip.y4m", &bytes);
        let mut video = VideoSource::open(&path).unwrap();
        let frame = video.next_frame().unwrap().unwrap();
        assert_eq!(frame.pixel(0, 0), [0, 0, 0]);
        assert_eq!(frame.pixel(1, 0), [128, 128, 128]);
        assert_eq!(frame.pixel(2, 0), [255, 255, 255]);
        assert!(video.next_frame().unwrap().is_none());
    }

    #[test]
    fn y4m_odd_size_rounds_420_chroma_up() {
        let dir = tempfile::tempdir().unwrap();
        // 3 x 3 luma: chroma is 2 x 2. The right column and bottom row use the last samples.
        let mut bytes = y4m_header("W3 H3 C420mpeg2");
        bytes.extend(b"FRAME\n");
        bytes.extend([81; 9]);
        bytes.extend([90, 90, 90, 128]); // Cb
        bytes.extend([240, 240, 240, 128]); // Cr
                                            // A second frame proves exactly 9 + 4 + 4 bytes were taken for the first.
        bytes.extend(y4m_frame("FRAME", 9, 4, [235, 128, 128]));
        let path = write(dir.path(), "odd.y4m", &bytes);

        let header = Y4mHeader::parse(&path, b"W3 H3 C420").unwrap();
        assert_eq!(header.chroma_size(), Some((2, 2)));
        assert_eq!(header.frame_bytes(), 17);

        let mut video = VideoSource::open(&path).unwrap();
        let frame = video.next_frame().unwrap().unwrap();
        assert_eq!((frame.width, frame.height), (3, 3));
        assert_near(frame.pixel(0, 0), [255, 0, 0], 3);
        assert_near(frame.pixel(2, 0), [255, 0, 0], 3);
        assert_near(frame.pixel(0, 2), [255, 0, 0], 3);
        // Y 81 with neutral chroma: grey 76.
        assert_near(frame.pixel(2, 2), [76, 76, 76], 1);
        let white = video.next_frame().unwrap().unwrap();
        assert_eq!(white, Frame::filled(3, 3, [255, 255, 255]));
        assert!(video.next_frame().unwrap().is_none());
    }

    #[test]
    fn y4m_ntsc_rate_and_frame_params() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes =
            y4m_header("W2 H2 F30000:1001 Im A0:0 C420paldv XYSCSS=420PALDV XCOLORRANGE=LIMITED");
        bytes.extend(y4m_frame("FRAME Ip XFOO=bar", 4, 1, [16, 128, 128]));
        bytes.extend(y4m_frame("FRAME", 4, 1, [235, 128, 128]));
        let path = write(dir.path(), "ntsc.y4m", &bytes);
        let mut video = VideoSource::open(&path).unwrap();
        let fps = video.stated_fps().unwrap();
        assert!((fps - 29.97).abs() < 0.001, "{fps}");
        assert_eq!(video.next_frame().unwrap().unwrap().pixel(0, 0), [0, 0, 0]);
        assert_eq!(
            video.next_frame().unwrap().unwrap().pixel(1, 1),
            [255, 255, 255]
        );
        assert!(video.next_frame().unwrap().is_none());
    }

    #[test]
    fn y4m_unknown_rate_states_none() {
        assert_eq!(parse_rate("0:0"), Ok(None));
        assert!(parse_rate("30").is_err());
        assert!(parse_rate("a:b").is_err());
    }

    #[test]
    fn y4m_truncated_frame_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = y4m_header("W640 H480 F30:1");
        bytes.extend(y4m_frame("FRAME", 640 * 480, 320 * 240, [16, 128, 128]));
        bytes.extend(b"FRAME\n");
        bytes.extend([16; 1000]);
        let path = write(dir.path(), "clip.y4m", &bytes);
        let mut video = VideoSource::open(&path).unwrap();
        assert!(video.next_frame().unwrap().is_some());
        let message = video.next_frame().unwrap_err().to_string();
        let expected = format!(
            "{} frame 2: the file ends inside the frame (expected 460800 bytes, found 1000): \
             the file is cut short; re-export it",
            path.display()
        );
        assert_eq!(message, expected);
        assert!(video.next_frame().unwrap().is_none());
    }

    #[test]
    fn y4m_cut_inside_frame_line_or_header_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = y4m_header("W2 H2");
        bytes.extend(b"FRA");
        let path = write(dir.path(), "cut.y4m", &bytes);
        let message = VideoSource::open(&path)
            .unwrap()
            .next_frame()
            .unwrap_err()
            .to_string();
        assert!(message.contains("cut.y4m frame 1"), "{message}");

        let path = write(dir.path(), "cuthead.y4m", b"YUV4MPEG2 W2 H2");
        let message = open_error(&path);
        assert!(message.contains("ends inside the header"), "{message}");
    }

    #[test]
    fn y4m_bad_frame_line_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = y4m_header("W2 H2");
        bytes.extend(y4m_frame("FRAME", 4, 1, [16, 128, 128]));
        bytes.extend(b"FRAMES\n");
        let path = write(dir.path(), "clip.y4m", &bytes);
        let mut video = VideoSource::open(&path).unwrap();
        assert!(video.next_frame().unwrap().is_some());
        let message = video.next_frame().unwrap_err().to_string();
        assert!(
            message.contains("frame 2: expected a FRAME line"),
            "{message}"
        );

        let mut bytes = y4m_header("W2 H2");
        bytes.extend(b"FRAME ");
        bytes.extend([b'x'; 2000]);
        let path = write(dir.path(), "long.y4m", &bytes);
        let message = VideoSource::open(&path)
            .unwrap()
            .next_frame()
            .unwrap_err()
            .to_string();
        assert!(message.contains("longer than 1024 bytes"), "{message}");
    }

    #[test]
    fn y4m_high_bit_depth_is_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "clip.y4m", &y4m_header("W2 H2 C420p10"));
        let message = open_error(&path);
        let shown = path.display();
        assert_eq!(
            message,
            format!(
                "{shown}: 10-bit Y4M (C420p10) is not supported; convert with ffmpeg -i {shown} \
                 -pix_fmt yuv420p out.y4m"
            )
        );
        let path = write(dir.path(), "deep.y4m", &y4m_header("W2 H2 Cmono16"));
        assert!(open_error(&path).contains("16-bit Y4M (Cmono16)"));
    }

    #[test]
    fn y4m_unknown_colour_space_is_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "clip.y4m", &y4m_header("W2 H2 C411"));
        let message = open_error(&path);
        assert!(message.contains("C411 is not supported"), "{message}");
    }

    #[test]
    fn y4m_bad_sizes_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        for (params, wanted) in [
            ("W0 H2", "W0: the width must be from 1 to 8192"),
            ("W2 H8193", "H8193: the height must be from 1 to 8192"),
            ("W99999999999 H2", "the width is not a number"),
            ("H2", "no width"),
            ("W2", "no height"),
        ] {
            let path = write(dir.path(), "clip.y4m", &y4m_header(params));
            let message = open_error(&path);
            assert!(message.contains(wanted), "{params}: {message}");
        }
    }

    #[test]
    fn y4m_oversize_header_is_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let long = format!("W2 H2 X{}", "a".repeat(2000));
        let path = write(dir.path(), "clip.y4m", &y4m_header(&long));
        let message = open_error(&path);
        assert!(message.contains("longer than 1024 bytes"), "{message}");

        // Exactly 1024 bytes before the newline is still accepted.
        let fill = 1024 - Y4M_MAGIC.len() - "W2 H2 X".len();
        let params = format!("W2 H2 X{}", "a".repeat(fill));
        let mut bytes = y4m_header(&params);
        assert_eq!(bytes.len(), 1025);
        bytes.extend(y4m_frame("FRAME", 4, 1, [16, 128, 128]));
        let path = write(dir.path(), "edge.y4m", &bytes);
        assert!(VideoSource::open(&path)
            .unwrap()
            .next_frame()
            .unwrap()
            .is_some());
    }

    #[test]
    fn garbage_file_is_rejected() {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in [
            ("clip.mp4", &b"\0\0\0\x20ftypisom garbage garbage"[..]),
            ("empty.y4m", b""),
            ("short.y4m", b"YUV4"),
            ("frame.png", b"\x89PNG\r\n\x1a\n"),
        ] {
            let path = write(dir.path(), name, bytes);
            let message = open_error(&path);
            assert!(message.contains(name), "{message}");
            assert!(
                message.contains("folder of numbered PNG or JPEG frames"),
                "{message}"
            );
            assert!(message.contains("Y4M"), "{message}");
        }
    }

    #[test]
    fn ycbcr_conversion_matches_bt601() {
        assert_eq!(ycbcr_to_rgb(16, 128, 128), [0, 0, 0]);
        assert_eq!(ycbcr_to_rgb(235, 128, 128), [255, 255, 255]);
        assert_near(ycbcr_to_rgb(81, 90, 240), [255, 0, 0], 1);
        assert_near(ycbcr_to_rgb(145, 54, 34), [0, 255, 0], 1);
        assert_near(ycbcr_to_rgb(41, 240, 110), [0, 0, 255], 1);
        // Out-of-range input clamps instead of wrapping.
        assert_eq!(ycbcr_to_rgb(255, 255, 255)[0], 255);
        assert_eq!(ycbcr_to_rgb(0, 0, 0)[0], 0);
    }

    #[test]
    fn frame_time_divides_by_the_rate() {
        assert_eq!(frame_time(0, 30.0), 0.0);
        assert_eq!(frame_time(30, 30.0), 1.0);
        assert_eq!(frame_time(45, 30.0), 1.5);
        assert!((frame_time(30000, 30000.0 / 1001.0) - 1001.0).abs() < 1e-9);
    }
}

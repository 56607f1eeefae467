//! Recording and replay of raw input (our `.fwrec` format, Live Link Face CSV exports).
//!
//! - [`format`](mod@format): the versioned `.fwrec` file format ([`Writer`], [`Reader`]); the layout is
//!   documented byte by byte in `docs/recording-format.md`.
//! - [`spawn_recorder`] (capture.rs): the recorder, which taps the ingest thread's listeners and
//!   saves every datagram they receive, with its receive time and sender. It gives the ingest
//!   thread's own [`IngestHandle`](crate::ingest::IngestHandle) with the [`Recorder`] (the
//!   recording's counters and file) attached.
//! - [`Recording`]: a whole recording in memory, either `.fwrec` datagrams or Live Link Face CSV
//!   rows ([`llf_csv`]).
//! - [`replay_to`] re-sends a recording over UDP with its original timing; [`spawn_replay`] feeds
//!   it into the pipeline (through the same [`Decoder`] the network path uses) on the
//!   `facewire-replay` thread; [`frames`] decodes it offline, without timing.

pub mod format;
pub mod llf_csv;

mod capture;
mod replay;

use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use crate::arkit::FaceFrame;
use crate::ingest::{Decoder, IngestError};

pub use capture::{spawn_recorder, RecordStats, Recorder, RecorderConfig};
pub use format::{FormatError, Header, Reader, Record, Writer};
pub use llf_csv::{LlfCsvError, LlfRow};
pub use replay::{
    replay_to, spawn_replay, ReplayHandle, ReplayOptions, ReplayStats, MAX_SPEED, MIN_SPEED,
};

/// The sender address given to frames replayed from a source that has none (CSV rows):
/// `0.0.0.0:0`, "no network sender".
pub const NO_SENDER: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0);

/// The kinds of recording facewire reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// facewire's own raw datagram recording (`.fwrec`), written by `facewire record`.
    Fwrec,
    /// A Live Link Face CSV export (`MySlate_<n>_<device>.csv`), columns matched by header name.
    LlfCsv,
}

impl Format {
    /// The name used on the command line: `fwrec` or `llf-csv`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Fwrec => "fwrec",
            Format::LlfCsv => "llf-csv",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Format, String> {
        match s.to_ascii_lowercase().as_str() {
            "fwrec" => Ok(Format::Fwrec),
            "llf-csv" | "llf_csv" | "csv" => Ok(Format::LlfCsv),
            _ => Err(format!(
                "unknown recording format {s:?} (expected fwrec or llf-csv)"
            )),
        }
    }
}

/// Why recording or replaying failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// A recording file could not be read.
    #[error("cannot read {}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// A `.fwrec` file is not a valid recording.
    #[error("{} is not a readable facewire recording", path.display())]
    Fwrec {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: FormatError,
    },
    /// A Live Link Face CSV file could not be parsed.
    #[error("{} is not a readable Live Link Face CSV export", path.display())]
    LlfCsv {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: LlfCsvError,
    },
    /// A file is neither a `.fwrec` recording nor a Live Link Face CSV export.
    #[error(
        "{} is neither a facewire recording nor a Live Link Face CSV export (name the format explicitly?)",
        path.display()
    )]
    UnknownFormat {
        /// The file.
        path: PathBuf,
    },
    /// The output file of a recording could not be created or written.
    #[error("cannot write the recording {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: FormatError,
    },
    /// The replay speed is outside what a replay takes.
    #[error(
        "replay speed {} is outside {min} to {max} (or inf: as fast as it can)",
        short_number(*.0),
        min = replay::MIN_SPEED,
        max = replay::MAX_SPEED
    )]
    BadSpeed(f64),
    /// The recorder's listeners could not start (no address, a required port in use, ...).
    #[error("cannot listen for the recording")]
    Ingest(#[source] IngestError),
    /// The replay's UDP socket could not be bound.
    #[error("cannot bind a UDP socket on {addr}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// A replay thread could not be spawned.
    #[error("cannot spawn the {name} thread")]
    Thread {
        /// The thread's name.
        name: &'static str,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
}

/// What a recording holds.
#[derive(Debug, Clone)]
enum Content {
    /// Raw datagrams from a `.fwrec` file.
    Fwrec {
        /// The file header.
        header: Header,
        /// The records, in file order.
        records: Vec<Record>,
        /// Whether the file ended inside a record.
        truncated: bool,
    },
    /// Rows of a Live Link Face CSV export.
    LlfCsv(Vec<LlfRow>),
}

/// A whole recording, loaded in memory: `.fwrec` datagrams or Live Link Face CSV rows.
///
/// Every item has a replay offset: its time relative to the first item (leading silence before
/// the first datagram is not replayed), never decreasing (an earlier time than the previous item's
/// is replayed at the previous item's).
#[derive(Debug, Clone)]
pub struct Recording {
    /// The items.
    content: Content,
    /// Each item's replay offset, relative to the first item, non-decreasing, its gaps at most
    /// [`MAX_GAP`].
    offsets: Vec<Duration>,
    /// The pauses shortened to [`MAX_GAP`].
    shortened: Shortened,
}

/// One item of a recording, borrowed.
#[derive(Debug, Clone, Copy)]
enum Item<'a> {
    /// A datagram.
    Datagram(&'a Record),
    /// A CSV row.
    Row(&'a LlfRow),
}

/// Seconds to a non-negative duration; NaN and negative values are zero, huge ones saturate.
fn seconds(s: f64) -> Duration {
    if s.is_finite() && s > 0.0 {
        Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX)
    } else if s == f64::INFINITY {
        Duration::MAX
    } else {
        Duration::ZERO
    }
}

/// `x` as a message shows it: in scientific notation when plain digits would run long
/// (`1e-300`, not three hundred zeros).
fn short_number(x: f64) -> String {
    if x.is_finite() && x != 0.0 && !(1e-4..1e9).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// The longest pause a replay keeps between two items: a longer one (the phone put down for the
/// night, a timecode that jumps, a damaged time) is shortened to this, and the load says so.
pub const MAX_GAP: Duration = Duration::from_secs(10);

/// Pauses a recording's replay shortens to [`MAX_GAP`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shortened {
    /// How many.
    pub count: usize,
    /// The longest, as recorded.
    pub longest: Duration,
}

/// Makes offsets relative to the first one, non-decreasing, with no gap over [`MAX_GAP`].
fn normalise_offsets(raw: impl Iterator<Item = Duration>) -> (Vec<Duration>, Shortened) {
    let mut previous: Option<Duration> = None;
    let mut last = Duration::ZERO;
    let mut shortened = Shortened::default();
    let offsets = raw
        .map(|offset| {
            if let Some(before) = previous {
                let gap = offset.saturating_sub(before);
                if gap > MAX_GAP {
                    shortened.count += 1;
                    shortened.longest = shortened.longest.max(gap);
                }
                last = last.saturating_add(gap.min(MAX_GAP));
            }
            previous = Some(previous.map_or(offset, |before| before.max(offset)));
            last
        })
        .collect();
    (offsets, shortened)
}

/// The largest recording file read (a `.fwrec` or a CSV take): about ten minutes of a phone
/// streaming VMC at 60 frames a second, half an hour of a Live Link Face CSV.
pub const MAX_RECORDING_BYTES: u64 = 80 << 20;

/// The most items (datagrams or CSV rows) a recording holds: about 69 minutes at 60 frames a
/// second. A file is read a piece at a time, never whole, so with [`MAX_RECORDING_BYTES`] this
/// bounds what a load holds in memory, whatever the file: under 100 MB.
pub const MAX_RECORDING_ITEMS: usize = 250_000;

/// The recording at `path`, opened to be read a piece at a time; refused past
/// [`MAX_RECORDING_BYTES`] or when `path` is not a regular file.
fn open_recording(path: &Path) -> Result<BufReader<crate::fsutil::BoundedFile>, RecordError> {
    let file = crate::fsutil::open_bounded(path, MAX_RECORDING_BYTES).map_err(|source| {
        RecordError::Open {
            path: path.to_path_buf(),
            source,
        }
    })?;
    Ok(BufReader::with_capacity(64 << 10, file))
}

impl Recording {
    /// Loads `path`, recognising a `.fwrec` file by its magic bytes and a Live Link Face CSV
    /// export by its header line (`Timecode,BlendShapeCount,...`; the first column is enough).
    pub fn load(path: &Path) -> Result<Recording, RecordError> {
        let mut input = open_recording(path)?;
        let start = input.fill_buf().map_err(|source| RecordError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let magic_len = start.len().min(format::MAGIC.len());
        let format = if magic_len > 0 && start[..magic_len] == format::MAGIC[..magic_len] {
            // A file that starts like a recording but is too short for a header still gets the
            // recording's "cut off" error rather than "unknown format".
            Format::Fwrec
        } else if looks_like_llf_csv(start) {
            Format::LlfCsv
        } else {
            return Err(RecordError::UnknownFormat {
                path: path.to_path_buf(),
            });
        };
        Recording::from_reader(path, input, format)
    }

    /// Loads `path` as the given format.
    pub fn load_as(path: &Path, format: Format) -> Result<Recording, RecordError> {
        let input = open_recording(path)?;
        Recording::from_reader(path, input, format)
    }

    /// Parses a file read from `input`; `path` only names the file in errors.
    fn from_reader(
        path: &Path,
        input: impl BufRead,
        format: Format,
    ) -> Result<Recording, RecordError> {
        let recording = match format {
            Format::Fwrec => {
                Recording::from_fwrec_reader(input, MAX_RECORDING_ITEMS).map_err(|source| {
                    RecordError::Fwrec {
                        path: path.to_path_buf(),
                        source,
                    }
                })?
            }
            Format::LlfCsv => llf_csv::parse_reader(input, MAX_RECORDING_ITEMS)
                .map(Recording::from_llf_rows)
                .map_err(|source| RecordError::LlfCsv {
                    path: path.to_path_buf(),
                    source,
                })?,
        };
        tracing::info!(
            path = %path.display(),
            format = %recording.format(),
            items = recording.len(),
            duration_s = recording.duration().as_secs_f64(),
            "loaded a recording"
        );
        let shortened = recording.shortened();
        if shortened.count > 0 {
            tracing::warn!(
                path = %path.display(),
                pauses = shortened.count,
                longest_s = shortened.longest.as_secs_f64(),
                "{} pause(s) in the recording are longer than {} s (the longest {:.0} s): each is \
                 replayed as {} s",
                shortened.count,
                MAX_GAP.as_secs(),
                shortened.longest.as_secs_f64(),
                MAX_GAP.as_secs()
            );
        }
        Ok(recording)
    }

    /// Parses a whole `.fwrec` stream. A stream cut off inside its last record gives every
    /// complete record (see [`Recording::truncated`]); any other problem is an error.
    pub fn from_fwrec(bytes: &[u8]) -> Result<Recording, FormatError> {
        Recording::from_fwrec_reader(bytes, MAX_RECORDING_ITEMS)
    }

    /// Reads a `.fwrec` stream from `input` a record at a time, at most `max` records.
    pub fn from_fwrec_reader(input: impl Read, max: usize) -> Result<Recording, FormatError> {
        let mut reader = Reader::new(input)?;
        let mut records = Vec::new();
        while let Some(record) = reader.read_record()? {
            if records.len() == max {
                return Err(FormatError::TooManyRecords { max });
            }
            records.push(record);
        }
        let truncated = reader.truncated().is_some();
        Ok(Recording::from_records(reader.header(), records, truncated))
    }

    /// A recording of the given datagram records (`truncated` says whether their file was cut
    /// off).
    pub fn from_records(header: Header, records: Vec<Record>, truncated: bool) -> Recording {
        let (offsets, shortened) = normalise_offsets(records.iter().map(|r| r.offset));
        Recording {
            content: Content::Fwrec {
                header,
                records,
                truncated,
            },
            offsets,
            shortened,
        }
    }

    /// Parses a Live Link Face CSV export.
    pub fn from_llf_csv(text: &str) -> Result<Recording, LlfCsvError> {
        Ok(Recording::from_llf_rows(llf_csv::parse(text)?))
    }

    /// A recording of the given CSV rows.
    pub fn from_llf_rows(rows: Vec<LlfRow>) -> Recording {
        let (offsets, shortened) = normalise_offsets(rows.iter().map(|r| seconds(r.time)));
        Recording {
            content: Content::LlfCsv(rows),
            offsets,
            shortened,
        }
    }

    /// Which kind of recording this is.
    pub fn format(&self) -> Format {
        match self.content {
            Content::Fwrec { .. } => Format::Fwrec,
            Content::LlfCsv(_) => Format::LlfCsv,
        }
    }

    /// How many items (datagrams or rows) it holds.
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// The pauses longer than [`MAX_GAP`] that the replay shortens to it.
    pub fn shortened(&self) -> Shortened {
        self.shortened
    }

    /// The replay time of the last item after the first.
    pub fn duration(&self) -> Duration {
        self.offsets.last().copied().unwrap_or(Duration::ZERO)
    }

    /// The datagram records (empty for a CSV recording).
    pub fn records(&self) -> &[Record] {
        match &self.content {
            Content::Fwrec { records, .. } => records,
            Content::LlfCsv(_) => &[],
        }
    }

    /// The CSV rows (empty for a `.fwrec` recording).
    pub fn llf_rows(&self) -> &[LlfRow] {
        match &self.content {
            Content::Fwrec { .. } => &[],
            Content::LlfCsv(rows) => rows,
        }
    }

    /// The `.fwrec` header, for a `.fwrec` recording.
    pub fn header(&self) -> Option<Header> {
        match &self.content {
            Content::Fwrec { header, .. } => Some(*header),
            Content::LlfCsv(_) => None,
        }
    }

    /// Whether the `.fwrec` file ended inside its last record (an interrupted recording).
    pub fn truncated(&self) -> bool {
        matches!(
            self.content,
            Content::Fwrec {
                truncated: true,
                ..
            }
        )
    }

    /// Each item's replay offset (relative to the first item, non-decreasing).
    pub fn offsets(&self) -> &[Duration] {
        &self.offsets
    }

    /// Item `i` with its replay offset; `None` past the end.
    fn item(&self, i: usize) -> Option<(Duration, Item<'_>)> {
        let offset = *self.offsets.get(i)?;
        let item = match &self.content {
            Content::Fwrec { records, .. } => Item::Datagram(records.get(i)?),
            Content::LlfCsv(rows) => Item::Row(rows.get(i)?),
        };
        Some((offset, item))
    }
}

/// Whether `bytes` start with a Live Link Face CSV header line (`Timecode,...`).
fn looks_like_llf_csv(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let line_end = bytes
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(bytes.len());
    let line = String::from_utf8_lossy(&bytes[..line_end.min(64 * 1024)]);
    // Exports always start with `Timecode,BlendShapeCount,`; only the first column is required
    // here so that hand-trimmed files are still recognised (the reader checks the rest).
    line.split(',')
        .next()
        .is_some_and(|c| c.trim().eq_ignore_ascii_case("timecode"))
}

/// The fixed base instant [`frames`] adds recorded offsets to, the same for the whole process, so
/// frames decoded twice compare equal.
pub fn base_instant() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

/// The frames a recording gives, decoded without timing: `.fwrec` datagrams through a fresh
/// [`Decoder`] (as the network path decodes them), CSV rows through [`LlfRow::to_frame`].
///
/// Each frame's `received` is [`base_instant`] plus its item's recorded offset (a datagram's
/// offset since the recording started, a row's time), so the result is deterministic. Frames of
/// CSV rows come from [`NO_SENDER`].
pub fn frames(recording: &Recording) -> impl Iterator<Item = FaceFrame> + '_ {
    let base = base_instant();
    let mut decoder = Decoder::new();
    let mut pending = std::collections::VecDeque::new();
    let mut next = 0;
    std::iter::from_fn(move || loop {
        if let Some(frame) = pending.pop_front() {
            return Some(frame);
        }
        let (_, item) = recording.item(next)?;
        next += 1;
        match item {
            Item::Datagram(record) => {
                let received = base + record.offset;
                decoder.decode(&record.datagram, record.from, received, |frame| {
                    pending.push_back(*frame)
                });
            }
            Item::Row(row) => return Some(row_frame(row, base + seconds(row.time))),
        }
    })
}

/// The frame of one CSV row, received at `received` (its sender time is the row's time).
fn row_frame(row: &LlfRow, received: Instant) -> FaceFrame {
    let mut frame = row.to_frame(received, NO_SENDER);
    // `to_frame` adds the row's time to its start; here the caller has already placed the row.
    frame.received = received;
    frame
}

/// Counters a worker thread (recorder, replay) publishes and its handle reads, with a signal
/// for when the work is finished.
#[derive(Debug, Default)]
pub(crate) struct Progress<S> {
    /// The counters.
    stats: Mutex<S>,
    /// Signalled when the counters say the work is finished.
    finished: Condvar,
}

/// Counters that can say the work they count is finished.
pub(crate) trait Finish {
    /// Whether the work is finished.
    fn is_finished(&self) -> bool;
}

impl<S: Copy + Finish> Progress<S> {
    /// The counters, locked for an update; call [`Progress::notify`] after setting finished.
    pub(crate) fn lock(&self) -> MutexGuard<'_, S> {
        self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A snapshot of the counters.
    pub(crate) fn snapshot(&self) -> S {
        *self.lock()
    }

    /// Wakes [`Progress::wait_finished`].
    pub(crate) fn notify(&self) {
        self.finished.notify_all();
    }

    /// Waits up to `timeout` for the counters to say finished; returns whether they do.
    pub(crate) fn wait_finished(&self, timeout: Duration) -> bool {
        let (guard, _) = self
            .finished
            .wait_timeout_while(self.lock(), timeout, |stats| !stats.is_finished())
            .unwrap_or_else(PoisonError::into_inner);
        guard.is_finished()
    }
}

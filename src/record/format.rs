//! The `.fwrec` file format: a versioned header, then timestamped raw datagrams (little-endian).
//!
//! The layout, byte by byte, is in `docs/recording-format.md`:
//!
//! ```text
//! header  magic "FWREC\0\r\n" (8 bytes) | u16 version (1) | u16 flags (0) | u64 start, µs since
//!         the Unix epoch (0 = unknown)
//! record  u64 offset, µs since the recording started | u8 family (4 or 6) | 4 or 16 address
//!         bytes (network order) | u16 port | u32 length (≤ MAX_DATAGRAM) | `length` bytes
//! ```
//!
//! The [`Reader`] never trusts the file: lengths are checked against [`MAX_DATAGRAM`] before
//! anything is allocated, and a file cut off inside its last record (an interrupted recording)
//! reads as every complete record followed by a clean end with a warning.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use tracing::warn;

use crate::ingest::MAX_DATAGRAM;

/// The 8 bytes every `.fwrec` file starts with. The `\0` stops text tools and the `\r\n` catches
/// line-ending conversions, as PNG's signature does.
pub const MAGIC: [u8; 8] = *b"FWREC\0\r\n";

/// The format version this code writes and the only one it reads.
pub const VERSION: u16 = 1;

/// Length of the file header in bytes: magic, version, flags, start time.
pub const HEADER_LEN: usize = 8 + 2 + 2 + 8;

/// Length of a record's fixed part before the address: offset and family.
const RECORD_PREFIX_LEN: usize = 8 + 1;

/// The file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    /// Format flags; no flag is defined in version 1, so this is always 0.
    pub flags: u16,
    /// When the recording started, in microseconds since the Unix epoch; 0 when unknown.
    pub started_unix_us: u64,
}

/// One received datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// When it was received, since the recording started.
    pub offset: Duration,
    /// Who sent it (an IPv6 address's flow info and scope id are not kept).
    pub from: SocketAddr,
    /// The datagram's bytes, at most [`MAX_DATAGRAM`].
    pub datagram: Vec<u8>,
}

/// Why a `.fwrec` stream could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// Reading or writing the underlying stream failed.
    #[error("I/O error")]
    Io(#[from] io::Error),
    /// The stream does not start with [`MAGIC`].
    #[error("not a facewire recording (the file does not start with FWREC)")]
    BadMagic,
    /// The stream ends inside the header.
    #[error("the recording's header is cut off ({len} of {HEADER_LEN} bytes)")]
    TruncatedHeader {
        /// How many header bytes are there.
        len: usize,
    },
    /// The file was written by a newer (or unknown) version of the format.
    #[error(
        "unsupported recording format version {version} (this facewire reads version {VERSION})"
    )]
    UnsupportedVersion {
        /// The version in the file.
        version: u16,
    },
    /// The header sets flags this version does not define.
    #[error("unsupported recording flags {flags:#06x}")]
    UnsupportedFlags {
        /// The flags in the file.
        flags: u16,
    },
    /// The stream holds more records than a recording may.
    #[error(
        "more than {max} datagrams (about {} minutes of a phone at 60 frames a second), more \
         than facewire replays: record shorter takes",
        max / 3600
    )]
    TooManyRecords {
        /// [`super::MAX_RECORDING_ITEMS`].
        max: usize,
    },
    /// A record's address family byte is neither 4 nor 6.
    #[error("corrupt record at byte {at}: address family {family} is neither 4 nor 6")]
    BadFamily {
        /// The family byte.
        family: u8,
        /// Where the record starts in the file.
        at: u64,
    },
    /// A record claims a datagram longer than [`MAX_DATAGRAM`].
    #[error("corrupt record at byte {at}: a {len}-byte datagram is longer than {MAX_DATAGRAM}")]
    TooLong {
        /// The claimed length.
        len: u64,
        /// Where the record starts in the file.
        at: u64,
    },
    /// A record's offset is earlier than the one before it, which a recording never writes.
    #[error(
        "corrupt record at byte {at}: its time ({offset_us} µs) is before the previous record's \
         ({previous_us} µs); a recording's times never go back"
    )]
    Backwards {
        /// Where the record starts in the file.
        at: u64,
        /// Its offset.
        offset_us: u64,
        /// The previous record's offset.
        previous_us: u64,
    },
}

/// Appends records to any [`Write`]. Offsets are clamped to be non-decreasing.
///
/// Nothing is buffered here: wrap a file in a `BufWriter` and call [`Writer::flush`] when the
/// records written so far must reach the file (the recorder does after every datagram, so an
/// interrupted recording is readable up to its last datagram).
#[derive(Debug)]
pub struct Writer<W: Write> {
    /// The destination.
    out: W,
    /// The latest offset written, in microseconds.
    last_us: u64,
    /// Records written.
    records: u64,
}

impl<W: Write> Writer<W> {
    /// Writes the header to `out` and returns a writer positioned after it.
    pub fn new(mut out: W, header: Header) -> Result<Writer<W>, FormatError> {
        if header.flags != 0 {
            return Err(FormatError::UnsupportedFlags {
                flags: header.flags,
            });
        }
        let mut bytes = [0u8; HEADER_LEN];
        bytes[..8].copy_from_slice(&MAGIC);
        bytes[8..10].copy_from_slice(&VERSION.to_le_bytes());
        bytes[10..12].copy_from_slice(&header.flags.to_le_bytes());
        bytes[12..20].copy_from_slice(&header.started_unix_us.to_le_bytes());
        out.write_all(&bytes)?;
        Ok(Writer {
            out,
            last_us: 0,
            records: 0,
        })
    }

    /// Appends one record. A datagram longer than [`MAX_DATAGRAM`] is refused (nothing is
    /// written); an offset earlier than the previous one is written as the previous one.
    pub fn write(
        &mut self,
        offset: Duration,
        from: SocketAddr,
        datagram: &[u8],
    ) -> Result<(), FormatError> {
        if datagram.len() > MAX_DATAGRAM {
            return Err(FormatError::TooLong {
                len: datagram.len() as u64,
                at: 0,
            });
        }
        let us = u64::try_from(offset.as_micros())
            .unwrap_or(u64::MAX)
            .max(self.last_us);
        // One record header, at most 8 + 1 + 16 + 2 + 4 bytes, written with the datagram in two
        // calls so a buffered writer sees few small writes.
        let mut head = [0u8; RECORD_PREFIX_LEN + 16 + 2 + 4];
        head[..8].copy_from_slice(&us.to_le_bytes());
        let mut len = 8;
        match from.ip() {
            IpAddr::V4(ip) => {
                head[len] = 4;
                head[len + 1..len + 5].copy_from_slice(&ip.octets());
                len += 5;
            }
            IpAddr::V6(ip) => {
                head[len] = 6;
                head[len + 1..len + 17].copy_from_slice(&ip.octets());
                len += 17;
            }
        }
        head[len..len + 2].copy_from_slice(&from.port().to_le_bytes());
        len += 2;
        // MAX_DATAGRAM fits in a u32, checked above.
        head[len..len + 4].copy_from_slice(&(datagram.len() as u32).to_le_bytes());
        len += 4;
        self.out.write_all(&head[..len])?;
        self.out.write_all(datagram)?;
        self.last_us = us;
        self.records += 1;
        Ok(())
    }

    /// How many records were written.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> Result<(), FormatError> {
        self.out.flush()?;
        Ok(())
    }

    /// The underlying writer (not flushed).
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Reads records from any [`Read`]; also an iterator of `Result<Record, FormatError>` that ends
/// after the first error.
#[derive(Debug)]
pub struct Reader<R: Read> {
    /// The source.
    input: R,
    /// The header read by [`Reader::new`].
    header: Header,
    /// Bytes consumed so far, for error positions.
    position: u64,
    /// Set when the stream ended inside a record: how many bytes of it were there.
    truncated: Option<u64>,
    /// Set after the end or an error, so the iterator is fused.
    done: bool,
    /// The previous record's offset in microseconds (offsets never go back).
    previous_us: u64,
}

/// What one read of possibly-absent bytes found.
enum Fill {
    /// The buffer is full.
    Full,
    /// The stream ended after this many bytes (less than the buffer).
    Short(usize),
}

/// Reads as much of `buf` as the stream holds, retrying interruptions.
fn fill(input: &mut impl Read, buf: &mut [u8]) -> io::Result<Fill> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => return Ok(Fill::Short(filled)),
            Ok(n) => filled += n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(Fill::Full)
}

impl<R: Read> Reader<R> {
    /// Reads and checks the header.
    pub fn new(mut input: R) -> Result<Reader<R>, FormatError> {
        let mut bytes = [0u8; HEADER_LEN];
        if let Fill::Short(len) = fill(&mut input, &mut bytes)? {
            let magic_len = len.min(MAGIC.len());
            return Err(if bytes[..magic_len] == MAGIC[..magic_len] {
                FormatError::TruncatedHeader { len }
            } else {
                FormatError::BadMagic
            });
        }
        if bytes[..8] != MAGIC {
            return Err(FormatError::BadMagic);
        }
        let version = u16::from_le_bytes([bytes[8], bytes[9]]);
        if version != VERSION {
            return Err(FormatError::UnsupportedVersion { version });
        }
        let flags = u16::from_le_bytes([bytes[10], bytes[11]]);
        if flags != 0 {
            return Err(FormatError::UnsupportedFlags { flags });
        }
        let mut started = [0u8; 8];
        started.copy_from_slice(&bytes[12..20]);
        Ok(Reader {
            input,
            header: Header {
                flags,
                started_unix_us: u64::from_le_bytes(started),
            },
            position: HEADER_LEN as u64,
            truncated: None,
            done: false,
            previous_us: 0,
        })
    }

    /// The file header.
    pub fn header(&self) -> Header {
        self.header
    }

    /// When the stream ended inside a record (an interrupted recording): how many bytes of that
    /// last record were dropped.
    pub fn truncated(&self) -> Option<u64> {
        self.truncated
    }

    /// The next record; `Ok(None)` at the end, including the end of a truncated stream (see
    /// [`Reader::truncated`]).
    pub fn read_record(&mut self) -> Result<Option<Record>, FormatError> {
        if self.done {
            return Ok(None);
        }
        let result = self.read_inner();
        if !matches!(result, Ok(Some(_))) {
            self.done = true;
        }
        result
    }

    /// Reads one record, without the fused bookkeeping.
    fn read_inner(&mut self) -> Result<Option<Record>, FormatError> {
        let at = self.position;
        let mut prefix = [0u8; RECORD_PREFIX_LEN];
        match fill(&mut self.input, &mut prefix)? {
            Fill::Full => {}
            Fill::Short(0) => return Ok(None),
            Fill::Short(len) => return Ok(self.cut_off(at, len)),
        }
        let mut offset = [0u8; 8];
        offset.copy_from_slice(&prefix[..8]);
        let offset_us = u64::from_le_bytes(offset);
        if offset_us < self.previous_us {
            return Err(FormatError::Backwards {
                at,
                offset_us,
                previous_us: self.previous_us,
            });
        }
        self.previous_us = offset_us;
        let family = prefix[8];
        let address_len = match family {
            4 => 4,
            6 => 16,
            _ => return Err(FormatError::BadFamily { family, at }),
        };
        let mut rest = [0u8; 16 + 2 + 4];
        let rest = &mut rest[..address_len + 6];
        if let Fill::Short(len) = fill(&mut self.input, rest)? {
            return Ok(self.cut_off(at, RECORD_PREFIX_LEN + len));
        }
        let ip = if family == 4 {
            let mut octets = [0u8; 4];
            octets.copy_from_slice(&rest[..4]);
            IpAddr::V4(Ipv4Addr::from(octets))
        } else {
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&rest[..16]);
            IpAddr::V6(Ipv6Addr::from(octets))
        };
        let port = u16::from_le_bytes([rest[address_len], rest[address_len + 1]]);
        let mut len = [0u8; 4];
        len.copy_from_slice(&rest[address_len + 2..address_len + 6]);
        let len = u32::from_le_bytes(len);
        if len as usize > MAX_DATAGRAM {
            return Err(FormatError::TooLong {
                len: u64::from(len),
                at,
            });
        }
        // Bounded by MAX_DATAGRAM above, so a hostile length cannot ask for much.
        let mut datagram = vec![0u8; len as usize];
        let fixed = RECORD_PREFIX_LEN + address_len + 6;
        if let Fill::Short(got) = fill(&mut self.input, &mut datagram)? {
            return Ok(self.cut_off(at, fixed + got));
        }
        self.position += (fixed + datagram.len()) as u64;
        Ok(Some(Record {
            offset: Duration::from_micros(offset_us),
            from: SocketAddr::new(ip, port),
            datagram,
        }))
    }

    /// Notes a record cut off after `len` bytes and ends the stream.
    fn cut_off(&mut self, at: u64, len: usize) -> Option<Record> {
        warn!(
            at,
            bytes = len,
            "the recording ends inside a record (interrupted?); replaying what came before it"
        );
        self.truncated = Some(len as u64);
        None
    }
}

impl<R: Read> Iterator for Reader<R> {
    type Item = Result<Record, FormatError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.read_record().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    fn sample() -> Vec<(Duration, SocketAddr, Vec<u8>)> {
        vec![
            (
                Duration::ZERO,
                addr("192.168.1.20:50123"),
                b"hello".to_vec(),
            ),
            (
                Duration::from_micros(16_667),
                addr("[fe80::1]:39539"),
                Vec::new(),
            ),
            (
                Duration::from_secs(3),
                addr("10.0.0.1:1"),
                vec![0xAB; MAX_DATAGRAM],
            ),
        ]
    }

    fn write(records: &[(Duration, SocketAddr, Vec<u8>)]) -> Vec<u8> {
        let header = Header {
            flags: 0,
            started_unix_us: 1_700_000_000_000_000,
        };
        let mut writer = Writer::new(Vec::new(), header).unwrap();
        for (offset, from, datagram) in records {
            writer.write(*offset, *from, datagram).unwrap();
        }
        assert_eq!(writer.records(), records.len() as u64);
        writer.into_inner()
    }

    #[test]
    fn round_trip() {
        let records = sample();
        let bytes = write(&records);
        let mut reader = Reader::new(bytes.as_slice()).unwrap();
        assert_eq!(reader.header().started_unix_us, 1_700_000_000_000_000);
        let read: Vec<Record> = reader.by_ref().map(Result::unwrap).collect();
        assert_eq!(reader.truncated(), None);
        assert_eq!(read.len(), records.len());
        for (r, (offset, from, datagram)) in read.iter().zip(&records) {
            assert_eq!((r.offset, r.from, &r.datagram), (*offset, *from, datagram));
        }
    }

    #[test]
    fn header_bytes_are_pinned() {
        let bytes = write(&[(
            Duration::from_micros(0x0102),
            addr("1.2.3.4:1286"), // port 0x0506
            vec![9],
        )]);
        let mut expected = b"FWREC\0\r\n".to_vec();
        expected.extend([1, 0, 0, 0]);
        expected.extend(1_700_000_000_000_000u64.to_le_bytes());
        expected.extend([2, 1, 0, 0, 0, 0, 0, 0]);
        expected.extend([4, 1, 2, 3, 4, 6, 5, 1, 0, 0, 0, 9]);
        assert_eq!(bytes, expected);
    }

    #[test]
    fn offsets_never_go_back() {
        let bytes = write(&[
            (Duration::from_secs(2), addr("1.1.1.1:1"), vec![1]),
            (Duration::from_secs(1), addr("1.1.1.1:1"), vec![2]),
        ]);
        let read: Vec<Record> = Reader::new(bytes.as_slice())
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(read[1].offset, Duration::from_secs(2));
        // A file whose times go back (written by something else, or damaged) is refused there.
        let mut bytes = bytes;
        let second = HEADER_LEN + RECORD_PREFIX_LEN + 4 + 6 + 1;
        bytes[second..second + 8].copy_from_slice(&1_000_000u64.to_le_bytes());
        let read: Vec<Result<Record, FormatError>> =
            Reader::new(bytes.as_slice()).unwrap().collect();
        assert!(read[0].is_ok());
        assert!(
            matches!(
                read[1],
                Err(FormatError::Backwards {
                    offset_us: 1_000_000,
                    previous_us: 2_000_000,
                    ..
                })
            ),
            "{read:?}"
        );
        assert_eq!(read.len(), 2, "the reader stops at the error");
    }

    #[test]
    fn writer_refuses_oversized_datagrams() {
        let mut writer = Writer::new(Vec::new(), Header::default()).unwrap();
        let big = vec![0u8; MAX_DATAGRAM + 1];
        assert!(matches!(
            writer.write(Duration::ZERO, addr("1.1.1.1:1"), &big),
            Err(FormatError::TooLong { .. })
        ));
        assert_eq!(writer.into_inner().len(), HEADER_LEN);
    }

    #[test]
    fn every_truncation_reads_the_complete_records() {
        let records = sample();
        let bytes = write(&records);
        // Record boundaries: where each record ends.
        let mut ends = Vec::new();
        let mut end = HEADER_LEN;
        for (_, from, datagram) in &records {
            end += 8 + 1 + if from.is_ipv4() { 4 } else { 16 } + 2 + 4 + datagram.len();
            ends.push(end);
        }
        assert_eq!(end, bytes.len());
        let cuts = (0..HEADER_LEN + 200).chain((bytes.len() - 100)..bytes.len());
        for cut in cuts {
            let slice = &bytes[..cut];
            match Reader::new(slice) {
                Err(FormatError::TruncatedHeader { len }) => {
                    assert!(cut < HEADER_LEN);
                    assert_eq!(len, cut);
                }
                Err(other) => panic!("cut {cut}: {other}"),
                Ok(mut reader) => {
                    let read: Vec<Record> = reader.by_ref().map(Result::unwrap).collect();
                    let complete = ends.iter().filter(|&&e| e <= cut).count();
                    assert_eq!(read.len(), complete, "cut at {cut}");
                    let at_boundary = cut == HEADER_LEN || ends.contains(&cut);
                    assert_eq!(reader.truncated().is_none(), at_boundary, "cut at {cut}");
                }
            }
        }
    }

    #[test]
    fn bad_headers_are_errors() {
        let good = write(&[]);
        assert!(Reader::new(&b"PNG\r\n"[..]).is_err());
        assert!(matches!(
            Reader::new(&b"not a recording at all"[..]),
            Err(FormatError::BadMagic)
        ));
        let mut v2 = good.clone();
        v2[8] = 2;
        assert!(matches!(
            Reader::new(v2.as_slice()),
            Err(FormatError::UnsupportedVersion { version: 2 })
        ));
        let mut flagged = good.clone();
        flagged[11] = 0x80;
        assert!(matches!(
            Reader::new(flagged.as_slice()),
            Err(FormatError::UnsupportedFlags { flags: 0x8000 })
        ));
        assert!(Reader::new(good.as_slice()).unwrap().next().is_none());
    }

    #[test]
    fn corrupt_records_are_errors_that_end_the_iteration() {
        let mut bytes = write(&sample());
        bytes[HEADER_LEN + 8] = 5;
        let mut reader = Reader::new(bytes.as_slice()).unwrap();
        assert!(matches!(
            reader.next(),
            Some(Err(FormatError::BadFamily { family: 5, at: 20 }))
        ));
        assert!(reader.next().is_none());

        let mut bytes = write(&sample());
        let len_at = HEADER_LEN + 8 + 1 + 4 + 2;
        bytes[len_at..len_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let mut reader = Reader::new(bytes.as_slice()).unwrap();
        assert!(matches!(
            reader.next(),
            Some(Err(FormatError::TooLong { len, at: 20 })) if len == u64::from(u32::MAX)
        ));
    }
}

//! Replay with the original timing: over UDP ([`replay_to`]) or into the pipeline
//! ([`spawn_replay`], the `facewire-replay` thread).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tracing::{debug, error, info, trace, warn};

use super::{row_frame, Item, RecordError, Recording};
use crate::arkit::FaceFrame;
use crate::ingest::{
    encode_vmc, Decoder, ForwardNames, FrameSink, RateLimiter, Stats, TICK_PERIOD,
};

/// The name of the replay thread.
const THREAD_NAME: &str = "facewire-replay";

/// The longest single sleep of [`replay_to`], so a stop request is seen promptly.
const STOP_POLL: Duration = Duration::from_millis(20);

/// The gap before a looped recording starts again when its items give no interval to go by
/// (a single item, or all at the same time): one frame at 60 fps.
const DEFAULT_LOOP_GAP: Duration = Duration::from_micros(16_667);

/// The shortest gap between two passes of a looped recording, so a recording whose items all
/// share one time cannot loop without pause.
const MIN_LOOP_GAP: Duration = Duration::from_millis(1);

/// How a recording is replayed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplayOptions {
    /// Time scale: 2.0 plays twice as fast, 0.5 half as fast, `f64::INFINITY` without waiting.
    /// Must be positive.
    pub speed: f64,
    /// Start again from the beginning after the last item, until stopped. The next pass starts
    /// one mean item interval after the last item.
    pub looped: bool,
}

/// The slowest replay speed: a hundredth (a minute of recording in under two hours).
pub const MIN_SPEED: f64 = 0.01;

/// The fastest replay speed with timing; `f64::INFINITY` replays without waiting.
pub const MAX_SPEED: f64 = 100.0;

impl ReplayOptions {
    /// Checks the options: the speed must be from [`MIN_SPEED`] to [`MAX_SPEED`], or infinite
    /// (no waiting); NaN, zero, negative and out-of-range speeds are refused.
    pub fn validate(&self) -> Result<(), RecordError> {
        let in_range = (MIN_SPEED..=MAX_SPEED).contains(&self.speed);
        if !in_range && self.speed != f64::INFINITY {
            return Err(RecordError::BadSpeed(self.speed));
        }
        Ok(())
    }
}

impl Default for ReplayOptions {
    fn default() -> ReplayOptions {
        ReplayOptions {
            speed: 1.0,
            looped: false,
        }
    }
}

/// What a replay has done so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReplayStats {
    /// Items replayed: datagrams sent or decoded, CSV rows sent or delivered.
    pub datagrams: u64,
    /// Bytes sent ([`replay_to`]) or decoded ([`spawn_replay`]).
    pub bytes: u64,
    /// Frames delivered to the sink ([`spawn_replay`] only).
    pub frames: u64,
    /// Datagrams the decoder rejected as malformed or oversized ([`spawn_replay`] only).
    pub malformed: u64,
    /// Datagrams that could not be sent or encoded ([`replay_to`] only).
    pub send_errors: u64,
    /// Complete passes through the recording.
    pub passes: u64,
    /// Whether every item was replayed (never true for a looped replay).
    pub finished: bool,
    /// The decoder's full counters ([`spawn_replay`] of a `.fwrec` only; zero otherwise).
    pub decoder: Stats,
}

/// The replay order and due times of a recording's items.
struct Schedule<'r> {
    /// The recording.
    recording: &'r Recording,
    /// When the first item of the first pass is due.
    start: Instant,
    /// The time scale.
    speed: f64,
    /// Whether to start again after the last item.
    looped: bool,
    /// Recording time from one pass's first item to the next pass's first item.
    period: Duration,
    /// The current pass, from 0.
    pass: u64,
    /// The next item in the current pass.
    index: usize,
}

impl<'r> Schedule<'r> {
    /// The schedule of `recording` starting at `start`; checks the speed.
    fn new(
        recording: &'r Recording,
        options: &ReplayOptions,
        start: Instant,
    ) -> Result<Schedule<'r>, RecordError> {
        options.validate()?;
        let duration = recording.duration();
        let gap = match u32::try_from(recording.len().saturating_sub(1)) {
            Ok(intervals) if intervals > 0 && !duration.is_zero() => duration / intervals,
            _ => DEFAULT_LOOP_GAP,
        };
        Ok(Schedule {
            recording,
            start,
            speed: options.speed,
            looped: options.looped,
            period: duration.saturating_add(gap.max(MIN_LOOP_GAP)),
            pass: 0,
            index: 0,
        })
    }

    /// The next item and when it is due (`None`: later than any clock can say, so never), or
    /// `None` when the replay is over.
    fn peek(&self) -> Option<(Option<Instant>, Item<'r>)> {
        let (offset, item) = self.recording.item(self.index)?;
        let recording_time = self.pass as f64 * self.period.as_secs_f64() + offset.as_secs_f64();
        let due = Duration::try_from_secs_f64(recording_time / self.speed)
            .ok()
            .and_then(|d| self.start.checked_add(d));
        Some((due, item))
    }

    /// Moves past the item [`Schedule::peek`] gave; returns whether that completed a pass.
    fn advance(&mut self) -> bool {
        self.index += 1;
        if self.index < self.recording.len() {
            return false;
        }
        if self.looped {
            self.index = 0;
            self.pass += 1;
        }
        true
    }
}

/// Sleeps until `due`, in steps short enough to notice `stop`; returns false when stopped.
fn wait_until(due: Option<Instant>, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        let left = match due {
            Some(due) if due <= now => return true,
            Some(due) => due - now,
            None => STOP_POLL,
        };
        std::thread::sleep(left.min(STOP_POLL));
    }
}

/// Sends `recording` to `to` over UDP with its original timing, scaled by `options.speed`, from
/// an ephemeral port; returns when every item is sent (never, when looped) or `stop` is set.
///
/// `.fwrec` datagrams are sent byte for byte (their original sender address cannot be kept);
/// CSV rows are sent as VMC bundles ([`encode_vmc`]). Each item is due at the replay
/// start plus its offset divided by the speed, measured from one start instant, so lateness never
/// accumulates. Send errors are counted and logged, never fatal.
pub fn replay_to(
    recording: &Recording,
    to: SocketAddr,
    options: &ReplayOptions,
    stop: &AtomicBool,
) -> Result<ReplayStats, RecordError> {
    let local = SocketAddr::new(
        if to.is_ipv4() {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        } else {
            IpAddr::V6(Ipv6Addr::UNSPECIFIED)
        },
        0,
    );
    let socket = UdpSocket::bind(local).map_err(|source| RecordError::Bind {
        addr: local,
        source,
    })?;
    let mut schedule = Schedule::new(recording, options, Instant::now())?;
    info!(
        %to,
        format = %recording.format(),
        items = recording.len(),
        speed = options.speed,
        looped = options.looped,
        "replaying {} items to {to}",
        recording.len()
    );
    let mut stats = ReplayStats::default();
    let mut error_log = RateLimiter::per_second();
    // The VMC bundle of a CSV row, reused for every row.
    let mut encoded = Vec::new();
    while let Some((due, item)) = schedule.peek() {
        if !wait_until(due, stop) {
            info!(sent = stats.datagrams, "replay stopped");
            return Ok(stats);
        }
        let bytes: &[u8] = match item {
            Item::Datagram(record) => &record.datagram,
            Item::Row(row) => {
                encode_vmc(
                    &row_frame(row, Instant::now()),
                    ForwardNames::Camel,
                    &mut encoded,
                );
                &encoded
            }
        };
        match socket.send_to(bytes, to) {
            Ok(_) => {
                stats.datagrams += 1;
                stats.bytes += bytes.len() as u64;
                trace!(%to, len = bytes.len(), "replayed a datagram");
            }
            Err(err) => {
                stats.send_errors += 1;
                if let Some(suppressed) = error_log.allow(Instant::now()) {
                    warn!(%to, cause = %err, suppressed, "UDP send failed; continuing");
                }
            }
        }
        if schedule.advance() {
            stats.passes += 1;
            debug!(passes = stats.passes, "replay pass complete");
        }
    }
    stats.finished = true;
    info!(
        sent = stats.datagrams,
        send_errors = stats.send_errors,
        "replay finished"
    );
    Ok(stats)
}

/// What the replay thread shares with its handle.
type Shared = super::Progress<ReplayStats>;

impl super::Finish for ReplayStats {
    fn is_finished(&self) -> bool {
        self.finished
    }
}

/// The running replay thread. Dropping it stops the thread, like [`ReplayHandle::shutdown`].
#[derive(Debug)]
pub struct ReplayHandle {
    /// Counters and the finished signal.
    shared: Arc<Shared>,
    /// Dropping or sending on it stops the thread.
    stop: Option<mpsc::Sender<()>>,
    /// The thread; `None` once joined.
    thread: Option<JoinHandle<()>>,
}

impl ReplayHandle {
    /// A snapshot of the counters.
    pub fn stats(&self) -> ReplayStats {
        self.shared.snapshot()
    }

    /// Waits up to `timeout` for every item to be replayed; returns whether it has (never, for a
    /// looped replay).
    pub fn wait_finished(&self, timeout: Duration) -> bool {
        self.shared.wait_finished(timeout)
    }

    /// Stops the thread, waits for it, and returns the final counters.
    pub fn shutdown(mut self) -> ReplayStats {
        self.stop_and_join();
        self.stats()
    }

    /// Signals the thread and joins it; idempotent.
    fn stop_and_join(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        // Dropping the sender wakes the thread's wait with "disconnected".
        self.stop.take();
        if thread.join().is_err() {
            error!("the replay thread panicked (in the frame sink?)");
        } else {
            debug!("replay thread stopped");
        }
    }
}

impl Drop for ReplayHandle {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Starts the `facewire-replay` thread, which feeds `recording` to `sink` with its original
/// timing scaled by `options.speed`, as if it arrived from the network.
///
/// `.fwrec` datagrams go through a [`Decoder`], the same one the network path uses; CSV rows
/// become frames through [`LlfRow::to_frame`](super::LlfRow::to_frame) (sender [`super::NO_SENDER`]).
/// A frame's `received` is its item's due time (start plus offset divided by the speed), not the
/// moment the thread woke, so frame spacing is the recording's. The sink's
/// [`tick`](FrameSink::tick) runs every [`TICK_PERIOD`] and keeps running after the last item,
/// like a quiet network, until the handle is shut down or dropped.
pub fn spawn_replay(
    recording: Recording,
    options: ReplayOptions,
    sink: Box<dyn FrameSink>,
) -> Result<ReplayHandle, RecordError> {
    // Checks the options before the thread starts, so a bad speed comes back here.
    Schedule::new(&recording, &options, Instant::now())?;
    info!(
        format = %recording.format(),
        items = recording.len(),
        speed = options.speed,
        looped = options.looped,
        "replaying a recording into the pipeline"
    );
    let shared = Arc::new(Shared::default());
    let (stop, stopped) = mpsc::channel();
    let thread_shared = Arc::clone(&shared);
    let thread = std::thread::Builder::new()
        .name(THREAD_NAME.to_string())
        .spawn(move || run(&recording, &options, sink, &thread_shared, &stopped))
        .map_err(|source| RecordError::Thread {
            name: THREAD_NAME,
            source,
        })?;
    Ok(ReplayHandle {
        shared,
        stop: Some(stop),
        thread: Some(thread),
    })
}

/// The replay thread's loop: items and ticks in time order until told to stop.
fn run(
    recording: &Recording,
    options: &ReplayOptions,
    mut sink: Box<dyn FrameSink>,
    shared: &Shared,
    stopped: &mpsc::Receiver<()>,
) {
    let start = Instant::now();
    let Ok(mut schedule) = Schedule::new(recording, options, start) else {
        return;
    };
    let mut decoder = Decoder::new();
    let mut committed: Vec<FaceFrame> = Vec::new();
    let mut stats = ReplayStats::default();
    let mut next_tick = start;
    let mut announced_end = false;
    loop {
        let now = Instant::now();
        let next = schedule.peek();
        let item_due = next.as_ref().and_then(|(due, _)| *due);
        if let Some((due, item)) =
            next.filter(|_| item_due.is_some_and(|due| due <= now && due <= next_tick))
        {
            let received = due.unwrap_or(now);
            committed.clear();
            match item {
                Item::Datagram(record) => {
                    decoder.decode(&record.datagram, record.from, received, |frame| {
                        committed.push(*frame)
                    });
                    stats.bytes += record.datagram.len() as u64;
                    stats.decoder = decoder.stats();
                    stats.malformed =
                        stats.decoder.malformed_datagrams + stats.decoder.oversized_datagrams;
                }
                Item::Row(row) => committed.push(row_frame(row, received)),
            }
            stats.datagrams += 1;
            stats.frames += committed.len() as u64;
            if schedule.advance() {
                stats.passes += 1;
                stats.finished = !options.looped;
            }
            // Publish the counters before handing the frames on, so whoever sees a frame also
            // sees the counters that include it.
            publish(shared, &stats);
            for frame in committed.drain(..) {
                sink.frame(frame);
            }
            continue;
        }
        if next_tick <= now {
            sink.tick(now);
            next_tick += TICK_PERIOD;
            if next_tick <= now {
                // The thread fell behind (a slow sink); skip missed ticks rather than bursting.
                next_tick = now + TICK_PERIOD;
            }
            continue;
        }
        if next.is_none() && !announced_end {
            announced_end = true;
            stats.finished = true;
            publish(shared, &stats);
            info!(
                items = stats.datagrams,
                frames = stats.frames,
                malformed = stats.malformed,
                "replay finished"
            );
        }
        let wake = item_due.map_or(next_tick, |due| due.min(next_tick));
        match stopped.recv_timeout(wake.saturating_duration_since(now)) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    debug!(
        items = stats.datagrams,
        frames = stats.frames,
        "replay thread stopping"
    );
}

/// Publishes the counters and wakes [`ReplayHandle::wait_finished`] when finished.
fn publish(shared: &Shared, stats: &ReplayStats) {
    *shared.lock() = *stats;
    if stats.finished {
        shared.notify();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Header, Record};
    use std::sync::Mutex;

    fn recording(offsets_ms: &[u64]) -> Recording {
        let records = offsets_ms
            .iter()
            .enumerate()
            .map(|(i, &ms)| Record {
                offset: Duration::from_millis(ms),
                from: "127.0.0.1:1".parse().unwrap(),
                datagram: vec![i as u8],
            })
            .collect();
        Recording::from_records(Header::default(), records, false)
    }

    #[test]
    fn pauses_over_the_limit_are_shortened_and_counted() {
        // A day's pause, then a time near the end of what the format holds.
        let day = 86_400_000;
        let rec = recording(&[0, 1_000, day, day + 1_000, u64::MAX / 1_000]);
        let secs: Vec<f64> = rec.offsets().iter().map(Duration::as_secs_f64).collect();
        assert_eq!(secs, [0.0, 1.0, 11.0, 12.0, 22.0]);
        let shortened = rec.shortened();
        assert_eq!(shortened.count, 2);
        assert!(
            shortened.longest > Duration::from_secs(1 << 40),
            "{shortened:?}"
        );
        assert_eq!(rec.duration(), Duration::from_secs(22));
        // Within the limit, the recording's own timing.
        let plain = recording(&[0, 9_000, 9_500]);
        assert_eq!(plain.shortened().count, 0);
        assert_eq!(plain.duration(), Duration::from_millis(9_500));
    }

    fn due_times(recording: &Recording, options: ReplayOptions, count: usize) -> Vec<Duration> {
        let start = Instant::now();
        let mut schedule = Schedule::new(recording, &options, start).unwrap();
        let mut out = Vec::new();
        while let Some((due, _)) = schedule.peek() {
            out.push(due.unwrap() - start);
            schedule.advance();
            if out.len() == count {
                break;
            }
        }
        out
    }

    #[test]
    fn due_times_skip_leading_silence_and_scale_with_speed() {
        let rec = recording(&[1000, 1010, 1030]);
        let ms = Duration::from_millis;
        assert_eq!(
            due_times(&rec, ReplayOptions::default(), 10),
            vec![ms(0), ms(10), ms(30)]
        );
        let fast = ReplayOptions {
            speed: 2.0,
            looped: false,
        };
        assert_eq!(due_times(&rec, fast, 10), vec![ms(0), ms(5), ms(15)]);
        let instant = ReplayOptions {
            speed: f64::INFINITY,
            looped: false,
        };
        assert_eq!(due_times(&rec, instant, 10), vec![ms(0); 3]);
    }

    #[test]
    fn loops_start_one_mean_interval_after_the_last_item() {
        let rec = recording(&[0, 10, 30]);
        let looped = ReplayOptions {
            speed: 1.0,
            looped: true,
        };
        let ms = Duration::from_millis;
        assert_eq!(
            due_times(&rec, looped, 7),
            vec![ms(0), ms(10), ms(30), ms(45), ms(55), ms(75), ms(90)]
        );
        // All items at one time still loop with a gap.
        let same = recording(&[5, 5]);
        let times = due_times(&same, looped, 4);
        assert!(times[2] > times[1], "{times:?}");
    }

    #[test]
    fn bad_speeds_are_refused() {
        let rec = recording(&[0]);
        for speed in [0.0, -1.0, f64::NAN, f64::NEG_INFINITY, 1e-300, 0.009, 101.0] {
            let options = ReplayOptions {
                speed,
                looped: false,
            };
            assert!(matches!(
                spawn_replay(rec.clone(), options, Box::new(|_| {})),
                Err(RecordError::BadSpeed(_))
            ));
        }
        for speed in [MIN_SPEED, 1.0, MAX_SPEED, f64::INFINITY] {
            let options = ReplayOptions {
                speed,
                looped: false,
            };
            assert!(options.validate().is_ok(), "{speed}");
        }
        let text = RecordError::BadSpeed(1e-300).to_string();
        assert!(
            text.contains("speed 1e-300 is outside 0.01 to 100"),
            "{text}"
        );
    }

    #[test]
    fn an_empty_recording_finishes_at_once_and_still_ticks() {
        struct Ticks(Arc<Mutex<u32>>);
        impl FrameSink for Ticks {
            fn frame(&mut self, _: FaceFrame) {}
            fn tick(&mut self, _: Instant) {
                *self.0.lock().unwrap() += 1;
            }
        }
        let ticks = Arc::new(Mutex::new(0));
        let handle = spawn_replay(
            recording(&[]),
            ReplayOptions::default(),
            Box::new(Ticks(Arc::clone(&ticks))),
        )
        .unwrap();
        assert!(handle.wait_finished(Duration::from_secs(30)));
        let deadline = Instant::now() + Duration::from_secs(30);
        while *ticks.lock().unwrap() < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let stats = handle.shutdown();
        assert!(stats.finished);
        assert_eq!(stats.datagrams, 0);
        assert!(*ticks.lock().unwrap() >= 3);
    }

    #[test]
    fn replay_to_stops_when_asked() {
        let rec = recording(&[0, 100_000]);
        let target = UdpSocket::bind("127.0.0.1:0").unwrap();
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let replay = scope.spawn(|| {
                replay_to(
                    &rec,
                    target.local_addr().unwrap(),
                    &ReplayOptions::default(),
                    &stop,
                )
            });
            let mut buf = [0u8; 16];
            target.recv_from(&mut buf).unwrap();
            stop.store(true, Ordering::Relaxed);
            let stats = replay.join().unwrap().unwrap();
            assert_eq!(stats.datagrams, 1);
            assert!(!stats.finished);
        });
    }
}

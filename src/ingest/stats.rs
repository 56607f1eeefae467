//! Ingest counters (`Stats`) and the rate limiter that keeps hostile input from flooding the log.

use std::time::{Duration, Instant};

/// Counters of everything the ingest side received, as plain numbers.
///
/// Three identities hold at every snapshot, so that no datagram or message goes unaccounted:
///
/// - datagrams: `datagrams == ok_datagrams + malformed_datagrams + oversized_datagrams`;
/// - messages (inside OK datagrams): `messages == vmc_messages + facecap_messages +
///   ignored_messages + unknown_address + bad_arguments`;
/// - frames: `frames == vmc_frames + facecap_frames`.
///
/// The value-level counters (`non_finite_values`, `degenerate_rotations`,
/// `unknown_blendshapes`) count values inside messages that were otherwise well formed, so they
/// are not part of the message identity. [`Stats::is_consistent`] checks the identities.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Datagrams handed to the decoder.
    pub datagrams: u64,
    /// Datagrams that decoded as OSC, whatever their messages were.
    pub ok_datagrams: u64,
    /// Datagrams that are not valid OSC: empty, undecodable, a bundle whose element sizes do not
    /// tile it, bundles nested too deep, or bytes left over after the packet.
    pub malformed_datagrams: u64,
    /// Datagrams larger than [`MAX_DATAGRAM`](super::MAX_DATAGRAM), dropped undecoded.
    pub oversized_datagrams: u64,
    /// Bytes in all datagrams.
    pub bytes: u64,
    /// OSC messages found in OK datagrams (bundles walked).
    pub messages: u64,
    /// VMC messages with a handled address and well-typed arguments.
    pub vmc_messages: u64,
    /// Face Cap messages with a handled address and well-typed arguments.
    pub facecap_messages: u64,
    /// Messages under `/VMC/` that facewire deliberately ignores (root, cameras, devices, ...).
    pub ignored_messages: u64,
    /// Messages whose address neither protocol knows.
    pub unknown_address: u64,
    /// Messages with a known address but too few or wrongly typed arguments; dropped.
    pub bad_arguments: u64,
    /// NaN or infinite values (weights, times, rotation components); the value is dropped.
    pub non_finite_values: u64,
    /// Rotations that were finite but zero, so they have no direction; dropped.
    pub degenerate_rotations: u64,
    /// Blendshape names (VMC) or indices (Face Cap) that are not one of the 52 ARKit channels,
    /// such as VRM presets (`A`, `Blink`); ignored.
    pub unknown_blendshapes: u64,
    /// Frames committed (handed to the frame callback).
    pub frames: u64,
    /// Frames committed by a VMC `/VMC/Ext/Blend/Apply`.
    pub vmc_frames: u64,
    /// Frames committed at the end of a datagram carrying Face Cap messages.
    pub facecap_frames: u64,
    /// Senders whose accumulation state was dropped to make room for a new sender.
    pub senders_evicted: u64,
    /// Socket receive errors (filled by the server; the pure decoder never sees one).
    pub recv_errors: u64,
}

impl Stats {
    /// Whether the datagram, message and frame identities documented on [`Stats`] hold.
    pub fn is_consistent(&self) -> bool {
        self.datagrams == self.ok_datagrams + self.malformed_datagrams + self.oversized_datagrams
            && self.messages
                == self.vmc_messages
                    + self.facecap_messages
                    + self.ignored_messages
                    + self.unknown_address
                    + self.bad_arguments
            && self.frames == self.vmc_frames + self.facecap_frames
    }
}

/// Allows one log line per interval and counts the lines it suppressed in between.
///
/// Time comes from the caller, so the limiter is deterministic in tests; an instant earlier than
/// the last allowed one is treated as "too soon".
#[derive(Debug, Clone)]
pub struct RateLimiter {
    /// Minimum time between two allowed lines.
    interval: Duration,
    /// When the last line was allowed.
    last: Option<Instant>,
    /// Lines suppressed since the last allowed one.
    suppressed: u64,
}

impl RateLimiter {
    /// A limiter allowing one line per `interval`.
    pub const fn new(interval: Duration) -> RateLimiter {
        RateLimiter {
            interval,
            last: None,
            suppressed: 0,
        }
    }

    /// A limiter allowing one line per second.
    pub const fn per_second() -> RateLimiter {
        RateLimiter::new(Duration::from_secs(1))
    }

    /// Whether a line may be logged at `now`. `Some(n)` allows it, `n` being how many lines were
    /// suppressed since the previous allowed one (print it so the reader knows); `None` means
    /// suppress this one.
    pub fn allow(&mut self, now: Instant) -> Option<u64> {
        let due = match self.last {
            None => true,
            Some(last) => now.checked_duration_since(last).unwrap_or_default() >= self.interval,
        };
        if due {
            self.last = Some(now);
            Some(std::mem::take(&mut self.suppressed))
        } else {
            self.suppressed = self.suppressed.saturating_add(1);
            None
        }
    }
}

impl Default for RateLimiter {
    fn default() -> RateLimiter {
        RateLimiter::per_second()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limiter_allows_one_line_per_interval_and_counts_the_rest() {
        let t0 = Instant::now();
        let mut limiter = RateLimiter::per_second();
        assert_eq!(limiter.allow(t0), Some(0));
        assert_eq!(limiter.allow(t0), None);
        assert_eq!(limiter.allow(t0 + Duration::from_millis(500)), None);
        assert_eq!(limiter.allow(t0 + Duration::from_millis(999)), None);
        assert_eq!(limiter.allow(t0 + Duration::from_secs(1)), Some(3));
        assert_eq!(limiter.allow(t0 + Duration::from_millis(1500)), None);
        assert_eq!(limiter.allow(t0 + Duration::from_secs(5)), Some(1));
        assert_eq!(limiter.allow(t0 + Duration::from_secs(6)), Some(0));
    }

    #[test]
    fn limiter_treats_earlier_instants_as_too_soon() {
        let t0 = Instant::now() + Duration::from_secs(10);
        let mut limiter = RateLimiter::per_second();
        assert_eq!(limiter.allow(t0), Some(0));
        assert_eq!(limiter.allow(t0 - Duration::from_secs(5)), None);
        assert_eq!(limiter.allow(t0 + Duration::from_secs(1)), Some(1));
    }

    #[test]
    fn default_stats_are_consistent() {
        assert!(Stats::default().is_consistent());
        let stats = Stats {
            datagrams: 3,
            ok_datagrams: 1,
            malformed_datagrams: 1,
            ..Stats::default()
        };
        assert!(!stats.is_consistent());
    }
}

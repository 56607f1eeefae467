//! The hand-off of face frames from the ingest thread to the render thread (newest frame wins)
//! and its counters. It knows frames only: the control events for the window's event loop are
//! the app layer's event enum.
//!
//! Frames travel through a lock-free SPSC ring buffer (`ringbuf`). The renderer drains it right
//! before it draws and keeps only the newest frame; the frames it skips are counted as
//! superseded. When the renderer stalls (a minimised window, a long GPU stall) the queue fills;
//! the sender then drops the *oldest* queued frame to make room, so the renderer resumes with
//! fresh data, and counts the drop. Dropping the oldest needs the read end, which the sender
//! borrows through a mutex that is otherwise only taken, uncontended, by the renderer's drain.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use ringbuf::traits::{Consumer, Observer, Producer, Split};
use ringbuf::{HeapCons, HeapProd, HeapRb};

use crate::arkit::FaceFrame;

/// Counters of the hand-off, shared by both ends.
#[derive(Debug, Default)]
pub struct BridgeCounters {
    sent: AtomicU64,
    dropped: AtomicU64,
    superseded: AtomicU64,
    taken: AtomicU64,
}

/// A snapshot of the hand-off counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct BridgeStats {
    /// Frames handed to the queue.
    pub sent: u64,
    /// Frames dropped because the queue was full (the oldest queued one each time).
    pub dropped: u64,
    /// Frames the renderer skipped because a newer one was queued behind them.
    pub superseded: u64,
    /// Frames the renderer took to draw.
    pub taken: u64,
}

impl BridgeStats {
    /// Whether every frame handed off has been taken, skipped or dropped: nothing is left to
    /// draw.
    pub fn idle(&self) -> bool {
        self.taken + self.superseded + self.dropped >= self.sent
    }
}

impl BridgeCounters {
    /// A consistent-enough snapshot of the counters.
    pub fn snapshot(&self) -> BridgeStats {
        BridgeStats {
            sent: self.sent.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            superseded: self.superseded.load(Ordering::Relaxed),
            taken: self.taken.load(Ordering::Relaxed),
        }
    }
}

/// The ingest end of the hand-off.
pub struct FrameSender {
    prod: HeapProd<FaceFrame>,
    cons: Arc<Mutex<HeapCons<FaceFrame>>>,
    counters: Arc<BridgeCounters>,
}

/// The render end of the hand-off.
pub struct FrameReceiver {
    cons: Arc<Mutex<HeapCons<FaceFrame>>>,
    counters: Arc<BridgeCounters>,
}

/// Creates a hand-off queue holding at most `capacity` frames (at least 1).
pub fn channel(capacity: usize) -> (FrameSender, FrameReceiver) {
    let (prod, cons) = HeapRb::<FaceFrame>::new(capacity.max(1)).split();
    let cons = Arc::new(Mutex::new(cons));
    let counters = Arc::new(BridgeCounters::default());
    (
        FrameSender {
            prod,
            cons: Arc::clone(&cons),
            counters: Arc::clone(&counters),
        },
        FrameReceiver { cons, counters },
    )
}

impl FrameSender {
    /// Queues `frame`; when the queue is full, drops the oldest queued frame first.
    pub fn send(&mut self, frame: FaceFrame) {
        let mut frame = frame;
        loop {
            match self.prod.try_push(frame) {
                Ok(()) => break,
                Err(back) => {
                    frame = back;
                    let popped = self
                        .cons
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .try_pop();
                    if popped.is_some() {
                        self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                        tracing::trace!("hand-off queue full; dropped the oldest frame");
                    }
                }
            }
        }
        self.counters.sent.fetch_add(1, Ordering::Relaxed);
    }

    /// The shared counters.
    pub fn counters(&self) -> Arc<BridgeCounters> {
        Arc::clone(&self.counters)
    }
}

impl FrameReceiver {
    /// Drains the queue and returns the newest frame, if any arrived since the last call.
    pub fn take_newest(&mut self) -> Option<FaceFrame> {
        self.take_each(|_| {})
    }

    /// Drains the queue like [`FrameReceiver::take_newest`], handing every queued frame to
    /// `each` in order first (for motion smoothing, which needs the sender's own rhythm, not
    /// the renderer's).
    pub fn take_each(&mut self, mut each: impl FnMut(&FaceFrame)) -> Option<FaceFrame> {
        let mut cons = self.cons.lock().unwrap_or_else(PoisonError::into_inner);
        let mut newest = None;
        let mut skipped = 0u64;
        while let Some(frame) = cons.try_pop() {
            each(&frame);
            if newest.replace(frame).is_some() {
                skipped += 1;
            }
        }
        drop(cons);
        if newest.is_some() {
            self.counters.taken.fetch_add(1, Ordering::Relaxed);
            self.counters
                .superseded
                .fetch_add(skipped, Ordering::Relaxed);
        }
        newest
    }

    /// Frames waiting in the queue.
    pub fn pending(&self) -> usize {
        self.cons
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .occupied_len()
    }

    /// The shared counters.
    pub fn counters(&self) -> Arc<BridgeCounters> {
        Arc::clone(&self.counters)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arkit::{Channel, Protocol};
    use std::time::Instant;

    fn frame(v: f32) -> FaceFrame {
        let mut f = FaceFrame::empty(
            Protocol::Vmc,
            "127.0.0.1:1".parse().unwrap(),
            Instant::now(),
        );
        f.set(Channel::JawOpen, v);
        f
    }

    #[test]
    fn take_each_sees_every_queued_frame_in_order() {
        let (mut tx, mut rx) = channel(8);
        for i in 0..3 {
            tx.send(frame(i as f32));
        }
        let mut seen = Vec::new();
        let newest = rx.take_each(|f| seen.push(f.get(Channel::JawOpen).unwrap()));
        assert_eq!(seen, [0.0, 1.0, 2.0]);
        assert_eq!(newest.unwrap().get(Channel::JawOpen), Some(2.0));
        assert_eq!(rx.counters().snapshot().superseded, 2);
        assert!(rx.take_each(|_| panic!("nothing is queued")).is_none());
    }

    #[test]
    fn newest_wins_and_skipped_are_counted() {
        let (mut tx, mut rx) = channel(8);
        assert!(rx.take_newest().is_none());
        for i in 0..3 {
            tx.send(frame(i as f32));
        }
        let got = rx.take_newest().unwrap();
        assert_eq!(got.get(Channel::JawOpen), Some(2.0));
        assert!(rx.take_newest().is_none());
        let s = rx.counters().snapshot();
        assert_eq!((s.sent, s.taken, s.superseded, s.dropped), (3, 1, 2, 0));
    }

    #[test]
    fn full_queue_drops_the_oldest() {
        let (mut tx, mut rx) = channel(2);
        for i in 0..5 {
            tx.send(frame(i as f32));
        }
        assert_eq!(rx.pending(), 2);
        let s = tx.counters().snapshot();
        assert_eq!(s.dropped, 3);
        assert_eq!(rx.take_newest().unwrap().get(Channel::JawOpen), Some(4.0));
    }

    #[test]
    fn works_across_threads() {
        let (mut tx, mut rx) = channel(4);
        let producer = std::thread::spawn(move || {
            for i in 0..10_000 {
                tx.send(frame(i as f32));
            }
        });
        let mut last = -1.0;
        loop {
            if let Some(f) = rx.take_newest() {
                let v = f.get(Channel::JawOpen).unwrap();
                assert!(v > last, "frames must arrive in order");
                last = v;
                if v == 9999.0 {
                    break;
                }
            }
            std::thread::yield_now();
        }
        producer.join().unwrap();
        let s = rx.counters().snapshot();
        assert_eq!(s.sent, 10_000);
        assert_eq!(s.taken + s.superseded + s.dropped, 10_000);
    }
}

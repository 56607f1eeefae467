//! The channels of the blendshape names a VMC sender sent, remembered by their position in its
//! frame: a sender repeats the same names in the same order every frame, so a name equal to the
//! one at its position in the previous frame resolves without being parsed again.

use crate::arkit::Channel;

/// Positions remembered per frame: more than the 52 channels and the VRM presets a sender adds.
const POSITIONS: usize = 96;

/// Bytes of a name remembered; longer names are always parsed.
const NAME_BYTES: usize = 32;

/// One remembered name and what it parsed to.
#[derive(Debug, Clone, Copy)]
struct Remembered {
    /// The name's length (0: nothing remembered at this position).
    len: u8,
    /// The name's bytes, the first `len` of them.
    bytes: [u8; NAME_BYTES],
    /// What [`Channel::parse`] made of it.
    channel: Option<Channel>,
}

impl Remembered {
    const EMPTY: Remembered = Remembered {
        len: 0,
        bytes: [0; NAME_BYTES],
        channel: None,
    };
}

/// The names of one sender's frame, by position; fixed size, so a sender costs the same memory
/// whatever it sends.
#[derive(Debug, Clone)]
pub(crate) struct NameCache {
    /// The names at each position of the previous frames.
    names: Box<[Remembered; POSITIONS]>,
    /// The position of the next name in the current frame.
    at: usize,
}

impl Default for NameCache {
    fn default() -> Self {
        NameCache {
            names: Box::new([Remembered::EMPTY; POSITIONS]),
            at: 0,
        }
    }
}

impl NameCache {
    /// The channel `name` stands for (as [`Channel::parse`] says), taking the next position of
    /// the frame.
    pub(crate) fn channel(&mut self, name: &str) -> Option<Channel> {
        let at = self.at;
        self.at = self.at.saturating_add(1);
        let bytes = name.as_bytes();
        let Some(slot) = self.names.get_mut(at) else {
            return Channel::parse(name);
        };
        let len = usize::from(slot.len);
        if len == bytes.len() && len > 0 && slot.bytes.get(..len) == Some(bytes) {
            return slot.channel;
        }
        let channel = Channel::parse(name);
        if let Some(room) = slot.bytes.get_mut(..bytes.len()) {
            room.copy_from_slice(bytes);
            slot.len = bytes.len() as u8;
            slot.channel = channel;
        }
        channel
    }

    /// Starts the next frame (after an `Apply`).
    pub(crate) fn next_frame(&mut self) {
        self.at = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_names_resolve_as_parsing_does() {
        let mut cache = NameCache::default();
        let frames = [
            ["eyeBlinkLeft", "JawOpen", "A", "mouth_smile_L"],
            ["eyeBlinkLeft", "JawOpen", "A", "mouth_smile_L"],
            // The same position with another name, and names in another order.
            ["jawOpen", "eyeBlinkLeft", "Blink", "mouthSmile_R"],
        ];
        for frame in frames {
            for name in frame {
                assert_eq!(cache.channel(name), Channel::parse(name), "{name}");
            }
            cache.next_frame();
        }
    }

    #[test]
    fn long_names_and_long_frames_are_parsed_every_time() {
        let mut cache = NameCache::default();
        let long = "eye_blink_left_with_a_name_longer_than_it_keeps";
        assert_eq!(cache.channel(long), Channel::parse(long));
        assert_eq!(cache.channel(""), None);
        for i in 0..(POSITIONS + 10) {
            let name = if i % 2 == 0 { "jawOpen" } else { "nothing" };
            assert_eq!(cache.channel(name), Channel::parse(name));
        }
        cache.next_frame();
        assert_eq!(cache.channel(long), Channel::parse(long));
    }
}

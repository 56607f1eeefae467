//! Decoded texture pixels, shared: every texture drawn from one image holds the same bytes.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// The RGBA8 bytes of a decoded image, behind a reference count: cloning shares them, so the
/// textures of a file that name one image many times cost its pixels once. The bytes stay in the
/// decoder's own `Vec` (an `Arc<[u8]>` would copy them once more on the way in).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Pixels(Arc<Vec<u8>>);

impl Pixels {
    /// Whether `self` and `other` are the same decoded bytes (not merely equal ones).
    pub fn shares_with(&self, other: &Pixels) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// A key telling pixel buffers apart: equal for clones, different for buffers made
    /// separately (to count each shared buffer once).
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }
}

impl Deref for Pixels {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl From<Vec<u8>> for Pixels {
    fn from(bytes: Vec<u8>) -> Pixels {
        Pixels(Arc::new(bytes))
    }
}

impl fmt::Debug for Pixels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pixels({} bytes)", self.0.len())
    }
}

impl PartialEq<[u8]> for Pixels {
    fn eq(&self, other: &[u8]) -> bool {
        self.0[..] == *other
    }
}

impl PartialEq<Vec<u8>> for Pixels {
    fn eq(&self, other: &Vec<u8>) -> bool {
        *self.0 == *other
    }
}

impl<const N: usize> PartialEq<[u8; N]> for Pixels {
    fn eq(&self, other: &[u8; N]) -> bool {
        self.0[..] == other[..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_and_compare_by_content() {
        let a = Pixels::from(vec![1, 2, 3, 4]);
        let b = a.clone();
        let c = Pixels::from(vec![1, 2, 3, 4]);
        assert!(a.shares_with(&b) && a.id() == b.id());
        assert!(!a.shares_with(&c));
        assert_eq!(a, c);
        assert_eq!(a, vec![1, 2, 3, 4]);
        assert_eq!(a, [1, 2, 3, 4]);
        assert_eq!(a.len(), 4);
        assert_eq!(&a[1..3], &[2, 3]);
        assert_eq!(format!("{a:?}"), "Pixels(4 bytes)");
    }
}

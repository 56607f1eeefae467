//! [`Deltas`]: one attribute of one morph target (position, normal or tangent offsets), stored
//! sparsely. A target usually moves a small part of its primitive (a brow, the jaw), so only
//! the vertices whose delta is not zero are kept, with their indices; every other vertex reads
//! as [`Vec3::ZERO`]. Reads look like a slice of one delta per vertex (`len`, indexing, `get`,
//! `iter`), so code written for dense deltas keeps working.

use std::ops::{Index, IndexMut};

use glam::Vec3;

/// What every vertex a [`Deltas`] does not store reads as.
static ZERO: Vec3 = Vec3::ZERO;

/// Whether `v` is stored: anything but `+0.0` in all three components (a `-0.0` is kept, so
/// that converting to and from the dense form gives back the same bits).
fn stored(v: Vec3) -> bool {
    v.to_array().iter().any(|c| c.to_bits() != 0)
}

/// One delta per vertex for `len` vertices, stored as the ascending indices of the vertices
/// whose delta is not zero and those deltas.
///
/// Compares equal to a dense `Vec<Vec3>` (or array) holding the same deltas, element by element.
#[derive(Clone, Default)]
pub struct Deltas {
    /// Number of vertices (what [`Deltas::len`] reports).
    len: usize,
    /// The vertices with a stored delta, ascending, all below `len`.
    indices: Vec<u32>,
    /// Their deltas, parallel to `indices`.
    values: Vec<Vec3>,
}

impl Deltas {
    /// No deltas for no vertices (a target without this attribute).
    pub fn new() -> Deltas {
        Deltas::default()
    }

    /// Keeps the non-zero entries of a dense list, one delta per vertex.
    pub fn from_dense(dense: &[Vec3]) -> Deltas {
        let mut deltas = Deltas {
            len: dense.len(),
            ..Deltas::default()
        };
        for (v, &d) in dense.iter().enumerate() {
            if stored(d) {
                deltas.push_entry(v, d);
            }
        }
        deltas.indices.shrink_to_fit();
        deltas.values.shrink_to_fit();
        deltas
    }

    /// `len` vertices with `entries` (vertex, delta) set, in any order; a later entry for the
    /// same vertex replaces an earlier one, and entries at or past `len` are ignored.
    pub fn from_entries(len: usize, entries: impl IntoIterator<Item = (usize, Vec3)>) -> Deltas {
        let mut deltas = Deltas {
            len,
            ..Deltas::default()
        };
        for (v, d) in entries {
            if v < len {
                deltas.set(v, d);
            }
        }
        deltas
    }

    /// Appends an entry past every stored one (`v` above the last stored index).
    fn push_entry(&mut self, v: usize, d: Vec3) {
        // `len` came from a `Vec<Vec3>` or a checked vertex count; vertex counts fit in u32
        // everywhere facewire draws.
        self.indices.push(v as u32);
        self.values.push(d);
    }

    /// Appends one vertex with delta `d` (stored only when it is not zero).
    pub fn push(&mut self, d: Vec3) {
        if stored(d) {
            self.push_entry(self.len, d);
        }
        self.len += 1;
    }

    /// Frees every stored delta, keeping the vertex count: the list then moves nothing.
    pub fn release(&mut self) {
        self.indices = Vec::new();
        self.values = Vec::new();
    }

    /// Number of vertices (stored or not).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether this covers no vertices (a target without this attribute).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The delta of vertex `v`, or `None` past [`Deltas::len`].
    pub fn get(&self, v: usize) -> Option<&Vec3> {
        if v >= self.len {
            return None;
        }
        Some(match self.find(v) {
            Ok(at) => &self.values[at],
            Err(_) => &ZERO,
        })
    }

    /// Where vertex `v` is stored, or where it would go.
    fn find(&self, v: usize) -> Result<usize, usize> {
        match u32::try_from(v) {
            Ok(v) => self.indices.binary_search(&v),
            Err(_) => Err(self.indices.len()),
        }
    }

    /// Sets the delta of vertex `v` (below [`Deltas::len`]). Panics past the end, like a slice.
    pub fn set(&mut self, v: usize, d: Vec3) {
        *self.slot(v) = d;
    }

    /// The stored delta of vertex `v`, inserting a zero first if it has none.
    fn slot(&mut self, v: usize) -> &mut Vec3 {
        assert!(
            v < self.len,
            "delta index {v} out of range for {} vertices",
            self.len
        );
        let at = match self.find(v) {
            Ok(at) => at,
            Err(at) => {
                self.indices.insert(at, v as u32);
                self.values.insert(at, Vec3::ZERO);
                at
            }
        };
        &mut self.values[at]
    }

    /// The stored vertices (ascending) and their deltas, the only vertices that move.
    pub fn entries(&self) -> impl ExactSizeIterator<Item = (u32, Vec3)> + '_ {
        self.indices
            .iter()
            .copied()
            .zip(self.values.iter().copied())
    }

    /// The stored vertices, ascending.
    pub fn indices(&self) -> &[u32] {
        &self.indices
    }

    /// Every vertex's delta in order, zeros included.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            deltas: self,
            vertex: 0,
            next: 0,
        }
    }

    /// The dense form: one delta per vertex.
    pub fn to_vec(&self) -> Vec<Vec3> {
        let mut dense = vec![Vec3::ZERO; self.len];
        for (v, d) in self.entries() {
            dense[v as usize] = d;
        }
        dense
    }
}

impl std::fmt::Debug for Deltas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deltas")
            .field("len", &self.len)
            .field("entries", &self.entries().collect::<Vec<_>>())
            .finish()
    }
}

impl PartialEq for Deltas {
    /// Equal when they read the same for every vertex, however they are stored.
    fn eq(&self, other: &Deltas) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl From<Vec<Vec3>> for Deltas {
    fn from(dense: Vec<Vec3>) -> Deltas {
        Deltas::from_dense(&dense)
    }
}

impl From<&[Vec3]> for Deltas {
    fn from(dense: &[Vec3]) -> Deltas {
        Deltas::from_dense(dense)
    }
}

impl<const N: usize> From<[Vec3; N]> for Deltas {
    fn from(dense: [Vec3; N]) -> Deltas {
        Deltas::from_dense(&dense)
    }
}

impl FromIterator<Vec3> for Deltas {
    fn from_iter<I: IntoIterator<Item = Vec3>>(iter: I) -> Deltas {
        let mut deltas = Deltas::default();
        for d in iter {
            deltas.push(d);
        }
        deltas.indices.shrink_to_fit();
        deltas.values.shrink_to_fit();
        deltas
    }
}

impl Index<usize> for Deltas {
    type Output = Vec3;

    fn index(&self, v: usize) -> &Vec3 {
        match self.get(v) {
            Some(d) => d,
            None => panic!("delta index {v} out of range for {} vertices", self.len),
        }
    }
}

impl IndexMut<usize> for Deltas {
    /// Stores a zero delta for `v` first when it has none.
    fn index_mut(&mut self, v: usize) -> &mut Vec3 {
        self.slot(v)
    }
}

/// Iterates every vertex's delta, zeros included; see [`Deltas::iter`].
#[derive(Clone)]
pub struct Iter<'a> {
    deltas: &'a Deltas,
    /// The next vertex.
    vertex: usize,
    /// The next stored entry.
    next: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a Vec3;

    fn next(&mut self) -> Option<&'a Vec3> {
        if self.vertex >= self.deltas.len {
            return None;
        }
        let v = self.vertex;
        self.vertex += 1;
        match self.deltas.indices.get(self.next) {
            Some(&i) if i as usize == v => {
                self.next += 1;
                Some(&self.deltas.values[self.next - 1])
            }
            _ => Some(&ZERO),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.deltas.len - self.vertex;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a Deltas {
    type Item = &'a Vec3;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl PartialEq<[Vec3]> for Deltas {
    fn eq(&self, dense: &[Vec3]) -> bool {
        self.len == dense.len() && self.iter().zip(dense).all(|(a, b)| a == b)
    }
}

impl PartialEq<Vec<Vec3>> for Deltas {
    fn eq(&self, dense: &Vec<Vec3>) -> bool {
        *self == dense[..]
    }
}

impl<const N: usize> PartialEq<[Vec3; N]> for Deltas {
    fn eq(&self, dense: &[Vec3; N]) -> bool {
        *self == dense[..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_released_list_keeps_its_length_and_moves_nothing() {
        let mut d = Deltas::from_dense(&[Vec3::ZERO, Vec3::X, Vec3::ZERO, Vec3::Y]);
        assert_eq!(d.entries().count(), 2);
        d.release();
        assert_eq!(d.len(), 4);
        assert_eq!(d.entries().count(), 0);
        assert_eq!(d.get(1), Some(&Vec3::ZERO));
        assert_eq!(d.to_vec(), vec![Vec3::ZERO; 4]);
    }

    #[test]
    fn dense_round_trip_keeps_bits_and_drops_zeros() {
        let dense = vec![
            Vec3::ZERO,
            Vec3::new(-0.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, 2.0),
            Vec3::ZERO,
            Vec3::new(0.0, f32::MIN_POSITIVE, 0.0),
        ];
        let deltas = Deltas::from_dense(&dense);
        assert_eq!(deltas.len(), 5);
        assert_eq!(deltas.indices(), &[1, 2, 4]);
        let bits = |v: &[Vec3]| -> Vec<[u32; 3]> {
            v.iter().map(|d| d.to_array().map(f32::to_bits)).collect()
        };
        assert_eq!(bits(&deltas.to_vec()), bits(&dense));
        let iterated: Vec<Vec3> = deltas.iter().copied().collect();
        assert_eq!(bits(&iterated), bits(&dense));
        assert_eq!(deltas, dense);
        assert_eq!(dense.iter().copied().collect::<Deltas>(), deltas);
        assert_eq!(deltas[2], Vec3::new(1.0, 0.0, 2.0));
        assert_eq!(deltas[3], Vec3::ZERO);
        assert_eq!(deltas.get(5), None);
        assert_eq!(deltas.iter().len(), 5);
    }

    #[test]
    fn writes_insert_in_order() {
        let mut deltas = Deltas::from_dense(&[Vec3::ZERO, Vec3::X, Vec3::ZERO]);
        deltas[2] = Vec3::Y;
        deltas.set(0, Vec3::Z);
        deltas[1].x += 1.0;
        assert_eq!(deltas, vec![Vec3::Z, Vec3::X * 2.0, Vec3::Y]);
        assert_eq!(deltas.indices(), &[0, 1, 2]);
        let built = Deltas::from_entries(3, [(2, Vec3::Y), (0, Vec3::X), (7, Vec3::ONE)]);
        assert_eq!(built, [Vec3::X, Vec3::ZERO, Vec3::Y]);
        assert!(Deltas::new().is_empty());
        assert_ne!(built, vec![Vec3::X, Vec3::ZERO]);
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn writes_past_the_end_panic() {
        Deltas::from_dense(&[Vec3::ZERO])[1] = Vec3::X;
    }
}

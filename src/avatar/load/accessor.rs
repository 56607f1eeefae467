//! Bounds-checked glTF accessor reading: every byte range is verified before the `gltf` reader runs.
//!
//! The `gltf` crate validates indices between JSON objects but not the byte ranges, element counts
//! or component layouts of accessors, and its reader indexes slices (and subtracts from counts)
//! without checking. These checks make a hostile accessor an error instead of a panic.

use glam::{Vec2, Vec3};
use gltf::accessor::sparse::IndexType;
use gltf::accessor::{DataType, Dimensions, Item, Iter};
use gltf::buffer::Data;
use gltf::Accessor;

/// What an accessor must hold to be read for one use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Three floats: positions, normals and morph target deltas.
    Vec3F32,
    /// Two floats, or two normalised unsigned bytes or shorts: texture coordinates.
    TexCoord,
    /// One unsigned byte, short or int: triangle indices.
    Index,
}

/// Verifies that `accessor` has a layout `kind` accepts and that every byte the `gltf` reader
/// will touch (dense data, sparse indices and sparse values) lies inside `buffers`. Returns the
/// element count.
pub(super) fn check(
    accessor: &Accessor<'_>,
    kind: Kind,
    buffers: &[Data],
) -> Result<usize, String> {
    let (data_type, dims) = (accessor.data_type(), accessor.dimensions());
    let layout_ok = match kind {
        Kind::Vec3F32 => data_type == DataType::F32 && dims == Dimensions::Vec3,
        Kind::TexCoord => {
            matches!(data_type, DataType::F32 | DataType::U8 | DataType::U16)
                && dims == Dimensions::Vec2
        }
        Kind::Index => {
            matches!(data_type, DataType::U8 | DataType::U16 | DataType::U32)
                && dims == Dimensions::Scalar
        }
    };
    if !layout_ok {
        return Err(format!(
            "holds {dims:?} of {data_type:?}, which is not valid here"
        ));
    }
    let count = accessor.count();
    if count == 0 {
        return Err("has count 0".into());
    }
    let element = accessor.size();
    match accessor.sparse() {
        None => {
            let view = accessor
                .view()
                .ok_or_else(|| "has neither a bufferView nor sparse data".to_string())?;
            check_range(&view, accessor.offset(), count, element, buffers)?;
        }
        Some(sparse) => {
            if let Some(view) = accessor.view() {
                check_range(&view, accessor.offset(), count, element, buffers)?;
            }
            let sparse_count = sparse.count();
            if sparse_count == 0 {
                return Err("has a sparse count of 0".into());
            }
            let indices = sparse.indices();
            let index_size = match indices.index_type() {
                IndexType::U8 => 1,
                IndexType::U16 => 2,
                IndexType::U32 => 4,
            };
            check_range(
                &indices.view(),
                indices.offset(),
                sparse_count,
                index_size,
                buffers,
            )
            .map_err(|e| format!("sparse indices: {e}"))?;
            let values = sparse.values();
            check_range(
                &values.view(),
                values.offset(),
                sparse_count,
                element,
                buffers,
            )
            .map_err(|e| format!("sparse values: {e}"))?;
        }
    }
    Ok(count)
}

/// Checks that `count` elements of `element` bytes, starting `offset` bytes into `view` at the
/// view's stride, fit inside the view, and that the view fits inside its buffer.
fn check_range(
    view: &gltf::buffer::View<'_>,
    offset: usize,
    count: usize,
    element: usize,
    buffers: &[Data],
) -> Result<(), String> {
    let stride = view.stride().unwrap_or(element);
    if stride < element {
        return Err(format!(
            "buffer view {} has a byteStride of {stride}, smaller than its {element}-byte elements",
            view.index()
        ));
    }
    let buffer_len = buffers
        .get(view.buffer().index())
        .map(|data| data.len())
        .ok_or_else(|| format!("buffer {} is not loaded", view.buffer().index()))?;
    let view_fits = view
        .offset()
        .checked_add(view.length())
        .is_some_and(|end| end <= buffer_len);
    if !view_fits {
        return Err(format!(
            "buffer view {} (offset {}, length {}) runs past the end of buffer {} ({buffer_len} bytes)",
            view.index(),
            view.offset(),
            view.length(),
            view.buffer().index()
        ));
    }
    let end = stride
        .checked_mul(count.saturating_sub(1))
        .and_then(|bytes| bytes.checked_add(element))
        .and_then(|bytes| bytes.checked_add(offset));
    match end {
        Some(end) if end <= view.length() => Ok(()),
        _ => Err(format!(
            "{count} elements at offset {offset} (stride {stride}) run past the end of buffer view {} ({} bytes)",
            view.index(),
            view.length()
        )),
    }
}

/// The `gltf` iterator over an accessor already passed through [`check`].
fn iter<'s, T: Item>(accessor: Accessor<'_>, buffers: &'s [Data]) -> Result<Iter<'s, T>, String> {
    Iter::new(accessor, |buffer: gltf::Buffer<'_>| {
        buffers.get(buffer.index()).map(|data| &data.0[..])
    })
    .ok_or_else(|| "its data could not be located".to_string())
}

/// Collects exactly `count` items, or explains the shortfall.
fn collect_exact<T>(items: impl Iterator<Item = T>, count: usize) -> Result<Vec<T>, String> {
    let out: Vec<T> = items.take(count).collect();
    if out.len() == count {
        Ok(out)
    } else {
        Err(format!("yielded {} of its {count} elements", out.len()))
    }
}

/// Reads a checked `Vec3` float accessor of `count` elements (dense or sparse).
pub(super) fn read_vec3(
    accessor: Accessor<'_>,
    count: usize,
    buffers: &[Data],
) -> Result<Vec<Vec3>, String> {
    collect_exact(iter::<[f32; 3]>(accessor, buffers)?.map(Vec3::from), count)
}

/// Reads a checked texture coordinate accessor, converting normalised integers to floats.
pub(super) fn read_vec2(
    accessor: Accessor<'_>,
    count: usize,
    buffers: &[Data],
) -> Result<Vec<Vec2>, String> {
    match accessor.data_type() {
        DataType::F32 => collect_exact(iter::<[f32; 2]>(accessor, buffers)?.map(Vec2::from), count),
        DataType::U8 => collect_exact(
            iter::<[u8; 2]>(accessor, buffers)?
                .map(|[u, v]| Vec2::new(f32::from(u), f32::from(v)) / 255.0),
            count,
        ),
        DataType::U16 => collect_exact(
            iter::<[u16; 2]>(accessor, buffers)?
                .map(|[u, v]| Vec2::new(f32::from(u), f32::from(v)) / 65535.0),
            count,
        ),
        other => Err(format!(
            "texture coordinates of {other:?} are not supported"
        )),
    }
}

/// Reads a checked index accessor as `u32`.
pub(super) fn read_indices(
    accessor: Accessor<'_>,
    count: usize,
    buffers: &[Data],
) -> Result<Vec<u32>, String> {
    match accessor.data_type() {
        DataType::U8 => collect_exact(iter::<u8>(accessor, buffers)?.map(u32::from), count),
        DataType::U16 => collect_exact(iter::<u16>(accessor, buffers)?.map(u32::from), count),
        DataType::U32 => collect_exact(iter::<u32>(accessor, buffers)?, count),
        other => Err(format!("indices of {other:?} are not supported")),
    }
}

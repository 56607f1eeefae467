//! Bounds-checked glTF accessor reading: every byte range is verified before the `gltf` reader runs.
//!
//! The `gltf` crate validates indices between JSON objects but not the byte ranges, element counts
//! or component layouts of accessors, and its reader indexes slices (and subtracts from counts)
//! without checking. These checks make a hostile accessor an error instead of a panic.

use glam::{Mat4, Vec2, Vec3, Vec4};
use gltf::accessor::sparse::IndexType;
use gltf::accessor::{DataType, Dimensions, Item, Iter};
use gltf::buffer::Data;
use gltf::Accessor;

/// What an accessor must hold to be read for one use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Three floats, or three signed or unsigned bytes or shorts, normalised or not: vertex
    /// positions (`KHR_mesh_quantization`).
    Position,
    /// Three floats, or three signed bytes or shorts, normalised or not: morph target position
    /// deltas (`KHR_mesh_quantization`).
    PositionDelta,
    /// Three floats, or three normalised signed bytes or shorts: normals, and morph target
    /// normal and tangent deltas (`KHR_mesh_quantization`).
    Direction,
    /// Two floats, or two signed or unsigned bytes or shorts, normalised or not: texture
    /// coordinates (normalised unsigned ones in core glTF, the rest with
    /// `KHR_mesh_quantization`).
    TexCoord,
    /// One unsigned byte, short or int: triangle indices.
    Index,
    /// Four unsigned bytes or shorts: skin joint indices.
    Joints,
    /// Four floats, or four normalised unsigned bytes or shorts: skin weights.
    Weights,
    /// Three or four floats, or normalised unsigned bytes or shorts: vertex colours.
    Color,
    /// A 4x4 float matrix: inverse bind matrices.
    Mat4F32,
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
    let normalized = accessor.normalized();
    let layout_ok = match kind {
        Kind::Position => dims == Dimensions::Vec3 && data_type != DataType::U32,
        Kind::PositionDelta => {
            matches!(data_type, DataType::F32 | DataType::I8 | DataType::I16)
                && dims == Dimensions::Vec3
        }
        Kind::Direction => {
            (data_type == DataType::F32
                || (normalized && matches!(data_type, DataType::I8 | DataType::I16)))
                && dims == Dimensions::Vec3
        }
        Kind::TexCoord => dims == Dimensions::Vec2 && data_type != DataType::U32,
        Kind::Index => {
            matches!(data_type, DataType::U8 | DataType::U16 | DataType::U32)
                && dims == Dimensions::Scalar
        }
        Kind::Joints => {
            matches!(data_type, DataType::U8 | DataType::U16) && dims == Dimensions::Vec4
        }
        Kind::Weights => {
            matches!(data_type, DataType::F32 | DataType::U8 | DataType::U16)
                && dims == Dimensions::Vec4
        }
        Kind::Color => {
            matches!(data_type, DataType::F32 | DataType::U8 | DataType::U16)
                && matches!(dims, Dimensions::Vec3 | Dimensions::Vec4)
        }
        Kind::Mat4F32 => data_type == DataType::F32 && dims == Dimensions::Mat4,
    };
    if !layout_ok {
        let normalized = if normalized && data_type != DataType::F32 {
            " (normalized)"
        } else {
            ""
        };
        return Err(format!(
            "holds {dims:?} of {data_type:?}{normalized}, which is not valid here"
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

/// One stored vector component and its conversion to `f32`, by the rules of glTF 2.0 and
/// `KHR_mesh_quantization`: an integer that is not normalised is its value; a normalised one is
/// `c / 255` or `c / 65535` unsigned, and `max(c / 127, -1)` or `max(c / 32767, -1)` signed.
trait Component: Item + Copy {
    fn to_f32(self, normalized: bool) -> f32;
}

impl Component for f32 {
    fn to_f32(self, _normalized: bool) -> f32 {
        self
    }
}

impl Component for i8 {
    fn to_f32(self, normalized: bool) -> f32 {
        if normalized {
            (f32::from(self) / 127.0).max(-1.0)
        } else {
            f32::from(self)
        }
    }
}

impl Component for u8 {
    fn to_f32(self, normalized: bool) -> f32 {
        if normalized {
            f32::from(self) / 255.0
        } else {
            f32::from(self)
        }
    }
}

impl Component for i16 {
    fn to_f32(self, normalized: bool) -> f32 {
        if normalized {
            (f32::from(self) / 32767.0).max(-1.0)
        } else {
            f32::from(self)
        }
    }
}

impl Component for u16 {
    fn to_f32(self, normalized: bool) -> f32 {
        if normalized {
            f32::from(self) / 65535.0
        } else {
            f32::from(self)
        }
    }
}

/// Reads `count` vectors of `N` components of type `T`, converted to floats.
fn dequantized<T: Component, const N: usize>(
    accessor: Accessor<'_>,
    count: usize,
    buffers: &[Data],
) -> Result<Vec<[f32; N]>, String>
where
    [T; N]: Item,
{
    let normalized = accessor.normalized();
    collect_exact(
        iter::<[T; N]>(accessor, buffers)?.map(|v| v.map(|c| c.to_f32(normalized))),
        count,
    )
}

/// Reads a checked accessor of `N`-component float or (quantized) integer vectors as floats.
fn read_floats<const N: usize>(
    accessor: Accessor<'_>,
    count: usize,
    buffers: &[Data],
) -> Result<Vec<[f32; N]>, String>
where
    [f32; N]: Item,
    [i8; N]: Item,
    [u8; N]: Item,
    [i16; N]: Item,
    [u16; N]: Item,
{
    match accessor.data_type() {
        DataType::F32 => dequantized::<f32, N>(accessor, count, buffers),
        DataType::I8 => dequantized::<i8, N>(accessor, count, buffers),
        DataType::U8 => dequantized::<u8, N>(accessor, count, buffers),
        DataType::I16 => dequantized::<i16, N>(accessor, count, buffers),
        DataType::U16 => dequantized::<u16, N>(accessor, count, buffers),
        DataType::U32 => Err("vectors of U32 are not supported".into()),
    }
}

/// Reads a checked `VEC3` accessor of `count` elements (dense or sparse), of floats or of
/// quantized integers.
pub(super) fn read_vec3(
    accessor: Accessor<'_>,
    count: usize,
    buffers: &[Data],
) -> Result<Vec<Vec3>, String> {
    Ok(read_floats::<3>(accessor, count, buffers)?
        .into_iter()
        .map(Vec3::from)
        .collect())
}

/// Reads a checked texture coordinate accessor of floats or of quantized integers.
pub(super) fn read_vec2(
    accessor: Accessor<'_>,
    count: usize,
    buffers: &[Data],
) -> Result<Vec<Vec2>, String> {
    Ok(read_floats::<2>(accessor, count, buffers)?
        .into_iter()
        .map(Vec2::from)
        .collect())
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

/// Reads a checked joint index accessor (unsigned bytes or shorts).
pub(super) fn read_joints(
    accessor: Accessor<'_>,
    count: usize,
    buffers: &[Data],
) -> Result<Vec<[u16; 4]>, String> {
    match accessor.data_type() {
        DataType::U8 => collect_exact(
            iter::<[u8; 4]>(accessor, buffers)?.map(|j| j.map(u16::from)),
            count,
        ),
        DataType::U16 => collect_exact(iter::<[u16; 4]>(accessor, buffers)?, count),
        other => Err(format!("joint indices of {other:?} are not supported")),
    }
}

/// Reads a checked `VEC3` or `VEC4` accessor of floats or normalised unsigned bytes or shorts as
/// `Vec4`s; a `VEC3` gets a fourth component of 1 (vertex colours without alpha are opaque).
pub(super) fn read_vec4_unorm(
    accessor: Accessor<'_>,
    count: usize,
    buffers: &[Data],
) -> Result<Vec<Vec4>, String> {
    let u8n = |v: u8| f32::from(v) / 255.0;
    let u16n = |v: u16| f32::from(v) / 65535.0;
    match (accessor.dimensions(), accessor.data_type()) {
        (Dimensions::Vec4, DataType::F32) => {
            collect_exact(iter::<[f32; 4]>(accessor, buffers)?.map(Vec4::from), count)
        }
        (Dimensions::Vec4, DataType::U8) => collect_exact(
            iter::<[u8; 4]>(accessor, buffers)?.map(|v| Vec4::from(v.map(u8n))),
            count,
        ),
        (Dimensions::Vec4, DataType::U16) => collect_exact(
            iter::<[u16; 4]>(accessor, buffers)?.map(|v| Vec4::from(v.map(u16n))),
            count,
        ),
        (Dimensions::Vec3, DataType::F32) => collect_exact(
            iter::<[f32; 3]>(accessor, buffers)?.map(|v| Vec3::from(v).extend(1.0)),
            count,
        ),
        (Dimensions::Vec3, DataType::U8) => collect_exact(
            iter::<[u8; 3]>(accessor, buffers)?.map(|v| Vec3::from(v.map(u8n)).extend(1.0)),
            count,
        ),
        (Dimensions::Vec3, DataType::U16) => collect_exact(
            iter::<[u16; 3]>(accessor, buffers)?.map(|v| Vec3::from(v.map(u16n)).extend(1.0)),
            count,
        ),
        (dims, other) => Err(format!("{dims:?} of {other:?} is not supported here")),
    }
}

/// Reads a checked `MAT4` float accessor (column-major, as glTF stores matrices).
pub(super) fn read_mat4(
    accessor: Accessor<'_>,
    count: usize,
    buffers: &[Data],
) -> Result<Vec<Mat4>, String> {
    collect_exact(
        iter::<[[f32; 4]; 4]>(accessor, buffers)?.map(|m| Mat4::from_cols_array_2d(&m)),
        count,
    )
}

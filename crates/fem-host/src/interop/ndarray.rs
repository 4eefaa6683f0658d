//! Fields as `ndarray` arrays: fem keeps a field of `c` components on `n`
//! nodes node-major (`values[node * c + k]`), which is a row-major
//! `n × c` array, so views and conversions share the buffer.

use crate::{Error, Result};
use ndarray::{Array2, ArrayView2};

fn shape(len: usize, components: usize) -> Result<(usize, usize)> {
    if components == 0 || len % components != 0 {
        return Err(Error::InvalidArgument(format!("{len} values are not a whole number of nodes of {components} components")));
    }
    Ok((len / components, components))
}

/// A view of a node-major field as an `n × components` array, no copy.
pub fn field_view<T>(values: &[T], components: usize) -> Result<ArrayView2<'_, T>> {
    let s = shape(values.len(), components)?;
    ArrayView2::from_shape(s, values).map_err(|e| Error::InvalidArgument(e.to_string()))
}

/// A node-major field as an owned `n × components` array; the buffer is
/// moved.
pub fn field_array<T>(values: Vec<T>, components: usize) -> Result<Array2<T>> {
    let s = shape(values.len(), components)?;
    Array2::from_shape_vec(s, values).map_err(|e| Error::InvalidArgument(e.to_string()))
}

/// An `n × c` array as a node-major field: the buffer is reused when the
/// array is in standard (row-major, contiguous) layout, copied otherwise.
pub fn field_from_array<T: Clone>(a: Array2<T>) -> Vec<T> {
    if !a.is_standard_layout() {
        return a.iter().cloned().collect();
    }
    let n = a.len();
    let (mut v, offset) = a.into_raw_vec_and_offset();
    // a contiguous row-major array is v[offset..offset + n]
    let first = offset.unwrap_or(0);
    v.truncate(first + n);
    v.drain(..first);
    v
}

//! What a Newton solve stores on the backend at the least, from its sizes
//! alone: the cell data, E-vectors and maps its `prepare` uploads. The
//! backend checks them before it allocates; a problem known by its sizes
//! before its mesh is made (the hole benchmark), and every set-up before
//! its maps and pattern, is refused from them before any host work, where
//! it would otherwise fail at its first upload.

/// Sizes of one level of a Newton solve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewtonSizes {
    /// Element evaluations: cells, and the facets of a boundary term.
    pub elements: usize,
    /// Values per element: nodes times components.
    pub n_local: usize,
    /// Rows of the global system.
    pub rows: usize,
    /// Stored entries of the tangent's pattern.
    pub nnz: usize,
    /// Values a cell of the tangent's storage holds: `n_local²` element
    /// matrices (kept, or made for the assembly), the point data of
    /// partial assembly, or `n_local` (the matrix-free tangent's state).
    pub tangent: usize,
}

impl NewtonSizes {
    /// Sizes known before the pattern is made: its entries counted as
    /// one a row, the diagonal (so [`NewtonSizes::device_bytes`] stays a
    /// lower bound).
    pub fn before_pattern(cells: usize, n_local: usize, rows: usize) -> Self {
        Self { elements: cells, n_local, rows, nnz: rows, tangent: Self::tangent_values(n_local, true) }
    }

    /// Values a cell of the tangent holds at the least: element matrices
    /// where the set-up has its pattern (they are assembled into it, or
    /// kept), else `n_local`, the matrix-free state (a set-up without
    /// its pattern stores its tangent by the points).
    pub fn tangent_values(n_local: usize, pattern: bool) -> usize {
        if pattern { n_local * n_local } else { n_local }
    }

    /// Bytes the backend's `prepare` holds, in 8-byte words: per element
    /// the coordinates, data and E-vectors (`3 n_local`) and the
    /// tangent's values (`tangent`),
    /// the tangent's assembly maps unless its element matrices are kept
    /// as they are (`lma`), the gather matrices (a column and a value per
    /// entry) when the element values are summed by SpMV, and 13 vectors
    /// of rows. Saturating: absurd sizes stay comparable.
    pub fn device_bytes(&self, lma: bool, spmv: bool) -> usize {
        let (e, nl) = (self.elements, self.n_local);
        let per_element = e.saturating_mul(nl.saturating_mul(3).saturating_add(self.tangent));
        let assembled = if lma { 0 } else { (e.saturating_mul(nl * nl) / 2).saturating_add(self.nnz.saturating_mul(4)) };
        let gathers = if spmv { e.saturating_mul(nl).saturating_mul(1 + if lma { 0 } else { nl }).saturating_mul(3) / 2 } else { 0 };
        [per_element, assembled, gathers, self.rows.saturating_mul(13)].iter().fold(0usize, |s, &w| s.saturating_add(w)).saturating_mul(8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_counts_and_absurd_sizes_saturate() {
        let s = NewtonSizes { elements: 10, n_local: 4, rows: 30, nnz: 200, tangent: 16 };
        // cells 10·4·7, rows 30·13
        assert_eq!(s.device_bytes(true, false), 8 * (280 + 390));
        // + the tangent's maps 10·8 + 200·4
        assert_eq!(s.device_bytes(false, false), 8 * (280 + 390 + 80 + 800));
        // + the gather matrices 10·4·5·3/2
        assert_eq!(s.device_bytes(false, true), 8 * (280 + 390 + 80 + 800 + 300));
        assert!(NewtonSizes::before_pattern(10, 4, 30).device_bytes(false, false) < s.device_bytes(false, false));
        // without element matrices: 10·(12 + 4) a cell
        let by_points = NewtonSizes { tangent: NewtonSizes::tangent_values(4, false), ..NewtonSizes::before_pattern(10, 4, 30) };
        assert_eq!(by_points.device_bytes(true, false), 8 * (160 + 390));
        assert_eq!(NewtonSizes::before_pattern(usize::MAX / 2, 27, usize::MAX / 3).device_bytes(false, true), usize::MAX);
    }

    /// The CPU backend's memory is the host's: a set-up it cannot hold is
    /// refused with its size, one it can is not.
    #[test]
    fn the_cpu_backend_refuses_what_the_host_cannot_hold() {
        use super::super::NewtonOps;
        let cpu = crate::CpuBackend::new(Some(1)).unwrap();
        let Some(available) = crate::memory::host_available() else {
            eprintln!("skipped: the system does not say what memory is available");
            return;
        };
        let bytes = NewtonSizes::before_pattern(available / 8, 8, available / 8).device_bytes(false, false);
        match cpu.ensure_fits("a set-up", bytes) {
            Err(crate::Error::HostMemoryTooSmall { what, needs, .. }) => assert!(what == "a set-up" && needs == bytes && needs > available),
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert!(cpu.ensure_fits("a small set-up", 1 << 20).is_ok());
    }
}

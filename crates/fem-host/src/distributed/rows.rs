//! Sparse rows across ranks, their columns in global numbers: a rank's
//! ghost rows fetched from their owners (a product `A P` reads the rows of
//! `P` its ghost columns name), and entries sent to the owners of their
//! rows (the Galerkin product and the restriction `Pᵀ` sum entries that
//! other ranks computed). One all-to-all each; every message is packed
//! ([`super::packing`]).

use super::comm::Communicator;
use super::layout::Layout;
use super::packing::{Pack, Unpack};
use crate::operator::csr::Csr;
use crate::solver::amg::product;
use crate::{CpuBackend, Result};

/// The rows of `layout`'s ghosts, in its order, from their owners' `rows`
/// (this rank's owned rows, global columns). Collective.
pub fn ghost_rows(comm: &dyn Communicator, layout: &Layout, rows: &Csr<f64>) -> Result<Csr<f64>> {
    exchange_rows(comm, layout, &taken(rows, &sent_rows(layout)))
}

/// The rows this rank sends, every neighbour's list in turn.
pub fn sent_rows(layout: &Layout) -> Vec<u32> {
    layout.send.iter().flat_map(|(_, list)| list.iter().copied()).collect()
}

/// The matrix of `m`'s rows `list`, in turn.
fn taken(m: &Csr<f64>, list: &[u32]) -> Csr<f64> {
    let mut out = Csr { n_rows: list.len(), row_ptr: vec![0], col: Vec::new(), val: Vec::new() };
    for &r in list {
        let span = m.row_ptr[r as usize] as usize..m.row_ptr[r as usize + 1] as usize;
        out.col.extend_from_slice(&m.col[span.clone()]);
        out.val.extend_from_slice(&m.val[span]);
        out.row_ptr.push(out.col.len() as u32);
    }
    out
}

/// The rows of `layout`'s ghosts, in its order, from their owners, where
/// `sent` holds this rank's rows of [`sent_rows`] in turn (global
/// columns): taken out wherever the rows live (the host, or the device's
/// AMG set-up). Collective.
pub fn exchange_rows(comm: &dyn Communicator, layout: &Layout, sent: &Csr<f64>) -> Result<Csr<f64>> {
    let mut messages = vec![Vec::new(); comm.size()];
    let mut row = 0;
    for (q, list) in &layout.send {
        let mut p = Pack::default();
        let span = sent.row_ptr[row] as usize..sent.row_ptr[row + list.len()] as usize;
        p.u32s(&(row..row + list.len()).map(|r| sent.row_ptr[r + 1] - sent.row_ptr[r]).collect::<Vec<_>>());
        p.u32s(&sent.col[span.clone()]);
        p.f64s(&sent.val[span]);
        messages[*q] = p.finish();
        row += list.len();
    }
    let got = comm.all_to_all(&messages)?;
    let mut out = Csr { n_rows: layout.ghosts.len(), row_ptr: vec![0], col: Vec::new(), val: Vec::new() };
    for (q, range) in &layout.recv {
        let mut u = Unpack::new(&got[*q]);
        let (lens, col, val) = (u.u32s()?, u.u32s()?, u.f64s()?);
        u.end()?;
        if lens.len() != range.len() || col.len() != val.len() || lens.iter().map(|&l| l as usize).sum::<usize>() != col.len() {
            return Err(u.corrupt());
        }
        for l in lens {
            out.row_ptr.push(out.row_ptr.last().expect("one offset") + l);
        }
        out.col.extend(col);
        out.val.extend(val);
    }
    Ok(out)
}

/// The rows this rank owns (under `starts`) of the sum over the ranks of
/// every rank's `m`, a matrix of all the global rows whose columns `col`
/// renumbers (summed in an accumulator `width` wide where given, for rows
/// of many terms on few columns): the rows another rank owns go to
/// it as entries, the others stay (a Galerkin product's or a
/// restriction's rows, mostly summed where they were computed).
/// Collective.
pub fn sum_to_owners(cpu: &CpuBackend, comm: &dyn Communicator, starts: &[usize], m: &Csr<f64>, width: Option<usize>, col: impl Fn(u32) -> u32 + Sync) -> Result<Csr<f64>> {
    let (size, rank) = (comm.size(), comm.rank());
    let (first, owned) = (starts[rank], starts[rank + 1] - starts[rank]);
    let mut by_rank: Vec<(Vec<u32>, Vec<u32>, Vec<f64>)> = vec![Default::default(); size];
    for (q, out) in by_rank.iter_mut().enumerate().filter(|(q, _)| *q != rank) {
        for r in starts[q]..starts[q + 1] {
            for k in m.row_ptr[r] as usize..m.row_ptr[r + 1] as usize {
                out.0.push(r as u32);
                out.1.push(col(m.col[k]));
                out.2.push(m.val[k]);
            }
        }
    }
    let sent: Vec<Vec<u64>> = by_rank
        .iter()
        .map(|(r, c, v)| {
            let mut p = Pack::default();
            p.u32s(r);
            p.u32s(c);
            p.f64s(v);
            p.finish()
        })
        .collect();
    drop(by_rank);
    let got = comm.all_to_all(&sent)?;
    let mut received = Vec::new();
    for words in &got {
        let mut u = Unpack::new(words);
        let (r, c, v) = (u.u32s()?, u.u32s()?, u.f64s()?);
        u.end()?;
        if r.len() != c.len() || c.len() != v.len() || r.iter().any(|&r| !(first..first + owned).contains(&(r as usize))) || c.iter().any(|&c| width.is_some_and(|w| c as usize >= w)) {
            return Err(u.corrupt());
        }
        received.extend(r.into_iter().zip(c).zip(v).map(|((r, c), v)| (r - first as u32, c, v)));
    }
    let others = from_entries(cpu, owned, &received);
    let row = |r: usize, terms: &mut Vec<(u32, f64)>| {
        let g = first + r;
        terms.extend((m.row_ptr[g] as usize..m.row_ptr[g + 1] as usize).map(|k| (col(m.col[k]), m.val[k])));
        product::push_row(&others, r, 1.0, terms);
    };
    match width {
        Some(w) => product::build_within(cpu, owned, w, row),
        None => product::build(cpu, owned, row),
    }
}

/// The `n_rows`-row matrix of entries `(row, column, value)`, summed by
/// column.
pub fn from_entries(cpu: &CpuBackend, n_rows: usize, entries: &[(u32, u32, f64)]) -> Csr<f64> {
    let mut start = vec![0usize; n_rows + 1];
    entries.iter().for_each(|e| start[e.0 as usize + 1] += 1);
    for r in 0..n_rows {
        start[r + 1] += start[r];
    }
    let mut fill = start.clone();
    let mut sorted = vec![(0u32, 0.0f64); entries.len()];
    for &(r, c, v) in entries {
        sorted[fill[r as usize]] = (c, v);
        fill[r as usize] += 1;
    }
    // as many entries as the input: within the u32 range of its rows
    product::build(cpu, n_rows, |r, terms| terms.extend_from_slice(&sorted[start[r]..start[r + 1]])).expect("no more entries than given")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::Threads;

    #[test]
    fn rows_reach_the_ranks_that_read_or_own_them() {
        let out = Threads::run(3, |c| {
            let cpu = CpuBackend::new(Some(1)).unwrap();
            // rank r owns r + 1 rows; global row g holds (g, g) and (g, 0)
            let owned = c.rank() + 1;
            let layout = Layout::new(c, owned, (0..6u32).filter(|g| !(layout_first(c.rank())..layout_first(c.rank()) + owned).contains(&(*g as usize))).collect()).unwrap();
            let g = |i: usize| layout.global(i);
            let entries: Vec<(u32, u32, f64)> = (0..owned).flat_map(|i| [(i as u32, g(i), g(i) as f64), (i as u32, 0, 1.0)]).collect();
            let mine = from_entries(&cpu, owned, &entries);
            let ghosts = ghost_rows(c, &layout, &mine).unwrap();
            let fetched = (0..layout.ghosts.len()).all(|k| {
                let gg = layout.ghosts[k];
                let row: Vec<(u32, f64)> = (ghosts.row_ptr[k] as usize..ghosts.row_ptr[k + 1] as usize).map(|p| (ghosts.col[p], ghosts.val[p])).collect();
                row == if gg == 0 { vec![(0, 1.0)] } else { vec![(0, 1.0), (gg, gg as f64)] }
            });
            // every rank holds 1 at every global row's column 4, renumbered
            // to 5: owners sum them
            let ones = from_entries(&cpu, 6, &(0..6u32).map(|r| (r, 4, 1.0)).collect::<Vec<_>>());
            let sums = sum_to_owners(&cpu, c, &layout.starts, &ones, Some(6), |c| c + 1).unwrap();
            fetched && sums.n_rows == owned && sums.col.iter().all(|&c| c == 5) && sums.val.iter().all(|&v| v == 3.0)
        });
        assert!(out.iter().all(|&o| o), "{out:?}");
    }

    fn layout_first(rank: usize) -> usize {
        (0..rank).map(|r| r + 1).sum()
    }
}

//! Multiply a Matrix Market matrix by a vector in the format the model
//! picks for this machine, with the parameters from the device's tuning
//! file (`fem tune spmv`) or the model.
//!
//!     cargo run --release --example spmv_matrix_market -- matrix.mtx
//!
//! Without an argument it writes a Q2 stiffness matrix to a temporary file first.

use fem::host::io::matrix_market;
use fem::host::sparse::device::prepare_cpu;
use fem::host::sparse::model::{Machine, RowLengths};
use fem::host::sparse::stats::RowStats;
use fem::host::sparse::tuning::{Context, Overrides};
use fem::host::sparse::SpmvFormat;
use fem::host::tune::Tuning;
use fem::host::{AnyBackend, Backend, CpuBackend};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cpu = CpuBackend::new(None)?;
    let path = match std::env::args().nth(1) {
        Some(p) => std::path::PathBuf::from(p),
        None => {
            let p = std::env::temp_dir().join("fem-example-q2.mtx");
            let a = fem::host::sparse::generate::fem_matrix::<f64>(&cpu, 2, 2, 100_000, 1, false)?;
            matrix_market::write_path(&a, true, &p)?;
            p
        }
    };
    let csr = matrix_market::read_path(&path)?.to_csr::<f64>()?;
    let any = AnyBackend::Cpu(CpuBackend::new(None)?);
    let (stats, lengths) = (RowStats::of(&csr), RowLengths::of(&csr));
    let machine = Machine::measure(&any)?;
    let tuning = Tuning::open(&any.name());
    let ctx = Context { stats: &stats, lengths: &lengths, precision: "f64", value_bytes: 8, machine: Some(&machine), tuning: Some(&tuning) };
    let formats: Vec<SpmvFormat> = SpmvFormat::ALL.into_iter().filter(|&f| f != SpmvFormat::Cusparse).collect();
    let (choice, _) = ctx.choose(&formats, 1000.0, &Overrides::default())?;
    let format: SpmvFormat = choice.storage.parse()?;
    let (params, origin) = ctx.resolve(format, &Overrides::default());
    let m = prepare_cpu(&cpu, &csr, format, &params)?;
    let x = cpu.upload(&vec![1.0; csr.n_rows])?;
    let mut y = cpu.zeros::<f64>(csr.n_rows)?;
    m.apply(&cpu, &x, &mut y)?;
    // The rows of a stiffness matrix sum to zero away from the boundary.
    let row_sums = cpu.download(&y)?;
    println!("{} rows, {} nonzeros: {} ({}; parameters from the {:?}), max |row sum| {:.3e}", csr.n_rows, csr.nnz(), m.name(), params.describe(format), origin, row_sums.iter().fold(0.0f64, |a, v| a.max(v.abs())));
    Ok(())
}

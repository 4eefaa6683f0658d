//! High-order tensor-product operators on hexahedra, the CEED benchmark
//! problems of Świrydowicz et al.: BP1.0 (mass, GL quadrature), BP3.5
//! (screened Poisson, GLL collocation) and BP3.0 (screened Poisson, GL
//! quadrature), applied matrix-free on E-vectors (element by element) or
//! on L-vectors through the element-to-node map (gather, element
//! operator, scatter-add).
//!
//! | module | holds |
//! | --- | --- |
//! | [`basis`] | the 1D matrices I, D, glD and sum-factorised contraction |
//! | [`geometry`] | the seven geometric factors per quadrature node |
//! | [`cpu`] | the CPU reference (rayon over elements) |
//! | [`diagonal`] | the matrix-free diagonal (Jacobi) |
//! | [`gpu`] | the GPU kernels' launches |

pub mod basis;
pub mod cpu;
pub mod diagonal;
pub mod geometry;
pub mod gpu;
pub mod tuning;

use crate::mesh::spectral::SpectralBox;
use crate::operator::LinearOperator;
use crate::{CpuBackend, Error, Result};
use basis::Basis1d;
use cpu::CpuTables;
use fem_core::tensor::NGEO;
use geometry::Points;
use rayon::prelude::*;
use serde::Serialize;
use std::str::FromStr;

/// The benchmark problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Problem {
    /// Mass matrix, GL quadrature (6 contractions).
    #[serde(rename = "bp1")]
    Bp1,
    /// Screened Poisson, GLL collocation (6 contractions + mass).
    #[serde(rename = "bp3.5")]
    Bp35,
    /// Screened Poisson, GL quadrature (12 contractions).
    #[serde(rename = "bp3.0")]
    Bp30,
}

impl FromStr for Problem {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "bp1" | "bp1.0" => Ok(Self::Bp1),
            "bp3.5" | "bp35" => Ok(Self::Bp35),
            "bp3.0" | "bp3" | "bp30" => Ok(Self::Bp30),
            _ => Err(Error::InvalidArgument(format!("unknown problem `{s}` (expected bp1, bp3.5 or bp3.0)"))),
        }
    }
}

impl Problem {
    /// The CEED name (`bp1`, `bp3.5`, `bp3.0`), as in reports and tuning keys.
    pub fn name(self) -> &'static str {
        match self {
            Self::Bp1 => "bp1",
            Self::Bp35 => "bp3.5",
            Self::Bp30 => "bp3.0",
        }
    }

    /// Where the geometric factors live.
    pub fn points(self) -> Points {
        match self {
            Self::Bp35 => Points::Gll,
            _ => Points::Gl,
        }
    }

    /// Floating-point operations per element of the sum-factorised
    /// algorithm: a contraction of an `m × n` matrix over the other two
    /// extents costs 2·m·n per output line; the metric 15 flops per point,
    /// the mass 2 and the sums 3.
    pub fn flops_per_element(self, degree: usize) -> f64 {
        let (nq, gq) = ((degree + 1) as f64, (degree + 2) as f64);
        let interp = 2.0 * nq * (gq * nq * nq + gq * gq * nq + gq * gq * gq);
        let stiffness = |n: f64| n * n * n * (12.0 * n + 20.0);
        match self {
            Self::Bp1 => 2.0 * interp + gq * gq * gq,
            Self::Bp35 => stiffness(nq),
            Self::Bp30 => 2.0 * interp + stiffness(gq),
        }
    }

    /// Bytes an element-wise application must move (the paper's Table 2):
    /// the input and output blocks and the geometric factors it reads
    /// (`w·J` alone for the mass, all seven for the stiffness).
    pub fn bytes_per_element(self, degree: usize) -> usize {
        let np = (degree + 1).pow(3);
        let gp = (degree + 2).pow(3);
        8 * match self {
            Self::Bp1 => 2 * np + gp,
            Self::Bp35 => 2 * np + NGEO * np,
            Self::Bp30 => 2 * np + NGEO * gp,
        }
    }
}

/// The node → element-node transpose of the element-to-node map, so the
/// scatter-add runs in parallel over nodes and deterministically.
#[derive(Clone, Debug)]
pub struct Restriction {
    /// `map[e·np + n]`: global node of local node `n` of element `e`.
    pub map: Vec<u32>,
    /// Node `g`'s element-node positions are `positions[offsets[g]..offsets[g + 1]]`.
    pub offsets: Vec<usize>,
    /// E-vector positions grouped by global node, ascending within a node.
    pub positions: Vec<u32>,
}

impl Restriction {
    /// Transposes the element-to-node `map` over `n_nodes` global nodes.
    pub fn new(map: &[u32], n_nodes: usize) -> Self {
        let mut offsets = vec![0usize; n_nodes + 1];
        map.iter().for_each(|&g| offsets[g as usize + 1] += 1);
        (0..n_nodes).for_each(|g| offsets[g + 1] += offsets[g]);
        let mut fill = offsets.clone();
        let mut positions = vec![0u32; map.len()];
        for (pos, &g) in map.iter().enumerate() {
            positions[fill[g as usize]] = pos as u32;
            fill[g as usize] += 1;
        }
        Self { map: map.to_vec(), offsets, positions }
    }

    /// Global nodes: the length of an L-vector.
    pub fn nodes(&self) -> usize {
        self.offsets.len() - 1
    }

    /// E-vector from L-vector.
    pub fn gather(&self, x: &[f64], xe: &mut [f64]) {
        xe.par_iter_mut().zip(self.map.par_iter()).for_each(|(v, &g)| *v = x[g as usize]);
    }

    /// L-vector as the sum of the E-vector's copies of each node.
    pub fn scatter(&self, ye: &[f64], y: &mut [f64]) {
        y.par_iter_mut().enumerate().for_each(|(g, v)| *v = self.positions[self.offsets[g]..self.offsets[g + 1]].iter().map(|&p| ye[p as usize]).sum());
    }
}

/// One of the operators on one mesh, with everything precomputed: the 1D
/// tables, the geometric factors and the restriction.
#[derive(Clone, Debug)]
pub struct TensorOperator {
    /// Which benchmark operator is applied.
    pub problem: Problem,
    /// Polynomial degree N of the mesh's elements.
    pub degree: usize,
    /// The screening parameter λ (ignored by BP1).
    pub lambda: f64,
    /// Hexahedral elements of the mesh.
    pub elements: usize,
    /// The 1D matrices of the degree.
    pub tables: CpuTables,
    /// Geometric factors at the problem's points, laid out as
    /// [`geometry::geometric_factors`] returns them.
    pub factors: Vec<f64>,
    /// The element-to-node map and its transpose (L-vector ↔ E-vector).
    pub restriction: Restriction,
}

impl TensorOperator {
    /// Precomputes `problem` on `mesh` with screening λ = `lambda`; an error
    /// for an unsupported degree or a degenerate element.
    pub fn new(problem: Problem, mesh: &SpectralBox, lambda: f64) -> Result<Self> {
        let basis = Basis1d::new(mesh.degree)?;
        let factors = geometry::geometric_factors(mesh, &basis, problem.points())?;
        Ok(Self {
            problem,
            degree: mesh.degree,
            lambda,
            elements: mesh.elements(),
            tables: CpuTables::new(basis),
            factors,
            restriction: Restriction::new(&mesh.map, mesh.n_nodes),
        })
    }

    /// Nodes per element.
    pub fn np(&self) -> usize {
        (self.degree + 1).pow(3)
    }

    /// Length of an E-vector.
    pub fn element_dofs(&self) -> usize {
        self.elements * self.np()
    }

    /// `y = A_E x` on E-vectors (the CPU reference).
    pub fn apply_elements(&self, x: &[f64], y: &mut [f64]) -> Result<()> {
        crate::error::same_len("bp apply", x.len(), self.element_dofs())?;
        crate::error::same_len("bp apply", y.len(), self.element_dofs())?;
        cpu::apply_elements(self.problem, &self.tables, &self.factors, self.lambda, x, y);
        Ok(())
    }

    /// The diagonal of the element operators, as an E-vector.
    pub fn element_diagonal(&self) -> Vec<f64> {
        diagonal::element_diagonals(self.problem, &self.tables, &self.factors, self.lambda, self.elements)
    }

    /// The diagonal of the assembled operator.
    pub fn diagonal(&self) -> Vec<f64> {
        let mut d = vec![0.0; self.restriction.nodes()];
        self.restriction.scatter(&self.element_diagonal(), &mut d);
        d
    }
}

/// The assembled operator `Rᵀ A_E R` on L-vectors.
impl LinearOperator<CpuBackend, f64> for TensorOperator {
    fn rows(&self) -> usize {
        self.restriction.nodes()
    }
    fn apply(&self, cpu: &CpuBackend, x: &Vec<f64>, y: &mut Vec<f64>) -> Result<()> {
        crate::error::same_len("bp apply", x.len(), self.restriction.nodes())?;
        crate::error::same_len("bp apply", y.len(), self.restriction.nodes())?;
        cpu.install(|| {
            let mut xe = vec![0.0; self.element_dofs()];
            let mut ye = vec![0.0; self.element_dofs()];
            self.restriction.gather(x, &mut xe);
            self.apply_elements(&xe, &mut ye)?;
            self.restriction.scatter(&ye, y);
            Ok(())
        })
    }
    fn diagonal(&self, cpu: &CpuBackend) -> Result<Vec<f64>> {
        Ok(cpu.install(|| TensorOperator::diagonal(self)))
    }
    fn name(&self) -> String {
        format!("{:?}", self.problem).to_lowercase()
    }
}

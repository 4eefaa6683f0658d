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

pub mod assembled;
pub mod basis;
pub mod cpu;
pub mod diagonal;
pub mod geometry;
pub mod gpu;
pub mod tuning;

use crate::mesh::spectral::SpectralBox;
use crate::operator::LinearOperator;
use crate::space::Restriction;
use crate::{CpuBackend, Error, Result};
use basis::Basis1d;
use cpu::CpuTables;
use fem_core::tensor::NGEO;
use geometry::Points;
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
        16 * (degree + 1).pow(3) + self.factor_bytes_per_element(degree)
    }

    /// The stored geometric factors' bytes per element: w·det J at each
    /// GL point for BP1, seven factors at each GLL node for BP3.5 and at
    /// each GL point for BP3.0.
    pub fn factor_bytes_per_element(self, degree: usize) -> usize {
        let (np, gp) = ((degree + 1).pow(3), (degree + 2).pow(3));
        8 * match self {
            Self::Bp1 => gp,
            Self::Bp35 => NGEO * np,
            Self::Bp30 => NGEO * gp,
        }
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
    /// Every element's corners where all are trilinear
    /// ([`geometry::trilinear_corners`]): what the GPU kernels that
    /// recompute the factors read.
    pub corners: Option<Vec<f64>>,
    /// The first elements, which read only the owned rows of a rank's
    /// piece (all of them on one rank): their products run while the
    /// halo exchange fills the ghost rows ([`crate::distributed::Overlap`]).
    pub interior: usize,
}

impl TensorOperator {
    /// Precomputes `problem` on `mesh` with screening λ = `lambda`; an error
    /// for an unsupported degree or a degenerate element.
    pub fn new(problem: Problem, mesh: &SpectralBox, lambda: f64) -> Result<Self> {
        let basis = Basis1d::new(mesh.degree)?;
        let factors = geometry::geometric_factors(mesh, &basis, problem.points())?;
        let corners = geometry::trilinear_corners(mesh, &basis);
        Ok(Self {
            problem,
            degree: mesh.degree,
            lambda,
            elements: mesh.elements(),
            tables: CpuTables::new(basis),
            factors,
            restriction: Restriction::new(mesh.map.clone(), mesh.n_nodes),
            corners,
            interior: mesh.elements(),
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

    /// `M x` on L-vectors for the mass matrix of the operator's own
    /// quadrature, from its own geometric factors (`w·J`): diagonal for
    /// BP3.5's GLL collocation, BP1's sum-factorised product at the GL
    /// points otherwise. The right-hand side `M f` of a solve, without a
    /// second operator's factors.
    pub fn mass(&self, cpu: &CpuBackend, x: &[f64]) -> Result<Vec<f64>> {
        crate::error::same_len("mass apply", x.len(), self.restriction.rows())?;
        let mut y = vec![0.0; self.restriction.rows()];
        if self.problem == Problem::Bp35 {
            // each element entry w·J x at its node, summed into its row
            let (np, map) = (self.np(), &self.restriction.map);
            self.restriction.add_with(cpu, |k| self.factors[((k / np) * NGEO + fem_core::tensor::GWJ) * np + k % np] * x[map[k] as usize], &mut y);
            return Ok(y);
        }
        let mut xe = vec![0.0; self.element_dofs()];
        self.restriction.gather(cpu, x, &mut xe)?;
        let mut ye = vec![0.0; self.element_dofs()];
        cpu.install(|| cpu::apply_elements(Problem::Bp1, &self.tables, &self.factors, 0.0, &xe, &mut ye));
        self.restriction.scatter(cpu, &ye, &mut y);
        Ok(y)
    }

    /// The diagonal of the element operators, as an E-vector.
    pub fn element_diagonal(&self) -> Vec<f64> {
        diagonal::element_diagonals(self.problem, &self.tables, &self.factors, self.lambda, self.elements)
    }

    /// The diagonal of the assembled operator, on the calling thread's
    /// pool (the GPU operator's Jacobi set-up has no CPU backend of its own).
    pub fn assembled_diagonal(&self) -> Vec<f64> {
        self.restriction.scattered(&self.element_diagonal())
    }
}

/// The assembled operator `Rᵀ A_E R` on L-vectors.
impl LinearOperator<CpuBackend, f64> for TensorOperator {
    fn rows(&self) -> usize {
        self.restriction.rows()
    }
    fn apply(&self, cpu: &CpuBackend, x: &Vec<f64>, y: &mut Vec<f64>) -> Result<()> {
        crate::error::same_len("bp apply", x.len(), self.restriction.rows())?;
        crate::error::same_len("bp apply", y.len(), self.restriction.rows())?;
        let mut xe = vec![0.0; self.element_dofs()];
        let mut ye = vec![0.0; self.element_dofs()];
        self.restriction.gather(cpu, x, &mut xe)?;
        cpu.install(|| self.apply_elements(&xe, &mut ye))?;
        self.restriction.scatter(cpu, &ye, y);
        Ok(())
    }
    fn diagonal(&self, cpu: &CpuBackend) -> Result<Vec<f64>> {
        Ok(cpu.install(|| self.assembled_diagonal()))
    }
    fn name(&self) -> String {
        format!("{:?}", self.problem).to_lowercase()
    }
}

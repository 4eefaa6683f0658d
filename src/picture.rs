//! PNG pictures of fields: a 2D field drawn over its mesh, or a 3D field
//! cut by the plane z = const through the middle of the domain, coloured
//! by value (viridis) with a colour bar. Any mesh enters as simplices
//! with values at their nodes; quadrilaterals, hexahedra and their Q_p
//! sub-cells are split into simplices first. Written through a temporary
//! file renamed into place, so a failure leaves no partial picture.

use crate::host::mesh::Mesh;
use crate::host::space::Space;
use plotters::prelude::*;
use std::path::Path;

type PlotResult = Result<(), Box<dyn std::error::Error>>;

/// A field on simplices: node coordinates, cells (triangles use the first
/// three slots) and a value per node.
pub struct Picture<'a> {
    /// 2 or 3.
    pub dim: usize,
    /// Node coordinates.
    pub coords: &'a [[f64; 3]],
    /// Triangles or tetrahedra by node.
    pub simplices: &'a [[u32; 4]],
    /// A value per node.
    pub values: &'a [f64],
}

const SIZE: (u32, u32) = (900, 760);
const BAR: u32 = 130;

/// Viridis at nine stops, linearly interpolated; grey where the value is
/// not a number (no value there, as nodes never activated).
fn viridis(t: f64) -> RGBColor {
    if t.is_nan() {
        return RGBColor(200, 200, 200);
    }
    const STOPS: [(u8, u8, u8); 9] = [(68, 1, 84), (71, 44, 122), (59, 81, 139), (44, 113, 142), (33, 144, 141), (39, 173, 129), (92, 200, 99), (170, 220, 50), (253, 231, 37)];
    let t = t.clamp(0.0, 1.0) * (STOPS.len() - 1) as f64;
    let i = (t.floor() as usize).min(STOPS.len() - 2);
    let f = t - i as f64;
    let mix = |a: u8, b: u8| (a as f64 + f * (b as f64 - a as f64)).round() as u8;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Triangles in the plane with a value per corner.
type Flat = Vec<[([f64; 2], f64); 3]>;

/// The picture's triangles: the 2D cells, or the cut of the tetrahedra by
/// z = `z` (each cut is a triangle or a quadrilateral, split in two).
fn flatten(p: &Picture, z: f64) -> Flat {
    let node = |n: u32| (p.coords[n as usize], p.values[n as usize]);
    let mut out = Flat::new();
    for s in p.simplices {
        if p.dim == 2 {
            out.push([0, 1, 2].map(|k| {
                let (x, v) = node(s[k]);
                ([x[0], x[1]], v)
            }));
            continue;
        }
        let mut pts: Vec<([f64; 2], f64)> = Vec::with_capacity(4);
        for (a, b) in [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)] {
            let ((xa, va), (xb, vb)) = (node(s[a]), node(s[b]));
            let (da, db) = (xa[2] - z, xb[2] - z);
            if (da < 0.0) != (db < 0.0) {
                let t = da / (da - db);
                pts.push(([xa[0] + t * (xb[0] - xa[0]), xa[1] + t * (xb[1] - xa[1])], va + t * (vb - va)));
            }
        }
        if pts.len() < 3 {
            continue;
        }
        let c = pts.iter().fold([0.0, 0.0], |c, p| [c[0] + p.0[0] / pts.len() as f64, c[1] + p.0[1] / pts.len() as f64]);
        pts.sort_by(|a, b| f64::atan2(a.0[1] - c[1], a.0[0] - c[0]).total_cmp(&f64::atan2(b.0[1] - c[1], b.0[0] - c[0])));
        out.push([pts[0], pts[1], pts[2]]);
        if pts.len() == 4 {
            out.push([pts[0], pts[2], pts[3]]);
        }
    }
    out
}

/// Draws `p` into `path` (PNG) titled `title`, the colour bar labelled
/// `label`. A 3D field is cut at the middle of its z range (the title
/// says where).
pub fn field_png(path: &Path, title: &str, label: &str, p: &Picture) -> PlotResult {
    if p.values.len() != p.coords.len() || p.simplices.iter().any(|s| s[..p.dim + 1].iter().any(|&n| n as usize >= p.coords.len())) {
        return Err(format!("a picture of {} values on {} nodes, or a cell beyond them", p.values.len(), p.coords.len()).into());
    }
    let (lo, hi) = p.coords.iter().fold(([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]), |(lo, hi), x| (std::array::from_fn(|a| lo[a].min(x[a])), std::array::from_fn(|a| hi[a].max(x[a]))));
    if !lo[0].is_finite() {
        return Err("a picture of an empty mesh".into());
    }
    let z = 0.5 * (lo[2] + hi[2]);
    let tris = flatten(p, z);
    let title = if p.dim == 3 { format!("{title} (cut at z = {z:.3})") } else { title.to_string() };
    let (vmin, vmax) = tris.iter().flatten().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), c| (a.min(c.1), b.max(c.1)));
    let (vmin, vmax) = if vmin.is_finite() { (vmin, if vmax > vmin { vmax } else { vmin + 1.0 }) } else { (0.0, 1.0) };
    crate::host::io::write_via_temp(path, |tmp| -> PlotResult {
        crate::plot::register_font();
        let root = BitMapBackend::new(tmp, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let (left, right) = root.split_horizontally(SIZE.0 - BAR);
        let ((x0, x1), (y0, y1)) = equal_scales((lo[0], hi[0]), (lo[1], hi[1]));
        let mut chart = ChartBuilder::on(&left).caption(&title, ("sans-serif", 22)).margin(14).x_label_area_size(40).y_label_area_size(56).build_cartesian_2d(x0..x1, y0..y1)?;
        chart.configure_mesh().disable_mesh().x_desc("x").y_desc("y").label_style(("sans-serif", 14)).draw()?;
        let area = chart.plotting_area();
        for t in &tris {
            let px: Vec<(i32, i32)> = t.iter().map(|c| area.map_coordinate(&(c.0[0], c.0[1]))).collect();
            fill_triangle(&px, &t.map(|c| c.1), |x, y, v| {
                let _ = root.draw_pixel((x, y), &viridis((v - vmin) / (vmax - vmin)));
            });
        }
        let mut bar = ChartBuilder::on(&right).margin_top(60).margin_bottom(54).margin_right(10).y_label_area_size(80).build_cartesian_2d(0.0..1.0, vmin..vmax)?;
        bar.configure_mesh().disable_mesh().disable_x_axis().y_desc(label).label_style(("sans-serif", 14)).draw()?;
        let steps = 200;
        bar.draw_series((0..steps).map(|i| {
            let (a, b) = (vmin + (vmax - vmin) * i as f64 / steps as f64, vmin + (vmax - vmin) * (i + 1) as f64 / steps as f64);
            Rectangle::new([(0.0, a), (1.0, b)], viridis((i as f64 + 0.5) / steps as f64).filled())
        }))?;
        root.present()?;
        Ok(())
    })
}

/// The x and y ranges widened about their centres so that one unit is as
/// many pixels along x as along y in the plotting area.
fn equal_scales(x: (f64, f64), y: (f64, f64)) -> ((f64, f64), (f64, f64)) {
    // plotting area: the image less the colour bar, margins, caption and labels
    let (w, h) = ((SIZE.0 - BAR - 28 - 56) as f64, (SIZE.1 - 28 - 32 - 40) as f64);
    let (mut dx, mut dy) = ((x.1 - x.0).max(1e-300), (y.1 - y.0).max(1e-300));
    if dx / w > dy / h {
        dy = dx * h / w;
    } else {
        dx = dy * w / h;
    }
    let (cx, cy) = (0.5 * (x.0 + x.1), 0.5 * (y.0 + y.1));
    ((cx - 0.5 * dx, cx + 0.5 * dx), (cy - 0.5 * dy, cy + 0.5 * dy))
}

/// Calls `put(x, y, value)` for every pixel whose centre lies in the
/// triangle `px` (pixel coordinates), the value interpolated linearly.
fn fill_triangle(px: &[(i32, i32)], v: &[f64; 3], mut put: impl FnMut(i32, i32, f64)) {
    let p: Vec<(f64, f64)> = px.iter().map(|&(x, y)| (x as f64, y as f64)).collect();
    let det = (p[1].0 - p[0].0) * (p[2].1 - p[0].1) - (p[2].0 - p[0].0) * (p[1].1 - p[0].1);
    if det.abs() < 1e-12 {
        // smaller than a pixel: its first corner
        put(px[0].0, px[0].1, v[0]);
        return;
    }
    let (xmin, xmax) = (px.iter().map(|q| q.0).min().unwrap_or(0), px.iter().map(|q| q.0).max().unwrap_or(0));
    let (ymin, ymax) = (px.iter().map(|q| q.1).min().unwrap_or(0), px.iter().map(|q| q.1).max().unwrap_or(0));
    for y in ymin..=ymax {
        for x in xmin..=xmax {
            let (fx, fy) = (x as f64, y as f64);
            let l1 = ((fx - p[0].0) * (p[2].1 - p[0].1) - (p[2].0 - p[0].0) * (fy - p[0].1)) / det;
            let l2 = ((p[1].0 - p[0].0) * (fy - p[0].1) - (fx - p[0].0) * (p[1].1 - p[0].1)) / det;
            let l0 = 1.0 - l1 - l2;
            if l0 >= -1e-9 && l1 >= -1e-9 && l2 >= -1e-9 {
                put(x, y, l0 * v[0] + l1 * v[1] + l2 * v[2]);
            }
        }
    }
}

/// Simplices of tensor cells of `dim` given by their 2^dim corners in
/// tensor (bit) order: two triangles per quadrilateral, six tetrahedra
/// per hexahedron.
pub fn split_tensor_cell(dim: usize, corners: &[u32], out: &mut Vec<[u32; 4]>) {
    for path in crate::host::mesh::simplex::kuhn_paths(dim) {
        let mut s = [u32::MAX; 4];
        for (k, &w) in path.iter().enumerate() {
            s[k] = corners[w];
        }
        out.push(s);
    }
}

/// The simplices of a quadrilateral or hexahedral mesh.
pub fn mesh_simplices(mesh: &Mesh) -> Vec<[u32; 4]> {
    let mut out = Vec::with_capacity(mesh.n_cells() * if mesh.dim == 2 { 2 } else { 6 });
    for cell in &mesh.cells {
        split_tensor_cell(mesh.dim, &cell[..mesh.vertices_per_cell()], &mut out);
    }
    out
}

/// Simplices through the nodes of Q_p cells whose DOFs (lexicographic,
/// x fastest) are `cell_dofs`: p^dim sub-cells per cell, each split.
fn tensor_simplices(dim: usize, p: usize, cell_dofs: &[u32]) -> Vec<[u32; 4]> {
    let np = p + 1;
    let nb = np.pow(dim as u32);
    let mut simplices = Vec::new();
    let mut corners = [0u32; 8];
    for dofs in cell_dofs.chunks(nb) {
        for s in 0..p.pow(dim as u32) {
            let origin: Vec<usize> = (0..dim).map(|a| (s / p.pow(a as u32)) % p).collect();
            for (w, corner) in corners.iter_mut().enumerate().take(1 << dim) {
                let local: usize = (0..dim).map(|a| (origin[a] + ((w >> a) & 1)) * np.pow(a as u32)).sum();
                *corner = dofs[local];
            }
            split_tensor_cell(dim, &corners[..1 << dim], &mut simplices);
        }
    }
    simplices
}

/// Simplices through the nodes of a nodal space: a P2 triangle as its
/// four sub-triangles, other simplices by their corners, Q_p cells cut
/// into p^dim sub-cells of neighbouring nodes, each split, so the picture
/// shows the computed polynomial at its nodes, not only at the vertices.
pub fn nodal_simplices(space: &Space) -> Vec<[u32; 4]> {
    let (nb, d) = (space.nb(), space.shape.dim());
    if !space.shape.is_simplex() {
        return tensor_simplices(d, space.degree, &space.cell_dofs);
    }
    let children: &[[usize; 4]] = match (d, space.degree) {
        (2, 2) => &[[0, 3, 5, 9], [3, 1, 4, 9], [5, 4, 2, 9], [3, 4, 5, 9]],
        _ => &[[0, 1, 2, 3]],
    };
    space.cell_dofs.chunks(nb).flat_map(|dofs| children.iter().map(move |c| std::array::from_fn(|k| if k <= d { dofs[c[k]] } else { u32::MAX }))).collect()
}

/// Writes the picture of the scalar field `values` on a nodal space.
pub fn nodal_png(path: &Path, title: &str, label: &str, space: &Space, values: &[f64]) -> PlotResult {
    let simplices = nodal_simplices(space);
    field_png(path, title, label, &Picture { dim: space.shape.dim(), coords: &space.dof_coords, simplices: &simplices, values })
}


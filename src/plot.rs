//! PNG charts of benchmark suites (plotters, bitmap backend, the bundled
//! DejaVu Sans so no system font is needed): throughput against degree
//! per series, and a roofline chart of measured points under the copy
//! bandwidth.

use plotters::prelude::*;
use std::path::Path;

/// One line of a chart: a name and its (x, y) points.
pub struct Series {
    /// Legend label.
    pub name: String,
    /// (x, y) points in the order they are drawn.
    pub points: Vec<(f64, f64)>,
}

type PlotResult = Result<(), Box<dyn std::error::Error>>;

const FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");
const SIZE: (u32, u32) = (1000, 640);

pub(crate) fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TrueType font, checked by the plot tests.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

fn colour(i: usize) -> RGBColor {
    const C: [RGBColor; 12] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
        RGBColor(0, 0, 128),
        RGBColor(128, 0, 0),
    ];
    C[i % C.len()]
}

fn bounds(series: &[Series], f: impl Fn(&(f64, f64)) -> f64) -> (f64, f64) {
    let v = series.iter().flat_map(|s| s.points.iter().map(&f));
    v.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)))
}

/// Throughput (`y_label`) against degree, one line per series.
pub fn throughput(path: &Path, title: &str, y_label: &str, series: &[Series]) -> PlotResult {
    register_font();
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let (x0, x1) = bounds(series, |p| p.0);
    let (_, y1) = bounds(series, |p| p.1);
    let (x0, x1) = if x0.is_finite() { (x0 - 0.5, x1 + 0.5) } else { (0.0, 1.0) };
    let y1 = if y1.is_finite() && y1 > 0.0 { 1.1 * y1 } else { 1.0 };
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, 0.0..y1)?;
    chart.configure_mesh().x_desc("degree").y_desc(y_label).label_style(("sans-serif", 15)).draw()?;
    for (i, s) in series.iter().enumerate() {
        let c = colour(i);
        chart
            .draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))?
            .label(&s.name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
        chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 4, c.filled())))?;
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.85)).border_style(BLACK).label_font(("sans-serif", 14)).draw()?;
    root.present()?;
    Ok(())
}

/// One stacked bar per (name, parts): each part a segment, coloured by
/// its name the same in every bar, largest parts at the bottom as given.
pub fn stacked_bars(path: &Path, title: &str, y_label: &str, bars: &[(String, Vec<(String, f64)>)]) -> PlotResult {
    register_font();
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let top = bars.iter().map(|(_, p)| p.iter().map(|x| x.1).sum::<f64>()).fold(0.0, f64::max);
    let top = if top > 0.0 { 1.1 * top } else { 1.0 };
    let names: Vec<&str> = bars.iter().map(|b| b.0.as_str()).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(70)
        // room on the right for the legend
        .build_cartesian_2d(-0.5..bars.len() as f64 + 0.7, 0.0..top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(bars.len() + 2)
        .x_label_formatter(&|x| if (x - x.round()).abs() < 0.05 && *x >= -0.05 { names.get(x.round() as usize).map_or(String::new(), |s| s.to_string()) } else { String::new() })
        .y_desc(y_label)
        .label_style(("sans-serif", 15))
        .draw()?;
    let mut kinds: Vec<&str> = Vec::new();
    for (_, parts) in bars {
        for (n, _) in parts {
            if !kinds.contains(&n.as_str()) {
                kinds.push(n);
            }
        }
    }
    for (k, kind) in kinds.iter().enumerate() {
        let c = colour(k);
        let mut rects = Vec::new();
        for (i, (_, parts)) in bars.iter().enumerate() {
            let below: f64 = parts.iter().take_while(|p| p.0 != *kind).map(|p| p.1).sum();
            if let Some((_, v)) = parts.iter().find(|p| p.0 == *kind) {
                rects.push(Rectangle::new([(i as f64 - 0.3, below), (i as f64 + 0.3, below + v)], c.filled()));
            }
        }
        chart.draw_series(rects)?.label(*kind).legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    chart.configure_series_labels().position(SeriesLabelPosition::UpperRight).background_style(WHITE.mix(0.85)).border_style(BLACK).label_font(("sans-serif", 13)).draw()?;
    root.present()?;
    Ok(())
}

/// GFLOP/s against arithmetic intensity (flop/byte), log-log, with the
/// bandwidth bound `copy_gbytes_per_second × intensity` drawn as a line.
pub fn roofline(path: &Path, title: &str, copy_gbytes_per_second: f64, series: &[Series]) -> PlotResult {
    register_font();
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let (i0, i1) = bounds(series, |p| p.0);
    let (g0, g1) = bounds(series, |p| p.1);
    let (i0, i1) = if i0.is_finite() { (i0 / 2.0, i1 * 2.0) } else { (0.01, 10.0) };
    let top = (copy_gbytes_per_second * i1).max(if g1.is_finite() { g1 } else { 1.0 }) * 1.5;
    let bottom = if g0.is_finite() { (g0 / 2.0).min(copy_gbytes_per_second * i0) } else { 0.01 }.max(1e-6);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d((i0..i1).log_scale(), (bottom..top).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("arithmetic intensity (flop/byte)")
        .y_desc("GFLOP/s")
        .x_label_formatter(&|v| compact(*v))
        .y_label_formatter(&|v| compact(*v))
        .label_style(("sans-serif", 15))
        .draw()?;
    let roof: Vec<(f64, f64)> = (0..=64).map(|k| i0 * (i1 / i0).powf(k as f64 / 64.0)).map(|i| (i, copy_gbytes_per_second * i)).collect();
    chart
        .draw_series(LineSeries::new(roof, BLACK.stroke_width(2)))?
        .label(format!("copy bandwidth {copy_gbytes_per_second:.0} GB/s"))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK.stroke_width(2)));
    for (i, s) in series.iter().enumerate() {
        let c = colour(i);
        chart
            .draw_series(s.points.iter().map(|&p| Circle::new(p, 5, c.filled())))?
            .label(&s.name)
            .legend(move |(x, y)| Circle::new((x + 9, y), 5, c.filled()));
    }
    chart.configure_series_labels().position(SeriesLabelPosition::LowerRight).background_style(WHITE.mix(0.85)).border_style(BLACK).label_font(("sans-serif", 14)).draw()?;
    root.present()?;
    Ok(())
}

/// Relative residual (log scale) against iteration, one line per series.
pub fn convergence(path: &Path, title: &str, series: &[Series]) -> PlotResult {
    register_font();
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let (_, n) = bounds(series, |p| p.0);
    let positive = |p: &(f64, f64)| if p.1 > 0.0 { p.1 } else { f64::NAN };
    let (r0, r1) = bounds(series, positive);
    let n = if n.is_finite() { n.max(1.0) } else { 1.0 };
    let (r0, r1) = if r0.is_finite() { (r0 / 2.0, r1 * 2.0) } else { (1e-12, 1.0) };
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..n, (r0..r1).log_scale())?;
    chart.configure_mesh().x_desc("iteration").y_desc("relative residual").y_label_formatter(&|v| format!("{v:.0e}")).label_style(("sans-serif", 15)).draw()?;
    for (i, s) in series.iter().enumerate() {
        let c = colour(i);
        chart
            .draw_series(LineSeries::new(s.points.iter().copied().filter(|p| p.1 > 0.0), c.stroke_width(2)))?
            .label(&s.name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
    }
    chart.configure_series_labels().position(SeriesLabelPosition::UpperRight).background_style(WHITE.mix(0.85)).border_style(BLACK).label_font(("sans-serif", 13)).draw()?;
    root.present()?;
    Ok(())
}

/// A tick label with the digits that matter.
fn compact(v: f64) -> String {
    match v.abs() {
        a if a >= 100.0 => format!("{v:.0}"),
        a if a >= 1.0 => format!("{v:.1}"),
        a if a >= 0.01 => format!("{v:.2}"),
        _ => format!("{v:.1e}"),
    }
}

//! PNG pictures of fields: a linear field is drawn dark to bright along
//! its gradient, a 3D field is cut at mid z, values that are not numbers
//! are grey, and `fem solve --png` / `fem cardiac --png` write pictures
//! that decode.

use crate::common;
use common::scratch;
use fem::host::mesh::simplex::SimplexBox;
use fem::picture::{field_png, Picture};
use image::{GenericImageView, Rgba};

/// Brightness of a pixel (viridis runs from dark purple to bright yellow).
fn luma(p: Rgba<u8>) -> f64 {
    0.299 * p[0] as f64 + 0.587 * p[1] as f64 + 0.114 * p[2] as f64
}

fn draw(dim: usize, f: impl Fn([f64; 3]) -> f64, name: &str) -> image::DynamicImage {
    let mesh = SimplexBox::unstructured(dim, if dim == 2 { 12 } else { 5 }, 3).build().unwrap();
    let values: Vec<f64> = mesh.coords.iter().map(|&x| f(x)).collect();
    let path = scratch("picture").join(name);
    field_png(&path, "test", "u", &Picture { dim, coords: &mesh.coords, simplices: &mesh.cells, values: &values }).unwrap();
    image::open(&path).unwrap()
}

/// Samples the plot along its middle row: (left, centre, right) brightness.
fn row(img: &image::DynamicImage) -> (f64, f64, f64) {
    let y = img.height() / 2;
    // the plotting area spans roughly x = 100..740 of 900
    (luma(img.get_pixel(140, y)), luma(img.get_pixel(420, y)), luma(img.get_pixel(700, y)))
}

#[test]
fn a_linear_field_brightens_along_its_gradient() {
    for dim in [2, 3] {
        let img = draw(dim, |x| x[0], &format!("linear{dim}.png"));
        assert_eq!(img.dimensions(), (900, 760));
        let (l, c, r) = row(&img);
        assert!(l < c && c < r && r - l > 100.0, "{dim}D: {l} {c} {r}");
        // and the other way round
        let img = draw(dim, |x| -x[0], &format!("linear{dim}-reversed.png"));
        let (l, _, r) = row(&img);
        assert!(l > r + 100.0, "{dim}D: {l} {r}");
    }
}

#[test]
fn missing_values_are_grey_and_bad_pictures_are_errors() {
    let img = draw(2, |x| if x[0] < 0.5 { f64::NAN } else { x[1] }, "nan.png");
    let y = img.height() / 2;
    assert_eq!(img.get_pixel(140, y), Rgba([200, 200, 200, 255]));
    assert_ne!(img.get_pixel(700, y), Rgba([200, 200, 200, 255]));
    let coords = [[0.0; 3]; 3];
    let dir = scratch("picture-bad");
    let bad = Picture { dim: 2, coords: &coords, simplices: &[[0, 1, 7, u32::MAX]], values: &[0.0; 3] };
    assert!(field_png(&dir.join("bad.png"), "t", "u", &bad).is_err());
    assert!(!dir.join("bad.png").exists());
    let short = Picture { dim: 2, coords: &coords, simplices: &[[0, 1, 2, u32::MAX]], values: &[0.0; 2] };
    assert!(field_png(&dir.join("short.png"), "t", "u", &short).is_err());
}

fn fem(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_fem")).env("FEM_TUNING", "off").args(args).output().unwrap()
}

#[test]
fn fem_solve_and_fem_cardiac_write_pictures() {
    let dir = scratch("picture-cli");
    for (args, name) in [
        (vec!["solve", "--dim", "2", "--degree", "3", "--cells", "6", "--backend", "cpu"], "solve2.png"),
        (vec!["solve", "--dim", "3", "--degree", "2", "--cells", "3", "--backend", "cpu"], "solve3.png"),
        (vec!["solve", "--problem", "hole", "--dim", "2", "--degree", "1", "--levels", "2", "--backend", "cpu"], "hole.png"),
        (vec!["cardiac", "--mesh", "generated:3000", "--steps", "5", "--backend", "cpu"], "act.png"),
    ] {
        let path = dir.join(name);
        let mut args = args.clone();
        args.extend(["--png", path.to_str().unwrap()]);
        let out = fem(&args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let img = image::open(&path).unwrap();
        assert_eq!(img.dimensions(), (900, 760), "{name}");
    }
    // the sine solution is brightest in the middle
    let (l, c, r) = row(&image::open(dir.join("solve2.png")).unwrap());
    assert!(c > l + 50.0 && c > r + 50.0, "{l} {c} {r}");
    // an unwritable picture is an error, exit 1
    let out = fem(&["solve", "--dim", "2", "--cells", "2", "--backend", "cpu", "--png", dir.join("no/such/dir.png").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
}

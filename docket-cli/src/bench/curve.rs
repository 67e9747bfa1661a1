//! The concurrency curve of the scale figures: throughput against concurrency (1, 4, 16, 64
//! on a log axis) per backend, Docket's line beside its floor's — (a) fenced commits/s on the
//! left, (c) end-to-end runs/s of the 3-node and the 1-node graph on the right, each with the
//! run rate the bare updates alone would allow. Drawn with plotters' basic elements only, text
//! through the same run-time font as the bar chart (none found: lines only).

use std::path::Path;

use plotters::prelude::*;

use super::chart::{chart_error, font_ready, FAMILY};
use super::report::{number, BenchReport};
use super::scale::CurvePoint;
use super::BenchError;

const WIDTH: u32 = 1_280;
const HEIGHT: u32 = 560;
const PANEL_W: i32 = 500;
const PANEL_H: i32 = 380;
const PANEL_TOP: i32 = 110;
const PANEL_LEFT: [i32; 2] = [90, 720];

const DOCKET: RGBColor = RGBColor(47, 111, 183);
const DOCKET_SINGLE: RGBColor = RGBColor(46, 150, 80);
const FLOOR: RGBColor = RGBColor(150, 150, 150);
const FLOOR_SINGLE: RGBColor = RGBColor(120, 190, 140);

/// One line of a panel.
struct Series {
    name: &'static str,
    color: RGBColor,
    dashed: bool,
    values: Vec<(usize, f64)>,
}

/// Draws the sweep of `report` at `path`; `Ok(false)` when the report has no sweep (nothing
/// is written).
///
/// # Errors
/// [`BenchError::Chart`] when the image cannot be drawn or written.
pub fn render_curve(report: &BenchReport, path: &Path) -> Result<bool, BenchError> {
    if report.curve.is_empty() {
        return Ok(false);
    }
    let labelled = font_ready();
    let root = BitMapBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(chart_error)?;
    let text = |size: f64| (FAMILY, size).into_font().color(&BLACK);
    if labelled {
        let title = format!(
            "docket bench — {}: throughput against concurrency (log axes){}",
            report.backend,
            report
                .git_commit
                .as_deref()
                .map_or_else(String::new, |c| format!(", commit {c}"))
        );
        root.draw(&Text::new(title, (16, 16), text(24.0)))
            .map_err(chart_error)?;
    }
    let points = &report.curve;
    let pick = |f: fn(&CurvePoint) -> f64| -> Vec<(usize, f64)> {
        points.iter().map(|p| (p.concurrency, f(p))).collect()
    };
    let panels = [
        (
            "(a) fenced claimed commits/s",
            vec![
                series("Docket", DOCKET, false, pick(|p| p.commits)),
                series(
                    "raw conditional update",
                    FLOOR,
                    true,
                    pick(|p| p.commit_floor),
                ),
            ],
        ),
        (
            "(c) end-to-end runs/s",
            vec![
                series("3-node graph", DOCKET, false, pick(|p| p.runs_chain)),
                series(
                    "floor: raw updates ÷ commits per 3-node run",
                    FLOOR,
                    true,
                    pick(|p| p.commit_floor / p.chain_commits_per_run.max(1) as f64),
                ),
                series(
                    "1-node graph",
                    DOCKET_SINGLE,
                    false,
                    pick(|p| p.runs_single),
                ),
                series(
                    "floor: raw updates ÷ commits per 1-node run",
                    FLOOR_SINGLE,
                    true,
                    pick(|p| p.commit_floor / p.single_commits_per_run.max(1) as f64),
                ),
            ],
        ),
    ];
    let levels: Vec<usize> = points.iter().map(|p| p.concurrency).collect();
    for ((title, lines), left) in panels.iter().zip(PANEL_LEFT) {
        draw_panel(&root, left, title, lines, &levels, labelled)?;
    }
    root.present().map_err(chart_error)?;
    Ok(true)
}

fn series(name: &'static str, color: RGBColor, dashed: bool, values: Vec<(usize, f64)>) -> Series {
    Series {
        name,
        color,
        dashed,
        values,
    }
}

/// The bitmap the curve is drawn on.
type Area<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;

fn draw_panel(
    root: &Area<'_>,
    left: i32,
    title: &str,
    lines: &[Series],
    levels: &[usize],
    labelled: bool,
) -> Result<(), BenchError> {
    let text = |size: f64| (FAMILY, size).into_font().color(&BLACK);
    let top = PANEL_TOP;
    let bottom = top + PANEL_H;
    let values = lines.iter().flat_map(|s| s.values.iter().map(|(_, v)| *v));
    let (min, max) = values.fold((f64::MAX, f64::MIN_POSITIVE), |(lo, hi), v| {
        (lo.min(v.max(f64::MIN_POSITIVE)), hi.max(v))
    });
    // Whole decades around the values, at least one.
    let low = min.min(max).log10().floor();
    let high = max.log10().ceil().max(low + 1.0);
    let (lo, hi) = levels
        .iter()
        .fold((usize::MAX, 1), |(lo, hi), c| (lo.min(*c), hi.max(*c)));
    let span = ((hi as f64).log2() - (lo.min(hi) as f64).log2()).max(1.0);
    let x = |c: usize| {
        left + (((c as f64).log2() - (lo as f64).log2()) / span * f64::from(PANEL_W)) as i32
    };
    let y = |v: f64| {
        let at = (v.max(f64::MIN_POSITIVE).log10() - low) / (high - low);
        bottom - (at.clamp(0.0, 1.0) * f64::from(PANEL_H)) as i32
    };
    let axis = BLACK.stroke_width(1);
    root.draw(&PathElement::new(
        vec![(left, top), (left, bottom), (left + PANEL_W, bottom)],
        axis,
    ))
    .map_err(chart_error)?;
    for s in lines {
        let coords: Vec<(i32, i32)> = s.values.iter().map(|(c, v)| (x(*c), y(*v))).collect();
        let style = s.color.stroke_width(if s.dashed { 1 } else { 3 });
        if s.dashed {
            for pair in coords.windows(2) {
                draw_dashed(root, pair[0], pair[1], style)?;
            }
        } else {
            root.draw(&PathElement::new(coords.clone(), style))
                .map_err(chart_error)?;
        }
        for point in coords {
            root.draw(&Circle::new(point, 4, s.color.filled()))
                .map_err(chart_error)?;
        }
    }
    if labelled {
        root.draw(&Text::new(title.to_owned(), (left, top - 44), text(19.0)))
            .map_err(chart_error)?;
        for c in levels {
            root.draw(&Text::new(
                c.to_string(),
                (x(*c) - 6, bottom + 8),
                text(14.0),
            ))
            .map_err(chart_error)?;
        }
        root.draw(&Text::new(
            "concurrency (log scale)".to_owned(),
            (left + PANEL_W / 2 - 80, bottom + 30),
            text(14.0),
        ))
        .map_err(chart_error)?;
        let mut decade = low;
        while decade <= high {
            let v = 10f64.powf(decade);
            root.draw(&Text::new(number(v), (left - 80, y(v) - 7), text(13.0)))
                .map_err(chart_error)?;
            root.draw(&PathElement::new(
                vec![(left - 4, y(v)), (left, y(v))],
                BLACK.stroke_width(1),
            ))
            .map_err(chart_error)?;
            decade += 1.0;
        }

        for (i, s) in lines.iter().enumerate() {
            // Two legend entries per line, above the panel.
            let lx = left + (i as i32 % 2) * (PANEL_W / 2);
            let ly = top - 26 + (i as i32 / 2) * 16;
            root.draw(&Rectangle::new(
                [(lx, ly + 4), (lx + 14, ly + 10)],
                s.color.filled(),
            ))
            .map_err(chart_error)?;
            root.draw(&Text::new(s.name.to_owned(), (lx + 18, ly), text(12.0)))
                .map_err(chart_error)?;
        }
    }
    Ok(())
}

/// A dashed segment from `a` to `b` (the floors' lines).
fn draw_dashed(
    root: &Area<'_>,
    a: (i32, i32),
    b: (i32, i32),
    style: ShapeStyle,
) -> Result<(), BenchError> {
    let (dx, dy) = (f64::from(b.0 - a.0), f64::from(b.1 - a.1));
    let length = dx.hypot(dy);
    let dashes = (length / 8.0).ceil().max(1.0) as i32;
    for i in (0..dashes).step_by(2) {
        let at = |k: i32| {
            let t = f64::from(k.min(dashes)) / f64::from(dashes);
            (a.0 + (dx * t) as i32, a.1 + (dy * t) as i32)
        };
        root.draw(&PathElement::new(vec![at(i), at(i + 1)], style))
            .map_err(chart_error)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_sweep_is_drawn_as_a_png_and_no_sweep_draws_nothing() {
        let point = |c: usize, k: f64| CurvePoint {
            concurrency: c,
            commits: 100.0 * k,
            commit_floor: 300.0 * k,
            runs_chain: 10.0 * k,
            chain_commits_per_run: 5,
            runs_single: 25.0 * k,
            single_commits_per_run: 3,
        };
        let mut report = BenchReport {
            backend: "memory".into(),
            concurrency: 2,
            duration: Duration::from_secs(1),
            git_commit: None,
            figures: Vec::new(),
            commits_per_run: 5,
            verified: Vec::new(),
            floors: Vec::new(),
            curve: Vec::new(),
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("curve.png");
        assert!(!render_curve(&report, &path).expect("nothing to draw"));
        assert!(!path.exists());
        report.curve = vec![point(1, 1.0), point(4, 2.5), point(16, 3.0), point(64, 3.2)];
        assert!(render_curve(&report, &path).expect("drawn"));
        let bytes = std::fs::read(&path).expect("written");
        assert!(bytes.starts_with(b"\x89PNG"), "a PNG file");
    }
}

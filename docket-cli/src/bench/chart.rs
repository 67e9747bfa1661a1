//! The PNG chart: one row per figure, the store's bar above its floor's bar, both scaled to the
//! larger of the two, with the ratio on the right.
//!
//! Text needs a TrueType font. plotters draws it through `ab_glyph` (pure Rust), and the font
//! file is looked up at run time (`DOCKET_BENCH_FONT`, then the usual DejaVu / Liberation
//! paths), so building needs no system font library. Without a font the chart is drawn without
//! text and the caller prints the legend instead ([`ChartText::Unlabelled`]).

use std::path::Path;
use std::sync::OnceLock;

use plotters::prelude::*;
use plotters::style::FontStyle;

use super::report::{number, ratio_text, BenchReport, Better};
use super::BenchError;

/// The family name the bench registers its font under.
pub(super) const FAMILY: &str = "docket-bench-sans";

/// Font files tried in order after `DOCKET_BENCH_FONT`.
const FONT_PATHS: [&str; 6] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
    "C:\\Windows\\Fonts\\arial.ttf",
];

const WIDTH: u32 = 1_280;
const ROW: i32 = 62;
const TOP: i32 = 92;
const LABEL_X: i32 = 16;
const BAR_X: i32 = 360;
const BAR_MAX: f64 = 440.0;
const RATIO_X: i32 = 1_170;

const VALUE_UP: RGBColor = RGBColor(47, 111, 183);
const VALUE_DOWN: RGBColor = RGBColor(214, 118, 38);
const FLOOR: RGBColor = RGBColor(170, 170, 170);

/// Whether the chart carries its own text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChartText {
    /// Titles, labels, values and ratios are drawn in the image.
    Labelled,
    /// No font was found: bars only; `legend` says what each row is (print it).
    Unlabelled {
        /// One line per row, top to bottom.
        legend: String,
    },
}

/// Registers the first readable font file once; `false` when there is none.
pub(super) fn font_ready() -> bool {
    static READY: OnceLock<bool> = OnceLock::new();
    static BYTES: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    *READY.get_or_init(|| {
        let bytes = BYTES.get_or_init(|| {
            let from_env = std::env::var_os("DOCKET_BENCH_FONT");
            from_env
                .iter()
                .map(std::path::PathBuf::from)
                .chain(FONT_PATHS.iter().map(std::path::PathBuf::from))
                .find_map(|path| std::fs::read(path).ok())
        });
        bytes
            .as_deref()
            .is_some_and(|b| plotters::style::register_font(FAMILY, FontStyle::Normal, b).is_ok())
    })
}

pub(super) fn chart_error(e: impl std::fmt::Display) -> BenchError {
    BenchError::Chart(e.to_string())
}

/// Draws `report` as a PNG at `path`.
///
/// # Errors
/// [`BenchError::Chart`] when the image cannot be drawn or written.
pub fn render_chart(report: &BenchReport, path: &Path) -> Result<ChartText, BenchError> {
    render(report, path, font_ready())
}

fn render(report: &BenchReport, path: &Path, labelled: bool) -> Result<ChartText, BenchError> {
    let rows = i32::try_from(report.figures.len()).map_err(chart_error)?;
    let height = u32::try_from(TOP + ROW * rows + 24).map_err(chart_error)?;
    let root = BitMapBackend::new(path, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE).map_err(chart_error)?;
    let text = |size: f64| (FAMILY, size).into_font().color(&BLACK);
    if labelled {
        let title = format!(
            "docket bench — {}: concurrency {}, {:.1} s windows{}",
            report.backend,
            report.concurrency,
            report.duration.as_secs_f64(),
            report
                .git_commit
                .as_deref()
                .map_or_else(String::new, |c| format!(", commit {c}"))
        );
        root.draw(&Text::new(title, (LABEL_X, 16), text(24.0)))
            .map_err(chart_error)?;
        let key = "upper bar: Docket (blue = throughput, orange = latency / memory) · lower bar: raw floor, same run · ratio = value ÷ floor";
        root.draw(&Text::new(key, (LABEL_X, 52), text(15.0)))
            .map_err(chart_error)?;
    }
    let mut legend = String::new();
    for (i, figure) in report.figures.iter().enumerate() {
        let y = TOP + ROW * i as i32;
        let scale = figure.value.max(figure.floor);
        let width = |x: f64| {
            if scale > 0.0 {
                ((x / scale) * BAR_MAX).round().max(1.0) as i32
            } else {
                1
            }
        };
        let color = match figure.better {
            Better::Higher => VALUE_UP,
            Better::Lower => VALUE_DOWN,
        };
        let value_w = width(figure.value);
        let floor_w = width(figure.floor);
        root.draw(&Rectangle::new(
            [(BAR_X, y + 6), (BAR_X + value_w, y + 26)],
            color.filled(),
        ))
        .map_err(chart_error)?;
        root.draw(&Rectangle::new(
            [(BAR_X, y + 30), (BAR_X + floor_w, y + 50)],
            FLOOR.filled(),
        ))
        .map_err(chart_error)?;
        let ratio = ratio_text(figure.ratio());
        if labelled {
            root.draw(&Text::new(
                figure.label.clone(),
                (LABEL_X, y + 18),
                text(17.0),
            ))
            .map_err(chart_error)?;
            let value = format!("{} {}", number(figure.value), figure.unit);
            root.draw(&Text::new(value, (BAR_X + value_w + 8, y + 8), text(15.0)))
                .map_err(chart_error)?;
            let floor = format!("{} ({})", number(figure.floor), figure.floor_label);
            root.draw(&Text::new(floor, (BAR_X + floor_w + 8, y + 32), text(15.0)))
                .map_err(chart_error)?;
            root.draw(&Text::new(ratio.clone(), (RATIO_X, y + 18), text(20.0)))
                .map_err(chart_error)?;
        }
        legend.push_str(&format!(
            "row {}: {} — upper bar {} {}, lower bar (floor) {} {}, ratio {ratio}\n",
            i + 1,
            figure.label,
            number(figure.value),
            figure.unit,
            number(figure.floor),
            figure.unit,
        ));
    }
    root.present().map_err(chart_error)?;
    Ok(if labelled {
        ChartText::Labelled
    } else {
        ChartText::Unlabelled { legend }
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::bench::report::Figure;

    fn report() -> BenchReport {
        BenchReport {
            backend: "memory".into(),
            concurrency: 2,
            duration: Duration::from_secs(1),
            git_commit: None,
            figures: vec![Figure {
                key: "commit_throughput".into(),
                label: "(a) fenced claimed commits/s".into(),
                unit: "commits/s",
                value: 50.0,
                floor: 100.0,
                floor_label: "raw".into(),
                better: Better::Higher,
                meaning: "",
            }],
            commits_per_run: 4,
            verified: Vec::new(),
            floors: Vec::new(),
            curve: Vec::new(),
        }
    }

    #[test]
    fn without_a_font_the_chart_has_bars_and_the_legend_names_every_row() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("bars.png");
        let text = render(&report(), &path, false).expect("drawn");
        let ChartText::Unlabelled { legend } = text else {
            panic!("expected an unlabelled chart");
        };
        assert!(
            legend.contains("row 1: (a) fenced claimed commits/s"),
            "{legend}"
        );
        assert!(legend.contains("ratio 0.50×"), "{legend}");
        let bytes = std::fs::read(&path).expect("written");
        assert!(bytes.starts_with(b"\x89PNG"), "a PNG file");
    }
}

//! Line charts: a link's utilisation over time, a metric against a swept parameter.

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use super::{Figure, draw_title, err, series_rgb, size, with_footnote};

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    pub style: LineStyle,
}

/// How a line is drawn: its colour (the series' index when `None`) and dash pattern, so that
/// lines of one group share a colour and a second dimension shows as solid, dashed, dotted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineStyle {
    pub colour: Option<usize>,
    /// 0 solid, 1 dashed, 2 dotted (taken modulo 3).
    pub dash: u8,
}

impl LineStyle {
    fn colour(&self, i: usize) -> RGBColor {
        series_rgb(self.colour.unwrap_or(i))
    }

    /// Dash length and gap in pixels, for dashed styles.
    fn dashes(&self) -> Option<(i32, i32)> {
        match self.dash % 3 {
            0 => None,
            1 => Some((10, 6)),
            _ => Some((3, 4)),
        }
    }
}

/// Most lines whose legend goes inside the plot; more get a legend column.
const LEGEND_INSIDE_MAX: usize = 8;
const LEGEND_WIDTH: i32 = 330;

/// A chart of several lines with a legend.
#[derive(Debug, Clone)]
pub struct LineChart {
    pub title: String,
    pub note: Option<String>,
    pub x_desc: String,
    pub y_desc: String,
    pub log_x: bool,
    pub log_y: bool,
    /// Draw points as markers too (sparse data such as study results).
    pub markers: bool,
    pub series: Vec<Series>,
    pub size: (u32, u32),
}

impl LineChart {
    fn range(&self, pick: impl Fn(&(f64, f64)) -> f64, log: bool, pad: bool) -> (f64, f64) {
        let vals = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(&pick))
            .filter(|v| v.is_finite() && (!log || *v > 0.0));
        let (mut lo, mut hi) = vals.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
        if !lo.is_finite() {
            (lo, hi) = (if log { 1.0 } else { 0.0 }, 1.0);
        }
        if log {
            if hi <= lo {
                (lo, hi) = (lo / 2.0, hi * 2.0);
            }
            (lo / 1.2, hi * 1.2)
        } else {
            let lo = lo.min(0.0);
            let pad = match (pad, hi > lo) {
                (_, false) => 1.0,
                (true, true) => (hi - lo) * 0.05,
                (false, true) => 0.0,
            };
            (lo, hi + pad)
        }
    }

    /// The place along the plot's edges where the legend hides the least: the fewest
    /// samples of the lines (their points, and 16 steps along each segment) inside a box of
    /// the legend's size. Corners before edge middles, upper right first, on a tie.
    fn legend_corner(&self) -> SeriesLabelPosition {
        let (x0, x1) = self.range(|p| p.0, self.log_x, false);
        let (y0, y1) = self.range(|p| p.1, self.log_y, true);
        let frac = |v: f64, lo: f64, hi: f64, log: bool| {
            if log {
                (v.ln() - lo.ln()) / (hi.ln() - lo.ln())
            } else {
                (v - lo) / (hi - lo)
            }
        };
        // The plot is the figure less its margins, labels and title; a legend line is about
        // 20 px high and 7.5 px per character wide after a 50 px swatch.
        let (w, h) = (self.size.0 as f64 - 150.0, self.size.1 as f64 - 150.0);
        let longest = self.series.iter().map(|s| s.label.chars().count());
        let bw = ((longest.max().unwrap_or(0) as f64 * 7.5 + 50.0) / w).min(1.0);
        let bh = ((self.series.len() as f64 * 20.0 + 16.0) / h).min(1.0);
        use SeriesLabelPosition::*;
        let (mid_x, mid_y) = ((1.0 - bw) / 2.0, (1.0 - bh) / 2.0);
        let corners = [
            (UpperRight, 1.0 - bw, 1.0 - bh),
            (UpperLeft, 0.0, 1.0 - bh),
            (LowerRight, 1.0 - bw, 0.0),
            (LowerLeft, 0.0, 0.0),
            (MiddleRight, 1.0 - bw, mid_y),
            (MiddleLeft, 0.0, mid_y),
            (UpperMiddle, mid_x, 1.0 - bh),
            (LowerMiddle, mid_x, 0.0),
        ];
        let mut hits = [0usize; 8];
        for s in &self.series {
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .filter(|(a, b)| a.is_finite() && b.is_finite())
                .map(|&(a, b)| (frac(a, x0, x1, self.log_x), frac(b, y0, y1, self.log_y)))
                .collect();
            let samples = pts.windows(2).flat_map(|ab| {
                (0..16).map(move |k| {
                    let t = k as f64 / 16.0;
                    (
                        ab[0].0 + t * (ab[1].0 - ab[0].0),
                        ab[0].1 + t * (ab[1].1 - ab[0].1),
                    )
                })
            });
            for (x, y) in samples.chain(pts.iter().copied()) {
                for (i, &(_, cx, cy)) in corners.iter().enumerate() {
                    if (cx..=cx + bw).contains(&x) && (cy..=cy + bh).contains(&y) {
                        hits[i] += 1;
                    }
                }
            }
        }
        let best = (0..corners.len()).min_by_key(|&i| hits[i]).unwrap_or(0);
        corners[best].0.clone()
    }

    fn draw_on<DB, X, Y>(&self, root: &DrawingArea<DB, Shift>, x: X, y: Y) -> Result<(), String>
    where
        DB: DrawingBackend,
        X: AsRangedCoord<Value = f64>,
        Y: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        root.fill(&WHITE).map_err(err)?;
        let area = with_footnote(root, self.note.as_deref())?;
        // Many lines: the legend gets its own column right of the plot instead of covering it.
        let outside = self.series.len() > LEGEND_INSIDE_MAX;
        let (area, legend_area) = if outside {
            let w = area.dim_in_pixel().0 as i32;
            let (a, b) = area.split_horizontally(w - LEGEND_WIDTH);
            (a, Some(b))
        } else {
            (area, None)
        };
        let mut chart = ChartBuilder::on(&area)
            .caption(
                &self.title,
                ("sans-serif", size::TITLE)
                    .into_font()
                    .style(FontStyle::Bold),
            )
            .margin(12)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(x, y)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_label_formatter(&|v| si(*v))
            .y_label_formatter(&|v| si(*v))
            .x_desc(&self.x_desc)
            .y_desc(&self.y_desc)
            .label_style(("sans-serif", size::TEXT))
            .axis_desc_style(("sans-serif", size::TEXT))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(err)?;
        for (i, s) in self.series.iter().enumerate() {
            let color = s.style.colour(i);
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|(a, b)| {
                    a.is_finite()
                        && b.is_finite()
                        && (!self.log_x || *a > 0.0)
                        && (!self.log_y || *b > 0.0)
                })
                .collect();
            let drawn = match s.style.dashes() {
                None => chart
                    .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                    .map_err(err)?,
                Some((dash, gap)) => chart
                    .draw_series(DashedLineSeries::new(
                        pts.clone(),
                        dash,
                        gap,
                        color.stroke_width(2),
                    ))
                    .map_err(err)?,
            };
            let style = s.style;
            drawn
                .label(&s.label)
                .legend(move |(x, y)| legend_line(style, color, (x, y), 20));
            if self.markers {
                chart
                    .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                    .map_err(err)?;
            }
        }
        if let Some(legend) = legend_area {
            for (i, s) in self.series.iter().enumerate() {
                let y = 40 + 18 * i as i32;
                let color = s.style.colour(i);
                legend
                    .draw(&legend_line(s.style, color, (8, y), 24))
                    .map_err(err)?;
                legend
                    .draw(&Circle::new((20, y), 3, color.filled()))
                    .map_err(err)?;
                legend
                    .draw(&Text::new(
                        s.label.clone(),
                        (38, y - 7),
                        ("sans-serif", size::SMALL).into_font(),
                    ))
                    .map_err(err)?;
            }
        } else if self.series.len() > 1 || self.series.iter().any(|s| !s.label.is_empty()) {
            chart
                .configure_series_labels()
                .position(self.legend_corner())
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(180, 180, 180))
                .label_font(("sans-serif", size::TEXT))
                .draw()
                .map_err(err)?;
        }
        Ok(())
    }
}

impl Figure for LineChart {
    fn size(&self) -> (u32, u32) {
        self.size
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let (x0, x1) = self.range(|p| p.0, self.log_x, false);
        let (y0, y1) = self.range(|p| p.1, self.log_y, true);
        match (self.log_x, self.log_y) {
            (false, false) => self.draw_on(root, x0..x1, y0..y1),
            (true, false) => self.draw_on(root, (x0..x1).log_scale(), y0..y1),
            (false, true) => self.draw_on(root, x0..x1, (y0..y1).log_scale()),
            (true, true) => self.draw_on(root, (x0..x1).log_scale(), (y0..y1).log_scale()),
        }
    }
}

/// Points of a piecewise-constant signal drawn as steps: each sample holds until the next.
pub fn steps(samples: &[(f64, f64)], end: f64) -> Vec<(f64, f64)> {
    let mut pts = Vec::with_capacity(samples.len() * 2 + 1);
    for (i, &(t, v)) in samples.iter().enumerate() {
        if i > 0 {
            pts.push((t, samples[i - 1].1));
        }
        pts.push((t, v));
    }
    if let Some(&(t, v)) = samples.last()
        && end > t
    {
        pts.push((end, v));
    }
    pts
}

/// The mean of a piecewise-constant signal over `bins` equal bins of `[0, end]`: what one pixel
/// column shows when there are more samples than pixels.
pub fn binned_mean(samples: &[(f64, f64)], end: f64, bins: usize) -> Vec<(f64, f64)> {
    let w = end / bins as f64;
    let mut sum = vec![0.0; bins];
    for (i, &(t, v)) in samples.iter().enumerate() {
        let until = samples.get(i + 1).map_or(end, |s| s.0).min(end);
        let mut a = t;
        while a < until {
            let b = ((a / w).floor() as usize).min(bins - 1);
            let hi = ((b + 1) as f64 * w).min(until);
            sum[b] += v * (hi - a);
            if hi <= a {
                break;
            }
            a = hi;
        }
    }
    let means: Vec<(f64, f64)> = sum
        .iter()
        .enumerate()
        .map(|(b, s)| (b as f64 * w, s / w))
        .collect();
    steps(&means, end)
}

/// Small multiples: one strip per series, stacked, sharing the time axis, so that lines at
/// the same value do not hide each other (link utilisation).
#[derive(Debug, Clone)]
pub struct Panels {
    pub title: String,
    pub note: Option<String>,
    pub x_desc: String,
    pub y_desc: String,
    pub x_end: f64,
    pub y_max: f64,
    pub series: Vec<Series>,
    pub width: u32,
}

const PANEL_H: u32 = 110;
const PANELS_TOP: u32 = 70;
const PANELS_BOTTOM: u32 = 60;

impl Figure for Panels {
    fn size(&self) -> (u32, u32) {
        (
            self.width,
            PANELS_TOP + PANELS_BOTTOM + PANEL_H * self.series.len().max(1) as u32,
        )
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        root.fill(&WHITE).map_err(err)?;
        let (header, rest) = root.split_vertically(PANELS_TOP);
        let notes: Vec<&str> = self.note.as_deref().into_iter().collect();
        draw_title(&header, &self.title, &notes)?;
        let n = self.series.len();
        let mut area = rest;
        for (i, s) in self.series.iter().enumerate() {
            let last = i + 1 == n;
            let h = PANEL_H + if last { PANELS_BOTTOM } else { 0 };
            let (panel, below) = area.split_vertically(h);
            area = below;
            let mut chart = ChartBuilder::on(&panel)
                .margin_right(30)
                .margin_top(6)
                .x_label_area_size(if last { PANELS_BOTTOM } else { 0 })
                .y_label_area_size(70)
                .build_cartesian_2d(0.0..self.x_end, 0.0..self.y_max)
                .map_err(err)?;
            // Major lines only, the same on every strip: a minor grid in a short strip is so
            // dense it reads as hatching.
            let mut mesh = chart.configure_mesh();
            mesh.y_labels(3)
                .y_label_formatter(&|v| format!("{v:.0}"))
                .y_desc(&self.y_desc)
                .label_style(("sans-serif", size::SMALL))
                .axis_desc_style(("sans-serif", size::SMALL))
                .bold_line_style(RGBColor(225, 225, 225))
                .light_line_style(TRANSPARENT);
            if last {
                mesh.x_desc(&self.x_desc)
                    .x_label_style(("sans-serif", size::TEXT));
            } else {
                mesh.x_label_formatter(&|_| String::new());
            }
            mesh.draw().map_err(err)?;
            let color = series_rgb(i);
            chart
                .draw_series(AreaSeries::new(
                    s.points.iter().copied(),
                    0.0,
                    color.mix(0.25).filled(),
                ))
                .map_err(err)?;
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(err)?;
            panel
                .draw_text(
                    &s.label,
                    &("sans-serif", size::TEXT)
                        .into_font()
                        .style(FontStyle::Bold)
                        .color(&BLACK),
                    (84, 10),
                )
                .map_err(err)?;
        }
        Ok(())
    }
}

/// A number with an SI prefix, short enough for an axis label (`3.13G`, `250m`, `0`).
pub fn si(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    const PREFIXES: [(f64, &str); 10] = [
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
        (1.0, ""),
        (1e-3, "m"),
        (1e-6, "µ"),
        (1e-9, "n"),
        (1e-12, "p"),
        (1e-15, "f"),
    ];
    let (scale, prefix) = PREFIXES
        .iter()
        .copied()
        .find(|(s, _)| v.abs() >= *s * 0.9995)
        .unwrap_or((1e-15, "f"));
    let x = v / scale;
    format!("{}{prefix}", super::trim_zeros(&format!("{x:.3}")))
}

/// A legend's sample of a line: `len` pixels from `at`, in the line's colour and dashes
/// (a solid line is one dash as long as the sample).
fn legend_line(
    style: LineStyle,
    color: RGBColor,
    at: (i32, i32),
    len: i32,
) -> DashedPathElement<std::array::IntoIter<(i32, i32), 2>, i32> {
    let (dash, gap) = style.dashes().unwrap_or((len, 0));
    DashedPathElement::new([at, (at.0 + len, at.1)], dash, gap, color.stroke_width(3))
}

#[cfg(test)]
mod tests {
    use super::si;

    #[test]
    fn si_labels() {
        assert_eq!(si(3.125e9), "3.125G");
        assert_eq!(si(5e10), "50G");
        assert_eq!(si(0.25), "250m");
        assert_eq!(si(1.0), "1");
        assert_eq!(si(0.0), "0");
        assert_eq!(si(-2e-6), "-2µ");
    }
}

//! Line charts: a link's utilisation over time, a metric against a swept parameter.

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use super::axis::{self, Axis};
use super::{Figure, draw_title, err, series_rgb, size, with_footnote};

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    pub style: LineStyle,
    /// x values where the line has no value (a run that failed): the line breaks there and
    /// a cross on the x axis marks the place.
    pub gaps: Vec<f64>,
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
    /// The values' span on one axis, as drawn: a log axis a little wider than the values; a
    /// linear one from zero (or its lowest value, when negative) with 5 % above, and for x
    /// 4 % on either side, so that no point sits on the frame.
    fn range(&self, pick: impl Fn(&(f64, f64)) -> f64, log: bool, is_x: bool) -> (f64, f64) {
        let vals = self
            .series
            .iter()
            .flat_map(|s| {
                let gaps = if is_x { s.gaps.clone() } else { Vec::new() };
                s.points.iter().map(&pick).chain(gaps)
            })
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
            return (lo / 1.2, hi * 1.2);
        }
        if is_x && hi == lo {
            // One value: in the middle.
            let d = if lo == 0.0 { 1.0 } else { lo.abs() / 2.0 };
            return (lo - d, hi + d);
        }
        let lo = lo.min(0.0);
        if hi <= lo {
            hi = lo + 1.0;
        }
        let span = hi - lo;
        if is_x {
            (lo - 0.04 * span, hi + 0.04 * span)
        } else {
            (lo, hi + 0.05 * span)
        }
    }

    /// Both axes with their ticks; x at the swept values when they are few.
    fn axes(&self) -> (Axis, Axis) {
        let (x0, x1) = self.range(|p| p.0, self.log_x, true);
        let (y0, y1) = self.range(|p| p.1, self.log_y, false);
        let xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0).chain(s.gaps.iter().copied()))
            .collect();
        let mut x = Axis::new(x0, x1, self.log_x);
        if let Some(ticks) = axis::at_values(&xs, x0, x1, self.log_x).filter(|_| self.markers) {
            x.ticks = ticks;
        }
        (x, Axis::new(y0, y1, self.log_y))
    }

    /// For each line, the earlier lines it runs on top of: (earlier line, points shared), so
    /// that a line hidden under another is drawn dashed and the legend says where it is.
    fn coincidences(&self) -> Vec<Vec<(usize, usize)>> {
        let same = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs());
        self.series
            .iter()
            .enumerate()
            .map(|(i, s)| {
                self.series[..i]
                    .iter()
                    .enumerate()
                    .filter_map(|(j, e)| {
                        let n = s
                            .points
                            .iter()
                            .filter(|p| e.points.iter().any(|q| same(p.0, q.0) && same(p.1, q.1)))
                            .count();
                        (n > 0).then_some((j, n))
                    })
                    .collect()
            })
            .collect()
    }

    /// A line's legend text and style: a line that lies on earlier ones for all its points
    /// or for a stretch (two points or more) is dashed unlike them and says on which.
    fn drawn_as(&self, i: usize, on: &[(usize, usize)]) -> (String, LineStyle) {
        let s = &self.series[i];
        let hidden: Vec<&(usize, usize)> = on.iter().filter(|(_, n)| *n >= 2).collect();
        if hidden.is_empty() {
            return (s.label.clone(), s.style);
        }
        let total = s.points.len();
        let names: Vec<String> = hidden
            .iter()
            .map(|&&(j, n)| {
                let name = &self.series[j].label;
                if n == total {
                    format!("on {name}")
                } else {
                    format!("on {name} at {n} of {total} points")
                }
            })
            .collect();
        let earlier_dash = hidden
            .iter()
            .map(|(j, _)| self.series[*j].style.dash % 3)
            .max()
            .unwrap_or(0);
        let style = LineStyle {
            dash: earlier_dash + 1,
            ..s.style
        };
        (format!("{} ({})", s.label, names.join(", ")), style)
    }

    /// The place along the plot's edges where the legend hides the least: the fewest
    /// samples of the lines (their points, and 16 steps along each segment) inside a box of
    /// the legend's size. Corners before edge middles, upper right first, on a tie.
    fn legend_corner(&self, xa: &Axis, ya: &Axis) -> (SeriesLabelPosition, usize) {
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
                .map(|&(a, b)| (xa.fraction(a), ya.fraction(b)))
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
        (corners[best].0.clone(), hits[best])
    }

    fn draw_chart<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        root.fill(&WHITE).map_err(err)?;
        let any_gaps = self.series.iter().any(|s| !s.gaps.is_empty());
        let mut note = self.note.clone().unwrap_or_default();
        if any_gaps {
            if !note.is_empty() {
                note.push_str("; ");
            }
            note.push_str("a cross on the x axis marks a run that failed (the line breaks there)");
        }
        let area = with_footnote(root, (!note.is_empty()).then_some(note.as_str()))?;
        let on = self.coincidences();
        let drawn: Vec<(String, LineStyle)> = (0..self.series.len())
            .map(|i| self.drawn_as(i, &on[i]))
            .collect();
        // The legend goes inside where it hides no point or line, else in a column of its own.
        let (xa, ya) = self.axes();
        let (corner, hidden) = self.legend_corner(&xa, &ya);
        let outside = self.series.len() > LEGEND_INSIDE_MAX || hidden > 0;
        let (area, legend_area) = if outside {
            let w = area.dim_in_pixel().0 as i32;
            let (a, b) = area.split_horizontally(w - LEGEND_WIDTH);
            (a, Some(b))
        } else {
            (area, None)
        };
        let y_floor = ya.lo;
        let mut chart = ChartBuilder::on(&area)
            .caption(
                &self.title,
                ("sans-serif", size::TITLE)
                    .into_font()
                    .style(FontStyle::Bold),
            )
            .margin(12)
            .margin_right(24)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(xa, ya)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_label_formatter(&|v| axis::label(*v))
            .y_label_formatter(&|v| axis::label(*v))
            .x_desc(&self.x_desc)
            .y_desc(&self.y_desc)
            .label_style(("sans-serif", size::TEXT))
            .axis_desc_style(("sans-serif", size::TEXT))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(err)?;
        for (i, s) in self.series.iter().enumerate() {
            let (label, style) = &drawn[i];
            let style = *style;
            let color = style.colour(i);
            let ok = |(a, b): &(f64, f64)| {
                a.is_finite()
                    && b.is_finite()
                    && (!self.log_x || *a > 0.0)
                    && (!self.log_y || *b > 0.0)
            };
            let pts: Vec<(f64, f64)> = s.points.iter().copied().filter(ok).collect();
            for (k, piece) in pieces(&pts, &s.gaps).into_iter().enumerate() {
                let line = match style.dashes() {
                    None => chart
                        .draw_series(LineSeries::new(piece, color.stroke_width(2)))
                        .map_err(err)?,
                    Some((dash, gap)) => chart
                        .draw_series(DashedLineSeries::new(
                            piece,
                            dash,
                            gap,
                            color.stroke_width(2),
                        ))
                        .map_err(err)?,
                };
                if k == 0 {
                    line.label(label)
                        .legend(move |(x, y)| legend_line(style, color, (x, y), 20));
                }
            }
            if self.markers {
                // A line on top of another shows its points as rings around the other's dots.
                let ring = style != s.style;
                chart
                    .draw_series(pts.iter().map(|&p| {
                        if ring {
                            Circle::new(p, 5, color.stroke_width(2))
                        } else {
                            Circle::new(p, 3, color.filled())
                        }
                    }))
                    .map_err(err)?;
            }
            chart
                .draw_series(
                    s.gaps
                        .iter()
                        .map(|&x| Cross::new((x, y_floor), 6, color.stroke_width(2))),
                )
                .map_err(err)?;
        }
        if let Some(legend) = legend_area {
            for (i, (label, style)) in drawn.iter().enumerate() {
                let y = 40 + 18 * i as i32;
                let color = style.colour(i);
                legend
                    .draw(&legend_line(*style, color, (8, y), 24))
                    .map_err(err)?;
                legend
                    .draw(&Circle::new((20, y), 3, color.filled()))
                    .map_err(err)?;
                legend
                    .draw(&Text::new(
                        label.clone(),
                        (38, y - 7),
                        ("sans-serif", size::SMALL).into_font(),
                    ))
                    .map_err(err)?;
            }
        } else if self.series.len() > 1 || self.series.iter().any(|s| !s.label.is_empty()) {
            chart
                .configure_series_labels()
                .position(corner)
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
        self.draw_chart(root)
    }
}

/// The stretches of a line between its gaps (points sorted by x): a gap at x cuts the line
/// between the points before and after it.
fn pieces(points: &[(f64, f64)], gaps: &[f64]) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for (i, &p) in points.iter().enumerate() {
        if i > 0 && gaps.iter().any(|&g| points[i - 1].0 < g && g < p.0) {
            out.push(Vec::new());
        }
        out.last_mut().expect("one piece at least").push(p);
    }
    out.retain(|p| !p.is_empty());
    out
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
    /// The unit after each value on a strip's axis (`%`).
    pub y_unit: String,
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
            let x = Axis::new(0.0, self.x_end, false);
            // The strip's values say their unit (`100 %`): a rotated title beside each short
            // strip would not fit.
            let y = Axis {
                lo: 0.0,
                hi: self.y_max,
                log: false,
                ticks: axis::Ticks {
                    major: axis::linear_about(0.0, self.y_max / 1.3, 2.5).major,
                    minor: Vec::new(),
                },
            };
            let mut chart = ChartBuilder::on(&panel)
                .margin_right(30)
                .margin_top(6)
                .x_label_area_size(if last { PANELS_BOTTOM } else { 0 })
                .y_label_area_size(70)
                .build_cartesian_2d(x, y)
                .map_err(err)?;
            // Major lines only, the same on every strip: a minor grid in a short strip is so
            // dense it reads as hatching.
            let y_unit = self.y_unit.clone();
            let y_label = move |v: &f64| format!("{} {y_unit}", axis::label(*v));
            let mut mesh = chart.configure_mesh();
            mesh.y_label_formatter(&y_label)
                .label_style(("sans-serif", size::SMALL))
                .axis_desc_style(("sans-serif", size::SMALL))
                .bold_line_style(RGBColor(225, 225, 225))
                .light_line_style(TRANSPARENT);
            if last {
                mesh.x_desc(&self.x_desc)
                    .x_label_formatter(&|v| axis::label(*v))
                    .x_label_style(("sans-serif", size::TEXT));
            } else {
                mesh.x_label_formatter(&|_| String::new());
            }
            mesh.draw().map_err(err)?;
            let color = s.style.colour(i);
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
    use super::*;

    fn series(label: &str, points: &[(f64, f64)]) -> Series {
        Series {
            label: label.into(),
            points: points.to_vec(),
            style: LineStyle::default(),
            gaps: Vec::new(),
        }
    }

    fn chart(series: Vec<Series>) -> LineChart {
        LineChart {
            title: "t".into(),
            note: None,
            x_desc: "x".into(),
            y_desc: "y".into(),
            log_x: false,
            log_y: false,
            markers: true,
            series,
            size: (1200, 720),
        }
    }

    #[test]
    fn a_gap_breaks_the_line_between_its_neighbours() {
        let pts = [(1.0, 1.0), (2.0, 2.0), (4.0, 4.0), (8.0, 8.0)];
        assert_eq!(
            pieces(&pts, &[3.0]),
            vec![pts[..2].to_vec(), pts[2..].to_vec()]
        );
        assert_eq!(pieces(&pts, &[0.5, 9.0]), vec![pts.to_vec()]);
    }

    #[test]
    fn a_line_on_top_of_another_is_dashed_and_says_where() {
        let c = chart(vec![
            series("ring", &[(1.0, 5.0), (2.0, 6.0), (4.0, 7.0)]),
            series("auto", &[(1.0, 5.0), (2.0, 6.0), (4.0, 9.0)]),
            series("tree", &[(1.0, 5.0), (2.0, 8.0), (4.0, 9.5)]),
        ]);
        let on = c.coincidences();
        let (label, style) = c.drawn_as(1, &on[1]);
        assert_eq!(label, "auto (on ring at 2 of 3 points)");
        assert_eq!(style.dash, 1);
        // One shared point is a crossing, not a hidden line.
        assert_eq!(c.drawn_as(2, &on[2]).0, "tree");
        let c = chart(vec![series("a", &[(1.0, 1.0)]), series("b", &[(1.0, 1.0)])]);
        assert_eq!(c.drawn_as(1, &c.coincidences()[1]).0, "b");
        let c = chart(vec![
            series("a", &[(1.0, 1.0), (2.0, 2.0)]),
            series("b", &[(1.0, 1.0), (2.0, 2.0)]),
        ]);
        assert_eq!(c.drawn_as(1, &c.coincidences()[1]).0, "b (on a)");
    }

    #[test]
    fn no_point_sits_on_the_frame() {
        let c = chart(vec![series("a", &[(100.0, 1.0)])]);
        let (x, _) = c.axes();
        assert!(x.lo < 100.0 && x.hi > 100.0 && (x.fraction(100.0) - 0.5).abs() < 1e-12);
        let c = chart(vec![series("a", &[(1.0, 1.0), (6.0, 2.0)])]);
        let (x, _) = c.axes();
        assert!(x.fraction(6.0) < 0.99 && x.fraction(0.0) > 0.01);
        assert_eq!(x.ticks.major, [1.0, 6.0], "the swept values are the ticks");
    }
}

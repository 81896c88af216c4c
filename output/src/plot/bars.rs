//! Horizontal bar charts: one bar per labelled row, coloured by group, with a zero line
//! (the ablation chart: each switch off against the full model, in % change).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{Figure, err, series_rgb, size, with_footnote};

#[derive(Debug, Clone)]
pub struct Bar {
    pub label: String,
    /// Index of the colour group (legend entry).
    pub group: usize,
    pub value: f64,
}

#[derive(Debug, Clone)]
pub struct BarChart {
    pub title: String,
    pub note: Option<String>,
    pub x_desc: String,
    /// Colour groups (bars are coloured by group; their labels name it).
    pub groups: Vec<String>,
    pub bars: Vec<Bar>,
    pub width: u32,
}

const BAR_H: u32 = 28;

impl Figure for BarChart {
    fn size(&self) -> (u32, u32) {
        (self.width, 170 + BAR_H * self.bars.len().max(1) as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        root.fill(&WHITE).map_err(err)?;
        let area = with_footnote(root, self.note.as_deref())?;
        let finite = self.bars.iter().map(|b| b.value).filter(|v| v.is_finite());
        let lo = finite.clone().fold(0.0f64, f64::min);
        let hi = finite.fold(0.0f64, f64::max);
        let pad = ((hi - lo) * 0.1).max(1e-9);
        let n = self.bars.len() as i32;
        let label_w = self
            .bars
            .iter()
            .map(|b| b.label.chars().count())
            .max()
            .unwrap_or(4) as u32
            * 8
            + 16;
        let mut chart = ChartBuilder::on(&area)
            .caption(
                &self.title,
                ("sans-serif", size::TITLE)
                    .into_font()
                    .style(FontStyle::Bold),
            )
            .margin(12)
            .x_label_area_size(50)
            .y_label_area_size(label_w.min(self.width / 2))
            .build_cartesian_2d(
                super::axis::Axis::new(lo - pad, hi + pad, false),
                (0..n - 1).into_segmented(),
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(self.bars.len())
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => self
                    .bars
                    .get((n - 1 - i) as usize)
                    .map(|b| b.label.clone())
                    .unwrap_or_default(),
                _ => String::new(),
            })
            .x_label_formatter(&|v| super::axis::label(*v))
            .x_desc(&self.x_desc)
            .label_style(("sans-serif", size::TEXT))
            .axis_desc_style(("sans-serif", size::TEXT))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(err)?;
        for g in 0..self.groups.len() {
            let color = series_rgb(g);
            chart
                .draw_series(
                    self.bars
                        .iter()
                        .enumerate()
                        .filter(|(_, b)| b.group == g && b.value.is_finite())
                        .map(|(i, b)| {
                            let y = n - 1 - i as i32;
                            let mut r = Rectangle::new(
                                [
                                    (0.0, SegmentValue::Exact(y)),
                                    (b.value, SegmentValue::Exact(y + 1)),
                                ],
                                color.filled(),
                            );
                            r.set_margin(4, 4, 0, 0);
                            r
                        }),
                )
                .map_err(err)?;
        }
        chart
            .draw_series(LineSeries::new(
                [(0.0, SegmentValue::Exact(0)), (0.0, SegmentValue::Exact(n))],
                BLACK.stroke_width(1),
            ))
            .map_err(err)?;
        Ok(())
    }
}

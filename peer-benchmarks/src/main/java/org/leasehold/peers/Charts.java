package org.leasehold.peers;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.ToDoubleFunction;

import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/** The results table as one PNG: cycles/s and acquire p99 per workload and system, both on log scales. */
final class Charts {
    private Charts() {
    }

    static void write(ResultTable table, String subtitle, Path png) throws IOException {
        List<ResultTable.Row> rows = table.rows();
        CategoryChart rate = chart(rows, "Cycles/s (acquire + release), median of runs — " + subtitle, "cycles/s",
                ResultTable.Row::medianCyclesPerSecond);
        CategoryChart p99 = chart(rows, "Acquire p99 (µs), all runs — " + subtitle, "µs", ResultTable.Row::p99);
        String file = png.toString();
        String base = file.endsWith(".png") ? file.substring(0, file.length() - 4) : file;
        BitmapEncoder.saveBitmap(List.of(rate, p99), 2, 1, base, BitmapEncoder.BitmapFormat.PNG);
    }

    private static CategoryChart chart(List<ResultTable.Row> rows, String title, String yTitle,
                                       ToDoubleFunction<ResultTable.Row> value) {
        Set<String> workloads = new LinkedHashSet<>();
        Set<String> systems = new LinkedHashSet<>();
        for (ResultTable.Row r : rows) {
            workloads.add(r.workload());
            systems.add(r.system());
        }
        CategoryChart chart = new CategoryChartBuilder().width(1200).height(520).title(title).xAxisTitle("workload")
                .yAxisTitle(yTitle).build();
        chart.getStyler().setYAxisLogarithmic(true);
        chart.getStyler().setYAxisMin(1.0);
        chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
        chart.getStyler().setLabelsVisible(false);
        chart.getStyler().setAvailableSpaceFill(0.9);
        for (String system : systems) {
            List<String> x = new ArrayList<>();
            List<Double> y = new ArrayList<>();
            for (String w : workloads) {
                for (ResultTable.Row r : rows) {
                    if (r.workload().equals(w) && r.system().equals(system) && value.applyAsDouble(r) > 0) {
                        x.add(w);
                        y.add(value.applyAsDouble(r));
                    }
                }
            }
            if (!x.isEmpty()) {
                chart.addSeries(system, x, y);
            }
        }
        return chart;
    }
}

// vkconv memory: what every algorithm costs in device memory, forward and backward, for each layer of the
// table at a given batch: workspace from the library's exact queries, and the pool peak a pass holds
// (its operands as the pool rounds them plus that workspace: the identity the test suite checks to the
// byte for every pass). Printed as a table, optionally written as JSON and as an SVG bar chart.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>

#include "bench.hpp"
#include "cli_common.hpp"
#include "commands.hpp"
#include "layers.hpp"

namespace vkconv_cli {
namespace {

struct MemoryArgs {
    std::vector<std::string> only;
    int64_t batch = 32;
    std::string layout = "nchw";
    std::string json_file, svg_file;
    std::string layers_file;  // --layers: a table in the layers.csv format (empty: the built-in one)
    std::string device;
};

// One algorithm's figures for one layer; nullopt where it cannot run the problem on this device.
struct Cost {
    std::optional<uint64_t> forward, data, filter, step;  // workspace bytes
    std::optional<uint64_t> forward_peak, step_peak;
};

struct LayerReport {
    std::string name;
    vkconv::ConvProblem problem;
    std::vector<std::pair<vkconv::Algorithm, Cost>> costs;
    double lowered_ratio = 0;  // im2col / MEC lowered buffer at batch 1 in NHWC (no filter copy)
};

template <typename Query>
std::optional<uint64_t> query(Query&& q) {
    try {
        return q();
    } catch (const vkconv::Error& e) {
        if (e.category() != vkconv::ErrorCategory::Unsupported) throw;
        return std::nullopt;
    }
}

uint64_t rounded(const vkconv::PoolStats& pool, const vkconv::Shape& shape) {
    return pool.rounded(uint64_t(vkconv::shape_elements(shape)) * 4);
}

Cost cost_of(vkconv::Context& context, const vkconv::ConvProblem& p, vkconv::Algorithm a) {
    const auto pool = context.pool_stats();
    const uint64_t x = rounded(pool, p.input_shape()), w = rounded(pool, p.filter_shape());
    const uint64_t y = rounded(pool, p.output_shape());
    Cost c;
    if (a == vkconv::Algorithm::Direct) {
        // Direct binds whole tensors: beyond maxStorageBufferRange it cannot run at all.
        const uint64_t largest = uint64_t(std::max({p.input_elements(), p.output_elements(), p.filter_elements()})) * 4;
        if (largest > context.device().max_storage_buffer_range) return c;
    }
    c.forward = query([&] { return vkconv::forward_workspace_bytes(context, p, a); });
    c.data = query([&] { return vkconv::backward_data_workspace_bytes(context, p, a); });
    c.filter = query([&] { return vkconv::backward_filter_workspace_bytes(context, p, a); });
    c.step = query([&] { return vkconv::layer_backward_workspace_bytes(context, p, a); });
    if (c.forward) c.forward_peak = x + w + y + *c.forward;
    if (c.step) c.step_peak = x + w + y + x + w + *c.step;  // x, w, dy, dx, dw
    return c;
}

std::string cell(const std::optional<uint64_t>& bytes) {
    return bytes ? mib(*bytes) : std::string("—");
}

// One series of the pool-peak chart: an algorithm's forward pass or backward step.
struct Series {
    vkconv::Algorithm algorithm;
    bool backward;
    const char* label;
    const char* color;
};
constexpr Series kSeries[] = {{vkconv::Algorithm::Im2col, false, "im2col forward", "#d95f02"},
                              {vkconv::Algorithm::Mec, false, "MEC forward", "#1b9e77"},
                              {vkconv::Algorithm::Direct, false, "direct/depthwise forward", "#7570b3"},
                              {vkconv::Algorithm::Im2col, true, "im2col backward step", "#fdae6b"},
                              {vkconv::Algorithm::Mec, true, "MEC backward step", "#a1d99b"},
                              {vkconv::Algorithm::Direct, true, "direct/depthwise backward step", "#bcbddc"}};

// A layer's peak in one series (Direct's series shows Depthwise too), or nothing where it did not run.
std::optional<uint64_t> peak_of(const LayerReport& r, const Series& s) {
    for (const auto& [a, c] : r.costs) {
        const bool match =
            a == s.algorithm || (s.algorithm == vkconv::Algorithm::Direct && a == vkconv::Algorithm::Depthwise);
        if (match) return s.backward ? c.step_peak : c.forward_peak;
    }
    return std::nullopt;
}

// The chart's geometry: bars grouped per layer, and a log10 MiB axis from 0.1 MiB up to the next power of
// ten above the largest peak.
struct Chart {
    static constexpr double bar = 7, gap = 14, left = 70, top = 50, height = 320;
    static constexpr double group = 6 * bar + gap;
    double width = 0, low = -1, high = 0;

    explicit Chart(const std::vector<LayerReport>& reports) : width(left + group * double(reports.size()) + 20) {
        double largest = 1;
        for (const auto& r : reports)
            for (const auto& s : kSeries)
                if (auto p = peak_of(r, s)) largest = std::max(largest, double(*p) / 1048576.0);
        high = std::ceil(std::log10(largest));
    }
    double y_of(double mib_value) const {
        const double v = std::clamp(std::log10(std::max(mib_value, 0.1)), low, high);
        return top + height * (1 - (v - low) / (high - low));
    }
};

// The SVG header, the title and the axis's lines and labels, one per power of ten.
void write_svg_axis(std::ostream& out, const Chart& c, const MemoryArgs& args) {
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
                  "font-size=\"10\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                  c.width, c.top + c.height + 110);
    out << buf;
    std::snprintf(buf, sizeof buf,
                  "<text x=\"%.0f\" y=\"20\" font-size=\"13\">vkconv pool peak per pass, batch %lld, %s (MiB, log "
                  "scale)</text>\n",
                  c.left, (long long)args.batch, args.layout.c_str());
    out << buf;
    for (double v = c.low; v <= c.high; v += 1) {
        const double y = c.y_of(std::pow(10.0, v));
        std::snprintf(buf, sizeof buf,
                      "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n<text x=\"%.0f\" "
                      "y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                      c.left, c.width - 10, y, y, c.left - 5, y + 3, std::pow(10.0, v));
        out << buf;
    }
}

// Each layer's bars (with a tooltip) and its name, rotated under them.
void write_svg_bars(std::ostream& out, const Chart& c, const std::vector<LayerReport>& reports) {
    char buf[512];
    for (size_t i = 0; i < reports.size(); ++i) {
        const double x0 = c.left + c.group * double(i) + c.gap / 2;
        for (size_t k = 0; k < std::size(kSeries); ++k) {
            const auto peak = peak_of(reports[i], kSeries[k]);
            if (!peak) continue;
            const double y = c.y_of(double(*peak) / 1048576.0);
            std::snprintf(buf, sizeof buf,
                          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s %s: %s"
                          "</title></rect>\n",
                          x0 + c.bar * double(k), y, c.bar - 1, c.top + c.height - y, kSeries[k].color,
                          reports[i].name.c_str(), kSeries[k].label, mib(*peak).c_str());
            out << buf;
        }
        std::snprintf(buf, sizeof buf,
                      "<text transform=\"translate(%.1f,%.0f) rotate(-60)\" text-anchor=\"end\">%s</text>\n",
                      x0 + 3 * c.bar, c.top + c.height + 12, reports[i].name.c_str());
        out << buf;
    }
}

// The legend: three series a row under the chart.
void write_svg_legend(std::ostream& out, const Chart& c) {
    char buf[512];
    for (size_t k = 0; k < std::size(kSeries); ++k) {
        const double x = c.left + 170 * double(k % 3), y = c.top + c.height + 80 + 14 * double(k / 3);
        std::snprintf(buf, sizeof buf,
                      "<rect x=\"%.0f\" y=\"%.0f\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%.0f\" "
                      "y=\"%.0f\">%s</text>\n",
                      x, y - 9, kSeries[k].color, x + 14, y, kSeries[k].label);
        out << buf;
    }
}

// A grouped bar chart of the pool peak per layer (log scale), forward and backward step per algorithm,
// written by hand: no plotting dependency for one chart.
void write_svg(const std::string& path, const std::vector<LayerReport>& reports, const MemoryArgs& args) {
    const Chart chart(reports);
    std::ofstream out(path);
    if (!out) throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument, "cannot write --svg '" + path + "'");
    write_svg_axis(out, chart, args);
    write_svg_bars(out, chart, reports);
    write_svg_legend(out, chart);
    out << "</svg>\n";
    if (!out) throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument, "cannot write --svg '" + path + "'");
}

int run_memory(const MemoryArgs& args) {
    if (!args.json_file.empty()) check_writable(args.json_file, "--json");
    if (!args.svg_file.empty()) check_writable(args.svg_file, "--svg");
    const auto layout = vkconv::parse_layout(args.layout);
    const LayerTable table = read_layer_table(args.layers_file);
    auto layers = parse_layers(table.text, table.origin);
    check_layer_names(layers, args.only, table.origin);
    vkconv::ContextOptions options;
    options.device = args.device;
    vkconv::Context context(options);
    std::printf("device: %s\n", context.device().summary().c_str());
    std::printf(
        "Workspace (exact, from the library's queries) and pool peak (operands + workspace) per pass, "
        "batch %lld, %s\n",
        (long long)args.batch, args.layout.c_str());
    std::printf("%-17s %-*s %10s %10s %10s %10s %11s %11s\n", "layer", algorithm_column_width(), "algo", "forward", "bwd data", "bwd filter",
                "bwd step", "fwd peak", "step peak");
    std::vector<LayerReport> reports;
    std::vector<std::string> rows;
    for (const auto& layer : layers) {
        if (!args.only.empty() && std::count(args.only.begin(), args.only.end(), layer.name) == 0) continue;
        LayerReport report{layer.name, layer.problem, {}, 0};
        auto& p = report.problem;
        p.N = args.batch, p.layout = layout;
        for (vkconv::Algorithm a : vkconv::all_algorithms()) {
            if (!vkconv::algorithm_applies(a, p, vkconv::Pass::Forward)) continue;
            const Cost c = cost_of(context, p, a);
            report.costs.emplace_back(a, c);
            std::printf("%-17s %-*s %10s %10s %10s %10s %11s %11s\n", layer.name.c_str(), algorithm_column_width(),
                        vkconv::to_string(a),
                        cell(c.forward).c_str(), cell(c.data).c_str(), cell(c.filter).c_str(), cell(c.step).c_str(),
                        cell(c.forward_peak).c_str(), cell(c.step_peak).c_str());
            JsonObject row;
            row.add("layer", layer.name).add("algorithm", vkconv::to_string(a));
            for (const auto& [key, value] : {std::pair{"forward_workspace_bytes", c.forward},
                                             {"backward_data_workspace_bytes", c.data},
                                             {"backward_filter_workspace_bytes", c.filter},
                                             {"layer_backward_workspace_bytes", c.step},
                                             {"forward_peak_bytes", c.forward_peak},
                                             {"layer_backward_peak_bytes", c.step_peak}})
                if (value) row.add(key, *value);
            rows.push_back(row.str());
        }
        // The paper's ratio of lowered buffers: one image, NHWC (MEC needs no filter copy there).
        auto one = layer.problem;
        one.N = 1, one.layout = vkconv::Layout::NHWC;
        const auto im2col =
            query([&] { return vkconv::forward_workspace_bytes(context, one, vkconv::Algorithm::Im2col); });
        const auto mec = query([&] {
            vkconv::PassOptions b;
            b.variant = "B";  // Solution A's scratch also parks the output
            return vkconv::forward_workspace_bytes(context, one, vkconv::Algorithm::Mec, b);
        });
        if (im2col && mec && *mec) {
            report.lowered_ratio = double(*im2col) / double(*mec);
            std::printf("%-17s lowered buffer im2col / MEC (one image, NHWC): %s / %s = %.2fx\n", layer.name.c_str(),
                        mib(*im2col).c_str(), mib(*mec).c_str(), report.lowered_ratio);
        }
        reports.push_back(std::move(report));
        std::fflush(stdout);
    }
    if (!args.json_file.empty()) {
        const std::string header = JsonObject().add("batch", args.batch).add("layout", args.layout).str();
        write_json_rows(args.json_file, "--json", context.device().summary(), header.substr(1, header.size() - 2),
                        rows);
    }
    if (!args.svg_file.empty()) write_svg(args.svg_file, reports, args);
    return kSuccess;
}

}  // namespace

Action add_memory_command(CLI::App& root) {
    auto args = std::make_shared<MemoryArgs>();
    auto* command = root.add_subcommand(
        "memory", "workspace and pool peak of every algorithm, forward and backward, for each layer of the table");
    command->add_option("--layer", args->only, "only these layers (repeatable)");
    command->add_option("--layers", args->layers_file,
                        "a layer table in the layers.csv format (default: built in; pads may be BEGIN:END)");
    command->add_option("--batch", args->batch, "batch size N of every layer")
        ->check(positive_integer())
        ->capture_default_str();
    command->add_option("--layout", args->layout, "nchw or nhwc")
        ->check(CLI::IsMember({"nchw", "nhwc"}))
        ->capture_default_str();
    command->add_option("--json", args->json_file, "also write the figures as JSON to this file");
    command->add_option("--svg", args->svg_file, "also write a bar chart of the pool peaks as SVG to this file");
    command->add_option("--device", args->device, "device index or case-insensitive name substring");
    return [args] { return run_memory(*args); };
}

}  // namespace vkconv_cli

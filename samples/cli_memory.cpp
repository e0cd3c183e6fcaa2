// vkconv memory: what every algorithm costs in device memory, forward and backward, for each layer of the
// table at a given batch: workspace from the library's exact queries, and the pool peak a pass holds
// (its operands as the pool rounds them plus that workspace: the identity the test suite checks to the
// byte for every pass). Each element type asked for (--dtype) is reported in turn, and a 16-bit type's
// figures over f32's where both are. Printed as a table, optionally written as JSON and as an SVG bar chart.
#include <algorithm>
#include <array>
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
    std::vector<std::string> dtypes{"f32"};  // --dtype: element types, each reported in turn
};

// One algorithm's figures for one layer in one element type; nullopt where it cannot run the problem on this
// device (or not in that type).
struct Cost {
    std::optional<uint64_t> forward, data, filter, step;                      // workspace bytes
    std::optional<uint64_t> forward_peak, data_peak, filter_peak, step_peak;  // pool peak bytes

    // The table's columns in order: the four workspaces, then the four peaks.
    std::array<std::optional<uint64_t>, 8> columns() const {
        return {forward, data, filter, step, forward_peak, data_peak, filter_peak, step_peak};
    }
};

struct CostEntry {
    vkconv::Algorithm algorithm;
    vkconv::DataType type;
    Cost cost;
};

struct LayerReport {
    std::string name;
    vkconv::ConvProblem problem;
    std::vector<CostEntry> costs;
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

// A tensor of `shape` in the problem's element type, as the pool holds it.
uint64_t rounded(const vkconv::PoolStats& pool, const vkconv::Shape& shape, vkconv::DataType type) {
    return pool.rounded(uint64_t(vkconv::shape_elements(shape)) * vkconv::element_bytes(type));
}

// `p` in its own data_type: every tensor (and every workspace the queries size) in that type.
Cost cost_of(vkconv::Context& context, const vkconv::ConvProblem& p, vkconv::Algorithm a) {
    const auto pool = context.pool_stats();
    const uint64_t x = rounded(pool, p.input_shape(), p.data_type), w = rounded(pool, p.filter_shape(), p.data_type);
    const uint64_t y = rounded(pool, p.output_shape(), p.data_type);
    Cost c;
    if (a == vkconv::Algorithm::Direct) {
        // Direct binds whole tensors: beyond maxStorageBufferRange it cannot run at all.
        const uint64_t largest = uint64_t(std::max({p.input_elements(), p.output_elements(), p.filter_elements()})) *
                                 vkconv::element_bytes(p.data_type);
        if (largest > context.device().max_storage_buffer_range) return c;
    }
    c.forward = query([&] { return vkconv::forward_workspace_bytes(context, p, a); });
    c.data = query([&] { return vkconv::backward_data_workspace_bytes(context, p, a); });
    c.filter = query([&] { return vkconv::backward_filter_workspace_bytes(context, p, a); });
    c.step = query([&] { return vkconv::layer_backward_workspace_bytes(context, p, a); });
    // Each pass holds three tensors of the problem's shapes: x, w, y; dy, w, dx; x, dy, dw.
    if (c.forward) c.forward_peak = x + w + y + *c.forward;
    if (c.data) c.data_peak = y + w + x + *c.data;
    if (c.filter) c.filter_peak = x + y + w + *c.filter;
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

// A layer's peak in one series (Direct's series shows Depthwise too) in the chart's element type (the first
// reported), or nothing where it did not run.
std::optional<uint64_t> peak_of(const LayerReport& r, const Series& s) {
    if (r.costs.empty()) return std::nullopt;
    const vkconv::DataType charted = r.costs.front().type;
    for (const CostEntry& e : r.costs) {
        const bool match = e.algorithm == s.algorithm ||
                           (s.algorithm == vkconv::Algorithm::Direct && e.algorithm == vkconv::Algorithm::Depthwise);
        if (match && e.type == charted) return s.backward ? e.cost.step_peak : e.cost.forward_peak;
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
                  "<text x=\"%.0f\" y=\"20\" font-size=\"13\">vkconv pool peak per pass, batch %lld, %s, %s (MiB, "
                  "log scale)</text>\n",
                  c.left, (long long)args.batch, args.layout.c_str(),
                  vkconv::to_string(data_types(args.dtypes).front()));
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

// The table's columns: layer, algorithm, element type (or "f16/f32" on a ratio row), then four workspaces and
// four pool peaks, each right-aligned in its width (a cell of "—" counted as one column).
constexpr int kTypeWidth = 8, kNumberWidth = 12;
const char* const kColumns[] = {"forward",  "bwd data",  "bwd filter",  "bwd step",
                                "fwd peak", "data peak", "filter peak", "step peak"};

void print_row(const std::string& layer, const std::string& algorithm, const std::string& type,
               const std::array<std::string, 8>& cells) {
    std::printf("%-17s %-*s %-*s", layer.c_str(), algorithm_column_width(), algorithm.c_str(), kTypeWidth,
                type.c_str());
    for (const std::string& text : cells) std::printf(" %s", pad_left(text, kNumberWidth).c_str());
    std::printf("\n");
}

void print_header(const vkconv::Context& context, const MemoryArgs& args) {
    std::printf("device: %s\n", context.device().summary().c_str());
    std::printf(
        "Workspace (exact, from the library's queries) and pool peak (operands + workspace) per pass, "
        "batch %lld, %s\n",
        (long long)args.batch, args.layout.c_str());
    std::array<std::string, 8> names;
    std::copy(std::begin(kColumns), std::end(kColumns), names.begin());
    print_row("layer", "algo", "dtype", names);
}

// One algorithm in one type: its table row and JSON row. `f32`: the same algorithm's f32 figures where they were
// reported (a 16-bit row then also prints, and carries, each figure over f32's).
void report_cost(const std::string& layer, const CostEntry& e, const Cost* f32, std::vector<std::string>& rows) {
    std::array<std::string, 8> cells;
    const auto columns = e.cost.columns();
    for (size_t i = 0; i < columns.size(); ++i) cells[i] = cell(columns[i]);
    print_row(layer, vkconv::to_string(e.algorithm), vkconv::to_string(e.type), cells);
    JsonObject row;
    row.add("layer", layer).add("algorithm", vkconv::to_string(e.algorithm));
    // JSON keys: each figure in bytes, and a 16-bit figure over f32's (workspaces: where f32's is not 0).
    const char* const keys[] = {
        "forward_workspace", "backward_data_workspace", "backward_filter_workspace", "layer_backward_workspace",
        "forward_peak",      "backward_data_peak",      "backward_filter_peak",      "layer_backward_peak"};
    for (size_t i = 0; i < columns.size(); ++i)
        if (columns[i]) row.add(std::string(keys[i]) + "_bytes", *columns[i]);
    row.add("data_type", vkconv::to_string(e.type));  // after the figures, which keep their order of old
    if (f32) {  // the ratio row, unless neither type ran anything (no ratio to show)
        const auto base = f32->columns();
        bool any = false;
        for (size_t i = 0; i < columns.size(); ++i) {
            const bool both = columns[i] && base[i];
            cells[i] = both ? ratio_text(double(*columns[i]), double(*base[i])) : std::string("—");
            if (both && *base[i] > 0)
                row.add(std::string(keys[i]) + "_over_f32", double(*columns[i]) / double(*base[i]));
            any |= both;
        }
        if (any)
            print_row(layer, vkconv::to_string(e.algorithm), std::string(vkconv::to_string(e.type)) + "/f32", cells);
    }
    rows.push_back(row.str());
}

// The paper's ratio of lowered buffers: one image, NHWC (MEC needs no filter copy there), in fp32.
void report_lowered_ratio(vkconv::Context& context, const Layer& layer, LayerReport& report) {
    auto one = layer.problem;
    one.N = 1, one.layout = vkconv::Layout::NHWC;
    const auto im2col = query([&] { return vkconv::forward_workspace_bytes(context, one, vkconv::Algorithm::Im2col); });
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
}

// Every algorithm that applies to the layer, in each type (f32 first), then the lowered-buffer ratio.
LayerReport report_layer(vkconv::Context& context, const Layer& layer, const MemoryArgs& args,
                         std::vector<std::string>& rows) {
    LayerReport report{layer.name, layer.problem, {}, 0};
    auto& p = report.problem;
    p.N = args.batch, p.layout = vkconv::parse_layout(args.layout);
    for (vkconv::Algorithm a : vkconv::all_algorithms()) {
        if (!vkconv::algorithm_applies(a, p, vkconv::Pass::Forward)) continue;
        std::optional<Cost> f32;
        for (vkconv::DataType type : data_types(args.dtypes)) {
            auto typed = p;
            typed.data_type = type;
            const CostEntry entry{a, type, cost_of(context, typed, a)};
            report.costs.push_back(entry);
            report_cost(layer.name, entry, type == vkconv::DataType::F32 ? nullptr : f32 ? &*f32 : nullptr, rows);
            if (type == vkconv::DataType::F32) f32 = entry.cost;
        }
    }
    report_lowered_ratio(context, layer, report);
    std::fflush(stdout);
    return report;
}

int run_memory(const MemoryArgs& args) {
    if (!args.json_file.empty()) check_writable(args.json_file, "--json");
    if (!args.svg_file.empty()) check_writable(args.svg_file, "--svg");
    (void)vkconv::parse_layout(args.layout);  // refused before any device is opened
    const LayerTable table = read_layer_table(args.layers_file);
    auto layers = parse_layers(table.text, table.origin);
    check_layer_names(layers, args.only, table.origin);
    vkconv::ContextOptions options;
    options.device = args.device;
    vkconv::Context context(options);
    print_header(context, args);
    std::vector<LayerReport> reports;
    std::vector<std::string> rows;
    for (const auto& layer : layers) {
        if (!args.only.empty() && std::count(args.only.begin(), args.only.end(), layer.name) == 0) continue;
        reports.push_back(report_layer(context, layer, args, rows));
    }
    if (!args.json_file.empty()) {
        std::string types = "[";
        for (vkconv::DataType type : data_types(args.dtypes))
            types += (types.size() > 1 ? ", " : "") + json_quote(vkconv::to_string(type));
        const std::string header =
            JsonObject().add("batch", args.batch).add("layout", args.layout).add_raw("data_types", types + "]").str();
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
    add_data_types_option(*command, args->dtypes,
                          "element types to report, each in turn (repeatable, or a list: f32,f16); with f32 and a "
                          "16-bit type, also each 16-bit figure over f32's");
    command->add_option("--device", args->device, "device index or case-insensitive name substring");
    return [args] { return run_memory(*args); };
}

}  // namespace vkconv_cli

#include "layers.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include "vkconv/error.hpp"

namespace vkconv_cli {

std::vector<Layer> parse_layers(std::string_view text, const std::string& origin) {
    std::vector<Layer> layers;
    std::istringstream in{std::string(text)};
    std::string line;
    int line_number = 0;
    while (std::getline(in, line)) {
        ++line_number;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || line[0] == '#') continue;
        auto fail = [&](const std::string& why) {
            throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument,
                                origin + ":" + std::to_string(line_number) + ": " + why);
        };
        std::vector<std::string> fields;
        std::string field;
        std::istringstream row(line);
        while (std::getline(row, field, ',')) fields.push_back(field);
        if (fields.size() < 15)
            fail("expected at least 15 comma-separated fields, found " + std::to_string(fields.size()));
        auto integer = [&](std::string_view f, int field_number) {
            int64_t value = 0;
            const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), value);
            if (f.empty() || ec != std::errc() || end != f.data() + f.size())
                fail("field " + std::to_string(field_number) + " ('" + std::string(f) + "') is not an integer");
            return value;
        };
        int64_t v[14];
        int64_t pad_end[2] = {-1, -1};  // pad_h and pad_w may be BEGIN:END (asymmetric padding)
        for (int i = 0; i < 14; ++i) {
            const std::string& f = fields[i + 1];
            const auto colon = f.find(':');
            if ((i == 9 || i == 10) && colon != std::string::npos) {
                v[i] = integer(std::string_view(f).substr(0, colon), i + 2);
                pad_end[i - 9] = integer(std::string_view(f).substr(colon + 1), i + 2);
            } else {
                v[i] = integer(f, i + 2);
            }
        }
        Layer layer;
        layer.name = fields[0];
        auto& p = layer.problem;
        p.N = v[0], p.C = v[1], p.H = v[2], p.W = v[3], p.K = v[4], p.R = v[5], p.S = v[6];
        p.stride_h = v[7], p.stride_w = v[8], p.pad_h = v[9], p.pad_w = v[10];
        p.dilation_h = v[11], p.dilation_w = v[12], p.groups = v[13];
        if (pad_end[0] >= 0) p.pad_h_end = pad_end[0];
        if (pad_end[1] >= 0) p.pad_w_end = pad_end[1];
        for (size_t i = 15; i < fields.size(); ++i) layer.source += (i > 15 ? "," : "") + fields[i];
        try {
            p.validate();
        } catch (const vkconv::Error& e) {
            fail(std::string("layer '") + layer.name + "': " + e.what());
        }
        layers.push_back(std::move(layer));
    }
    return layers;
}

void check_layer_names(const std::vector<Layer>& layers, const std::vector<std::string>& names,
                       const std::string& origin) {
    for (const auto& name : names)
        if (std::none_of(layers.begin(), layers.end(), [&](const Layer& l) { return l.name == name; }))
            throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument, "no layer named '" + name + "' in " + origin);
}

LayerTable read_layer_table(const std::string& file) {
    if (file.empty()) return {std::string(builtin_layers_csv()), "built-in layers.csv"};
    std::ifstream in(file);
    if (!in) throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument, "cannot open --layers '" + file + "'");
    std::stringstream buffer;
    buffer << in.rdbuf();
    return {buffer.str(), file};
}

}  // namespace vkconv_cli

// The benchmark layer table (samples/layers.csv, embedded in the binary at build time).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "vkconv/problem.hpp"

namespace vkconv_cli {

struct Layer {
    std::string name;
    vkconv::ConvProblem problem;  // NCHW, no bias, batch as in the table
    std::string source;
};

// Parses the CSV format of layers.csv: '#' comments, then
// name,N,C,H,W,K,R,S,stride_h,stride_w,pad_h,pad_w,dilation_h,dilation_w,groups,source, where pad_h and
// pad_w are one pad for both sides or BEGIN:END (top:bottom, left:right).
// Throws vkconv::Error(InvalidArgument) naming `origin` and the line on a malformed or invalid row.
std::vector<Layer> parse_layers(std::string_view text, const std::string& origin);

// Error(InvalidArgument) naming the first of `names` that is no layer of `layers` (read from `origin`).
void check_layer_names(const std::vector<Layer>& layers, const std::vector<std::string>& names,
                       const std::string& origin);

// The table shipped with vkconv (a copy of samples/layers.csv made at build time).
std::string_view builtin_layers_csv();

// A layer table's text and the name its errors give it: the file `--layers` names, or the built-in table
// when `file` is empty. Error(InvalidArgument) naming the file when it cannot be opened.
struct LayerTable {
    std::string text;
    std::string origin;
};
LayerTable read_layer_table(const std::string& file);

}  // namespace vkconv_cli

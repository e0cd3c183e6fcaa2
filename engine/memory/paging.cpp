#include "memory/paging.hpp"

#include <string>

#include "vkconv/error.hpp"
#include "vkconv/problem.hpp"

namespace vkconv::detail {

uint64_t page_elements_of(const Shape& shape, uint64_t largest_bytes, uint32_t element_bytes) {
    uint64_t elements = 1;
    for (int64_t d : shape) elements *= static_cast<uint64_t>(d);
    const uint64_t largest = largest_bytes / element_bytes;
    if (elements <= largest) return 0;
    // The largest unit that fits: the entries of dimension 1, 2, ... (a rank-1 tensor: single elements).
    uint64_t unit = elements;
    for (size_t k = 1; k <= shape.size(); ++k) {
        unit /= static_cast<uint64_t>(shape[k - 1]);
        if (k == shape.size()) unit = 1;
        if (unit <= largest) return largest / unit * unit;
        if (k + 1 == shape.size()) {
            // Only single elements would be left; a row (the last dimension) is the smallest piece a page holds.
            throw Error(ErrorCategory::Unsupported,
                        "one row of a tensor of shape " + shape_string(shape) + " (" + std::to_string(unit) +
                            " elements, " + std::to_string(unit * element_bytes) +
                            " bytes) is above this device's largest buffer of " +
                            std::to_string(largest_bytes) + " bytes; a row cannot be split across buffers");
        }
    }
    return largest;
}

}  // namespace vkconv::detail

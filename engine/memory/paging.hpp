// How a tensor larger than the device's largest buffer is stored: in pages, each a pool allocation of its
// own. A page holds a whole number of the tensor's largest units that fit one (entries of dimension 0,
// that is whole images, where one fits; otherwise the entries of the next dimension: channel planes or rows
// in NCHW, rows in NHWC), so a page boundary never cuts a row, and the passes, which bind windows of whole
// rows, can keep every binding inside one page.
#pragma once

#include <cstdint>

#include "vkconv/problem.hpp"

namespace vkconv::detail {

// Elements per page of a tensor of `shape` and `element_bytes` per element when its bytes exceed
// `largest_bytes` (the pool's largest allocation); 0 when it fits one allocation. Error(Unsupported)
// naming the piece, its size and the limit when not even one entry of the last dimension fits.
uint64_t page_elements_of(const Shape& shape, uint64_t largest_bytes, uint32_t element_bytes);

// Tests: a planted fault. When set, every tensor is asked for in one allocation whatever its size (the
// pool then refuses those above its largest), so the tests of paged tensors can show they notice.
inline bool testing_one_buffer_tensors = false;

}  // namespace vkconv::detail

// record_wide_chunk (lowered.hpp): the band bookkeeping of a 16-bit forward summed in an fp32 copy of its images,
// shared by im2col's and MEC's forward.
#include "conv/lowered/lowered.hpp"
#include "conv/tiled/copy_run.hpp"

namespace vkconv::detail {

void record_wide_chunk(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const Chunk& chunk,
                       const ConvOperands& ops, const Operand& wide,
                       const std::function<void(const Window& copy)>& record_gemms) {
    const uint64_t y_image = uint64_t(p.K * p.P() * p.Q());
    const uint64_t first = uint64_t(chunk.n0) * y_image, count = uint64_t(chunk.images) * y_image;
    if (chunk.p0 == 0 && ops.epilogue.has_residual())  // the images' residual, widened (a band's: whole)
        record_run(context, stream, ops.epilogue.residual, first, wide, 0, count, false, p.data_type, DataType::F32);
    record_gemms(wide.whole());
    if (chunk.p0 + chunk.rows == p.P())  // the images' last band: rounded into y once
        record_run(context, stream, wide, 0, ops.output, first, count, false, DataType::F32, p.data_type);
}

}  // namespace vkconv::detail

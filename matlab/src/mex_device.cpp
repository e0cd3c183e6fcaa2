// The device commands: which device the MEX runs on, which there are, what the last pass cost, and releasing
// the device.
#include "mex_commands.hpp"
#include "mex_options.hpp"
#include "mex_session.hpp"

namespace vkconv::mex {

namespace {

OwnedArray device_struct(const DeviceInfo& d) {
    return make_struct({{"index", scalar(d.index)},
                        {"name", char_array(d.name)},
                        {"type", char_array(d.type)},
                        {"driver", char_array(d.driver)},
                        {"apiVersion", char_array(d.api_version)},
                        {"subgroupSize", scalar(d.subgroup_size)},
                        {"computeUnits", scalar(d.compute_units)},
                        {"sharedMemoryBytes", scalar(d.shared_memory_bytes)},
                        {"maxBufferBytes", scalar(double(d.max_buffer_bytes))},
                        {"float16", mxCreateLogicalScalar(d.fp16)},
                        {"storage16Bit", mxCreateLogicalScalar(d.storage_16bit)},
                        {"timestamps", mxCreateLogicalScalar(d.timestamps)}});
}

void no_more_arguments(int count, int allowed, const char* usage) {
    if (count > allowed) throw Error(ErrorCategory::InvalidArgument, std::string("too many arguments: ") + usage);
}

}  // namespace

Outputs device_command(const mxArray* const* args, int count, int) {
    if (count >= 1) select_device(parse_device_options(args, count));
    Outputs out;
    out.push_back(device_struct(context().device()));
    return out;
}

Outputs devices_command(const mxArray* const*, int count, int) {
    no_more_arguments(count, 0, "list = vkconv('devices')");
    const std::vector<DeviceInfo> devices = list_devices();
    Outputs out;
    if (devices.empty()) {
        out.push_back(OwnedArray(mxCreateStructMatrix(0, 1, 0, nullptr)));
        return out;
    }
    OwnedArray list(mxCreateStructMatrix(devices.size(), 1, 0, nullptr));
    for (size_t i = 0; i < devices.size(); ++i) {
        OwnedArray one = device_struct(devices[i]);
        for (int f = 0; f < mxGetNumberOfFields(one.get()); ++f) {
            const char* name = mxGetFieldNameByNumber(one.get(), f);
            if (i == 0) mxAddField(list.get(), name);
            mxSetField(list.get(), i, name, mxDuplicateArray(mxGetFieldByNumber(one.get(), 0, f)));
        }
    }
    out.push_back(std::move(list));
    return out;
}

Outputs stats_command(const mxArray* const*, int count, int) {
    no_more_arguments(count, 0, "stats = vkconv('stats')");
    const LastRun& last = last_run();
    const RunStats& s = last.stats;
    Outputs out;
    out.push_back(make_struct({{"command", char_array(last.command)},
                               {"algorithm", char_array(last.command.empty() ? "" : to_string(s.algorithm))},
                               {"variant", char_array(s.variant)},
                               {"chosenBy", char_array(to_string(s.chosen_by))},
                               {"gpuMs", scalar(s.gpu_ms)},
                               {"gpuTimed", mxCreateLogicalScalar(s.gpu_timed)},
                               {"wallMs", scalar(s.wall_ms)},
                               {"operandBytes", scalar(double(s.operand_bytes))},
                               {"workspaceBytes", scalar(double(s.workspace_bytes))},
                               {"peakBytes", scalar(double(s.peak_bytes))},
                               {"dispatches", scalar(s.dispatches)},
                               {"chunks", scalar(s.chunks)}}));
    return out;
}

Outputs trim_command(const mxArray* const*, int count, int) {
    no_more_arguments(count, 0, "vkconv('trim')");
    context().trim();
    return {};
}

Outputs reset_command(const mxArray* const*, int count, int) {
    no_more_arguments(count, 0, "vkconv('reset')");
    release();
    return {};
}

}  // namespace vkconv::mex

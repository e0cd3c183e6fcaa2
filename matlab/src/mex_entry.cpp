// The MEX gateway: vkconv(command, arguments...).
//
// Every failure becomes a MATLAB error with an identifier (vkconv:invalidArgument, vkconv:unsupported,
// vkconv:outOfDeviceMemory, vkconv:deviceLost, vkconv:vulkanFailure, vkconv:outOfHostMemory, vkconv:internal),
// raised only after every C++ object of the call is gone (Octave puts "vkconv: " before the message, MATLAB
// names the function in its own report): mexErrMsgIdAndTxt does not return (MATLAB unwinds
// without C++ destructors), so nothing of vkconv's may be alive when it is called.
#include <cstdio>
#include <new>
#include <string>

#include "mex_commands.hpp"

namespace vkconv::mex {

namespace {

struct Command {
    const char* name;
    Outputs (*run)(const mxArray* const* args, int count, int outputs);
    int max_outputs;
};

constexpr Command commands[] = {
    {"forward", forward_command, 1},
    {"backwardData", backward_data_command, 1},
    {"backwardFilter", backward_filter_command, 2},
    {"backwardBias", backward_bias_command, 1},
    {"separableForward", separable_forward_command, 2},
    {"separableBackward", separable_backward_command, 6},
    {"device", device_command, 1},
    {"devices", devices_command, 1},
    {"stats", stats_command, 1},
    {"trim", trim_command, 0},
    {"reset", reset_command, 0},
};

std::string command_names() {
    std::string names;
    for (const Command& c : commands) names += (names.empty() ? "" : ", ") + std::string(c.name);
    return names;
}

const char* error_id(ErrorCategory category) {
    switch (category) {
        case ErrorCategory::InvalidArgument:
            return "vkconv:invalidArgument";
        case ErrorCategory::Unsupported:
            return "vkconv:unsupported";
        case ErrorCategory::OutOfDeviceMemory:
            return "vkconv:outOfDeviceMemory";
        case ErrorCategory::DeviceLost:
            return "vkconv:deviceLost";
        case ErrorCategory::VulkanFailure:
            return "vkconv:vulkanFailure";
    }
    return "vkconv:internal";
}

// Runs the command and hands its outputs to MATLAB; on failure fills `id` and `message` and hands nothing.
template <size_t IdSize, size_t MessageSize>
bool run(int nlhs, mxArray* plhs[], int nrhs, const mxArray* prhs[], char (&id)[IdSize], char (&message)[MessageSize]) {
    try {
        if (nrhs < 1 || !mxIsChar(prhs[0]))
            throw Error(ErrorCategory::InvalidArgument, "usage: vkconv(command, ...) with a command among " +
                                                            command_names() + "; got " +
                                                            describe(nrhs ? prhs[0] : nullptr));
        const std::string name = text(prhs[0], "the command");
        for (const Command& c : commands) {
            if (lowercase(name) != lowercase(c.name)) continue;
            if (nlhs > c.max_outputs)
                throw Error(ErrorCategory::InvalidArgument, "vkconv('" + std::string(c.name) + "') returns at most " +
                                                                std::to_string(c.max_outputs) + " outputs; " +
                                                                std::to_string(nlhs) + " were asked for");
            Outputs out = c.run(prhs + 1, nrhs - 1, nlhs);
            for (size_t i = 0; i < out.size() && static_cast<int>(i) < std::max(nlhs, 1); ++i)
                plhs[i] = out[i].release();
            return true;
        }
        throw Error(ErrorCategory::InvalidArgument,
                    "unknown command '" + name + "' (commands: " + command_names() + ")");
    } catch (const Error& e) {
        std::snprintf(id, IdSize, "%s", error_id(e.category()));
        std::snprintf(message, MessageSize, "%s", e.what());
    } catch (const std::bad_alloc&) {
        std::snprintf(id, IdSize, "vkconv:outOfHostMemory");
        std::snprintf(message, MessageSize, "out of host memory");
    } catch (const std::exception& e) {
        std::snprintf(id, IdSize, "vkconv:internal");
        std::snprintf(message, MessageSize, "internal error: %s", e.what());
    } catch (...) {
        std::snprintf(id, IdSize, "vkconv:internal");
        std::snprintf(message, MessageSize, "internal error: an exception of unknown type");
    }
    return false;
}

}  // namespace

}  // namespace vkconv::mex

extern "C" void mexFunction(int nlhs, mxArray* plhs[], int nrhs, const mxArray* prhs[]) {
    static char id[64], message[4096];
    if (!vkconv::mex::run(nlhs, plhs, nrhs, prhs, id, message)) mexErrMsgIdAndTxt(id, "%s", message);
}

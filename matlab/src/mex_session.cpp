#include "mex_session.hpp"

#include <map>
#include <tuple>

#include "mex.h"

namespace vkconv::mex {

namespace {

using LayerKey = std::tuple<int64_t, int64_t, int64_t, int64_t, uint64_t, DataType>;

struct Session {
    ContextOptions options;
    std::unique_ptr<Context> context;
    std::map<LayerKey, std::unique_ptr<separable::Layer>> layers;  // made on `context`: dropped before it
    LastRun last;
    bool exit_hook = false;
};

Session& session() {
    static Session* the_session = new Session;  // never destroyed: release_at_exit frees what it holds in time
    return *the_session;
}

// MATLAB and Octave call it when they clear the MEX function or exit, so the device is destroyed, as Vulkan
// asks, before the process or the MEX's code goes.
void release_at_exit() {
    release();
    session().exit_hook = false;  // the hook went with the MEX function that held it: the next call sets it again
}

void register_exit_hook() {
    Session& s = session();
    if (s.exit_hook) return;
    mexAtExit(release_at_exit);
    s.exit_hook = true;
}

}  // namespace

Context& context() {
    Session& s = session();
    if (!s.context) s.context = std::make_unique<Context>(s.options);
    register_exit_hook();
    return *s.context;
}

void select_device(const ContextOptions& options) {
    auto made = std::make_unique<Context>(options);  // throws, leaving the context in use as it was
    release();
    Session& s = session();
    s.options = options;
    s.context = std::move(made);
    register_exit_hook();
}

void release() {
    Session& s = session();
    s.layers.clear();
    s.context.reset();
}

separable::Layer& separable_layer(const separable::Shape& shape, uint64_t budget, DataType type) {
    Context& c = context();
    Session& s = session();
    const LayerKey key{shape.frames, shape.channels, shape.height, shape.width, budget, type};
    auto found = s.layers.find(key);
    if (found == s.layers.end()) {
        if (s.layers.size() >= 8) s.layers.clear();  // a few shapes at a time; the kernels are rebuilt cheaply
        found = s.layers.emplace(key, std::make_unique<separable::Layer>(c, shape, budget, type)).first;
    }
    return *found->second;
}

LastRun& last_run() {
    return session().last;
}

}  // namespace vkconv::mex

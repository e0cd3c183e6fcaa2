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
    static Session* the_session = new Session;  // freed by release_at_exit, not by static destruction order
    return *the_session;
}

void release_at_exit() {
    release();
}

}  // namespace

Context& context() {
    Session& s = session();
    if (!s.exit_hook) {
        mexAtExit(release_at_exit);
        s.exit_hook = true;
    }
    if (!s.context) {
        s.context = std::make_unique<Context>(s.options);
    }
    return *s.context;
}

void select_device(const ContextOptions& options) {
    auto made = std::make_unique<Context>(options);  // throws, leaving the context in use as it was
    release();
    Session& s = session();
    s.options = options;
    s.context = std::move(made);
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

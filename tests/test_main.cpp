// Catch2 runner for vkconv: turns validation errors into a failing exit code and "no device" into
// ctest's skip code (Catch2 v2 has no SKIP).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>

#include "gpu.hpp"

int main(int argc, char** argv) {
    // The validation layer's synchronization checks too (its documented setting), for every instance this
    // process makes and the tool processes the CLI tests start: a hazard between recorded commands is a
    // validation error like any other. An explicit setting in the environment is left alone.
    setenv("VK_LAYER_ENABLES", "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT", 0);
    Catch::Session session;
    if (int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
    const int failures = session.run();
    vkt::release_shared_context();
    if (vkt::validation_errors() > 0) {
        std::fprintf(stderr, "FAILED: %d Vulkan validation error(s) were reported\n", vkt::validation_errors());
        return 1;
    }
    if (failures) return failures;
    if (vkt::skipped()) {
        std::printf("SKIPPED: %s\n", vkt::skip_reason().c_str());
        return vkt::kSkipReturnCode;
    }
    return 0;
}

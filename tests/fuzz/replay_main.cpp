// The main of a fuzz target built without libFuzzer: runs LLVMFuzzerTestOneInput once on every file named
// on the command line or found (recursively) in a folder named there, so any compiler's build replays the
// seed corpora and the regression inputs as ordinary tests. A crash or sanitizer report ends the process;
// otherwise it prints how many inputs ran.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<uint8_t> read_file(const std::filesystem::path& path) {
    std::ifstream file(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

void run(const std::filesystem::path& path) {
    std::printf("%s\n", path.c_str());  // before the run, so a crash names its input
    std::fflush(stdout);
    const std::vector<uint8_t> bytes = read_file(path);
    // A copy of exactly the input's size, so an overread is caught as under libFuzzer.
    auto* copy = new uint8_t[bytes.size()];
    std::copy(bytes.begin(), bytes.end(), copy);
    LLVMFuzzerTestOneInput(copy, bytes.size());
    delete[] copy;
}

}  // namespace

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    size_t count = 0;
    for (int i = 1; i < argc; ++i) {
        const fs::path arg = argv[i];
        std::error_code ec;
        if (fs::is_directory(arg, ec)) {
            std::vector<fs::path> files;
            for (const auto& entry : fs::recursive_directory_iterator(arg))
                if (entry.is_regular_file()) files.push_back(entry.path());
            std::sort(files.begin(), files.end());  // a stable order, so a failure is reproducible
            for (const auto& file : files) {
                run(file);
                ++count;
            }
        } else if (fs::is_regular_file(arg, ec)) {
            run(arg);
            ++count;
        } else {
            std::fprintf(stderr, "%s: no such file or folder: %s\n", argv[0], argv[i]);
            return 1;
        }
    }
    std::printf("%zu inputs ran without a failure\n", count);
    return 0;
}

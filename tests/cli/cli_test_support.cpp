// The CLI tests' shared helpers (cli_test_support.hpp).
#include "cli_test_support.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <sstream>

extern char** environ;

namespace vkt::cli {

std::string cli_path() {
    const char* overridden = std::getenv("VKCONV_CLI");
    return overridden && *overridden ? overridden : VKCONV_CLI_PATH;
}

Result run_cli(const TempDir& dir, const Args& args) {
    ::setenv("VKCONV_VALIDATION", vkt::validation_opted_out() ? "0" : "1", 1);
    const fs::path capture = dir.path / "capture", out_path = capture / "stdout", err_path = capture / "stderr";
    fs::create_directories(capture);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    Args all = {cli_path()};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    Result result;
    for (auto& a : all) {
        argv.push_back(a.data());
        result.command += (result.command.empty() ? "'" : " '") + a + "'";
    }
    argv.push_back(nullptr);
    pid_t pid = 0;
    const int spawned = ::posix_spawn(&pid, cli_path().c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    INFO(result.command);
    REQUIRE(spawned == 0);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) REQUIRE(errno == EINTR);
    result.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = vkt::read_bytes(out_path);
    result.err = vkt::read_bytes(err_path);
    return result;
}

void check_success(const Result& r) {
    INFO(r.describe());
    CHECK(r.code == 0);
    CHECK_THAT(r.err, !Catch::Contains("validation error", Catch::CaseSensitive::No));
    // The child asked for validation (VKCONV_VALIDATION=1): it must have run with it.
    if (!vkt::validation_opted_out())
        CHECK_THAT(r.err, !Catch::Contains("VK_LAYER_KHRONOS_validation is not installed"));
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::string npy_bytes(const std::string& dict, size_t data_bytes) {
    std::string header = dict;
    header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    std::string bytes = "\x93NUMPY";
    bytes += '\x01';
    bytes += '\x00';
    bytes += static_cast<char>(header.size() & 0xff);
    bytes += static_cast<char>(header.size() >> 8);
    return bytes + header + std::string(data_bytes, '\0');
}

std::optional<uint64_t> json_uint(const std::string& json, const std::string& key) {
    const std::string needle = "\"" + key + "\": ";
    const auto at = json.find(needle);
    if (at == std::string::npos) return std::nullopt;
    uint64_t value = 0;
    const char* begin = json.data() + at + needle.size();
    const auto [end, ec] = std::from_chars(begin, json.data() + json.size(), value);
    if (ec != std::errc() || end == begin) return std::nullopt;
    return value;
}

Args with(Args args, const Args& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

std::string shape_arg(const vkconv::Shape& shape) {
    std::string text;
    for (size_t i = 0; i < shape.size(); ++i) text += (i ? "," : "") + std::to_string(shape[i]);
    return text;
}

}  // namespace vkt::cli

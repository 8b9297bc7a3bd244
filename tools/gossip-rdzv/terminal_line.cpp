#include "terminal_line.hpp"

#include <map>

namespace gossip_rdzv::cli {

TerminalLine& TerminalLine::of(std::FILE* out) {
  static std::mutex registry_mutex;
  static std::map<std::FILE*, std::unique_ptr<TerminalLine>> registry;
  const std::lock_guard<std::mutex> lock(registry_mutex);
  auto& line = registry[out];
  if (!line) line = std::make_unique<TerminalLine>(out);
  return *line;
}

void TerminalLine::show(const std::string& line) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (line == line_) return;
  erase();
  line_ = line;
  draw();
}

void TerminalLine::end() {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (line_.empty()) return;
  std::fputc('\n', out_);
  std::fflush(out_);
  line_.clear();
}

// \r returns to the start of the line; ESC [ K erases from there to its end.
void TerminalLine::erase() {
  if (!line_.empty()) std::fputs("\r\033[K", out_);
}

void TerminalLine::draw() {
  if (!line_.empty()) std::fputs(line_.c_str(), out_);
  std::fflush(out_);
}

namespace {

class AboveLineSink : public spdlog::sinks::sink {
 public:
  AboveLineSink(TerminalLine& line, std::shared_ptr<spdlog::sinks::sink> inner)
      : line_(line), inner_(std::move(inner)) {}

  void log(const spdlog::details::log_msg& msg) override {
    line_.print_above([&] {
      inner_->log(msg);
      inner_->flush();
    });
  }
  void flush() override { inner_->flush(); }
  void set_pattern(const std::string& pattern) override { inner_->set_pattern(pattern); }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    inner_->set_formatter(std::move(formatter));
  }

 private:
  TerminalLine& line_;
  std::shared_ptr<spdlog::sinks::sink> inner_;
};

}  // namespace

std::shared_ptr<spdlog::sinks::sink> TerminalLine::sink(
    std::FILE* out, std::shared_ptr<spdlog::sinks::sink> inner) {
  return std::make_shared<AboveLineSink>(of(out), std::move(inner));
}

}  // namespace gossip_rdzv::cli

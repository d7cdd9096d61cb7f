#include "app/cli/ProgressPrinter.h"

#include "app/cli/Format.h"

#include <cmath>
#include <iostream>

namespace parallax {

ProgressPrinter::ProgressPrinter(bool terminal, std::chrono::seconds plainEvery)
    : m_terminal(terminal), m_plainEvery(plainEvery) {}

std::string ProgressPrinter::describe(const SupervisorProgress& p) {
    if (!p.last_step)
        return "waiting for the first step";
    const StepEvent& s = *p.last_step;
    const int64_t done = stepsDoneAfter(s.step);
    std::string line = "step " + std::to_string(done);
    if (p.steps_total > 0) {
        line += "/" + std::to_string(p.steps_total);
        line += " (" + std::to_string(static_cast<int>(100.0 * static_cast<double>(done) /
                                                       static_cast<double>(p.steps_total))) +
                "%)";
    }
    line += "  loss " + formatLoss(s.loss);
    if (s.tokens_per_s > 0)
        line += "  " + formatRate(s.tokens_per_s) + " tok/s";
    if (p.steps_total > done && s.step_ms > 0)
        line += "  ETA " + formatDuration(static_cast<double>(p.steps_total - done) * s.step_ms / 1000.0);
    if (p.stopping)
        line += "  (stopping)";
    return line;
}

void ProgressPrinter::clearLine() {
    if (m_terminal && !m_line.empty())
        std::cout << "\r\033[K" << std::flush;
}

void ProgressPrinter::draw() {
    if (m_terminal && !m_line.empty())
        std::cout << "\r\033[K" << m_line << std::flush;
}

void ProgressPrinter::update(const SupervisorProgress& p) {
    m_line = "run " + std::to_string(p.run_id) + "  " + describe(p);
    if (m_terminal) {
        draw();
        return;
    }
    const auto now = std::chrono::steady_clock::now();
    const bool last = p.last_step && p.steps_total > 0 && stepsDoneAfter(p.last_step->step) >= p.steps_total;
    if (!m_printedPlain || now - m_lastPlain >= m_plainEvery || last) {
        std::cout << m_line << std::endl;
        m_lastPlain = now;
        m_printedPlain = true;
    }
}

void ProgressPrinter::notice(LogLevel::Value level, const std::string& message) {
    clearLine();
    const std::string prefix = level == LogLevel::Info ? std::string() : std::string(LogLevel::name(level)) + ": ";
    std::cerr << "parallax: " << prefix << message << std::endl;
    draw();
}

void ProgressPrinter::finish() {
    if (m_terminal && !m_line.empty())
        std::cout << std::endl;
    m_line.clear();
}

} // namespace parallax

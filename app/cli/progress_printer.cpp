// Progress output of `plab train`.
#include "progress_printer.h"

#include <cmath>
#include <cstdio>
#include <unistd.h>

namespace plab::cli {

namespace {

std::string clock(double seconds)
{
    if (!std::isfinite(seconds) || seconds < 0) return "?";
    const auto s = static_cast<long long>(seconds + 0.5);
    char buf[32];
    if (s >= 3600)
        std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
    else
        std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
    return buf;
}

}  // namespace

ProgressPrinter::ProgressPrinter(std::ostream& out, bool quiet)
    : out_(out), quiet_(quiet), terminal_(isatty(STDERR_FILENO) != 0)
{
}

void ProgressPrinter::setPlannedSteps(std::int64_t steps, int epochs)
{
    planned_ = steps;
    epochs_ = epochs;
}

void ProgressPrinter::endLine()
{
    if (lineOpen_) out_ << '\n';
    lineOpen_ = false;
}

void ProgressPrinter::printStep(const StepEvent& e)
{
    const double msPerStep = stepMsSum_ / static_cast<double>(stepsSeen_);
    const double imagesPerSecond = stepMsSum_ > 0 ? 1000.0 * static_cast<double>(imagesSum_) / stepMsSum_ : 0.0;
    const double eta = static_cast<double>(planned_ - e.step) * msPerStep / 1000.0;
    char line[256];
    std::snprintf(line, sizeof line,
                  "epoch %d/%d  step %lld/%lld  loss %.4f  scale %g  skipped %lld  %.0f img/s  eta %s",
                  e.epoch + 1, epochs_, static_cast<long long>(e.step), static_cast<long long>(planned_),
                  static_cast<double>(e.loss), e.lossScale, static_cast<long long>(e.skippedSoFar),
                  imagesPerSecond, clock(eta).c_str());
    if (terminal_) {
        out_ << '\r' << line << "\x1b[K" << std::flush;
        lineOpen_ = true;
    } else {
        out_ << line << '\n' << std::flush;
    }
}

void ProgressPrinter::onEvent(const TrainerEvent& event)
{
    if (quiet_) return;
    if (const auto* e = std::get_if<StepEvent>(&event)) {
        stepMsSum_ += e->timeMs;
        imagesSum_ += e->batch;
        ++stepsSeen_;
        const auto now = std::chrono::steady_clock::now();
        const auto every = terminal_ ? std::chrono::milliseconds(200) : std::chrono::milliseconds(2000);
        if (e->step == 1 || now - lastPrint_ >= every) {
            printStep(*e);
            lastPrint_ = now;
        }
    } else if (const auto* e = std::get_if<EvalEvent>(&event)) {
        endLine();
        char line[160];
        if (task_ == ModelTask::reconstruct)
            std::snprintf(line, sizeof line, "epoch %d, step %lld: %s", e->epoch + 1, static_cast<long long>(e->step),
                          testResultText(task_, e->testAccuracy, e->testLoss).c_str());
        else
            std::snprintf(line, sizeof line, "epoch %d, step %lld: test accuracy %.2f%%, test loss %.4f", e->epoch + 1,
                          static_cast<long long>(e->step), 100.0 * e->testAccuracy, e->testLoss);
        out_ << line << '\n' << std::flush;
    } else if (const auto* e = std::get_if<SettingChangeEvent>(&event)) {
        endLine();
        out_ << "step " << e->step << ": " << e->description << '\n' << std::flush;
    } else if (const auto* e = std::get_if<ChangeRefusedEvent>(&event)) {
        endLine();
        out_ << "step " << e->step << ": refused " << e->description << ": " << e->reason << '\n' << std::flush;
    }
}

void ProgressPrinter::finish() { endLine(); }

}  // namespace plab::cli

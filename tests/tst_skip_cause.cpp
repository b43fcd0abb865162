// Why a step skipped (telemetry/non_finite_sites.h): the sites a step's list names, their
// order, counts and largest finite magnitudes, and the first cause, against the test's own
// look at every rounding the layers ask of the checking backend (its observer sees the fp32
// values before each rounding): a value overflows where it is at least the format's largest
// finite value plus half its last step (IEEE 754 round to nearest, ties to even), by the
// formats' definitions, not by the engine's tables. Then the real Trainer forced to skip by
// a huge static scale, its events and the record read back.
// links: plab_engine plab_test_support
#include "checking_backend.h"
#include "data/dataset.h"
#include "nn/model.h"
#include "record/record_writer.h"
#include "record/run_record.h"
#include "telemetry/non_finite_sites.h"
#include "test_support.h"
#include "train/trainer.h"

#include <QTest>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

using namespace plab;
using plab::testing::CheckingBackend;
using plab::testing::ConvolutionLibrary;

namespace {

// The smallest magnitude each format rounds to inf: its largest finite value (the format's
// definition) plus half of that value's last place. fp32's inputs are floats: none overflows.
double overflowThreshold(Format f)
{
    switch (f) {
    case Format::fp16: return 65504.0 + 16.0;                              // (2 - 2^-10) 2^15 + 2^4
    case Format::bf16: return std::ldexp(2.0 - std::ldexp(1.0, -8), 127);   // (2 - 2^-7) 2^127 + 2^119
    case Format::tf32: return std::ldexp(2.0 - std::ldexp(1.0, -11), 127);  // (2 - 2^-10) 2^127 + 2^116
    case Format::fp32: break;
    }
    return INFINITY;
}

// One rounding site as the observer saw it over a step.
struct Seen {
    const RoundingStats* sink = nullptr;
    Format format = Format::fp32;
    std::uint64_t overflow = 0, infIn = 0, nan = 0;
    double largest = 0;
    bool nonFinite() const { return overflow + infIn + nan > 0; }
};

class Reference {
public:
    void observe(Format f, const std::vector<float>& values, const RoundingStats* sink)
    {
        auto it = std::find_if(sites_.begin(), sites_.end(), [&](const Seen& s) { return s.sink == sink; });
        if (it == sites_.end()) it = sites_.insert(sites_.end(), Seen{sink, f});
        if (it->format != f) formatsAgree_ = false;
        for (const float v : values) {
            if (std::isnan(v)) ++it->nan;
            else if (std::isinf(v)) ++it->infIn;
            else {
                const double m = std::fabs(static_cast<double>(v));
                it->largest = std::max(it->largest, m);
                if (m >= overflowThreshold(f)) ++it->overflow;
            }
        }
    }
    // The sites that made or met inf/NaN, in the order they first rounded; the same cap as
    // nonFiniteSites: the first kMaxNonFiniteSites, plus the first overflow after them.
    std::vector<Seen> nonFinite() const
    {
        std::vector<Seen> out;
        bool overflowKept = false;
        for (const Seen& s : sites_) {
            if (!s.nonFinite()) continue;
            if (out.size() >= kMaxNonFiniteSites && (overflowKept || s.overflow == 0)) continue;
            overflowKept = overflowKept || s.overflow > 0;
            out.push_back(s);
        }
        return out;
    }
    bool formatsAgree() const { return formatsAgree_; }
    void clear() { sites_.clear(); }

private:
    std::vector<Seen> sites_;
    bool formatsAgree_ = true;
};

std::string describe(const NonFiniteSite& s)
{
    std::ostringstream out;
    out << s.layer << ' ' << tensorKindName(s.kind) << " overflow " << s.overflow << " inf " << s.infIn << " nan "
        << s.nan << " largest " << (s.largestFinite ? *s.largestFinite : -1.0) << ' ' << s.format;
    return out.str();
}

// The counts and largest magnitudes of the list against the reference's, site by site
// (names are compared where the caller can map the sinks to them).
void compareCounts(const std::vector<NonFiniteSite>& sites, const std::vector<Seen>& seen)
{
    std::string listed;
    for (const auto& s : sites) listed += "\n  " + describe(s);
    QVERIFY2(sites.size() == seen.size(),
             qPrintable(QString("%1 sites listed, the reference saw %2:%3")
                            .arg(sites.size())
                            .arg(seen.size())
                            .arg(QString::fromStdString(listed))));
    for (std::size_t i = 0; i < sites.size(); ++i) {
        QCOMPARE(sites[i].overflow, seen[i].overflow);
        QCOMPARE(sites[i].infIn, seen[i].infIn);
        QCOMPARE(sites[i].nan, seen[i].nan);
        // The largest finite |x| is one of the values, exactly (a float widened).
        QCOMPARE(sites[i].largestFinite.value_or(0.0), seen[i].largest);
        QCOMPARE(sites[i].format, std::string(formatName(seen[i].format)));
        QCOMPARE(sites[i].formatMax, formatInfo(seen[i].format).maxFinite);
    }
}

}  // namespace

class TestSkipCause : public QObject {
    Q_OBJECT
    testing::TempDir dir_;
    DataSplit data_;

private slots:
    void initTestCase()
    {
        testing::writeSyntheticDataset(dir_.path() / "mnist", 64, 40, 3);
        data_ = loadDataset("mnist", dir_.path());
    }

    void sitesMatchEveryRounding_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("recipe");
        for (const char* model : {"small-cnn", "mlp"})
            for (const char* recipe : {"amp-fp16", "pure-fp16"})
                QTest::addRow("%s %s", model, recipe) << model << recipe;
    }

    // One step at each of a ladder of scales: the list names, in the order they rounded,
    // exactly the sites whose values the reference saw overflow, arrive as inf or be NaN,
    // with their counts and largest magnitudes; the first cause is the first overflow; and
    // the ladder does not always blame the same site.
    void sitesMatchEveryRounding()
    {
        QFETCH(QString, model);
        QFETCH(QString, recipe);
        Tensor images;
        std::vector<std::uint8_t> labels;
        testing::syntheticBatch(12, images, labels);
        const PrecisionRecipe r = *PrecisionRecipe::fromPreset(recipe.toStdString());
        // A ladder of loss scales at the initial weights (the loss gradient grows with the
        // scale), then of weight gains at scale 1 (the forward activations grow with them).
        std::vector<std::pair<int, float>> ladder;   // (log2 scale, weight gain)
        for (int e = 0; e <= 40; e += 2) ladder.emplace_back(e, 1.0f);
        for (float gain = 2; gain <= 1024; gain *= 2) ladder.emplace_back(0, gain);
        std::set<std::string> causes;
        int skipping = 0;
        for (const auto& [e, gain] : ladder) {
            const float scale = std::ldexp(1.0f, e);
            CheckingBackend backend(ConvolutionLibrary::none);   // outlives the model's tensors
            auto m = Model::create(ModelSpec{model.toStdString(), {6, 8}}, 7);
            for (Parameter* p : m->parameters())
                for (std::int64_t i = 0; i < p->value.size(); ++i) p->value[i] *= gain;
            Reference reference;
            backend.observeRoundings([&](Format f, const std::vector<float>& v, const RoundingStats* sink) {
                reference.observe(f, v, sink);
            });
            m->applyRecipe(r, nullptr, backend);
            TelemetryCollector telemetry;
            telemetry.beginStep(false);
            StepContext ctx{&r, &backend, &telemetry, nullptr, true};
            m->trainStep(images, labels, scale, ctx);
            backend.flush();
            QVERIFY(reference.formatsAgree());

            // The reference's sinks are the collector's: name them, and give each site the
            // format its rounding used.
            std::map<const RoundingStats*, TapKey> keyOf;
            for (const auto& [key, tap] : telemetry.taps()) keyOf.emplace(&tap.step, key);
            std::map<TapKey, Format> formatOf;
            for (const Seen& s : reference.nonFinite()) {
                QVERIFY2(keyOf.count(s.sink), "a rounding counted into a sink the collector does not hold");
                formatOf[keyOf.at(s.sink)] = s.format;
            }
            const std::vector<NonFiniteSite> sites =
                nonFiniteSites(telemetry, [&](const std::string& layer, TensorKind kind) {
                    const auto it = formatOf.find(TapKey{layer, kind});
                    return RegionFormat::of(it != formatOf.end() ? it->second : Format::fp32);
                });
            const std::vector<Seen> seen = reference.nonFinite();
            compareCounts(sites, seen);
            if (QTest::currentTestFailed()) {
                qWarning("at scale 2^%d, weights times %g", e, gain);
                return;
            }
            for (std::size_t i = 0; i < sites.size(); ++i) {
                QCOMPARE(sites[i].layer, keyOf.at(seen[i].sink).layer);
                QCOMPARE(tensorKindName(sites[i].kind), tensorKindName(keyOf.at(seen[i].sink).kind));
            }

            const NonFiniteSite* cause = firstNonFiniteCause(sites);
            const auto firstOverflow = std::find_if(seen.begin(), seen.end(), [](const Seen& s) { return s.overflow > 0; });
            if (seen.empty()) {
                QVERIFY(!cause);
                QVERIFY(skipCauseText(sites).empty());
                continue;
            }
            ++skipping;
            QVERIFY(cause);
            const Seen& expected = firstOverflow != seen.end() ? *firstOverflow : seen.front();
            QCOMPARE(cause->layer, keyOf.at(expected.sink).layer);
            QCOMPARE(tensorKindName(cause->kind), tensorKindName(keyOf.at(expected.sink).kind));
            const std::string text = skipCauseText(sites);
            const std::string where = cause->layer + " " + std::string(tensorKindName(cause->kind));
            QVERIFY2(text.rfind(where, 0) == 0, text.c_str());
            if (expected.overflow > 0) {
                // "... overflowed first: 2^16.2 > 65504 (fp16's largest)", the exponent the
                // reference's largest magnitude has to one decimal.
                char exponent[32];
                std::snprintf(exponent, sizeof exponent, "2^%.1f > ", std::log2(expected.largest));
                QVERIFY2(text.find(std::string("overflowed first: ") + exponent) != std::string::npos, text.c_str());
                QVERIFY2(text.find(std::string(formatName(expected.format)) + "'s largest") != std::string::npos,
                         text.c_str());
            }
            causes.insert(where);
        }
        // Small scales leave every step finite; large ones do not; and different scales
        // overflow first at different sites (not always the loss gradient).
        QVERIFY(skipping > 0);
        QVERIFY2(skipping < int(ladder.size()), "every step of the ladder overflowed, the first included");
        QVERIFY2(causes.size() >= 2, qPrintable(QString("one cause only: %1")
                                                    .arg(QString::fromStdString(causes.empty() ? "" : *causes.begin()))));
    }

    // The real Trainer with a static scale that overflows fp16 at once: every step skips,
    // each event names the sites the reference saw, in order, and the record keeps them.
    void trainerNamesEverySkippedStep()
    {
        const TrainSettings s =
            settingsFromJson(nlohmann::json{{"model", "small-cnn"}, {"widths", {6, 8}}, {"recipe", "amp-fp16"},
                                            {"loss_scale", "static:1e30"}, {"batch", 16},
                                            {"epochs", 1}, {"max_steps", 3}, {"eval_every", 2}, {"threads", 2},
                                            {"arithmetic", "exact"}},
                             "test");
        Reference reference;
        std::vector<StepEvent> steps;
        bool mismatch = false;
        RunRecorder recorder({}, s, data_, "skips");
        Trainer trainer(
            s, data_,
            [&](const TrainerEvent& e) {
                recorder.onEvent(e);
                if (const auto* step = std::get_if<StepEvent>(&e)) {
                    steps.push_back(*step);
                    compareCounts(step->nonFinite, reference.nonFinite());
                    mismatch = mismatch || QTest::currentTestFailed();
                }
                if (std::holds_alternative<StepEvent>(e) || std::holds_alternative<EvalEvent>(e)) reference.clear();
            },
            [&](const TrainSettings&) {
                auto b = std::make_unique<CheckingBackend>(ConvolutionLibrary::none);
                b->observeRoundings([&](Format f, const std::vector<float>& v, const RoundingStats* sink) {
                    reference.observe(f, v, sink);
                });
                return b;
            });
        const RunResult result = trainer.run();
        recorder.finish(result);
        QVERIFY(!mismatch);
        QVERIFY(reference.formatsAgree());
        QCOMPARE(steps.size(), std::size_t{3});
        for (const StepEvent& step : steps) {
            QVERIFY(step.skipped);
            QVERIFY(!step.nonFinite.empty());
            QVERIFY(firstNonFiniteCause(step.nonFinite)->overflow > 0);
        }

        // The record keeps each skipped step's list, read back equal.
        const RunRecord record = recorder.runRecord();
        QCOMPARE(record.steps.size(), steps.size());
        for (std::size_t i = 0; i < steps.size(); ++i) QVERIFY(record.steps[i].nonFinite == steps[i].nonFinite);
    }

    // A quantised site's overflow count holds saturations (to the largest finite value, no
    // inf): it is no cause; the site that made an inf after it is.
    void saturationIsNoCause()
    {
        TelemetryCollector telemetry;
        telemetry.beginStep(false);
        telemetry.sink("conv1", TensorKind::quantizedActivationGrad).stats->overflow = 5;   // saturated
        auto sink = telemetry.sink("fc1", TensorKind::activationGrad);
        sink.stats->overflow = 1;
        sink.stats->largestFinite = 70000.0f;
        const auto sites = nonFiniteSites(telemetry, [](const std::string&, TensorKind) { return RegionFormat::of(Format::fp16); });
        QCOMPARE(sites.size(), std::size_t{1});
        QCOMPARE(sites.front().layer, std::string("fc1"));
        QVERIFY2(skipCauseText(sites).rfind("fc1 activation_grad overflowed first", 0) == 0, skipCauseText(sites).c_str());
    }

    // Issue 71, telemetry sampled: at a site a library rounded first (cuDNN's 16-bit output),
    // the lab's rounding meets the library's infs as infs coming in. Where no site before it
    // made or met an inf or NaN that step, the library's inputs were finite: the infs are the
    // library's overflow, and the site is named as the first cause. Where one did, they came
    // in, and the site that made them is the cause. The run totals keep what each step said.
    void libraryInfsAreOverflowWhereItsInputsWereFinite()
    {
        const auto fp16 = [](const std::string&, TensorKind) { return RegionFormat::of(Format::fp16); };
        TelemetryCollector telemetry;
        telemetry.beginStep(false);
        telemetry.sink("conv1", TensorKind::activation).stats->count = 100;
        telemetry.sink("conv1", TensorKind::quantizedActivationGrad).stats->overflow = 5;   // saturations: no inf
        auto library = telemetry.sink("conv2", TensorKind::activation);
        library.stats->count = 100;
        library.stats->infIn = 3;
        telemetry.libraryRounded("conv2", TensorKind::activation);
        auto after = telemetry.sink("fc1", TensorKind::activation);
        after.stats->count = 100;
        after.stats->infIn = 7;   // met conv2's infs
        telemetry.endStep();
        const RoundingStats& made = telemetry.taps().at({"conv2", TensorKind::activation}).step;
        QCOMPARE(made.overflow, std::uint64_t{3});
        QCOMPARE(made.infIn, std::uint64_t{0});
        QCOMPARE(telemetry.taps().at({"conv2", TensorKind::activation}).run.overflow, std::uint64_t{3});
        QCOMPARE(telemetry.taps().at({"fc1", TensorKind::activation}).step.infIn, std::uint64_t{7});   // not a library's
        auto sites = nonFiniteSites(telemetry, fp16);
        QVERIFY2(skipCauseText(sites).rfind("conv2 activation overflowed first", 0) == 0, skipCauseText(sites).c_str());

        // An inf before it: the library's infs came in.
        telemetry.beginStep(false);
        telemetry.sink("conv1", TensorKind::activation).stats->overflow = 1;
        library = telemetry.sink("conv2", TensorKind::activation);
        library.stats->infIn = 4;
        telemetry.libraryRounded("conv2", TensorKind::activation);
        telemetry.endStep();
        const TapData& met = telemetry.taps().at({"conv2", TensorKind::activation});
        QCOMPARE(met.step.overflow, std::uint64_t{0});
        QCOMPARE(met.step.infIn, std::uint64_t{4});
        QCOMPARE(met.run.overflow, std::uint64_t{3});
        QCOMPARE(met.run.infIn, std::uint64_t{4});
        QCOMPARE(met.libraryStepsRun, std::uint64_t{2});
        sites = nonFiniteSites(telemetry, fp16);
        QVERIFY2(skipCauseText(sites).rfind("conv1 activation overflowed first", 0) == 0, skipCauseText(sites).c_str());
    }

    // A step that did not skip keeps no list, and a record without lists (an older one)
    // reads back with empty ones.
    void finiteStepsKeepNoList()
    {
        const TrainSettings s = settingsFromJson(
            nlohmann::json{{"model", "mlp"}, {"widths", {8, 8}}, {"recipe", "amp-fp16"}, {"loss_scale", "static:1"},
                           {"batch", 16}, {"epochs", 1}, {"max_steps", 2}, {"threads", 2}},
            "test");
        RunRecorder recorder({}, s, data_, "finite");
        Trainer trainer(s, data_, [&](const TrainerEvent& e) {
            recorder.onEvent(e);
            if (const auto* step = std::get_if<StepEvent>(&e)) {
                QVERIFY(!step->skipped);
                QVERIFY(step->nonFinite.empty());
            }
        });
        recorder.finish(trainer.run());
        const nlohmann::json written = recorder.recordJson();
        for (const auto& step : written.at("steps")) QVERIFY(!step.contains("non_finite"));
    }
};

QTEST_GUILESS_MAIN(TestSkipCause)
#include "tst_skip_cause.moc"

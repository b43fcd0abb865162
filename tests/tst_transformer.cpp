// Tests the vision transformer's layers (LayerNorm, attention, GELU, the block, positions,
// pooling): forward against double precision, gradients against central differences, and
// the 16-bit failures they are there to show (a LayerNorm sum of squares and attention
// scores past fp16's 65504), judged by the format's specification. PyTorch agreement of the
// whole model is golden_pytorch's.
// links: plab_train plab_nn plab_backend_cpu plab_test_support
#include "amp/recipe.h"
#include "backend/backend.h"
#include "nn/layer_ops.h"
#include "nn/model.h"
#include "nn/transformer.h"
#include "numerics/format.h"
#include "data/dataset.h"
#include "error.h"
#include "optim/lr_schedule.h"
#include "train/settings.h"
#include "train/trainer.h"
#include "weights/safetensors.h"

#include "gradient_check.h"
#include "test_support.h"

#include <QTest>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

using namespace plab;

namespace {

using Rng = plab::testing::SplitMix64;
using plab::testing::checkGradient;
using plab::testing::weightedSum;

void fill(Tensor& t, Rng& rng, float lo = -1.0f, float hi = 1.0f)
{
    for (std::int64_t i = 0; i < t.size(); ++i) t[i] = rng.uniform(lo, hi);
}

struct Harness {
    std::unique_ptr<ComputeBackend> backend = createCpuBackend(2);
    PrecisionRecipe recipe;
    TelemetryCollector telemetry;
    StepContext ctx;
    explicit Harness(const std::string& preset = "fp32", bool sensitiveOpsInFp32 = true)
    {
        recipe = *PrecisionRecipe::fromPreset(preset);
        recipe.fp32SensitiveOps = sensitiveOpsInFp32;
        ctx = StepContext{&recipe, backend.get(), &telemetry, nullptr, true};
        telemetry.beginStep(true);
    }
    const RoundingStats& step(const std::string& layer, TensorKind kind = TensorKind::activation) const
    {
        return telemetry.taps().at(TapKey{layer, kind}).step;
    }
};

}  // namespace

class TestTransformer : public QObject {
    Q_OBJECT

private slots:
    void layerNormMatchesDoubleAndItsGradients()
    {
        Harness h;
        Rng rng{3};
        LayerNorm ln("ln", 8);
        fill(ln.parameters()[0]->value, rng, 0.5f, 1.5f);
        fill(ln.parameters()[1]->value, rng);
        Tensor x({5, 8});
        fill(x, rng, -3.0f, 3.0f);
        const Tensor& y = ln.forward(x, h.ctx);
        for (std::int64_t m = 0; m < 5; ++m) {
            double mean = 0, var = 0;
            for (int d = 0; d < 8; ++d) mean += x[m * 8 + d] / 8.0;
            for (int d = 0; d < 8; ++d) var += (x[m * 8 + d] - mean) * (x[m * 8 + d] - mean) / 8.0;
            for (int d = 0; d < 8; ++d) {
                const double ref = (x[m * 8 + d] - mean) / std::sqrt(var + 1e-5) * ln.parameters()[0]->value[d] +
                                   ln.parameters()[1]->value[d];
                QVERIFY2(std::fabs(y[m * 8 + d] - ref) <= 1e-5 * (1 + std::fabs(ref)), qPrintable(QString::number(ref)));
            }
        }
        Tensor r({5, 8});
        fill(r, rng);
        Tensor dy = r;
        const Tensor dx = *ln.backward(dy, h.ctx, true);
        const Tensor dgamma = ln.parameters()[0]->grad;
        auto loss = [&] { return weightedSum(ln.forward(x, h.ctx), r); };
        checkGradient(x, dx, loss, 1e-2f, 2e-3, "dx");
        checkGradient(ln.parameters()[0]->value, dgamma, loss, 1e-2f, 2e-3, "dgamma");
    }

    void attentionGradientsMatchCentralDifferences()
    {
        Harness h;
        Rng rng{5};
        Attention attn("attn", 3, 4, 2);   // 3 tokens, width 4, 2 heads of 2
        Tensor qkv({6, 12});               // 2 images
        fill(qkv, rng, -2.0f, 2.0f);
        const Tensor& y = attn.forward(qkv, h.ctx);
        QCOMPARE(y.shape(), (Shape{6, 4}));
        // Image 1, head 2, token 3 against softmax(q k^T / sqrt(2)) v in double.
        {
            const std::int64_t base = 3 * 12, t = 2;
            double w[3], sum = 0;
            for (int j = 0; j < 3; ++j) {
                double s = 0;
                for (int c = 0; c < 2; ++c) s += double(qkv[base + t * 12 + 2 + c]) * qkv[base + j * 12 + 4 + 2 + c];
                w[j] = std::exp(s / std::sqrt(2.0));
                sum += w[j];
            }
            for (int c = 0; c < 2; ++c) {
                double ref = 0;
                for (int j = 0; j < 3; ++j) ref += w[j] / sum * qkv[base + j * 12 + 8 + 2 + c];
                QVERIFY(std::fabs(y[(3 + t) * 4 + 2 + c] - ref) <= 1e-6);
            }
        }
        Tensor r({6, 4});
        fill(r, rng);
        Tensor dy = r;
        const Tensor dqkv = *attn.backward(dy, h.ctx, true);
        checkGradient(qkv, dqkv, [&] { return weightedSum(attn.forward(qkv, h.ctx), r); }, 1e-2f, 2e-3, "dqkv");
    }

    void blockGradientsMatchCentralDifferences()
    {
        Harness h;
        Rng rng{7};
        TransformerBlock block("block1", 2, 4, 2);
        int index = 0;
        block.initialize(9, index);
        QCOMPARE(index, 6);   // ln1, qkv, proj, ln2, fc1, fc2
        Tensor x({4, 4});
        fill(x, rng);
        const Tensor& y = block.forward(x, h.ctx);
        Tensor r(y.shape());
        fill(r, rng);
        Tensor dy = r;
        const Tensor dx = *block.backward(dy, h.ctx, true);
        Parameter* fc1 = block.parameters()[8];
        QCOMPARE(fc1->layer, std::string("block1.fc1"));
        const Tensor dw = fc1->grad;
        // The residual stream (fp32 in, fp32 out) and its taps: two adds each way.
        QCOMPARE(y.storage(), Format::fp32);
        QCOMPARE(h.step("block1.residual").count, std::uint64_t(2 * 16));
        QCOMPARE(h.step("block1.residual", TensorKind::activationGrad).count, std::uint64_t(2 * 16));
        auto loss = [&] { return weightedSum(block.forward(x, h.ctx), r); };
        checkGradient(x, dx, loss, 1e-2f, 3e-3, "dx");
        checkGradient(fc1->value, dw, loss, 1e-2f, 3e-3, "d fc1.weight");
    }

    // A LayerNorm over rows of +-40: 64 squared deviations of 1600 sum to 102400, past
    // fp16's largest value 65504. Emulated in fp16 (no fp32 sensitive ops) the sum
    // overflows, the variance is infinite and every output is the bias (0); autocast's
    // fp32 gives +-1. The tap sees the sum of squares overflow fp16 either way only when
    // the statistics are in fp16.
    void layerNormSumOfSquaresOverflowsFp16()
    {
        for (bool fp32 : {false, true}) {
            Harness h("amp-fp16", fp32);
            LayerNorm ln("ln", 64);
            int index = 0;
            ln.initialize(1, index);
            Tensor x({2, 64}, Format::fp16);
            for (std::int64_t i = 0; i < x.size(); ++i) x[i] = i % 2 ? 40.0f : -40.0f;
            const Tensor& y = ln.forward(x, h.ctx);
            const RoundingStats& sums = h.step("ln.sumsq");
            QCOMPARE(sums.count, std::uint64_t(2));
            if (fp32) {
                QCOMPARE(sums.overflow, std::uint64_t(0));
                for (std::int64_t i = 0; i < y.size(); ++i)
                    QCOMPARE(y[i], roundTo(Format::fp16, static_cast<float>((i % 2 ? 40.0 : -40.0) / std::sqrt(1600.0 + 1e-5))));
            } else {
                QCOMPARE(sums.overflow, std::uint64_t(2));
                for (std::int64_t i = 0; i < y.size(); ++i) QCOMPARE(y[i], 0.0f);
            }
        }
    }

    // q . k = 16 * 80 * 80 = 102400: past fp16's 65504 (inf, then NaN out of the softmax),
    // inside bf16's range.
    void attentionScoresOverflowFp16NotBf16()
    {
        for (const char* preset : {"amp-fp16", "amp-bf16"}) {
            Harness h(preset);
            Attention attn("attn", 2, 16, 1);
            Tensor qkv({2, 48}, h.recipe.storage());
            for (std::int64_t i = 0; i < qkv.size(); ++i) qkv[i] = (i % 48) < 32 ? 80.0f : 1.0f;
            const Tensor& y = attn.forward(qkv, h.ctx);
            const RoundingStats& scores = h.step("attn.scores");
            QCOMPARE(scores.count, std::uint64_t(4));
            if (std::string(preset) == "amp-fp16") {
                QCOMPARE(scores.overflow, std::uint64_t(4));
                QVERIFY(std::isnan(y[0]));
            } else {
                QCOMPARE(scores.overflow, std::uint64_t(0));
                QCOMPARE(y[0], 1.0f);   // the mean of equal values
            }
        }
    }

    // Kept in fp32 (attention_scores fp32, as fused kernels keep them) the same scores do not
    // overflow under AMP FP16: the output is the softmax-weighted mean of v in fp32, here of
    // rows (1 and 3) with unequal scores, against a double reference; and the gradient of
    // the scores is finite too. Without fp32 sensitive ops the softmax stays fp32 all the same.
    void attentionScoresKeptInFp32DoNotOverflow()
    {
        for (const bool sensitiveOpsInFp32 : {true, false}) {
            Harness h("amp-fp16", sensitiveOpsInFp32);
            h.recipe.fp32AttentionScores = true;
            Attention attn("attn", 2, 16, 1);
            Tensor qkv({2, 48}, h.recipe.storage());
            // q and k of token 0: 80 each (q0 . k0 = 102400); token 1's key 80 but for one
            // 79.9375 (q0 . k1 = 102395), its query 1; v of token 0 is 1, of token 1 is 3.
            for (std::int64_t c = 0; c < 48; ++c) {
                qkv[c] = c < 32 ? 80.0f : 1.0f;
                qkv[48 + c] = c < 16 ? 1.0f : c < 31 ? 80.0f : c < 32 ? 79.9375f : 3.0f;
            }
            const Tensor& y = attn.forward(qkv, h.ctx);
            const RoundingStats& scores = h.step("attn.scores");
            QCOMPARE(scores.count, std::uint64_t(4));
            QCOMPARE(scores.overflow, std::uint64_t(0));
            // Token 0: scores 102400 / 4 and 102395 / 4 after the 1/sqrt(16) scale, so token 1
            // takes p1 = 0.2227 of the mean; allowed: the probabilities rounded to fp16 as the
            // second product reads them and the output's fp16 rounding (2^-11 relative each).
            const double p1 = 1.0 / (1.0 + std::exp((102400.0 - 102395.0) / 4.0));
            const double expected = (1.0 - p1) * 1.0 + p1 * 3.0;
            QVERIFY2(std::fabs(double(y[0]) - expected) <= 3e-3,
                     qPrintable(QString("%1 against %2").arg(double(y[0])).arg(expected)));
            Tensor dY({2, 16}, h.recipe.storage());
            dY.fill(1e-3f);
            const Tensor* dX = attn.backward(dY, h.ctx, true);
            QVERIFY(dX);
            for (std::int64_t i = 0; i < dX->size(); ++i) QVERIFY(std::isfinite((*dX)[i]));
        }
        // The same rows with the scores rounded to fp16 overflow (the test above, one row).
        Harness h("amp-fp16");
        Attention attn("attn", 2, 16, 1);
        Tensor qkv({2, 48}, h.recipe.storage());
        for (std::int64_t c = 0; c < 48; ++c) {
            qkv[c] = c < 32 ? 80.0f : 1.0f;
            qkv[48 + c] = c < 16 ? 1.0f : c < 31 ? 80.0f : c < 32 ? 79.9375f : 3.0f;
        }
        attn.forward(qkv, h.ctx);
        QVERIFY(h.step("attn.scores").overflow > 0);
    }

    // With master weights the positions are fp32 and so, by PyTorch's type promotion, is the
    // residual stream after them; without (model.half()) both are in storage. A block keeps
    // the stream's format.
    void residualStreamFormatFollowsThePositions()
    {
        for (const char* preset : {"amp-fp16", "pure-fp16"}) {
            Harness h(preset);
            const bool master = h.recipe.masterWeights;
            auto model = Model::create(ModelSpec{"vit", {16, 1, 2, 14}}, 3);
            model->applyRecipe(h.recipe, nullptr, *h.backend);
            Tensor images({2, 1, 28, 28});
            Rng rng{11};
            fill(images, rng, 0.0f, 1.0f);
            model->trainStep(images, {3, 7}, 1.0f, h.ctx);
            const auto& taps = h.telemetry.taps();
            for (const char* layer : {"block1.attn.scores", "block1.attn.softmax", "block1.ln1.sumsq", "block1.residual", "pos"})
                QVERIFY2(taps.count(TapKey{layer, TensorKind::activation}), layer);
            QCOMPARE(h.step("block1.residual").count, std::uint64_t(2 * 2 * 4 * 16));
            // Every tap is one tapLayerNames lists (what lesson metrics may name), and back.
            std::set<std::string> tapped;
            for (const auto& [key, data] : taps)
                if (key.layer != "input" && key.layer != "loss") tapped.insert(key.layer);
            const auto listed = tapLayerNames(ModelSpec{"vit", {16, 1, 2, 14}});
            QCOMPARE(tapped, std::set<std::string>(listed.begin(), listed.end()));
            QCOMPARE(std::set<std::string>(listed.begin(), listed.end()).size(), listed.size());   // each once

            TransformerBlock block("b", 4, 16, 2);
            int index = 0;
            block.initialize(5, index);
            Tensor x({8, 16}, master ? Format::fp32 : Format::fp16);
            for (std::int64_t i = 0; i < x.size(); ++i) x[i] = roundTo(Format::fp16, rng.uniform(-1, 1)) + (master ? 1e-4f : 0.0f);
            const Tensor& y = block.forward(x, h.ctx);
            QCOMPARE(y.storage(), master ? Format::fp32 : Format::fp16);
            int offGrid = 0;
            for (std::int64_t i = 0; i < y.size(); ++i) offGrid += roundTo(Format::fp16, y[i]) != y[i];
            QVERIFY2(master ? offGrid > 0 : offGrid == 0, qPrintable(QString::number(offGrid)));
        }
    }

    // Issue 33's training options through the trainer: zero_init_residual starts every
    // block's proj and fc2 weights at zero and no other weight; a schedule sets each step's
    // rate (the StepEvent's lr) as scheduledLr says for the planned steps; a model without
    // residual branches gets a notice.
    void vitTrainingOptionsReachTheRun()
    {
        testing::TempDir dir;
        testing::writeSyntheticDataset(dir.path() / "mnist", 160, 40, 5);
        const DataSplit data = loadDataset("mnist", dir.path());
        const std::string saved = (dir.path() / "initial.safetensors").string();
        const nlohmann::json base = {{"model", "vit"}, {"widths", {16, 1, 2, 14}}, {"batch", 16}, {"threads", 1},
                                     {"histogram_every", 0}};
        nlohmann::json zeroed = base;
        zeroed.update({{"epochs", 0}, {"zero_init_residual", true}, {"save_weights", saved}});
        Trainer untrained(settingsFromJson(zeroed, "test"), data, [](const TrainerEvent&) {});
        QCOMPARE(untrained.run().status, RunStatus::completed);
        int zeroBranches = 0;
        for (const WeightTensor& t : readSafetensors(saved).tensors) {
            const bool branch = t.name.ends_with(".proj.weight") || t.name.ends_with(".fc2.weight");
            const bool allZero = std::all_of(t.values.begin(), t.values.end(), [](float v) { return v == 0.0f; });
            if (t.name.ends_with(".weight")) QVERIFY2(branch == allZero, t.name.c_str());
            zeroBranches += branch && allZero;
        }
        QCOMPARE(zeroBranches, 2);   // one block: proj and fc2

        nlohmann::json scheduled = base;
        scheduled.update({{"epochs", 1}, {"max_steps", 8}, {"lr", 0.002}, {"lr_schedule", "cosine"},
                          {"warmup_steps", 3}, {"zero_init_residual", true}});
        const TrainSettings s = settingsFromJson(scheduled, "test");
        std::vector<double> rates;
        std::int64_t planned = 0;
        Trainer trainer(s, data, [&](const TrainerEvent& e) {
            if (const auto* st = std::get_if<StepEvent>(&e)) rates.push_back(st->lr);
            if (const auto* start = std::get_if<RunStartEvent>(&e)) planned = start->plannedSteps;
        });
        // The cosine is planned over the run's steps: a batch change is refused.
        QVERIFY(!trainer.control().requestChange(SettingsChange{std::nullopt, 8, std::nullopt}).empty());
        const RunResult r = trainer.run();
        QCOMPARE(r.status, RunStatus::completed);
        QCOMPARE(planned, std::int64_t{8});
        QCOMPARE(rates.size(), std::size_t{8});
        for (std::size_t i = 0; i < rates.size(); ++i)
            QCOMPARE(rates[i], scheduledLr(0.002, s.lrSchedule, static_cast<std::int64_t>(i), 8));
        QCOMPARE(rates[0], 0.002 / 3);   // the warm-up's first third
        QVERIFY(rates[7] < rates[3]);    // lowered along the cosine
        QCOMPARE(r.steps, std::int64_t{8});

        const auto notices = settingsNotices(settingsFromJson(nlohmann::json{{"zero_init_residual", true}}, "test"));
        QVERIFY(std::any_of(notices.begin(), notices.end(),
                            [](const std::string& n) { return n.starts_with("zero_init_residual"); }));
        // The scores' format changes nothing where there is no attention, and the notice says so.
        const auto said = [](const std::vector<std::string>& all) {
            return std::any_of(all.begin(), all.end(), [](const std::string& n) {
                return n == "attention_scores fp32: model small-cnn has no attention (only vit has), so nothing changes";
            });
        };
        QVERIFY(said(settingsNotices(settingsFromJson(nlohmann::json{{"attention_scores", "fp32"}}, "test"))));
        QVERIFY(!said(settingsNotices(settingsFromJson(nlohmann::json{{"attention_scores", "fp32"}, {"model", "vit"}}, "test"))));
        QVERIFY_THROWS_EXCEPTION(InputError, settingsFromJson(nlohmann::json{{"zero_init_residual", true},
                                                                             {"init_weights", saved}}, "test"));
        QVERIFY_THROWS_EXCEPTION(InputError, settingsFromJson(nlohmann::json{{"lr_schedule", "linear"}}, "test"));
        // Label smoothing needs the loss in fp32: the logits' format is the last layer's own.
        const std::string last = parameterLayerNames(ModelSpec{}).back();
        QVERIFY_THROWS_EXCEPTION(InputError, settingsFromJson(nlohmann::json{{"label_smoothing", 0.1},
                                                                             {"fp32_sensitive_ops", false},
                                                                             {"layer", last + "=bf16"}}, "test"));
        QCOMPARE(settingsFromJson(nlohmann::json{{"recipe", "pure-fp16"}, {"label_smoothing", 0.1},
                                                 {"layer", last + "=fp32"}}, "test").labelSmoothing, 0.1);
        QVERIFY_THROWS_EXCEPTION(InputError, settingsFromJson(nlohmann::json{{"recipe", "pure-fp16"},
                                                                             {"label_smoothing", 0.1}}, "test"));
    }

    void badShapesAreClearErrors()
    {
        Harness h;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Patchify("patches", 28, 5));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Attention("attn", 4, 10, 3));
        LayerNorm ln("ln", 8);
        Tensor x({2, 6});
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, ln.forward(x, h.ctx));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Model::create(ModelSpec{"vit", {64, 2, 3, 7}}, 1));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, Model::create(ModelSpec{"vit", {64, 2, 4, 5}}, 1));
    }
};

QTEST_GUILESS_MAIN(TestTransformer)
#include "tst_transformer.moc"

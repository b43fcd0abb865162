// plab_bench: images/second of full training steps (forward, backward, unscale,
// update, telemetry on) per model x recipe, median of repeated runs, on synthetic
// MNIST-shaped data; and the sgemm rate OpenBLAS reaches on this machine.
//
//   plab_bench train --models small-cnn --recipes fp32,tf32,amp-fp16,amp-bf16 --batch 64 [--backend cuda]
//                    (a recipe may change switches: amp-fp16/fp32_accumulate=off)
//                    [--arithmetic hardware|exact] [--packing on,off,default]
//   plab_bench sgemm --m 1000 --n 6272 --k 3780
//   plab_bench gemm --m 1000 --n 6272 --k 3780   (bf16 operands: exact vs hardware arithmetic)
//   plab_bench update --recipes pure-bf16,pure-fp16 --m 4270000   (one optimizer step on m
//                    elements: 16-bit optimizer state held packed against fp32-held, interleaved)
// Output: one line per measurement, "key=value" pairs, easy to parse from the
// PyTorch comparison script.
#include "data/dataset.h"
#include "nn/layer_ops.h"
#include "optim/optimizer.h"
#include "train/trainer.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

using namespace plab;

namespace {

std::vector<std::string> split(const std::string& s, char separator = ',')
{
    std::vector<std::string> out;
    std::stringstream in(s);
    for (std::string item; std::getline(in, item, separator);)
        if (!item.empty()) out.push_back(item);
    return out;
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const auto n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Evaluation is not part of a training step, so the test set is small.
DataSplit syntheticData(std::int64_t trainCount, std::int64_t testCount = 200)
{
    DataSplit d;
    d.name = "synthetic";
    d.description = "synthetic MNIST-shaped data";
    std::mt19937 rng(1);
    for (Dataset* ds : {&d.train, &d.test}) {
        const std::int64_t count = ds == &d.train ? trainCount : testCount;
        ds->count = count;
        ds->pixels.resize(static_cast<std::size_t>(count) * 784);
        ds->labels.resize(static_cast<std::size_t>(count));
        for (auto& p : ds->pixels) p = static_cast<std::uint8_t>(rng() % 256);
        for (auto& l : ds->labels) l = static_cast<std::uint8_t>(rng() % 10);
    }
    return d;
}

struct Args {
    std::string command;
    std::vector<std::string> models{"small-cnn"};
    std::vector<std::string> recipes{"fp32", "tf32", "amp-fp16", "amp-bf16"};
    int batch = 64;
    int steps = 30;
    int warmup = 5;
    int repeats = 5;
    int threads = 2;
    int histogramEvery = 50;
    std::string widths;
    std::string backend = "cpu";   // or cuda
    std::string arithmetic = "hardware";   // or exact (the CPU's 16-bit products)
    int m = 1000, n = 6272, k = 3780;
    std::vector<std::string> packing{"default"};   // 16-bit tensors packed (on), fp32-held (off) or as the backend does by default, interleaved
};

Args parse(int argc, char** argv)
{
    Args a;
    if (argc > 1) a.command = argv[1];
    for (int i = 2; i + 1 < argc; i += 2) {
        const std::string key = argv[i], value = argv[i + 1];
        if (key == "--models") a.models = split(value);
        else if (key == "--recipes") a.recipes = split(value);
        else if (key == "--batch") a.batch = std::stoi(value);
        else if (key == "--steps") a.steps = std::stoi(value);
        else if (key == "--warmup") a.warmup = std::stoi(value);
        else if (key == "--repeats") a.repeats = std::stoi(value);
        else if (key == "--threads") a.threads = std::stoi(value);
        else if (key == "--histogram-every") a.histogramEvery = std::stoi(value);
        else if (key == "--widths") a.widths = value;
        else if (key == "--backend") a.backend = value;
        else if (key == "--arithmetic") a.arithmetic = value;
        else if (key == "--packing") {
            a.packing = split(value);
            for (const auto& v : a.packing)
                if (v != "on" && v != "off" && v != "default") {
                    std::fprintf(stderr, "plab_bench: --packing takes on, off or default, got %s\n", v.c_str());
                    std::exit(2);
                }
        }
        else if (key == "--m") a.m = std::stoi(value);
        else if (key == "--n") a.n = std::stoi(value);
        else if (key == "--k") a.k = std::stoi(value);
        else {
            std::fprintf(stderr, "plab_bench: unknown option %s\n", key.c_str());
            std::exit(2);
        }
    }
    return a;
}

int benchTrain(const Args& a)
{
    const DataSplit data = syntheticData(static_cast<std::int64_t>(a.batch) * (a.steps + a.warmup) + 1);
    for (const auto& model : a.models) {
        double fp32Rate = 0.0;
        for (const auto& recipe : a.recipes) {
            // "amp-fp16/fp32_accumulate=off": a preset with switches changed (settings keys).
            const std::vector<std::string> parts = split(recipe, '/');
            nlohmann::json cfg = {{"model", model}, {"recipe", parts.front()}, {"batch", a.batch},
                                  {"epochs", 1}, {"max_steps", a.steps + a.warmup},
                                  {"threads", a.threads}, {"histogram_every", a.histogramEvery},
                                  {"backend", a.backend}, {"arithmetic", a.arithmetic}};
            for (std::size_t p = 1; p < parts.size(); ++p) {
                const auto eq = parts[p].find('=');
                if (eq == std::string::npos) {
                    std::fprintf(stderr, "plab_bench: '%s' in --recipes is not key=value\n", parts[p].c_str());
                    return 2;
                }
                cfg[parts[p].substr(0, eq)] = parts[p].substr(eq + 1);
            }
            if (!a.widths.empty()) {
                cfg["widths"] = nlohmann::json::array();
                for (const auto& w : split(a.widths)) cfg["widths"].push_back(std::stoi(w));
            }
            const TrainSettings s = settingsFromJson(cfg, "bench");
            // Packing on and off (issue 31) interleaved repeat by repeat, so that both see
            // the same machine state; each its own median and peaks.
            std::map<std::string, std::vector<double>> rates;
            std::map<std::string, std::int64_t> trainingPeak;
            std::map<std::string, std::uint64_t> deviceUsed;
            for (int r = 0; r < a.repeats; ++r)
                for (const auto& packing : a.packing) {
                    setPackedStorage(packing == "on" ? PackedStorage::on : packing == "off" ? PackedStorage::off : PackedStorage::byDefault);
                    double ms = 0.0;
                    std::int64_t images = 0;
                    Trainer trainer(s, data, [&](const TrainerEvent& e) {
                        if (const auto* st = std::get_if<StepEvent>(&e); st && st->step > a.warmup) {
                            ms += st->timeMs;
                            images += st->batch;
                        } else if (const auto* m = std::get_if<MemoryEvent>(&e)) {
                            // The accountant's training-step peak and, on a device backend,
                            // the most the device reported in use (cudaMemGetInfo).
                            const auto& peak = m->memory.phasePeak[static_cast<std::size_t>(MemoryPhase::training)];
                            trainingPeak[packing] = std::max(trainingPeak[packing], peak.total);
                            if (m->device) deviceUsed[packing] = std::max(deviceUsed[packing], m->device->used);
                        }
                    });
                    const RunResult result = trainer.run();
                    if (result.status == RunStatus::failed) {
                        std::fprintf(stderr, "plab_bench: %s\n", result.message.c_str());
                        return 1;
                    }
                    rates[packing].push_back(1000.0 * static_cast<double>(images) / ms);
                }
            setPackedStorage(PackedStorage::byDefault);
            for (const auto& packing : a.packing) {
                const double rate = median(rates[packing]);
                if (recipe == "fp32") fp32Rate = rate;
                std::printf("train model=%s recipe=%s backend=%s arithmetic=%s packing=%s batch=%d threads=%d "
                            "images_per_second=%.1f step_ms=%.2f vs_fp32_step_time=%.3f training_peak_mib=%.1f "
                            "device_used_mib=%.1f\n",
                            model.c_str(), recipe.c_str(), a.backend.c_str(), a.arithmetic.c_str(), packing.c_str(),
                            a.batch, a.threads, rate, 1000.0 * a.batch / rate, fp32Rate > 0 ? fp32Rate / rate : 0.0,
                            static_cast<double>(trainingPeak[packing]) / (1 << 20),
                            static_cast<double>(deviceUsed[packing]) / (1 << 20));
                std::fflush(stdout);
            }
        }
    }
    return 0;
}

// Operands of an (m, k) x (k, n) product, uniform in [-1, 1) and rounded to f, and the
// product's output (fp32, row-major).
struct Operands {
    std::vector<float> A, B, C;
};
Operands operands(const Args& a, Format f)
{
    Operands o{std::vector<float>(static_cast<std::size_t>(a.m) * a.k), std::vector<float>(static_cast<std::size_t>(a.k) * a.n),
               std::vector<float>(static_cast<std::size_t>(a.m) * a.n)};
    std::mt19937 rng(2);
    std::uniform_real_distribution<float> u(-1, 1);
    for (auto* v : {&o.A, &o.B})
        for (auto& x : *v) x = roundTo(f, u(rng));
    return o;
}

// The median rate of `product` over a.repeats timed calls after one untimed.
double medianGflops(const Args& a, const std::function<void()>& product)
{
    std::vector<double> gflops;
    for (int r = 0; r < a.repeats + 1; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        product();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (r > 0) gflops.push_back(2.0 * a.m * a.n * a.k / s / 1e9);
    }
    return median(gflops);
}

int benchSgemm(const Args& a)
{
    openblas_set_num_threads(a.threads);
    Operands o = operands(a, Format::fp32);
    const double gflops = medianGflops(a, [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, a.m, a.n, a.k, 1.0f, o.A.data(), a.k, o.B.data(), a.n,
                    0.0f, o.C.data(), a.n);
    });
    std::printf("sgemm m=%d n=%d k=%d threads=%d gflops=%.1f\n", a.m, a.n, a.k, a.threads, gflops);
    return 0;
}

// The CPU backend's GEMM on bf16 operands (the seed CNN's conv2 shape by default) under
// each arithmetic, side by side: exact (OpenBLAS sgemm on the rounded operands) and
// hardware (oneDNN on the native units, or exact where there are none).
int benchGemm(const Args& a)
{
    Operands o = operands(a, Format::bf16);
    for (const Arithmetic arithmetic : {Arithmetic::exact, Arithmetic::hardware}) {
        auto backend = createCpuBackend(a.threads, arithmetic);
        const double gflops = medianGflops(a, [&] {
            backend->gemm(Transpose::no, Transpose::no, a.m, a.n, a.k, o.A.data(), a.k, o.B.data(), a.n, 0.0f,
                          o.C.data(), a.n, GemmPrecision{Format::bf16, true});
        });
        std::printf("gemm format=bf16 arithmetic=%s m=%d n=%d k=%d threads=%d gflops=%.1f path=\"%s\"\n",
                    std::string(arithmeticName(arithmetic)).c_str(), a.m, a.n, a.k, a.threads, gflops,
                    backend->arithmeticFor({Format::bf16, true}).c_str());
    }
    return 0;
}

// One optimizer step (Adam, and SGD with momentum) of the recipes' on a parameter of a.m
// elements (the seed CNN has 4.27 M), its 16-bit state held packed and fp32-held, repeat
// by repeat; the median time of each.
int benchUpdate(const Args& a)
{
    auto backend = createCpuBackend(a.threads, Arithmetic::exact);
    const auto n = static_cast<std::size_t>(a.m);
    std::mt19937 rng(3);
    std::normal_distribution<float> normal;
    for (const std::string kind : {"adam", "sgd"}) {
        for (const auto& name : a.recipes) {
            const auto recipe = PrecisionRecipe::fromPreset(name);
            if (!recipe || recipe->keepsMasterCopy()) {
                std::fprintf(stderr, "plab_bench update: %s is no preset without master weights\n", name.c_str());
                return 2;
            }
            OptimizerConfig cfg;
            cfg.kind = kind;
            std::map<bool, std::vector<double>> ms;
            std::map<bool, Parameter> params;
            std::map<bool, std::unique_ptr<Optimizer>> optimizers;
            for (const bool packed : {false, true}) {
                Parameter& p = params[packed];
                p.layer = "conv2";
                p.name = "weight";
                p.value = Tensor({a.m}, recipe->weightFormat());
                p.grad = Tensor({a.m}, recipe->gradientFormat());
                for (std::size_t i = 0; i < n; ++i) {
                    p.value[std::int64_t(i)] = roundTo(recipe->weightFormat(), normal(rng));
                    p.grad[std::int64_t(i)] = roundTo(recipe->gradientFormat(), 1e-3f * normal(rng));
                }
                optimizers[packed] = Optimizer::create(cfg);
            }
            for (int r = 0; r < a.repeats + 1; ++r)
                for (const bool packed : {false, true}) {
                    const ScopedPackedStorage scope(packed);
                    const auto t0 = std::chrono::steady_clock::now();
                    optimizers[packed]->step({&params[packed]}, *recipe, nullptr, *backend);
                    const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
                    if (r > 0) ms[packed].push_back(t);   // the first makes the state
                }
            if (!params[true].state1.packed() || params[false].state1.packed()) {
                std::fprintf(stderr, "plab_bench update: the state was not held as asked (packing off here?)\n");
                return 2;
            }
            std::printf("update optimizer=%s recipe=%s elements=%d held_ms=%.2f packed_ms=%.2f packed_vs_held=%.3f\n",
                        kind.c_str(), name.c_str(), a.m, median(ms[false]), median(ms[true]),
                        median(ms[true]) / median(ms[false]));
            std::fflush(stdout);
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv)
{
    const Args a = parse(argc, argv);
    if (a.command == "train") return benchTrain(a);
    if (a.command == "sgemm") return benchSgemm(a);
    if (a.command == "gemm") return benchGemm(a);
    if (a.command == "update") return benchUpdate(a);
    std::fprintf(stderr, "usage: plab_bench train|sgemm|gemm|update [options] (see the comment at the top of plab_bench.cpp)\n");
    return 2;
}

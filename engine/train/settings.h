// Every setting of a training run, and its JSON form: the same flat keys serve the
// config file (`plab train --config`), the run record's "settings", lessons and the UI.
#pragma once

#include "amp/recipe.h"
#include "backend/backend.h"
#include "nn/model.h"
#include "optim/grad_unscale.h"
#include "optim/lr_schedule.h"
#include "optim/optimizer.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>
#include <string>
#include <utility>
#include <vector>

namespace plab {

// How much of each training step the telemetry counts (docs/CUDA.md "Telemetry modes").
// everyStep: the lab rounds every 16-bit result itself and counts every rounding at every
// step. sampled: on the steps that take no snapshot (histogram_every's), a backend with a
// convolution library may hand the 16-bit passes to it, which rounds its fp32 sums into
// the compute format where no tap sees them (as PyTorch's autocast convolutions do); the
// run's totals then say at how many steps each site was so rounded (run_rounding's
// library_steps). A backend without such a library (the CPU's) rounds and counts every
// step either way.
enum class TelemetryMode : std::uint8_t { everyStep, sampled };
std::string_view telemetryModeName(TelemetryMode m);   // "every-step", "sampled"
std::optional<TelemetryMode> parseTelemetryMode(std::string_view name);

struct TrainSettings {
    ModelSpec model;                  // "small-cnn" by default
    PrecisionRecipe recipe;           // from a preset plus switch overrides
    OptimizerConfig optimizer;        // Adam, lr 1e-3
    LrSchedule lrSchedule;            // the rate held at lr, no warm-up
    // A transformer's residual branches start at zero (each block's proj and fc2 weights),
    // so that every block begins as the identity (Goyal et al. 2017's zero-gamma trick,
    // written for the vit's blocks).
    bool zeroInitResidual = false;
    // The training loss's label smoothing, in [0, 1) (0: none): targets (1 - e) onehot +
    // e / classes, as PyTorch's cross_entropy(label_smoothing=e) (Szegedy et al. 2016).
    double labelSmoothing = 0.0;
    int batch = 32;
    int epochs = 3;
    std::int64_t maxSteps = 0;        // 0: no limit
    std::uint64_t seed = 1;
    std::string dataset = "mnist";    // "mnist" or "fashion-mnist"
    std::string dataDir;              // empty: defaultDataDir()
    int threads = 2;
    int histogramEvery = 50;          // telemetry snapshot every N steps (0: never)
    TelemetryMode telemetry = TelemetryMode::everyStep;
    int evalEvery = 0;                // extra evaluations every N steps (0: per epoch only)
    int divergenceSteps = 10;         // K consecutive non-finite losses end the run as diverged
    // Gradient accumulation: the batch split into this many micro-batches (1: none), their
    // gradients summed in a buffer of gradAccumFormat before the update (optim/grad_accumulation.h).
    int gradAccumSteps = 1;
    Format gradAccumFormat = Format::fp32;
    double clipGradNorm = 0.0;        // 0: no clipping
    ClipAt clipAt = ClipAt::unscaled; // after unscaling (PyTorch's order) or before (the mistake)
    std::string backend = "cpu";
    // The CPU's products of 16-bit operands: native units where it has them (hardware),
    // or the exact emulation everywhere (exact: the same bits on every CPU; lessons and the
    // tests that compare numbers pin it). docs/ARITHMETIC.md says why hardware is the default.
    Arithmetic arithmetic = Arithmetic::hardware;
    // Files (empty: none). Weights in safetensors with PyTorch's names (weights/): the
    // initial ones instead of the seeded initialisation, and the final ones written at the
    // end. Batches (data/batch_file.h): every step's sample indices written at the end, or
    // read to replay a run's batches in place of the seeded shuffling.
    std::string initWeights;
    std::string saveWeights;
    std::string writeBatches;
    std::string readBatches;

    bool operator==(const TrainSettings&) const = default;
};

// The settings keys, in one table (settings.cpp): the JSON form and its checks, the config
// file, `plab train`'s flags (--key-with-dashes) and their help, the man page made from that
// help, and the settings panel's controls (their labels, choices, limits, groups and which
// stay open while a run trains) all derive from it. Each key's reading, checks and writing
// live in its row.
enum class SettingType { text, integer, number, onOff, intList };

// Where a key belongs: the settings panel's group boxes and the headings of `plab train --help`.
enum class SettingGroup { modelAndData, precision, optimizer, run, files };
std::string_view settingGroupTitle(SettingGroup g);   // "Model and data"

// One value of a key with a closed set of them.
struct SettingChoice {
    const char* value;              // "sgd": the JSON value and the flag's
    const char* title;              // "SGD + momentum": the settings panel's item
    const char* meaning = nullptr;  // for --help where the value alone does not say it
};

// The values an integer or number key takes. Whole numbers from wholeMin to wholeMax (integer
// keys), or numbers between min and max, each end open or closed (number keys).
struct SettingRange {
    std::int64_t wholeMin = 0, wholeMax = 0;
    double min = 0, max = 0;
    bool minOpen = false, maxOpen = false;
};

// What a key is to a comparison of runs: its loss scaling (what the report compares runs
// by), how the run is carried out and watched (where its data is read from and its files
// written, how many threads, how often it is measured), which the report's comparison sets
// aside (threads can change the order of a CPU's sums, not what is trained), or any other:
// runs that differ in it are different runs to the report.
enum class SettingRole : std::uint8_t { trains, scalesLoss, observes };

struct SettingKey {
    const char* key;     // "batch"
    SettingType type;
    const char* title;   // "Batch size": the panel's label, a message's name for the key
    SettingGroup group;
    // Whether a training run takes a change of it at its next step (TrainerControl):
    // the recipe's switches, the batch size and the learning rate.
    bool live = false;
    std::optional<SettingRange> range;      // integer and number keys that have one
    std::vector<SettingChoice> choices;     // text keys with a closed set of values
    const char* help = "";                  // one line; --help adds the choices and the default
    SettingRole role = SettingRole::trains;
};

// The key's range as a sentence reads it: "from 1 to 65536", "greater than 0", "0 or more",
// "in [0, 1)"; empty where it has none.
std::string settingRangeText(const SettingKey& key);
// The key's row; nullptr for a name that is none.
const SettingKey* findSettingKey(std::string_view key);
// The row's choices' values ("adam", "sgd").
std::vector<std::string> settingChoiceValues(const SettingKey& key);
// Why a value is not one of the key's (outside its range): "must be from 1 to 65536, got 0";
// empty where it is (or the key has no range). For a whole number of an integer key and a
// number of a number key; the JSON reader checks every key's value the same way.
std::string settingWholeProblem(const SettingKey& key, std::int64_t value);
std::string settingNumberProblem(const SettingKey& key, double value);
// The key's help as --help prints it: the row's help, then its choices with their meanings,
// and its range.
std::string settingHelp(const SettingKey& key);

const std::vector<SettingKey>& settingKeys();

// The value a key holds in settings, as its flag takes it: on/off, text, a list as 1,2,3
// (empty for none), a number as JSON writes it; empty for a key that is none. Two settings
// hold the same value of a key exactly when these are equal.
std::string settingText(const TrainSettings& s, std::string_view key);
// Sets a key of `to` to its value in `from` (the preset "recipe" as reading it does: the
// preset's every switch with it).
void copySetting(std::string_view key, const TrainSettings& from, TrainSettings& to);
// Why the value a key holds in s is not one of the key's (settingWholeProblem,
// settingNumberProblem, or not one of its choices); empty where it is.
std::string settingValueProblem(const SettingKey& key, const TrainSettings& s);

// Every model's defaults: what settings JSON with no keys reads as for a stored run.
const TrainSettings& defaultSettings();
// A model's own training defaults (its row's ModelKind::trainingDefaults, nn/model_kinds.cpp):
// the keys where they differ from every model's (vit: widths, batch, lr_schedule,
// warmup_steps, zero_init_residual, label_smoothing; the others: none), and the settings of
// that model with every other key at every model's default.
std::vector<std::string> modelDefaultKeys(std::string_view kind);
const TrainSettings& modelDefaultSettings(std::string_view kind);
// A key's defaults as --help says them: every model's, then each model's own ("32; vit: 16").
std::string settingDefaultsText(const SettingKey& key);
// Those of the model's own defaults the settings hold, as "key value, key value".
std::string modelDefaultsHeld(const TrainSettings& s);
// A settings panel's model change: the widths become the new model's default (widths belong
// to their model), and each key either model's own defaults name that still holds the old
// model's default takes the new model's (not the zero-initialised branches beside initial
// weights, nor a label smoothing the recipe refuses); what the user changed stays.
TrainSettings followModelDefaults(const TrainSettings& s, std::string_view to);

// How settings JSON is read: as a new run's (a config file, flags, a lesson, a pasted
// configuration: a key it lacks takes the named model's own default, else every model's) or
// as a stored run's (a record, the runs index, the app's last settings: a key it lacks means
// every model's default, as it did when they were written, never a model's own).
enum class SettingsReading { newRun, stored };

// What a new run's reading did with its model's own defaults: each it took where the JSON
// named none ("key", value as its flag takes it), and each it left off with why. Not the
// zero-initialised branches beside initial weights from a file (they give every weight), nor
// label smoothing where the recipe keeps the loss in 16 bits (labelSmoothingProblem): the
// model's default must not refuse a run the user's own settings allow.
struct ModelDefaultsTaken {
    std::vector<std::pair<std::string, std::string>> taken;
    std::vector<std::string> leftOff;   // "label_smoothing 0.1 (the recipe keeps the loss in 16 bits)"
    // "widths 128,3,8,7, batch 16, ..." (empty where none); !training: only those that shape
    // the model (the widths), for a run that trains nothing.
    std::string takenText(bool training = true) const;
    std::string leftOffText() const;
};

// The one reader of settings JSON: flat keys as settingsToJson writes them, every key of
// settingKeys() or fewer, over the defaults `reading` says (the preset "recipe" is applied
// before the switch keys). Throws InputError naming the key and the problem (`origin` is put
// in front, e.g. "config run.json"). Unknown keys are errors too: a typo must not silently do
// nothing. `taken`: a new run's use of its model's own defaults.
TrainSettings settingsFromJson(const nlohmann::json& j, const std::string& origin,
                               SettingsReading reading = SettingsReading::newRun, ModelDefaultsTaken* taken = nullptr);

// Flat JSON form: {"model": "small-cnn", "recipe": "amp-fp16", "compute": "fp16", ...},
// every key of settingKeys(). With settingsFromJson, the only place settings become JSON.
nlohmann::json settingsToJson(const TrainSettings& s);

// A settings (config) file as its JSON object, size- and depth-limited like every JSON
// input; throws InputError naming the file ("config <file>: ...").
nlohmann::json settingsPatchFromFile(const std::filesystem::path& file);

// The settings a config file describes for a new run (defaults for what it leaves out), with
// `overrides` (command-line flags, say) on top; errors name the file and the key.
TrainSettings settingsFromFile(const std::filesystem::path& file, const nlohmann::json& overrides);
TrainSettings settingsFromFile(const std::filesystem::path& file);

// The first impossible setting as one sentence, or empty.
[[nodiscard]] std::string validateSettings(const TrainSettings& s);

// Notices about unusual but allowed settings, said before a run (the CLI, the settings
// panel): the recipe's (PrecisionRecipe::notices), and what the optimizer state's format
// cannot hold: Adam's eps where it rounds to 0, second moments fp16 flushes.
std::vector<std::string> settingsNotices(const TrainSettings& s);
// Why label smoothing `e` cannot run with recipe `r` on `model` (empty: it can): it needs the
// loss in fp32, fp32 softmax / loss on or fp32 logits (the last layer's own format).
std::string labelSmoothingProblem(const PrecisionRecipe& r, const ModelSpec& model, double e);

// The optimizer steps a run of these settings plans on `trainImages` training images:
// epochs of ceil(images / batch) steps, capped by maxSteps.
std::int64_t plannedSteps(const TrainSettings& s, std::int64_t trainImages);

}  // namespace plab

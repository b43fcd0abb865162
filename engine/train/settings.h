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
#include <vector>

namespace plab {

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
    int evalEvery = 0;                // extra evaluations every N steps (0: per epoch only)
    int divergenceSteps = 10;         // K consecutive non-finite losses end the run as diverged
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
// by), how the run is carried out and watched (where its data is read from, how many
// threads, how often it is measured), which the report's comparison sets aside (threads can
// change the order of a CPU's sums, not what is trained), or any other: runs that differ in
// it are different runs to the report.
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
// Why `value` is not a value of the key (outside its range, not one of its choices), as
// "batch must be from 1 to 65536, got 0"; empty where it is (or the key has neither).
std::string settingValueProblem(const SettingKey& key, const nlohmann::json& value);
// The key's help as --help prints it: the row's help, then its choices with their meanings,
// and its range.
std::string settingHelp(const SettingKey& key);

const std::vector<SettingKey>& settingKeys();

// settingsToJson of the defaults (settingsFromJson of an empty object).
const nlohmann::json& defaultSettingsJson();

// The settings a model kind is trained with by default where they differ from every
// model's (defaultSettingsJson), as a patch of settingsToJson's values: a new run's settings
// (settingsFromJson) take each where the patch gives none. Each is its model row's
// (ModelKind::trainingDefaults, nn/model_kinds.cpp): vit's widths 128,3,8,7, batch 16, a
// cosine schedule with 150 warm-up steps, zero-initialised residual branches and label
// smoothing 0.1; the others: none.
const nlohmann::json& modelTrainingDefaults(std::string_view kind);
// The model's own defaults a patch leaves to them and a new run takes (the notices' and
// the panel's exceptions applied, below), as settings JSON (model_defaults.cpp).
nlohmann::json modelDefaultsPatch(const nlohmann::json& patch);
// settings (a patch, or settingsToJson's keys) without the values the reader refuses
// outright (a learning rate <= 0: left to its default), those keys listed in *refused; what
// of them can be read (the model first, its widths after it).
nlohmann::json readableSettings(const nlohmann::json& settings, std::vector<std::string>* refused = nullptr);
// The model's own defaults a patch leaves to them, as a list ("widths 128,3,8,7, batch 16,
// ..."); empty where it leaves none. !training: only those that shape the model (the
// widths), for a run that trains nothing.
std::string modelDefaultsTaken(const nlohmann::json& patch, bool training = true);
// The model's own defaults a patch leaves to them that a new run does not take, each with
// why ("label_smoothing 0.1 (the recipe keeps the loss in 16 bits)"); empty where none.
std::string modelDefaultsLeftOff(const nlohmann::json& patch);
// Those of the model's own defaults the settings hold, listed so.
std::string modelDefaultsHeld(const TrainSettings& s);
// A setting's JSON value as its flag takes it: on/off, text, a list as 1,2,3 (empty for
// none), a number as JSON writes it; empty for null.
std::string settingFlagText(const nlohmann::json& value);
// A settings panel's model change, on settingsToJson's values: the widths become the new
// model's default (widths belong to their model), and each setting either model's training
// defaults name that still holds the old model's default takes the new model's (not the
// zero-initialised branches beside initial weights); what the user changed stays.
nlohmann::json followModelDefaults(const nlohmann::json& settings, std::string_view from, std::string_view to);

// Flat JSON form: {"model": "small-cnn", "recipe": "amp-fp16", "compute": "fp16", ...},
// every key of settingKeys().
nlohmann::json settingsToJson(const TrainSettings& s);

// Builds settings from defaults (the patch's model's own, modelTrainingDefaults, over every
// model's; not its zero-initialised branches where the patch gives initial weights, nor its
// label smoothing where the patch's recipe keeps the loss in 16 bits) overlaid
// with `patch` (keys as in settingsToJson; the preset "recipe" is applied
// before the switch keys). Throws InputError naming the key and the problem (`origin` is
// put in front, e.g. "config run.json"). Unknown keys are errors too: a typo must not
// silently do nothing.
TrainSettings settingsFromJson(const nlohmann::json& patch, const std::string& origin);
// settingsFromJson of settings a run stored (a record, the runs index): a key they lack
// means every model's default, as it did when they were written, never a model's own.
TrainSettings storedSettingsFromJson(const nlohmann::json& stored, const std::string& origin);
// The same without validateSettings: for a panel that shows what is wrong itself.
TrainSettings storedSettingsUnchecked(const nlohmann::json& stored, const std::string& origin);

// A settings (config) file as its JSON object, size- and depth-limited like every JSON
// input; throws InputError naming the file ("config <file>: ...").
nlohmann::json settingsPatchFromFile(const std::filesystem::path& file);

// The settings a config file describes (defaults for what it leaves out), with
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

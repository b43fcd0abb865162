// One value other than the default for every settings key, written here by hand from the
// documented keys (docs/RUN_RECORD.md, `plab train --help`), not from settingKeys(): a key
// added to the settings table without an entry here, or an entry here that the table lacks,
// fails tst_settings, tst_cli and tst_ui_settings, which check that each key is read,
// written back, offered as a flag and kept by the app's settings panel.
#pragma once

#include <nlohmann/json.hpp>

namespace plab::test {

inline const nlohmann::json& settingExamples()
{
    static const nlohmann::json examples = {
        {"model", "mlp"},
        {"widths", {8, 16}},
        {"recipe", "amp-bf16"},
        {"compute", "bf16"},
        {"master_weights", false},
        {"optimizer_state", "bf16"},
        {"update_rounding", "kahan"},
        {"fp32_accumulate", false},
        {"fp32_sensitive_ops", false},
        {"attention_scores", "fp32"},
        {"telemetry", "sampled"},
        {"loss_scale", "static:8"},
        {"init_scale", 1024.0},
        {"growth_factor", 4.0},
        {"backoff_factor", 0.25},
        {"growth_interval", 7},
        {"min_scale", 2.0},
        {"max_scale", 1e6},
        {"quantize", "fp8-current"},
        {"fp8_format", "e4m3"},
        {"amax_history", 16},
        {"amax_algorithm", "most_recent"},
        {"fp8_margin", 1},
        {"mx_scale", "ceil"},
        {"clip_grad_at", "scaled"},
        {"layer", "conv1=fp32,fc1=bf16"},
        {"batch", 64},
        {"epochs", 5},
        {"max_steps", 100},
        {"lr", 0.01},
        {"lr_schedule", "cosine"},
        {"warmup_steps", 75},
        {"zero_init_residual", true},
        {"label_smoothing", 0.1},
        {"optimizer", "sgd"},
        {"momentum", 0.5},
        {"adam_eps", 1e-6},
        {"grad_accum_steps", 2},
        {"grad_accum_format", "bf16"},
        {"seed", 7},
        {"dataset", "fashion-mnist"},
        {"data_dir", "/tmp/elsewhere"},
        {"threads", 4},
        {"histogram_every", 10},
        {"eval_every", 20},
        {"divergence_steps", 3},
        {"clip_grad_norm", 1.5},
        {"backend", "cuda"},
        {"arithmetic", "exact"},
        {"init_weights", "/tmp/initial.safetensors"},
        {"save_weights", "/tmp/final.safetensors"},
        {"write_batches", "/tmp/batches.txt"},
        {"read_batches", "/tmp/replay.txt"},
    };
    return examples;
}

}  // namespace plab::test

// Exporting runs from the app: a comparison report of the chosen runs' records as PDF
// and HTML (plab_report_render, the same documents as `plab report`), the per-step and
// per-evaluation CSV tables of each run, the run records as JSON and TensorBoard event
// files, into one folder.
// Progress is reported step by step; a failure is one sentence. And a run's final
// weights (safetensors, PyTorch's tensor names) copied to a file of the user's choice.
#pragma once

#include "report/smoothing.h"
#include "train/settings.h"

#include <QString>
#include <QStringList>

#include <functional>

namespace plab::ui {

struct ExportRequest {
    QStringList recordFiles;    // run records (JSON) to export, in order
    QString folder;             // where everything goes (created when missing)
    QString title;              // report title; empty: the default
    bool pdf = true;            // folder/report.pdf
    bool html = true;           // folder/report.html
    bool csv = true;            // folder/csv/<run>-steps.csv, ...
    bool json = true;           // folder/records/<run>.json
    double smoothing = kDefaultSmoothing;   // the reports' loss smoothing: the app's slider (report/smoothing.h)
    bool tensorboard = false;   // folder/tensorboard/<run>/events.out.tfevents.* (TensorBoard, wandb sync)
};

struct ExportResult {
    QStringList files;          // written
    QString error;              // one sentence; empty on success
};

// `progress(done, total, what)` is called before each step; it returns false to cancel.
// Needs a QGuiApplication (fonts) for PDF and HTML.
ExportResult exportRuns(const ExportRequest& request,
                        const std::function<bool(int done, int total, const QString& what)>& progress = {});

// The final weights file a run wrote: its settings' save_weights (the app gives every run
// one beside its record: TrainingController::start). Empty, with `why` set to one
// sentence, when there is none to export (the run is still training, failed, or was
// trained without saving weights).
QString runWeightsFile(const TrainSettings& settings, bool live, QString* why = nullptr);

// Reads the weights file whole (every check of engine/weights: a damaged file is refused)
// and writes it to `target` atomically. One sentence on failure; empty on success.
QString exportWeights(const QString& weightsFile, const QString& target);

}  // namespace plab::ui

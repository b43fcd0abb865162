// Over 500 lines: the command line end to end, every bad input beside the good ones (one plab build).
// End-to-end tests of the `plab` executable: bad input (truncated, mislabelled or garbage
// IDX files, malformed options and configs) gives one clear message and exit status 2
// without a signal; a short run on synthetic data exits 0 with the accuracy on stdout's
// last line and a valid run record; a diverging run exits 3; `plab convert` works.

#include "setting_examples.h"
#include "amp/recipe.h"
#include "test_support.h"

#include "backend/backend.h"

#include <QFile>
#include <QFloat16>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTest>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

struct Result {
    int exitCode = -1;
    bool crashed = false;
    bool timedOut = false;
    QString out, err;
};

Result runProgram(const QString& program, const QStringList& args, const QByteArray& input = {},
                  const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment(), int timeoutMs = 300000)
{
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(program, args);
    if (!input.isEmpty()) p.write(input);
    p.closeWriteChannel();
    Result r;
    if (!p.waitForFinished(timeoutMs)) {
        r.timedOut = true;
        p.kill();
        p.waitForFinished();
    }
    r.exitCode = p.exitCode();
    r.crashed = p.exitStatus() != QProcess::NormalExit;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

Result runPlab(const QStringList& args, const QByteArray& input = {})
{
    return runProgram(QStringLiteral(PLAB_CLI_PATH), args, input);
}

QString lastLine(const QString& text)
{
    const auto lines = text.trimmed().split('\n');
    return lines.isEmpty() ? QString() : lines.last();
}

void truncate(const fs::path& file, std::uintmax_t size) { fs::resize_file(file, size); }

}  // namespace

class TestCli : public QObject {
    Q_OBJECT
    plab::testing::TempDir dir_;
    QString dataDir_;

    QStringList quickTrain() const
    {
        return {"train", "--data-dir", dataDir_, "--widths", "4,8", "--batch", "16",
                "--max-steps", "12", "--threads", "1", "--quiet"};
    }

private slots:
    void initTestCase()
    {
        plab::testing::writeSyntheticDataset(dir_.path() / "good" / "mnist", 320, 100, 5);
        dataDir_ = QString::fromStdString((dir_.path() / "good").string());
    }

    void shortRunPrintsAccuracyAndWritesRecord()
    {
        const QString out = QString::fromStdString((dir_.path() / "run.json").string());
        const Result r = runPlab(quickTrain() << "--recipe" << "amp-fp16" << "--out" << out);
        QVERIFY2(r.exitCode == 0 && !r.crashed, qPrintable(r.err));
        QVERIFY2(lastLine(r.out).startsWith("test accuracy 0."), qPrintable(r.out));
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const auto doc = QJsonDocument::fromJson(f.readAll());
        QVERIFY(doc.isObject());
        const auto rec = doc.object();
        for (const char* key : {"format_version", "settings", "seed", "machine", "versions",
                                "backend", "steps", "events", "evals", "telemetry", "memory", "summary"})
            QVERIFY2(rec.contains(key), key);
        QVERIFY(!rec.contains("recipe"));   // the settings say the recipe (records before 2026-11-29 spelled it out)
        QCOMPARE(rec["summary"].toObject()["status"].toString(), QString("completed"));
        QCOMPARE(rec["settings"].toObject()["recipe"].toString(), QString("amp-fp16"));
    }

    // `plab train --help` offers a flag for every settings key (--max-steps for max_steps),
    // with its default where it has one.
    void helpListsAFlagForEverySettingsKey()
    {
        const Result r = runPlab({"train", "--help"});
        QCOMPARE(r.exitCode, 0);
        for (const auto& [key, value] : plab::test::settingExamples().items()) {
            QString flag = QStringLiteral("--") + QString::fromStdString(key);
            flag.replace(QLatin1Char('_'), QLatin1Char('-'));
            QVERIFY2(r.out.contains(flag + QLatin1Char(' ')), qPrintable(flag));
        }
        QVERIFY(r.out.contains(QStringLiteral("Batch size; between 1 and 65536 (default 32; vit: 16)")));
        QVERIFY(r.out.contains(QStringLiteral("(default small-cnn)")));
        // From the settings rows: the flags under their groups, a closed set of values as
        // CLI11 shows one (which the bash completion offers), what each choice means.
        for (const char* heading : {"\nModel and data:\n", "\nPrecision:\n", "\nOptimizer:\n", "\nFiles:\n"})
            QVERIFY2(r.out.contains(QString::fromLatin1(heading)), heading);
        QVERIFY(r.out.contains(QStringLiteral("--optimizer TEXT:{adam,sgd}")));
        QVERIFY(r.out.contains(QStringLiteral("--update-rounding TEXT:{nearest,stochastic,kahan}")));
        QVERIFY(r.out.contains(QStringLiteral("kahan (a compensation buffer carries what rounding lost)")));
        QVERIFY(r.out.contains(QStringLiteral("Learning rate; greater than 0")));
    }

    // `plab sweep --slurm`: a job array and a report job. Run here as Slurm would run them
    // (bash, SLURM_ARRAY_TASK_ID), with one grid point broken: the others train, the
    // report job reports them and names the broken one.
    void sweepWritesASlurmJobArray()
    {
        const fs::path job = dir_.path() / "slurm-job", runs = dir_.path() / "slurm-runs";
        const Result r = runPlab({"sweep", "--recipes", "fp32,amp-fp16,amp-bf16", "--max-steps", "2", "--widths", "4,8",
                                  "--batch", "16", "--threads", "1", "--data-dir", dataDir_, "--quiet", "--out-dir",
                                  QString::fromStdString(runs.string()), "--slurm", QString::fromStdString(job.string()),
                                  "--partition", "short", "--time", "00:05:00"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QFile array(QString::fromStdString((job / "sweep.sbatch").string()));
        QVERIFY(array.open(QIODevice::ReadOnly));
        const QString script = QString::fromUtf8(array.readAll());
        for (const char* line : {"#SBATCH --array=0-2\n", "#SBATCH --cpus-per-task=1\n", "#SBATCH --partition=short\n",
                                 "#SBATCH --time=00:05:00\n"})
            QVERIFY2(script.contains(QLatin1String(line)), line);
        QVERIFY(fs::exists(job / "settings" / "2.json"));
        QVERIFY(!fs::exists(runs / "fp32.json"));   // nothing trained here

        { std::ofstream(job / "settings" / "1.json") << R"({"batch": "many"})"; }   // point 1 fails (exit 2)
        for (int i = 0; i < 3; ++i) {
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
            env.insert(QStringLiteral("SLURM_ARRAY_TASK_ID"), QString::number(i));
            const Result task = runProgram(QStringLiteral("bash"), {QString::fromStdString((job / "sweep.sbatch").string())}, {}, env);
            QCOMPARE(task.exitCode, 0);   // a failed point does not fail the array (the report runs after it)
        }
        const Result report = runProgram(QStringLiteral("bash"), {QString::fromStdString((job / "report.sbatch").string())});
        QVERIFY2(report.exitCode == 0, qPrintable(report.out + report.err));
        QVERIFY2(report.out.contains(QStringLiteral("missing grid point 1 (amp-fp16_b16.json): plab exit status 2")),
                 qPrintable(report.out));
        QVERIFY(report.out.contains(QStringLiteral("2 of 3 grid points have records")));
        QFile html(QString::fromStdString((runs / "report.html").string()));
        QVERIFY(html.open(QIODevice::ReadOnly));
        const QString page = QString::fromUtf8(html.readAll());
        QVERIFY(page.contains(QStringLiteral("missing grid point 1 (amp-fp16_b16.json)")));
        QVERIFY(page.contains(QStringLiteral("AMP BF16")) && page.contains(QStringLiteral("FP32")));

        // --submit: the array, then the report after every task ended (afterany), through sbatch.
        const fs::path bin = dir_.path() / "fake-bin";
        fs::create_directories(bin);
        {
            std::ofstream fake(bin / "sbatch");
            fake << "#!/bin/sh\necho \"$@\" >> \"" << (bin / "calls").string() << "\"\n"
                 << "n=$(wc -l < \"" << (bin / "calls").string() << "\")\necho \"$((4100 + n));cluster\"\n";
        }
        fs::permissions(bin / "sbatch", fs::perms::owner_all);
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("PATH"), QString::fromStdString(bin.string()) + ":" + env.value(QStringLiteral("PATH")));
        const Result submitted = runProgram(QStringLiteral(PLAB_CLI_PATH),
                                            {"sweep", "--recipes", "fp32", "--max-steps", "2", "--data-dir", dataDir_,
                                             "--out-dir", QString::fromStdString(runs.string()), "--slurm",
                                             QString::fromStdString(job.string()), "--submit"},
                                            {}, env);
        QVERIFY2(submitted.exitCode == 0, qPrintable(submitted.err));
        QCOMPARE(submitted.out, QStringLiteral("array job 4101\nreport job 4102\n"));
        QFile calls(QString::fromStdString((bin / "calls").string()));
        QVERIFY(calls.open(QIODevice::ReadOnly));
        const QStringList lines = QString::fromUtf8(calls.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 2);
        QVERIFY(lines[0].endsWith(QStringLiteral("sweep.sbatch")));
        QVERIFY2(lines[1].contains(QStringLiteral("--dependency=afterany:4101 ")) && lines[1].endsWith(QStringLiteral("report.sbatch")),
                 qPrintable(lines[1]));
        QCOMPARE(runPlab({"sweep", "--recipes", "fp32", "--out-dir", "x", "--submit"}).exitCode, 2);   // --submit needs --slurm
    }

    void configFileAndFlagsOverride()
    {
        const auto config = dir_.path() / "config.json";
        std::ofstream(config) << R"({"recipe": "amp-bf16", "batch": 8, "max_steps": 3})";
        const QString out = QString::fromStdString((dir_.path() / "cfg-run.json").string());
        const Result r = runPlab({"train", "--config", QString::fromStdString(config.string()), "--data-dir", dataDir_,
                               "--widths", "4,8", "--batch", "4", "--quiet", "--out", out});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const auto rec = QJsonDocument::fromJson(f.readAll()).object();
        QCOMPARE(rec["settings"].toObject()["batch"].toInt(), 4);          // the flag wins
        QCOMPARE(rec["settings"].toObject()["compute"].toString(), QString("bf16"));   // from the config
        QCOMPARE(rec["steps"].toArray().size(), 3);
    }

    // `plab train --model vit` takes the vit's own defaults where no flag gives a value,
    // says so, and its record holds them (here a config gives the batch, a flag the
    // schedule; --epochs 0 evaluates the initial weights only).
    void vitTakesItsOwnDefaults()
    {
        const auto config = dir_.path() / "vit.json";
        std::ofstream(config) << R"({"model": "vit", "batch": 8})";
        const QString out = QString::fromStdString((dir_.path() / "vit-run.json").string());
        const Result r = runPlab({"train", "--config", QString::fromStdString(config.string()), "--data-dir", dataDir_,
                                  "--lr-schedule", "constant", "--epochs", "0", "--quiet", "--out", out});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY2(r.err.contains("vit's own defaults: label_smoothing 0.1, warmup_steps 150, widths 128,3,8,7, "
                                "zero_init_residual on (a flag overrides each)"),
                 qPrintable(r.err));
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const auto settings = QJsonDocument::fromJson(f.readAll()).object()["settings"].toObject();
        QCOMPARE(settings["batch"].toInt(), 8);
        QCOMPARE(settings["lr_schedule"].toString(), QString("constant"));
        QCOMPARE(settings["widths"].toArray(), (QJsonArray{128, 3, 8, 7}));
        QCOMPARE(settings["zero_init_residual"].toBool(), true);

        // Under a recipe that keeps the loss in 16 bits the smoothing is left off, and said so.
        const QString weights = QString::fromStdString((dir_.path() / "vit.safetensors").string());
        const Result pure = runPlab({"train", "--model", "vit", "--recipe", "pure-bf16", "--data-dir", dataDir_,
                                     "--epochs", "0", "--quiet", "--save-weights", weights});
        QVERIFY2(pure.exitCode == 0, qPrintable(pure.err));
        QVERIFY2(pure.err.contains("vit's own defaults left off: label_smoothing 0.1 (the recipe keeps the loss in 16 bits)"),
                 qPrintable(pure.err));
        QVERIFY2(!pure.err.contains("vit's own defaults: label_smoothing"), qPrintable(pure.err));
        // Evaluating trains nothing: only the widths the model takes are named.
        const Result eval = runPlab({"eval", "--model", "vit", "--weights", weights, "--data-dir", dataDir_, "--quiet"});
        QVERIFY2(eval.exitCode == 0, qPrintable(eval.err));
        QVERIFY2(eval.err.contains("vit's own defaults: widths 128,3,8,7 (a flag overrides each)"), qPrintable(eval.err));
        QVERIFY2(!eval.err.contains("left off"), qPrintable(eval.err));
    }

    void divergingRunExitsThree()
    {
        const Result r = runPlab(quickTrain() << "--optimizer" << "sgd" << "--lr" << "1e30"
                                           << "--divergence-steps" << "2");
        QCOMPARE(r.exitCode, 3);
        QVERIFY(!r.crashed);
        QVERIFY2(r.err.contains("diverged"), qPrintable(r.err));
    }

    // Issue 68 item 5: a sweep point that diverged said "plab: diverged: diverged: ...".
    void divergedSweepPointSaysItOnce()
    {
        const Result r = runPlab({"sweep", "--recipes", "fp32", "--optimizer", "sgd", "--lr", "1e30", "--divergence-steps", "2",
                                  "--max-steps", "6", "--widths", "4,8", "--threads", "1", "--data-dir", dataDir_, "--quiet",
                                  "--out-dir", QString::fromStdString((dir_.path() / "sweep-diverged").string())});
        QVERIFY2(r.err.contains("plab: diverged: the loss was not finite"), qPrintable(r.err));
        QVERIFY2(!r.err.contains("diverged: diverged"), qPrintable(r.err));
    }

    // Issue 68 item 5: plab info names every recipe family and the machine in words; --json
    // gives the same as one object.
    void infoListsEveryRecipeFamily()
    {
        const Result r = runPlab({"info"});
        QCOMPARE(r.exitCode, 0);
        for (const auto* list : {&plab::PrecisionRecipe::presetNames(), &plab::PrecisionRecipe::frameworkPresetNames(),
                                 &plab::PrecisionRecipe::lowPrecisionPresetNames()})
            for (const std::string& name : *list)
                QVERIFY2(r.out.contains(QString::fromStdString(" " + name)), name.c_str());
        QVERIFY2(r.out.contains(QStringLiteral("logical cores")) && !r.out.contains(QStringLiteral("\"threads\"")),
                 qPrintable(r.out));
        const Result j = runPlab({"info", "--json"});
        QCOMPARE(j.exitCode, 0);
        const auto info = nlohmann::json::parse(j.out.toStdString());
        QCOMPARE(info.at("recipes").at("below_16_bits").get<std::vector<std::string>>(), plab::PrecisionRecipe::lowPrecisionPresetNames());
        QVERIFY(!info.at("machine").contains("threads"));
        QVERIFY(info.at("backends").at("cpu").at("available").get<bool>());
    }

    void badInputGivesOneClearError_data()
    {
        QTest::addColumn<QString>("problem");   // what to break
        QTest::addColumn<QString>("expected");  // a phrase the message must hold
        QTest::addRow("truncated images") << "truncate" << "truncated";
        QTest::addRow("label out of range") << "label" << "label";
        QTest::addRow("garbage file") << "garbage" << "train-images-idx3-ubyte";
        QTest::addRow("count mismatch") << "count" << "t10k";
        QTest::addRow("missing folder") << "missing" << "set-up";
    }
    void badInputGivesOneClearError()
    {
        QFETCH(QString, problem);
        QFETCH(QString, expected);
        plab::testing::TempDir bad;
        const auto folder = bad.path() / "mnist";
        if (problem != "missing") plab::testing::writeSyntheticDataset(folder, 100, 50, 3);
        if (problem == "truncate") truncate(folder / "train-images-idx3-ubyte", 16 + 784 * 10 + 5);
        if (problem == "label") {
            std::fstream f(folder / "train-labels-idx1-ubyte", std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(8 + 17);
            f.put(char(42));
        }
        if (problem == "garbage") std::ofstream(folder / "train-images-idx3-ubyte") << "this is not an IDX file";
        if (problem == "count") plab::testing::writeSyntheticDataset(bad.path() / "other", 100, 49, 3),
            fs::copy_file(bad.path() / "other" / "t10k-labels-idx1-ubyte", folder / "t10k-labels-idx1-ubyte",
                          fs::copy_options::overwrite_existing);
        const Result r = runPlab({"train", "--data-dir", QString::fromStdString(bad.path().string()), "--quiet"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY(!r.crashed);
        QVERIFY2(r.err.contains(expected), qPrintable(r.err));
        QCOMPARE(r.err.trimmed().count('\n'), 0);   // one message, one line
    }

    void malformedOptionsAndConfigs_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("expected");
        QTest::addRow("unknown option") << QStringList{"train", "--bogus"} << "bogus";
        QTest::addRow("batch not a number") << QStringList{"train", "--batch", "many"} << "--batch";
        QTest::addRow("unknown recipe") << QStringList{"train", "--recipe", "fp8"} << "recipe";
        QTest::addRow("bad loss scale") << QStringList{"train", "--loss-scale", "static:-4"} << "loss_scale";
        QTest::addRow("missing config") << QStringList{"train", "--config", "/nonexistent/c.json"} << "config /nonexistent/c.json: no such file";
        QTest::addRow("no subcommand") << QStringList{} << "subcommand";
        // Issue 68, item 5: a typo says what was meant.
        QTest::addRow("misspelt command") << QStringList{"traine"} << "unknown command \"traine\" (did you mean 'train'?)";
        QTest::addRow("misspelt option") << QStringList{"train", "--recipes", "fp32"}
                                         << "unknown option \"--recipes\" (did you mean '--recipe'?)";
        QTest::addRow("misspelt recipe") << QStringList{"train", "--recipe", "amp-fp61"} << "(did you mean 'amp-fp16'?)";
        QTest::addRow("misspelt optimizer") << QStringList{"train", "--optimizer", "adma"} << "(did you mean 'adam'?)";
        QTest::addRow("misspelt model") << QStringList{"train", "--model", "smal-cnn"} << "got \"smal-cnn\" (did you mean 'small-cnn'?)";
        QTest::addRow("misspelt compute format") << QStringList{"train", "--compute", "fp61"} << "got \"fp61\" (did you mean 'fp16'?)";
        QTest::addRow("misspelt layer precision") << QStringList{"train", "--layer", "conv1=bf61"} << "(did you mean 'bf16'?)";
        QTest::addRow("misspelt convert format") << QStringList{"convert", "--format", "bf61"}
                                                 << "--format must be tf32, fp16, bf16";
        QTest::addRow("misspelt convert format, nearest") << QStringList{"convert", "--format", "bf61"} << "(did you mean 'bf16'?)";
        // Issue 11: bad input, exit 2 naming the key, before anything trains or allocates.
        QTest::addRow("subnormal initial scale") << QStringList{"train", "--loss-scale", "dynamic", "--init-scale", "1e-45"}
                                                 << "normal fp32 number";
        QTest::addRow("one width for two layers") << QStringList{"train", "--widths", "4"} << "widths: model small-cnn takes 2 widths, got 1";
        QTest::addRow("a model too large") << QStringList{"train", "--widths", "65536,65536"} << "parameters, more than this lab trains";
        QTest::addRow("record into a missing folder") << QStringList{"train", "--out", "/nonexistent/dir/r.json"}
                                                      << "the folder \"/nonexistent/dir\" does not exist";
        // Issue 37: every output is checked before training, not after it.
        QTest::addRow("weights into a missing folder") << QStringList{"train", "--save-weights", "/nonexistent/w.safetensors"}
                                                       << "--save-weights \"/nonexistent/w.safetensors\": the folder \"/nonexistent\" does not exist";
        // Issue 37: memory checked before the first step (65536 grew to 24 GB and was killed).
        QTest::addRow("a batch beyond this machine") << QStringList{"train", "--model", "seed-cnn", "--batch", "65536"}
                                                     << "needs at least 363.1 GiB";
        QTest::addRow("a batch beyond --memory-limit") << QStringList{"train", "--model", "seed-cnn", "--batch", "256", "--memory-limit", "512M"}
                                                       << "more than --memory-limit 512.0 MiB: the largest batch that fits is";
        QTest::addRow("a memory limit that is no size") << QStringList{"train", "--memory-limit", "4X"} << "--memory-limit: expected a size";
        QTest::addRow("batches into a folder") << QStringList{"train", "--write-batches", "/tmp"} << "--write-batches \"/tmp\": it is a folder";
        QTest::addRow("weights over the record") << QStringList{"train", "--out", "/tmp/plab-same.json", "--save-weights", "/tmp/../tmp/plab-same.json"}
                                                 << "--save-weights \"/tmp/../tmp/plab-same.json\" is the same file as --out";
    }
    void malformedOptionsAndConfigs()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, expected);
        if (!args.isEmpty()) args << "--data-dir" << dataDir_;
        const Result r = runPlab(args);
        QCOMPARE(r.exitCode, 2);
        QVERIFY(!r.crashed);
        QVERIFY2(r.err.contains(expected), qPrintable(r.err));
    }

    // Issue 11: numbers in a config the JSON library cannot hold, or that wrapped, are bad
    // input named as such (exit 2), not a library message (exit 1) or a wrong value.
    void configNumbersOutOfRange_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("mentions");
        QTest::addRow("lr 1e400") << QByteArray(R"({"lr": 1e400})") << "not valid JSON (number overflow";
        QTest::addRow("seed 2^64-1") << QByteArray(R"({"seed": 18446744073709551615})") << "got 18446744073709551615";
    }
    void configNumbersOutOfRange()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, mentions);
        const auto config = dir_.path() / "numbers.json";
        std::ofstream(config) << json.toStdString();
        const Result r = runPlab({"train", "--config", QString::fromStdString(config.string()), "--data-dir", dataDir_});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("numbers.json") && r.err.contains(mentions), qPrintable(r.err));
    }

    // Issue 37: an output that is an input (the config, the initial weights) is refused
    // before anything trains; the input is left as it was.
    void outputsNeverOverwriteInputs()
    {
        const auto config = dir_.path() / "cfg-in.json";
        std::ofstream(config) << R"({"max_steps": 2, "widths": [4, 8]})";
        const QString c = QString::fromStdString(config.string());
        const Result r = runPlab({"train", "--config", c, "--save-weights", c, "--data-dir", dataDir_, "--quiet"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("is the same file as --config, which the run reads"), qPrintable(r.err));
        std::ifstream in(config);
        QCOMPARE(std::string(std::istreambuf_iterator<char>(in), {}), std::string(R"({"max_steps": 2, "widths": [4, 8]})"));
    }

    // Issue 66, finding 10: past the file-size limit (ulimit -f) a write is an error said in
    // one line, not a SIGXFSZ that kills plab; the record on disk stays a whole record.
    void fileSizeLimitIsAClearError()
    {
        const fs::path out = dir_.path() / "limited.json";
        QStringList train = quickTrain();
        train << "--histogram-every" << "1" << "--out" << QString::fromStdString(out.string());
        QString command = QStringLiteral("ulimit -f 16; exec '%1'").arg(QStringLiteral(PLAB_CLI_PATH));
        for (const QString& a : train) command += QStringLiteral(" '%1'").arg(a);
        const Result r = runProgram(QStringLiteral("bash"), {QStringLiteral("-c"), command});
        QVERIFY2(!r.crashed, qPrintable(r.err));
        QVERIFY2(r.exitCode != 0 && r.exitCode < 128, qPrintable(QString::number(r.exitCode) + r.err));   // not killed by a signal
        QVERIFY2(r.err.contains(QStringLiteral("File too large")), qPrintable(r.err));
        QVERIFY(fs::exists(out));
        std::ifstream in(out);
        QVERIFY(nlohmann::json::accept(in));   // whole, as last written
    }

    // Issue 66, findings 3 and 10: a lesson's run ids choose no file to replace: a record of
    // that name already in --out-dir is left alone (the run takes a free name, said first);
    // an --out-dir that is a file is exit 2 naming it.
    void lessonRecordsNeverReplaceAFile()
    {
        const fs::path lesson = dir_.path() / "victim-lesson.json";
        std::ofstream(lesson) << R"({"format": 2, "title": "T", "question": "Q?",
            "runs": [{"id": "victim", "name": "v", "settings": {"widths": [4, 8], "batch": 16, "max_steps": 2, "threads": 1}}],
            "charts": ["loss"], "expect": [{"run": "victim", "metric": "steps", "op": "==", "value": 2, "backs": "It ran {victim.steps|int} steps."}],
            "explanation": "It ran {victim.steps|int} steps."})";
        const fs::path out = dir_.path() / "lesson-out";
        fs::create_directories(out);
        { std::ofstream(out / "victim.json") << "unrelated"; }
        const Result r = runPlab({"lesson", QString::fromStdString(lesson.string()), "--data-dir", dataDir_, "--quiet",
                                  "--out-dir", QString::fromStdString(out.string())});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err + r.out));
        std::ifstream kept(out / "victim.json");
        QCOMPARE(std::string(std::istreambuf_iterator<char>(kept), {}), std::string("unrelated"));
        QVERIFY(fs::exists(out / "victim-2.json"));
        QVERIFY2(r.err.contains(QStringLiteral("is there already")), qPrintable(r.err));
        const Result file = runPlab({"lesson", QString::fromStdString(lesson.string()), "--data-dir", dataDir_, "--quiet",
                                     "--out-dir", QString::fromStdString((out / "victim.json").string())});
        QCOMPARE(file.exitCode, 2);
        QVERIFY2(file.err.contains(QStringLiteral("--out-dir")) && file.err.contains(QStringLiteral("victim.json")) &&
                     file.err.contains(QStringLiteral("not a folder")) && file.err.trimmed().count('\n') == 0,
                 qPrintable(file.err));
    }

    // Issue 37: anything that is not a regular file is refused at once by name (a FIFO
    // blocked every reader forever; /dev/zero grew until the kernel killed the process).
    void nonRegularInputsAreRefusedAtOnce_data()
    {
        QTest::addColumn<QStringList>("args");   // FIFO is replaced by a named pipe
        QTest::addColumn<QString>("expected");
        QTest::addRow("config") << QStringList{"train", "--config", "FIFO"} << "it is a FIFO";
        QTest::addRow("initial weights") << QStringList{"train", "--init-weights", "FIFO"} << "it is a FIFO";
        QTest::addRow("batches") << QStringList{"train", "--read-batches", "FIFO"} << "it is a FIFO";
        QTest::addRow("batches /dev/zero") << QStringList{"train", "--read-batches", "/dev/zero"} << "it is a device";
        QTest::addRow("batches /dev/stdin") << QStringList{"train", "--read-batches", "/dev/stdin"} << "not a regular file";
        QTest::addRow("lesson --check") << QStringList{"lesson", "--check", "FIFO"} << "it is a FIFO";
        QTest::addRow("report") << QStringList{"report", "FIFO", "--html", "/tmp/plab-fifo-report.html"} << "it is a FIFO";
    }
    void nonRegularInputsAreRefusedAtOnce()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, expected);
        const auto fifo = dir_.path() / "a-fifo";
        if (!fs::exists(fifo)) QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        args.replaceInStrings(QStringLiteral("FIFO"), QString::fromStdString(fifo.string()));
        if (args.first() == QLatin1String("train")) args << "--data-dir" << dataDir_ << "--widths" << "4,8";
        const Result r = runProgram(QStringLiteral(PLAB_CLI_PATH), args, {}, QProcessEnvironment::systemEnvironment(), 20000);
        QVERIFY2(!r.timedOut, "plab waited on a FIFO or a device");
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(lastLine(r.err).contains(expected), qPrintable(r.err));   // after the data set's notice, if any
    }

    // Issue 37: equal sweep points are one run (its record listed once), and each point
    // writes weights of its own instead of every point overwriting one file.
    void sweepPointsAreDistinct()
    {
        const fs::path out = dir_.path() / "sweep-dups", weights = dir_.path() / "sweep-w.safetensors";
        const Result r = runPlab({"sweep", "--recipes", "amp-fp16,amp-fp16", "--loss-scale", "static:1024,static:1024.,dynamic",
                                  "--max-steps", "2", "--widths", "4,8", "--threads", "1", "--data-dir", dataDir_, "--quiet",
                                  "--out-dir", QString::fromStdString(out.string()),
                                  "--save-weights", QString::fromStdString(weights.string())});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QCOMPARE(r.err.count("is the same run as"), 4);   // of 6 points, 2 distinct
        std::vector<std::string> records, weightFiles;
        for (const auto& e : fs::directory_iterator(out))
            if (e.path().extension() == ".json") records.push_back(e.path().filename().string());
        for (const auto& e : fs::directory_iterator(dir_.path()))
            if (e.path().filename().string().rfind("sweep-w_", 0) == 0) weightFiles.push_back(e.path().filename().string());
        std::sort(records.begin(), records.end());
        std::sort(weightFiles.begin(), weightFiles.end());
        QCOMPARE(records, (std::vector<std::string>{"amp-fp16_ls-dynamic.json", "amp-fp16_ls-static-1024.json"}));
        QCOMPARE(weightFiles, (std::vector<std::string>{"sweep-w_amp-fp16_ls-dynamic.safetensors",
                                                         "sweep-w_amp-fp16_ls-static-1024.safetensors"}));
        QVERIFY(!fs::exists(weights));
    }

    // Issue 34: weights can be evaluated without training (`--epochs 0` and `--lr 0` were
    // refused). `plab eval --weights F` records a run of 0 steps with one evaluation at step
    // 0, whose accuracy and loss are those the training run measured with the same weights.
    void evalWithoutTraining()
    {
        const fs::path weights = dir_.path() / "eval-w.safetensors", trained = dir_.path() / "eval-trained.json",
                       evaluated = dir_.path() / "eval-only.json";
        const QStringList common{"--widths", "4,8", "--threads", "1", "--batch", "16", "--data-dir", dataDir_, "--quiet"};
        const Result train = runPlab(QStringList{"train", "--max-steps", "3", "--save-weights", QString::fromStdString(weights.string()),
                                                 "--out", QString::fromStdString(trained.string())} + common);
        QVERIFY2(train.exitCode == 0, qPrintable(train.err));
        const Result eval = runPlab(QStringList{"eval", "--weights", QString::fromStdString(weights.string()), "--out",
                                                QString::fromStdString(evaluated.string())} + common);
        QVERIFY2(eval.exitCode == 0, qPrintable(eval.err));
        const auto a = nlohmann::json::parse(std::ifstream(trained)), b = nlohmann::json::parse(std::ifstream(evaluated));
        QCOMPARE(b.at("summary").at("steps").get<int>(), 0);
        QCOMPARE(b.at("steps").size(), std::size_t{0});
        QCOMPARE(b.at("evals").size(), std::size_t{1});
        QCOMPARE(b.at("evals").at(0).at("step").get<int>(), 0);
        QCOMPARE(b.at("evals").at(0).at("test_accuracy"), a.at("evals").back().at("test_accuracy"));
        QCOMPARE(b.at("evals").at(0).at("test_loss"), a.at("evals").back().at("test_loss"));
        QCOMPARE(b.at("settings").at("epochs").get<int>(), 0);
        // --weights is required, and --epochs is not eval's to set.
        QCOMPARE(runPlab({"eval", "--data-dir", dataDir_}).exitCode, 2);
        QCOMPARE(runPlab({"train", "--epochs", "-1", "--data-dir", dataDir_}).exitCode, 2);
    }

    // Issue 34: a Slurm task runs on another node, maybe in another folder with another home:
    // the data folder (relative, or the per-user default when none is given) and every file
    // path are written absolute at submission, the data folder as this machine resolves it.
    void slurmPointsGetAbsolutePaths()
    {
        const fs::path job = dir_.path() / "slurm-abs", runs = dir_.path() / "slurm-abs-runs";
        const QString relativeData = QString::fromStdString(fs::relative(dataDir_.toStdString()).string());
        QVERIFY(!relativeData.startsWith(QLatin1Char('/')));
        const Result r = runPlab({"sweep", "--max-steps", "2", "--data-dir", relativeData, "--save-weights", "w.safetensors",
                                  "--quiet", "--out-dir", QString::fromStdString(runs.string()), "--slurm",
                                  QString::fromStdString(job.string())});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const auto settings = nlohmann::json::parse(std::ifstream(job / "settings" / "0.json"));
        const fs::path data = settings.at("data_dir").get<std::string>();
        QVERIFY2(data.is_absolute() && fs::equivalent(data, dataDir_.toStdString()), data.c_str());
        const fs::path weights = settings.at("save_weights").get<std::string>();
        QVERIFY2(weights.is_absolute() && weights.filename() == "w_fp32.safetensors", weights.c_str());
        QVERIFY2(r.err.contains(QStringLiteral("reads its data from ") + QString::fromStdString(data.string())), qPrintable(r.err));

        const Result defaults = runPlab({"sweep", "--max-steps", "2", "--quiet", "--out-dir",
                                         QString::fromStdString(runs.string()), "--slurm",
                                         QString::fromStdString((dir_.path() / "slurm-default").string())});
        QVERIFY2(defaults.exitCode == 0, qPrintable(defaults.err));
        const auto pinned = nlohmann::json::parse(std::ifstream(dir_.path() / "slurm-default" / "settings" / "0.json"));
        QVERIFY(fs::path(pinned.at("data_dir").get<std::string>()).is_absolute());   // not "" (each node's own default)
    }

    // Issue 34: seeds and learning rates are what people sweep first; `--seed 1,2` and
    // `--lr 0.001,0.01` were refused. Each is an axis: four runs, each record with its own
    // seed and learning rate, named so; a bad value names the flag.
    void sweepOverSeedsAndLearningRates()
    {
        const fs::path out = dir_.path() / "sweep-seeds";
        const Result r = runPlab({"sweep", "--recipes", "fp32", "--seed", "1,2", "--lr", "0.001,0.01", "--max-steps", "2",
                                  "--widths", "4,8", "--threads", "1", "--data-dir", dataDir_, "--quiet", "--out-dir",
                                  QString::fromStdString(out.string())});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        std::vector<std::string> records;
        for (const auto& e : fs::directory_iterator(out))
            if (e.path().extension() == ".json") records.push_back(e.path().filename().string());
        std::sort(records.begin(), records.end());
        QCOMPARE(records, (std::vector<std::string>{"fp32_lr0.001_s1.json", "fp32_lr0.001_s2.json", "fp32_lr0.01_s1.json",
                                                     "fp32_lr0.01_s2.json"}));
        // Issue 66, finding 9: a file name keeps the value's sign and exponent (lr 1e+3 had
        // been saved as ..._lr1e-3.json). Written as a Slurm job: nothing trains.
        const fs::path job = dir_.path() / "sweep-exponents";
        const Result named = runPlab({"sweep", "--recipes", "fp32", "--lr", "1e+3,1e-3", "--data-dir", dataDir_, "--out-dir",
                                      QString::fromStdString((dir_.path() / "sweep-exponent-runs").string()), "--slurm",
                                      QString::fromStdString(job.string())});
        QVERIFY2(named.exitCode == 0, qPrintable(named.err));
        QFile array(QString::fromStdString((job / "sweep.sbatch").string()));
        QVERIFY(array.open(QIODevice::ReadOnly));
        const QString script = QString::fromUtf8(array.readAll());
        QVERIFY2(script.contains(QStringLiteral("fp32_lr1e3.json")) && script.contains(QStringLiteral("fp32_lr1e-3.json")),
                 qPrintable(script));
        const auto record = nlohmann::json::parse(std::ifstream(out / "fp32_lr0.01_s2.json"));
        QCOMPARE(record.at("settings").at("seed").get<int>(), 2);
        QCOMPARE(record.at("settings").at("lr").get<double>(), 0.01);
        const Result bad = runPlab({"sweep", "--seed", "1,x", "--max-steps", "2", "--data-dir", dataDir_, "--quiet",
                                    "--out-dir", QString::fromStdString((dir_.path() / "sweep-bad").string())});
        QCOMPARE(bad.exitCode, 2);
        QVERIFY2(bad.err.contains("--seed"), qPrintable(bad.err));
    }

    void malformedConfigJson()
    {
        const auto config = dir_.path() / "broken.json";
        std::ofstream(config) << R"({"recipe": "amp-fp16", )";
        const Result r = runPlab({"train", "--config", QString::fromStdString(config.string()), "--data-dir", dataDir_});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("broken.json: not valid JSON"), qPrintable(r.err));
    }

    // Issue 11: --threads 256 hung in OpenBLAS's buffer allocation under a memory limit. The
    // backend uses at most one thread per logical core and plab says so.
    void threadsAreBoundedToTheMachine()
    {
        const Result r = runPlab({"train", "--threads", "256", "--max-steps", "2", "--widths", "4,8", "--batch", "16",
                                  "--quiet", "--data-dir", dataDir_});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.err.contains(QStringLiteral("notice: --threads 256: this machine has %1 logical cores; using %1")
                                    .arg(plab::usableCpuThreads(0))),
                 qPrintable(r.err));
    }

    // Issue 11: `plab report` crashed (stack overflow, exit 139) on a record nested 100,000
    // deep; it is refused on reading, exit 2, naming the file.
    void deeplyNestedRecordIsRefusedByReport()
    {
        const auto record = dir_.path() / "deep-record.json";
        std::ofstream(record) << "{\"format_version\": 1, \"x\": " << std::string(100000, '[') << std::string(100000, ']') << "}";
        const Result r = runPlab({"report", QString::fromStdString(record.string()), "--html",
                                  QString::fromStdString((dir_.path() / "deep.html").string())});
        QCOMPARE(r.exitCode, 2);
        QVERIFY(!r.crashed);
        QVERIFY2(r.err.contains("deep-record.json") && r.err.contains("nested"), qPrintable(r.err));
        QVERIFY(!fs::exists(dir_.path() / "deep.html"));
    }

    // Issue 68 item 5: an output path that cannot be written is bad usage (exit 2, naming the
    // flag and the folder), said before any record is read; so is an output over a record.
    void reportOutputsThatCannotBeWrittenAreUsageErrors()
    {
        const auto record = dir_.path() / "not-read.json";
        std::ofstream(record) << "{";   // never read: the outputs are checked first
        const Result missing = runPlab({"report", QString::fromStdString(record.string()), "--pdf", "/nonexistent/x.pdf"});
        QCOMPARE(missing.exitCode, 2);
        QVERIFY2(missing.err.contains("--pdf") && missing.err.contains("/nonexistent") && missing.err.contains("does not exist"),
                 qPrintable(missing.err));
        const Result over = runPlab({"report", QString::fromStdString(record.string()), "--html",
                                     QString::fromStdString(record.string())});
        QCOMPARE(over.exitCode, 2);
        QVERIFY2(over.err.contains("--html") && over.err.contains("the same file as the record"), qPrintable(over.err));
        std::ifstream kept(record);
        QCOMPARE(std::string(std::istreambuf_iterator<char>(kept), {}), std::string("{"));
    }

    // Issue 11: plab report accepted records that break the schema (62 of 85 damaged records
    // exited 0). Every field plab report reads, damaged in each way docs/RUN_RECORD.md rules
    // out (a wrong type, a value outside the field's documented range), is refused, naming
    // the file, the place and the field. The fields and their ranges are written here from
    // the schema document, not taken from the reader.
    void damagedRecordsAreRefusedByReport_data()
    {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("value");
        QTest::addColumn<QString>("mentions");
        // The five kinds the audit named, with the reader's words.
        QTest::addRow("batch -1") << "steps.0.batch" << "-1" << "step 1: \"batch\" must be a whole number of at least 1";
        QTest::addRow("string loss") << "steps.0.loss" << "\"low\"" << "step 1: \"loss\" must be a number";
        QTest::addRow("negative step") << "steps.0.step" << "-3" << "\"step\" must be a whole number of at least 0";
        QTest::addRow("steps 2^64-1") << "summary.steps" << "18446744073709551615" << "\"steps\"";
        QTest::addRow("unknown status") << "summary.status" << "\"exploded\"" << "is not a run status";
        // Counts, steps and epochs: whole numbers of at least 0.
        const char* counts[] = {"summary.steps", "summary.skipped_steps", "summary.weights_made_non_finite.conv1",
                                "steps.0.step", "steps.0.epoch", "evals.0.step", "evals.0.epoch", "telemetry.0.step",
                                "telemetry.0.layers.1.lost_updates", "telemetry.0.layers.1.nonzero_updates",
                                "telemetry.0.layers.1.non_finite_updates", "telemetry.0.layers.1.state_flushed",
                                "telemetry.0.layers.1.state_non_finite", "summary.optimizer_state_flushed.conv1",
                                "summary.optimizer_state_made_non_finite.conv1", "telemetry.0.layers.0.stats.count",
                                "telemetry.0.layers.0.stats.underflow", "memory.peak.total", "memory.peak.activations",
                                "memory.training_peak.total", "memory.evaluation_peak.total",
                                "memory.samples.0.step", "memory.samples.0.total", "memory.samples.0.bytes.3"};
        for (const char* f : counts)
            for (const char* v : {"-1", "2.5", "1e300", "\"7\"", "true"}) {
                const QString field = f;
                // bytes[i] is named by its array.
                const QString key = field.section('.', field.endsWith(".3") ? -2 : -1, field.endsWith(".3") ? -2 : -1);
                QTest::addRow("%s = %s", f, v) << field << v << ("\"" + key + "\"");
            }
        // A batch: a whole number of at least 1.
        for (const char* v : {"0", "-5", "\"16\""})
            QTest::addRow("steps.0.batch = %s", v) << "steps.0.batch" << v << "\"batch\"";
        // Fractions from 0 to 1.
        const char* fractions[] = {"summary.test_accuracy", "summary.best_test_accuracy", "summary.underflow_fraction.conv1",
                                   "summary.overflow_fraction.fc1", "summary.lost_update_fraction.conv2",
                                   "summary.activation_grad_underflow_fraction.loss", "evals.0.test_accuracy"};
        for (const char* f : fractions)
            for (const char* v : {"-0.1", "1.5", "\"0.9\"", "[0.5]"})
                QTest::addRow("%s = %s", f, v) << f << v << ("\"" + QString(f).section('.', -1) + "\"");
        // Numbers of at least 0: throughput, learning rate, time.
        for (const char* f : {"summary.images_per_second", "steps.0.lr", "steps.0.time_ms"})
            for (const char* v : {"-1", "\"fast\""})
                QTest::addRow("%s = %s", f, v) << f << v << ("\"" + QString(f).section('.', -1) + "\"");
        // Positive numbers: the loss scale of a step and of a telemetry entry.
        for (const char* f : {"steps.0.loss_scale", "telemetry.0.loss_scale"})
            for (const char* v : {"0", "-65536", "{}"})
                QTest::addRow("%s = %s", f, v) << f << v << ("\"" + QString(f).section('.', -1) + "\"");
        // Numbers (or null, documented for a loss that was not finite).
        QTest::addRow("evals.0.test_loss = \"x\"") << "evals.0.test_loss" << "\"x\"" << "\"test_loss\"";
        // Types of their own.
        QTest::addRow("summary.status = 42") << "summary.status" << "42" << "\"status\"";
        QTest::addRow("steps.0.skipped = 1") << "steps.0.skipped" << "1" << "\"skipped\"";
        QTest::addRow("summary.underflow_fraction = 0") << "summary.underflow_fraction" << "0" << "\"underflow_fraction\"";
        QTest::addRow("steps.0 = 5") << "steps.0" << "5" << "\"steps\"";
        QTest::addRow("evals = {}") << "evals" << "{}" << "\"evals\"";
        QTest::addRow("memory.samples.0.bytes = 7") << "memory.samples.0.bytes" << "7" << "\"bytes\"";
    }
    void damagedRecordsAreRefusedByReport()
    {
        QFETCH(QString, field);
        QFETCH(QString, value);
        QFETCH(QString, mentions);
        // amp-fp16 with a histogram every step, so that the summary has its per-layer values
        // and the telemetry its counts; an evaluation at the end.
        const auto good = dir_.path() / "good-for-damage.json";
        if (!fs::exists(good)) {
            const Result r = runPlab({"train", "--max-steps", "3", "--widths", "4,8", "--batch", "16", "--recipe",
                                      "amp-fp16", "--histogram-every", "1", "--quiet", "--data-dir", dataDir_, "--out",
                                      QString::fromStdString(good.string())});
            QCOMPARE(r.exitCode, 0);
            const Result intact = runPlab({"report", QString::fromStdString(good.string()), "--csv",
                                           QString::fromStdString((dir_.path() / "good-csv").string())});
            QCOMPARE(intact.exitCode, 0);
        }
        std::ifstream in(good);
        nlohmann::json record = nlohmann::json::parse(in);
        const QStringList path = field.split('.');
        nlohmann::json* at = &record;
        for (const QString& part : path) {
            bool isIndex = false;
            const int index = part.toInt(&isIndex);
            // The field must be in the good record: damaging a field it lacks would add one.
            if (isIndex) {
                QVERIFY2(at->is_array() && static_cast<std::size_t>(index) < at->size(), qPrintable(field));
                at = &(*at)[static_cast<std::size_t>(index)];
            } else {
                QVERIFY2(at->is_object() && at->contains(part.toStdString()), qPrintable(field));
                at = &(*at)[part.toStdString()];
            }
        }
        *at = nlohmann::json::parse(value.toStdString());
        const auto damaged = dir_.path() / "damaged.json";
        std::ofstream(damaged) << record.dump();
        const Result r = runPlab({"report", QString::fromStdString(damaged.string()), "--csv",
                                  QString::fromStdString((dir_.path() / "damaged-csv").string())});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("damaged.json") && r.err.contains(mentions), qPrintable(r.err));
    }

    // Issue 11: a config nested 100,000 deep crashed plab (stack overflow in the message's
    // dump()); it is refused on reading, exit 2, naming the file and the limit.
    void deeplyNestedConfigIsRefused()
    {
        const auto config = dir_.path() / "deep.json";
        std::ofstream(config) << "{\"batch\":" << std::string(100000, '[') << std::string(100000, ']') << "}";
        const Result r = runPlab({"train", "--config", QString::fromStdString(config.string()), "--data-dir", dataDir_});
        QCOMPARE(r.exitCode, 2);
        QVERIFY(!r.crashed);
        QVERIFY2(r.err.contains("deep.json") && r.err.contains("nested"), qPrintable(r.err));
    }

    void convertPrintsValueBitsAndClass()
    {
        const Result r = runPlab({"convert", "--format", "fp16"}, "1\n65520\n0x33800000\n");
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(r.out, QString("1\t0x3c00\tnormal\ninf\t0x7c00\tinf\n6e-08\t0x0001\tsubnormal\n"));
        const Result bad = runPlab({"convert", "--format", "bf16"}, "1\nabc\n");
        QCOMPARE(bad.exitCode, 2);
        QVERIFY2(bad.err.contains("line 2"), qPrintable(bad.err));
        // NVFP4 through the command line: a tensor amax of 6 gives S_enc = 448, as for the line's own.
        const Result nv = runPlab({"convert", "--format", "nvfp4", "--tensor-amax", "6"}, "6 0.3\n");
        QCOMPARE(nv.exitCode, 0);
        QCOMPARE(nv.out, QString("tensor scale\t448\nblock scale\t448\t0x7e\n6\t6\t0x07\n0.5\t0.5\t0x01\n"));
        for (const char* amax : {"0", "-1", "abc", "1e39"}) {
            const Result wrong = runPlab({"convert", "--format", "nvfp4", "--tensor-amax", amax}, "1\n");
            QCOMPARE(wrong.exitCode, 2);
            QVERIFY2(wrong.err.contains("--tensor-amax: must be a positive finite number"), qPrintable(wrong.err));
        }
        const Result elsewhere = runPlab({"convert", "--format", "e4m3", "--tensor-amax", "6"}, "1\n");
        QCOMPARE(elsewhere.exitCode, 2);
        QVERIFY2(elsewhere.err.contains("--tensor-amax applies to --format nvfp4 only"), qPrintable(elsewhere.err));
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"

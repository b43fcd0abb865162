// Tests of lessons as data (engine/lesson, issue 10): format 2 loads and round-trips,
// format 1 still loads, a bad lesson is refused with one sentence naming the file and the
// key, metrics read the documented record fields (checked against records written by hand
// and against the formats' definitions), expectations are judged as documented (NaN never
// holds, a run that has not finished is "not measured"), placeholders are filled, and
// every sentence of an explanation must be backed. Also the size- and depth-limited JSON
// reader every lesson goes through (issue 11).
// links: plab_lesson plab_json

#include "error.h"
#include "json/json_input.h"
#include "lesson/lesson.h"
#include "lesson/lesson_check.h"
#include "lesson/lesson_metrics.h"
#include "lesson/lesson_text.h"

#include <QTest>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sys/stat.h>
#include <nlohmann/json.hpp>

using namespace plab;
using nlohmann::json;

namespace {

void writeText(const std::filesystem::path& file, const std::string& text)
{
    std::ofstream(file, std::ios::binary) << text;
}

// A small valid lesson: two small-cnn runs, telemetry every 25 steps, 100 steps each.
json baseLesson()
{
    return json::parse(R"({
      "format": 2, "title": "T", "question": "Q?",
      "runs": [
        {"id": "off", "name": "no scaling", "settings": {"recipe": "amp-fp16", "loss_scale": "off", "max_steps": 100, "histogram_every": 25}},
        {"id": "dyn", "name": "dynamic", "settings": {"recipe": "amp-fp16", "max_steps": 100, "histogram_every": 25}}
      ],
      "charts": ["histogram", "loss"],
      "view": {"watch": "off", "overlay": ["dyn"], "histogram": {"layer": "loss", "kind": "activation_grad", "step": 100},
               "underflow": {"kind": "activation_grad"}},
      "expect": [
        {"run": "off", "metric": "activation_grad_underflow:loss", "op": ">", "than": "dyn", "factor": 10,
         "backs": "Without scaling {off.activation_grad_underflow:loss|pct} were flushed."},
        {"run": "off", "metric": "test_accuracy", "op": "within", "than": "dyn", "value": 0.01,
         "backs": "Accuracy was {off.test_accuracy|pct2} and {dyn.test_accuracy|pct2}."}
      ],
      "background": [{"sentence": "Scaling multiplies the loss by S.", "source": "the lab notes"}],
      "predict": {"prompt": "How many?", "choices": ["none", "some"], "answer": "{off.activation_grad_underflow:loss|pct}"},
      "explanation": "Without scaling {off.activation_grad_underflow:loss|pct} were flushed. Scaling multiplies the loss by S. Accuracy was {off.test_accuracy|pct2} and {dyn.test_accuracy|pct2}."
    })");
}

// A record written by hand with the fields of docs/RUN_RECORD.md.
json record(double accuracy, double lossUnderflow, std::vector<json> losses, const char* status = "completed")
{
    json steps = json::array();
    for (std::size_t i = 0; i < losses.size(); ++i)
        steps.push_back({{"step", i + 1}, {"loss", losses[i]}, {"loss_scale", std::ldexp(1.0, 16 - static_cast<int>(i))}});
    return {
        {"format_version", 1},
        {"settings", json::object()},
        {"steps", steps},
        {"telemetry", json::array({
            {{"step", 1}, {"layers", json::array({
                {{"layer", "loss"}, {"kind", "activation_grad"}, {"stats", {{"count", 100}, {"zeros_in", 20}, {"underflow", 8}, {"nan", 0}, {"inf_in", 0}}}},
                {{"layer", "fc1"}, {"kind", "weight_grad"}, {"stats", {{"count", 50}, {"zeros_in", 5}, {"underflow", 3}}},
                 {"lost_updates", 10}, {"nonzero_updates", 40}, {"non_finite_updates", 2}},
                {{"layer", "conv1"}, {"kind", "weight_grad"}, {"stats", {{"count", 10}, {"zeros_in", 1}, {"underflow", 0}}},
                 {"lost_updates", 0}, {"nonzero_updates", 9}, {"non_finite_updates", 1}}})}}})},
        {"memory", {{"peak", {{"activations", 300}, {"total", 1000}}},
                    {"training_peak", {{"activations", 100}, {"total", 700}}},
                    {"evaluation_peak", {{"activations", 300}, {"total", 1000}}}}},
        {"summary", {{"status", status}, {"test_accuracy", accuracy}, {"steps", losses.size()}, {"skipped_steps", 1},
                     {"activation_grad_underflow_fraction", {{"loss", lossUnderflow}}},
                     {"weights_made_non_finite", {{"fc1", 2}, {"conv1", 1}}}}},
    };
}

// The record as the lessons read it.
RunRecord typed(const json& record) { return readRunRecord(record, "test record"); }

QString refusal(const json& lesson)
{
    try {
        parseLesson(lesson.dump(), "lesson bad.json");
    } catch (const InputError& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

}  // namespace

class TestLesson : public QObject {
    Q_OBJECT
private slots:
    // Issue 67, item 5: a shipped lesson cites only files the repository has (lesson 01 had
    // cited a design document that is not in it): every path-like name in a
    // lesson's texts and sources (dir/file.ext, or a bare NAME.md) exists in the source tree.
    void shippedLessonsCiteOnlyFilesThatExist()
    {
        const std::filesystem::path root = PLAB_SOURCE_DIR;
        const QRegularExpression cited(QStringLiteral(R"((?:\b(?:docs|engine|tests|resources|scripts|bench|ui|app|python)/[\w./-]*\w\.\w+)|(?:\b[A-Z][A-Z_]+\.md\b))"));
        int checked = 0;
        for (const auto& entry : std::filesystem::directory_iterator(root / "resources" / "lessons")) {
            if (entry.path().extension() != ".json") continue;
            std::ifstream in(entry.path());
            const QString text = QString::fromStdString(std::string(std::istreambuf_iterator<char>(in), {}));
            for (auto m = cited.globalMatch(text); m.hasNext();) {
                const std::string name = m.next().captured(0).toStdString();
                const bool exists = std::filesystem::exists(root / name) || std::filesystem::exists(root / "docs" / name);
                QVERIFY2(exists, (entry.path().filename().string() + " cites " + name + ", which the repository lacks").c_str());
                ++checked;
            }
        }
        QVERIFY(checked > 0);
    }

    void formatTwoLoadsAndRoundTrips()
    {
        const Lesson a = parseLesson(baseLesson().dump(), "lesson t.json");
        QCOMPARE(a.runs.size(), std::size_t{2});
        QCOMPARE(a.runs[1].id, std::string("dyn"));
        QCOMPARE(a.watchedRun(), 0);
        QVERIFY(!a.view.overlayAll);
        QCOMPARE(a.view.histogram->step, std::int64_t{100});
        QCOMPARE(a.expectations.size(), std::size_t{2});
        QCOMPARE(a.expectations[0].factor, 10.0);
        QCOMPARE(a.expectations[0].than->metric, std::string("activation_grad_underflow:loss"));
        QVERIFY(a.predict && a.predict->choices.size() == 2);
        // File > Save Lesson writes lessonToJson: the same lesson loads back.
        const Lesson b = parseLesson(lessonToJson(a).dump(), "lesson t.json");
        QCOMPARE(b.runs[0].settings, a.runs[0].settings);
        QCOMPARE(b.view.histogram->layer, a.view.histogram->layer);
        QCOMPARE(b.view.overlay, a.view.overlay);
        QCOMPARE(b.expectations.size(), a.expectations.size());
        QCOMPARE(b.expectations[1].value, a.expectations[1].value);
        QCOMPARE(b.explanation, a.explanation);
        QCOMPARE(b.background.size(), std::size_t{1});
    }

    void formatOneStillLoads()
    {
        const Lesson l = parseLesson(R"({"format": 1, "title": "t", "question": "q", "explanation": "e.",
            "runs": [{"name": "a", "settings": {"max_steps": 5}}, {"name": "b", "settings": {"max_steps": 5}}],
            "charts": ["loss"]})", "lesson old.json");
        QCOMPARE(l.format, 1);
        QCOMPARE(l.runs[1].id, std::string("run2"));
        QCOMPARE(l.watchedRun(), 1);   // the last run, as before
        QVERIFY(l.view.overlayAll);
    }

    void badLessonsAreRefused_data()
    {
        QTest::addColumn<QString>("path");   // JSON pointer to change
        QTest::addColumn<QString>("value");  // new value as JSON ("DELETE" removes it)
        QTest::addColumn<QString>("mentions");
        QTest::addRow("unknown metric") << "/expect/0/metric" << R"("underfloww:loss")" << "unknown metric \"underfloww:loss\"";
        QTest::addRow("metric argument count") << "/expect/0/metric" << R"("lost_updates")" << "takes LAYER";
        QTest::addRow("run id out of range") << "/expect/0/run" << R"("zzz")" << "no run has the id \"zzz\"";
        QTest::addRow("than names no run") << "/expect/0/than" << R"("run9")" << "no run has the id \"run9\"";
        QTest::addRow("unknown op") << "/expect/0/op" << R"("≈")" << "\"op\" must be one of";
        QTest::addRow("value and than") << "/expect/0/value" << "3" << "not both";
        QTest::addRow("unclosed placeholder") << "/explanation" << R"("Flushed {off.test_accuracy|pct.")" << "without its \"}\"";
        QTest::addRow("unknown style") << "/explanation" << R"("A {off.test_accuracy|percent}.")" << "unknown style \"percent\"";
        QTest::addRow("placeholder metric") << "/explanation" << R"("A {off.test_acc}.")" << "unknown metric \"test_acc\"";
        QTest::addRow("placeholder run") << "/explanation" << R"("A {nope.test_accuracy}.")" << "no run has the id \"nope\"";
        QTest::addRow("stray brace") << "/explanation" << R"("A } b.")" << "without its \"{\"";
        QTest::addRow("view layer the model lacks") << "/view/histogram/layer" << R"("fc3")"
                                                    << "has no layer \"fc3\"";
        QTest::addRow("view step not a telemetry step") << "/view/histogram/step" << "30" << "not a telemetry step";
        QTest::addRow("view kind") << "/view/underflow/kind" << R"("weights")" << "\"kind\" must be";
        QTest::addRow("watch names no run") << "/view/watch" << R"("x")" << "\"watch\": no run has the id \"x\"";
        QTest::addRow("snapshot layer") << "/expect/0/metric" << R"("snapshot_underflow:fc9,weight_grad,25")" << "no layer \"fc9\"";
        QTest::addRow("snapshot step") << "/expect/0/metric" << R"("snapshot_underflow:fc1,weight_grad,7")" << "not a telemetry step";
        QTest::addRow("snapshots kind") << "/expect/0/metric" << R"("snapshots_overflow:fc1,gradient")" << "unknown tensor kind";
        QTest::addRow("snapshots layer") << "/expect/0/metric" << R"("snapshots_overflow:fc9,weight_grad")" << "no layer \"fc9\"";
        QTest::addRow("format fact with a run") << "/expect/0/metric" << R"("format_max:fp16")" << "takes no run";
        QTest::addRow("unknown format") << "/expect/0" << R"({"metric": "format_max:fp12", "op": ">", "value": 1, "backs": "x."})"
                                        << "unknown format \"fp12\"";
        QTest::addRow("memory category") << "/expect/0/metric" << R"("memory_peak:cache")" << "unknown memory category";
        QTest::addRow("unknown key") << "/views" << "{}" << "unknown key \"views\"";
        QTest::addRow("duplicate run id") << "/runs/1/id" << R"("off")" << "used twice";
        QTest::addRow("prediction without placeholder") << "/predict/answer" << R"("42")" << "must hold a placeholder";
        QTest::addRow("one choice") << "/predict/choices" << R"(["a"])" << "at least two";
        QTest::addRow("format 3") << "/format" << "3" << "\"format\" must be 1 or 2";
        QTest::addRow("missing backs") << "/expect/1/backs" << "DELETE" << "\"backs\" is missing";
        // Issue 37: a lesson from someone else names no output and no input outside its folder.
        QTest::addRow("save_weights") << "/runs/0/settings/save_weights" << R"("/home/u/.bashrc")"
                                      << "run 1: \"save_weights\" names an output file";
        QTest::addRow("write_batches") << "/runs/1/settings/write_batches" << R"("b.txt")"
                                       << "run 2: \"write_batches\" names an output file";
        QTest::addRow("out") << "/runs/0/settings/out" << R"("r.json")" << "\"out\" names an output file";
        QTest::addRow("data_dir") << "/runs/0/settings/data_dir" << R"("/dev")" << "\"data_dir\" names a folder";
        QTest::addRow("absolute input") << "/runs/0/settings/init_weights" << R"("/etc/passwd")"
                                        << "\"init_weights\" \"/etc/passwd\": must be a file beside the lesson";
        QTest::addRow("input above the folder") << "/runs/1/settings/read_batches" << R"("sub/../../b.txt")"
                                                << "\"read_batches\" \"sub/../../b.txt\": must stay beside the lesson";
        QTest::addRow("input in home") << "/runs/0/settings/read_batches" << R"("~/b.txt")" << "not a path of one machine";
        QTest::addRow("input not text") << "/runs/0/settings/init_weights" << "7" << "\"init_weights\" 7: must be the name";
        QTest::addRow("hours of training") << "/runs/0/settings" << R"({"epochs": 100000})"
                                           << "more than 2000000 images in all";
        // Issue 66, finding 6: few images, but a model a thousand times the work of the
        // lessons' (and evaluations count): refused saying by how much.
        QTest::addRow("hours of a wide model")
            << "/runs/0/settings" << R"({"model": "deep-mlp", "widths": [4096, 16], "batch": 1000, "epochs": 40, "max_steps": 2000})"
            << "multiply-adds, 116.3 times the budget of 1.3e+13";
        QTest::addRow("evaluations count")
            << "/runs/0/settings" << R"({"model": "deep-mlp", "widths": [4096, 16], "batch": 1, "max_steps": 100, "eval_every": 1})"
            << "times the budget";
        QTest::addRow("a long control-laden metric") << "/expect/0/metric" << ("\"" + QString(5000, QLatin1Char('m')) + "\\u001b[2J\"")
                                                     << "unknown metric \"mmmm";
    }
    void badLessonsAreRefused()
    {
        QFETCH(QString, path);
        QFETCH(QString, value);
        QFETCH(QString, mentions);
        json lesson = baseLesson();
        const json::json_pointer ptr(path.toStdString());
        if (value == QLatin1String("DELETE")) lesson[ptr.parent_pointer()].erase(ptr.back());
        else lesson[ptr] = json::parse(value.toStdString());
        const QString why = refusal(lesson);
        QVERIFY2(why.startsWith(QStringLiteral("lesson bad.json: ")), qPrintable(why));
        QVERIFY2(why.contains(mentions), qPrintable(why));
        QVERIFY2(why.endsWith(QLatin1Char('.')) && !why.contains(QLatin1Char('\n')), qPrintable(why));
        // A value is quoted as a short excerpt, never whole or with its control characters.
        QVERIFY2(why.size() < 400, qPrintable(why.left(400)));
        QVERIFY2(!why.contains(QChar(0x1b)), qPrintable(why));
    }

    // Issue 37: the inputs a lesson names are files beside it, regular files only; the
    // lesson file itself too (a FIFO is refused at once, never waited on).
    void lessonInputsStayBesideTheLesson()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::filesystem::path folder = dir.path().toStdString();
        std::filesystem::create_directory(folder / "w");
        writeText(folder / "w" / "init.safetensors", "x");
        json lesson = baseLesson();
        lesson["runs"][0]["settings"]["init_weights"] = "w/init.safetensors";
        writeText(folder / "l.json", lesson.dump());
        const Lesson l = loadLessonFile(folder / "l.json");
        QCOMPARE(l.runs[0].settings.initWeights, (folder / "w" / "init.safetensors").string());
        QVERIFY(std::filesystem::path(l.runs[0].settings.initWeights).is_absolute());
        // Parsed from text alone (no folder), the name is kept as written, for the caller to resolve.
        QCOMPARE(parseLesson(lesson.dump(), "lesson t.json").runs[0].settings.initWeights, std::string("w/init.safetensors"));

        const auto refusalOf = [&](const std::filesystem::path& file) {
            try {
                loadLessonFile(file);
            } catch (const InputError& e) {
                return QString::fromUtf8(e.what());
            }
            return QString();
        };
        lesson["runs"][0]["settings"]["init_weights"] = "missing.safetensors";
        writeText(folder / "l.json", lesson.dump());
        QVERIFY2(refusalOf(folder / "l.json").contains("run 1: \"init_weights\" \"missing.safetensors\": no such file"),
                 qPrintable(refusalOf(folder / "l.json")));
        QVERIFY(::mkfifo((folder / "fifo").c_str(), 0600) == 0);
        lesson["runs"][0]["settings"]["init_weights"] = "fifo";
        writeText(folder / "l.json", lesson.dump());
        QVERIFY2(refusalOf(folder / "l.json").contains("FIFO"), qPrintable(refusalOf(folder / "l.json")));
        lesson["runs"][0]["settings"]["init_weights"] = "w";
        writeText(folder / "l.json", lesson.dump());
        QVERIFY2(refusalOf(folder / "l.json").contains("a folder"), qPrintable(refusalOf(folder / "l.json")));
        // The lesson file itself: a FIFO, a device, a folder.
        QVERIFY2(refusalOf(folder / "fifo").contains("lesson fifo: it is a FIFO"), qPrintable(refusalOf(folder / "fifo")));
        QVERIFY2(refusalOf("/dev/zero").contains("it is a device"), qPrintable(refusalOf("/dev/zero")));
        QVERIFY2(refusalOf(folder / "w").contains("it is a folder"), qPrintable(refusalOf(folder / "w")));

        // Issue 66, finding 8: checked after resolving links. A link beside the lesson to a
        // file elsewhere is refused, and the message shows nothing of that file; a link to a
        // file inside the lesson's folder is read where it leads.
        QTemporaryDir elsewhere;
        QVERIFY(elsewhere.isValid());
        const std::filesystem::path secret = elsewhere.path().toStdString() + "/shadow";
        writeText(secret, "root:$6$secret:19000:0:99999:7:::\n");
        std::filesystem::create_symlink(secret, folder / "b.txt");
        lesson["runs"][0]["settings"].erase("init_weights");
        lesson["runs"][0]["settings"]["read_batches"] = "b.txt";
        writeText(folder / "l.json", lesson.dump());
        const QString escaped = refusalOf(folder / "l.json");
        QVERIFY2(escaped.contains("\"read_batches\" \"b.txt\": it leads outside the lesson's folder"), qPrintable(escaped));
        QVERIFY2(!escaped.contains("root") && !escaped.contains("secret"), qPrintable(escaped));
        std::filesystem::create_directory(folder / "sub");
        std::filesystem::create_symlink(folder / "w" / "init.safetensors", folder / "sub" / "inside");
        lesson["runs"][0]["settings"].erase("read_batches");
        lesson["runs"][0]["settings"]["init_weights"] = "sub/inside";
        writeText(folder / "l.json", lesson.dump());
        QCOMPARE(loadLessonFile(folder / "l.json").runs[0].settings.initWeights,
                 std::filesystem::canonical(folder / "w" / "init.safetensors").string());

        // A batch file's lines are what a run trains: its work is counted from the file (a
        // wide model for 200 steps of batch 1 planned, but 200 lines of 1,000 samples).
        std::string wide;
        for (int line = 0; line < 200; ++line) {
            for (int i = 0; i < 1000; ++i) wide += std::to_string(i) + (i + 1 < 1000 ? " " : "\n");
        }
        writeText(folder / "wide.txt", wide);
        lesson["runs"][0]["settings"] = {{"model", "deep-mlp"}, {"widths", {4096, 16}}, {"batch", 1}, {"max_steps", 200},
                                         {"read_batches", "wide.txt"}};
        writeText(folder / "l.json", lesson.dump());
        const QString wideWhy = refusalOf(folder / "l.json");
        QVERIFY2(wideWhy.contains("times the budget") && wideWhy.contains("with its batch file"), qPrintable(wideWhy));
    }

    // What a lesson is saved as names no file of this machine, and reads back.
    void savedLessonsNameNoFileOfThisMachine()
    {
        Lesson l = parseLesson(baseLesson().dump(), "lesson t.json");
        l.runs[0].settings.saveWeights = "/home/u/runs/run-1.safetensors";
        l.runs[0].settings.writeBatches = "/tmp/b.txt";
        l.runs[1].settings.dataDir = "/home/u/data";
        const json saved = lessonToJson(l);
        for (const auto& run : saved.at("runs"))
            for (const char* key : {"save_weights", "write_batches", "data_dir", "init_weights", "read_batches"})
                QVERIFY2(!run.at("settings").contains(key), key);
        QCOMPARE(parseLesson(saved.dump(), "lesson t.json").runs.size(), std::size_t{2});
    }

    void deepOrHugeJsonIsRefusedNotCrashed()
    {
        const std::string deep = "{\"format\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
        QString why;
        try {
            parseLesson(deep, "lesson deep.json");
        } catch (const InputError& e) {
            why = QString::fromUtf8(e.what());
        }
        QVERIFY2(why.startsWith(QStringLiteral("lesson deep.json: JSON nested more than")), qPrintable(why));
        try {
            parseJsonInput(std::string(2000, ' ') + "1", "config big.json", {1000, 8});
            QFAIL("a document over the size limit was read");
        } catch (const InputError& e) {
            QVERIFY(QString::fromUtf8(e.what()).contains(QStringLiteral("too large")));
        }
        // Excerpts are short and escaped.
        const json v = {{"a", std::string("x\x01y")}, {"b", json::parse("[[[[[[1]]]]]]")}, {"c", std::string(500, 'z')}};
        const std::string e = jsonExcerpt(v, 40);
        QVERIFY2(e.size() <= 40 + 3, e.c_str());
        QVERIFY(e.find("\\u0001") != std::string::npos);
    }

    void metricsReadTheRecord()
    {
        const json doc = record(0.9535, 0.25, {2.0, 1.0, 0.5, nullptr});
        const RunRecord r = typed(doc);
        const auto v = [&](const char* m) { return evaluateMetric(m, &r).value_or(-1.0); };
        QCOMPARE(v("test_accuracy"), 0.9535);
        QCOMPARE(v("skipped_steps"), 1.0);
        QCOMPARE(v("loss_mean_first:2"), 1.5);
        QVERIFY(std::isnan(v("loss_mean_last:2")));   // a NaN loss makes the mean NaN
        QCOMPARE(v("loss_nonfinite_steps"), 1.0);
        QCOMPARE(v("loss_scale_final"), std::ldexp(1.0, 13));
        QCOMPARE(v("loss_scale_max"), std::ldexp(1.0, 16));
        QCOMPARE(v("loss_scale_growths"), 0.0);   // it only fell
        json grew = doc;
        for (const double scale : {8.0, 16.0, 16.0, 8.0, 16.0}) grew["steps"].push_back({{"loss", 0.1}, {"loss_scale", scale}});
        const RunRecord grown = typed(grew);
        QCOMPARE(evaluateMetric("loss_scale_growths", &grown).value_or(-1.0), 2.0);   // 2^13 -> 8 falls; 8 -> 16 twice
        QCOMPARE(v("activation_grad_underflow:loss"), 0.25);
        // A run that accumulates gradients: the summary's share; one that does not has none.
        json accumulating = doc;
        accumulating["summary"]["accumulation_lost_fraction"] = {{"fc1", 0.125}};
        const RunRecord accumulated = typed(accumulating);
        QCOMPARE(evaluateMetric("accumulation_lost:fc1", &accumulated).value_or(-1.0), 0.125);
        QVERIFY(!evaluateMetric("accumulation_lost:fc1", &r));
        QCOMPARE(v("weights_made_non_finite:all"), 3.0);
        QCOMPARE(v("snapshot_underflow:loss,activation_grad,1"), 8.0 / 80.0);   // underflow / nonzero finite
        QCOMPARE(v("snapshot_underflow:fc1,weight_grad,last"), 3.0 / 45.0);
        QCOMPARE(v("snapshot_lost_updates:fc1,1"), 10.0 / 40.0);
        QCOMPARE(v("snapshot_non_finite_updates:all,1"), 3.0);
        QCOMPARE(v("snapshot_zero_grads:fc1,1"), 8.0);   // zero before rounding + flushed
        QCOMPARE(v("memory_training_peak:activations"), 100.0);
        QCOMPARE(v("memory_evaluation_peak:total"), 1000.0);
        // Over every telemetry step: the counts summed, then the share (issue 38, lesson 14).
        json two = doc;
        two["telemetry"].push_back({{"step", 25}, {"layers", json::array({
            {{"layer", "loss"}, {"kind", "activation_grad"},
             {"stats", {{"count", 60}, {"zeros_in", 10}, {"underflow", 2}, {"overflow", 5}, {"nan", 0}, {"inf_in", 0}}}}})}});
        const RunRecord twoSnapshots = typed(two);
        QCOMPARE(evaluateMetric("snapshots_underflow:loss,activation_grad", &twoSnapshots).value_or(-1.0), (8.0 + 2.0) / (80.0 + 50.0));
        QCOMPARE(evaluateMetric("snapshots_overflow:loss,activation_grad", &twoSnapshots).value_or(-1.0), 5.0 / 130.0);
        // The counts behind those shares, so a claim on a small population can name them.
        QCOMPARE(evaluateMetric("snapshots_underflow_count:loss,activation_grad", &twoSnapshots).value_or(-1.0), 8.0 + 2.0);
        QCOMPARE(evaluateMetric("snapshots_overflow_count:loss,activation_grad", &twoSnapshots).value_or(-1.0), 5.0);
        QCOMPARE(evaluateMetric("snapshots_nonzero:loss,activation_grad", &twoSnapshots).value_or(-1.0), 80.0 + 50.0);
        QCOMPARE(v("snapshots_underflow:loss,activation_grad"), 8.0 / 80.0);   // one snapshot: as at that step
        // The largest value's bound: the upper edge of the highest nonzero bin of any step.
        json seen = doc;
        seen["telemetry"].push_back({{"step", 50}, {"layers", json::array({
            {{"layer", "fc1"}, {"kind", "activation"}, {"histogram", {{"first_exponent", 14}, {"counts", {3, 0, 2, 0}}}}}})}});
        seen["telemetry"].push_back({{"step", 75}, {"layers", json::array({
            {{"layer", "fc1"}, {"kind", "activation"}, {"histogram", {{"first_exponent", -3}, {"counts", {1}}}}}})}});
        const RunRecord seenRecord = typed(seen);
        QCOMPARE(evaluateMetric("snapshots_largest:fc1,activation", &seenRecord).value_or(-1.0), std::ldexp(1.0, 17));
        // Over every step of the run (the summary's run totals), not only the snapshots'.
        std::string why;
        QVERIFY(!evaluateMetric("run_overflow:loss,activation_grad", &r, &why));   // an older record: none
        QVERIFY2(QString::fromStdString(why).contains(QStringLiteral("no run totals")), why.c_str());
        json totals = doc;
        totals["summary"]["run_rounding"] = json::array({
            {{"layer", "loss"}, {"kind", "activation_grad"},
             {"stats", {{"count", 400}, {"zeros_in", 100}, {"underflow", 30}, {"overflow", 6}, {"nan", 0}, {"inf_in", 0}}}},
            {{"layer", "fc1"}, {"kind", "activation"}, {"stats", {{"count", 50}, {"zeros_in", 0}, {"underflow", 0}}}}});
        const RunRecord withTotals = typed(totals);
        QCOMPARE(evaluateMetric("run_overflow:loss,activation_grad", &withTotals).value_or(-1.0), 6.0 / 300.0);
        QCOMPARE(evaluateMetric("run_underflow:loss,activation_grad", &withTotals).value_or(-1.0), 30.0 / 300.0);
        QCOMPARE(evaluateMetric("run_overflow:fc1,activation", &withTotals).value_or(-1.0), 0.0);
        QVERIFY(!evaluateMetric("run_overflow:fc1,weight_grad", &withTotals, &why));
        QVERIFY2(QString::fromStdString(why).contains(QStringLiteral("were rounded in this run")), why.c_str());
        // A file from someone else: each malformed entry is one clear refusal.
        const json okStats = {{"count", 10}, {"zeros_in", 2}, {"underflow", 1}, {"overflow", 1}};
        for (const json& bad : {json::array({{{"layer", "fc1"}, {"kind", "gradient"}, {"stats", okStats}}}),
                                json::array({{{"kind", "activation"}, {"stats", okStats}}}),
                                json::array({{{"layer", "fc1"}, {"kind", "activation"}}}),
                                json::array({{{"layer", "fc1"}, {"kind", "activation"},
                                              {"stats", {{"count", 10}, {"overflow", 50}}}}}),
                                json::array({{{"layer", "fc1"}, {"kind", "activation"}, {"stats", okStats}},
                                             {{"layer", "fc1"}, {"kind", "activation"}, {"stats", okStats}}}),
                                // Issue 66, finding 9: four counts of 2^62 wrap a 64-bit sum to 0.
                                json::array({{{"layer", "fc1"}, {"kind", "activation"},
                                              {"stats", {{"count", 10}, {"zeros_in", std::uint64_t{1} << 62},
                                                         {"nan", std::uint64_t{1} << 62}, {"inf_in", std::uint64_t{1} << 62},
                                                         {"underflow", std::uint64_t{1} << 62}}}}}),
                                json("everything")}) {
            json badTotals = doc;
            badTotals["summary"]["run_rounding"] = bad;
            QVERIFY_THROWS_EXCEPTION(InputError, typed(badTotals));
        }
        json pastTheEnd = totals;   // totals said to reach past the run's steps: refused
        pastTheEnd["summary"]["steps"] = 4;
        pastTheEnd["summary"]["run_rounding_through_step"] = 5;
        QVERIFY_THROWS_EXCEPTION(InputError, typed(pastTheEnd));
        // Totals that stop short of the run's steps (a record cut short) back no claim.
        json shortTotals = totals;
        shortTotals["summary"]["run_rounding_through_step"] = 1;
        shortTotals["summary"]["steps"] = 4;
        const RunRecord shortRead = typed(shortTotals);
        QVERIFY(!evaluateMetric("run_overflow:loss,activation_grad", &shortRead, &why));
        QVERIFY2(QString::fromStdString(why).contains(QStringLiteral("reach step 1 of its 4")), why.c_str());
        // Issue 71: a site a library rounded first at some steps (telemetry sampled) hides
        // what underflowed or overflowed there; its totals back no claim, the others do.
        json sampledTotals = totals;
        sampledTotals["summary"]["steps"] = 4;
        sampledTotals["summary"]["run_rounding"][1]["library_steps"] = 3;
        const RunRecord sampledRead = typed(sampledTotals);
        QCOMPARE(sampledRead.summary.runRounding[1].librarySteps, std::int64_t{3});
        QCOMPARE(sampledRead.summary.runRounding[0].librarySteps, std::int64_t{0});
        QVERIFY(!evaluateMetric("run_overflow:fc1,activation", &sampledRead, &why));
        QVERIFY2(QString::fromStdString(why).contains(QStringLiteral("at 3 steps a library rounded fc1's activation")),
                 why.c_str());
        QCOMPARE(evaluateMetric("run_overflow:loss,activation_grad", &sampledRead).value_or(-1.0), 6.0 / 300.0);
        for (const json& badSteps : {json(5), json(-1), json("three")}) {   // past the run's 4 steps, or no count
            json bad = sampledTotals;
            bad["summary"]["run_rounding"][1]["library_steps"] = badSteps;
            QVERIFY_THROWS_EXCEPTION(InputError, typed(bad));
        }
        QVERIFY(!evaluateMetric("snapshots_overflow:conv2,activation_grad", &r, &why));
        QVERIFY2(QString::fromStdString(why).contains(QStringLiteral("no activation_grad telemetry for conv2")), why.c_str());
        QVERIFY(!evaluateMetric("snapshot_underflow:loss,activation_grad,25", &r, &why));
        QVERIFY2(QString::fromStdString(why).contains(QStringLiteral("no telemetry at step 25")), why.c_str());
        QVERIFY(!evaluateMetric("lost_updates:fc1", &r, &why));   // not in this record's summary
    }

    void formatFactsAreTheDefinitions()
    {
        // IEEE 754 binary16: smallest subnormal 2^-24, smallest normal 2^-14, max 65504.
        QCOMPARE(*evaluateMetric("format_min_subnormal:fp16", nullptr), std::ldexp(1.0, -24));
        QCOMPARE(*evaluateMetric("format_min_normal:fp16", nullptr), std::ldexp(1.0, -14));
        QCOMPARE(*evaluateMetric("format_max:fp16", nullptr), 65504.0);
        // bfloat16: 7 fraction bits, max (2 - 2^-7) * 2^127.
        QCOMPARE(*evaluateMetric("format_epsilon:bf16", nullptr), std::ldexp(1.0, -7));
        QCOMPARE(*evaluateMetric("format_max:bf16", nullptr), (2.0 - std::ldexp(1.0, -7)) * std::ldexp(1.0, 127));
        QCOMPARE(*evaluateMetric("format_mantissa_bits:tf32", nullptr), 10.0);
    }

    void expectationsAreJudged()
    {
        const Lesson lesson = parseLesson(baseLesson().dump(), "lesson t.json");
        const RunRecord off = typed(record(0.9535, 0.25, {1.0})), dyn = typed(record(0.9600, 0.01, {1.0}));
        auto results = checkExpectations(lesson, {&off, &dyn});
        QCOMPARE(results[0].state, ExpectationState::held);        // 0.25 > 10 x 0.01
        QCOMPARE(results[0].measured, std::string("25.0% vs 1.0%"));
        QCOMPARE(results[1].state, ExpectationState::held);        // |0.9535 - 0.96| <= 0.01
        const RunRecord dyn2 = typed(record(0.9700, 0.03, {1.0}));
        results = checkExpectations(lesson, {&off, &dyn2});
        QCOMPARE(results[0].state, ExpectationState::notHeld);     // 0.25 < 10 x 0.03
        QCOMPARE(results[1].state, ExpectationState::notHeld);     // 1.65 points apart
        results = checkExpectations(lesson, {&off, nullptr});
        QCOMPARE(results[0].state, ExpectationState::notMeasured);
        QVERIFY(QString::fromStdString(results[0].why).contains(QStringLiteral("has not finished")));
        // A NaN never holds, whatever the comparison (a record in memory: a file holds null).
        RunRecord nan = off;
        nan.summary.testAccuracy = std::numeric_limits<double>::quiet_NaN();
        results = checkExpectations(lesson, {&nan, &dyn});
        QCOMPARE(results[1].state, ExpectationState::notHeld);

        json diverging = baseLesson();
        diverging["expect"] = json::parse(R"([{"run": "off", "op": "diverged", "backs": "A."}, {"run": "dyn", "op": "completed", "backs": "A."}])");
        const Lesson d = parseLesson(diverging.dump(), "lesson d.json");
        const RunRecord div = typed(record(0.1, 0.0, {1.0}, "diverged"));
        results = checkExpectations(d, {&div, &dyn});
        QCOMPARE(results[0].state, ExpectationState::held);
        QCOMPARE(results[1].state, ExpectationState::held);
        results = checkExpectations(d, {&dyn, &div});
        QCOMPARE(results[0].state, ExpectationState::notHeld);
        QCOMPARE(results[1].state, ExpectationState::notHeld);
    }

    void placeholdersAreFilled()
    {
        const Lesson lesson = parseLesson(baseLesson().dump(), "lesson t.json");
        const RunRecord off = typed(record(0.9535, 0.1412, {1.0})), dyn = typed(record(0.96, 0.004, {1.0}));
        QCOMPARE(fillPlaceholders(lesson.explanation, lesson, {&off, &dyn}),
                 std::string("Without scaling 14.1% were flushed. Scaling multiplies the loss by S. Accuracy was 95.35% and 96.00%."));
        QCOMPARE(fillPlaceholders("{off.test_accuracy - dyn.test_accuracy|pts} {off.activation_grad_underflow:loss / dyn.activation_grad_underflow:loss}",
                                  lesson, {&off, &dyn}),
                 std::string("-0.6 points x35.3"));
        QCOMPARE(fillPlaceholders("{format_min_subnormal:fp16} {format_max:fp16|int} {off.memory_peak:total|mib}", lesson, {&off, &dyn}),
                 std::string("2^-24 65,504 0.0 MiB"));
        QCOMPARE(fillPlaceholders("{dyn.test_accuracy}", lesson, {&off, nullptr}), std::string("?"));
        QCOMPARE(formatMetricValue(0.00041, "pct", MetricUnit::fraction), std::string("0.041%"));
        QCOMPARE(formatMetricValue(std::ldexp(1.0, 27), "", MetricUnit::scale), std::string("2^27"));
        QCOMPARE(formatMetricValue(43755, "", MetricUnit::count), std::string("43,755"));
        // Issue 37: beyond a long long, powers of ten, never a wrapped-around integer.
        QCOMPARE(fillPlaceholders("{format_max:fp32|int}", lesson, {&off, &dyn}), std::string("3.4e+38"));
        QCOMPARE(formatMetricValue(-std::ldexp(1.0, 63), "int", MetricUnit::count), std::string("-9.22e+18"));
        QCOMPARE(formatMetricValue(-std::ldexp(1.0, 62), "int", MetricUnit::count), std::string("-4,611,686,018,427,387,904"));
        // Issue 66, finding 9: every style keeps its unit at any magnitude (fp32's range over
        // its smallest subnormal is 2^277: 63 digits had filled the buffer, " MiB" cut off).
        QCOMPARE(fillPlaceholders("{format_max:fp32 / format_min_subnormal:fp32|mib}", lesson, {&off, &dyn}),
                 std::string("2.32e+77 MiB"));
        QCOMPARE(fillPlaceholders("{format_max:fp32 / format_min_subnormal:fp32}", lesson, {&off, &dyn}),
                 std::string("x2.43e+83"));
        QCOMPARE(formatMetricValue(3e38, "pct2", MetricUnit::fraction), std::string("3e+40%"));
        QCOMPARE(formatMetricValue(-1e300, "pts", MetricUnit::fraction), std::string("-1e+302 points"));
        QCOMPARE(formatMetricValue(0x1p100, "pow2", MetricUnit::scale), std::string("2^100"));
        QCOMPARE(formatMetricValue(1234.5, "mib", MetricUnit::bytes), std::string("0.0 MiB"));
        QCOMPARE(formatMetricValue(2.5, "x", MetricUnit::plain), std::string("x2.5"));
    }

    void everySentenceMustBeBacked()
    {
        json l = baseLesson();
        QVERIFY(unbackedSentences(parseLesson(l.dump(), "lesson t.json")).empty());
        l["explanation"] = l["explanation"].get<std::string>() + " And this is a claim nobody checked!";
        const auto unbacked = unbackedSentences(parseLesson(l.dump(), "lesson t.json"));
        QCOMPARE(unbacked.size(), std::size_t{1});
        QCOMPARE(unbacked[0], std::string("And this is a claim nobody checked!"));
        // Sentences end at ". " outside placeholders, not at "2.5" or inside "{a.b}".
        QCOMPARE(explanationSentences("Loss 2.5 here. Then {off.test_accuracy|pct}. Done"),
                 (std::vector<std::string>{"Loss 2.5 here.", "Then {off.test_accuracy|pct}.", "Done"}));
    }
};

QTEST_MAIN(TestLesson)
#include "tst_lesson.moc"

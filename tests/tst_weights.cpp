// Tests of the weights and batch files (issue 13): safetensors bytes built by hand from the
// format's specification decode to the values they spell; every F16 and BF16 pattern (NaNs
// made quiet) and the F32 edge values survive a round trip bit for bit; each malformed file named by the
// issue is refused with one sentence naming the file and the tensor; a model's weights
// carry PyTorch's names and shapes; batch files are read and refused line by line; and a
// run replaying its own batches, from its own initial weights, repeats its losses exactly.

#include "test_support.h"

#include "data/batch_file.h"
#include "data/dataset.h"
#include "error.h"
#include "nn/model.h"
#include "numerics/format.h"
#include "train/trainer.h"
#include "weights/model_weights.h"
#include "weights/safetensors.h"

#include <QTest>

#include <cmath>
#include <cstring>
#include <fstream>

using namespace plab;

namespace {

// The file: 8-byte little-endian header length, the header text, the data.
std::string fileOf(const std::string& header, const std::string& data)
{
    std::string out(8, '\0');
    const std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
    return out + header + data;
}

std::string le16(std::initializer_list<std::uint16_t> values)
{
    std::string out;
    for (std::uint16_t v : values) {
        out += static_cast<char>(v & 0xFF);
        out += static_cast<char>(v >> 8);
    }
    return out;
}

QString refusal(const std::string& bytes)
{
    try {
        decodeSafetensors(bytes, "weights w.safetensors");
    } catch (const InputError& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

std::vector<float> lossesOf(const TrainSettings& s, const DataSplit& data)
{
    std::vector<float> losses;
    Trainer t(s, data, [&](const TrainerEvent& e) {
        if (const auto* step = std::get_if<StepEvent>(&e)) losses.push_back(step->loss);
    });
    const RunResult r = t.run();
    if (r.status != RunStatus::completed) qWarning("run ended: %s", r.message.c_str());
    return losses;
}

}  // namespace

class TestWeights : public QObject {
    Q_OBJECT

private slots:
    void handWrittenFileDecodes()
    {
        // F16 1.0 = 0x3C00, -2.0 = 0xC000; BF16 0.5 = 0x3F00; F32 3.0 = 0x40400000.
        const std::string header =
            R"({"__metadata__":{"format":"pt"},"b":{"dtype":"BF16","shape":[],"data_offsets":[4,6]},)"
            R"("a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"c":{"dtype":"F32","shape":[1,1],"data_offsets":[6,10]}})";
        const std::string data = le16({0x3C00, 0xC000, 0x3F00}) + std::string("\x00\x00\x40\x40", 4);
        const WeightsFile w = decodeSafetensors(fileOf(header, data), "test");
        QCOMPARE(w.tensors.size(), std::size_t{3});
        QCOMPARE(w.tensors[0].name, std::string("a"));   // in the order of their bytes
        QCOMPARE(w.tensors[0].values, (std::vector<float>{1.0f, -2.0f}));
        QCOMPARE(w.tensors[1].name, std::string("b"));
        QVERIFY(w.tensors[1].shape.empty());
        QCOMPARE(w.tensors[1].values, (std::vector<float>{0.5f}));
        QCOMPARE(w.tensors[2].values, (std::vector<float>{3.0f}));
        QCOMPARE(w.tensors[2].shape, (Shape{1, 1}));
        QCOMPARE(w.metadata.at("format"), std::string("pt"));
    }

    void everyHalfPatternRoundTrips_data()
    {
        QTest::addColumn<int>("dtype");
        QTest::addRow("F16") << static_cast<int>(WeightDtype::f16);
        QTest::addRow("BF16") << static_cast<int>(WeightDtype::bf16);
    }
    void everyHalfPatternRoundTrips()
    {
        QFETCH(int, dtype);
        const auto d = static_cast<WeightDtype>(dtype);
        WeightTensor t{"all", d, {65536}, {}};
        for (std::uint32_t h = 0; h < 65536; ++h)
            t.values.push_back(d == WeightDtype::f16 ? fp16BitsToFp32(static_cast<std::uint16_t>(h))
                                                     : bf16BitsToFp32(static_cast<std::uint16_t>(h)));
        const std::string bytes = encodeSafetensors({{t}, {}});
        // The data holds the 65536 patterns in order; a signalling NaN comes out quiet (IEEE
        // 754 conversion sets the quiet bit, payload kept), as any arithmetic leaves it.
        const std::uint16_t exponent = d == WeightDtype::f16 ? 0x7C00 : 0x7F80;
        const std::uint16_t quiet = d == WeightDtype::f16 ? 0x0200 : 0x0040;
        std::uint64_t n = 0;
        std::memcpy(&n, bytes.data(), 8);
        QCOMPARE(n % 8, std::uint64_t{0});   // data 8-byte aligned, as the reference writes it
        for (std::uint32_t h = 0; h < 65536; ++h) {
            const bool nan = (h & exponent) == exponent && (h & ~(exponent | 0x8000u)) != 0;
            const auto expected = static_cast<std::uint16_t>(nan ? h | quiet : h);
            std::uint16_t got = 0;
            std::memcpy(&got, bytes.data() + 8 + n + 2 * h, 2);
            if (got != expected) QFAIL(qPrintable(QStringLiteral("pattern %1 written as %2").arg(h).arg(got)));
        }
        const WeightsFile back = decodeSafetensors(bytes, "test");
        for (std::size_t i = 0; i < 65536; ++i) {
            const float v = back.tensors[0].values[i];
            const std::uint16_t bits = d == WeightDtype::f16 ? fp32ToFp16Bits(v) : fp32ToBf16Bits(v);
            std::uint16_t written = 0;
            std::memcpy(&written, bytes.data() + 8 + n + 2 * i, 2);
            if (bits != written || (!std::isnan(v) && bitsOf(v) != bitsOf(t.values[i])))
                QFAIL(qPrintable(QStringLiteral("pattern %1 read back differently").arg(i)));
        }
    }

    void f32EdgeValuesRoundTrip()
    {
        const std::vector<std::uint32_t> patterns = {0x00000000u, 0x80000000u, 0x00000001u, 0x007FFFFFu, 0x7F7FFFFFu,
                                                     0x7F800000u, 0xFF800000u, 0x7FC00001u, 0x3F800000u};
        WeightTensor t{"edges", WeightDtype::f32, {3, 3}, {}};
        for (std::uint32_t p : patterns) {
            float f = 0;
            std::memcpy(&f, &p, 4);
            t.values.push_back(f);
        }
        const WeightsFile back = decodeSafetensors(encodeSafetensors({{t}, {{"k", "v"}}}), "test");
        QCOMPARE(back.tensors[0].shape, (Shape{3, 3}));
        for (std::size_t i = 0; i < patterns.size(); ++i) QCOMPARE(bitsOf(back.tensors[0].values[i]), patterns[i]);
        QCOMPARE(back.metadata.at("k"), std::string("v"));
    }

    void valuesNotInTheDtypeAreNotWritten()
    {
        const WeightTensor t{"w", WeightDtype::f16, {1}, {0.1f}};   // 0.1 is no fp16 value
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, encodeSafetensors({{t}, {}}));
    }

    // A safetensors header of 640 bytes starts with the bytes of a pickle's protocol 2
    // (0x80 0x02): its '{' at byte 8 says it is safetensors, and it is read as one.
    void aHeaderLengthLikeAPickleIsStillSafetensors()
    {
        std::string header = R"({"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})";
        header.resize(640, ' ');   // JSON may end in spaces (the format pads headers so)
        const std::string bytes = fileOf(header, le16({0x3C00, 0x4000}));
        QCOMPARE(static_cast<unsigned char>(bytes[0]), 0x80);
        QCOMPARE(static_cast<unsigned char>(bytes[1]), 0x02);
        const WeightsFile w = decodeSafetensors(bytes, "w.safetensors");
        QCOMPARE(w.tensors.size(), std::size_t{1});
        QCOMPARE(w.tensors[0].values[1], 2.0f);
    }

    void malformedFilesAreRefused_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("says");
        const std::string okHeader = R"({"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})";
        const std::string okData = le16({0x3C00, 0x3C00});
        auto add = [](const char* name, const std::string& bytes, const char* says) {
            QTest::addRow("%s", name) << QByteArray::fromStdString(bytes) << QString::fromLatin1(says);
        };
        add("shorter than the length", "abc", "too short");
        add("truncated data", fileOf(okHeader, okData.substr(0, 3)), "tensor 'w' ends at byte 4");
        std::string pastEnd = fileOf(okHeader, okData);
        pastEnd[0] = static_cast<char>(0xF0);
        add("header length past the end", pastEnd, "runs past the end");
        std::string huge = fileOf(okHeader, okData);
        const std::uint64_t big = 100'000'001;
        std::memcpy(huge.data(), &big, 8);
        add("header over 100 MB", huge, "over the 100 MB limit");
        add("not UTF-8", fileOf("{\"w\xff\":{}}", ""), "not UTF-8");
        add("not JSON", fileOf("{\"w\":", ""), "header");
        add("unknown dtype", fileOf(R"({"w":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})", std::string(16, '\0')),
            "tensor 'w': dtype \"I64\"");
        add("size differs from shape", fileOf(R"({"w":{"dtype":"F16","shape":[3],"data_offsets":[0,4]}})", okData),
            "tensor 'w': data_offsets hold 4 bytes, but shape (3) of F16 takes 6");
        add("negative size", fileOf(R"({"w":{"dtype":"F16","shape":[-2],"data_offsets":[0,4]}})", okData),
            "tensor 'w': shape");
        add("end before begin", fileOf(R"({"w":{"dtype":"F16","shape":[2],"data_offsets":[4,0]}})", okData),
            "tensor 'w': data_offsets end 0 before begin 4");
        add("overlapping", fileOf(R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},)"
                                  R"("b":{"dtype":"F16","shape":[1],"data_offsets":[2,4]}})", okData),
            "tensor 'b' overlaps tensor 'a'");
        add("gap", fileOf(R"({"a":{"dtype":"F16","shape":[1],"data_offsets":[2,4]}})", okData),
            "2 bytes before tensor 'a' belong to no tensor");
        add("bytes after the last tensor", fileOf(okHeader, okData + "xx"), "2 bytes after the last tensor");
        add("missing offsets", fileOf(R"({"w":{"dtype":"F16","shape":[2]}})", okData), "tensor 'w': data_offsets");
        add("metadata not text", fileOf(R"({"__metadata__":{"a":1}})", ""), "__metadata__ 'a' is not text");
        add("not an object", fileOf("[1,2]", ""), "not a JSON object");
        // Issue 34: torch.save's files are named, not read as a header length of 5.8e17.
        add("torch.save zip", std::string("PK\x03\x04\0\0\x08\0\0\0archive/data.pkl", 27),
            "a PyTorch file written by torch.save (a zip archive)");
        add("torch.save legacy pickle", std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", 14),
            "a PyTorch file written by torch.save (a Python pickle)");
        // Issue 68 item 5: a run record (JSON) given as weights is named as such, not read as
        // a header length of 7.7e18.
        add("a run record", R"({"format": 3, "settings": {"recipe": "fp32"}, "steps": []})",
            "this is a JSON file (a run record or a config?), not safetensors weights");
        add("a JSON list", "\n  [1, 2, 3, 4, 5, 6, 7, 8]", "this is a JSON file");
    }
    void malformedFilesAreRefused()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(QString, says);
        const QString message = refusal(bytes.toStdString());
        QVERIFY2(message.startsWith(QStringLiteral("weights w.safetensors: ")), qPrintable(message));
        QVERIFY2(message.contains(says), qPrintable(message));
    }

    // PyTorch's state_dict names and shapes (scripts/plab_torch.py), per model.
    void modelWeightsHavePyTorchNames_data()
    {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QStringList>("expected");
        QTest::addRow("small-cnn") << "small-cnn"
                                   << QStringList{"conv1.weight (32, 1, 3, 3)", "conv1.bias (32)", "conv2.weight (64, 32, 3, 3)",
                                                  "conv2.bias (64)", "fc1.weight (10, 3136)", "fc1.bias (10)"};
        QTest::addRow("mlp") << "mlp"
                             << QStringList{"fc1.weight (512, 784)", "fc1.bias (512)", "fc2.weight (256, 512)",
                                            "fc2.bias (256)", "fc3.weight (10, 256)", "fc3.bias (10)"};
        QTest::addRow("seed-cnn") << "seed-cnn"
                                  << QStringList{"conv1.weight (420, 1, 3, 3)", "conv1.bias (420)",
                                                 "conv2.weight (1000, 420, 3, 3)", "conv2.bias (1000)",
                                                 "fc1.weight (10, 49000)", "fc1.bias (10)"};
    }
    void modelWeightsHavePyTorchNames()
    {
        QFETCH(QString, kind);
        QFETCH(QStringList, expected);
        auto model = Model::create(ModelSpec{kind.toStdString(), {}}, 1);
        const WeightsFile w = modelWeights(*model);
        QStringList got;
        for (const WeightTensor& t : w.tensors) {
            got << QString::fromStdString(t.name + " " + shapeString(t.shape));
            QCOMPARE(t.dtype, WeightDtype::f32);
        }
        QCOMPARE(got, expected);
        QCOMPARE(w.metadata.at("model"), kind.toStdString());
    }

    void loadingChecksBeforeChanging()
    {
        auto model = Model::create(ModelSpec{"mlp", {8, 4}}, 1);
        WeightsFile w = modelWeights(*model);
        for (auto& t : w.tensors) std::fill(t.values.begin(), t.values.end(), 0.25f);
        w.tensors.back().shape = {3};   // fc3.bias (10) given as (3)
        w.tensors.back().values.resize(3);
        const auto before = modelWeights(*model).tensors.front().values;
        try {
            loadWeights(*model, w, "weights x");
            QFAIL("a wrong shape was loaded");
        } catch (const InputError& e) {
            QCOMPARE(QString::fromStdString(e.what()),
                     QStringLiteral("weights x: tensor 'fc3.bias' has shape (3), model mlp needs (10)"));
        }
        QCOMPARE(modelWeights(*model).tensors.front().values, before);   // nothing half-loaded
    }

    void batchFilesAreReadAndRefused()
    {
        QCOMPARE(parseBatchFile("# comment\n3 1 2\n0\n", 4, "batches b"),
                 (StepBatches{{3, 1, 2}, {0}}));
        auto refusedWith = [](const std::string& text) -> QString {
            try {
                parseBatchFile(text, 4, "batches b");
            } catch (const InputError& e) {
                return QString::fromStdString(e.what());
            }
            return {};
        };
        QCOMPARE(refusedWith("0 1\n2 4\n"), QStringLiteral("batches b: line 2: index 4 is past the training set's 4 images"));
        QCOMPARE(refusedWith("0 x\n"),
                 QStringLiteral("batches b: line 1: column 3: expected sample indices (whole numbers from 0) separated by spaces"));
        QCOMPARE(refusedWith("0 -1\n"),
                 QStringLiteral("batches b: line 1: column 3: expected sample indices (whole numbers from 0) separated by spaces"));
        QCOMPARE(refusedWith("0\n\n1\n"), QStringLiteral("batches b: line 2: an empty step (a step takes at least one sample)"));
        QCOMPARE(refusedWith("# nothing\n"), QStringLiteral("batches b: no steps (one line of sample indices per step)"));
        QCOMPARE(refusedWith("99999999999999999999\n"),
                 QStringLiteral("batches b: line 1: column 1: expected sample indices (whole numbers from 0) separated by spaces"));
        // Issue 66, finding 8: the message shows no text of the file (it may be one it must not show).
        const QString secret = refusedWith("root:$6$secret:19000:0:99999:7:::\n");
        QVERIFY2(!secret.contains(QStringLiteral("root")) && !secret.contains(QStringLiteral("secret")), qPrintable(secret));
        const StepBatches steps{{1, 2}, {3}};
        QCOMPARE(parseBatchFile(batchFileText(steps, "about"), 4, "x"), steps);
    }

    // A run's own batches and final weights, fed back, give the same run: its losses repeat
    // exactly, and a run started from its saved weights continues where it stopped.
    void aRunReplaysItsOwnBatchesAndWeights()
    {
        testing::TempDir dir;
        testing::writeSyntheticDataset(dir.path() / "mnist", 96, 40, 5);
        const DataSplit data = loadDataset("mnist", dir.path());
        TrainSettings s;
        s.model = {"mlp", {16, 8}};
        s.recipe = *PrecisionRecipe::fromPreset("amp-bf16");
        s.batch = 10;
        s.epochs = 2;
        s.threads = 1;
        s.histogramEvery = 0;
        s.writeBatches = (dir.path() / "batches.txt").string();
        s.saveWeights = (dir.path() / "w.safetensors").string();
        const auto first = lossesOf(s, data);
        QCOMPARE(first.size(), std::size_t{20});   // ceil(96 / 10) per epoch

        TrainSettings replay = s;
        replay.seed = 99;   // another shuffle and another initialisation, both replaced
        replay.readBatches = s.writeBatches;
        replay.writeBatches = (dir.path() / "again.txt").string();
        replay.saveWeights = (dir.path() / "w-again.safetensors").string();
        auto model = Model::create(s.model, s.seed);   // the first run's initial weights, saved
        replay.initWeights = (dir.path() / "init.safetensors").string();
        writeSafetensors(replay.initWeights, modelWeights(*model));
        QCOMPARE(lossesOf(replay, data), first);
        QCOMPARE(readBatchFile(replay.writeBatches, 96), readBatchFile(s.writeBatches, 96));
        QCOMPARE(readSafetensors(replay.saveWeights).tensors.front().values,
                 readSafetensors(s.saveWeights).tensors.front().values);
    }

    void aBatchChangeIsRefusedWhileReplaying()
    {
        testing::TempDir dir;
        testing::writeSyntheticDataset(dir.path() / "mnist", 40, 20, 5);
        const DataSplit data = loadDataset("mnist", dir.path());
        {
            std::ofstream(dir.path() / "b.txt") << "0 1 2\n3 4 5\n";
        }
        TrainSettings s;
        s.model = {"mlp", {8, 4}};
        s.threads = 1;
        s.readBatches = (dir.path() / "b.txt").string();
        Trainer t(s, data, {});
        QCOMPARE(t.plannedSteps(), std::int64_t{2});
        QCOMPARE(QString::fromStdString(t.control().requestChange(SettingsChange{std::nullopt, 64, std::nullopt})),
                 QString::fromStdString("the batches come from " + s.readBatches + " (--read-batches)"));
        QVERIFY(t.control().requestChange(SettingsChange{std::nullopt, std::nullopt, 0.01}).empty());
    }

    void badRunFilesStopTheRunBeforeItStarts()
    {
        testing::TempDir dir;
        testing::writeSyntheticDataset(dir.path() / "mnist", 40, 20, 5);
        const DataSplit data = loadDataset("mnist", dir.path());
        TrainSettings s;
        s.model = {"mlp", {8, 4}};
        s.initWeights = (dir.path() / "absent.safetensors").string();
        QVERIFY_THROWS_EXCEPTION(InputError, Trainer(s, data, {}));
        s.initWeights.clear();
        { std::ofstream(dir.path() / "b.txt") << "0 40\n"; }
        s.readBatches = (dir.path() / "b.txt").string();
        try {
            Trainer t(s, data, {});
            QFAIL("an index past the training set was accepted");
        } catch (const InputError& e) {
            QVERIFY2(QString::fromStdString(e.what()).contains(QStringLiteral("index 40 is past the training set's 40 images")),
                     e.what());
        }
    }
};

QTEST_MAIN(TestWeights)
#include "tst_weights.moc"

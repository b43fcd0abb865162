// Tests the IDX reader and writer (engine/data/idx): round trips raw and gzip, and that
// every malformed file gives an InputError whose message starts with the file's path
// and names the problem.
// links: plab_data plab_test_support
#include "data/idx.h"
#include "error.h"
#include "test_support.h"

#include <QTest>

#include <zlib.h>

#include <fstream>
#include <sys/stat.h>

using plab::IdxArray;
using plab::testing::TempDir;

namespace {

QByteArray bytes(std::initializer_list<int> values)
{
    QByteArray out;
    for (int v : values) out.append(static_cast<char>(v));
    return out;
}

// An IDX header of unsigned bytes with the given dimensions.
QByteArray header(std::initializer_list<std::uint32_t> dims)
{
    QByteArray out = bytes({0, 0, 0x08, static_cast<int>(dims.size())});
    for (std::uint32_t d : dims)
        out += bytes({int(d >> 24 & 0xFF), int(d >> 16 & 0xFF), int(d >> 8 & 0xFF), int(d & 0xFF)});
    return out;
}

QByteArray gzipped(const QByteArray& raw)
{
    // deflateInit2 with windowBits 15 + 16 writes a gzip wrapper (header, CRC, length).
    z_stream z{};
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
    QByteArray out(static_cast<int>(deflateBound(&z, static_cast<uLong>(raw.size()))) + 64, '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
    z.avail_in = static_cast<uInt>(raw.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    deflate(&z, Z_FINISH);
    out.resize(static_cast<int>(z.total_out));
    deflateEnd(&z);
    return out;
}

void writeBytes(const std::filesystem::path& file, const QByteArray& content)
{
    std::ofstream out(file, std::ios::binary);
    out.write(content.data(), content.size());
}

QByteArray readBytes(const std::filesystem::path& file)
{
    std::ifstream in(file, std::ios::binary);
    std::string s((std::istreambuf_iterator<char>(in)), {});
    return QByteArray(s.data(), static_cast<int>(s.size()));
}

}  // namespace

class TestIdx : public QObject {
    Q_OBJECT

private slots:
    void roundTrip_data();
    void roundTrip();
    void gzipDetectedByMagicNotName();
    void concatenatedGzipMembers();
    void malformedFiles_data();
    void malformedFiles();
    void missingFile();
    void notARegularFile();
    void writeRejectsInconsistentArray();
};

void TestIdx::roundTrip_data()
{
    QTest::addColumn<QString>("fileName");
    QTest::addColumn<QList<qint64>>("dims");
    QTest::addRow("raw labels 1-D") << "labels" << QList<qint64>{7};
    QTest::addRow("raw images 3-D") << "images" << QList<qint64>{3, 28, 28};
    QTest::addRow("raw 4-D") << "four" << QList<qint64>{2, 3, 4, 5};
    QTest::addRow("gz labels 1-D") << "labels.gz" << QList<qint64>{7};
    QTest::addRow("gz images 3-D") << "images.gz" << QList<qint64>{3, 28, 28};
    QTest::addRow("gz single byte") << "one.gz" << QList<qint64>{1};
    // Larger than the reader's 1 MiB chunk, so the chunked gzip path is crossed.
    QTest::addRow("gz larger than one chunk") << "big.gz" << QList<qint64>{1400, 28, 28};
}

void TestIdx::roundTrip()
{
    QFETCH(QString, fileName);
    QFETCH(QList<qint64>, dims);
    TempDir dir;
    IdxArray a;
    std::int64_t n = 1;
    for (qint64 d : dims) {
        a.dims.push_back(d);
        n *= d;
    }
    a.data.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) a.data[static_cast<std::size_t>(i)] = std::uint8_t(i * 37 + 11);
    const auto file = dir.path() / fileName.toStdString();
    plab::writeIdx(file, a);

    const bool gz = fileName.endsWith(".gz");
    const QByteArray onDisk = readBytes(file);
    QCOMPARE(onDisk.startsWith(bytes({0x1f, 0x8b})), gz);

    IdxArray b = plab::readIdx(file);
    QCOMPARE(b.dims, a.dims);
    QVERIFY(b.data == a.data);
}

void TestIdx::gzipDetectedByMagicNotName()
{
    TempDir dir;
    const QByteArray raw = header({3}) + bytes({1, 2, 3});
    writeBytes(dir.path() / "gzip-without-suffix", gzipped(raw));
    writeBytes(dir.path() / "raw-with-suffix.gz", raw);
    for (const char* name : {"gzip-without-suffix", "raw-with-suffix.gz"}) {
        IdxArray a = plab::readIdx(dir.path() / name);
        QCOMPARE(a.dims, std::vector<std::int64_t>{3});
        QCOMPARE(a.data, (std::vector<std::uint8_t>{1, 2, 3}));
    }
}

void TestIdx::concatenatedGzipMembers()
{
    // gzip(1) allows several members in one file (cat a.gz b.gz); the content is their join.
    TempDir dir;
    const auto file = dir.path() / "two-members.gz";
    writeBytes(file, gzipped(header({4}) + bytes({9, 8})) + gzipped(bytes({7, 6})));
    IdxArray a = plab::readIdx(file);
    QCOMPARE(a.data, (std::vector<std::uint8_t>{9, 8, 7, 6}));
}

void TestIdx::malformedFiles_data()
{
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<QStringList>("expected");

    const QByteArray valid = header({2, 2}) + bytes({1, 2, 3, 4});
    const QByteArray validGz = gzipped(valid);

    QTest::addRow("empty file") << QByteArray() << QStringList{"is truncated", "at least 4 bytes", "has 0"};
    QTest::addRow("truncated magic") << bytes({0, 0, 8}) << QStringList{"is truncated", "has 3"};
    QTest::addRow("truncated dimensions")
        << bytes({0, 0, 8, 3, 0, 0, 0, 2, 0, 0})
        << QStringList{"is truncated", "declares 3 dimensions", "16 header bytes", "has 10 bytes"};
    QTest::addRow("truncated payload")
        << header({2, 2}) + bytes({1, 2, 3})
        << QStringList{"is truncated: header says 4 bytes of data", "file has 3"};
    QTest::addRow("truncated payload gz")
        << gzipped(header({2, 2}) + bytes({1, 2, 3}))
        << QStringList{"is truncated: header says 4 bytes of data", "decompressed file has 3"};
    QTest::addRow("trailing bytes") << valid + bytes({5, 6, 7})
                                    << QStringList{"3 bytes of trailing garbage", "4 bytes of data"};
    QTest::addRow("trailing byte gz") << gzipped(valid + bytes({5}))
                                      << QStringList{"1 byte of trailing garbage"};
    QTest::addRow("wrong magic") << bytes({1, 2, 8, 1, 0, 0, 0, 1, 9})
                                 << QStringList{"is not an IDX file", "0x01 0x02"};
    QTest::addRow("type code float") << bytes({0, 0, 0x0D, 1, 0, 0, 0, 1, 0, 0, 0, 0})
                                     << QStringList{"type code 0x0D (float)", "only 0x08"};
    QTest::addRow("type code unknown") << bytes({0, 0, 0x42, 1, 0, 0, 0, 1, 0})
                                       << QStringList{"type code 0x42", "not an IDX type"};
    QTest::addRow("zero dimensions") << bytes({0, 0, 8, 0}) << QStringList{"declares 0 dimensions"};
    QTest::addRow("five dimensions") << bytes({0, 0, 8, 5}) << QStringList{"declares 5 dimensions"};
    QTest::addRow("dimension of size 0")
        << header({3, 0, 28}) << QStringList{"dimension 2 of size 0 (dimensions 3 x 0 x 28)", "at least 1"};
    QTest::addRow("dimensions overflow")
        << header({0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}) + bytes({1})
        << QStringList{"overflows", "4294967295 x 4294967295"};
    // A huge but representable size is refused from the header, before anything is read or
    // allocated (issue 37: a 2.9 MB gzip file that inflated to 3 GB took 4.2 GB first).
    QTest::addRow("huge header raw")
        << header({0xFFFFFFFF, 0xFFFF}) + bytes({1, 2})
        << QStringList{"declares 262140.0 GiB of data (4294967295 x 65535)", "more than the 1.0 GiB"};
    QTest::addRow("huge header gz")
        << gzipped(header({0xFFFFFFFF, 0xFFFF}) + bytes({1, 2}))
        << QStringList{"declares 262140.0 GiB of data", "more than the 1.0 GiB"};
    // Just over the limit (a label file of 2^30 + 1 labels), gzip: refused the same way.
    QTest::addRow("labels just over the limit gz")
        << gzipped(header({0x40000001}) + bytes({1, 2}))
        << QStringList{"declares 1.0 GiB of data (1073741825)", "more than the 1.0 GiB"};
    // Within the limit but longer than the file: judged on the file's size.
    QTest::addRow("large header raw")
        << header({0x100000, 0x100}) + bytes({1, 2})
        << QStringList{"is truncated: header says 268435456 bytes", "file has 2"};
    QTest::addRow("large header gz")
        << gzipped(header({0x100000, 0x100}) + bytes({1, 2}))
        << QStringList{"is truncated: header says 268435456 bytes", "decompressed file has 2"};
    // A gzip header followed by a deflate block of the reserved type 3.
    QTest::addRow("corrupt gzip")
        << bytes({0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xFF, 0xFF, 0xFF, 0xFF})
        << QStringList{"is a corrupt gzip stream", "invalid block type"};
    QByteArray badCrc = validGz;
    badCrc[badCrc.size() - 8] = static_cast<char>(badCrc[badCrc.size() - 8] ^ 0x55);
    QTest::addRow("gzip checksum mismatch")
        << badCrc << QStringList{"is a corrupt gzip stream", "incorrect data check"};
    QTest::addRow("gzip stream cut short")
        << validGz.left(validGz.size() - 6)
        << QStringList{"is truncated", "gzip stream ends before its end marker"};
    QTest::addRow("junk after gzip stream")
        << validGz + QByteArray("junk") << QStringList{"data after the end of its gzip stream"};
}

void TestIdx::malformedFiles()
{
    QFETCH(QByteArray, content);
    QFETCH(QStringList, expected);
    TempDir dir;
    const auto file = dir.path() / "train-images-idx3-ubyte";
    writeBytes(file, content);
    try {
        plab::readIdx(file);
        QFAIL("readIdx accepted a malformed file");
    } catch (const plab::InputError& e) {
        const QString message = QString::fromStdString(e.what());
        QVERIFY2(message.startsWith(QString::fromStdString(file.string())), qPrintable(message));
        for (const QString& part : expected)
            QVERIFY2(message.contains(part), qPrintable("missing \"" + part + "\" in: " + message));
    }
}

void TestIdx::missingFile()
{
    TempDir dir;
    const auto file = dir.path() / "nothing-here";
    try {
        plab::readIdx(file);
        QFAIL("readIdx accepted a missing file");
    } catch (const plab::InputError& e) {
        QCOMPARE(QString::fromStdString(e.what()),
                 QString::fromStdString(file.string() + " does not exist"));
    }
}

// Issue 37: a FIFO or a device is refused at once by name (it blocked forever, or read
// /dev/zero until memory ran out).
void TestIdx::notARegularFile()
{
    TempDir dir;
    const auto fifo = dir.path() / "train-labels-idx1-ubyte";
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    for (const std::filesystem::path& file : {fifo, std::filesystem::path("/dev/zero")}) {
        try {
            plab::readIdx(file);
            QFAIL("readIdx read a FIFO or a device");
        } catch (const plab::InputError& e) {
            const QString why = QString::fromStdString(e.what());
            QVERIFY2(why.contains(file == fifo ? "it is a FIFO" : "it is a device"), qPrintable(why));
        }
    }
}

void TestIdx::writeRejectsInconsistentArray()
{
    TempDir dir;
    IdxArray a;
    a.dims = {2, 2};
    a.data = {1, 2, 3};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, plab::writeIdx(dir.path() / "x", a));
    a.dims = {};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, plab::writeIdx(dir.path() / "x", a));
}

QTEST_GUILESS_MAIN(TestIdx)
#include "tst_idx.moc"

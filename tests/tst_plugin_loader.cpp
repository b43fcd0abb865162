// Tests the CUDA plugin loader's interface check (issue 5 review): a libplab_cuda.so from
// another build (another interface version, or none) is refused with a reason before the
// loader calls anything else in it, and one of this build is probed. The plugins are the
// stand-ins of tests/fake_cuda_plugin.cpp, loaded by path through probeCudaPluginFile;
// runs everywhere, with or without CUDA.
// links: plab_backend plab_test_support
#include "backend/backend.h"

#include <QTest>
#include <QFile>

#include <dlfcn.h>

#include <string>

using namespace plab;

namespace {

std::string fakePlugin(const char* kind)
{
    return std::string(PLAB_FAKE_PLUGINS_DIR) + "/fake_cuda_" + kind + "/libplab_cuda.so";
}

// The fake plugin, opened by the test itself: its call counter survives the loader's
// dlclose of a refused plugin (dlopen counts references).
class HeldPlugin {
public:
    explicit HeldPlugin(const std::string& path) : handle_(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {}
    ~HeldPlugin()
    {
        if (handle_) dlclose(handle_);
    }
    HeldPlugin(const HeldPlugin&) = delete;
    HeldPlugin& operator=(const HeldPlugin&) = delete;

    bool loaded() const { return handle_ != nullptr; }
    // How many times its probe and create entry points ran; -1 when it cannot tell.
    int calls() const
    {
        auto count = handle_ ? reinterpret_cast<int (*)()>(dlsym(handle_, "plab_fake_plugin_calls")) : nullptr;
        return count ? count() : -1;
    }

private:
    void* handle_;
};

}  // namespace

class TestPluginLoader : public QObject {
    Q_OBJECT

private slots:
    void refusesAPluginFromAnotherBuild_data()
    {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("reason");
        const QString needs = QString("this program needs %1)").arg(kCudaPluginAbiVersion);
        QTest::addRow("another interface version")
            << "stale"
            << QString("unavailable: libplab_cuda.so is from another build (interface %1, ").arg(kCudaPluginAbiVersion + 1) +
                   needs;
        QTest::addRow("no interface version")
            << "unversioned" << "unavailable: libplab_cuda.so is from another build (no interface version, " + needs;
    }

    void refusesAPluginFromAnotherBuild()
    {
        QFETCH(QString, kind);
        QFETCH(QString, reason);
        const std::string path = fakePlugin(kind.toStdString().c_str());
        HeldPlugin held(path);
        QVERIFY2(held.loaded(), path.c_str());
        QCOMPARE(held.calls(), 0);
        const BackendInfo info = probeCudaPluginFile(path);
        QCOMPARE(info.name, std::string("cuda"));
        QVERIFY(!info.available);
        QCOMPARE(QString::fromStdString(info.reason), reason);
        QCOMPARE(held.calls(), 0);   // neither its probe nor anything else ran
    }

    // The control: the same stand-in built for this interface is called.
    void probesAPluginOfThisBuild()
    {
        const std::string path = fakePlugin("current");
        HeldPlugin held(path);
        QVERIFY2(held.loaded(), path.c_str());
        const BackendInfo info = probeCudaPluginFile(path);
        QCOMPARE(info.name, std::string("cuda"));
        QCOMPARE(info.reason, std::string("unavailable: the fake plugin's probe ran"));
        QCOMPARE(held.calls(), 1);
    }

    // The build's own plugin, when it was built, passes the check (it may still be
    // unavailable here: no driver, no device).
    void acceptsThePluginOfThisBuild()
    {
        const std::string path = std::string(PLAB_BINARY_DIR) + "/app/libplab_cuda.so";
        if (!QFile::exists(QString::fromStdString(path))) QSKIP("the CUDA plugin was not built");
        const BackendInfo info = probeCudaPluginFile(path);
        qInfo("%s: %s", path.c_str(), info.available ? "available" : info.reason.c_str());
        QVERIFY2(info.reason.find("from another build") == std::string::npos, info.reason.c_str());
    }

    void reportsAFileThatDoesNotLoad()
    {
        const BackendInfo info = probeCudaPluginFile("/nonexistent/libplab_cuda.so");
        QVERIFY(!info.available);
        QVERIFY2(info.reason.rfind("unavailable: /nonexistent/libplab_cuda.so could not be loaded (", 0) == 0,
                 info.reason.c_str());
    }
};

QTEST_GUILESS_MAIN(TestPluginLoader)
#include "tst_plugin_loader.moc"

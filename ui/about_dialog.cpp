// The About box.
#include "about_dialog.h"

#include "backend/backend.h"

#include <QMessageBox>
#include <QStringList>
#include <QtGlobal>

namespace plab::ui {

QString aboutText()
{
    QStringList lines;
#ifdef PLAB_VERSION
    lines << QObject::tr("Precision Lab %1").arg(QStringLiteral(PLAB_VERSION));
#endif
    lines << QObject::tr("A laboratory for mixed-precision training.");
    lines << QString();
    lines << QObject::tr("Qt %1 (built with %2)").arg(QString::fromLatin1(qVersion()), QStringLiteral(QT_VERSION_STR));
#ifdef PLAB_VERSION
    lines << QObject::tr("Engine %1").arg(QStringLiteral(PLAB_VERSION));
#endif
    try {
        const auto cpu = createCpuBackend(1);
        for (const auto& v : cpu->info().versions) lines << QString::fromStdString(v);
    } catch (const std::exception& e) {
        lines << QObject::tr("CPU backend: %1").arg(QString::fromStdString(e.what()));
    }
    const BackendInfo cuda = probeCudaBackend();
    if (cuda.available && !cuda.versions.empty()) {
        for (const auto& v : cuda.versions) lines << QString::fromStdString(v);
    } else {
        const QString reason = QString::fromStdString(cuda.reason);
        lines << QObject::tr("CUDA: not available: %1").arg(reason);
        lines << QObject::tr("cuDNN: not available: %1").arg(reason);
    }
    return lines.join(QStringLiteral("\n"));
}

void showAboutDialog(QWidget* parent)
{
    QMessageBox::about(parent, QObject::tr("About Precision Lab"), aboutText());
}

}  // namespace plab::ui

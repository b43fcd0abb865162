// See help_dialogs.h.
#include "help_dialogs.h"

#include <QAction>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFile>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QMainWindow>
#include <QTableWidget>
#include <QTextBrowser>
#include <QVBoxLayout>

namespace plab::ui {

namespace {

struct GuidePage {
    const char* title;
    const char* resource;   // ":/guide/..." (ui/CMakeLists.txt builds them in)
};

const GuidePage kPages[] = {
    {QT_TRANSLATE_NOOP("Help", "Precision Lab (README)"), ":/guide/README.md"},
    {QT_TRANSLATE_NOOP("Help", "Lessons"), ":/guide/docs/LESSONS.md"},
    {QT_TRANSLATE_NOOP("Help", "Your own PyTorch training"), ":/guide/docs/PYTORCH.md"},
    {QT_TRANSLATE_NOOP("Help", "The run record"), ":/guide/docs/RUN_RECORD.md"},
    {QT_TRANSLATE_NOOP("Help", "Files from others, faults"), ":/guide/docs/RELIABILITY.md"},
};

QString pageText(const char* resource)
{
    QFile f(QString::fromLatin1(resource));
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

// A non-modal dialog, deleted when closed.
QDialog* newDialog(QWidget* parent, const QString& objectName, const QString& title)
{
    auto* dialog = new QDialog(parent);
    dialog->setObjectName(objectName);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle(title);
    return dialog;
}

// `body` above a Close button, shown at `size`.
QDialog* showWithClose(QDialog* dialog, QLayout* body, QSize size)
{
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
    QObject::connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::close);
    auto* layout = new QVBoxLayout(dialog);
    layout->addLayout(body, 1);
    layout->addWidget(buttons);
    dialog->resize(size);
    dialog->show();
    return dialog;
}

}  // namespace

QDialog* showUserGuide(QWidget* parent)
{
    QDialog* dialog = newDialog(parent, QStringLiteral("userGuideDialog"), QDialog::tr("Precision Lab User Guide"));
    auto* pages = new QListWidget(dialog);
    pages->setObjectName(QStringLiteral("userGuidePages"));
    for (const GuidePage& p : kPages) pages->addItem(QCoreApplication::translate("Help", p.title));
    pages->setMaximumWidth(pages->sizeHintForColumn(0) + 2 * pages->frameWidth() + 8);
    auto* text = new QTextBrowser(dialog);
    text->setObjectName(QStringLiteral("userGuideText"));
    text->setOpenExternalLinks(true);
    text->setSearchPaths({QStringLiteral(":/guide"), QStringLiteral(":/guide/docs")});
    QObject::connect(pages, &QListWidget::currentRowChanged, text, [text](int row) {
        if (row < 0 || row >= static_cast<int>(std::size(kPages))) return;
        text->setMarkdown(pageText(kPages[row].resource));
    });
    pages->setCurrentRow(0);
    auto* row = new QHBoxLayout;
    row->addWidget(pages);
    row->addWidget(text, 1);
    return showWithClose(dialog, row, QSize(1000, 720));
}

QDialog* showKeyboardShortcuts(QWidget* window)
{
    QDialog* dialog = newDialog(window, QStringLiteral("keyboardShortcutsDialog"), QDialog::tr("Keyboard Shortcuts"));
    auto* table = new QTableWidget(0, 3, dialog);
    table->setObjectName(QStringLiteral("keyboardShortcutsTable"));
    table->setHorizontalHeaderLabels({QDialog::tr("Menu"), QDialog::tr("Action"), QDialog::tr("Keys")});
    table->verticalHeader()->hide();
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    // Every action of every menu that has keys, in menu order (the window's own actions too:
    // presentation mode works with the menu bar hidden).
    const auto add = [&](const QString& menu, const QAction* a) {
        if (a->isSeparator() || a->shortcuts().isEmpty()) return;
        QStringList keys;
        for (const QKeySequence& k : a->shortcuts()) keys << k.toString(QKeySequence::NativeText);
        const int r = table->rowCount();
        table->insertRow(r);
        table->setItem(r, 0, new QTableWidgetItem(menu));
        table->setItem(r, 1, new QTableWidgetItem(QString(a->text()).remove(QLatin1Char('&'))));
        table->setItem(r, 2, new QTableWidgetItem(keys.join(QStringLiteral(", "))));
    };
    QList<const QAction*> seen;
    if (auto* main = qobject_cast<QMainWindow*>(window))
        for (QAction* top : main->menuBar()->actions())
            if (QMenu* menu = top->menu())
                for (const QAction* a : menu->actions()) {
                    add(QString(top->text()).remove(QLatin1Char('&')), a);
                    seen << a;
                }
    for (const QAction* a : window->actions())
        if (!seen.contains(a)) add(QDialog::tr("Window"), a);
    table->resizeColumnsToContents();
    table->horizontalHeader()->setStretchLastSection(true);
    auto* body = new QVBoxLayout;
    body->addWidget(table);
    return showWithClose(dialog, body, QSize(640, 560));
}

}  // namespace plab::ui

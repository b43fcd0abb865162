"""A PEP 517 build backend for the probe, in the tree so that `pip install ./python` needs no
network: it writes the wheel (a zip of precision_lab/ and its .dist-info, PEP 427) itself.
The name, version and summary come from pyproject.toml's [project] table."""
import base64
import hashlib
import os
import re
import zipfile

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGE = "precision_lab"


def _project():
    """name, version and description of pyproject.toml's [project] (simple key = "value" lines)."""
    text = open(os.path.join(_HERE, "pyproject.toml"), encoding="utf-8").read()
    table = text.split("[project]", 1)[1].split("\n[", 1)[0]
    values = dict(re.findall(r'^(\w[\w-]*)\s*=\s*"([^"]*)"', table, re.M))
    return values["name"], values["version"], values.get("description", "")


def _dist_info(name, version):
    return f"{name.replace('-', '_')}-{version}.dist-info"


def _metadata(name, version, summary):
    return (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: {summary}\n"
            "Requires-Python: >=3.9\n").encode()


def _digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    name, version, summary = _project()
    info = _dist_info(name, version)
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "wb") as f:
        f.write(_metadata(name, version, summary))
    return info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name, version, summary = _project()
    info = _dist_info(name, version)
    wheel = f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    files = []
    package = os.path.join(_HERE, _PACKAGE)
    for entry in sorted(os.listdir(package)):
        if entry.endswith(".py"):
            with open(os.path.join(package, entry), "rb") as f:
                files.append((f"{_PACKAGE}/{entry}", f.read()))
    files.append((f"{info}/METADATA", _metadata(name, version, summary)))
    files.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: plab_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    record = "".join(f"{path},{_digest(data)},{len(data)}\n" for path, data in files) + f"{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode()))
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            z.writestr(path, data)
    return wheel

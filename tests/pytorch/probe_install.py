#!/usr/bin/env python3
"""CTest probe_pip_install (issue 68 item 3): `pip install ./python` installs the probe with no
network (pip --no-index: nothing can be fetched) into a fresh virtual environment, and the
installed package is the source's: the same files, byte for byte, importable from anywhere
(the test imports it from a folder that does not hold the source). Exit 77 (a skip, never a
pass) where venv or pip is missing.
Usage: probe_install.py --source python/ --work DIR"""
import argparse
import os
import shutil
import subprocess
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--source", required=True)
parser.add_argument("--work", required=True)
args = parser.parse_args()
shutil.rmtree(args.work, ignore_errors=True)
os.makedirs(args.work)
env_dir = os.path.join(args.work, "venv")
made = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", env_dir], capture_output=True, text=True)
python = os.path.join(env_dir, "bin", "python")
if made.returncode != 0 or subprocess.run([python, "-m", "pip", "--version"], capture_output=True).returncode != 0:
    print("SKIP: python3-venv or pip is missing:", made.stderr.strip())
    sys.exit(77)
failures = []
done = subprocess.run([python, "-m", "pip", "install", "--no-index", args.source], capture_output=True, text=True)
if done.returncode != 0:
    print(done.stdout, done.stderr)
    failures.append("pip install --no-index ./python failed")
else:
    where = subprocess.run([python, "-c", "import precision_lab, os; print(os.path.dirname(precision_lab.__file__)); "
                            "from precision_lab import Probe, rounding_stats"],
                           capture_output=True, text=True, cwd=args.work)
    if where.returncode != 0:
        failures.append("the installed probe does not import: " + where.stderr.strip())
    else:
        installed = where.stdout.strip()
        if not installed.startswith(env_dir):
            failures.append(f"imported from {installed}, not the environment")
        source = os.path.join(args.source, "precision_lab")
        for name in sorted(n for n in os.listdir(source) if n.endswith(".py")):
            with open(os.path.join(source, name), "rb") as a, open(os.path.join(installed, name), "rb") as b:
                if a.read() != b.read():
                    failures.append(f"{name} differs from the source")
        print(f"installed {sorted(os.listdir(installed))} into {installed}")
for f in failures:
    print("FAIL:", f)
if failures:
    sys.exit(1)
print("PASS: pip install ./python, offline, installs the probe as it is in the source")

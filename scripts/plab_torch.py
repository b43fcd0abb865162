"""Precision Lab's models as PyTorch modules, and the files that move between the two.

The modules' state_dict() names and shapes are those of `plab train --init-weights` and
`--save-weights` (docs/WEIGHTS.md):

    from plab_torch import make_model, load_safetensors, save_safetensors
    model = make_model("small-cnn")                    # conv1, conv2, fc1
    save_safetensors("init.safetensors", model.state_dict())
    # plab train --model small-cnn --init-weights init.safetensors --save-weights final.safetensors
    model.load_state_dict(load_safetensors("final.safetensors"))

The safetensors reader and writer here use only numpy and the standard library (Debian 12
packages no `safetensors`); they follow the format's specification and are independent of
the C++ implementation they are tested against.

As a command (the data folder is plab's: mnist, else mnist-10k, or fashion-mnist):

    # the test accuracy of weights saved by `plab train --save-weights` (or the app's
    # File > Export Weights), evaluated by PyTorch in fp32
    python3 scripts/plab_torch.py evaluate --model small-cnn --weights final.safetensors
    # train in PyTorch (Adam, fp32) and save weights that `plab train --init-weights` fine-tunes
    python3 scripts/plab_torch.py train --model small-cnn --steps 200 --out torch.safetensors
"""

import argparse
import os
import sys

import gzip
import json
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DEFAULT_WIDTHS = {"mlp": (512, 256), "deep-mlp": (128, 16), "small-cnn": (32, 64), "seed-cnn": (420, 1000),
                  "vit": (64, 2, 4, 7)}


class MLP(nn.Module):
    """mlp: flatten, fc1 784->w0, ReLU, fc2 w0->w1, ReLU, fc3 w1->10."""

    def __init__(self, widths=DEFAULT_WIDTHS["mlp"]):
        super().__init__()
        self.fc1 = nn.Linear(28 * 28, widths[0])
        self.fc2 = nn.Linear(widths[0], widths[1])
        self.fc3 = nn.Linear(widths[1], 10)

    def forward(self, x):
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class DeepMLP(nn.Module):
    """deep-mlp: flatten, then widths[1] linear layers fc1 ... fcN (784->w, w->w, ..., w->10)
    with a ReLU between two and no normalisation."""

    def __init__(self, widths=DEFAULT_WIDTHS["deep-mlp"]):
        super().__init__()
        width, depth = widths
        sizes = [28 * 28] + [width] * (depth - 1) + [10]
        self.depth = depth
        for n in range(1, depth + 1):
            setattr(self, f"fc{n}", nn.Linear(sizes[n - 1], sizes[n]))

    def forward(self, x):
        x = torch.flatten(x, 1)
        for n in range(1, self.depth):
            x = F.relu(getattr(self, f"fc{n}")(x))
        return getattr(self, f"fc{self.depth}")(x)


class CNN(nn.Module):
    """small-cnn and seed-cnn: conv1 3x3 pad 1, ReLU, max-pool 2, conv2 3x3 pad 1, ReLU,
    max-pool 2, flatten (C, H, W), fc1 (w1*7*7)->10."""

    def __init__(self, widths):
        super().__init__()
        self.conv1 = nn.Conv2d(1, widths[0], 3, padding=1)
        self.conv2 = nn.Conv2d(widths[0], widths[1], 3, padding=1)
        self.fc1 = nn.Linear(widths[1] * 7 * 7, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc1(torch.flatten(x, 1))


class Positions(nn.Module):
    """Learned positions, one row per token, added to every image's tokens."""

    def __init__(self, tokens, width):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(tokens, width))

    def forward(self, x):
        return x + self.weight


class Block(nn.Module):
    """A pre-norm transformer block: x + proj(attention(ln1(x))), then + fc2(gelu(fc1(ln2(.)))).
    Attention as plab computes it: scores = (q k^T) * d^-0.5, softmax, times v."""

    def __init__(self, width, heads, ratio=4):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, ratio * width)
        self.fc2 = nn.Linear(ratio * width, width)

    def forward(self, x):
        n, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).reshape(n, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) * (d // self.heads) ** -0.5
        a = torch.softmax(scores, dim=-1) @ v
        x = x + self.proj(a.transpose(1, 2).reshape(n, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class ViT(nn.Module):
    """vit, widths (width, blocks, heads, patch side): the image cut into patch x patch
    patches (row-major), each embedded (embed), positions added (pos), blocks block1 ...,
    the mean over the tokens, a LayerNorm (norm), the head."""

    def __init__(self, widths=DEFAULT_WIDTHS["vit"]):
        super().__init__()
        width, blocks, heads, patch = widths
        self.patch, self.blocks = patch, blocks
        tokens = (28 // patch) ** 2
        self.embed = nn.Linear(patch * patch, width)
        self.pos = Positions(tokens, width)
        for b in range(1, blocks + 1):
            setattr(self, f"block{b}", Block(width, heads))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        n, p = x.shape[0], self.patch
        g = 28 // p
        x = x.reshape(n, g, p, g, p).permute(0, 1, 3, 2, 4).reshape(n, g * g, p * p)
        x = self.pos(self.embed(x))
        for b in range(1, self.blocks + 1):
            x = getattr(self, f"block{b}")(x)
        return self.head(self.norm(x.mean(dim=1)))


def make_model(kind, widths=None):
    widths = tuple(widths) if widths else DEFAULT_WIDTHS[kind]
    if kind == "mlp":
        return MLP(widths)
    if kind == "deep-mlp":
        return DeepMLP(widths)
    if kind == "vit":
        return ViT(widths)
    return CNN(widths)


# ---- safetensors -----------------------------------------------------------------------

_DTYPES = {"F32": (torch.float32, np.float32, 4), "F16": (torch.float16, np.float16, 2),
           "BF16": (torch.bfloat16, np.int16, 2)}


def save_safetensors(path, tensors, metadata=None):
    """Writes {name: tensor} (float32, float16 or bfloat16) in the safetensors format."""
    header, chunks, offset = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().cpu().contiguous()
        dtype = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}[t.dtype]
        raw = t.view(torch.int16).numpy() if dtype == "BF16" else t.numpy()
        data = raw.astype(raw.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = dict(metadata)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for c in chunks:
            f.write(c)


def load_safetensors(path):
    """Reads a safetensors file into {name: tensor}, in the file's dtypes."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = blob[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        torch_dtype, np_dtype, size = _DTYPES[info["dtype"]]
        begin, end = info["data_offsets"]
        arr = np.frombuffer(data[begin:end], dtype=np.dtype(np_dtype).newbyteorder("<")).copy()
        t = torch.from_numpy(arr)
        if info["dtype"] == "BF16":
            t = t.view(torch.bfloat16)
        out[name] = t.reshape(info["shape"])
    return out


def safetensors_metadata(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n).decode("utf-8")).get("__metadata__", {})


# ---- data and batches ------------------------------------------------------------------

def read_idx(path):
    """An IDX file (.gz or raw) as a numpy array."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        blob = f.read()
    dims = blob[3]
    shape = struct.unpack(">" + "I" * dims, blob[4:4 + 4 * dims])
    return np.frombuffer(blob, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def read_batches(path):
    """A batch file (`plab train --write-batches`): one list of sample indices per step."""
    steps = []
    with open(path) as f:
        for line in f:
            if not line.startswith("#"):
                steps.append([int(v) for v in line.split()])
    return steps


def write_batches(path, steps, about="written by plab_torch.py"):
    with open(path, "w") as f:
        f.write(f"# plab batches 1: one line per training step ({about})\n")
        for s in steps:
            f.write(" ".join(str(i) for i in s) + "\n")


def batch_tensors(images, labels, indices):
    """The images scaled as plab scales them (byte / 255 in fp32) and the labels."""
    idx = np.asarray(indices)
    x = torch.from_numpy(images[idx].astype(np.float32)).unsqueeze(1) / 255.0
    y = torch.from_numpy(labels[idx].astype(np.int64))
    return x, y


def default_data_dir():
    """plab's data folder: $PLAB_DATA_DIR, else $XDG_DATA_HOME/precision-lab/data."""
    if os.environ.get("PLAB_DATA_DIR"):
        return os.environ["PLAB_DATA_DIR"]
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "precision-lab", "data")


def load_split(data_dir, dataset="mnist", split="train"):
    """(images, labels) of plab's dataset folder: split "train" or "t10k" (plab's test set).
    "mnist" is DIR/mnist when it is there, else the 10,000-digit DIR/mnist-10k, as plab
    chooses."""
    folder = os.path.join(data_dir, dataset)
    if dataset == "mnist" and not os.path.isdir(folder):
        folder = os.path.join(data_dir, "mnist-10k")
    images = read_idx(os.path.join(folder, f"{split}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(folder, f"{split}-labels-idx1-ubyte.gz"))
    return images, labels


@torch.no_grad()
def evaluate(model, images, labels, batch=1000):
    """Test accuracy (a fraction) of the model in fp32: argmax of the logits, ties to the
    lowest class as torch.argmax breaks them."""
    model.eval()
    correct = 0
    for begin in range(0, len(images), batch):
        x, y = batch_tensors(images, labels, range(begin, min(begin + batch, len(images))))
        correct += (model(x).argmax(dim=1) == y).sum().item()
    return correct / len(images)


def load_weights(model, path):
    """Loads a safetensors file into the model (16-bit weights widened to fp32 exactly)."""
    tensors = {k: v.float() for k, v in load_safetensors(path).items()}
    model.load_state_dict(tensors, strict=True)
    return model


def _widths(text):
    return tuple(int(v) for v in text.split(",")) if text else None


def main(argv=None):
    ap = argparse.ArgumentParser(description="Precision Lab's models in PyTorch: evaluate or train weights "
                                             "that move to and from plab (safetensors).")
    sub = ap.add_subparsers(dest="command", required=True)
    for name in ("evaluate", "train"):
        p = sub.add_parser(name)
        p.add_argument("--model", default="small-cnn", choices=sorted(DEFAULT_WIDTHS))
        p.add_argument("--widths", default="", help="e.g. 16,32 (as plab train --widths)")
        p.add_argument("--data-dir", default=default_data_dir())
        p.add_argument("--dataset", default="mnist", choices=("mnist", "fashion-mnist"))
        p.add_argument("--json", action="store_true", help="print one JSON object")
        p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: PyTorch's default)")
    sub.choices["evaluate"].add_argument("--weights", required=True, help="a safetensors file")
    t = sub.choices["train"]
    t.add_argument("--init", default="", help="start from these weights (default: PyTorch's initialisation)")
    t.add_argument("--steps", type=int, default=200)
    t.add_argument("--batch", type=int, default=32)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--seed", type=int, default=1)
    t.add_argument("--out", required=True, help="where the trained weights go (safetensors, F32)")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        test_images, test_labels = load_split(args.data_dir, args.dataset, "t10k")
        model = make_model(args.model, _widths(args.widths))
        if args.command == "evaluate":
            load_weights(model, args.weights)
        else:
            torch.manual_seed(args.seed)
            if args.init:
                load_weights(model, args.init)
            images, labels = load_split(args.data_dir, args.dataset, "train")
            order = np.random.default_rng(args.seed)
            opt = torch.optim.Adam(model.parameters(), lr=args.lr)
            model.train()
            for _ in range(args.steps):
                x, y = batch_tensors(images, labels, order.integers(0, len(images), args.batch))
                opt.zero_grad()
                F.cross_entropy(model(x), y).backward()
                opt.step()
            save_safetensors(args.out, model.state_dict(), {"format": "pt", "source": "plab_torch.py train"})
    except (OSError, KeyError, RuntimeError, ValueError) as e:
        print(f"plab_torch.py: {e}", file=sys.stderr)
        return 2
    accuracy = evaluate(model, test_images, test_labels)
    if args.json:
        print(json.dumps({"test_accuracy": accuracy, "test_images": len(test_images)}))
    else:
        print(f"test accuracy {100 * accuracy:.2f} % ({len(test_images)} test images)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

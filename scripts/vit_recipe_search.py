"""The search for vit settings that reach 96% on the 10,000-digit MNIST in 3 epochs (issue 33,
docs/TRANSFORMER.md "Searching for 96% in PyTorch"): plab_torch.ViT re-implemented with
options (schedule, label smoothing, initialisations, pooling, ...), trained in PyTorch, fp32,
one thread. With every option off it gives plab_torch.ViT's results bit for bit.

usage: python3 scripts/vit_recipe_search.py --seed 1 [--opt adam --lr 1e-3 ...] --tag NAME
Appends one JSON line to --out (default vit_search_results.jsonl in the current folder).
"""
import argparse, json, math, sys, time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
import plab_torch as P  # noqa: E402

torch.set_num_threads(1)

DATA = P.default_data_dir()


class ViT(nn.Module):
    def __init__(self, width, blocks, heads, patch, ratio=4, pool="mean", embed_ln=False, margin=0):
        super().__init__()
        self.patch, self.pool, self.margin = patch, pool, margin
        tokens = (28 // patch) ** 2
        side = patch + 2 * margin   # a token's window: its patch and `margin` pixels around it
        self.embed = nn.Linear(side * side, width)
        self.embed_ln = nn.LayerNorm(width) if embed_ln else None
        if pool == "cls":
            self.cls = nn.Parameter(torch.zeros(1, 1, width))
        self.pos = nn.Parameter(torch.zeros(tokens + (pool == "cls"), width))
        self.blocks = nn.ModuleList([P.Block(width, heads, ratio) for _ in range(blocks)])
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        n, p = x.shape[0], self.patch
        g = 28 // p
        if self.margin:
            side = p + 2 * self.margin
            x = F.unfold(x.reshape(n, 1, 28, 28), side, padding=self.margin, stride=p).transpose(1, 2)
        else:
            x = x.reshape(n, g, p, g, p).permute(0, 1, 3, 2, 4).reshape(n, g * g, p * p)
        x = self.embed(x)
        if self.embed_ln is not None:
            x = self.embed_ln(x)
        if self.pool == "cls":
            x = torch.cat([self.cls.expand(n, -1, -1), x], dim=1)
        x = x + self.pos
        for b in self.blocks:
            x = b(x)
        x = x[:, 0] if self.pool == "cls" else x.mean(dim=1)
        return self.head(self.norm(x))


def sincos2d(tokens, width, cls):
    """2-D sine-cosine positions (MAE / simple-ViT style) for the g x g grid; a cls row of zeros."""
    g = int(round((tokens - cls) ** 0.5))
    y, x = torch.meshgrid(torch.arange(g, dtype=torch.float32), torch.arange(g, dtype=torch.float32), indexing="ij")
    q = width // 4
    omega = 1.0 / (10000 ** (torch.arange(q, dtype=torch.float32) / max(1, q - 1)))
    y = y.flatten()[:, None] * omega[None, :]
    x = x.flatten()[:, None] * omega[None, :]
    pe = torch.cat([x.sin(), x.cos(), y.sin(), y.cos()], dim=1)
    if cls:
        pe = torch.cat([torch.zeros(1, width), pe], dim=0)
    return pe


def mimetic_block(blk, d, a1, b1, a2, b2):
    """Mimetic initialisation (Trockman & Kolter 2023): per head Wq_h^T Wk_h ~ a1 Z + b1 I
    (rank dh truncation), and Wv^T Wproj^T ~ a2 Z - b2 I; Z ~ N(0, 1/d)."""
    h = blk.heads
    dh = d // h
    Wq, Wk, Wv = blk.qkv.weight[:d], blk.qkv.weight[d:2 * d], blk.qkv.weight[2 * d:]
    for i in range(h):
        M = a1 * torch.randn(d, d) / d ** 0.5 + b1 * torch.eye(d)
        U, S, Vh = torch.linalg.svd(M)
        r = torch.sqrt(S[:dh])
        Wq[i * dh:(i + 1) * dh] = (U[:, :dh] * r).T
        Wk[i * dh:(i + 1) * dh] = (Vh[:dh].T * r).T
    if a2 == 0 and b2 == 0:
        return  # keep v and proj as initialised
    M = a2 * torch.randn(d, d) / d ** 0.5 - b2 * torch.eye(d)
    U, S, Vh = torch.linalg.svd(M)
    r = torch.sqrt(S)
    Wv.copy_((U * r).T)
    blk.proj.weight.copy_(Vh.T * r)


@torch.no_grad()
def pca_embed(m, X, p, gain):
    """Embedding rows = whitened principal directions of the training patches (the sign-flipped
    copy next, then further repeats), bias centring the mean patch."""
    g = 28 // p
    pt = X.reshape(-1, g, p, g, p).permute(0, 1, 3, 2, 4).reshape(-1, p * p).double()
    mu = pt.mean(0)
    cov = torch.cov((pt - mu).T)
    ev, V = torch.linalg.eigh(cov)
    ev, V = ev.flip(0), V.flip(1)
    W = (V / torch.sqrt(ev + 1e-2)).T.float()  # (p*p, p*p): row i = i-th whitened direction
    width = m.embed.weight.shape[0]
    rows, sign = [], 1.0
    while len(rows) < width:
        for r in W:
            if len(rows) < width:
                rows.append(sign * r)
        sign = -sign
    Wt = torch.stack(rows) * gain
    m.embed.weight.copy_(Wt)
    m.embed.bias.copy_(-(Wt @ mu.float()))


def init_model(m, a):
    w = m.pos.shape[1]
    with torch.no_grad():
        if a.pos_init == "plab":
            m.pos.uniform_(-w ** -0.5, w ** -0.5)
        elif a.pos_init == "sincos":
            m.pos.copy_(sincos2d(m.pos.shape[0], w, m.pool == "cls") * a.pos_scale)
        elif a.pos_init == "normal":
            m.pos.normal_(0, 0.02)
        # zeros otherwise
        if a.init == "trunc":
            for mod in m.modules():
                if isinstance(mod, nn.Linear):
                    nn.init.trunc_normal_(mod.weight, std=0.02)
                    nn.init.zeros_(mod.bias)
        elif a.init == "xavier":
            for mod in m.modules():
                if isinstance(mod, nn.Linear):
                    nn.init.xavier_uniform_(mod.weight)
                    nn.init.zeros_(mod.bias)
        if a.mimetic:
            a1, b1, a2, b2 = (float(v) for v in a.mimetic.split(","))
            for blk in m.blocks:
                mimetic_block(blk, w, a1, b1, a2, b2)
        if a.resid_zero:
            for blk in m.blocks:
                nn.init.zeros_(blk.proj.weight); nn.init.zeros_(blk.fc2.weight)
        if a.head_zero:
            nn.init.zeros_(m.head.weight); nn.init.zeros_(m.head.bias)
        if a.embed_scale != 1.0:
            m.embed.weight.mul_(a.embed_scale)


def lr_at(step, total, a):
    warm = a.warmup
    if step < warm:
        return a.lr * (step + 1) / warm
    frac = (step - warm) / max(1, total - warm)
    if a.sched == "const":
        return a.lr
    if a.sched == "cos":
        return a.lr_min + (a.lr - a.lr_min) * 0.5 * (1 + math.cos(math.pi * frac))
    if a.sched == "linear":
        return a.lr_min + (a.lr - a.lr_min) * (1 - frac)
    raise ValueError(a.sched)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--widths", default="64,2,4,7")
    ap.add_argument("--ratio", type=int, default=4)
    ap.add_argument("--pool", default="mean")
    ap.add_argument("--embed-ln", action="store_true")
    ap.add_argument("--margin", type=int, default=0, help="overlapping windows: each patch and this many pixels around")
    ap.add_argument("--plab-model", action="store_true", help="use plab_torch.ViT itself")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--opt", default="adam")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--lr-min", type=float, default=0.0)
    ap.add_argument("--beta2", type=float, default=0.999)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--wd", type=float, default=0.0)
    ap.add_argument("--sched", default="const")
    ap.add_argument("--warmup", type=int, default=0)
    ap.add_argument("--clip", type=float, default=0.0)
    ap.add_argument("--ls", type=float, default=0.0)
    ap.add_argument("--norm", default="none", help="none | mnist (x-0.1307)/0.3081 | center (x-0.5)/0.5")
    ap.add_argument("--init", default="torch")
    ap.add_argument("--pos-init", default="plab")
    ap.add_argument("--pos-scale", type=float, default=1.0)
    ap.add_argument("--mimetic", default="", help="a1,b1,a2,b2 e.g. 0.7,0.7,0.4,0.4")
    ap.add_argument("--resid-zero", action="store_true")
    ap.add_argument("--pca-embed", type=float, default=0.0, help="whitened-PCA patch embedding init, this gain (0: off)")
    ap.add_argument("--head-zero", action="store_true")
    ap.add_argument("--embed-scale", type=float, default=1.0)
    ap.add_argument("--order", default="perm", help="perm (per-epoch shuffle) | rng (plab_torch.py main's draws)")
    ap.add_argument("--tag", default="")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--out", default="vit_search_results.jsonl")
    a = ap.parse_args()

    tr_x, tr_y = P.load_split(DATA, "mnist", "train")
    te_x, te_y = P.load_split(DATA, "mnist", "t10k")
    assert len(tr_x) == 8000 and len(te_x) == 2000, (len(tr_x), len(te_x))
    X = torch.from_numpy(tr_x.astype(np.float32)).unsqueeze(1) / 255.0
    Y = torch.from_numpy(tr_y.astype(np.int64))
    TX = torch.from_numpy(te_x.astype(np.float32)).unsqueeze(1) / 255.0
    TY = torch.from_numpy(te_y.astype(np.int64))
    if a.norm == "mnist":
        X, TX = (X - 0.1307) / 0.3081, (TX - 0.1307) / 0.3081
    elif a.norm == "center":
        X, TX = (X - 0.5) / 0.5, (TX - 0.5) / 0.5

    if a.margin and (a.plab_model or a.pca_embed > 0):
        sys.exit("--margin works with this script's own ViT only, without --pca-embed")
    torch.manual_seed(a.seed)
    w = tuple(int(v) for v in a.widths.split(","))
    if a.plab_model:
        model = P.make_model("vit", w)
        with torch.no_grad():
            if a.pos_init == "plab":
                model.pos.weight.uniform_(-w[0] ** -0.5, w[0] ** -0.5)
    else:
        model = ViT(*w, ratio=a.ratio, pool=a.pool, embed_ln=a.embed_ln, margin=a.margin)
        init_model(model, a)

    if a.pca_embed > 0:
        pca_embed(model, X, w[3], a.pca_embed)
    if a.opt == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=(0.9, a.beta2), weight_decay=a.wd)
    elif a.opt == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, a.beta2), weight_decay=a.wd)
    elif a.opt == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum, weight_decay=a.wd)
    else:
        raise ValueError(a.opt)

    n = len(X)
    steps_per_epoch = n // a.batch if a.order == "perm" else math.ceil(n / a.batch)
    total = steps_per_epoch * a.epochs
    rng = np.random.default_rng(a.seed)
    t0 = time.time()
    step = 0
    model.train()
    for ep in range(a.epochs):
        if a.order == "perm":
            perm = torch.from_numpy(rng.permutation(n))
            batches = [perm[i * a.batch:(i + 1) * a.batch] for i in range(steps_per_epoch)]
        else:
            batches = [torch.from_numpy(rng.integers(0, n, a.batch)) for _ in range(steps_per_epoch)]
        for idx in batches:
            for g in opt.param_groups:
                g["lr"] = lr_at(step, total, a)
            x, y = X[idx], Y[idx]
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y, label_smoothing=a.ls)
            loss.backward()
            if a.clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
            opt.step()
            step += 1
            run_loss = loss.item() if step == 1 else 0.98 * run_loss + 0.02 * loss.item()
        if a.verbose:
            print(f"epoch {ep+1} loss~{run_loss:.4f} t={time.time()-t0:.1f}", flush=True)
    train_s = time.time() - t0
    model.eval()
    with torch.no_grad():
        correct = sum((model(TX[i:i + 1000]).argmax(1) == TY[i:i + 1000]).sum().item() for i in range(0, len(TX), 1000))
    acc = correct / len(TX)
    with torch.no_grad():
        tr_correct = sum((model(X[i:i + 1000]).argmax(1) == Y[i:i + 1000]).sum().item() for i in range(0, len(X), 1000))
    rec = {k: v for k, v in vars(a).items() if k != "out"}
    rec.update(acc=acc, train_acc=tr_correct / len(X), seconds=round(time.time() - t0, 1), train_s=round(train_s, 1), steps=total,
               params=sum(p.numel() for p in model.parameters()))
    print(json.dumps(rec), flush=True)
    with open(a.out, "a") as f:
        f.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    main()

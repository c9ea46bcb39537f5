"""Demo: Flat-LoRA vs plain LoRA fine-tuning a pre-trained MLP on noisy digits (a small run)."""

from . import register_demo


@register_demo(
    "FlatLoRAClassifier",
    what="LoRA vs Flat-LoRA (rho 0.1) fine-tuning of a digits MLP on noisy images, 1 seed",
    budget_s=25,
)
def demo():
    import numpy as np
    import torch
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    from sklearn_icml.lora import FlatLoRAClassifier
    from sklearn_icml.utils._skorch import seeded, torch_threads

    X, y = load_digits(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.5, stratify=y, random_state=0)
    rng = np.random.RandomState(1)
    noisy_tr = ((X_tr + 4 * rng.randn(*X_tr.shape)) / 16).astype(np.float32)
    noisy_te = ((X_te + 4 * rng.randn(*X_te.shape)) / 16).astype(np.float32)
    with seeded(0), torch_threads(1):  # pre-train on clean images (plain torch, 15 epochs)
        pre = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                  torch.nn.Linear(128, 10))
        opt = torch.optim.Adam(pre.parameters(), lr=1e-3)
        Xc, yc = torch.from_numpy((X_tr / 16).astype(np.float32)), torch.from_numpy(y_tr)
        for _ in range(15):
            for i in range(0, len(Xc), 64):
                opt.zero_grad()
                torch.nn.functional.cross_entropy(pre(Xc[i:i + 64]), yc[i:i + 64]).backward()
                opt.step()
        with torch.no_grad():
            pre_acc = float((pre(torch.from_numpy(noisy_te)).argmax(1).numpy() == y_te).mean())
    figures = {"pre-trained acc (noisy test)": round(pre_acc, 3)}
    for name, rho in (("LoRA", 0.0), ("Flat-LoRA", 0.1)):
        clf = FlatLoRAClassifier(module=pre, lora_rank=4, lora_alpha=8, learning_rate=3e-3,
                                 max_epochs=15, rho=rho, random_state=0).fit(noisy_tr, y_tr)
        figures[f"{name} acc (noisy test)"] = round(float(clf.score(noisy_te, y_te)), 3)
    figures["perturbed layers"] = len(clf.flat_lora_.layers_)
    return figures

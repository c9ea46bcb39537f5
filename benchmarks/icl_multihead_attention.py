"""In-context linear regression with multi-head softmax attention (He et al., ICML 2025).

Run: python benchmarks/icl_multihead_attention.py [--quick] [--part all|heads|ext|multitask]

``--part heads`` runs only E2 for H = 4, 8, ``--part ext`` only E4 and E5 and
``--part multitask`` only E6, each into
``results/icl_multihead_attention.<part>.md``, so that on a loaded machine the parts can run
in separate processes next to the main one; their sections are then appended to the main
results file.

E1  closed forms: the closed-form predictor estimators (Bayes ridge, plain/debiased GD, the
    softmax kernel at (+-0.13, +-3.45) and at the single-head optimum) on fresh prompts;
    single_head_optimum, debiased_gd_optimum, the asymptotic Bayes risk, the finite-L GD
    risk, the OLS risk; sklearn Ridge / LinearRegression per prompt as peers.
E2  train H = 1, 2, 4, 8 online (Adam 1e-3, batch 256), three seeds each; MSE and the
    pattern metrics (diagonal KQ, last-entry OV, zero-sum, GD step).
E3  length generalisation (L = 10 .. 100) of the H=2 model, next to the kernel predictor at
    the learned (omega, mu), debiased GD, Bayes ridge and the two linear-attention
    ablations (scores / L of each prompt, and scores / L_train fixed).
E4  anisotropic covariates (Sigma_ij = 0.5^|i-j|, an extension of the paper): H=2 model vs isotropic and
    pre-conditioned debiased GD; is the learned KQ block a pre-conditioner?
E5  a longer H=2 run (seed 0): do the numbers change with more steps?
E6  multi-task extension of the paper: two outputs y1 = beta1^T x[:3], y2 = beta2^T x[1:],
    token (x, y1, y2); H = 1, 2, 4 trained briefly; per-output MSE and per-head task
    allocation (KQ mass on each task's own coordinates, OV weight on each label).
    Only with ``--part multitask`` (not part of ``all``).
Peers in the same run: sklearn Ridge(alpha=sigma^2 d) and LinearRegression fitted per prompt,
the linear-attention ablations, and a plain-torch training loop (the cost of skorch).

The machine is shared (2 cores, ~8 sessions), so training is scaled down from the
reference run's 40,000 steps; see the notes in the results file. The report is rewritten after each section.
"""

import sys
import time

import numpy as np
import torch
from _harness import Report, median_time, parse_args
from sklearn.linear_model import LinearRegression, Ridge

from sklearn_icml.neural import (
    BayesRidgeICLPredictor,
    GDICLPredictor,
    LinearICLTaskSampler,
    MultiHeadAttentionICLModule,
    MultiHeadSoftmaxICLRegressor,
    MultiTaskLinearICLTaskSampler,
    SoftmaxKernelICLPredictor,
    bayes_ridge_predict,
    bayes_risk_asymptotic,
    debiased_gd_optimum,
    gd_predict,
    gd_risk_finite,
    single_head_optimum,
    softmax_kernel_predict,
)
from sklearn_icml.neural._icl_attention import OnlinePromptLoader  # the training iterator

D, L, S2 = 5, 40, 0.1
SEEDS = (0, 1, 2)


def mse(pred, y):
    return float(np.mean((pred - y) ** 2))


def se(pred, y):
    e = (pred - y) ** 2
    return float(e.std() / np.sqrt(e.size))


def inside(value, lo, hi):
    return "yes" if lo <= value <= hi else "NO"


def e1(report, n_prompts):
    X, y = LinearICLTaskSampler(random_state=0).sample(n_prompts)
    Xf, yf = LinearICLTaskSampler(random_state=1).sample(n_prompts)
    eta_gd, risk_gd = gd_risk_finite(D, L, S2)
    w1, m1, l1 = single_head_optimum(D, L, S2)
    # the closed-form predictor estimators, fitted (eta tuned) on separate prompts
    gd_fit = GDICLPredictor().fit(Xf, yf)
    dgd_fit = GDICLPredictor(debiased=True).fit(Xf, yf)
    models = {
        "BayesRidgeICLPredictor (lambda = sigma^2 d)": (
            BayesRidgeICLPredictor(noise_var=S2),
            0.1146,
            0.002,
        ),
        "OLS: BayesRidgeICLPredictor(noise_var=0)": (
            BayesRidgeICLPredictor(noise_var=0.0),
            0.1147,
            0.002,
        ),
        f"GDICLPredictor(eta = 1/k = {eta_gd:.4f})": (GDICLPredictor(eta=eta_gd), 0.241, 0.006),
        f"GDICLPredictor, fitted eta = {gd_fit.eta_:.4f}": (gd_fit, 0.241, 0.006),
        f"GDICLPredictor(debiased), fitted eta = {dgd_fit.eta_:.4f}": (dgd_fit, 0.244, 0.006),
        "SoftmaxKernelICLPredictor(+-0.13, +-3.45)": (SoftmaxKernelICLPredictor(), 0.244, 0.006),
        "SoftmaxKernelICLPredictor at the H=1 optimum": (
            SoftmaxKernelICLPredictor(omegas=[w1], mus=[m1]),
            0.41,
            0.01,
        ),
    }
    rows = []
    for name, (model, t, tol) in models.items():
        if not hasattr(model, "n_features_in_"):
            model.fit(Xf, yf)
        p = model.predict(X)
        rows.append(
            [name, f"{t} +- {tol}", mse(p, y), se(p, y), inside(mse(p, y), t - tol, t + tol)]
        )
    report.add_table(
        f"E1a. Closed-form predictors, MSE on {n_prompts:,} fresh prompts (d=5, L=40, "
        "sigma^2=0.1, seed 0)",
        ["predictor", "target", "measured", "se", "within"],
        rows,
    )
    eta_dgd, l_dgd = debiased_gd_optimum(D, L, S2)
    ols_theory = S2 * (1 + D / (L - D - 1))
    rows = [
        ["single_head_optimum omega", 0.44721, w1, inside(abs(w1 - 0.44721), 0, 1e-4)],
        ["single_head_optimum mu", 1.62769, m1, inside(abs(m1 - 1.62769), 0, 1e-4)],
        ["single_head_optimum loss", 0.37207, l1, inside(abs(l1 - 0.37207), 0, 1e-4)],
        ["debiased_gd_optimum eta", 0.87912, eta_dgd, inside(abs(eta_dgd - 0.87912), 0, 1e-4)],
        ["debiased_gd_optimum loss", 0.22088, l_dgd, inside(abs(l_dgd - 0.22088), 0, 1e-4)],
        [
            "bayes_risk_asymptotic(d/L)",
            0.11406,
            bayes_risk_asymptotic(D / L, noise_var=S2),
            inside(abs(bayes_risk_asymptotic(D / L, noise_var=S2) - 0.11406), 0, 1e-4),
        ],
        [
            "gd_risk_finite (eta, risk)",
            "0.8602, 0.23978",
            f"{eta_gd:.4f}, {risk_gd:.5f}",
            inside(abs(risk_gd - 0.23978), 0, 1e-4),
        ],
        [
            "OLS theory sigma^2 (1 + d/(L-d-1))",
            0.11471,
            ols_theory,
            inside(abs(ols_theory - 0.11471), 0, 1e-4),
        ],
    ]
    report.add_table("E1b. Closed forms", ["quantity", "target", "measured", "within 1e-4"], rows)

    # peers: sklearn estimators fitted per prompt, agreement and speed
    n_peer = 500
    Xp = X[:n_peer]
    ridge_est = BayesRidgeICLPredictor(noise_var=S2).fit(Xp)

    def sk_ridge():
        return np.array(
            [
                Ridge(alpha=S2 * D, fit_intercept=False)
                .fit(p[:-1, :-1], p[:-1, -1])
                .predict(p[-1:, :-1])[0]
                for p in Xp
            ]
        )

    def sk_ols():
        return np.array(
            [
                LinearRegression(fit_intercept=False)
                .fit(p[:-1, :-1], p[:-1, -1])
                .predict(p[-1:, :-1])[0]
                for p in Xp
            ]
        )

    t_ours, ours = median_time(lambda: ridge_est.predict(Xp), repeat=3)
    t_ridge, ridge = median_time(sk_ridge, repeat=1, warmup=0)
    t_ols, ols = median_time(sk_ols, repeat=1, warmup=0)
    ours_ols = bayes_ridge_predict(Xp, noise_var=0.0)
    rows = [
        ["BayesRidgeICLPredictor.predict (einsum + batched solve)", 1.0, 0.0],
        [
            "sklearn Ridge(alpha=0.5, fit_intercept=False) per prompt",
            t_ridge / t_ours,
            float(np.max(np.abs(ridge - ours))),
        ],
        [
            "sklearn LinearRegression per prompt (vs our OLS)",
            t_ols / t_ours,
            float(np.max(np.abs(ols - ours_ols))),
        ],
    ]
    report.add_table(
        f"E1c. Peers on {n_peer} prompts: time ratio to ours (median) and max |difference|",
        ["method", "time / ours", "max abs diff"],
        rows,
        note=f"ours: {t_ours * 1e3:.2f} ms for {n_peer} prompts.",
    )


def plain_torch_steps(n_heads, n_steps):
    """The same training loop without skorch (cost of the wrapper)."""
    torch.manual_seed(0)
    module = MultiHeadAttentionICLModule(D + 1, n_heads)
    opt = torch.optim.Adam(module.parameters(), lr=1e-3)
    loader = OnlinePromptLoader(None, 256, LinearICLTaskSampler(), steps_per_epoch=n_steps)
    start = time.perf_counter()
    for X, y in loader:
        loss = ((module(X) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return time.perf_counter() - start


def train(n_heads, n_steps, attention="softmax", seed=0, sampler=None):
    model = MultiHeadSoftmaxICLRegressor(
        n_heads=n_heads,
        max_iter=n_steps,
        attention=attention,
        sampler=sampler,
        steps_per_epoch=500,
        n_jobs=1,
        random_state=seed,
    )
    start = time.perf_counter()
    model.fit()
    return model, time.perf_counter() - start


def gd_step(p):
    """Effective debiased-GD step of the heads: sum_h omega_h mu_h (small-omega expansion)."""
    return float(np.sum(p["omega"] * p["mu"]))


def active_heads(p, frac=0.1):
    mu = np.abs(p["mu"])
    return int(np.sum(mu > frac * mu.max()))


class GridState:
    """E2 results so far: the grid runs in two parts and its tables are rewritten after each H."""

    def __init__(self, report, n_eval):
        self.X, self.y = LinearICLTaskSampler(random_state=10).sample(n_eval)
        self.n_eval = n_eval
        self.rows, self.pat_rows, self.time_rows, self.keep = [], [], [], {}
        self.report, self.mark, self.n = report, None, 0


def e2(state, steps):
    """Grid over H and seeds (tables rewritten after each H); returns the seed-0 H=2 model."""
    torch.set_num_threads(1)
    X, y = state.X, state.y
    rows, pat_rows, time_rows, keep = state.rows, state.pat_rows, state.time_rows, state.keep
    targets = {1: (0.38, 0.44), 2: (0.235, 0.26), 4: (0.235, 0.26), 8: (0.235, 0.26)}
    for H, n_steps in steps.items():
        mses, times, pats = [], [], []
        for seed in SEEDS:
            model, t = train(H, n_steps, seed=seed)
            mses.append(model.icl_mse(X, y))
            times.append(t / n_steps * 1000)
            pats.append(model.attention_patterns())
            keep[H, seed] = model
        lo, hi = targets[H]
        tgt = f"[{lo}, {hi}]" + ("" if H <= 2 else " (paper: ~0.24)")
        rows.append(
            [
                H,
                n_steps,
                tgt,
                " / ".join(f"{v:.4f}" for v in mses),
                float(np.mean(mses)),
                f"{sum(lo <= v <= hi for v in mses)}/{len(mses)}",
            ]
        )
        time_rows.append([f"H={H}, skorch estimator", float(np.median(times))])
        for seed, p in zip(SEEDS, pats, strict=True):
            if H == 1:
                pat_rows.append(
                    [H, seed, "-", "-", "-", f"{p['omega'][0]:.3f} / {p['mu'][0]:.2f}", "-", "-"]
                )
                continue
            pat_rows.append(
                [
                    H,
                    seed,
                    f"{p['diag_ratio'].min():.4f}",
                    f"{p['last_entry_ratio'].min():.5f}",
                    f"{p['zero_sum']:.4f}",
                    " ".join(
                        f"{w:+.3f}/{m:+.2f}" for w, m in zip(p["omega"], p["mu"], strict=True)
                    ),
                    f"{gd_step(p):.3f}",
                    active_heads(p),
                ]
            )
        e2_tables(state)
    return keep.get((2, 0))


def e2_tables(state):
    report, rows, pat_rows, keep = state.report, state.rows, state.pat_rows, state.keep
    start = len(report.sections)
    means = {r[0]: r[4] for r in rows}
    gap = means[1] - means[2] if 1 in means and 2 in means else float("nan")
    report.add_table(
        f"E2a. Trained models, MSE on {state.n_eval:,} fresh prompts, seeds {SEEDS} (reference run: 40,000 "
        "steps, one seed)",
        ["H", "steps", "target", "MSE per seed", "mean", "seeds within"],
        rows,
        note=(
            f"H=1 minus H=2 (means): {gap:.4f} (target >= 0.12: "
            f"{inside(gap, 0.12, np.inf)}). The paper: trained H=2/4/8 ~0.24 "
            "(authors' eval 0.241 / 0.245 / ~0.24 after 500k steps); H=1 ~0.41."
        ),
    )
    report.add_table(
        "E2b. Pattern metrics per model (x-block diag ratio and last-entry ratio: min over "
        "heads; targets for H=2: diag >= 0.98, last-entry >= 0.999, zero-sum <= 0.05, "
        "GD step in [0.80, 1.00]; for H > 2 the paper expects the 2-head behaviour: dummy heads "
        "(mu ~ 0) or +/- groups)",
        [
            "H",
            "seed",
            "diag ratio",
            "last-entry",
            "zero-sum",
            "omega/mu per head",
            "GD step sum_h omega_h mu_h",
            "active heads (abs mu > 0.1 max)",
        ],
        pat_rows,
        note=(
            "GD step: the small-omega expansion of the kernel gives debiased GD with step "
            "sum_h omega_h mu_h (= 2 omega mu for two symmetric heads; optimum 0.879). The "
            "diag ratio of a dummy head (mu ~ 0) is not meaningful and is included in the min."
        ),
    )
    report.add_table(
        "E2c. Training time per 1,000 steps (1 torch thread, shared loaded machine; "
        "reference on an idle machine with 2 threads: H=1 4.4 s, H=2 6.0-6.3 s)",
        ["run", "seconds / 1,000 steps (median over seeds)"],
        state.time_rows,
    )
    if (2, 0) in keep:
        curve = ", ".join(f"{v:.3f}" for v in keep[2, 0].loss_curve_)
        report.add("E2d. H=2 (seed 0) training loss per 500 steps", curve)
    new = report.sections[start:]
    del report.sections[start:]
    if state.mark is None:  # first call: the E2 block goes here; later calls replace it
        state.mark, state.n = len(report.sections), 0
    report.sections[state.mark : state.mark + state.n] = new
    state.n = len(new)
    report.write()


def e3(report, m2, steps_lin, n_eval, label):
    p2 = m2.attention_patterns()
    lin = {}
    for attention in ("linear", "linear_unnormalized"):
        lin[attention] = [train(1, steps_lin, attention=attention, seed=s)[0] for s in (0, 1)]
    targets = {20: (0.37, 0.015), 100: (0.165, 0.01)}
    rows, model_curve = [], []
    for i, Lq in enumerate((10, 20, 40, 60, 80, 100)):
        X, y = LinearICLTaskSampler(n_context=Lq, random_state=100 + i).sample(n_eval)
        v = m2.icl_mse(X, y)
        model_curve.append(v)
        t = targets.get(Lq)
        rows.append(
            [
                Lq,
                f"{t[0]} +- {t[1]}" if t else "-",
                v,
                inside(v, t[0] - t[1], t[0] + t[1]) if t else "-",
                mse(softmax_kernel_predict(X, omegas=p2["omega"], mus=p2["mu"]), y),
                mse(gd_predict(X, eta=0.88, debiased=True), y),
                mse(bayes_ridge_predict(X, noise_var=S2), y),
                " / ".join(f"{m.icl_mse(X, y):.4f}" for m in lin["linear"]),
                " / ".join(f"{m.icl_mse(X, y):.4g}" for m in lin["linear_unnormalized"]),
            ]
        )
    mono = all(a > b for a, b in zip(model_curve, model_curve[1:], strict=False))
    eta_gd = gd_risk_finite(D, L, S2)[0]
    theory = []
    for Lq in (10, 20, 100):
        k = 1 + (D * (1 + S2) + 1) / Lq
        eta = eta_gd * Lq / L
        theory.append(f"L={Lq}: {1 + S2 - 2 * eta + eta**2 * k:.3f}")
    report.add_table(
        f"E3. Length generalisation of the H=2 model ({label}, trained at L=40), MSE on "
        f"{n_eval:,} prompts per length",
        [
            "L",
            "target",
            "H=2 model",
            "within",
            "kernel at learned (omega, mu)",
            "debiased GD eta=0.88",
            "Bayes ridge",
            "linear attn, scores/L (H=1, seeds 0/1)",
            "linear attn, scores/L_train (H=1, seeds 0/1)",
        ],
        rows,
        note=(
            f"Monotone decreasing in L: {'yes' if mono else 'NO'} (target: yes). Linear "
            f"attention: {steps_lin} steps each. Theory for plain GD whose step is fixed at "
            f"the L=40 optimum but whose 1/L is not renormalised (eta_L = {eta_gd:.3f} L/40, "
            "risk 1 + sigma^2 - 2 eta_L + eta_L^2 k_L): " + ", ".join(theory) + "."
        ),
    )
    report.write()


def preconditioned_features(X):
    """F[n, i, j] = (1/L) sum_l y_l (x_l - xbar)_i x_q,j: yhat = <Gamma, F> is pre-conditioned
    debiased GD with pre-conditioner Gamma."""
    ctx_x, ctx_y, xq = X[:, :-1, :-1], X[:, :-1, -1], X[:, -1, :-1]
    g = np.einsum("nl,nli->ni", ctx_y, ctx_x - ctx_x.mean(1, keepdims=True)) / ctx_x.shape[1]
    return np.einsum("ni,nj->nij", g, xq).reshape(X.shape[0], -1)


def cosine(a, b):
    return float(np.sum(a * b) / np.sqrt(np.sum(a * a) * np.sum(b * b)))


def e4(report, n_steps, n_eval, m_iso):
    cov = 0.5 ** np.abs(np.subtract.outer(np.arange(D), np.arange(D)))
    sampler = LinearICLTaskSampler(covariance=cov)
    model, _ = train(2, n_steps, sampler=sampler, seed=0)
    X, y = LinearICLTaskSampler(covariance=cov, random_state=20).sample(n_eval)
    Xf, yf = LinearICLTaskSampler(covariance=cov, random_state=21).sample(n_eval)
    F, Ff = preconditioned_features(X), preconditioned_features(Xf)
    gamma = np.linalg.lstsq(Ff, yf, rcond=None)[0].reshape(D, D)
    p = model.attention_patterns()
    # small-omega expansion: yhat ~ sum_h mu_h/L sum_l y_l (x_l - xbar)^T B_h x_q
    gamma_eff = np.einsum("h,hij->ij", p["mu"], p["KQ_"][:, :D, :D])
    dgd = GDICLPredictor(debiased=True).fit(Xf, yf)
    iso = "n/a" if m_iso is None else f"{m_iso.attention_patterns()['diag_ratio'].min():.4f}"
    sinv = np.linalg.inv(cov)
    rows = [
        ["H=2 model MSE", "~ pre-conditioned GD", model.icl_mse(X, y)],
        [
            "pre-conditioned debiased GD, Gamma fitted (25 coefficients)",
            "-",
            mse(F @ gamma.ravel(), y),
        ],
        ["isotropic debiased GD, eta fitted", "worse than pre-conditioned", dgd.icl_mse(X, y)],
        ["Bayes ridge (lambda = sigma^2 d)", "lower bound", mse(bayes_ridge_predict(X, noise_var=S2), y)],
        [
            "diag ratio (x-block), min over heads",
            "below the isotropic model's (KQ no longer ~ I)",
            f"{p['diag_ratio'].min():.4f} (isotropic H=2 model: {iso})",
        ],
        ["cos(Gamma_eff, Gamma_fit)", "close to 1", cosine(gamma_eff, gamma)],
        ["cos(Gamma_eff, I)", "below cos(Gamma_eff, Gamma_fit)", cosine(gamma_eff, np.eye(D))],
        ["cos(Gamma_eff, Sigma^-1)", "info", cosine(gamma_eff, sinv)],
        ["cos(Gamma_fit, Sigma^-1)", "info", cosine(gamma, sinv)],
        ["zero-sum", "info (isotropic target <= 0.05)", p["zero_sum"]],
        ["last-entry ratio, min over heads", "info", float(p["last_entry_ratio"].min())],
    ]
    report.add_table(
        f"E4. Anisotropic covariates Sigma_ij = 0.5^|i-j| (an extension of the paper; no numeric targets), H=2, "
        f"{n_steps} steps, seed 0, MSE on {n_eval:,} prompts",
        ["quantity", "expectation (qualitative)", "measured"],
        rows,
        note=(
            "Gamma_eff = sum_h mu_h KQ_h[:d, :d] is the pre-conditioner of the small-omega "
            "expansion of the learned heads; Gamma_fit is the MSE-optimal pre-conditioner of "
            "one debiased GD step, fitted by least squares on separate prompts. Gamma_eff (rows) "
            "= "
            + "; ".join(" ".join(f"{v:+.2f}" for v in r) for r in gamma_eff)
            + ". Gamma_fit = "
            + "; ".join(" ".join(f"{v:+.2f}" for v in r) for r in gamma)
            + ". The multi-task extension of 3.6 (two outputs, token (x, y1, y2)) is E6 "
            "(--part multitask)."
        ),
    )
    report.write()


def e5(report, m_short, steps_short, steps_long, n_eval):
    m_long, t_long = train(2, steps_long, seed=0)
    X, y = LinearICLTaskSampler(random_state=10).sample(n_eval)
    X20, y20 = LinearICLTaskSampler(n_context=20, random_state=101).sample(n_eval)
    X100, y100 = LinearICLTaskSampler(n_context=100, random_state=105).sample(n_eval)
    rows = []
    expected = {
        "MSE (L=40)": "[0.235, 0.26]; reference 40k 0.2459",
        "MSE at L=20": "0.37 +- 0.015; reference 0.3675",
        "MSE at L=100": "0.165 +- 0.01; reference 0.1652",
        "omega per head": "~ +-0.13 (reference 40k +0.142/-0.146)",
        "mu per head": "~ +-3.45 (reference 40k +3.07/-3.14)",
        "GD step sum omega mu": "[0.80, 1.00]; optimum 0.879",
        "diag ratio (x-block), min": ">= 0.98; reference 0.997",
        "homogeneity (var of diag)": "reference 2.4e-6 / 7.5e-6",
        "last-entry ratio, min": ">= 0.999; reference 0.99993",
        "zero-sum": "<= 0.05; reference 0.012",
    }
    vals = {}
    runs = [("long", m_long)] if m_short is None else [("short", m_short), ("long", m_long)]
    for tag, m in runs:
        p = m.attention_patterns()
        vals[tag] = {
            "MSE (L=40)": f"{m.icl_mse(X, y):.4f}",
            "MSE at L=20": f"{m.icl_mse(X20, y20):.4f}",
            "MSE at L=100": f"{m.icl_mse(X100, y100):.4f}",
            "omega per head": " / ".join(f"{v:+.3f}" for v in p["omega"]),
            "mu per head": " / ".join(f"{v:+.2f}" for v in p["mu"]),
            "GD step sum omega mu": f"{gd_step(p):.3f}",
            "diag ratio (x-block), min": f"{p['diag_ratio'].min():.4f}",
            "homogeneity (var of diag)": " / ".join(f"{v:.1e}" for v in p["homogeneity"]),
            "last-entry ratio, min": f"{p['last_entry_ratio'].min():.5f}",
            "zero-sum": f"{p['zero_sum']:.4f}",
        }
    for key, target in expected.items():
        rows.append([key, target, vals.get("short", {}).get(key, "see E2/E3"), vals["long"][key]])
    curve = m_long.loss_curve_
    k = max(1, len(curve) // 16)
    blocks = ", ".join(f"{np.mean(curve[i : i + k]):.4f}" for i in range(0, len(curve), k))
    report.add_table(
        f"E5. Longer training: H=2, seed 0, {steps_short:,} vs {steps_long:,} steps "
        f"(reference run 40,000), {n_eval:,} prompts per length",
        ["quantity", "target / reference", f"{steps_short:,} steps", f"{steps_long:,} steps"],
        rows,
        note=(
            f"Training time {t_long:.0f} s ({t_long / steps_long * 1000:.1f} s per 1,000 steps). "
            f"Training loss, mean over blocks of {k * 500:,} steps: {blocks}."
        ),
    )
    report.write()
    return m_long


def e6(report, n_steps, n_eval, heads=(1, 2, 4), seeds=(0, 1)):
    """Multi-task extension of the paper: two outputs on overlapping supports, H = 1, 2, 4."""
    sampler = MultiTaskLinearICLTaskSampler()  # d=5, dx=(3, 4), beta ~ N(0, I), L=40
    d, _, s2, _, (d1, d2) = sampler.params()
    gen = MultiTaskLinearICLTaskSampler(random_state=30)
    X, y = gen.sample(n_eval)
    # references: zero predictor and the per-task Bayes ridge that knows each support
    ref = np.empty_like(y)
    for k, idx in enumerate(sampler.supports()):
        Xk = np.concatenate([X[:, :, idx], X[:, :, d + k : d + k + 1]], axis=2)
        ref[:, k] = bayes_ridge_predict(Xk, noise_var=s2 * len(idx), prior_var=1.0)
    rows = [
        ["zero predictor", "-", mse(0 * y[:, 0], y[:, 0]), mse(0 * y[:, 1], y[:, 1]), "-", "-"],
        [
            "Bayes ridge per task on its own support (oracle)",
            "-",
            mse(ref[:, 0], y[:, 0]),
            mse(ref[:, 1], y[:, 1]),
            "-",
            "-",
        ],
    ]
    head_rows = []
    for H, seed in [(H, seed) for H in heads for seed in seeds]:
        model, t = train(H, n_steps, sampler=sampler, seed=seed)
        pred = model.predict(X)
        p = model.attention_patterns()
        rows.append(
            [
                f"trained H={H}, seed {seed}",
                f"{n_steps:,}",
                mse(pred[:, 0], y[:, 0]),
                mse(pred[:, 1], y[:, 1]),
                f"{np.mean(np.abs(p['kq_allocation'])):.2f} / "
                f"{np.mean(np.abs(p['ov_allocation'])):.2f}",
                f"{t:.0f}",
            ]
        )
        KQ = p["KQ_"]
        for h in range(H):
            # KQ rows d, d+1: the context token's y1 / y2 slot entering the score with x_q
            y_mass = [float(np.mean(KQ[h, d + k, :d] ** 2)) for k in range(2)]
            head_rows.append(
                [
                    f"H={H}, seed {seed}",
                    h,
                    f"{p['omega'][h]:+.3f}",
                    f"{p['mu'][h, 0]:+.2f} / {p['mu'][h, 1]:+.2f}",
                    f"{p['kq_mass'][h, 0]:.4f} / {p['kq_mass'][h, 1]:.4f}",
                    f"{p['kq_allocation'][h]:+.2f}",
                    f"{p['ov_allocation'][h]:+.2f}",
                    f"{y_mass[0]:.1e} / {y_mass[1]:.1e}",
                ]
            )
    report.add_table(
        f"E6a. Multi-task extension (an extension of the paper; no numeric targets): d=5, y1 on x[:3], y2 on "
        f"x[1:], beta ~ N(0, I), noise var 0.1 dx, L=40, Adam 1e-3, batch 256, per-output "
        f"MSE on {n_eval:,} fresh prompts",
        [
            "predictor",
            "steps",
            "MSE y1",
            "MSE y2",
            "mean over heads of abs(KQ allocation) / abs(OV allocation) "
            "(0 superposed, 1 allocated)",
            "train s",
        ],
        rows,
        note=(
            f"Zero-predictor risk is dx (1 + 0.1) = {d1 * (1 + s2):.1f} / {d2 * (1 + s2):.1f}. "
            "Training is brief (the paper gives no step count for it); the models are not converged."
        ),
    )
    report.add_table(
        "E6b. Per-head task allocation (multitask_pattern_metrics)",
        [
            "model",
            "head",
            "omega (mean x-diag of KQ)",
            "mu1 / mu2 (OV: y1->out1 / y2->out2)",
            "KQ mass on task-1-only x[0] / task-2-only x[3:5]",
            "KQ allocation",
            "OV allocation",
            "KQ mass on key y1 / y2 slots",
        ],
        head_rows,
        note=(
            "KQ mass: for the x-coordinates only that task reads, the mean of the squared norms "
            "of their key row and query column in the x-block of KQ_h; allocation = (m1 - m2) / (m1 + m2): +1 = the head serves "
            "task 1 only, -1 task 2 only, ~0 both (superposition). OV allocation uses mu1^2 "
            "and mu2^2 the same way."
        ),
    )
    report.write()


def main():
    argv = sys.argv[1:]
    part = "all"
    if "--part" in argv:
        i = argv.index("--part")
        part = argv[i + 1]
        del argv[i : i + 2]
        if part not in ("all", "heads", "ext", "multitask"):
            raise SystemExit(f"--part must be all, heads, ext or multitask; got {part!r} instead.")
    args = parse_args(__doc__, argv)
    report = Report(
        "icl_multihead_attention" + ("" if part == "all" else f".{part}"),
        "In-context linear regression with multi-head softmax attention (He et al., ICML 2025)",
        quick=args.quick,
        packages=("numpy", "scikit-learn", "torch", "skorch"),
    )
    if args.quick:
        n_e1, n_eval, n_e3 = 2_000, 2_000, 1_000
        steps = {1: 20, 2: 30, 4: 20, 8: 20}
        steps_lin, steps_aniso, steps_long = 20, 30, 60
    else:
        n_e1, n_eval, n_e3 = 100_000, 20_000, 20_000
        steps = {1: 1_500, 2: 3_000, 4: 1_500, 8: 1_000}
        steps_lin, steps_aniso, steps_long = 800, 3_000, 10_000
    start = time.perf_counter()
    notes = (
        "Training is scaled down from the reference run's 40,000 steps per model because 8 sessions "
        "share the 2-core machine (tens of ms per step instead of the reference run's 6 ms): "
        f"E2 trains H=1 {steps[1]:,}, H=2 {steps[2]:,}, H=4 {steps[4]:,}, H=8 {steps[8]:,} "
        f"steps, seeds {SEEDS}; E5 trains H=2 for {steps_long:,} steps. E2 evaluates on "
        f"{n_eval:,} prompts per model (se ~0.002), E3 on {n_e3:,} per length (reference run 50,000). "
        "Metrics below their target at this budget are reported as measured, not tuned away."
    )
    if part == "heads":
        e2(GridState(report, n_eval), {4: steps[4], 8: steps[8]})
        return
    if part == "multitask":
        e6(report, 30 if args.quick else 2_000, n_eval)
        return
    if part == "ext":
        e4(report, steps_aniso, n_eval, None)
        e5(report, None, steps[2], steps_long, 2 * n_eval)
        return
    e1(report, n_e1)
    report.write()
    # most informative first, so a run cut short still leaves a results file
    state = GridState(report, n_eval)
    state.time_rows.append(
        ["H=2, plain torch loop (200 steps)", plain_torch_steps(2, 200) / 200 * 1000]
    )
    m2 = e2(state, {1: steps[1], 2: steps[2]})
    e3(report, m2, steps_lin, n_e3, f"seed 0, {steps[2]:,} steps")
    e2(state, {4: steps[4], 8: steps[8]})
    e4(report, steps_aniso, n_eval, m2)
    e5(report, m2, steps[2], steps_long, 2 * n_eval)
    report.add("Notes", notes + f" Total run time {time.perf_counter() - start:.0f} s.")
    report.write()


if __name__ == "__main__":
    main()

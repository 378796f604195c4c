"""Figures 4-6 of Lai et al. (2026): prediction dynamics and Lemma 5/6 regime diagrams.

Every experiment trains a batch of independent problems of the caption's
setting (``n_seeds`` of them) with the whole history recorded (``record=1``),
classifies each (neuron, example) entry with :func:`relucore.regimes`, checks
the facts the caption states over the batch, and draws one problem: the
primal variables of every neuron, the network output, the regime diagram of
every neuron and the activation timeline.
"""

from __future__ import annotations

import numpy as np

from relucore.experiments._base import Context, ExperimentResult, register
from relucore.experiments._common import child_rngs, claim, figure, fmt_set, lai_data
from relucore.gd.defaults import C_ALPHA, DEFAULT_INIT_SCALE
from relucore.gd.train import train
from relucore.theory.gram_stats import gram_stats
from relucore.theory.limits import predicted_limit
from relucore.theory.regimes import DEFAULT_C_Y, DUAL_FROZEN, PRIMAL_STABLE, regimes

__all__ = ["fig4", "fig5", "fig6"]


def _predicted_state(signs: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The clean split of Theorems 1/3: matching-sign entries blue, all others red, shape (m, n)."""
    agree = (np.sign(signs)[:, None] * y[None, :]) > 0
    return np.where(agree, PRIMAL_STABLE, DUAL_FROZEN)


def _batch(seed: int, n_seeds: int, n: int, d: int):
    rngs = child_rngs(seed, n_seeds)
    data = [lai_data(r, n, d) for r in rngs]
    return np.stack([x for x, _ in data]), np.stack([y for _, y in data])


def _analyse(res, X, y, C_y, C_alpha, bar=None):
    """Per-problem regimes and summary numbers; ``bar`` (a progress bar) advances by one per problem, then closes."""
    out = []
    for b in range(y.shape[0]):
        reg = regimes(res, X[b], y[b], problem=b, C_y=C_y, C_alpha=C_alpha)
        pred = _predicted_state(res.signs, y[b])
        after = reg.state[1:] if reg.state.shape[0] > 1 else reg.state
        out.append(
            dict(
                regimes=reg,
                split_holds=bool(np.all(after == pred[None])),
                share_split=float(np.mean(after == pred[None])),
                t0=int(res.pattern_stable_step[b]),
                loss=float(res.loss[b]),
                converged=bool(res.stationary[b]),
            )
        )
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    return out


def _train_bar(ctx: Context, n_seeds: int):
    """Progress over one experiment: the batched GD run, then the regimes of each problem."""
    bar = ctx.bar(1 + n_seeds, unit="task")
    bar.set_postfix_str(f"GD on {n_seeds} problems")
    return bar


def _analysis_started(bar) -> None:
    bar.update()
    bar.set_postfix_str("regimes")


def _table(stats, y, extra=None):
    rows = []
    for b, s in enumerate(stats):
        reg = s["regimes"]
        row = dict(
            problem=b,
            n_pos=int(np.sum(y[b] > 0)),
            final_loss=s["loss"],
            converged=s["converged"],
            pattern_stable_step=s["t0"],
            split_holds_after_step1=s["split_holds"],
            share_entries_in_split=round(s["share_split"], 4),
            lemma5_violations=reg.lemma5_violations,
            lemma6_violations=reg.lemma6_violations,
        )
        if extra is not None:
            row.update(extra[b])
        rows.append(row)
    return rows


def _draw(res, b, X, y, reg, title, extra=None):
    """Top: beta_k per neuron and h; bottom: regime diagram per neuron and the activation timeline.

    ``extra(top_ax, bottom_ax)``, when given, draws into one more column on the right.
    """
    from relucore.plots import plot_activation_timeline, plot_predictions, plot_regimes

    hist = res.history
    r = int(hist.n_records[b])
    steps = hist.steps[b, :r]
    beta = hist.beta[b, :r]
    m = beta.shape[1]
    fig, axes = figure(2, m + 1 + (extra is not None), width=3.6, height=3.3, title=title)
    names = [("+" if s > 0 else "-") for s in res.signs]
    for k in range(m):
        plot_predictions(
            steps,
            beta[:, k, :],
            y=y[b],
            ax=axes[0, k],
            legend=False,
            targets=False,
            ylabel=rf"$\beta_{{{k},i}}$ (neuron {k}, $s={names[k]}1$)",
            title=f"neuron {k} (s = {res.signs[k]:+g}): primal variables",
        )
        plot_regimes(reg, neuron=k, ax=axes[1, k], labels=y[b], title=f"neuron {k}: regimes")
    h = np.einsum("k,tkn->tn", res.signs, np.maximum(beta, 0.0))
    plot_predictions(
        steps,
        h,
        y=y[b],
        ax=axes[0, m],
        legend=False,
        ylabel=r"network output $h(x_i)$",
        title="output h (dotted: labels)",
    )
    # The example key goes outside the curves: right of the last panel of the row, whose colours it names.
    handles, labels = axes[0, 0].get_legend_handles_labels()
    axes[0, m].legend(
        handles,
        labels,
        fontsize=6,
        title="example",
        title_fontsize=6,
        loc="upper left",
        bbox_to_anchor=(1.03, 1.0),
        borderaxespad=0.0,
    )
    plot_activation_timeline(
        steps, hist.mask[b, :r], ax=axes[1, m], stable_step=int(res.pattern_stable_step[b]), title="activation pattern"
    )
    if extra is not None:
        extra(axes[0, m + 1], axes[1, m + 1])
    return fig


def _two_relu_positive(ctx: Context, n, d, n_seeds, steps, C_y, C_alpha):
    """The 2-ReLU runs from the positive init of fig4 and fig6: (X, y, result, stats)."""
    bar = _train_bar(ctx, n_seeds)
    X, y = _batch(ctx.rng, n_seeds, n, d)
    res = _run(X, y, (1.0, -1.0), "positive", None, steps, None)
    _analysis_started(bar)
    return X, y, res, _analyse(res, X, y, C_y, C_alpha, bar)


def _run(X, y, signs, init, eps, steps, rng):
    return train(X, y, signs=signs, init=init, eps=eps, steps=steps, record=1, rng=rng)


@register("fig4", "Fig. 4: 2-ReLU, d=2000, all-positive init: clean blue/red split after one step (Thm 3)")
def fig4(
    ctx: Context,
    *,
    n: int = 10,
    d: int = 2000,
    n_seeds: int = 20,
    steps: int = 20_000,
    C_y: float = DEFAULT_C_Y,
    C_alpha: float = C_ALPHA,
) -> ExperimentResult:
    """Figure 4: 2-ReLU model, n=10, d=2000, all-positive init (Theorem 3, Lemma 13).

    Checks: after the first step, positive examples are primal-stable for the
    + neuron and dual-frozen for the - neuron (and vice versa) at every later
    step; the pattern is fixed from step 1; dual-frozen entries never change
    alpha and keep beta <= 0 (Lemma 6); the run reaches the Theorem 3 closed
    form, a global minimum.
    """
    if ctx.quick:
        n_seeds = min(n_seeds, 6)
    params = ctx.params(locals(), "rng")
    X, y, res, stats = _two_relu_positive(ctx, n, d, n_seeds, steps, C_y, C_alpha)
    dist = []
    for b in range(n_seeds):
        Wst = predicted_limit(X[b], y[b], signs=(1.0, -1.0), eps=res.beta0[b], eta=float(res.eta[b]))
        dist.append(float(np.linalg.norm(res.W[b] - Wst) / np.linalg.norm(Wst)))
    # Lemma 6 on the record: once red, alpha stays exactly where it was and beta <= 0.
    frozen_moves, red_beta_max = 0.0, -np.inf
    for b, s in enumerate(stats):
        reg = s["regimes"]
        r = int(res.history.n_records[b])
        alpha, beta = res.history.alpha[b, :r], res.history.beta[b, :r]
        red = reg.state == DUAL_FROZEN
        first = np.argmax(red, axis=0)
        for k, i in zip(*np.nonzero(red.any(axis=0))):
            t = first[k, i]
            frozen_moves = max(frozen_moves, float(np.max(np.abs(alpha[t:, k, i] - alpha[t, k, i]))))
            red_beta_max = max(red_beta_max, float(np.max(beta[t:, k, i])))
    n_split = sum(s["split_holds"] for s in stats)
    t0s = np.array([s["t0"] for s in stats])
    claims = [
        claim(
            "regime_split",
            "after step 1: (+ neuron, y>0) and (- neuron, y<0) primal-stable, all other entries "
            "dual-frozen, at every later step (all problems)",
            f"split holds in {n_split}/{n_seeds} problems",
            n_split == n_seeds,
        ),
        claim(
            "pattern_stable_step",
            "activation pattern fixed from step 1 (Thm 3)",
            f"pattern_stable_step = {fmt_set(np.unique(t0s))} over problems",
            np.all(t0s == 1),
        ),
        claim(
            "lemma6_frozen",
            "dual-frozen entries: alpha never changes again, beta <= 0 (Lemma 6)",
            f"max |alpha_t - alpha_t_red| = {frozen_moves:.1e}, max beta after turning red = {red_beta_max:.3g}",
            frozen_moves == 0.0 and red_beta_max <= 0.0,
        ),
        claim(
            "lemma5_active",
            "primal-stable entries are active at the next step (Lemma 5)",
            f"{sum(s['regimes'].lemma5_violations for s in stats)} violations",
            all(s["regimes"].lemma5_violations == 0 for s in stats),
        ),
        claim(
            "theorem3_limit",
            "GD limit = Theorem 3 closed form, loss -> 0 (global minimum)",
            f"max relative distance {max(dist):.1e}, max final loss {max(s['loss'] for s in stats):.1e}",
            max(dist) <= 1e-8 and all(s["loss"] <= 1e-16 for s in stats),
        ),
    ]
    table = _table(stats, y, [dict(dist_to_theorem3=dist[b]) for b in range(n_seeds)])
    fig = _draw(
        res, 0, X, y, stats[0]["regimes"], f"Fig. 4: 2-ReLU, n={n}, d={d}, all-positive init (problem 0 of {n_seeds})"
    )
    return ExperimentResult(ctx.name, params, table, claims, fig, data=dict(result=res, X=X, y=y, stats=stats))


@register("fig5", "Fig. 5: 2-ReLU, d=2000, random init: the split fails and GD stops at a non-global minimum")
def fig5(
    ctx: Context,
    *,
    n: int = 10,
    d: int = 2000,
    n_seeds: int = 20,
    steps: int = 20_000,
    init_scale: float = DEFAULT_INIT_SCALE,
    C_y: float = DEFAULT_C_Y,
    C_alpha: float = C_ALPHA,
) -> ExperimentResult:
    """Figure 5: as Figure 4 with a random init ``w ~ N(0, init_scale^2 I)``.

    The caption gives no init scale; we use Figure 3's variance 2e-6. Checks:
    some positive examples leave (or never enter) the primal-stable regime of
    the + neuron, some negatives never become dual-frozen, and GD converges
    (gradient -> 0) with a positive loss, i.e. to a non-global minimum (a
    zero-loss interpolator exists since K is invertible).
    """
    if ctx.quick:
        n_seeds = min(n_seeds, 6)
    params = ctx.params(locals(), "rng")
    X, y = _batch(ctx.rng, n_seeds, n, d)
    init_rng = child_rngs(ctx.rng + 1_000_003, 1)[0]
    bar = _train_bar(ctx, n_seeds)
    res = train(X, y, signs=(1.0, -1.0), init="gaussian", init_scale=init_scale, steps=steps, record=1, rng=init_rng)
    _analysis_started(bar)
    stats = _analyse(res, X, y, C_y, C_alpha, bar)
    extra, stuck_pos, not_red_neg = [], 0, 0
    for b, s in enumerate(stats):
        last = s["regimes"].state[-1]
        pos = np.flatnonzero((y[b] > 0) & (last[0] != PRIMAL_STABLE))
        neg = np.flatnonzero((y[b] < 0) & (last[0] != DUAL_FROZEN))
        stuck_pos += pos.size > 0
        not_red_neg += neg.size > 0
        extra.append(
            dict(
                pos_not_blue_for_plus=fmt_set(pos),
                neg_not_red_for_plus=fmt_set(neg),
                init_inactive_pos=fmt_set(np.flatnonzero((y[b] > 0) & (res.beta0[b, 0] <= 0))),
            )
        )
    nonglobal = [s["converged"] and s["loss"] > 1e-6 for s in stats]
    show = int(np.argmax(nonglobal)) if any(nonglobal) else 0
    n_fail = sum(not s["split_holds"] for s in stats)
    claims = [
        claim(
            "split_fails",
            "the Fig. 4 split fails in (most) problems",
            f"fails in {n_fail}/{n_seeds} problems",
            n_fail >= n_seeds / 2,
        ),
        claim(
            "positives_not_blue",
            "some positive examples are not primal-stable for the + neuron at the end",
            f"in {stuck_pos}/{n_seeds} problems (problem {show}: {extra[show]['pos_not_blue_for_plus']})",
            stuck_pos > 0,
        ),
        claim(
            "negatives_not_red",
            "some negative examples never become dual-frozen for the + neuron",
            f"in {not_red_neg}/{n_seeds} problems (problem {show}: {extra[show]['neg_not_red_for_plus']})",
            not_red_neg > 0,
        ),
        claim(
            "non_global_minimum",
            "GD converges (gradient -> 0) to a loss > 0: a non-global minimum",
            f"{sum(nonglobal)}/{n_seeds} problems; shown problem {show}: loss {stats[show]['loss']:.4f}, "
            f"converged {stats[show]['converged']}",
            sum(nonglobal) >= n_seeds / 2,
        ),
    ]
    fig = _draw(
        res,
        show,
        X,
        y,
        stats[show]["regimes"],
        f"Fig. 5: 2-ReLU, n={n}, d={d}, random init (problem {show} of {n_seeds}; final loss "
        f"{stats[show]['loss']:.4f})",
    )
    return ExperimentResult(
        ctx.name, params, _table(stats, y, extra), claims, fig, data=dict(result=res, X=X, y=y, stats=stats)
    )


@register("fig6", "Fig. 6: 2-ReLU, d=15, all-positive init: no clean split, coupled dynamics")
def fig6(
    ctx: Context,
    *,
    n: int = 10,
    d: int = 15,
    n_seeds: int = 20,
    steps: int = 50_000,
    C_y: float = DEFAULT_C_Y,
    C_alpha: float = C_ALPHA,
) -> ExperimentResult:
    """Figure 6: as Figure 4 with d=15 (features far from orthogonal).

    Checks: the clean split of Figure 4 fails, the activation pattern keeps
    changing after step 1 (coupled dynamics), and Lemma 6's conclusion fails
    for some entries its condition classifies as dual-frozen (K is far from
    ||lambda||_1 I).
    """
    if ctx.quick:
        n_seeds = min(n_seeds, 6)
    params = ctx.params(locals(), "rng")
    X, y, res, stats = _two_relu_positive(ctx, n, d, n_seeds, steps, C_y, C_alpha)
    # ||K/||lambda||_1 - I||_2 with the true ||lambda||_1 = d (isotropic features).
    dev = [float(gram_stats(X[b], spectrum=np.ones(d)).deviation) for b in range(n_seeds)]
    t0s = np.array([s["t0"] for s in stats])
    n_fail = sum(not s["split_holds"] for s in stats)
    l6 = sum(s["regimes"].lemma6_violations > 0 for s in stats)
    claims = [
        claim(
            "split_fails",
            "no clean blue/red split after step 1",
            f"split fails in {n_fail}/{n_seeds} problems",
            n_fail >= n_seeds / 2,
        ),
        claim(
            "pattern_moves",
            "activation pattern changes after step 1 (coupled dynamics)",
            f"pattern_stable_step > 1 in {int(np.sum(t0s > 1))}/{n_seeds} problems (median {np.median(t0s):g})",
            np.sum(t0s > 1) >= n_seeds / 2,
        ),
        claim(
            "gram_not_isotropic",
            "K / ||lambda||_1 far from I (||K/||lambda||_1 - I||_2 of order 1; Cor. 1 needs it small)",
            f"median {np.median(dev):.2f}",
            np.median(dev) >= 0.5,
        ),
        claim(
            "lemma6_breaks",
            "Lemma 6's condition no longer implies a frozen dual (info: outside Assumption 2)",
            f"violations in {l6}/{n_seeds} problems",
            l6 > 0,
        ),
    ]
    table = _table(stats, y, [dict(gram_deviation=dev[b]) for b in range(n_seeds)])
    show = int(np.argmax(t0s))
    fig = _draw(
        res,
        show,
        X,
        y,
        stats[show]["regimes"],
        f"Fig. 6: 2-ReLU, n={n}, d={d}, all-positive init (problem {show} of {n_seeds})",
    )
    return ExperimentResult(ctx.name, params, table, claims, fig, data=dict(result=res, X=X, y=y, stats=stats))
